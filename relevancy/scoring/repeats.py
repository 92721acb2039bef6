"""Rows scored again under other generator seeds: the seeds (spaced so that no two repeats
share a sample) and the re-scoring through the normal metric and cache. The statistics of the
repeats are in :mod:`relevancy.analysis.stability`."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from relevancy.core.result import RelevancyResult
from relevancy.core.sync import run_sync
from relevancy.errors import InputError
from relevancy.scoring.metric import AnswerRelevancy

__all__ = [
    "MAX_REPEATS",
    "repeat_seeds",
    "with_seed",
    "arescore",
    "rescore",
]


#: the most repeats one request may ask for
MAX_REPEATS = 20


def repeat_seeds(seed: int, repeats: int, strictness: int) -> list[int]:
    """The generator seeds of ``repeats`` scorings that share no sample: ``seed + j * N``."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise InputError(f"repeats must be a whole number of at least 1, got {repeats!r}")
    if repeats > MAX_REPEATS:
        raise InputError(f"repeats must be at most {MAX_REPEATS}, got {repeats}")
    return [int(seed) + j * int(strictness) for j in range(repeats)]


def with_seed(metric: AnswerRelevancy, seed: int) -> AnswerRelevancy:
    """The same metric (backends, cache, settings) with its generator drawing from ``seed``.

    Raises :class:`InputError` when the generator has no seed to change.
    """
    if metric.llm.seed is None:
        raise InputError(
            f"the generator {metric.llm.name} has no seed: its repeats would all be the same"
        )
    if int(metric.llm.seed) == int(seed):
        return metric
    llm = copy.copy(metric.llm)
    llm.seed = int(seed)
    scorer = AnswerRelevancy(
        llm=llm,
        embeddings=metric.embeddings,
        strictness=metric.strictness,
        noncommittal=metric.noncommittal,
        noncommittal_threshold=metric.noncommittal_threshold,
        mode=metric.mode,
        cache=metric.cache if metric.cache is not None else False,
        concurrency=metric.concurrency,
        prompt_language=metric.prompt_language,
        min_questions=metric.min_questions,
    )
    scorer._embedder = metric._embedder  # one embedding memo for every seed
    return scorer


async def arescore(
    metric: AnswerRelevancy,
    data: Any,
    seeds: Sequence[int],
    *,
    progress: Callable[[int, int], None] | None = None,
    on_result: Callable[[int, int, RelevancyResult], None] | None = None,
) -> list[list[RelevancyResult]]:
    """Score ``data`` once per seed; ``out[j][i]`` is row ``i`` under ``seeds[j]``.

    ``data`` is anything :meth:`AnswerRelevancy.score_many` takes. ``progress(done, total)``
    counts row-scorings over all seeds; ``on_result(seed, row, result)`` as each finishes.
    """
    if not seeds:
        raise InputError("give at least one seed")
    out: list[list[RelevancyResult]] = []
    done, total = 0, len(seeds) * _length(data)
    for seed in seeds:
        scorer = with_seed(metric, seed)

        def one(i: int, result: RelevancyResult, seed: int = seed) -> None:
            nonlocal done
            done += 1
            if on_result is not None:
                on_result(int(seed), i, result)
            if progress is not None:
                progress(done, total)

        out.append(await scorer.ascore_many(data, on_result=one))
    return out


def rescore(
    metric: AnswerRelevancy,
    data: Any,
    seeds: Sequence[int],
    *,
    progress: Callable[[int, int], None] | None = None,
    on_result: Callable[[int, int, RelevancyResult], None] | None = None,
) -> list[list[RelevancyResult]]:
    """Blocking :func:`arescore`."""

    async def go() -> list[list[RelevancyResult]]:
        try:
            return await arescore(metric, data, seeds, progress=progress, on_result=on_result)
        finally:
            await metric.aclose()

    return run_sync(go())


def _length(data: Any) -> int:
    try:
        return len(data)
    except TypeError:
        return 0
