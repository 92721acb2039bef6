"""A store written by the release before schema 7 (``tests/data/store_v6.sqlite3``, made by
``tests/data/make_store_v6.py`` with that release's CLI and the embedded models) opens with
today's code: every row, question, vector and label kept, each result's vector moved out of
``results`` into ``result_vectors`` once, even when two processes open it at once."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relevancy.runs import RunStore
from relevancy.runs.schema import SCHEMA_VERSION

V6 = Path(__file__).parent / "data" / "store_v6.sqlite3"


def _copy(tmp_path: Path) -> Path:
    path = tmp_path / "runs.sqlite3"
    shutil.copy(V6, path)
    return path


def _old(path: Path) -> dict:
    with sqlite3.connect(path) as db:
        cols = [r[1] for r in db.execute("PRAGMA table_info(results)")]
        assert "ui_vec" in cols, "the sample is not a store from before schema 7"
        return {
            "results": {
                r[1]: dict(zip(cols, r)) for r in db.execute("SELECT * FROM results ORDER BY idx")
            },
            "questions": db.execute("SELECT * FROM questions ORDER BY run_id, idx, k").fetchall(),
            "inputs": db.execute("SELECT * FROM inputs ORDER BY run_id, idx").fetchall(),
            "labels": db.execute("SELECT * FROM labels ORDER BY run_id, idx, source").fetchall(),
            "runs": db.execute("SELECT * FROM runs").fetchall(),
        }


def test_a_store_of_the_previous_release_keeps_every_row_and_moves_its_vectors(tmp_path):
    path = _copy(tmp_path)
    old = _old(path)
    store = RunStore(path)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == (
            SCHEMA_VERSION
        )
        cols = [r[1] for r in db.execute("PRAGMA table_info(results)")]
        assert "ui_vec" not in cols
        for idx, row in old["results"].items():  # every other value of every row as it was
            now = dict(
                zip(cols, db.execute("SELECT * FROM results WHERE idx = ?", (idx,)).fetchone())
            )
            assert now == {k: v for k, v in row.items() if k != "ui_vec"}
        moved = dict(db.execute("SELECT idx, vec FROM result_vectors WHERE run_id = 1"))
        assert moved == {idx: row["ui_vec"] for idx, row in old["results"].items()}
        assert (
            db.execute("SELECT * FROM questions ORDER BY run_id, idx, k").fetchall()
            == old["questions"]
        )
        assert db.execute("SELECT * FROM inputs ORDER BY run_id, idx").fetchall() == old["inputs"]
        assert (
            db.execute("SELECT * FROM labels ORDER BY run_id, idx, source").fetchall()
            == old["labels"]
        )
    (info,) = store.list_runs()
    assert (info.name, info.n_rows, info.n_scored) == ("v6 run", 6, 6)
    for idx, row in old["results"].items():
        back = store.result(1, idx)
        assert back.value == pytest.approx(row["score"])
        assert np.array_equal(
            back.user_input_embedding, np.frombuffer(row["ui_vec"], dtype=np.float32)
        )
        assert back.question_embeddings.shape == (len(back.questions), 384)
    table, vectors = store.points(1)
    assert len(table) and vectors.shape == (len(table), 384)
    assert store.labels(1).set_index("row")["label"].to_dict()[3] == 1.0  # the person's label
    # a second open changes nothing, and a new result is stored with its vector
    assert RunStore(path).list_runs() == store.list_runs()
    store.append_results(1, [(0, store.result(1, 0))])
    assert np.array_equal(
        store.result(1, 0).user_input_embedding,
        np.frombuffer(old["results"][0]["ui_vec"], dtype=np.float32),
    )


def test_two_processes_opening_an_old_store_at_once_move_its_vectors_once(tmp_path):
    path = _copy(tmp_path)
    code = (
        "import sys; from relevancy.runs import RunStore; "
        "print(RunStore(sys.argv[1]).get_run(1).n_scored)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0] and outs == ["6", "6"]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM result_vectors").fetchone()[0] == 6
        assert "ui_vec" not in [r[1] for r in db.execute("PRAGMA table_info(results)")]


def test_a_move_that_fails_leaves_the_old_store_whole(tmp_path, monkeypatch):
    """The move is one transaction: when it fails half-way (here, the column cannot be dropped
    nor renamed), the store is as it was, and the next open moves the vectors."""
    path = _copy(tmp_path)
    old = _old(path)
    from relevancy.runs import schema

    real = schema.move_vectors

    def failing(db):
        db.execute(
            "CREATE TEMP TRIGGER stop AFTER INSERT ON result_vectors "
            "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
        real(db)

    monkeypatch.setattr(schema, "move_vectors", failing)
    with pytest.raises(sqlite3.DatabaseError, match="disk full"):
        RunStore(path)
    assert _old(path) == old  # still schema 6, every vector in results
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM result_vectors").fetchone()[0] == 0
    monkeypatch.setattr(schema, "move_vectors", real)
    assert RunStore(path).get_run(1).n_scored == 6
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM result_vectors").fetchone()[0] == 6
