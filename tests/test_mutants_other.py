"""Tests written against one-line bugs that a mutation audit found no test would catch: Phoenix
write-back when a 404 names no spans, the threshold's edge in Agreement's score bins, and the
rate controller's patience and wake-ups when a request gives up.

No server is needed: Phoenix's client is replaced by a fake that answers as Phoenix does, and
the rate controller runs on :mod:`virtual_time`'s clock.
"""

from __future__ import annotations

import httpx
import numpy as np
import pandas as pd
import pytest
from virtual_time import VirtualLoop, drive

from relevancy.analysis._binned import rank_bins
from relevancy.analysis.agreement import agreement
from relevancy.backends._ratelimit import RateController, RateLimitedError
from relevancy.io.exporters import phoenix as phoenix_export

# -- Phoenix write-back: a 404 that names no spans ------------------------------------------


class _SpansNamingNone:
    """Phoenix's ``client.spans`` as a server that refuses a whole batch with a 404 when one of
    its spans is unknown, without saying which (an older or proxied Phoenix)."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.posted: list[list[str]] = []
        self.stored: dict[str, dict] = {}

    def log_span_annotations(self, *, span_annotations: list[dict], sync: bool) -> None:
        ids = [a["span_id"] for a in span_annotations]
        self.posted.append(ids)
        if not set(ids) <= self.known:
            request = httpx.Request("POST", "http://phoenix.test/v1/span_annotations")
            response = httpx.Response(404, text="Not Found", request=request)
            raise httpx.HTTPStatusError("404 Not Found", request=request, response=response)
        self.stored.update({a["span_id"]: a for a in span_annotations})


def test_a_404_naming_no_span_still_sends_every_known_span_of_the_batch(monkeypatch):
    spans = _SpansNamingNone(known={"b", "c", "d", "e", "f"})
    client = type("Client", (), {"spans": spans})()
    monkeypatch.setattr(phoenix_export, "phoenix_client", lambda base_url: client)
    rows = pd.DataFrame({"span_id": list("abcdef"), "score": np.linspace(0.1, 0.9, 6)})
    ticks: list[int] = []
    report = phoenix_export.annotate_spans([rows], "http://phoenix.test", progress=ticks.append)
    # halving finds the unknown span in the first half; the second half is sent all the same
    assert sorted(spans.stored) == list("bcdef")
    assert report.written == 5
    assert report.failed == {phoenix_export.UNKNOWN_SPANS: ["a"]}
    assert report.not_tried == 0 and not report.stopped and not report.ok
    assert sum(ticks) == 6  # every row of the batch is accounted for in the progress
    assert ["d", "e", "f"] in spans.posted


# -- Agreement's score bins: a score equal to the threshold ---------------------------------


def test_a_score_equal_to_the_threshold_is_binned_at_or_above_it():
    # one bin by rank would hold every score: the edge at 0.3 must split it with 0.3 above
    x = np.array([0.1, 0.2, 0.3, 0.3, 0.4])
    bins, mean = rank_bins(x, 1, edge=0.3)
    assert bins.tolist() == [0, 0, 1, 1, 1]
    assert mean[0] < 0.3 <= mean[1]


def test_binned_precision_and_recall_match_the_point_threshold_when_it_rounds_onto_a_score():
    # the best threshold lies halfway between two scores, but between two neighbouring floats
    # the halfway point rounds onto the upper one: those answers are called good by the point
    # figures, so their bin must be on the good side of the edge in every resample too (their
    # first rank shares a bin of 20 with the five just below, and lower answers)
    lower = np.nextafter(0.5, 1.0)
    upper = np.nextafter(lower, 1.0)
    rng = np.random.default_rng(0)
    s = np.r_[
        np.round(rng.uniform(0.1, 0.45, 30), 3),
        np.full(5, lower),
        np.full(10, upper),
        np.round(rng.uniform(0.55, 0.95, 30), 3),
    ]
    y = np.r_[np.zeros(35), np.ones(40)]
    y[[0, 33, 40, 70]] = 1 - y[[0, 33, 40, 70]]
    exact = agreement(s, y, bins=0, n_boot=200)
    assert exact.threshold.value == upper
    for bins in (4, 8):
        binned = agreement(s, y, bins=bins, n_boot=200)
        for name in ("precision", "recall"):
            assert getattr(binned, name) == getattr(exact, name)


# -- the rate controller: patience and wake-ups when a request gives up ----------------------


def _controller(loop: VirtualLoop, **options: object) -> RateController:
    return RateController("toy-chat at http://toy/v1", clock=loop.time, **options)


def test_a_request_that_gives_up_on_a_spent_window_hands_its_wake_up_on():
    # two slots, five calls. A's answer leaves room for one more request in a window that
    # resets in an hour: C takes it. B (slow, no headers) frees its slot at 1 s and wakes D,
    # which finds the window spent for an hour, past its patience, and fails; E, queued behind
    # D, must be woken to fail too, not left waiting for C's answer a minute later
    loop = VirtualLoop()
    rate = _controller(loop, maximum=2, start=2, max_wait=300.0)
    window = {"x-ratelimit-remaining-requests": "2", "x-ratelimit-reset-requests": "1h"}
    script = {0: (0.2, False, window), 1: (1.0, False, {}), 2: (60.0, False, {})}

    def reply(k: int, now: float) -> tuple[float, bool, dict[str, str]]:
        return script.get(k, (0.2, False, {}))

    a, b, c, d, e = drive(rate, loop, [0.0] * 5, reply)
    assert a.ok and b.ok and c.ok
    assert isinstance(d.error, RateLimitedError) and isinstance(e.error, RateLimitedError)
    assert d.end == pytest.approx(1.0) and e.end == pytest.approx(1.0)


def test_patience_is_counted_from_the_first_send_not_from_the_latest_wait():
    # A is refused at once and told to wait 6 s; B, slow, is refused at 6 s and told to wait
    # 6 s more. Both have been at it since 0, so a wait to 12 s is past their 10 s patience:
    # both fail at 6 s (A while asleep for its retry, B as its 429 comes back), though the
    # wait still ahead, 6 s, is within it
    loop = VirtualLoop()
    rate = _controller(loop, maximum=2, start=2, max_wait=10.0)
    script = {0: (0.2, True, {"retry-after": "6"}), 1: (6.0, True, {"retry-after": "6"})}

    def reply(k: int, now: float) -> tuple[float, bool, dict[str, str]]:
        return script.get(k, (0.2, False, {}))

    a, b = drive(rate, loop, [0.0, 0.0], reply)
    assert isinstance(a.error, RateLimitedError) and isinstance(b.error, RateLimitedError)
    assert a.end == pytest.approx(6.0) and b.end == pytest.approx(6.0)
    assert len(a.sends) == len(b.sends) == 1
    # A was to be sent again (its first wait fit); B gave up as its 429 came back: no retry
    snapshot = rate.snapshot()
    assert (snapshot["throttled"], snapshot["retries"], snapshot["failed"]) == (2, 1, 2)


def test_a_request_refused_again_gives_up_on_its_patience_since_its_first_send():
    # sent at 0 and told to wait 4 s; sent again at 4.2 and told to wait 8 s: from 0 that ends
    # at 12.4 s, past its 10 s patience (from its second send it would be within it)
    loop = VirtualLoop()
    rate = _controller(loop, maximum=1, start=1, max_wait=10.0)
    script = {0: (0.2, True, {"retry-after": "4"}), 1: (0.2, True, {"retry-after": "8"})}

    def reply(k: int, now: float) -> tuple[float, bool, dict[str, str]]:
        return script.get(k, (0.2, False, {}))

    (call,) = drive(rate, loop, [0.0], reply)
    assert isinstance(call.error, RateLimitedError)
    assert call.end == pytest.approx(4.4) and len(call.sends) == 2
    assert "the server asks to wait 8 s more" in str(call.error)
    assert (rate.snapshot()["retries"], rate.snapshot()["failed"]) == (1, 1)
