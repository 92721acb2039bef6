"""The one definition of a result's columns.

Every place that turns a :class:`~relevancy.core.result.RelevancyResult` into columns reads
:data:`COLUMNS`: the run store's ``results`` table (its SQL columns, how a row is written and
read back, and the migration that adds a column an older store lacks), the exports of
``relevancy score -o`` and of the store (:func:`export_record`), the types of the Ray engine's
output (:func:`frame_dtypes`) and :meth:`RelevancyResult.to_dict` (the derived values). Adding a
column here adds it to all of them.

A column either mirrors a field of the result (``attr``: written from it and restored into it)
or is derived from the result (``get``: written, never read back).

Kinds, and how each is written:

========  ==========================  ==============================  ========================
kind      export (CSV, JSON, Parquet)  store (SQLite)                  Ray / Parquet dtype
========  ==========================  ==============================  ========================
float     float, NaN when missing      REAL, NULL when missing         float64
int       int (NaN when missing)       INTEGER, NULL when missing      int64 (float64 if None)
bool      bool                         INTEGER 0/1                     boolean
text      str ("" when missing)        TEXT                            object (str)
texts     items joined by ``sep``      joined, or JSON (``json_store``) object (str)
json      JSON text ("" when empty)    JSON text ("" when empty)       object (str)
vector    (not exported)               float32 bytes                   -
========  ==========================  ==============================  ========================
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from relevancy.core.redact import redact

__all__ = [
    "Column",
    "COLUMNS",
    "KINDS",
    "columns",
    "exported_columns",
    "stored_columns",
    "export_record",
    "derived_values",
    "frame_dtypes",
    "plain_json",
]

#: a :class:`~relevancy.core.result.RelevancyResult`, named here only in words: ``result.py``
#: imports this module (``to_dict`` adds the derived values), so this one does not import it back
Result = Any

KINDS = ("float", "int", "bool", "text", "texts", "json", "vector")
_SQL = {
    "float": "REAL",
    "int": "INTEGER",
    "bool": "INTEGER NOT NULL DEFAULT 0",
    "text": "TEXT NOT NULL DEFAULT ''",
    "texts": "TEXT NOT NULL DEFAULT ''",
    "json": "TEXT NOT NULL DEFAULT ''",
    "vector": "BLOB",
}


def _number(x: Any) -> float:
    if x is None:
        return math.nan
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def plain_json(value: Any) -> Any:
    """Plain JSON values: NaN -> None, numpy scalars -> Python, timestamps -> ISO text."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, Mapping):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        try:
            return plain_json(value.item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "isoformat"):
        return value.isoformat()
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def _to_json(value: Any) -> str:
    return json.dumps(plain_json(value), ensure_ascii=False) if value else ""


@dataclass(frozen=True)
class Column:
    """One column of a result (see the module docstring for the kinds)."""

    name: str
    kind: str
    #: the result's field this column mirrors (written from it, read back into it)
    attr: str | None = None
    #: for a derived column: its value from a result, ready to export
    get: Callable[[Result], Any] | None = None
    stored: bool = True  #: a column of the store's ``results`` table
    exported: bool = True  #: a column of exports (CLI, store, Ray)
    #: a page may ask the store for it (``RunStore.columns``); JSON and vectors are not
    listed: bool | None = None
    sep: str = ", "  #: ``texts``: the separator in exports
    json_store: bool = False  #: ``texts``: stored as a JSON list, not joined
    redacted: bool = False  #: text that may quote a backend's error: keys are redacted
    #: a derived ``int`` that may be missing (then float64 in typed frames); False: always there
    nullable: bool = True
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name!r}: unknown kind {self.kind!r}")
        if (self.attr is None) == (self.get is None):
            raise ValueError(f"column {self.name!r}: give exactly one of attr and get")

    @property
    def sql(self) -> str:
        return _SQL[self.kind]

    @property
    def page(self) -> bool:
        """Whether a page can ask the store for this column."""
        if self.listed is not None:
            return self.listed
        return self.stored and self.kind in ("float", "int", "bool", "text", "texts")

    @property
    def dtype(self) -> str:
        """The pandas dtype of this column in the Ray engine's output (all batches agree)."""
        if self.kind == "float" or (self.kind == "int" and self.attr is None and self.nullable):
            return "float64"
        return {"int": "int64", "bool": "boolean"}.get(self.kind, "object")

    # values ------------------------------------------------------------------------------
    def _text(self, value: Any) -> str:
        text = "" if value is None else str(value)
        return redact(text) if self.redacted and text else text

    def raw(self, result: Result) -> Any:
        """The value as the result holds it (derived columns: as exported)."""
        if self.get is not None:
            return self.get(result)
        return getattr(result, self.attr)  # type: ignore[arg-type]

    def export(self, result: Result) -> Any:
        """The value as exports write it."""
        value = self.raw(result)
        if self.get is not None:
            return value
        if self.kind == "float":
            return _number(value)
        if self.kind == "bool":
            return bool(value)
        if self.kind == "text":
            return self._text(value)
        if self.kind == "texts":
            return self.sep.join(value or [])
        if self.kind == "json":
            return _to_json(value)
        return value

    def store(self, result: Result) -> Any:
        """The value as the store's SQL column holds it."""
        value = self.raw(result)
        if self.kind in ("float", "int"):
            number = _number(value)
            if math.isnan(number):
                return None
            return int(number) if self.kind == "int" else number
        if self.kind == "bool":
            return int(bool(value))
        if self.kind == "text":
            return self._text(value)
        if self.kind == "texts":
            items = list(value or []) if not isinstance(value, str) else [value]
            return (
                json.dumps(items, ensure_ascii=False) if self.json_store else self.sep.join(items)
            )
        if self.kind == "json":
            return value if isinstance(value, str) else _to_json(value)
        if self.kind == "vector":
            if value is None:
                return None
            return np.ascontiguousarray(value, dtype=np.float32).tobytes()
        return value

    def load(self, value: Any) -> Any:
        """A stored value back as the result's field holds it (columns with ``attr``)."""
        if self.kind == "float":
            return None if value is None else float(value)
        if self.kind == "int":
            return 0 if value is None else int(value)
        if self.kind == "bool":
            return bool(value)
        if self.kind == "text":
            return value or ""
        if self.kind == "texts":
            if not value:
                return []
            if self.json_store or str(value).startswith("["):
                try:
                    return [str(x) for x in json.loads(value)]
                except ValueError:
                    pass
            return [x for x in str(value).split(self.sep) if x]
        if self.kind == "json":
            return json.loads(value) if value else None
        if self.kind == "vector":
            return None if value is None else np.frombuffer(value, dtype=np.float32)
        return value


