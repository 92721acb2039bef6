"""The one scoring loop: the CLI, the dashboard and the Ray engine all score rows here.

Rows come in chunks (a pandas frame each, with the run's row numbers); :func:`score_chunk`
scores one chunk with :meth:`AnswerRelevancy.score_many` (and again under other generator seeds
when repeats are asked for) and returns a :class:`ScoredChunk`: the rows, their results and the
export's table. :func:`score_chunks` does that for every chunk and hands each scored chunk to
the collectors (:mod:`relevancy.scoring.collectors`: counts for the summary, labels, the chance
sample, tokens, languages, stability, the output file, the checkpoint, the run store) before
yielding it. The Ray engine scores chunks with :func:`score_chunk` on its workers and feeds the
frames that come back to the same collectors with :func:`collect`::

    collectors = [Tally(), Usage(), FileSink(writer)]
    for chunk in score_chunks(metric, chunks_of(frames), collectors):
        progress(len(chunk.rows))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from relevancy.analysis.stability import RowStability, row_stability, stability_frame
from relevancy.core.result import RelevancyResult
from relevancy.io import results_to_frame
from relevancy.scoring.repeats import rescore

__all__ = [
    "ScoredChunk",
    "Collector",
    "score_chunk",
    "score_chunks",
    "collect",
    "chunks_of",
]

#: ``on_result(row, result)`` as each row finishes (``row``: the run's row number)
RowCallback = Callable[[int, RelevancyResult], None]


@dataclass
class ScoredChunk:
    """One chunk of rows, scored."""

    rows: list[int]  #: the run's row numbers (0-based) of the chunk's rows, in order
    inputs: pd.DataFrame  #: the rows as read (columns mapped to user_input, response...)
    frame: pd.DataFrame  #: the inputs followed by the result columns: what exports write
    #: the results, when scored in this process (None for frames that came back from Ray)
    results: list[RelevancyResult] | None = None
    seeds: list[int] = field(default_factory=list)  #: with repeats: every seed, the first ours
    #: with repeats: the results under each other seed (one list per seed, aligned with rows)
    repeats: list[list[RelevancyResult]] = field(default_factory=list)
    stability: list[RowStability] = field(default_factory=list)  #: with repeats: per row

    @classmethod
    def from_frame(cls, rows: Sequence[int], frame: pd.DataFrame) -> ScoredChunk:
        """A chunk scored elsewhere (a Ray worker): only its table is known."""
        return cls(rows=list(rows), inputs=frame, frame=frame)


class Collector(Protocol):
    """Something that takes each scored chunk: a summary, a sink, a checkpoint."""

    def add(self, chunk: ScoredChunk) -> None: ...


def score_chunk(
    metric: Any,
    inputs: pd.DataFrame,
    rows: Sequence[int] | None = None,
    *,
    seeds: Sequence[int] = (),
    on_result: RowCallback | None = None,
    on_repeat: Callable[[], None] | None = None,
) -> ScoredChunk:
    """Score one chunk of rows (``inputs``: a frame with user_input/response, or their aliases).

    ``rows`` are the run's row numbers of the chunk (default 0, 1, ...); ``on_result(row,
    result)`` is called as each row finishes. With two or more ``seeds`` (the first the
    metric's own), every row is scored again under the others (``on_repeat()`` after each) and
    the table gains the stability columns of :func:`relevancy.analysis.stability.stability_frame`.
    """
    attrs = dict(inputs.attrs)  # e.g. the label column's own name
    inputs = inputs.reset_index(drop=True)
    inputs.attrs.update(attrs)
    rows = list(range(len(inputs))) if rows is None else list(rows)
    if len(rows) != len(inputs):
        raise ValueError(f"{len(inputs)} rows but {len(rows)} row numbers")

    def finished(i: int, result: RelevancyResult) -> None:
        if on_result is not None:
            on_result(rows[i], result)

    results = metric.score_many(inputs, on_result=finished)
    frame = results_to_frame(results, inputs)
    chunk = ScoredChunk(rows=rows, inputs=inputs, frame=frame, results=results)
    if len(seeds) > 1:
        tick = (lambda done, total: on_repeat()) if on_repeat is not None else None
        chunk.seeds = list(seeds)
        chunk.repeats = rescore(metric, inputs, list(seeds[1:]), progress=tick)
        by_seed = [results, *chunk.repeats]
        chunk.stability = [
            row_stability(chunk.seeds, [runs[i] for runs in by_seed]) for i in range(len(rows))
        ]
        table = stability_frame(chunk.stability).set_index(frame.index)
        chunk.frame = pd.concat([frame, table], axis=1)
    return chunk


def collect(chunk: ScoredChunk, collectors: Iterable[Collector]) -> ScoredChunk:
    """Hand ``chunk`` to every collector, in order."""
    for collector in collectors:
        collector.add(chunk)
    return chunk


def score_chunks(
    metric: Any,
    chunks: Iterable[tuple[Sequence[int], pd.DataFrame]],
    collectors: Iterable[Collector] = (),
    *,
    seeds: Sequence[int] = (),
    on_result: RowCallback | None = None,
    on_repeat: Callable[[], None] | None = None,
) -> Iterator[ScoredChunk]:
    """Score each ``(rows, frame)`` chunk (:func:`score_chunk`), give it to the collectors,
    yield it. Lazy: nothing is scored until the caller iterates."""
    collectors = list(collectors)
    for rows, inputs in chunks:
        chunk = score_chunk(
            metric, inputs, rows, seeds=seeds, on_result=on_result, on_repeat=on_repeat
        )
        yield collect(chunk, collectors)
        # not held while the next chunk is scored: one chunk's results in memory at a time
        del chunk


def chunks_of(frames: Iterable[pd.DataFrame]) -> Iterator[tuple[list[int], pd.DataFrame]]:
    """Number the rows of consecutive frames (a file read in chunks) 0, 1, 2, ..."""
    start = 0
    for frame in frames:
        yield list(range(start, start + len(frame))), frame
        start += len(frame)
