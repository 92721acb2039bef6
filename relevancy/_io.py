"""Reading question/answer tables and writing results.

Accepted inputs: CSV, TSV, JSON (a list of records, or Ragas' dataset layout), JSONL and Parquet.
Columns are matched by alias (``question`` -> ``user_input``, ``answer`` -> ``response``...).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from relevancy._errors import InputError
from relevancy._result import RelevancyResult

__all__ = [
    "COLUMN_ALIASES",
    "read_table",
    "normalize_columns",
    "results_to_frame",
    "write_results",
    "FORMATS",
]

COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "user_input": ("user_input", "question", "query", "input", "prompt"),
    "response": ("response", "answer", "output", "completion"),
    "variant": ("variant", "model", "system", "prompt_version"),
    "id": ("id", "row_id", "pair_id", "question_id", "qid"),
}
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
FORMATS = (".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".parquet")


def read_table(path: str | Path, *, format: str | None = None) -> pd.DataFrame:
    """Read a table of question/answer pairs and normalise its column names.

    Raises :class:`InputError` with one line that names the problem and the fix.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"file not found: {str(path)!r}")
    suffix = (format or path.suffix).lower()
    if not suffix.startswith("."):
        suffix = "." + suffix
    if suffix not in FORMATS:
        raise InputError(
            f"unsupported file type {suffix!r} for {path.name!r}: use one of {', '.join(FORMATS)}"
        )
    try:
        if suffix in (".csv", ".tsv"):
            frame = pd.read_csv(
                path,
                sep=None if suffix == ".csv" else "\t",
                engine="python",
                encoding="utf-8-sig",
                dtype=str,
                keep_default_na=False,
            )
        elif suffix == ".json":
            frame = _read_json(path)
        elif suffix in (".jsonl", ".ndjson"):
            frame = pd.read_json(path, lines=True, dtype=False)
        else:
            frame = pd.read_parquet(path)
    except InputError:
        raise
    except UnicodeDecodeError:
        raise InputError(f"{path.name!r} is not UTF-8 text: save it as UTF-8 and retry") from None
    except Exception as exc:
        raise InputError(f"cannot read {path.name!r} as {suffix[1:]}: {exc}") from None
    return normalize_columns(frame)


def _read_json(path: Path) -> pd.DataFrame:
    data = json.loads(path.read_text(encoding="utf-8-sig"))
    if isinstance(data, dict):
        # Ragas/HF-style column layout {"user_input": [...], "response": [...]} or {"data": [...]}.
        if "data" in data and isinstance(data["data"], list):
            data = data["data"]
        elif data and all(isinstance(v, list) for v in data.values()):
            return pd.DataFrame(data)
        else:
            raise InputError(
                f"{path.name!r} holds a JSON object, not a list of records: "
                'give a list like [{"user_input": ..., "response": ...}]'
            )
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InputError(
            f"{path.name!r} is not a JSON list of records: give a list like "
            '[{"user_input": ..., "response": ...}]'
        )
    return pd.DataFrame(data)


def normalize_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Rename alias columns to ``user_input``/``response``/``variant``/``id`` (case-insensitive).

    Raises :class:`InputError` naming the missing column and listing the columns found.
    """
    if frame.shape[1] == 0:
        raise InputError("the table has no columns: it needs user_input and response columns")
    original = [str(c) for c in frame.columns]
    lower = {str(c).strip().lower(): c for c in frame.columns}
    renames: dict[Any, str] = {}
    for canonical, aliases in COLUMN_ALIASES.items():
        if canonical in frame.columns:
            continue
        for alias in aliases:
            if alias in lower and lower[alias] not in renames:
                renames[lower[alias]] = canonical
                break
    frame = frame.rename(columns=renames)
    for required in ("user_input", "response"):
        if required not in frame.columns:
            found = ", ".join(repr(c) for c in original[:20])
            aliases = "/".join(COLUMN_ALIASES[required])
            raise InputError(
                f"missing column {required!r} (or an alias: {aliases}); columns found: {found}"
            )
    return frame.reset_index(drop=True)


def results_to_frame(
    results: Sequence[RelevancyResult], source: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per result: the input's extra columns, then the score and its explanation."""
    rows = []
    for r in results:
        sims = r.similarities
        rows.append(
            {
                "score": r.value,
                "noncommittal": r.noncommittal,
                "noncommittal_method": r.noncommittal_method,
                "answer_similarity": r.answer_similarity,
                "similarity_std": r.similarity_std if sims else math.nan,
                "generated_questions": json.dumps(
                    [q.question for q in r.questions], ensure_ascii=False
                ),
                "similarities": json.dumps([q.similarity for q in r.questions]),
                "error": r.error or "",
                "llm": r.llm,
                "embeddings": r.embeddings,
                "strictness": r.strictness,
                "mode": r.mode,
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
    if suffix not in (".csv", ".json", ".jsonl", ".parquet"):
        raise InputError(
            f"cannot write {path.name!r}: use an output name ending in .csv, .json, .jsonl or "
            ".parquet"
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