def _similarity(how: Callable[[list[float]], float]) -> Callable[[Any], float]:
    def get(r: Any) -> float:
        sims = r.similarities
        return how(sims) if sims else math.nan

    return get


def _usage(key: str) -> Callable[[Any], float]:
    return lambda r: _number((r.usage or {}).get(key))


def _language(key: str) -> Callable[[Any], str]:
    return lambda r: str((r.languages or {}).get(key) or "")


#: every column of a result, in export order
COLUMNS: tuple[Column, ...] = (
    Column("score", "float", attr="value", doc="the score of the row's mode"),
    Column("reason", "text", attr="reason", doc="the main reason (relevancy.core.triage)"),
    Column("flags", "texts", attr="flags", doc="every reason that applies"),
    Column("mode", "text", attr="mode"),
    Column("ragas_value", "float", attr="ragas_value", doc="the Ragas value in every mode"),
    Column("noncommittal", "bool", attr="noncommittal"),
    Column("noncommittal_method", "text", attr="noncommittal_method"),
    Column(
        "noncommittal_detail",
        "text",
        attr="noncommittal_detail",
        exported=False,
        listed=False,
        redacted=True,
    ),
    Column("answer_similarity", "float", attr="answer_similarity", doc="cos(question, answer)"),
    Column("similarity_std", "float", get=lambda r: r.similarity_std, doc="population sd"),
    Column("similarity_min", "float", get=_similarity(min), stored=False, exported=False),
    Column("similarity_max", "float", get=_similarity(max), stored=False, exported=False),
    Column(
        "generated_questions",
        "json",
        get=lambda r: json.dumps([q.question for q in r.questions], ensure_ascii=False),
        stored=False,  # the store keeps them in its questions table
    ),
    Column(
        "similarities",
        "json",
        get=lambda r: json.dumps([q.similarity for q in r.questions]),
        stored=False,
    ),
    Column("parts", "json", attr="parts", doc="the answer sentence by sentence"),
    Column("question_parts", "json", attr="question_parts", exported=False),
    Column("error", "text", attr="error", redacted=True),
    Column("notes", "texts", attr="notes", sep="; ", json_store=True, listed=True),
    Column("llm", "text", attr="llm"),
    Column("embeddings", "text", attr="embeddings"),
    Column("strictness", "int", attr="strictness", doc="N, the questions asked"),
    Column(
        "questions_used",
        "int",
        get=lambda r: r.questions_used,
        nullable=False,
        doc="how many of the N generated questions were usable (the score's mean is over them)",
    ),
    Column("seconds", "float", get=lambda r: _number((r.timings or {}).get("total_s"))),
    Column("cached", "bool", attr="cached"),
    Column("prompt_tokens", "int", get=_usage("prompt_tokens")),
    Column("completion_tokens", "int", get=_usage("completion_tokens")),
    Column("embedding_tokens", "int", get=_usage("embedding_tokens")),
    Column("question_language", "text", get=_language("question"), stored=False),
    Column("answer_language", "text", get=_language("answer"), stored=False),
    Column(
        "generated_languages",
        "json",
        get=lambda r: json.dumps((r.languages or {}).get("generated", [])),
        stored=False,
    ),
    Column("prompt_language", "text", get=_language("prompted"), stored=False),
    Column("languages", "json", attr="languages", exported=False),
    Column("timings", "json", attr="timings", exported=False),
    Column("usage", "json", attr="usage", exported=False),
    Column("ui_vec", "vector", attr="user_input_embedding", exported=False),
)


def columns() -> tuple[Column, ...]:
    """Every column (read at call time, so a column added to :data:`COLUMNS` shows everywhere)."""
    return COLUMNS


def exported_columns() -> tuple[Column, ...]:
    return tuple(c for c in columns() if c.exported)


def stored_columns() -> tuple[Column, ...]:
    return tuple(c for c in columns() if c.stored)


def export_record(result: Result) -> dict[str, Any]:
    """One result as the export's columns, in order."""
    return {c.name: c.export(result) for c in exported_columns()}


def derived_values(result: Result) -> dict[str, Any]:
    """The derived columns' values (what :meth:`RelevancyResult.to_dict` adds to the fields)."""
    out: dict[str, Any] = {}
    for c in columns():
        if c.get is None:
            continue
        value = c.get(result)
        if isinstance(value, float) and math.isnan(value):
            value = None
        elif c.kind == "json" and isinstance(value, str):
            value = json.loads(value) if value else None
        out[c.name] = value
    return out


def frame_dtypes() -> dict[str, str]:
    """Each exported column's dtype in a typed frame (Ray batches, Parquet parts)."""
    return {c.name: c.dtype for c in exported_columns()}
