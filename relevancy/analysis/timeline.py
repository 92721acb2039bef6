"""Relevancy over time: rows placed by their own time, per bucket (10 minutes, an hour, a day or
a week) with the mean's 95% CI, split by a column, and where the model or the prompt changed.

A row's time is one of the input's own columns (an importer's ``start_time``, an MLflow
trace's ``request_time``, a log's ``created``...): :func:`find_time_column` finds it by name,
:func:`parse_times` reads ISO text (UTC when it names no zone), datetimes and pandas
Timestamps, and epoch numbers (seconds, milliseconds, microseconds or nanoseconds, told apart
by their size). A cell that is none of these is counted, never dropped unsaid.

A bucket's mean is over its rows with a finite score; rows whose score is NaN (failed rows)
are counted in ``failed``, not in the mean. Numpy and pandas only.

>>> import pandas as pd
>>> times = parse_times(["2026-01-05T09:10:00Z", "2026-01-05T09:50", 1767608400, "soon"])
>>> times.bad, times.values[:3].dt.hour.tolist()
(1, [9, 9, 10])
>>> table = bucket_table(times.values, [0.8, 0.6, 0.9, 0.5], bucket="hour")
>>> table[["n", "scored", "mean"]].to_dict("list")
{'n': [2, 1], 'scored': [2, 1], 'mean': [0.7, 0.9]}
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis.alerts import t_quantile
from relevancy.core.stats import bootstrap_ci

__all__ = [
    "TIME_NAMES",
    "CHANGE_NAMES",
    "BUCKETS",
    "ParsedTimes",
    "find_time_column",
    "parse_times",
    "choose_bucket",
    "bucket_of",
    "bucket_table",
    "mean_ci",
    "T_ABOVE",
    "change_marks",
    "time_span",
]

#: column names read as a row's time, in order of preference (any case): the trace's start first
TIME_NAMES = (
    "start_time",
    "startTime",
    "request_time",
    "timestamp",
    "time",
    "created_at",
    "createdAt",
    "created",
    "timestamp_ms",
    "datetime",
    "date",
)
#: columns whose first new value marks a change of model or prompt (any case)
CHANGE_NAMES = (
    "llm",
    "model",
    "metadata.model",
    "ls_model_name",
    "prompt_version",
    "prompt_template",
    "metadata.prompt_version",
    "version",
    "variant",
)
#: bucket widths, narrowest first
BUCKETS: dict[str, timedelta] = {
    "10min": timedelta(minutes=10),
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
    "week": timedelta(weeks=1),
}
#: the automatic bucket is the narrowest giving at most this many buckets
MAX_BUCKETS = 72
#: the automatic bucket wants at least this many rows in a bucket, on average
ROWS_PER_BUCKET = 10
#: weeks start on Monday (1970-01-05), the other buckets at the epoch
_WEEK_ORIGIN = pd.Timestamp("1970-01-05", tz="UTC")
_EPOCH = pd.Timestamp("1970-01-01", tz="UTC")
#: epoch numbers: the smallest value read in each unit (1973 onwards in all four)
_EPOCH_UNITS = (("ns", 1e17), ("us", 1e14), ("ms", 1e11), ("s", 1e8))


@dataclass(frozen=True)
class ParsedTimes:
    """Times read from a column: ``values`` (UTC, ``NaT`` where a cell is empty or unreadable),
    how many cells were ``empty``, how many ``bad`` (not a time), and up to three of those."""

    values: pd.Series
    empty: int
    bad: int
    examples: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line on the cells that are not times (``""`` when all are)."""
        parts = []
        if self.bad:
            shown = ", ".join(repr(e) for e in self.examples)
            parts.append(f"{self.bad} cell(s) are not times (such as {shown})")
        if self.empty:
            parts.append(f"{self.empty} row(s) have no time")
        if not parts:
            return ""
        return "; ".join(parts) + ": they are left out of the chart."


def find_time_column(columns: Sequence[Any]) -> str | None:
    """The column holding the rows' time, by name (:data:`TIME_NAMES`, any case), or ``None``.

    >>> find_time_column(["question", "answer", "Timestamp"])
    'Timestamp'
    """
    lower = {str(c).strip().lower(): str(c) for c in reversed(list(columns))}
    return next((lower[n.lower()] for n in TIME_NAMES if n.lower() in lower), None)


