"""Rate limits: the toy server enforces them like OpenAI (checked with the ``openai`` SDK), and
the API backends' rate controller keeps every row through 429s, empty windows and a limit that
changes mid-run. Everything runs over HTTP against the toy server; the assertions are counts,
never times (a short ``limit_window`` is a minute on a faster clock)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request

import openai
import pandas as pd
import pytest

from relevancy import AnswerRelevancy, make_embedder, make_generator
from relevancy.backends import _ratelimit
from relevancy.backends._ratelimit import PROBE_GAP, RateController, parse_reset
from relevancy.cli import main
from relevancy.scoring.estimate import estimate
from relevancy.testing._cli import parse_args, server_options
from relevancy.testing._limits import RateLimits, format_reset
from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL, OpenAICompatServer

from helpers import cli_backends, write_rows

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


def sdk(srv: OpenAICompatServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)


def rows(n: int) -> list[dict[str, str]]:
    return [
        {
            "user_input": f"What does widget {i} do?",
            "response": f"Widget {i} tightens bolts on the assembly line.",
        }
        for i in range(n)
    ]


def metric(srv: OpenAICompatServer, **options: object) -> AnswerRelevancy:
    """The metric on the toy server's models, no cache (every row sends its requests)."""
    both = {"base_url": srv.base_url, **options}
    return AnswerRelevancy(
        llm=make_generator(f"openai:{CHAT_MODEL}", **both),
        embeddings=make_embedder(f"openai:{EMBEDDING_MODEL}", **both),
        cache=False,
    )


# --- the toy server's limits -------------------------------------------------------------------
def test_every_answer_carries_the_limit_headers_and_remaining_counts_down() -> None:
    with OpenAICompatServer(rpm=5, tpm=10_000) as srv:
        client = sdk(srv)
        seen = []
        for _ in range(3):
            raw = client.chat.completions.with_raw_response.create(
                model=CHAT_MODEL, messages=MESSAGES, max_tokens=10
            )
            seen.append(raw.headers)
        emb = client.embeddings.with_raw_response.create(model=EMBEDDING_MODEL, input=["a b"])
    assert [h["x-ratelimit-remaining-requests"] for h in seen] == ["4", "3", "2"]
    assert all(h["x-ratelimit-limit-requests"] == "5" for h in seen)
    assert all(h["x-ratelimit-limit-tokens"] == "10000" for h in seen)
    tokens = [int(h["x-ratelimit-remaining-tokens"]) for h in seen]
    assert tokens[0] > tokens[1] > tokens[2]  # prompt + max_tokens counted at admission
    assert parse_reset(seen[0]["x-ratelimit-reset-requests"]) is not None
    # each model has its own window
    assert emb.headers["x-ratelimit-remaining-requests"] == "4"


def test_a_request_over_the_limit_gets_openais_429() -> None:
    with OpenAICompatServer(rpm=2) as srv:
        client = sdk(srv)
        for _ in range(2):
            client.chat.completions.create(model=CHAT_MODEL, messages=MESSAGES)
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model=CHAT_MODEL, messages=MESSAGES)
        stats = srv.stats()
    error = caught.value
    assert error.status_code == 429
    assert error.code == "rate_limit_exceeded" and error.type == "requests"
    assert "requests per min (RPM): Limit 2, Used 2, Requested 1" in error.message
    headers = error.response.headers
    assert int(headers["retry-after"]) >= 1 and int(headers["retry-after-ms"]) > 0
    assert headers["x-ratelimit-remaining-requests"] == "0"
    assert stats["limits"]["rejected"] == {"requests": 1, "tokens": 0}
    assert stats["by_status"] == {200: 2, 429: 1}


def test_tokens_limit_and_no_retry_after_option() -> None:
    with OpenAICompatServer(tpm=100, limit_retry_after=False) as srv:
        client = sdk(srv)
        client.chat.completions.create(model=CHAT_MODEL, messages=MESSAGES, max_tokens=50)
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model=CHAT_MODEL, messages=MESSAGES, max_tokens=50)
    assert caught.value.type == "tokens"
    assert "tokens per min (TPM): Limit 100" in caught.value.message
    headers = caught.value.response.headers
    assert "retry-after" not in headers and "retry-after-ms" not in headers
    assert "x-ratelimit-reset-tokens" in headers


