"""How many rows the metric scores at once, and its rate controllers' state in words."""

from __future__ import annotations

from typing import Any

__all__ = [
    "EMBEDDED_CONCURRENCY",
    "API_CONCURRENCY",
    "default_concurrency",
    "rate_status",
    "rate_summary",
]

#: rows at once when not given: the embedded generator serialises rows, API requests mostly wait
EMBEDDED_CONCURRENCY, API_CONCURRENCY = 4, 16


def default_concurrency(llm: Any) -> int:
    """Rows scored at once by default with this generator (see ``AnswerRelevancy``): for an
    API generator with a rate controller, its most requests at once (it adapts below that)."""
    if llm.embedded:
        return EMBEDDED_CONCURRENCY
    return getattr(llm, "max_concurrency", None) or API_CONCURRENCY


def _controllers(backends: tuple[Any, ...]) -> list[Any]:
    seen = []
    for backend in backends:
        rate = getattr(backend, "rate", None)
        if rate is not None and rate not in seen:
            seen.append(rate)
    return seen


def rate_status(*backends: Any) -> str | None:
    """The rate controllers' state for a progress line, e.g. ``"requests: 12 at once"`` or
    ``"requests: 4 at once, waiting for the rate limit"`` (None without API backends)."""
    seen = _controllers(backends)
    if not seen:
        return None
    waiting = any(r.waiting for r in seen)
    text = "requests: " + " + ".join(str(r.concurrency) for r in seen) + " at once"
    return text + (", waiting for the rate limit" if waiting else "")


def rate_summary(*backends: Any) -> str | None:
    """What the rate limit cost a run, for its summary: ``"12 requests refused (429) and sent
    again; 41 s waiting for the rate limit; 2 failed after the longest wait"`` (None when the
    limit never made a request wait)."""
    snaps = [rate.snapshot() for rate in _controllers(backends)]
    refused = sum(s["throttled"] for s in snaps)
    waited = max((s["waited_s"] for s in snaps), default=0.0)
    failed = sum(s["failed"] for s in snaps)
    if not refused and not failed and waited < 0.05:
        return None
    parts = [f"{refused:,} requests refused (429) and sent again"]
    parts.append(f"{waited:,.1f} s waiting for the rate limit")
    if failed:
        parts.append(f"{failed:,} failed after the longest wait")
    return "; ".join(parts)
