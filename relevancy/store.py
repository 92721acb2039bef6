"""The run store: every scored dataset, its settings, results and embeddings, in one SQLite file.

Made for runs of hundreds of thousands of rows: nothing is read that a caller does not ask for.

* ``runs``: one row per run (name, settings without secrets, source, row count).
* ``inputs``: the run's input rows, the four roles in typed columns and the user's other
  columns as JSON.
* ``results``: one row per scored input, every scalar in a typed column (score, mode, Ragas
  value, noncommittal, error, timings, tokens...), indexed by score; the question's embedding as
  float32 bytes.
* ``questions``: the generated questions of each result with their similarity, noncommittal
  flag, error and embedding (float32 bytes).
* ``labels``: human labels, from the input's label column (``source = 'input'``, written with
  the run) or set in the dashboard (``'dashboard'``, which wins), each with the time it was set.
  A table of its own, created when a store opens (older stores gain it then).

A run is created with its input rows (in chunks for large files) before scoring starts; results
are written as they finish (:meth:`RunStore.append_results`), so a cancelled or interrupted run
keeps what was scored and can be resumed (:meth:`RunStore.pending_rows`). Pages read a page of
the table filtered and sorted in SQL (:meth:`RunStore.query`), one column
(:meth:`RunStore.columns`), one row (:meth:`RunStore.result`) or the vectors they draw
(:meth:`RunStore.points`). The database runs in WAL mode with short transactions and a busy
timeout, so several processes (two browser tabs, the dashboard and the CLI) can write at once.
API keys never reach the store: settings are scrubbed of anything that looks like a secret.

Stores written by earlier versions (one JSON text per row) are migrated on first open, in one
transaction; nothing is lost.

Location: ``$RELEVANCY_STORE`` (a ``.sqlite3``/``.db`` file or a folder), else
``runs.sqlite3`` in the platform's user data folder.
"""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pandas as pd

from relevancy._errors import InputError
from relevancy._io import (
    OUTPUT_FORMATS,
    RESULT_COLUMNS,
    TableWriter,
    read_table,
    result_record,
)
from relevancy._redact import redact
from relevancy._result import QuestionScore, RelevancyResult
from relevancy.agreement import parse_labels
from relevancy.cost import TOKEN_COLUMNS
from relevancy.stability import near_duplicate_pairs
from relevancy.summary import mode_label

__all__ = [
    "RunStore",
    "RunInfo",
    "RunData",
    "RowQuery",
    "SORTS",
    "default_store_path",
    "clean_settings",
    "import_demo",
    "demo_inputs",
    "demo_results",
    "DEMO_RUN_NAME",
    "EXPORT_FORMATS",
]

DEMO_RUN_NAME = "Demo (embedded default)"
#: what :meth:`RunStore.export` writes (the dashboard adds an HTML report of its own)
EXPORT_FORMATS = tuple(f.lstrip(".") for f in OUTPUT_FORMATS)
SCHEMA_VERSION = "4"
#: columns added to ``results`` after schema 2 (``embedding_tokens`` in 4): added on open,
#: empty for the rows before
_ADDED = {"reason": "TEXT NOT NULL DEFAULT ''", "flags": "TEXT NOT NULL DEFAULT ''",
          "question_parts": "TEXT NOT NULL DEFAULT ''", "embedding_tokens": "INTEGER"}  # fmt: skip
_SECRET_KEY = re.compile(r"(?i)(api[_-]?key|secret|token|password|passwd|authorization)")
_SCHEMA = """
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
CREATE TABLE IF NOT EXISTS results (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    score REAL,
    mode TEXT NOT NULL,
    ragas_value REAL,
    noncommittal INTEGER NOT NULL,
    noncommittal_method TEXT NOT NULL,
    noncommittal_detail TEXT NOT NULL,
    answer_similarity REAL,
    similarity_std REAL,
    error TEXT NOT NULL,
    notes TEXT NOT NULL,
    llm TEXT NOT NULL,
    embeddings TEXT NOT NULL,
    strictness INTEGER NOT NULL,
    seconds REAL,
    cached INTEGER NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    parts TEXT NOT NULL,
    timings TEXT NOT NULL,
    usage TEXT NOT NULL,
    ui_vec BLOB,
    reason TEXT NOT NULL DEFAULT '',
    flags TEXT NOT NULL DEFAULT '',
    question_parts TEXT NOT NULL DEFAULT '',
    embedding_tokens INTEGER,
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX IF NOT EXISTS results_by_score ON results (run_id, score);
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
#: rows scored again under other generator seeds (relevancy.stability): created on open, so
#: stores of every version get it without a schema change
_REPEATS_SCHEMA = """
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
#: human labels: one per row and source ('input': the input's label column; 'dashboard': set
#: by hand, wins over the input's; a NULL label there clears it); no schema version of its own
_LABELS_SCHEMA = """
CREATE TABLE IF NOT EXISTS labels (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('input', 'dashboard')),
    label REAL,
    set_at TEXT NOT NULL,
    PRIMARY KEY (run_id, idx, source)
);
"""
#: each row's label: the dashboard's when set, else the input's (SQL on ``r``: results)
_LABEL_SQL = (
    "(SELECT l.label FROM labels l WHERE l.run_id = r.run_id AND l.idx = r.idx "
    "ORDER BY l.source = 'dashboard' DESC LIMIT 1)"
)
#: input columns kept in typed columns (``id`` is ``item_id``: a run has an id of its own)
_TYPED = {"user_input": "user_input", "response": "response", "variant": "variant", "id": "item_id"}
#: result columns a page can ask for (besides the input columns and ``row``)
SCALARS = (
    "score",
    "reason",
    "flags",
    "mode",
    "ragas_value",
    "noncommittal",
    "noncommittal_method",
    "answer_similarity",
    "similarity_std",
    "error",
    "notes",
    "llm",
    "embeddings",
    "strictness",
    "seconds",
    "cached",
    "prompt_tokens",
    "completion_tokens",
    "embedding_tokens",
)
SORTS = ("score ↑ (lowest first)", "score ↓", "row")
#: the columns of ``results``, in order
_RESULT_FIELDS = (
    "run_id", "idx", "score", "mode", "ragas_value", "noncommittal", "noncommittal_method",
    "noncommittal_detail", "answer_similarity", "similarity_std", "error", "notes", "llm",
    "embeddings", "strictness", "seconds", "cached", "prompt_tokens", "completion_tokens",
    "parts", "timings", "usage", "ui_vec", "reason", "flags", "question_parts",
    "embedding_tokens",
)  # fmt: skip


