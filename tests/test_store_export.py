"""A whole run's export streams: chunks of rows read after the last one (never a list of every
row), the same table as the rows read whole, written to CSV, JSON Lines and Parquet a chunk at a
time. (Its memory at 10,000, 100,000 and 1,000,000 rows is measured in bench.dashboard_scale.)"""

from __future__ import annotations

import pandas as pd
import pytest

from relevancy.runs import RunStore
from relevancy.runs.rows import export_frame
from relevancy.testing.synthetic import synthetic_inputs, synthetic_results


@pytest.fixture()
def run_store(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_run("x", {}, synthetic_inputs(23, labelled_every=4))
    for batch in synthetic_results(23, batch=6):
        store.append_results(run, [b for b in batch if b[0] != 11])  # row 11 not scored
    return store, run


def test_an_export_comes_in_chunks_after_the_last_row_and_equals_the_whole(run_store):
    store, run = run_store
    traced: list[str] = []
    connect = store._connect

    def traced_connect():
        db = connect()
        db.set_trace_callback(traced.append)
        return db

    store._connect = traced_connect
    chunks = list(store.iter_export(run, chunk=5))
    store._connect = connect
    assert [len(c) for c in chunks] == [5, 5, 5, 5, 2]
    listing = [q for q in traced if q.startswith("SELECT idx FROM results")]
    assert listing and all("LIMIT" in q for q in listing)  # never every row's number at once
    scored = [r for r in range(23) if r != 11]
    whole = export_frame(
        store.inputs(run).loc[scored].reset_index(drop=True), store.results(run, vectors=False)
    )
    got = pd.concat(chunks, ignore_index=True)
    assert got.drop(columns=["label"]).equals(whole.drop(columns=["label"], errors="ignore"))
    assert got["label"].notna().sum() == len([r for r in scored if r % 4 == 3])


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_every_format_holds_every_scored_row(run_store, tmp_path, fmt):
    store, run = run_store
    path = store.export(run, tmp_path / f"run.{fmt}")
    read = {
        "csv": pd.read_csv,
        "jsonl": lambda p: pd.read_json(p, lines=True),
        "parquet": pd.read_parquet,
    }[fmt](path)
    assert len(read) == 22 and not read["response"].str.startswith("Synthetic answer 11 ").any()
    assert (
        read["score"].round(6).tolist() == store.columns(run, ["score"])["score"].round(6).tolist()
    )
