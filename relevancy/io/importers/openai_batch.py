"""OpenAI requests and their responses: the Batch API's input and output files (lines joined on
``custom_id``, in any order, in one file or a folder of files) and request/response logs
(``{"request": {...}, "response": {...}}`` per call, as the SDK's objects dump them; Chat
Completions or Responses)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from relevancy.io.importers._payloads import (
    all_scalars,
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

#: keys of a log record that hold the request and the response
REQUEST_KEYS = ("request", "request_body", "req")
RESPONSE_KEYS = ("response", "response_body", "resp", "completion")
#: top-level fields of a log record read as times
TIME_KEYS = {
    "timestamp",
    "time",
    "created",
    "created_at",
    "started_at",
    "finished_at",
    "start_time",
    "end_time",
    "logged_at",
}


def batch_line(record: dict[str, Any]) -> str | None:
    """``"request"`` for a line of a batch's input file, ``"response"`` for a line of its
    output (or error) file, None otherwise."""
    if "custom_id" not in record:
        return None
    if "body" in record and ({"url", "method"} & set(record)):
        return "request"
    if {"response", "error"} & set(record):
        return "response"
    return None


def is_request_log(record: dict[str, Any]) -> bool:
    """A record holding one call's request (chat messages or a Responses ``input``) and its
    response."""
    request = _dict(first_of(record, *REQUEST_KEYS))
    return bool({"messages", "input"} & set(request)) and any(k in record for k in RESPONSE_KEYS)


def _dict(value: Any) -> dict[str, Any]:
    value = plain(value)
    return value if isinstance(value, dict) else {}


class OpenAIRequests:
    """Converts chunks of batch lines and log records into question/answer rows. A batch's
    request waits for its response (and the other way round) across chunks; :meth:`finish`
    counts the halves left without their other half."""

    def __init__(self) -> None:
        self.requests: dict[str, dict[str, Any]] = {}
        self.responses: dict[str, dict[str, Any]] = {}

    def __call__(self, records: Iterable[dict[str, Any]], report: ImportReport) -> pd.DataFrame:
        rows = []
        for record in records:
            kind = batch_line(record)
            if kind is None:
                if is_request_log(record):
                    rows.append(_log_row(record, report))
                else:
                    report.skip("record", "that is neither a request nor a response")
                continue
            key = str(record["custom_id"])
            mine, theirs = (
                (self.requests, self.responses)
                if kind == "request"
                else (self.responses, self.requests)
            )
            other = theirs.pop(key, None)
            if other is None:
                mine[key] = record
                continue
            request, response = (record, other) if kind == "request" else (other, record)
            rows.append(_batch_row(request, response, report))
        return pairs_table([row for row in rows if row is not None])

    def finish(self, report: ImportReport) -> None:
        if self.requests:
            report.skip(
                "request", "without a response (give the output file too)", len(self.requests)
            )
        if self.responses:
            report.skip(
                "response", "without a request (give the input file too)", len(self.responses)
            )
        self.requests, self.responses = {}, {}


def _batch_row(
    request: dict[str, Any], response: dict[str, Any], report: ImportReport
) -> dict[str, Any] | None:
    body = _dict(request.get("body"))
    answered = _dict(response.get("response"))
    reply = _dict(answered.get("body"))
    status = answered.get("status_code")
    failed = (
        not is_missing(response.get("error"))
        or "error" in reply
        or (isinstance(status, int) and status >= 400)
    )
    question = text_of(body, "q")
    answer = "" if failed else text_of(reply, "a")
    if not keep_pair(report, "request", question, answer, failed=failed):
        return None
    extras = {
        "custom_id": request.get("custom_id"),
        "batch_request_id": response.get("id"),
        "request_id": answered.get("request_id"),
        "status_code": status,
        **_call_extras(body, reply),
    }
    return pair_row(question, answer, extras)


def _log_row(record: dict[str, Any], report: ImportReport) -> dict[str, Any] | None:
    request = _dict(first_of(record, *REQUEST_KEYS))
    reply = _dict(first_of(record, *RESPONSE_KEYS))
    failed = not is_missing(record.get("error")) or "error" in reply
    question = text_of(request, "q")
    answer = "" if failed else text_of(first_of(record, *RESPONSE_KEYS), "a")
    if not keep_pair(report, "request", question, answer, failed=failed):
        return None
    extras: dict[str, Any] = {}
    for key, value in record.items():
        if key in REQUEST_KEYS or key in RESPONSE_KEYS:
            continue
        value = plain(value) if not isinstance(value, str) else value
        if key == "metadata" and isinstance(value, dict):
            extras.update(metadata_columns(value))
        elif key in TIME_KEYS:
            extras[key] = as_time(value)
        elif not isinstance(value, (dict, list)) or all_scalars(value):
            extras[key] = value
    extras.update(_call_extras(request, reply))
    return pair_row(question, answer, extras)


def _call_extras(request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """The model, the reply's id, time, tokens and finish reason."""
    usage = _dict(reply.get("usage"))
    choices = plain(reply.get("choices"))
    first = _dict(choices[0]) if isinstance(choices, list) and choices else {}
    return {
        "model": first_of(reply, "model") or request.get("model"),
        "response_id": reply.get("id"),
        "created": as_time(first_of(reply, "created", "created_at")),
        "tokens": first_of(usage, "total_tokens"),
        "finish_reason": first.get("finish_reason") or reply.get("status"),
    }
