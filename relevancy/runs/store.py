"""The run store: every scored dataset, its settings, results and embeddings, in one SQLite file.

Made for runs of hundreds of thousands of rows: nothing is read that a caller does not ask for.
The tables and their migrations are in :mod:`relevancy.runs.schema`; a result's columns come
from :data:`relevancy.core.schema.COLUMNS`. :class:`RunStore` writes runs and reads them a piece
at a time; its labels, repeats, exports and vectors are in the mixins of ``labels.py``,
``repeats.py``, ``export.py``, ``vectors.py`` and ``follow.py`` (followed runs, that grow)
beside this file.

A run is created with its input rows (in chunks for large files) before scoring starts; results
are written as they finish (:meth:`RunStore.append_results`), so a cancelled or interrupted run
keeps what was scored and can be resumed (:meth:`RunStore.pending_rows`). Pages read a page of
the table filtered and sorted in SQL (:meth:`RunStore.query`), one column
(:meth:`RunStore.columns`), one row (:meth:`RunStore.result`) or the vectors they draw
(:meth:`RunStore.points`). The database runs in WAL mode with short transactions and a busy
timeout, so several processes (two browser tabs, the dashboard and the CLI) can write at once.
API keys never reach the store: settings are scrubbed of anything that looks like a secret.

Location: ``$RELEVANCY_STORE`` (a ``.sqlite3``/``.db`` file or a folder), else
``runs.sqlite3`` in the platform's user data folder.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from relevancy._sqlite import store_wait, use_wal
from relevancy.analysis.agreement import parse_labels
from relevancy.analysis.summary import mode_label
from relevancy.core.noncommittal import evasive_wording
from relevancy.core.redact import redact
from relevancy.core.result import QuestionScore, RelevancyResult
from relevancy.core.schema import stored_columns
from relevancy.core.triage import DEFAULT_THRESHOLD
from relevancy.errors import InputError
from relevancy.paths import as_store_file, default_store_path
from relevancy.runs.aggregate import AggregateMixin
from relevancy.runs.export import ExportMixin
from relevancy.runs.follow import FollowMixin
from relevancy.runs.grow import GrowMixin
from relevancy.runs.labels import LabelsMixin
from relevancy.runs.query import SORTS, RowQuery, extra_value
from relevancy.runs.repeats import RepeatsMixin
from relevancy.runs.rows import (
    TYPED_INPUTS,
    blob_vector,
    clean_settings,
    export_frame,
    input_rows,
    inputs_frame,
    marks,
    now_iso,
    question_rows,
    result_from_row,
    result_row,
    scalar_columns,
    vector_row,
)
from relevancy.runs.schema import LABEL_SQL, PAGE_SIZE, open_schema, result_fields
from relevancy.runs.segments import SegmentsMixin
from relevancy.runs.vectors import VectorsMixin

__all__ = ["RunStore", "RunInfo", "RunData"]

#: result columns a page can ask for (besides the input columns and ``row``)
SCALARS = tuple(c.name for c in stored_columns() if c.page)


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

    def shown(self, column: str) -> str:
        """The name a person reads for ``column``: the table's own where a role was mapped
        from it (``model`` for the variant: :data:`relevancy.io.OWN_NAMED`), else ``column``."""
        return str((self.settings.get("column_names") or {}).get(column) or column)

    @property
    def decided_at(self) -> float:
        """The threshold the stored main reasons were decided at (the run's own)."""
        value = self.settings.get("threshold")
        return DEFAULT_THRESHOLD if value is None else float(value)

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
        rows = f"{self.n_rows:,}" if self.complete else f"{self.n_scored:,}/{self.n_rows:,}"
        return f"#{self.id} · {self.name} ({rows} rows)"


@dataclass
class RunData:
    """A small run loaded whole: inputs, scored rows and their results (see :meth:`load_run`)."""

    info: RunInfo
    inputs: pd.DataFrame  #: every input row, index = row number in the run
    frame: pd.DataFrame  #: scored rows only: input columns + score columns, column ``row``
    results: list[RelevancyResult] = field(default_factory=list)  #: aligned with ``frame``


class RunStore(
    LabelsMixin,
    RepeatsMixin,
    ExportMixin,
    VectorsMixin,
    FollowMixin,
    GrowMixin,
    AggregateMixin,
    SegmentsMixin,
):
    """Saved runs in one SQLite database (WAL mode; safe to share between processes).

    Parameters
    ----------
    path : str or Path or None
        A ``.sqlite3``/``.db`` file or a folder; default :func:`default_store_path`.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = (
            as_store_file(Path(path).expanduser()) if path is not None else default_store_path()
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = self._connect()
        try:
            open_schema(db)
        finally:
            db.close()

    def _connect(self) -> sqlite3.Connection:
        wait = store_wait()  # seconds for another process's write ($RELEVANCY_STORE_WAIT)
        db = sqlite3.connect(self.path, timeout=wait)
        db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new store's; an existing one keeps its own
        use_wal(db, wait=wait)
        db.execute("PRAGMA foreign_keys=ON")
        db.execute(f"PRAGMA busy_timeout={int(wait * 1000)}")
        db.execute("PRAGMA synchronous=NORMAL")
        db.create_function(
            "casefold", 1, lambda s: None if s is None else str(s).casefold(), deterministic=True
        )
        # a row's reason at another threshold (RowQuery.reason) reads whether its answer dodges
        db.create_function("evasive_wording", 1, lambda s: evasive_wording(s or ""))
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
        name = (name or "").strip() or f"Run {now_iso()}"
        now = now_iso()
        db = self._connect()
        try:
            with db:
                run_id = self._insert_run(db, name, settings, source, now)
                n, columns = 0, None
                for chunk in chunks:
                    if columns is None:
                        columns = [str(c) for c in chunk.columns]
                        own = json.dumps(chunk.attrs.get("column_names") or {})  # a role's name
                    db.executemany(
                        "INSERT INTO inputs (run_id, idx, user_input, response, variant, "
                        "item_id, extra) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        input_rows(run_id, n, chunk),
                    )
                    if "label" in chunk.columns:  # the input's human labels
                        labels = parse_labels(chunk["label"].tolist(), start=n)
                        db.executemany(
                            "INSERT INTO labels VALUES (?, ?, 'input', ?, ?)",
                            [
                                (run_id, n + i, float(v), now)
                                for i, v in enumerate(labels)
                                if v == v
                            ],
                        )
                    n += len(chunk)
                if not n:
                    raise InputError("a run needs at least one input row")
                db.execute(
                    "UPDATE runs SET n_rows = ?, columns = ?, settings = CASE WHEN ? = '{}' THEN "
                    "settings ELSE json_set(settings, '$.column_names', json(?)) END WHERE id = ?",
                    (n, json.dumps(columns), own, own, run_id),
                )
        finally:
            db.close()
        return run_id

    @staticmethod
    def _insert_run(
        db: sqlite3.Connection, name: str, settings: Mapping[str, Any], source: str, now: str
    ) -> int:
        """A new row of ``runs`` with no input rows yet (settings without secrets, the source
        redacted), in ``db``'s transaction; its id."""
        cur = db.execute(
            "INSERT INTO runs (name, created, updated, settings, source, n_rows, columns) "
            "VALUES (?, ?, ?, ?, ?, 0, '[]')",
            (name, now, now, json.dumps(clean_settings(settings)), redact(source)),
        )
        return int(cur.lastrowid)

    def append_results(self, run_id: int, items: Iterable[tuple[int, RelevancyResult]]) -> int:
        """Store results as they finish: ``items`` are ``(row_index, result)``; returns count."""
        results, questions, vectors = [], [], []
        for idx, result in items:
            results.append(result_row(run_id, int(idx), result))
            questions += question_rows(run_id, int(idx), result)
            if (vector := vector_row(run_id, int(idx), result)) is not None:
                vectors.append(vector)
        if not results:
            return 0
        db = self._connect()
        try:
            with db:
                # a row scored again: its old result out first (the run's totals take it away,
                # stats.py), then the new one in
                for table in ("results", "questions", "result_vectors"):
                    db.executemany(
                        f"DELETE FROM {table} WHERE run_id = ? AND idx = ?",
                        [(run_id, r[1]) for r in results],
                    )
                db.executemany(
                    f"INSERT INTO results ({', '.join(result_fields())}) "
                    f"VALUES ({marks(len(result_fields()))})",
                    results,
                )
                db.executemany(f"INSERT INTO questions VALUES ({marks(8)})", questions)
                db.executemany("INSERT INTO result_vectors VALUES (?, ?, ?)", vectors)
                db.execute("UPDATE runs SET updated = ? WHERE id = ?", (now_iso(), run_id))
        finally:
            db.close()
        self.seal_segments(run_id, [r[1] for r in results])  # a finished segment's columns
        return len(results)

    def rename(self, run_id: int, name: str) -> None:
        name = (name or "").strip()
        if not name:
            raise InputError("a run name cannot be empty")
        self._require(run_id)
        self._run("UPDATE runs SET name = ?, updated = ? WHERE id = ?", (name, now_iso(), run_id))

    def delete(self, run_id: int) -> None:
        self._require(run_id)
        db = self._connect()
        try:
            with db:
                for table in ("questions", "result_vectors", "results", "inputs", "run_stats"):
                    db.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
                db.execute("DELETE FROM repeats WHERE run_id = ?", (run_id,))
                db.execute("DELETE FROM run_segments WHERE run_id = ?", (run_id,))
                db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        finally:
            db.close()
        self._drop_segments(run_id)

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
        # the run's totals, kept up as its rows are written (stats.py), not its rows
        where, params = ("WHERE r.id = ? ", (run_id,)) if run_id is not None else ("", ())
        rows = self._run(
            "SELECT r.id, r.name, r.created, r.updated, r.settings, r.source, r.n_rows, "
            "r.columns, COALESCE(SUM(s.rows), 0), SUM(s.score_sum) / NULLIF(SUM(s.scored), 0), "
            "GROUP_CONCAT(DISTINCT CASE WHEN s.rows > 0 THEN s.mode END), "
            "SUM(s.ragas_sum) / NULLIF(SUM(s.ragas_rows), 0) FROM runs r "
            f"LEFT JOIN run_stats s ON s.run_id = r.id {where}GROUP BY r.id ORDER BY r.id DESC",
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
            "SELECT r.updated, r.name, (SELECT printf('%d:%.17g', SUM(s.rows), SUM(s.score_sum)) "
            "FROM run_stats s WHERE s.run_id = r.id), "
            "(SELECT COUNT(*) FROM repeats y WHERE y.run_id = r.id), "
            "(SELECT value FROM meta WHERE key = 'labels:' || r.id) FROM runs r WHERE r.id = ?",
            (int(run_id),),
        )
        return "|".join(str(v) for v in rows[0]) if rows else "missing"

    def pending_rows(self, run_id: int, *, from_row: int = 0) -> list[int]:
        """Row indexes of the run that have no result yet (what a resume has to score), from
        row ``from_row`` on (a followed run looks only past the rows it knows are scored)."""
        self._require(run_id)
        rows = self._run(
            "SELECT i.idx FROM inputs i LEFT JOIN results r ON r.run_id = i.run_id "
            "AND r.idx = i.idx WHERE i.run_id = ? AND i.idx >= ? AND r.idx IS NULL "
            "ORDER BY i.idx",
            (int(run_id), int(from_row)),
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
            sql += f" AND idx IN ({marks(len(rows))})"
            params += [int(r) for r in rows]
        frame = inputs_frame(self._run(sql + " ORDER BY idx", params), info.columns)
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
        columns by their own names), plus ``row``; filtered and ordered by ``query``. Every row
        unfiltered (no ``query``, no ``limit``) is read from the run's Parquet segments
        (:mod:`relevancy.runs.segments`), the rows otherwise."""
        info = self.get_run(run_id)
        known = {*scalar_columns(), "label", *TYPED_INPUTS, *info.columns}
        for name in names:
            if name not in known:
                raise InputError(f"run #{run_id} has no column {name!r}")
        whole = query is None and limit is None and not offset
        # a human label is read from the labels (set any time, without a write to results)
        stored = {*scalar_columns(), *info.columns} - {"label"}
        if whole and len(set(names)) == len(names) and set(names) <= stored:
            frame = self._segment_frame(run_id, names)
            if frame is not None:
                return frame
        db = self._connect()
        try:
            return self._rows_columns(db, run_id, names, query=query, limit=limit, offset=offset)
        finally:
            db.close()

    def _rows_columns(
        self,
        db: sqlite3.Connection,
        run_id: int,
        names: Sequence[str],
        *,
        query: RowQuery | None = None,
        limit: int | None = None,
        offset: int = 0,
        idx_range: tuple[int, int] | None = None,
    ) -> pd.DataFrame:
        """:meth:`columns` read from the rows, on ``db`` (within ``idx_range`` when given)."""
        query = query or RowQuery(sort=SORTS[2])
        selects, extra = ["r.idx"], []
        scalars = scalar_columns()
        for name in names:
            if name == "reason":  # at the query's threshold
                selects.append(query.reason)
            elif name in scalars:
                selects.append(f"r.{name}")
            elif name == "label":  # the row's human label (the dashboard's, else the input's)
                selects.append(LABEL_SQL)
            elif name in TYPED_INPUTS:
                selects.append(f"i.{TYPED_INPUTS[name]}")
            else:
                value, named = extra_value(name)
                selects.append(value)
                extra += named
        where, params = query.where()
        if idx_range is not None:
            where += " AND r.idx BETWEEN ? AND ?"
            params = [*params, *idx_range]
        sql = (
            f"SELECT {', '.join(selects)} FROM results r JOIN inputs i ON i.run_id = r.run_id "
            f"AND i.idx = r.idx WHERE r.run_id = ? AND {where} ORDER BY {query.order()}"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        rows = db.execute(sql, [*extra, int(run_id), *params]).fetchall()
        frame = pd.DataFrame(rows, columns=["row", *names])
        kinds = {c.name: c.kind for c in stored_columns()}
        for name in names:
            if kinds.get(name) == "bool":
                frame[name] = frame[name].astype(bool)
            elif kinds.get(name) == "float" or name == "label":
                frame[name] = pd.to_numeric(frame[name]).astype(float)
        return frame

    def count(self, run_id: int, query: RowQuery | None = None) -> int:
        """How many scored rows pass ``query``."""
        query = query or RowQuery()
        where, params = query.where()
        # every result has its input: the inputs are joined only when the filter reads them, so
        # a filter on the score alone is counted from the index by score
        join = (
            "JOIN inputs i ON i.run_id = r.run_id AND i.idx = r.idx " if query.reads_inputs else ""
        )
        return int(
            self._run(
                f"SELECT COUNT(*) FROM results r {join}WHERE r.run_id = ? AND {where}",
                [int(run_id), *params],
            )[0][0]
        )

    def query(
        self, run_id: int, query: RowQuery, *, limit: int = 500, offset: int = 0
    ) -> pd.DataFrame:
        """A page of the results table: ``row``, the input columns, every result column and the
        generated questions (`` · ``-joined), filtered and sorted in SQL."""
        info = self.get_run(run_id)
        scalars = scalar_columns()
        inputs = [c for c in info.columns if c not in ("user_input", "response", "row", *scalars)]
        page = self.columns(
            run_id,
            ["user_input", "response", *inputs, *scalars],
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
        columns = ", ".join(f"r.{c}" for c in result_fields())
        if vectors:
            columns += (
                ", (SELECT v.vec FROM result_vectors v WHERE v.run_id = r.run_id "
                "AND v.idx = r.idx) AS ui_vec"
            )
        sql = (
            f"SELECT {columns}, i.user_input, i.response FROM results r JOIN inputs i ON "
            "i.run_id = r.run_id AND i.idx = r.idx WHERE r.run_id = ?"
        )
        params: list[Any] = [int(run_id)]
        if rows is not None:
            sql += f" AND r.idx IN ({marks(len(rows))})"
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
            return [
                result_from_row(d, [(q, None) for q in questions.get(d["idx"], [])]) for d in found
            ]
        return [result_from_row(d, questions.get(d["idx"], [])) for d in found]

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
                f"WHERE run_id = ? AND idx IN ({marks(len(chunk))}) ORDER BY idx, k",
                [int(run_id), *chunk],
            ):
                q = QuestionScore(question, sim, None if flag is None else bool(flag), error)
                out.setdefault(int(idx), []).append((q, blob_vector(blob[0])) if vectors else q)
        return out

    def load_run(self, run_id: int) -> RunData:
        """A run loaded whole (inputs, scored rows as a table, their results). For small runs;
        pages of large runs use :meth:`query`, :meth:`columns`, :meth:`result`, :meth:`points`."""
        info = self.get_run(run_id)
        inputs = self.inputs(run_id)
        results = self.results(run_id)
        rows = self._run("SELECT idx FROM results WHERE run_id = ? ORDER BY idx", (int(run_id),))
        scored = [int(r[0]) for r in rows]
        if scored:
            frame = export_frame(inputs.loc[scored].reset_index(drop=True), results)
            frame.insert(0, "row", scored)
        else:
            frame = pd.DataFrame(columns=["row", *inputs.columns, "score"])
        return RunData(info=info, inputs=inputs, frame=frame, results=results)

    # meta --------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._run("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self._run("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