def default_store_path() -> Path:
    """``$RELEVANCY_STORE``, else ``runs.sqlite3`` in the user data folder."""
    env = os.environ.get("RELEVANCY_STORE")
    if env:
        return _as_file(Path(env).expanduser())
    from platformdirs import user_data_dir

    return Path(user_data_dir("relevancy", appauthor=False)) / "runs.sqlite3"


def _as_file(path: Path) -> Path:
    return path if path.suffix in {".sqlite", ".sqlite3", ".db"} else path / "runs.sqlite3"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _strip_url_credentials(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return redact(urlunsplit(parts._replace(netloc=host)))
    return redact(url)


def clean_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-ready copy of ``settings`` without secrets.

    Keys that name a secret (api_key, token, password...) are dropped, URLs lose any
    ``user:password@`` part, and every string passes through :func:`relevancy._redact.redact`.
    """
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if _SECRET_KEY.search(str(key)):
            continue
        if isinstance(value, Mapping):
            out[str(key)] = clean_settings(value)
        elif isinstance(value, str):
            out[str(key)] = _strip_url_credentials(value) if "://" in value else redact(value)
        elif value is None or isinstance(value, (bool, int, float)):
            out[str(key)] = value
        elif isinstance(value, (list, tuple)):
            out[str(key)] = [redact(v) if isinstance(v, str) else v for v in value]
        else:
            out[str(key)] = redact(value)
    return out


def _jsonable(value: Any) -> Any:
    """Plain JSON values: NaN -> None, numpy scalars -> Python, timestamps -> ISO text."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        try:
            return _jsonable(value.item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "isoformat"):
        return value.isoformat()
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def _blob(vector: Any) -> bytes | None:
    if vector is None:
        return None
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def _vector(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(blob, dtype=np.float32)


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


@dataclass(frozen=True)
class RunInfo:
    """One saved run, as listed."""

    id: int
    name: str
    created: str
    updated: str
    settings: dict[str, Any]
    source: str
    n_rows: int
    n_scored: int
    mean: float
    #: scoring modes of the scored rows, sorted
    modes: tuple[str, ...] = ()
    #: mean Ragas value of the scored rows (equals ``mean`` for a ``"ragas"`` run)
    ragas_mean: float = float("nan")
    #: the input's own column names, in order (``user_input``/``response`` for the roles)
    columns: tuple[str, ...] = ()

    @property
    def mode(self) -> str:
        """``"ragas"``, ``"focus"``, ``"mixed"`` (rows of several modes) or ``""`` (none)."""
        return mode_label(self.modes)

    @property
    def resume_mode(self) -> str:
        """The mode new rows of this run are scored in, so its scores stay comparable: the mode
        of its rows, else the one it was started in (``""`` when unknown)."""
        if self.mode not in ("", "mixed"):
            return self.mode
        return str(self.settings.get("mode_used") or "")

    @property
    def complete(self) -> bool:
        return self.n_scored >= self.n_rows

    @property
    def status(self) -> str:
        if self.n_scored == 0:
            return "empty"
        return "complete" if self.complete else "partial"

    @property
    def label(self) -> str:
        """``"#3 · name (40/48 rows)"``-style text for pickers."""
        rows = f"{self.n_rows}" if self.complete else f"{self.n_scored}/{self.n_rows}"
        return f"#{self.id} · {self.name} ({rows} rows)"


@dataclass
class RunData:
    """A small run loaded whole: inputs, scored rows and their results (see :meth:`load_run`)."""

    info: RunInfo
    inputs: pd.DataFrame  #: every input row, index = row number in the run
    frame: pd.DataFrame  #: scored rows only: input columns + score columns, column ``row``
    results: list[RelevancyResult] = field(default_factory=list)  #: aligned with ``frame``


@dataclass(frozen=True)
class RowQuery:
    """Which scored rows of a run, in which order (the Dataset page's filters).

    A NaN row stays in unless ``status`` excludes it; ``search`` matches the question or the
    answer, ignoring case; ``columns`` keeps rows whose input column has one of the values.
    """

    score_range: tuple[float, float] = (-1.0, 1.0)
    noncommittal: str = "all"  #: "all", "yes" or "no"
    status: str = "all"  #: "all", "scored" or "NaN / errors"
    search: str = ""
    variants: tuple[str, ...] = ()  #: none chosen: all variants
    reasons: tuple[str, ...] = ()  #: rows whose main reason is one of these (none: all)
    below: float | None = None  #: only rows scoring below this
    sort: str = SORTS[0]
    columns: tuple[tuple[str, tuple[str, ...]], ...] = ()  #: (input column, kept values)

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition on ``r`` (results) and ``i`` (inputs), with its parameters."""
        sql = ["(r.score IS NULL OR r.score BETWEEN ? AND ?)"]
        params: list[Any] = [float(self.score_range[0]), float(self.score_range[1])]
        if self.status == "scored":
            sql.append("r.score IS NOT NULL")
        elif self.status == "NaN / errors":
            sql.append("(r.score IS NULL OR r.error != '')")
        if self.noncommittal in ("yes", "no"):
            sql.append("r.noncommittal = ?")
            params.append(1 if self.noncommittal == "yes" else 0)
        if self.variants:
            sql.append(f"i.variant IN ({','.join('?' * len(self.variants))})")
            params += list(self.variants)
        if self.reasons:
            sql.append(f"r.reason IN ({','.join('?' * len(self.reasons))})")
            params += list(self.reasons)
        for column, values in self.columns:
            if values:
                marks = ",".join("?" * len(values))
                sql.append(f"CAST(json_extract(i.extra, ?) AS TEXT) IN ({marks})")
                params += [f'$."{column}"', *values]
        if self.search.strip():
            sql.append("instr(casefold(i.user_input || ' ' || i.response), ?) > 0")
            params.append(self.search.strip().casefold())
        if self.below is not None:
            sql.append("r.score < ?")
            params.append(float(self.below))
        return " AND ".join(sql), params

    def order(self) -> str:
        if self.sort == SORTS[1]:
            return "r.score DESC NULLS LAST, r.idx"
        if self.sort == SORTS[2]:
            return "r.idx"
        return "r.score ASC NULLS FIRST, r.idx"


class RunStore:
    """Saved runs in one SQLite database (WAL mode; safe to share between processes).

    Parameters
    ----------
    path : str or Path or None
        A ``.sqlite3``/``.db`` file or a folder; default :func:`default_store_path`.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = _as_file(Path(path).expanduser()) if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = self._connect()
        try:
            old = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rows'"
            ).fetchone()
            if old:
                self._migrate_v1(db)
                db.executescript(_REPEATS_SCHEMA)
            else:
                db.executescript(_SCHEMA + _REPEATS_SCHEMA)
                have = {r[1] for r in db.execute("PRAGMA table_info(results)")}
                with db:
                    for column, kind in _ADDED.items():
                        if column not in have:  # a schema 2 store
                            db.execute(f"ALTER TABLE results ADD COLUMN {column} {kind}")
                    db.execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)",
                        (SCHEMA_VERSION,),
                    )
            db.executescript(_LABELS_SCHEMA)
        finally:
            db.close()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60.0)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA busy_timeout=60000")
        db.execute("PRAGMA synchronous=NORMAL")
        db.create_function("casefold", 1, lambda s: None if s is None else str(s).casefold(),
                           deterministic=True)  # fmt: skip
        return db

    def _run(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        db = self._connect()
        try:
            with db:
                return db.execute(sql, tuple(params)).fetchall()
        finally:
            db.close()

    # writing -----------------------------------------------------------------------------
    def create_run(
        self,
        name: str,
        settings: Mapping[str, Any],
        inputs: pd.DataFrame | Iterable[pd.DataFrame],
        *,
        source: str = "",
    ) -> int:
        """Save a new run with all its input rows (not yet scored); return its id.

        ``inputs`` is a table with ``user_input`` and ``response`` columns (and optionally
        ``variant``, ``id`` and any others), or an iterable of such tables read in chunks.
        """
        chunks = [inputs] if isinstance(inputs, pd.DataFrame) else inputs
        name = (name or "").strip() or f"Run {_now()}"
        now = _now()
        db = self._connect()
        try:
            with db:
                cur = db.execute(
                    "INSERT INTO runs (name, created, updated, settings, source, n_rows) "
                    "VALUES (?, ?, ?, ?, ?, 0)",
                    (name, now, now, json.dumps(clean_settings(settings)), redact(source)),
                )
                run_id = int(cur.lastrowid)
                n, columns = 0, None
                for chunk in chunks:
                    if columns is None:
                        columns = [str(c) for c in chunk.columns]
                    db.executemany(
                        "INSERT INTO inputs (run_id, idx, user_input, response, variant, "
                        "item_id, extra) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        _input_rows(run_id, n, chunk),
                    )
                    if "label" in chunk.columns:  # the input's human labels
                        labels = parse_labels(chunk["label"].tolist(), start=n)
                        db.executemany(
                            "INSERT INTO labels VALUES (?, ?, 'input', ?, ?)",
                            [(run_id, n + i, float(v), now)
                             for i, v in enumerate(labels) if v == v],
                        )  # fmt: skip
                    n += len(chunk)
                if not n:
                    raise InputError("a run needs at least one input row")
                db.execute(
                    "UPDATE runs SET n_rows = ?, columns = ? WHERE id = ?",
                    (n, json.dumps(columns), run_id),
                )
        finally:
            db.close()
        return run_id

    def append_results(self, run_id: int, items: Iterable[tuple[int, RelevancyResult]]) -> int:
        """Store results as they finish: ``items`` are ``(row_index, result)``; returns count."""
        results, questions = [], []
        for idx, result in items:
            results.append(_result_row(run_id, int(idx), result))
            questions += _question_rows(run_id, int(idx), result)
        if not results:
            return 0
        db = self._connect()
        try:
            with db:
                db.executemany(
                    f"INSERT OR REPLACE INTO results ({', '.join(_RESULT_FIELDS)}) "
                    f"VALUES ({_marks(len(_RESULT_FIELDS))})",
                    results,
                )
                db.executemany(
                    "DELETE FROM questions WHERE run_id = ? AND idx = ?",
                    [(run_id, r[1]) for r in results],
                )
                db.executemany(f"INSERT INTO questions VALUES ({_marks(8)})", questions)
                db.execute("UPDATE runs SET updated = ? WHERE id = ?", (_now(), run_id))
        finally:
            db.close()
        return len(results)

    def rename(self, run_id: int, name: str) -> None:
        name = (name or "").strip()
        if not name:
            raise InputError("a run name cannot be empty")
        self._require(run_id)
        self._run("UPDATE runs SET name = ?, updated = ? WHERE id = ?", (name, _now(), run_id))

    def delete(self, run_id: int) -> None:
        self._require(run_id)
        db = self._connect()
        try:
            with db:
                for table in ("questions", "results", "inputs"):
                    db.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
                db.execute("DELETE FROM repeats WHERE run_id = ?", (run_id,))
                db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        finally:
            db.close()

    # listing -----------------------------------------------------------------------------
    def _require(self, run_id: int) -> None:
        if not self._run("SELECT 1 FROM runs WHERE id = ?", (int(run_id),)):
            raise InputError(f"no run #{run_id} in {self.path}")

    def list_runs(self) -> list[RunInfo]:
        """All runs, newest first."""
        return self._infos()

    def get_run(self, run_id: int) -> RunInfo:
        """One run's listing; :class:`InputError` when there is no such run."""
        found = self._infos(int(run_id))
        if not found:
            raise InputError(f"no run #{run_id} in {self.path}")
        return found[0]

    def _infos(self, run_id: int | None = None) -> list[RunInfo]:
        where, params = ("WHERE r.id = ? ", (run_id,)) if run_id is not None else ("", ())
        rows = self._run(
            "SELECT r.id, r.name, r.created, r.updated, r.settings, r.source, r.n_rows, "
            "r.columns, COUNT(x.idx), AVG(x.score), GROUP_CONCAT(DISTINCT x.mode), "
            "AVG(x.ragas_value) FROM runs r LEFT JOIN results x ON x.run_id = r.id "
            f"{where}GROUP BY r.id ORDER BY r.id DESC",
            params,
        )
        return [
            RunInfo(
                id=int(r[0]),
                name=r[1],
                created=r[2],
                updated=r[3],
                settings=json.loads(r[4]),
                source=r[5],
                n_rows=int(r[6]),
                columns=tuple(json.loads(r[7])),
                n_scored=int(r[8]),
                mean=float("nan") if r[9] is None else float(r[9]),
                modes=tuple(sorted(set(r[10].split(",")))) if r[10] else (),
                ragas_mean=float("nan") if r[11] is None else float(r[11]),
            )
            for r in rows
        ]

    def version(self, run_id: int) -> str:
        """Changes whenever the run changes (for caches keyed on a run), its labels included."""
        rows = self._run(
            "SELECT r.updated, r.name, (SELECT COUNT(*) FROM results x WHERE x.run_id = r.id), "
            "(SELECT COUNT(*) FROM repeats y WHERE y.run_id = r.id), "
            "(SELECT value FROM meta WHERE key = 'labels:' || r.id) FROM runs r WHERE r.id = ?",
            (int(run_id),),
        )
        return "|".join(str(v) for v in rows[0]) if rows else "missing"

    def pending_rows(self, run_id: int) -> list[int]:
        """Row indexes of the run that have no result yet (what a resume has to score)."""
        self._require(run_id)
        rows = self._run(
            "SELECT i.idx FROM inputs i LEFT JOIN results r ON r.run_id = i.run_id "
            "AND r.idx = i.idx WHERE i.run_id = ? AND r.idx IS NULL ORDER BY i.idx",
            (int(run_id),),
        )
        return [int(r[0]) for r in rows]

    # reading: what a page asks for -------------------------------------------------------
    def inputs(self, run_id: int, rows: Sequence[int] | None = None) -> pd.DataFrame:
        """The run's input rows (all, or ``rows``), index = row number, the input's columns."""
        info = self.get_run(run_id)
        sql = (
            "SELECT idx, user_input, response, variant, item_id, extra FROM inputs WHERE run_id = ?"
        )
        params: list[Any] = [int(run_id)]
        if rows is not None:
            sql += f" AND idx IN ({_marks(len(rows))})"
            params += [int(r) for r in rows]
        frame = _inputs_frame(self._run(sql + " ORDER BY idx", params), info.columns)
        return frame

    def columns(
        self,
        run_id: int,
        names: Sequence[str] = ("score",),
        *,
        query: RowQuery | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> pd.DataFrame:
        """Scored rows as a table of just ``names`` (result columns from ``SCALARS``, input
        columns by their own names), plus ``row``; filtered and ordered by ``query``."""
        info = self.get_run(run_id)
        query = query or RowQuery(sort=SORTS[2])
        selects, extra = ["r.idx"], []
        for name in names:
            if name in SCALARS:
                selects.append(f"r.{name}")
            elif name == "label":  # the row's human label (the dashboard's, else the input's)
                selects.append(_LABEL_SQL)
            elif name in _TYPED:
                selects.append(f"i.{_TYPED[name]}")
            elif name in info.columns:
                selects.append("json_extract(i.extra, ?)")
                extra.append(f'$."{name}"')
            else:
                raise InputError(f"run #{run_id} has no column {name!r}")
        where, params = query.where()
        sql = (
            f"SELECT {', '.join(selects)} FROM results r JOIN inputs i ON i.run_id = r.run_id "
            f"AND i.idx = r.idx WHERE r.run_id = ? AND {where} ORDER BY {query.order()}"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        rows = self._run(sql, [*extra, int(run_id), *params])
        frame = pd.DataFrame(rows, columns=["row", *names])
        for name in names:
            if name in ("noncommittal", "cached"):
                frame[name] = frame[name].astype(bool)
            elif name in ("score", "ragas_value", "answer_similarity", "similarity_std", "label"):
                frame[name] = pd.to_numeric(frame[name]).astype(float)
        return frame

    def distinct(self, run_id: int, column: str) -> list[str]:
        """The distinct values of one input column (``variant``, ``id`` or a user column)."""
        if column in _TYPED:
            sql, params = f"SELECT DISTINCT {_TYPED[column]} FROM inputs WHERE run_id = ?", []
        else:
            sql, params = (
                "SELECT DISTINCT json_extract(extra, ?) FROM inputs WHERE run_id = ?",
                [f'$."{column}"'],
            )
        values = self._run(sql, [*params, int(run_id)])
        return sorted(str(v[0]) for v in values if v[0] is not None)

    def counts(self, run_id: int, column: str = "reason") -> dict[str, int]:
        """How many scored rows have each value of a result column (``reason``, ``mode``...)."""
        if column not in SCALARS:
            raise InputError(f"cannot count by {column!r}: use one of {', '.join(SCALARS)}")
        rows = self._run(
            f"SELECT {column}, COUNT(*) FROM results WHERE run_id = ? GROUP BY {column} "
            "ORDER BY COUNT(*) DESC",
            (int(run_id),),
        )
        return {str(value if value is not None else ""): int(n) for value, n in rows}

    def usage(self, run_id: int) -> pd.DataFrame:
        """The run's tokens and time summed per (``llm``, ``embeddings``, ``cached``): columns
        ``rows``, ``seconds`` and :data:`relevancy.cost.TOKEN_COLUMNS`; for
        :func:`relevancy.cost.usage_totals`."""
        self._require(run_id)
        rows = self._run(
            "SELECT llm, embeddings, cached, COUNT(*), SUM(seconds), SUM(prompt_tokens), "
            "SUM(completion_tokens), SUM(embedding_tokens) FROM results WHERE run_id = ? "
            "GROUP BY llm, embeddings, cached",
            (run_id,),
        )
        columns = ["llm", "embeddings", "cached", "rows", "seconds", *TOKEN_COLUMNS]
        frame = pd.DataFrame(rows, columns=columns)
        frame["cached"] = frame["cached"].astype(bool)
        return frame

    def count(self, run_id: int, query: RowQuery | None = None) -> int:
        """How many scored rows pass ``query``."""
        where, params = (query or RowQuery()).where()
        return int(
            self._run(
                "SELECT COUNT(*) FROM results r JOIN inputs i ON i.run_id = r.run_id "
                f"AND i.idx = r.idx WHERE r.run_id = ? AND {where}",
                [int(run_id), *params],
            )[0][0]
        )

    def query(
        self, run_id: int, query: RowQuery, *, limit: int = 500, offset: int = 0
    ) -> pd.DataFrame:
        """A page of the results table: ``row``, the input columns, every result column and the
        generated questions (`` · ``-joined), filtered and sorted in SQL."""
        info = self.get_run(run_id)
        inputs = [c for c in info.columns if c not in ("user_input", "response", "row", *SCALARS)]
        page = self.columns(
            run_id,
            ["user_input", "response", *inputs, *SCALARS],
            query=query,
            limit=limit,
            offset=offset,
        )
        questions = self._questions(run_id, page["row"].tolist())
        page["generated_questions"] = [
            " · ".join(q.question for q in questions.get(int(r), [])) for r in page["row"]
        ]
        return page

    def result(self, run_id: int, row: int) -> RelevancyResult:
        """One scored row, whole (questions, similarities, embeddings, parts)."""
        found = self.results(run_id, [row])
        if not found:
            raise InputError(f"row {row} of run #{run_id} has no result")
        return found[0]

    def results(
        self, run_id: int, rows: Sequence[int] | None = None, *, vectors: bool = True
    ) -> list[RelevancyResult]:
        """Scored rows as results (all, or ``rows``), in row order; ``vectors=False`` leaves
        the embeddings out (exports: much faster)."""
        columns = "r.*" if vectors else ", ".join(f"r.{c}" for c in _RESULT_FIELDS if c != "ui_vec")
        sql = (
            f"SELECT {columns}, i.user_input, i.response FROM results r JOIN inputs i ON "
            "i.run_id = r.run_id AND i.idx = r.idx WHERE r.run_id = ?"
        )
        params: list[Any] = [int(run_id)]
        if rows is not None:
            sql += f" AND r.idx IN ({_marks(len(rows))})"
            params += [int(r) for r in rows]
        db = self._connect()
        try:
            cur = db.execute(sql + " ORDER BY r.idx", params)
            names = [d[0] for d in cur.description]
            found = [dict(zip(names, row)) for row in cur.fetchall()]
        finally:
            db.close()
        questions = self._questions(run_id, [d["idx"] for d in found], vectors=vectors)
        if not vectors:
            return [_result_from_row(d, [(q, None) for q in questions.get(d["idx"], [])])
                    for d in found]  # fmt: skip
        return [_result_from_row(d, questions.get(d["idx"], [])) for d in found]

    def _questions(
        self, run_id: int, rows: Sequence[int], *, vectors: bool = False
    ) -> dict[int, list[Any]]:
        """Each row's generated questions (with their vectors when asked), in order."""
        out: dict[int, list[Any]] = {}
        rows = list(rows)
        vec = ", vec" if vectors else ""
        for start in range(0, len(rows), 900):
            chunk = rows[start : start + 900]
            for idx, question, sim, flag, error, *blob in self._run(
                f"SELECT idx, question, similarity, noncommittal, error{vec} FROM questions "
                f"WHERE run_id = ? AND idx IN ({_marks(len(chunk))}) ORDER BY idx, k",
                [int(run_id), *chunk],
            ):
                q = QuestionScore(question, sim, None if flag is None else bool(flag), error)
                out.setdefault(int(idx), []).append((q, _vector(blob[0])) if vectors else q)
        return out

    def points(
        self, run_id: int, rows: Sequence[int] | None = None
    ) -> tuple[pd.DataFrame, np.ndarray]:
        """The point table and embedding matrix of the Embeddings page, for ``rows`` (or all).

        One point per distinct original question (its first row) and one per usable generated
        question: ``kind``, ``text``, ``row``, ``parent`` (the original's point), ``score``,
        ``similarity``, ``variant``, ``noncommittal``.
        """
        where, params = "", [int(run_id)]
        if rows is not None:
            where = f" AND r.idx IN ({_marks(len(rows))})"
            params += [int(r) for r in rows]
        origin = self._run(
            "SELECT r.idx, i.user_input, i.variant, r.score, r.noncommittal, r.ui_vec FROM "
            "results r JOIN inputs i ON i.run_id = r.run_id AND i.idx = r.idx "
            f"WHERE r.run_id = ? AND r.ui_vec IS NOT NULL{where} ORDER BY r.idx",
            params,
        )
        generated = self._run(
            "SELECT q.idx, q.question, q.similarity, q.vec FROM questions q "
            f"WHERE q.run_id = ? AND q.vec IS NOT NULL{where.replace('r.idx', 'q.idx')} "
            "ORDER BY q.idx, q.k",
            params,
        )
        by_row: dict[int, list[tuple[str, float, bytes]]] = {}
        for idx, text, sim, blob in generated:
            by_row.setdefault(int(idx), []).append((text, sim, blob))
        points: list[tuple[Any, ...]] = []
        vectors: list[bytes] = []
        originals: dict[str, int] = {}
        for idx, question, variant, score, flag, blob in origin:
            if question not in originals:
                originals[question] = len(points)
                points.append(("question", question, idx, -1, np.nan, 1.0, "(original question)",
                               "original"))  # fmt: skip
                vectors.append(blob)
            for text, sim, vec in by_row.get(int(idx), []):
                points.append((
                    "generated", text, idx, originals[question],
                    np.nan if score is None else score, sim, variant or "",
                    "yes" if flag else "no",
                ))  # fmt: skip
                vectors.append(vec)
        table = pd.DataFrame(points, columns=["kind", "text", "row", "parent", "score",
                                              "similarity", "variant", "noncommittal"])  # fmt: skip
        if not vectors:
            return table, np.zeros((0, 0), dtype=np.float32)
        return table, np.frombuffer(b"".join(vectors), dtype=np.float32).reshape(len(vectors), -1)

    def load_run(self, run_id: int) -> RunData:
        """A run loaded whole (inputs, scored rows as a table, their results). For small runs;
        pages of large runs use :meth:`query`, :meth:`columns`, :meth:`result`, :meth:`points`."""
        info = self.get_run(run_id)
        inputs = self.inputs(run_id)
        results = self.results(run_id)
        rows = self._run("SELECT idx FROM results WHERE run_id = ? ORDER BY idx", (int(run_id),))
        scored = [int(r[0]) for r in rows]
        if scored:
            frame = _export_frame(inputs.loc[scored].reset_index(drop=True), results)
            frame.insert(0, "row", scored)
        else:
            frame = pd.DataFrame(columns=["row", *inputs.columns, "score"])
        return RunData(info=info, inputs=inputs, frame=frame, results=results)

    # export ------------------------------------------------------------------------------
    def iter_export(self, run_id: int, *, chunk: int = 5000) -> Iterator[pd.DataFrame]:
        """What exports contain, a chunk of rows at a time: the input's columns, then the
        result columns of :func:`relevancy.results_to_frame` (no embeddings)."""
        rows = [int(r[0]) for r in self._run(
            "SELECT idx FROM results WHERE run_id = ? ORDER BY idx", (int(run_id),))]  # fmt: skip
        labelled = self.has_labels(run_id)
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            inputs = self.inputs(run_id, part)
            frame = _export_frame(inputs.reset_index(drop=True),
                                  self.results(run_id, part, vectors=False))  # fmt: skip
            if labelled:  # each row's label as a number (importing the export maps it back)
                found = self.labels(run_id, part).set_index("row")["label"]
                values = pd.Series([found.get(r, np.nan) for r in part], dtype=float)
                if (values.dropna() % 1 == 0).all():  # 1/0 or whole grades: written as such
                    values = values.astype("Int64")
                if "label" in frame.columns:
                    frame["label"] = values.array
                else:
                    frame.insert(len(inputs.columns), "label", values.array)
            yield frame

    def export_frame(self, run_id: int) -> pd.DataFrame:
        """Every scored row as one table (the export's columns)."""
        chunks = list(self.iter_export(run_id))
        return pd.concat(chunks, ignore_index=True) if chunks else pd.DataFrame()

    def export(self, run_id: int, path: str | os.PathLike[str]) -> Path:
        """Write a run's scored rows as .csv, .json, .jsonl or .parquet, a chunk at a time."""
        with TableWriter(path) as writer:
            for frame in self.iter_export(run_id):
                writer.write(frame)
        return writer.path

    def export_bytes(self, run_id: int, fmt: str) -> bytes:
        """An export in memory (for download buttons); ``fmt`` is one of ``EXPORT_FORMATS``."""
        fmt = fmt.lower().lstrip(".")
        if fmt not in EXPORT_FORMATS:
            raise InputError(f"cannot export as {fmt!r}: use one of {', '.join(EXPORT_FORMATS)}")
        with tempfile.TemporaryDirectory() as tmp:
            return self.export(run_id, Path(tmp) / f"run.{fmt}").read_bytes()

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
                    (int(run_id), int(row), source, value, _now()),
                )
                db.execute(
                    "INSERT INTO meta (key, value) VALUES ('labels:' || ?, '1') ON CONFLICT(key) "
                    "DO UPDATE SET value = CAST(value AS INTEGER) + 1",
                    (int(run_id),),
                )
        finally:
            db.close()

    def labels(self, run_id: int, rows: Sequence[int] | None = None) -> pd.DataFrame:
        """Each labelled row's label (the dashboard's when set, else the input's): ``row``,
        ``label``, ``source`` and ``set_at``, by row. Rows whose label was cleared are left out."""
        where, params = "", [int(run_id)]
        if rows is not None:
            where = f" AND idx IN ({_marks(len(rows))})"
            params += [int(r) for r in rows]
        found = self._run(
            "SELECT idx, label, source, set_at FROM labels WHERE run_id = ?"
            f"{where} ORDER BY idx, source = 'dashboard'",
            params,
        )
        latest = {int(idx): (label, source, at) for idx, label, source, at in found}
        table = [(idx, *v) for idx, v in sorted(latest.items()) if v[0] is not None]
        frame = pd.DataFrame(table, columns=["row", "label", "source", "set_at"])
        frame["label"] = frame["label"].astype(float)
        return frame

    def has_labels(self, run_id: int) -> bool:
        """Whether any row of the run has a label."""
        return bool(self._run(
            f"SELECT 1 FROM results r WHERE r.run_id = ? AND {_LABEL_SQL} IS NOT NULL LIMIT 1",
            (int(run_id),),
        ))  # fmt: skip

    # vectors -----------------------------------------------------------------------------
    def vectors(
        self, run_id: int, rows: Sequence[int] | None = None
    ) -> tuple[pd.DataFrame, np.ndarray, list[np.ndarray]]:
        """The embeddings of scored rows (all, or ``rows``) that have them: a table (``row``,
        ``user_input``, ``embeddings``), the user questions' vectors (one row each) and each
        row's generated-question vectors (for :func:`relevancy.chance.chance_level`)."""
        where, params = "", [int(run_id)]
        if rows is not None:
            where = f" AND r.idx IN ({_marks(len(rows))})"
            params += [int(r) for r in rows]
        found = self._run(
            "SELECT r.idx, i.user_input, r.embeddings, r.ui_vec FROM results r JOIN inputs i ON "
            f"i.run_id = r.run_id AND i.idx = r.idx WHERE r.run_id = ? AND r.ui_vec IS NOT NULL"
            f"{where} ORDER BY r.idx",
            params,
        )
        table = pd.DataFrame([f[:3] for f in found], columns=["row", "user_input", "embeddings"])
        if not found:
            return table, np.zeros((0, 0), dtype=np.float32), []
        questions = self._questions(run_id, table["row"].tolist(), vectors=True)
        user = np.stack([_vector(f[3]) for f in found])
        generated = []
        for idx in table["row"]:
            vecs = [v for _, v in questions.get(int(idx), []) if v is not None]
            generated.append(np.stack(vecs) if vecs else np.zeros((0, user.shape[1]), np.float32))
        return table, user, generated

    # meta --------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._run("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self._run("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    # repeats (stability) -----------------------------------------------------------------
    def append_repeats(self, run_id: int, items: Iterable[tuple[int, int, RelevancyResult]]) -> int:
        """Store rows scored again: ``items`` are ``(row_index, seed, result)`` (a row scored
        again under a seed it already has replaces that repeat); returns the count."""
        now = _now()
        rows = [
            (
                run_id, int(idx), int(seed), _num(r.value), _num(r.ragas_value),
                int(bool(r.noncommittal)), near_duplicate_pairs(r),
                json.dumps([q.question for q in r.questions], ensure_ascii=False), now,
            )
            for idx, seed, r in items
        ]  # fmt: skip
        if not rows:
            return 0
        self._require(run_id)
        db = self._connect()
        try:
            with db:
                db.executemany(f"INSERT OR REPLACE INTO repeats VALUES ({_marks(9)})", rows)
                db.execute("UPDATE runs SET updated = ? WHERE id = ?", (now, run_id))
        finally:
            db.close()
        return len(rows)

    def repeats(self, run_id: int, rows: Sequence[int] | None = None) -> pd.DataFrame:
        """The run's repeats (all, or of ``rows``): ``row``, ``seed``, ``score``,
        ``ragas_value``, ``noncommittal``, ``near_duplicates``, ``questions`` (a list)."""
        sql = (
            "SELECT idx, seed, score, ragas_value, noncommittal, near_duplicates, questions "
            "FROM repeats WHERE run_id = ?"
        )
        params: list[Any] = [int(run_id)]
        if rows is not None:
            wanted = [int(r) for r in rows]
            if not wanted:
                sql += " AND 0"
            else:
                sql += f" AND idx IN ({_marks(len(wanted))})"
                params += wanted
        found = self._run(sql + " ORDER BY idx, seed", params)
        frame = pd.DataFrame(
            found,
            columns=["row", "seed", "score", "ragas_value", "noncommittal", "near_duplicates",
                     "questions"],
        )  # fmt: skip
        for name in ("score", "ragas_value"):
            frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
        frame["noncommittal"] = frame["noncommittal"].astype(bool)
        frame["questions"] = [json.loads(q) for q in frame["questions"]]
        return frame

    # migration ---------------------------------------------------------------------------
    def _migrate_v1(self, db: sqlite3.Connection) -> None:
        """Convert a store of one JSON text per row (before Dec 2026) in one transaction."""
        db.execute("BEGIN IMMEDIATE")
        try:
            if not db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rows'"
            ).fetchone():  # another process migrated it while we waited
                db.execute("ROLLBACK")
                return
            db.execute("ALTER TABLE runs RENAME TO runs_v1")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            for run in db.execute(
                "SELECT id, name, created, updated, settings, source, n_rows FROM runs_v1"
            ).fetchall():
                old = db.execute(
                    "SELECT idx, input, result FROM rows WHERE run_id = ? ORDER BY idx", (run[0],)
                ).fetchall()
                first = json.loads(old[0][1]) if old else {}
                db.execute(f"INSERT INTO runs VALUES ({_marks(8)})",
                           (*run, json.dumps(list(first))))  # fmt: skip
                for idx, text, _ in old:
                    frame = pd.DataFrame([json.loads(text)])
                    db.executemany(
                        f"INSERT INTO inputs VALUES ({_marks(7)})", _input_rows(run[0], idx, frame)
                    )
                scored = [
                    (idx, RelevancyResult.from_dict(json.loads(res))) for idx, _, res in old if res
                ]
                db.executemany(
                    f"INSERT INTO results ({', '.join(_RESULT_FIELDS)}) "
                    f"VALUES ({_marks(len(_RESULT_FIELDS))})",
                    [_result_row(run[0], idx, r) for idx, r in scored],
                )
                db.executemany(
                    f"INSERT INTO questions VALUES ({_marks(8)})",
                    [q for idx, r in scored for q in _question_rows(run[0], idx, r)],
                )
            db.execute("DROP TABLE rows")
            db.execute("DROP TABLE runs_v1")
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)",
                       (SCHEMA_VERSION,))  # fmt: skip
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _input_rows(run_id: int, start: int, frame: pd.DataFrame) -> Iterator[tuple[Any, ...]]:
    records = frame.reset_index(drop=True).to_dict(orient="records")
    for i, record in enumerate(records):
        record = _jsonable(record)
        extra = {k: v for k, v in record.items() if k not in _TYPED}
        yield (
            run_id,
            start + i,
            str(record.get("user_input") or ""),
            str(record.get("response") or ""),
            None if record.get("variant") is None else str(record["variant"]),
            None if record.get("id") is None else str(record["id"]),
            json.dumps(extra, ensure_ascii=False) if extra else None,
        )


