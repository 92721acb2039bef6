"""LangSmith runs: the root run of each trace."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from relevancy.io.importers._payloads import (
    as_time,
    first_of,
    is_missing,
    keep_pair,
    metadata_columns,
    pair_row,
    pairs_table,
    plain,
    text_of,
)
from relevancy.io.importers.report import ImportReport


def is_langsmith_root(r: dict[str, Any]) -> bool:
    if "is_root" in r and not is_missing(r["is_root"]):
        return bool(r["is_root"])
    return is_missing(r.get("parent_run_id")) and not plain(r.get("parent_run_ids"))


def langsmith(
    records: Iterable[dict[str, Any]], report: ImportReport, *, roots_only: bool = True
) -> pd.DataFrame:
    """LangSmith runs: the root run of each trace (its ``inputs`` and ``outputs``); the child
    runs (LLM calls, retrievers, tools) are counted and skipped."""
    rows = []
    for r in records:
        if roots_only and not is_langsmith_root(r):
            report.skip("child run", "")
            report.note = "each trace read from its root run"
            continue
        question = text_of(r.get("inputs"), "q")
        answer = text_of(r.get("outputs"), "a")
        if not keep_pair(report, "run", question, answer, failed=not is_missing(r.get("error"))):
            continue
        extra = plain(r.get("extra"))
        extra = extra if isinstance(extra, dict) else {}
        meta = plain(extra.get("metadata"))
        meta = meta if isinstance(meta, dict) else {}
        params = plain(extra.get("invocation_params"))
        params = params if isinstance(params, dict) else {}
        extras = {
            "run_id": r.get("id"),
            "trace_id": r.get("trace_id"),
            "name": r.get("name"),
            "run_type": r.get("run_type"),
            "model": first_of(meta, "ls_model_name") or first_of(params, "model", "model_name"),
            "start_time": as_time(r.get("start_time")),
            "end_time": as_time(r.get("end_time")),
            "status": r.get("status"),
            "tags": r.get("tags"),
            "session_id": r.get("session_id"),
            "example_id": r.get("reference_example_id"),
            "total_tokens": r.get("total_tokens"),
            **metadata_columns({k: v for k, v in meta.items() if not k.startswith("ls_")}),
        }
        rows.append(pair_row(question, answer, extras))
    return pairs_table(rows)
