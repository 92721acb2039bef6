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

from relevancy.core.triage import REASONS, enough_questions

__all__ = [
    "ANNOTATION_NAME",
    "WriteBack",
    "origin",
    "origin_tool",
    "explanation",
    "reason_at",
    "label_of",
    "row_label",
    "scored_rows",
    "row_metadata",
    "SOURCE",
]

#: the name the scores go under in Phoenix (annotation) and MLflow (feedback, metric prefix)
ANNOTATION_NAME = "answer_relevancy"
#: import formats whose rows can be written back, and the tool each belongs to
TOOLS = {"phoenix": "phoenix", "mlflow": "mlflow"}
#: the column that names a row in each tool
ID_COLUMNS = {"phoenix": "span_id", "mlflow": "trace_id"}
#: what every score written back says it came from (``metadata.source``); with Phoenix's
#: annotation identifier and MLflow's feedback source, how a write-back tells its own scores
#: from a person's or another tool's
SOURCE = "relevancy"


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


#: ids listed per reason in a write-back's failure lines (the rest are counted)
LIST_IDS = 5


@dataclass
class WriteBack:
    """What a write-back did: scores written, found already there, kept as a person left them,
    not written and why (:meth:`describe`, :meth:`problems`). ``ok`` is False whenever a scored
    row's score did not get where it was sent: the CLI then exits non-zero."""

    tool: str  #: "phoenix", "mlflow" or "mlflow run"
    where: str  #: the server, tracking URI or run
    written: int = 0
    what: str = "score"  #: "span annotation", "feedback"...
    name: str = ANNOTATION_NAME
    plural: str = ""  #: the noun for many ("feedback" stays "feedback"); default: what + s
    #: rows with nothing to send, not a failure (why -> rows): "rows not scored"
    skipped: dict[str, int] = field(default_factory=dict)
    unchanged: int = 0  #: already there with this score (sent before): not sent again
    #: left as they are on purpose (why -> rows): a person's correction of an earlier score
    kept: dict[str, int] = field(default_factory=dict)
    #: scores not written (why -> the row ids, every one)
    failed: dict[str, list[str]] = field(default_factory=dict)
    stopped: str = ""  #: why the write-back stopped before the end (the server went away...)
    not_tried: int = 0  #: scored rows not tried after it stopped

    def skip(self, why: str, n: int = 1) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + n

    def keep(self, why: str, n: int = 1) -> None:
        self.kept[why] = self.kept.get(why, 0) + n

    def fail(self, why: str, *ids: str) -> None:
        self.failed.setdefault(why, []).extend(ids)

    @property
    def n_failed(self) -> int:
        """Scored rows whose score was not written (failed, or not tried after a stop)."""
        return sum(len(ids) for ids in self.failed.values()) + self.not_tried

    @property
    def ok(self) -> bool:
        """Every scored row that could be sent is there (written now or before, or kept)."""
        return not self.n_failed and not self.stopped

    def _noun(self, n: int) -> str:
        return self.what if n == 1 else self.plural or self.what + "s"

    def describe(self) -> str:
        """One line: what was written where, and what was left out on purpose."""
        line = f"{self.written:,} {self._noun(self.written)} {self.name!r} written to {self.where}"
        notes = [f"{self.unchanged:,} already there"] if self.unchanged else []
        notes += [f"{n:,} kept: {why}" for why, n in self.kept.items()]
        notes += [f"{n:,} {_one(why, n)} left out" for why, n in self.skipped.items()]
        return line + (f" ({'; '.join(notes)})" if notes else "")

    def problems(self) -> list[str]:
        """One line per reason a score was not written, with the first ids; empty when ok."""
        lines = []
        for why, ids in self.failed.items():
            shown = ", ".join(ids[:LIST_IDS]) + (
                f" and {len(ids) - LIST_IDS:,} more" if len(ids) > LIST_IDS else ""
            )
            why = _one(why, len(ids))
            lines.append(f"{len(ids):,} {why}: {shown}" if shown else f"{len(ids):,} {why}")
        if self.stopped:
            done = f"{self.written:,} {self._noun(self.written)} written before it stopped"
            left = f", {self.not_tried:,} scores not tried" if self.not_tried else ""
            lines.append(f"{self.stopped}: {done}{left}")
        return lines


