"""The embedded default with the real models: SmolLM2-135M (llama.cpp) and MiniLM int8 (ONNX)."""

import asyncio
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from relevancy import AnswerRelevancy, make_embedder, make_generator

from helpers import recorded_generator_cpu

pytestmark = pytest.mark.models

ROOT = Path(__file__).resolve().parents[1]

FRANCE = "Where is France and what is it's capital?"


@pytest.fixture(scope="module")
def metric():
    return AnswerRelevancy(cache=False)


def test_complete_answer_beats_partial(metric):
    full = metric.score(
        user_input=FRANCE, response="France is in western Europe and Paris is its capital."
    )
    partial = metric.score(user_input=FRANCE, response="France is in western Europe.")
    assert full.value > partial.value
    assert all(q.question.endswith("?") for q in full.questions)
    assert full.llm.startswith("local:SmolLM2") and full.embeddings.startswith("local:all-MiniLM")


def test_evasive_answer_scores_zero(metric):
    r = metric.score(user_input=FRANCE, response="I'm not sure, I don't have that information.")
    assert r.value == 0.0
    assert r.noncommittal and r.noncommittal_method == "exemplars"


def _held_out_noncommittal_items() -> list[dict]:
    """The half of tests/data/noncommittal_set.jsonl that did not choose the threshold (odd ids;
    DEFAULT_EXEMPLAR_THRESHOLD was chosen on the even ones)."""
    lines = (ROOT / "tests" / "data" / "noncommittal_set.jsonl").read_text("utf-8").splitlines()
    items = [json.loads(line) for line in lines if line.strip()]
    return [it for it in items if it["id"] % 2 == 1]


def test_exemplar_detector_on_the_held_out_half_of_the_labelled_set():
    from relevancy.testing.fakes import FakeGenerator

    items = _held_out_noncommittal_items()
    assert len(items) == 44 and sum(it["noncommittal"] for it in items) == 22
    # the shipped path: the metric's exemplar detector on MiniLM, questions from a stand-in
    m = AnswerRelevancy(
        llm=FakeGenerator(flags=False),
        embeddings=make_embedder("local"),
        noncommittal="exemplars",
        cache=False,
    )
    results = m.score_many([(it["question"], it["response"]) for it in items])
    said = [r.noncommittal for r in results]
    wrong = [
        (it["id"], it["kind"], it["response"][:60])
        for it, s in zip(items, said)
        if s != bool(it["noncommittal"])
    ]
    zeroed_real = [it["id"] for it, s in zip(items, said) if s and not it["noncommittal"]]
    # bench/RESULTS.md, "Noncommittal detection": 84% right on this half, no real answer zeroed
    assert zeroed_real == [], zeroed_real
    assert len(items) - len(wrong) >= 0.8 * len(items), wrong
    assert all(r.value == 0.0 for r, s in zip(results, said) if s)


def test_off_topic_scores_well_below_on_topic(metric):
    on = metric.score(
        user_input=FRANCE, response="France is in western Europe and Paris is its capital."
    )
    off = metric.score(
        user_input=FRANCE,
        response="Bananas are rich in potassium and grow best in warm tropical climates.",
    )
    assert off.value < on.value - 0.3


def test_super_bowl_seed_example(metric):
    r = metric.score(
        user_input="When was the first super bowl?",
        response="The first superbowl was held on Jan 15, 1967",
    )
    assert r.value > 0.6  # ~0.92 with gpt-4o-mini; the 135M model lands lower but on topic


def test_same_seed_gives_same_questions_and_samples_differ(metric):
    a = metric.score(user_input=FRANCE, response="Paris is the capital of France.")
    b = AnswerRelevancy(cache=False).score(
        user_input=FRANCE, response="Paris is the capital of France."
    )
    assert [q.question for q in a.questions] == [q.question for q in b.questions]
    assert a.value == b.value
    many = metric.llm.generate("France is in western Europe and Paris is its capital.", 5)
    assert len({g.question for g in many.generations}) > 1  # temperature > 0: not collapsed


def test_model_is_loaded_once_per_process(monkeypatch):
    import llama_cpp

    from relevancy.backends import _local_generator

    first = make_generator("local", in_process=True)
    first.generate("Paris is in France.", 1)
    key = (str(first._path), first.n_ctx, first.threads)
    model = _local_generator._MODELS[key][0]

    def no_second_load(*args, **kwargs):
        raise AssertionError("the embedded generator model was loaded again")

    monkeypatch.setattr(llama_cpp, "Llama", no_second_load)
    second = make_generator("local", in_process=True)
    assert second.generate("Paris is in France.", 1).generations[0].question
    assert _local_generator._MODELS[key][0] is model  # the same object, not a reload