def test_the_window_slides() -> None:
    now = [0.0]
    limits = RateLimits(rpm=2, window=60.0, clock=lambda: now[0])
    assert limits.admit("m", 1)[1] is None
    now[0] = 30.0
    assert limits.admit("m", 1)[1] is None
    now[0] = 59.0
    headers, refused = limits.admit("m", 1)
    assert refused is not None and headers["retry-after"] == "1"  # the first leaves at 60
    now[0] = 60.0
    assert limits.admit("m", 1)[1] is None  # the first has left; the one at 30 still counts
    now[0] = 89.0
    assert limits.admit("m", 1)[1] is not None
    assert format_reset(0.02) == "20ms" and format_reset(90) == "1m30s"
    assert parse_reset("1m30s") == 90 and parse_reset("20ms") == pytest.approx(0.02)


def test_limits_change_through_the_admin_endpoint_and_the_command_line() -> None:
    with OpenAICompatServer(rpm=1) as srv:
        sdk(srv).chat.completions.create(model=CHAT_MODEL, messages=MESSAGES)
        request = urllib.request.Request(
            srv.base_url.replace("/v1", "/admin/limits"),
            data=json.dumps({"rpm": 10}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request) as answer:
            assert json.load(answer)["rpm"] == 10
        sdk(srv).chat.completions.create(model=CHAT_MODEL, messages=MESSAGES)  # admitted now
    argv = [
        "--rpm",
        "60",
        "--tpm",
        "40000",
        "--limit-window",
        "6",
        "--no-limit-retry-after",
        "--batch-delay",
        "2",
    ]
    options = server_options(parse_args(argv))
    assert (options["rpm"], options["tpm"], options["limit_window"]) == (60, 40000, 6.0)
    assert options["limit_retry_after"] is False and options["batch_delay"] == 2.0


# --- the rate controller -----------------------------------------------------------------------
def test_429s_with_retry_after_are_waited_out_and_concurrency_backs_off() -> None:
    # 8 requests go out at once into a limit of 2 per window: most are refused, none is lost
    with OpenAICompatServer(rpm=2, limit_window=0.25) as srv:
        m = metric(srv)
        results = m.score_many(rows(12))
        stats = srv.stats()
    rate = m.llm.rate.snapshot()
    assert [r.error for r in results if r.error] == []
    refused = stats["limits"]["rejected"]["requests"]
    assert refused > 0
    assert rate["throttled"] == refused - m.embeddings.rate.snapshot()["throttled"]
    assert rate["retries"] >= rate["throttled"] and rate["failed"] == 0
    assert rate["decreases"] >= 1 and rate["lowest"] < 8


def test_429s_without_retry_after_use_the_reset_headers() -> None:
    with OpenAICompatServer(rpm=2, limit_window=0.25, limit_retry_after=False) as srv:
        m = metric(srv)
        results = m.score_many(rows(8))
        refused = srv.stats()["limits"]["rejected"]["requests"]
    assert [r.error for r in results if r.error] == []
    assert refused > 0 and m.llm.rate.snapshot()["throttled"] > 0


def test_a_429_with_no_header_at_all_backs_off_and_retries() -> None:
    with OpenAICompatServer(retry_after=0) as srv:
        srv.script(["429", "429"])  # scripted 429s: no x-ratelimit headers
        m = metric(srv, concurrency=1)
        results = m.score_many(rows(2))
    rate = m.llm.rate.snapshot()
    assert [r.error for r in results if r.error] == []
    assert rate["throttled"] + m.embeddings.rate.snapshot()["throttled"] == 2


def test_headers_saying_nothing_remains_pause_before_a_429() -> None:
    # one request at a time: the answer that says 0 remaining makes the next one wait
    with OpenAICompatServer(rpm=3, limit_window=1.5) as srv:
        m = metric(srv, concurrency=1)
        results = m.score_many(rows(5))
        stats = srv.stats()
    assert [r.error for r in results if r.error] == []
    assert stats["limits"]["rejected"] == {"requests": 0, "tokens": 0}
    assert m.llm.rate.snapshot()["pauses"] >= 1 and m.llm.rate.snapshot()["throttled"] == 0


def test_a_limit_lowered_mid_run_loses_no_row() -> None:
    with OpenAICompatServer(limit_window=0.25) as srv:
        m = metric(srv, concurrency=4)  # rows keep coming after the first result
        lowered = []

        def lower(i: int, result: object) -> None:
            if not lowered:
                srv.set_limits(rpm=2)
                lowered.append(i)

        results = m.score_many(rows(24), on_result=lower)
        refused = srv.stats()["limits"]["rejected"]["requests"]
    assert [r.error for r in results if r.error] == []
    assert m.llm.rate.limits["requests"] == 2  # read from the headers once they appeared
    assert refused == sum(b.rate.snapshot()["throttled"] for b in (m.llm, m.embeddings))


def test_a_row_still_refused_after_the_longest_wait_fails_with_a_clear_error() -> None:
    with OpenAICompatServer(rpm=1, limit_window=60) as srv:
        m = metric(srv, concurrency=1)
        m.llm.rate.max_wait = 1.0  # the window is 60 s: the second request cannot wait that long
        results = m.score_many(rows(2))
    errors = [r.error for r in results if r.error]
    assert len(errors) == 1
    assert "still rate-limited" in errors[0] and "--batch-api" in errors[0]


def test_fixed_concurrency_stays_at_its_maximum() -> None:
    rate = RateController("m", maximum=4, adaptive=False)
    rate.throttled({"retry-after-ms": "0"})
    rate.observe({"x-ratelimit-remaining-requests": "100"}, 0.01)
    assert rate.concurrency == 4
    adaptive = RateController("m", maximum=64, start=8)
    adaptive.throttled({"retry-after-ms": "0"})
    assert adaptive.concurrency == 4 and "at once" in adaptive.describe()


class Clocked:
    """A controller on a clock the test sets: ``send(at)`` takes a slot at time ``at``;
    ``answer(number, remaining)`` answers that request, its headers saying ``remaining``."""

    def __init__(self) -> None:
        self.now = 0.0
        self.rate = RateController("m", maximum=64, start=64, clock=lambda: self.now)

    def send(self, at: float) -> int:
        self.now = at
        return asyncio.run(self.rate._acquire(at))

    def answer(self, number: int, remaining: int | None) -> None:
        self.rate._release(number)
        headers = {} if remaining is None else {"x-ratelimit-remaining-requests": str(remaining)}
        self.rate.observe(headers, 0.1, sent=number)


def test_requests_sent_just_before_an_answered_one_may_not_be_in_its_headers() -> None:
    # the server admits requests sent close together in any order, so an answer's headers
    # may miss those sent just before it (and any still unanswered): they count as sent after
    clocked = Clocked()
    rate, send, answer = clocked.rate, clocked.send, clocked.answer
    answer(send(0.0), 500)  # the quickest answer: 0.1 s, so "just before" is within 0.05 s
    far, a, b, x, later = send(1.0), send(1.5), send(1.52), send(1.53), send(1.7)
    answer(a, 30)
    answer(b, 30)
    answer(x, 20)  # a and b were sent 30 and 10 ms before x; `later` after it; `far` waits
    assert rate.budget == 20 - 1 - 3
    answer(far, 10)  # sent long before the others, unanswered until now: those after count
    assert rate.budget == 10 - 4
    answer(later, 15)  # nothing sent close before it or after it: the headers say it all
    assert rate.budget == 15


def test_once_none_is_in_flight_the_fewest_remaining_is_the_budget() -> None:
    # the server admitted a, b, c in that order (3, 2, 1 remaining); b's answer comes last.
    # Read alone, its headers less c (sent after) and a (sent just before) leave nothing, but
    # with none in flight the request admitted last (c) counted every other: 1 may still go
    clocked = Clocked()
    rate, send, answer = clocked.rate, clocked.send, clocked.answer
    answer(send(0.0), 500)  # the quickest answer: 0.1 s
    a, b, c = send(1.0), send(1.01), send(1.02)
    answer(c, 1)
    assert rate.budget == 1 - 2  # a and b unanswered
    answer(a, 3)
    assert rate.budget == 3 - 2  # b and c sent after it
    answer(b, 2)
    assert rate.budget == 1  # not 2 - 1 - 1

    # the server admitted b, c, then a (a sent first but on a slow connection), answered in
    # that order: a counted every other, though b and c went after it and long after
    clocked = Clocked()
    rate, send, answer = clocked.rate, clocked.send, clocked.answer
    answer(send(0.0), 500)
    a, b, c = send(1.0), send(1.2), send(1.4)  # far apart: none "just before" another
    answer(b, 3)
    answer(c, 2)
    answer(a, 1)
    assert rate.budget == 1  # not a's 1 less b and c

    # not when one of them came back without headers (it may have been admitted last)
    clocked = Clocked()
    rate, send, answer = clocked.rate, clocked.send, clocked.answer
    answer(send(0.0), 500)
    g, h = send(1.0), send(1.01)
    answer(g, None)
    answer(h, 5)
    assert rate.budget == 5 - 1

    # nor across a 429: the headers missed something
    clocked = Clocked()
    rate, send, answer = clocked.rate, clocked.send, clocked.answer
    answer(send(0.0), 500)
    i, j = send(1.0), send(1.01)
    rate.throttled({"retry-after-ms": "0"})
    answer(i, 6)
    answer(j, 5)
    assert rate.budget == 5 - 1


def test_a_spent_window_is_waited_from_when_the_request_was_sent(monkeypatch) -> None:
    # the server counts a reset from admission, before a long generation ends: waited from the
    # answer, a window that frees 5 s after the request went would be waited 2 s too long. It
    # is counted from the send plus the quickest answer's time (a request sent in a burst
    # reaches the server a moment later), and the probe's answer wakes the others at once
    clocked = Clocked()
    rate = clocked.rate

    async def nap(future: asyncio.Future[None], seconds: float) -> None:  # on the test's clock
        if not future.done():
            clocked.now += seconds

    monkeypatch.setattr(_ratelimit, "_nap", nap)
    clocked.answer(clocked.send(0.0), 500)  # the quickest answer: 0.1 s
    number = clocked.send(1.0)
    clocked.now = 3.0  # a 2 s generation
    rate._release(number)
    spent = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "5s"}
    rate.observe(spent, 2.0, sent=number)
    clocked.send(3.0)  # waits for the window, then probes it
    assert clocked.now == pytest.approx(1.0 + 0.1 + 5.0)
    # the next waits for the probe's answer, or PROBE_GAP
    clocked.send(clocked.now)
    assert clocked.now == pytest.approx(1.0 + 0.1 + 5.0 + PROBE_GAP)


