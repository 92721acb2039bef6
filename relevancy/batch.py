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
from relevancy.language import different
from relevancy.stability import repeat_seeds, rescore, row_stability, stability_frame
from relevancy.store import RunStore

__all__ = [
    "Survey",
    "FileRun",
    "survey",
    "score_file",
    "language_columns",
    "LANGUAGE_COLUMNS",
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
    #: with ``repeats`` > 1: the seeds and each row's sd, noncommittal flip and repeats with
    #: near-duplicate questions (see ``relevancy.stability``)
    seeds: list[int] = field(default_factory=list)
    row_sd: np.ndarray | None = None
    flips: int = 0
    near_duplicate_rows: int = 0
    #: rows by the detected language of their question; rows flagged ``language_mismatch``;
    #: rows whose answer is (with confidence) in another language than their question
    question_languages: collections.Counter[str] = field(default_factory=collections.Counter)
    language_mismatch: int = 0
    answer_other_language: int = 0


#: what ``relevancy score`` writes after ``relevancy._io.RESULT_COLUMNS`` (both engines)
LANGUAGE_COLUMNS = (
    "question_language",
    "answer_language",
    "generated_languages",
    "prompt_language",
)


def language_columns(results: list[Any]) -> pd.DataFrame:
    """``question_language``, ``answer_language``, ``generated_languages`` (JSON list) and
    ``prompt_language`` (what the generator was asked for, empty when not asked)."""
    langs = [r.languages or {} for r in results]
    return pd.DataFrame(
        {
            "question_language": [x.get("question", "") for x in langs],
            "answer_language": [x.get("answer", "") for x in langs],
            "generated_languages": [json.dumps(x.get("generated", [])) for x in langs],
            "prompt_language": [x.get("prompted") or "" for x in langs],
        }
    )


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
    repeats: int = 1,
) -> FileRun:
    """Score every row of ``path`` and write ``out`` (.csv, .json, .jsonl or .parquet).

    With ``repeats`` k > 1 each row is scored k times, under generator seeds that share no
    sample (:func:`relevancy.stability.repeat_seeds`; the first is the metric's own, whose
    score is the row's ``score``), and the output gains ``score_sd`` (population sd),
    ``score_min``, ``score_max``, ``ragas_sd``, ``noncommittal_flips``, ``near_duplicates`` and
    ``repeats`` columns; a run saved in ``store`` keeps every repeat.

    ``progress(n)`` is called as each row finishes. With ``store``, the run is also saved
    there as ``run_name`` (its inputs first, then each chunk's results as they finish).
    ``source_format`` is as for :func:`survey`.
    """
    path, out = Path(path), Path(out)
    seeds = repeat_seeds(getattr(metric.llm, "seed", 0), repeats, metric.strictness)
    sds: list[float] = []
    flips = near = fresh_repeats = 0
    question_languages: collections.Counter[str] = collections.Counter()
    mismatch = other_language = 0
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
            frame = pd.concat([frame, language_columns(results)], axis=1)
            for r in results:
                if r.languages:
                    question_languages[r.languages["question"]] += 1
                    mismatch += "language_mismatch" in r.flags
                    other_language += different(r.user_input, r.response)
            if len(seeds) > 1:
                tick = (lambda done, total: progress(1)) if progress is not None else None
                others = rescore(metric, chunk, seeds[1:], progress=tick)
                by_seed = [results, *others]
                stable = [
                    row_stability(seeds, [runs[i] for runs in by_seed]) for i in range(len(results))
                ]
                frame = pd.concat([frame, stability_frame(stable).set_index(frame.index)], axis=1)
                sds += [s.sd for s in stable]
                flips += sum(s.flips for s in stable)
                near += sum(s.duplicate_repeats > 0 for s in stable)
                fresh_repeats += sum(not r.cached for runs in others for r in runs)
                usage += [group_usage(results_to_frame(runs, chunk)) for runs in others]  # billed
            writer.write(frame)
            usage.append(group_usage(frame))
            points += usage_points(results)[: max(0, CHUNK_ROWS - len(points))]
            if store is not None and run_id is not None:
                store.append_results(run_id, ((start + i, r) for i, r in enumerate(results)))
                if len(seeds) > 1:
                    store.append_repeats(
                        run_id,
                        ((start + i, seed, runs[i]) for seed, runs in zip(seeds, by_seed)
                         for i in range(len(results))),
                    )  # fmt: skip
            values += [r.value for r in results]
            errors.update(r.error for r in results if r.error)
            reasons.update(r.reason or "error" for r in results)
            cached += sum(r.cached for r in results)
    partial.unlink(missing_ok=True)
    seconds = time.perf_counter() - started
    fresh = len(values) - cached + fresh_repeats  # cached rows cost ~0
    record_speed(metric, rows=fresh, seconds=seconds)
    record_usage(metric, points)
    totals = group_usage(pd.concat(usage)) if usage else pd.DataFrame()
    run = FileRun(
        out, np.asarray(values, dtype=float), errors, reasons, cached, seconds, run_id, totals
    )
    run.question_languages = question_languages
    run.language_mismatch, run.answer_other_language = mismatch, other_language
    if len(seeds) > 1:
        run.seeds, run.row_sd = seeds, np.asarray(sds, dtype=float)
        run.flips, run.near_duplicate_rows = flips, near
    return run