def test_model_is_loaded_once_per_worker():
    """The default: one worker process for every generator, its model loaded once."""
    from relevancy.backends._llama_client import worker

    first = make_generator("local")
    assert not first.in_process
    first.generate("Paris is in France.", 1)
    before = worker().call({"op": "info"}, 30)
    second = make_generator("local", seed=5)  # other settings travel with the request
    assert second.generate("Paris is in France.", 1).generations[0].question
    after = worker().call({"op": "info"}, 30)
    assert after["pid"] == before["pid"] != os.getpid()
    key = f"{first._path}|{first.n_ctx}|{first.threads}"
    assert list(after["models"]) == [key]
    assert after["models"][key] == before["models"][key]  # the same object, not a reload


def test_embedder_vectors_are_unit_length_and_meaningful():
    emb = make_embedder("local")
    v = asyncio.run(
        emb.aembed(
            [
                "The cat sat on the mat.",
                "A cat is sitting on a mat.",
                "Stock markets fell sharply today.",
                "",
            ]
        )
    )
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v[:3], axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.7 > v[0] @ v[2]


def test_embedder_batches_equal_single_calls():
    emb = make_embedder("local")
    texts = ["short", "a much longer sentence about the capital of France and its history"]
    together = emb.embed(texts)
    alone = np.vstack([emb.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)


def test_long_texts_go_in_smaller_batches_and_the_session_keeps_no_arena():
    from relevancy.backends import _local_embedder as le

    rng = np.random.default_rng(0)
    lengths = sorted(int(x) for x in rng.integers(1, 257, size=500))
    got = le.batches(lengths, 64)
    assert [j for b in got for j in b] == list(range(len(lengths)))  # every text, in order
    for b in got:
        assert len(b) <= 64 and len(b) * max(lengths[j] for j in b) ** 2 <= le.MAX_ATTENTION_CELLS
        # and as full as allowed: the next text would not have fitted
        if b[-1] + 1 < len(lengths) and len(b) < 64:
            assert (len(b) + 1) * lengths[b[-1] + 1] ** 2 > le.MAX_ATTENTION_CELLS
    emb = make_embedder("local")
    words = [
        "the",
        "river",
        "runs",
        "past",
        "the",
        "old",
        "town",
        "and",
        "its",
        "bridges",
        "to",
        "the",
        "sea",
    ]
    texts = [" ".join(words[: 1 + i % len(words)] * (1 + i % 20)) for i in range(40)]
    together = emb.embed(texts)  # 256-token texts among them: several ONNX calls
    alone = np.vstack([emb.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)
    options = le._session(emb._path, emb.threads).get_session_options()
    assert not options.enable_mem_pattern


def test_batch_of_rows_with_the_real_models(tmp_path):
    m = AnswerRelevancy(cache=str(tmp_path))
    rows = [
        ("What is the boiling point of water?", "Water boils at 100 degrees Celsius at sea level."),
        ("What is the boiling point of water?", "I don't know."),
        ("Who wrote Hamlet?", "William Shakespeare wrote Hamlet around 1600."),
    ]
    first = m.score_many(rows)
    assert first[0].value > 0.5 and first[1].value == 0.0 and first[2].value > 0.5
    again = AnswerRelevancy(cache=str(tmp_path)).score_many(rows)
    assert [r.value for r in again] == [r.value for r in first]
    assert all(r.cached for r in again)


def test_questions_do_not_depend_on_earlier_rows():
    gen = make_generator("local", time_limit=300.0)
    x = "Water boils at 100 degrees Celsius at sea level."
    first = [g.question for g in gen.generate(x, 3).generations]
    gen.generate("The Loire is the longest river in France, flowing into the Atlantic.", 3)
    gen.generate("Water boils at a lower temperature on a high mountain.", 3)
    assert [g.question for g in gen.generate(x, 3).generations] == first


# Rows of relevancy/data/demo.csv: short and on topic, a refusal the detector lets through, an
# evasion it zeroes, and a French pair.
DEMO_ROWS = (2, 10, 15, 36)


@pytest.mark.slow
def test_shipped_demo_results_match_a_fresh_scoring():
    from relevancy.runs import demo_results

    shipped = demo_results()
    fresh = AnswerRelevancy(cache=False).score_many(
        [(shipped[i].user_input, shipped[i].response) for i in DEMO_ROWS]
    )
    for i, new in zip(DEMO_ROWS, fresh):
        old = shipped[i]
        assert new.mode == old.mode == "ragas"
        assert new.llm == old.llm and new.embeddings == old.embeddings
        assert new.noncommittal == old.noncommittal, i
        # Generation is repeatable on one machine (fixed seeds, rows independent of each
        # other), but llama.cpp's sampling can tip differently on another CPU or thread count,
        # and the shipped file rounds to 5 decimals: 0.02 allows for a changed word, not for
        # a different way of scoring.
        assert not math.isnan(new.value) and -1.0 <= new.value <= 1.0
        if recorded_generator_cpu():  # see there: another instruction set, other words
            assert abs(new.value - old.value) < 0.02, (i, new.value, old.value)
        assert len(new.questions) == len(old.questions)
