"""Human labels beside scores: label parsing, AUROC, Spearman, the best threshold, pairwise
accuracy, bootstrap by question, disagreements; the store's labels table and exports; and the
figures the Agreement view shows on HaluQuestQA (../shared, when present)."""

from __future__ import annotations

import doctest
import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import relevancy.analysis.agreement
import relevancy.core.stats
from relevancy import InputError, RelevancyResult, read_table
from relevancy.analysis.agreement import (
    BINNED_BINS,
    BINNED_ROWS,
    BOOT_BINS,
    BOOT_ROWS,
    agreement,
    auroc,
    best_threshold,
    disagreements,
    label_kind,
    pairwise_accuracy,
    pairwise_wins,
    parse_labels,
    positive_labels,
    rankdata,
    spearman,
)
from relevancy.core.result import QuestionScore
from relevancy.core.stats import group_bootstrap, group_weights
from relevancy.dashboard.views import agreement as agreement_view
from relevancy.dashboard.views.agreement_chart import score_label_spec
from relevancy.runs import RunStore, demo_inputs, import_demo

ROOT = Path(__file__).resolve().parents[1]
HALU = ROOT.parent / "shared" / "data" / "haluquestqa"


@pytest.mark.parametrize(
    "module", [relevancy.analysis.agreement, relevancy.analysis._binned, relevancy.core.stats]
)
def test_the_docstring_examples_run(module):
    failed, tried = doctest.testmod(module)
    assert tried and not failed


# --- labels -------------------------------------------------------------------------------
def test_labels_are_read_from_words_and_numbers():
    words = ["yes", "No", " TRUE ", "false", "relevant", "irrelevant", "good", "bad", "1", "0"]
    assert parse_labels(words).tolist() == [1, 0] * 5
    assert parse_labels([0.75, "0.5", 3, "", None, "nan", "NA"]).tolist()[:3] == [0.75, 0.5, 3]
    assert np.isnan(parse_labels(["", None, "nan", "NA"])).all()


def test_a_value_that_is_no_label_is_one_line_quoting_it():
    with pytest.raises(InputError) as exc:
        parse_labels(["yes", "no", "maybe"], column="rating", start=10)
    text = str(exc.value)
    assert "\n" not in text
    assert text.startswith("column 'rating', row 13: 'maybe' is not a label")
    assert "yes/no" in text


def test_label_kinds_and_which_labels_are_good():
    assert label_kind([1, 0, np.nan]) == "binary"
    assert label_kind([1, 1]) == "binary"
    assert label_kind([4, 5, 5]) == "binary"
    assert label_kind([1, 2, 3, 4]) == "graded"
    assert label_kind([np.nan]) == "none"
    assert positive_labels([4, 5, np.nan]).tolist()[:2] == [0, 1]  # the higher of two values
    assert positive_labels([1, 2, 3, 4]).tolist() == [0, 0, 1, 1]  # graded: middle of 1-4
    assert positive_labels([1, 2, 3, 4], cut=4).tolist() == [0, 0, 0, 1]


# --- the figures, against brute force and scipy -------------------------------------------
def _data(n: int = 60, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n).astype(float)
    scores = np.round(0.3 * labels + rng.normal(0.5, 0.2, n), 1)  # rounded: many ties
    return scores, labels


def test_auroc_is_the_share_of_good_over_bad_pairs_ties_one_half():
    s, y = _data()
    pos, neg = s[y == 1], s[y == 0]
    wins = [(1.0 if p > q else 0.5 if p == q else 0.0) for p in pos for q in neg]
    assert auroc(s, y) == pytest.approx(np.mean(wins), abs=1e-12)
    assert math.isnan(auroc(s, np.ones_like(y)))


def test_spearman_and_ranks_equal_scipy():
    s, _ = _data()
    rng = np.random.default_rng(2)
    graded = rng.integers(1, 5, s.size).astype(float)
    assert rankdata(s).tolist() == sps.rankdata(s).tolist()
    assert spearman(s, graded) == pytest.approx(sps.spearmanr(s, graded).statistic, abs=1e-12)


