"""A run's headline figures computed in the store (``RunStore.figures``) equal what pandas
computes from every row, NaN rows, incomplete rows and even and odd counts included."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from relevancy.runs import RunStore
from relevancy.testing.synthetic import synthetic_inputs, synthetic_results


@pytest.mark.parametrize("n", [1, 2, 37, 400])
def test_the_stores_figures_equal_the_ones_from_every_row(tmp_path, n):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_run("x", {}, synthetic_inputs(n))
    for batch in synthetic_results(n):
        changed = []
        for idx, r in batch:
            if idx % 7 == 3:  # a row whose generations all failed
                r = dataclasses.replace(r, value=math.nan, ragas_value=math.nan)
            if idx % 5 == 1:  # a row scored from fewer questions than asked
                failed = dataclasses.replace(r.questions[0], similarity=None, error="timeout")
                r = dataclasses.replace(r, questions=[failed, *r.questions[1:]])
            changed.append((idx, r))
        store.append_results(run, changed)
    frame = store.columns(run, ["score", "ragas_value", "questions_used", "strictness"])
    scores = frame["score"]
    got = store.figures(run, threshold=0.6)
    assert got.rows == n and got.scored == scores.notna().sum() and got.nan == scores.isna().sum()
    expected = {
        "mean": scores.mean(),
        "median": scores.median(),
        "below": (scores < 0.6).sum() / scores.notna().sum() if scores.notna().any() else np.nan,
        "ragas_mean": frame["ragas_value"].mean(),
    }
    for name, value in expected.items():
        assert getattr(got, name) == pytest.approx(value, nan_ok=True), name
    incomplete = scores.notna() & (frame["questions_used"] < frame["strictness"])
    assert got.incomplete == int(incomplete.sum())


def test_a_run_with_no_result_has_nan_figures(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_run("x", {}, pd.DataFrame({"user_input": ["q"], "response": ["a"]}))
    got = store.figures(run)
    assert (got.rows, got.scored, got.incomplete) == (0, 0, 0)
    assert math.isnan(got.mean) and math.isnan(got.median) and math.isnan(got.below)


def _totals_from_rows(path) -> list[tuple]:
    """What run_stats should hold, computed from every row of results."""
    import sqlite3

    from relevancy.runs.stats import _ADDS, STATS_KEYS

    keys = ", ".join(STATS_KEYS)
    sums = ", ".join(f"SUM({a.format(r='results')})" for a in _ADDS.values())
    with sqlite3.connect(path) as db:
        want = db.execute(
            f"SELECT run_id, {keys}, {sums} FROM results GROUP BY run_id, {keys} "
            f"ORDER BY run_id, {keys}"
        ).fetchall()
        have = db.execute(
            f"SELECT run_id, {keys}, {', '.join(_ADDS)} FROM run_stats WHERE rows > 0 "
            f"ORDER BY run_id, {keys}"
        ).fetchall()
    return want, have


def _same_totals(want: list[tuple], have: list[tuple]) -> None:
    """The same groups, and within each the same totals (sums of floats to 1e-9)."""
    keys = 1 + 5  # run_id and the five keys
    assert [w[:keys] for w in want] == [h[:keys] for h in have]
    assert np.allclose([w[keys:] for w in want], [h[keys:] for h in have], rtol=1e-9)


def test_a_runs_totals_follow_every_write_rescore_and_delete(tmp_path):
    """run_stats (kept by triggers) equals the totals of the rows, after rows written in
    batches by two runs, rows scored again with other values, and a run deleted; the listing
    and the cost read from it agree with the rows."""
    path = tmp_path / "runs.sqlite3"
    store = RunStore(path)
    runs = [store.create_run(f"r{k}", {}, synthetic_inputs(60, seed=k)) for k in range(3)]
    for k, run in enumerate(runs):
        for batch in synthetic_results(60, batch=25, seed=k):
            store.append_results(run, batch)
    again = []  # rows 5-14 of the first run scored again: other scores, modes and tokens
    for idx, r in next(synthetic_results(60, batch=60, seed=9))[5:15]:
        again.append((idx, dataclasses.replace(r, mode="focus", value=0.123 * (idx % 4))))
    store.append_results(runs[0], again)
    store.delete(runs[1])
    _same_totals(*_totals_from_rows(path))
    info = store.get_run(runs[0])
    frame = store.columns(runs[0], ["score", "ragas_value", "mode"])
    assert info.n_scored == 60 and info.mean == pytest.approx(frame["score"].mean())
    assert info.ragas_mean == pytest.approx(frame["ragas_value"].mean())
    assert info.modes == tuple(sorted(set(frame["mode"])))
    assert store.counts(runs[0], "mode") == frame["mode"].value_counts().to_dict()
    assert store.usage(runs[0])["rows"].sum() == 60
    assert [r.id for r in store.list_runs()] == [runs[2], runs[0]]


def test_a_store_without_totals_gains_them_from_its_rows(tmp_path):
    """A store whose run_stats is missing (made before schema 7, or its triggers lost) has it
    rebuilt from its rows on open."""
    import sqlite3

    path = tmp_path / "runs.sqlite3"
    store = RunStore(path)
    run = store.create_run("x", {}, synthetic_inputs(40))
    for batch in synthetic_results(40):
        store.append_results(run, batch)
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER results_stats_insert")
        db.execute("DELETE FROM run_stats")
    assert RunStore(path).get_run(run).n_scored == 40
    want, have = _totals_from_rows(path)
    _same_totals(want, have)
    assert len(have) > 0


def test_a_column_with_a_value_per_row_is_not_offered_as_a_split():
    """Distributions splits, and Compare compares the values of, the run's own columns with few
    values; a time or an id (a value per row) would make a group of each row."""
    from relevancy.dashboard.widgets.state import SPLIT_UP_TO
    from relevancy.paths import default_store_path

    from helpers import app, visit

    store = RunStore(default_store_path())
    n = 2 * (SPLIT_UP_TO + 10)
    run = store.create_run("x", {}, synthetic_inputs(n))  # kind: 2 values; created_at: n
    for batch in synthetic_results(n):
        store.append_results(run, batch)
    at = app(query={"run": str(run)})
    splits = visit(at, "2_Distributions.py").segmented_control(key="dist_split").options
    assert "kind" in splits and "created_at" not in splits
    columns = visit(at, "4_Compare.py").selectbox(key="cmp_column").options
    assert "kind" in columns and "created_at" not in columns


def test_a_page_changing_its_columns_leaves_the_cached_ones_alone():
    """Run columns are cached as the frame itself (not pickled): each read is a copy, so a
    page that changes its frame changes nobody else's."""
    from relevancy.dashboard.widgets.state import clear_run_caches, run_columns
    from relevancy.paths import default_store_path

    store = RunStore(default_store_path())
    run = store.create_run("x", {}, synthetic_inputs(50))
    for batch in synthetic_results(50):
        store.append_results(run, batch)
    clear_run_caches()
    names = ["score", "variant", "user_input"]
    first = run_columns(run, names)
    kept = first.copy(deep=True)
    first.loc[first.index[0], "score"] = 99.0
    first["variant"] = "changed"
    first["extra"] = 1
    again = run_columns(run, names)
    pd.testing.assert_frame_equal(again, kept)
    pd.testing.assert_frame_equal(again, store.columns(run, names))
