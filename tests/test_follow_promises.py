"""The promises of online evaluation (``relevancy score --from ... --follow/--once``), each
against the way it broke: a judge outage loses no trace, ``--once`` fails whenever something
asked for did not happen, every trace younger than ``--late`` is read, an alert is delivered
once (kept until the webhook takes it, never posted twice), one follower per run, an MLflow
*server* is followed over HTTP, and the store's bookkeeping (what was sent, the cursor, a failed
add) is exact. The model-based test of the whole follower is tests/test_follow_model.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import SimpleNamespace

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.core.result import RelevancyResult
from relevancy.errors import RelevancyError
from relevancy.io.exporters import WriteBack
from relevancy.io.importers.live import LiveRows, LiveSource, SourceDown
from relevancy.io.webhook import post_alert
from relevancy.runs import RunStore
from relevancy.runs.follow import RunFollowed
from relevancy.scoring._follow_parts import row_outcomes
from relevancy.scoring.follow import (
    AlertRule,
    Follower,
    FollowOptions,
    Target,
    failed_for_itself,
)
from relevancy.testing.openai_server import FaultPlan, OpenAICompatServer

from helpers import cli_backends, skip_or_fail, toy_metric

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=timezone.utc)


class Clock:
    """The follower's ``now`` and ``clock``, moved by the test."""

    def __init__(self, start: datetime = T0) -> None:
        self.t = start

    def now(self) -> datetime:
        return self.t

    def clock(self) -> float:
        return self.t.timestamp()

    def advance(self, seconds: float) -> None:
        self.t += timedelta(seconds=seconds)


class Spans(LiveSource):
    """A source holding spans (key, question, answer, start time, time it becomes visible):
    ``read(start, end)`` gives the visible ones that started in [start, end)."""

    kind = "phoenix"
    key_column = "span_id"
    url = "test://spans"

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.spans: list[tuple[str, str, str, datetime, datetime]] = []
        self.reads: list[tuple[datetime, datetime]] = []
        self.down = False

    def add(self, key: str, question: str, answer: str, *, age: float = 0.0) -> None:
        """A span that started ``age`` seconds ago and is visible from now on."""
        now = self.clock.now()
        self.spans.append((key, question, answer, now - timedelta(seconds=age), now))

    def read(self, start: datetime, end: datetime) -> LiveRows:
        if self.down:
            raise SourceDown(f"{self.url} did not answer")
        self.reads.append((start, end))
        now = self.clock.now()
        found = [s for s in self.spans if start <= s[3] < end and s[4] <= now]
        frame = pd.DataFrame(
            {
                "user_input": [s[1] for s in found],
                "response": [s[2] for s in found],
                "span_id": [s[0] for s in found],
            }
        )
        return LiveRows(frame, [s[0] for s in found], [s[3].timestamp() for s in found])


class ByText:
    """A metric whose score is the answer's number ("0.2" scores 0.2); "" fails for itself,
    and while ``down`` every row fails as a judge outage does."""

    def __init__(self) -> None:
        self.down = False
        self.calls = 0

    def score_many(self, data, *, on_result=None, **_):
        out = []
        for i, (q, a) in enumerate(zip(data["user_input"], data["response"])):
            self.calls += 1
            if not str(a).strip():
                r = RelevancyResult(q, a, float("nan"), error=f"response is empty ({a!r})")
            elif self.down:
                r = RelevancyResult(q, a, float("nan"), error="generation failed: HTTP 503")
            else:
                r = RelevancyResult(q, a, float(a), strictness=3, reason="ok")
            out.append(r)
            if on_result is not None:
                on_result(i, r)
        return out


class Receiver:
    """A write-back target that records what it got, keyed by span id."""

    def __init__(self) -> None:
        self.got: list[str] = []
        self.dead = False

    def send(self, frames: list[pd.DataFrame]) -> WriteBack:
        if self.dead:
            raise RelevancyError("phoenix at http://127.0.0.1:1 did not answer")
        done = WriteBack("phoenix", "test")
        for frame in frames:
            self.got += list(frame["span_id"])
            done.written += len(frame)
        return done


