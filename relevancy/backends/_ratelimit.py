"""Adaptive concurrency for API backends: as many requests at once as the rate limit allows.

One :class:`RateController` per (server, model), shared by every generator, embedder and judge
that talks to it (``_ratelimit_registry.controller_for``). Each request takes a slot
(:meth:`RateController.call`); the number of slots, :attr:`RateController.concurrency`, starts
moderate and

* grows while answers come back fast and the ``x-ratelimit-remaining-*`` headers leave room
  for more at once (until the first back-off, at once to as many as the headers leave room
  for, or one more slot per answer; then one per round);
* halves on a 429 (once per episode, not once per refused request).

Requests are also paced by what the headers say remains: the requests (and the tokens over a
request's estimated tokens, one request's worth held back for the estimate's error) left in the
window, less those the headers may not count yet, are a budget. Those are the requests sent
after the answered one, and those sent before it that are still unanswered or went just before
it: a server admits requests that arrive close together in any order. When the last request in
flight is answered, the one the server admitted last counted every other it admitted, and it
is the last one sent or one unanswered when that was sent: so the fewest remaining in those
requests' headers may still go, the budget is raised to it, and a burst's end does not look
like a spent window (unless one of them came back without headers: refused, failed, or from a
server that sends none). This reading assumes the headers come from one counter that no other
client shares; a 429 from another client's use is waited out like any other. Once the budget
is spent, requests wait for the ``x-ratelimit-reset-*`` time (counted from when the request
it came with was sent: the server counts it from admission), then one probes the window and
its answer's headers say how many more may go (the others wait for that answer, or
``PROBE_GAP``). A 429 pauses every request until the reset it announces (``retry-after``,
else ``x-ratelimit-reset-*``, else a doubling backoff).

A request refused with a 429 is not lost: it waits and is sent again until ``max_wait`` seconds
have passed since it was first sent (time queued for a free slot not counted), then fails with
:class:`RateLimitedError`, one line that says what to do. A wait the server asks for that would
end past that (``retry-after: 3600``, a spent window that resets in ``23h``) fails at once, in
the server's own words, and wakes every waiting request to see it: none waits for a wake-up that
never comes (one woken for a slot it does not take passes the wake-up on). Headers that are not
finite numbers count as absent; an answer restarts the doubling backoff of 429s that name no
wait. Other transient errors (5xx, timeouts, dropped connections) are retried ``max_retries``
times with a doubling backoff that honours ``retry-after``, as the SDK would. This module knows
nothing of the ``openai`` SDK: the caller says what an error was (:class:`Outcome`).
"""

from __future__ import annotations

import asyncio
import math
import random
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from relevancy.backends._ratelimit_headers import (
    Outcome,
    RateLimitedError,
    describe_wait,
    header_number,
    parse_reset,
    quote,
    retry_after,
)

__all__ = [
    "DEFAULT_MAXIMUM",
    "DEFAULT_START",
    "Outcome",
    "RateController",
    "RateLimitedError",
    "parse_reset",
    "retry_after",
]

#: slots at the start, and the most without ``--concurrency``
DEFAULT_START, DEFAULT_MAXIMUM = 8, 64
#: seconds a request may spend refused by the rate limit before its row fails
DEFAULT_MAX_WAIT = 300.0
#: after a reset, one request probes the window; the next waits this long or for its answer
PROBE_GAP = 0.1
#: requests' worth of tokens left unspent in the window: what the tokens of the requests in
#: flight may exceed their estimate by (prompts differ in length)
TOKEN_MARGIN = 1.0
#: requests sent this share of the quickest answer's time before another may reach the server
#: after it: its headers may not count them yet
ADMISSION_SPREAD = 0.5
#: requests whose send times are remembered (and the answers of up to twice as many)
_RECENT = 1024
#: the estimate of a request's tokens: the mean of the first ones, then a slow moving average
_COST_WEIGHT = 0.05


