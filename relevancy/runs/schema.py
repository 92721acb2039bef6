"""The run store's SQL schema, and how a store of any earlier version is brought up to date.

* ``runs``: one row per run (name, settings without secrets, source, row count, the input's
  column names).
* ``inputs``: the run's input rows, the four roles in typed columns and the user's other
  columns as JSON.
* ``results``: one row per scored input; its columns are the stored columns of
  :data:`relevancy.core.schema.COLUMNS` but the vectors (every scalar typed, indexed by score
  and by what a run's listing reads), a few hundred bytes a row, so that a page's counts and
  aggregates scan narrow rows.
* ``result_vectors``: the user question's embedding of each result, as float32 bytes, read
  only by the pages that draw or compare vectors.
* ``run_stats``: each run's totals (rows, scores, Ragas values, time and tokens) per mode,
  main reason, models and cached, kept up by triggers on ``results``
  (:mod:`relevancy.runs.stats`): a run's listing, cost and reasons read it, not every row.
* ``questions``: the generated questions of each result with their similarity, noncommittal
  flag, error and embedding.
* ``repeats``: rows scored again under other generator seeds (stability).
* ``labels``: human labels, from the input (``source = 'input'``) or set in the dashboard
  (``'dashboard'``, which wins), each with the time it was set.
* ``meta``: key/value pairs (the schema version, the demo's import, label counters).
* ``follow_cursors``, ``follow_keys``, ``follow_sent``, ``follow_windows``,
  ``follow_waiting``, ``follow_alerts``, ``follow_lease``: a followed run (``relevancy score
  --follow``): where its source was read up to, the source's id and time of each row (a row is
  added once), which scores reached each write-back target, the alert windows already checked,
  the rows whose scoring failed for a passing reason (tried again later), each alert until its
  webhook took it, and which process follows the run (see :mod:`relevancy.runs.follow`).

Migrations: a store of version 1 (one JSON text per row) is converted in one transaction
(:func:`migrate_v1`); in later versions a column the schema has and the store's ``results``
lacks is added, empty for the rows before (:func:`open_schema`). Adding a column to
:data:`relevancy.core.schema.COLUMNS` therefore migrates every store on its next open. A store
before version 7 holds each result's vector in ``results.ui_vec``: they are moved to
``result_vectors`` and ``results`` is rebuilt clustered by run in one transaction
(:func:`move_vectors`; 43 s for a store of 1,000,000 rows).

A new store is made with pages of 16 KiB: a row of ``questions`` or ``result_vectors`` (a
1.5 KiB vector) fits ten to a page instead of two in SQLite's default 4 KiB, which wasted about
a quarter of every such page.
"""

from __future__ import annotations

import json
import sqlite3

import pandas as pd

from relevancy.core.result import RelevancyResult
from relevancy.core.schema import Column, stored_columns
from relevancy.runs._migrate import migrate_once
from relevancy.runs.rows import input_rows, marks, question_rows, result_row, vector_row
from relevancy.runs.segments import ensure_segments
from relevancy.runs.stats import ensure_stats

__all__ = [
    "SCHEMA_VERSION",
    "LABEL_SQL",
    "result_fields",
    "results_table",
    "open_schema",
    "migrate_v1",
    "move_vectors",
    "PAGE_SIZE",
]

#: 5: the detected languages of each row (``languages``); earlier versions gain the column
#: 6: the tables of followed runs (``follow_*``); earlier versions gain them, empty
#: 7: each result's vector in ``result_vectors``, not in ``results`` (earlier versions' moved);
#: a run's totals in ``run_stats``, kept by triggers (:mod:`relevancy.runs.stats`)
#: 8: a followed run's rows waiting for the judge, its alerts until delivered and who follows
#: it (``follow_waiting``, ``follow_alerts``, ``follow_lease``); earlier versions gain them, empty
SCHEMA_VERSION = "8"

#: the page size of a new store (an existing store keeps its own)
PAGE_SIZE = 16384

