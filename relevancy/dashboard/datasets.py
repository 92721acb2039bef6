"""The Dataset page's logic, without Streamlit: uploads, mapping, validation, filters, tables.

An upload is parsed once with its own column names (:func:`read_upload`), the roles are guessed
by name and may be changed by hand, and :func:`relevancy._io.apply_mapping` turns it into the
table that is scored. The results table is filtered (:class:`Filters`) and shown
(:func:`results_table`) by pure functions the page only calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from relevancy._errors import InputError
from relevancy._io import FORMATS, ROLES, apply_mapping, inspect_rows, read_table_bytes

__all__ = [
    "UPLOAD_TYPES",
    "ROLES",
    "SECONDS_PER_ROW_EMBEDDED",
    "Issue",
    "read_upload",
    "validate",
    "Filters",
    "apply_filters",
    "results_table",
    "questions_text",
]

UPLOAD_TYPES = tuple(f.lstrip(".") for f in FORMATS)
#: measured on 2 cores with strictness 3 (SmolLM2-135M + MiniLM int8)
SECONDS_PER_ROW_EMBEDDED = 1.2


@dataclass(frozen=True)
class Issue:
    level: str  #: "error" (blocks scoring), "warning" or "info"
    message: str


def read_upload(name: str, data: bytes) -> pd.DataFrame:
    """An uploaded file's table with its own column names (one-line :class:`InputError`)."""
    suffix = Path(name).suffix.lower().lstrip(".")
    if suffix not in UPLOAD_TYPES:
        raise InputError(
            f"unsupported file type {suffix or '(none)'!r} for {name!r}: upload "
            + ", ".join(UPLOAD_TYPES)
        )
    return read_table_bytes(data, name, normalize=False)


def validate(
    frame: pd.DataFrame,
    mapping: dict[str, str | None],
    *,
    long_text: int | None = None,
    embedded: bool = True,
) -> list[Issue]:
    """Problems that block scoring (``error``) and things worth knowing before it.

    Row problems come from :func:`relevancy.inspect_rows` (the CLI's checks, with the same
    limits); ``long_text`` is the generator's limit on the answer's length.
    """
    if frame.empty:
        return [Issue("error", "The table has a header but no rows: add question/answer rows.")]
    issues: list[Issue] = []
    for role, label in (("user_input", "question"), ("response", "answer")):
        if not mapping.get(role):
            issues.append(Issue("error", f"Choose the column that holds the {label}."))
    q, a = mapping.get("user_input"), mapping.get("response")
    if q and a and q == a:
        issues.append(Issue("error", "The question and the answer must be different columns."))
    for role, column in mapping.items():
        if column and column not in frame.columns:
            issues.append(Issue("error", f"Column {column!r} (for {role}) is not in the table."))
    if any(i.level == "error" for i in issues):
        return issues
    try:
        mapped = apply_mapping(frame, mapping)
    except InputError as exc:
        return [Issue("error", str(exc))]
    problems = inspect_rows(mapped, long_text=long_text)
    kinds = {
        "empty": [p for p in problems if p.problem.endswith("is empty")],
        "duplicate": [p for p in problems if p.problem.startswith("duplicate")],
        "long": [p for p in problems if "characters" in p.problem],
    }
    if kinds["empty"]:
        rows = sorted({p.row for p in kinds["empty"]})
        issues.append(
            Issue(
                "warning",
                f"{len(rows)} row(s) have an empty question or answer ({_rows(rows)}): they "
                "will be kept as NaN with the reason, not scored.",
            )
        )
        if len(rows) == len(mapped):
            issues.append(Issue("error", "Every row has an empty question or answer."))
    if kinds["duplicate"]:
        issues.append(
            Issue(
                "warning",
                f"{len(kinds['duplicate'])} duplicate row(s) (same question, answer and variant: "
                f"{_rows([p.row for p in kinds['duplicate']])}); they are scored once.",
            )
        )
    if kinds["long"]:
        issues.append(
            Issue(
                "warning",
                f"{len(kinds['long'])} answer(s) are longer than the question generator reads "
                f"({_rows([p.row for p in kinds['long']])}): it sees the beginning only"
                + (
                    ", and a small model's scores of long answers are less reliable."
                    if embedded
                    else "."
                ),  # fmt: skip
            )
        )
    if "variant" in mapped.columns:
        variants = mapped["variant"].replace("", "(none)").value_counts()
        text = ", ".join(f"{k} ({v})" for k, v in variants.head(8).items())
        issues.append(Issue("info", f"{len(variants)} variant(s): {text}."))
    else:
        issues.append(Issue("info", "No variant column: the Compare page needs one (or two runs)."))
    if embedded:
        minutes = len(mapped) * SECONDS_PER_ROW_EMBEDDED / 60
        if minutes >= 1:
            issues.append(
                Issue(
                    "info",
                    f"About {minutes:.0f} min with the embedded models on this machine "
                    "(rows already in the cache are instant).",
                )
            )
    return issues


