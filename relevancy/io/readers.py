"""Reading question/answer tables and writing results.

Accepted inputs: CSV, TSV, JSON (a list of records, or Ragas' dataset layout), JSONL, Parquet,
Arrow and Hugging Face ``save_to_disk`` folders; exports of Langfuse, LangSmith, Phoenix and
OpenAI chat logs are detected and converted by :mod:`relevancy.io.importers`. Columns are matched
by alias (``question`` -> ``user_input``, ``answer`` -> ``response``...).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from relevancy.errors import InputError
from relevancy.io._text import csv_chunks, csv_sep, json_file, jsonl_records, read_json, too_deep
from relevancy.io.columns import _check_columns, _mapping_of, apply_mapping
from relevancy.io.importers import Importer, ImportReport

__all__ = [
    "read_table",
    "read_table_bytes",
    "iter_table",
    "FORMATS",
]

FORMATS = (".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".parquet", ".arrow")


def _one_line(exc: BaseException) -> str:
    """A library's message on one line (pyarrow's hold line breaks of their own)."""
    return " ".join(str(exc).split())


def read_table(
    path: str | Path,
    *,
    format: str | None = None,
    normalize: bool = True,
    source_format: str = "auto",
    report: ImportReport | None = None,
    label_column: str | None = None,
) -> pd.DataFrame:
    """Read a table of question/answer pairs and normalise its column names.

    Raises :class:`InputError` with one line that names the problem and the fix. With
    ``normalize=False`` the table keeps its own column names (to be mapped by hand, see
    :func:`guess_mapping` and :func:`apply_mapping`). ``source_format`` is ``"auto"`` (detect
    an export of Langfuse, LangSmith, Phoenix, OpenAI chat messages or a Hugging Face dataset
    from the content) or one of :data:`relevancy.io.importers.SOURCE_FORMATS`; ``report``, when
    given, is filled with what was found. ``label_column`` names the human labels' column
    (``None``: found by name, ``""``: none). Large files: :func:`iter_table`.
    """
    chunks = iter_table(
        path,
        format=format,
        normalize=normalize,
        chunk_rows=None,
        source_format=source_format,
        report=report,
        label_column=label_column,
    )
    return list(chunks)[0]


def iter_table(
    path: str | Path,
    *,
    format: str | None = None,
    normalize: bool = True,
    chunk_rows: int | None = 5000,
    source_format: str = "auto",
    report: ImportReport | None = None,
    label_column: str | None = None,
) -> Iterator[pd.DataFrame]:
    """The table in ``path``, ``chunk_rows`` rows at a time (None: all in one chunk).

    CSV/TSV, JSONL, Parquet and Arrow are read a chunk at a time, so a file of any size fits in
    memory; JSON (one array or object) is read whole. A folder is a Hugging Face dataset saved
    with ``save_to_disk``. The format is detected on the first chunk (see :func:`read_table`)
    and every chunk is converted and mapped as the first one was. Errors are the one-line
    :class:`InputError` of :func:`read_table_bytes`. ``label_column`` names the column of human
    labels (``None``: found by name, ``""``: none).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"file not found: {str(path)!r}")
    name = path.name
    report = report if report is not None else ImportReport()
    if path.is_dir():
        chunks, source = _hf_folder(path, chunk_rows)
    else:
        suffix = _suffix(format or path.suffix, name)
        _check_hf(source_format, name, suffix)
        with path.open("rb") as fh:
            head = fh.read(65536)
        _check_head(head, name, suffix)
        chunks, source = _open_file(path, name, suffix, head, chunk_rows, report)
    if source_format == "hf":
        source = source or _HF
    try:
        yield from _convert(chunks, name, source_format, source, normalize, report, label_column)
    except RecursionError:  # deep JSON read, or an importer walking it
        raise too_deep(name) from None


def read_table_bytes(
    data: bytes,
    name: str,
    *,
    format: str | None = None,
    normalize: bool = True,
    source_format: str = "auto",
    report: ImportReport | None = None,
) -> pd.DataFrame:
    """Like :func:`read_table`, for the bytes of an uploaded file called ``name``."""
    try:
        return _read_bytes(data, name, format, normalize, source_format, report)
    except RecursionError:  # deep JSON read, or an importer walking it
        raise too_deep(name) from None