_TABLES = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    settings TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    n_rows INTEGER NOT NULL,
    columns TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS inputs (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    user_input TEXT NOT NULL,
    response TEXT NOT NULL,
    variant TEXT,
    item_id TEXT,
    extra TEXT,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS questions (
    run_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    k INTEGER NOT NULL,
    question TEXT NOT NULL,
    similarity REAL,
    noncommittal INTEGER,
    error TEXT,
    vec BLOB,
    PRIMARY KEY (run_id, idx, k)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_REPEATS = """
CREATE TABLE IF NOT EXISTS repeats (
    run_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    score REAL,
    ragas_value REAL,
    noncommittal INTEGER NOT NULL,
    near_duplicates INTEGER NOT NULL,
    questions TEXT NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (run_id, idx, seed)
);
"""
_LABELS = """
CREATE TABLE IF NOT EXISTS labels (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('input', 'dashboard')),
    label REAL,
    set_at TEXT NOT NULL,
    PRIMARY KEY (run_id, idx, source)
);
"""
_FOLLOW = """
CREATE TABLE IF NOT EXISTS follow_cursors (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    read_to TEXT,
    swept_to TEXT,
    updated TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS follow_keys (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    t REAL,
    PRIMARY KEY (run_id, key)
);
CREATE INDEX IF NOT EXISTS follow_keys_by_time ON follow_keys (run_id, t);
CREATE TABLE IF NOT EXISTS follow_sent (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    target TEXT NOT NULL,
    outcome TEXT NOT NULL,
    PRIMARY KEY (run_id, target, idx)
);
CREATE TABLE IF NOT EXISTS follow_windows (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    start TEXT NOT NULL,
    seconds REAL NOT NULL,
    status TEXT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (run_id, seconds, start)
);
CREATE TABLE IF NOT EXISTS follow_waiting (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    since REAL NOT NULL,
    next_try REAL NOT NULL,
    error TEXT NOT NULL,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS follow_alerts (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seconds REAL NOT NULL,
    start TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'posting', 'delivered', 'uncertain')),
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    updated TEXT NOT NULL,
    PRIMARY KEY (run_id, seconds, start)
);
CREATE TABLE IF NOT EXISTS follow_lease (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started TEXT NOT NULL,
    token TEXT NOT NULL,
    since TEXT NOT NULL,
    beat REAL NOT NULL,
    ttl REAL NOT NULL
);
"""
_VECTORS = """
CREATE TABLE IF NOT EXISTS result_vectors (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (run_id, idx)
);
"""
#: each row's label: the dashboard's when set, else the input's (SQL on ``r``: results)
LABEL_SQL = (
    "(SELECT l.label FROM labels l WHERE l.run_id = r.run_id AND l.idx = r.idx "
    "ORDER BY l.source = 'dashboard' DESC LIMIT 1)"
)


def result_columns() -> tuple[Column, ...]:
    """The schema's stored columns that ``results`` holds: all but the vectors."""
    return tuple(c for c in stored_columns() if c.kind != "vector")


def result_fields() -> list[str]:
    """The columns of ``results`` in the order :func:`relevancy.runs.rows.result_row` fills
    them: ``run_id``, ``idx``, then the schema's stored columns but the vectors."""
    return ["run_id", "idx", *(c.name for c in result_columns())]


def results_table() -> str:
    """``CREATE TABLE results`` for the current schema, and its index by score. The table is
    clustered by ``(run_id, idx)`` (``WITHOUT ROWID``, its rows a few hundred bytes): a run's
    rows lie together, so a page's count or aggregate over one run reads just that run, in
    order, whatever the query planner knows of the table."""
    body = "".join(f"    {c.name} {c.sql},\n" for c in result_columns())
    return (
        "CREATE TABLE IF NOT EXISTS results (\n"
        "    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
        f"    idx INTEGER NOT NULL,\n{body}    PRIMARY KEY (run_id, idx)\n) WITHOUT ROWID;\n"
        "CREATE INDEX IF NOT EXISTS results_by_score ON results (run_id, score);\n"
    )


def _add_missing_columns(db: sqlite3.Connection) -> None:
    have = _results_columns(db)
    for column in result_columns():
        if column.name not in have:
            db.execute(f"ALTER TABLE results ADD COLUMN {column.name} {column.sql}")


def open_schema(db: sqlite3.Connection) -> None:
    """Create the tables of a new store, or bring an older store up to date."""
    old = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rows'")
    if old.fetchone():
        migrate_v1(db)
    else:
        db.executescript(_TABLES + results_table())
    db.executescript(_REPEATS + _LABELS + _FOLLOW + _VECTORS)
    move_vectors(db)
    with db:
        _add_missing_columns(db)
        db.execute("DROP INDEX IF EXISTS results_listing")  # schema 6's; run_stats serves now
    ensure_stats(db)
    ensure_segments(db)
    with db:
        db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,)
        )


