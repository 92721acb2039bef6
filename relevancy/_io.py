"""Reading question/answer tables and writing results.

Accepted inputs: CSV, TSV, JSON (a list of records, or Ragas' dataset layout), JSONL and Parquet.
Columns are matched by alias (``question`` -> ``user_input``, ``answer`` -> ``response``...).
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import math
from collections.abc import Iterable, Iterator, Sequence
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
    "iter_table",
    "inspect_rows",
    "RowInspector",
    "RowProblem",
    "normalize_columns",
    "results_to_frame",
    "write_results",
    "FORMATS",
    "OUTPUT_FORMATS",
    "RESULT_COLUMNS",
    "result_record",
    "TableWriter",
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
    :func:`guess_mapping` and :func:`apply_mapping`). Large files: :func:`iter_table`.
    """
    return next(iter_table(path, format=format, normalize=normalize, chunk_rows=None))


def iter_table(
    path: str | Path,
    *,
    format: str | None = None,
    normalize: bool = True,
    chunk_rows: int | None = 5000,
) -> Iterator[pd.DataFrame]:
    """The table in ``path``, ``chunk_rows`` rows at a time (None: all in one chunk).

    CSV/TSV, JSONL and Parquet are read a chunk at a time, so a file of any size fits in
    memory; JSON (one array or object) is read whole. Every chunk's columns are mapped as the
    first chunk's were. Errors are the one-line :class:`InputError` of :func:`read_table_bytes`.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"file not found: {str(path)!r}")
    if path.is_dir():
        raise InputError(f"{str(path)!r} is a folder: give a CSV, JSON, JSONL or Parquet file")
    name = path.name
    suffix = _suffix(format or path.suffix, name)
    with path.open("rb") as fh:
        head = fh.read(65536)
    _check_head(head, name, suffix)
    mapping: dict[str, str | None] | None = None
    for chunk in _raw_chunks(path, name, suffix, head, chunk_rows):
        if mapping is None and normalize:
            mapping = _mapping_of(chunk, name)
        yield _finish(chunk, name, mapping)


def read_table_bytes(
    data: bytes, name: str, *, format: str | None = None, normalize: bool = True
) -> pd.DataFrame:
    """Like :func:`read_table`, for the bytes of an uploaded file called ``name``."""
    suffix = _suffix(format or Path(name).suffix, name)
    _check_head(data, name, suffix)
    if suffix == ".parquet":
        frame = _parquet(io.BytesIO(data), name)
    else:
        text = _decode(data, name)
        if suffix in (".csv", ".tsv"):
            frame = next(_csv_chunks(io.StringIO(text), name, _csv_sep(text, suffix), None))
        elif suffix == ".json":
            frame = _read_json(text, name)
        else:
            frame = pd.DataFrame(list(_jsonl_records(io.StringIO(text), name)))
    return _finish(frame, name, _mapping_of(frame, name) if normalize else None)


def _finish(frame: pd.DataFrame, name: str, mapping: dict[str, str | None] | None) -> pd.DataFrame:
    """A chunk mapped by ``mapping``, or (None) as it is, with text column names."""
    if mapping is not None:
        return apply_mapping(frame, mapping, name=name)
    _check_columns(frame)
    frame.columns = [str(c) for c in frame.columns]
    return frame.reset_index(drop=True)


def _suffix(suffix: str, name: str) -> str:
    suffix = suffix.lower()
    if suffix and not suffix.startswith("."):
        suffix = "." + suffix
    if suffix not in FORMATS:
        raise InputError(
            f"unsupported file type {suffix or '(none)'!r} for {name!r}: use one of "
            f"{', '.join(FORMATS)}"
        )
    return suffix


def _check_head(head: bytes, name: str, suffix: str) -> None:
    """What the first bytes already tell: empty, a spreadsheet, Parquet under another name."""
    if not head.strip():
        raise InputError(f"{name!r} is empty: it needs a header row and at least one row")
    if head[:4] == b"PK\x03\x04" or head[:4] == b"\xd0\xcf\x11\xe0":
        raise InputError(
            f"{name!r} is a spreadsheet (Excel) file, not {suffix[1:]}: export it as "
            "'CSV UTF-8' and upload that"
        )
    if head[:4] == b"PAR1" and suffix != ".parquet":
        raise InputError(f"{name!r} is a Parquet file: give it a .parquet extension")


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name!r} is not UTF-8 text (byte {data[exc.start]:#04x} at position {exc.start}): "
            "save it with UTF-8 encoding"
        ) from None


def _raw_chunks(
    path: Path, name: str, suffix: str, head: bytes, chunk_rows: int | None
) -> Iterator[pd.DataFrame]:
    if suffix == ".parquet":
        if chunk_rows is None:
            yield _parquet(path, name)
            return
        import pyarrow.parquet as pq  # lazy: only Parquet needs it

        try:
            batches = pq.ParquetFile(path).iter_batches(batch_size=chunk_rows)
            for batch in batches:
                yield batch.to_pandas()
        except Exception as exc:
            raise InputError(f"{name!r} is not a readable Parquet file ({exc})") from None
        return
    if suffix == ".json":
        yield _read_json(_decode(path.read_bytes(), name), name)
        return
    # the head may end inside a multi-byte character: check the rest as it is read
    _decode(head if len(head) < 65536 else head[:-4], name)
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            if suffix in (".csv", ".tsv"):
                sep = _csv_sep(head[:-4].decode("utf-8-sig", "ignore"), suffix)
                yield from _csv_chunks(fh, name, sep, chunk_rows)
                return
            records = _jsonl_records(fh, name)
            if chunk_rows is None:
                yield pd.DataFrame(list(records))
                return
            while batch := list(itertools.islice(records, chunk_rows)):
                yield pd.DataFrame(batch)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name!r} is not UTF-8 text (byte {exc.object[exc.start]:#04x} after the first "
            "64 KB): save it with UTF-8 encoding"
        ) from None


def _parquet(source: Any, name: str) -> pd.DataFrame:
    try:
        return pd.read_parquet(source)
    except Exception as exc:
        raise InputError(f"{name!r} is not a readable Parquet file ({exc})") from None


def _csv_sep(text: str, suffix: str) -> str:
    if suffix == ".tsv":
        return "\t"
    try:
        return csv.Sniffer().sniff(text[:65536], delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _csv_chunks(source: Any, name: str, sep: str, chunk_rows: int | None) -> Iterator[pd.DataFrame]:
    try:
        reader = pd.read_csv(
            source, sep=sep, dtype=str, keep_default_na=False, skip_blank_lines=True,
            chunksize=chunk_rows,
        )  # fmt: skip
        for i, frame in enumerate([reader] if chunk_rows is None else reader):
            if i == 0:
                _check_delimiter(frame, name)
            yield frame
    except pd.errors.ParserError as exc:
        raise InputError(f"{name!r} is not well-formed CSV ({str(exc).strip()[:160]})") from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{name!r} is empty: it needs a header row and at least one row") from None


def _check_delimiter(frame: pd.DataFrame, name: str) -> None:
    known = {alias for aliases in COLUMN_ALIASES.values() for alias in aliases}
    if frame.shape[1] == 1 and str(frame.columns[0]).strip().lower() not in known:
        raise InputError(
            f"{name!r} was read as a single column {str(frame.columns[0])[:60]!r}: the delimiter "
            "looks wrong; use commas (or a .tsv file for tabs)"
        )


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


def _jsonl_records(lines: Iterable[str], name: str) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(lines, start=1):
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
        yield record


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


class RowInspector:
    """The row checks of :func:`inspect_rows`, for a table read in chunks (rows numbered on).

    Duplicates are found across chunks; a row is remembered by a digest, not its text.
    """

    def __init__(self, *, long_text: int | None = None) -> None:
        self.limit = long_text or LONG_TEXT_CHARS
        self.rows = 0  #: rows seen so far
        self.scoreable = 0  #: rows with both a question and an answer
        self._seen: dict[bytes, int] = {}

    def inspect(self, frame: pd.DataFrame) -> list[RowProblem]:
        """The problems of the next chunk's rows."""
        problems: list[RowProblem] = []
        variants = frame["variant"] if "variant" in frame.columns else [""] * len(frame)
        for u, r, v in zip(frame["user_input"], frame["response"], variants):
            self.rows += 1
            row = self.rows
            u = "" if not isinstance(u, str) else u
            r = "" if not isinstance(r, str) else r
            if not u.strip():
                problems.append(RowProblem(row, "user_input is empty"))
            if not r.strip():
                problems.append(RowProblem(row, "response is empty"))
            if len(r) > self.limit:
                problems.append(
                    RowProblem(
                        row,
                        f"response has {len(r):,} characters: the question generator reads the "
                        f"first {self.limit:,} only",
                    )
                )
            if u.strip() and r.strip():
                self.scoreable += 1
                key = hashlib.blake2b(
                    json.dumps([u, r, str(v)], ensure_ascii=False).encode(), digest_size=16
                ).digest()
                if key in self._seen:
                    problems.append(RowProblem(row, f"duplicate of row {self._seen[key]}"))
                self._seen.setdefault(key, row)
        return problems