def test_the_probes_answer_wakes_the_requests_waiting_for_the_window() -> None:
    async def scenario() -> float:
        clock = {"now": 0.0}
        rate = RateController("m", maximum=8, start=8, clock=lambda: clock["now"])
        probe = await rate._acquire(0.0)
        rate._release(probe)
        rate.observe(
            {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "60s"},
            0.01,
            sent=probe,
        )
        waiting = asyncio.ensure_future(rate._acquire(0.0))  # sleeps until the reset
        await asyncio.sleep(0.05)
        assert not waiting.done()
        start = time.monotonic()
        rate.observe({"x-ratelimit-remaining-requests": "5"}, 0.01)  # room again
        await asyncio.wait_for(waiting, 2.0)
        return time.monotonic() - start

    assert asyncio.run(scenario()) < 1.0  # not the 5 s a sleep lasts before it looks again


def test_slow_start_goes_straight_to_what_the_headers_leave_room_for() -> None:
    rate = RateController("m", maximum=64, start=8)
    for _ in range(8):
        asyncio.run(rate._acquire(0.0))
    rate._release(8)
    rate.observe({"x-ratelimit-remaining-requests": "40"}, 0.1, sent=8)
    # 7 still in flight (not in the headers: 40 less those 7 may go) and the 33 the rest allow
    assert rate.concurrency == 7 + (40 - 7)
    # at most the maximum
    rate = RateController("m", maximum=16, start=8)
    rate.observe({"x-ratelimit-remaining-requests": "400"}, 0.1)
    assert rate.concurrency == 16


