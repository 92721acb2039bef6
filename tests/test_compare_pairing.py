"""Compare pairs what a user means: one run's variants on the question (or a question id shared
by the variants, never a per-row id), two runs on id or question; and when nothing pairs, the
page says what was tried and what each side holds."""

from __future__ import annotations

import pandas as pd
import pytest

from relevancy.analysis.compare import (
    no_pairs_message,
    pair_runs,
    pair_variants,
    pair_within,
    pairing_keys,
)
from relevancy.paths import default_store_path
from relevancy.runs import RunStore

from helpers import app, choose_toy_backend, metrics, ok, visit

QUESTIONS = [
    "Where is France and what is its capital?",
    "When was the first super bowl?",
    "What is the capital of Japan?",
    "How do vaccines work?",
    "Who wrote Hamlet?",
    "How tall is Mount Everest?",
    "What is photosynthesis?",
]


def fourteen(
    *, ids: bool = False, question_id: bool = False, reword_b: bool = False
) -> pd.DataFrame:
    """Two variants answering the same 7 questions (A's rows first): ``ids`` per row (1..14),
    ``question_id`` naming the question (q1..q7); ``reword_b`` changes B's question text a
    little (so only a question id can pair them)."""
    rows = []
    for variant in ("A", "B"):
        for k, question in enumerate(QUESTIONS, 1):
            text = question.rstrip("?") + " ?" if variant == "B" and reword_b else question
            row = {
                "question": text,
                "answer": f"{question} Answer from {variant}.",
                "variant": variant,
            }
            if question_id:
                row["question_id"] = f"q{k}"
            rows.append(row)
    frame = pd.DataFrame(rows)
    if ids:
        frame.insert(0, "id", [f"row-{i}" for i in range(1, 15)])
    return frame


