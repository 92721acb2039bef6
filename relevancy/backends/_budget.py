"""How long the embedded generator lets one sample run, and how many threads it uses.

A fixed cut-off (it was 20 s) turns a busy machine into different scores: the samples that do
not finish in time are dropped and the row's mean rests on fewer questions. Here the cut-off is
a budget that follows the machine: the seconds per generated token measured in this process (a
moving average over the samples so far) times the longest a question may be (``max_tokens``),
with room to spare (:data:`SLACK`), never below the generator's ``time_limit`` and never above
:data:`CAP` times it. A sample that is cut off anyway is tried once more, with the same seed
(so the same question when it finishes) and twice the budget (:data:`RETRY_GROWTH`), up to the
cap: a busy machine gives slower scores, not different ones.

llama.cpp's threads are the cores this process may run on (:func:`default_threads`), or
``RELEVANCY_LLAMA_THREADS``. Fewer threads when the machine is loaded was measured and not
adopted: two embedded scorers side by side on a machine loaded by other work finished later with
one thread each than with every core each (``bench/RESULTS.md``, "Two embedded scorers side by
side"): the scheduler shares the cores per thread, so fewer threads get less of them. Two
scorers do not starve each other because the worker waits passively (``OMP_WAIT_POLICY``).

``RELEVANCY_LLAMA_SLOW_S`` (seconds) makes every generated token that much slower: the tests of
the budget use it to play a busy machine.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

__all__ = [
    "SLACK",
    "CAP",
    "RETRY_GROWTH",
    "SLOW_ENV",
    "THREADS_ENV",
    "Budget",
    "Deadline",
    "default_threads",
    "worst_case_seconds",
]

#: the budget is this many times a sample's expected time at the measured speed ...
SLACK = 4.0
#: ... and at most this many times the generator's ``time_limit``
CAP = 4.0
#: a retried sample gets this many times the first budget (still at most the cap)
RETRY_GROWTH = 2.0
#: test hook: seconds added to every generated token (a machine made slow on purpose)
SLOW_ENV = "RELEVANCY_LLAMA_SLOW_S"
#: the number of llama.cpp threads, when set (else :func:`default_threads`)
THREADS_ENV = "RELEVANCY_LLAMA_THREADS"


def worst_case_seconds(time_limit: float, n: int) -> float:
    """The longest ``n`` samples may take with their retries (beyond it: a hang)."""
    return n * 2 * CAP * time_limit


def default_threads() -> int:
    """llama.cpp's threads: ``$RELEVANCY_LLAMA_THREADS`` when set, else the cores this process
    may run on (its CPU affinity: a container's or ``taskset``'s share, not the machine's)."""
    chosen = os.environ.get(THREADS_ENV, "").strip()
    if chosen.isdigit() and int(chosen) > 0:
        return int(chosen)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


class _Speed:
    """Seconds per generated token in this process: a moving average over the samples."""

    def __init__(self, weight: float = 0.3) -> None:
        self.weight = weight
        self.per_token: float | None = None
        self._lock = threading.Lock()

    def observe(self, seconds: float, tokens: int) -> None:
        if tokens <= 0 or seconds <= 0:
            return
        now = seconds / tokens
        with self._lock:
            old = self.per_token
            self.per_token = now if old is None else self.weight * now + (1 - self.weight) * old


#: this process's measured speed (the worker serves one model at a time)
SPEED = _Speed()


class Budget:
    """The cut-off of one sample, from ``time_limit``, ``max_tokens`` and the measured speed.

    Parameters
    ----------
    time_limit : float
        The least a sample is given (seconds); the most is :data:`CAP` times it.
    max_tokens : int
        The longest a question may be, in tokens.
    speed : _Speed, optional
        Where the speed is measured (default: this process's).
    """

    def __init__(self, time_limit: float, max_tokens: int, speed: _Speed | None = None) -> None:
        self.time_limit = float(time_limit)
        self.max_tokens = int(max_tokens)
        self.speed = SPEED if speed is None else speed

    def seconds(self, attempt: int = 0) -> float:
        """The budget of a sample's ``attempt`` (0: the first, 1: its retry)."""
        per_token = self.speed.per_token or 0.0
        cap = CAP * self.time_limit
        first = min(cap, max(self.time_limit, SLACK * per_token * self.max_tokens))
        return first if attempt == 0 else min(cap, RETRY_GROWTH * first)

    def observe(self, deadline: Deadline) -> None:
        """Learn the speed from a finished (or cut-off) sample."""
        self.speed.observe(deadline.elapsed, deadline.tokens)


class Deadline:
    """A llama.cpp stopping criterion that ends a sample after ``seconds`` of wall time; it
    counts the sample's tokens (and, under ``RELEVANCY_LLAMA_SLOW_S``, slows each one)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.perf_counter()
        self.end = self.started + seconds
        self.expired = False
        self.tokens = 0
        try:
            self.slow = max(0.0, float(os.environ.get(SLOW_ENV, "") or 0.0))
        except ValueError:
            self.slow = 0.0

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def __call__(self, _ids: Any, _logits: Any) -> bool:
        self.tokens += 1
        if self.slow:
            time.sleep(self.slow)
        if time.perf_counter() > self.end:
            self.expired = True
        return self.expired
