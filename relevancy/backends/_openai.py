"""Any OpenAI-compatible endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp server) via ``openai``.

Generation asks for all N questions in one request (``n=N``). Servers that ignore ``n`` (the
llama.cpp server, Ollama) return fewer choices; the backend then tops up with further requests
until it has N or a bounded number of requests has been spent. Every generation has its slot
``j`` and its seed ``seed + j`` (a request for slots ``j``.. is sent with seed ``seed + j``), the
same whether a reply came back whole, short or malformed, so a rerun asks for the same
questions whatever faults happened. Once a server is seen to ignore ``n``, a row's N requests
are sent together: a server that runs one request at a time then serves them back to back
with identical prompts, so all but the first reuse the whole prompt from its cache instead of
re-reading the row after another row's request (a server with several slots runs them in
parallel).
Structured output is requested with a JSON schema; a server that rejects it is asked for JSON
mode, then for plain text, which is parsed tolerantly. The mode that worked is remembered (for
the whole generator: rows scored at once that are all refused step back one mode, not one each).

Every request goes through the model's :class:`~relevancy.backends._ratelimit.RateController`
(shared by every backend that talks to that model at that server): it sizes the requests sent at
once to what the rate limit allows (adaptive, the default; ``adaptive=False`` keeps it at
``concurrency``), waits out 429s (a refused request is sent again, within a bounded time) and
retries other transient errors (5xx, timeouts, dropped connections) ``max_retries`` times with
a backoff that honours Retry-After. The SDK's own retries are off, so the controller sees every
429 and every ``x-ratelimit-*`` header.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from relevancy.backends._openai_client import (
    _ClientPerLoop,
    describe_api_error,
    http_response_class,
    make_async_client,
    read_json_reply,
    share_by_length,
)
from relevancy.backends._protocols import EmbedderBase, GeneratorBase
from relevancy.core.prompt import (
    EXAMPLES,
    INSTRUCTION,
    chat_messages,
    output_schema,
    parse_output,
)
from relevancy.core.redact import redact
from relevancy.core.result import Generation, GenerationSet
from relevancy.errors import EmbeddingError, GenerationError

__all__ = ["OpenAIGenerator", "OpenAIEmbedder", "make_async_client", "describe_api_error"]

#: characters of an answer an API generator is sent by default (about 5,000 tokens)
API_RESPONSE_CHARS = 20_000
_MODES = ("json_schema", "json_object", "text")


class OpenAIGenerator(_ClientPerLoop, GeneratorBase):
    """Question generator for any OpenAI-compatible chat completions endpoint.

    Parameters
    ----------
    model : str
        Model (or Azure deployment) name.
    base_url, api_key : str or None
        Default to the SDK's environment variables (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``).
    temperature : float
        Above 0 so the N questions differ (Ragas' old near-zero setting gave N identical ones).
    seed : int
        Sent with each request (request ``k`` uses ``seed + k``) for servers that honour it.
    use_n : bool
        Ask for all N questions in one request. Servers that return fewer are topped up; once
        a server is seen to return one choice whatever ``n`` is, a row's requests are sent
        together (see the module docstring).
    max_response_chars : int or None
        The characters of an answer sent to the model (default 20,000, about 5,000 tokens);
        a longer answer is cut there and its row's ``notes`` say so. None sends it whole.
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.7,
        seed: int = 0,
        max_tokens: int = 200,
        timeout: float = 60.0,
        max_retries: int = 3,
        use_n: bool = True,
        azure: bool = False,
        client: Any = None,
        max_response_chars: int | None = API_RESPONSE_CHARS,
        concurrency: int | None = None,
        adaptive: bool = True,
    ) -> None:
        self.model = model
        self.max_response_chars = max_response_chars
        self.max_retries = max_retries
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.use_n = use_n
        self._injected = client is not None
        self._factory = lambda: make_async_client(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            azure=azure,
        )
        self._client = client or self._factory()
        self.base_url = str(self._client.base_url).rstrip("/")
        self.name = f"{'azure' if azure else 'openai'}:{model}"
        self._response_class = http_response_class()
        self._limit(model, concurrency, adaptive)
        self._mode_index = 0
        # Set when a request for several choices got one back (llama.cpp's server, Ollama).
        self._ignores_n = False

    def fingerprint(self) -> dict[str, Any]:
        prompt = repr((INSTRUCTION, [(e.response, e.output.model_dump()) for e in EXAMPLES]))
        return {
            "backend": "openai",
            "base_url": self.base_url,
            "model": self.model,
            "prompt": hashlib.sha256(prompt.encode()).hexdigest()[:16],
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            # a cap other than the default changes what long answers are sent
            **(
                {"max_response_chars": self.max_response_chars}
                if self.max_response_chars != API_RESPONSE_CHARS
                else {}
            ),
        }

    #: ``agenerate(..., language=CODE)`` asks for questions in that language
    supports_language = True

    def language_fingerprint(self, language: str) -> dict[str, Any]:
        """What asking for ``language`` adds to the cache key: the code and its prompt."""
        messages = chat_messages("", language=language)
        digest = hashlib.sha256(repr(messages).encode()).hexdigest()[:16]
        return {"language": language, "language_prompt": digest}

    async def _request(self, response: str, n: int, seed: int, language: str | None = None) -> Any:
        import openai

        while True:
            mode = _MODES[self._mode_index]
            kwargs: dict[str, Any] = {}
            if mode == "json_schema":
                kwargs["response_format"] = {"type": "json_schema", "json_schema": output_schema()}
            elif mode == "json_object":
                # "schema" is used by llama.cpp's server to constrain decoding; others ignore it.
                kwargs["response_format"] = {
                    "type": "json_object",
                    "schema": output_schema()["schema"],
                }
            if n > 1:
                kwargs["n"] = n
            sent = response[: self.max_response_chars] if self.max_response_chars else response
            messages = chat_messages(sent, language=language)
            # what OpenAI counts at admission: the prompt, and max_tokens for each choice
            cost = len(json.dumps(messages)) // 4 + self.max_tokens * n
            body = {
                "model": self.model,
                "messages": messages,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "seed": seed,
                **kwargs,
            }
            try:
                # The SDK's public client.post, not chat.completions.create: create walks the
                # messages through its type transforms and builds a model of the reply, about
                # 2 ms of CPU a request for this prompt, which bounded a long run's rows/s.
                return await self._send(
                    lambda client, b=body: client.post(
                        "/chat/completions", body=b, cast_to=self._response_class
                    ),
                    cost,
                    read=read_json_reply,
                )
            except openai.APIStatusError as exc:
                # A server that cannot do this structured-output mode: try the next one. Most
                # answer 400; llama-cpp-python's server answers 500 with a validation error.
                if (
                    mode != "text"
                    and exc.status_code in (400, 422, 500)
                    and _about_response_format(exc)
                ):
                    # Step past the mode this request tried, not past the shared index:
                    # concurrent requests (one per row) that were all sent in the same mode
                    # are all refused, and each must not push the index one step further.
                    self._mode_index = max(self._mode_index, _MODES.index(mode) + 1)
                    continue
                raise

    async def agenerate(self, response: str, n: int, language: str | None = None) -> GenerationSet:
        """N generations for ``response``, on one seed schedule whatever the server did.

        Generation ``j`` (a slot, 0 to N-1) always comes from seed ``seed + j``: a request for
        the slots ``j`` to ``j + m - 1`` is sent with seed ``seed + j`` and ``n=m``, its choice
        ``i`` filling slot ``j + i``. A reply that comes back short (fewer choices, an empty or
        unusable one, a malformed body) leaves its slots empty, and the top-up asks for exactly
        those slots with exactly those seeds, so a rerun gets the same questions whatever
        faults happened on the way (on a server whose choice ``i`` under seed ``s`` is what it
        returns under seed ``s + i``: llama.cpp's server and Ollama, which return one choice,
        and the toy server with ``seeded=True``).
        """
        import openai

        started = time.perf_counter()
        slots: list[Generation | None] = [None] * n
        failed: list[Generation] = []
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        requests = 0
        # Bounded top-ups: servers that ignore n, drop choices, or send unusable output.
        budget = 2 * n + 1
        last_error: str | None = None
        while any(g is None for g in slots) and requests < budget:
            batch = self._plan(slots)[: budget - requests]
            outcomes = await asyncio.gather(
                *(
                    self._request(response, size, self.seed + first, language)
                    for first, size in batch
                ),
                return_exceptions=True,
            )
            stop = malformed = False
            for (first, size), outcome in zip(batch, outcomes):
                if isinstance(outcome, openai.APIError):
                    # the SDK has already retried what was retryable
                    last_error = describe_api_error(outcome, self.base_url)
                    stop = True
                    continue
                if isinstance(
                    outcome, (json.JSONDecodeError, ValueError, TypeError, AttributeError)
                ):
                    # A malformed body (not retried by the SDK): try again after a short pause.
                    last_error = describe_api_error(outcome, self.base_url)
                    requests += 1
                    malformed = True
                    continue
                if isinstance(outcome, BaseException):
                    raise outcome
                requests += 1
                choices = getattr(outcome, "choices", None) or []
                counts = getattr(outcome, "usage", None)
                if counts is not None:
                    usage["prompt_tokens"] += getattr(counts, "prompt_tokens", 0) or 0
                    usage["completion_tokens"] += getattr(counts, "completion_tokens", 0) or 0
                if size > 1 and choices:
                    self._ignores_n = len(choices) == 1
                if not choices:
                    last_error = f"{self.base_url} returned no choices"
                    continue
                for i, choice in enumerate(choices[:size]):
                    if slots[first + i] is not None:
                        continue  # filled by another request of this round
                    message = getattr(choice, "message", None)
                    content = getattr(message, "content", None) if message is not None else None
                    try:
                        parsed = parse_output(content or "")
                    except ValueError as exc:
                        failed.append(Generation("", None, redact(f"unusable output: {exc}")))
                        continue
                    slots[first + i] = Generation(parsed.question, bool(parsed.noncommittal))
            if stop:
                break
            if malformed:
                await asyncio.sleep(min(0.25 * requests, 2.0))
        good = [g for g in slots if g is not None]
        if not good and not failed:
            raise GenerationError(last_error or f"{self.base_url} returned no generations")
        generations = good[:n]
        missing = n - len(generations)
        if missing:
            fillers = failed or [Generation("", None, last_error or "no generation returned")]
            if len(good) + len(failed) < n and last_error:
                fillers = [*failed, Generation("", None, last_error)]
            generations += [fillers[i % len(fillers)] for i in range(missing)]
        return GenerationSet(
            generations=generations,
            cacheable=all(g.error is None for g in generations),
            model=self.model,
            usage=usage,
            requests=requests,
            seconds=time.perf_counter() - started,
        )

    def _plan(self, slots: Sequence[Generation | None]) -> list[tuple[int, int]]:
        """The next round's requests as ``(first slot, n)``: one per run of empty slots, or
        with ``use_n`` off one per empty slot. A server seen to ignore n gets a run's requests
        at once, one slot each (the first still asks for the whole run, so a server that does
        honour n clears the hint): a server that runs one request at a time then serves one
        row's requests back to back, their prompts identical, so all but the first reuse its
        whole prompt from the cache."""
        empty = [j for j, g in enumerate(slots) if g is None]
        if not self.use_n:
            return [(j, 1) for j in empty]
        runs: list[tuple[int, int]] = []
        for j in empty:
            if runs and runs[-1][0] + runs[-1][1] == j:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((j, 1))
        if not self._ignores_n:
            return runs
        return [
            (j, size if k == 0 else 1)
            for first, size in runs
            for k, j in enumerate(range(first, first + size))
        ]


