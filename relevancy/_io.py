"""Reading question/answer tables and writing results.

Accepted inputs: CSV, TSV, JSON (a list of records, or Ragas' dataset layout), JSONL and Parquet.
Columns are matched by alias (``question`` -> ``user_input``, ``answer`` -> ``response``...).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from relevancy._errors import InputError
from relevancy._result import RelevancyResult

__all__ = [
    "ROLES",
    "COLUMN_ALIASES",
    "guess_mapping",
    "apply_mapping",
    "LONG_TEXT_CHARS",
    "check_text",
    "read_table",
    "read_table_bytes",
    "inspect_rows",
    "RowProblem",
    "normalize_columns",
    "results_to_frame",
    "write_results",
    "FORMATS",
    "OUTPUT_FORMATS",
]

#: the columns a table's own columns are mapped to (the first two are required)
ROLES = ("user_input", "response", "variant", "id")
COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "user_input": ("user_input", "question", "query", "input", "prompt"),
    "response": ("response", "answer", "output", "completion"),
    "variant": ("variant", "model", "system", "prompt_version"),
    "id": ("id", "row_id", "pair_id", "question_id", "qid"),
}
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: A cell longer than this is listed as a problem when the generator states no limit of its own.
LONG_TEXT_CHARS = 20_000
FORMATS = (".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".parquet")
#: what results can be written as
OUTPUT_FORMATS = (".csv", ".json", ".jsonl", ".parquet")


def read_table(
    path: str | Path, *, format: str | None = None, normalize: bool = True
) -> pd.DataFrame:
    """Read a table of question/answer pairs and normalise its column names.

    Raises :class:`InputError` with one line that names the problem and the fix. With
    ``normalize=False`` the table keeps its own column names (to be mapped by hand, see
    :func:`guess_mapping` and :func:`apply_mapping`).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"file not found: {str(path)!r}")
    if path.is_dir():
        raise InputError(f"{str(path)!r} is a folder: give a CSV, JSON, JSONL or Parquet file")
    return read_table_bytes(path.read_bytes(), path.name, format=format, normalize=normalize)


def read_table_bytes(
    data: bytes, name: str, *, format: str | None = None, normalize: bool = True
) -> pd.DataFrame:
    """Like :func:`read_table`, for the bytes of an uploaded file called ``name``."""
    suffix = (format or Path(name).suffix).lower()
    if suffix and not suffix.startswith("."):
        suffix = "." + suffix
    if suffix not in FORMATS:
        raise InputError(
            f"unsupported file type {suffix or '(none)'!r} for {name!r}: use one of "
            f"{', '.join(FORMATS)}"
        )
    if not data.strip():
        raise InputError(f"{name!r} is empty: it needs a header row and at least one row")
    if data[:4] == b"PK\x03\x04" or data[:4] == b"\xd0\xcf\x11\xe0":
        raise InputError(
            f"{name!r} is a spreadsheet (Excel) file, not {suffix[1:]}: export it as "
            "'CSV UTF-8' and upload that"
        )
    if data[:4] == b"PAR1" and suffix != ".parquet":
        raise InputError(f"{name!r} is a Parquet file: give it a .parquet extension")
    if suffix == ".parquet":
        try:
            frame = pd.read_parquet(io.BytesIO(data))
        except Exception as exc:
            raise InputError(f"{name!r} is not a readable Parquet file ({exc})") from None
        return _finish(frame, name, normalize)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name!r} is not UTF-8 text (byte {data[exc.start]:#04x} at position {exc.start}): "
            "save it with UTF-8 encoding"
        ) from None
    if suffix in (".csv", ".tsv"):
        frame = _read_csv(text, name, "\t" if suffix == ".tsv" else None)
    elif suffix == ".json":
        frame = _read_json(text, name)
    else:
        frame = _read_jsonl(text, name)
    return _finish(frame, name, normalize)


def _finish(frame: pd.DataFrame, name: str, normalize: bool) -> pd.DataFrame:
    if normalize:
        return normalize_columns(frame, name=name)
    _check_columns(frame)
    frame.columns = [str(c) for c in frame.columns]
    return frame.reset_index(drop=True)


def _read_csv(text: str, name: str, sep: str | None) -> pd.DataFrame:
    if sep is None:
        try:
            sep = csv.Sniffer().sniff(text[:65536], delimiters=",;\t|").delimiter
        except csv.Error:
            sep = ","
    try:
        frame = pd.read_csv(
            io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, skip_blank_lines=True
        )
    except pd.errors.ParserError as exc:
        raise InputError(f"{name!r} is not well-formed CSV ({str(exc).strip()[:160]})") from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{name!r} is empty: it needs a header row and at least one row") from None
    known = {alias for aliases in COLUMN_ALIASES.values() for alias in aliases}
    if frame.shape[1] == 1 and str(frame.columns[0]).strip().lower() not in known:
        raise InputError(
            f"{name!r} was read as a single column {str(frame.columns[0])[:60]!r}: the delimiter "
            "looks wrong; use commas (or a .tsv file for tabs)"
        )
    return frame


def _read_json(text: str, name: str) -> pd.DataFrame:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{name!r} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "for one record per line use a .jsonl file"
        ) from None
    if isinstance(data, dict):
        # Ragas/HF-style column layout {"user_input": [...], "response": [...]} or {"data": [...]}.
        if "data" in data and isinstance(data["data"], list):
            data = data["data"]
        elif data and all(isinstance(v, list) for v in data.values()):
            if len({len(v) for v in data.values()}) != 1:
                raise InputError(f"{name!r} holds columns of different lengths")
            return pd.DataFrame(data)
        else:
            raise InputError(
                f"{name!r} holds a JSON object, not a list of records: "
                'give a list like [{"user_input": ..., "response": ...}]'
            )
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InputError(
            f"{name!r} is not a JSON list of records: give a list like "
            '[{"user_input": ..., "response": ...}]'
        )
    return pd.DataFrame(data)


