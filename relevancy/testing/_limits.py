"""Rate limits for the toy server, shaped like OpenAI's: requests and tokens per minute.

Each model has its own window. A request is admitted when the requests and the tokens admitted
in the last ``window`` seconds (60 by default; a smaller window is a minute on a faster clock,
for tests and benches), plus this one, fit the limits. Its tokens are counted as OpenAI counts
them at admission: the prompt's tokens plus ``max_tokens`` for each of the ``n`` choices (for
embeddings, the input's tokens). Every answer from a limited endpoint carries

``x-ratelimit-limit-requests``, ``x-ratelimit-limit-tokens``
    the limits;
``x-ratelimit-remaining-requests``, ``x-ratelimit-remaining-tokens``
    what is left in the window after this request;
``x-ratelimit-reset-requests``, ``x-ratelimit-reset-tokens``
    when the oldest request (tokens) in the window leaves it, in OpenAI's ``1m2.5s`` format.

A request over a limit is answered 429 with OpenAI's error body (``type`` ``"requests"`` or
``"tokens"``, ``code`` ``"rate_limit_exceeded"``) and, unless ``retry_after`` is off,
``retry-after`` (whole seconds, rounded up) and ``retry-after-ms``.

The server's ``headers`` option (``--header NAME=VALUE``) overrides any of these, or adds its
own, on every chat and embeddings answer, limits on or off: a server that lies
(``x-ratelimit-remaining-requests: nan``) or asks for the impossible (a reset of ``23h``). A
header the reply itself sets (a fault's ``Retry-After``) is the reply's.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from relevancy.testing._faults import Reply, error_reply
from relevancy.testing._toy_model import message_text

__all__ = ["LimitsMixin", "RateLimits", "format_reset"]


def format_reset(seconds: float) -> str:
    """Seconds in OpenAI's reset format: ``"20ms"``, ``"1.5s"``, ``"6m0s"``."""
    seconds = max(seconds, 0.0)
    seconds = math.ceil(seconds * 1000) / 1000  # rounded up: waiting that long is enough
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    rest_text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    return f"{int(minutes)}m{rest_text}" if minutes else rest_text


@dataclass
class _Window:
    """What one model admitted recently: (time, tokens) per request, oldest first."""

    entries: deque[tuple[float, int]] = field(default_factory=deque)
    tokens: int = 0

    def expire(self, now: float, window: float) -> None:
        while self.entries and self.entries[0][0] <= now - window:
            self.tokens -= self.entries.popleft()[1]


