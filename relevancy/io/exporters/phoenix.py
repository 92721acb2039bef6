"""Scores as Phoenix span annotations: each scored span gets an ``answer_relevancy`` annotation
(score, ``relevant``/``irrelevant`` from the threshold, an explanation with the reason and the
generated questions), shown with the span in Phoenix's UI. Annotating again replaces the
previous annotation of that name (Phoenix keeps one per span, name and identifier)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd

from relevancy.errors import InputError
from relevancy.io.exporters import ANNOTATION_NAME, WriteBack, explanation, label_of, scored_rows
from relevancy.io.importers.phoenix_server import phoenix_client

__all__ = ["annotate_spans", "BATCH"]

BATCH = 500  #: annotations sent per request


def annotate_spans(
    chunks: Iterable[pd.DataFrame],
    base_url: str,
    *,
    threshold: float = 0.5,
    name: str = ANNOTATION_NAME,
    annotator_kind: str = "LLM",
) -> WriteBack:
    """Annotate every scored row's span (``span_id`` column) on the Phoenix server at
    ``base_url``. Rows without a span id or a score are counted, not sent; a server that
    cannot be reached or refuses is a one-line :class:`InputError`."""
    client = phoenix_client(base_url)
    report = WriteBack("phoenix", base_url, what="span annotation", name=name)
    batch: list[dict[str, Any]] = []
    for span_id, score, row in scored_rows(chunks, "span_id", report):
        batch.append(_annotation(span_id, score, row, threshold, name, annotator_kind))
        if len(batch) >= BATCH:
            report.written += _send(client, batch, report)
            batch = []
    if batch:
        report.written += _send(client, batch, report)
    return report


def _annotation(
    span_id: str, score: float, row: dict[str, Any], threshold: float, name: str, kind: str
) -> dict[str, Any]:
    metadata = {"reason": row.get("reason"), "mode": row.get("mode"),
                "ragas_value": row.get("ragas_value"), "llm": row.get("llm"),
                "embeddings": row.get("embeddings"), "threshold": threshold,
                "source": "relevancy"}  # fmt: skip
    clean = {k: v for k, v in metadata.items() if _plain(v)}
    return {
        "span_id": span_id,
        "name": name,
        "annotator_kind": kind,
        "result": {
            "score": score,
            "label": label_of(score, threshold),
            "explanation": explanation(row),
        },  # fmt: skip
        "metadata": clean,
        "identifier": "",
    }


def _plain(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (str, int, bool)) and value != ""


def _send(client: Any, batch: list[dict[str, Any]], report: WriteBack) -> int:
    try:
        client.spans.log_span_annotations(span_annotations=batch, sync=True)
    except Exception as exc:  # httpx: refused, 4xx/5xx (spans not in this server's projects)
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        why = f"HTTP {status}: {response.text[:200]}" if status else f"{type(exc).__name__}"
        done = f" after {report.written:,} annotations" if report.written else ""
        raise InputError(f"cannot annotate spans on {report.where}{done} ({why})") from None
    return len(batch)
