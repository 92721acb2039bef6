"""The embedded default with the real models: SmolLM2-135M (llama.cpp) and MiniLM int8 (ONNX)."""

import asyncio

import numpy as np
import pytest

from relevancy import AnswerRelevancy, make_embedder, make_generator

pytestmark = pytest.mark.models

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


@pytest.mark.parametrize(
    ("question", "response", "evasive"),
    [
        ("When was the Eiffel Tower built?", "I'm not sure when the Eiffel Tower was built.", True),
        ("How many moons does Mars have?", "I don't know how many moons Mars has.", True),
        ("Is coffee bad for you?", "Everyone is different, so it's hard to say.", True),
        ("When was the Eiffel Tower built?", "It was built between 1887 and 1889.", False),
        ("How many moons does Mars have?", "I might be wrong, but I think it has two.", False),
        (
            "Which is healthier, rice or pasta?",
            "It depends on the kind: brown rice and whole-wheat pasta beat white versions.",
            False,
        ),
    ],
)
def test_exemplar_detector_with_minilm_sees_evasions_that_repeat_the_question(
    question, response, evasive
):
    from relevancy._noncommittal import (
        DEFAULT_EXEMPLAR_THRESHOLD,
        EVASIVE_EXEMPLARS,
        exemplar_verdict,
        without_question_words,
    )

    emb = make_embedder("local")
    vectors = emb.embed([response, without_question_words(question, response)])
    verdict, detail = exemplar_verdict(
        vectors[0],
        emb.embed(list(EVASIVE_EXEMPLARS)),
        DEFAULT_EXEMPLAR_THRESHOLD,
        stripped_vector=vectors[1],
    )
    assert verdict is evasive, detail


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


def test_model_is_loaded_once_per_process():
    from relevancy.backends import _local_generator

    make_generator("local").generate("Paris is in France.", 1)
    make_generator("local").generate("Paris is in France.", 1)
    assert len(_local_generator._MODELS) == 1


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
