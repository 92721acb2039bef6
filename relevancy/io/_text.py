"""Parsing text files: JSON, JSONL and CSV/TSV, each problem one :class:`InputError` line that
names the fix. Lines of a JSONL or CSV file that cannot be read are skipped and noted in the
:class:`~relevancy.io.importers.ImportReport` (with their line numbers) while the others are
read; a file with no readable line is an error."""

from __future__ import annotations

import csv
import io
import json
import re
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd

from relevancy.errors import InputError
from relevancy.io.columns import COLUMN_ALIASES
from relevancy.io.importers import ImportReport, detect

__all__ = [
    "too_deep",
    "parse_json",
    "read_json",
    "jsonl_records",
    "csv_sep",
    "csv_chunks",
    "json_file",
]


def too_deep(name: str) -> InputError:
    """The error of a file nested deeper than Python can read."""
    return InputError(
        f"{name!r} nests values too deeply to read (hundreds of levels of lists or objects): "
        "give one flat record per row"
    )


# a \\uD800-\\uDFFF escape: JSON may hold half of a surrogate pair, which no UTF-8 file can
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _whole(value: Any) -> Any:
    """``value`` with halves of surrogate pairs in its text replaced by U+FFFD."""
    if isinstance(value, str):  # json.loads joins pairs: a surrogate left is half of one
        if any("\ud800" <= c <= "\udfff" for c in value):
            return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
        return value
    if isinstance(value, list):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {_whole(k): _whole(v) for k, v in value.items()}
    return value


def parse_json(text: str) -> Any:
    """``json.loads`` with text any UTF-8 file can hold (a lone surrogate becomes U+FFFD).

    Raises ``ValueError`` (``json.JSONDecodeError`` for bad syntax) or ``RecursionError``.
    """
    data = json.loads(text)
    return _whole(data) if _SURROGATE_ESCAPE.search(text) else data


def read_json(text: str, name: str) -> pd.DataFrame | list[dict[str, Any]]:
    """A JSON file's records (a list, ``{"data": [...]}`` as APIs page them, or one record from
    a tool's export), or its table (Ragas/HF column layout ``{"user_input": [...], ...}``)."""
    try:
        data = parse_json(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{name!r} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "for one record per line use a .jsonl file"
        ) from None
    except RecursionError:
        raise too_deep(name) from None
    except ValueError as exc:  # a number of thousands of digits
        raise InputError(f"{name!r} is not readable JSON ({exc}): fix the value") from None
    if isinstance(data, dict):
        # Ragas/HF-style column layout {"user_input": [...], "response": [...]} or {"data": [...]}.
        data = _unwrapped(data)
        if isinstance(data, list):
            pass  # the records a tool wrapped: {"traces": [...]}, {"data": [...]}...
        elif data and all(isinstance(v, list) for v in data.values()):
            if len({len(v) for v in data.values()}) != 1:
                raise InputError(
                    f"{name!r} holds columns of different lengths: give every column one value "
                    "per row"
                )
            return pd.DataFrame(data)
        elif detect([data]) != "table":  # one trace, run or conversation
            data = [data]
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
    return data


#: where the tools put the records of a JSON file: ``{"data": [...]}`` (APIs' pages),
#: ``{"traces": [...]}`` (``mlflow traces search --output json``), ``{"data": {"examples":
#: [...]}}`` (a Phoenix dataset's examples)
_RECORD_LISTS = (("data",), ("traces",), ("data", "examples"), ("examples",))


def _unwrapped(data: dict[str, Any]) -> dict[str, Any] | list[Any]:
    for path in _RECORD_LISTS:
        inner: Any = data
        for key in path:
            inner = inner.get(key) if isinstance(inner, dict) else None
        if isinstance(inner, list) and inner and all(isinstance(r, dict) for r in inner):
            return inner
    return data


def jsonl_records(
    lines: Iterable[str], name: str, report: ImportReport | None = None
) -> Iterator[dict[str, Any]]:
    """The records of a JSONL file. A line that is not a JSON object is skipped and noted in
    ``report`` (its number and why); when no line is a record, the first one's problem is an
    :class:`InputError` naming its line."""
    report = report if report is not None else ImportReport()
    first: InputError | None = None
    read = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        why = ""
        try:
            record = parse_json(line)
        except json.JSONDecodeError as exc:
            why = f"not valid JSON ({exc.msg}, column {exc.colno})"
        except RecursionError:
            why = "nests values too deeply to read"
        except ValueError as exc:
            why = f"not readable JSON ({exc})"
        else:
            if not isinstance(record, dict):
                why = f"a JSON {type(record).__name__}, not an object"
        if why:
            report.bad_line(number, why)
            if first is None:
                first = InputError(
                    f"{name!r} line {number} is {why}: give one JSON object per line "
                    "(fix or remove that line)"
                )
            continue
        read += 1
        yield record
    if not read and first is not None:
        raise first


