"""The pieces of :mod:`relevancy.scoring.follow`: its options, targets, alert rule and step
report, whose failure is a row's own, the pause for what does not answer, and what became of
each row sent to a target."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from relevancy.io.exporters import WriteBack

__all__ = [
    "FollowOptions",
    "Target",
    "AlertRule",
    "StepReport",
    "failed_for_itself",
    "Backoff",
    "row_outcomes",
]


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
    #: a row waiting for the judge is tried again after this many seconds, doubling, at most
    #: ``judge_most`` (and at once when another row scores: the judge answers again)
    judge_first: float = 30.0
    judge_most: float = 600.0


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
    scored: int = 0  #: rows scored (with a score, or failed for a reason of their own)
    scores: list[float] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)  #: target -> scores that got there
    failed: dict[str, int] = field(default_factory=dict)  #: target -> scores that did not
    checks: list[Any] = field(default_factory=list)  #: the windows checked
    alerts: int = 0
    waiting: int = 0  #: rows that failed for a passing reason in this step (tried again later)
    retried: int = 0  #: of the scored, rows that had waited for the judge
    delivered: int = 0  #: alerts the webhook took
    undelivered: int = 0  #: alerts the webhook did not take (kept, posted again later)

    @property
    def busy(self) -> bool:
        """Something arrived or was done: read again at once."""
        return bool(self.new or self.scored)


#: errors of a row itself: scoring it again gives the same (the text of
#: :func:`relevancy.io.checks.check_text` and of a mode that finds no sentence)
_OWN_FAILURE = re.compile(
    r"^(user_input|response) (is empty|must be a string)|mode: the response has no sentence"
)


def failed_for_itself(error: str | None) -> bool:
    """Whether a row's scoring failed for a reason of its own (an empty or non-text question
    or answer, no sentence to score): trying again gives the same. Any other failure (the
    judge or the embedder answered 5xx, timed out, refused, sent an unreadable reply) may pass:
    a followed row with such a failure waits for the judge and is tried again.

    >>> failed_for_itself("response is empty (''): give the text to score")
    True
    >>> failed_for_itself("generation failed: HTTP 503 from http://127.0.0.1:8000/v1")
    False
    """
    return bool(error) and bool(_OWN_FAILURE.search(str(error)))


class Backoff:
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


def row_outcomes(
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
            elif key.startswith("row ") and key[4:].isdigit() and 1 <= int(key[4:]) <= len(rows):
                out[rows[int(key[4:]) - 1]] = why  # "row N" counts the batch's rows from 1
    return out
