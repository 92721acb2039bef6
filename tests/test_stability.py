"""Stability: rows re-scored under other generator seeds, per-row spread, flips, near duplicates;
the same figures from the core function, the run store and the CLI."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from relevancy import AnswerRelevancy, InputError
from relevancy.analysis.stability import (
    NEAR_DUPLICATE,
    describe_stability,
    near_duplicate_pairs,
    row_stability,
    stability_frame,
    stability_from_repeats,
    summarize_stability,
)
from relevancy.backends import GeneratorBase
from relevancy.cli import main
from relevancy.core.result import Generation, GenerationSet, QuestionScore, RelevancyResult
from relevancy.runs import RunStore
from relevancy.scoring.repeats import repeat_seeds, rescore, with_seed
from relevancy.testing.fakes import FakeEmbedder

ROOT = Path(__file__).resolve().parents[1]


class SeededGenerator(GeneratorBase):
    """Like the real generators: sample ``i`` of a row is drawn with seed ``seed + i``."""

    name = "fake:seeded"

    def __init__(self, seed: int = 0, evasive_seeds: frozenset[int] = frozenset()) -> None:
        self.seed = seed
        self.evasive_seeds = evasive_seeds
        self.calls: list[tuple[str, int, int]] = []

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "fake", "name": self.name, "seed": self.seed}

    async def agenerate(self, response: str, n: int, language: str | None = None) -> GenerationSet:
        self.calls.append((response, n, self.seed))
        gens = [
            Generation(f"q{self.seed + i} {response}?", (self.seed + i) in self.evasive_seeds)
            for i in range(n)
        ]
        return GenerationSet(generations=gens, model=self.name)


def _metric(**kw: Any) -> AnswerRelevancy:
    return AnswerRelevancy(
        llm=SeededGenerator(**kw), embeddings=FakeEmbedder(dim=16), noncommittal="llm", cache=False
    )


def test_repeat_seeds_share_no_sample_and_consecutive_seeds_do():
    assert repeat_seeds(0, 5, 3) == [0, 3, 6, 9, 12]
    assert repeat_seeds(7, 1, 3) == [7]
    metric = _metric()
    spaced = rescore(metric, [("Q?", "A")], repeat_seeds(0, 3, 3))
    questions = [{q.question for q in runs[0].questions} for runs in spaced]
    assert all(not (a & b) for i, a in enumerate(questions) for b in questions[i + 1 :])
    overlapping = rescore(metric, [("Q?", "A")], [0, 1])
    first, second = ({q.question for q in runs[0].questions} for runs in overlapping)
    assert len(first & second) == 2  # N - 1 of N questions shared: why repeats are spaced


@pytest.mark.parametrize("bad", [0, -1, 21, 2.5, True])
def test_repeat_count_out_of_range_is_one_clear_error(bad):
    with pytest.raises(InputError, match="repeats must be"):
        repeat_seeds(0, bad, 3)


def test_with_seed_keeps_every_setting_and_refuses_a_generator_without_seed():
    metric = AnswerRelevancy(
        llm=SeededGenerator(),
        embeddings=FakeEmbedder(dim=8),
        strictness=4,
        mode="focus",
        noncommittal="exemplars",
        noncommittal_threshold=0.4,
        cache=False,
        concurrency=2,
    )
    other = with_seed(metric, 9)
    assert other.llm.seed == 9 and metric.llm.seed == 0
    assert (other.strictness, other.mode, other.noncommittal, other.concurrency) == (
        4,
        "focus",
        "exemplars",
        2,
    )
    assert other.noncommittal_threshold == 0.4
    assert with_seed(metric, 0) is metric

    class NoSeed(SeededGenerator):
        def __init__(self) -> None:
            super().__init__()
            del self.seed

    with pytest.raises(InputError, match="has no seed"):
        with_seed(AnswerRelevancy(llm=NoSeed(), embeddings=FakeEmbedder(), cache=False), 1)


def test_rescore_reports_progress_and_each_result():
    seen, ticks = [], []
    out = rescore(
        _metric(),
        [("Q1?", "A1"), ("Q2?", "A2")],
        [0, 3],
        progress=lambda d, t: ticks.append((d, t)),
        on_result=lambda seed, i, r: seen.append((seed, i)),
    )
    assert [len(runs) for runs in out] == [2, 2]
    assert sorted(seen) == [(0, 0), (0, 1), (3, 0), (3, 1)]
    assert ticks[-1] == (4, 4)


def _result(value: float, noncommittal: bool = False, vectors=None) -> RelevancyResult:
    return RelevancyResult(
        user_input="Q?",
        response="A",
        value=value,
        noncommittal=noncommittal,
        questions=[QuestionScore("q", 0.5, None)],
        question_embeddings=vectors,
    )


def test_row_stability_population_sd_min_max_flips_and_near_duplicates():
    same = [[1.0, 0.0, 0.0], [0.999, 0.04, 0.0], [0.0, 1.0, 0.0]]  # first two at cos 0.999
    apart = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    results = [
        _result(0.6, vectors=same),
        _result(0.0, noncommittal=True, vectors=apart),
        _result(0.9, vectors=apart),
        _result(float("nan")),
    ]
    row = row_stability([0, 3, 6, 9], results)
    assert row.sd == pytest.approx(np.std([0.6, 0.0, 0.9]))  # population sd, NaN left out
    assert (row.min, row.max, row.repeats) == (0.0, 0.9, 4)
    assert row.flips and row.duplicate_repeats == 1
    assert near_duplicate_pairs(results[0]) == 1 and near_duplicate_pairs(results[0], 0.9999) == 0
    steady = row_stability([0, 3], [_result(0.5, vectors=apart), _result(0.5, vectors=apart)])
    assert steady.sd == 0.0 and not steady.flips and steady.duplicate_repeats == 0
    frame = stability_frame([row, steady])
    assert list(frame.columns) == [
        "score_sd",
        "score_min",
        "score_max",
        "ragas_sd",
        "noncommittal_flips",
        "near_duplicates",
        "repeats",
    ]
    assert frame["noncommittal_flips"].tolist() == [True, False]
    line = describe_stability(frame, [0, 3, 6, 9])
    assert "2 rows x 4 repeats (seeds 0, 3, 6, 9)" in line
    assert "noncommittal flips in 1 rows" in line and "near-duplicate questions in 1 rows" in line
    assert NEAR_DUPLICATE == 0.95


def test_ragas_sd_is_the_population_sd_like_the_score_sd():
    import statistics

    scores, ragas = [0.62, 0.2, 0.9], [0.5, 0.1, 0.85]
    results = [_result(v) for v in scores]
    for r, v in zip(results, ragas):
        r.ragas_value = v
    results.append(_result(float("nan")))  # a failed repeat: left out of both
    results[-1].ragas_value = float("nan")
    row = row_stability([0, 3, 6, 9], results)
    assert row.sd == pytest.approx(statistics.pstdev(scores))
    assert row.ragas_sd == pytest.approx(statistics.pstdev(ragas))
    assert row.ragas_sd != pytest.approx(statistics.stdev(ragas))  # not the sample sd
    assert stability_frame([row])["ragas_sd"].iloc[0] == pytest.approx(statistics.pstdev(ragas))


def _failed(seed_note: str = "timeout") -> RelevancyResult:
    r = _result(float("nan"))
    r.error = f"all 1 generations failed: {seed_note}"
    return r


def test_a_failed_repeat_is_no_noncommittal_flip(tmp_path):
    evasive = [_result(0.0, noncommittal=True), _failed(), _result(0.0, noncommittal=True)]
    row = row_stability([0, 3, 6], evasive)
    assert not row.flips and row.noncommittal == [True, True]
    assert stability_frame([row])["noncommittal_flips"].tolist() == [False]
    # a real flip still counts beside a failed repeat
    assert row_stability([0, 3, 6], [*evasive[:2], _result(0.7)]).flips
    # the same from the store's repeats
    store = RunStore(tmp_path / "runs.sqlite3")
    run_id = store.create_run("x", {}, pd.DataFrame({"user_input": ["Q?"], "response": ["A"]}))
    store.append_repeats(run_id, [(0, s, r) for s, r in zip([0, 3, 6], evasive)])
    table = stability_from_repeats(store.repeats(run_id))
    assert table["noncommittal_flips"].tolist() == [False]
    assert table["repeats"].tolist() == [3]


def test_the_summary_reproduces_recorded_figures():
    """Per-seed values of 24 HaluQuestQA rows under seeds 0-4 and the figures first reported
    for them (tests/data/stability_dev_focus.json): summarize_stability gives those figures."""
    recorded = json.loads((ROOT / "tests/data/stability_dev_focus.json").read_text())
    for name, key in ((recorded["mode"], "values"), ("ragas", "ragas_values")):
        table = np.array(recorded[key], dtype=float)  # seeds x rows
        rows = [
            row_stability(recorded["seeds"], [_result(v) for v in table[:, i]]).sd
            for i in range(table.shape[1])
        ]
        got = summarize_stability(rows)
        for figure in ("median_row_sd", "p95_row_sd", "max_row_sd"):
            assert got[figure] == pytest.approx(recorded[name][figure.replace("_sd", "_std")])


def test_store_keeps_repeats_and_gives_the_same_figures(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    pairs = [("Q1?", "A1"), ("Q2?", "A2"), ("Q3?", "A3")]
    inputs = pd.DataFrame(pairs, columns=["user_input", "response"])
    run_id = store.create_run("stab", {}, inputs)
    metric = _metric(evasive_seeds=frozenset({3, 4, 5}))
    seeds = repeat_seeds(0, 3, 3)
    before = store.version(run_id)
    by_seed = rescore(metric, pairs, seeds)
    store.append_repeats(
        run_id, [(i, s, runs[i]) for s, runs in zip(seeds, by_seed) for i in range(len(pairs))]
    )
    assert store.version(run_id) != before  # pages' caches see the new repeats
    repeats = store.repeats(run_id)
    assert len(repeats) == 9 and set(repeats["seed"]) == set(seeds)
    assert store.repeats(run_id, rows=[1])["row"].tolist() == [1, 1, 1]
    assert store.repeats(run_id, rows=[]).empty
    table = stability_from_repeats(repeats)
    direct = stability_frame(
        [row_stability(seeds, [runs[i] for runs in by_seed]) for i in range(len(pairs))]
    )
    assert table["row"].tolist() == [0, 1, 2] and table["seeds"].iloc[0] == seeds
    pd.testing.assert_frame_equal(table.drop(columns=["row", "seeds", "values"]), direct)
    assert table["values"].iloc[1] == [by_seed[j][1].value for j in range(3)]
    assert table["noncommittal_flips"].all()  # seed 3 was evasive, 0 and 6 were not
    # the same repeat again replaces it; deleting the run deletes its repeats
    store.append_repeats(run_id, [(0, 0, by_seed[0][0])])
    assert len(store.repeats(run_id)) == 9
    store.delete(run_id)
    assert store.repeats(run_id).empty
    assert stability_from_repeats(store.repeats(run_id)).empty


def test_a_store_without_the_repeats_table_gets_it_on_open(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite3"
    RunStore(path)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE repeats")
    assert RunStore(path).repeats(1).empty


# --- the command line, with the embedded models ----------------------------------------------
@pytest.fixture(scope="module")
def two_rows(tmp_path_factory):
    path = tmp_path_factory.mktemp("stab") / "pairs.csv"
    demo = pd.read_csv(resources.files("relevancy") / "data" / "demo.csv")
    demo.iloc[[0, 13]].to_csv(path, index=False)  # a partial answer and an evasive one
    return path


@pytest.mark.models
@pytest.mark.slow
def test_cli_repeats_columns_summary_and_the_same_figures_as_the_core(two_rows, tmp_path, capsys):
    out, store = tmp_path / "scored.csv", tmp_path / "runs.sqlite3"
    argv = ["score", str(two_rows), "-o", str(out), "-q", "--repeats", "3"]
    assert main([*argv, "--save-run", "stab", "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "repeats         3 per row (generator seeds 0, 3, 6;" in text
    assert "stability       per-row sd median" in text and "flips" in text
    table = pd.read_csv(out)
    assert {"score_sd", "score_min", "score_max", "noncommittal_flips", "near_duplicates"} <= set(
        table.columns
    )
    assert (table["repeats"] == 3).all()
    assert (table["score_min"] <= table["score"]).all() and (
        table["score"] <= table["score_max"]
    ).all()
    # the core function, on the same rows and seeds (from the cache), gives the same numbers
    pairs = list(zip(table["user_input"], table["response"]))
    by_seed = rescore(AnswerRelevancy(), pairs, [0, 3, 6])
    direct = [row_stability([0, 3, 6], [runs[i] for runs in by_seed]) for i in range(len(pairs))]
    assert table["score_sd"].tolist() == pytest.approx([r.sd for r in direct])
    assert table["score"].tolist() == pytest.approx([r.value for r in by_seed[0]])
    # ... and so does the run store the dashboard reads
    saved = RunStore(store)
    run_id = saved.list_runs()[0].id
    from_store = stability_from_repeats(saved.repeats(run_id))
    assert from_store["score_sd"].tolist() == pytest.approx(table["score_sd"].tolist())
    assert not any(math.isnan(x) for x in from_store["score_sd"])


def test_cli_bad_repeats_is_one_line_and_exit_2(two_rows, tmp_path, capsys):
    assert main(["score", str(two_rows), "-o", str(tmp_path / "o.csv"), "--repeats", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--repeats: '0' is not a whole number from 1 to 20" in err[0]
