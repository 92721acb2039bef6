"""The run store: every scored dataset, its settings, results and embeddings, in one SQLite file.

A run is created with all its input rows before scoring starts; results are written row by row
as they finish (:meth:`RunStore.append_results`), so a cancelled or interrupted run keeps what
was scored and can be resumed (:meth:`RunStore.pending_rows`). API keys never reach the store:
settings are scrubbed of anything that looks like a secret before they are written.

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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pandas as pd

from relevancy._errors import InputError
from relevancy._io import read_table, results_to_frame, write_results
from relevancy._redact import redact
from relevancy._result import RelevancyResult
from relevancy.summary import mode_label

__all__ = [
    "RunStore",
    "RunInfo",
    "RunData",
    "default_store_path",
    "clean_settings",
    "import_demo",
    "DEMO_RUN_NAME",
    "EXPORT_FORMATS",
]

DEMO_RUN_NAME = "Demo (embedded default)"
#: what :meth:`RunStore.export` writes (the dashboard adds an HTML report of its own)
EXPORT_FORMATS = ("csv", "json", "jsonl", "parquet")
_SECRET_KEY = re.compile(r"(?i)(api[_-]?key|secret|token|password|passwd|authorization)")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    settings TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    n_rows INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS rows (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    input TEXT NOT NULL,
    result TEXT,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


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


def _result_json(result: RelevancyResult) -> str:
    data = result.to_dict(embeddings=True)
    for key in ("user_input_embedding",):
        if data.get(key) is not None:
            data[key] = [round(float(x), 6) for x in data[key]]
    if data.get("question_embeddings") is not None:
        data["question_embeddings"] = [
            [round(float(x), 6) for x in vec] for vec in data["question_embeddings"]
        ]
    data["error"] = redact(data["error"]) if data.get("error") else data.get("error")
    return json.dumps(_jsonable(data), ensure_ascii=False, allow_nan=False)


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
    #: scoring modes of the scored rows, sorted (rows saved before modes existed: ``"ragas"``)
    modes: tuple[str, ...] = ()
    #: mean Ragas value of the scored rows (equals ``mean`` for a ``"ragas"`` run)
    ragas_mean: float = float("nan")

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
    """A run loaded for display: inputs, scored rows and their results."""

    info: RunInfo
    inputs: pd.DataFrame  #: every input row, index = row number in the run
    frame: pd.DataFrame  #: scored rows only: input columns + score columns, column ``row``
    results: list[RelevancyResult] = field(default_factory=list)  #: aligned with ``frame``


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
        with self._connect() as db:
            db.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30.0)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA busy_timeout=30000")
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
        inputs: pd.DataFrame,
        *,
        source: str = "",
    ) -> int:
        """Save a new run with all its input rows (not yet scored); return its id."""
        if not isinstance(inputs, pd.DataFrame) or inputs.empty:
            raise InputError("a run needs at least one input row")
        name = (name or "").strip() or f"Run {_now()}"
        now = _now()
        records = inputs.reset_index(drop=True).to_dict(orient="records")
        db = self._connect()
        try:
            with db:
                cur = db.execute(
                    "INSERT INTO runs (name, created, updated, settings, source, n_rows) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        name,
                        now,
                        now,
                        json.dumps(clean_settings(settings), ensure_ascii=False),
                        redact(source),
                        len(records),
                    ),
                )
                run_id = int(cur.lastrowid)
                db.executemany(
                    "INSERT INTO rows (run_id, idx, input) VALUES (?, ?, ?)",
                    [
                        (run_id, i, json.dumps(_jsonable(r), ensure_ascii=False))
                        for i, r in enumerate(records)
                    ],
                )
        finally:
            db.close()
        return run_id

    def append_results(self, run_id: int, items: Iterable[tuple[int, RelevancyResult]]) -> int:
        """Store results as they finish: ``items`` are ``(row_index, result)``; returns count."""
        payload = [(_result_json(result), run_id, int(idx)) for idx, result in items]
        if not payload:
            return 0
        db = self._connect()
        try:
            with db:
                n = db.executemany(
                    "UPDATE rows SET result = ? WHERE run_id = ? AND idx = ?", payload
                ).rowcount
                db.execute("UPDATE runs SET updated = ? WHERE id = ?", (_now(), run_id))
        finally:
            db.close()
        return int(n)

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
                db.execute("DELETE FROM rows WHERE run_id = ?", (run_id,))
                db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        finally:
            db.close()

    # reading -----------------------------------------------------------------------------
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
        # one JSON parse per result: [value, mode, ragas_value]; a result saved before modes
        # existed has no mode (it was a Ragas value) and no ragas_value (it was the value)
        where, params = ("WHERE r.id = ? ", (run_id,)) if run_id is not None else ("", ())
        rows = self._run(
            "SELECT r.id, r.name, r.created, r.updated, r.settings, r.source, r.n_rows, "
            "COUNT(x.j), AVG(json_extract(x.j, '$[0]')), "
            "GROUP_CONCAT(DISTINCT CASE WHEN x.j IS NOT NULL "
            "THEN COALESCE(json_extract(x.j, '$[1]'), 'ragas') END), "
            "AVG(COALESCE(json_extract(x.j, '$[2]'), CASE WHEN "
            "COALESCE(json_extract(x.j, '$[1]'), 'ragas') = 'ragas' "
            "THEN json_extract(x.j, '$[0]') END)) "
            "FROM runs r LEFT JOIN (SELECT run_id, "
            "json_extract(result, '$.value', '$.mode', '$.ragas_value') AS j "
            "FROM rows WHERE result IS NOT NULL) x ON x.run_id = r.id "
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
                n_scored=int(r[7]),
                mean=float("nan") if r[8] is None else float(r[8]),
                modes=tuple(sorted(set(r[9].split(",")))) if r[9] else (),
                ragas_mean=float("nan") if r[10] is None else float(r[10]),
            )
            for r in rows
        ]

    def version(self, run_id: int) -> str:
        """Changes whenever the run changes (for caches keyed on a run)."""
        rows = self._run(
            "SELECT r.updated, r.name, COUNT(x.result) FROM runs r "
            "LEFT JOIN rows x ON x.run_id = r.id WHERE r.id = ? GROUP BY r.id",
            (int(run_id),),
        )
        return "|".join(str(v) for v in rows[0]) if rows else "missing"

    def inputs(self, run_id: int) -> pd.DataFrame:
        self._require(run_id)
        rows = self._run(
            "SELECT idx, input FROM rows WHERE run_id = ? ORDER BY idx", (int(run_id),)
        )
        frame = pd.DataFrame([json.loads(r[1]) for r in rows], index=[r[0] for r in rows])
        frame.index.name = "row"
        return frame

    def pending_rows(self, run_id: int) -> list[int]:
        """Row indexes of the run that have no result yet (what a resume has to score)."""
        self._require(run_id)
        return [
            int(r[0])
            for r in self._run(
                "SELECT idx FROM rows WHERE run_id = ? AND result IS NULL ORDER BY idx",
                (int(run_id),),
            )
        ]

    def load_run(self, run_id: int) -> RunData:
        """The run's inputs and its scored rows (input columns + score columns + ``row``)."""
        info = self.get_run(run_id)
        rows = self._run(
            "SELECT idx, input, result FROM rows WHERE run_id = ? ORDER BY idx", (int(run_id),)
        )
        inputs = pd.DataFrame([json.loads(r[1]) for r in rows], index=[r[0] for r in rows])
        inputs.index.name = "row"
        scored = [(r[0], json.loads(r[1]), json.loads(r[2])) for r in rows if r[2] is not None]
        results = [RelevancyResult.from_dict(res) for _, _, res in scored]
        if scored:
            source = pd.DataFrame([inp for _, inp, _ in scored])
            frame = results_to_frame(results, source)
            frame.insert(0, "row", [idx for idx, _, _ in scored])
        else:
            frame = pd.DataFrame(columns=["row", *inputs.columns, "score"])
        return RunData(info=info, inputs=inputs, frame=frame, results=results)

    # export ------------------------------------------------------------------------------
    def export_frame(self, run_id: int) -> pd.DataFrame:
        """What exports contain: the scored rows, without embeddings."""
        data = self.load_run(run_id)
        return data.frame.drop(columns=["row"], errors="ignore")

    def export(self, run_id: int, path: str | os.PathLike[str]) -> Path:
        """Write a run's scored rows as .csv, .json, .jsonl or .parquet (by the extension)."""
        return write_results(self.export_frame(run_id), path)

    def export_bytes(self, run_id: int, fmt: str) -> bytes:
        """An export in memory (for download buttons); ``fmt`` is one of ``EXPORT_FORMATS``."""
        fmt = fmt.lower().lstrip(".")
        if fmt not in EXPORT_FORMATS:
            raise InputError(f"cannot export as {fmt!r}: use one of {', '.join(EXPORT_FORMATS)}")
        with tempfile.TemporaryDirectory() as tmp:
            return self.export(run_id, Path(tmp) / f"run.{fmt}").read_bytes()

    # meta --------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._run("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self._run("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def demo_inputs() -> pd.DataFrame:
    with resources.as_file(resources.files("relevancy") / "data" / "demo.csv") as path:
        return read_table(path)


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
    }
    run_id = store.create_run(DEMO_RUN_NAME, settings, inputs, source="demo.csv (bundled)")
    store.append_results(run_id, enumerate(results))
    store.set_meta("demo_imported", _now())
    return run_id
