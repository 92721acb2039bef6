"""The Dataset page's logic, without Streamlit: uploads, mapping, validation, filters, tables.

An upload is parsed once with its own column names (:func:`read_upload`), the roles are guessed
by name and may be changed by hand, and :func:`relevancy.io.apply_mapping` turns it into the
table that is scored. The results table is filtered (:class:`Filters`) and shown
(:func:`results_table`) by pure functions the page only calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from relevancy.analysis.agreement import label_kind, parse_labels
from relevancy.core.numbers import cell_text, percent
from relevancy.errors import InputError
from relevancy.io import FORMATS, ROLES, apply_mapping, inspect_rows, read_table_bytes
from relevancy.io.importers import ImportReport

__all__ = [
    "reason_table",
    "UPLOAD_TYPES",
    "ROLES",
    "Issue",
    "read_upload",
    "validate",
    "results_table",
    "questions_used_text",
]

UPLOAD_TYPES = tuple(f.lstrip(".") for f in FORMATS)


@dataclass(frozen=True)
class Issue:
    level: str  #: "error" (blocks scoring), "warning" or "info"
    message: str


def read_upload(
    name: str, data: bytes, *, source_format: str = "auto", report: ImportReport | None = None
) -> pd.DataFrame:
    """An uploaded file's table with its own column names (one-line :class:`InputError`).

    A tool's export (Langfuse, LangSmith, Phoenix, OpenAI chat messages) is detected and
    converted unless ``source_format`` says otherwise; ``report`` is filled with what was found.
    """
    suffix = Path(name).suffix.lower().lstrip(".")
    if suffix not in UPLOAD_TYPES:
        raise InputError(
            f"unsupported file type {suffix or '(none)'!r} for {name!r}: upload "
            + ", ".join(UPLOAD_TYPES)
        )
    return read_table_bytes(data, name, normalize=False, source_format=source_format, report=report)


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
    label = mapping.get("label")
    if label and label in frame.columns:
        try:
            values = parse_labels(frame[label].tolist(), column=label)
        except InputError as exc:
            issues.append(Issue("error", f"{exc}; or choose (none) for the label column."))
        else:
            n = int((values == values).sum())
            issues.append(
                Issue(
                    "info",
                    f"Human labels in {label!r}: {n} row(s), "
                    f"{label_kind(values)}; the Agreement page compares them with "
                    "the scores.",
                )
            )
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
                ),
            )
        )
    if "variant" in mapped.columns:
        variants = mapped["variant"].replace("", "(none)").value_counts()
        text = ", ".join(f"{k} ({v})" for k, v in variants.head(8).items())
        issues.append(Issue("info", f"{len(variants)} variant(s): {text}."))
    else:
        issues.append(Issue("info", "No variant column: the Compare page needs one (or two runs)."))
    return issues


def _rows(rows: list[int], limit: int = 5) -> str:
    shown = ", ".join(str(r) for r in rows[:limit])
    return f"rows {shown}" + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


# --- the results table -------------------------------------------------------------------
def questions_used_text(used: object, asked: object) -> str:
    """``"2 of 3"``: the generated questions a row's score rests on, of those asked (``""``
    for a row scored before it was recorded)."""
    try:
        return f"{int(used)} of {int(asked)}"  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return ""


def results_table(page: pd.DataFrame, *, inputs: list[str], with_ragas: bool) -> pd.DataFrame:
    """The grid the page shows, from a page of :meth:`relevancy.runs.RunStore.query`: row,
    the user's own columns (id, variant, ...), score (and Ragas value), mode, the texts..."""
    columns: dict[str, object] = {"row": page["row"].astype(int) + 1}  # 1-based, as in the CLI
    for name in inputs:
        if name in page.columns:
            columns[name] = page[name].map(cell_text)  # a missing cell: "—", never nan/None
    columns["score"] = pd.to_numeric(page["score"], errors="coerce")
    columns["reason"] = page["reason"].astype(str) if "reason" in page else ""
    if with_ragas:
        columns["Ragas value"] = pd.to_numeric(page["ragas_value"], errors="coerce")
    columns["mode"] = page["mode"].astype(str)
    columns["question"] = page["user_input"].astype(str)
    columns["answer"] = page["response"].astype(str)
    columns["noncommittal"] = page["noncommittal"].astype(bool)
    columns["answer ~ question"] = pd.to_numeric(page["answer_similarity"], errors="coerce")
    if "questions_used" in page:
        columns["questions"] = [
            questions_used_text(u, n) for u, n in zip(page["questions_used"], page["strictness"])
        ]
    columns["generated questions"] = page["generated_questions"].astype(str)
    columns["flags"] = page["flags"].astype(str) if "flags" in page else ""
    columns["error"] = page["error"].astype(str)
    return pd.DataFrame(columns).reset_index(drop=True)


def reason_table(frame: pd.DataFrame, by: str | None) -> pd.DataFrame:
    """Rows by main reason (rows) and group (columns), as ``"12 (25%)"`` text."""
    reasons = frame["reason"].fillna("").replace("", "not triaged")
    if by and by in frame.columns:
        groups = frame[by].astype(str)
    else:
        groups = pd.Series("all rows", index=frame.index)
    counts = pd.crosstab(reasons, groups)
    shares = (counts / counts.sum()).apply(lambda col: col.map(percent))
    return counts.map(lambda n: f"{n:,}") + " (" + shares + ")"
