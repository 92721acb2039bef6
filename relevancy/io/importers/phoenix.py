"""Arize Phoenix spans, in every shape Phoenix hands them out: the client's span frame
(``get_spans_dataframe``, saved as Parquet, CSV or JSON/JSONL), the REST API's JSON
(``/v1/projects/{project}/spans``) and OTLP JSON (``/v1/projects/{project}/spans/otlpv1``).
Each trace is read from its root span; its span and trace ids are kept, so that scores can be
written back to the spans they came from (:mod:`relevancy.io.exporters.phoenix`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from relevancy.io.importers._payloads import (
    as_time,
    first_of,
    flatten,
    is_missing,
    keep_pair,
    metadata_columns,
    numbered,
    pair_row,
    pairs_table,
    plain,
    text_of,
)
from relevancy.io.importers.report import ImportReport

#: OTLP's status codes, as numbers (protobuf JSON) or names
OTLP_STATUS = {
    0: "UNSET",
    1: "OK",
    2: "ERROR",
    "STATUS_CODE_UNSET": "UNSET",
    "STATUS_CODE_OK": "OK",
    "STATUS_CODE_ERROR": "ERROR",
}


def is_otlp_span(record: dict[str, Any]) -> bool:
    """An OTLP JSON span: attributes as a list of ``{key, value}`` pairs."""
    return isinstance(record.get("attributes"), list) and bool({"span_id", "spanId"} & set(record))


class BadSpan(ValueError):
    """An OTLP span holding a value of the wrong type (``int_value: "abc"``, an ``array_value``
    that is not an object...): the span is skipped, and listed."""


def _values(held: Any, kind: str) -> list[Any]:
    """The ``values`` of an ``array_value`` or ``kvlist_value``: ``{"values": [...]}``."""
    if held == {} or held == []:
        return []
    values = held.get("values") if isinstance(held, dict) else None
    if not isinstance(values, list):
        raise BadSpan(f"{kind} is not an object with a list of values: {str(held)[:40]!r}")
    return values


def otlp_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` (``{"string_value": "x"}`` or ``{"stringValue": "x"}``...) as the
    value it holds; :class:`BadSpan` when it holds a value of the wrong type."""
    if not isinstance(value, dict):
        return value
    for key, held in value.items():
        if held is None:
            continue
        kind = str(key).replace("_", "").lower()
        if kind == "arrayvalue":
            return [otlp_value(v) for v in _values(held, "array_value")]
        if kind == "kvlistvalue":
            pairs = _values(held, "kvlist_value")
            return {
                str(p.get("key")): otlp_value(p.get("value")) for p in pairs if isinstance(p, dict)
            }
        if kind == "intvalue":
            whole = str(held).strip() if isinstance(held, (str, int)) else ""
            if isinstance(held, bool) or not whole.lstrip("-").isdigit():
                raise BadSpan(f"int_value {str(held)[:40]!r} is not a whole number")
            return int(whole)
        return held
    return None


def span_record(record: dict[str, Any]) -> dict[str, Any]:
    """One span as flat ``attributes.*`` keys, whatever shape it came in (OTLP spans are renamed
    to the names of Phoenix's span frame; their nanosecond times become ISO text)."""
    if not is_otlp_span(record):
        return flatten(record)
    attributes = {
        str(a["key"]): otlp_value(a.get("value"))
        for a in record["attributes"]
        if isinstance(a, dict) and "key" in a
    }
    status = record.get("status") if isinstance(record.get("status"), dict) else {}
    code = status.get("code")
    if code is not None and (isinstance(code, bool) or not isinstance(code, (int, str))):
        raise BadSpan(f"status.code {str(code)[:40]} is neither a number nor a name")
    return {
        "context.span_id": first_of(record, "span_id", "spanId"),
        "context.trace_id": first_of(record, "trace_id", "traceId"),
        "parent_id": first_of(record, "parent_span_id", "parentSpanId"),
        "name": record.get("name"),
        "span_kind": attributes.get("openinference.span.kind"),
        "start_time": first_of(record, "start_time_unix_nano", "startTimeUnixNano"),
        "end_time": first_of(record, "end_time_unix_nano", "endTimeUnixNano"),
        "status_code": OTLP_STATUS.get(code, code) if code is not None else None,
        "status_message": status.get("message"),
        **{f"attributes.{k}": v for k, v in attributes.items()},
    }


