"""A run's columns, also kept as Parquet segments beside the store: what a page reads when it
asks for a column of every row (:meth:`RunStore.columns` with no filter).

SQLite stays the store: every write goes there, in its transactions, and it is what two writers
share and a killed writer leaves whole. But a page that reads a column of every row of a
million-row run from SQLite waits seconds for the rows to cross into Python one by one (2.3 s
for the four columns Compare pairs on; the same columns from Parquet, 0.07 s: bench/RESULTS.md,
"The store's engine"). So each run's rows are also written, 65,536 row numbers to a segment,
as Parquet files in ``<store>.columns/run-<id>/``, one column per page column (every result
column but the vectors and every input column).

A segment's file is named by its version: ``run_segments`` holds a counter per (run, segment)
that triggers on ``results`` raise with each row written or deleted, in the writer's own
transaction. A file is current while its version is the table's; a reader finding no current
file makes it (from one read transaction, so the file and its version agree), and a writer
makes a segment's file as soon as every input row of the segment is scored. The files are a
copy: deleting them loses nothing (they are made again), and a run whose columns Parquet cannot
hold as they are (one column mixing numbers and text, say) is read from SQLite as before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from relevancy.runs._migrate import migrate_once
from relevancy.runs.rows import scalar_columns

__all__ = ["SEGMENT_ROWS", "SegmentsMixin", "ensure_segments"]

#: row numbers per segment (a power of two: a row's segment is ``idx >> SHIFT``)
SHIFT = 16
SEGMENT_ROWS = 1 << SHIFT

_TABLE = (
    "CREATE TABLE IF NOT EXISTS run_segments (run_id INTEGER NOT NULL, seg INTEGER NOT NULL, "
    "version INTEGER NOT NULL, PRIMARY KEY (run_id, seg)) WITHOUT ROWID"
)
_BUMP = (
    f"INSERT INTO run_segments VALUES ({{r}}.run_id, {{r}}.idx >> {SHIFT}, 1) "
    "ON CONFLICT (run_id, seg) DO UPDATE SET version = version + 1"
)
_TRIGGERS = {
    "results_segments_insert": "AFTER INSERT ON results BEGIN " + _BUMP.format(r="new") + "; END",
    "results_segments_delete": "AFTER DELETE ON results BEGIN " + _BUMP.format(r="old") + "; END",
}
#: a run whose columns Parquet cannot hold: read from SQLite (the file says why)
_UNFIT = "unfit.txt"


def ensure_segments(db: sqlite3.Connection) -> None:
    """Create ``run_segments`` and its triggers where they are missing (a store before schema
    7 gains one row per segment of its results), in one transaction."""

    def done() -> bool:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        return {"run_segments", *_TRIGGERS} <= names

    def change() -> None:
        db.execute(_TABLE)
        db.execute(
            f"INSERT OR IGNORE INTO run_segments SELECT run_id, idx >> {SHIFT}, 1 "
            "FROM results GROUP BY 1, 2"
        )
        for name, body in _TRIGGERS.items():
            db.execute(f"CREATE TRIGGER IF NOT EXISTS {name} {body}")

    migrate_once(db, done, change)


class SegmentsMixin:
    """The run store's Parquet segments (mixed into :class:`relevancy.runs.store.RunStore`)."""

    path: Path

    def segments_folder(self, run_id: int) -> Path:
        """Where a run's segments are kept: ``<store>.columns/run-<id>/``."""
        return self.path.with_name(self.path.name + ".columns") / f"run-{int(run_id)}"

    def _segment_versions(self, db: sqlite3.Connection, run_id: int) -> dict[int, int]:
        rows = db.execute(
            "SELECT seg, version FROM run_segments WHERE run_id = ? ORDER BY seg", (int(run_id),)
        )
        return {int(s): int(v) for s, v in rows}

    def _snapshot_names(self, run_id: int) -> list[str]:
        """Every column a page can ask for: the result columns, then the input's own."""
        info = self.get_run(run_id)  # type: ignore[attr-defined]
        # not the human label: it changes without a write to results (read from the labels)
        return [c for c in dict.fromkeys([*scalar_columns(), *info.columns]) if c != "label"]

    def _build_segment(self, run_id: int, seg: int) -> Path | None:
        """Write segment ``seg``'s file from one read transaction; None when its columns do not
        fit Parquet (the run is then marked, and read from SQLite)."""
        folder = self.segments_folder(run_id)
        names = self._snapshot_names(run_id)
        db = self._connect()  # type: ignore[attr-defined]
        try:
            db.execute("BEGIN")  # one snapshot: the rows and the version they make
            version = self._segment_versions(db, run_id).get(seg)
            frame = self._rows_columns(  # type: ignore[attr-defined]
                db, run_id, names, idx_range=(seg << SHIFT, ((seg + 1) << SHIFT) - 1)
            )
            db.execute("COMMIT")
        finally:
            db.close()
        if version is None:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"seg-{seg}-v{version}.parquet"
        temporary = folder / f".seg-{seg}-v{version}.{os.getpid()}.tmp"
        try:
            frame.to_parquet(temporary, index=False)
        except (TypeError, ValueError, ArithmeticError, ImportError) as e:
            # pyarrow's ArrowInvalid/ArrowTypeError are ValueError/TypeError subclasses
            temporary.unlink(missing_ok=True)
            (folder / _UNFIT).write_text(f"{type(e).__name__}: {e}\n", encoding="utf-8")
            return None
        os.replace(temporary, target)  # atomic: a reader sees the whole file or none
        for old in folder.glob(f"seg-{seg}-v*.parquet"):
            if old != target:
                with contextlib.suppress(OSError):
                    old.unlink()
        return target

    def _segment_frame(self, run_id: int, names: Sequence[str]) -> pd.DataFrame | None:
        """Columns ``names`` (and ``row``) of every scored row, from the segments (made where
        missing or out of date); None when the run's columns do not fit Parquet."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        folder = self.segments_folder(run_id)
        if (folder / _UNFIT).exists():
            return None
        db = self._connect()  # type: ignore[attr-defined]
        try:
            versions = self._segment_versions(db, run_id)
        finally:
            db.close()
        parts = []
        for seg, version in versions.items():
            path = folder / f"seg-{seg}-v{version}.parquet"
            # made when the run had fewer columns (a followed run gains its source's new
            # columns): made again, with them
            if not path.exists() or not set(names) <= _names_in(path):
                built = self._build_segment(run_id, seg)
                if built is None:
                    return None
                path = built  # maybe newer than the version read above: newer rows, whole
            with contextlib.suppress(FileNotFoundError, KeyError, ValueError):
                # replaced by a newer file meanwhile, or still without a column: from the rows
                parts.append(pq.read_table(path, columns=["row", *names]))
                continue
            return None
        if not parts:
            return None
        try:  # one table, made into pandas once (types widened as pandas would)
            return pa.concat_tables(parts, promote_options="permissive").to_pandas()
        except (TypeError, ValueError):  # no promotion joins them (numbers here, text there)
            return pd.concat([p.to_pandas() for p in parts], ignore_index=True)

    def seal_segments(self, run_id: int, rows: Iterable[int] = ()) -> None:
        """Make the file of each segment of ``rows`` whose input rows are all scored (a writer
        calls it after a batch: a finished segment's file is ready before a page asks)."""
        for seg in sorted({int(r) >> SHIFT for r in rows}):
            lo, hi = seg << SHIFT, ((seg + 1) << SHIFT) - 1
            (scored, wanted) = self._run(  # type: ignore[attr-defined]
                "SELECT (SELECT COUNT(*) FROM results WHERE run_id = ? AND idx BETWEEN ? AND ?), "
                "(SELECT COUNT(*) FROM inputs WHERE run_id = ? AND idx BETWEEN ? AND ?)",
                (int(run_id), lo, hi, int(run_id), lo, hi),
            )[0]
            if scored and scored == wanted:
                self._build_segment(run_id, seg)

    def _drop_segments(self, run_id: int) -> None:
        shutil.rmtree(self.segments_folder(run_id), ignore_errors=True)


def _names_in(path: Path) -> set[str]:
    """The columns a segment file holds (read from its footer), none when it is gone."""
    import pyarrow.parquet as pq

    try:
        return set(pq.read_schema(path).names)
    except (OSError, ValueError):
        return set()