def test_best_threshold_maximises_recall_minus_false_positive_rate():
    s, y = _data()
    t, precision, recall = best_threshold(s, y)
    best = -1.0
    for c in np.unique(s):  # every possible cut, by brute force
        called = s >= c
        best = max(best, called[y == 1].mean() - called[y == 0].mean())
    called = s >= t
    assert called[y == 1].mean() - called[y == 0].mean() == pytest.approx(best)
    assert precision == pytest.approx(y[called].mean())
    assert recall == pytest.approx(called[y == 1].mean())
    assert not np.isclose(s, t).any()  # halfway between two scores


def test_pairwise_accuracy_counts_ties_and_missing_scores_one_half():
    better = [0.9, 0.2, 0.5, math.nan, 0.7, 0.6]
    worse = [0.1, 0.4, 0.5, 0.3, math.nan, 0.2]
    assert pairwise_wins(better, worse).tolist() == [1, 0, 0.5, 0.5, 0.5, 1]
    assert pairwise_accuracy(better, worse, n_boot=0).value == pytest.approx(3.5 / 6)
    assert math.isnan(pairwise_accuracy([], []).value)


def test_pairwise_accuracy_resamples_whole_questions():
    rng = np.random.default_rng(4)
    better, worse = np.round(rng.random(30), 1), np.round(rng.random(30), 1)
    groups = [i // 3 for i in range(30)]  # three pairs per question
    got = pairwise_accuracy(better, worse, groups=groups, n_boot=300, seed=2)
    wins = [1.0 if b > w else 0.5 if b == w else 0.0 for b, w in zip(better, worse)]
    low, high = group_bootstrap(
        lambda i: [np.mean(np.asarray(wins)[i])], groups, n_boot=300, seed=2
    )
    assert got.value == pytest.approx(np.mean(wins))
    assert (got.low, got.high) == (pytest.approx(low[0]), pytest.approx(high[0]))
    alone = pairwise_accuracy(better, worse, n_boot=300, seed=2)  # every pair its own group
    assert (alone.low, alone.high) != (got.low, got.high)


def test_group_bootstrap_moves_whole_groups_and_repeats_with_its_seed():
    groups = ["a", "a", "b", "c", "c", "c"]
    seen: list[list[int]] = []

    def record(idx: np.ndarray) -> list[float]:
        seen.append(sorted(idx.tolist()))
        return [float(len(idx))]

    low, high = group_bootstrap(record, groups, n_boot=50, seed=3)
    whole = {"a": [0, 1], "b": [2], "c": [3, 4, 5]}
    for idx in seen:
        for members in whole.values():  # a group is in a draw whole, as often as drawn
            counts = {i: idx.count(i) for i in members}
            assert len(set(counts.values())) == 1
    again: list[list[int]] = []
    group_bootstrap(lambda i: again.append(sorted(i.tolist())) or [0.0], groups, n_boot=50, seed=3)
    assert again == seen
    assert 2 <= low[0] <= high[0] <= 9


def test_group_weights_are_the_draws_of_group_bootstrap():
    groups = ["a", "a", "b", "c", "c", "c", "d"]
    drawn: list[np.ndarray] = []
    group_bootstrap(
        lambda i: drawn.append(np.bincount(i, minlength=7)) or [0.0], groups, n_boot=57, seed=5
    )
    for chunk in (1, 10, 100):
        weights = np.concatenate(list(group_weights(groups, n_boot=57, seed=5, chunk=chunk)))
        assert weights.shape == (57, 7)
        np.testing.assert_array_equal(weights, np.asarray(drawn, dtype=float))


def _agreement_by_resampling(s, y, groups, *, n_boot, seed):
    """The intervals as group_bootstrap gives them, the figures recomputed on each resample's
    rows (what agreement() did before it computed resamples as weights)."""
    kind = label_kind(y)
    cut = relevancy.analysis.agreement.default_cut(y) if kind == "graded" else None
    good = positive_labels(y, cut)
    t = best_threshold(s, good)[0]

    def figures(idx):
        si, yi, gi = s[idx], y[idx], good[idx]
        called, ok = si >= t, gi == 1
        hits = int((called & ok).sum())
        return [
            auroc(si, gi),
            spearman(si, yi) if kind == "graded" else math.nan,
            best_threshold(si, gi)[0],
            hits / called.sum() if called.sum() else math.nan,
            hits / ok.sum() if ok.sum() else math.nan,
        ]

    return group_bootstrap(figures, groups, n_boot=n_boot, seed=seed)


@pytest.mark.parametrize("bins", [0, 10**6])
@pytest.mark.parametrize("graded", [False, True])
def test_agreement_intervals_equal_resampling_the_rows(graded, bins):
    """The weighted, vectorised bootstrap gives the intervals of resampling the rows (the same
    draws): scores with ties, uneven groups, resamples with one class only. So do the cells of
    many labelled rows (``bins``) when every score has a bin of its own: they lose nothing."""
    rng = np.random.default_rng(11)
    for trial in range(8):
        n = int(rng.integers(3, 50))
        s = np.round(rng.random(n), 1 + trial % 2)
        y = rng.integers(1, 6, n).astype(float) if graded else (rng.random(n) < 0.3) * 1.0
        if label_kind(y) == "none":
            continue
        groups = rng.integers(0, max(1, n // 3), n).tolist()
        a = agreement(s, y, groups=groups, n_boot=150, seed=trial, bins=bins)
        assert a.bins == bins
        low, high = _agreement_by_resampling(s, y, groups, n_boot=150, seed=trial)
        names = ("auroc", "spearman", "threshold", "precision", "recall")
        got_low = [getattr(a, k).low for k in names]
        got_high = [getattr(a, k).high for k in names]
        np.testing.assert_allclose(got_low, low, rtol=0, atol=1e-12, equal_nan=True)
        np.testing.assert_allclose(got_high, high, rtol=0, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("labels", ["binary", "rating", "continuous"])
def test_above_boot_rows_the_resamples_see_score_bins_and_the_intervals_barely_move(labels):
    """Past BOOT_ROWS labelled rows a resample is computed on BOOT_BINS score bins (a million
    rows: 11 s -> 2.5 s binary, 28 s -> 3 s graded). The point figures are unchanged, precision
    and recall exact (the threshold is a bin edge), AUROC within 1e-5 and Spearman within 1e-5
    (5e-4 for labels in LABEL_BINS bins) of every score apart. The threshold's bounds move
    within the bootstrap's own noise: its argmax jumps when ties change, and the exact bounds
    move up to 0.015 from one seed to the next on these rows."""
    rng = np.random.default_rng(5)
    n = BOOT_ROWS + 5000
    s = rng.random(n)
    y = {
        "binary": lambda: (rng.random(n) < s) * 1.0,
        "rating": lambda: np.clip(np.round(s * 4 + rng.normal(0, 1, n)), 0, 4),
        "continuous": lambda: s + rng.normal(0, 0.3, n),  # more values than LABEL_BINS
    }[labels]()
    groups = (np.arange(n) // 3).tolist()
    binned = agreement(s, y, groups=groups)
    exact = agreement(s, y, groups=groups, bins=0)
    assert (binned.bins, binned.n_boot, exact.bins, exact.n_boot) == (BOOT_BINS, 200, 0, 200)
    for name in ("auroc", "spearman", "threshold", "precision", "recall"):
        a, b = getattr(binned, name), getattr(exact, name)
        assert a.value == b.value or (math.isnan(a.value) and math.isnan(b.value))
        close = {
            "threshold": 0.02,
            "precision": 1e-12,
            "recall": 1e-12,
            "spearman": 5e-4 if labels == "continuous" else 1e-5,
        }.get(name, 1e-5)
        np.testing.assert_allclose([a.low, a.high], [b.low, b.high], rtol=0, atol=close)
    assert binned.threshold.low < binned.threshold.value < binned.threshold.high


@pytest.mark.parametrize("labels", ["binary", "rating"])
def test_between_binned_rows_and_boot_rows_2000_resamples_see_score_bins(labels):
    """From BINNED_ROWS to BOOT_ROWS labelled rows the 2,000 resamples see BINNED_BINS score
    bins (10,000 rows: 0.6 -> 0.14 s): the point figures unchanged, precision and recall exact,
    AUROC and Spearman within 1e-4 of every score apart, the threshold within its noise."""
    rng = np.random.default_rng(8)
    n = BINNED_ROWS + 2500
    s = rng.random(n)
    y = (
        (rng.random(n) < s) * 1.0
        if labels == "binary"
        else np.clip(np.round(s * 4 + rng.normal(0, 1, n)), 0, 4)
    )
    groups = (np.arange(n) // 3).tolist()
    binned = agreement(s, y, groups=groups)
    exact = agreement(s, y, groups=groups, bins=0)
    assert (binned.bins, binned.n_boot, exact.n_boot) == (BINNED_BINS, 2000, 2000)
    assert agreement(s[:BINNED_ROWS], y[:BINNED_ROWS], n_boot=10).bins == 0  # up to: every score
    for name in ("auroc", "spearman", "threshold", "precision", "recall"):
        a, b = getattr(binned, name), getattr(exact, name)
        assert a.value == b.value or (math.isnan(a.value) and math.isnan(b.value))
        close = {"threshold": 0.01, "precision": 1e-12, "recall": 1e-12}.get(name, 1e-4)
        np.testing.assert_allclose([a.low, a.high], [b.low, b.high], rtol=0, atol=close)


def test_binned_precision_and_recall_are_exact_when_the_threshold_is_a_tied_score():
    """Ten answers tied at 0.1 and the best threshold at 0.1 itself: the float mean of the tie
    (a little under 0.1) must not put its bin below the threshold (review of Dec 7)."""
    s = np.r_[np.full(10, 0.1), np.linspace(0.2, 0.9, 30)]
    y = np.r_[np.ones(10), np.zeros(30)]
    y[0], y[15] = 0, 1
    binned = agreement(s, y, groups=list(range(40)), bins=4096, n_boot=300)
    exact = agreement(s, y, groups=list(range(40)), bins=0, n_boot=300)
    assert binned.threshold.value == 0.1
    for name in ("precision", "recall"):
        assert getattr(binned, name) == getattr(exact, name)


def test_group_codes_tell_groups_apart_as_dict_keys_do():
    from relevancy.core.stats import group_codes

    nan = float("nan")
    assert group_codes(["b", "a", "b"])[0].tolist() == [0, 1, 0]
    assert group_codes([1, 1.0, True, 2])[0].tolist() == [0, 0, 0, 1]
    # missing values: each its own group, as before (pandas alone would make them one)
    assert group_codes(["a", nan, None, nan, "a"])[0].tolist() == [0, 1, 2, 1, 0]
    assert group_codes([None, np.nan, "a"])[1] == 3


def test_score_bins_keep_ties_together_and_the_threshold_on_an_edge():
    from relevancy.analysis._binned import rank_bins

    x = np.repeat(np.arange(50) / 50, np.arange(1, 51))  # runs of ties of every length
    bins, mean = rank_bins(x, 16, edge=0.5)
    for value in np.unique(x):
        assert np.unique(bins[x == value]).size == 1  # a run of ties is in one bin
    assert bins[x < 0.5].max() < bins[x >= 0.5].min()  # nothing on both sides of the edge
    assert np.all(np.diff(mean) > 0) and mean.size == bins.max() + 1
    assert np.bincount(bins).max() <= 2 * x.size / 16 + 50  # about equal bins, ties aside


def test_agreement_binary_graded_and_missing():
    s, y = _data()
    groups = [f"q{i // 2}" for i in range(s.size)]
    a = agreement(s, y, groups=groups, n_boot=300)
    assert a.kind == "binary" and a.rows == s.size and a.questions == s.size // 2
    assert a.auroc.value == pytest.approx(auroc(s, y))
    assert a.auroc.low < a.auroc.value < a.auroc.high
    assert math.isnan(a.spearman.value)
    assert a.threshold.low <= a.threshold.high and 0 <= a.precision.low <= a.precision.high <= 1
    # NaN scores and rows without a label are left out, and said
    s2, y2 = s.copy(), y.copy()
    s2[0], y2[1] = np.nan, np.nan
    b = agreement(s2, y2, n_boot=0)
    assert b.rows == s.size - 2 and b.labelled == s.size - 1
    assert b.notes == ["1 labelled rows have no score (NaN): left out"]
    assert math.isnan(b.auroc.low)
    # graded labels: Spearman, and AUROC on label >= the middle of the range
    graded = np.clip(np.round(y * 3 + s * 2), 1, 5)
    c = agreement(s, graded, n_boot=0)
    assert c.kind == "graded" and c.cut == 3.0 and c.headline[0] == "Spearman"
    assert c.spearman.value == pytest.approx(spearman(s, graded))
    assert c.auroc.value == pytest.approx(auroc(s, graded >= 3))
    words = ["yes" if v else "no" for v in y]  # words or numbers: the same labels
    assert agreement(s, words, n_boot=0).auroc.value == a.auroc.value


def test_disagreements_are_the_wrong_side_of_the_threshold_furthest_first():
    s = np.array([0.9, 0.2, 0.6, 0.7, 0.1, 0.55])
    y = np.array([0, 1, 1, 0, 0, 1])
    found = disagreements(s, y, threshold=0.5)
    assert found["position"].tolist() == [0, 3, 1]
    assert found["kind"].tolist() == ["high score, bad label"] * 2 + ["low score, good label"]
    assert found["gap"].tolist() == pytest.approx([0.4, 0.2, 0.3])


def test_a_score_at_the_threshold_counts_as_high():
    # the rule of every figure at a threshold: a score at or above it calls the answer good
    s = np.array([0.5, 0.5, 0.49, 0.51, 0.5, 0.2, 0.8])
    y = np.array([0, 1, 1, 0, 0, 1, 1])
    found = disagreements(s, y, threshold=0.5, limit=None)
    wrong = [i for i in range(len(s)) if (s[i] >= 0.5) != bool(y[i])]  # by hand
    assert sorted(found["position"]) == wrong == [0, 2, 3, 4, 5]
    kinds = dict(zip(found["position"], found["kind"]))
    assert kinds[0] == kinds[4] == "high score, bad label" and kinds[2] == "low score, good label"
    assert 1 not in kinds  # a good answer at the threshold agrees
    # at the best threshold the agreement reports, the rows it gets wrong are the disagreements
    a = agreement(s, y, n_boot=0)
    t = a.threshold.value
    called = s >= t
    wrong = int((called != y.astype(bool)).sum())
    assert len(disagreements(s, y, threshold=t, limit=None)) == wrong
    hits = int((called & (y == 1)).sum())
    assert a.precision.value == pytest.approx(hits / called.sum())


# --- the store ------------------------------------------------------------------------------
def _result(question: str, answer: str, value: float) -> RelevancyResult:
    return RelevancyResult(
        user_input=question,
        response=answer,
        value=value,
        questions=[QuestionScore("What is it?", value, None)],
        ragas_value=value,
        llm="fake",
        embeddings="fake-emb",
    )


def _labelled_run(store: RunStore, labels: list[str]) -> int:
    inputs = pd.DataFrame(
        {
            "user_input": [f"question {i // 2}" for i in range(len(labels))],
            "response": [f"answer {i}" for i in range(len(labels))],
            "label": labels,
        }
    )
    run = store.create_run("labelled", {}, inputs)
    pairs = zip(inputs["user_input"], inputs["response"])
    store.append_results(run, [(i, _result(u, r, 0.1 * i)) for i, (u, r) in enumerate(pairs)])
    return run


def test_store_keeps_input_labels_and_dashboard_labels_win(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = _labelled_run(store, ["yes", "no", "", "yes"])
    found = store.labels(run)
    assert found["row"].tolist() == [0, 1, 3] and found["label"].tolist() == [1, 0, 1]
    assert set(found["source"]) == {"input"}
    before = store.version(run)
    store.set_label(run, 1, "yes")  # the analyst disagrees with the input
    store.set_label(run, 2, 0)
    assert store.version(run) != before  # caches keyed on the version are refreshed
    found = store.labels(run).set_index("row")
    assert found.loc[1, "label"] == 1 and found.loc[1, "source"] == "dashboard"
    assert found.loc[2, "label"] == 0 and found.loc[2, "set_at"]
    v = store.version(run)
    store.set_label(run, 0, None)  # cleared: the input's label no longer counts
    assert 0 not in store.labels(run)["row"].tolist() and store.version(run) != v
    assert store.columns(run, ["label"])["label"].tolist()[1:] == [1.0, 0.0, 1.0]
    with pytest.raises(InputError, match="has no row 9"):
        store.set_label(run, 8, 1)
    with pytest.raises(InputError, match="'maybe' is not a label"):
        store.set_label(run, 1, "maybe")
    store.delete(run)
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 0


def test_a_bad_input_label_creates_no_run(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    inputs = pd.DataFrame({"user_input": ["q", "q"], "response": ["a", "b"], "label": ["1", "x"]})
    with pytest.raises(InputError, match="row 2: 'x' is not a label"):
        store.create_run("bad", {}, inputs)
    assert store.list_runs() == []


def test_labels_export_with_the_run_and_import_back(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    run = _labelled_run(store, ["yes", "no", "", "no"])
    store.set_label(run, 2, 1)
    store.set_label(run, 3, 1)
    for fmt in ("csv", "jsonl", "parquet"):
        path = store.export(run, tmp_path / f"out.{fmt}")
        table = read_table(path)  # mapped by name, as any input: the label column is a label
        assert table["label"].tolist() == ["1", "0", "1", "1"]
        again = store.create_run(f"again {fmt}", {}, table)
        assert store.labels(again)["label"].tolist() == [1, 0, 1, 1]
        assert set(store.labels(again)["source"]) == {"input"}
    # a run without labels exports no label column
    plain = store.create_run("plain", {}, pd.DataFrame({"user_input": ["q"], "response": ["a"]}))
    store.append_results(plain, [(0, _result("q", "a", 0.5))])
    assert "label" not in store.export_frame(plain).columns


def test_older_stores_gain_the_labels_table(tmp_path):
    old = ROOT / "tests" / "data" / "store_v1.sqlite3"
    path = tmp_path / "v1.sqlite3"
    path.write_bytes(old.read_bytes())
    store = RunStore(path)
    run = store.list_runs()[-1].id
    store.set_label(run, 0, 1)
    assert store.labels(run)["label"].tolist() == [1.0]


def test_the_demo_has_labels_from_its_hand_labelled_answer_types(tmp_path):
    inputs = demo_inputs()
    assert (inputs["label"] == "1").sum() == (inputs["answer_type"] == "on-topic").sum()
    store = RunStore(tmp_path / "runs.sqlite3")
    run = import_demo(store)
    assert len(store.labels(run)) == len(inputs)


# --- the Agreement view on a real labelled set ----------------------------------------------
def _halu_rows() -> list[dict]:
    with open(HALU / "pairs.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _halu_store(tmp_path: Path, label: str) -> tuple[RunStore, int, list[dict], list[float]]:
    """HaluQuestQA's 1,396 answers (../shared, a development set) saved as a run with its labels
    mapped, each scored by its length (shorter is better, many ties): nothing is scored by a
    model here."""
    rows = _halu_rows()
    scores = [1.0 / len(r["response"]) for r in rows]
    table = pd.DataFrame(
        {
            "question": [r["user_input"] for r in rows],
            "answer": [r["response"] for r in rows],
            "role": [r["role"] for r in rows],
            "pair_id": [r["pair_id"] for r in rows],
            label: [r[label] for r in rows],
        }
    )
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "halu.csv"
    table.to_csv(path, index=False)
    mapped = read_table(path, label_column=label)  # question/answer/pair_id by name
    mapped = mapped.rename(columns={"role": "variant"})
    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_run("HaluQuestQA", {}, mapped)
    store.append_results(
        run,
        [
            (i, _result(r["user_input"], r["response"], s))
            for i, (r, s) in enumerate(zip(rows, scores))
        ],
    )
    return store, run, rows, scores


@pytest.mark.slow
@pytest.mark.skipif(not (HALU / "pairs.jsonl").exists(), reason=f"no development data at {HALU}")
@pytest.mark.parametrize("label", ["label_binary", "label"])
def test_agreement_view_on_haluquestqa_equals_resampling_the_rows(tmp_path, label):
    """On a real set (1,396 answers, 698 questions), the view's figures and intervals are those
    of resampling whole questions and computing each figure again: AUROC within each answer
    source (binary labels), Spearman over all answers (graded)."""
    store, run, rows, scores = _halu_store(tmp_path, label)
    view = agreement_view.load(store, run)
    assert view.overall.rows == len(rows) == 1396 and view.overall.questions == 698

    def same(got, rows_of: list[int], figure: int) -> None:
        s = np.array([scores[i] for i in rows_of])
        y = np.array([float(rows[i][label]) for i in rows_of])
        groups = [rows[i]["user_input"] for i in rows_of]
        low, high = _agreement_by_resampling(s, y, groups, n_boot=2000, seed=0)
        assert [got.low, got.high] == pytest.approx([low[figure], high[figure]], abs=1e-12)

    if label == "label_binary":  # AUROC within each answer source
        assert view.overall.kind == "binary" and set(view.by_group) == {
            "human_answer",
            "model_answer",
        }
        for role, a in view.by_group.items():
            mine = [i for i, r in enumerate(rows) if r["role"] == role]
            good = [float(rows[i]["label_binary"]) for i in mine]
            assert a.auroc.value == pytest.approx(auroc([scores[i] for i in mine], good))
            same(a.auroc, mine, 0)
    else:  # graded: Spearman over all answers
        assert view.overall.kind == "graded"
        y = [float(r["label"]) for r in rows]
        assert view.overall.spearman.value == pytest.approx(spearman(scores, y))
        same(view.overall.spearman, list(range(len(rows))), 1)
    json.dumps(view.overall.to_dict())  # plain data


def test_group_weights_in_an_order_are_the_same_draws_reordered():
    groups = ["a", "b", "a", "c", "b", "d", "c"]
    order = np.array([3, 0, 6, 2, 5, 1, 4])
    plain = np.concatenate(list(group_weights(groups, n_boot=30, seed=2, chunk=7)))
    ordered = np.concatenate(list(group_weights(groups, n_boot=30, seed=2, chunk=7, order=order)))
    np.testing.assert_array_equal(ordered, plain[:, order])


@pytest.mark.parametrize("graded", [False, True])
def test_the_chart_draws_a_stated_sample_of_dots_and_boxes_of_every_row(graded):
    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame(
        {
            "row": np.arange(n),
            "score": rng.random(n),
            "label": rng.integers(1, 6, n) if graded else rng.integers(0, 2, n),
            "user_input": [f"question {i // 2}" for i in range(n)],
        }
    )
    view = agreement_view.compute(frame, n_boot=0)
    whole, spec = score_label_spec(view)
    assert agreement_view.chart_note(view) is None
    drawn, drawn_spec = score_label_spec(view, points=100)
    note = agreement_view.chart_note(view, points=100)
    assert note.startswith("Dots: 100 of the 400 labelled rows")
    assert ("boxes" in note) == (not graded)
    assert len(whole) == 400 and len(drawn) == 100
    assert set(drawn["row"]) <= set(view.frame["row"] + 1)  # 1-based, as the page says rows
    if not graded:  # each label's box is of its every row, sampled or not: its quartiles
        (boxes,) = {
            json.dumps(x["data"]["values"])
            for x in drawn_spec["layer"]
            if "q1" in x.get("data", {}).get("values", [{}])[0]
        }
        for good, box in zip((0.0, 1.0), json.loads(boxes)):
            scores = view.frame.loc[view.frame["good"] == good, "score"].to_numpy()
            q1, median, q3 = np.quantile(scores, [0.25, 0.5, 0.75])
            assert (box["q1"], box["median"], box["q3"]) == pytest.approx((q1, median, q3))
            assert box["mean"] == pytest.approx(scores.mean())
            assert box["group"].startswith(("bad", "good")[int(good)])
    else:  # the label across, jittered less than half a step; the cut dotted
        assert (drawn["x"] - drawn["label"]).abs().max() < 0.5
        cut = [x for x in spec["layer"] if x["mark"]["type"] == "text" and "x" in x["encoding"]]
        assert cut[0]["data"]["values"][0]["t"] == f"good ≥ {view.overall.cut:g}"
    lines = [x["data"]["values"][0].get("t") for x in spec["layer"] if x["mark"]["type"] == "text"]
    assert f"best threshold {view.threshold:.3f}" in lines


def _synthetic_store(tmp_path: Path, n: int, every: int) -> tuple[RunStore, int]:
    from relevancy.testing.synthetic import synthetic_inputs, synthetic_results

    store = RunStore(tmp_path / "runs.sqlite3")
    run = store.create_run("labelled", {}, synthetic_inputs(n, labelled_every=every))
    for batch in synthetic_results(n):
        store.append_results(run, batch)
    return store, run


def test_the_view_counts_the_runs_scored_rows_without_a_label(tmp_path):
    """A label on one row in ten: 100 labelled rows and 900 scored rows without one (the page
    said "0 without": it read the labelled rows only). A cleared label counts as none, a
    dashboard label on an unlabelled row as one; the disagreements carry their answers."""
    store, run = _synthetic_store(tmp_path, 1000, 10)
    view = agreement_view.load(store, run)
    assert (view.overall.rows, view.unlabelled) == (100, 900)
    labelled = store.labels(run)["row"].tolist()
    store.set_label(run, labelled[0], None)  # cleared
    store.set_label(run, 0 if labelled[0] else 1, 1.0)  # a row without a label gains one
    view = agreement_view.load(store, run)
    assert (view.overall.rows, view.unlabelled) == (100, 900)
    found = view.disagreements
    assert len(found) and found["response"].tolist() == [
        store.inputs(run, rows=[r])["response"].iloc[0] for r in found["row"].astype(int)
    ]


def test_many_labels_read_the_columns_whole_with_the_same_figures(tmp_path, monkeypatch):
    """Above WHOLE_READ labels the view reads the run's segments and the labels beside them
    instead of the labelled rows from SQLite: the same rows, figures and disagreements."""
    store, run = _synthetic_store(tmp_path, 3000, 3)
    store.set_label(run, 7, 0.0)  # the dashboard's label wins over the input's
    store.set_label(run, 10, None)  # cleared: no label
    by_rows = agreement_view.load(store, run, n_boot=300)
    monkeypatch.setattr(agreement_view, "WHOLE_READ", 0)
    whole = agreement_view.load(store, run, n_boot=300)

    def figures(view):  # NaN (Spearman of binary labels) written out, so that it compares
        groups = {k: a.to_dict() for k, a in view.by_group.items()}
        return json.dumps([view.overall.to_dict(), groups])

    assert figures(whole) == figures(by_rows)
    assert whole.unlabelled == by_rows.unlabelled == 3000 - 999  # 1,000 labels, one cleared
    pd.testing.assert_frame_equal(whole.frame[by_rows.frame.columns], by_rows.frame)
    pd.testing.assert_frame_equal(whole.disagreements, by_rows.disagreements)