def make(tmp_path, clock, source, metric, **kw):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.followed_run(source.url, "live") or store.create_followed_run(
        "live", {}, source.url
    )
    said: list[str] = []
    follower = Follower(
        metric,
        store,
        run,
        source,
        options=kw.pop("options", FollowOptions(interval=5.0, judge_first=30.0)),
        say=said.append,
        now=clock.now,
        clock=clock.clock,
        **kw,
    )
    return store, run, follower, said


# --- the outcome of each row of a write-back -----------------------------------------------------
def test_each_failure_reason_lands_on_its_own_row():
    """A target names a failed score by its key, or by "row N" (1-based, within the batch):
    each reason goes to that row and no other."""
    rows = [10, 11, 12, 13]
    frame = pd.DataFrame({"span_id": ["a", "b", "c", "d"]})
    done = WriteBack("phoenix", "test")
    done.failed = {"missing": ["b"], "refused": ["row 1", "row 4"], "odd": ["row 9", "row x"]}
    assert row_outcomes(rows, frame, "span_id", done) == {
        10: "refused",
        11: "missing",
        12: "ok",
        13: "refused",
    }
    done.failed = {"refused": ["row 3"]}
    got = row_outcomes(rows, frame, "span_id", done)
    assert got == {10: "ok", 11: "ok", 12: "refused", 13: "ok"}
    done.failed = {"refused": ["row 0"]}  # not a row: nothing is blamed on a neighbour
    assert set(row_outcomes(rows, frame, "span_id", done).values()) == {"ok"}


def test_a_followed_trace_without_an_answer_is_kept_to_fail_for_itself():
    """A file's row without an answer is skipped (and counted); a followed trace's is kept, so
    it is in the run, failed with its reason, not gone without a word."""
    from relevancy.io.importers._payloads import keep_pair
    from relevancy.io.importers.report import ImportReport

    report = ImportReport()
    assert not keep_pair(report, "span", "When?", "  ")
    assert report.skipped == {("span", "without an answer"): 1}
    live = ImportReport(keep_unanswered=True)
    assert keep_pair(live, "span", "When?", "") and live.found == 1
    assert not keep_pair(live, "span", "  ", "An answer")  # no question: nothing to score
    assert not keep_pair(live, "span", "When?", "__REDACTED__")  # hidden, not missing


def test_whose_failure_it_is():
    assert failed_for_itself("response is empty (''): give the text to score")
    assert failed_for_itself("user_input must be a string, got float nan")
    assert failed_for_itself("focus mode: the response has no sentence with a word in it")
    for passing in (
        "generation failed: HTTP 503 from http://127.0.0.1:8000/v1",
        "generation failed: timed out talking to http://x",
        "all 3 generations failed: unusable output: not JSON",
        "embedding failed: cannot reach http://x (ConnectError)",
        "RateLimitedError: still limited after 60 s",
        None,
        "",
    ):
        assert not failed_for_itself(passing), passing


# --- a judge outage -------------------------------------------------------------------------------
def test_rows_scored_during_a_judge_outage_wait_and_are_scored_when_it_answers(tmp_path):
    clock = Clock()
    source, metric, target = Spans(clock), ByText(), Receiver()
    store, run, follower, said = make(
        tmp_path, clock, source, metric, targets=[Target("phoenix", "span_id", target.send)]
    )
    follower.step()  # the first read
    metric.down = True
    for i in range(4):
        source.add(f"s{i}", f"q{i}", "0.8")
    source.add("empty", "q?", " ")  # fails for a reason of its own
    clock.advance(5)
    report = follower.step()
    assert report.scored == 1 and report.waiting == 4  # the empty answer: failed for itself
    assert store.waiting_rows(run) == [0, 1, 2, 3]
    line = follower.waiting_line()
    assert line.startswith("4 rows waiting for the judge since 09:00:05 UTC")
    assert "HTTP 503" in line
    assert any(u.startswith("4 rows waiting for the judge") for u in follower.undone())
    assert target.got == []
    # not tried again before its pause is over, however often the follower steps
    calls = metric.calls
    for _ in range(3):
        clock.advance(5)
        follower.step()
    assert metric.calls == calls and len(store.waiting_rows(run)) == 4
    # still down at the next try: tried, still waiting, the pause doubles
    clock.advance(20)
    follower.step()
    assert metric.calls == calls + 4 and len(store.waiting_rows(run)) == 4
    clock.advance(31)
    follower.step()
    assert metric.calls == calls + 4  # 60 s now
    metric.down = False
    clock.advance(30)
    report = follower.step()
    assert report.retried == 4 and store.waiting_rows(run) == []
    assert sorted(target.got) == ["s0", "s1", "s2", "s3"]  # each once, once scored
    assert store.get_run(run).n_scored == 5
    assert store.result(run, 4).error.startswith("response is empty")  # its own: stays failed
    assert follower.undone() == []
    # a restart finds nothing to do
    _, _, again, _ = make(
        tmp_path, clock, source, metric, targets=[Target("phoenix", "span_id", target.send)]
    )
    again.step()
    assert sorted(target.got) == ["s0", "s1", "s2", "s3"]


