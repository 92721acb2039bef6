"""Scoring modes: the focus and blend formulas with fake backends, the API around them, one
real-model check."""

import json
import math

import numpy as np
import pytest

from relevancy import AnswerRelevancy, Generation, InputError, RelevancyResult
from relevancy.core.modes import (
    MODE_DESCRIPTIONS,
    MODES,
    blend_breakdown,
    focus_parts,
    focus_score,
    off_question,
    resolve_mode,
    split_sentences,
)
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

Q = "Where is France?"
ON = "France is in Europe."
OFF = "I like bananas."
VEC = {
    Q: [1.0, 0.0, 0.0],
    "Where is France located?": [0.8, 0.6, 0.0],
    ON: [0.8, 0.6, 0.0],
    OFF: [0.0, 1.0, 0.0],
    f"{ON} {OFF}": [0.6, 0.8, 0.0],
}


def metric(mode, script=None, **kw):
    kw.setdefault("noncommittal", "llm")
    script = script or (lambda response, n: [Generation("Where is France located?", False)] * n)
    return AnswerRelevancy(
        llm=FakeGenerator(script), embeddings=FakeEmbedder(VEC), cache=False, mode=mode, **kw
    )


def test_split_sentences():
    text = "Paris is big. Is it?  Yes!\n\n- \n* Edit: 2 typos\nLast one"
    assert split_sentences(text) == [
        "Paris is big.",
        "Is it?",
        "Yes!",
        "* Edit: 2 typos",
        "Last one",
    ]
    assert split_sentences("no end mark") == ["no end mark"]
    assert split_sentences(" - * ") == []


def test_focus_parts_mix_in_neighbours():
    assert focus_parts([0.4]).tolist() == [0.4]
    assert focus_parts([1.0, 0.0, 1.0]).tolist() == pytest.approx([0.75, 0.5, 0.75])
    assert focus_parts([1.0, 0.0], context=0.0).tolist() == [1.0, 0.0]


def test_focus_score_formula():
    r = np.array([0.75, 0.5, 0.75])
    expected = 0.7 * (r.mean() - r.std()) + 0.3 * 0.6
    assert focus_score([1.0, 0.0, 1.0], 0.6) == pytest.approx(expected)
    assert focus_score([0.5], 0.5) == pytest.approx(0.5)  # one sentence: 0.7 c + 0.3 ragas
    assert focus_score([0.5, 0.5], 0.2, noncommittal=True) == 0.0
    assert math.isnan(focus_score([0.5], float("nan")))
    assert math.isnan(focus_score([], 0.5))


def test_ragas_mode_value_equals_ragas_value():
    r = metric("ragas").score(user_input=Q, response=f"{ON} {OFF}")
    assert r.mode == "ragas" and r.value == pytest.approx(0.8) and r.ragas_value == r.value
    # every mode keeps the sentence view (an explanation), without the focus columns
    assert [p["text"] for p in r.parts] == [ON, OFF]
    assert [p["similarity"] for p in r.parts] == pytest.approx([0.8, 0.0])
    assert all("context_similarity" not in p for p in r.parts)
    assert r.reason == "padded" and "padded" in r.flags


def test_focus_mode_scores_sentences_and_keeps_the_ragas_value():
    r = metric("focus").score(user_input=Q, response=f"{ON} {OFF}")
    assert r.mode == "focus" and r.ragas_value == pytest.approx(0.8)
    assert [p["text"] for p in r.parts] == [ON, OFF]
    assert [p["similarity"] for p in r.parts] == pytest.approx([0.8, 0.0])
    assert [p["context_similarity"] for p in r.parts] == pytest.approx([0.6, 0.2])
    assert r.value == pytest.approx(0.7 * (0.4 - 0.2) + 0.3 * 0.8)
    on_only = metric("focus").score(user_input=Q, response=ON)
    assert on_only.value == pytest.approx(0.8)
    assert on_only.value > r.value  # the off-topic sentence costs
    json.dumps(r.to_dict())  # parts are plain JSON


def test_focus_mode_keeps_the_noncommittal_zero_and_nan_rules():
    flagged = metric("focus", lambda response, n: [Generation("Where is France located?", True)])
    r = flagged.score(user_input=Q, response=ON)
    assert r.value == 0.0 and r.ragas_value == 0.0 and r.noncommittal
    failed = metric("focus", lambda response, n: [Generation("", None, "boom")])
    r = failed.score(user_input=Q, response=ON)
    assert math.isnan(r.value) and math.isnan(r.ragas_value) and "boom" in r.error


def test_blend_formula():
    assert off_question([0.6, 0.1, 0.2]) == [False, True, True]
    # a sentence far from the whole question but close to one of its parts answers that part
    assert off_question([0.6, 0.1, 0.2], [0.1, 0.1, 0.4]) == [False, True, False]
    b = blend_breakdown(0.6, [False, True], 0.8)
    assert b.off == 1 and b.sentences == 2 and b.off_share == 0.5
    assert b.value == pytest.approx(0.5 * (0.6 - 0.5 * 0.5) + 0.5 * 0.8)
    assert blend_breakdown(0.6, [False], 0.8).value == pytest.approx(0.7)
    silent = blend_breakdown(0.6, [False], 0.2, noncommittal=True)
    assert silent.value == 0.0 and silent.before_zeroing == pytest.approx(0.4)
    assert math.isnan(blend_breakdown(0.6, [], 0.8).value)  # no sentence
    assert math.isnan(blend_breakdown(0.6, [False], float("nan")).value)
    assert set(MODE_DESCRIPTIONS) == set(MODES) and "blend" in MODES


