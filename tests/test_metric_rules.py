"""The metric's rules, with fake backends (no model, no network)."""

import math

import numpy as np
import pytest

from relevancy import AnswerRelevancy, Generation, InputError
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

Q = "Where is France?"
VEC = {
    Q: [1.0, 0.0, 0.0],
    "Where is France located?": [0.8, 0.6, 0.0],
    "What is France?": [0.6, 0.8, 0.0],
    "What is the opposite?": [-1.0, 0.0, 0.0],
    "France is in Europe.": [0.7, 0.7, 0.1],
}


def metric(script, **kw):
    kw.setdefault("noncommittal", "llm")
    return AnswerRelevancy(
        llm=FakeGenerator(script), embeddings=FakeEmbedder(VEC), cache=False, **kw
    )


def gens(*items):
    return lambda response, n: [Generation(q, f) for q, f in items]


def test_value_is_mean_cosine_and_records_each_question():
    m = metric(gens(("Where is France located?", False), ("What is France?", False)), strictness=2)
    r = m.score(user_input=Q, response="France is in Europe.")
    assert r.value == pytest.approx((0.8 + 0.6) / 2)
    assert [q.similarity for q in r.questions] == pytest.approx([0.8, 0.6])
    assert r.similarity_std == pytest.approx(0.1)
    assert r.noncommittal is False and r.noncommittal_method == "llm"
    # the vectors are kept as float32 arrays (a float list takes 8 times the memory)
    assert r.question_embeddings.shape == (2, 3) and r.user_input_embedding.shape == (3,)
    assert r.question_embeddings.dtype == r.user_input_embedding.dtype == np.float32
    assert r.answer_similarity == pytest.approx(0.7 / np.linalg.norm([0.7, 0.7, 0.1]))
    assert r.error is None and r.ok
    assert set(r.timings) >= {"generation_s", "embedding_s", "total_s"}


def test_zero_when_all_generations_noncommittal():
    m = metric(gens(("Where is France located?", True), ("What is France?", True)), strictness=2)
    r = m.score(user_input=Q, response="I'm not sure.")
    assert r.value == 0.0
    assert r.noncommittal is True
    assert "2 of 2" in r.noncommittal_detail


@pytest.mark.parametrize(
    "flags", [(True, False, False), (False, True, False), (True, True, False)], ids=str
)
def test_a_stray_noncommittal_flag_does_not_zero(flags):
    questions = ("Where is France located?", "What is France?", "Where is France located?")
    m = metric(gens(*zip(questions, flags)), strictness=3)
    r = m.score(user_input=Q, response="x")
    assert r.value == pytest.approx((0.8 + 0.6 + 0.8) / 3)
    assert r.noncommittal is False
    assert f"{sum(flags)} of 3 generations flagged" in r.noncommittal_detail


def test_all_three_flagged_zeroes_and_says_so():
    questions = ("Where is France located?", "What is France?", "What is the opposite?")
    m = metric(gens(*((q, True) for q in questions)), strictness=3)
    r = m.score(user_input=Q, response="x")
    assert r.value == 0.0 and r.ragas_value == 0.0
    assert r.noncommittal is True and "3 of 3" in r.noncommittal_detail
    assert [q.similarity for q in r.questions] == pytest.approx([0.8, 0.6, -1.0])  # still shown


def test_negative_similarity_is_kept():
    m = metric(gens(("What is the opposite?", False)), strictness=1)
    assert m.score(user_input=Q, response="x").value == pytest.approx(-1.0)


def test_empty_generations_are_left_out():
    m = metric(gens(("Where is France located?", False), ("", False), ("   ", False)), strictness=3)
    r = m.score(user_input=Q, response="x")
    assert r.value == pytest.approx(0.8)
    assert [q.error for q in r.questions] == [None, "empty question", "empty question"]


def test_flags_of_empty_generations_do_not_count():
    m = metric(gens(("Where is France located?", False), ("", True)), strictness=2)
    assert m.score(user_input=Q, response="x").value == pytest.approx(0.8)


def test_nan_with_reason_when_no_generation_is_usable():
    m = metric(
        lambda r, n: [Generation("", None, "HTTP 500 from server"), Generation("", None)],
        strictness=2,
    )
    r = m.score(user_input=Q, response="x")
    assert math.isnan(r.value) and not r.ok
    assert "all 2 generations failed" in r.error and "HTTP 500" in r.error


def test_generator_exception_gives_nan_with_reason():
    def boom(response, n):
        raise RuntimeError("server exploded")

    r = metric(boom).score(user_input=Q, response="x")
    assert math.isnan(r.value)
    assert "server exploded" in r.error


def test_exemplar_detector_zeroes_evasive_answers():
    from relevancy.core.noncommittal import EVASIVE_EXEMPLARS

    table = dict(VEC)
    for i, text in enumerate(EVASIVE_EXEMPLARS):
        table[text] = [0.0, 0.0, 1.0] if i == 0 else [0.0, 0.0, -1.0]
    table["Honestly, no clue."] = [0.0, 0.1, 0.99]
    m = AnswerRelevancy(
        llm=FakeGenerator(gens(("Where is France located?", None)), flags=False),
        embeddings=FakeEmbedder(table),
        cache=False,
        strictness=1,
    )
    r = m.score(user_input=Q, response="Honestly, no clue.")
    assert r.noncommittal_method == "exemplars"  # auto: the generator gives no flags
    assert r.noncommittal and r.value == 0.0
    assert EVASIVE_EXEMPLARS[0] in r.noncommittal_detail
    r2 = m.score(user_input=Q, response="France is in Europe.")
    assert not r2.noncommittal and r2.value == pytest.approx(0.8)


