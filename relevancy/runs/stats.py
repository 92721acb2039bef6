"""A run's totals kept up as its results are written: ``run_stats``, one row per run and per
combination of its few categorical values (mode, main reason, models, cached), holding how many
rows, how many with a score, their sum, the Ragas values' count and sum, and the time and tokens
used. Triggers on ``results`` add each inserted row and take away each deleted one, in the
writer's own transaction, so the totals are exactly the rows' (two writers included).

A run's listing (rows scored, mean, modes, mean Ragas value), its cost (:meth:`usage`) and its
rows per main reason are then sums over a handful of rows instead of scans of every result: at
1,000,000 rows, a few milliseconds instead of 0.2-1.4 s each, and every page asks for the
listing several times. A store without the table (before schema 7) gains it, filled from its
results in one transaction (:func:`ensure_stats`).
"""

from __future__ import annotations

import sqlite3

from relevancy.runs._migrate import migrate_once

__all__ = ["STATS_KEYS", "ensure_stats", "STATS_SQL"]

#: the categorical columns of ``results`` the totals are kept per (``counts()`` by one of them
#: reads the totals)
STATS_KEYS = ("mode", "reason", "llm", "embeddings", "cached")

#: what each total adds up, from a row of ``results`` (``{r}`` is ``new``, ``old`` or a table)
_ADDS = {
    "rows": "1",
    "scored": "({r}.score IS NOT NULL)",
    "score_sum": "COALESCE({r}.score, 0.0)",
    "ragas_rows": "({r}.ragas_value IS NOT NULL)",
    "ragas_sum": "COALESCE({r}.ragas_value, 0.0)",
    "seconds_rows": "({r}.seconds IS NOT NULL)",
    "seconds": "COALESCE({r}.seconds, 0.0)",
    "prompt_rows": "({r}.prompt_tokens IS NOT NULL)",
    "prompt_tokens": "COALESCE({r}.prompt_tokens, 0)",
    "completion_rows": "({r}.completion_tokens IS NOT NULL)",
    "completion_tokens": "COALESCE({r}.completion_tokens, 0)",
    "embedding_rows": "({r}.embedding_tokens IS NOT NULL)",
    "embedding_tokens": "COALESCE({r}.embedding_tokens, 0)",
    # scored from fewer generated questions than asked (a generation failed or was cut off)
    "incomplete": "COALESCE({r}.score IS NOT NULL AND {r}.questions_used < {r}.strictness, 0)",
}

_KEY_TYPES = {"mode": "TEXT", "reason": "TEXT", "llm": "TEXT", "embeddings": "TEXT"}

STATS_SQL = (
    "CREATE TABLE IF NOT EXISTS run_stats (\n    run_id INTEGER NOT NULL,\n"
    + "".join(f"    {k} {_KEY_TYPES.get(k, 'INTEGER')} NOT NULL,\n" for k in STATS_KEYS)
    + "".join(f"    {t} NUMERIC NOT NULL,\n" for t in _ADDS)
    + f"    PRIMARY KEY (run_id, {', '.join(STATS_KEYS)})\n) WITHOUT ROWID"
)

_KEYS = ", ".join(STATS_KEYS)
_MATCH = " AND ".join(f"{k} = old.{k}" for k in ("run_id", *STATS_KEYS))
_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS results_stats_insert AFTER INSERT ON results BEGIN "
    f"INSERT INTO run_stats (run_id, {_KEYS}, {', '.join(_ADDS)}) VALUES (new.run_id, "
    + ", ".join(f"new.{k}" for k in STATS_KEYS)
    + ", "
    + ", ".join(a.format(r="new") for a in _ADDS.values())
    + f") ON CONFLICT (run_id, {_KEYS}) DO UPDATE SET "
    + ", ".join(f"{t} = {t} + excluded.{t}" for t in _ADDS)
    + "; END",
    "CREATE TRIGGER IF NOT EXISTS results_stats_delete AFTER DELETE ON results BEGIN "
    "UPDATE run_stats SET "
    + ", ".join(f"{t} = {t} - {a.format(r='old')}" for t, a in _ADDS.items())
    + f" WHERE {_MATCH}; END",
)
_TRIGGER_NAMES = ("results_stats_insert", "results_stats_delete")


def ensure_stats(db: sqlite3.Connection) -> None:
    """Create ``run_stats`` and its triggers where they are missing, and fill it from the
    store's results, in one transaction (nothing to do when both are there)."""

    def change() -> None:
        db.execute(STATS_SQL)
        db.execute("DELETE FROM run_stats")
        db.execute(
            f"INSERT INTO run_stats (run_id, {_KEYS}, {', '.join(_ADDS)}) "
            f"SELECT run_id, {_KEYS}, "
            + ", ".join(f"SUM({a.format(r='results')})" for a in _ADDS.values())
            + f" FROM results GROUP BY run_id, {_KEYS}"
        )
        for trigger in _TRIGGERS:
            db.execute(trigger)

    migrate_once(db, lambda: _ready(db), change)


def _ready(db: sqlite3.Connection) -> bool:
    found = {
        r[0]
        for r in db.execute(
            "SELECT name FROM sqlite_master WHERE name IN ('run_stats', ?, ?)", _TRIGGER_NAMES
        )
    }
    return found == {"run_stats", *_TRIGGER_NAMES}