def inspect_rows(frame: pd.DataFrame, *, long_text: int | None = None) -> list[RowProblem]:
    """Rows with empty cells, duplicates (same question, answer and variant), and answers the
    question generator will cut (1-based row numbers, as in a spreadsheet).

    ``long_text`` is the generator's limit (``max_response_chars``; the embedded one reads 2,000
    characters); without one, cells over ``LONG_TEXT_CHARS`` are listed.
    """
    return RowInspector(long_text=long_text).inspect(frame)


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


def _mapping_of(frame: pd.DataFrame, name: str) -> dict[str, str | None]:
    """The roles of a table's columns by name; :class:`InputError` when a required one lacks."""
    _check_columns(frame)
    mapping = guess_mapping(list(frame.columns))
    for required in ("user_input", "response"):
        if mapping[required] is None:
            found = ", ".join(repr(str(c)) for c in list(frame.columns)[:20])
            aliases = "/".join(COLUMN_ALIASES[required])
            raise InputError(
                f"missing column {required!r} (or an alias: {aliases}); columns found: {found}"
            )
    return mapping


def normalize_columns(frame: pd.DataFrame, *, name: str = "the table") -> pd.DataFrame:
    """Map the columns by name (:func:`guess_mapping`, :func:`apply_mapping`).

    Raises :class:`InputError` naming the missing column and listing the columns found.
    """
    return apply_mapping(frame, _mapping_of(frame, name), name=name)


