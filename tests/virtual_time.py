"""An asyncio event loop on a virtual clock, for tests of the rate controller's logic.

Time stands still while anything is ready to run; when every task waits for a timer, the clock
jumps to the next timer at once, so an hour-long ``Retry-After`` takes no real time. When every
task waits and no timer is set, nothing can ever happen again: that is a hang, and the loop
raises :class:`Hang` instead of blocking (a lost wake-up is found at once, never by a timeout).
"""

from __future__ import annotations

import asyncio
import math
import selectors
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


class Hang(AssertionError):
    """Every task waits and nothing is scheduled to wake any of them."""


class _Selector(selectors.DefaultSelector):
    """The real selector (the loop's self-pipe), polled without blocking; a wait for a timer
    moves the virtual clock instead."""

    loop: VirtualLoop

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise Hang("every task waits and no timer is set: nothing will ever wake them")
        self.loop.now += timeout
        return []


class VirtualLoop(asyncio.SelectorEventLoop):
    """A loop whose :meth:`time` is :attr:`now`, moved only by waits for timers."""

    def __init__(self) -> None:
        selector = _Selector()
        selector.loop = self
        self.now = 0.0
        super().__init__(selector)

    def time(self) -> float:
        return self.now


def run(coroutine: Coroutine[Any, Any, T], loop: VirtualLoop | None = None) -> T:
    """Run ``coroutine`` to the end on ``loop`` (a new one if None), then close the loop."""
    loop = loop or VirtualLoop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.wait(tasks))
        loop.close()


# -- calls through a rate controller, against a server the test scripts ----------------------


class Refused(Exception):
    """A 429 from the scripted server, with its headers and message."""

    def __init__(self, headers: dict[str, str], message: str = "Rate limit reached.") -> None:
        super().__init__(message)
        self.headers, self.message = headers, message


def classify(exc: BaseException) -> Any:
    """What the rate controller is told of an error (a :class:`Refused` is a 429)."""
    from relevancy.backends._ratelimit import Outcome

    if isinstance(exc, Refused):
        return Outcome("throttled", exc.headers, exc.message)
    return Outcome("fatal")


@dataclass
class Call:
    """One call through the controller: when it started and ended, its sends ``(sent,
    answered)``, and how it ended (``"ok"``, or the exception)."""

    start: float
    end: float = math.nan
    sends: list[tuple[float, float]] = field(default_factory=list)
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not math.isnan(self.end)


#: the scripted server: ``reply(k, now)`` for the k-th request sent (from 0) says its latency,
#: whether it is refused, and its headers
Reply = Callable[[int, float], tuple[float, bool, dict[str, str]]]


def drive(rate: Any, loop: VirtualLoop, starts: list[float], reply: Reply) -> list[Call]:
    """Start one call at each of ``starts`` (virtual seconds) through ``rate`` against the
    scripted server; run until every call has ended (:class:`Hang` if they never can)."""
    calls = [Call(start) for start in starts]
    sent = [0]

    async def one(call: Call) -> None:
        await asyncio.sleep(call.start)

        async def send() -> dict[str, str]:
            k, at = sent[0], loop.time()
            sent[0] += 1
            latency, refused, headers = reply(k, at)
            await asyncio.sleep(latency)
            call.sends.append((at, loop.time()))
            if refused:
                raise Refused(headers)
            return headers

        try:
            await rate.call(send, classify, headers_of=lambda h: h, max_retries=0)
        except Exception as exc:  # what the test looks at
            call.error = exc
        call.end = loop.time()

    async def every() -> None:
        await asyncio.gather(*(one(c) for c in calls))

    run(every(), loop)
    return calls