def _read_bytes(
    data: bytes,
    name: str,
    format: str | None,
    normalize: bool,
    source_format: str,
    report: ImportReport | None,
) -> pd.DataFrame:
    report = report if report is not None else ImportReport()
    suffix = _suffix(format or Path(name).suffix, name)
    _check_hf(source_format, name, suffix)
    _check_head(data, name, suffix)
    raw: pd.DataFrame | list[dict[str, Any]]
    source = ""
    if suffix == ".parquet":
        raw, source = _parquet(io.BytesIO(data), name)
    elif suffix == ".arrow":
        raw = next(_arrow_frames([_arrow_batches(data, name)], name, None))
        source = _HF if _arrow_is_hf(data, name) else ""
    else:
        text = _decode(data, name)
        if suffix in (".csv", ".tsv"):
            sep = csv_sep(text, suffix)
            raw = next(csv_chunks(io.StringIO(text), name, sep, None, report, text[:65536]))
        elif suffix == ".json":
            raw = read_json(text, name)
        else:
            raw = list(jsonl_records(io.StringIO(text), name, report))
    if source_format == "hf":
        source = source or _HF
    return list(_convert([raw], name, source_format, source, normalize, report))[0]


def _convert(
    chunks: Iterable[pd.DataFrame | list[dict[str, Any]]],
    name: str,
    source_format: str,
    source: str,
    normalize: bool,
    report: ImportReport | None,
    label_column: str | None = None,
) -> Iterator[pd.DataFrame]:
    """Parsed chunks -> detected once, converted (:mod:`relevancy.io.importers`), mapped."""
    importer = Importer(name, source_format, source=source, report=report)
    mapping: dict[str, str | None] | None = None
    for raw in chunks:
        chunk = importer(raw)
        if not len(chunk) and importer.report.format != "table":
            continue  # every record skipped: the next chunk sets the columns
        if mapping is None and normalize:
            mapping = _mapping_of(chunk, name, label_column)
        finished = _finish(chunk, name, mapping)
        if mapping and mapping.get("label"):  # the label column's own name, for messages
            finished.attrs["label_column"] = str(mapping["label"])
        yield finished
    importer.finish()


def _check_hf(source_format: str, name: str, suffix: str) -> None:
    if source_format == "hf" and suffix not in (".arrow", ".parquet"):
        raise InputError(
            f"{name!r} is not a Hugging Face dataset: the hf format reads a save_to_disk folder "
            "or its .arrow/.parquet files (set the format to auto for other files)"
        )


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
    if suffix in (".parquet", ".arrow") and _is_text(head):
        kind, fix = _text_kind(head)
        raise InputError(
            f"{name!r} is {kind}, not {suffix[1:].title()}: rename it "
            f"{Path(name).stem + fix!r} (the extension says how a file is read)"
        )
    if head[:4] == b"PAR1" and suffix != ".parquet":
        raise InputError(f"{name!r} is a Parquet file: give it a .parquet extension")
    if (head[:6] == b"ARROW1" or head[:4] == b"\xff\xff\xff\xff") and suffix != ".arrow":
        raise InputError(f"{name!r} is an Arrow file: give it a .arrow extension")


def _is_text(head: bytes) -> bool:
    """Whether a file's first bytes are UTF-8 text (no NUL byte)."""
    if b"\0" in head or head[:4] in (b"PAR1", b"ARRO") or head[:4] == b"\xff\xff\xff\xff":
        return False
    try:
        head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 4  # cut inside a character at the end of the head
    return True


def _text_kind(head: bytes) -> tuple[str, str]:
    """What a text file looks like, and the extension to give it."""
    text = head.decode("utf-8-sig", "ignore").lstrip()
    first = text.split("\n", 1)[0].strip()
    if first.startswith("{") and first.endswith("}"):
        return "JSON Lines text", ".jsonl"
    if text[:1] in "[{":
        return "JSON text", ".json"
    return ("TSV text", ".tsv") if "\t" in first and "," not in first else ("CSV text", ".csv")


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name!r} is not UTF-8 text (byte {data[exc.start]:#04x} at position {exc.start}): "
            "save it with UTF-8 encoding"
        ) from None


_HF = "Hugging Face dataset"


def _open_file(
    path: Path,
    name: str,
    suffix: str,
    head: bytes,
    chunk_rows: int | None,
    report: ImportReport | None = None,
) -> tuple[Iterator[pd.DataFrame | list[dict[str, Any]]], str]:
    """The file's chunks (tables, or lists of records for JSON) and the container's name."""
    if suffix == ".parquet":
        import pyarrow.parquet as pq  # lazy: only Parquet needs it

        try:
            meta = pq.ParquetFile(path).schema_arrow.metadata or {}
        except Exception as exc:
            raise _not_parquet(name, exc) from None
        return _parquet_chunks(path, name, chunk_rows), _HF if b"huggingface" in meta else ""
    if suffix == ".arrow":
        source = _HF if _arrow_is_hf(path, name) else ""
        return _arrow_frames([_arrow_batches(path, name)], name, chunk_rows), source
    return _text_chunks(path, name, suffix, head, chunk_rows, report), ""


def _not_parquet(name: str, exc: Exception) -> InputError:
    return InputError(f"{name!r} is not a readable Parquet file ({_one_line(exc)})")


def _parquet_chunks(path: Path, name: str, chunk_rows: int | None) -> Iterator[pd.DataFrame]:
    if chunk_rows is None:
        yield _parquet(path, name)[0]
        return
    import pyarrow.parquet as pq  # lazy: only Parquet needs it

    try:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_rows):
            yield _with_index(batch.to_pandas())
    except Exception as exc:
        raise _not_parquet(name, exc) from None