def _inputs_frame(rows: list[tuple[Any, ...]], columns: Sequence[str]) -> pd.DataFrame:
    records = []
    for _, user_input, response, variant, item_id, extra in rows:
        record: dict[str, Any] = {"user_input": user_input, "response": response}
        if variant is not None:
            record["variant"] = variant
        if item_id is not None:
            record["id"] = item_id
        if extra:
            record.update(json.loads(extra))
        records.append(record)
    frame = pd.DataFrame(records, index=[r[0] for r in rows])
    order = [c for c in columns if c in frame.columns]
    frame = frame[order + [c for c in frame.columns if c not in order]]
    frame.index.name = "row"
    return frame


def _result_row(run_id: int, idx: int, r: RelevancyResult) -> tuple[Any, ...]:
    record = result_record(r)
    usage = r.usage or {}
    return (
        run_id,
        idx,
        _num(r.value),
        r.mode,
        _num(r.ragas_value),
        int(bool(r.noncommittal)),
        r.noncommittal_method,
        redact(r.noncommittal_detail),
        _num(r.answer_similarity),
        _num(record["similarity_std"]),
        redact(r.error) if r.error else "",
        json.dumps(r.notes, ensure_ascii=False),
        r.llm,
        r.embeddings,
        int(r.strictness),
        _num(record["seconds"]),
        int(bool(r.cached)),
        usage.get("prompt_tokens"),
        usage.get("completion_tokens"),
        json.dumps(_jsonable(r.parts), ensure_ascii=False) if r.parts else "",
        json.dumps(_jsonable(r.timings)),
        json.dumps(_jsonable(usage)),
        _blob(r.user_input_embedding),
        r.reason,
        ", ".join(r.flags),
        json.dumps(_jsonable(r.question_parts), ensure_ascii=False) if r.question_parts else "",
        usage.get("embedding_tokens"),
    )


