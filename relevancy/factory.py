"""One way to build the metric from plain settings, used by the CLI, the dashboard and the bench.

>>> from relevancy.factory import build_metric
>>> metric = build_metric()  # the embedded offline default  # doctest: +SKIP
>>> metric = build_metric(llm="openai:gpt-4o-mini",
...                       embeddings="openai:text-embedding-3-small")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from relevancy._cache import Cache
from relevancy._metric import AnswerRelevancy
from relevancy._sync import run_sync
from relevancy.backends import make_embedder, make_generator, parse_spec

__all__ = ["build_metric", "preflight", "apreflight", "EMBEDDED_NOTE"]

#: What the embedded default is for, said wherever its scores are shown.
EMBEDDED_NOTE = (
    "The embedded default (SmolLM2-135M + MiniLM) is for trying the tool offline: use an API "
    "model for scores you act on"
)


def build_metric(
    *,
    llm: str = "local",
    embeddings: str = "local",
    base_url: str | None = None,
    api_key: str | None = None,
    strictness: int = 3,
    noncommittal: str = "auto",
    mode: str = "auto",
    seed: int = 0,
    timeout: float = 60.0,
    cache: Cache | bool | str | None = True,
    concurrency: int | None = None,
) -> AnswerRelevancy:
    """An :class:`AnswerRelevancy` from backend specs (``"local"``, ``"openai:MODEL"``...).

    ``timeout`` (seconds per request) applies to API backends; ``seed`` to the generator.
    Bad settings raise :class:`relevancy.ConfigError` or :class:`relevancy.InputError` with one
    line naming the fix.
    """
    llm_options: dict[str, Any] = {"seed": seed}
    if parse_spec(llm)[0] != "local":
        llm_options["timeout"] = timeout
    emb_options: dict[str, Any] = {}
    if parse_spec(embeddings)[0] != "local":
        emb_options["timeout"] = timeout
    return AnswerRelevancy(
        llm=make_generator(llm, base_url=base_url, api_key=api_key, **llm_options),
        embeddings=make_embedder(embeddings, base_url=base_url, api_key=api_key, **emb_options),
        strictness=strictness,
        noncommittal=noncommittal,
        mode=mode,
        cache=cache,
        concurrency=concurrency,
    )


async def apreflight(metric: AnswerRelevancy) -> None:
    """Fail fast, with one line, when a remote backend is unreachable or its key is refused.

    Each backend that can check itself cheaply (an ``apreflight`` method: the OpenAI-compatible
    ones list the server's models, no tokens) does; the embedded models need no check.
    """
    try:
        for backend in (metric.llm, metric.embeddings):
            check = getattr(backend, "apreflight", None)
            if check is not None:
                await check()
    finally:
        await metric.aclose()


def preflight(metric: AnswerRelevancy) -> None:
    """Blocking :func:`apreflight`."""
    run_sync(apreflight(metric))
