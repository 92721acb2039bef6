"""Summary statistics of a set of scores (NaN-aware), with bootstrap confidence intervals."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "bootstrap_ci",
    "group_bootstrap",
    "group_codes",
    "group_counts",
    "group_weights",
    "summarize",
    "wilson_interval",
]


#: above this many values the interval is the normal one (the bootstrap's, to the third digit)
NORMAL_ABOVE = 2_000


def bootstrap_ci(
    values: Sequence[float], *, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of the finite values (NaNs when fewer than 2).

    Above ``NORMAL_ABOVE`` values (2,000), where the bootstrap distribution of a mean is normal to
    within its own noise, the interval is ``mean ± z * sd / sqrt(n)`` (no resampling: a
    100,000-row run gets its interval in microseconds, not gigabytes).
    """
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return (float("nan"), float("nan"))
    alpha = (1 - confidence) / 2
    if x.size > NORMAL_ABOVE:
        z = float(NormalDist().inv_cdf(1 - alpha))
        half = z * float(x.std(ddof=1)) / math.sqrt(x.size)
        return (float(x.mean() - half), float(x.mean() + half))
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    return (float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha)))


def summarize(values: Sequence[float], *, threshold: float = 0.5) -> dict[str, Any]:
    """Rows, NaN count, mean with a 95% bootstrap CI, median, and share below ``threshold``."""
    x = np.asarray(values, dtype=np.float64)
    finite = x[np.isfinite(x)]
    lo, hi = bootstrap_ci(finite)
    return {
        "rows": int(x.size),
        "scored": int(finite.size),
        "nan": int(x.size - finite.size),
        "mean": float(finite.mean()) if finite.size else float("nan"),
        "ci_low": lo,
        "ci_high": hi,
        "median": float(np.median(finite)) if finite.size else float("nan"),
        "threshold": threshold,
        "below_threshold": float((finite < threshold).mean()) if finite.size else float("nan"),
    }


def group_bootstrap(
    statistic: Callable[[np.ndarray], Sequence[float]],
    groups: Sequence[Hashable],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap intervals of the figures ``statistic(idx)`` returns, resampling
    whole groups.

    ``groups`` gives each row's group (for answers, their question: all answers to one question
    move together). Each of ``n_boot`` resamples draws as many groups as there are, with
    replacement (``numpy.random.default_rng(seed).integers(0, G, size=G)`` once per resample),
    and passes the row positions of the drawn groups, group after group, to ``statistic``,
    which returns one value per figure. Groups are numbered in order of first appearance.
    Resamples where a figure is NaN are left out of that figure's interval.

    Returns ``(low, high)``: one bound per figure (NaN where no resample gave a value).

    >>> import numpy as np
    >>> x = np.array([0.1, 0.4, 0.35, 0.8])
    >>> low, high = group_bootstrap(lambda i: [x[i].mean()], ["a", "a", "b", "c"], n_boot=200)
    >>> bool(low[0] <= x.mean() <= high[0])
    True
    """
    row_group, n_groups = group_codes(groups)
    sizes = np.bincount(row_group, minlength=n_groups).astype(np.int64)
    flat = np.argsort(row_group, kind="stable").astype(np.int64)  # each group's rows in order
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if sizes.size else sizes
    rng = np.random.default_rng(seed)
    boots: list[Sequence[float]] = []
    for _ in range(n_boot):
        picks = rng.integers(0, sizes.size, size=sizes.size)
        lens = sizes[picks]
        # the drawn groups' rows, group after group: start of each group + 0..size-1
        offsets = np.repeat(starts[picks] - np.cumsum(lens) + lens, lens) + np.arange(lens.sum())
        boots.append(statistic(flat[offsets]))
    values = np.asarray(boots, dtype=np.float64).reshape(n_boot, -1)
    alpha = (1 - confidence) / 2
    low, high = [], []
    for column in values.T:
        finite = column[np.isfinite(column)]
        if finite.size:
            lo, hi = np.quantile(finite, [alpha, 1 - alpha])
        else:
            lo = hi = float("nan")
        low.append(float(lo))
        high.append(float(hi))
    return np.asarray(low), np.asarray(high)


def group_weights(
    groups: Sequence[Hashable],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    chunk: int = 100,
    order: np.ndarray | None = None,
) -> Iterator[np.ndarray]:
    """The resamples of :func:`group_bootstrap` as row weights, ``chunk`` resamples at a time.

    Each yielded array has one line per resample and one column per row: how many times the
    row's group was drawn (the same draws as :func:`group_bootstrap` with the same ``seed``).
    A figure computed with these weights equals the figure of the resampled rows, without
    building them: fast for figures that vectorise over resamples. With ``order`` (a
    permutation of the rows), the columns come in that order: the same draws, without a copy
    of each array to reorder it.

    >>> next(group_weights(["a", "a", "b"], n_boot=2, seed=0)).tolist()
    [[0.0, 0.0, 2.0], [1.0, 1.0, 1.0]]
    """
    row_group, n_groups = group_codes(groups)
    if order is not None:
        row_group = row_group[order]
    for counts in group_counts(n_groups, n_boot=n_boot, seed=seed, chunk=chunk):
        yield counts[:, row_group]  # one array of rows' size, not two


def group_codes(groups: Sequence[Hashable]) -> tuple[np.ndarray, int]:
    """Each row's group as a number (in order of first appearance) and how many groups.

    Groups are told apart as a dict's keys are (1, 1.0 and True are one group; None is its own).

    >>> group_codes(["b", "a", "b"])
    (array([0, 1, 0]), 2)
    """
    values = pd.Series(list(groups), dtype=object)
    if values.isna().any():  # pandas makes None, NaN and pd.NA one group; a dict does not
        codes: dict[Hashable, int] = {}
        row_group = np.array([codes.setdefault(g, len(codes)) for g in values], dtype=np.int64)
        return row_group, len(codes)
    found, uniques = pd.factorize(values, sort=False)
    return found.astype(np.int64), len(uniques)


def group_counts(
    n_groups: int, *, n_boot: int = 2000, seed: int = 0, chunk: int = 100
) -> Iterator[np.ndarray]:
    """How many times each of ``n_groups`` groups is drawn in each resample of
    :func:`group_bootstrap` (the same draws with the same ``seed``), ``chunk`` resamples at a
    time: one line per resample, one column per group, as floats.

    >>> next(group_counts(2, n_boot=2, seed=0)).tolist()
    [[0.0, 2.0], [1.0, 1.0]]
    """
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        counts = np.stack(
            [
                np.bincount(rng.integers(0, n_groups, size=n_groups), minlength=n_groups)
                for _ in range(size)
            ]
        )
        yield counts.astype(np.float64)


def wilson_interval(
    successes: int, trials: int, *, confidence: float = 0.95
) -> tuple[float, float]:
    """The Wilson score interval of a proportion: ``successes`` of ``trials``.

    With :math:`\\hat p = k / n` and :math:`z` the normal quantile of the confidence,

    .. math:: \\frac{\\hat p + z^2/2n \\pm z \\sqrt{\\hat p (1 - \\hat p)/n + z^2/4n^2}}{1 + z^2/n}

    It stays inside [0, 1] and keeps a width at 0 or at ``trials`` successes (the normal
    interval can leave [0, 1], and shrinks to a point there). ``(nan, nan)`` without trials.

    Examples
    --------
    >>> low, high = wilson_interval(8, 10)
    >>> round(low, 3), round(high, 3)
    (0.49, 0.943)
    >>> wilson_interval(0, 0)
    (nan, nan)
    """
    if trials <= 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p, n = successes / trials, trials
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)
