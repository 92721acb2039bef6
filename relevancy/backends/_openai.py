"""Any OpenAI-compatible endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp server) via ``openai``.

Generation asks for all N questions in one request (``n=N``). Servers that ignore ``n`` (the
llama.cpp server, Ollama) return fewer choices; the backend then tops up with further requests,
each with its own seed, until it has N or a bounded number of requests has been spent. Once a
server is seen to ignore ``n``, a row's N requests are sent together: a server that runs one
request at a time then serves them back to back with identical prompts, so all but the first
reuse the whole prompt from its cache instead of re-reading the row after another row's
request (a server with several slots runs them in parallel). The N questions stay N
independent samples, request ``k`` with seed ``seed + k``, as before.
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
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from relevancy.backends._protocols import EmbedderBase, GeneratorBase
from relevancy.backends._ratelimit import Outcome, RateController, controller_for
from relevancy.core.prompt import (
    EXAMPLES,
    INSTRUCTION,
    chat_messages,
    output_schema,
    parse_output,
)
from relevancy.core.redact import redact, register_secret
from relevancy.core.result import Generation, GenerationSet
from relevancy.errors import ConfigError, EmbeddingError, GenerationError

__all__ = ["OpenAIGenerator", "OpenAIEmbedder", "make_async_client", "describe_api_error"]

_NO_KEY_NEEDED = "no-key-needed"
_MODES = ("json_schema", "json_object", "text")


def make_async_client(
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    max_retries: int,
    azure: bool = False,
    api_version: str | None = None,
) -> Any:
    """An ``openai.AsyncOpenAI`` (or Azure) client; a clear ConfigError when no key is found."""
    import openai

    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    if azure:
        api_key = api_key or os.environ.get("AZURE_OPENAI_API_KEY")
        endpoint = base_url or os.environ.get("AZURE_OPENAI_ENDPOINT")
        if not api_key or not endpoint:
            raise ConfigError(
                "Azure OpenAI needs AZURE_OPENAI_API_KEY and AZURE_OPENAI_ENDPOINT "
                "(or --api-key and --base-url)"
            )
        register_secret(api_key)
        return openai.AsyncAzureOpenAI(
            api_key=api_key,
            azure_endpoint=endpoint,
            api_version=api_version or os.environ.get("OPENAI_API_VERSION", "2024-10-21"),
            timeout=timeout,
            max_retries=max_retries,
        )
    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    if not api_key:
        if base_url is None:
            raise ConfigError(
                "the OpenAI backend needs an API key: set OPENAI_API_KEY (or pass --api-key), "
                "or point --base-url at an OpenAI-compatible server"
            )
        api_key = _NO_KEY_NEEDED  # local servers (llama.cpp, Ollama, vLLM) accept anything
    register_secret(api_key)
    return openai.AsyncOpenAI(
        api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
    )


def share_by_length(total: int, texts: Sequence[str]) -> list[int]:
    """Split ``total`` tokens among ``texts`` in proportion to their length (largest remainder,
    so the shares add up to ``total``)."""
    lengths = [max(len(t), 1) for t in texts]
    whole = sum(lengths)
    exact = [total * n / whole for n in lengths]
    shares = [int(x) for x in exact]
    by_remainder = sorted(range(len(texts)), key=lambda i: exact[i] - shares[i], reverse=True)
    for i in by_remainder[: total - sum(shares)]:
        shares[i] += 1
    return shares


def describe_api_error(exc: BaseException, where: str) -> str:
    """One redacted line naming what went wrong, e.g. ``HTTP 503 from http://...: overloaded``."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        text = f"timed out talking to {where}"
    elif isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        text = f"cannot reach {where}" + (f" ({type(cause).__name__})" if cause else "")
    elif isinstance(exc, openai.APIStatusError):
        message = ""
        try:
            body = exc.response.json()
            message = body.get("error", {}).get("message", "") if isinstance(body, dict) else ""
        except Exception:
            message = ""
        text = f"HTTP {exc.status_code} from {where}" + (f": {message[:200]}" if message else "")
        if exc.status_code == 401:
            text += " (check the API key)"
    elif isinstance(exc, (openai.APIResponseValidationError, json.JSONDecodeError, ValueError)):
        text = f"malformed response from {where}: {str(exc)[:200]}"
    else:
        text = f"{type(exc).__name__} from {where}: {str(exc)[:200]}"
    return redact(text)


