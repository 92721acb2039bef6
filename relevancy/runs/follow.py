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
* the alert windows already checked (``follow_windows``), so a window is judged once;
* the rows whose scoring failed for a passing reason (the judge answered 5xx, timed out, sent
  garbage): ``follow_waiting``, with how often they were tried and when to try next;
* each alert that has a webhook, until the webhook took it (``follow_alerts``: ``pending``,
  ``posting`` while the POST is out, ``delivered``; ``uncertain`` when a process stopped while
  posting it, never posted again);
* which process follows the run (``follow_lease``: host, pid, since, a heartbeat), so a second
  follower is turned away and a dead one does not block the next.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from relevancy._sqlite import write_transaction
from relevancy.core.redact import redact
from relevancy.errors import InputError
from relevancy.runs.rows import input_rows, marks, now_iso

__all__ = ["FollowMixin", "FollowCursor", "FollowLease", "RunFollowed"]

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


class RunFollowed(InputError):
    """Another process follows the run already."""


class FollowLease:
    """This process's hold on a followed run (:meth:`FollowMixin.take_follow_lease`)."""

    def __init__(self, run_id: int, token: str, ttl: float) -> None:
        self.run_id, self.token, self.ttl = int(run_id), token, float(ttl)


def _process_started(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, from /proc), "" when unknown or
    gone: with the pid, it names one process even after the pid is reused."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""