def _read_jsonl(text: str, name: str) -> pd.DataFrame:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{name!r} line {number} is not valid JSON ({exc.msg}): fix or remove that line"
            ) from None
        if not isinstance(record, dict):
            raise InputError(f"{name!r} line {number} is not a JSON object: one record per line")
        records.append(record)
    return pd.DataFrame(records)


def _coerce_text(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """Role columns as ``str`` (missing cells as ""); nested values are an error."""
    for column in ROLES:
        if column not in frame.columns:
            continue
        values = frame[column]
        nested = values.map(lambda v: isinstance(v, (list, dict, tuple, bytes, np.ndarray)))
        if nested.any():
            row = int(nested.to_numpy().nonzero()[0][0])
            kind = type(values.iloc[row]).__name__
            raise InputError(
                f"column {column!r} of {name!r} holds {kind} values (row {row + 1}), not text: "
                "give one string per cell"
            )
        frame[column] = values.map(_as_text).astype(object)
    return frame


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def check_text(name: str, value: Any) -> str:
    """``value`` if it is a non-empty string, else :class:`InputError` naming ``name``."""
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string, got {type(value).__name__} {value!r:.60}")
    if not value.strip():
        raise InputError(f"{name} is empty ({value!r}): give the text to score")
    return value


@dataclass(frozen=True)
class RowProblem:
    """A row that cannot be scored (or needs attention), 1-based like a spreadsheet."""

    row: int
    problem: str


def inspect_rows(frame: pd.DataFrame, *, long_text: int | None = None) -> list[RowProblem]:
    """Rows with empty cells, duplicates (same question, answer and variant), and answers the
    question generator will cut (1-based row numbers, as in a spreadsheet).

    ``long_text`` is the generator's limit (``max_response_chars``; the embedded one reads 2,000
    characters); without one, cells over ``LONG_TEXT_CHARS`` are listed.
    """
    limit = long_text or LONG_TEXT_CHARS
    problems: list[RowProblem] = []
    seen: dict[tuple[str, str, str], int] = {}
    variants = frame["variant"] if "variant" in frame.columns else [""] * len(frame)
    for i, (u, r, v) in enumerate(zip(frame["user_input"], frame["response"], variants)):
        row = i + 1
        u = "" if not isinstance(u, str) else u
        r = "" if not isinstance(r, str) else r
        if not u.strip():
            problems.append(RowProblem(row, "user_input is empty"))
        if not r.strip():
            problems.append(RowProblem(row, "response is empty"))
        if len(r) > limit:
            problems.append(
                RowProblem(
                    row,
                    f"response has {len(r):,} characters: the question generator reads the "
                    f"first {limit:,} only",
                )
            )
        key = (u, r, str(v))
        if key in seen and u.strip() and r.strip():
            problems.append(RowProblem(row, f"duplicate of row {seen[key]}"))
        seen.setdefault(key, row)
    return problems


def guess_mapping(columns: Sequence[Any]) -> dict[str, str | None]:
    """Which column plays each role, by name: the role itself, else an alias (any case).

    >>> guess_mapping(["Question", "answer", "notes"])
    {'user_input': 'Question', 'response': 'answer', 'variant': None, 'id': None}
    """
    names = [str(c) for c in columns]
    lower: dict[str, str] = {}
    for c in names:
        lower.setdefault(c.strip().lower(), c)
    out: dict[str, str | None] = {}
    used: set[str] = set()
    for role in ROLES:
        exact = role if role in names else None
        found = exact or next(
            (lower[a] for a in COLUMN_ALIASES[role] if a in lower and lower[a] not in used), None
        )
        out[role] = found
        if found:
            used.add(found)
    return out


def apply_mapping(
    frame: pd.DataFrame, mapping: dict[str, str | None], *, name: str = "the table"
) -> pd.DataFrame:
    """Rename the mapped columns to ``user_input``/``response``/``variant``/``id``, as text.

    Other columns are kept (they travel with the results); a column already named like a role
    but not chosen for it is renamed with a ``source_`` prefix so it cannot be mistaken. Missing
    cells become ``""``; a cell holding a list or a dict is an :class:`InputError`.
    """
    chosen = {col: role for role, col in mapping.items() if col}
    renames: dict[Any, str] = {}
    for col in frame.columns:
        if col in chosen:
            renames[col] = chosen[col]
        elif col in ROLES:
            renames[col] = f"source_{col}"
    return _coerce_text(frame.rename(columns=renames).reset_index(drop=True), name)


def _check_columns(frame: pd.DataFrame) -> None:
    if frame.shape[1] == 0:
        raise InputError("the table has no columns: it needs user_input and response columns")
    if frame.columns.duplicated().any():
        dup = str(frame.columns[frame.columns.duplicated()][0])
        raise InputError(f"column {dup!r} appears twice: give each column a distinct name")


def normalize_columns(frame: pd.DataFrame, *, name: str = "the table") -> pd.DataFrame:
    """Map the columns by name (:func:`guess_mapping`, :func:`apply_mapping`).

    Raises :class:`InputError` naming the missing column and listing the columns found.
    """
    _check_columns(frame)
    mapping = guess_mapping(list(frame.columns))
    for required in ("user_input", "response"):
        if mapping[required] is None:
            found = ", ".join(repr(str(c)) for c in list(frame.columns)[:20])
            aliases = "/".join(COLUMN_ALIASES[required])
            raise InputError(
                f"missing column {required!r} (or an alias: {aliases}); columns found: {found}"
            )
    return apply_mapping(frame, mapping, name=name)


def results_to_frame(
    results: Sequence[RelevancyResult], source: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per result: the input's extra columns, then the score and its explanation.

    ``score`` is the value of the row's ``mode``; ``ragas_value`` is its Ragas value (the same
    as ``score`` in ``"ragas"`` mode); ``parts`` is the result's ``parts`` as JSON (in ``"focus"``
    mode one ``{"text", "similarity", ...}`` per sentence; empty in ``"ragas"`` mode).
    """
    rows = []
    for r in results:
        sims = r.similarities
        rows.append(
            {
                "score": r.value,
                "mode": r.mode,
                "ragas_value": r.ragas_value,
                "noncommittal": r.noncommittal,
                "noncommittal_method": r.noncommittal_method,
                "answer_similarity": r.answer_similarity,
                "similarity_std": r.similarity_std if sims else math.nan,
                "generated_questions": json.dumps(
                    [q.question for q in r.questions], ensure_ascii=False
                ),
                "similarities": json.dumps([q.similarity for q in r.questions]),
                "parts": json.dumps(r.parts, ensure_ascii=False, default=str) if r.parts else "",
                "error": r.error or "",
                "notes": "; ".join(r.notes),
                "llm": r.llm,
                "embeddings": r.embeddings,
                "strictness": r.strictness,
                "seconds": r.timings.get("total_s", math.nan),
                "cached": r.cached,
            }
        )
    scored = pd.DataFrame(rows)
    if source is not None:
        base = source.reset_index(drop=True).copy()
        if len(base) != len(scored):
            raise ValueError(f"{len(base)} input rows but {len(scored)} results")
        for column in scored.columns:
            if column in base.columns:
                base = base.drop(columns=column)
        return pd.concat([base, scored], axis=1)
    inputs = pd.DataFrame(
        {"user_input": [r.user_input for r in results], "response": [r.response for r in results]}
    )
    return pd.concat([inputs, scored], axis=1)


def _defuse_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix text cells that a spreadsheet would run as a formula (=, +, -, @) with a quote."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(
                lambda v: "'" + v if isinstance(v, str) and v[:1] in _FORMULA_STARTS else v
            )
    return out


def write_results(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a results table; the format follows the extension (.csv, .json, .jsonl, .parquet)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise InputError(
            f"cannot write {path.name!r}: use an output name ending in " + ", ".join(OUTPUT_FORMATS)
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    if suffix == ".csv":
        _defuse_formulas(frame).to_csv(tmp, index=False)
    elif suffix == ".json":
        tmp.write_text(frame.to_json(orient="records", force_ascii=False, indent=1), "utf-8")
    elif suffix == ".jsonl":
        frame.to_json(tmp, orient="records", lines=True, force_ascii=False)
    else:
        frame.to_parquet(tmp, index=False)
    tmp.replace(path)
    return path