def _rows(rows: list[int], limit: int = 5) -> str:
    shown = ", ".join(str(r) for r in rows[:limit])
    return f"rows {shown}" + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


# --- the results table -------------------------------------------------------------------
SORTS = ("score ↑ (lowest first)", "score ↓", "row")


@dataclass(frozen=True)
class Filters:
    """What the Dataset page's filter widgets chose."""

    score_range: tuple[float, float] = (-1.0, 1.0)
    noncommittal: str = "all"  #: "all", "yes" or "no"
    status: str = "all"  #: "all", "scored" or "NaN / errors"
    search: str = ""
    variants: tuple[str, ...] = ()  #: none chosen: all variants
    only_below: float | None = None  #: the threshold, when "only below" is on
    sort: str = SORTS[0]
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)  #: column -> values kept


def apply_filters(frame: pd.DataFrame, f: Filters) -> pd.DataFrame:
    """The rows of a results table that pass ``f``, in its sort order."""
    scores = pd.to_numeric(frame["score"], errors="coerce")
    finite = scores.notna()
    mask = ~finite | scores.between(*f.score_range)
    if f.status == "scored":
        mask &= finite
    elif f.status == "NaN / errors":
        mask &= ~finite | (frame["error"].astype(str) != "")
    if f.noncommittal != "all":
        mask &= frame["noncommittal"].astype(bool) == (f.noncommittal == "yes")
    if f.variants and "variant" in frame.columns:
        mask &= frame["variant"].astype(str).isin(f.variants)
    for column, values in f.extra.items():
        if values and column in frame.columns:
            mask &= frame[column].astype(str).isin(values)
    needle = f.search.strip().lower()
    if needle:
        text = frame["user_input"].astype(str) + "\n" + frame["response"].astype(str)
        mask &= text.str.lower().str.contains(needle, regex=False)
    if f.only_below is not None:
        mask &= finite & (scores < f.only_below)
    view = frame[mask].assign(score=scores[mask])
    if f.sort == SORTS[0]:
        view = view.sort_values("score", na_position="first", kind="stable")
    elif f.sort == SORTS[1]:
        view = view.sort_values("score", ascending=False, na_position="last", kind="stable")
    return view


def questions_text(text: object) -> str:
    """The generated questions of an exported row, joined with `` · ``."""
    try:
        return " · ".join(json.loads(str(text)))
    except (TypeError, ValueError):
        return ""


def results_table(view: pd.DataFrame, *, with_ragas: bool) -> pd.DataFrame:
    """The grid the page shows: row, id, variant, score (and Ragas value), mode, texts..."""
    columns: dict[str, object] = {"row": view["row"].astype(int)}
    if "id" in view.columns:
        columns["id"] = view["id"].astype(str)
    if "variant" in view.columns:
        columns["variant"] = view["variant"].astype(str)
    columns["score"] = pd.to_numeric(view["score"], errors="coerce")
    if with_ragas:
        columns["Ragas value"] = pd.to_numeric(view["ragas_value"], errors="coerce")
    columns["mode"] = view["mode"].astype(str) if "mode" in view.columns else "ragas"
    columns["question"] = view["user_input"].astype(str)
    columns["answer"] = view["response"].astype(str)
    columns["noncommittal"] = view["noncommittal"].astype(bool)
    columns["answer ~ question"] = pd.to_numeric(view["answer_similarity"], errors="coerce")
    columns["generated questions"] = view["generated_questions"].map(questions_text)
    columns["error"] = view["error"].astype(str)
    return pd.DataFrame(columns).reset_index(drop=True)
