"""Scoring a file of any size: read in chunks, written as rows finish, never held whole.

``relevancy score`` is :func:`survey` (one quick pass: rows, problems, rows already in the
cache) then :func:`score_file` (a second pass that scores a chunk at a time and appends each
chunk's results to the output). Memory stays flat with the number of rows: what is kept per
row is its score (a float) and its error (for the summary).

Every finished row is also appended at once to ``OUTPUT.partial.jsonl``; generations and
embeddings are in the cache, so running the same command again after a crash resumes where it
stopped. With ``store=``, the run is saved in the run store too (for the dashboard).
"""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from relevancy._errors import InputError
from relevancy._io import RowInspector, RowProblem, TableWriter, iter_table, results_to_frame
from relevancy._metric import AnswerRelevancy
from relevancy.cost import group_usage
from relevancy.estimate import InputStats, record_speed, record_usage, usage_points
from relevancy.importers import ImportReport
from relevancy.store import RunStore

__all__ = ["Survey", "FileRun", "survey", "score_file", "CHUNK_ROWS"]

#: rows read, scored and written at a time
CHUNK_ROWS = 2000


@dataclass
class Survey:
    """What one pass over the input found before anything is scored."""

    rows: int = 0
    scoreable: int = 0  #: rows with both a question and an answer
    cached: int = 0  #: rows whose generations are in the cache already
    problems: list[RowProblem] = field(default_factory=list)  #: the first ``keep`` problems
    n_problems: int = 0
    source: ImportReport = field(default_factory=ImportReport)  #: the format read, in words
    #: the rows' text as an estimate needs it (characters, a sample to measure on)
    stats: InputStats = field(default_factory=InputStats)


@dataclass
class FileRun:
    """A finished file run: the numbers its summary is made of."""

    out: Path
    values: np.ndarray  #: one score per row, NaN for a failed row
    errors: collections.Counter[str]
    reasons: collections.Counter[str]  #: rows by main reason
    cached: int
    seconds: float
    run_id: int | None = None
    #: tokens and seconds per (llm, embeddings, cached): :func:`relevancy.cost.usage_totals`
    usage: pd.DataFrame = field(default_factory=pd.DataFrame)


def survey(
    path: str | Path,
    metric: AnswerRelevancy,
    *,
    keep: int = 10,
    chunk_rows: int = CHUNK_ROWS,
    source_format: str = "auto",
) -> Survey:
    """Count the rows, list the first ``keep`` problems and the rows already in the cache.

    ``source_format`` is ``"auto"`` or one of :data:`relevancy.importers.SOURCE_FORMATS`;
    ``Survey.source`` says what was read. Raises :class:`InputError` (one line) when the file
    has no row, or no row with both a question and an answer.
    """
    found = Survey()
    inspector = RowInspector(long_text=getattr(metric.llm, "max_response_chars", None))
    chunks = iter_table(
        path, chunk_rows=chunk_rows, source_format=source_format, report=found.source
    )
    for chunk in chunks:
        problems = inspector.inspect(chunk)
        found.n_problems += len(problems)
        found.problems += problems[: max(0, keep - len(found.problems))]
        found.stats.add(metric, chunk["user_input"].tolist(), chunk["response"].tolist())
    found.cached = found.stats.cached
    found.rows, found.scoreable = inspector.rows, inspector.scoreable
    name = Path(path).name
    if not found.rows:
        raise InputError(f"{name!r} has a header but no rows: add question/answer rows")
    if not found.scoreable:
        raise InputError(
            f"{name!r} has no row with both a question and an answer ({found.rows:,} rows, "
            "all empty in one or the other): fill in the question and answer columns"
        )
    return found


def score_file(
    metric: AnswerRelevancy,
    path: str | Path,
    out: str | Path,
    *,
    chunk_rows: int = CHUNK_ROWS,
    progress: Callable[[int], None] | None = None,
    store: RunStore | None = None,
    run_name: str = "",
    settings: Mapping[str, Any] | None = None,
    source_format: str = "auto",
) -> FileRun:
    """Score every row of ``path`` and write ``out`` (.csv, .json, .jsonl or .parquet).

    ``progress(n)`` is called as each row finishes. With ``store``, the run is also saved
    there as ``run_name`` (its inputs first, then each chunk's results as they finish).
    ``source_format`` is as for :func:`survey`.
    """
    path, out = Path(path), Path(out)
    run_id = None
    if store is not None:
        inputs = iter_table(path, chunk_rows=chunk_rows, source_format=source_format)
        run_id = store.create_run(
            run_name or path.name, dict(settings or {}), inputs, source=path.name
        )
    values: list[float] = []
    errors: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    cached = 0
    usage: list[pd.DataFrame] = []
    points: list[tuple[int, ...]] = []  # token rates are fitted on the first 2,000 fresh rows
    started = time.perf_counter()
    partial = out.with_name(out.name + ".partial.jsonl")
    with TableWriter(out) as writer, partial.open("w", encoding="utf-8") as checkpoint:
        for chunk in iter_table(path, chunk_rows=chunk_rows, source_format=source_format):
            start = len(values)

            def on_result(i: int, result: Any, start: int = start) -> None:
                record = {"row": start + i + 1, **result.to_dict(embeddings=False)}
                checkpoint.write(json.dumps(record, ensure_ascii=False) + "\n")
                checkpoint.flush()
                if progress is not None:
                    progress(1)

            results = metric.score_many(chunk, on_result=on_result)
            frame = results_to_frame(results, chunk)
            writer.write(frame)
            usage.append(group_usage(frame))
            points += usage_points(results)[: max(0, CHUNK_ROWS - len(points))]
            if store is not None and run_id is not None:
                store.append_results(run_id, ((start + i, r) for i, r in enumerate(results)))
            values += [r.value for r in results]
            errors.update(r.error for r in results if r.error)
            reasons.update(r.reason or "error" for r in results)
            cached += sum(r.cached for r in results)
    partial.unlink(missing_ok=True)
    seconds = time.perf_counter() - started
    record_speed(metric, rows=len(values) - cached, seconds=seconds)  # cached rows cost ~0
    record_usage(metric, points)
    totals = group_usage(pd.concat(usage)) if usage else pd.DataFrame()
    return FileRun(
        out, np.asarray(values, dtype=float), errors, reasons, cached, seconds, run_id, totals
    )