#: the columns a result adds to its input row in exports, in order
RESULT_COLUMNS = (
    "score",
    "reason",
    "flags",
    "mode",
    "ragas_value",
    "noncommittal",
    "noncommittal_method",
    "answer_similarity",
    "similarity_std",
    "generated_questions",
    "similarities",
    "parts",
    "error",
    "notes",
    "llm",
    "embeddings",
    "strictness",
    "seconds",
    "cached",
    "prompt_tokens",
    "completion_tokens",
)


def result_record(r: RelevancyResult) -> dict[str, Any]:
    """One result as the export's columns (``RESULT_COLUMNS``; lists as JSON text)."""
    sims = r.similarities
    usage = r.usage or {}
    return {
        "score": r.value,
        "reason": r.reason,
        "flags": ", ".join(r.flags),
        "mode": r.mode,
        "ragas_value": r.ragas_value,
        "noncommittal": r.noncommittal,
        "noncommittal_method": r.noncommittal_method,
        "answer_similarity": r.answer_similarity,
        "similarity_std": r.similarity_std if sims else math.nan,
        "generated_questions": json.dumps([q.question for q in r.questions], ensure_ascii=False),
        "similarities": json.dumps([q.similarity for q in r.questions]),
        "parts": json.dumps(r.parts, ensure_ascii=False, default=str) if r.parts else "",
        "error": r.error or "",
        "notes": "; ".join(r.notes),
        "llm": r.llm,
        "embeddings": r.embeddings,
        "strictness": r.strictness,
        "seconds": r.timings.get("total_s", math.nan),
        "cached": r.cached,
        "prompt_tokens": usage.get("prompt_tokens", math.nan),
        "completion_tokens": usage.get("completion_tokens", math.nan),
    }


