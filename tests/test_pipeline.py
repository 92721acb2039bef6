"""One scoring loop: the CLI, the dashboard and the Ray engine all score rows through
``relevancy.scoring.pipeline.score_chunk``; its collectors keep what the summary needs."""

from __future__ import annotations

import gc
import weakref

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from relevancy import AnswerRelevancy
from relevancy.runs import RunStore
from relevancy.scoring import pipeline
from relevancy.scoring.collectors import Labels, Languages, Stability, Tally, Usage
from relevancy.scoring.distributed import ScoreBatches
from relevancy.scoring.files import score_file
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator


class SeededFake(FakeGenerator):
    seed = 0

    def fingerprint(self):
        return {**super().fingerprint(), "seed": self.seed}


def _metric() -> AnswerRelevancy:
    return AnswerRelevancy(llm=SeededFake(), embeddings=FakeEmbedder(), cache=False)


ROWS = pd.DataFrame(
    {
        "user_input": ["Where is Paris?", "Where is Rome?", "What is rain?"],
        "response": ["In France.", "In Italy.", "Water falling from clouds."],
        "label": ["1", "0", "1"],
    }
)


@pytest.fixture
def calls(monkeypatch):
    """Every call of the one loop's ``score_chunk``, with the rows it scored."""
    seen: list[list[int]] = []
    real = pipeline.score_chunk

    def spy(metric, inputs, rows=None, **kwargs):
        chunk = real(metric, inputs, rows, **kwargs)
        seen.append(chunk.rows)
        return chunk

    monkeypatch.setattr(pipeline, "score_chunk", spy)
    return seen


def test_the_cli_scores_through_the_loop(tmp_path, calls):
    src = tmp_path / "rows.csv"
    ROWS.to_csv(src, index=False)
    run = score_file(_metric(), src, tmp_path / "out.csv", chunk_rows=2)
    assert calls == [[0, 1], [2]]  # two chunks, rows numbered across them
    assert len(run.values) == 3 and run.labels is not None and len(run.labels) == 3


def test_a_chunk_is_let_go_before_the_next_is_scored(tmp_path, monkeypatch):
    # one chunk's results in memory at a time: neither the loop nor score_file holds the last
    # scored chunk while the next is scored (the collectors keep only what they need)
    results: list[weakref.ref] = []
    still_held: list[int] = []
    real = pipeline.score_chunk

    def spy(metric, inputs, rows=None, **kwargs):
        gc.collect()
        still_held.append(sum(ref() is not None for ref in results))
        chunk = real(metric, inputs, rows, **kwargs)
        results.extend(weakref.ref(r) for r in chunk.results)
        return chunk

    monkeypatch.setattr(pipeline, "score_chunk", spy)
    src = tmp_path / "rows.csv"
    ROWS.to_csv(src, index=False)
    run = score_file(_metric(), src, tmp_path / "out.jsonl", chunk_rows=1)
    assert still_held == [0, 0, 0] and len(results) == 3
    assert run.chance is not None  # the chance sample kept the vectors it needs


def test_the_ray_engine_scores_each_batch_through_the_loop(calls):
    scored = ScoreBatches(factory=_metric)(ROWS.rename(columns={"user_input": "question"}))
    assert calls == [[0, 1, 2]]
    assert scored["score"].notna().all()


def _dashboard_script() -> None:
    import os

    from relevancy import AnswerRelevancy
    from relevancy.dashboard.widgets.runner import score_run
    from relevancy.runs import RunStore
    from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

    store = RunStore(os.environ["RELEVANCY_STORE"])
    run_id = int(os.environ["PIPELINE_RUN"])
    metric = AnswerRelevancy(llm=FakeGenerator(), embeddings=FakeEmbedder(), cache=False)
    score_run(store, run_id, metric, chunk=2)


def test_the_dashboard_runner_scores_through_the_loop(tmp_path, monkeypatch, calls):
    store = RunStore(tmp_path / "runs.sqlite3")
    run_id = store.create_run("x", {}, ROWS)
    monkeypatch.setenv("RELEVANCY_STORE", str(store.path))
    monkeypatch.setenv("PIPELINE_RUN", str(run_id))
    at = AppTest.from_function(_dashboard_script, default_timeout=60).run()
    assert not at.exception
    assert calls == [[0, 1], [2]]  # in chunks of 2, each saved as it finished
    assert store.get_run(run_id).n_scored == 3


def test_collectors_keep_what_the_summary_needs():
    metric = _metric()
    tally, labels, usage, languages, stability = (
        Tally(),
        Labels(),
        Usage(),
        Languages(),
        Stability(),
    )
    chunks = pipeline.chunks_of([ROWS.iloc[:2], ROWS.iloc[2:]])
    scored = list(
        pipeline.score_chunks(
            metric, chunks, [tally, labels, usage, languages, stability], seeds=[0, 3]
        )
    )
    assert [c.rows for c in scored] == [[0, 1], [2]]
    assert len(tally.values) == 3 and tally.reasons.total() == 3
    values, groups = labels.arrays()
    assert list(values) == [1.0, 0.0, 1.0] and len(set(groups)) == 3
    assert len(stability.sds) == 3 and stability.seeds == [0, 3]
    assert "score_sd" in scored[0].frame.columns
    assert not usage.totals().empty


def test_a_chunk_from_ray_feeds_the_same_collectors():
    metric = _metric()
    frame = pipeline.score_chunk(metric, ROWS).frame
    tally = Tally()
    pipeline.collect(pipeline.ScoredChunk.from_frame(range(3), frame), [tally, Labels()])
    assert len(tally.values) == 3
