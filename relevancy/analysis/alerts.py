"""Alerts on relevancy over time: each window of time (aligned to the epoch, UTC) judged on its
own rows, against a threshold and against the window before it.

The rule, for a window with ``n`` rows with a finite score, mean ``m`` and standard deviation
``s`` (failed rows, NaN, are counted apart and left out). Its **baseline** is the previous window
that has scored rows, when that one has at least ``min_rows`` of them (``n0`` rows, mean ``m0``,
standard deviation ``s0``); ``t(p, df)`` is Student's t quantile:

- **below** (``status="alert"``, ``kind="below"``) when ``n >= min_rows`` and the one-sided
  upper bound ``U = m + t(1 - BELOW_ALPHA, n - 1) * s* / sqrt(n)`` is under the threshold ``X``,
  where ``s* = max(s, s0)`` (``s`` without a baseline): a t-test at 0.25 %, the upper end of a
  99.5 % t interval. The baseline's spread is there because a small window of skewed or bimodal
  scores that happened to miss the high ones also has a small ``s`` of its own, and would look
  sure of a low mean; ``s0`` does not depend on this window's luck.
- **drop** (``kind="drop"``) when the window and its baseline both have ``min_rows`` rows and
  Welch's upper bound on ``d = m - m0`` is below ``-DROP_MARGIN`` (the compare gate's tie
  margin): ``d + t(1 - DROP_ALPHA, df) * se < -0.02`` with ``se = sqrt(s^2/n + s0^2/n0)`` and
  ``df = se^4 / ((s^2/n)^2/(n-1) + (s0^2/n0)^2/(n0-1))``.
- **too few** (``status="too_few"``, no alert) when ``n < min_rows`` (or under 2), or when
  ``m < X`` but ``U`` still reaches ``X`` (the window cannot tell yet). ``needed`` is then
  ``min_rows`` or, when ``U`` is too high, about the rows at which it would clear ``X`` (its
  half-width shrinking as ``1/sqrt(n)``): ``ceil(n * ((U - m) / (X - m))^2)``.

The two tests share 0.5 % (``BELOW_ALPHA + DROP_ALPHA``, a Bonferroni split): on stationary
windows (every row drawn from one distribution whose mean is ``X`` or above) at most 0.5 % of
windows alert. ``python -m bench.alert_rule`` measures it, and the power against drops, on the
score distributions of real runs (bench/RESULTS.md). ``low``/``high`` are the mean's 95 % t
interval, ``m -/+ t(0.975, n - 1) * s / sqrt(n)``: what the message shows, not what is tested.

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
from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from relevancy.errors import InputError

__all__ = [
    "WindowCheck",
    "parse_window",
    "window_of",
    "check_windows",
    "t_quantile",
    "DROP_MARGIN",
    "BELOW_ALPHA",
    "DROP_ALPHA",
]

#: the compare gate's tie margin: a drop smaller than this is no drop
DROP_MARGIN = 0.02
#: one-sided level of the below test (the upper end of a 99.5 % t interval)
BELOW_ALPHA = 0.0025
#: one-sided level of the drop test; with BELOW_ALPHA, 0.5 % of stationary windows at most
DROP_ALPHA = 0.0025
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


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for aa in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def _t_upper_tail(t: float, df: float) -> float:
    """``P(T > t)`` for Student's t with ``df`` degrees of freedom, ``t >= 0``."""
    return 0.5 * _beta_inc(df / 2.0, 0.5, df / (df + t * t))


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """Student's t quantile: the ``t`` with ``P(T <= t) = p``, for ``0 < p < 1`` and ``df > 0``
    (any real ``df``, as Welch's are), to about 1e-10; the normal quantile above 1e7 ``df``.

    Numpy and the standard library only (the library does not depend on scipy): the t
    distribution's tail is the regularised incomplete beta function, inverted by bisection.

    >>> round(t_quantile(0.975, 9), 4), round(t_quantile(0.0025, 19), 4)
    (2.2622, -3.1737)
    """
    if not (0.0 < p < 1.0) or not df > 0.0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, not p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    if df > 1e7:
        return NormalDist().inv_cdf(p)
    tail = 1.0 - p
    low, high = 0.0, 1.0
    while _t_upper_tail(high, df) > tail:
        low, high = high, high * 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if _t_upper_tail(mid, df) > tail:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2.0