def test_when_the_judge_answers_again_the_waiting_rows_are_tried_at_once(tmp_path):
    clock = Clock()
    source, metric = Spans(clock), ByText()
    store, run, follower, _ = make(tmp_path, clock, source, metric)
    follower.step()
    metric.down = True
    source.add("a", "qa", "0.5")
    clock.advance(5)
    follower.step()
    assert store.waiting_rows(run) == [0]
    metric.down = False
    source.add("b", "qb", "0.6")  # a new row scores: the judge is back
    clock.advance(5)
    follower.step()
    clock.advance(5)
    follower.step()  # well before the 30 s pause
    assert store.waiting_rows(run) == [] and store.get_run(run).n_scored == 2
    assert store.result(run, 0).value == pytest.approx(0.5)


def test_a_judge_that_fails_for_a_while_over_http_loses_no_row(tmp_path):
    """The real OpenAI backend against the toy server answering 500 to everything: rows wait,
    and are scored once it answers again."""
    clock = Clock()
    source = Spans(clock)
    with OpenAICompatServer() as judge:
        metric = toy_metric(judge, client={"max_retries": 0, "timeout": 5}, cache=False)
        store, run, follower, said = make(tmp_path, clock, source, metric)
        follower.step()
        judge.set_faults(FaultPlan(rate=1.0, kinds=("500",)))
        for i in range(3):
            source.add(f"s{i}", f"When was the castle number {i} built?", f"In 12{i}0.")
        clock.advance(5)
        follower.step()
        assert len(store.waiting_rows(run)) == 3
        assert "HTTP 500" in follower.waiting_line()
        judge.set_faults(None)
        clock.advance(31)
        follower.step()
    assert store.waiting_rows(run) == []
    frame = store.export_frame(run)
    assert frame["score"].notna().all() and len(frame) == 3


# --- every trace younger than --late is read ------------------------------------------------------
def test_every_trace_younger_than_late_is_read(tmp_path):
    """Traces stored 9 min 20 s to 9 min 55 s after they started, with --late 10m at the
    default poll (sweeps every 60 s): all are read."""
    clock = Clock()
    source, metric = Spans(clock), ByText()
    options = FollowOptions(interval=5.0, late=timedelta(minutes=10), sweep_every=60.0)
    store, run, follower, _ = make(tmp_path, clock, source, metric, options=options)
    ages = [560 + 5 * i for i in range(8)]  # 9:20 .. 9:55
    for step in range(40):
        if step % 5 == 0 and ages:
            age = ages.pop(0)
            source.add(f"late{age}", f"q{age}", "0.7", age=age)
        follower.step()
        clock.advance(5)
    assert store.get_run(run).n_rows == 8


def test_the_cursor_moves_with_every_read(tmp_path):
    clock = Clock()
    source, metric = Spans(clock), ByText()
    store, run, follower, _ = make(tmp_path, clock, source, metric)
    for _ in range(3):
        follower.step()
        assert store.follow_cursor(run).read_to == clock.now()
        clock.advance(5)
    # each read starts no earlier than the last one's end less the overlap (between sweeps)
    (s1, e1), (s2, e2), (s3, _) = source.reads
    assert s2 == e1 - FollowOptions().overlap and s3 == e2 - FollowOptions().overlap


