"""Agreement of scores with human labels: AUROC, Spearman, the best threshold, disagreements.

A label column (``label``, ``human_score``, ``rating``, ``relevant``...) or labels set in the
dashboard say what a person thought of an answer. Labels are read by :func:`parse_labels`:

* **binary**: two values such as 1/0, yes/no, true/false, relevant/irrelevant, good/bad,
  pass/fail (each read as 1 or 0), or any two numbers (the higher is the good one);
* **graded**: numbers with three or more distinct values (a 1-5 rating, a share of relevant
  sentences...).

:func:`agreement` then says how well the scores follow the labels, each figure with a 95%
bootstrap interval that resamples *questions* (every answer to one question moves together,
see :func:`relevancy.core.stats.group_bootstrap`; the resamples are computed as row weights,
:func:`relevancy.core.stats.group_weights`, many at once: the same draws and intervals, faster;
above ``BINNED_ROWS`` labelled rows each resample is computed on the scores in ``BINNED_BINS``
bins, above ``BOOT_ROWS`` in ``BOOT_BINS``, ``relevancy/analysis/_binned.py``, and the point
figures on every score):

* **AUROC**: the chance that a good answer scores above a bad one (ties count one half);
  binary labels, or graded ones cut at ``cut`` (default: the middle of the labels' range).
* **Spearman**: the rank correlation of scores and graded labels.
* **best threshold**: the score that best separates good from bad answers (highest
  sensitivity + specificity - 1, Youden's J), with the precision and recall of calling the
  answers at or above it good.

:func:`disagreements` lists the rows where score and label disagree most;
:func:`pairwise_accuracy` says how often the better of two answers scores higher.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis._binned import cell_weights, cells
from relevancy.analysis.labels import (
    LABEL_WORDS,
    default_cut,
    label_kind,
    label_value,
    parse_labels,
    positive_labels,
)
from relevancy.core.stats import group_bootstrap, group_weights

__all__ = [
    "LABEL_WORDS",
    "Interval",
    "Agreement",
    "label_value",
    "parse_labels",
    "label_kind",
    "positive_labels",
    "rankdata",
    "auroc",
    "spearman",
    "best_threshold",
    "agreement",
    "disagreements",
    "pairwise_wins",
    "pairwise_accuracy",
    "BOOT_ROWS",
    "BOOT_BINS",
    "BINNED_ROWS",
    "BINNED_BINS",
]

#: above this many labelled rows the intervals use 200 resamples instead of 2,000, each computed
#: on the scores in ``BOOT_BINS`` bins (see ``relevancy/analysis/_binned.py``)
BOOT_ROWS = 20_000
#: score bins (equal numbers of rows) of a resample above ``BOOT_ROWS`` labelled rows
BOOT_BINS = 4096
#: above this many labelled rows (up to ``BOOT_ROWS``) the 2,000 resamples are computed on the
#: scores in ``BINNED_BINS`` bins: 10,000 binary or rated labels' intervals 0.6 -> 0.14 s (labels
#: of many values, binned too, gain little), AUROC within 3e-5 and Spearman within 2e-4 of every
#: score apart, precision and recall exact, the threshold within its own noise
BINNED_ROWS = 5_000
#: score bins (equal numbers of rows) of a resample between ``BINNED_ROWS`` and ``BOOT_ROWS``
BINNED_BINS = 1024


def rankdata(x: Sequence[float]) -> np.ndarray:
    """Ranks from 1, ties given the mean of the ranks they span (as ``scipy.stats.rankdata``).

    >>> rankdata([0.5, 0.2, 0.5, 0.9]).tolist()
    [2.5, 1.0, 2.5, 4.0]
    """
    a = np.asarray(x, dtype=np.float64)
    n = a.size
    order = np.argsort(a, kind="mergesort")
    sorted_ = a[order]
    new = np.empty(n, dtype=bool)
    if n:
        new[0] = True
        new[1:] = sorted_[1:] != sorted_[:-1]
    run = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n) - 1
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = ((starts + ends) / 2 + 1)[run]
    return ranks


def auroc(scores: Sequence[float], positive: Sequence[float]) -> float:
    """The area under the ROC curve: P(a good answer's score > a bad one's), ties one half.

    .. math:: \\mathrm{AUROC} = \\frac{\\sum_{i \\in P} r_i - |P|(|P|+1)/2}{|P|\\,|N|}

    with :math:`r_i` the ranks of all scores (:func:`rankdata`), :math:`P` the good and
    :math:`N` the bad answers. NaN when either class is empty. Rows with a NaN score or label
    are left out.

    >>> auroc([0.9, 0.8, 0.3, 0.4], [1, 1, 0, 0])
    1.0
    >>> auroc([0.9, 0.3, 0.3, 0.4], [1, 1, 0, 0])
    0.625
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positive, dtype=np.float64)
    keep = np.isfinite(s) & np.isfinite(y)
    s, good = s[keep], y[keep] == 1
    n_pos, n_neg = int(good.sum()), int((~good).sum())
    if not n_pos or not n_neg:
        return math.nan
    ranks = rankdata(s)
    return float((ranks[good].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def spearman(scores: Sequence[float], labels: Sequence[float]) -> float:
    """Spearman's rank correlation: Pearson's correlation of the ranks (ties averaged).

    .. math:: \\rho = \\frac{\\sum_i (r_i - \\bar r)(q_i - \\bar q)}
              {\\sqrt{\\sum_i (r_i - \\bar r)^2 \\sum_i (q_i - \\bar q)^2}}

    NaN when either side is constant. Rows with a NaN score or label are left out.

    >>> spearman([0.1, 0.5, 0.4, 0.9], [1, 3, 2, 4])
    1.0
    """
    a = np.asarray(scores, dtype=np.float64)
    b = np.asarray(labels, dtype=np.float64)
    keep = np.isfinite(a) & np.isfinite(b)
    ra, rb = rankdata(a[keep]), rankdata(b[keep])
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float((ra**2).sum() * (rb**2).sum()))
    return float((ra * rb).sum() / denom) if denom else math.nan


def best_threshold(
    scores: Sequence[float], positive: Sequence[float]
) -> tuple[float, float, float]:
    """``(threshold, precision, recall)`` of the threshold that best separates the labels.

    Answers scoring at or above the threshold are called good. The threshold maximises
    Youden's J = recall - false-positive rate (the strictest one when several tie); it lies
    halfway between two neighbouring scores, so no score sits on it. Precision is the share of
    answers called good that are good, recall the share of good answers called good. NaNs when
    either class is empty.

    >>> best_threshold([0.9, 0.8, 0.3, 0.4], [1, 1, 0, 0])
    (0.6000000000000001, 1.0, 1.0)
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positive, dtype=np.float64)
    keep = np.isfinite(s) & np.isfinite(y)
    s, good = s[keep], y[keep] == 1
    n_pos, n_neg = int(good.sum()), int((~good).sum())
    if not n_pos or not n_neg:
        return (math.nan, math.nan, math.nan)
    order = np.argsort(-s, kind="mergesort")
    s, good = s[order], good[order]
    tp, fp = np.cumsum(good), np.cumsum(~good)
    last = np.append(s[1:] != s[:-1], True)  # the last row of each run of equal scores
    # Youden's J times n_pos * n_neg, in whole numbers: ties are exact, not rounding noise
    j = np.where(last, tp * n_neg - fp * n_pos, np.iinfo(np.int64).min)
    k = int(np.argmax(j))
    threshold = (s[k] + s[k + 1]) / 2 if k + 1 < s.size else s[k]
    return (float(threshold), float(tp[k] / (tp[k] + fp[k])), float(tp[k] / n_pos))


def _ranks_weighted(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each row's average rank among the resampled rows (row i counted ``w[:, i]`` times)."""
    order = np.argsort(values, kind="mergesort")
    v = values[order]
    start = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    block = np.cumsum(np.r_[True, v[1:] != v[:-1]]) - 1
    counts = np.add.reduceat(w[:, order], start, axis=1)  # resampled rows per distinct value
    below = np.cumsum(counts, axis=1) - counts
    ranks = np.empty_like(w)
    ranks[:, order] = (below + (counts + 1) / 2)[:, block]
    return ranks


def _weighted_figures(
    v: np.ndarray,
    y: np.ndarray,
    good: np.ndarray,
    w: np.ndarray,
    *,
    graded: bool,
    threshold: float,
) -> np.ndarray:
    """AUROC, Spearman, best threshold, precision and recall (at ``threshold``) of resamples
    given as row weights ``w`` (one line per resample): the figures :func:`auroc`,
    :func:`spearman`, :func:`best_threshold` give on the resampled rows, for many resamples at
    once. The rows come sorted by score: ``v`` ascending, ``y``, ``good`` and the columns of
    ``w`` in the same order."""
    nan = np.full(w.shape[0], np.nan)
    pos = good == 1
    start = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    values = v[start]  # distinct scores, ascending
    if start.size == v.size:  # every score distinct (the usual case): a row per score
        bp = w * pos  # good answers drawn, per distinct score
        bn = w - bp
    else:
        bp = np.add.reduceat(w * pos, start, axis=1)
        bn = np.add.reduceat(w, start, axis=1) - bp
    n_pos, n_neg = bp.sum(axis=1), bn.sum(axis=1)
    both = (n_pos > 0) & (n_neg > 0)
    m = values.size
    with np.errstate(invalid="ignore", divide="ignore"):
        # AUROC: each good answer against the bad ones below it, ties one half
        below = np.cumsum(bn, axis=1)
        below -= bn / 2
        area = np.where(both, np.einsum("ij,ij->i", bp, below) / (n_pos * n_neg), nan)
        # best threshold: Youden's J (times n_pos * n_neg, whole numbers) from the top down
        present = (bp + bn)[:, ::-1] > 0
        j = np.cumsum(bp[:, ::-1], axis=1) * n_neg[:, None]
        j -= np.cumsum(bn[:, ::-1], axis=1) * n_pos[:, None]
        j[~present] = -np.inf
        k = np.argmax(j, axis=1)
        top = values[::-1]
        # the next lower score present in the resample (halfway to it)
        later = present & (np.arange(m) > k[:, None])
        after = np.where(later.any(axis=1), np.argmax(later, axis=1), m)
        lower = top[np.minimum(after, m - 1)]
        cut = np.where(after < m, (top[k] + lower) / 2, top[k])
        cut = np.where(both, cut, nan)
        # precision and recall of calling the answers at or above the point's threshold good
        called = (v >= threshold) if math.isfinite(threshold) else np.zeros(v.size, bool)
        hits = w @ (called & pos).astype(np.float64)
        n_called = w @ called.astype(np.float64)
        precision = np.where(n_called > 0, hits / n_called, nan)
        recall = np.where(n_pos > 0, hits / n_pos, nan)
        if not math.isfinite(threshold):
            precision, recall = nan, nan
        rho = nan
        if graded:
            ra, rb = _ranks_weighted(v, w), _ranks_weighted(y, w)
            total = w.sum(axis=1, keepdims=True)
            da = ra - (w * ra).sum(axis=1, keepdims=True) / total
            db = rb - (w * rb).sum(axis=1, keepdims=True) / total
            denom = np.sqrt((w * da**2).sum(axis=1) * (w * db**2).sum(axis=1))
            rho = np.where(denom > 0, (w * da * db).sum(axis=1) / denom, nan)
    return np.stack([area, rho, cut, precision, recall], axis=1)


@dataclass(frozen=True)
class Interval:
    """A figure and its 95% bootstrap interval."""

    value: float
    low: float = math.nan
    high: float = math.nan

    def format(self, digits: int = 3) -> str:
        """``"0.712 (95% CI 0.650-0.770)"``, or ``"–"`` for NaN."""
        if not math.isfinite(self.value):
            return "–"
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} (95% CI {self.low:.{digits}f}-{self.high:.{digits}f})"