def _question_rows(run_id: int, idx: int, r: RelevancyResult) -> list[tuple[Any, ...]]:
    vectors = iter(r.question_embeddings or [])
    rows = []
    for k, q in enumerate(r.questions):
        vec = next(vectors, None) if q.similarity is not None else None
        flag = None if q.noncommittal is None else int(bool(q.noncommittal))
        rows.append((run_id, idx, k, q.question, _num(q.similarity), flag,
                     redact(q.error) if q.error else None, _blob(vec)))  # fmt: skip
    return rows


def _result_from_row(
    d: dict[str, Any], questions: list[tuple[QuestionScore, Any]]
) -> RelevancyResult:
    vectors = [v.astype(float).tolist() for q, v in questions if v is not None]
    ui = _vector(d.get("ui_vec"))
    nan = float("nan")
    return RelevancyResult(
        user_input=d["user_input"],
        response=d["response"],
        value=nan if d["score"] is None else float(d["score"]),
        questions=[q for q, _ in questions],
        noncommittal=bool(d["noncommittal"]),
        noncommittal_method=d["noncommittal_method"],
        noncommittal_detail=d["noncommittal_detail"],
        answer_similarity=d["answer_similarity"],
        error=d["error"] or None,
        llm=d["llm"],
        embeddings=d["embeddings"],
        strictness=int(d["strictness"]),
        mode=d["mode"],
        ragas_value=nan if d["ragas_value"] is None else float(d["ragas_value"]),
        parts=json.loads(d["parts"]) if d["parts"] else [],
        user_input_embedding=None if ui is None else ui.astype(float).tolist(),
        question_embeddings=vectors if ui is not None else None,
        timings=json.loads(d["timings"]),
        usage=json.loads(d["usage"]),
        cached=bool(d["cached"]),
        notes=json.loads(d["notes"]),
        reason=d.get("reason") or "",
        flags=[f for f in (d.get("flags") or "").split(", ") if f],
        question_parts=json.loads(d["question_parts"]) if d.get("question_parts") else [],
    )


