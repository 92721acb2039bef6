"""A model-based test of the follower (``relevancy score --from ... --follow``): Hypothesis drives
a :class:`relevancy.scoring.follow.Follower` over a fake source, a fake judge, two fake
write-back targets and a fake webhook, all of which fail at will, on a clock the test moves,
and kills the follower at chosen points (inside a read, mid-chunk, inside a write-back before
or after it wrote, inside the POST before or after the receiver got it), restarting it over
the same store file.

The rules: spans arrive (on time, late: started before the cursor but younger than ``late``,
twice under one key, out of order, some with an empty answer), the source goes down, the judge
answers 503, a target raises, stops part-way or refuses some spans, the webhook answers 500 or
takes an alert and times out, a kill is armed; after each, the clock moves and the follower
steps.

After every step: each key is one row (and only source keys are rows); no score reaches a
target twice (beyond what a write that stopped part-way or was killed before it was recorded
has to send again: the real targets skip a score already there); no unscored or failed row is
sent; no window is judged twice; no alert reaches the webhook twice; ``undone()`` is not empty
while anything is left to do. At the end (everything healed, the follower stepped a while):
every key is one row; every row is scored unless it failed for a reason of its own; every
score reached every target that did not refuse it; every complete window was judged; every
alert reached the webhook once, except one whose POST was cut by a kill before the receiver
got it (marked ``uncertain``: never posted twice); ``undone()`` is empty.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sqlite3
import tempfile
import zlib
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, currently_in_test_context, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from relevancy.core.result import RelevancyResult
from relevancy.errors import RelevancyError
from relevancy.io import webhook as webhook_module
from relevancy.io.exporters import WriteBack
from relevancy.io.importers.live import LiveRows, LiveSource, SourceDown
from relevancy.runs import RunStore
from relevancy.scoring.follow import AlertRule, Follower, FollowOptions, Target

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=timezone.utc)
WINDOW = timedelta(minutes=1)
SCORE = 0.1  #: every row the judge scores: every window of two or more alerts (below 0.99)
TARGETS = ("phoenix", "mlflow")
KILLS = ("read", "score", "send-before", "send-after", "notify-before", "notify-after")
#: the webhook took the alert, its answer was lost (no such error before 022cadc)
UNCERTAIN = getattr(webhook_module, "WebhookUncertain", RelevancyError)
OWN = "response is empty ('')"  #: a row's own failure (failed_for_itself)
DT = st.sampled_from([1, 5, 20])  #: seconds between two steps
STEPS = st.integers(1, 8)  #: steps an outage lasts
#: spans stored at once: (age in seconds, answer, the targets that refuse it)
SPANS = st.lists(
    st.tuples(
        st.sampled_from([0, 3, 50]),
        st.sampled_from(["answer", "answer", "answer", ""]),
        st.sampled_from([(), (), (), ("phoenix",), ("mlflow",)]),
    ),
    min_size=1,
    max_size=4,
)
PASSING = "generation failed: HTTP 503 from http://judge"  #: the judge's, which passes


def _event(what: str) -> None:
    """Counted in ``--hypothesis-show-statistics`` (what the examples got to)."""
    if currently_in_test_context():
        event(what)


class Killed(BaseException):
    """The follower's process dies here (BaseException: nothing in the follower catches it)."""


def _options(**values) -> FollowOptions:
    """FollowOptions with the fields this version of the follower has."""
    have = {f.name for f in dataclasses.fields(FollowOptions)}
    return FollowOptions(**{k: v for k, v in values.items() if k in have})


def _epoch(value) -> float:
    """A window start (ISO text, datetime, Timestamp) as epoch seconds."""
    return float(pd.Timestamp(value).timestamp())


def _window(t: float) -> float:
    width = WINDOW.total_seconds()
    return math.floor(t / width) * width


class World:
    """Everything outside the follower: the clock, the source, the judge, the targets, the
    webhook, and where the next kill happens."""

    def __init__(self) -> None:
        self.t = 0.0  #: seconds since T0
        self.spans: list[tuple[str, str, float]] = []  #: (key, answer, start time), as stored
        #: steps each of "source", "judge", "phoenix", "mlflow", "webhook" is down for yet
        self.down: Counter[str] = Counter()
        self.kills: set[str] = set()  #: where the follower dies, each the next time there
        self.kill_row = 0  #: with "score": the rows of a chunk saved before the kill

    def now(self) -> datetime:
        return T0 + timedelta(seconds=self.t)

    def epoch(self) -> float:
        return T0.timestamp() + self.t

    def fire(self, point: str) -> None:
        if point in self.kills:
            self.kills.discard(point)
            _event(f"killed at {point}")
            raise Killed(point)


