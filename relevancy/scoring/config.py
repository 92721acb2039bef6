"""One way to build the metric from plain settings, used by the CLI, the dashboard and the bench.

>>> from relevancy.scoring.config import build_metric
>>> metric = build_metric()  # the embedded offline default  # doctest: +SKIP
>>> metric = build_metric(llm="openai:gpt-4o-mini",
...                       embeddings="openai:text-embedding-3-small")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from relevancy.backends import make_embedder, make_generator, parse_spec
from relevancy.backends.cache import Cache
from relevancy.core.sync import run_sync
from relevancy.core.triage import DEFAULT_THRESHOLD
from relevancy.errors import InputError
from relevancy.scoring.metric import AnswerRelevancy

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
    prompt_language: str = "answer",
    max_response_chars: int | None = None,
    adaptive: bool = True,
    min_questions: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> AnswerRelevancy:
    """An :class:`AnswerRelevancy` from backend specs (``"local"``, ``"openai:MODEL"``...).

    ``timeout`` (seconds per request) applies to API backends; ``seed`` to the generator;
    ``prompt_language`` is :class:`AnswerRelevancy`'s (``"answer"`` or ``"question"``), and so
    is ``min_questions`` (the fewest usable questions an ok verdict rests on; default all), and
    ``threshold`` (the "low score" threshold each row's reason is decided at);
    ``max_response_chars`` the characters of each answer the generator is sent (None: its
    default, 2,000 for the embedded model and 20,000 for API models).
    With API backends ``concurrency`` is the most requests at once per model: the number sent
    adapts to the server's rate limit (``adaptive=False``: always ``concurrency``).
    Bad settings raise :class:`relevancy.ConfigError` or :class:`relevancy.InputError` with one
    line naming the fix.
    """
    llm_options: dict[str, Any] = {"seed": seed}
    if max_response_chars is not None:
        if max_response_chars < 1:
            raise InputError(
                f"--max-response-chars must be 1 or more characters, got {max_response_chars}"
            )
        llm_options["max_response_chars"] = int(max_response_chars)
    api = {"timeout": timeout, "concurrency": concurrency, "adaptive": adaptive}
    if parse_spec(llm)[0] != "local":
        llm_options.update(api)
    emb_options: dict[str, Any] = {}
    if parse_spec(embeddings)[0] != "local":
        emb_options.update(api)
    return AnswerRelevancy(
        llm=make_generator(llm, base_url=base_url, api_key=api_key, **llm_options),
        embeddings=make_embedder(embeddings, base_url=base_url, api_key=api_key, **emb_options),
        strictness=strictness,
        noncommittal=noncommittal,
        mode=mode,
        cache=cache,
        concurrency=concurrency,
        prompt_language=prompt_language,
        min_questions=min_questions,
        threshold=threshold,
    )


async def apreflight(metric: AnswerRelevancy) -> None:
    """Fail fast, with one line, when a remote backend is unreachable or its key is refused.

    Each backend checks itself cheaply (``apreflight``: the OpenAI-compatible ones list the
    server's models, no tokens; the embedded models need no check).
    """
    try:
        await metric.llm.apreflight()
        await metric.embeddings.apreflight()
    finally:
        await metric.aclose()


def preflight(metric: AnswerRelevancy) -> None:
    """Blocking :func:`apreflight`."""
    run_sync(apreflight(metric))