def _alive(pid: int, started: str) -> bool | None:
    """Whether process ``pid`` (started at ``started``) still runs on this host; None when
    this host cannot tell."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it runs, as another user
    except OSError:
        return None
    now = _process_started(pid)
    if started and now:
        return now == started
    return True


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
            with write_transaction(db):
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

    def unsent_count(self, run_id: int, target: str) -> int:
        """How many scored rows (with a score) have not reached ``target``."""
        found = self._run(  # type: ignore[attr-defined]
            "SELECT COUNT(*) FROM results r LEFT JOIN follow_sent s ON s.run_id = r.run_id "
            "AND s.idx = r.idx AND s.target = ? WHERE r.run_id = ? AND s.idx IS NULL "
            "AND r.score IS NOT NULL",
            (target, int(run_id)),
        )
        return int(found[0][0])

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
        self,
        run_id: int,
        start: datetime,
        seconds: float,
        status: str,
        message: str,
        *,
        alert: dict[str, Any] | None = None,
    ) -> None:
        """Window ``start`` was judged; with ``alert`` (its webhook body), the alert is kept
        until delivered, in the same transaction (a process killed between the two loses
        neither)."""
        db = self._connect()  # type: ignore[attr-defined]
        try:
            with db:
                db.execute(
                    "INSERT OR REPLACE INTO follow_windows VALUES (?, ?, ?, ?, ?)",
                    (int(run_id), _iso(start), float(seconds), status, message),
                )
                if alert is not None:
                    db.execute(
                        "INSERT OR IGNORE INTO follow_alerts (run_id, seconds, start, body, "
                        "state, attempts, updated) VALUES (?, ?, ?, ?, 'pending', 0, ?)",
                        (int(run_id), float(seconds), _iso(start), json.dumps(alert), now_iso()),
                    )
        finally:
            db.close()

    def windows(self, run_id: int) -> pd.DataFrame:
        """The alert windows checked for a followed run: start, seconds, status, message."""
        rows = self._run(  # type: ignore[attr-defined]
            "SELECT start, seconds, status, message FROM follow_windows WHERE run_id = ? "
            "ORDER BY start",
            (int(run_id),),
        )
        return pd.DataFrame(rows, columns=["start", "seconds", "status", "message"])

    # rows waiting for the judge ---------------------------------------------------------------
    def wait_for_judge(
        self, run_id: int, failed: dict[int, str], *, now: float, first: float, most: float
    ) -> None:
        """Rows whose scoring failed for a passing reason (``failed``: row -> the error): tried
        again after a pause that doubles with each try (``first`` seconds, at most ``most``)."""
        if not failed:
            return
        db = self._connect()  # type: ignore[attr-defined]
        try:
            with db:
                for idx, error in failed.items():
                    row = db.execute(
                        "SELECT attempts, since FROM follow_waiting WHERE run_id = ? AND idx = ?",
                        (int(run_id), int(idx)),
                    ).fetchone()
                    attempts, since = (int(row[0]) + 1, float(row[1])) if row else (1, now)
                    pause = min(most, first * 2 ** min(attempts - 1, 30))
                    db.execute(
                        "INSERT OR REPLACE INTO follow_waiting VALUES (?, ?, ?, ?, ?, ?)",
                        (int(run_id), int(idx), attempts, since, now + pause, str(error)),
                    )
        finally:
            db.close()

    def unscored_failures(self, run_id: int) -> dict[int, str]:
        """Rows saved without a score (with their error) that do not wait for the judge."""
        rows = self._run(  # type: ignore[attr-defined]
            "SELECT r.idx, r.error FROM results r LEFT JOIN follow_waiting w ON w.run_id = "
            "r.run_id AND w.idx = r.idx WHERE r.run_id = ? AND r.score IS NULL AND w.idx IS NULL",
            (int(run_id),),
        )
        return {int(idx): str(error or "") for idx, error in rows}

    def stop_waiting(self, run_id: int, rows: Sequence[int]) -> None:
        """Rows scored at last (or failed for a reason of their own): no longer waiting."""
        self._run_many(
            "DELETE FROM follow_waiting WHERE run_id = ? AND idx = ?",
            [(int(run_id), int(r)) for r in rows],
        )

    def waiting_rows(self, run_id: int, *, due_by: float | None = None) -> list[int]:
        """The rows waiting for the judge (those due by ``due_by``, epoch seconds), in order."""
        sql = "SELECT idx FROM follow_waiting WHERE run_id = ?"
        params: list[Any] = [int(run_id)]
        if due_by is not None:
            sql += " AND next_try <= ?"
            params.append(float(due_by))
        return [int(r[0]) for r in self._run(sql + " ORDER BY idx", params)]  # type: ignore[attr-defined]

    def try_waiting_now(self, run_id: int, now: float) -> None:
        """The judge answers again: every waiting row is due at once."""
        self._run(  # type: ignore[attr-defined]
            "UPDATE follow_waiting SET next_try = ? WHERE run_id = ? AND next_try > ?",
            (float(now), int(run_id), float(now)),
        )

    def waiting_summary(self, run_id: int) -> dict[str, Any]:
        """How many rows wait, since when (epoch s), their earliest source time, the next try
        and the latest error: ``{"rows": 0}`` when none."""
        found = self._run(  # type: ignore[attr-defined]
            "SELECT COUNT(*), MIN(w.since), MIN(w.next_try), MIN(k.t) FROM follow_waiting w "
            "LEFT JOIN follow_keys k ON k.run_id = w.run_id AND k.idx = w.idx "
            "WHERE w.run_id = ?",
            (int(run_id),),
        )[0]
        if not found[0]:
            return {"rows": 0}
        error = self._run(  # type: ignore[attr-defined]
            "SELECT error FROM follow_waiting WHERE run_id = ? ORDER BY since DESC, idx DESC "
            "LIMIT 1",
            (int(run_id),),
        )[0][0]
        return {
            "rows": int(found[0]),
            "since": float(found[1]),
            "next_try": float(found[2]),
            "first_t": None if found[3] is None else float(found[3]),
            "error": str(error),
        }

    # alerts until delivered ---------------------------------------------------------------
    def alerts_to_post(self, run_id: int) -> list[tuple[str, float, dict]]:
        """The alerts not delivered yet, oldest window first: (start, seconds, body)."""
        rows = self._run(  # type: ignore[attr-defined]
            "SELECT start, seconds, body FROM follow_alerts WHERE run_id = ? AND state = "
            "'pending' ORDER BY start",
            (int(run_id),),
        )
        return [(str(s), float(sec), json.loads(b)) for s, sec, b in rows]

    def alert_state(
        self, run_id: int, start: str, seconds: float, state: str, error: str | None = None
    ) -> None:
        """``posting`` just before the POST, then ``delivered``, or ``pending`` with why not."""
        tried = 1 if state == "pending" else 0
        self._run(  # type: ignore[attr-defined]
            "UPDATE follow_alerts SET state = ?, error = COALESCE(?, error), attempts = "
            "attempts + ?, updated = ? WHERE run_id = ? AND seconds = ? AND start = ?",
            (state, error, tried, now_iso(), int(run_id), float(seconds), start),
        )

    def settle_posting(self, run_id: int) -> list[str]:
        """Alerts a process stopped while posting: whether the webhook got them cannot be known,
        so they become ``uncertain`` and are never posted again (no alert is posted twice). Their
        window starts."""
        db = self._connect()  # type: ignore[attr-defined]
        try:
            with db:
                starts = [
                    r[0]
                    for r in db.execute(
                        "SELECT start FROM follow_alerts WHERE run_id = ? AND state = 'posting'",
                        (int(run_id),),
                    )
                ]
                db.execute(
                    "UPDATE follow_alerts SET state = 'uncertain', updated = ? WHERE run_id = ? "
                    "AND state = 'posting'",
                    (now_iso(), int(run_id)),
                )
        finally:
            db.close()
        return starts

    def alert_counts(self, run_id: int) -> dict[str, int]:
        """How many alerts are in each state, and the last error of those not delivered
        (``"error"``, "" when none)."""
        out: dict[str, Any] = {
            state: int(n)
            for state, n in self._run(  # type: ignore[attr-defined]
                "SELECT state, COUNT(*) FROM follow_alerts WHERE run_id = ? GROUP BY state",
                (int(run_id),),
            )
        }
        last = self._run(  # type: ignore[attr-defined]
            "SELECT error FROM follow_alerts WHERE run_id = ? AND state = 'pending' AND error "
            "IS NOT NULL ORDER BY updated DESC LIMIT 1",
            (int(run_id),),
        )
        out["error"] = str(last[0][0]) if last else ""
        return out

    # one follower per run -------------------------------------------------------------------
    def take_follow_lease(self, run_id: int, *, ttl: float) -> FollowLease:
        """Hold run ``run_id`` for this process, or raise :class:`RunFollowed` naming who holds
        it (host, pid, since). A holder on this host whose process is gone is taken over at
        once; one elsewhere once its heartbeat is older than its ``ttl`` seconds."""
        host, pid = socket.gethostname(), os.getpid()
        token, now = uuid.uuid4().hex, time.time()
        db = self._connect()  # type: ignore[attr-defined]
        try:
            with write_transaction(db):
                held = db.execute(
                    "SELECT host, pid, started, since, beat, ttl FROM follow_lease WHERE "
                    "run_id = ?",
                    (int(run_id),),
                ).fetchone()
                if held is not None:
                    h_host, h_pid, h_started, h_since, h_beat, h_ttl = held
                    same = h_host == host
                    alive = _alive(int(h_pid), str(h_started)) if same else None
                    if same and int(h_pid) == pid:
                        alive = False  # this very process (an earlier follower in it)
                    fresh = now - float(h_beat) <= float(h_ttl)
                    if alive or (alive is None and fresh):
                        raise RunFollowed(
                            f"run #{run_id} is followed already by pid {h_pid} on {h_host} since "
                            f"{h_since[:19].replace('T', ' ')} UTC: stop that follower first (a "
                            "follower that died is taken over "
                            + (
                                "at once)"
                                if same
                                else f"once it is silent for {float(h_ttl):.0f} s)"
                            )
                        )
                db.execute(
                    "INSERT OR REPLACE INTO follow_lease VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        int(run_id),
                        host,
                        pid,
                        _process_started(pid),
                        token,
                        now_iso(),
                        now,
                        float(ttl),
                    ),
                )
        finally:
            db.close()
        return FollowLease(run_id, token, ttl)

    def beat_follow_lease(self, lease: FollowLease) -> bool:
        """This process still follows the run: its heartbeat, now. False when the lease was
        taken over (this process was silent past its ttl)."""
        found = self._run(  # type: ignore[attr-defined]
            "UPDATE follow_lease SET beat = ? WHERE run_id = ? AND token = ? RETURNING run_id",
            (time.time(), lease.run_id, lease.token),
        )
        return bool(found)

    def drop_follow_lease(self, lease: FollowLease) -> None:
        """This process stops following the run."""
        self._run(  # type: ignore[attr-defined]
            "DELETE FROM follow_lease WHERE run_id = ? AND token = ?",
            (lease.run_id, lease.token),
        )

    def _run_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        db = self._connect()  # type: ignore[attr-defined]
        try:
            with db:
                db.executemany(sql, rows)
        finally:
            db.close()

    def follow_status(self, run_id: int, *, now: float | None = None) -> bool:
        """Whether a follower holds run ``run_id`` now: one on this host while its process
        lives (its heartbeat when this host cannot tell), one elsewhere while its heartbeat is
        within its ttl. The one notion of "followed now" for every page."""
        found = self._run(  # type: ignore[attr-defined]
            "SELECT host, pid, started, beat, ttl FROM follow_lease WHERE run_id = ?",
            (int(run_id),),
        )
        if not found:
            return False
        host, pid, started, beat, ttl = found[0]
        fresh = (time.time() if now is None else now) - float(beat) <= float(ttl)
        alive = _alive(int(pid), str(started)) if host == socket.gethostname() else None
        return fresh if alive is None else alive