def _one(why: str, n: int) -> str:
    """``rows not scored`` for one row: ``row not scored``."""
    return why.replace("rows ", "row ", 1) if n == 1 and why.startswith("rows ") else why


def label_of(score: float, threshold: float) -> str:
    """``relevant`` at or above the threshold, ``irrelevant`` below."""
    return "relevant" if score >= threshold else "irrelevant"


def row_label(row: Mapping[str, Any], threshold: float, min_questions: int | None = None) -> str:
    """The label a written score carries: :func:`label_of` at ``threshold``, or ``incomplete``
    when the row was scored from fewer usable generated questions than ``min_questions``
    (default: all it asked for), whichever side of the threshold (no verdict on fewer)."""
    used, asked = row.get("questions_used"), row.get("strictness")
    if not enough_questions(used, asked, min_questions):
        return "incomplete"
    return label_of(_number(row.get("score")), threshold)


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


def reason_at(row: Mapping[str, Any], threshold: float | None) -> str:
    """The row's main reason, decided again at ``threshold`` where a threshold decides it: a row
    filed ``ok`` and below ``threshold`` is ``drifting``, and the other way round."""
    reason = _text(row.get("reason"))
    score = _number(row.get("score"))
    if threshold is None or not math.isfinite(score):
        return reason
    if reason == "ok" and score < threshold:
        return "drifting"
    if reason == "drifting" and score >= threshold:
        return "ok"
    return reason


def explanation(
    row: Mapping[str, Any], threshold: float | None = None, min_questions: int | None = None
) -> str:
    """Why a row scored what it did, in a few lines: its main reason, then the questions the
    generator rebuilt from the answer with their similarity to the real question.

    With ``threshold`` (the one its label is given at) the reason agrees with the label: a row
    filed ``ok`` at another threshold and below this one is ``drifting``, and the other way
    round (the only reasons a threshold decides)."""
    reason = reason_at(row, threshold)
    lines = [REASONS.get(reason, reason).capitalize() + "."] if reason else []
    used, asked = _number(row.get("questions_used")), _number(row.get("strictness"))
    if reason != "incomplete_generation" and not enough_questions(used, asked, min_questions):
        lines.append(f"Not a verdict: scored from {used:.0f} of {asked:.0f} generated questions.")
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
    """``(id, score, row)`` of every scored row that has an id. A row not scored has nothing to
    send (counted as skipped); a scored row without an id cannot be sent (a failure, listed by
    its row number, from 1)."""
    first = 1
    for chunk in chunks:
        has_ids = id_column in chunk.columns
        for i, row in enumerate(chunk.to_dict(orient="records"), start=first):
            score = _number(row.get("score"))
            if not math.isfinite(score):
                report.skip("rows not scored")
                continue
            key = row.get(id_column) if has_ids else None
            if key is None or (isinstance(key, float) and math.isnan(key)) or not str(key).strip():
                report.fail(f"scored rows without a {id_column}", f"row {i}")
                continue
            yield str(key).strip(), score, row
        first += len(chunk)


def row_metadata(
    row: Mapping[str, Any], threshold: float, min_questions: int | None = None
) -> dict[str, Any]:
    """What a written score carries besides its value: the label at ``threshold``, the reason,
    the mode, the Ragas value (a number), the backends and ``source: relevancy`` (how a later
    write-back knows its own). Empty and non-finite values are left out."""
    score = _number(row.get("score"))
    found: dict[str, Any] = {
        "label": row_label(row, threshold, min_questions) if math.isfinite(score) else None,
        "threshold": float(threshold),
        "reason": reason_at(row, threshold),
        "mode": _text(row.get("mode")),
        "ragas_value": _number(row.get("ragas_value")),
        "questions_used": _number(row.get("questions_used")),
        "llm": _text(row.get("llm")),
        "embeddings": _text(row.get("embeddings")),
        "source": SOURCE,
    }
    kept = {}
    for key, value in found.items():
        if isinstance(value, float):
            if math.isfinite(value):
                kept[key] = int(value) if key == "questions_used" else value
        elif value:
            kept[key] = value
    return kept


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()
