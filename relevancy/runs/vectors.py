"""The embeddings a run keeps: the points of the Embeddings page, and the vectors the chance level
is computed from."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from relevancy.runs.rows import blob_vector, marks

__all__ = ["VECTOR_CHUNK_ROWS", "VectorsMixin"]

#: rows whose vectors :meth:`VectorsMixin.vector_chunks` reads at a time (about 6 MiB of
#: float32 at 384 dimensions and three generated questions a row)
VECTOR_CHUNK_ROWS = 4096


class VectorsMixin:
    """The run store's vector readers (mixed into :class:`relevancy.runs.store.RunStore`)."""

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
            where = f" AND r.idx IN ({marks(len(rows))})"
            params += [int(r) for r in rows]
        origin = self._run(
            "SELECT r.idx, i.user_input, i.variant, r.score, r.noncommittal, v.vec FROM "
            "results r JOIN inputs i ON i.run_id = r.run_id AND i.idx = r.idx "
            "JOIN result_vectors v ON v.run_id = r.run_id AND v.idx = r.idx "
            f"WHERE r.run_id = ?{where} ORDER BY r.idx",
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
                points.append(
                    ("question", question, idx, -1, np.nan, 1.0, "(original question)", "original")
                )
                vectors.append(blob)
            for text, sim, vec in by_row.get(int(idx), []):
                points.append(
                    (
                        "generated",
                        text,
                        idx,
                        originals[question],
                        np.nan if score is None else score,
                        sim,
                        variant or "",
                        "yes" if flag else "no",
                    )
                )
                vectors.append(vec)
        table = pd.DataFrame(
            points,
            columns=[
                "kind",
                "text",
                "row",
                "parent",
                "score",
                "similarity",
                "variant",
                "noncommittal",
            ],
        )
        if not vectors:
            return table, np.zeros((0, 0), dtype=np.float32)
        return table, np.frombuffer(b"".join(vectors), dtype=np.float32).reshape(len(vectors), -1)

    def vector_chunks(
        self, run_id: int, chunk_rows: int = VECTOR_CHUNK_ROWS
    ) -> Iterator[np.ndarray]:
        """Every embedding a run keeps (each scored row's question, then its generated
        questions), ``chunk_rows`` rows' worth at a time, in row order: what a map of every
        row reads without holding a million rows' vectors (6 GB) at once."""
        db = self._connect()
        with contextlib.closing(db):
            (top,) = db.execute(
                "SELECT MAX(idx) FROM inputs WHERE run_id = ?", (int(run_id),)
            ).fetchone()
            for start in range(0, -1 if top is None else int(top) + 1, chunk_rows):
                span = (int(run_id), start, start + chunk_rows)
                blobs = [
                    b
                    for (b,) in db.execute(
                        "SELECT vec FROM result_vectors WHERE run_id = ? AND idx >= ? AND idx < ?",
                        span,
                    )
                ]
                blobs += [
                    b
                    for (b,) in db.execute(
                        "SELECT vec FROM questions WHERE run_id = ? AND idx >= ? AND idx < ? "
                        "AND vec IS NOT NULL",
                        span,
                    )
                ]
                if blobs:
                    yield np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)

    # vectors -----------------------------------------------------------------------------
    def vectors(
        self, run_id: int, rows: Sequence[int] | None = None
    ) -> tuple[pd.DataFrame, np.ndarray, list[np.ndarray]]:
        """The embeddings of scored rows (all, or ``rows``) that have them: a table (``row``,
        ``user_input``, ``embeddings``), the user questions' vectors (one row each) and each
        row's generated-question vectors (for :func:`relevancy.analysis.chance.chance_level`)."""
        where, params = "", [int(run_id)]
        if rows is not None:
            where = f" AND r.idx IN ({marks(len(rows))})"
            params += [int(r) for r in rows]
        found = self._run(
            "SELECT r.idx, i.user_input, r.embeddings, v.vec FROM results r JOIN inputs i ON "
            "i.run_id = r.run_id AND i.idx = r.idx JOIN result_vectors v ON "
            f"v.run_id = r.run_id AND v.idx = r.idx WHERE r.run_id = ?{where} ORDER BY r.idx",
            params,
        )
        table = pd.DataFrame([f[:3] for f in found], columns=["row", "user_input", "embeddings"])
        if not found:
            return table, np.zeros((0, 0), dtype=np.float32), []
        questions = self._questions(run_id, table["row"].tolist(), vectors=True)
        user = np.stack([blob_vector(f[3]) for f in found])
        generated = []
        for idx in table["row"]:
            vecs = [v for _, v in questions.get(int(idx), []) if v is not None]
            generated.append(np.stack(vecs) if vecs else np.zeros((0, user.shape[1]), np.float32))
        return table, user, generated
