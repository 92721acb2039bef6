"""A saved run that gains rows after it was made: an experiment extended with another prompt
template or model (``relevancy experiment --extend-run``). The rows it had are left as they
are; the new ones are numbered after them and scored like any row (:meth:`pending_rows`). A row
whose answer failed can be put back in place with its new answer (:meth:`replace_inputs`), its
old result taken out so it is scored again."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from relevancy._sqlite import write_transaction
from relevancy.errors import InputError
from relevancy.runs.rows import clean_settings, input_rows, marks, now_iso

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
            with write_transaction(db):
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
        finally:
            db.close()
        return list(range(n_rows, n_rows + len(rows)))

    def replace_inputs(self, run_id: int, frame: pd.DataFrame) -> list[int]:
        """Put ``frame``'s rows in place of the run's rows its index names (an answer asked
        again), in one transaction, and take those rows' results out, so they are scored again
        (:meth:`pending_rows`); the other rows are left as they are. The rows' numbers."""
        if frame.empty:
            return []
        rows = [int(i) for i in frame.index]
        values = [
            (*row[2:], int(run_id), idx)
            for idx, row in zip(rows, input_rows(int(run_id), 0, frame.reset_index(drop=True)))
        ]
        db = self._connect()  # type: ignore[attr-defined]
        try:
            with write_transaction(db):
                found = db.execute(
                    "SELECT columns FROM runs WHERE id = ?", (int(run_id),)
                ).fetchone()
                if found is None:
                    raise InputError(f"no run #{run_id} in {self.path}")  # type: ignore[attr-defined]
                have: set[int] = set()
                for at in range(0, len(rows), 900):
                    part = rows[at : at + 900]
                    have |= {
                        int(r[0])
                        for r in db.execute(
                            "SELECT idx FROM inputs WHERE run_id = ? AND idx IN "
                            f"({marks(len(part))})",
                            (int(run_id), *part),
                        )
                    }
                if have != set(rows):
                    missing = sorted(set(rows) - have)[0]
                    raise InputError(f"run #{run_id} has no row {missing + 1}")
                db.executemany(
                    "UPDATE inputs SET user_input = ?, response = ?, variant = ?, item_id = ?, "
                    "extra = ? WHERE run_id = ? AND idx = ?",
                    values,
                )
                for table in ("results", "questions", "result_vectors", "repeats"):
                    db.executemany(
                        f"DELETE FROM {table} WHERE run_id = ? AND idx = ?",
                        [(int(run_id), idx) for idx in rows],
                    )
                known = json.loads(found[0] or "[]")
                known += [str(c) for c in frame.columns if str(c) not in known]
                db.execute(
                    "UPDATE runs SET columns = ?, updated = ? WHERE id = ?",
                    (json.dumps(known), now_iso(), int(run_id)),
                )
        finally:
            db.close()
        return rows