def _export_frame(inputs: pd.DataFrame, results: list[RelevancyResult]) -> pd.DataFrame:
    scored = pd.DataFrame([result_record(r) for r in results], columns=list(RESULT_COLUMNS))
    base = inputs.reset_index(drop=True).drop(columns=list(RESULT_COLUMNS), errors="ignore")
    return pd.concat([base, scored], axis=1)


def demo_inputs() -> pd.DataFrame:
    """The bundled demo's rows, with a human ``label``: 1 where its hand label ``answer_type``
    is on-topic (direct and complete), 0 for partial, padded, off-topic and evasive answers."""
    with resources.as_file(resources.files("relevancy") / "data" / "demo.csv") as path:
        frame = read_table(path)
    if "label" not in frame.columns and "answer_type" in frame.columns:
        frame["label"] = np.where(frame["answer_type"] == "on-topic", "1", "0").astype(object)
    return frame


def demo_results() -> list[RelevancyResult]:
    """The precomputed demo results (``scripts/precompute_demo.py``), in ``demo.csv`` order."""
    text = (resources.files("relevancy") / "data" / "demo_results.jsonl").read_text("utf-8")
    return [RelevancyResult.from_dict(json.loads(line)) for line in text.splitlines() if line]


def import_demo(store: RunStore, *, force: bool = False) -> int | None:
    """Import the precomputed demo as a run, once per store (or again with ``force``).

    Returns the new run id, or ``None`` when the demo was imported before.
    """
    if not force and store.get_meta("demo_imported"):
        return None
    inputs = demo_inputs()
    results = demo_results()
    if len(results) != len(inputs) or any(
        r.user_input != u or r.response != a
        for r, u, a in zip(results, inputs["user_input"], inputs["response"])
    ):
        raise InputError("demo_results.jsonl does not match demo.csv: rerun precompute_demo.py")
    first = results[0]
    settings = {
        "backend": "embedded",
        "llm": "local",
        "embeddings": "local",
        "llm_name": first.llm,
        "embeddings_name": first.embeddings,
        "strictness": first.strictness,
        "noncommittal": "auto",
        "concurrency": 2,
        "precomputed": True,
        "mode_used": first.mode,
    }
    run_id = store.create_run(DEMO_RUN_NAME, settings, inputs, source="demo.csv (bundled)")
    store.append_results(run_id, enumerate(results))
    store.set_meta("demo_imported", _now())
    return run_id
