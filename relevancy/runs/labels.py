"""Human labels of a run's rows (the ``labels`` table): from the input's label column or set in
the dashboard, the dashboard's winning; each with the time it was set."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from relevancy.analysis.agreement import parse_labels
from relevancy.errors import InputError
from relevancy.runs.rows import marks, now_iso
from relevancy.runs.schema import LABEL_SQL

__all__ = ["LabelsMixin"]


class LabelsMixin:
    """The run store's label methods (mixed into :class:`relevancy.runs.store.RunStore`)."""

    # labels ------------------------------------------------------------------------------
    def set_label(
        self, run_id: int, row: int, label: float | str | None, *, source: str = "dashboard"
    ) -> None:
        """Set a row's human label (a number, or a word like yes/no; None clears it), with the
        time it was set. A ``"dashboard"`` label wins over the input's."""
        self._require(run_id)
        if not self._run(
            "SELECT 1 FROM inputs WHERE run_id = ? AND idx = ?", (int(run_id), int(row))
        ):
            raise InputError(f"run #{run_id} has no row {int(row) + 1}")
        if source not in ("input", "dashboard"):
            raise InputError(f"a label's source is 'input' or 'dashboard', not {source!r}")
        value = None if label is None else float(parse_labels([label])[0])
        value = None if value is not None and math.isnan(value) else value
        db = self._connect()
        try:
            with db:
                db.execute(
                    "INSERT OR REPLACE INTO labels (run_id, idx, source, label, set_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (int(run_id), int(row), source, value, now_iso()),
                )
                db.execute(
                    "INSERT INTO meta (key, value) VALUES ('labels:' || ?, '1') ON CONFLICT(key) "
                    "DO UPDATE SET value = CAST(value AS INTEGER) + 1",
                    (int(run_id),),
                )
        finally:
            db.close()

    def labels(
        self, run_id: int, rows: Sequence[int] | None = None, *, details: bool = True
    ) -> pd.DataFrame:
        """Each labelled row's label (the dashboard's when set, else the input's): ``row``,
        ``label``, and with ``details`` ``source`` and ``set_at``, by row. Rows whose label was
        cleared are left out."""
        where, params = "", [int(run_id)]
        if rows is not None:
            where = f" AND idx IN ({marks(len(rows))})"
            params += [int(r) for r in rows]
        names = ["row", "label", *(["source", "set_at"] if details else [])]
        found = self._run(
            f"SELECT idx, label{', source, set_at' if details else ''} FROM labels "
            f"WHERE run_id = ?{where} ORDER BY idx, source = 'dashboard'",
            params,
        )
        frame = pd.DataFrame(found, columns=names)
        frame = frame.drop_duplicates("row", keep="last")  # the dashboard's, where it has one
        frame = frame[frame["label"].notna()].reset_index(drop=True)
        frame["row"] = frame["row"].astype(np.int64)
        frame["label"] = frame["label"].astype(float)
        return frame

    def has_labels(self, run_id: int) -> bool:
        """Whether any row of the run has a label."""
        return bool(
            self._run(
                f"SELECT 1 FROM results r WHERE r.run_id = ? AND {LABEL_SQL} IS NOT NULL LIMIT 1",
                (int(run_id),),
            )
        )