class RateController:
    """Slots for one model's requests, sized by what its rate limit allows.

    Parameters
    ----------
    name : str
        What it controls, for messages (``"gpt-4o-mini at https://api.openai.com/v1"``).
    maximum : int
        The most requests at once (``--concurrency``).
    start : int
        Requests at once to begin with (at most ``maximum``).
    adaptive : bool
        False: always ``maximum`` slots (429s are still waited out and retried).
    max_wait : float
        Seconds a request may be refused by the rate limit before it fails.
    """

    def __init__(
        self,
        name: str,
        *,
        maximum: int = DEFAULT_MAXIMUM,
        start: int = DEFAULT_START,
        adaptive: bool = True,
        max_wait: float = DEFAULT_MAX_WAIT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.maximum = max(int(maximum), 1)
        self.adaptive = adaptive
        self.limit = float(min(start, self.maximum) if adaptive else self.maximum)
        self.max_wait = max_wait
        self._clock = clock
        self._lock = threading.Lock()
        self._waiters: deque[asyncio.Future[None]] = deque()  # for a slot
        self._sleepers: deque[asyncio.Future[None]] = deque()  # for the window or a pause
        self.in_flight = 0
        self.pause_until = 0.0
        self._slow_start = True
        self._fast: float | None = None  # the quickest answer seen (seconds)
        self._backoff = 1.0
        self._episode_end = 0.0
        self._said = {"pause": "", "window": ""}  # the server's words for each kind of wait
        self._napping = 0  # requests asleep for the rate limit now, since _nap_since
        self._nap_since = 0.0
        self.waited = 0.0  # seconds during which some request slept for the rate limit
        self._told = False  # whether any answer's headers said what remains
        #: the server's limits as its headers say (None until seen)
        self.limits: dict[str, float | None] = {"requests": None, "tokens": None}
        self.remaining: dict[str, float | None] = {"requests": None, "tokens": None}
        self.tokens_per_request: float | None = None
        self._costs = 0  # requests whose tokens were counted
        #: requests that may still be sent before the window frees something (None: unknown)
        self.budget: float | None = None
        self.reset_at = 0.0  # when the window frees something
        self._counted_reset = -1.0
        self.sent = 0
        self._unanswered: set[int] = set()  # numbers of the requests sent and not yet answered
        self._sent_at: deque[tuple[int, float]] = deque(maxlen=_RECENT)  # (number, when)
        #: what each recent answer's headers said remains, by kind and the request's number
        self._heard: dict[int, dict[str, float]] = {}
        self._last_from = 0  # the oldest request unanswered when the last one was sent
        self._throttled_upto = 0  # requests sent up to the last 429
        self.counts = {
            "requests": 0,
            "throttled": 0,
            "retries": 0,
            "decreases": 0,
            "increases": 0,
            "pauses": 0,
            "failed": 0,
        }
        self.peak = int(self.limit)
        self.lowest = int(self.limit)

    # -- what the progress line shows

    @property
    def concurrency(self) -> int:
        """Requests allowed at once now."""
        return max(int(self.limit), 1)

    @property
    def waiting(self) -> bool:
        """True while requests wait for the rate limit: a 429's pause, or a spent window."""
        return self._napping > 0 or self._clock() < self.pause_until

    def describe(self) -> str:
        """``"12 at once"`` or ``"4 at once, waiting for the rate limit"``."""
        text = f"{self.concurrency} at once"
        return text + (", waiting for the rate limit" if self.waiting else "")

    def set_maximum(self, maximum: int) -> None:
        """A new most-at-once (``--concurrency``); the current size is capped by it."""
        with self._lock:
            self.maximum = max(int(maximum), 1)
            self.limit = min(self.limit, self.maximum) if self.adaptive else float(self.maximum)

    # -- slots

    async def _acquire(self, first: float, queued: list[float] | None = None) -> int:
        """Take a slot (its number, counting every request sent); RateLimitedError when the
        wait for the rate limit would end past ``first + max_wait``, time spent queued for a
        free slot not counted (``queued[0]``: those seconds so far, added to here)."""
        queued = [0.0] if queued is None else queued
        while True:
            with self._lock:
                now, since = self._clock(), first + queued[0]
                wait_until, said = self.pause_until, self._said["pause"]
                if self.budget is not None and self.budget < 1 and now >= wait_until:
                    if now >= self.reset_at:  # something left the window: probe with one
                        self.budget = 1.0
                        self.reset_at = now + PROBE_GAP
                    else:
                        wait_until, said = self.reset_at, self._said["window"]
                        if self.reset_at != self._counted_reset:
                            self._counted_reset = self.reset_at
                            self.counts["pauses"] += 1
                if now >= wait_until and self.in_flight < self.concurrency:
                    self.in_flight += 1
                    self.sent += 1
                    self._unanswered.add(self.sent)
                    self._last_from = min(self._unanswered)
                    self._sent_at.append((self.sent, now))
                    if self.budget is not None:
                        self.budget -= 1
                    return self.sent
                if now < wait_until and wait_until - since > self.max_wait:
                    self.counts["failed"] += 1
                    self._wake_some()  # a wake-up this request was given goes to another
                    raise self._too_long(now - since, wait_until - now, said)
                pause = wait_until - now if now < wait_until else 0.0
                future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                # a free slot wakes a waiter; room in the window wakes a sleeper
                queue = self._sleepers if pause else self._waiters
                queue.append(future)
                if pause:  # asleep for the rate limit: the time is counted
                    self._nap_since = self._nap_since if self._napping else now
                    self._napping += 1
            try:
                await (_nap(future, min(pause, 5.0)) if pause else future)
            except BaseException:  # cancelled: a wake-up it was given goes to another
                with self._lock:
                    self._wake_some()
                raise
            finally:
                with self._lock:
                    if future in queue:
                        queue.remove(future)
                    if not pause:  # queued for a slot: not a wait for the rate limit
                        queued[0] += max(self._clock() - now, 0.0)
                    if pause:
                        self._napping -= 1
                        if not self._napping:
                            self.waited += max(self._clock() - self._nap_since, 0.0)

    def _release(self, number: int = 0) -> None:
        with self._lock:
            self.in_flight -= 1
            self._unanswered.discard(number)
            self._wake_some()

    def _wake_all(self) -> None:
        """Wake every waiting request (under the lock): the wait grew; may each still wait?"""
        for queue in (self._waiters, self._sleepers):
            while queue:
                future = queue.popleft()
                if not future.done():
                    future.get_loop().call_soon_threadsafe(_wake, future)

    def _wake_some(self) -> None:
        """Wake as many waiting requests as may go now (under the lock): those waiting for a
        slot, one per free slot; then, while the window has room, those waiting for its reset,
        no more than the room (not all of them, to find it spent and sleep again)."""
        free = self.concurrency - self.in_flight
        room = math.floor(self.budget) if self.budget is not None else 0
        for queue in (self._waiters, self._sleepers):
            if queue is self._sleepers and self._clock() < self.pause_until:
                break
            while queue and free > 0 and (queue is self._waiters or room > 0):
                future = queue.popleft()
                if not future.done():
                    future.get_loop().call_soon_threadsafe(_wake, future)
                    free -= 1
                    room -= 1

    # -- what answers say

    def observe(
        self,
        headers: Mapping[str, str] | None,
        seconds: float,
        tokens: int = 0,
        sent: int | None = None,
    ) -> None:
        """An answer came back after ``seconds`` with these headers; ``tokens``: what the
        request was counted; ``sent``: its number (from the slot it took)."""
        with self._lock:
            self.counts["requests"] += 1
            self._backoff = 1.0  # an answer ends the 429s' doubling backoff
            if tokens:
                self._costs += 1
                known = self.tokens_per_request
                weight = max(1.0 / self._costs, _COST_WEIGHT)
                self.tokens_per_request = (
                    tokens if known is None else known + weight * (tokens - known)
                )
            self._fast = seconds if self._fast is None else min(self._fast, seconds)
            number = sent if sent is not None else self.sent
            heard = self._read(
                headers or {},
                self.sent - number + self._maybe_after(number),
                self._clock() - seconds,
            )
            if heard and sent is not None:
                self._remember(sent, heard)
            self._told = self._told or bool(heard)
            if not self._told:  # a server without headers: an answer says the pause is over
                self.budget = None
            settled = self._settled()
            if settled is not None and (self.budget is None or settled > self.budget):
                self.budget = settled
            if self._sleepers:
                self._wake_some()  # the window may have room: no need to wait for its reset
            if self.budget is not None and self.budget < self.concurrency + 1:
                self._slow_start = False  # too little left for more at once
                return
            if not self.adaptive or self.limit >= self.maximum:
                return
            quick = seconds <= 2 * self._fast + 0.05
            if quick:
                # doubling per round while the headers show room for twice as many
                roomy = self.budget is not None and self.budget >= 2 * self.concurrency
                step = 1.0 if self._slow_start or roomy else 1.0 / self.limit
                grown = self.limit + step
                if self._slow_start and self.budget is not None:
                    # straight to as many at once as the headers leave room for, not round
                    # by round: the window's first burst goes out together
                    grown = max(grown, self.in_flight + self.budget)
                self.limit = min(grown, float(self.maximum))
                self.counts["increases"] += 1
                self.peak = max(self.peak, self.concurrency)

    def _remember(self, number: int, heard: dict[str, float]) -> None:
        self._heard[number] = heard
        if len(self._heard) > 2 * _RECENT:
            oldest = self.sent - _RECENT
            self._heard = {k: v for k, v in self._heard.items() if k > oldest}

    def _settled(self) -> float | None:
        """The budget once nothing is in flight: the fewest remaining in the headers of the
        requests that may have been admitted last (the last one sent, and those unanswered
        when it was sent), which counted every other. None while any is in flight (it may be
        the last admitted), or when one of those requests came back without the same headers
        as the others (refused, failed) or was sent before the last 429 came back."""
        first = self._last_from
        if self._unanswered or first <= self._throttled_upto:
            return None
        fewest: dict[str, float] = {}
        for k in range(first, self.sent + 1):
            heard = self._heard.get(k)
            if not heard or (fewest and heard.keys() != fewest.keys()):
                return None
            fewest = {kind: min(value, fewest.get(kind, value)) for kind, value in heard.items()}
        if not fewest:
            return None
        return float(min(self._room(kind, value) for kind, value in fewest.items()))

    def _maybe_after(self, number: int) -> int:
        """Requests sent before request ``number`` that its headers may not count: those
        still unanswered, and those sent just before it (within ``ADMISSION_SPREAD`` of the
        quickest answer), which the server may have admitted after it (a new connection, a
        slower thread)."""
        maybe = {k for k in self._unanswered if k < number}
        i = number - self._sent_at[0][0] if self._sent_at else -1  # numbers are consecutive
        if 0 <= i < len(self._sent_at):
            since = self._sent_at[i][1] - ADMISSION_SPREAD * (self._fast or 0.0)
            for j in range(i - 1, -1, -1):
                k, t = self._sent_at[j]
                if t < since:
                    break
                maybe.add(k)
        return len(maybe)

    def _room(self, kind: str, remaining: float) -> int:
        """Requests' worth of ``remaining`` requests or tokens."""
        if kind == "requests":  # counted exactly
            return math.floor(remaining)
        # tokens are estimated, so a margin stays unspent
        return math.floor(remaining / max(self.tokens_per_request or 1.0, 1.0) - TOKEN_MARGIN)

    def _read(
        self, headers: Mapping[str, str], sent_since: int, sent_at: float
    ) -> dict[str, float]:
        """Record the limits and what remains: the requests that may still be sent before the
        window frees something (``budget``: the remaining requests, and tokens over a request's
        tokens, less ``sent_since``, those the headers may not count), and when it does
        (``reset_at``). Returns what remains, by kind, as the headers say.

        The server counts a reset from when it admitted the request: after ``sent_at`` (when
        it was sent) and before its answer came back, a whole generation later for a chat
        model. It is counted here from the quickest answer's time after ``sent_at`` (a request
        sent in a burst reaches the server a little after it is sent), or from the answer if
        that came sooner: the window is not waited out a generation longer than it lasts, and
        a probe sent at the reset does not reach the server before it."""
        allowed: list[float] = []
        exhausted: list[float] = []
        announced: list[tuple[float, float, str]] = []
        heard: dict[str, float] = {}
        for kind in ("requests", "tokens"):
            limit = header_number(headers, f"x-ratelimit-limit-{kind}")
            remaining = header_number(headers, f"x-ratelimit-remaining-{kind}")
            if limit is not None:
                self.limits[kind] = limit
            self.remaining[kind] = remaining
            if remaining is None:
                continue
            heard[kind] = remaining
            room = self._room(kind, remaining) - sent_since
            allowed.append(room)
            reset = parse_reset(headers.get(f"x-ratelimit-reset-{kind}"))
            if room < 1:
                exhausted.append(reset if reset is not None else 1.0)
                names = (f"x-ratelimit-remaining-{kind}", f"x-ratelimit-reset-{kind}")
                self._said["window"] = quote(headers, names)
            elif reset is not None:  # once the room is spent, the wait is for this reset
                announced.append((room, reset, kind))
        if allowed:
            self.budget = float(min(allowed))
        admitted = min(sent_at + (self._fast or 0.0), self._clock())
        if allowed and not exhausted:  # the kind with the least room runs out first
            _, reset, kind = min(announced) if announced else (0, None, "")
            self.reset_at = admitted + reset if reset is not None else 0.0
            self._said["window"] = quote(headers, (f"x-ratelimit-reset-{kind}",))
        if exhausted:
            before = self.reset_at
            self.reset_at = max(self.reset_at, admitted + max(exhausted))
            if self.reset_at > before:
                self._wake_all()  # a longer wait: each waiting request sees if it may wait
        return heard

    def _shrink(self, to: float) -> None:
        if not self.adaptive:
            return
        new = max(min(self.limit, float(to)), 1.0)
        if new < self.limit:
            self.limit = new
            self.counts["decreases"] += 1
            self.lowest = min(self.lowest, self.concurrency)
        self._slow_start = False

    def _pause(self, seconds: float, said: str) -> None:
        until = self._clock() + seconds
        if until > self.pause_until:
            self.pause_until = until
            self._said["pause"] = said
            self.counts["pauses"] += 1
            self._wake_all()  # a longer wait: each waiting request sees if it may wait

    def throttled(self, headers: Mapping[str, str] | None, message: str = "") -> None:
        """A 429 came back: halve the slots (once per episode) and pause until the reset
        (``message``: what the server said, kept for a row that fails of it)."""
        with self._lock:
            self.counts["throttled"] += 1
            self._throttled_upto = self.sent
            now = self._clock()
            wait = retry_after(headers)
            said = quote(headers, ("retry-after-ms", "retry-after"))
            if wait is None and headers:
                names = [f"x-ratelimit-reset-{k}" for k in ("requests", "tokens")]
                known = [r for r in map(parse_reset, map(headers.get, names)) if r is not None]
                wait = max(known) if known else None
                said = quote(headers, names)
            if wait is None:  # nothing said: a doubling backoff, with jitter
                wait = self._backoff * (0.75 + 0.5 * random.random())
                self._backoff = min(self._backoff * 2, 30.0)
                said = "a 429 without retry-after"
            else:
                self._backoff = 1.0
            if message:
                said += '; "' + message.strip()[:160] + '"'
            if now >= self._episode_end:  # the first 429 of an episode
                self._shrink(self.limit / 2)
                self._episode_end = now + max(wait, 0.5)
            self._slow_start = False
            self._pause(wait, said)
            self.budget = 0.0  # after the pause, one request probes the window first
            self.reset_at = max(self.reset_at, self.pause_until)

    # -- one request

    async def call(
        self,
        send: Callable[[], Awaitable[Any]],
        classify: Callable[[BaseException], Outcome],
        *,
        headers_of: Callable[[Any], Mapping[str, str] | None] = lambda r: None,
        tokens_of: Callable[[Any], int] = lambda r: 0,
        max_retries: int = 3,
        cost: int = 0,
    ) -> Any:
        """Send one request through a slot; wait out 429s and retry transient errors.

        ``send()`` makes the request; ``classify(exc)`` says what an exception was;
        ``headers_of(answer)`` and ``tokens_of(answer)`` read a good answer; ``cost``: the
        tokens the server counts the request at admission (OpenAI: the prompt's, plus
        ``max_tokens`` for each choice), when the caller knows it (else ``tokens_of``).
        """
        first, queued = self._clock(), [0.0]
        attempt = throttled = 0
        while True:
            number = await self._acquire(first, queued)
            sent = self._clock()
            try:
                answer = await send()
            except BaseException as exc:
                self._release(number)
                outcome = classify(exc) if isinstance(exc, Exception) else Outcome("fatal")
                if outcome.kind == "throttled":
                    throttled += 1
                    self.throttled(outcome.headers, outcome.message)
                    with self._lock:
                        now, since = self._clock(), first + queued[0]
                        left = max(self.pause_until - now, 0.0)
                        if now - since + left > self.max_wait:
                            self.counts["failed"] += 1
                            error = self._too_long(now - since, left, self._said["pause"])
                            raise error from None
                    with self._lock:
                        self.counts["retries"] += 1
                    continue
                if outcome.kind == "retry" and attempt < max_retries:
                    attempt += 1
                    with self._lock:
                        self.counts["retries"] += 1
                    wait = retry_after(outcome.headers)
                    if wait is None or wait > 60:  # the SDK's backoff: failures so far count
                        tries = attempt + throttled
                        wait = min(0.5 * 2 ** (tries - 1), 8.0) * (1 - 0.25 * random.random())
                    await asyncio.sleep(wait)
                    continue
                raise
            self._release(number)
            used = cost or tokens_of(answer)
            self.observe(headers_of(answer), self._clock() - sent, used, number)
            return answer

    def _too_long(self, waited: float, left: float, said: str) -> RateLimitedError:
        """The error of a request that may not wait ``left`` seconds more, having waited
        ``waited``; ``said``: the server's words that asked for the wait."""
        words = f" (the server said {said})" if said else ""
        if left > 0:
            what = f"the server asks to wait {describe_wait(left)} more{words}"
        else:
            what = f"after {waited:.0f} s{words}"
        return RateLimitedError(
            f"still rate-limited by {self.name}: {what}, past the longest wait of "
            f"{self.max_wait:.0f} s: lower --concurrency, raise the account's limits or use "
            "--batch-api"
        )

    def snapshot(self) -> dict[str, Any]:
        """Counts, the seconds some request slept for the rate limit (``waited_s``) and the
        current state: for the run's summary, benches and tests."""
        with self._lock:
            waited = self.waited + (self._clock() - self._nap_since if self._napping else 0.0)
            return {
                **self.counts,
                "waited_s": waited,
                "concurrency": self.concurrency,
                "peak": self.peak,
                "lowest": self.lowest,
                "limits": dict(self.limits),
            }


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _nap(future: asyncio.Future[None], seconds: float) -> None:
    """Wait ``seconds``, or less when ``future`` is woken first."""
    await asyncio.wait({future}, timeout=seconds)
