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
