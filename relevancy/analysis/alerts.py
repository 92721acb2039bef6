"""Alerts on relevancy over time: each window of time (aligned to the epoch, UTC) judged on its
own rows, against a threshold and against the window before it.

The rule, for a window with ``n`` rows with a finite score (failed rows, NaN, are counted apart
and left out of the mean):

- **too few** (``status="too_few"``, no alert) when ``n < min_rows``, or when the mean is under
  the threshold but its 95% CI still reaches it (the window cannot tell yet). ``needed`` is then
  ``min_rows`` or, when the window's CI is too wide, the rows at which the CI (its half-width
  shrinking as ``1/sqrt(n)``) would clear the threshold: ``ceil(n * (half / (X - mean))^2)``.
- **below** (``status="alert"``, ``kind="below"``) when the mean is under the threshold ``X``
  *and* the CI's upper bound is under ``X`` too: not one unlucky row, the whole interval.
- **drop** (``kind="drop"``) when the window is lower than the previous window that has rows,
  by more than the two windows' CIs allow: the 95% CI of the difference of the two means (as
  the compare gate's :func:`relevancy.analysis.compare.regression_check` judges a difference)
  lies entirely below ``-DROP_MARGIN`` (the gate's tie margin, 0.02). Both windows need
  ``min_rows`` rows.

>>> from datetime import datetime, timedelta, timezone
>>> t0 = datetime(2026, 12, 6, 9, tzinfo=timezone.utc)
>>> times = [t0 + timedelta(minutes=i) for i in range(40)]
>>> scores = [0.9] * 20 + [0.4, 0.5] * 10
>>> checks = check_windows(times, scores, below=0.6, window=parse_window("20m"))
>>> [(c.status, c.kind) for c in checks]
[('ok', ''), ('alert', 'below')]
>>> checks[1].message
'relevancy 0.45 (95% CI 0.43-0.47, 20 rows) in 2026-12-06 09:20-09:40 UTC is below 0.60'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from relevancy.core.stats import NORMAL_ABOVE, bootstrap_ci
from relevancy.errors import InputError

__all__ = ["WindowCheck", "parse_window", "window_of", "check_windows", "DROP_MARGIN"]

#: the compare gate's tie margin: a drop smaller than this is no drop
DROP_MARGIN = 0.02
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_UNITS = {
    "s": "seconds",
    "sec": "seconds",
    "m": "minutes",
    "min": "minutes",
    "h": "hours",
    "d": "days",
    "w": "weeks",
}
_WINDOW = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*", re.IGNORECASE)
#: the shortest window (seconds) and the longest (a leap year) that :func:`parse_window` takes
_SHORTEST, _LONGEST = 1.0, timedelta(days=366)


@dataclass(frozen=True)
class WindowCheck:
    """One window's verdict (see the module for the rule)."""

    start: datetime  #: window start (UTC, aware)
    end: datetime  #: window end (exclusive)
    n: int  #: rows with a finite score in the window
    n_failed: int  #: rows in the window whose score is NaN
    mean: float  #: NaN when n == 0
    low: float  #: 95% CI of the mean
    high: float
    status: str  #: "alert", "ok" or "too_few"
    kind: str  #: "", "below" or "drop"
    needed: int  #: rows needed to tell (status "too_few"), else 0
    message: str  #: one line

    def to_json(self) -> dict[str, Any]:
        """The check as JSON-ready values: times as ISO text, NaN as ``None``."""
        out: dict[str, Any] = {}
        for key, value in asdict(self).items():
            if isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, float) and not math.isfinite(value):
                value = None
            out[key] = value
        return out


def parse_window(text: str) -> timedelta:
    """``"30m"``, ``"1h"``, ``"1d"``, ``"2w"`` (also ``s``, ``min``) as a duration.

    >>> parse_window("90m")
    datetime.timedelta(seconds=5400)
    """
    match = _WINDOW.fullmatch(str(text))
    unit = _UNITS.get(match.group(2).lower()) if match else None
    if match is None or unit is None or float(match.group(1)) <= 0:
        raise InputError(
            f"{str(text)[:40]!r} is not a window: give a number and a unit, such as 30m, 1h, "
            "1d or 2w"
        )
    # checked in seconds before a timedelta is made: 99999999999999d would overflow it
    seconds = float(match.group(1)) * timedelta(**{unit: 1}).total_seconds()
    if not _SHORTEST <= seconds <= _LONGEST.total_seconds():
        raise InputError(
            f"{str(text)[:40]!r} is not a window: give one from 1s to {_LONGEST.days}d"
        )
    return timedelta(seconds=seconds)


def _utc(t: Any) -> datetime:
    stamp = pd.Timestamp(t)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.to_pydatetime()


