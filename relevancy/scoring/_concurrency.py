"""How many rows the metric scores at once, and its rate controllers' state in words."""

from __future__ import annotations

from typing import Any

__all__ = ["EMBEDDED_CONCURRENCY", "API_CONCURRENCY", "default_concurrency", "rate_status"]

#: rows at once when not given: the embedded generator serialises rows, API requests mostly wait
EMBEDDED_CONCURRENCY, API_CONCURRENCY = 4, 16


def default_concurrency(llm: Any) -> int:
    """Rows scored at once by default with this generator (see ``AnswerRelevancy``): for an
    API generator with a rate controller, its most requests at once (it adapts below that)."""
    if llm.embedded:
        return EMBEDDED_CONCURRENCY
    return getattr(llm, "max_concurrency", None) or API_CONCURRENCY


def rate_status(*backends: Any) -> str | None:
    """The rate controllers' state for a progress line, e.g. ``"requests: 12 at once"`` or
    ``"requests: 4 at once, waiting for the rate limit"`` (None without API backends)."""
    seen = []
    for backend in backends:
        rate = getattr(backend, "rate", None)
        if rate is not None and rate not in seen:
            seen.append(rate)
    if not seen:
        return None
    waiting = any(r.waiting for r in seen)
    text = "requests: " + " + ".join(str(r.concurrency) for r in seen) + " at once"
    return text + (", waiting for the rate limit" if waiting else "")
