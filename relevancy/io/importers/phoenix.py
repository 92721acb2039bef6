"""Arize Phoenix spans: the root span of each trace."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from relevancy.io.importers._payloads import (
    first_of,
    flatten,
    is_missing,
    keep_pair,
    metadata_columns,
    pair_row,
    pairs_table,
    text_of,
)
from relevancy.io.importers.report import ImportReport


def is_phoenix_root(r: dict[str, Any]) -> bool:
    return is_missing(r.get("parent_id"))


def phoenix(
    records: Iterable[dict[str, Any]], report: ImportReport, *, roots_only: bool = True
) -> pd.DataFrame:
    """Arize Phoenix spans: ``attributes.input.value`` and ``attributes.output.value`` (or an
    LLM span's input and output messages) of each trace's root span; child spans are skipped."""
    rows = []
    for record in records:
        r = flatten(record)
        if roots_only and not is_phoenix_root(r):
            report.skip("child span", "")
            continue
        question = text_of(r.get("attributes.input.value"), "q") or text_of(
            r.get("attributes.llm.input_messages"), "q"
        )
        answer = text_of(r.get("attributes.output.value"), "a") or text_of(
            r.get("attributes.llm.output_messages"), "a"
        )
        failed = str(r.get("status_code") or "").upper() == "ERROR"
        if not keep_pair(report, "span", question, answer, failed=failed):
            continue
        extras = {
            "span_id": first_of(r, "context.span_id", "span_id"),
            "trace_id": first_of(r, "context.trace_id", "trace_id"),
            "name": r.get("name"),
            "span_kind": first_of(r, "span_kind", "attributes.openinference.span.kind"),
            "model": r.get("attributes.llm.model_name"),
            "prompt_version": r.get("attributes.llm.prompt_template.version"),
            "start_time": r.get("start_time"),
            "end_time": r.get("end_time"),
            "status_code": r.get("status_code"),
            "tags": r.get("attributes.tag.tags"),
            "session_id": r.get("attributes.session.id"),
            "user_id": r.get("attributes.user.id"),
            **metadata_columns(r.get("attributes.metadata")),
            **{
                k[len("attributes.") :]: v
                for k, v in r.items()
                if k.startswith("attributes.metadata.")
            },
        }
        rows.append(pair_row(question, answer, extras))
    return pairs_table(rows)
