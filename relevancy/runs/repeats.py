"""Rows scored again under other generator seeds (the ``repeats`` table; see
:mod:`relevancy.analysis.stability`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from relevancy.analysis.stability import near_duplicate_pairs
from relevancy.core.result import RelevancyResult
from relevancy.runs.rows import marks, now_iso, num_or_none

__all__ = ["RepeatsMixin"]


class RepeatsMixin:
    """The run store's repeat methods (mixed into :class:`relevancy.runs.store.RunStore`)."""

    # repeats (stability) -----------------------------------------------------------------
    def append_repeats(self, run_id: int, items: Iterable[tuple[int, int, RelevancyResult]]) -> int:
        """Store rows scored again: ``items`` are ``(row_index, seed, result)`` (a row scored
        again under a seed it already has replaces that repeat); returns the count."""
        now = now_iso()
        rows = [
            (
                run_id,
                int(idx),
                int(seed),
                num_or_none(r.value),
                num_or_none(r.ragas_value),
                int(bool(r.noncommittal)),
                near_duplicate_pairs(r),
                json.dumps([q.question for q in r.questions], ensure_ascii=False),
                now,
            )
            for idx, seed, r in items
        ]
        if not rows:
            return 0
        self._require(run_id)
        db = self._connect()
        try:
            with db:
                db.executemany(f"INSERT OR REPLACE INTO repeats VALUES ({marks(9)})", rows)
                db.execute("UPDATE runs SET updated = ? WHERE id = ?", (now, run_id))
        finally:
            db.close()
        return len(rows)

    def repeats(self, run_id: int, rows: Sequence[int] | None = None) -> pd.DataFrame:
        """The run's repeats (all, or of ``rows``): ``row``, ``seed``, ``score``,
        ``ragas_value``, ``noncommittal``, ``near_duplicates``, ``questions`` (a list)."""
        sql = (
            "SELECT idx, seed, score, ragas_value, noncommittal, near_duplicates, questions "
            "FROM repeats WHERE run_id = ?"
        )
        params: list[Any] = [int(run_id)]
        if rows is not None:
            wanted = [int(r) for r in rows]
            if not wanted:
                sql += " AND 0"
            else:
                sql += f" AND idx IN ({marks(len(wanted))})"
                params += wanted
        found = self._run(sql + " ORDER BY idx, seed", params)
        frame = pd.DataFrame(
            found,
            columns=[
                "row",
                "seed",
                "score",
                "ragas_value",
                "noncommittal",
                "near_duplicates",
                "questions",
            ],
        )
        for name in ("score", "ragas_value"):
            frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
        frame["noncommittal"] = frame["noncommittal"].astype(bool)
        frame["questions"] = [json.loads(q) for q in frame["questions"]]
        return frame
