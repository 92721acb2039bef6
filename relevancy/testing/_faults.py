"""Faults the test server can inject, how they are picked, and the replies they produce.

A fault is named by a kind from :data:`FAULT_KINDS`. Some fit every endpoint, some only chat or
only embeddings (:data:`ENDPOINT_FAULTS`). The ones in :data:`EARLY_FAULTS` replace the whole
reply before the request body is looked at (:func:`early_fault_reply`); the others change a
normal reply on its way out, and the server applies them where it builds that reply.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CHAT_ONLY_FAULTS",
    "EARLY_FAULTS",
    "EMBEDDING_ONLY_FAULTS",
    "ENDPOINT_FAULTS",
    "FAULT_KINDS",
    "GENERIC_FAULTS",
    "FaultPlan",
    "Reply",
    "check_kind",
    "early_fault_reply",
    "error_reply",
    "json_reply",
]

GENERIC_FAULTS: tuple[str, ...] = (
    "429",
    "500",
    "503",
    "slow",
    "drop",
    "invalid_json",
    "missing_fields",
)
CHAT_ONLY_FAULTS: tuple[str, ...] = ("fewer_choices", "empty_content")
EMBEDDING_ONLY_FAULTS: tuple[str, ...] = ("embed_wrong_count", "embed_wrong_dim")
FAULT_KINDS: tuple[str, ...] = GENERIC_FAULTS + CHAT_ONLY_FAULTS + EMBEDDING_ONLY_FAULTS

#: The kinds that fit each endpoint.
ENDPOINT_FAULTS: dict[str, frozenset[str]] = {
    "chat": frozenset(GENERIC_FAULTS + CHAT_ONLY_FAULTS),
    "embeddings": frozenset(GENERIC_FAULTS + EMBEDDING_ONLY_FAULTS),
    "models": frozenset(GENERIC_FAULTS),
}
#: Faults decided before the request body is looked at.
EARLY_FAULTS = frozenset({"429", "500", "503", "drop", "invalid_json"})


def check_kind(kind: str | None) -> None:
    """Raise ValueError unless ``kind`` is None or one of :data:`FAULT_KINDS`."""
    if kind is not None and kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")


@dataclass
class FaultPlan:
    """Pick a fault for each request at random, reproducibly, or from a repeating pattern.

    With probability ``rate`` a request gets a fault, drawn uniformly among those of ``kinds``
    that fit its endpoint; otherwise it is served normally. The draws come from one RNG seeded
    with ``seed`` and guarded by a lock, so a given sequence of requests (sent one after another)
    always meets the same faults. Call :meth:`reset` to start the sequence over.

    With a ``pattern`` (``(None, None, "429")``: a 429 on every third request) the requests take
    its entries in turn, whatever their endpoint (a kind that does not fit is not applied), and
    ``rate`` and ``kinds`` are not used.
    """

    rate: float = 0.3
    kinds: Sequence[str] = FAULT_KINDS
    seed: int = 0
    pattern: Sequence[str | None] | None = None
    _rng: random.Random = field(init=False, repr=False, compare=False)
    _lock: threading.Lock = field(init=False, repr=False, compare=False)
    _turn: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate must be within [0, 1], got {self.rate!r}")
        self.kinds = tuple(self.kinds)
        self.pattern = None if self.pattern is None else tuple(self.pattern)
        for kind in (*self.kinds, *(self.pattern or ())):
            check_kind(kind)
        if self.pattern is not None and not len(self.pattern):
            raise ValueError("a fault pattern needs at least one entry")
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Restart the random sequence from ``seed`` (the pattern from its first entry)."""
        with self._lock:
            self._rng = random.Random(self.seed)
            self._turn = 0

    def draw(self, endpoint: str) -> str | None:
        """The fault for the next request to ``endpoint`` (``"chat"``, ``"embeddings"``,
        ``"models"``), or None."""
        if self.pattern is not None:
            with self._lock:
                self._turn += 1
                return self.pattern[(self._turn - 1) % len(self.pattern)]
        fitting = [kind for kind in self.kinds if kind in ENDPOINT_FAULTS[endpoint]]
        with self._lock:
            if self._rng.random() >= self.rate or not fitting:
                return None
            return self._rng.choice(fitting)


# ----------------------------------------------------------------------------- replies


@dataclass
class Reply:
    """What the HTTP handler sends back for one request."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False  # close the socket without answering
    close: bool = False  # answer, then close the connection
    content_type: str = "application/json"


def json_reply(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """A reply whose body is ``payload`` as JSON."""
    return Reply(status=status, body=json.dumps(payload).encode(), headers=headers or {})


def error_reply(
    status: int,
    message: str,
    *,
    type_: str,
    code: str | None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """An error reply shaped like the OpenAI API's (``{"error": {...}}``)."""
    error = {"message": message, "type": type_, "param": param, "code": code}
    return json_reply({"error": error}, status=status, headers=headers)


def early_fault_reply(fault: str, endpoint: str, retry_after: float | None) -> Reply:
    """The reply for one of :data:`EARLY_FAULTS`; a 429 announces ``retry_after`` seconds
    (None: a 429 with no header that says how long to wait)."""
    if fault == "drop":
        return Reply(drop=True)
    if fault == "invalid_json":
        key = "choices" if endpoint == "chat" else "data"
        truncated = f'{{"id": "broken", "object": "list", "{key}": ['.encode()
        return Reply(status=200, body=truncated)
    if fault == "429":
        headers = {}
        if retry_after is not None:
            headers = {
                "Retry-After": f"{retry_after:g}",
                "retry-after-ms": str(round(retry_after * 1000)),
            }
        return error_reply(
            429,
            "Rate limit reached for requests. Please try again later.",
            type_="requests",
            code="rate_limit_exceeded",
            headers=headers,
        )
    if fault == "503":
        return error_reply(
            503,
            "The server is overloaded or not ready yet.",
            type_="server_error",
            code="service_unavailable",
        )
    return error_reply(
        500,
        "The server had an error while processing your request.",
        type_="server_error",
        code="internal_error",
    )