def json_file(path: Any, label: str) -> Any:
    """A small JSON file (a dataset's ``state.json``), or :class:`InputError`."""
    try:
        return parse_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(f"{label!r}: {path.name} is not readable JSON ({exc})") from None


def csv_sep(text: str, suffix: str) -> str:
    if suffix == ".tsv":
        return "\t"
    try:
        return csv.Sniffer().sniff(text[:65536], delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


# pandas' note of a row with more cells than the header (on_bad_lines="warn")
_BAD_CSV_LINE = re.compile(r"Skipping line (\d+): expected (\d+) fields?, saw (\d+)")


def csv_chunks(
    source: Any,
    name: str,
    sep: str,
    chunk_rows: int | None,
    report: ImportReport | None = None,
    head: str = "",
) -> Iterator[pd.DataFrame]:
    """The rows of a CSV/TSV file. A row with more cells than the header is skipped and
    noted in ``report`` with its line number; when every row is, that is an
    :class:`InputError` naming the fix (``head``, the file's first lines, finds the line:
    empty cells after the last column, as some spreadsheets write, are dropped)."""
    report = report if report is not None else ImportReport()
    rows = 0
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pd.errors.ParserWarning)
            reader = pd.read_csv(
                source,
                sep=sep,
                dtype=str,
                keep_default_na=False,
                skip_blank_lines=True,
                chunksize=chunk_rows,
                on_bad_lines="warn",
                index_col=False,
            )
            chunks = iter([reader] if chunk_rows is None else reader)
        while True:
            with warnings.catch_warnings(record=True) as more:
                warnings.simplefilter("always", pd.errors.ParserWarning)
                frame = next(chunks, None)
            for warning in [*caught, *more]:
                if str(warning.message).startswith("Length of header"):
                    _check_extra_cells(head, name, sep)  # every row longer than the header
                for line, want, saw in _BAD_CSV_LINE.findall(str(warning.message)):
                    report.bad_line(
                        int(line),
                        f"{saw} cells where the header has {want} (a cell holding "
                        f"{_sep_name(sep)} needs quotes)",
                    )
            caught = []
            if frame is None:
                break
            if rows == 0:
                _check_delimiter(frame, name)
            rows += len(frame)
            yield frame
    except pd.errors.ParserError as exc:
        raise InputError(
            f"{name!r} is not well-formed CSV ({str(exc).strip()[:160]}): close the quote "
            "opened there, or quote cells that hold quotes, delimiters or line breaks"
        ) from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{name!r} is empty: it needs a header row and at least one row") from None
    if not rows and report.bad_lines:
        line, why = report.bad_lines[0]
        raise InputError(
            f"{name!r} has no readable row: line {line} (and every other) has {why}; give "
            "every row the header's cells"
        )


def _check_extra_cells(head: str, name: str, sep: str) -> None:
    """:class:`InputError` naming the first line of ``head`` with more non-empty cells than
    the header (pandas would drop them without a word)."""
    rows = csv.reader(io.StringIO(head), delimiter=sep)
    header = next(rows, [])
    for number, cells in enumerate(rows, start=2):
        if len(cells) > len(header) and any(c.strip() for c in cells[len(header) :]):
            raise InputError(
                f"{name!r} line {number} has {len(cells)} cells where the header has "
                f"{len(header)}: a cell holding {_sep_name(sep)} needs quotes (or name every "
                "column in the header)"
            )


def _sep_name(sep: str) -> str:
    return {",": "a comma", "\t": "a tab", ";": "a semicolon", "|": "a bar"}.get(sep, repr(sep))


def _check_delimiter(frame: pd.DataFrame, name: str) -> None:
    known = {alias for aliases in COLUMN_ALIASES.values() for alias in aliases}
    if frame.shape[1] == 1 and str(frame.columns[0]).strip().lower() not in known:
        raise InputError(
            f"{name!r} was read as a single column {str(frame.columns[0])[:60]!r}: the delimiter "
            "looks wrong; use commas (or a .tsv file for tabs)"
        )
