"""Run-to-run stability: the same rows scored again under other generator seeds.

A score made from N sampled questions moves when the samples change. :func:`rescore` scores
rows under ``k`` generator seeds through the normal metric and cache (the generator's seed is
part of every cache key, so each seed's generations are kept and a second look is free), and
:func:`row_stability` says, for each row:

* the spread of its score over the ``k`` repeats: the **population** standard deviation
  (``ddof=0``, ``numpy.nanstd``, as ``bench/stability.py`` has always reported it), the
  minimum and the maximum; the same for the Ragas value of the same generations;
* whether its **noncommittal verdict flips** (zeroed in some repeats, not in others);
* in how many repeats its N generated questions hold a **near-duplicate pair** (cosine of their
  embeddings at least :data:`NEAR_DUPLICATE`, 0.95): a repeated question leaves fewer
  independent samples, so the mean moves more.

A run is summarised by the median and the 95th percentile of the per-row standard deviations
(:func:`summarize_stability`).

Seeds. The embedded generator (and the OpenAI-compatible one) draws sample ``i`` of a row with
seed ``seed + i``, so consecutive seeds share N-1 of their N questions: seed 1's first question
is seed 0's second. :func:`repeat_seeds` therefore spaces the repeats by N (``seed``,
``seed + N``, ``seed + 2N``, ...), so no two repeats share a sample. (The first figures in
``bench/stability.py`` used seeds 0-4 with N = 3, overlapping; the bench can still do that with
``--seeds``.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from relevancy.core.result import RelevancyResult

__all__ = [
    "NEAR_DUPLICATE",
    "RowStability",
    "near_duplicate_pairs",
    "row_stability",
    "stability_frame",
    "summarize_stability",
    "describe_stability",
    "stability_from_repeats",
]

#: two generated questions of one row at this cosine or above are near duplicates
NEAR_DUPLICATE = 0.95


def near_duplicate_pairs(result: RelevancyResult, threshold: float = NEAR_DUPLICATE) -> int:
    """How many pairs of the row's usable generated questions have cosine >= ``threshold``."""
    found = result.question_embeddings
    vectors = np.asarray(found if found is not None else [], dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) < 2:
        return 0
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.clip(norms, 1e-12, None)
    sims = unit @ unit.T
    upper = sims[np.triu_indices(len(unit), k=1)]
    return int((upper >= threshold).sum())


@dataclass
class RowStability:
    """One row's scores over its repeats (one entry per seed, in seed order)."""

    seeds: list[int]
    values: list[float]
    ragas_values: list[float] = field(default_factory=list)
    noncommittal: list[bool] = field(default_factory=list)
    near_duplicates: list[int] = field(default_factory=list)  #: near-duplicate pairs per seed

    @staticmethod
    def _finite(values: Sequence[float]) -> np.ndarray:
        x = np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
        return x[np.isfinite(x)]

    @property
    def repeats(self) -> int:
        return len(self.values)

    @property
    def sd(self) -> float:
        """Population standard deviation of the finite scores (NaN when none)."""
        x = self._finite(self.values)
        return float(x.std()) if x.size else math.nan

    @property
    def min(self) -> float:
        x = self._finite(self.values)
        return float(x.min()) if x.size else math.nan

    @property
    def max(self) -> float:
        x = self._finite(self.values)
        return float(x.max()) if x.size else math.nan

    @property
    def ragas_sd(self) -> float:
        x = self._finite(self.ragas_values)
        return float(x.std()) if x.size else math.nan

    @property
    def flips(self) -> bool:
        """True when the noncommittal verdict differs between repeats."""
        return len(set(self.noncommittal)) > 1

    @property
    def duplicate_repeats(self) -> int:
        """In how many repeats the generated questions hold a near-duplicate pair."""
        return sum(1 for n in self.near_duplicates if n > 0)