class RateLimits:
    """Per-model requests and tokens per window (None: that limit is off).

    :meth:`admit` decides one request; :meth:`set` changes the limits at any time (the
    requests already in the window still count); :attr:`rejected` counts the 429s by type.
    """

    def __init__(
        self,
        rpm: int | None = None,
        tpm: int | None = None,
        *,
        window: float = 60.0,
        retry_after: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if window <= 0:
            raise ValueError("the rate-limit window must be positive")
        self.window = window
        self.retry_after = retry_after
        self._clock = clock
        self._lock = threading.Lock()
        self._models: dict[str, _Window] = {}
        self.rejected: dict[str, int] = {"requests": 0, "tokens": 0}
        self.admitted = 0
        self.rpm: int | None = None
        self.tpm: int | None = None
        self.set(rpm=rpm, tpm=tpm)

    @property
    def active(self) -> bool:
        return self.rpm is not None or self.tpm is not None

    def set(self, *, rpm: int | None = None, tpm: int | None = None) -> None:
        """New limits (None turns that one off); the window's contents are kept."""
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (isinstance(value, bool) or int(value) < 1):
                raise ValueError(f"{name} must be a positive integer (or None)")
        with self._lock:
            self.rpm = None if rpm is None else int(rpm)
            self.tpm = None if tpm is None else int(tpm)

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {
                "rpm": self.rpm,
                "tpm": self.tpm,
                "window": self.window,
                "admitted": self.admitted,
                "rejected": dict(self.rejected),
            }

    def admit(self, model: str, tokens: int) -> tuple[dict[str, str], Reply | None]:
        """The rate-limit headers for a request of ``tokens`` to ``model``, and the 429 reply
        when it is over a limit (None: admitted, and counted in the window)."""
        with self._lock:
            if not self.active:
                return {}, None
            now = self._clock()
            win = self._models.setdefault(model, _Window())
            win.expire(now, self.window)
            used_requests, used_tokens = len(win.entries), win.tokens
            over = None
            if self.rpm is not None and used_requests + 1 > self.rpm:
                over = "requests"
            elif self.tpm is not None and used_tokens + tokens > self.tpm:
                over = "tokens"
            if over is None:
                win.entries.append((now, tokens))
                win.tokens += tokens
                used_requests, used_tokens = used_requests + 1, used_tokens + tokens
                self.admitted += 1
            else:
                self.rejected[over] += 1
            headers = self._headers(win, now, used_requests, used_tokens)
            if over is None:
                return headers, None
            wait = self._wait(win, now, over, tokens)
        limit = self.rpm if over == "requests" else self.tpm
        used = used_requests if over == "requests" else used_tokens
        asked = 1 if over == "requests" else tokens
        unit = "requests per min (RPM)" if over == "requests" else "tokens per min (TPM)"
        message = (
            f"Rate limit reached for {model} in organization org-toy on {unit}: Limit {limit}, "
            f"Used {used}, Requested {asked}. Please try again in {format_reset(wait)}."
        )
        if self.retry_after:
            headers["retry-after"] = str(max(1, math.ceil(wait)))
            headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
        reply = error_reply(429, message, type_=over, code="rate_limit_exceeded", headers=headers)
        return headers, reply

    def _headers(self, win: _Window, now: float, requests: int, tokens: int) -> dict[str, str]:
        oldest = win.entries[0][0] if win.entries else now - self.window
        reset = format_reset(oldest + self.window - now)
        headers: dict[str, str] = {}
        if self.rpm is not None:
            headers["x-ratelimit-limit-requests"] = str(self.rpm)
            headers["x-ratelimit-remaining-requests"] = str(max(self.rpm - requests, 0))
            headers["x-ratelimit-reset-requests"] = reset
        if self.tpm is not None:
            headers["x-ratelimit-limit-tokens"] = str(self.tpm)
            headers["x-ratelimit-remaining-tokens"] = str(max(self.tpm - tokens, 0))
            headers["x-ratelimit-reset-tokens"] = reset
        return headers

    def _wait(self, win: _Window, now: float, over: str, tokens: int) -> float:
        """Seconds until a request like this one would be admitted."""
        if over == "requests":
            assert self.rpm is not None
            # the entry whose leaving makes room for one more request
            index = max(len(win.entries) - self.rpm, 0)
            return win.entries[index][0] + self.window - now if win.entries else 0.0
        assert self.tpm is not None
        if tokens > self.tpm:
            return self.window  # never fits; say a whole window, as OpenAI does
        freed, needed = 0, win.tokens + tokens - self.tpm
        for at, count in win.entries:
            freed += count
            if freed >= needed:
                return at + self.window - now
        return self.window


class LimitsMixin:
    """The server's side: which requests count, and their tokens at admission."""

    limits: RateLimits
    header_overrides: dict[str, str]
    _count: Callable[[str], int]

    def _limit_check(
        self, endpoint: str, body: Any, entry: dict[str, Any]
    ) -> tuple[dict[str, str], Reply | None]:
        """Headers for a chat or embeddings request, and its 429 when over a limit (the tokens
        counted go to ``entry["counted_tokens"]``)."""
        if endpoint not in ("chat", "embeddings"):
            return {}, None
        if not self.limits.active:
            return dict(self.header_overrides), None
        body = body if isinstance(body, dict) else {}
        model = str(body.get("model") or "")
        tokens = self._requested_tokens(endpoint, body)
        entry["counted_tokens"] = tokens
        headers, refused = self.limits.admit(model, tokens)
        headers.update(self.header_overrides)
        if refused is not None:
            refused.headers.update(self.header_overrides)
        return headers, refused

    def _requested_tokens(self, endpoint: str, body: dict[str, Any]) -> int:
        if endpoint == "embeddings":
            items = body.get("input")
            items = [items] if isinstance(items, str) else items if isinstance(items, list) else []
            return sum(
                self._count(i) if isinstance(i, str) else len(i)
                for i in items
                if isinstance(i, (str, list))
            )
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        prompt = sum(
            self._count(message_text(m.get("content"))) for m in messages if isinstance(m, dict)
        )
        n = body.get("n") if isinstance(body.get("n"), int) else 1
        most = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        return prompt + (int(most) * max(int(n or 1), 1) if isinstance(most, int) else 0)