def _text_chunks(
    path: Path,
    name: str,
    suffix: str,
    head: bytes,
    chunk_rows: int | None,
    report: ImportReport | None = None,
) -> Iterator[pd.DataFrame | list[dict[str, Any]]]:
    if suffix == ".json":
        yield read_json(_decode(path.read_bytes(), name), name)
        return
    # the head may end inside a multi-byte character: check the rest as it is read
    _decode(head if len(head) < 65536 else head[:-4], name)
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            if suffix in (".csv", ".tsv"):
                text = head[:-4].decode("utf-8-sig", "ignore")
                sep = csv_sep(text, suffix)
                yield from csv_chunks(fh, name, sep, chunk_rows, report, text)
                return
            records = jsonl_records(fh, name, report)
            if chunk_rows is None:
                yield list(records)
                return
            while batch := list(itertools.islice(records, chunk_rows)):
                yield batch
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name!r} is not UTF-8 text (byte {exc.object[exc.start]:#04x} after the first "
            "64 KB): save it with UTF-8 encoding"
        ) from None


def _with_index(frame: pd.DataFrame) -> pd.DataFrame:
    """A named index (``df.to_parquet`` of an indexed table) as a column, so that it is not
    lost; one that is a column already (Phoenix's span frame has ``context.span_id`` as both)
    is dropped."""
    names = list(frame.index.names)
    if all(n is None for n in names):
        return frame
    if all(n is None or str(n) in frame.columns for n in names):
        return frame.reset_index(drop=True)
    twice = [n for n in names if n is not None and str(n) in frame.columns]
    if twice:
        frame = frame.reset_index(level=twice, drop=True)
    return frame.reset_index()


def _parquet(source: Any, name: str) -> tuple[pd.DataFrame, str]:
    """A whole Parquet file and its container's name (a Hugging Face dataset's files say so)."""
    import pyarrow.parquet as pq  # lazy: only Parquet needs it

    try:
        table = pq.read_table(source)
        frame = _with_index(table.to_pandas())
    except Exception as exc:
        raise _not_parquet(name, exc) from None
    return frame, _HF if b"huggingface" in (table.schema.metadata or {}) else ""


def _arrow_source(source: Path | bytes) -> Any:
    import pyarrow as pa  # lazy: only Arrow needs it

    return pa.memory_map(str(source)) if isinstance(source, Path) else pa.BufferReader(source)


def _arrow_reader(source: Path | bytes, name: str) -> Any:
    """An Arrow IPC reader: the stream format (what ``datasets`` writes) or the file format."""
    import pyarrow as pa  # lazy: only Arrow needs it

    try:
        return pa.ipc.open_stream(_arrow_source(source))
    except (pa.ArrowInvalid, OSError):
        pass
    try:
        return pa.ipc.open_file(_arrow_source(source))
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{name!r} is not a readable Arrow file ({exc})") from None


def _arrow_is_hf(source: Path | bytes, name: str) -> bool:
    return b"huggingface" in (_arrow_reader(source, name).schema.metadata or {})


def _arrow_batches(source: Path | bytes, name: str) -> Iterator[Any]:
    reader = _arrow_reader(source, name)
    try:
        if hasattr(reader, "num_record_batches"):  # the file format
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)
        else:
            yield from reader
    except Exception as exc:
        raise InputError(f"{name!r} is not a readable Arrow file ({exc})") from None


def _arrow_frames(
    parts: Iterable[Iterable[Any]], name: str, chunk_rows: int | None, split: str | None = None
) -> Iterator[pd.DataFrame]:
    """Record batches (of one or more files) as tables of ``chunk_rows`` rows (None: one)."""
    import pyarrow as pa  # lazy: only Arrow needs it

    table, yielded = None, False
    for batches in parts:
        for batch in batches:
            piece = pa.Table.from_batches([batch])
            table = piece if table is None else pa.concat_tables([table, piece])
            while chunk_rows and table.num_rows >= chunk_rows:
                yield _arrow_frame(table.slice(0, chunk_rows), split)
                table, yielded = table.slice(chunk_rows), True
    if table is not None and (table.num_rows or not yielded):
        yield _arrow_frame(table, split)
    elif table is None:
        raise InputError(f"{name!r} holds no rows: add question/answer rows")


