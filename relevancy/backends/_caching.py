"""Wrappers that put the persistent cache, deduplication and cross-row batching around backends."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from relevancy.backends._protocols import Embedder, QuestionGenerator
from relevancy.backends.cache import Cache, cache_key
from relevancy.core.redact import redact
from relevancy.core.result import GenerationSet
from relevancy.errors import EmbeddingError

__all__ = ["CachedGenerator", "EmbeddingService"]


class CachedGenerator:
    """A generator whose results are stored in (and served from) a :class:`Cache`.

    A set whose failures may be transient (``cacheable=False``: timeouts, HTTP errors) is not
    stored, so it is retried next time; deterministic outcomes are.
    """

    def __init__(self, inner: QuestionGenerator, cache: Cache | None) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in_flight: dict[str, asyncio.Future[GenerationSet]] = {}

    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint()

    def key(self, response: str, n: int, language: str | None = None) -> str:
        """The cache key of ``response``'s ``n`` generations with this generator (asked for
        questions in ``language``, when given: the language and its prompt join the key)."""
        if language is None:
            return cache_key(self.inner.fingerprint(), "generations", response, n)
        asked = {**self.inner.fingerprint(), **self.inner.language_fingerprint(language)}
        return cache_key(asked, "generations", response, n)

    async def agenerate(self, response: str, n: int, language: str | None = None) -> GenerationSet:
        """Generations for ``response``; rows with the same response share one generation.

        With ``language``, the generator is asked for questions in that language (a generator
        with ``supports_language``)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._in_flight = loop, {}
        key = self.key(response, n, language)
        running = self._in_flight.get(key)
        if running is not None:  # a duplicate row of the same batch: wait for the first one
            return await asyncio.shield(running)
        future: asyncio.Future[GenerationSet] = loop.create_future()
        self._in_flight[key] = future
        try:
            result = await self._generate(key, response, n, language)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: duplicates re-raise it, nobody else must
            raise
        else:
            future.set_result(result)
            return result
        finally:
            self._in_flight.pop(key, None)

    async def _generate(
        self, key: str, response: str, n: int, language: str | None = None
    ) -> GenerationSet:
        if self.cache is not None:
            hit = await asyncio.to_thread(self.cache.get_generations, key)
            if hit is not None:
                return hit
        result = await self.inner.agenerate(response, n, language=language)
        if self.cache is not None and result.cacheable:
            await asyncio.to_thread(self.cache.put_generations, key, result)
        return result


