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

from relevancy.analysis.agreement import parse_labels
from relevancy.analysis.chance import ChanceLevel
from relevancy.errors import InputError
from relevancy.io import RowInspector, RowProblem, TableWriter, iter_table
from relevancy.io.importers import ImportReport
from relevancy.runs import RunStore
from relevancy.scoring.collectors import (
    ChanceSample,
    FileSink,
    Labels,
    Languages,
    Stability,
    StoreSink,
    Tally,
    TokenPoints,
    Usage,
)
from relevancy.scoring.estimate import InputStats, record_speed, record_usage
from relevancy.scoring.metric import AnswerRelevancy
from relevancy.scoring.pipeline import chunks_of, score_chunks
from relevancy.scoring.repeats import repeat_seeds

__all__ = [
    "Survey",
    "FileRun",
    "survey",
    "score_file",
    "CHUNK_ROWS",
]

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
    #: the human labels' column to score with (``None``: found by name; ``""``: none)
    label_column: str | None = None
    labelled: int = 0  #: rows with a human label
    notes: list[str] = field(default_factory=list)  #: e.g. a label column that is not one
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
    ragas: np.ndarray | None = None  #: each row's Ragas value
    noncommittal: np.ndarray | None = None  #: each row's noncommittal verdict
    labels: np.ndarray | None = None  #: each row's human label (NaN: none); None: no column
    groups: np.ndarray | None = None  #: each row's question (a hash), when there are labels
    chance: ChanceLevel | None = None  #: what unrelated pairs of this file's rows score
    negative: int = 0  #: rows with a generated question at a negative cosine to the question
    #: scored rows whose score rests on fewer generated questions than asked
    incomplete: int = 0
    #: tokens and seconds per (llm, embeddings, cached), for
    #: :func:`relevancy.analysis.cost.usage_totals`
    usage: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: with ``repeats`` > 1: the seeds and each row's sd, noncommittal flip and repeats with
    #: near-duplicate questions (see ``relevancy.analysis.stability``)
    seeds: list[int] = field(default_factory=list)
    row_sd: np.ndarray | None = None
    flips: int = 0
    near_duplicate_rows: int = 0
    #: rows by the detected language of their question; rows flagged ``language_mismatch``;
    #: rows whose answer is (with confidence) in another language than their question
    question_languages: collections.Counter[str] = field(default_factory=collections.Counter)
    language_mismatch: int = 0
    answer_other_language: int = 0