def _arrow_frame(table: Any, split: str | None) -> pd.DataFrame:
    frame = _with_index(table.to_pandas())
    if split is not None:
        frame["split"] = split
    return frame


def _hf_folder(path: Path, chunk_rows: int | None) -> tuple[Iterator[pd.DataFrame], str]:
    """A Hugging Face ``save_to_disk`` folder: a dataset (``state.json`` naming its Arrow
    files) or a dataset dict (``dataset_dict.json`` naming its splits, one folder each)."""
    name = path.name
    if (path / "dataset_dict.json").is_file():
        info = json_file(path / "dataset_dict.json", name)
        splits = info.get("splits") if isinstance(info, dict) else None
        if not splits or not all(isinstance(s, str) for s in splits):
            raise InputError(
                f"{name + '/dataset_dict.json'!r} lists no splits: save the dataset again "
                "with save_to_disk"
            )
        files = {split: _hf_files(path / split, f"{name}/{split}") for split in splits}
        if len(splits) == 1:
            return _hf_chunks(files, chunk_rows, None), f"{_HF} (split {splits[0]})"
        label = f"{_HF} (splits {', '.join(splits)}, in the column 'split')"
        return _hf_chunks(files, chunk_rows, "split"), label
    if (path / "state.json").is_file():
        state = json_file(path / "state.json", name)
        split = state.get("_split") if isinstance(state, dict) else None
        label = f"{_HF} (split {split})" if isinstance(split, str) and split else _HF
        return _hf_chunks({"": _hf_files(path, name)}, chunk_rows, None), label
    return _files_folder(path, chunk_rows)


def _files_folder(path: Path, chunk_rows: int | None) -> tuple[Iterator[Any], str]:
    """A folder of files of one type (a Batch API's input and output files, an export in
    parts): read one after the other, in name order, as one table."""
    files = sorted(
        p
        for p in path.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in FORMATS
    )
    kinds = {".jsonl" if p.suffix.lower() == ".ndjson" else p.suffix.lower() for p in files}
    if not files or len(kinds) > 1:
        found = f"files of {len(kinds)} types ({', '.join(sorted(kinds))})" if files else "none"
        raise InputError(
            f"{str(path)!r} is a folder but neither a Hugging Face dataset saved with "
            f"save_to_disk (no dataset_dict.json or state.json) nor a folder of files of one "
            f"type ({found}): give a file, or a folder of files of one type"
        )

    def chunks() -> Iterator[Any]:
        for file in files:
            suffix = _suffix(file.suffix, file.name)
            with file.open("rb") as fh:
                head = fh.read(65536)
            if not head.strip():
                continue  # an empty part (a batch's error file when nothing failed)
            _check_head(head, file.name, suffix)
            yield from _open_file(file, file.name, suffix, head, chunk_rows)[0]

    return chunks(), f"{len(files)} files"


def _hf_chunks(
    files: dict[str, list[Path]], chunk_rows: int | None, column: str | None
) -> Iterator[pd.DataFrame]:
    if chunk_rows is None:  # one table, all splits together
        frames = [
            frame
            for split, paths in files.items()
            for frame in _arrow_frames(
                [_arrow_batches(p, p.name) for p in paths], split, None, split if column else None
            )
        ]
        yield pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        return
    for split, paths in files.items():
        batches = [_arrow_batches(p, p.name) for p in paths]
        yield from _arrow_frames(batches, split, chunk_rows, split if column else None)


def _hf_files(folder: Path, label: str) -> list[Path]:
    """The Arrow files a dataset folder's ``state.json`` lists, in order."""
    state_file = folder / "state.json"
    if not state_file.is_file():
        raise InputError(
            f"{label!r} has no state.json: give the whole folder written by save_to_disk"
        )
    state = json_file(state_file, label)
    entries = state.get("_data_files") if isinstance(state, dict) else None
    names = [e.get("filename") for e in entries or [] if isinstance(e, dict)]
    if not names or not all(isinstance(n, str) for n in names):
        raise InputError(f"{label + '/state.json'!r} lists no data files: save the dataset again")
    paths = [folder / n for n in names]
    for p in paths:
        if not p.is_file():
            raise InputError(
                f"{label!r} is missing {p.name!r} (listed in its state.json): copy the whole "
                "folder written by save_to_disk"
            )
    return paths