def window_of(t: datetime, window: timedelta) -> tuple[datetime, datetime]:
    """The window holding ``t`` (naive: UTC), windows aligned to the epoch (UTC): its start and
    end (exclusive).

    >>> start, end = window_of(datetime(2026, 12, 6, 9, 41), timedelta(minutes=30))
    >>> start.isoformat(), end.isoformat()
    ('2026-12-06T09:30:00+00:00', '2026-12-06T10:00:00+00:00')
    """
    width = int(window / timedelta(microseconds=1))
    since = int((_utc(t) - _EPOCH) / timedelta(microseconds=1))
    start = _EPOCH + timedelta(microseconds=(since // width) * width)
    return start, start + window


def _span(start: datetime, end: datetime) -> str:
    """``2026-12-06 09:00-10:00 UTC`` (``...-24:00`` for a window ending at midnight; the end's
    date too when the window spans more than one day; seconds too when a window does not start
    and end on whole minutes: ``05:51:00-05:51:30``)."""
    clock = "%H:%M:%S" if any(t.second or t.microsecond for t in (start, end)) else "%H:%M"
    head = start.strftime(f"%Y-%m-%d {clock}")
    if end.date() == start.date():
        return f"{head}-{end.strftime(clock)} UTC"
    if end - start <= timedelta(days=1) and end.time() == datetime.min.time():
        return f"{head}-24:00{':00' if clock.endswith('S') else ''} UTC"
    return f"{head} - {end.strftime(f'%Y-%m-%d {clock}')} UTC"


def _ci(x: np.ndarray) -> tuple[float, float]:
    return bootstrap_ci(x) if x.size > 1 else (math.nan, math.nan)


def _diff_ci(new: np.ndarray, old: np.ndarray, *, seed: int = 0) -> tuple[float, float]:
    """95% CI of ``mean(new) - mean(old)``, the two resampled apart (normal above
    ``NORMAL_ABOVE`` rows, as :func:`bootstrap_ci`)."""
    if new.size < 2 or old.size < 2:
        return (math.nan, math.nan)
    diff = float(new.mean() - old.mean())
    if min(new.size, old.size) > NORMAL_ABOVE:
        half = NormalDist().inv_cdf(0.975) * math.sqrt(
            new.var(ddof=1) / new.size + old.var(ddof=1) / old.size
        )
        return (diff - half, diff + half)
    rng = np.random.default_rng(seed)
    a = new[rng.integers(0, new.size, size=(2000, new.size))].mean(axis=1)
    b = old[rng.integers(0, old.size, size=(2000, old.size))].mean(axis=1)
    low, high = np.quantile(a - b, [0.025, 0.975])
    return (float(low), float(high))


def _needed(n: int, mean: float, high: float, below: float | None, min_rows: int) -> int:
    if n < min_rows or below is None or not (mean < below) or not math.isfinite(high):
        return min_rows
    half = high - mean
    return max(min_rows, n + 1, math.ceil(n * (half / (below - mean)) ** 2))


def check_windows(
    times: Sequence[datetime] | pd.Series,
    scores: Sequence[float] | np.ndarray,
    *,
    below: float | None,
    window: timedelta,
    min_rows: int = 10,
    drop: bool = True,
    until: datetime | None = None,
) -> list[WindowCheck]:
    """Judge every window that has rows, in time order (see the module for the rule).

    ``times``: each row's time (datetimes, Timestamps or ISO text; naive ones are UTC; rows
    without a time are left out), ``scores``: each row's score (NaN: failed). ``below``: the
    threshold (None: no threshold test), ``drop``: also test each window against the previous
    window that has rows. With ``until``, only complete windows (``end <= until``) are judged.
    """
    stamps = pd.to_datetime(pd.Series(list(times), dtype=object), utc=True, format="mixed")
    values = np.asarray(scores, dtype=np.float64)
    if values.size != len(stamps):
        raise InputError(f"{len(stamps)} times but {values.size} scores")
    keep = stamps.notna().to_numpy()
    stamps, values = stamps[keep], values[keep]
    width = pd.Timedelta(window)
    epoch = pd.Timestamp(_EPOCH)
    starts = epoch + ((stamps - epoch) // width) * width
    limit = None if until is None else pd.Timestamp(_utc(until))
    checks: list[WindowCheck] = []
    previous: np.ndarray | None = None
    prev_check: WindowCheck | None = None
    for start in sorted(set(starts)):
        end = start + width
        if limit is not None and end > limit:
            continue
        part = values[(starts == start).to_numpy()]
        finite = part[np.isfinite(part)]
        n, failed = int(finite.size), int(part.size - finite.size)
        mean = float(finite.mean()) if n else math.nan
        low, high = _ci(finite)
        when = _span(start.to_pydatetime(), end.to_pydatetime())
        failed_note = f", {failed} failed" if failed else ""
        figure = (
            f"relevancy {mean:.2f} (95% CI {low:.2f}-{high:.2f}, {n} rows{failed_note})"
            if n > 1
            else f"relevancy {mean:.2f} ({n} row{failed_note})"
            if n
            else f"no scored row ({failed} failed)"
        )
        status, kind, needed = "ok", "", 0
        message = f"{figure} in {when}"
        if below is not None and n >= min_rows and mean < below and high < below:
            status, kind = "alert", "below"
            message += f" is below {below:.2f}"
        elif n < min_rows or (below is not None and mean < below):
            status, needed = "too_few", _needed(n, mean, high, below, min_rows)
            message = f"{message}: only {n} rows: {needed} needed to tell"
        if (
            status != "alert"
            and drop
            and previous is not None
            and prev_check is not None
            and n >= min_rows
            and previous.size >= min_rows
        ):
            d_low, d_high = _diff_ci(finite, previous)
            if math.isfinite(d_high) and d_high < -DROP_MARGIN:
                status, kind, needed = "alert", "drop", 0
                message = (
                    f"{figure} in {when} dropped from {prev_check.mean:.2f} "
                    f"(95% CI of the difference {d_low:+.2f} to {d_high:+.2f})"
                )
        check = WindowCheck(
            start.to_pydatetime(),
            end.to_pydatetime(),
            n,
            failed,
            mean,
            low,
            high,
            status,
            kind,
            needed,
            message,
        )
        checks.append(check)
        if n:
            previous, prev_check = finite, check
    return checks