def _about_response_format(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(w in text for w in ("response_format", "json_schema", "json_object", "schema"))


class OpenAIEmbedder(_ClientPerLoop, EmbedderBase):
    """Embeddings from any OpenAI-compatible ``/embeddings`` endpoint, requested in batches."""

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 256,
        dimensions: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        azure: bool = False,
        client: Any = None,
        concurrency: int | None = None,
        adaptive: bool = True,
    ) -> None:
        self.model = model
        self.batch_size = batch_size
        self.dimensions = dimensions
        self.max_retries = max_retries
        self._injected = client is not None
        self._factory = lambda: make_async_client(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            azure=azure,
        )
        self._client = client or self._factory()
        self.base_url = str(self._client.base_url).rstrip("/")
        self.name = f"{'azure' if azure else 'openai'}:{model}"
        self._limit(model, concurrency, adaptive)

    def fingerprint(self) -> dict[str, Any]:
        return {
            "backend": "openai",
            "base_url": self.base_url,
            "model": self.model,
            "dimensions": self.dimensions,
        }

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return (await self.aembed_counted(texts))[0]

    async def aembed_counted(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int] | None]:
        """Vectors, and each text's tokens: the API reports them per request, so a request's
        tokens are shared out among its texts by length (None when the server reports none)."""
        import openai

        texts = [t if t.strip() else " " for t in map(str, texts)]
        rows: list[np.ndarray] = []
        counts: list[int] | None = []
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            kwargs: dict[str, Any] = {}
            if self.dimensions:
                kwargs["dimensions"] = self.dimensions
            for attempt in range(self.max_retries + 1):
                try:
                    vectors, used = await self._embed_chunk(chunk, kwargs, rows)
                    rows.append(vectors)
                    if counts is not None and used is not None:
                        counts += share_by_length(used, chunk)
                    else:
                        counts = None
                    break
                except openai.APIError as exc:  # the SDK has already retried what it could
                    raise EmbeddingError(describe_api_error(exc, self.base_url)) from None
                except (EmbeddingError, json.JSONDecodeError, ValueError, TypeError) as exc:
                    # A malformed or mis-shaped body: not retried by the SDK, so retry here.
                    if attempt == self.max_retries:
                        if isinstance(exc, EmbeddingError):
                            raise
                        raise EmbeddingError(describe_api_error(exc, self.base_url)) from None
                    await asyncio.sleep(min(0.25 * (attempt + 1), 2.0))
        if not rows:
            return np.zeros((0, 0), dtype=np.float32), []
        return np.vstack(rows), counts

    async def _embed_chunk(
        self, chunk: list[str], kwargs: dict[str, Any], previous: list[np.ndarray]
    ) -> tuple[np.ndarray, int | None]:
        result = await self._send(
            lambda client: client.embeddings.with_raw_response.create(
                model=self.model, input=chunk, **kwargs
            ),
            sum(len(text) for text in chunk) // 4 + 1,
        )
        data = getattr(result, "data", None)
        if not data:
            raise EmbeddingError(f"{self.base_url} returned no embeddings")
        if len(data) != len(chunk):
            raise EmbeddingError(
                f"{self.base_url} returned {len(data)} embeddings for {len(chunk)} texts"
            )
        ordered = sorted(data, key=lambda d: d.index)
        dims = {len(d.embedding) for d in ordered}
        if len(dims) != 1 or (previous and previous[0].shape[1] not in dims):
            raise EmbeddingError(
                f"{self.base_url} returned embeddings of mixed dimensions {sorted(dims)}"
            )
        usage = getattr(result, "usage", None)
        used = getattr(usage, "prompt_tokens", None) if usage is not None else None
        return (
            np.asarray([d.embedding for d in ordered], dtype=np.float32),
            int(used) if isinstance(used, (int, float)) else None,
        )
