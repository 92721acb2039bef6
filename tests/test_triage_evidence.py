"""One triage, consistent with the evidence (issue 24): the main reason of each row is decided
from what the drill-down shows (the generated questions' similarities, the sentence table, the
coverage of each part of the question, the noncommittal verdict), on the bundled demo's real
scored rows and in the dashboard's drill-down, opened from a row link under AppTest."""

from __future__ import annotations

import pytest

from relevancy.analysis.explain import explain_result
from relevancy.core.noncommittal import evasive_wording
from relevancy.core.text import answer_of_kind
from relevancy.core.triage import SENTENCE_HIGH, triage
from relevancy.runs import demo_results

from helpers import DEMO, app, ok

RESULTS = demo_results()


def row(n: int):
    """Demo row ``n``, 1-based as in the dashboard's row links."""
    return RESULTS[n - 1]


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7])
def test_no_demo_row_is_ok_below_the_threshold(threshold):
    for r in RESULTS:
        e = explain_result(r, threshold=threshold)
        if e.scored and r.value < threshold:
            assert e.triage.reason != "ok", r.user_input
            assert e.reasons, r.user_input  # a low score always says why


def test_row_30_a_low_answer_about_edward_jenner_is_not_ok():
    r = row(30)
    assert "Edward Jenner" in r.response and r.value < 0.5
    e = explain_result(r)
    assert e.triage.reason == "drifting"
    assert "2 of 3 questions rebuilt from the answer are about something else" in (
        e.reasons[0].detail
    )
    assert r.reason == "drifting"  # the shipped demo agrees: no "ok" in the grid either


def test_off_topic_never_sits_beside_a_sentence_table_that_finds_nothing():
    for r in RESULTS:
        e = explain_result(r)
        if e.triage.reason == "off_topic":
            assert "None of the" not in e.sentence_verdict
            assert max(s.similarity for s in e.sentences) < SENTENCE_HIGH
            assert "not close to the question" in e.sentence_verdict or (
                "none is close to the question" in e.sentence_verdict
            )


def test_padded_is_what_the_sentence_table_marks():
    from relevancy.core.triage import PAD_SHARE

    for r in RESULTS:
        e = explain_result(r)
        real = [s for s in e.sentences if not s.fragment]
        marked = [s for s in real if s.off_topic or s.padding]
        share = sum(len(s.text.split()) for s in marked) / max(
            1, sum(len(s.text.split()) for s in real)
        )
        assert ("padded" in e.triage.flags) == (
            bool(marked)
            and len(real) > 1
            and max(s.similarity for s in real) >= 0.5
            and share >= PAD_SHARE
        ), r.user_input
        if "padded" in e.triage.flags:
            assert all(s.note for s in marked)


def test_row_25_everest_names_the_countries_so_no_part_is_barely_covered():
    r = row(25)
    assert "Nepal and China" in r.response
    e = explain_result(r)
    assert e.triage.reason == "padded" and "partial" not in e.triage.flags
    assert not any("barely covered" in x.detail for x in e.reasons)
    countries = next(p for p in e.parts if p.part.startswith("which countries"))
    assert {"Nepal", "China"} <= set(countries.found)
    # two trivia sentences before the answer are marked, not "not off topic"
    assert [s.note for s in e.sentences] == ["padding", "padding", ""]
    # the partial answer that gives no country stays partial
    assert triage(row(26)).reason == "partial"
    assert answer_of_kind("how tall is it", "Where is it and how tall is it?", "In Tanzania.") == []


def test_a_refusal_the_detector_missed_is_evasive_not_noncommittal():
    r = row(11)
    assert r.response.startswith("I can't help with medical questions")
    assert not r.noncommittal  # the detector missed it: the score was not zeroed
    e = explain_result(r)
    # the metric's word (noncommittal: the score is 0) is kept for the detector's verdict
    assert e.triage.reason == "evasive" and e.evasion == "I can't help"
    assert e.reasons[0].code == "evasive" and "did not fire" in e.reasons[0].detail
    assert r.reason == "evasive"  # the shipped demo says the same
    zeroed = next(x for x in RESULTS if x.noncommittal)
    assert triage(zeroed).reason == "noncommittal" and zeroed.value == 0
    # hedged wording above the threshold is not called noncommittal
    good = row(2)
    assert not evasive_wording(good.response) and triage(good).reason == "ok"


def test_secondary_reasons_are_listed_beside_the_main_one():
    e = explain_result(row(44))  # padded German answer, questions generated in English
    assert e.triage.reason == "padded" and "language_mismatch" in e.secondary


def _drill(n: int):
    at = app("1_Dataset.py", query={"run": str(DEMO), "row": str(n)})
    assert at.selectbox(key=f"ds_inspect_{DEMO}").value == n - 1
    return ok(at)


