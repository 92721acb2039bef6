"""The rate controller against servers that ask for the impossible, on a virtual clock: a wait
longer than the run's patience fails the rows at once in the server's words and wakes every
waiting request (never a hang), 429s without a wait back off afresh after each answer (no row
lost to a backoff grown to 30 s), and headers that are not finite numbers are no headers.

The clock is :mod:`virtual_time`'s: an hour-long Retry-After costs nothing, and a lost wake-up
is a :class:`virtual_time.Hang` at once, not a test that times out.
"""

from __future__ import annotations

import pytest
from virtual_time import VirtualLoop, drive

from relevancy.backends._ratelimit import RateController, RateLimitedError, parse_reset
from relevancy.backends._ratelimit_headers import header_number, retry_after

LATENCY = 0.2


def controller(loop: VirtualLoop, **options: object) -> RateController:
    return RateController("toy-chat at http://toy/v1", clock=loop.time, **options)


@pytest.mark.parametrize(
    "headers, words",
    [
        ({"retry-after": "3600"}, "retry-after: 3600"),
        ({"retry-after-ms": "3600000"}, "retry-after-ms: 3600000"),
        ({"x-ratelimit-reset-requests": "23h"}, "x-ratelimit-reset-requests: 23h"),
    ],
)
def test_a_429_asking_for_an_hour_fails_every_waiting_request_at_once(headers, words) -> None:
    # six calls on two slots: the two sent are refused for an hour; the four waiting for a slot
    # must learn it too (before the fix: "4 still waiting; in_flight=0", forever)
    loop = VirtualLoop()
    rate = controller(loop, maximum=2, start=2)
    calls = drive(rate, loop, [0.0] * 6, lambda k, now: (LATENCY, True, dict(headers)))
    assert all(isinstance(c.error, RateLimitedError) for c in calls)
    assert max(c.end for c in calls) == pytest.approx(LATENCY)  # at once, not after 300 s
    text = str(calls[-1].error)
    assert text.startswith("still rate-limited by toy-chat at http://toy/v1: the server asks ")
    assert f"(the server said {words}" in text and "past the longest wait of 300 s" in text
    assert '"Rate limit reached."' in text  # the 429's own message
    assert rate.snapshot()["failed"] == 6


@pytest.mark.parametrize("reset", ["23h", "1e9"])
def test_a_spent_window_that_resets_in_a_day_fails_the_rest_at_once(reset) -> None:
    loop = VirtualLoop()
    rate = controller(loop, maximum=2, start=2)
    spent = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": reset}
    calls = drive(rate, loop, [0.0] * 6, lambda k, now: (LATENCY, False, dict(spent)))
    assert [c.ok for c in calls] == [True, True, False, False, False, False]
    assert max(c.end for c in calls) == pytest.approx(LATENCY)
    assert all(isinstance(c.error, RateLimitedError) for c in calls[2:])
    said = f"x-ratelimit-remaining-requests: 0, x-ratelimit-reset-requests: {reset}"
    assert f"(the server said {said})" in str(calls[2].error)


def test_a_request_woken_for_a_slot_it_does_not_take_passes_the_wake_up_on() -> None:
    # one slot, three calls: the first is refused for longer than the patience of the second
    # (which started later, its patience almost spent) but not of the third; the second is
    # woken for the slot, fails, and must hand the wake-up to the third
    loop = VirtualLoop()
    rate = controller(loop, maximum=1, start=1, max_wait=10.0)

    def reply(k: int, now: float) -> tuple[float, bool, dict[str, str]]:
        return (5.0, True, {"retry-after": "6"}) if k == 0 else (LATENCY, False, {})

    calls = drive(rate, loop, [0.0, 0.1, 4.0], reply)
    assert calls[2].ok
    assert all(c.end < 20 for c in calls)


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_429s_without_a_wait_back_off_afresh_after_each_answer() -> None:
    clock = Clock()
    rate = RateController("m", clock=clock)
    rate.throttled({})
    rate.throttled({})
    rate.throttled({})  # the backoff has doubled to 8 s
    clock.now = 100.0
    rate.observe({}, 0.1)  # an answer: the next 429 that names no wait waits about 1 s again
    rate.throttled({})
    assert rate.pause_until - clock.now <= 1.25


def test_a_429_on_every_third_request_loses_no_row() -> None:
    # the probe's case: 60 calls, every third request refused with no header at all. Before,
    # the backoff only grew (a success never reset it) and 43 of 60 rows failed after 271 s
    loop = VirtualLoop()
    rate = controller(loop, maximum=16)
    calls = drive(rate, loop, [0.0] * 60, lambda k, now: (LATENCY, k % 3 == 2, {}))
    assert [c.error for c in calls if not c.ok] == []
    assert rate.snapshot()["throttled"] > 0


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999", "NaN", "lots"])
def test_a_header_that_is_not_a_finite_number_is_no_header(value) -> None:
    name = "x-ratelimit-remaining-requests"
    assert header_number({name: value}, name) is None
    assert retry_after({"retry-after": value}) is None
    assert parse_reset(value) is None
    loop = VirtualLoop()
    rate = controller(loop, maximum=4)
    lying = {
        "x-ratelimit-limit-requests": value,
        "x-ratelimit-remaining-requests": value,
        "x-ratelimit-remaining-tokens": value,
        "x-ratelimit-reset-requests": value,
    }
    # before: "cannot convert float NaN to integer" on every answer, every row NaN
    calls = drive(rate, loop, [0.0] * 12, lambda k, now: (LATENCY, False, dict(lying)))
    assert [c.error for c in calls if not c.ok] == []
    assert rate.budget is None and rate.limits["requests"] is None
    assert sum(len(c.sends) for c in calls) == 12  # one request per call, none repeated


def test_a_429_whose_wait_is_not_a_number_backs_off() -> None:
    rate = RateController("m", clock=Clock())
    rate.throttled({"retry-after": "inf", "x-ratelimit-reset-requests": "nan"})
    assert 0 < rate.pause_until <= 1.25  # the backoff, not forever


@pytest.mark.parametrize(
    "refused, headers",
    [
        (True, {"retry-after": "2"}),  # a 429's pause
        (False, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"}),
    ],
)
def test_a_wait_for_the_rate_limit_is_shown_and_counted(refused, headers) -> None:
    # what the progress line and the summary read: waiting while a request sleeps for the
    # rate limit (a 429's pause or a spent window), and the seconds it slept
    loop = VirtualLoop()
    rate = controller(loop, maximum=4)
    seen: list[bool] = []
    loop.call_at(1.0, lambda: seen.append(rate.waiting))

    def reply(k: int, now: float) -> tuple[float, bool, dict[str, str]]:
        return (LATENCY, refused and k == 0, dict(headers) if k == 0 else {})

    calls = drive(rate, loop, [0.0, 0.5], reply)
    assert all(c.ok for c in calls)
    assert seen == [True] and not rate.waiting  # waiting at 1 s, not once all is done
    assert 1.5 <= rate.snapshot()["waited_s"] <= 2.5  # on the virtual clock: about 2 s