def scored(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as pairing sees a scored run: ``user_input``, roles, a score per row."""
    out = frame.rename(columns={"question": "user_input", "answer": "response"}).copy()
    out["row"] = range(len(out))
    out["score"] = [0.5 + 0.01 * i for i in range(len(out))]
    return out


# --- the pairing itself -------------------------------------------------------------------
def test_variants_of_one_run_pair_on_the_question_not_on_per_row_ids():
    frame = scored(fourteen(ids=True))
    a, b = frame[frame["variant"] == "A"], frame[frame["variant"] == "B"]
    assert pairing_keys(a, b, within=True) == ("user_input",)  # per-row ids are never shared
    paired = pair_within(a, b)
    assert len(paired) == 7 and list(paired["user_input"]) == QUESTIONS
    assert paired["diff"].tolist() == pytest.approx([0.07] * 7)
    assert len(pair_variants(frame, "A", "B")) == 7
    # the same frame without ids pairs the same way
    assert len(pair_variants(frame.drop(columns=["id"]), "A", "B")) == 7


def test_a_question_id_shared_by_the_variants_pairs_them_even_when_the_text_differs():
    frame = scored(fourteen(ids=True, question_id=True, reword_b=True))
    a, b = frame[frame["variant"] == "A"], frame[frame["variant"] == "B"]
    assert pairing_keys(a, b, within=True) == ("question_id",)
    paired = pair_within(a, b)
    assert len(paired) == 7 and list(paired["user_input"]) == QUESTIONS  # A's wording shown
    # an `id` column whose values name questions (the demo's) pairs too
    as_id = scored(fourteen(question_id=True, reword_b=True)).rename(columns={"question_id": "id"})
    assert len(pair_variants(as_id, "A", "B")) == 7


def test_two_runs_pair_on_shared_ids_else_on_the_question():
    frame = scored(fourteen(ids=True))
    again = frame.assign(id=[f"other-{i}" for i in range(14)])  # same rows, new ids
    assert pairing_keys(frame, frame, within=False) == ("variant", "id", "user_input")
    assert len(pair_runs(frame, frame)) == 14
    assert pairing_keys(frame, again, within=False) == ("variant", "user_input")
    assert len(pair_runs(frame, again)) == 14  # before: ids differed, so nothing paired
    renamed = again.assign(variant=again["variant"].map({"A": "v1", "B": "v2"}))
    assert len(pair_runs(frame, renamed)) == 14  # variants named differently: question only


def test_no_pairs_says_what_was_tried_and_what_each_side_holds():
    frame = scored(fourteen(ids=True))
    a = frame[frame["variant"] == "A"]
    b = frame[frame["variant"] == "B"].assign(user_input=lambda f: "Other " + f["user_input"])
    keys = pairing_keys(a, b, within=True)
    assert pair_within(a, b).empty
    text = no_pairs_message(a, b, keys, label_a="A", label_b="B")
    assert "matched on the question text" in text
    assert "A: 7 rows, 7 distinct questions" in text and "B: 7 rows, 7 distinct questions" in text
    assert QUESTIONS[0][:40] in text and "Other Where is France" in text


# --- the Compare page, from an upload scored on the toy server ------------------------------
def _upload_and_score(srv, frame: pd.DataFrame, name: str):
    at = choose_toy_backend(app(), srv)
    at = visit(at, "1_Dataset.py")
    data = frame.to_csv(index=False).encode()
    at.file_uploader(key="ds_upload").upload(f"{name}.csv", data, "text/csv").run()
    ok(at)
    at.text_input(key="ds_run_name").input(name)
    at.button(key="ds_score").click().run()
    ok(at)
    assert any("Scored 14 rows" in s.value for s in at.success)
    return visit(at, "4_Compare.py")


@pytest.mark.parametrize(
    "shape",
    [{"ids": True}, {}, {"ids": True, "question_id": True, "reword_b": True}],
    ids=["per-row ids", "no ids", "question_id column"],
)
def test_compare_pairs_the_variants_of_an_upload(toy_server, shape):
    at = _upload_and_score(toy_server, fourteen(**shape), "fourteen")
    assert at.segmented_control(key="cmp_mode").value == "variants"
    assert not any("No pairs" in w.value for w in at.warning)
    figures = metrics(at)
    assert figures["Pairs"] == "7"
    wins, ties, losses = (int(figures[k]) for k in ("B better", "Ties", "A better"))
    assert wins + ties + losses == 7


def test_compare_says_what_it_tried_when_the_variants_share_no_question(toy_server):
    frame = fourteen(ids=True)
    frame.loc[frame["variant"] == "B", "question"] = [f"Unrelated question {k}?" for k in range(7)]
    at = _upload_and_score(toy_server, frame, "disjoint")
    warning = next(w.value for w in at.warning if "No pairs" in w.value)
    assert "the question text" in warning
    assert "7 rows, 7 distinct questions" in warning and "Unrelated question 0" in warning
    runs = RunStore(default_store_path()).list_runs()
    assert runs[0].name == "disjoint"


# --- ids that number rows, not questions ----------------------------------------------------
def eight(shuffled: bool) -> pd.DataFrame:
    """The same 8 questions, ids 1-8 as row numbers (the second file in another order)."""
    questions = [*QUESTIONS, "What is the boiling point of water?"]
    order = [3, 0, 6, 1, 7, 2, 5, 4] if shuffled else list(range(8))
    return pd.DataFrame(
        {
            "id": range(1, 9),
            "question": [questions[i] for i in order],
            "answer": [f"About {questions[i]}" for i in order],
        }
    )


def test_ids_that_number_rows_are_not_paired_on_and_it_is_said():
    from relevancy.analysis.compare import ignored_ids, names_questions

    a, b = scored(eight(False)), scored(eight(True))
    assert not names_questions(a, b, "id") and names_questions(a, a.copy(), "id")
    assert pairing_keys(a, b, within=False) == ("user_input",)
    paired = pair_runs(a, b)
    assert len(paired) == 8 and (paired["user_input"].nunique() == 8)
    why = ignored_ids(a, b)
    assert why.startswith("Paired on the question text: the 'id' column pairs rows of different")
    assert ignored_ids(a, a.copy()) is None
    # ids that do name questions are still paired on
    assert pairing_keys(
        a,
        b.sort_values("user_input").assign(
            id=lambda f: f["user_input"].map(dict(zip(a["user_input"], a["id"])))
        ),
        within=False,
    ) == ("id", "user_input")


def test_the_cli_compare_pairs_row_numbered_files_on_the_question(tmp_path, capsys):
    from relevancy.cli import main

    base, new = tmp_path / "base.csv", tmp_path / "new.csv"
    scored(eight(False)).to_csv(base, index=False)
    scored(eight(True)).to_csv(new, index=False)
    assert main(["compare", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert "pairs           8 " in out
    assert "pairing         Paired on the question text: the 'id' column pairs rows" in out


def test_compare_pairs_two_row_numbered_runs_and_opens_on_runs_that_share_questions(toy_server):
    at = choose_toy_backend(app(), toy_server)
    unrelated = eight(False).assign(question=lambda f: "Is it true that " + f["id"].astype(str))
    for name, frame in (("first", eight(False)), ("second", eight(True)), ("unrelated", unrelated)):
        at = visit(at, "1_Dataset.py")
        data = frame.to_csv(index=False).encode()
        at.file_uploader(key="ds_upload").upload(f"{name}.csv", data, "text/csv").run()
        at.text_input(key="ds_run_name").input(name)
        ok(at.button(key="ds_score").click().run())
    runs = {r.name: r.id for r in RunStore(default_store_path()).list_runs()}
    at.session_state["active_run"] = runs["second"]  # the newest run shares nothing with it
    at = visit(at, "4_Compare.py")
    at.segmented_control(key="cmp_mode").set_value("runs").run()
    ok(at)
    assert at.selectbox(key="cmp_run_b").value == runs["second"]
    assert at.selectbox(key="cmp_run_a").value == runs["first"]  # not "unrelated"
    assert not any("No pairs" in w.value for w in at.warning)
    assert metrics(at)["Pairs"] == "8"
    assert any(
        "numbers rows rather than naming questions" in c.value.replace("\\", "") for c in at.caption
    )


def test_outcomes_on_an_array_are_each_differences_outcome():
    import numpy as np

    from relevancy.analysis.compare import outcome, outcomes

    diffs = np.array([0.5, 0.02, 0.0201, -0.02, -0.0201, np.nan, -1.0, 0.0])
    assert outcomes(diffs, 0.02).tolist() == [outcome(d, 0.02) for d in diffs]


def test_an_id_naming_several_questions_counts_when_one_of_them_is_on_both_sides():
    """names_questions on codes: an id whose rows carry two question texts on one side names a
    question when one of them is on the other side; ids, values and whitespace as before."""
    import pandas as pd

    from relevancy.analysis.compare import names_questions

    a = pd.DataFrame({"id": ["1", "1", " 2 ", None], "user_input": ["A?", "B?", "C?", "D?"]})
    b = pd.DataFrame({"id": [1, "2", ""], "user_input": ["B?", "C?", "E?"]})
    assert names_questions(a, b, "id")
    other = pd.DataFrame({"id": ["1", "2"], "user_input": ["Zebras eat grass?", "Yaks sleep?"]})
    assert not names_questions(a, other, "id")