def readable_span(record: dict[str, Any]) -> dict[str, Any]:
    """:func:`span_record`, or ``{}`` for a span that cannot be read (to detect a format)."""
    try:
        return span_record(record)
    except BadSpan:
        return {}


def is_phoenix_root(r: dict[str, Any]) -> bool:
    return is_missing(first_of(r, "parent_id", "parent_span_id", "parentSpanId"))


def messages_of(r: dict[str, Any], name: str) -> Any:
    """An LLM span's ``llm.input_messages`` or ``llm.output_messages``: a list (the frame), or
    numbered keys (the REST API and OTLP write ``llm.input_messages.0.message.role``...)."""
    value = r.get(f"attributes.{name}")
    return value if not is_missing(value) else numbered(r, f"attributes.{name}")


def phoenix(
    records: Iterable[dict[str, Any]], report: ImportReport, *, roots_only: bool = True
) -> pd.DataFrame:
    """Arize Phoenix spans: ``attributes.input.value`` and ``attributes.output.value`` (or an
    LLM span's input and output messages) of each trace's root span; child spans are skipped."""
    rows = []
    for record in records:
        try:
            row = _span_row(record, report, roots_only)
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:  # one span's fault
            report.skip("span", "that could not be read")
            why = str(exc) if isinstance(exc, BadSpan) else f"{type(exc).__name__}: {exc}"
            report.bad_record(f"span {_span_id(record)}", why[:160])
            continue
        if row is not None:
            rows.append(row)
    return pairs_table(rows)


def _span_id(record: dict[str, Any]) -> str:
    found = first_of(record, "span_id", "spanId", "context.span_id")
    if found is None and isinstance(record.get("context"), dict):
        found = record["context"].get("span_id")
    return str(found)[:40] if found is not None else "(no span id)"


def _span_row(
    record: dict[str, Any], report: ImportReport, roots_only: bool
) -> dict[str, Any] | None:
    """One span's row, or None when it is skipped (a child span, no question or answer)."""
    r = span_record(record)
    if roots_only and not is_phoenix_root(r):
        report.skip("child span", "")
        report.note = "each trace read from its root span"
        return None
    question = text_of(r.get("attributes.input.value"), "q") or text_of(
        messages_of(r, "llm.input_messages"), "q"
    )
    answer = text_of(r.get("attributes.output.value"), "a") or text_of(
        messages_of(r, "llm.output_messages"), "a"
    )
    failed = str(r.get("status_code") or "").upper() == "ERROR"
    if not keep_pair(report, "span", question, answer, failed=failed):
        return None
    return pair_row(question, answer, _extras(r))


def _extras(r: dict[str, Any]) -> dict[str, Any]:
    tokens = r.get("attributes.llm.token_count.total")
    return {
        "span_id": first_of(r, "context.span_id", "span_id"),
        "trace_id": first_of(r, "context.trace_id", "trace_id"),
        "name": r.get("name"),
        "span_kind": first_of(r, "span_kind", "attributes.openinference.span.kind"),
        "model": r.get("attributes.llm.model_name"),
        "prompt_version": r.get("attributes.llm.prompt_template.version"),
        "start_time": as_time(r.get("start_time")),
        "end_time": as_time(r.get("end_time")),
        "status_code": r.get("status_code"),
        "tokens": int(tokens) if isinstance(tokens, (int, float)) and tokens == tokens else None,
        "tags": plain(r.get("attributes.tag.tags")),
        "session_id": r.get("attributes.session.id"),
        "user_id": r.get("attributes.user.id"),
        **metadata_columns(r.get("attributes.metadata")),
        **{k[11:]: v for k, v in r.items() if k.startswith("attributes.metadata.")},
    }
