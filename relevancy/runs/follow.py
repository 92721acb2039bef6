"""A followed run (``relevancy score --follow``): one run that grows as its source gets new
traces.

The store keeps, beside the run's rows:

* where the source was read up to (``follow_cursors``: ``read_to``, and ``swept_to`` for the
  wider look back that finds spans the source stored late);
* each row's key in the source (a span or trace id) and its time (``follow_keys``): a key is
  added once, however often it is read, and the rows, their keys and the new cursor go in one
  transaction, so a process killed at any moment loses and duplicates nothing;
* which scores reached each write-back target (``follow_sent``), so a restart sends exactly
  what is missing;
* the alert windows already checked (``follow_windows``), so an alert fires once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from relevancy.core.redact import redact
from relevancy.errors import InputError
from relevancy.runs.rows import input_rows, marks, now_iso

__all__ = ["FollowMixin", "FollowCursor"]

#: keys looked up in one SQL statement (SQLite's default limit on parameters is 999)
_KEYS_AT_ONCE = 500


class FollowCursor:
    """Where a followed run's source was read up to (UTC times, None before the first read)."""

    def __init__(
        self,
        source: str,
        read_to: datetime | None,
        swept_to: datetime | None,
        updated: datetime | None = None,
    ) -> None:
        self.source = source
        self.read_to = read_to
        self.swept_to = swept_to
        self.updated = updated  #: when a follower last read the source (at every read)

    def __repr__(self) -> str:
        return f"FollowCursor({self.source!r}, read_to={self.read_to}, swept_to={self.swept_to})"


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(timezone.utc).isoformat()


def _when(text: str | None) -> datetime | None:
    return None if not text else datetime.fromisoformat(text)


