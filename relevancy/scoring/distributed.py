"""Scoring past one machine, on Ray Data.

A ``ray.data.Dataset`` of question/answer rows goes in; the same rows come out with the
export's result columns (``relevancy.io.RESULT_COLUMNS``, as ``relevancy score`` writes them)::

    import ray
    from relevancy.scoring.distributed import score_dataset

    ds = ray.data.read_parquet("s3://bucket/pairs/")
    scored = score_dataset(ds, llm="openai:gpt-4o-mini",
                           embeddings="openai:text-embedding-3-small", workers=8)
    scored.write_parquet("s3://bucket/scored/")

What runs where: Ray Data reads the input in blocks on the cluster's nodes and hands batches of
rows (pandas) to a pool of ``workers`` actors, :class:`ScoreBatches`. Each actor builds the
metric once (any backend; the embedded models load once per actor) and scores its batches with
``AnswerRelevancy.score_many`` (``concurrency`` rows at once). Each actor uses the cache of the
node it runs on (``RELEVANCY_CACHE_DIR`` there, else that node's user cache folder), so a
re-run after a crash recomputes only the rows no node's cache holds. A row that fails carries
its error, as everywhere else; a batch that cannot be scored at all (a block without the
question column, say) gives each of its rows the error instead of stopping the job; a worker
that dies is restarted by Ray and its batch retried.

:func:`score_path` is ``relevancy score --engine ray``: it reads a local (or mounted) CSV/TSV,
JSONL or Parquet file, or a folder of them, with Ray Data, and writes the results on the driver
as they arrive (one file for a file, a folder of Parquet parts for a folder), keeping what the
summary needs. Object stores (``s3://``...): read them with Ray Data and use
:func:`score_dataset`.

Ray is an optional extra (``pip install "relevancy[ray]"``); it is imported (lazily) only by
the functions that need it. :func:`score_batch` needs no Ray: it is the pandas-batch function.
"""

from __future__ import annotations

import csv
import logging
import math
import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from relevancy.backends import parse_spec
from relevancy.backends.cache import Cache
from relevancy.core.redact import redact
from relevancy.core.result import RelevancyResult
from relevancy.core.schema import frame_dtypes
from relevancy.errors import ConfigError, InputError, RelevancyError
from relevancy.io import (
    FORMATS,
    OUTPUT_FORMATS,
    TableWriter,
    normalize_columns,
    results_to_frame,
)
from relevancy.scoring import pipeline
from relevancy.scoring.collectors import Languages, Tally, Usage
from relevancy.scoring.config import build_metric
from relevancy.scoring.files import FileRun, summary
from relevancy.scoring.metric import AnswerRelevancy
from relevancy.scoring.pipeline import ScoredChunk, collect

__all__ = [
    "BATCH_ROWS",
    "READ_FORMATS",
    "ScoreBatches",
    "score_batch",
    "score_dataset",
    "score_path",
    "connect",
    "read_dataset",
    "default_workers",
    "fit_workers",
    "READ_CPUS",
    "Interrupted",
]

#: CPUs the input's reads need beside the workers (Ray Data's read tasks ask for one each)
READ_CPUS = 1.0
#: rows per batch handed to a worker (small enough to spread a few thousand rows over workers)
BATCH_ROWS = 100
#: what :func:`score_path` reads (JSON arrays are not split by Ray: use JSONL)
READ_FORMATS = (".csv", ".tsv", ".jsonl", ".ndjson", ".parquet")
#: environment a worker takes from the driver when it has none of its own (keys, endpoints)
FORWARDED_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "OPENAI_API_VERSION",
)

# ------------------------------------------------------------------------------ one batch


def score_batch(metric: AnswerRelevancy, batch: pd.DataFrame) -> pd.DataFrame:
    """One pandas batch scored: its rows (columns mapped by name, as ``relevancy score`` maps
    them) followed by ``RESULT_COLUMNS``, one output row per input row,
    in order.

    Rows that fail carry their error. A batch that cannot be scored at all (no question or
    answer column, a cell holding a list...) comes back with that error on every row.
    """
    try:
        rows = normalize_columns(batch)
        frame = pipeline.score_chunk(metric, rows).frame
    except Exception as exc:  # the whole batch: keep its rows, say why on each
        error = redact(
            str(exc) if isinstance(exc, RelevancyError) else f"{type(exc).__name__}: {exc}"
        )
        rows = batch.reset_index(drop=True)
        frame = results_to_frame([_failed_row(metric, error) for _ in range(len(rows))], rows)
    return _typed(frame)


