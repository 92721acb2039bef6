"""Following a live source (``relevancy score --from ... --follow``): new traces are read, added
to one run that grows, scored, written back and checked for alerts, step after step.

One :meth:`Follower.step`:

1. **read** the traces that started since the cursor (less ``overlap``), and, every
   ``sweep_every`` seconds, every trace younger than ``late`` (counted from now: a trace the
   source stored late is still found), and add the ones the run does not have, with the new
   cursor, in one transaction (:meth:`relevancy.runs.RunStore.add_followed`);
2. **score** the run's rows that have no result (those just added, and any a killed process
   left), each saved as it finishes. A row whose scoring failed for a passing reason (the judge
   answered 5xx, timed out, could not be reached, sent a reply that could not be read) **waits
   for the judge**: it is tried again on later steps after a pause that doubles (at once when
   the judge answers again), counted and said; only a row that failed for a reason of its own
   (an empty answer) stays failed (:func:`failed_for_itself`);
3. **send** every score that has not reached a write-back target yet, and record what became
   of it, so a restart sends exactly what is missing (the targets skip a score already there);
4. **check** the alert windows that are complete (their end is before the cursor, every row is
   scored and none waits for the judge), each once; an alert with a webhook is kept in the
   store until the webhook answers 2xx (tried again on later steps), marked as being posted
   before the POST, so a process killed meanwhile never posts it twice.

A source, target or webhook that does not answer is waited for with a growing pause, at most
the poll interval (said once, and said again when it answers); nothing read or scored is lost
meanwhile. Memory does not grow with the run: each step reads what it needs from the store.
:meth:`Follower.undone` says what the command was asked to do and did not do (``--once`` exits
1 on any of it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis.alerts import check_windows, window_of
from relevancy.errors import RelevancyError
from relevancy.io.importers.live import LiveSource, SourceDown
from relevancy.io.webhook import WebhookUncertain
from relevancy.runs import RunStore
from relevancy.runs.rows import export_frame
from relevancy.scoring._follow_parts import (
    AlertRule,
    Backoff,
    FollowOptions,
    StepReport,
    Target,
    failed_for_itself,
    row_outcomes,
)
from relevancy.scoring.pipeline import score_chunk

__all__ = [
    "FollowOptions",
    "Target",
    "AlertRule",
    "StepReport",
    "Follower",
    "failed_for_itself",
]

#: rows sent to a write-back target at a time
SEND_ROWS = 500
#: checked windows looked back through for the drop test's baseline (one with min_rows scores)
_BASELINE_LOOKBACK = 48


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Follower:
    """Follows ``source`` into run ``run_id`` of ``store``, scoring with ``metric``."""

    def __init__(
        self,
        metric: Any,
        store: RunStore,
        run_id: int,
        source: LiveSource,
        *,
        options: FollowOptions | None = None,
        targets: Sequence[Target] = (),
        alerts: AlertRule | None = None,
        say: Callable[[str], None] = print,
        now: Callable[[], datetime] = _utc_now,
        clock: Callable[[], float] = time.monotonic,
        lease: Any = None,
    ) -> None:
        self.metric, self.store, self.run_id, self.source = metric, store, run_id, source
        self.options = options or FollowOptions()
        self.targets = list(targets)
        self.alerts = alerts
        self.say, self.now, self.clock = say, now, clock
        #: the run store's hold on the run (:meth:`RunStore.take_follow_lease`), beaten at
        #: every step and every scored row
        self.lease = lease
        interval = max(self.options.interval, 1.0)
        # a silent thing is tried again after 1, 2, 4... s, never later than a poll interval
        # (at most max_wait): once it answers, the follower goes on within one interval
        most = max(1.0, min(self.options.max_wait, interval))
        first = min(1.0, most)
        self.source_wait = Backoff(source.url, first, most, say)
        self.target_wait = {t.name: Backoff(t.name, first, most, say) for t in self.targets}
        self.hook_wait = Backoff("the alert webhook", first, most, say)
        self._last_sweep: float | None = None
        self._stop: Any = None
        self._once = False
        self._started = False
        self._retried = False  #: with --once, the waiting rows were tried in this run
        self._waited_before: list[int] = []  #: with --once, the rows waiting when it began
        self._waiting_said = 0  #: the number of waiting rows last said
        #: rows below this are scored; per target, rows below this are sent (or marked): each
        #: step looks only past them, so a step's work does not grow with the run
        self._scored_to = 0
        self._sent_from: dict[str, int] = {}
        self._due: datetime | None = None  #: no alert window is complete before this
        self._note = ""  #: what the source said last (said again only when it changes)
        self._uncertain = 0  #: alerts whose delivery this run could not know (said, not posted)
        self.stepping = False  #: True while a step runs (SIGTERM interrupts it then)
        self.totals = StepReport()

    # one step ---------------------------------------------------------------------------
    def step(self) -> StepReport:
        """Read, score, send, check once (see the module's docstring)."""
        report = StepReport()
        self.stepping = True
        try:
            if not self._started:
                self._start()
            self._beat()
            self._read(report)
            for rows in self._pending_chunks():
                if self._stopping():
                    break  # the rows left are scored when the run goes on
                self._score(rows, report)
                self._send(report)
            if not self._stopping():
                self._retry_waiting(report)
            self._send(report)  # what an earlier process scored but did not send
            self._check(report)
            self._deliver(report)
        finally:
            self.stepping = False
        self._add_up(report)
        return report

    def _stopping(self) -> bool:
        return self._stop is not None and self._stop.is_set()

    def _start(self) -> None:
        self._started = True
        # a row saved as failed for a passing reason by a process killed before it was marked
        # waiting: it waits now (else it would never be scored again)
        lost = {
            row: error
            for row, error in self.store.unscored_failures(self.run_id).items()
            if not failed_for_itself(error)
        }
        if lost:
            o = self.options
            self.store.wait_for_judge(
                self.run_id, lost, now=self.now().timestamp(), first=0.0, most=o.judge_most
            )
        if self.alerts is not None and self.alerts.notify is not None:
            for start in self.store.settle_posting(self.run_id):
                self._uncertain += 1
                self.say(
                    f"WARN: the alert of the window from {start[:16].replace('T', ' ')} UTC was "
                    "being posted when the last follower stopped: whether the webhook got it "
                    "cannot be known, so it is not posted again (check the receiver)"
                )

    def _beat(self) -> None:
        if self.lease is not None and not self.store.beat_follow_lease(self.lease):
            raise RelevancyError(
                f"run #{self.run_id} was taken over by another follower (this one was silent "
                f"for more than {self.lease.ttl:.0f} s): stopping"
            )

    def _read(self, report: StepReport) -> None:
        now_s = self.clock()
        if not self.source_wait.ready(now_s):
            return
        o = self.options
        cursor = self.store.follow_cursor(self.run_id)
        end = self.now()
        sweep = self._last_sweep is None or now_s - self._last_sweep >= o.sweep_every
        # a sweep reads every trace younger than --late, counted from now, and as far again as
        # the time to the next sweep (a trace stored just before it turns --late old is found)
        reach = o.late + timedelta(seconds=o.sweep_every + o.interval) + o.overlap
        if cursor.read_to is None:  # the first read: from --since, else what is recent
            start = o.since or end - (o.late if sweep else o.overlap)
        else:
            start = cursor.read_to - o.overlap
            if sweep:
                start = min(start, end - reach)
        if o.since is not None:
            start = max(start, o.since)  # never before what was asked for
        try:
            found = self.source.read(start, end)
        except SourceDown as exc:
            self.source_wait.failed(str(exc), now_s)
            return
        if self.source_wait.down_since is not None:
            # the source answers again: a target on the same server is tried at once too
            for backoff in self.target_wait.values():
                backoff.next_try = min(backoff.next_try, now_s)
        self.source_wait.answered(now_s)
        if found.note and found.note != self._note:
            self.say(found.note)
        self._note = found.note
        report.read = len(found.frame)
        new = self.store.add_followed(
            self.run_id,
            found.frame,
            found.keys,
            found.times,
            read_to=end,
            swept_to=end if sweep else None,
        )
        if sweep:
            self._last_sweep = now_s
        report.new = len(new)
        if new and cursor.read_to is not None:
            before = cursor.read_to.timestamp() - o.overlap.total_seconds()
            fresh = set(new)
            times = self.store.timed_scores(self.run_id, since=start.timestamp())
            late = times[times["row"].isin(fresh) & (times["t"] < before)]
            report.late = len(late)

    def _pending_chunks(self) -> Any:
        pending = self.store.pending_rows(self.run_id, from_row=self._scored_to)
        size = max(1, self.options.chunk)
        for start in range(0, len(pending), size):
            yield pending[start : start + size]
        if not self._stopping():
            self._scored_to = self._rows_known()  # every row added so far is scored

    def _rows_known(self) -> int:
        return self.store.get_run(self.run_id).n_rows

    def _score(self, rows: list[int], report: StepReport, *, retry: bool = False) -> None:
        inputs = self.store.inputs(self.run_id, rows)
        passing: dict[int, str] = {}
        settled: list[int] = []

        o = self.options

        def saved(row: int, result: Any) -> None:
            # each row's result and whether it waits, as it finishes (a kill mid-chunk loses
            # neither; one between the two is mended at the next start: _start)
            self.store.append_results(self.run_id, [(row, result)])
            value = float(result.value)
            if math.isnan(value) and not failed_for_itself(result.error):
                passing[row] = str(result.error or "no score")
                self.store.wait_for_judge(
                    self.run_id,
                    {row: passing[row]},
                    now=self.now().timestamp(),
                    first=o.judge_first,
                    most=o.judge_most,
                )
            else:
                settled.append(row)
                if retry:
                    self.store.stop_waiting(self.run_id, [row])
            if self.lease is not None:
                self.store.beat_follow_lease(self.lease)

        chunk = score_chunk(self.metric, inputs, list(inputs.index), on_result=saved)
        if not retry:
            self._scored_to = max(self._scored_to, rows[-1] + 1)  # pending rows come in order
        wall = self.now().timestamp()
        if settled and passing == {} and self.store.waiting_rows(self.run_id):
            self.store.try_waiting_now(self.run_id, wall)  # the judge answers again
        if retry and settled:
            first = min(settled)  # a row below what was sent: send from there again
            for name in list(self._sent_from):
                self._sent_from[name] = min(self._sent_from[name], first)
        report.scored += len(settled)  # a row that waits for the judge is not scored yet
        report.waiting += len(passing)
        report.retried += len(settled) if retry else 0
        values = [float(r.value) for r in chunk.results or []]
        report.scores += [v for v in values if math.isfinite(v)]

    def _retry_waiting(self, report: StepReport) -> None:
        """Score again the rows waiting for the judge whose pause is over (with ``--once``,
        every waiting row, once)."""
        if self._once:  # the rows that waited when this run began, once
            if self._retried:
                return
            self._retried = True
            due = self._waited_before
        else:
            due = self.store.waiting_rows(self.run_id, due_by=self.now().timestamp())
        size = max(1, self.options.chunk)
        for start in range(0, len(due), size):
            if self._stopping():
                break
            self._score(due[start : start + size], report, retry=True)
            self._send(report)

    def _send(self, report: StepReport) -> None:
        for target in self.targets:
            backoff = self.target_wait[target.name]
            while backoff.ready(self.clock()):
                start = self._sent_from.get(target.name, 0)
                rows = self.store.unsent(self.run_id, target.name, limit=SEND_ROWS, from_row=start)
                if not rows:
                    break
                frame = export_frame(
                    self.store.inputs(self.run_id, rows).reset_index(drop=True),
                    self.store.results(self.run_id, rows, vectors=False),
                )
                try:
                    done = target.send([frame])
                except RelevancyError as exc:
                    backoff.failed(f"{target.name}: {exc}", self.clock())
                    break
                if done.stopped:  # nothing is marked: the next try finds what is there
                    backoff.failed(f"{target.name}: {done.stopped}", self.clock())
                    break
                backoff.answered(self.clock())
                outcomes = row_outcomes(rows, frame, target.id_column, done)
                self.store.mark_sent(self.run_id, target.name, outcomes)
                # rows below this are all sent or marked (and all scored: unsent rows past the
                # scored ones may still have a row before them to score)
                self._sent_from[target.name] = min(rows[-1] + 1, self._scored_to)
                ok = sum(1 for why in outcomes.values() if why == "ok")
                report.sent[target.name] = report.sent.get(target.name, 0) + ok
                if ok < len(outcomes):
                    report.failed[target.name] = (
                        report.failed.get(target.name, 0) + len(outcomes) - ok
                    )
                    for line in done.problems():
                        self.say(f"FAIL: {target.name}: {line}")

    def _check(self, report: StepReport) -> None:
        rule = self.alerts
        if rule is None or self.store.pending_rows(self.run_id, from_row=self._scored_to):
            return
        cursor = self.store.follow_cursor(self.run_id)
        if cursor.read_to is None or (self._due is not None and cursor.read_to < self._due):
            return  # no window was completed since the last check
        until = cursor.read_to
        waiting = self.store.waiting_summary(self.run_id)
        if waiting["rows"] and waiting.get("first_t") is not None:
            # a window with a row waiting for the judge is not complete yet
            until = min(until, datetime.fromtimestamp(waiting["first_t"], timezone.utc))
            self._due = None  # checked again at every step until the row is scored
        else:
            self._due = window_of(cursor.read_to, rule.window)[1]  # the one in progress's end
        seconds = rule.window.total_seconds()
        checked = self.store.checked_windows(self.run_id, seconds)
        since = None
        if checked:  # the drop test's baseline: the last checked window with min_rows scores
            starts = sorted((datetime.fromisoformat(s) for s in checked), reverse=True)
            since = starts[:_BASELINE_LOOKBACK][-1].timestamp()
        timed = self.store.timed_scores(self.run_id, since=since)
        if timed.empty:
            return
        if checked:
            timed = timed[timed["t"] >= self._baseline_start(timed, starts, seconds, rule)]
        times = pd.to_datetime(timed["t"], unit="s", utc=True)
        scores = timed["score"].to_numpy(dtype=float)
        for check in check_windows(
            times,
            scores,
            below=rule.below,
            window=rule.window,
            min_rows=rule.min_rows,
            until=until,
        ):
            start = check.start.astimezone(timezone.utc).isoformat()
            if start in checked:
                continue
            report.checks.append(check)
            body = None
            if check.status == "alert":
                report.alerts += 1
                self.say(f"ALERT: {check.message}")
                if rule.notify is not None:
                    body = check.to_json()
            elif check.status == "too_few":
                self.say(f"window: {check.message}")
            # judged and (with a webhook) queued in one transaction: delivered below
            self.store.mark_window(
                self.run_id, check.start, seconds, check.status, check.message, alert=body
            )

    @staticmethod
    def _baseline_start(
        timed: pd.DataFrame, starts: list[datetime], seconds: float, rule: AlertRule
    ) -> float:
        """Where the rows given to the window checks begin: the latest checked window that has
        ``min_rows`` scored rows (the baseline the drop test needs, as the dashboard finds it
        over the whole run), else the latest checked one."""
        scored = timed["t"][np.isfinite(timed["score"].to_numpy(dtype=float))].to_numpy()
        for start in starts[:_BASELINE_LOOKBACK]:
            t0 = start.timestamp()
            if ((scored >= t0) & (scored < t0 + seconds)).sum() >= max(rule.min_rows, 2):
                return t0
        return starts[0].timestamp()

    def _deliver(self, report: StepReport) -> None:
        """POST each alert the webhook has not taken yet, oldest first: marked ``posting``
        before, ``delivered`` after a 2xx, kept ``pending`` (with why) otherwise."""
        rule = self.alerts
        if rule is None or rule.notify is None:
            return
        for start, seconds, body in self.store.alerts_to_post(self.run_id):
            if not self.hook_wait.ready(self.clock()):
                report.undelivered += 1
                continue
            self.store.alert_state(self.run_id, start, seconds, "posting")
            try:
                rule.notify(body)
            except WebhookUncertain as exc:  # sent, no answer: never posted again
                self.store.alert_state(self.run_id, start, seconds, "uncertain", str(exc))
                self._uncertain += 1
                self.say(f"WARN: {exc}: the alert is not posted again (check the receiver)")
                continue
            except RelevancyError as exc:
                self.store.alert_state(self.run_id, start, seconds, "pending", str(exc))
                self.hook_wait.failed(f"alert webhook: {exc}", self.clock())
                report.undelivered += 1
                continue
            self.store.alert_state(self.run_id, start, seconds, "delivered")
            self.hook_wait.answered(self.clock())
            report.delivered += 1

    def _add_up(self, report: StepReport) -> None:
        t = self.totals
        t.read += report.read
        t.new += report.new
        t.late += report.late
        t.scored += report.scored
        t.alerts += report.alerts
        t.retried += report.retried
        t.delivered += report.delivered
        for name, n in report.sent.items():
            t.sent[name] = t.sent.get(name, 0) + n
        for name, n in report.failed.items():
            t.failed[name] = t.failed.get(name, 0) + n

    # what is left undone ------------------------------------------------------------------
    def waiting_line(self) -> str:
        """ "N rows waiting for the judge since HH:MM UTC (...)", or "" when none wait."""
        w = self.store.waiting_summary(self.run_id)
        if not w["rows"]:
            return ""
        since = datetime.fromtimestamp(w["since"], timezone.utc).strftime("%H:%M:%S")
        rows = f"{w['rows']:,} row" + ("s" if w["rows"] != 1 else "")
        return f"{rows} waiting for the judge since {since} UTC (last error: {w['error'][:200]})"

    def undone(self) -> list[str]:
        """What the command was asked to do and did not do, one line each: rows not scored,
        rows waiting for the judge, scores not written to a target, alerts not delivered, a
        source that did not answer. Read from the store: true after any number of restarts."""
        out = []
        pending = len(self.store.pending_rows(self.run_id))
        if pending:
            out.append(f"{pending:,} rows not scored yet")
        waiting = self.waiting_line()
        if waiting:
            out.append(waiting)
        for target in self.targets:
            n = self.store.unsent_count(self.run_id, target.name)
            if n:
                why = self.target_wait[target.name]
                out.append(
                    f"{n:,} scores not written to {target.name}"
                    + (" (it did not answer)" if why.down_since is not None else "")
                )
            n_failed = self.totals.failed.get(target.name, 0)  # in this run (said above)
            if n_failed:
                out.append(f"{n_failed:,} scores refused by {target.name} (said above)")
        if self.alerts is not None and self.alerts.notify is not None:
            counts = self.store.alert_counts(self.run_id)
            n = counts.get("pending", 0) + counts.get("posting", 0)
            if n:
                out.append(
                    f"{n:,} alerts not delivered to the webhook (kept: posted again on the next "
                    "run)" + (f": {counts['error']}" if counts["error"] else "")
                )
        if self._uncertain:
            out.append(
                f"{self._uncertain:,} alerts may not have reached the webhook (sent, no answer "
                "came): not posted again, check the receiver"
            )
        if self.source_down:
            out.append(f"{self.source.url} did not answer")
        return out

    # the loop -----------------------------------------------------------------------------
    def describe(self, report: StepReport) -> str:
        """One line for a step that did something."""
        stamp = self.now().astimezone(timezone.utc).strftime("%H:%M:%S")
        parts = [
            f"{stamp}  {report.new:,} new" + (f" ({report.late:,} late)" if report.late else "")
        ]
        if report.scored:
            mean = float(np.mean(report.scores)) if report.scores else float("nan")
            parts.append(
                f"{report.scored:,} scored"
                + (f" (mean {mean:.2f})" if report.scores else " (none with a score)")
            )
        if report.waiting:
            parts.append(f"{report.waiting:,} failed for now")
        if report.retried:
            parts.append(f"{report.retried:,} of them after waiting for the judge")
        for name, n in report.sent.items():
            parts.append(f"{n:,} sent to {name}")
        for name, n in report.failed.items():
            parts.append(f"{n:,} not sent to {name}")
        if report.delivered:
            parts.append(f"{report.delivered:,} alerts posted")
        waiting = self.waiting_line()
        if waiting:
            parts.append(waiting)
        return " · ".join(parts)

    def run(self, *, once: bool = False, stop: Any = None) -> StepReport:
        """Step until ``stop`` (a ``threading.Event``) is set; with ``once``, one step (and
        more while the source has more to give). The totals."""
        self._stop = stop
        self._once = once
        self._waited_before = self.store.waiting_rows(self.run_id) if once else []
        for backoff in (self.source_wait, self.hook_wait, *self.target_wait.values()):
            backoff.waits = not once
        while stop is None or not stop.is_set():
            report = self.step()
            n_waiting = self.store.waiting_summary(self.run_id)["rows"]
            did = report.new or report.scored or report.waiting or report.sent or report.failed
            if did or report.delivered or n_waiting != self._waiting_said:
                self.say(self.describe(report))
            self._waiting_said = n_waiting
            if once:
                if report.new and self.source_wait.down_since is None:
                    continue  # more may have come while these were scored
                break
            if not report.busy:
                pause = self.options.interval
                if stop is not None:
                    stop.wait(pause)
                else:
                    time.sleep(pause)
        return self.totals

    @property
    def source_down(self) -> bool:
        return self.source_wait.down_since is not None
