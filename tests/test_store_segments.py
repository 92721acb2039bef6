"""A run's columns read from its Parquet segments (relevancy/runs/segments.py) are the rows'
columns: the same values and types, kept current as rows are written, scored again or deleted,
made again when the files are gone, and left aside for a run whose columns Parquet cannot hold."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from relevancy.runs import RunStore
from relevancy.runs.segments import SEGMENT_ROWS
from relevancy.runs.store import scalar_columns
from relevancy.testing.synthetic import synthetic_inputs, synthetic_results

#: two segments: the first complete, the second partly filled
ROWS = SEGMENT_ROWS + 1_500


def _from_rows(store: RunStore, run: int, names: list[str]) -> pd.DataFrame:
    db = store._connect()
    try:
        return store._rows_columns(db, run, names)
    finally:
        db.close()


def _every_name(store: RunStore, run: int) -> list[str]:
    return list(dict.fromkeys([*scalar_columns(), *store.get_run(run).columns]))


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    path = tmp_path_factory.mktemp("segments") / "runs.sqlite3"
    store = RunStore(path)
    run = store.create_run("two segments", {}, synthetic_inputs(ROWS))
    for batch in synthetic_results(ROWS, batch=2000):
        store.append_results(run, batch)
    return store, run


def test_the_writer_makes_each_finished_segments_file_and_a_reader_reads_them(big):
    """Each segment whose input rows are all scored has its file when the writer is done (the
    second, 1,500 rows of 65,536, too: the run has no more); every column read from them is
    the rows' own, types included."""
    store, run = big
    folder = store.segments_folder(run)
    made = sorted(p.name.split("-v")[0] for p in folder.glob("seg-*.parquet"))
    assert made == ["seg-0", "seg-1"]
    names = _every_name(store, run)
    got = store.columns(run, names)
    pd.testing.assert_frame_equal(got, _from_rows(store, run, names))
    assert len(got) == ROWS and got["row"].is_monotonic_increasing


def test_a_row_scored_again_is_read_with_its_new_values(big):
    store, run = big
    before = {p.name for p in store.segments_folder(run).glob("seg-1-*.parquet")}
    row = SEGMENT_ROWS + 7
    old = store.result(run, row)
    store.append_results(run, [(row, dataclasses.replace(old, value=0.0123, mode="focus"))])
    got = store.columns(run, ["score", "mode", "variant"])
    assert got.loc[got["row"] == row, ["score", "mode"]].values.tolist() == [[0.0123, "focus"]]
    pd.testing.assert_frame_equal(got, _from_rows(store, run, ["score", "mode", "variant"]))
    after = {p.name for p in store.segments_folder(run).glob("seg-1-*.parquet")}
    assert after and after.isdisjoint(before)  # the old version's file is gone
    store.append_results(run, [(row, old)])


def test_files_that_are_gone_are_made_again(big):
    import shutil

    store, run = big
    shutil.rmtree(store.segments_folder(run))
    names = ["score", "reason", "kind", "created_at", "user_input"]
    pd.testing.assert_frame_equal(store.columns(run, names), _from_rows(store, run, names))


def test_filtered_reads_and_labels_come_from_the_rows(big):
    from relevancy.runs import RowQuery

    store, run = big
    low = store.columns(run, ["score"], query=RowQuery(below=0.3))
    assert (low["score"] < 0.3).all() and len(low) < ROWS
    store.set_label(run, 3, 1.0)
    labelled = store.columns(run, ["score", "label"])
    assert labelled.loc[labelled["row"] == 3, "label"].item() == 1.0


def test_an_unfinished_segment_is_made_by_its_first_reader(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_run("half", {}, synthetic_inputs(400))
    (first, *_) = list(synthetic_results(400, batch=200))
    store.append_results(run, first)  # rows 0-199 of 400: the segment is not finished
    assert not list(store.segments_folder(run).glob("seg-*.parquet"))
    got = store.columns(run, ["score", "variant"])
    assert len(got) == 200 and len(list(store.segments_folder(run).glob("seg-*.parquet"))) == 1


def test_a_run_whose_columns_parquet_cannot_hold_is_read_from_its_rows(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    frame = pd.DataFrame(
        {
            "user_input": ["q1", "q2", "q3"],
            "response": ["a1", "a2", "a3"],
            "mixed": [1, "one", 2.5],  # numbers and text in one column
        }
    )
    run = store.create_run("mixed", {}, frame)
    (batch,) = list(synthetic_results(3, batch=3))
    store.append_results(run, batch)
    got = store.columns(run, ["score", "mixed"])
    assert got["mixed"].tolist() == [1, "one", 2.5]
    assert (store.segments_folder(run) / "unfit.txt").exists()
    pd.testing.assert_frame_equal(got, _from_rows(store, run, ["score", "mixed"]))


def test_a_deleted_run_leaves_no_files(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_run("x", {}, synthetic_inputs(50))
    for batch in synthetic_results(50):
        store.append_results(run, batch)
    assert list(store.segments_folder(run).glob("seg-*.parquet"))
    store.delete(run)
    assert not store.segments_folder(run).exists()


def test_a_column_the_run_gains_is_read_from_segments_made_before_it(tmp_path):
    """A followed run gains the columns its source starts sending: a segment made before holds
    no such column, and is made again with it."""
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_followed_run("followed", {}, "phoenix://127.0.0.1:1/p")
    first = pd.DataFrame({"user_input": ["q0", "q1"], "response": ["a0", "a1"]})
    store.add_followed(run, first, keys=["k0", "k1"], times=[1.0, 2.0], read_to=now)
    (batch,) = list(synthetic_results(2, batch=2))
    store.append_results(run, batch)
    assert store.columns(run, ["score"])["score"].notna().all()  # its segment is made
    later = pd.DataFrame({"user_input": ["q2"], "response": ["a2"], "session": ["s9"]})
    store.add_followed(run, later, keys=["k2"], times=[3.0], read_to=now)
    got = store.columns(run, ["score", "session"])
    pd.testing.assert_frame_equal(got, _from_rows(store, run, ["score", "session"]))


def test_a_label_set_after_the_segments_were_made_is_read(tmp_path):
    """A run with a label column: its labels are read from the labels (a label set in the
    dashboard writes nothing to results, so a segment would keep the old one)."""
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_run("x", {}, synthetic_inputs(60, labelled_every=4))
    for batch in synthetic_results(60):
        store.append_results(run, batch)
    before = store.columns(run, ["score", "label"])
    row = int(before.loc[before["label"].notna(), "row"].iloc[0])
    store.set_label(run, row, 1.0 - before.loc[before["row"] == row, "label"].item())
    after = store.columns(run, ["score", "label"])
    assert (after["label"].fillna(-1) != before["label"].fillna(-1)).sum() == 1
    pd.testing.assert_frame_equal(after, _from_rows(store, run, ["score", "label"]))
    assert store.distinct(run, "label") == ["0.0", "1.0"]
    assert store.distinct(run, "kind") == ["evasive", "ok"]  # from the segments
    assert len(store.distinct(run, "created_at", limit=5)) == 5  # from the first rows
