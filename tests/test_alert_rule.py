"""The alert rule's statistics (relevancy.analysis.alerts) and the timeline's small buckets: the t
quantile, the below test's bound and baseline spread, Welch's drop test, the rows-needed
estimate, which window is a drop's baseline, and a CI for a 2-row bucket.

Its false-alarm rate and power are measured by ``python -m bench.alert_rule`` (bench/RESULTS.md),
not here.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from relevancy.analysis.alerts import (
    BELOW_ALPHA,
    DROP_ALPHA,
    DROP_MARGIN,
    check_windows,
    t_quantile,
)
from relevancy.analysis.timeline import bucket_table

T0 = datetime(2026, 12, 6, 9, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)


def _windows(*windows: list[float]) -> tuple[list[datetime], list[float]]:
    """Rows spread over consecutive hours from T0, one list of scores an hour."""
    times: list[datetime] = []
    scores: list[float] = []
    for k, part in enumerate(windows):
        step = HOUR / (len(part) + 1)
        times += [T0 + k * HOUR + step * (i + 1) for i in range(len(part))]
        scores += part
    return times, scores


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [
        (0.975, 9, 2.262157),
        (0.9975, 9, 3.689662),
        (0.9975, 19, 3.173725),
        (0.9975, 49, 2.93973),
        (0.9975, 12.5, 3.399145),  # Welch's df are not whole
        (0.975, 1, 12.706205),
        (0.9975, 2.5, 9.528078),
        (0.9975, 1000, 2.813278),
        (0.0025, 19, -3.173725),
    ],
)
def test_t_quantile_matches_the_t_distribution(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=2e-6)


def test_t_quantile_refuses_what_is_not_a_probability():
    for p, df in ((0.0, 5), (1.0, 5), (0.5, 0), (math.nan, 5)):
        with pytest.raises(ValueError):
            t_quantile(p, df)


def test_the_levels_split_half_a_percent():
    assert round(BELOW_ALPHA + DROP_ALPHA, 12) == 0.005


def test_rows_needed_grows_as_the_square_of_the_bound_over_the_gap():
    pattern = [0.45, 0.65]  # mean 0.55 under 0.60, a spread that keeps the bound above it
    (check,) = check_windows(*_windows(pattern * 6), below=0.6, window=HOUR, drop=False)
    assert check.status == "too_few" and check.n == 12
    x = np.array(pattern * 6)
    half = t_quantile(1 - BELOW_ALPHA, 11) * x.std(ddof=1) / math.sqrt(12)
    assert half > 2 * (0.6 - 0.55)  # the bound is more than twice the gap over the mean
    assert check.needed == math.ceil(12 * (half / (0.6 - 0.55)) ** 2)
    assert check.needed > 4 * check.n
    assert check.message.endswith(f"only 12 rows: {check.needed} needed to tell")
    # with that many rows of the same scores the window does tell
    more = pattern * ((check.needed + 1) // 2)
    (told,) = check_windows(*_windows(more), below=0.6, window=HOUR, drop=False)
    assert (told.status, told.kind) == ("alert", "below")


def test_a_window_of_failed_rows_is_no_drop_baseline():
    high = [0.90, 0.92, 0.88, 0.91, 0.89, 0.90, 0.93, 0.87, 0.90, 0.91]
    failed = [math.nan] * 12
    low = [0.50, 0.52, 0.48, 0.51, 0.49, 0.50, 0.53, 0.47, 0.50, 0.51]
    checks = check_windows(*_windows(high, failed, low), below=None, window=HOUR)
    assert [(c.n, c.n_failed) for c in checks] == [(10, 0), (0, 12), (10, 0)]
    assert checks[1].status == "too_few" and checks[1].message.startswith("no scored row")
    assert (checks[2].status, checks[2].kind) == ("alert", "drop")
    assert "dropped from 0.90" in checks[2].message


def test_a_baseline_with_too_few_scored_rows_tests_no_drop():
    high = [0.90, 0.92, 0.88, 0.91, 0.89, 0.90, 0.93, 0.87, 0.90, 0.91]
    few = [0.90, 0.91, 0.89] + [math.nan] * 9
    low = [0.50, 0.52, 0.48, 0.51, 0.49, 0.50, 0.53, 0.47, 0.50, 0.51]
    checks = check_windows(*_windows(high, few, low), below=None, window=HOUR)
    assert [c.status for c in checks] == ["ok", "too_few", "ok"]  # 3 rows are no baseline


@pytest.mark.parametrize("spread_in", ["old", "new"])
def test_the_drop_test_counts_both_windows_variances(spread_in):
    spread = [0.30, 1.00] * 6  # mean 0.65, sd 0.37: its mean is known to about +/- 0.1
    tight = [0.54, 0.56] * 6  # mean 0.55
    if spread_in == "old":
        old, new = spread, tight
    else:
        old, new = [s + 0.10 for s in tight], [s - 0.10 for s in spread]  # 0.65 then 0.55
    checks = check_windows(*_windows(old, new), below=None, window=HOUR)
    assert checks[1].mean == pytest.approx(checks[0].mean - 0.10)
    # a drop of 0.10 that one window's spread cannot tell from noise: no alert
    assert checks[1].status == "ok", checks[1].message
    # with the noise gone from the spread-out window, the same drop is told
    steady = [0.64, 0.66] * 6 if spread_in == "old" else [0.54, 0.56] * 6
    pair = (steady, new) if spread_in == "old" else (old, steady)
    told = check_windows(*_windows(*pair), below=None, window=HOUR)
    assert (told[1].status, told[1].kind) == ("alert", "drop")


def test_the_drop_interval_is_welch_s():
    old = [0.90, 0.70, 0.80, 0.85, 0.75, 0.95, 0.65, 0.80, 0.82, 0.78]
    new = [0.60, 0.50, 0.55, 0.62, 0.48, 0.58, 0.52, 0.57, 0.53, 0.55, 0.45, 0.65]
    checks = check_windows(*_windows(old, new), below=None, window=HOUR)
    a, b = np.array(new), np.array(old)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    d = a.mean() - b.mean()
    half = t_quantile(1 - DROP_ALPHA, df) * math.sqrt(va + vb)
    assert d + half < -DROP_MARGIN
    assert checks[1].kind == "drop"
    assert checks[1].message.endswith(
        f"(99.5% CI of the difference {d - half:+.2f} to {d + half:+.2f})"
    )


def test_the_baseline_spread_keeps_a_window_that_missed_the_high_scores_quiet():
    # scores mostly low with a share of high ones; a window of 12 that happened to draw none
    # of the high ones has a small spread of its own and would look sure of a low mean
    usual = [0.15, 0.20, 0.25, 0.18, 0.22, 0.20, 0.17, 0.23, 0.80, 0.85, 0.90, 0.75]
    unlucky = [0.20, 0.21, 0.19, 0.22, 0.18, 0.20, 0.21, 0.19, 0.23, 0.17, 0.20, 0.20]
    alone = check_windows(*_windows(unlucky), below=0.33, window=HOUR)
    assert (alone[0].status, alone[0].kind) == ("alert", "below")
    after = check_windows(*_windows(usual, unlucky), below=0.33, window=HOUR, drop=False)
    assert after[1].status == "too_few"


def test_identical_scores_far_below_alert_and_a_single_row_never_does():
    (same,) = check_windows(*_windows([0.3] * 10), below=0.6, window=HOUR)
    assert (same.status, same.kind) == ("alert", "below")
    (one,) = check_windows(*_windows([0.1]), below=0.6, window=HOUR, min_rows=1)
    assert (one.status, one.needed) == ("too_few", 2)


def test_a_two_row_bucket_has_its_interval():
    times = [T0 + timedelta(minutes=m) for m in (5, 40, 50, 70)]
    table = bucket_table(times, [0.4, 0.8, np.nan, 0.7], bucket="hour")
    two, one = table.to_dict("records")
    assert (two["n"], two["scored"], two["failed"]) == (3, 2, 1)
    assert math.isfinite(two["low"]) and math.isfinite(two["high"])
    assert two["mean"] == pytest.approx(0.6)
    assert two["low"] < two["mean"] < two["high"]
    assert one["scored"] == 1 and math.isnan(one["low"]) and math.isnan(one["high"])
