"""Where a run's wall time goes, measured from outside the library: proxies around the
generator, the embedder and the cache record when each is busy (nothing in the library is
edited), and :func:`exclusive_split` shares the wall time out among them."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

from relevancy.backends import EmbedderBase, GeneratorBase


class Intervals:
    """Wall-clock intervals during which something was busy (possibly overlapping)."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []

    def add(self, start: float, end: float) -> None:
        self.spans.append((start, end))

    def merged(self) -> list[tuple[float, float]]:
        out: list[list[float]] = []
        for a, b in sorted(self.spans):
            if out and a <= out[-1][1]:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        return [(a, b) for a, b in out]

    def busy(self) -> float:
        return sum(b - a for a, b in self.merged())


def _minus(spans: list[tuple[float, float]], cut: list[tuple[float, float]]) -> float:
    """Total length of ``spans`` (merged) outside ``cut`` (merged)."""
    total = 0.0
    for a, b in spans:
        length = b - a
        for c, d in cut:
            lo, hi = max(a, c), min(b, d)
            if hi > lo:
                length -= hi - lo
        total += max(0.0, length)
    return total


def exclusive_split(wall: float, layers: dict[str, Intervals]) -> dict[str, float]:
    """Split ``wall`` seconds into layers, in priority order, plus ``overhead``.

    Each layer gets the time it was busy while no earlier layer was: e.g. generation first,
    then embedding outside generation, then cache outside both; what is left is overhead.
    """
    out: dict[str, float] = {}
    taken = Intervals()
    for name, intervals in layers.items():
        spans = intervals.merged()
        out[name] = _minus(spans, taken.merged())
        taken.spans.extend(spans)
    out["overhead"] = max(0.0, wall - sum(out.values()))
    return out


class TimedGenerator(GeneratorBase):
    """A question generator proxy that records when ``agenerate`` is busy; everything else is
    the inner generator's."""

    def __init__(self, inner: Any, intervals: Intervals) -> None:
        self.inner, self.intervals = inner, intervals
        for key in ("name", "embedded", "supports_language", "seed", "max_response_chars"):
            setattr(self, key, getattr(inner, key))

    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint()

    def language_fingerprint(self, language: str) -> dict[str, Any]:
        return self.inner.language_fingerprint(language)

    async def agenerate(self, response: str, n: int, language: str | None = None) -> Any:
        start = time.perf_counter()
        try:
            return await self.inner.agenerate(response, n, language)
        finally:
            self.intervals.add(start, time.perf_counter())

    async def apreflight(self) -> None:
        await self.inner.apreflight()

    async def aclose(self) -> None:
        await self.inner.aclose()


class TimedSyncGenerator(TimedGenerator):
    """Like :class:`TimedGenerator` but times the blocking ``generate`` inside the thread,
    so the time a row spends queued for the thread pool is not counted as generation."""

    async def agenerate(self, response: str, n: int, language: str | None = None) -> Any:
        def run() -> Any:
            start = time.perf_counter()
            try:
                return self.inner.generate(response, n, language)
            finally:
                self.intervals.add(start, time.perf_counter())

        return await asyncio.to_thread(run)


class TimedEmbedder(EmbedderBase):
    """An embedder proxy that records when it is busy and how many texts it saw."""

    def __init__(self, inner: Any, intervals: Intervals) -> None:
        self.inner, self.intervals = inner, intervals
        for key in ("name", "embedded", "exemplar_threshold"):
            setattr(self, key, getattr(inner, key))
        self.calls = self.texts = 0

    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint()

    async def aembed(self, texts: Sequence[str]) -> Any:
        return (await self.aembed_counted(texts))[0]

    async def aembed_counted(self, texts: Sequence[str]) -> Any:
        start = time.perf_counter()
        try:
            return await self.inner.aembed_counted(texts)
        finally:
            self.intervals.add(start, time.perf_counter())
            self.calls += 1
            self.texts += len(texts)

    async def apreflight(self) -> None:
        await self.inner.apreflight()

    async def aclose(self) -> None:
        await self.inner.aclose()


def timed_cache(path: str | os.PathLike[str], intervals: Intervals) -> Any:
    """A :class:`relevancy.Cache` whose reads and writes are timed."""
    from relevancy import Cache

    class TimedCache(Cache):
        pass

    for name in ("get_generations", "put_generations", "get_embeddings", "put_embeddings"):
        original = getattr(Cache, name)

        def wrapper(self: Any, *args: Any, _original: Any = original) -> Any:
            start = time.perf_counter()
            try:
                return _original(self, *args)
            finally:
                intervals.add(start, time.perf_counter())

        setattr(TimedCache, name, wrapper)
    return TimedCache(path)
