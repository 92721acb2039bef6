"""A saved run that gains rows after it was made: an experiment extended with another prompt
template or model (``relevancy experiment --extend-run``). The rows it had are left as they
are; the new ones are numbered after them and scored like any row (:meth:`pending_rows`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from relevancy.errors import InputError
from relevancy.runs.rows import clean_settings, input_rows, now_iso

__all__ = ["GrowMixin"]


class GrowMixin:
    """The run store's methods for adding rows to a run (mixed into
    :class:`relevancy.runs.store.RunStore`)."""

    def append_inputs(
        self, run_id: int, frame: pd.DataFrame, *, settings: Mapping[str, Any] | None = None
    ) -> list[int]:
        """Add ``frame``'s rows after the run's last one (and merge ``settings`` into the run's,
        key by key), in one transaction; the new rows' numbers. Nothing of the run changes
        when it fails."""
        if frame.empty:
            return []
        db = self._connect()  # type: ignore[attr-defined]
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                found = db.execute(
                    "SELECT n_rows, columns, settings FROM runs WHERE id = ?", (int(run_id),)
                ).fetchone()
                if found is None:
                    raise InputError(f"no run #{run_id} in {self.path}")  # type: ignore[attr-defined]
                n_rows, columns, stored = found
                rows = frame.reset_index(drop=True)
                db.executemany(
                    "INSERT INTO inputs (run_id, idx, user_input, response, variant, "
                    "item_id, extra) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    input_rows(int(run_id), n_rows, rows),
                )
                known = json.loads(columns or "[]")
                known += [str(c) for c in rows.columns if str(c) not in known]
                merged = {**json.loads(stored or "{}"), **clean_settings(settings or {})}
                db.execute(
                    "UPDATE runs SET n_rows = ?, columns = ?, settings = ?, updated = ? "
                    "WHERE id = ?",
                    (n_rows + len(rows), json.dumps(known), json.dumps(merged), now_iso(), run_id),
                )
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # an interrupt can come before BEGIN or after COMMIT
                    db.execute("ROLLBACK")
                raise
        finally:
            db.close()
        return list(range(n_rows, n_rows + len(rows)))
