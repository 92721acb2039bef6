"""One change to a store's schema, made once however many processes open the store at once."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["migrate_once"]


def migrate_once(
    db: sqlite3.Connection, done: Callable[[], bool], change: Callable[[], None]
) -> None:
    """Run ``change`` in one ``BEGIN IMMEDIATE`` transaction unless ``done()``: asked first
    without a lock (nothing to do, nothing locked), then again under it (another process may
    have made the change while this one waited). A failed change is rolled back whole."""
    if done():
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if not done():
            change()
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # an interrupt can come before BEGIN or after COMMIT
            db.execute("ROLLBACK")
        raise
