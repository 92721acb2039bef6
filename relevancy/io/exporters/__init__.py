"""Scores written back where the team looks: Phoenix span annotations
(:mod:`~relevancy.io.exporters.phoenix`), MLflow feedback on traces and MLflow runs
(:mod:`~relevancy.io.exporters.mlflow`).

They sit in ``io`` (tables in and out) because they take scored rows as tables, a chunk at a
time (the CLI reads its output file back, the dashboard the run store's export) and need nothing
of the metric or the store: the row's ids (``span_id``, ``trace_id``, kept as columns by the
importers), its score, reason and generated questions. The tools' client libraries are imported
lazily (the ``phoenix`` and ``mlflow`` extras).

A run remembers where its rows came from in its settings (``settings["origin"]``, see
:func:`origin`), so that the dashboard knows what it can write back to.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from relevancy.core.triage import REASONS

__all__ = [
    "ANNOTATION_NAME",
    "WriteBack",
    "origin",
    "origin_tool",
    "explanation",
    "label_of",
    "scored_rows",
]

#: the name the scores go under in Phoenix (annotation) and MLflow (feedback, metric prefix)
ANNOTATION_NAME = "answer_relevancy"
#: import formats whose rows can be written back, and the tool each belongs to
TOOLS = {"phoenix": "phoenix", "mlflow": "mlflow"}
#: the column that names a row in each tool
ID_COLUMNS = {"phoenix": "span_id", "mlflow": "trace_id"}


def origin(import_format: str, **where: Any) -> dict[str, Any]:
    """What a run records about where its rows came from (``settings["origin"]``): the import
    format, the tool it can write back to (if any) and where it was read from (``url`` and
    ``project`` for ``--from phoenix://``)."""
    found: dict[str, Any] = {"format": import_format}
    if import_format in TOOLS:
        found["tool"] = TOOLS[import_format]
    found.update({k: v for k, v in where.items() if v not in (None, "")})
    return found


def origin_tool(settings: Mapping[str, Any], columns: Iterable[str] = ()) -> str | None:
    """The tool a run's rows can go back to: from its recorded origin, and only if the rows
    kept the ids that tool needs (``columns``: the run's input columns, when known)."""
    found = settings.get("origin")
    tool = found.get("tool") if isinstance(found, Mapping) else None
    if tool not in ID_COLUMNS:
        return None
    columns = list(columns)
    return tool if not columns or ID_COLUMNS[tool] in columns else None


@dataclass
class WriteBack:
    """What a write-back did, in one line (:meth:`describe`)."""

    tool: str  #: "phoenix", "mlflow" or "mlflow run"
    where: str  #: the server, tracking URI or run
    written: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  #: why -> rows
    what: str = "score"  #: "span annotation", "feedback"...
    name: str = ANNOTATION_NAME
    plural: str = ""  #: the noun for many ("feedback" stays "feedback"); default: what + s

    def skip(self, why: str, n: int = 1) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + n

    def describe(self) -> str:
        noun = self.what if self.written == 1 else self.plural or self.what + "s"
        line = f"{self.written:,} {noun} {self.name!r} written to {self.where}"
        left = ", ".join(f"{n:,} {why}" for why, n in self.skipped.items())
        return line + (f" ({left} left out)" if left else "")


def label_of(score: float, threshold: float) -> str:
    """``relevant`` at or above the threshold, ``irrelevant`` below."""
    return "relevant" if score >= threshold else "irrelevant"


def _floats(value: Any) -> list[float]:
    items = _json_list(value)
    out = []
    for v in items:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            out.append(math.nan)
    return out


def _json_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except ValueError:
            return [value]
    if hasattr(value, "tolist"):
        value = value.tolist()
    return list(value) if isinstance(value, (list, tuple)) else []


def explanation(row: Mapping[str, Any]) -> str:
    """Why a row scored what it did, in a few lines: its main reason, then the questions the
    generator rebuilt from the answer with their similarity to the real question."""
    reason = str(row.get("reason") or "")
    lines = [REASONS.get(reason, reason).capitalize() + "."] if reason else []
    mode = row.get("mode")
    ragas = _number(row.get("ragas_value"))
    if isinstance(mode, str) and mode not in ("", "ragas") and math.isfinite(ragas):
        lines.append(f"Scored in {mode} mode; the Ragas value is {ragas:.3f}.")
    questions = [str(q) for q in _json_list(row.get("generated_questions"))]
    similarities = _floats(row.get("similarities"))
    if questions:
        lines.append("Questions rebuilt from the answer (cosine to the question):")
        for i, q in enumerate(questions):
            s = similarities[i] if i < len(similarities) else math.nan
            lines.append(f"{i + 1}. {q} ({s:.2f})" if math.isfinite(s) else f"{i + 1}. {q}")
    if row.get("noncommittal") in (True, 1, "True", "true"):
        lines.append("The answer was judged noncommittal (it dodges the question).")
    return "\n".join(lines)


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


def scored_rows(
    chunks: Iterable[pd.DataFrame], id_column: str, report: WriteBack
) -> Iterable[tuple[str, float, dict[str, Any]]]:
    """``(id, score, row)`` of every row that has an id and a score; the others are counted
    in ``report`` (no id, not scored)."""
    for chunk in chunks:
        if id_column not in chunk.columns:
            report.skip(f"rows without a {id_column}", len(chunk))
            continue
        for row in chunk.to_dict(orient="records"):
            key = row.get(id_column)
            if key is None or (isinstance(key, float) and math.isnan(key)) or not str(key).strip():
                report.skip(f"rows without a {id_column}")
                continue
            score = _number(row.get("score"))
            if not math.isfinite(score):
                report.skip("rows not scored")
                continue
            yield str(key), score, row