class EmbeddingService:
    """Embeds texts once: an in-memory memo, then the disk cache, then the backend.

    Concurrent calls (one per row being scored) are coalesced: texts that arrive while a backend
    call is running go together into the next call, so embedding is batched across rows, and a
    text requested by several rows (the same user_input) is embedded once.

    The memo keeps the ``memo_size`` texts used last (10,000: about 20 MiB of 384-d vectors
    with their texts): enough for the texts every row shares and for rows of one question
    scored close together, and a bound on memory however many rows a run has (the disk cache
    keeps the rest).
    """

    def __init__(
        self,
        embedder: Embedder,
        cache: Cache | None,
        *,
        max_batch: int = 256,
        memo_size: int = 10_000,
    ) -> None:
        self.embedder = embedder
        self.cache = cache
        self.name = embedder.name
        self.max_batch = max_batch
        self.memo_size = memo_size
        self.backend_calls = 0
        self.backend_texts = 0
        self._fp = embedder.fingerprint()
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[str, asyncio.Future[np.ndarray]] = {}
        self._queue: list[str] = []
        self._flusher: asyncio.Task[None] | None = None
        #: tokens of texts the backend embedded, until the row that asked for them reads them
        self._tokens: dict[str, int | None] = {}

    def _remember(self, text: str, vector: np.ndarray) -> None:
        self._memo[text] = vector
        self._memo.move_to_end(text)
        while len(self._memo) > self.memo_size:
            self._memo.popitem(last=False)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` (float32, one row each), however they were obtained."""
        return (await self.embed_counted(texts))[0]

    async def embed_counted(self, texts: Sequence[str]) -> tuple[np.ndarray, int | None]:
        """Vectors for ``texts`` and the tokens this call sent to the backend.

        Texts found in memory or in the cache cost nothing; a text another concurrent call is
        already waiting for is counted there. The count is None when the backend does not say
        (it has no ``aembed_counted``).
        """
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (e.g. another score() call)
            self._loop, self._pending, self._queue, self._flusher = loop, {}, [], None
            self._tokens = {}
        unique = list(dict.fromkeys(texts))
        got: dict[str, np.ndarray] = {t: self._memo[t] for t in unique if t in self._memo}
        wanted = [t for t in unique if t not in got]
        if wanted and self.cache is not None:
            keys = {t: cache_key(self._fp, "embedding", t) for t in wanted}
            found = await asyncio.to_thread(self.cache.get_embeddings, list(keys.values()))
            for t, k in keys.items():
                if k in found:
                    got[t] = found[k]
                    self._remember(t, found[k])
            # another row may have had these embedded while the cache was read: the memo
            # holds them now (it is filled before their futures are let go)
            for t in wanted:
                if t not in got and t in self._memo:
                    got[t] = self._memo[t]
            wanted = [t for t in wanted if t not in got]
        futures: dict[str, asyncio.Future[np.ndarray]] = {}
        owned: list[str] = []  # texts this call sends to the backend (and pays for)
        for t in wanted:
            fut = self._pending.get(t)
            if fut is None:
                fut = loop.create_future()
                self._pending[t] = fut
                self._queue.append(t)
                owned.append(t)
            futures[t] = fut
        if self._queue and (self._flusher is None or self._flusher.done()):
            self._flusher = loop.create_task(self._flush())
        if futures:
            try:
                await asyncio.gather(*futures.values())
            finally:
                counts = [self._tokens.pop(t, None) for t in owned]
            got.update({t: f.result() for t, f in futures.items()})
        else:
            counts = []
        tokens = None if any(c is None for c in counts) else sum(c or 0 for c in counts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32), tokens
        return np.vstack([got[t] for t in texts]), tokens

    async def _flush(self) -> None:
        await asyncio.sleep(0)  # let rows that are ready in this tick join the batch
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            try:
                raw, counts = await self.embedder.aembed_counted(batch)
                vectors = np.asarray(raw, dtype=np.float32)
                if vectors.ndim != 2 or vectors.shape[0] != len(batch):
                    raise EmbeddingError(
                        f"{self.name} returned {vectors.shape[0] if vectors.ndim else 0} "
                        f"vectors for {len(batch)} texts"
                    )
                if self._memo:
                    dim = next(iter(self._memo.values())).shape[0]
                    if vectors.shape[1] != dim:
                        raise EmbeddingError(
                            f"{self.name} returned {vectors.shape[1]}-dimensional vectors, "
                            f"expected {dim}"
                        )
            except Exception as exc:
                error = (
                    exc
                    if isinstance(exc, EmbeddingError)
                    else EmbeddingError(redact(f"{type(exc).__name__}: {exc}"))
                )
                for t in batch:
                    fut = self._pending.pop(t, None)
                    if fut is not None and not fut.done():
                        fut.set_exception(error)
                continue
            self.backend_calls += 1
            self.backend_texts += len(batch)
            for i, t in enumerate(batch):
                self._tokens[t] = None if counts is None else int(counts[i])
            if self.cache is not None:
                items = {cache_key(self._fp, "embedding", t): v for t, v in zip(batch, vectors)}
                await asyncio.to_thread(self.cache.put_embeddings, items)
            for t, v in zip(batch, vectors):
                self._remember(t, v)
                fut = self._pending.pop(t, None)
                if fut is not None and not fut.done():
                    fut.set_result(v)
