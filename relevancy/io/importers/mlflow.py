"""MLflow traces: the frames ``mlflow.search_traces()`` returns (saved as JSON, JSONL or
Parquet), the CLI's ``mlflow traces search --output json`` (``{"traces": [...]}``) and
``Trace.to_json()``. The question is the trace's request (its root span's inputs), the answer
its response (the root span's outputs); the trace id is kept, so that scores can be logged
back as feedback on each trace (:mod:`relevancy.io.exporters.mlflow`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pandas as pd

from relevancy.io.importers._payloads import (
    as_time,
    first_of,
    is_missing,
    keep_pair,
    pair_row,
    pairs_table,
    plain,
    text_of,
)
from relevancy.io.importers.report import ImportReport

#: keys of a ``search_traces`` row besides ``trace_id``, ``request`` and ``response``
FRAME_KEYS = {
    "state",
    "request_time",
    "execution_duration",
    "trace_metadata",
    "spans",
    "assessments",
    "client_request_id",
    "status",
    "timestamp_ms",
}
MAX_TAGS = 20  #: user tags kept as ``tags.KEY`` columns per trace
#: why a trace exported without its spans is skipped when its preview was cut
CUT = "whose question or answer is cut short in the export (export with include_spans=True)"
#: the lengths MLflow cuts a request or response preview to (with "..." at the end): its
#: trace metadata's, open-source and Databricks previews'
PREVIEW_LENGTHS = (250, 1000, 10_000)


def is_cut(value: Any) -> bool:
    """A preview MLflow cut short: JSON that no longer parses, or text of a preview's full
    length ending in "..."."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    if text[:1] in "[{":
        try:
            json.loads(text)
        except ValueError:
            return True
    return len(value) in PREVIEW_LENGTHS and value.endswith("...")


def is_mlflow_trace(record: dict[str, Any]) -> bool:
    """A trace as ``Trace.to_dict()`` writes it (``info`` and ``data``), or a row of
    ``search_traces``."""
    info = record.get("info")
    if isinstance(info, dict) and {"trace_id", "request_id"} & set(info):
        return True
    keys = set(record)
    has_id = bool({"trace_id", "request_id"} & keys)
    return has_id and bool({"request", "response"} & keys) and bool(FRAME_KEYS & keys)


def _dict(value: Any) -> dict[str, Any]:
    value = plain(value)
    return value if isinstance(value, dict) else {}


def _root_span(spans: Any) -> dict[str, Any]:
    spans = plain(spans)
    if not isinstance(spans, list):
        return {}
    for span in spans:
        span = _dict(span)
        if span and is_missing(first_of(span, "parent_span_id", "parent_id")):
            return span
    return {}


def trace_parts(record: dict[str, Any]) -> dict[str, Any]:
    """What a trace holds, whichever shape it came in: its id, state, request and response,
    tags, metadata and times."""
    info = _dict(record.get("info"))
    if info:  # Trace.to_dict(): the root span holds the full inputs and outputs
        root = _dict(_root_span(_dict(record.get("data")).get("spans")).get("attributes"))
        meta = _dict(info.get("trace_metadata") or info.get("request_metadata"))
        request = first_of(root, "mlflow.spanInputs")
        response = first_of(root, "mlflow.spanOutputs")
        cut = False
        if request is None:  # no spans: the whole request when its metadata copy is not cut,
            # else its preview (the last user turn's text, itself cut at 1,000 characters)
            request = _whole(first_of(meta, "mlflow.traceInputs"), info.get("request_preview"))
            cut = is_cut(request)
        if response is None:
            response = _whole(first_of(meta, "mlflow.traceOutputs"), info.get("response_preview"))
            cut = cut or is_cut(response)
        return {
            "cut": cut,
            "trace_id": first_of(info, "trace_id", "request_id"),
            "state": first_of(info, "state", "status"),
            "request_time": first_of(info, "request_time", "timestamp_ms"),
            "execution_ms": first_of(info, "execution_duration_ms", "execution_time_ms"),
            "request": request,
            "response": response,
            "metadata": meta,
            "tags": _dict(info.get("tags")),
            "experiment_id": _experiment(info),
        }
    request, response = record.get("request"), record.get("response")
    if is_missing(request) and is_missing(response) and not is_missing(record.get("trace")):
        return trace_parts(_dict(record.get("trace")))  # only the whole trace, as JSON text
    return {
        "trace_id": first_of(record, "trace_id", "request_id"),
        "state": first_of(record, "state", "status"),
        "request_time": first_of(record, "request_time", "timestamp_ms"),
        "execution_ms": first_of(record, "execution_duration", "execution_time_ms"),
        "request": request,
        "response": response,
        "metadata": _dict(first_of(record, "trace_metadata", "request_metadata")),
        "tags": _dict(record.get("tags")),
        "experiment_id": _experiment(_dict(plain(record.get("trace")) or {}).get("info") or {}),
    }


def _whole(*candidates: Any) -> Any:
    """The first candidate that is there and not cut short; else the last one there."""
    found = [c for c in candidates if not is_missing(c)]
    return next((c for c in found if not is_cut(c)), found[-1] if found else None)


def _experiment(info: Any) -> Any:
    info = _dict(info)
    location = _dict(info.get("trace_location"))
    return _dict(location.get("mlflow_experiment")).get("experiment_id") or info.get(
        "experiment_id"
    )


def mlflow_traces(records: Iterable[dict[str, Any]], report: ImportReport) -> pd.DataFrame:
    """MLflow traces: each trace's request (the question: its last user message, or a
    question-like input) and response (the answer); failed traces are counted and skipped."""
    rows = []
    for record in records:
        t = trace_parts(record)
        question = text_of(t["request"], "q")
        answer = text_of(t["response"], "a")
        failed = str(t["state"] or "").upper() == "ERROR"
        if t.get("cut") and not failed:
            report.skip("trace", CUT)
            continue
        if not keep_pair(report, "trace", question, answer, failed=failed):
            continue
        rows.append(pair_row(question, answer, _extras(t)))
    return pairs_table(rows)


def _extras(t: dict[str, Any]) -> dict[str, Any]:
    meta, tags = t["metadata"], t["tags"]
    request = plain(t["request"])
    usage = _dict(meta.get("mlflow.trace.tokenUsage"))
    extras: dict[str, Any] = {
        "trace_id": t["trace_id"],
        "name": tags.get("mlflow.traceName"),
        "state": t["state"],
        "request_time": as_time(t["request_time"]),
        "execution_ms": t["execution_ms"],
        "model": request.get("model") if isinstance(request, dict) else None,
        "tokens": usage.get("total_tokens"),
        "session_id": meta.get("mlflow.trace.session"),
        "user_id": meta.get("mlflow.trace.user"),
        "experiment_id": t["experiment_id"],
    }
    user_tags = [(k, v) for k, v in tags.items() if not str(k).startswith("mlflow.")]
    extras.update({f"tags.{k}": v for k, v in user_tags[:MAX_TAGS]})
    return extras
