"""Every model's :class:`~relevancy.backends._ratelimit.RateController`, one per (server,
model) in a process, shared by every generator, embedder and judge that talks to it."""

from __future__ import annotations

import threading

from relevancy.backends._ratelimit import DEFAULT_MAXIMUM, RateController

__all__ = ["controller_for", "controllers", "forget_controllers"]

_REGISTRY: dict[tuple[str, str], RateController] = {}
_REGISTRY_LOCK = threading.Lock()


def controller_for(
    base_url: str, model: str, *, maximum: int | None = None, adaptive: bool = True
) -> RateController:
    """The controller of ``model`` at ``base_url``, shared within the process.

    ``maximum`` (``--concurrency``) sets its most-at-once when given; ``adaptive=False`` makes a
    new one fixed at its maximum.
    """
    key = (base_url, model)
    with _REGISTRY_LOCK:
        found = _REGISTRY.get(key)
        if found is None or found.adaptive != adaptive:
            found = RateController(
                f"{model} at {base_url}",
                maximum=maximum or DEFAULT_MAXIMUM,
                adaptive=adaptive,
            )
            _REGISTRY[key] = found
        elif maximum is not None and maximum != found.maximum:
            found.set_maximum(maximum)
        return found


def controllers() -> list[RateController]:
    """Every controller made in this process."""
    with _REGISTRY_LOCK:
        return list(_REGISTRY.values())


def forget_controllers() -> None:
    """Start every model's controller afresh (benches comparing settings in one process)."""
    with _REGISTRY_LOCK:
        _REGISTRY.clear()