_NAN = Interval(math.nan)


@dataclass(frozen=True)
class Agreement:
    """How well scores follow human labels (see :func:`agreement`)."""

    kind: str  #: "binary", "graded" or "none"
    rows: int  #: rows with a label and a score
    labelled: int  #: rows with a label (some may have no score)
    questions: int  #: distinct questions among ``rows`` (the bootstrap's unit)
    positives: int  #: good answers among ``rows``
    negatives: int  #: bad answers among ``rows``
    cut: float | None  #: graded labels: good means label >= cut
    auroc: Interval = _NAN
    spearman: Interval = _NAN  #: graded labels only
    threshold: Interval = _NAN
    precision: Interval = _NAN  #: at ``threshold.value``
    recall: Interval = _NAN  #: at ``threshold.value``
    n_boot: int = 0
    bins: int = 0  #: the resamples saw the scores in this many bins (0: every score)
    notes: list[str] = field(default_factory=list)

    @property
    def headline(self) -> tuple[str, Interval]:
        """The one figure to lead with: Spearman for graded labels, else AUROC."""
        return ("Spearman", self.spearman) if self.kind == "graded" else ("AUROC", self.auroc)

    def lines(self) -> list[str]:
        """The figures in words, one line each (the CLI's summary)."""
        if self.kind == "none" or not self.rows:
            return ["no labelled row has a score"]
        good = "label ≥ " + f"{self.cut:g}" if self.cut is not None else "label 1"
        out = [
            f"{self.rows:,} labelled rows ({self.kind}; {self.positives:,} good [{good}], "
            f"{self.negatives:,} bad) on {self.questions:,} questions"
        ]
        if self.kind == "graded":
            out.append(f"Spearman {self.spearman.format()}")
        out.append(f"AUROC {self.auroc.format()}")
        if math.isfinite(self.threshold.value):
            out.append(
                f"best threshold {self.threshold.format()}: precision "
                f"{self.precision.format()}, recall {self.recall.format()}"
            )
        return out + self.notes

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def agreement(
    scores: Sequence[float],
    labels: Sequence[float],
    *,
    groups: Sequence[Hashable] | None = None,
    cut: float | None = None,
    n_boot: int | None = None,
    seed: int = 0,
    bins: int | None = None,
) -> Agreement:
    """Agreement of ``scores`` with human ``labels`` (numbers, see :func:`parse_labels`).

    Parameters
    ----------
    scores, labels : sequences of float, aligned
        Rows with a NaN score or a NaN label are left out.
    groups : sequence, optional
        Each row's question (or any unit whose rows should be resampled together); default:
        every row its own.
    cut : float, optional
        Graded labels: good means ``label >= cut`` (default: the middle of the labels' range).
    n_boot : int, optional
        Bootstrap resamples (default 2,000; 200 above ``BOOT_ROWS`` labelled rows); 0 for
        no intervals.
    seed : int
        The bootstrap's seed.
    bins : int, optional
        Compute each resample on the scores in this many bins of equal numbers of rows (ties
        within a bin; the point threshold an edge); 0 for every score apart. Default:
        ``BOOT_BINS`` above ``BOOT_ROWS`` labelled rows, ``BINNED_BINS`` above ``BINNED_ROWS``,
        else 0. The point figures always use every score.

    Returns
    -------
    Agreement
        AUROC, Spearman (graded labels), the best threshold with its precision and recall, each
        with a 95% percentile bootstrap interval. The threshold's interval re-chooses it in
        every resample; precision and recall are those of the chosen threshold in every
        resample.

    Examples
    --------
    >>> a = agreement([0.9, 0.7, 0.65, 0.2, 0.4, 0.3], ["yes", "yes", "no", "no", "yes", "no"],
    ...               n_boot=0)
    >>> a.kind, round(a.auroc.value, 3), a.threshold.value, a.precision.value, a.recall.value
    ('binary', 0.889, 0.675, 1.0, 0.6666666666666666)
    """
    s = np.asarray(scores, dtype=np.float64)
    y = labels if isinstance(labels, np.ndarray) else parse_labels(list(labels))
    y = np.asarray(y, dtype=np.float64)
    if s.shape != y.shape:
        raise ValueError(f"{s.size} scores but {y.size} labels")
    labelled = int(np.isfinite(y).sum())
    keep = np.isfinite(s) & np.isfinite(y)
    s, y = s[keep], y[keep]
    g = np.arange(s.size) if groups is None else np.asarray(list(groups), dtype=object)[keep]
    kind = label_kind(y)
    if kind == "graded" and cut is None:
        cut = default_cut(y)
    good = positive_labels(y, cut)
    notes = []
    if labelled > int(keep.sum()):
        notes.append(f"{labelled - int(keep.sum()):,} labelled rows have no score (NaN): left out")
    base = dict(
        kind=kind,
        rows=int(s.size),
        labelled=labelled,
        questions=len(set(g.tolist())),
        positives=int((good == 1).sum()),
        negatives=int((good == 0).sum()),
        cut=cut,
        notes=notes,
    )
    if kind == "none":
        return Agreement(**base)
    t, p, r = best_threshold(s, good)
    point = [auroc(s, good), spearman(s, y) if kind == "graded" else math.nan, t, p, r]
    n_boot = (2000 if s.size <= BOOT_ROWS else 200) if n_boot is None else int(n_boot)

    if bins is None:
        bins = BOOT_BINS if s.size > BOOT_ROWS else BINNED_BINS if s.size > BINNED_ROWS else 0
    bins = int(bins)
    if n_boot > 0 and s.size >= 2:
        if bins > 0:  # a resample is a count per cell: a few thousand, not every row
            found = cells(s, y, good, bins=bins, threshold=t)
            draws = cell_weights(found, g.tolist(), n_boot=n_boot, seed=seed)
            so, yo, go = found.score, found.label, found.good
        else:
            chunk = max(1, min(100, 1_000_000 // s.size))  # resamples at a time: ~8 MB a matrix
            order = np.argsort(s, kind="mergesort")  # sorted once, not in every chunk
            draws = group_weights(g.tolist(), n_boot=n_boot, seed=seed, chunk=chunk, order=order)
            so, yo, go = s[order], y[order], good[order]
        boots = np.concatenate(
            [_weighted_figures(so, yo, go, w, graded=kind == "graded", threshold=t) for w in draws]
        )
        low, high = np.full(5, np.nan), np.full(5, np.nan)
        for k, column in enumerate(boots.T):
            finite = column[np.isfinite(column)]
            if finite.size:
                low[k], high[k] = np.quantile(finite, [0.025, 0.975])
    else:
        low = high = np.full(5, np.nan)
    cis = [Interval(float(v), float(lo), float(hi)) for v, lo, hi in zip(point, low, high)]
    return Agreement(
        **base,
        auroc=cis[0],
        spearman=cis[1],
        threshold=cis[2],
        precision=cis[3],
        recall=cis[4],
        n_boot=n_boot,
        bins=bins if n_boot > 0 else 0,
    )


def disagreements(
    scores: Sequence[float],
    labels: Sequence[float],
    *,
    threshold: float,
    cut: float | None = None,
    limit: int | None = 20,
) -> pd.DataFrame:
    """The rows where score and label disagree, furthest from the threshold first.

    ``"high score, bad label"``: a bad answer scoring at or above ``threshold``; ``"low score,
    good label"``: a good answer scoring below it. Columns: ``position`` (into the inputs),
    ``score``, ``label``, ``kind``, ``gap`` (distance from the threshold); at most ``limit``
    rows of each kind.

    >>> found = disagreements([0.9, 0.2, 0.6], [0, 1, 1], threshold=0.5)
    >>> found[["position", "kind"]].values.tolist()
    [[0, 'high score, bad label'], [1, 'low score, good label']]
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    good = positive_labels(y, cut)
    keep = np.isfinite(s) & np.isfinite(good)
    high = keep & (good == 0) & (s >= threshold)
    low = keep & (good == 1) & (s < threshold)
    parts = []
    for mask, kind in ((high, "high score, bad label"), (low, "low score, good label")):
        idx = np.flatnonzero(mask)
        frame = pd.DataFrame(
            {
                "position": idx,
                "score": s[idx],
                "label": y[idx],
                "kind": kind,
                "gap": np.abs(s[idx] - threshold),
            }
        ).sort_values(["gap", "position"], ascending=[False, True], kind="mergesort")
        parts.append(frame if limit is None else frame.head(limit))
    return pd.concat(parts, ignore_index=True)


def pairwise_wins(better: Sequence[float], worse: Sequence[float]) -> np.ndarray:
    """Each pair's outcome: 1 when the better answer scores higher, 0 when it scores lower,
    one half for a tie or when either side has no score (NaN: a coin, so failures cannot
    raise the figure).

    >>> pairwise_wins([0.9, 0.2, 0.5, float("nan")], [0.1, 0.4, 0.5, 0.3]).tolist()
    [1.0, 0.0, 0.5, 0.5]
    """
    b = np.asarray(better, dtype=np.float64)
    w = np.asarray(worse, dtype=np.float64)
    wins = np.sign(b - w) * 0.5 + 0.5
    return np.where(np.isnan(wins), 0.5, wins)


def pairwise_accuracy(
    better: Sequence[float],
    worse: Sequence[float],
    *,
    groups: Sequence[Hashable] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> Interval:
    """The share of pairs whose better answer scores higher (:func:`pairwise_wins`), with a
    95% percentile bootstrap interval that resamples ``groups`` (a question's pairs move
    together; default: every pair its own), as :func:`relevancy.core.stats.group_bootstrap`.

    >>> pairwise_accuracy([0.9, 0.2, 0.5, 0.7], [0.1, 0.4, 0.5, 0.3], n_boot=0).value
    0.625
    """
    wins = pairwise_wins(better, worse)
    if not wins.size:
        return _NAN
    if n_boot <= 0:
        return Interval(float(wins.mean()))
    keys = range(wins.size) if groups is None else groups
    low, high = group_bootstrap(lambda idx: [wins[idx].mean()], keys, n_boot=n_boot, seed=seed)
    return Interval(float(wins.mean()), float(low[0]), float(high[0]))
