"""Bootstrap resamples of many labelled rows, as weights of a few thousand cells.

Above ``BINNED_ROWS`` labelled rows, each of the Agreement figures' resamples would be a pass over
every row (a million rows, 200 resamples: about 10 s binary, 25 s rated, 50 s continuous; 10,000
rows, 2,000 resamples: 0.6 s).
Here the rows are first gathered into *cells*: a score bin (equal numbers of rows by rank, equal
scores in one bin, the point threshold always an edge), times a label (graded labels with more
than ``LABEL_BINS`` distinct values are binned the same way), times good or bad. A resample is
then the number of times each cell's rows were drawn, and the figures are computed on the cells
(:func:`relevancy.analysis.agreement._weighted_figures` takes them as it takes rows).

The draws are the group bootstrap's own (:func:`relevancy.core.stats.group_counts`, same seed,
the same intervals when every score has a bin of its own: a test checks it). With fewer bins
than distinct scores, answers in one bin count as tied inside a resample: AUROC moves by at most
half the share of good-bad pairs whose two answers share a bin (small with 4,096 bins of equal
rows, larger where one tied score spans many rows and its bin takes lower ones too; within 1e-5
in the tests, about 1e-6 in the bench), Spearman as little (5e-4 in the tests when the labels
are binned too). Precision and recall are exact: the point threshold is an edge, and each bin's
score lies within its values. The threshold's bounds move within the bootstrap's own noise (its
best cut jumps when ties change; the exact bounds move as much from one seed to the next). The
point figures are always computed on every row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from relevancy.core.stats import group_codes, group_counts

__all__ = ["Cells", "LABEL_BINS", "rank_bins", "cells", "cell_weights"]

#: graded labels with more distinct values than this (a share, a float from a judge) are binned
#: into as many bins: a 1-5 rating or a 0-100 score keeps every value
LABEL_BINS = 128


def rank_bins(x: np.ndarray, bins: int, edge: float = np.nan) -> tuple[np.ndarray, np.ndarray]:
    """Each value's bin (about ``len(x) / bins`` values a bin, by rank; equal values in one
    bin; ``edge``, when finite, never inside a bin) and each bin's mean, bins in order of value.
    A mean lies within its bin's values (the float sum of ten 0.1s is a little under 1.0: held
    to 0.1), so a bin at or above ``edge`` has its mean there too.

    >>> b, mean = rank_bins(np.array([0.1, 0.5, 0.2, 0.2, 0.9, 0.4]), 3, edge=0.7)
    >>> b.tolist(), mean.round(2).tolist()
    ([0, 2, 0, 0, 3, 1], [0.17, 0.4, 0.5, 0.9])
    """
    n = x.size
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    first = np.r_[True, xs[1:] != xs[:-1]]
    by_rank = (np.arange(n, dtype=np.int64) * bins) // max(n, 1)
    sorted_bin = by_rank[np.flatnonzero(first)][np.cumsum(first) - 1]  # a run of ties: its first
    if np.isfinite(edge):
        sorted_bin = sorted_bin * 2 + (xs >= edge)
    _, sorted_bin = np.unique(sorted_bin, return_inverse=True)  # numbered 0, 1, 2... in order
    out = np.empty(n, dtype=np.int64)
    out[order] = sorted_bin
    mean = np.bincount(out, weights=x) / np.bincount(out)
    starts = np.flatnonzero(np.r_[True, sorted_bin[1:] != sorted_bin[:-1]])
    ends = np.r_[starts[1:], n] - 1
    return out, np.clip(mean, xs[starts], xs[ends])


@dataclass(frozen=True)
class Cells:
    """Rows gathered into cells, the cells in order of score (ties: same score bin)."""

    score: np.ndarray  #: each cell's score (its bin's mean), ascending
    label: np.ndarray  #: each cell's label (its value, or its label bin's mean)
    good: np.ndarray  #: each cell's good (1) or bad (0)
    row_cell: np.ndarray  #: each row's cell

    @property
    def size(self) -> int:
        return int(self.score.size)


def cells(
    scores: np.ndarray,
    labels: np.ndarray,
    good: np.ndarray,
    *,
    bins: int,
    threshold: float = np.nan,
) -> Cells:
    """The cells of ``scores`` (binned, ``threshold`` an edge), ``labels`` (binned when they
    have more than ``LABEL_BINS`` distinct values) and ``good``."""
    score_bin, score_mean = rank_bins(scores, bins, edge=threshold)
    values, label_code = np.unique(labels, return_inverse=True)
    label_mean = values
    if values.size > LABEL_BINS:
        label_code, label_mean = rank_bins(labels, LABEL_BINS)
    g = np.asarray(good, dtype=np.int64)
    key = (score_bin * (label_mean.size + 1) + label_code) * 2 + g
    found, row_cell = np.unique(key, return_inverse=True)  # sorted: by score bin first
    return Cells(
        score=score_mean[found // 2 // (label_mean.size + 1)],
        label=label_mean[found // 2 % (label_mean.size + 1)],
        good=(found % 2).astype(np.float64),
        row_cell=row_cell.reshape(-1),
    )


def cell_weights(found: Cells, groups: list, *, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """How many rows of each cell every resample draws (whole groups drawn, as
    :func:`relevancy.core.stats.group_weights`), a block of resamples at a time: one line per
    resample, one column per cell."""
    row_group, n_groups = group_codes(groups)
    k = found.size
    # each (cell, group) pair once with its number of rows, in order of cell
    pair, mult = np.unique(found.row_cell * n_groups + row_group, return_counts=True)
    pair_group, pair_cell = pair % n_groups, pair // n_groups
    starts = np.flatnonzero(np.r_[True, pair_cell[1:] != pair_cell[:-1]])  # every cell has one
    assert starts.size == k
    weighted = bool((mult > 1).any())
    chunk = max(1, min(100, 1_000_000 // max(pair.size, 1)))
    for counts in group_counts(n_groups, n_boot=n_boot, seed=seed, chunk=chunk):
        drawn = np.take(counts, pair_group, axis=1)  # the draws of each pair's group
        if weighted:
            drawn *= mult
        yield np.add.reduceat(drawn, starts, axis=1)