def survey(
    path: str | Path,
    metric: AnswerRelevancy,
    *,
    keep: int = 10,
    chunk_rows: int = CHUNK_ROWS,
    source_format: str = "auto",
    label_column: str | None = None,
) -> Survey:
    """Count the rows, list the first ``keep`` problems and the rows already in the cache.

    ``source_format`` is ``"auto"`` or one of :data:`relevancy.io.importers.SOURCE_FORMATS`;
    ``Survey.source`` says what was read. Raises :class:`InputError` (one line) when the file
    has no row, or no row with both a question and an answer, or when ``label_column`` (the
    human labels) holds a value that is not a label. A label column found by name that holds
    one is not used: ``Survey.notes`` says so and ``Survey.label_column`` is ``""``.
    """
    found = Survey(label_column=label_column)
    inspector = RowInspector(long_text=metric.llm.max_response_chars)
    chunks = iter_table(
        path,
        chunk_rows=chunk_rows,
        source_format=source_format,
        report=found.source,
        label_column=label_column,
    )
    seen = 0
    for chunk in chunks:
        if "label" in chunk.columns and found.label_column != "":
            column = chunk.attrs.get("label_column", "label")
            try:
                labels = parse_labels(chunk["label"].tolist(), column=column, start=seen)
            except InputError as exc:
                if label_column:
                    raise
                found.notes.append(f"not used as human labels: {exc}")
                found.label_column, found.labelled = "", 0
            else:
                found.label_column = column
                found.labelled += int(np.isfinite(labels).sum())
        seen += len(chunk)
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
    repeats: int = 1,
    label_column: str | None = None,
    source_name: str = "",
) -> FileRun:
    """Score every row of ``path`` and write ``out`` (.csv, .json, .jsonl or .parquet).

    With ``repeats`` k > 1 each row is scored k times, under generator seeds that share no
    sample (:func:`relevancy.scoring.repeats.repeat_seeds`; the first is the metric's own,
    whose score is the row's ``score``), and the output gains ``score_sd`` (population sd),
    ``score_min``, ``score_max``, ``ragas_sd``, ``noncommittal_flips``, ``near_duplicates`` and
    ``repeats`` columns; a run saved in ``store`` keeps every repeat.

    ``progress(n)`` is called as each row finishes. With ``store``, the run is also saved
    there as ``run_name`` (its inputs first, then each chunk's results as they finish), its
    source recorded as ``source_name`` (default: the file's name).
    ``source_format`` is as for :func:`survey`; ``label_column`` too (pass the survey's
    ``label_column``). The human labels travel with the rows to ``out`` and the store; the
    :class:`FileRun` keeps them with each row's question for
    :func:`relevancy.analysis.agreement.agreement`, and a sample of the rows' vectors for the
    chance level (:mod:`relevancy.analysis.chance`). The rows are scored by the one scoring loop,
    :func:`relevancy.scoring.pipeline.score_chunks`.
    """
    path, out = Path(path), Path(out)
    seeds = repeat_seeds(metric.llm.seed or 0, repeats, metric.strictness)
    run_id = None
    if store is not None:
        inputs = iter_table(
            path, chunk_rows=chunk_rows, source_format=source_format, label_column=label_column
        )
        run_id = store.create_run(
            run_name or source_name or path.name,
            dict(settings or {}),
            inputs,
            source=source_name or path.name,
        )
    tally, labels, chance, usage = Tally(), Labels(), ChanceSample(), Usage()
    points, languages, stability = TokenPoints(), Languages(), Stability()
    collectors: list[Any] = [tally, labels, chance, usage, points, languages, stability]
    if store is not None and run_id is not None:
        collectors.append(StoreSink(store, run_id))
    started = time.perf_counter()
    partial = out.with_name(out.name + ".partial.jsonl")
    with TableWriter(out) as writer, partial.open("w", encoding="utf-8") as checkpoint:

        def on_result(row: int, result: Any) -> None:
            record = {"row": row + 1, **result.to_dict(embeddings=False)}
            checkpoint.write(json.dumps(record, ensure_ascii=False) + "\n")
            checkpoint.flush()
            if progress is not None:
                progress(1)

        chunks = iter_table(
            path, chunk_rows=chunk_rows, source_format=source_format, label_column=label_column
        )
        for scored in score_chunks(
            metric,
            chunks_of(chunks),
            [*collectors, FileSink(writer)],
            seeds=seeds,
            on_result=on_result,
            on_repeat=(lambda: progress(1)) if progress is not None else None,
        ):
            del scored  # the collectors kept what they need; free it before the next chunk
    partial.unlink(missing_ok=True)
    seconds = time.perf_counter() - started
    fresh = len(tally.values) - tally.cached + stability.fresh_repeats  # cached rows cost ~0
    record_speed(metric, rows=fresh, seconds=seconds, store=store)
    record_usage(metric, points.points)
    return summary(
        out,
        seconds,
        tally,
        run_id=run_id,
        labels=labels,
        chance=chance,
        usage=usage,
        languages=languages,
        stability=stability,
    )


def summary(
    out: Path,
    seconds: float,
    tally: Tally,
    *,
    run_id: int | None = None,
    labels: Labels | None = None,
    chance: ChanceSample | None = None,
    usage: Usage | None = None,
    languages: Languages | None = None,
    stability: Stability | None = None,
) -> FileRun:
    """The :class:`FileRun` of a finished run, from what its collectors kept."""
    label_values, groups = labels.arrays() if labels is not None else (None, None)
    run = FileRun(
        out,
        np.asarray(tally.values, dtype=float),
        tally.errors,
        tally.reasons,
        tally.cached,
        seconds,
        run_id,
        ragas=np.asarray(tally.ragas, dtype=float),
        noncommittal=np.asarray(tally.noncommittal, dtype=bool),
        labels=label_values,
        groups=groups,
        chance=chance.level() if chance is not None else None,
        negative=tally.negative,
        incomplete=tally.incomplete,
        usage=usage.totals() if usage is not None else pd.DataFrame(),
    )
    if languages is not None:
        run.question_languages = languages.questions
        run.language_mismatch, run.answer_other_language = (
            languages.mismatch,
            languages.answer_other,
        )
    if stability is not None and stability.seeds:
        run.seeds, run.row_sd = stability.seeds, np.asarray(stability.sds, dtype=float)
        run.flips, run.near_duplicate_rows = stability.flips, stability.near
    return run
