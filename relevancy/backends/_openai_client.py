"""The client side of OpenAI-compatible backends: one ``AsyncOpenAI`` per event loop, errors
in one line without secrets, what the rate controller is told about each error, and the
preflight that says in one line when an endpoint cannot be used at all."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote, urlsplit

from relevancy.backends._ratelimit import Outcome, RateController
from relevancy.backends._ratelimit_registry import controller_for
from relevancy.core.redact import redact, register_secret
from relevancy.errors import BackendUnreachable, ConfigError

_NO_KEY_NEEDED = "no-key-needed"
#: the preflight's tries before a server is said to be unreachable, and the pause between
PREFLIGHT_TRIES = 2
PREFLIGHT_PAUSE = 0.5


def make_async_client(
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    max_retries: int,
    azure: bool = False,
    api_version: str | None = None,
) -> Any:
    """An ``openai.AsyncOpenAI`` (or Azure) client; a clear ConfigError when no key is found.
    A password in ``base_url`` (``http://user:PW@host/v1``) is registered for redaction."""
    import openai

    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    try:
        password = urlsplit(base_url or "").password
    except ValueError:  # a malformed address: the client says so
        password = None
    if password:
        register_secret(password)
        register_secret(unquote(password))
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


def _message_of(exc: Any) -> str:
    """The error message of an API error's body (``{"error": {"message": ...}}``), else ""."""
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else ""


def classify_error(exc: BaseException) -> Outcome:
    """What a failed request was, for the rate controller: a 429, transient, or final."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        headers = exc.response.headers
        if exc.status_code == 429 and getattr(exc, "code", None) != "insufficient_quota":
            return Outcome("throttled", headers, redact(_message_of(exc)))
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


def http_response_class() -> type:
    """The HTTP response class the installed ``openai`` SDK hands back for
    ``client.post(..., cast_to=Response)`` (``httpx2.Response`` in SDK 3, ``httpx.Response``
    before): the module of the SDK's own default client's base class."""
    import importlib

    import openai

    for cls in openai.DefaultAsyncHttpxClient.__mro__:
        if cls.__name__ == "AsyncClient" and not cls.__module__.startswith("openai"):
            return importlib.import_module(cls.__module__.split(".")[0]).Response
    raise RuntimeError("cannot tell which HTTP library the openai SDK uses")  # pragma: no cover


def read_json_reply(raw: Any) -> Any:
    """A JSON reply as nested attribute objects (``reply.choices[0].message.content``), read
    without the SDK's model construction; a body that is not JSON raises ``ValueError``."""
    return json.loads(raw.content, object_hook=lambda d: SimpleNamespace(**d))


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

    async def _send(self, request: Any, cost: int = 0, *, read: Any = None) -> Any:
        """``request(client)`` (a ``with_raw_response`` call, or a ``client.post`` whose answer
        ``read`` turns into the parsed reply) through the rate controller; the parsed answer.
        ``cost``: the tokens the server counts it at admission."""

        async def send() -> tuple[Any, Any]:
            raw = await request(self.client().with_options(max_retries=0))
            return raw.headers, (read(raw) if read is not None else raw.parse())

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
        for attempt in range(PREFLIGHT_TRIES):
            try:
                await self.client().with_options(max_retries=0, timeout=15.0).models.list()
                return
            except openai.AuthenticationError:
                raise ConfigError(
                    f"{base_url} refused the API key: set a valid OPENAI_API_KEY (or --api-key)"
                ) from None
            except openai.APIConnectionError as exc:
                # one dropped or refused connection is not yet an unreachable server
                if attempt + 1 < PREFLIGHT_TRIES:
                    await asyncio.sleep(PREFLIGHT_PAUSE)
                    continue
                raise BackendUnreachable(
                    describe_api_error(exc, base_url)
                    + f" ({PREFLIGHT_TRIES} tries): check --base-url and that the server "
                    "is running"
                ) from None
            except (openai.APIError, ValueError, TypeError, AttributeError):
                # e.g. 404 (the server has no /models) or a malformed body: it answers; real
                # requests will tell
                return