def test_the_token_budget_holds_one_request_back_and_requests_are_exact() -> None:
    # tokens are estimated (prompts differ in length), so one request's worth stays unspent;
    # requests are counted exactly, so none is held back for them
    rate = RateController("m", maximum=64)
    for cost in (800, 1000, 900):  # the estimate is their mean at first: 900
        rate.observe({}, 0.01, tokens=cost)
    assert rate.tokens_per_request == pytest.approx(900)
    rate.observe(
        {"x-ratelimit-remaining-tokens": "9000", "x-ratelimit-remaining-requests": "50"},
        0.01,
        tokens=900,
    )
    assert rate.budget == 9  # 10 requests' worth, one held back
    rate.observe(
        {"x-ratelimit-remaining-tokens": "900000", "x-ratelimit-remaining-requests": "7"},
        0.01,
        tokens=900,
    )
    assert rate.budget == 7  # the requests left, all of them
    rate.observe({}, 0.01, tokens=1900)
    assert rate.tokens_per_request == pytest.approx((800 + 1000 + 900 * 3 + 1900) / 6)
    # after the first 20, a slow moving average: one long prompt does not swing it
    for _ in range(30):
        rate.observe({}, 0.01, tokens=900)
    before = rate.tokens_per_request
    rate.observe({}, 0.01, tokens=1900)
    assert rate.tokens_per_request - before == pytest.approx(0.05 * (1900 - before))


