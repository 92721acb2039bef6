"""Langfuse traces and observations (API, UI and blob exports)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from relevancy.io.importers._payloads import (
    as_time,
    first_of,
    keep_pair,
    metadata_columns,
    pair_row,
    pairs_table,
    text_of,
)
from relevancy.io.importers.report import ImportReport

LANGFUSE_TRACE_KEYS = {
    "sessionId",
    "session_id",
    "userId",
    "user_id",
    "release",
    "htmlPath",
    "html_path",
    "latency",
    "totalCost",
    "total_cost",
    "public",
    "bookmarked",
    "environment",
    "projectId",
    "project_id",
    "observations",
    "scores",
}


LANGFUSE_TYPES = {
    "GENERATION",
    "SPAN",
    "EVENT",
    "AGENT",
    "TOOL",
    "CHAIN",
    "RETRIEVER",
    "EVALUATOR",
    "EMBEDDING",
    "GUARDRAIL",
}


# --- the importers -----------------------------------------------------------------------------
def langfuse(
    records: Iterable[dict[str, Any]],
    report: ImportReport,
    *,
    observations: bool = False,
    generations_only: bool = True,
) -> pd.DataFrame:
    """Langfuse traces (their ``input`` and ``output``) or observations (each generation's last
    user message and its output); camelCase (API, UI export) or snake_case (blob export)."""
    rows = []
    for r in records:
        if observations:
            kind = str(r.get("type") or "").upper()
            if generations_only and kind != "GENERATION":
                report.skip("observation", "other than generations")
                continue
            noun = "generation" if kind == "GENERATION" else "observation"
        else:
            noun = "trace"
        question = text_of(r.get("input"), "q")
        answer = text_of(r.get("output"), "a")
        failed = str(r.get("level") or "").upper() == "ERROR"
        if not keep_pair(report, noun, question, answer, failed=failed):
            continue
        if observations:
            extras = {
                "observation_id": r.get("id"),
                "trace_id": first_of(r, "traceId", "trace_id"),
                "name": r.get("name"),
                "model": first_of(r, "model", "providedModelName", "provided_model_name"),
                "prompt_name": first_of(r, "promptName", "prompt_name"),
                "prompt_version": first_of(r, "promptVersion", "prompt_version"),
                "start_time": as_time(first_of(r, "startTime", "start_time")),
                "end_time": as_time(first_of(r, "endTime", "end_time")),
                "trace_name": first_of(r, "traceName", "trace_name"),
            }
        else:
            extras = {
                "trace_id": r.get("id"),
                "name": r.get("name"),
                "timestamp": as_time(r.get("timestamp")),
                "release": r.get("release"),
                "latency": r.get("latency"),
                "total_cost": first_of(r, "totalCost", "total_cost"),
            }
        extras.update(
            {
                "version": r.get("version"),
                "environment": r.get("environment"),
                "user_id": first_of(r, "userId", "user_id"),
                "session_id": first_of(r, "sessionId", "session_id"),
                "tags": r.get("tags"),
                **metadata_columns(r.get("metadata")),
            }
        )
        rows.append(pair_row(question, answer, extras))
    return pairs_table(rows)
