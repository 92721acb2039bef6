"""Following a live source (``relevancy score --from ... --follow``): new traces are read, added
to one run that grows, scored, written back and checked for alerts, step after step.

One :meth:`Follower.step`:

1. **read** the traces that started since the cursor (less ``overlap``, and, every
   ``sweep_every`` seconds, less ``late``: a trace the source stored late is still found), and
   add the ones the run does not have, with the new cursor, in one transaction
   (:meth:`relevancy.runs.RunStore.add_followed`);
2. **score** the run's rows that have no result (those just added, and any a killed process
   left), each saved as it finishes;
3. **send** every score that has not reached a write-back target yet, and record what became
   of it, so a restart sends exactly what is missing (the targets skip a score already there);
4. **check** the alert windows that are complete (their end is before the cursor and every row
   is scored), each once.

A source or target that does not answer is waited for with a growing pause (said once, and
said again when it answers); nothing read or scored is lost meanwhile. Memory does not grow
with the run: each step reads what it needs from the store.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis.alerts import check_windows, window_of
from relevancy.errors import RelevancyError
from relevancy.io.exporters import WriteBack
from relevancy.io.importers.live import LiveSource, SourceDown
from relevancy.runs import RunStore
from relevancy.runs.rows import export_frame
from relevancy.scoring.pipeline import score_chunk

__all__ = ["FollowOptions", "Target", "AlertRule", "StepReport", "Follower"]

#: rows sent to a write-back target at a time
SEND_ROWS = 500


@dataclass
class FollowOptions:
    """How a source is followed."""

    interval: float = 5.0  #: seconds between reads when the last one found nothing new
    overlap: timedelta = timedelta(seconds=30)  #: every read looks back this far
    late: timedelta = timedelta(minutes=10)  #: a sweep looks back this far
    sweep_every: float = 60.0  #: seconds between sweeps
    chunk: int = 64  #: rows scored at a time (then sent)
    max_wait: float = 60.0  #: the longest pause before trying a silent source again
    since: datetime | None = None  #: where the first read starts (default: now)


@dataclass
class Target:
    """A write-back target: ``send(frames)`` writes the scores of the rows in ``frames``."""

    name: str  #: "phoenix" or "mlflow"
    id_column: str  #: the column that names each row there: span_id or trace_id
    send: Callable[[list[pd.DataFrame]], WriteBack]


@dataclass
class AlertRule:
    """When a window alerts (:func:`relevancy.analysis.alerts.check_windows`)."""

    below: float | None
    window: timedelta
    min_rows: int = 10
    #: called with each window that alerts (the webhook); raises RelevancyError when it fails
    notify: Callable[[Any], None] | None = None


@dataclass
class StepReport:
    """What one step did."""

    read: int = 0  #: rows the source gave (new or not)
    new: int = 0  #: rows added to the run
    late: int = 0  #: of the new, rows that started before the previous read's end
    scored: int = 0
    scores: list[float] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)  #: target -> scores that got there
    failed: dict[str, int] = field(default_factory=dict)  #: target -> scores that did not
    checks: list[Any] = field(default_factory=list)  #: the windows checked
    alerts: int = 0

    @property
    def busy(self) -> bool:
        """Something arrived or was done: read again at once."""
        return bool(self.new or self.scored)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class _Backoff:
    """A pause that doubles while something does not answer, said once when it starts and
    once when it ends."""

    def __init__(self, what: str, first: float, most: float, say: Callable[[str], None]):
        self.what, self.first, self.most, self.say = what, first, most, say
        self.down_since: float | None = None
        self.wait = first
        self.next_try = 0.0
        self.waits = True  #: False for one pass (--once): nothing is waited for

    def ready(self, now: float) -> bool:
        return self.down_since is None or now >= self.next_try

    def failed(self, why: str, now: float) -> None:
        if self.down_since is None:
            self.down_since, self.wait = now, self.first
            self.say(
                f"{why}: waiting for it (trying again, at most every {self.most:g} s)"
                if self.waits
                else f"FAIL: {why}: run again once it answers (nothing is lost)"
            )
        else:
            self.wait = min(self.wait * 2, self.most)
        self.next_try = now + self.wait

    def answered(self, now: float) -> None:
        if self.down_since is not None:
            self.say(f"{self.what} answers again after {now - self.down_since:.0f} s")
        self.down_since = None


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
    ) -> None:
        self.metric, self.store, self.run_id, self.source = metric, store, run_id, source
        self.options = options or FollowOptions()
        self.targets = list(targets)
        self.alerts = alerts
        self.say, self.now, self.clock = say, now, clock
        most = self.options.max_wait
        first = max(1.0, min(self.options.interval, most))
        self.source_wait = _Backoff(source.url, first, most, say)
        self.target_wait = {t.name: _Backoff(t.name, first, most, say) for t in self.targets}
        self._last_sweep: float | None = None
        self._stop: Any = None
        #: rows below this are scored; per target, rows below this are sent (or marked): each
        #: step looks only past them, so a step's work does not grow with the run
        self._scored_to = 0
        self._sent_from: dict[str, int] = {}
        self._due: datetime | None = None  #: no alert window is complete before this
        self._note = ""  #: what the source said last (said again only when it changes)
        self.totals = StepReport()

    # one step ---------------------------------------------------------------------------
    def step(self) -> StepReport:
        """Read, score, send, check once (see the module's docstring)."""
        report = StepReport()
        self._read(report)
        for rows in self._pending_chunks():
            if self._stop is not None and self._stop.is_set():
                break  # the rows left are scored when the run goes on
            self._score(rows, report)
            self._send(report)
        self._send(report)  # what an earlier process scored but did not send
        self._check(report)
        self._add_up(report)
        return report

    def _read(self, report: StepReport) -> None:
        now_s = self.clock()
        if not self.source_wait.ready(now_s):
            return
        o = self.options
        cursor = self.store.follow_cursor(self.run_id)
        end = self.now()
        sweep = self._last_sweep is None or now_s - self._last_sweep >= o.sweep_every
        if cursor.read_to is None:  # the first read: from --since, else what is recent
            start = o.since or end - (o.late if sweep else o.overlap)
        else:
            start = cursor.read_to - (o.late if sweep else o.overlap)
        if o.since is not None:
            start = max(start, o.since)  # never before what was asked for
        try:
            found = self.source.read(start, end)
        except SourceDown as exc:
            self.source_wait.failed(str(exc), now_s)
            return
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
        if not (self._stop is not None and self._stop.is_set()):
            self._scored_to = self._rows_known()  # every row added so far is scored

    def _rows_known(self) -> int:
        return self.store.get_run(self.run_id).n_rows

    def _score(self, rows: list[int], report: StepReport) -> None:
        inputs = self.store.inputs(self.run_id, rows)

        def saved(row: int, result: Any) -> None:
            self.store.append_results(self.run_id, [(row, result)])

        chunk = score_chunk(self.metric, inputs, list(inputs.index), on_result=saved)
        self._scored_to = max(self._scored_to, rows[-1] + 1)  # pending rows come in order
        report.scored += len(chunk.rows)
        values = [float(r.value) for r in chunk.results or []]
        report.scores += [v for v in values if math.isfinite(v)]

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
                outcomes = _outcomes(rows, frame, target.id_column, done)
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
        self._due = window_of(cursor.read_to, rule.window)[1]  # the end of the one in progress
        seconds = rule.window.total_seconds()
        checked = self.store.checked_windows(self.run_id, seconds)
        since = None
        if checked:  # from the window before the first one not checked (the drop test)
            last = max(datetime.fromisoformat(s) for s in checked)
            since = last.timestamp()
        timed = self.store.timed_scores(self.run_id, since=since)
        if timed.empty:
            return
        times = pd.to_datetime(timed["t"], unit="s", utc=True)
        scores = timed["score"].to_numpy(dtype=float)
        for check in check_windows(
            times,
            scores,
            below=rule.below,
            window=rule.window,
            min_rows=rule.min_rows,
            until=cursor.read_to,
        ):
            start = check.start.astimezone(timezone.utc).isoformat()
            if start in checked:
                continue
            report.checks.append(check)
            if check.status == "alert":
                report.alerts += 1
                self.say(f"ALERT: {check.message}")
                if rule.notify is not None:
                    try:
                        rule.notify(check)
                    except RelevancyError as exc:
                        self.say(f"FAIL: alert webhook: {exc}")
            elif check.status == "too_few":
                self.say(f"window: {check.message}")
            self.store.mark_window(self.run_id, check.start, seconds, check.status, check.message)

    def _add_up(self, report: StepReport) -> None:
        t = self.totals
        t.read += report.read
        t.new += report.new
        t.late += report.late
        t.scored += report.scored
        t.alerts += report.alerts
        for name, n in report.sent.items():
            t.sent[name] = t.sent.get(name, 0) + n
        for name, n in report.failed.items():
            t.failed[name] = t.failed.get(name, 0) + n

    # the loop -----------------------------------------------------------------------------
    def describe(self, report: StepReport) -> str:
        """One line for a step that did something."""
        stamp = self.now().astimezone(timezone.utc).strftime("%H:%M:%S")
        parts = [
            f"{stamp}  {report.new:,} new" + (f" ({report.late:,} late)" if report.late else "")
        ]
        if report.scored:
            mean = float(np.mean(report.scores)) if report.scores else float("nan")
            parts.append(f"{report.scored:,} scored (mean {mean:.2f})")
        for name, n in report.sent.items():
            parts.append(f"{n:,} sent to {name}")
        for name, n in report.failed.items():
            parts.append(f"{n:,} not sent to {name}")
        return " · ".join(parts)

    def run(self, *, once: bool = False, stop: Any = None) -> StepReport:
        """Step until ``stop`` (a ``threading.Event``) is set; with ``once``, one step (and
        more while the source has more to give). The totals."""
        self._stop = stop
        for backoff in (self.source_wait, *self.target_wait.values()):
            backoff.waits = not once
        while stop is None or not stop.is_set():
            report = self.step()
            if report.busy or report.sent or report.failed or report.alerts:
                self.say(self.describe(report))
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


def _outcomes(
    rows: Sequence[int], frame: pd.DataFrame, id_column: str, done: WriteBack
) -> dict[int, str]:
    """What became of each row's score: "ok" (written, already there, kept), else why not."""
    ids = frame[id_column].astype(str).tolist() if id_column in frame.columns else []
    where = {key: rows[i] for i, key in enumerate(ids)}
    out = {int(r): "ok" for r in rows}
    for why, failed in done.failed.items():
        for key in failed:
            if key in where:
                out[where[key]] = why
            elif key.startswith("row ") and key[4:].isdigit() and int(key[4:]) <= len(rows):
                out[rows[int(key[4:]) - 1]] = why
    return out