def _one(value: Any) -> pd.Timestamp | None:
    """One cell as a UTC time, or None when it is not one."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            number = None
        if number is None:
            try:
                stamp = pd.Timestamp(text.replace("Z", "+00:00") if text.endswith("Z") else text)
            except (ValueError, TypeError, OverflowError):
                return None
            if pd.isna(stamp):
                return None
            return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
        value = number
    if isinstance(value, (int, float, np.integer, np.floating)):
        magnitude = abs(float(value))
        if not math.isfinite(magnitude):
            return None
        for unit, above in _EPOCH_UNITS:
            if magnitude >= above:
                exact = int(value) if unit == "ns" else float(value)
                return pd.Timestamp(exact, unit=unit, tz="UTC")
        return None
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError, OverflowError):
        return None
    if pd.isna(stamp):
        return None
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def _series(values: pd.Series | Sequence[Any]) -> pd.Series:
    """``values`` as a Series (a Series as it is: no copy through a list)."""
    return values if isinstance(values, pd.Series) else pd.Series(list(values))


def _is_empty(value: Any) -> bool:
    if value is None or (isinstance(value, str) and not value.strip()):
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def parse_times(values: Sequence[Any] | pd.Series) -> ParsedTimes:
    """Read a column of times (see the module): UTC timestamps, ``NaT`` where a cell is empty or
    not a time, with those counted.

    >>> parse_times([1767607200000, "2026-01-05 10:00+01:00", None]).values[:2].dt.hour.tolist()
    [10, 9]
    """
    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    series = series.reset_index(drop=True)
    if isinstance(series.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(series):
        out = pd.to_datetime(series, utc=True)
        return ParsedTimes(out, int(out.isna().sum()), 0)
    out = pd.Series(pd.NaT, index=series.index, dtype="datetime64[ns, UTC]")
    # ISO 8601 text (what logs and exports hold) parsed on the column at once; whatever it does
    # not read (epoch numbers, other formats, junk) is read a cell at a time, as before
    if isinstance(series.dtype, pd.StringDtype):  # a column of text: every value is a str
        text = series[series.notna()].str.strip()
    else:  # a cell at a time (1M rows: 0.2 s, so not for a text column)
        text = series[series.map(lambda v: isinstance(v, str))].str.strip()
    dated = text[text.str.contains(r"\d[-/T: ]\d", regex=True)]  # not a bare number
    if len(dated):
        fast = pd.to_datetime(dated, utc=True, errors="coerce", format="ISO8601")
        out.loc[fast.index] = fast
    empty = bad = 0
    examples: list[str] = []
    for i in np.flatnonzero(out.isna().to_numpy()):
        value = series.iat[i]
        if _is_empty(value):
            empty += 1
            continue
        stamp = _one(value)
        if stamp is None:
            bad += 1
            if len(examples) < 3:
                examples.append(str(value)[:40])
        else:
            out.iat[i] = stamp
    return ParsedTimes(out, empty, bad, tuple(examples))


def choose_bucket(
    times: pd.Series | Sequence[Any], *, most: int = MAX_BUCKETS, rows: int = ROWS_PER_BUCKET
) -> str:
    """The bucket for these times: the narrowest of :data:`BUCKETS` that splits their span into
    fewer than ``most`` buckets, more than one, with on average at least ``rows`` rows in each
    bucket that has any (a CI needs rows); when none has that many, the narrowest of an hour or
    more that keeps under ``most`` buckets (``"hour"`` for no times).

    >>> day = pd.Timestamp("2026-01-01", tz="UTC")
    >>> choose_bucket([day + pd.Timedelta(minutes=m) for m in range(0, 48 * 60, 5)])
    'hour'
    >>> choose_bucket([day + pd.Timedelta(minutes=m) for m in range(0, 300, 1)])
    '10min'
    >>> choose_bucket(pd.to_datetime(["2026-01-01", "2026-03-01"], utc=True))
    'day'
    """
    stamps = pd.to_datetime(_series(times), utc=True).dropna()
    if stamps.empty:
        return "hour"
    span = stamps.max() - stamps.min()
    fits = [name for name, width in BUCKETS.items() if span / width < most] or ["week"]
    for name in fits:
        buckets = bucket_of(stamps, name).nunique()
        if buckets > 1 and len(stamps) / buckets >= rows:
            return name
    return next((n for n in fits if BUCKETS[n] >= timedelta(hours=1)), "week")


def bucket_of(times: pd.Series, bucket: str) -> pd.Series:
    """Each time's bucket start (UTC): buckets aligned to the epoch, weeks starting on Monday."""
    width = pd.Timedelta(BUCKETS[bucket])
    origin = _WEEK_ORIGIN if bucket == "week" else _EPOCH
    stamps = pd.to_datetime(times, utc=True)
    return origin + ((stamps - origin) // width) * width


#: above this many scores a bucket's CI is Student's t interval, not a bootstrap
T_ABOVE = 30


def mean_ci(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The 95% CI of the mean of the finite ``values``: a percentile bootstrap up to
    :data:`T_ABOVE` scores (where a skewed bucket's mean is not yet normal), the t interval
    ``mean ± t(n-1) · sd / √n`` above (a bootstrap of every bucket took 18 s of a million-row
    run's 720 hours). NaN under 2 scores.

    >>> low, high = mean_ci(np.linspace(0.0, 1.0, 101))
    >>> round(low, 4), round(high, 4)
    (0.4422, 0.5578)
    """
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return (math.nan, math.nan)
    if x.size <= T_ABOVE:
        return bootstrap_ci(x, confidence=confidence)
    half = t_quantile(1 - (1 - confidence) / 2, x.size - 1) * float(x.std(ddof=1))
    half /= math.sqrt(x.size)
    return (float(x.mean() - half), float(x.mean() + half))


def _stats(scores: np.ndarray) -> tuple[int, int, float, float, float]:
    finite = scores[np.isfinite(scores)]
    mean = float(finite.mean()) if finite.size else math.nan
    low, high = mean_ci(finite)
    return int(finite.size), int(scores.size - finite.size), mean, low, high


def bucket_table(
    times: pd.Series | Sequence[Any],
    scores: Sequence[float] | np.ndarray,
    *,
    bucket: str = "hour",
    groups: Sequence[Any] | pd.Series | None = None,
) -> pd.DataFrame:
    """Per bucket (and per group, with ``groups``): ``start``, ``end``, ``group`` (``""`` without
    groups), ``n`` (rows), ``scored`` (finite scores), ``failed`` (NaN scores), ``mean`` (of the
    finite scores), ``low``/``high`` (its 95% CI: :func:`mean_ci`, a bootstrap up to 30 scores,
    the t interval above; NaN under 2 scores). Rows without a time are left out
    (:class:`ParsedTimes` counts them). Sorted by group, then time.
    """
    stamps = pd.to_datetime(_series(times), utc=True).reset_index(drop=True)
    values = np.asarray(scores, dtype=np.float64)
    names = (
        pd.Series([""] * len(stamps))
        if groups is None
        else _series(groups).astype(object).reset_index(drop=True).fillna("(none)").astype(str)
    )
    frame = pd.DataFrame({"start": bucket_of(stamps, bucket), "group": names, "score": values})
    frame = frame[stamps.notna().to_numpy()]
    width = pd.Timedelta(BUCKETS[bucket])
    # counts, means and spreads of every bucket at once; a bootstrap only where there are few
    finite = np.isfinite(frame["score"].to_numpy())
    grouped = frame.assign(ok=finite).groupby(["group", "start"], sort=True)
    table = grouped.agg(
        n=("score", "size"), scored=("ok", "sum"), mean=("score", "mean"), sd=("score", "std")
    ).reset_index()
    scored = table["scored"].to_numpy(dtype=np.int64)
    df = np.maximum(scored - 1, 1)
    t = np.array([t_quantile(0.975, float(d)) if d >= T_ABOVE else math.nan for d in df])
    half = t * table["sd"].to_numpy(dtype=float) / np.sqrt(np.maximum(scored, 1))
    low, high = table["mean"] - half, table["mean"] + half
    for i in np.flatnonzero(scored <= T_ABOVE):  # few scores: the bootstrap
        part = grouped.get_group((table.at[i, "group"], table.at[i, "start"]))
        low.iat[i], high.iat[i] = mean_ci(part["score"].to_numpy())
    rows = list(
        zip(
            table["start"],
            table["start"] + width,
            table["group"],
            table["n"].astype(int),
            scored,
            table["n"].astype(int) - scored,
            table["mean"],
            low,
            high,
        )
    )
    columns = ["start", "end", "group", "n", "scored", "failed", "mean", "low", "high"]
    return pd.DataFrame(rows, columns=columns)


def change_marks(
    times: pd.Series | Sequence[Any],
    frame: pd.DataFrame,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Where the model or the prompt changed: for each of ``columns`` of ``frame`` (default:
    those named in :data:`CHANGE_NAMES`, any case), the first time each of its values appears
    after the first value (``time``, ``column``, ``value``, ``previous``: the value seen last
    before it), in time order.

    >>> t = pd.to_datetime(["2026-01-01 09:00", "2026-01-01 10:00", "2026-01-01 11:00"], utc=True)
    >>> change_marks(t, pd.DataFrame({"llm": ["a", "a", "b"]}))[["column", "value", "previous"]]
      column value previous
    0    llm     b        a
    """
    stamps = pd.to_datetime(_series(times), utc=True).reset_index(drop=True)
    wanted = {n.lower() for n in CHANGE_NAMES}
    out = []
    order = np.argsort(stamps.dt.tz_convert(None).to_numpy(), kind="stable")  # NaT last
    for column in frame.columns:
        if (str(column).lower() not in wanted) if columns is None else (column not in columns):
            continue
        # the values as codes of their text (hashed once; blanks and missing cells left out)
        codes, uniques = pd.factorize(frame[column].reset_index(drop=True))
        names = pd.Index(uniques, dtype=object).astype(str)
        blank = np.asarray([not n.strip() for n in names], dtype=bool)
        merged, names = pd.factorize(names)  # 1 and "1" are one value, as text
        codes = np.where(codes < 0, -1, merged[np.maximum(codes, 0)])
        usable = (codes >= 0) & ~blank[np.maximum(codes, 0)] & stamps.notna().to_numpy()
        keep = order[usable[order]]  # the usable rows, in time order
        seen = codes[keep]
        # each value's first row after the very first; "previous" is the row just before it
        _, firsts = np.unique(seen, return_index=True)
        for at in np.sort(firsts)[1:]:
            out.append((stamps.iat[keep[at]], str(column), names[seen[at]], names[seen[at - 1]]))
    marks = pd.DataFrame(out, columns=["time", "column", "value", "previous"])
    return marks.sort_values("time", kind="stable").reset_index(drop=True)


def time_span(start: Any, end: Any, *, dash: str = "-") -> str:
    """From ``start`` to ``end`` (UTC) in words that tell them apart: the date once when both
    fall on one day, each date when the span crosses days, seconds when either is not on a
    whole minute. ``dash`` joins two times of one day.

    >>> t = pd.Timestamp("2026-12-06 09:00", tz="UTC")
    >>> time_span(t, t + pd.Timedelta("1h"))
    '2026-12-06 09:00-10:00 UTC'
    >>> time_span(t.normalize(), t.normalize() + pd.Timedelta("1D"))
    '2026-12-06 00:00 to 2026-12-07 00:00 UTC'
    >>> time_span(t, t + pd.Timedelta("30s"))
    '2026-12-06 09:00:00-09:00:30 UTC'
    """
    a, b = (pd.Timestamp(t) for t in (start, end))
    a, b = (t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC") for t in (a, b))
    clock = "%H:%M:%S" if any(t.second or t.microsecond for t in (a, b)) else "%H:%M"
    if a.date() == b.date():
        return f"{a.strftime(f'%Y-%m-%d {clock}')}{dash}{b.strftime(clock)} UTC"
    return f"{a.strftime(f'%Y-%m-%d {clock}')} to {b.strftime(f'%Y-%m-%d {clock}')} UTC"
