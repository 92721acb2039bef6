"""Scores as Phoenix span annotations: each scored span gets an ``answer_relevancy`` annotation
(score, ``relevant``/``irrelevant`` from the threshold, an explanation with the reason and the
generated questions), shown with the span in Phoenix's UI.

Phoenix keeps one annotation per span, name and *identifier*, and a new one with the same three
replaces the old. Ours carry the identifier :data:`IDENTIFIER` (and annotator kind ``LLM``), so
they never land on a person's annotation (the UI writes identifier ``""``) or another tool's:
annotating again replaces only our own. When the project is known (``--from``, the Runs page),
the spans' annotations are read first: a score already there is not sent again, and an
annotation under our identifier that we did not write (a person's, another tool's) is kept.

A span the server does not know (deleted, or in another project) costs only itself: the server
names such spans in its 404, and the rest of the batch is sent again without them (a batch is
split in halves when the error names none). A server that cannot be reached, or fails with a
5xx, stops the write-back at once (a request waits at most Phoenix's client timeouts, 30 s)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from relevancy.io.exporters import (
    ANNOTATION_NAME,
    SOURCE,
    WriteBack,
    explanation,
    row_label,
    row_metadata,
    scored_rows,
)
from relevancy.io.importers.phoenix_server import phoenix_client

__all__ = ["annotate_spans", "BATCH", "IDENTIFIER", "UNKNOWN_SPANS"]

BATCH = 500  #: annotations sent per request
IDENTIFIER = "relevancy"  #: the annotation identifier every score of ours is written under
UNKNOWN_SPANS = "spans the server does not know (deleted, or in another project)"
#: how Phoenix names the spans it does not know in its 404 ("Spans with IDs a, b do not exist")
_UNKNOWN = re.compile(r"Spans? with IDs? (.+?) do(?:es)? not exist", re.IGNORECASE)


def annotate_spans(
    chunks: Iterable[pd.DataFrame],
    base_url: str,
    *,
    threshold: float = 0.5,
    name: str = ANNOTATION_NAME,
    project: str | None = None,
    progress: Callable[[int], None] | None = None,
    min_questions: int | None = None,
) -> WriteBack:
    """Annotate every scored row's span (``span_id`` column) on the Phoenix server at
    ``base_url``; what was done, span by span, in the returned :class:`WriteBack` (its ``ok``
    is False when a score did not get there). ``project`` (name or id), when known, lets a
    score already there be skipped and a foreign annotation under our identifier be kept.
    ``min_questions``: the run's (a row scored from fewer usable questions is labelled
    ``incomplete``, not relevant or irrelevant; default all).
    ``progress(n)`` is called as rows are done. Only a missing client raises."""
    client = phoenix_client(base_url)
    report = WriteBack("phoenix", base_url, what="span annotation", name=name)
    tick = progress or (lambda n: None)
    batch: list[dict[str, Any]] = []
    for span_id, score, row in scored_rows(chunks, "span_id", report):
        if report.stopped:
            report.not_tried += 1
            tick(1)
            continue
        batch.append(_annotation(span_id, score, row, threshold, name, min_questions))
        if len(batch) >= BATCH:
            _flush(client, batch, report, project, tick)
            batch = []
    if batch:
        _flush(client, batch, report, project, tick)
    return report


def _annotation(
    span_id: str,
    score: float,
    row: dict[str, Any],
    threshold: float,
    name: str,
    min_questions: int | None,
) -> dict[str, Any]:
    return {
        "span_id": span_id,
        "name": name,
        "annotator_kind": "LLM",
        "result": {
            "score": score,
            "label": row_label(row, threshold, min_questions),
            "explanation": explanation(row, threshold, min_questions),
        },
        "metadata": row_metadata(row, threshold, min_questions),
        "identifier": IDENTIFIER,
    }


def _flush(
    client: Any,
    batch: list[dict[str, Any]],
    report: WriteBack,
    project: str | None,
    tick: Callable[[int], None],
) -> None:
    """Send ``batch`` less what is already there; count every row of it."""
    todo = _not_there(client, batch, report, project) if project else batch
    tick(len(batch) - len(todo))
    if todo and not report.stopped:
        _send(client, todo, report, tick)
    elif todo:
        report.not_tried += len(todo)
        tick(len(todo))


def _not_there(
    client: Any, batch: list[dict[str, Any]], report: WriteBack, project: str
) -> list[dict[str, Any]]:
    """The annotations of ``batch`` to send: not those already there with the same result, nor
    those whose span holds a foreign annotation under our identifier (kept)."""
    name = batch[0]["name"]
    try:
        found = client.spans.get_span_annotations(
            span_ids=[a["span_id"] for a in batch],
            project_identifier=project,
            include_annotation_names=[name],
        )
    except Exception as exc:  # the project is unknown: send all, as without a project
        if _status(exc) == 404:
            return batch
        _stop(report, exc)
        return batch
    ours = {a["span_id"]: a for a in found or [] if (a.get("identifier") or "") == IDENTIFIER}
    todo = []
    for annotation in batch:
        there = ours.get(annotation["span_id"])
        if there is None:
            todo.append(annotation)
        elif not _written_by_us(there):
            report.keep(
                f"an annotation under identifier {IDENTIFIER!r} that relevancy did not write"
            )
        elif _same(there.get("result") or {}, annotation["result"]):
            report.unchanged += 1
        else:
            todo.append(annotation)
    return todo


def _written_by_us(annotation: dict[str, Any]) -> bool:
    meta = annotation.get("metadata") or {}
    return annotation.get("annotator_kind") == "LLM" and meta.get("source") == SOURCE


def _same(there: dict[str, Any], new: dict[str, Any]) -> bool:
    score = there.get("score")
    return (
        isinstance(score, (int, float))
        and math.isclose(float(score), new["score"], rel_tol=0, abs_tol=1e-9)
        and there.get("label") == new["label"]
        and (there.get("explanation") or "") == new["explanation"]
    )


def _send(
    client: Any, batch: list[dict[str, Any]], report: WriteBack, tick: Callable[[int], None]
) -> None:
    """Post ``batch``; spans the server does not know are taken out (named by its 404, else
    found by halving) and the rest sent again."""
    try:
        client.spans.log_span_annotations(span_annotations=batch, sync=True)
    except Exception as exc:  # httpx: refused, timed out, 4xx/5xx
        if _status(exc) != 404:
            _stop(report, exc)
            report.not_tried += len(batch)
            tick(len(batch))
            return
        named = _unknown_ids(exc)
        unknown = [a for a in batch if a["span_id"] in named]
        if unknown:
            report.fail(UNKNOWN_SPANS, *[a["span_id"] for a in unknown])
            tick(len(unknown))
            rest = [a for a in batch if a["span_id"] not in named]
            if rest:
                _send(client, rest, report, tick)
        elif len(batch) == 1:
            report.fail(UNKNOWN_SPANS, batch[0]["span_id"])
            tick(1)
        else:
            half = len(batch) // 2
            for part in (batch[:half], batch[half:]):
                if report.stopped:
                    report.not_tried += len(part)
                    tick(len(part))
                else:
                    _send(client, part, report, tick)
        return
    report.written += len(batch)
    tick(len(batch))


def _status(exc: Exception) -> int | None:
    return getattr(getattr(exc, "response", None), "status_code", None)


def _unknown_ids(exc: Exception) -> set[str]:
    text = getattr(getattr(exc, "response", None), "text", "") or ""
    match = _UNKNOWN.search(text)
    if not match:
        return set()
    return {part.strip(" .'\"") for part in match.group(1).split(",") if part.strip(" .'\"")}


def _stop(report: WriteBack, exc: Exception) -> None:
    """The server cannot take more: say why once, and send nothing more."""
    if report.stopped:
        return
    status = _status(exc)
    if status is not None:
        text = (getattr(getattr(exc, "response", None), "text", "") or "").strip().splitlines()
        report.stopped = f"{report.where} refused them (HTTP {status}" + (
            f": {text[0][:160]})" if text else ")"
        )
        return
    why = f"{type(exc).__name__}: {str(exc)[:160]}" if str(exc) else type(exc).__name__
    report.stopped = f"{report.where} did not answer ({why})"