def _badge(at) -> str:
    return next(m.value for m in at.markdown if 'class="rel-badge"' in m.value)


def _main_reason(at) -> str:
    line = next(m.value for m in at.markdown if m.value.startswith("**Main reason:**"))
    return line.removeprefix("**Main reason:** ").split(" · ")[0]


def _sentence_caption(at) -> str:
    return next(c.value for c in at.caption if "Similarity: to the user's question" in c.value)


@pytest.mark.slow
def test_drill_down_of_row_30_says_why_a_low_score_is_low():
    at = _drill(30)
    assert "· low" in _badge(at)
    assert _main_reason(at) == "drifting"
    assert any("The answer strays from the question" in w.value for w in at.warning)
    assert not any(s.value.startswith("Relevant") for s in at.success)
    # the grid's reason column says the same
    assert not any("The grid files this row under" in c.value for c in at.caption)


@pytest.mark.slow
def test_drill_down_of_row_25_agrees_with_its_sentence_table_and_parts():
    at = _drill(25)
    assert _main_reason(at) == "padded"
    assert _sentence_caption(at).startswith("Of 3 sentences: 2 padding")
    parts = next(c.value for c in at.caption if c.value.startswith("Question parts"))
    # the evidence of a part is what the part asks for, in a sentence about it ("between"):
    # not the Alps of a sentence about mountaineering
    assert "“which countries is it between” 0.31 (the answer gives Nepal, China): answered" in (
        parts.replace("\\", "")
    )
    assert not any("barely covered" in w.value for w in at.warning)
    assert any(m.value.startswith("**Also:**") for m in at.markdown)


@pytest.mark.slow
def test_drill_down_of_an_off_topic_row_and_of_a_refusal():
    at = _drill(23)  # sourdough: an answer about the bread, not the feeding
    assert _main_reason(at) == "off_topic"
    assert "None of the" not in _sentence_caption(at)
    assert "not close to the question" in _sentence_caption(at)
    at = _drill(11)
    assert _main_reason(at) == "evasive"
    assert any("the answer says “I can't help”" in m.value for m in at.markdown)
    assert any(m.value.startswith("**Noncommittal:** the detector says no") for m in at.markdown)


@pytest.mark.slow
def test_secondary_reasons_are_filterable_in_the_grid():
    at = _drill(44)
    at.multiselect(key="ds_flags").set_value(["language_mismatch"]).run()
    ok(at)
    grid = next(d.value for d in at.dataframe if d.proto.id.endswith(f"-ds_table_{DEMO}"))
    expected = [r for r in RESULTS if "language_mismatch" in r.flags]
    assert len(grid) == len(expected) and "padded" in set(grid["reason"])  # behind it: padded
    assert all("language_mismatch" in f for f in grid["flags"])


@pytest.mark.slow
def test_no_verdict_word_rests_on_fewer_questions_whatever_the_main_reason():
    # row 44: 2 of 3 questions usable, main reason padded; at a threshold of 0.3 it is above
    # the threshold, where the badge said "relevant"
    r = row(44)
    assert (r.questions_used, r.strictness, r.reason) == (2, 3, "padded")
    at = _drill(44)
    at.sidebar.slider(key="_w_sb_threshold").set_value(0.3).run()
    ok(at)
    assert r.value >= 0.3 and "· incomplete" in _badge(at) and "relevant" not in _badge(at)
    assert any(
        w.value.startswith("Not a verdict: incomplete: 2 of 3 questions")
        and "also padded" in w.value
        for w in at.warning
    )
    assert not at.success
    # with --min-questions 2 the same row may have a verdict
    e = explain_result(r, threshold=0.3, min_questions=2)
    assert e.verdict == "relevant"
    assert explain_result(r, threshold=0.3).verdict == "incomplete"


@pytest.mark.slow
def test_complete_is_said_only_where_each_part_was_checked():
    # row 15: "What is the capital of Japan and roughly how many people live there?" answered
    # "The capital of Japan is Tokyo.": the splitter reads the question as one part
    assert row(15).response == "The capital of Japan is Tokyo." and row(15).reason == "ok"
    at = _drill(15)
    reason = next(m.value for m in at.markdown if m.value.startswith("**Main reason:**"))
    assert "complete" not in reason.replace("completeness", "") or "not checked" in reason
    assert "was not checked (the question reads as one part)" in reason.replace("\\", "")
    # a two-part question whose parts are both answered says so
    both = next(
        i
        for i, x in enumerate(RESULTS, 1)
        if len(x.question_parts) > 1 and triage(x).reason == "ok"
    )
    at = _drill(both)
    reason = next(m.value for m in at.markdown if m.value.startswith("**Main reason:**"))
    assert "each of the question's 2 parts is answered" in reason
