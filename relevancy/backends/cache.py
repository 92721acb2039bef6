"""A persistent SQLite cache of generations and embeddings.

Keys are SHA-256 digests of the backend's fingerprint (backend, model, prompt, temperature,
seed, ...) plus the text, so a change to anything that alters the output misses the cache,
and re-scoring the same data gives identical values. The database runs in WAL mode with a busy
timeout, so several processes (a CLI run and the dashboard) can share it, and two that open a
new cache at the same moment both wait their turn (``use_wal``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from relevancy._sqlite import use_wal, write_transaction
from relevancy.core.result import GenerationSet
from relevancy.errors import ConfigError
from relevancy.paths import default_cache_dir

__all__ = ["Cache", "cache_key"]


def cache_key(fingerprint: dict[str, Any], *parts: Any) -> str:
    payload = json.dumps([fingerprint, *parts], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class Cache:
    """Generations and embeddings on disk.

    Parameters
    ----------
    path : str or Path or None
        A database file, or a folder (``cache.sqlite3`` inside it).
        Default: ``default_cache_dir()``.

    Raises
    ------
    ConfigError
        One line when the cache cannot be made or written there (a folder without write
        permission, a file where a folder should be).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        p = Path(path) if path is not None else default_cache_dir()
        if p.suffix not in {".sqlite", ".sqlite3", ".db"}:
            p = p / "cache.sqlite3"
        self.path = p
        self._local = threading.local()
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            self._create()
        except (OSError, sqlite3.Error) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            raise ConfigError(
                f"the cache {p} cannot be written ({why}): set $RELEVANCY_CACHE_DIR (or "
                "--cache-dir) to a folder you can write, or score with --no-cache"
            ) from None

    def _create(self) -> None:
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings "
                "(key TEXT PRIMARY KEY, dim INTEGER NOT NULL, vector BLOB NOT NULL)"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS records (kind TEXT NOT NULL, key TEXT NOT NULL, "
                "value TEXT NOT NULL, PRIMARY KEY (kind, key))"
            )

    def _connect(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            use_wal(db, wait=30.0)
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=30000")
            self._local.db = db
        return db

    # generations -------------------------------------------------------------------------
    def get_generations(self, key: str) -> GenerationSet | None:
        row = (
            self._connect()
            .execute("SELECT value FROM generations WHERE key = ?", (key,))
            .fetchone()
        )
        return GenerationSet.from_dict(json.loads(row[0]), cached=True) if row else None

    def cached_generations(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` have generations stored (one query per 500 keys)."""
        found: set[str] = set()
        db = self._connect()
        keys = list(dict.fromkeys(keys))
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                k
                for (k,) in db.execute(f"SELECT key FROM generations WHERE key IN ({marks})", chunk)
            )
        return found

    def put_generations(self, key: str, value: GenerationSet) -> None:
        self._connect().execute(
            "INSERT OR REPLACE INTO generations (key, value) VALUES (?, ?)",
            (key, json.dumps(value.to_dict(), ensure_ascii=False)),
        )

    # embeddings --------------------------------------------------------------------------
    def get_embeddings(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        db = self._connect()
        keys = list(dict.fromkeys(keys))
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, dim, blob in db.execute(
                f"SELECT key, dim, vector FROM embeddings WHERE key IN ({marks})", chunk
            ):
                found[key] = np.frombuffer(blob, dtype=np.float32, count=dim).copy()
        return found

    def put_embeddings(self, items: dict[str, np.ndarray]) -> None:
        if not items:
            return
        rows = [
            (k, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes())
            for k, v in items.items()
        ]
        db = self._connect()
        with write_transaction(db):
            db.executemany(
                "INSERT OR REPLACE INTO embeddings (key, dim, vector) VALUES (?, ?, ?)", rows
            )

    # records: small JSON results derived from the backends (e.g. judge checks) ------------
    def get_record(self, kind: str, key: str) -> dict[str, Any] | None:
        row = (
            self._connect()
            .execute("SELECT value FROM records WHERE kind = ? AND key = ?", (kind, key))
            .fetchone()
        )
        return json.loads(row[0]) if row else None

    def put_record(self, kind: str, key: str, value: dict[str, Any]) -> None:
        self._connect().execute(
            "INSERT OR REPLACE INTO records (kind, key, value) VALUES (?, ?, ?)",
            (kind, key, json.dumps(value, ensure_ascii=False)),
        )

    # housekeeping ------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        db = self._connect()
        gens = db.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
        embs = db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        size = sum(
            f.stat().st_size for f in self.path.parent.glob(self.path.name + "*") if f.is_file()
        )
        return {"path": str(self.path), "generations": gens, "embeddings": embs, "bytes": size}

    def clear(self) -> None:
        db = self._connect()
        db.execute("DELETE FROM generations")
        db.execute("DELETE FROM embeddings")
        db.execute("DELETE FROM records")
        db.execute("VACUUM")
