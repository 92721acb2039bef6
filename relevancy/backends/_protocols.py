"""What the metric asks of a backend: two protocols, and base classes that fill in the defaults.

A question generator writes ``n`` questions a response answers; an embedder turns texts into
vectors. The protocols list every attribute and method the metric, the cache and the CLI use,
so nothing is probed with ``getattr``; :func:`check_backend` says in one line what a backend
lacks. A new backend subclasses :class:`GeneratorBase` or :class:`EmbedderBase` and overrides
what differs from the defaults (an API model: not embedded, no language, no limit...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from relevancy.core.result import GenerationSet
from relevancy.errors import ConfigError

__all__ = [
    "QuestionGenerator",
    "Embedder",
    "GeneratorBase",
    "EmbedderBase",
    "check_backend",
]


@runtime_checkable
class QuestionGenerator(Protocol):
    """Writes ``n`` questions that a response answers, each with an optional noncommittal flag."""

    #: short, human-readable backend/model name, e.g. ``"openai:gpt-4o-mini"``
    name: str
    #: an embedded offline model (``relevancy.core.modes.resolve_mode``, default concurrency)
    embedded: bool
    #: ``agenerate(..., language=CODE)`` asks for questions in that language
    supports_language: bool
    #: sample ``i`` of a row is drawn with seed ``seed + i`` (repeats space their seeds by N);
    #: None: the generator takes no seed, so scoring again gives the same questions
    seed: int | None
    #: responses longer than this are cut for the generator (None: no cut); the row says so
    max_response_chars: int | None

    def fingerprint(self) -> dict[str, Any]:
        """Every setting that changes the output (model, prompt, temperature, seed...): part of
        the cache key, so two generators with the same fingerprint give the same generations."""
        ...

    def language_fingerprint(self, language: str) -> dict[str, Any]:
        """What asking for ``language`` adds to the cache key."""
        ...

    async def agenerate(self, response: str, n: int, language: str | None = None) -> GenerationSet:
        """``n`` generations (unusable ones carry an ``error``); in ``language`` when given."""
        ...

    async def apreflight(self) -> None:
        """Check the backend can answer (a server that is up, a key that works); raise a
        :class:`relevancy.errors.BackendError` that says what to fix otherwise."""
        ...

    async def aclose(self) -> None:
        """Close connections opened in the running event loop."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into a float32 matrix, one row per text."""

    name: str
    embedded: bool
    #: similarity to an evasive exemplar at which the exemplar detector fires, for this
    #: embedder's range of cosines (None: the metric's default, MiniLM's)
    exemplar_threshold: float | None

    def fingerprint(self) -> dict[str, Any]: ...

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape ``(len(texts), dim)``."""
        ...

    async def aembed_counted(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int] | None]:
        """The vectors and each text's tokens as the backend counted them (None: not counted)."""
        ...

    async def apreflight(self) -> None: ...

    async def aclose(self) -> None: ...


class GeneratorBase:
    """Defaults for a question generator: an API-like model that cannot be asked for a
    language, has no response limit and needs no preflight or closing."""

    name: str = "generator"
    embedded: bool = False
    supports_language: bool = False
    seed: int | None = None
    max_response_chars: int | None = None

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": type(self).__name__, "name": self.name}

    def language_fingerprint(self, language: str) -> dict[str, Any]:
        return {"language": language}

    async def agenerate(self, response: str, n: int, language: str | None = None) -> GenerationSet:
        raise NotImplementedError

    async def apreflight(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class EmbedderBase:
    """Defaults for an embedder: tokens not counted, no preflight or closing, the default
    exemplar threshold."""

    name: str = "embedder"
    embedded: bool = False
    exemplar_threshold: float | None = None

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": type(self).__name__, "name": self.name}

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    async def aembed_counted(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int] | None]:
        return await self.aembed(texts), None

    async def apreflight(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def check_backend(backend: object, role: str) -> None:
    """Raise :class:`ConfigError` naming what ``backend`` lacks to be a ``role`` (``"llm"`` or
    ``"embeddings"``)."""
    protocol = QuestionGenerator if role == "llm" else Embedder
    if isinstance(backend, protocol):
        return
    members = [m for m in dir(protocol) if not m.startswith("_")]
    members += list(getattr(protocol, "__annotations__", {}))
    missing = sorted({m for m in members if not hasattr(backend, m)})
    base = "GeneratorBase" if role == "llm" else "EmbedderBase"
    raise ConfigError(
        f"{type(backend).__name__} is not a {'question generator' if role == 'llm' else 'embedder'}"
        f": it lacks {', '.join(missing)}; subclass relevancy.backends.{base}"
    )