def _failed_row(metric: AnswerRelevancy, error: str) -> RelevancyResult:
    return RelevancyResult(
        user_input="",
        response="",
        value=math.nan,
        error=error,
        reason="error",
        flags=["error"],
        llm=metric.llm.name,
        embeddings=metric.embeddings.name,
        strictness=metric.strictness,
        mode=metric.mode,
    )


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Result columns with one type in every batch (Parquet parts must agree), as
    :func:`relevancy.core.schema.frame_dtypes` says."""
    for column, dtype in frame_dtypes().items():
        if dtype == "object":
            frame[column] = frame[column].map(lambda v: "" if v is None else str(v)).astype(object)
        elif dtype == "boolean":
            frame[column] = frame[column].astype("boolean")
        else:
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(dtype)
    return frame


class ScoreBatches:
    """The ``map_batches`` class: builds the metric once per actor, then scores batches.

    ``settings`` are :func:`relevancy.scoring.config.build_metric`'s keyword arguments (``cache`` a
    bool or a folder path: the folder must exist on every node); or ``factory``, a picklable
    function returning an ``AnswerRelevancy``. ``env`` is set in the actor's environment where
    the actor's node has no value of its own (the driver's API key, say).
    """

    def __init__(
        self,
        settings: Mapping[str, Any] | None = None,
        factory: Callable[[], AnswerRelevancy] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        for key, value in (env or {}).items():
            os.environ.setdefault(key, value)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.metric = factory() if factory is not None else build_metric(**dict(settings or {}))

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        return score_batch(self.metric, batch)


# ------------------------------------------------------------------------------ a dataset


def score_dataset(
    ds: Any,
    *,
    workers: int | None = None,
    batch_size: int = BATCH_ROWS,
    cpus_per_worker: float | None = None,
    gpus_per_worker: float | None = None,
    factory: Callable[[], AnswerRelevancy] | None = None,
    on_note: Callable[[str], None] | None = None,
    **settings: Any,
) -> Any:
    """``ds`` with every row scored (lazy, like any Ray Data transformation).

    ``workers`` is checked against the cluster's CPUs (:func:`fit_workers`): more than fit
    beside the reads are cut to the most that fit, with a note to ``on_note`` (default: a
    ``RuntimeWarning``); none fitting is an :class:`InputError`.

    ``settings`` are :func:`relevancy.scoring.config.build_metric`'s (``llm``, ``embeddings``,
    ``base_url``, ``strictness``, ``concurrency`` = rows at once per worker...), or give
    ``factory``. ``workers``: actors scoring at once (default: :func:`default_workers`).
    ``cpus_per_worker``: 1 when a backend is embedded (it computes), else 0.25 (an API backend
    mostly waits). Blocks are cut to ``batch_size`` rows so that one file spreads over the
    workers."""
    import ray  # lazy: the optional extra

    if factory is None:
        _check_settings(settings)
    if cpus_per_worker is None:
        cpus_per_worker = 1.0 if factory is not None or _embedded(settings) else 0.25
    cpus = float(ray.cluster_resources().get("CPU", 1.0))
    if workers is None:
        workers = default_workers(cpus, cpus_per_worker)
    if workers < 1 or batch_size < 1:
        raise InputError(f"workers and batch_size must be at least 1 ({workers}, {batch_size})")
    workers, note = fit_workers(workers, cpus, cpus_per_worker)
    if note is not None:
        if on_note is None:
            warnings.warn(note, RuntimeWarning, stacklevel=2)
        else:
            on_note(note)
    env = {k: os.environ[k] for k in FORWARDED_ENV if os.environ.get(k)}
    remote: dict[str, Any] = {"num_cpus": cpus_per_worker}
    if gpus_per_worker:
        remote["num_gpus"] = gpus_per_worker
    return ds.repartition(target_num_rows_per_block=batch_size).map_batches(
        ScoreBatches,
        fn_constructor_kwargs={"settings": settings, "factory": factory, "env": env},
        batch_format="pandas",
        batch_size=batch_size,
        # one batch at a time per worker: queued on the first worker up, batches would wait
        # there while the workers that start later stay idle
        compute=ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1),
        **remote,
    )


def default_workers(cpus: float, cpus_per_worker: float) -> int:
    """Workers when none are asked for: one per CPU of the cluster, at most what fits in all
    but one CPU (the reads need one: with every CPU held by a worker they would wait forever),
    at least one, at most 64."""
    fits = int((cpus - 1) / cpus_per_worker) if cpus > 1 else 0
    return max(1, min(64, int(cpus), fits))


def fit_workers(workers: int, cpus: float, cpus_per_worker: float) -> tuple[int, str | None]:
    """``workers`` cut to what fits beside the reads, and a note when it was cut.

    Each worker holds ``cpus_per_worker`` CPUs for the whole run and the reads need
    :data:`READ_CPUS` more: with every CPU held by a worker the reads wait forever and the run
    scores nothing. Raises :class:`InputError` (one line) when not even one worker fits.
    """
    most = int((cpus - READ_CPUS) / cpus_per_worker + 1e-9) if cpus > READ_CPUS else 0
    if most < 1:
        raise InputError(
            f"the Ray cluster has {cpus:g} CPU{'s' if cpus != 1 else ''}: a worker needs "
            f"{cpus_per_worker:g} and reading the input {READ_CPUS:g} more, so no worker fits; "
            f"use a cluster with {READ_CPUS + cpus_per_worker:g} CPUs or more, or --engine local"
        )
    if workers <= most:
        return workers, None
    return most, (
        f"--workers {workers} is more than fits: the cluster has {cpus:g} CPUs, each worker "
        f"takes {cpus_per_worker:g} and reading the input {READ_CPUS:g}, so {most} worker"
        f"{'s' if most != 1 else ''} run (the most that fits; with more, the reads would wait "
        "forever)"
    )


def _check_settings(settings: Mapping[str, Any]) -> None:
    """Bad settings fail here, on the driver, with one line, not in every actor."""
    if isinstance(settings.get("cache"), Cache):
        raise InputError("give cache as True, False or a folder path (each node opens its own)")
    build_metric(**{**settings, "cache": False})


def _embedded(settings: Mapping[str, Any]) -> bool:
    return any(
        parse_spec(settings.get(role, "local"))[0] == "local" for role in ("llm", "embeddings")
    )


# ------------------------------------------------------------------------------ the CLI's run


def connect(address: str | None = None, *, quiet: bool = False) -> bool:
    """Connect to the Ray cluster at ``address`` (else ``$RAY_ADDRESS``), or start a local one.

    Returns True when this call connected (so the caller shuts Ray down after), False when
    Ray was already initialised in this process. Ray missing is a one-line ConfigError.
    """
    try:
        import ray  # lazy: the optional extra
        import ray.data  # noqa: F401
    except ImportError:
        raise ConfigError(
            'the Ray engine needs Ray: pip install "relevancy[ray]" (or "ray[data]")'
        ) from None
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": not quiet}
    if address is None:
        options["include_dashboard"] = False
    try:
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot connect to the Ray cluster at {address}: {exc}") from None
    return True


def read_dataset(source: str | Path) -> tuple[Any, bool]:
    """(the Ray dataset of ``source``, whether it is a folder). CSV cells are read as text,
    as ``relevancy score`` reads them."""
    import ray  # lazy: the optional extra

    files, is_dir = _input_files(source)
    suffix = _suffix_of(files[0])
    paths = [str(f) for f in files]
    if suffix in (".csv", ".tsv"):
        import pyarrow as pa
        import pyarrow.csv as pcsv

        sep = "\t" if suffix == ".tsv" else _sniff(files[0])
        columns = list(dict.fromkeys(c for f in files for c in _csv_header(f, sep)))
        return (
            ray.data.read_csv(
                paths,
                parse_options=pcsv.ParseOptions(delimiter=sep, newlines_in_values=True),
                convert_options=pcsv.ConvertOptions(
                    column_types={c: pa.string() for c in columns}, strings_can_be_null=False
                ),
            ),
            is_dir,
        )
    if suffix in (".jsonl", ".ndjson"):
        return ray.data.read_json(paths, lines=True, file_extensions=None), is_dir
    return ray.data.read_parquet(paths), is_dir


def _input_files(source: str | Path) -> tuple[list[Path], bool]:
    path = Path(source).expanduser().resolve()  # workers do not share the driver's folder
    if not path.exists():
        raise InputError(f"file not found: {str(source)!r}")
    if not path.is_dir():
        _suffix_of(path)
        return [path], False
    files = sorted(
        f
        for f in path.rglob("*")
        if f.is_file() and not f.name.startswith((".", "_")) and f.suffix.lower() in FORMATS
    )
    if not files:
        raise InputError(
            f"{str(source)!r} holds no {', '.join(READ_FORMATS)} file: nothing to score"
        )
    kinds = {_suffix_of(f) for f in files}
    if len(kinds) > 1:
        raise InputError(
            f"{str(source)!r} mixes {', '.join(sorted(kinds))} files: give a folder of one kind"
        )
    return files, True


def _suffix_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in READ_FORMATS:
        hint = (
            " (a JSON array: write it as JSONL, one record per line)" if suffix == ".json" else ""
        )
        raise InputError(f"the Ray engine reads {', '.join(READ_FORMATS)}; not {path.name!r}{hint}")
    return suffix


def _sniff(path: Path) -> str:
    """The delimiter of a CSV file, as ``relevancy score`` finds it (comma by default)."""
    with path.open(encoding="utf-8-sig", errors="ignore") as fh:
        head = fh.read(65536)
    try:
        return csv.Sniffer().sniff(head, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _csv_header(path: Path, sep: str) -> list[str]:
    try:
        return [str(c) for c in pd.read_csv(path, sep=sep, nrows=0).columns]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(f"{path.name!r} is not readable as CSV ({exc})") from None


def score_path(
    source: str | Path,
    out: str | Path,
    *,
    settings: Mapping[str, Any],
    address: str | None = None,
    workers: int | None = None,
    part_rows: int = 2000,
    progress: Callable[[int], None] | None = None,
    quiet: bool = False,
    on_note: Callable[[str], None] | None = None,
) -> FileRun:
    """Score ``source`` (a file, or a folder of files of one kind) on Ray, write ``out``.

    A file gives one results file (``out`` ends in .csv, .json, .jsonl or .parquet), its rows
    in input order; a folder gives a folder ``out`` of Parquet parts of ``part_rows`` rows.
    ``progress(n)`` is called as each batch of ``n`` rows arrives; ``on_note`` gets what the
    caller should be told (``--workers`` cut to what fits).

    Ctrl-C (``KeyboardInterrupt``) stops the run at once: the rows written so far are kept
    (a file's in ``NAME.partial.EXT``, a folder's finished parts and the part being written),
    the job is cancelled and Ray shut down, and :class:`Interrupted` says where they are.
    """
    out = Path(out)
    files, is_dir = _input_files(source)
    if is_dir and out.suffix.lower() in OUTPUT_FORMATS:
        raise InputError(
            f"{str(source)!r} is a folder: give a folder name for -o, not {out.name!r}"
        )
    if not is_dir and out.suffix.lower() not in OUTPUT_FORMATS:
        raise InputError(
            f"cannot write {out.name!r}: use an output name ending in " + ", ".join(OUTPUT_FORMATS)
        )
    started = time.perf_counter()
    owner = connect(address, quiet=quiet)
    try:
        import ray  # lazy: the optional extra

        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = not is_dir
        context.enable_progress_bars = False  # the caller draws its own (``progress``)
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        ds, _ = read_dataset(source)
        scored = score_dataset(ds, workers=workers, on_note=on_note, **settings)
        batches = scored.iter_batches(batch_size=None, batch_format="pandas")
        tally, usage, languages = Tally(), Usage(), Languages()
        collectors = [tally, usage, languages]
        if is_dir:
            _write_parts(_tracked(batches, collectors, progress), out, part_rows)
        else:
            writer = TableWriter(out)
            try:
                for frame in _tracked(batches, collectors, progress):
                    writer.write(frame)
            except KeyboardInterrupt:
                kept = writer.close_partial()
                raise Interrupted(len(tally.values), kept) from None
            except BaseException:
                writer.close(ok=False)
                raise
            writer.close()
    except Interrupted:
        raise
    except KeyboardInterrupt:  # a folder's parts: the finished ones and the last are kept
        raise Interrupted(len(tally.values), out) from None
    finally:
        if owner:
            import ray  # lazy: the optional extra

            ray.shutdown()
    return summary(out, time.perf_counter() - started, tally, usage=usage, languages=languages)


class Interrupted(KeyboardInterrupt):
    """A Ray run stopped by Ctrl-C: ``rows`` scored rows were written to ``kept``."""

    def __init__(self, rows: int, kept: Path) -> None:
        super().__init__(f"{rows:,} scored rows kept in {kept}")
        self.rows, self.kept = rows, kept


def _tracked(
    batches: Any, collectors: list[Any], progress: Callable[[int], None] | None
) -> Iterator[pd.DataFrame]:
    """The scored batches as they arrive, each given to the collectors first (the same ones the
    local engine uses, :mod:`relevancy.scoring.collectors`)."""
    seen = 0
    for frame in batches:
        if not len(frame):
            continue
        collect(ScoredChunk.from_frame(range(seen, seen + len(frame)), frame), collectors)
        seen += len(frame)
        if progress is not None:
            progress(len(frame))
        yield frame


def _write_parts(frames: Iterator[pd.DataFrame], out: Path, part_rows: int) -> None:
    """Parquet parts of ``part_rows`` rows (the last one fewer) in the folder ``out``; parts
    left by an earlier run are replaced, and a part appears under its name once complete."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("part-*.parquet"):
        old.unlink()
    part, writer = 0, None
    try:
        for frame in frames:
            while len(frame):
                if writer is None:
                    writer = TableWriter(out / f"part-{part:05d}.parquet")
                room = part_rows - writer.rows
                writer.write(frame.iloc[:room])
                frame = frame.iloc[room:]
                if writer.rows >= part_rows:
                    writer.close()
                    writer, part = None, part + 1
    except KeyboardInterrupt:  # the rows of the part being written are kept too
        if writer is not None:
            writer.close()
        raise
    except BaseException:
        if writer is not None:
            writer.close(ok=False)
        raise
    if writer is not None:
        writer.close()