# --- what the user sees ------------------------------------------------------------------------
def test_the_estimate_accounts_for_the_limit(toy_server: OpenAICompatServer) -> None:
    m = metric(toy_server)
    plan = estimate(m, 1000, rpm=500)
    assert plan.describe_limit() == "1,000 rows at 500 RPM: at least 2 min"
    assert "at least 2 min" in plan.describe()  # no speed measured yet: the limit's floor
    assert estimate(m, 1000).describe_limit() == ""  # no limit known


def test_the_cli_shows_requests_at_once_and_the_limit(tmp_path, capsys) -> None:
    src = write_rows(tmp_path / "pairs.csv", rows(12))
    with OpenAICompatServer(rpm=3, limit_window=0.2) as srv:
        code = main(
            [
                "score",
                str(src),
                "-o",
                str(tmp_path / "out.csv"),
                "--no-cache",
                "--rpm",
                "600",
                *cli_backends(srv),
            ]
        )
    err = capsys.readouterr().err
    assert code == 0
    assert "rate limit    12 rows at 600 RPM: at least" in err
    assert "requests: " in err and " at once" in err
    assert pd.read_csv(tmp_path / "out.csv")["score"].notna().all()


def test_fixed_concurrency_from_the_cli(tmp_path, capsys) -> None:
    src = write_rows(tmp_path / "pairs.csv", rows(6))
    with OpenAICompatServer(rpm=2, limit_window=0.2) as srv:
        code = main(
            [
                "score",
                str(src),
                "-o",
                str(tmp_path / "out.csv"),
                "--no-cache",
                "--concurrency",
                "3",
                "--fixed-concurrency",
                *cli_backends(srv),
            ]
        )
    err = capsys.readouterr().err
    assert code == 0
    assert "requests: 3 + 3 at once" in err  # the generator's and the embedder's, fixed at 3
