"""Fake backends for unit tests of logic (rules, batching, caching); no model, no network.

``FakeGenerator`` returns scripted generations; ``FakeEmbedder`` maps texts to vectors you give
it (or hashes unknown texts into deterministic unit vectors). Both count their calls.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from relevancy.backends import EmbedderBase, GeneratorBase
from relevancy.core.result import Generation, GenerationSet
from relevancy.errors import EmbeddingError, GenerationError

__all__ = ["FakeGenerator", "FakeEmbedder"]


class FakeGenerator(GeneratorBase):
    """Returns ``script(response, n)`` or, by default, ``n`` copies of ``"What is <response>?"``.

    ``script`` may return a list of :class:`Generation`, of ``(question, flag)`` tuples, or raise.
    """

    def __init__(
        self,
        script: Callable[[str, int], Sequence[Any]] | None = None,
        *,
        name: str = "fake:generator",
        delay: float = 0.0,
        flags: bool = True,
    ) -> None:
        self.script = script
        self.name = name
        self.delay = delay
        self.flags = flags
        self.calls: list[tuple[str, int]] = []

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "fake", "name": self.name}

    async def agenerate(self, response: str, n: int, language: str | None = None) -> GenerationSet:
        self.calls.append((response, n))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.script is None:
            items: Sequence[Any] = [(f"What is {response}?", False if self.flags else None)] * n
        else:
            items = self.script(response, n)
        generations = []
        for item in items:
            if isinstance(item, Generation):
                generations.append(item)
            else:
                question, flag = item
                generations.append(Generation(question, flag))
        if not generations:
            raise GenerationError("fake generator returned nothing")
        return GenerationSet(
            generations=generations,
            model=self.name,
            requests=1,
            cacheable=all(g.error is None for g in generations),
        )


class FakeEmbedder(EmbedderBase):
    """Vectors from ``table`` (text -> vector), else a deterministic hash of the text."""

    def __init__(
        self,
        table: Mapping[str, Sequence[float]] | None = None,
        *,
        dim: int = 8,
        name: str = "fake:embedder",
        fail: Callable[[Sequence[str]], bool] | None = None,
    ) -> None:
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in (table or {}).items()}
        self.dim = dim if not self.table else len(next(iter(self.table.values())))
        self.name = name
        self.fail = fail
        self.calls: list[list[str]] = []

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "fake", "name": self.name, "dim": self.dim}

    def vector(self, text: str) -> np.ndarray:
        if text in self.table:
            return self.table[text]
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        self.calls.append(texts)
        if self.fail is not None and self.fail(texts):
            raise EmbeddingError("fake embedder failure")
        return np.vstack([self.vector(t) for t in texts]).astype(np.float32)
