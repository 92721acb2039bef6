"""What a page shows of a whole run, computed in the store: its headline figures, its rows per
reason (or mode, model...), its cost, an input column's values. Read from the run's totals
(:mod:`relevancy.runs.stats`) and the index by score, never as a table of every row (at
1,000,000 rows a page would otherwise wait seconds for a frame it reduces to a few numbers)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis.cost import TOKEN_COLUMNS
from relevancy.errors import InputError
from relevancy.runs.query import RowQuery, extra_value
from relevancy.runs.rows import TYPED_INPUTS, scalar_columns
from relevancy.runs.stats import STATS_KEYS

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

    def distinct(self, run_id: int, column: str, *, limit: int | None = None) -> list[str]:
        """The distinct values of one input column (``variant``, ``id`` or a user column),
        sorted; with ``limit``, at most ``limit`` of them (is there more than one value? answered
        without reading every row). ``label``: the human labels' values."""
        if column == "label":  # set in the dashboard or read from the input: the labels table
            rows = self._run(  # type: ignore[attr-defined]
                "SELECT DISTINCT label FROM labels WHERE run_id = ? AND label IS NOT NULL",
                (int(run_id),),
            )
            return sorted(str(v[0]) for v in rows)[:limit]
        if column in TYPED_INPUTS:
            value, params = TYPED_INPUTS[column], []
        else:
            value, params = extra_value(column, "inputs")
        sql = f"SELECT DISTINCT {value} FROM inputs WHERE run_id = ? AND {value} IS NOT NULL"
        if limit is not None:  # a value per row shows in the first rows: answered there
            first = self._run(  # type: ignore[attr-defined]
                f"{sql} AND idx < ? LIMIT {int(limit)}", [*params, int(run_id), *params, 10_000]
            )
            if len(first) >= limit:
                return sorted(str(v[0]) for v in first)
        info = self.get_run(run_id)  # type: ignore[attr-defined]
        if column in info.columns and info.n_scored == info.n_rows:
            # every row scored: the column from the run's Parquet segments, hashed there
            frame = self._segment_frame(run_id, [column])  # type: ignore[attr-defined]
            if frame is not None:
                found = pd.unique(frame[column].dropna())
                return sorted(str(v) for v in found)[:limit]
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        values = self._run(sql, [*params, int(run_id), *params])  # type: ignore[attr-defined]
        return sorted(str(v[0]) for v in values)

    def counts(
        self, run_id: int, column: str = "reason", *, threshold: float | None = None
    ) -> dict[str, int]:
        """How many scored rows have each value of a result column (``reason``, ``mode``...);
        main reasons at ``threshold`` (None: as stored, at the run's own threshold)."""
        if column == "reason" and threshold is not None:
            return self._reasons_at(run_id, float(threshold))
        if column not in scalar_columns():
            raise InputError(
                f"cannot count by {column!r}: use one of {', '.join(scalar_columns())}"
            )
        if column in STATS_KEYS:  # from the run's totals
            sql = (
                f"SELECT {column}, SUM(rows) FROM run_stats WHERE run_id = ? GROUP BY {column} "
                "HAVING SUM(rows) > 0 ORDER BY SUM(rows) DESC"
            )
        else:
            sql = (
                f"SELECT {column}, COUNT(*) FROM results WHERE run_id = ? GROUP BY {column} "
                "ORDER BY COUNT(*) DESC"
            )
        rows = self._run(sql, (int(run_id),))
        return {str(value if value is not None else ""): int(n) for value, n in rows}

    def _reasons_at(self, run_id: int, threshold: float) -> dict[str, int]:
        """The stored counts, with the rows whose reason differs at ``threshold``
        (:meth:`reasons_moved`) counted again."""
        counts = self.counts(run_id, "reason")
        for stored, now in self.reasons_moved(run_id, threshold).values():
            counts[stored] -= 1
            counts[now] = counts.get(now, 0) + 1
        kept = {k: n for k, n in counts.items() if n > 0}
        return dict(sorted(kept.items(), key=lambda kv: -kv[1]))

    def reasons_moved(self, run_id: int, threshold: float) -> dict[int, tuple[str, str]]:
        """The rows whose main reason at ``threshold`` is not the one stored (at the run's own
        threshold): row -> (stored, at ``threshold``). Only rows scored between the two
        thresholds can move; they are read from the score index, not every row."""
        decided_at = self.get_run(run_id).decided_at  # type: ignore[attr-defined]
        query = RowQuery(threshold=float(threshold), decided_at=decided_at)
        lo, hi = sorted((float(threshold), query.decided_at))
        if lo == hi:
            return {}
        found = self._run(  # type: ignore[attr-defined]
            f"SELECT r.idx, r.reason, {query.reason} FROM results r JOIN inputs i ON "
            "i.run_id = r.run_id AND i.idx = r.idx WHERE r.run_id = ? AND r.score >= ? "
            "AND r.score < ?",
            (int(run_id), lo, hi),
        )
        return {
            int(row): (str(stored or ""), str(now or ""))
            for row, stored, now in found
            if str(stored or "") != str(now or "")
        }

    def usage(self, run_id: int) -> pd.DataFrame:
        """The run's tokens and time summed per (``llm``, ``embeddings``, ``cached``): columns
        ``rows``, ``seconds`` and :data:`relevancy.analysis.cost.TOKEN_COLUMNS`; for
        :func:`relevancy.analysis.cost.usage_totals`."""
        self._require(run_id)
        known = [  # a sum over rows none of which has the figure is NULL, as SQL's SUM says
            f"CASE WHEN SUM({n}_rows) > 0 THEN SUM({t}) END"
            for n, t in (
                ("seconds", "seconds"),
                ("prompt", "prompt_tokens"),
                ("completion", "completion_tokens"),
                ("embedding", "embedding_tokens"),
            )
        ]
        rows = self._run(
            f"SELECT llm, embeddings, cached, SUM(rows), {', '.join(known)} FROM run_stats "
            "WHERE run_id = ? GROUP BY llm, embeddings, cached HAVING SUM(rows) > 0",
            (run_id,),
        )
        columns = ["llm", "embeddings", "cached", "rows", "seconds", *TOKEN_COLUMNS]
        frame = pd.DataFrame(rows, columns=columns)
        frame["cached"] = frame["cached"].astype(bool)
        return frame
