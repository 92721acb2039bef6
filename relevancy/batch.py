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
import random
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
from relevancy.agreement import parse_labels
from relevancy.chance import MAX_ROWS, ChanceLevel, chance_level
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
    label_column: str | None = None,
) -> Survey:
    """Count the rows, list the first ``keep`` problems and the rows already in the cache.

    ``source_format`` is ``"auto"`` or one of :data:`relevancy.importers.SOURCE_FORMATS`;
    ``Survey.source`` says what was read. Raises :class:`InputError` (one line) when the file
    has no row, or no row with both a question and an answer, or when ``label_column`` (the
    human labels) holds a value that is not a label. A label column found by name that holds
    one is not used: ``Survey.notes`` says so and ``Survey.label_column`` is ``""``.
    """
    found = Survey(label_column=label_column)
    inspector = RowInspector(long_text=getattr(metric.llm, "max_response_chars", None))
    chunks = iter_table(
        path, chunk_rows=chunk_rows, source_format=source_format, report=found.source,
        label_column=label_column,
    )  # fmt: skip
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
) -> FileRun:
    """Score every row of ``path`` and write ``out`` (.csv, .json, .jsonl or .parquet).

    With ``repeats`` k > 1 each row is scored k times, under generator seeds that share no
    sample (:func:`relevancy.stability.repeat_seeds`; the first is the metric's own, whose
    score is the row's ``score``), and the output gains ``score_sd`` (population sd),
    ``score_min``, ``score_max``, ``ragas_sd``, ``noncommittal_flips``, ``near_duplicates`` and
    ``repeats`` columns; a run saved in ``store`` keeps every repeat.

    ``progress(n)`` is called as each row finishes. With ``store``, the run is also saved
    there as ``run_name`` (its inputs first, then each chunk's results as they finish).
    ``source_format`` is as for :func:`survey`; ``label_column`` too (pass the survey's
    ``label_column``). The human labels travel with the rows to ``out`` and the store; the
    :class:`FileRun` keeps them with each row's question for :func:`relevancy.agreement.agreement`,
    and a sample of the rows' vectors for the chance level (:mod:`relevancy.chance`).
    """
    path, out = Path(path), Path(out)
    seeds = repeat_seeds(getattr(metric.llm, "seed", 0), repeats, metric.strictness)
    sds: list[float] = []
    flips = near = fresh_repeats = 0
    question_languages: collections.Counter[str] = collections.Counter()
    mismatch = other_language = 0
    run_id = None
    if store is not None:
        inputs = iter_table(
            path, chunk_rows=chunk_rows, source_format=source_format, label_column=label_column
        )
        run_id = store.create_run(
            run_name or path.name, dict(settings or {}), inputs, source=path.name
        )
    ragas: list[float] = []
    noncommittal: list[bool] = []
    labels: list[np.ndarray] = []
    groups: list[int] = []
    sample: list[tuple[Any, ...]] = []  # reservoir of (ui vector, question vectors, key, embedder)
    picker = random.Random(0)
    negative = 0
    values: list[float] = []
    errors: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    cached = 0
    usage: list[pd.DataFrame] = []
    points: list[tuple[int, ...]] = []  # token rates are fitted on the first 2,000 fresh rows
    started = time.perf_counter()
    partial = out.with_name(out.name + ".partial.jsonl")
    with TableWriter(out) as writer, partial.open("w", encoding="utf-8") as checkpoint:
        for chunk in iter_table(
            path, chunk_rows=chunk_rows, source_format=source_format, label_column=label_column
        ):
            start = len(values)
            if "label" in chunk.columns:
                column = chunk.attrs.get("label_column", "label")
                labels.append(parse_labels(chunk["label"].tolist(), column=column, start=start))
                groups += [hash(q) for q in chunk["user_input"]]

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
            ragas += [r.ragas_value for r in results]
            noncommittal += [bool(r.noncommittal) for r in results]
            for i, r in enumerate(results):
                negative += any(s < 0 for s in r.similarities)
                if r.user_input_embedding is None or not r.question_embeddings:
                    continue
                item = (np.asarray(r.user_input_embedding, dtype=np.float32),
                        np.asarray(r.question_embeddings, dtype=np.float32),
                        r.user_input, r.embeddings)  # fmt: skip
                seen = start + i + 1
                if len(sample) < MAX_ROWS:
                    sample.append(item)
                elif (k := picker.randrange(seen)) < MAX_ROWS:
                    sample[k] = item
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
        out, np.asarray(values, dtype=float), errors, reasons, cached, seconds, run_id,
        ragas=np.asarray(ragas, dtype=float), noncommittal=np.asarray(noncommittal, dtype=bool),
        labels=np.concatenate(labels) if labels else None,
        groups=np.asarray(groups, dtype=np.int64) if labels else None,
        chance=_chance(sample), negative=negative, usage=totals,
        question_languages=question_languages, language_mismatch=mismatch,
        answer_other_language=other_language,
    )  # fmt: skip
    if len(seeds) > 1:
        run.seeds, run.row_sd = seeds, np.asarray(sds, dtype=float)
        run.flips, run.near_duplicate_rows = flips, near
    return run


def _chance(sample: list[tuple[Any, ...]]) -> ChanceLevel | None:
    """The chance level of the sampled rows with the most common embedder."""
    if not sample:
        return None
    embedder = collections.Counter(s[3] for s in sample).most_common(1)[0][0]
    rows = [s for s in sample if s[3] == embedder]
    return chance_level(
        np.stack([s[0] for s in rows]), [s[1] for s in rows], [s[2] for s in rows],
        embedder=embedder,
    )  # fmt: skip