def test_an_add_that_fails_part_way_keeps_nothing_of_it(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_followed_run("live", {}, "test://x")
    frame = pd.DataFrame(
        {"user_input": ["q1", "q2"], "response": ["a", "b"], "span_id": ["1", "2"]}
    )
    with pytest.raises(Exception):  # noqa: B017 - any error sqlite raises for the bad time
        store.add_followed(run, frame, ["1", "2"], [1.0, object()], read_to=T0)
    assert store.get_run(run).n_rows == 0 and len(store.inputs(run)) == 0
    assert store.follow_cursor(run).read_to is None
    assert store.add_followed(run, frame, ["1", "2"], [1.0, 2.0], read_to=T0) == [0, 1]


# --- write-back -----------------------------------------------------------------------------------
def test_a_write_back_that_stops_part_way_sends_the_rest_later(tmp_path):
    clock = Clock()
    source, metric = Spans(clock), ByText()
    got: list[str] = []
    calls = {"n": 0}

    def send(frames):
        calls["n"] += 1
        done = WriteBack("phoenix", "test")
        frame = frames[0]
        if calls["n"] == 1:  # half written, then the server went away
            got.extend(frame["span_id"][: len(frame) // 2])
            done.written = len(frame) // 2
            done.stopped = "test stopped answering"
            return done
        for key in frame["span_id"]:
            if key not in got:  # a target skips what it has
                got.append(key)
                done.written += 1
        return done

    store, run, follower, _ = make(
        tmp_path, clock, source, metric, targets=[Target("phoenix", "span_id", send)]
    )
    follower.step()
    for i in range(6):
        source.add(f"s{i}", f"q{i}", "0.9")
    for _ in range(4):
        clock.advance(5)
        follower.step()
    assert sorted(got) == [f"s{i}" for i in range(6)]
    assert store.unsent_count(run, "phoenix") == 0 and follower.undone() == []


def test_a_dead_target_is_said_as_undone(tmp_path):
    clock = Clock()
    source, metric, target = Spans(clock), ByText(), Receiver()
    store, run, follower, _ = make(
        tmp_path, clock, source, metric, targets=[Target("phoenix", "span_id", target.send)]
    )
    target.dead = True
    source.add("a", "qa", "0.9")
    clock.advance(1)
    follower.run(once=True)
    assert follower.undone() == ["1 scores not written to phoenix (it did not answer)"]
    target.dead = False
    _, _, again, _ = make(
        tmp_path, clock, source, metric, targets=[Target("phoenix", "span_id", target.send)]
    )
    again.run(once=True)
    assert again.undone() == [] and target.got == ["a"]


# --- alerts: delivered once -----------------------------------------------------------------------
class Webhook:
    """A webhook receiver on 127.0.0.1: answers each POST with the next status of ``answers``
    (then 200), recording every body it read."""

    def __init__(self, answers=()) -> None:
        self.bodies: list[dict] = []
        self.answers = list(answers)
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.bodies.append(json.loads(body))
                status = hook.answers.pop(0) if hook.answers else 200
                if status == "hang":  # takes the alert, answers too late
                    time.sleep(2.5)
                    status = 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/services/T0/B0/secret"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def low_window(source: Spans, clock: Clock, n: int = 12, prefix: str = "w") -> None:
    for i in range(n):
        source.add(f"{prefix}{i}", f"q{i}", "0.05", age=50 - 3 * i)


def past_a_low_window(tmp_path, notify, *, judge_down: bool = False) -> SimpleNamespace:
    """A follower alerting below 0.9 on 1-minute windows of 10 rows, with ``notify``, that has
    read once; then 12 rows scoring 0.05 in the next minute, which is over: the follower's next
    step judges that window."""
    clock = Clock()
    source, metric = Spans(clock), ByText()
    metric.down = judge_down
    rule = AlertRule(below=0.9, window=timedelta(minutes=1), min_rows=10, notify=notify)
    store, run, follower, said = make(tmp_path, clock, source, metric, alerts=rule)
    follower.step()
    clock.advance(60)
    low_window(source, clock)
    clock.advance(65)
    return SimpleNamespace(
        clock=clock,
        source=source,
        metric=metric,
        rule=rule,
        store=store,
        run=run,
        follower=follower,
        said=said,
        again=lambda: make(tmp_path, clock, source, metric, alerts=rule)[2:],
    )


def test_an_alert_the_webhook_refused_is_kept_and_posted_once_it_answers(tmp_path):
    hook = Webhook(answers=[500, 503])
    try:
        t = past_a_low_window(
            tmp_path, lambda check: post_alert(hook.url, check, run="#1 live", timeout=5)
        )
        report = t.follower.step()
        assert report.alerts == 1 and report.undelivered == 1 and len(hook.bodies) == 1
        assert any("HTTP 500" in u and "not delivered" in u for u in t.follower.undone())
        t.clock.advance(5)
        t.follower.step()  # 503: still kept
        assert len(hook.bodies) == 2 and t.store.alert_counts(t.run)["pending"] == 1
        t.clock.advance(5)
        report = t.follower.step()
        assert report.delivered == 1 and t.store.alert_counts(t.run).get("delivered") == 1
        for _ in range(3):  # never again, by this follower or the next
            t.clock.advance(5)
            t.follower.step()
        again, _ = t.again()
        again.step()
        assert len(hook.bodies) == 3 and again.undone() == []
        assert all(
            b["relevancy"]["start"] == hook.bodies[0]["relevancy"]["start"] for b in hook.bodies
        )
        assert "secret" not in " ".join(t.said)
    finally:
        hook.close()


def test_an_alert_being_posted_when_the_follower_died_is_never_posted_twice(tmp_path):
    posted: list[dict] = []

    def dies_mid_post(check):
        posted.append(dict(check))  # the receiver has it...
        raise KeyboardInterrupt  # ...and the follower is killed before it hears back

    t = past_a_low_window(tmp_path, dies_mid_post)
    with pytest.raises(KeyboardInterrupt):
        t.follower.step()
    assert len(posted) == 1

    t.rule.notify = lambda check: posted.append(dict(check))
    again, said = t.again()
    for _ in range(3):
        again.step()
        t.clock.advance(5)
    assert len(posted) == 1  # not posted a second time
    assert any("not posted again" in line for line in said)
    assert t.store.alert_counts(t.run).get("uncertain") == 1
    (line,) = again.undone()  # the run that found it says so (--once exits 1), once
    assert line.startswith("1 alerts may not have reached the webhook")
    third, _ = t.again()
    third.step()
    assert third.undone() == [] and len(posted) == 1


def test_a_webhook_that_takes_the_alert_and_hangs_gets_it_once(tmp_path):
    """Sent whole, no answer in time: whether it was taken cannot be known, so it is not posted
    again (posting it after each time-out would post it again and again); said, and undone."""
    hook = Webhook(answers=["hang"])
    try:
        t = past_a_low_window(
            tmp_path, lambda check: post_alert(hook.url, check, run="#1 live", timeout=1)
        )
        for _ in range(4):
            t.follower.step()
            t.clock.advance(5)
        time.sleep(2)  # the receiver's late answer
        assert len(hook.bodies) == 1
        assert t.store.alert_counts(t.run).get("uncertain") == 1
        assert any(x.startswith("WARN: the webhook at http://127.0.0.1") for x in t.said)
        assert any("may not have reached the webhook" in u for u in t.follower.undone())
        assert "secret" not in " ".join(t.said)
    finally:
        hook.close()


def test_a_webhook_that_is_not_there_gets_the_alert_once_it_is(tmp_path):
    """Refused before anything was sent: not taken, posted again later (not 'uncertain')."""
    from relevancy.testing.processes import free_port

    url = {"now": f"http://127.0.0.1:{free_port()}/hook"}
    hook = Webhook()
    try:
        t = past_a_low_window(
            tmp_path, lambda check: post_alert(url["now"], check, run="#1", timeout=2)
        )
        t.follower.step()
        assert t.store.alert_counts(t.run).get("pending") == 1
        assert any("could not be reached" in u for u in t.follower.undone())
        url["now"] = hook.url
        t.clock.advance(5)
        t.follower.step()
        assert len(hook.bodies) == 1 and t.store.alert_counts(t.run).get("delivered") == 1
    finally:
        hook.close()


def test_a_drop_is_judged_against_the_window_checked_by_the_last_follower(tmp_path):
    """The drop test's baseline is the window before: after a restart, the last window the
    earlier follower checked is read again for it."""
    clock = Clock()
    source, metric = Spans(clock), ByText()
    rule = AlertRule(below=None, window=timedelta(minutes=1), min_rows=10)
    store, run, follower, _ = make(tmp_path, clock, source, metric, alerts=rule)
    follower.step()
    clock.advance(60)
    for i in range(12):
        source.add(f"hi{i}", f"q{i}", f"0.{90 + i % 5}", age=50 - 3 * i)
    clock.advance(65)
    follower.step()
    assert len(store.windows(run)) == 1
    _, _, again, said = make(tmp_path, clock, source, metric, alerts=rule)
    clock.advance(-5)
    for i in range(12):
        source.add(f"lo{i}", f"q{i}", f"0.{10 + i % 5}", age=50 - 3 * i)
    clock.advance(65)
    report = again.step()
    assert report.alerts == 1, said
    assert store.windows(run)["status"].tolist() == ["ok", "alert"]


def test_the_drop_baseline_is_the_last_window_with_scores_not_the_last_checked(tmp_path):
    """A window of failed rows only between a full high one and a full low one: the low one is
    judged against the high one (as over the whole run), also by a follower started after the
    failed one was checked."""
    clock = Clock()
    source, metric = Spans(clock), ByText()
    rule = AlertRule(below=None, window=timedelta(minutes=1), min_rows=10)
    store, run, follower, _ = make(tmp_path, clock, source, metric, alerts=rule)
    follower.step()
    clock.advance(60)
    for i in range(12):
        source.add(f"hi{i}", f"q{i}", f"0.{90 + i % 5}", age=50 - 3 * i)
    clock.advance(60)
    for i in range(3):
        source.add(f"failed{i}", f"q{i}", " ", age=50 - 3 * i)  # fail for their own reason
    clock.advance(65)
    follower.step()
    assert store.windows(run)["status"].tolist() == ["ok", "too_few"]
    _, _, again, said = make(tmp_path, clock, source, metric, alerts=rule)
    clock.advance(-5)
    for i in range(12):
        source.add(f"lo{i}", f"q{i}", f"0.{10 + i % 5}", age=50 - 3 * i)
    clock.advance(65)
    report = again.step()
    assert report.alerts == 1, said
    assert store.windows(run)["status"].tolist() == ["ok", "too_few", "alert"]


def test_a_window_with_a_row_waiting_for_the_judge_is_not_judged_yet(tmp_path):
    t = past_a_low_window(tmp_path, None, judge_down=True)
    t.follower.step()
    assert t.store.windows(t.run).empty  # 12 rows wait: the window is not complete
    t.metric.down = False
    t.clock.advance(31)
    report = t.follower.step()
    assert report.alerts == 1 and t.store.windows(t.run)["status"].tolist() == ["alert"]


# --- one follower per run -------------------------------------------------------------------------
HOLD = """
import sys, time
from relevancy.runs import RunStore
store = RunStore(sys.argv[1])
store.take_follow_lease(int(sys.argv[2]), ttl=300)
print("held", flush=True)
time.sleep(120)
"""


def test_a_second_follower_is_told_who_holds_the_run_and_a_dead_one_does_not_block(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_followed_run("live", {}, "test://x")
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(store.path), str(run)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(RunFollowed) as info:
            store.take_follow_lease(run, ttl=300)
        said = str(info.value)
        assert f"pid {child.pid} on " in said and "stop that follower first" in said
        assert "\n" not in said
        os.kill(child.pid, signal.SIGKILL)  # as a crash or a power loss does
        child.wait(timeout=30)
        lease = store.take_follow_lease(run, ttl=300)  # at once: its process is gone
        assert store.beat_follow_lease(lease)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()


def test_a_holder_elsewhere_is_taken_over_once_silent_past_its_ttl(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_followed_run("live", {}, "test://x")
    db = store._connect()
    with db:  # a follower on another machine, last heard 10 s ago, ttl 5 s
        db.execute(
            "INSERT INTO follow_lease VALUES (?, 'other-host', 4242, '', 't', '2026-12-07T09:00', "
            "?, 5)",
            (run, time.time() - 10),
        )
    db.close()
    lease = store.take_follow_lease(run, ttl=300)
    assert store.beat_follow_lease(lease)
    with db_of(store) as d:  # and a fresh one is not
        d.execute("UPDATE follow_lease SET host = 'other-host', beat = ?", (time.time(),))
    with pytest.raises(RunFollowed, match="once it is silent for 300 s"):
        store.take_follow_lease(run, ttl=300)
    assert not store.beat_follow_lease(lease) or True  # the row was changed by hand above


class db_of:  # noqa: N801 - a tiny context manager
    def __init__(self, store: RunStore) -> None:
        self.db = store._connect()

    def __enter__(self):
        return self.db

    def __exit__(self, *exc):
        self.db.commit()
        self.db.close()


# --- MLflow: a server over HTTP -------------------------------------------------------------------
def test_mlflow_traces_are_read_in_pages_the_server_allows():
    from relevancy.io.importers import live

    asked: list[int] = []

    class Page(list):
        token = None

    class Client:
        def get_experiment_by_name(self, name):
            return SimpleNamespace(experiment_id="1")

        def search_traces(self, locations, filter_string, max_results, order_by, page_token):
            asked.append(max_results)
            if max_results > 500:
                raise RuntimeError(f"Invalid value {max_results} for parameter 'max_results'")
            page = Page()
            page.token = {None: "p2", "p2": "p3", "p3": None}[page_token]
            return page

    source = live.MlflowLive("mlflow+http://127.0.0.1:1#exp")
    rows = source._read(Client(), T0 - timedelta(hours=1), T0)
    assert asked == [500, 500, 500] and len(rows.frame) == 0


@pytest.mark.mlflow_store
def test_an_mlflow_server_is_followed_over_http_and_once_fails_while_anything_is_undone(
    tmp_path, capsys, toy_server
):
    """A real MLflow tracking server (the older 3.17 one) over HTTP: the first read works;
    while the judge fails, --once exits 1 naming the waiting rows, then scores them; with the
    write-back server gone, --once exits 1 naming the scores not written."""
    from relevancy.testing.tool_servers import MlflowServer, old_mlflow_python

    try:
        import mlflow
    except ImportError as exc:
        skip_or_fail(f"MLflow is not installed ({exc}): bash scripts/setup.sh dev")
    if old_mlflow_python() is None:
        skip_or_fail("no .venv-mlflow (the MLflow server): bash scripts/setup.sh dev")
    from test_follow import QUESTIONS, trace_into

    db = tmp_path / "mlflow.db"
    backend = f"sqlite:///{db}"
    store_path = tmp_path / "runs.sqlite3"
    with MlflowServer(tmp_path / "server", backend) as server:
        client = mlflow.MlflowClient(tracking_uri=server.url)
        experiment_id = client.create_experiment("support-bot")
        with OpenAICompatServer(text_mode="lines") as app:
            trace_into(server.url, experiment_id, app, QUESTIONS[:3])
            args = [
                "score",
                "--from",
                f"mlflow+{server.url}#support-bot",
                "--once",
                "--since",
                "1h",
                "--to-mlflow",
                "--store",
                str(store_path),
                *cli_backends(toy_server, "-q"),
            ]
            toy_server.set_faults(FaultPlan(rate=1.0, kinds=("503",)))
            assert main(args) == 1
            printed = capsys.readouterr()
            assert "3 new · 3 failed for now · 3 rows waiting for the judge" in printed.out
            assert "FAIL: 3 rows waiting for the judge since" in printed.err
            toy_server.set_faults(None)
            assert main(args) == 0
            printed = capsys.readouterr()
            assert "3 of them after waiting for the judge" in printed.out
            assert "3 sent to mlflow" in printed.out and "FAIL" not in printed.err
            traces = client.search_traces(locations=[experiment_id], max_results=100)
            for trace in traces:
                ours = [a for a in trace.info.assessments if a.name == "answer_relevancy"]
                assert len(ours) == 1
            trace_into(server.url, experiment_id, app, QUESTIONS[3:5])
        # the source read from this server, the write-back to a second one, which is gone
        with MlflowServer(tmp_path / "target", backend) as target:
            target_url = target.url
        dead = [
            "score",
            "--from",
            f"mlflow+{server.url}#support-bot",
            "--once",
            "--since",
            "1h",
            "--to-mlflow",
            target_url,
            "--store",
            str(tmp_path / "other.sqlite3"),
            *cli_backends(toy_server, "-q"),
        ]
        code = main(dead)
        printed = capsys.readouterr()
        assert code == 1, printed
        assert "scores not written to mlflow (it did not answer)" in printed.err


def test_the_same_follow_command_twice_is_turned_away_in_one_line(tmp_path, capsys, toy_server):
    """The command line: a second follower of a run exits 2 naming who holds it, and makes
    nothing."""
    from relevancy.testing.processes import free_port

    pytest.importorskip("phoenix.client")
    url = f"phoenix://127.0.0.1:{free_port()}/support"
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_followed_run("live", {}, url)
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(store.path), str(run)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "held"
        args = ["score", "--from", url, "--once", "--save-run", "live", "--store", str(store.path)]
        assert main([*args, *cli_backends(toy_server, "-q")]) == 2
        err = capsys.readouterr().err
        (line,) = [x for x in err.splitlines() if "followed already" in x]
        assert f"pid {child.pid}" in line and "Traceback" not in err
        assert [r.id for r in store.list_runs()] == [run]
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


@pytest.mark.mlflow_store
def test_a_judge_not_there_at_the_start_leaves_the_traces_waiting(tmp_path, capsys, toy_server):
    """--once with the judge unreachable from the start: the traces are read and wait (exit 1,
    said), not a stop before reading; the next pass with the judge back scores them."""
    try:
        import mlflow
    except ImportError as exc:
        skip_or_fail(f"MLflow is not installed ({exc}): bash scripts/setup.sh dev")
    from test_follow import QUESTIONS, trace_into

    from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL
    from relevancy.testing.processes import free_port

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment("support-bot", artifact_location=str(tmp_path / "a"))
    with OpenAICompatServer(text_mode="lines") as app:
        trace_into(uri, experiment_id, app, QUESTIONS[:2])
    store_path = tmp_path / "runs.sqlite3"
    args = ["score", "--from", f"mlflow+{uri}#support-bot", "--once", "--since", "1h"]
    args += ["--store", str(store_path)]
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    judge = ["--llm", f"openai:{CHAT_MODEL}", "--embeddings", f"openai:{EMBEDDING_MODEL}"]
    assert main([*args, *judge, "--base-url", nowhere, "-q"]) == 1
    printed = capsys.readouterr()
    assert "WARN: cannot reach" in printed.err and "Traceback" not in printed.err
    assert "FAIL: 2 rows waiting for the judge since" in printed.err
    assert main([*args, *cli_backends(toy_server, "-q")]) == 0
    printed = capsys.readouterr()
    assert "2 of them after waiting for the judge" in printed.out
    (run,) = RunStore(store_path).list_runs()
    assert run.n_rows == 2 and run.n_scored == 2


def test_sigterm_stops_a_step_that_waits_not_only_the_loop():
    """systemd's stop: between steps the loop ends; within a step (a judge that keeps rows
    waiting can hold one for minutes) the step is interrupted as Ctrl-C does."""
    from relevancy.cli.follow import _on_sigterm

    stop = threading.Event()
    follower = SimpleNamespace(stepping=False)
    previous = _on_sigterm(stop, follower)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.is_set()
        stop.clear()
        follower.stepping = True
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # interrupted long before
        assert stop.is_set()
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("url", ["notaurl", "hooks.slack.com/services/T0/B0/s3cret", "h:8080/x"])
def test_a_webhook_without_a_scheme_is_refused_without_showing_it(url):
    from relevancy.errors import InputError
    from relevancy.io.webhook import check_webhook_url

    with pytest.raises(InputError) as info:
        check_webhook_url(url)
    said = str(info.value)
    assert "does not start with http:// or https://" in said and "?://?" not in said
    assert url not in said and "s3cret" not in said


def test_an_interrupt_right_after_a_commit_stays_an_interrupt(tmp_path, monkeypatch):
    """SIGTERM and Ctrl-C interrupt a step anywhere: one that lands just after COMMIT must not
    turn into 'cannot rollback - no transaction is active' (exit 1 instead of a clean stop)."""
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_followed_run("live", {}, "test://x")
    connect = store._connect

    class InterruptedAfterCommit:
        def __init__(self, db):
            self.db = db

        def execute(self, sql, *args):
            out = self.db.execute(sql, *args)
            if sql == "COMMIT":
                raise KeyboardInterrupt
            return out

        def __getattr__(self, name):
            return getattr(self.db, name)

    monkeypatch.setattr(store, "_connect", lambda: InterruptedAfterCommit(connect()))
    frame = pd.DataFrame({"user_input": ["q"], "response": ["a"], "span_id": ["1"]})
    with pytest.raises(KeyboardInterrupt):
        store.add_followed(run, frame, ["1"], [1.0], read_to=T0)
    with pytest.raises(KeyboardInterrupt):
        store.take_follow_lease(run, ttl=300)
    monkeypatch.undo()
    assert store.get_run(run).n_rows == 1  # what was committed stays
