"""A run's scored rows written out: the input's columns, then the result columns of
:data:`relevancy.core.schema.COLUMNS` (and each row's human label), a chunk at a time."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from relevancy.errors import InputError
from relevancy.io import OUTPUT_FORMATS, TableWriter, own_names
from relevancy.runs.rows import export_frame

__all__ = ["ExportMixin", "EXPORT_FORMATS"]

#: what :meth:`RunStore.export` writes (the dashboard adds an HTML report of its own)
EXPORT_FORMATS = tuple(f.lstrip(".") for f in OUTPUT_FORMATS)


class ExportMixin:
    """The run store's export methods (mixed into :class:`relevancy.runs.store.RunStore`)."""

    # export ------------------------------------------------------------------------------
    def iter_export(self, run_id: int, *, chunk: int = 5000) -> Iterator[pd.DataFrame]:
        """What exports contain, a chunk of rows at a time: the input's columns, then the
        result columns of :func:`relevancy.results_to_frame` (no embeddings)."""
        labelled = self.has_labels(run_id)
        info = self.get_run(run_id)  # type: ignore[attr-defined]
        names = dict(info.settings.get("column_names") or {})
        last = -1
        while True:  # the next chunk's row numbers, after the last one: no list of every row
            part = [
                int(r[0])
                for r in self._run(
                    "SELECT idx FROM results WHERE run_id = ? AND idx > ? ORDER BY idx LIMIT ?",
                    (int(run_id), last, int(chunk)),
                )
            ]
            if not part:
                break
            last = part[-1]
            inputs = self.inputs(run_id, part)
            frame = export_frame(
                inputs.reset_index(drop=True), self.results(run_id, part, vectors=False)
            )
            if labelled:  # each row's label as a number (importing the export maps it back)
                found = self.labels(run_id, part).set_index("row")["label"]
                values = pd.Series([found.get(r, np.nan) for r in part], dtype=float)
                if (values.dropna() % 1 == 0).all():  # 1/0 or whole grades: written as such
                    values = values.astype("Int64")
                if "label" in frame.columns:
                    frame["label"] = values.array
                else:
                    frame.insert(len(inputs.columns), "label", values.array)
            yield own_names(frame, names)  # the variant under the input's own name (model...)

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