def row_stability(seeds: Sequence[int], results: Sequence[RelevancyResult]) -> RowStability:
    """One row's :class:`RowStability` from its result under each seed."""
    return RowStability(
        seeds=[int(s) for s in seeds],
        values=[r.value for r in results],
        ragas_values=[r.ragas_value for r in results],
        noncommittal=[bool(r.noncommittal) for r in results if r.ok],
        near_duplicates=[near_duplicate_pairs(r) for r in results],
    )


def stability_frame(rows: Sequence[RowStability]) -> pd.DataFrame:
    """The per-row columns the CLI writes and the dashboard shows: ``score_sd``,
    ``score_min``, ``score_max``, ``ragas_sd``, ``noncommittal_flips``, ``near_duplicates``
    (repeats with a near-duplicate pair) and ``repeats``."""
    return pd.DataFrame(
        {
            "score_sd": [r.sd for r in rows],
            "score_min": [r.min for r in rows],
            "score_max": [r.max for r in rows],
            "ragas_sd": [r.ragas_sd for r in rows],
            "noncommittal_flips": [r.flips for r in rows],
            "near_duplicates": [r.duplicate_repeats for r in rows],
            "repeats": [r.repeats for r in rows],
        }
    )


def summarize_stability(sds: Sequence[float]) -> dict[str, float | int]:
    """``rows`` (with a finite sd), ``median_row_sd``, ``p95_row_sd``, ``max_row_sd``: the
    figures ``bench/stability.py`` reports (``numpy.quantile``'s default interpolation)."""
    x = np.asarray([np.nan if v is None else v for v in sds], dtype=np.float64)
    x = x[np.isfinite(x)]
    if not x.size:
        return {
            "rows": 0,
            "median_row_sd": math.nan,
            "p95_row_sd": math.nan,
            "max_row_sd": math.nan,
        }
    return {
        "rows": int(x.size),
        "median_row_sd": float(np.median(x)),
        "p95_row_sd": float(np.quantile(x, 0.95)),
        "max_row_sd": float(x.max()),
    }


def describe_stability(frame: pd.DataFrame, seeds: Sequence[int] | None = None) -> str:
    """One line: rows, repeats, median and p95 per-row sd, flips, near duplicates."""
    s = summarize_stability(frame["score_sd"].tolist())
    if not s["rows"]:
        return "no row has a score in any repeat"
    k = int(frame["repeats"].max()) if "repeats" in frame and len(frame) else 0
    on = f" (seeds {', '.join(str(x) for x in seeds)})" if seeds else ""
    flips = int(frame["noncommittal_flips"].astype(bool).sum())
    dups = int((frame["near_duplicates"] > 0).sum())
    return (
        f"{s['rows']:,} rows x {k} repeats{on}: per-row sd median {s['median_row_sd']:.3f}, "
        f"p95 {s['p95_row_sd']:.3f}, max {s['max_row_sd']:.3f}; noncommittal flips in "
        f"{flips:,} rows; near-duplicate questions in {dups:,} rows"
    )


def stability_from_repeats(repeats: pd.DataFrame) -> pd.DataFrame:
    """Per-row stability from a run store's repeats (:meth:`relevancy.runs.RunStore.repeats`):
    ``row``, ``seeds``, ``values`` (the scores, in seed order) and the :func:`stability_frame`
    columns, one line per row."""
    if repeats.empty:
        columns = ["row", "seeds", "values", *stability_frame([]).columns]
        return pd.DataFrame(columns=columns)
    rows, stats = [], []
    for row, group in repeats.groupby("row", sort=True):
        rows.append(int(row))
        stats.append(
            RowStability(
                seeds=[int(s) for s in group["seed"]],
                values=group["score"].astype(float).tolist(),
                ragas_values=group["ragas_value"].astype(float).tolist(),
                noncommittal=[
                    bool(n) for n, v in zip(group["noncommittal"], group["score"]) if v == v
                ],
                near_duplicates=[int(n) for n in group["near_duplicates"]],
            )
        )
    frame = stability_frame(stats)
    frame.insert(0, "values", [s.values for s in stats])
    frame.insert(0, "seeds", [s.seeds for s in stats])
    frame.insert(0, "row", rows)
    return frame