def test_exemplar_detector_also_reads_the_response_without_the_question_words():
    from relevancy.core.noncommittal import EVASIVE_EXEMPLARS, without_question_words

    response = "I am not sure where France is located."
    stripped = without_question_words(Q, response)
    assert stripped == "I am not sure where is located."
    table = dict(VEC)
    for text in EVASIVE_EXEMPLARS:
        table[text] = [0.0, 0.0, 1.0]
    table[response] = [1.0, 0.0, 0.0]  # the question's words pull it toward the question
    table[stripped] = [0.0, 0.2, 0.98]
    m = AnswerRelevancy(
        llm=FakeGenerator(gens(("Where is France located?", None)), flags=False),
        embeddings=FakeEmbedder(table),
        cache=False,
        strictness=1,
    )
    r = m.score(user_input=Q, response=response)
    assert r.noncommittal and r.value == 0.0
    assert "without the question's words" in r.noncommittal_detail


@pytest.mark.parametrize(
    ("question", "response", "expected"),
    [
        (
            "When was the Eiffel Tower built?",
            "The Eiffel Tower was built in 1889.",
            "The was in 1889.",
        ),
        ("Why do cats purr?", "A cat purrs when content.", "A when content."),
        ("What is DNA?", "I don't know.", "I don't know."),
        ("Où est Paris ?", "Je ne sais pas où est Paris.", "Je ne sais pas ."),
    ],
)
def test_without_question_words(question, response, expected):
    from relevancy.core.noncommittal import without_question_words

    assert without_question_words(question, response) == expected


def test_off_detector_never_zeroes():
    m = metric(gens(("Where is France located?", True)), strictness=1, noncommittal="off")
    assert m.score(user_input=Q, response="x").value == pytest.approx(0.8)


@pytest.mark.parametrize("bad", [0, 11, -1, 2.5, "3", True])
def test_strictness_out_of_range_is_rejected_with_value(bad):
    with pytest.raises(InputError, match=f"got {bad!r}"):
        metric(gens(), strictness=bad)


def test_unknown_detector_is_rejected():
    with pytest.raises(InputError, match="'maybe'"):
        metric(gens(), noncommittal="maybe")


@pytest.mark.parametrize("field", ["user_input", "response"])
@pytest.mark.parametrize("bad", ["", "   ", None, 3])
def test_empty_or_non_text_inputs_are_rejected(field, bad):
    kwargs = {"user_input": Q, "response": "x", field: bad}
    with pytest.raises(InputError, match=field):
        metric(gens(("Where is France located?", False))).score(**kwargs)


def test_result_round_trips_through_plain_json():
    import json

    from relevancy import RelevancyResult

    r = metric(gens(("Where is France located?", False), ("", False)), strictness=2).score(
        user_input=Q, response="x"
    )
    data = json.loads(json.dumps(r.to_dict()))
    back = RelevancyResult.from_dict(data)
    assert back.value == r.value and back.questions == r.questions
    assert isinstance(data["question_embeddings"][0][0], float)  # JSON: plain lists
    assert np.array_equal(back.question_embeddings, r.question_embeddings)
    nan = metric(lambda r, n: [Generation("", None, "bad")], strictness=1).score(
        user_input=Q, response="x"
    )
    assert json.loads(json.dumps(nan.to_dict()))["value"] is None
    assert "user_input_embedding" not in r.to_dict(embeddings=False)


def test_overlong_response_is_truncated_for_the_generator_with_a_note():
    gen = FakeGenerator(gens(("Where is France located?", False)))
    gen.max_response_chars = 2000
    m = AnswerRelevancy(llm=gen, embeddings=FakeEmbedder(VEC), cache=False, strictness=1)
    r = m.score(user_input=Q, response="France " * 20_000)
    assert r.ok
    assert r.notes == [
        "response truncated to its first 2,000 of 140,000 characters for the question generator"
        " (about 500 of 35,000 tokens sent)"
    ]
    assert m.score(user_input=Q, response="France is in Europe.").notes == []


@pytest.mark.models
def test_embedded_generator_reads_only_the_first_max_response_chars(monkeypatch):
    from relevancy import make_generator
    from relevancy.backends import _local_generator

    limit = 60
    head = "Water boils at 100 degrees Celsius at sea level, not lower.".ljust(limit)
    tail = " Zanzibar is an archipelago off the coast of Tanzania." * 20
    response = head + tail
    assert len(head) == limit
    gen = make_generator("local", max_response_chars=limit, in_process=True)

    prefix, row = gen.prefix_and_row(response)
    assert row == f"Answer: {head}<|im_end|>\n<|im_start|>assistant\n"
    assert "Zanzibar" not in prefix + row

    # what the model is really given
    llm, _lock = _local_generator._load(gen._path, gen.n_ctx, gen.threads)
    seen: list[str] = []
    original = llm.create_completion

    def spy(prompt, *args, **kwargs):
        seen.append(llm.detokenize(prompt).decode("utf-8", "replace"))
        return original(prompt, *args, **kwargs)

    monkeypatch.setattr(llm, "create_completion", spy)
    m = AnswerRelevancy(llm=gen, embeddings=FakeEmbedder(), cache=False, strictness=2)
    r = m.score(user_input="At what temperature does water boil?", response=response)
    assert len(seen) == 2
    assert all(head.strip() in text and "Zanzibar" not in text for text in seen)
    assert r.notes == [
        f"response truncated to its first {limit} of {len(response):,} characters for the "
        f"question generator (about 15 of {-(-len(response) // 4):,} tokens sent)"
    ]
    # the questions are those of the first `limit` characters alone (fixed seeds)
    alone = gen.generate(head, 2)
    assert [q.question for q in r.questions] == [g.question for g in alone.generations]
    short = m.score(user_input="At what temperature does water boil?", response=head.strip())
    assert short.notes == []