def classify_error(exc: BaseException) -> Outcome:
    """What a failed request was, for the rate controller: a 429, transient, or final."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        headers = exc.response.headers
        if exc.status_code == 429 and getattr(exc, "code", None) != "insufficient_quota":
            return Outcome("throttled", headers)
        should = (headers.get("x-should-retry") or "").lower()
        if should in ("true", "false"):
            return Outcome("retry" if should == "true" else "fatal", headers)
        if exc.status_code in (408, 409) or exc.status_code >= 500:
            return Outcome("retry", headers)
        return Outcome("fatal", headers)
    if isinstance(exc, openai.APIConnectionError):  # timeouts too
        return Outcome("retry")
    return Outcome("fatal")


def _total_tokens(answer: Any) -> int:
    usage = getattr(answer, "usage", None)
    total = getattr(usage, "total_tokens", None) if usage is not None else None
    return int(total) if isinstance(total, (int, float)) else 0


class _ClientPerLoop:
    """Holds an ``openai`` async client per event loop.

    An async HTTP client's connections belong to the event loop that opened them; the metric's
    blocking methods run a fresh loop per call, so each loop gets its own client, closed by
    :meth:`aclose` when the loop is done with it.
    """

    _client: Any
    _factory: Any
    _loop: Any = None
    _injected: bool = False
    rate: RateController
    max_retries: int = 3

    def _limit(self, model: str, concurrency: int | None, adaptive: bool) -> None:
        """Share the rate controller of ``model`` at this server (``concurrency``: its most)."""
        self.rate = controller_for(self.base_url, model, maximum=concurrency, adaptive=adaptive)  # type: ignore[attr-defined]

    @property
    def max_concurrency(self) -> int:
        """The most requests at once (``--concurrency``)."""
        return self.rate.maximum

    async def _send(self, request: Any, cost: int = 0) -> Any:
        """``request(client)`` (a ``with_raw_response`` call) through the rate controller;
        the parsed answer. ``cost``: the tokens the server counts it at admission."""

        async def send() -> tuple[Any, Any]:
            raw = await request(self.client().with_options(max_retries=0))
            return raw.headers, raw.parse()

        _, answer = await self.rate.call(
            send,
            classify_error,
            headers_of=lambda pair: pair[0],
            tokens_of=lambda pair: _total_tokens(pair[1]),
            max_retries=self.max_retries,
            cost=cost,
        )
        return answer

    def client(self) -> Any:
        if self._injected:
            return self._client
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            self._client, self._loop = self._factory(), loop
        return self._client

    async def aclose(self) -> None:
        """Close the connections opened in the running event loop."""
        if self._injected or self._loop is not asyncio.get_running_loop():
            return
        await self._client.close()
        self._client, self._loop = self._factory(), None

    async def apreflight(self) -> None:
        """Raise a one-line ConfigError when this endpoint cannot be used at all.

        Lists the server's models (cheap, no tokens). A server without ``/models`` is fine; an
        unreachable server or a refused key is not.
        """
        import openai

        base_url = self.base_url  # type: ignore[attr-defined]
        try:
            # a dropped connection or a 5xx is retried (as a request would be); an unreachable
            # server or a refused key is still a one-line error, after them
            await self.client().with_options(max_retries=2, timeout=15.0).models.list()
        except openai.AuthenticationError:
            raise ConfigError(
                f"{base_url} refused the API key: set a valid OPENAI_API_KEY (or --api-key)"
            ) from None
        except openai.APIConnectionError as exc:
            raise ConfigError(
                describe_api_error(exc, base_url) + ": check --base-url and that the server "
                "is running"
            ) from None
        except (openai.APIError, ValueError):
            return  # e.g. 404 or a malformed list: no usable /models; real requests will tell


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
        concurrency: int | None = None,
        adaptive: bool = True,
    ) -> None:
        self.model = model
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
            messages = chat_messages(response, language=language)
            # what OpenAI counts at admission: the prompt, and max_tokens for each choice
            cost = len(json.dumps(messages)) // 4 + self.max_tokens * n
            try:
                return await self._send(
                    lambda client, kw=kwargs, msgs=messages: (
                        client.chat.completions.with_raw_response.create(
                            model=self.model,
                            messages=msgs,
                            temperature=self.temperature,
                            max_tokens=self.max_tokens,
                            seed=seed,
                            **kw,
                        )
                    ),
                    cost,
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
        import openai

        started = time.perf_counter()
        good: list[Generation] = []
        failed: list[Generation] = []
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        requests = 0
        # Bounded top-ups: servers that ignore n, drop choices, or send unusable output.
        budget = 2 * n + 1
        last_error: str | None = None
        while len(good) < n and requests < budget:
            want = n - len(good) if self.use_n else 1
            # A server seen to ignore n gets the missing requests at once (request k keeps seed
            # + k): a server that runs one request at a time then serves one row's requests
            # back to back, their prompts identical, so all but the first reuse its whole
            # prompt from the cache; a server with several slots runs them in parallel. The
            # first still asks for all, so a server that does honour n clears the hint.
            sizes = [want] + [1] * (want - 1) if self._ignores_n and want > 1 else [want]
            sizes = sizes[: budget - requests]
            seeds = [self.seed + requests + k for k in range(len(sizes))]
            outcomes = await asyncio.gather(
                *(
                    self._request(response, size, seed, language)
                    for size, seed in zip(sizes, seeds)
                ),
                return_exceptions=True,
            )
            stop = malformed = False
            for size, outcome in zip(sizes, outcomes):
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
                for choice in choices[:size]:
                    message = getattr(choice, "message", None)
                    content = getattr(message, "content", None) if message is not None else None
                    try:
                        parsed = parse_output(content or "")
                    except ValueError as exc:
                        failed.append(Generation("", None, redact(f"unusable output: {exc}")))
                        continue
                    good.append(Generation(parsed.question, bool(parsed.noncommittal)))
            if stop:
                break
            if malformed:
                await asyncio.sleep(min(0.25 * requests, 2.0))
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