def _ci(x: np.ndarray) -> tuple[float, float]:
    """The mean's 95 % t interval (NaNs under 2 values)."""
    if x.size < 2:
        return (math.nan, math.nan)
    half = t_quantile(0.975, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return (float(x.mean()) - half, float(x.mean()) + half)


def _below_bound(x: np.ndarray, baseline: np.ndarray | None) -> float:
    """The below test's one-sided upper bound on the mean, ``m + t * max(s, s0) / sqrt(n)``."""
    if x.size < 2:
        return math.nan
    spread = float(x.std(ddof=1))
    if baseline is not None and baseline.size > 1:
        spread = max(spread, float(baseline.std(ddof=1)))
    quantile = t_quantile(1.0 - BELOW_ALPHA, x.size - 1)
    return float(x.mean()) + quantile * spread / math.sqrt(x.size)


def _diff_ci(new: np.ndarray, old: np.ndarray) -> tuple[float, float]:
    """Welch's two-sided ``1 - 2 * DROP_ALPHA`` interval (99.5 %) of ``mean(new) - mean(old)``
    (see the module for the formula)."""
    if new.size < 2 or old.size < 2:
        return (math.nan, math.nan)
    diff = float(new.mean() - old.mean())
    v_new = float(new.var(ddof=1)) / new.size
    v_old = float(old.var(ddof=1)) / old.size
    se = math.sqrt(v_new + v_old)
    if se == 0.0:
        return (diff, diff)
    df = (v_new + v_old) ** 2 / (v_new**2 / (new.size - 1) + v_old**2 / (old.size - 1))
    half = t_quantile(1.0 - DROP_ALPHA, df) * se
    return (diff - half, diff + half)


def _needed(n: int, mean: float, bound: float, below: float | None, min_rows: int) -> int:
    if n < min_rows or below is None or not (mean < below) or not math.isfinite(bound):
        return max(min_rows, 2)
    half = bound - mean
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

    Parameters
    ----------
    times : sequence of datetime or pandas.Series
        Each row's time (datetimes, Timestamps or ISO text; naive ones are UTC); rows without a
        time are left out.
    scores : sequence of float or numpy.ndarray
        Each row's score (NaN: failed).
    below : float or None
        The threshold ``X`` (None: no threshold test).
    window : datetime.timedelta
        The windows' width (aligned to the epoch, UTC).
    min_rows : int
        Scored rows a window (and a drop's baseline) needs before it can alert.
    drop : bool
        Also test each window against its baseline, the previous window that has scored rows.
    until : datetime or None
        When given, only complete windows (``end <= until``) are judged.

    Returns
    -------
    list of WindowCheck
        One per window that has rows.
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
    previous: np.ndarray | None = None  # the last window with a scored row: the baseline
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
        baseline = previous if previous is not None and previous.size >= min_rows else None
        bound = _below_bound(finite, baseline) if below is not None else math.nan
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
        if below is not None and n >= max(min_rows, 2) and bound < below:
            status, kind = "alert", "below"
            message += f" is below {below:.2f}"
        elif n < max(min_rows, 2) or (below is not None and mean < below):
            status, needed = "too_few", _needed(n, mean, bound, below, min_rows)
            message = f"{message}: only {n} rows: {needed} needed to tell"
        if (
            status != "alert"
            and drop
            and baseline is not None
            and prev_check is not None
            and n >= min_rows
        ):
            d_low, d_high = _diff_ci(finite, baseline)
            if math.isfinite(d_high) and d_high < -DROP_MARGIN:
                status, kind, needed = "alert", "drop", 0
                message = (
                    f"{figure} in {when} dropped from {prev_check.mean:.2f} "
                    f"({100 * (1 - 2 * DROP_ALPHA):g}% CI of the difference "
                    f"{d_low:+.2f} to {d_high:+.2f})"
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
