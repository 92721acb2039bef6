"""The chance level: what unrelated pairs of a run score with its embedder, from the vectors the
run already has (no LLM call), in the store, the dashboard's notes and the CLI's summary."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pandas as pd
import pytest

import relevancy.analysis.chance
from relevancy.analysis.chance import chance_level
from relevancy.core.result import QuestionScore, RelevancyResult
from relevancy.dashboard.views.reference import add_band, chance_summary, row_notes, run_chance
from relevancy.report.charts import score_histogram
from relevancy.runs import RunStore, demo_results, import_demo


def test_the_docstring_example_runs():
    failed, tried = doctest.testmod(relevancy.analysis.chance)
    assert tried and not failed


def _random_run(n: int = 30, d: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    user = rng.normal(size=(n, d))
    questions = [rng.normal(size=(int(rng.integers(1, 4)), d)) for _ in range(n)]
    keys = [f"q{i // 3}" for i in range(n)]  # three rows per question
    return user, questions, keys


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_every_pair_of_rows_with_different_questions_is_scored_as_the_metric_would():
    user, questions, keys = _random_run()
    level = chance_level(user, questions, keys, embedder="org/some-embedder")
    brute = [
        np.mean([_cos(q, user[i]) for q in questions[j]])
        for i in range(len(keys))
        for j in range(len(keys))
        if keys[i] != keys[j]
    ]
    assert level.pairs == len(brute) == 30 * 27
    assert level.median == pytest.approx(np.median(brute))
    assert level.p95 == pytest.approx(np.quantile(brute, 0.95))
    assert level.p5 == pytest.approx(np.quantile(brute, 0.05))
    assert level.mean == pytest.approx(np.mean(brute))
    assert level.short_name == "some-embedder"
    assert level.describe().startswith(f"unrelated pairs score {level.median:.2f} (p95 ")


def test_single_question_figures_leave_out_rows_of_the_same_question():
    # rows of one question share its vector, and their generated questions point near it: the
    # pairs of one question score high, so counting them would move both figures
    rng = np.random.default_rng(1)
    n, d = 30, 8
    keys = [f"q{i // 3}" for i in range(n)]
    base = {k: rng.normal(size=d) for k in dict.fromkeys(keys)}
    user = np.stack([base[k] + 0.05 * rng.normal(size=d) for k in keys])
    questions = [base[k] + 0.3 * rng.normal(size=(int(rng.integers(1, 4)), d)) for k in keys]
    level = chance_level(user, questions, keys)
    unrelated = [
        _cos(q, user[i])
        for i in range(n)
        for j in range(n)
        if keys[i] != keys[j]
        for q in questions[j]
    ]
    everything = [_cos(q, user[i]) for i in range(n) for j in range(n) for q in questions[j]]
    assert level.cosine_p95 == pytest.approx(np.quantile(unrelated, 0.95))
    assert level.negative_share == pytest.approx(np.mean(np.array(unrelated) < 0))
    # the test can tell the two apart
    assert np.quantile(everything, 0.95) > np.quantile(unrelated, 0.95) + 0.05
    assert np.mean(np.array(everything) < 0) < np.mean(np.array(unrelated) < 0) - 0.01


def test_a_large_run_is_sampled_and_a_run_of_one_question_has_no_chance_level():
    user, questions, keys = _random_run(n=60)
    assert chance_level(user, questions, keys, max_rows=20).rows == 20
    assert chance_level(user, questions, ["same"] * 60) is None
    empty = [np.zeros((0, 8))] * 60
    assert chance_level(user, empty, keys) is None


def test_on_the_demo_a_row_against_itself_is_its_ragas_value():
    """The chance score of a row paired with its own questions is exactly its Ragas value (the
    formula holds); paired with other rows' questions it falls to MiniLM's floor."""
    results = demo_results()
    user = np.array([r.user_input_embedding for r in results])
    questions = [np.array(r.question_embeddings) for r in results]
    for r, u, q in zip(results, user, questions):
        if r.noncommittal:
            continue
        own = chance_level(np.stack([u, u]), [q, q], ["a", "b"])  # the row against itself
        assert own.median == pytest.approx(r.ragas_value, abs=1e-5)  # stored to 5 decimals
    level = chance_level(user, questions, [r.user_input for r in results], embedder="MiniLM")
    assert level.pairs == 48 * 46  # each question is asked twice (two variants)
    assert -0.05 < level.median < 0.15 < level.p95 < 0.3
    answered = [r.ragas_value for r in results if not r.noncommittal]
    assert np.median(answered) > level.p95  # most answers sit well above unrelated pairs


def _store_with_demo(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    return store, import_demo(store)


def test_the_store_gives_the_vectors_and_the_dashboard_the_same_level(tmp_path):
    store, run = _store_with_demo(tmp_path)
    table, user, generated = store.vectors(run)
    results = demo_results()
    assert len(table) == 48 and user.shape == (48, 384)
    assert np.allclose(generated[5], np.array(results[5].question_embeddings), atol=1e-6)
    levels = run_chance(store, run)
    assert list(levels) == [results[0].embeddings]
    level = levels[results[0].embeddings]
    direct = chance_level(
        np.array([r.user_input_embedding for r in results]),
        [np.array(r.question_embeddings) for r in results],
        [r.user_input for r in results],
    )
    assert level.median == pytest.approx(direct.median, abs=1e-6)
    summary = chance_summary(
        level, [r.ragas_value for r in results], [r.noncommittal for r in results]
    )
    below = sum(r.ragas_value < level.p95 for r in results if not r.noncommittal)
    assert summary["below"] == below and summary["answered"] == 42
    # the band on a chart: a shaded rectangle from p5 to p95 and a line at the median
    fig = add_band(score_histogram(pd.DataFrame({"score": [0.2, 0.5]}), threshold=0.5), level)
    rect = [s for s in fig.layout.shapes if s.type == "rect"]
    left = fig.layout.xaxis.range[0]  # cut to the axis (-0.02 here): its note stays visible
    assert [rect[0].x0, rect[0].x1] == pytest.approx([max(level.p5, left), level.p95])
    assert any("unrelated pairs" in a.text for a in fig.layout.annotations)


def _row(sims: list[float], *, noncommittal: bool = False) -> RelevancyResult:
    mean = float(np.mean(sims))
    return RelevancyResult(
        user_input="q",
        response="a",
        value=0.0 if noncommittal else mean,
        ragas_value=0.0 if noncommittal else mean,
        questions=[QuestionScore(f"g{i}?", s, None) for i, s in enumerate(sims)],
        noncommittal=noncommittal,
        embeddings="emb",
    )


def test_drill_down_notes_say_where_a_row_sits_and_warn_at_chance_and_on_negative_cosines():
    user, questions, keys = _random_run()
    level = chance_level(user, questions, keys, embedder="emb")
    high = row_notes(_row([0.8, 0.7, 0.9]), level)
    assert [s for s, _ in high] == ["info"]
    assert "this answer scores 0.80" in high[0][1] and "above it" in high[0][1]
    low = row_notes(_row([level.p95 - 0.05] * 3), level)
    assert [s for s, _ in low] == ["info", "warning"] and "At chance level" in low[1][1]
    negative = row_notes(_row([0.6, -0.04, 0.5]), level)
    assert negative[-1][0] == "warning" and "Negative cosine" in negative[-1][1]
    assert "-0.040" in negative[-1][1]
    # a noncommittal row is zeroed by rule: no chance warning for its 0
    evasive = row_notes(_row([0.3, 0.2, 0.1], noncommittal=True), level)
    assert [s for s, _ in evasive] == ["info"] and "this answer" not in evasive[0][1]
    # another embedder's level says nothing about this row
    assert row_notes(_row([0.1, 0.1, 0.1]), chance_level(user, questions, keys, embedder="x")) == []
    assert math.isfinite(level.negative_share)


def test_the_pairs_are_every_unrelated_cell_of_the_full_matrix_in_order():
    # computed a block of rows at a time (memory): the same cells, in the same order, as the
    # whole matrix masked at once, for a row count that is not a multiple of the block
    rng = np.random.default_rng(3)
    n = 2 * relevancy.analysis.chance._BLOCK_ROWS + 37
    u = rng.normal(size=(n, 8)).astype(np.float32)
    means = rng.normal(size=(n, 8)).astype(np.float32)
    key = rng.integers(0, n // 3, size=n)
    whole = (u @ means.T)[key[:, None] != key[None, :]]
    got = relevancy.analysis.chance._unrelated_scores(u, means, key)
    assert got.shape == whole.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, whole, rtol=1e-5, atol=1e-6)
