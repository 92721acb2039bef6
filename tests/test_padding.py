"""Padding that is padding: a citation marker, a list number or a word or two belongs to its
sentence, and an answer is padded only when its off-topic and padding sentences hold a share of
it (``PAD_SHARE`` of its words), not for one stray sentence of a long answer. The sentence table
says the same as the reason."""

from __future__ import annotations

import math

import pytest

from relevancy.analysis.explain import explain_result
from relevancy.core.result import RelevancyResult
from relevancy.core.triage import (
    PAD_SHARE,
    is_fragment,
    is_padded,
    padded_share,
    sentence_marks,
    triage,
)


def result(*sentences: tuple[str, float], value: float = 0.9) -> RelevancyResult:
    r = RelevancyResult(
        user_input="What is the chemical symbol for gold?",
        response=" ".join(t for t, _ in sentences),
        value=value,
    )
    r.ragas_value = value
    r.parts = [{"text": t, "similarity": s} for t, s in sentences]
    return r


def test_markers_list_numbers_and_a_word_or_two_are_fragments():
    for text in ("(ref 1)", "[2]", "2.", "1)", "See [3].", "Yes.", "(source)"):
        assert is_fragment(text), text
    for text in ("Gold is Au.", "Its symbol is Au, from aurum.", "The answer is no."):
        assert not is_fragment(text), text


def test_a_citation_marker_does_not_make_a_good_answer_padded():
    # the case: a good answer at 0.969 called padded for its "(ref 1)"
    r = result(("The chemical symbol for gold is Au.", 0.82), ("(ref 1)", 0.05))
    assert sentence_marks(r) == ["", "citation"]  # a marker is a citation, not a fragment
    assert not is_padded(r) and triage(r).reason != "padded"
    e = explain_result(r)
    assert [s.note for s in e.sentences] == ["", "citation or sources (not judged)"]
    assert not any(s.off_topic for s in e.sentences)
    # list numbers of a step-by-step answer
    steps = result(
        ("1.", 0.02),
        ("Gold's symbol Au comes from Latin aurum.", 0.7),
        ("2.", 0.01),
        ("Chemists write the symbol for gold as Au.", 0.75),
    )
    assert not is_padded(steps)


def test_one_stray_sentence_in_a_long_answer_is_not_padding():
    on = ("Gold has the chemical symbol Au, from the Latin word aurum for gold.", 0.8)
    stray = ("My grandmother kept a small garden with roses and tomatoes.", 0.05)
    long = result(*([on] * 62 + [stray] * 2))
    assert sentence_marks(long).count("off topic") == 2
    assert padded_share(long) < PAD_SHARE and not is_padded(long)
    assert "under the 20% that makes an answer padded" in explain_result(long).sentence_verdict
    # the same stray sentences in a short answer are a share of it: padded
    short = result(on, stray, stray)
    assert padded_share(short) == pytest.approx(2 * 10 / (13 + 2 * 10))
    assert is_padded(short) and triage(short).reason == "padded"


def test_padding_is_still_found_where_it_is_a_share_of_the_answer():
    padded = result(
        ("Gold's chemical symbol is Au.", 0.85),
        ("By the way, the weather in Lisbon is lovely this time of year.", 0.04),
        ("Many people enjoy visiting museums on rainy weekends.", 0.06),
    )
    assert is_padded(padded) and triage(padded).reason == "padded"
    assert math.isclose(padded_share(padded), 21 / 26)  # 12 + 9 of 5 + 12 + 9 words
