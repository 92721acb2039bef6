"""What a page shows of a whole run, computed in the store: its figures and its score
histogram, read from the results' index and narrow rows, never as a table of every row (at
1,000,000 rows a page would otherwise wait seconds for a frame it reduces to a few numbers)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["AggregateMixin", "RunFigures"]


@dataclass(frozen=True)
class RunFigures:
    """A run's headline figures: rows scored (``rows``), with a score (``scored``) and NaN,
    the mean and median score, the share below ``threshold``, the scored rows resting on fewer
    generated questions than asked (``incomplete``) and the mean Ragas value."""

    rows: int
    scored: int
    nan: int
    mean: float
    median: float
    threshold: float
    below: float
    incomplete: int
    ragas_mean: float


def _num(x: Any) -> float:
    return math.nan if x is None else float(x)


class AggregateMixin:
    """The run store's aggregates (mixed into :class:`relevancy.runs.store.RunStore`)."""

    def figures(self, run_id: int, *, threshold: float = 0.5) -> RunFigures:
        """The run's headline figures (:class:`RunFigures`), as a page would compute them from
        every row (the median of an even count is the mean of its two middle scores)."""
        self._require(run_id)  # type: ignore[attr-defined]
        # the run's totals (stats.py), and the rows below the threshold from the index by score
        (rows, scored, mean, incomplete, ragas) = self._run(  # type: ignore[attr-defined]
            "SELECT COALESCE(SUM(rows), 0), COALESCE(SUM(scored), 0), "
            "SUM(score_sum) / NULLIF(SUM(scored), 0), SUM(incomplete), "
            "SUM(ragas_sum) / NULLIF(SUM(ragas_rows), 0) FROM run_stats WHERE run_id = ?",
            (int(run_id),),
        )[0]
        below = self._run(  # type: ignore[attr-defined]
            "SELECT COUNT(*) FROM results WHERE run_id = ? AND score < ?",
            (int(run_id), float(threshold)),
        )[0][0]
        rows, scored, median = int(rows), int(scored), math.nan
        if scored:  # the middle one or two scores, read from the index by score
            middle = self._run(  # type: ignore[attr-defined]
                "SELECT score FROM results WHERE run_id = ? AND score IS NOT NULL "
                "ORDER BY score LIMIT ? OFFSET ?",
                (int(run_id), 2 - scored % 2, (scored - 1) // 2),
            )
            median = float(np.mean([m[0] for m in middle]))
        return RunFigures(
            rows=int(rows),
            scored=int(scored),
            nan=int(rows) - int(scored),
            mean=_num(mean),
            median=median,
            threshold=float(threshold),
            below=(int(below or 0) / scored) if scored else math.nan,
            incomplete=int(incomplete or 0),
            ragas_mean=_num(ragas),
        )