class FollowMixin:
    """The run store's methods for followed runs (mixed into
    :class:`relevancy.runs.store.RunStore`)."""

    def create_followed_run(self, name: str, settings: dict[str, Any], source: str) -> int:
        """A new run with no rows yet that follows ``source`` (its address, without secrets)."""
        now = now_iso()
        db = self._connect()  # type: ignore[attr-defined]
        try:
            with db:
                run_id = self._insert_run(db, name, settings, source, now)  # type: ignore[attr-defined]
                db.execute(
                    "INSERT INTO follow_cursors (run_id, source, updated) VALUES (?, ?, ?)",
                    (run_id, redact(source), now),
                )
        finally:
            db.close()
        return run_id

    def followed_run(self, source: str, name: str) -> int | None:
        """The latest run named ``name`` that follows ``source``, if there is one."""
        found = self._run(  # type: ignore[attr-defined]
            "SELECT c.run_id FROM follow_cursors c JOIN runs r ON r.id = c.run_id "
            "WHERE c.source = ? AND r.name = ? ORDER BY c.run_id DESC LIMIT 1",
            (redact(source), name),
        )
        return int(found[0][0]) if found else None

    def follow_cursor(self, run_id: int) -> FollowCursor:
        found = self._run(  # type: ignore[attr-defined]
            "SELECT source, read_to, swept_to, updated FROM follow_cursors WHERE run_id = ?",
            (int(run_id),),
        )
        if not found:
            raise InputError(f"run #{run_id} does not follow a source")
        source, read_to, swept_to, updated = found[0]
        return FollowCursor(source, _when(read_to), _when(swept_to), _when(updated))

    def add_followed(
        self,
        run_id: int,
        frame: pd.DataFrame,
        keys: Sequence[str],
        times: Sequence[float | None],
        *,
        read_to: datetime,
        swept_to: datetime | None = None,
    ) -> list[int]:
        """Add the rows of ``frame`` whose key the run does not have yet, and move the cursor,
        in one transaction; the new rows' numbers. ``times`` are the rows' source times (epoch
        seconds, None when unknown)."""
        if len(keys) != len(frame) or len(times) != len(frame):
            raise ValueError(f"{len(frame)} rows, {len(keys)} keys and {len(times)} times")
        db = self._connect()  # type: ignore[attr-defined]
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                have: set[str] = set()
                unique = list(dict.fromkeys(keys))
                for start in range(0, len(unique), _KEYS_AT_ONCE):
                    part = unique[start : start + _KEYS_AT_ONCE]
                    have.update(
                        r[0]
                        for r in db.execute(
                            f"SELECT key FROM follow_keys WHERE run_id = ? AND key IN "
                            f"({marks(len(part))})",
                            (int(run_id), *part),
                        )
                    )
                keep, seen = [], set(have)
                for i, key in enumerate(keys):
                    if key not in seen:
                        keep.append(i)
                        seen.add(key)
                n_rows, columns = db.execute(
                    "SELECT n_rows, columns FROM runs WHERE id = ?", (int(run_id),)
                ).fetchone()
                new = list(range(n_rows, n_rows + len(keep)))
                if keep:
                    rows = frame.iloc[keep].reset_index(drop=True)
                    db.executemany(
                        "INSERT INTO inputs (run_id, idx, user_input, response, variant, "
                        "item_id, extra) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        input_rows(int(run_id), n_rows, rows),
                    )
                    db.executemany(
                        "INSERT INTO follow_keys (run_id, key, idx, t) VALUES (?, ?, ?, ?)",
                        [(int(run_id), keys[i], idx, times[i]) for i, idx in zip(keep, new)],
                    )
                    known = json.loads(columns or "[]")
                    known += [str(c) for c in rows.columns if str(c) not in known]
                    db.execute(
                        "UPDATE runs SET n_rows = ?, columns = ?, updated = ? WHERE id = ?",
                        (n_rows + len(keep), json.dumps(known), now_iso(), int(run_id)),
                    )
                db.execute(
                    "UPDATE follow_cursors SET read_to = ?, swept_to = COALESCE(?, swept_to), "
                    "updated = ? WHERE run_id = ?",
                    (_iso(read_to), _iso(swept_to), now_iso(), int(run_id)),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        finally:
            db.close()
        return new

    def unsent(self, run_id: int, target: str, *, limit: int = 500, from_row: int = 0) -> list[int]:
        """Scored rows (with a score) whose score has not reached ``target`` yet, oldest first,
        from row ``from_row`` on."""
        rows = self._run(  # type: ignore[attr-defined]
            "SELECT r.idx FROM results r LEFT JOIN follow_sent s ON s.run_id = r.run_id "
            "AND s.idx = r.idx AND s.target = ? WHERE r.run_id = ? AND r.idx >= ? "
            "AND s.idx IS NULL AND r.score IS NOT NULL ORDER BY r.idx LIMIT ?",
            (target, int(run_id), int(from_row), int(limit)),
        )
        return [int(r[0]) for r in rows]

    def mark_sent(self, run_id: int, target: str, outcomes: dict[int, str]) -> None:
        """Record what became of each row's score at ``target`` (``"ok"``, or why not)."""
        self._run_many(
            "INSERT OR REPLACE INTO follow_sent (run_id, idx, target, outcome) VALUES (?, ?, ?, ?)",
            [(int(run_id), int(idx), target, why) for idx, why in outcomes.items()],
        )

    def sent_counts(self, run_id: int) -> dict[str, dict[str, int]]:
        """For each target, how many rows had each outcome."""
        out: dict[str, dict[str, int]] = {}
        for target, outcome, n in self._run(  # type: ignore[attr-defined]
            "SELECT target, outcome, COUNT(*) FROM follow_sent WHERE run_id = ? "
            "GROUP BY target, outcome",
            (int(run_id),),
        ):
            out.setdefault(target, {})[outcome] = int(n)
        return out

    def timed_scores(self, run_id: int, since: float | None = None) -> pd.DataFrame:
        """The followed rows' source times (``t``, epoch seconds) and scores (NaN when not
        scored or failed), from ``since`` on; columns ``row``, ``t``, ``score``, ``scored``."""
        sql = (
            "SELECT k.idx, k.t, r.score, r.idx IS NOT NULL FROM follow_keys k LEFT JOIN "
            "results r ON r.run_id = k.run_id AND r.idx = k.idx WHERE k.run_id = ? "
            "AND k.t IS NOT NULL"
        )
        params: list[Any] = [int(run_id)]
        if since is not None:
            sql += " AND k.t >= ?"
            params.append(float(since))
        rows = self._run(sql + " ORDER BY k.t", params)  # type: ignore[attr-defined]
        frame = pd.DataFrame(rows, columns=["row", "t", "score", "scored"])
        frame["score"] = pd.to_numeric(frame["score"]).astype(float)
        frame["scored"] = frame["scored"].astype(bool)
        return frame

    def checked_windows(self, run_id: int, seconds: float) -> set[str]:
        """The starts (ISO) of the alert windows of this length already checked."""
        rows = self._run(  # type: ignore[attr-defined]
            "SELECT start FROM follow_windows WHERE run_id = ? AND seconds = ?",
            (int(run_id), float(seconds)),
        )
        return {r[0] for r in rows}

    def mark_window(
        self, run_id: int, start: datetime, seconds: float, status: str, message: str
    ) -> None:
        self._run(  # type: ignore[attr-defined]
            "INSERT OR REPLACE INTO follow_windows VALUES (?, ?, ?, ?, ?)",
            (int(run_id), _iso(start), float(seconds), status, message),
        )

    def windows(self, run_id: int) -> pd.DataFrame:
        """The alert windows checked for a followed run: start, seconds, status, message."""
        rows = self._run(  # type: ignore[attr-defined]
            "SELECT start, seconds, status, message FROM follow_windows WHERE run_id = ? "
            "ORDER BY start",
            (int(run_id),),
        )
        return pd.DataFrame(rows, columns=["start", "seconds", "status", "message"])

    def _run_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        db = self._connect()  # type: ignore[attr-defined]
        try:
            with db:
                db.executemany(sql, rows)
        finally:
            db.close()
