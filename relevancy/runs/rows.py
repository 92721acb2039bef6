"""Rows of the run store to and from Python: inputs, results (through
:data:`relevancy.core.schema.COLUMNS`), generated questions, vectors, and settings cleaned of
secrets."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pandas as pd

from relevancy.core.redact import redact
from relevancy.core.result import QuestionScore, RelevancyResult
from relevancy.core.schema import plain_json, stored_columns
from relevancy.io import (
    results_to_frame,
)

_SECRET_KEY = re.compile(r"(?i)(api[_-]?key|secret|token|password|passwd|authorization)")


#: input columns kept in typed columns (``id`` is ``item_id``: a run has an id of its own)
TYPED_INPUTS = {
    "user_input": "user_input",
    "response": "response",
    "variant": "variant",
    "id": "item_id",
}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _strip_url_credentials(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return redact(urlunsplit(parts._replace(netloc=host)))
    return redact(url)


def clean_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-ready copy of ``settings`` without secrets.

    Keys that name a secret (api_key, token, password...) are dropped, URLs lose any
    ``user:password@`` part, and every string passes through :func:`relevancy.core.redact.redact`.
    """
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if _SECRET_KEY.search(str(key)):
            continue
        if isinstance(value, Mapping):
            out[str(key)] = clean_settings(value)
        elif isinstance(value, str):
            out[str(key)] = _strip_url_credentials(value) if "://" in value else redact(value)
        elif value is None or isinstance(value, (bool, int, float)):
            out[str(key)] = value
        elif isinstance(value, (list, tuple)):
            out[str(key)] = [redact(v) if isinstance(v, str) else v for v in value]
        else:
            out[str(key)] = redact(value)
    return out


def num_or_none(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def vector_blob(vector: Any) -> bytes | None:
    """A vector as float32 bytes (``None`` stays ``None``)."""
    if vector is None:
        return None
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def blob_vector(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(blob, dtype=np.float32)


def marks(n: int) -> str:
    return ",".join("?" * n)


def input_rows(run_id: int, start: int, frame: pd.DataFrame) -> Iterator[tuple[Any, ...]]:
    records = frame.reset_index(drop=True).to_dict(orient="records")
    for i, record in enumerate(records):
        record = plain_json(record)
        extra = {k: v for k, v in record.items() if k not in TYPED_INPUTS}
        yield (
            run_id,
            start + i,
            str(record.get("user_input") or ""),
            str(record.get("response") or ""),
            None if record.get("variant") is None else str(record["variant"]),
            None if record.get("id") is None else str(record["id"]),
            json.dumps(extra, ensure_ascii=False) if extra else None,
        )


def inputs_frame(rows: list[tuple[Any, ...]], columns: Sequence[str]) -> pd.DataFrame:
    records = []
    for _, user_input, response, variant, item_id, extra in rows:
        record: dict[str, Any] = {"user_input": user_input, "response": response}
        if variant is not None:
            record["variant"] = variant
        if item_id is not None:
            record["id"] = item_id
        if extra:
            record.update(json.loads(extra))
        records.append(record)
    frame = pd.DataFrame(records, index=[r[0] for r in rows])
    order = [c for c in columns if c in frame.columns]
    frame = frame[order + [c for c in frame.columns if c not in order]]
    frame.index.name = "row"
    return frame


def scalar_columns() -> tuple[str, ...]:
    """The result columns a page can ask for (read from the schema when called)."""
    return tuple(c.name for c in stored_columns() if c.page)


def result_row(run_id: int, idx: int, r: RelevancyResult) -> tuple[Any, ...]:
    """A result as the values of ``results``' columns (in the order of
    :func:`relevancy.runs.schema.result_fields`): every stored column but the vectors."""
    return (run_id, idx, *(c.store(r) for c in stored_columns() if c.kind != "vector"))


def vector_row(run_id: int, idx: int, r: RelevancyResult) -> tuple[int, int, bytes] | None:
    """A result's user-question vector as a row of ``result_vectors`` (None without one)."""
    blob = vector_blob(r.user_input_embedding)
    return None if blob is None else (run_id, idx, blob)


def question_rows(run_id: int, idx: int, r: RelevancyResult) -> list[tuple[Any, ...]]:
    vectors = iter(r.question_embeddings if r.question_embeddings is not None else [])
    rows = []
    for k, q in enumerate(r.questions):
        vec = next(vectors, None) if q.similarity is not None else None
        flag = None if q.noncommittal is None else int(bool(q.noncommittal))
        rows.append(
            (
                run_id,
                idx,
                k,
                q.question,
                num_or_none(q.similarity),
                flag,
                redact(q.error) if q.error else None,
                vector_blob(vec),
            )
        )
    return rows


def result_from_row(
    d: dict[str, Any], questions: list[tuple[QuestionScore, Any]]
) -> RelevancyResult:
    """A result from a row of ``results`` (``d``: column name to value, with the input's
    ``user_input`` and ``response``) and its questions (each with its vector or None).
    Columns ``d`` lacks (a query without vectors, a store from before a column existed) keep
    the field's default."""
    kwargs: dict[str, Any] = {
        "user_input": d["user_input"],
        "response": d["response"],
        "questions": [q for q, _ in questions],
    }
    fields_by_name = {f.name: f for f in dataclasses.fields(RelevancyResult)}
    for column in stored_columns():
        if column.attr is None or column.name not in d:
            continue
        value = column.load(d[column.name])
        factory = fields_by_name[column.attr].default_factory
        if value is None and factory is not dataclasses.MISSING:
            value = factory()
        kwargs[column.attr] = value
    for name in ("value", "ragas_value"):
        kwargs[name] = math.nan if kwargs.get(name) is None else kwargs[name]
    kwargs["error"] = kwargs.get("error") or None
    ui = kwargs.pop("user_input_embedding", None)
    if ui is not None:
        kwargs["user_input_embedding"] = ui
        found = [v for _, v in questions if v is not None]
        kwargs["question_embeddings"] = (
            np.stack(found) if found else np.zeros((0, len(ui)), dtype=np.float32)
        )
    return RelevancyResult(**kwargs)


def export_frame(inputs: pd.DataFrame, results: list[RelevancyResult]) -> pd.DataFrame:
    """The export's table: the input's columns, then the result columns."""
    return results_to_frame(results, inputs)
