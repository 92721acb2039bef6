"""Properties of the rate controller over random schedules (Hypothesis), on a virtual clock.

1. **Every call ends, within its bound**, whatever the server answers: answers, 429s with or
   without a wait, lying or absent ``x-ratelimit-*`` headers (``nan``, ``inf``, text, resets of
   a day or of 1e9 s), windows that run out. A call ends by ``start + max_wait`` plus one
   request's latency, plus the time others' requests held every slot (a queue for a slot is not
   a wait for the rate limit); with as many slots as calls, by ``start + max_wait + latency``
   exactly. It ends with an answer or :class:`RateLimitedError`, never another error. A hang
   (a lost wake-up) is :class:`virtual_time.Hang`.
2. **No more go at once than the headers allow**: against an honest server (one counter,
   ``rpm`` requests a sliding window, its headers exact), every call gets its answer, and once
   an answer's headers have been heard, the server refuses no request sent before the reset
   that the last answer heard announced.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from virtual_time import Call, VirtualLoop, drive

from relevancy.backends._ratelimit import RateController, RateLimitedError

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: header values a server may send: sound ones, and lies
NUMBERS = ["0", "1", "3", "40", "-2", "nan", "inf", "1e999", "lots", ""]
RESETS = ["20ms", "1s", "1.5s", "6m0s", "23h", "1e9", "nan", "inf", "-5", "soon"]
WAITS = ["0", "0.5", "2", "30", "3600", "nan", "inf", "-1", "soon"]


@st.composite
def headers(draw: st.DrawFn) -> dict[str, str]:
    out: dict[str, str] = {}
    for kind in ("requests", "tokens"):
        if draw(st.booleans()):
            out[f"x-ratelimit-remaining-{kind}"] = draw(st.sampled_from(NUMBERS))
        if draw(st.booleans()):
            out[f"x-ratelimit-reset-{kind}"] = draw(st.sampled_from(RESETS))
        if draw(st.booleans()):
            out[f"x-ratelimit-limit-{kind}"] = draw(st.sampled_from(NUMBERS))
    if draw(st.booleans()):
        out["retry-after"] = draw(st.sampled_from(WAITS))
    if draw(st.booleans()):
        out["retry-after-ms"] = draw(st.sampled_from(WAITS))
    return out


@st.composite
def setups(draw: st.DrawFn) -> dict[str, object]:
    calls = draw(st.integers(1, 14))
    adaptive = draw(st.booleans())
    maximum = draw(st.integers(1, 8)) if adaptive else draw(st.integers(1, 16))
    return {
        "starts": sorted(draw(st.lists(st.floats(0, 20), min_size=calls, max_size=calls))),
        "adaptive": adaptive,
        "maximum": maximum,
        "start": draw(st.integers(1, maximum)),
        "max_wait": draw(st.sampled_from([1.0, 10.0, 60.0, 300.0])),
    }


LATENCIES = st.floats(0.001, 3.0)


def controller(loop: VirtualLoop, setup: dict[str, object]) -> RateController:
    return RateController(
        "m",
        maximum=setup["maximum"],  # type: ignore[arg-type]
        start=setup["start"],  # type: ignore[arg-type]
        adaptive=setup["adaptive"],  # type: ignore[arg-type]
        max_wait=setup["max_wait"],  # type: ignore[arg-type]
        clock=loop.time,
    )


def held_by_others(calls: list[Call], mine: Call) -> float:
    """Seconds others' requests were out between ``mine``'s start and end (a bound on the time
    every slot was taken while it queued)."""
    return sum(
        max(min(b, mine.end) - max(a, mine.start), 0.0)
        for c in calls
        if c is not mine
        for a, b in c.sends
    )


def check_bounds(calls: list[Call], setup: dict[str, object], longest: float) -> None:
    max_wait = float(setup["max_wait"])  # type: ignore[arg-type]
    slots_for_all = not setup["adaptive"] and setup["maximum"] >= len(calls)  # type: ignore[operator]
    for call in calls:
        assert not math.isnan(call.end)
        assert call.ok or isinstance(call.error, RateLimitedError), call.error
        bound = call.start + max_wait + longest + 1e-6
        if not slots_for_all:
            bound += held_by_others(calls, call)
        assert call.end <= bound, (call, bound)


@PROPERTY
@given(
    setup=setups(),
    replies=st.lists(st.tuples(LATENCIES, st.booleans(), headers()), max_size=60),
    tail=LATENCIES,
)
def test_every_call_ends_within_its_bound_whatever_the_server_says(setup, replies, tail):
    """The k-th request sent gets the k-th reply (latency, refused, headers); once they are
    used up the server answers every request at once, with no header."""
    loop = VirtualLoop()
    rate = controller(loop, setup)

    def reply(k: int, now: float) -> tuple[float, bool, dict[str, str]]:
        return replies[k] if k < len(replies) else (tail, False, {})

    calls = drive(rate, loop, setup["starts"], reply)  # type: ignore[arg-type]
    longest = max([tail, *(r[0] for r in replies)])
    check_bounds(calls, setup, longest)


class HonestServer:
    """``rpm`` requests admitted in any ``window`` seconds (sliding, like the toy server), each
    answer's headers saying exactly what remained after it was admitted and when the oldest
    request leaves the window; a refused request is not counted. ``log``: per request sent,
    (sent, answered, refused, the reset its headers announced, in seconds from ``sent``)."""

    def __init__(self, rpm: int, window: float, latencies: list[float], retry: bool) -> None:
        self.rpm, self.window, self.latencies, self.retry = rpm, window, latencies, retry
        self.admitted: list[float] = []
        self.log: list[tuple[float, float, bool, float]] = []

    def __call__(self, k: int, now: float) -> tuple[float, bool, dict[str, str]]:
        latency = self.latencies[k % len(self.latencies)]
        recent = [t for t in self.admitted if t > now - self.window]
        refused = len(recent) >= self.rpm
        if refused:
            reset = recent[len(recent) - self.rpm] + self.window - now
        else:
            self.admitted.append(now)
            recent.append(now)
            reset = recent[0] + self.window - now
        reset = math.ceil(reset * 1000) / 1000
        said = {
            "x-ratelimit-limit-requests": str(self.rpm),
            "x-ratelimit-remaining-requests": str(max(self.rpm - len(recent), 0)),
            "x-ratelimit-reset-requests": f"{reset}s",
        }
        if refused and self.retry:
            said["retry-after-ms"] = str(math.ceil(reset * 1000))
        self.log.append((now, now + latency, refused, reset))
        return latency, refused, said

    def refused_before_the_reset(self) -> list[int]:
        """The requests refused though sent before the reset that the last answer heard when
        they went had announced (after the first answer: before it, nothing was known)."""
        first = min(answered for _, answered, _, _ in self.log)
        wrong = []
        for k, (sent, _, refused, _) in enumerate(self.log):
            heard = [entry for entry in self.log if entry[1] <= sent]
            if not refused or sent <= first or not heard:
                continue
            last = max(heard, key=lambda entry: entry[1])
            if sent < last[0] + last[3] - 1e-9:
                wrong.append(k)
        return wrong


@PROPERTY
@given(
    setup=setups(),
    rpm=st.integers(1, 12),
    window=st.sampled_from([0.5, 2.0, 6.0]),
    latencies=st.lists(LATENCIES, min_size=1, max_size=10),
    retry=st.booleans(),
)
def test_no_more_go_than_the_headers_allow(setup, rpm, window, latencies, retry):
    """Against an honest server every call gets its answer, and every request it refuses was
    sent after the reset the last answer heard had announced: while the headers say what
    remains, the controller keeps within it (after a reset, the headers say nothing until the
    probe's answer, and a slow probe is followed by another ``PROBE_GAP`` later)."""
    setup = {**setup, "max_wait": 300.0}
    loop = VirtualLoop()
    rate = controller(loop, setup)
    server = HonestServer(rpm, window, latencies, retry)
    calls = drive(rate, loop, setup["starts"], server)
    check_bounds(calls, setup, max(latencies))
    assert all(c.ok for c in calls), [c.error for c in calls]
    assert server.refused_before_the_reset() == [], server.log
