"""What every SQLite file of ours needs when it is opened: WAL mode, asked for patiently.

The cache and the run store are shared by processes (a CLI run, the dashboard, Ray workers).
Switching a file in another journal mode (a new file, a copied one) to WAL needs the file to
itself, and SQLite answers "database is locked" at once, without its busy wait, while another
process holds it open, as two processes opening a new file at the same moment do.
"""

from __future__ import annotations

import math
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

from relevancy.errors import InputError

__all__ = ["use_wal", "store_wait", "write_transaction", "STORE_WAIT"]

#: seconds a run store waits for another process's write before it gives up ("database is
#: locked"), unless ``$RELEVANCY_STORE_WAIT`` says otherwise
STORE_WAIT = 60.0


def store_wait() -> float:
    """``$RELEVANCY_STORE_WAIT`` (seconds, 0 to a day), else :data:`STORE_WAIT`."""
    text = os.environ.get("RELEVANCY_STORE_WAIT", "").strip()
    if not text:
        return STORE_WAIT
    try:
        wait = float(text)
    except ValueError:
        wait = math.nan
    if not 0 <= wait <= 86_400:  # also NaN
        raise InputError(
            f"RELEVANCY_STORE_WAIT is {text[:40]!r}: give the seconds to wait for a locked run "
            "store, from 0 to 86400 (default 60)"
        )
    return wait


def use_wal(db: sqlite3.Connection, *, wait: float = 60.0) -> None:
    """Put ``db``'s file in WAL mode, asking again until ``wait`` seconds have passed.

    Any error other than "locked", and "locked" after ``wait`` seconds, is raised as it came.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction on ``db``: ``BEGIN IMMEDIATE`` (the write lock taken at once, so
    two writers wait on the busy timeout instead of failing mid-way), ``COMMIT`` when the block
    ends, ``ROLLBACK`` on any error or interrupt. An interrupt can land before ``BEGIN`` took
    effect or after ``COMMIT``: it rolls back only while a transaction is open, and stays the
    interrupt it was ("cannot rollback - no transaction is active" would hide it)."""
    try:
        db.execute("BEGIN IMMEDIATE")
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