def move_vectors(db: sqlite3.Connection) -> None:
    """Bring ``results`` of a store before version 7 to today's shape, in one transaction:
    each result's vector (``results.ui_vec``) moved to ``result_vectors``, and the table
    rebuilt clustered by ``(run_id, idx)`` (``WITHOUT ROWID``), every other value kept. Nothing
    to do in a store already so."""

    def change() -> None:
        have = _results_columns(db)
        if "ui_vec" in have:
            db.execute(
                "INSERT OR IGNORE INTO result_vectors (run_id, idx, vec) "
                "SELECT run_id, idx, ui_vec FROM results WHERE ui_vec IS NOT NULL"
            )
        kept = ", ".join(f for f in result_fields() if f in have)
        table, index = results_table().split(";", 1)
        db.execute(table.replace("EXISTS results", "EXISTS results_v7", 1))
        db.execute(f"INSERT INTO results_v7 ({kept}) SELECT {kept} FROM results")
        db.execute("DROP TABLE results")  # and its indexes
        db.execute("ALTER TABLE results_v7 RENAME TO results")
        db.execute(index)

    migrate_once(db, lambda: not _results_outdated(db), change)


def _results_outdated(db: sqlite3.Connection) -> bool:
    found = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'results'")
    sql = (found.fetchone() or [""])[0]
    return "WITHOUT ROWID" not in sql.upper()


def _results_columns(db: sqlite3.Connection) -> set[str]:
    return {r[1] for r in db.execute("PRAGMA table_info(results)")}


def migrate_v1(db: sqlite3.Connection) -> None:
    """Convert a store of one JSON text per row (before Dec 2026) in one transaction."""
    db.execute("BEGIN IMMEDIATE")
    try:
        if not db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rows'"
        ).fetchone():  # another process migrated it while we waited
            db.execute("ROLLBACK")
            return
        db.execute("ALTER TABLE runs RENAME TO runs_v1")
        for statement in (_TABLES + _VECTORS + results_table()).split(";"):
            if statement.strip():
                db.execute(statement)
        fields = result_fields()
        for run in db.execute(
            "SELECT id, name, created, updated, settings, source, n_rows FROM runs_v1"
        ).fetchall():
            old = db.execute(
                "SELECT idx, input, result FROM rows WHERE run_id = ? ORDER BY idx", (run[0],)
            ).fetchall()
            first = json.loads(old[0][1]) if old else {}
            db.execute(f"INSERT INTO runs VALUES ({marks(8)})", (*run, json.dumps(list(first))))
            for idx, text, _ in old:
                frame = pd.DataFrame([json.loads(text)])
                db.executemany(
                    f"INSERT INTO inputs VALUES ({marks(7)})", input_rows(run[0], idx, frame)
                )
            scored = [
                (idx, RelevancyResult.from_dict(json.loads(res))) for idx, _, res in old if res
            ]
            db.executemany(
                f"INSERT INTO results ({', '.join(fields)}) VALUES ({marks(len(fields))})",
                [result_row(run[0], idx, r) for idx, r in scored],
            )
            db.executemany(
                f"INSERT INTO questions VALUES ({marks(8)})",
                [q for idx, r in scored for q in question_rows(run[0], idx, r)],
            )
            db.executemany(
                "INSERT INTO result_vectors VALUES (?, ?, ?)",
                [v for idx, r in scored if (v := vector_row(run[0], idx, r))],
            )
        db.execute("DROP TABLE rows")
        db.execute("DROP TABLE runs_v1")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # an interrupt can come before BEGIN or after COMMIT
            db.execute("ROLLBACK")
        raise
