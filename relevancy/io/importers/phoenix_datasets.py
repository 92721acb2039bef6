"""Arize Phoenix dataset examples: ``{"input": ..., "output": ..., "metadata": ...}`` as the
REST API (``/v1/datasets/{id}/examples``) and the client give them, or the dataset's CSV
download (``input.messages``, ``output.messages``, ``metadata.*`` columns). The fine-tuning and
evals JSONL downloads are OpenAI chat records (:mod:`relevancy.io.importers.openai_chat`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from relevancy.io.importers._payloads import (
    first_of,
    keep_pair,
    metadata_columns,
    pair_row,
    pairs_table,
    text_of,
    unflatten,
)
from relevancy.io.importers.report import ImportReport

#: keys besides ``input`` and ``output`` that say a record is a dataset example
EXAMPLE_KEYS = {"node_id", "updated_at", "metadata", "dataset_id", "example_id", "span_id"}


def is_dataset_example(record: dict[str, Any]) -> bool:
    keys = {str(k) for k in record}
    if {"input", "output"} <= keys:
        return bool(keys & EXAMPLE_KEYS)
    dotted = {k.split(".", 1)[0] for k in keys if "." in k}
    return {"input", "output"} <= dotted


def phoenix_examples(records: Iterable[dict[str, Any]], report: ImportReport) -> pd.DataFrame:
    """Each example's input (the question: its last user message, or a question-like key) and
    output (the answer); the example id and its metadata are kept."""
    rows = []
    for record in records:
        e = record if "input" in record or "output" in record else unflatten(record)
        question = text_of(e.get("input"), "q")
        answer = text_of(e.get("output"), "a")
        if not keep_pair(report, "example", question, answer):
            continue
        extras = {
            "example_id": first_of(e, "id", "example_id"),
            "updated_at": e.get("updated_at"),
            **metadata_columns(e.get("metadata")),
        }
        if e.get("created_at") is not None:  # the example's own time, when the export has it
            extras["created_at"] = e["created_at"]
        rows.append(pair_row(question, answer, extras))
    return pairs_table(rows)
