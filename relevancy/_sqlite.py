"""What every SQLite file of ours needs when it is opened: WAL mode, asked for patiently.

The cache and the run store are shared by processes (a CLI run, the dashboard, Ray workers).
Switching a file in another journal mode (a new file, a copied one) to WAL needs the file to
itself, and SQLite answers "database is locked" at once, without its busy wait, while another
process holds it open, as two processes opening a new file at the same moment do.
"""

from __future__ import annotations

import sqlite3
import time

__all__ = ["use_wal"]


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