def results_to_frame(
    results: Sequence[RelevancyResult], source: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per result: the input's columns, then ``RESULT_COLUMNS``.

    ``score`` is the value of the row's ``mode``; ``ragas_value`` is its Ragas value (the same
    as ``score`` in ``"ragas"`` mode); ``parts`` is the result's ``parts`` as JSON (in ``"focus"``
    mode one ``{"text", "similarity", ...}`` per sentence; empty in ``"ragas"`` mode).
    """
    scored = pd.DataFrame([result_record(r) for r in results], columns=list(RESULT_COLUMNS))
    if source is not None:
        base = source.reset_index(drop=True)
        if len(base) != len(scored):
            raise ValueError(f"{len(base)} input rows but {len(scored)} results")
        base = base.drop(columns=[c for c in RESULT_COLUMNS if c in base.columns])
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


class TableWriter:
    """Write a results table a chunk at a time; the format follows the extension.

    ``.csv`` (spreadsheet formulas defused), ``.jsonl``, ``.json`` (one array) or ``.parquet``
    (one row group per chunk). The file appears under its name only when the writer closes
    without error (it is written to ``NAME.part`` first)::

        with TableWriter("out.csv") as out:
            for chunk in chunks:
                out.write(chunk)
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.suffix = self.path.suffix.lower()
        if self.suffix not in OUTPUT_FORMATS:
            raise InputError(
                f"cannot write {self.path.name!r}: use an output name ending in "
                + ", ".join(OUTPUT_FORMATS)
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(self.path.name + ".part")
        self._fh: Any = None
        self._parquet: Any = None
        self._columns: list[str] | None = None
        self.rows = 0

    def __enter__(self) -> TableWriter:
        return self

    def write(self, frame: pd.DataFrame) -> None:
        if self._columns is None:
            self._columns = [str(c) for c in frame.columns]
            if self.suffix != ".parquet":
                self._fh = self._tmp.open("w", encoding="utf-8", newline="")
                if self.suffix == ".json":
                    self._fh.write("[")
        frame = frame.reindex(columns=self._columns)
        if self.suffix == ".csv":
            # CRLF rows (RFC 4180): the csv writer then quotes every cell holding a \r or \n.
            # With \n alone a bare \r went out unquoted and readers split the row there,
            # starting a new row with what followed (for "\r=1+2": a live formula).
            _defuse_formulas(frame).to_csv(
                self._fh, index=False, header=self.rows == 0, lineterminator="\r\n"
            )
        elif self.suffix == ".jsonl":
            if len(frame):
                frame.to_json(self._fh, orient="records", lines=True, force_ascii=False)
        elif self.suffix == ".json":
            for line in frame.to_json(orient="records", lines=True, force_ascii=False).splitlines():
                self._fh.write(("," if self.rows else "") + "\n" + line)
                self.rows += 1
            return
        else:
            import pyarrow as pa  # lazy: only Parquet needs it
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._parquet is None:
                # a column empty in the first chunk, or whole numbers, must still take the
                # strings and NaNs of later chunks
                fields = [
                    f.with_type(pa.string()) if pa.types.is_null(f.type)
                    else f.with_type(pa.float64()) if pa.types.is_integer(f.type) else f
                    for f in table.schema
                ]  # fmt: skip
                self._parquet = pq.ParquetWriter(self._tmp, pa.schema(fields))
            self._parquet.write_table(table.cast(self._parquet.schema))
        self.rows += len(frame)

    def close(self, *, ok: bool = True) -> None:
        if ok and self._columns is None:  # nothing was written: an empty table
            self.write(pd.DataFrame())
        if self._fh is not None:
            if self.suffix == ".json":
                self._fh.write("\n]\n" if self.rows else "]\n")
            self._fh.close()
        if self._parquet is not None:
            self._parquet.close()
        if ok:
            self._tmp.replace(self.path)
        else:
            self._tmp.unlink(missing_ok=True)

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.close(ok=exc_type is None)


def write_results(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a results table; the format follows the extension (.csv, .json, .jsonl, .parquet)."""
    with TableWriter(path) as writer:
        writer.write(frame)
    return writer.path