def test_blend_mode_penalises_sentences_that_answer_nothing_asked():
    r = metric("blend").score(user_input=Q, response=f"{ON} {OFF}")
    assert r.mode == "blend" and r.ragas_value == pytest.approx(0.8)
    assert r.answer_similarity == pytest.approx(0.6)
    # one of two sentences is off the question: 0.5 x (0.6 - 0.5 x 1/2) + 0.5 x 0.8
    assert r.value == pytest.approx(0.575)
    assert all("part_similarity" not in p for p in r.parts)  # one-part question
    on_only = metric("blend").score(user_input=Q, response=ON)
    assert on_only.value == pytest.approx(0.5 * 0.8 + 0.5 * 0.8)
    flagged = metric("blend", lambda response, n: [Generation("Where is France located?", True)])
    assert flagged.score(user_input=Q, response=ON).value == 0.0
    failed = metric("blend", lambda response, n: [Generation("", None, "boom")])
    r = failed.score(user_input=Q, response=ON)
    assert math.isnan(r.value) and "boom" in r.error


def test_blend_mode_counts_a_sentence_that_answers_one_part():
    q = "Where is France and what is its capital?"
    answer = "It lies in Europe. Paris is the capital."
    vectors = {
        q: [1.0, 0.0, 0.0, 0.0],
        "Where is France": [0.6, 0.8, 0.0, 0.0],
        "what is its capital": [0.6, 0.0, 0.8, 0.0],
        "It lies in Europe.": [0.0, 1.0, 0.0, 0.0],  # far from the question, on its first part
        "Paris is the capital.": [0.0, 0.0, 0.0, 1.0],  # far from both (the fake's choice)
        answer: [0.8, 0.6, 0.0, 0.0],
        "Where is France located?": [0.8, 0.6, 0.0, 0.0],
    }
    m = AnswerRelevancy(
        llm=FakeGenerator(lambda response, n: [Generation("Where is France located?", False)] * n),
        embeddings=FakeEmbedder(vectors),
        cache=False,
        mode="blend",
        noncommittal="llm",
    )
    r = m.score(user_input=q, response=answer)
    assert [p["part_similarity"] for p in r.parts] == pytest.approx([0.8, 0.0])
    assert r.value == pytest.approx(0.5 * (0.8 - 0.5 * 0.5) + 0.5 * 0.8)  # 1 of 2 off


def test_auto_mode_is_ragas_for_every_backend():
    assert metric("auto").mode == "ragas"
    llm, emb = FakeGenerator(), FakeEmbedder()
    llm.embedded = emb.embedded = True  # backends that say they are the embedded models
    assert AnswerRelevancy(llm=llm, embeddings=emb, cache=False).mode == "ragas"
    assert resolve_mode("auto", embedded=True) == resolve_mode("auto", embedded=False) == "ragas"
    assert resolve_mode("focus", embedded=True) == "focus"
    assert resolve_mode("blend", embedded=True) == "blend"


@pytest.mark.parametrize("bad", ["Ragas", "sentences", None, 1])
def test_unknown_mode_is_rejected_with_the_value(bad):
    with pytest.raises(InputError, match=repr(bad).replace("(", r"\(")):
        metric(bad)


def test_result_round_trips_and_old_dicts_load():
    r = metric("focus").score(user_input=Q, response=f"{ON} {OFF}")
    back = RelevancyResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.ragas_value == pytest.approx(r.ragas_value) and back.parts == r.parts
    assert back.mode == "focus" and back.value == pytest.approx(r.value)
    old = r.to_dict()
    for key in ("ragas_value", "parts", "mode"):
        old.pop(key)
    loaded = RelevancyResult.from_dict(old)
    assert loaded.mode == "ragas" and loaded.ragas_value == pytest.approx(r.value)
    assert RelevancyResult(user_input=Q, response=ON, value=0.5).ragas_value == 0.5
    nan = RelevancyResult(user_input=Q, response=ON, value=float("nan"))
    assert math.isnan(RelevancyResult.from_dict(nan.to_dict()).ragas_value)


@pytest.mark.models
def test_ragas_is_the_embedded_default_and_focus_penalises_an_off_topic_sentence():
    assert AnswerRelevancy(cache=False).mode == "ragas"
    m = AnswerRelevancy(cache=False, mode="focus")
    assert m.mode == "focus"
    q = "Where is France and what is its capital?"
    on = "France is in western Europe. Its capital is Paris."
    padded = on + " Bananas are rich in potassium and grow in warm tropical climates."
    a, b = m.score_many([(q, on), (q, padded)])
    assert a.mode == "focus" and len(a.parts) == 2 and len(b.parts) == 3
    assert not math.isnan(a.ragas_value) and not math.isnan(b.ragas_value)
    assert b.parts[2]["similarity"] < 0.2 < a.parts[1]["similarity"]
    assert a.value > b.value + 0.1


@pytest.mark.models
def test_blend_with_the_embedded_models_costs_a_padded_answer():
    m = AnswerRelevancy(cache=False, mode="blend")
    q = "Where is France and what is its capital?"
    on = "France is in western Europe. Its capital is Paris."
    padded = on + " Bananas are rich in potassium and grow in warm tropical climates."
    a, b = m.score_many([(q, on), (q, padded)])
    assert a.mode == b.mode == "blend" and all("part_similarity" in p for p in b.parts)
    assert not math.isnan(a.value) and not math.isnan(b.value)
    # the banana sentence answers nothing asked: a third of b's sentences, 0.5 x 0.5 x 1/3 off
    own_a = 2 * (a.value - 0.5 * a.ragas_value)
    own_b = 2 * (b.value - 0.5 * b.ragas_value)
    assert own_a == pytest.approx(a.answer_similarity, abs=1e-6)
    assert own_b == pytest.approx(b.answer_similarity - 0.5 / 3, abs=1e-6)
