"""The two small protocols every backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from relevancy._result import GenerationSet

__all__ = ["QuestionGenerator", "Embedder"]


@runtime_checkable
class QuestionGenerator(Protocol):
    """Writes ``n`` questions that a response answers, each with an optional noncommittal flag."""

    #: Short, human-readable backend/model name, e.g. ``"openai:gpt-4o-mini"``.
    name: str

    def fingerprint(self) -> dict[str, Any]:
        """Every setting that changes the output (model, prompt, temperature, seed...).

        Used as part of the cache key: two generators with the same fingerprint must give the
        same generations for the same response.
        """
        ...

    async def agenerate(self, response: str, n: int) -> GenerationSet:
        """Return ``n`` generations (unusable ones carry an ``error``)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into a float32 matrix, one row per text."""

    name: str

    def fingerprint(self) -> dict[str, Any]: ...

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape ``(len(texts), dim)``."""
        ...