class Source(LiveSource):
    """A span store: ``read(start, end)`` gives every stored span that started in [start, end),
    a span stored twice twice, in no order of time."""

    url, kind, key_column, where = "test://spans", "phoenix", "span_id", {}

    def __init__(self, world: World) -> None:
        self.world = world

    def read(self, start: datetime, end: datetime) -> LiveRows:
        self.world.fire("read")
        if self.world.down["source"]:
            raise SourceDown(f"{self.url} did not answer: ConnectError")
        lo, hi = start.timestamp(), end.timestamp()
        found = [s for s in self.world.spans if lo <= s[2] < hi]
        found.sort(key=lambda s: zlib.crc32(s[0].encode()))  # out of order
        frame = pd.DataFrame(
            {
                "user_input": [f"question {k}" for k, _, _ in found],
                "response": [a for _, a, _ in found],
                "span_id": [k for k, _, _ in found],
            }
        )
        return LiveRows(frame, [k for k, _, _ in found], [t for _, _, t in found])


class Judge:
    """The metric: SCORE for a row with an answer, a 503 while the judge is down, an own
    failure for an empty answer; a kill armed at "score" strikes after ``kill_row`` rows."""

    def __init__(self, world: World) -> None:
        self.world = world

    def score_many(self, data, *, on_result=None, **_):
        out = []
        for i, (q, a) in enumerate(zip(data["user_input"], data["response"])):
            if i == self.world.kill_row:
                self.world.fire("score")
            if not isinstance(a, str) or not a.strip():
                r = RelevancyResult(q, a, math.nan, error=f"{OWN}: give the text to score")
            elif self.world.down["judge"]:
                _event("the judge failed a row")
                r = RelevancyResult(q, a, math.nan, error=PASSING)
            else:
                r = RelevancyResult(q, a, SCORE, strictness=3, reason="ok")
            out.append(r)
            if on_result is not None:
                on_result(i, r)
        self.world.fire("score")  # armed past the chunk's end: after it, before it returns
        return out


