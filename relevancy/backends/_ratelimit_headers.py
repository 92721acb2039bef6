"""What a server says of its rate limit, as the rate controller reads it: a failed request's
:class:`Outcome`, the headers (``retry-after``, ``x-ratelimit-remaining-*``,
``x-ratelimit-reset-*``) and :class:`RateLimitedError`.

A header whose value is not a finite number (``nan``, ``inf``, ``1e999``, text) is treated as
absent: a server that lies that way says nothing we can act on, and taking it at its word
either crashes the arithmetic or waits forever. :func:`quote` keeps the server's own words for
the message of a row that fails because of them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from relevancy.errors import GenerationError

__all__ = [
    "Outcome",
    "RateLimitedError",
    "describe_wait",
    "header_number",
    "parse_reset",
    "quote",
    "retry_after",
]


class RateLimitedError(GenerationError):
    """A request still refused by the server's rate limit after the longest wait allowed."""


@dataclass
class Outcome:
    """What a failed request was, as the caller reads it.

    ``kind``: ``"throttled"`` (a 429), ``"retry"`` (transient: retry after a backoff) or
    ``"fatal"`` (raise it). ``headers``: the response's headers when there was one;
    ``message``: what the server said (a 429's error message), quoted when a row fails of it.
    """

    kind: str
    headers: Mapping[str, str] | None = None
    message: str = ""


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def parse_reset(text: str | None) -> float | None:
    """Seconds from OpenAI's reset format (``"20ms"``, ``"1.5s"``, ``"6m0s"``, ``"1h2m"``) or a
    plain number of seconds; None for anything else (``nan`` and ``inf`` included)."""
    if not text:
        return None
    text = str(text).strip()
    value = _finite(text)
    if value is not None:
        return max(value, 0.0)
    parts = _PART.findall(text)
    if not parts or "".join(a + b for a, b in parts) != text:
        return None
    return sum(float(value) * _UNITS[unit] for value, unit in parts)


def header_number(headers: Mapping[str, str], name: str) -> float | None:
    """The header ``name`` as a finite number; None when it is absent or is not one."""
    value = headers.get(name)
    return None if value is None else _finite(value)


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a ``retry-after-ms`` or ``retry-after`` header asks for (None when absent or
    not a finite number)."""
    if not headers:
        return None
    ms = header_number(headers, "retry-after-ms")
    if ms is not None:
        return max(ms / 1000, 0.0)
    seconds = header_number(headers, "retry-after")
    return max(seconds, 0.0) if seconds is not None else None


def quote(headers: Mapping[str, str] | None, names: Iterable[str]) -> str:
    """The headers among ``names`` that the server sent, as it sent them:
    ``"retry-after: 3600"``, ``"x-ratelimit-remaining-requests: 0, x-ratelimit-reset-requests:
    23h"`` (each value cut at 40 characters)."""
    if not headers:
        return ""
    said = []
    for name in names:
        value = headers.get(name)
        if value is not None:
            said.append(f"{name}: {str(value).strip()[:40]}")
    return ", ".join(said)


def describe_wait(seconds: float) -> str:
    """A wait in words: ``"45 s"``, ``"2.5 min"``, ``"1.0 h"``, ``"31 years"``."""
    if seconds >= 86400 * 365:
        return f"{seconds / (86400 * 365):,.0f} years"
    if seconds >= 3000:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"
