"""Reading an uploaded table, mapping its columns and validating it (pure: no Streamlit)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from relevancy._errors import InputError
from relevancy._io import COLUMN_ALIASES

__all__ = [
    "UPLOAD_TYPES",
    "Issue",
    "read_upload",
    "guess_mapping",
    "apply_mapping",
    "validate",
    "SECONDS_PER_ROW_EMBEDDED",
]

UPLOAD_TYPES = ("csv", "tsv", "json", "jsonl", "ndjson", "parquet")
ROLES = ("user_input", "response", "variant", "id")
#: measured on 2 cores with strictness 3 (SmolLM2-135M + MiniLM int8)
SECONDS_PER_ROW_EMBEDDED = 1.2
_LONG_RESPONSE = 2000


@dataclass(frozen=True)
class Issue:
    level: str  #: "error" (blocks scoring), "warning" or "info"
    message: str


def read_upload(name: str, data: bytes) -> pd.DataFrame:
    """Read an uploaded file's bytes into a DataFrame.

    The library's reader (:func:`relevancy.read_table_bytes`) is tried first: it gives clear
    one-line errors (spreadsheet instead of CSV, bad JSON line, wrong encoding...) and renames
    alias columns (``question`` -> ``user_input``...). When it only fails because no column is
    recognisable as the question or the answer, the table is read with its own column names so
    the user can map them by hand. Raises :class:`InputError` otherwise.
    """
    from relevancy import read_table_bytes

    suffix = Path(name).suffix.lower().lstrip(".")
    if suffix not in UPLOAD_TYPES:
        raise InputError(
            f"unsupported file type {suffix or '(none)'!r} for {name!r}: upload "
            + ", ".join(UPLOAD_TYPES)
        )
    try:
        frame = read_table_bytes(data, name)
    except InputError as exc:
        if not str(exc).startswith("missing column"):
            raise
        frame = _read_raw(name, data, suffix)
    frame.columns = [str(c) for c in frame.columns]
    return frame.reset_index(drop=True)


def _read_raw(name: str, data: bytes, suffix: str) -> pd.DataFrame:
    """The table with its original column names (the library reader already vetted the bytes)."""
    try:
        if suffix == "parquet":
            return pd.read_parquet(io.BytesIO(data))
        text = data.decode("utf-8-sig")
        if suffix in ("csv", "tsv"):
            return pd.read_csv(
                io.StringIO(text),
                sep=None if suffix == "csv" else "\t",
                engine="python",
                dtype=str,
                keep_default_na=False,
            )
        if suffix == "json":
            records = json.loads(text)
            if isinstance(records, dict) and isinstance(records.get("data"), list):
                records = records["data"]
            return pd.DataFrame(records)
        return pd.DataFrame([json.loads(line) for line in text.splitlines() if line.strip()])
    except Exception as exc:  # the library reader accepted the file, so this is unexpected
        raise InputError(f"cannot read {name!r} as {suffix}: {str(exc)[:200]}") from None


def guess_mapping(columns: list[str]) -> dict[str, str | None]:
    """Best guess of which column plays each role, by the library's aliases (case-insensitive)."""
    lower = {c.strip().lower(): c for c in columns}
    out: dict[str, str | None] = {}
    used: set[str] = set()
    for role in ROLES:
        found = None
        for alias in COLUMN_ALIASES[role]:
            col = lower.get(alias)
            if col is not None and col not in used:
                found = col
                break
        out[role] = found
        if found:
            used.add(found)
    return out


def apply_mapping(frame: pd.DataFrame, mapping: dict[str, str | None]) -> pd.DataFrame:
    """Rename the mapped columns to ``user_input``/``response``/``variant``/``id``.

    Other columns are kept (they travel with the results); a column already named like a role
    but not chosen for it is renamed with a ``source_`` prefix so it cannot be mistaken.
    """
    chosen = {col: role for role, col in mapping.items() if col}
    renames: dict[str, str] = {}
    for col in frame.columns:
        if col in chosen:
            renames[col] = chosen[col]
        elif col in ROLES:
            renames[col] = f"source_{col}"
    out = frame.rename(columns=renames)
    for role in ("user_input", "response"):
        if role in out.columns:
            out[role] = out[role].map(lambda v: "" if v is None or pd.isna(v) else str(v))
    for role in ("variant", "id"):
        if role in out.columns:
            out[role] = out[role].map(lambda v: "" if v is None or pd.isna(v) else str(v))
    return out.reset_index(drop=True)


def validate(
    frame: pd.DataFrame, mapping: dict[str, str | None], *, embedded: bool = True
) -> list[Issue]:
    """Problems that block scoring (``error``) and things worth knowing before it."""
    issues: list[Issue] = []
    if frame.empty:
        return [Issue("error", "The table has a header but no rows: add question/answer rows.")]
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
    mapped = apply_mapping(frame, mapping)
    empty_q = int((mapped["user_input"].str.strip() == "").sum())
    empty_a = int((mapped["response"].str.strip() == "").sum())
    if empty_q or empty_a:
        issues.append(
            Issue(
                "warning",
                f"{empty_q} row(s) have an empty question and {empty_a} an empty answer: "
                "they will be kept as NaN with the reason, not scored.",
            )
        )
    if empty_q == len(mapped) or empty_a == len(mapped):
        issues.append(Issue("error", "Every row has an empty question or answer."))
    keys = ["user_input", "response"] + (["variant"] if "variant" in mapped.columns else [])
    dupes = int(mapped.duplicated(subset=keys).sum())
    if dupes:
        issues.append(
            Issue("warning", f"{dupes} duplicate row(s) (same question, answer and variant).")
        )
    long = int((mapped["response"].str.len() > _LONG_RESPONSE).sum())
    if long and embedded:
        issues.append(
            Issue(
                "warning",
                f"{long} answer(s) are longer than {_LONG_RESPONSE} characters: the embedded "
                "generator reads only the beginning, and scores of long answers are less "
                "reliable with a small model.",
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
