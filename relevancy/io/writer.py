"""Writing results: a results table (the input's columns, then the result columns of
:data:`relevancy.core.schema.COLUMNS`) written a chunk at a time as CSV (spreadsheet formulas
defused), JSON, JSONL or Parquet."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from relevancy.core.result import RelevancyResult
from relevancy.core.schema import export_record, exported_columns
from relevancy.errors import InputError
from relevancy.io.columns import own_names

__all__ = [
    "OUTPUT_FORMATS",
    "RESULT_COLUMNS",
    "result_record",
    "results_to_frame",
    "write_results",
    "TableWriter",
    "is_formula",
    "defuse",
    "csv_bytes",
]

#: what results can be written as
OUTPUT_FORMATS = (".csv", ".json", ".jsonl", ".parquet")
#: rows turned into JSON text at a time (a bound on the text held in memory)
JSON_SLICE_ROWS = 256


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# full-width and small forms some spreadsheets read as their ASCII twins
_WIDE_STARTS = frozenset("\uff1d\uff0b\uff0d\uff20\ufe66\ufe62\ufe63\ufe6b")
# what may sit before a formula and still let it run: whitespace of any kind (newlines
# included) and invisible characters (zero-width space and joiners, byte order mark)
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"


def is_formula(text: str) -> bool:
    """Whether a spreadsheet could run ``text`` as a formula.

    True when it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, or when,
    after leading whitespace (newlines included) and invisible characters, the first character
    is one of ``= + - @`` or their full-width forms (``＝ ＋ － ＠``).
    """
    if text[:1] in _FORMULA_STARTS:
        return True
    rest = text.lstrip().lstrip(_INVISIBLE).lstrip()
    return bool(rest) and (rest[0] in "=+-@" or rest[0] in _WIDE_STARTS)


def defuse(value: Any) -> Any:
    """``value`` with a quote in front when it is text a spreadsheet could run as a formula."""
    return "'" + value if isinstance(value, str) and is_formula(value) else value


#: the columns a result adds to its input row in exports, in order (from
#: :data:`relevancy.core.schema.COLUMNS`; functions here read the schema when called)
RESULT_COLUMNS = tuple(c.name for c in exported_columns())


def result_record(r: RelevancyResult) -> dict[str, Any]:
    """One result as the export's columns (lists as JSON text); see
    :func:`relevancy.core.schema.export_record`."""
    return export_record(r)


def results_to_frame(
    results: Sequence[RelevancyResult], source: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per result: the input's columns, then ``RESULT_COLUMNS``.

    ``score`` is the value of the row's ``mode``; ``ragas_value`` is its Ragas value (the same
    as ``score`` in ``"ragas"`` mode); ``parts`` is the result's ``parts`` as JSON (in ``"focus"``
    mode one ``{"text", "similarity", ...}`` per sentence; empty in ``"ragas"`` mode). A column
    :func:`relevancy.io.apply_mapping` took as the variant keeps its own name (``model``...).
    """
    names = [c.name for c in exported_columns()]
    scored = pd.DataFrame([export_record(r) for r in results], columns=names)
    if source is not None:
        base = source.reset_index(drop=True)
        if len(base) != len(scored):
            raise ValueError(f"{len(base)} input rows but {len(scored)} results")
        base = base.drop(columns=[c for c in names if c in base.columns])
        return own_names(
            pd.concat([base, scored], axis=1), dict(source.attrs.get("column_names") or {})
        )
    inputs = pd.DataFrame(
        {"user_input": [r.user_input for r in results], "response": [r.response for r in results]}
    )
    return pd.concat([inputs, scored], axis=1)


def _defuse_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix text cells, and header cells, that a spreadsheet would run as a formula with a
    quote (see :func:`is_formula`)."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(defuse)
    out.columns = [defuse(str(c)) for c in out.columns]
    return out


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """``frame`` as UTF-8 CSV, text a spreadsheet would run as a formula defused (a download
    built in memory; :class:`TableWriter` writes a file a chunk at a time)."""
    return _defuse_formulas(frame).to_csv(index=False).encode("utf-8")


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
        elif self.suffix in (".jsonl", ".json"):
            # a slice at a time: pandas builds a chunk's whole text (and copies of it) first,
            # tens of MB for a 2,000-row chunk
            for start in range(0, len(frame), JSON_SLICE_ROWS):
                part = frame.iloc[start : start + JSON_SLICE_ROWS]
                text = part.to_json(orient="records", lines=True, force_ascii=False)
                if self.suffix == ".jsonl":
                    self._fh.write(text if text.endswith("\n") else text + "\n")
                    continue
                for line in text.splitlines():
                    self._fh.write(("," if self.rows else "") + "\n" + line)
                    self.rows += 1
            if self.suffix == ".json":
                return
        else:
            import pyarrow as pa  # lazy: only Parquet needs it
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._parquet is None:
                # a column empty in the first chunk, or whole numbers, must still take the
                # strings and NaNs of later chunks
                fields = [
                    f.with_type(pa.string())
                    if pa.types.is_null(f.type)
                    else f.with_type(pa.float64())
                    if pa.types.is_integer(f.type)
                    else f
                    for f in table.schema
                ]
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

    def close_partial(self) -> Path:
        """Close after an interruption, keeping what was written as a whole file named
        ``NAME.partial.EXT`` (``out.partial.csv``); returns that path."""
        kept = self.path.with_name(f"{self.path.stem}.partial{self.path.suffix}")
        if self._columns is None:  # nothing was written
            self.close(ok=False)
        else:
            self.path = kept
            self.close()
        return kept

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.close(ok=exc_type is None)


def write_results(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a results table; the format follows the extension (.csv, .json, .jsonl, .parquet)."""
    with TableWriter(path) as writer:
        writer.write(frame)
    return writer.path