class Receiver:
    """A write-back target. While down it answers 503 (``how="raise"``: RelevancyError) or
    writes the first half of the batch, then answers 502 (``"stopped"``: WriteBack.stopped). It
    refuses the
    spans in ``refuses`` (a 404 for that span). ``got`` counts each span it wrote (a real
    target skips one already there: a resend is harmless only where it was allowed: ``resend``
    counts those, after a stop part-way or a kill before the follower recorded the write)."""

    def __init__(self, world: World, name: str) -> None:
        self.world, self.name = world, name
        self.how = "raise"  #: how it fails while down
        self.refuses: set[str] = set()
        self.got: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.resend: Counter[str] = Counter()
        self.bad: list[str] = []  #: what it got that it should never have got
        self.refused_now = False  #: told the follower it refused a span, since it started

    def send(self, frames: list[pd.DataFrame]) -> WriteBack:
        self.world.fire("send-before")
        down = self.world.down[self.name]
        if down and self.how == "raise":
            raise RelevancyError(f"{self.name} answered HTTP 503")
        done = WriteBack(self.name, "test")
        keys = [str(k) for f in frames for k in f["span_id"]]
        for f in frames:
            for k, v in zip(f["span_id"], f["score"]):
                if not math.isfinite(float(v)):
                    self.bad.append(f"{k} sent with score {v}")
        if down:
            half = keys[: len(keys) // 2]
            for k in half:
                self._write(k, done)
                self.resend[k] += 1
            done.stopped = f"{self.name} answered HTTP 502 after {len(half)} scores"
            done.not_tried = len(keys) - len(half)
            return done
        for k in keys:
            self._write(k, done)
        self.refused_now |= bool(done.failed)  # the follower is told (with a stop, it is not)
        if "send-after" in self.world.kills:
            for k in keys:
                self.resend[k] += 1
            self.world.fire("send-after")
        return done

    def _write(self, key: str, done: WriteBack) -> None:
        if key in self.refuses:
            self.refused[key] += 1
            done.fail("span not found", key)
        else:
            self.got[key] += 1
            done.written += 1


class Webhook:
    """The alert webhook: records each window it got; while down it answers 500
    (RelevancyError), or, ``how="timeout"``, takes the alert and times out (WebhookUncertain:
    whether it got it cannot be known). A kill "notify-before" strikes before the receiver got
    the alert, "notify-after" after."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.how = "500"  #: while down: answers 500, or takes the alert and times out
        self.got: Counter[float] = Counter()
        self.cut: set[float] = set()  #: windows whose POST a kill cut before the receiver

    def notify(self, body) -> None:
        start = _epoch(body["start"] if isinstance(body, dict) else body.start)
        if "notify-before" in self.world.kills:
            self.cut.add(start)
            self.world.fire("notify-before")
        if self.world.down["webhook"] and self.how == "500":
            _event("the webhook failed")
            raise RelevancyError("the webhook answered HTTP 500")
        self.got[start] += 1
        if self.world.down["webhook"]:
            _event("the webhook timed out")
            raise UNCERTAIN("the webhook took the alert, then timed out")
        self.world.fire("notify-after")


def _own(error) -> bool:
    return isinstance(error, str) and error.startswith(OWN)


class FollowerModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        # on tmpfs where there is one: SQLite's fsyncs are not what this test is about
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.dir = tempfile.TemporaryDirectory(prefix="follow-model-", dir=shm)
        self.path = Path(self.dir.name) / "runs.sqlite3"
        self.receivers = {name: Receiver(self.world, name) for name in TARGETS}
        self.hook = Webhook(self.world)
        self.judged: Counter[float] = Counter()  #: mark_window calls per window start
        self.passed_over: set[float] = set()  #: windows whose every row came after a later one
        self.seen: set[str] = set()
        self.n_keys = 0
        self.broken = False
        self.db: sqlite3.Connection | None = None
        store = RunStore(self.path)
        self.run_id = store.create_followed_run("live", {}, Source.url)
        self.start()

    def start(self) -> None:
        """A follower, as a new process would make it, over the store file."""
        self.store = RunStore(self.path)
        mark = self.store.mark_window

        def judged(run_id, start, seconds, *args, **kwargs):
            self.judged[_epoch(start)] += 1
            return mark(run_id, start, seconds, *args, **kwargs)

        self.store.mark_window = judged
        for r in self.receivers.values():
            r.refused_now = False
        self.follower = Follower(
            Judge(self.world),
            self.store,
            self.run_id,
            Source(self.world),
            options=_options(
                interval=1.0,
                overlap=timedelta(seconds=10),
                late=timedelta(hours=1),
                sweep_every=30.0,
                chunk=2,
                max_wait=4.0,
                judge_first=2.0,
                judge_most=8.0,
            ),
            targets=[Target(n, "span_id", r.send) for n, r in self.receivers.items()],
            alerts=AlertRule(below=0.99, window=WINDOW, min_rows=2, notify=self.hook.notify),
            say=lambda line: None,
            now=self.world.now,
            clock=self.world.epoch,
        )

    @initialize(
        kills=st.sets(st.sampled_from(KILLS)),
        row=st.integers(0, 2),
        down=st.dictionaries(st.sampled_from(["judge", "source", "webhook", *TARGETS]), STEPS),
        spans=SPANS,
        dt=DT,
    )
    def begin(self, kills, row, down, spans, dt):
        """Where the follower dies, each the first time it gets there; what is down from the
        start, for how many steps; the first spans."""
        self.world.kills |= kills
        self.world.kill_row = row
        self.world.down.update(down)
        self.stored(spans, dt)

    # the world (then the follower steps: every rule is a moment of a follower's life) --------
    @rule(spans=SPANS, dt=DT)
    def stored(self, spans, dt):
        """Spans stored now, each (age, answer, targets that refuse it): one that started
        ``age`` seconds ago (before the cursor less the overlap: late), an empty answer (a
        failure of its own), a span a target does not know (a 404 for it)."""
        for age, answer, refused_by in spans:
            key = f"s{self.n_keys}"
            self.n_keys += 1
            self.world.spans.append((key, answer and f"{answer} {key}", self.world.epoch() - age))
            for name in refused_by:
                self.receivers[name].refuses.add(key)
        self.step(dt)

    @rule(which=st.integers(0, 10**6), dt=DT)
    def stored_twice(self, which, dt):
        """The source stores a span again (at-least-once delivery): one key, two records."""
        if self.world.spans:
            self.world.spans.append(self.world.spans[which % len(self.world.spans)])
        self.step(dt)

    @rule(what=st.sampled_from(["judge", "source"]), steps=STEPS, dt=DT)
    def outage(self, what, steps, dt):
        """The judge answers 503, or the source does not answer, for ``steps`` steps."""
        self.world.down[what] = steps
        self.step(dt)

    @rule(how=st.sampled_from(["500", "timeout"]), steps=STEPS, dt=DT)
    def webhook_outage(self, how, steps, dt):
        """The webhook answers 500, or takes each alert and times out, for ``steps`` steps."""
        self.world.down["webhook"] = steps
        self.hook.how = how
        self.step(dt)

    @rule(
        name=st.sampled_from(TARGETS),
        how=st.sampled_from(["raise", "stopped"]),
        steps=STEPS,
        dt=DT,
    )
    def target_outage(self, name, how, steps, dt):
        """A target answers 503 (``raise``) or stops part-way (``stopped``) for ``steps``
        steps."""
        self.world.down[name] = steps
        self.receivers[name].how = how
        self.step(dt)

    @rule(point=st.sampled_from(KILLS), row=st.integers(0, 2), dt=DT)
    def arm(self, point, row, dt):
        """The follower dies at ``point`` the next time it gets there."""
        self.world.kills.add(point)
        self.world.kill_row = row
        self.step(dt)

    @rule(dt=DT, times=st.integers(1, 3))
    def wait(self, dt, times):
        for _ in range(times):
            self.step(dt)

    # the follower -----------------------------------------------------------------------------
    def step(self, dt: float) -> None:
        """The clock moves ``dt`` seconds, the follower steps (and, killed, starts again)."""
        self.world.t += dt
        before = self._windows()
        try:
            self.follower.step()
        except Killed:
            self.start()  # killed: a new process goes on over the same store
        for what in list(self.world.down):
            self.world.down[what] = max(0, self.world.down[what] - 1)
        self._passed_over(before)
        try:
            self.check()
        except BaseException:
            self.broken = True
            raise

    def _sql(self, sql: str, *params):
        """What the store holds (one connection, reading only, for the whole example)."""
        if self.db is None:
            self.db = sqlite3.connect(self.path, isolation_level=None)
        return self.db.execute(sql, (self.run_id, *params)).fetchall()

    def _windows(self) -> dict[float, str]:
        return {
            _epoch(s): status
            for s, status in self._sql("SELECT start, status FROM follow_windows WHERE run_id = ?")
        }

    def _rows(self) -> pd.DataFrame:
        """Each row: its key, source time, question, answer, whether scored, score, error."""
        rows = self._sql(
            "SELECT k.key, k.idx, k.t, i.user_input, i.response, r.idx IS NOT NULL, r.score, "
            "r.error FROM follow_keys k JOIN inputs i ON i.run_id = k.run_id AND i.idx = k.idx "
            "LEFT JOIN results r ON r.run_id = k.run_id AND r.idx = k.idx WHERE k.run_id = ?"
        )
        cols = ["key", "idx", "t", "question", "answer", "scored", "score", "error"]
        frame = pd.DataFrame(rows, columns=cols)
        frame["score"] = pd.to_numeric(frame["score"]).astype(float)
        frame["scored"] = frame["scored"].astype(bool)
        return frame

    def _passed_over(self, before: dict[float, str]) -> None:
        """A row that came when a later window was judged already: its window may never be
        (a late row lands in a window the follower has moved past)."""
        for key, t in self._sql("SELECT key, t FROM follow_keys WHERE run_id = ?"):
            if key in self.seen:
                continue
            self.seen.add(key)
            w = _window(t)
            if w not in before and any(s > w for s in before):
                self.passed_over.add(w)

    def _undone(self, rows: pd.DataFrame) -> list[str]:
        """What is left to do, as this test sees it."""
        out = []
        if (~rows["scored"]).any():
            out.append("rows not scored")
        failed = rows[rows["scored"] & rows["score"].isna()]
        if (~failed["error"].map(_own)).any():
            out.append("rows waiting for the judge")
        sent = {
            (name, idx)
            for idx, name in self._sql("SELECT idx, target FROM follow_sent WHERE run_id = ?")
        }
        for name in TARGETS:
            if any((name, i) not in sent for i in rows.loc[rows["score"].notna(), "idx"]):
                out.append(f"scores not sent to {name}")
            if self.receivers[name].refused_now:
                out.append(f"scores refused by {name}")
        alerts = {w for w, status in self._windows().items() if status == "alert"}
        if alerts - set(self.hook.got) - self.hook.cut:
            out.append("alerts not delivered")
        return out

    def check(self) -> None:
        rows = self._rows()
        keys = {k for k, _, _ in self.world.spans}
        # each key is one row, each row a key of the source, with that key's span in it
        assert rows["key"].is_unique and rows["idx"].is_unique, rows
        assert set(rows["key"]) <= keys
        n_rows = self._sql("SELECT COUNT(*) FROM inputs WHERE run_id = ?")[0][0]
        assert n_rows == len(rows), f"{n_rows} rows for {len(rows)} keys"
        assert (rows["question"] == "question " + rows["key"]).all(), rows
        # no score sent twice (but where a resend was allowed), nor one that is not a score
        scored = set(rows.loc[rows["score"].notna(), "key"])
        for name, r in self.receivers.items():
            assert not r.bad, (name, r.bad)
            for key, n in (r.got + r.refused).items():
                assert n <= 1 + r.resend[key], f"{key} sent to {name} {n} times"
                assert key in scored, f"{key} sent to {name} without a score"
        # no window judged twice, no alert posted twice
        assert max(self.judged.values(), default=0) <= 1, f"windows judged twice: {self.judged}"
        assert max(self.hook.got.values(), default=0) <= 1, f"alerts twice: {self.hook.got}"
        # something is left to do: the follower says so (it could not say it before 00c85de)
        if hasattr(self.follower, "undone"):
            left = self._undone(rows)
            if left:
                assert self.follower.undone(), f"undone() is empty, but: {left}"

    # the end ---------------------------------------------------------------------------------
    def teardown(self) -> None:
        try:
            if not self.broken:
                self.heal()
        finally:
            if self.db is not None:
                self.db.close()
            self.dir.cleanup()

    def heal(self) -> None:
        """Everything answers again and the follower steps on (long enough for the last
        window to end, for every pause to be over): then everything is done."""
        w, hook = self.world, self.hook
        w.down.clear()
        w.kills.clear()
        for _ in range(8):
            self.step(15)
        rows = self._rows()
        keys = {k for k, _, _ in w.spans}
        assert set(rows["key"]) == keys, f"keys never read: {keys - set(rows['key'])}"
        # every row scored, unless it failed for a reason of its own
        assert rows["scored"].all(), f"rows without a result: {rows.loc[~rows['scored'], 'key']}"
        empty = rows["answer"].fillna("").str.strip() == ""
        assert rows.loc[empty, "error"].map(_own).all(), rows[empty]
        lost = rows[~empty & rows["score"].isna()]
        assert lost.empty, f"rows never scored: {lost[['key', 'error']].to_dict('records')}"
        # every score reached every target that did not refuse it
        for name, r in self.receivers.items():
            for key in rows.loc[~empty, "key"]:
                if key in r.refuses:
                    assert r.got[key] == 0 and r.refused[key] >= 1, (name, key)
                else:
                    assert r.got[key] >= 1, f"{key}'s score never reached {name}"
        # every complete window judged (but one whose rows all came after a later one was)
        read_to = self._sql("SELECT read_to FROM follow_cursors WHERE run_id = ?")[0][0]
        windows = self._windows()
        ends = _epoch(read_to) - WINDOW.total_seconds()
        complete = {_window(t) for t in rows["t"] if _window(t) <= ends} - self.passed_over
        assert complete <= set(windows), f"windows never judged: {complete - set(windows)}"
        # every alert reached the webhook once; one cut by a kill mid-POST never twice
        alerts = {s for s, status in windows.items() if status == "alert"}
        _event(f"alerts: {min(len(alerts), 3)}{'+' if len(alerts) > 3 else ''}")
        assert set(hook.got) <= alerts
        lost = alerts - set(hook.got) - hook.cut
        assert not lost, f"alerts never delivered: {sorted(lost)}"
        if hasattr(self.follower, "undone"):
            uncertain = {
                _epoch(s)
                for (s,) in self._sql(
                    "SELECT start FROM follow_alerts WHERE run_id = ? AND state = 'uncertain'"
                )
            }
            assert alerts - set(hook.got) <= uncertain
            # what this process was told, said once (--once exits 1): a span a target
            # refused, an alert that may not have reached the webhook
            told = ("refused by", "may not have reached")
            left = [u for u in self.follower.undone() if not any(t in u for t in told)]
            assert left == [], left
            self.start()  # a new process finds nothing left to do
            self.step(1)
            assert self.follower.undone() == []


FollowerModel.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_the_follower_keeps_its_promises = FollowerModel.TestCase
