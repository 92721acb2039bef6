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
OTLP_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR", "STATUS_CODE_UNSET": "UNSET",
               "STATUS_CODE_OK": "OK", "STATUS_CODE_ERROR": "ERROR"}  # fmt: skip


def is_otlp_span(record: dict[str, Any]) -> bool:
    """An OTLP JSON span: attributes as a list of ``{key, value}`` pairs."""
    return isinstance(record.get("attributes"), list) and bool({"span_id", "spanId"} & set(record))


def otlp_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` (``{"string_value": "x"}`` or ``{"stringValue": "x"}``...) as the
    value it holds."""
    if not isinstance(value, dict):
        return value
    for key, held in value.items():
        if held is None:
            continue
        kind = key.replace("_", "").lower()
        if kind == "arrayvalue":
            return [otlp_value(v) for v in (held or {}).get("values") or []]
        if kind == "kvlistvalue":
            pairs = (held or {}).get("values") or []
            return {p.get("key"): otlp_value(p.get("value")) for p in pairs if isinstance(p, dict)}
        if kind == "intvalue":
            return int(held)
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
        r = span_record(record)
        if roots_only and not is_phoenix_root(r):
            report.skip("child span", "")
            report.note = "each trace read from its root span"
            continue
        question = text_of(r.get("attributes.input.value"), "q") or text_of(
            messages_of(r, "llm.input_messages"), "q"
        )
        answer = text_of(r.get("attributes.output.value"), "a") or text_of(
            messages_of(r, "llm.output_messages"), "a"
        )
        failed = str(r.get("status_code") or "").upper() == "ERROR"
        if not keep_pair(report, "span", question, answer, failed=failed):
            continue
        rows.append(pair_row(question, answer, _extras(r)))
    return pairs_table(rows)


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
