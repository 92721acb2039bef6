"""Questions asked vs used: every row says how many of its N generated questions its score rests
on (``questions_used``, beside ``strictness``, in every output); a row with fewer is flagged
``incomplete_generation``, shown and counted, and never called ok below ``min_questions``."""

from __future__ import annotations

import pandas as pd
import pytest

from relevancy import InputError
from relevancy.analysis.explain import explain, explain_result
from relevancy.cli import main
from relevancy.core.result import QuestionScore, RelevancyResult
from relevancy.core.schema import export_record, exported_columns
from relevancy.core.triage import triage
from relevancy.paths import default_store_path
from relevancy.runs import RowQuery, RunStore

from helpers import app, cli_backends, metrics, ok, toy_metric, visit, write_rows

QUESTION = "Where is Paris?"
ANSWER = "Paris is in France."


def _incomplete_row(srv, **metric):
    """One row on the toy server whose generation returns 2 of the 3 questions asked."""
    srv.script(["fewer_choices"] * 10)  # n=3 gives 2 choices, each n=1 top-up gives none
    m = toy_metric(srv, client={"max_retries": 0}, cache=False, **metric)
    return m.score(user_input=QUESTION, response=ANSWER)


def test_a_row_scored_from_fewer_questions_says_so(toy_server):
    full = toy_metric(toy_server, cache=False).score(user_input=QUESTION, response=ANSWER)
    assert full.questions_used == full.strictness == 3
    assert "incomplete_generation" not in full.flags
    r = _incomplete_row(toy_server)
    assert r.ok and (r.questions_used, r.strictness) == (2, 3)
    assert "incomplete_generation" in r.flags
    # nothing else is wrong with it, but its verdict may not rest on 2 of 3 questions
    assert full.reason == "ok" and r.reason == "incomplete_generation"
    # every output has the column, beside strictness
    names = [c.name for c in exported_columns()]
    assert names[names.index("strictness") + 1] == "questions_used"
    assert export_record(r)["questions_used"] == 2 and r.to_dict()["questions_used"] == 2


def test_min_questions_lets_a_row_on_fewer_questions_be_ok(toy_server):
    r = _incomplete_row(toy_server, min_questions=2)
    assert r.questions_used == 2 and "incomplete_generation" in r.flags  # still flagged
    assert r.reason == "ok"  # but allowed to be ok
    with pytest.raises(InputError, match="min_questions"):
        toy_metric(toy_server, cache=False, min_questions=4)


def _result(sims: tuple[float | None, ...], *, reason: str = "", strictness: int = 3):
    questions = [
        QuestionScore("", None, None, "cut off after 20 s")
        if s is None
        else QuestionScore(f"Where is question {i}?", s, None)
        for i, s in enumerate(sims)
    ]
    used = [s for s in sims if s is not None]
    return RelevancyResult(
        user_input=QUESTION,
        response=ANSWER,
        value=sum(used) / len(used),
        questions=questions,
        answer_similarity=0.8,
        strictness=strictness,
        reason=reason,
        parts=[{"text": ANSWER, "similarity": 0.8}],
    )


def test_triage_flags_and_gates_ok_on_the_questions_used():
    assert triage(_result((0.8, 0.8, 0.8))).reason == "ok"
    t = triage(_result((0.8, None, None)))
    assert t.reason == "incomplete_generation" and "incomplete_generation" in t.flags
    assert triage(_result((0.8, None, None)), min_questions=1).reason == "ok"
    # a row with something wrong with the answer keeps that reason first
    low = triage(_result((0.1, None, None)))
    assert low.reason not in ("ok", "incomplete_generation")  # generator_suspect here
    assert "incomplete_generation" in low.flags


def test_the_explanation_names_what_is_missing_even_for_a_row_stored_as_ok():
    stored = _result((0.8, None, 0.8), reason="ok")  # scored before the flag existed
    e = explain_result(stored)
    assert e.triage.reason == "incomplete_generation"
    (reason,) = [r for r in explain(stored) if r.code == "incomplete_generation"]
    assert reason.title == "Incomplete: 2 of 3 questions"
    assert "cut off after 20 s" in reason.detail


def test_the_store_keeps_filters_and_counts_incomplete_rows(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    results = [_result((0.8, 0.8, 0.8)), _result((0.8, None, 0.7)), _result((0.7, 0.7, 0.7))]
    for r in results:
        r.reason, r.flags = triage(r).reason, list(triage(r).flags)
    inputs = pd.DataFrame({"user_input": [QUESTION] * 3, "response": [ANSWER] * 3})
    run = store.create_run("three", {}, inputs)
    store.append_results(run, enumerate(results))
    assert store.columns(run, ["questions_used"])["questions_used"].tolist() == [3, 2, 3]
    assert store.count(run, RowQuery(status="incomplete")) == 1
    page = store.query(run, RowQuery(status="incomplete"))
    assert page["row"].tolist() == [1] and page["reason"].tolist() == ["incomplete_generation"]
    assert store.counts(run)["incomplete_generation"] == 1
    assert "questions_used" in store.export_bytes(run, "csv").decode().splitlines()[0]


def test_the_cli_summary_and_output_count_incomplete_rows(toy_server, tmp_path, capsys):
    data = write_rows(
        tmp_path / "two.csv",
        [
            {"question": QUESTION, "answer": ANSWER},
            {"question": "Where is Rome?", "answer": "Rome is in Italy."},
        ],
    )
    # after the two model lists of the preflight, the first row's 7 requests: 2 of 3 questions
    toy_server.script([None, None, *["fewer_choices"] * 7])
    out = tmp_path / "two.scored.csv"
    args = ["score", str(data), "-o", str(out), "--no-cache", "--concurrency", "1"]
    assert main([*args, *cli_backends(toy_server, "-q")]) == 0
    printed = capsys.readouterr().out
    assert "incomplete 1," in printed and "1 rows scored from fewer generated questions" in printed
    scored = pd.read_csv(out)
    assert scored["questions_used"].tolist() == [2, 3] and scored["strictness"].tolist() == [3, 3]
    assert "incomplete_generation" in scored["flags"][0]


def test_the_dataset_page_shows_counts_and_filters_incomplete_rows():
    at = app()
    store = RunStore(default_store_path())
    results = [_result((0.8, 0.8, 0.8)), _result((0.8, None, 0.7))]
    for r in results:
        r.reason, r.flags = triage(r).reason, list(triage(r).flags)
    inputs = pd.DataFrame({"user_input": [QUESTION] * 2, "response": [ANSWER] * 2})
    run = store.create_run("cut off", {"backend": "cli"}, inputs)
    store.append_results(run, enumerate(results))
    at.session_state["active_run"] = run
    visit(at, "1_Dataset.py")
    assert metrics(at)["Incomplete"] == "1"
    grid = next(d.value for d in at.dataframe if d.proto.id.endswith(f"-ds_table_{run}"))
    assert sorted(grid["questions"]) == ["2 of 3", "3 of 3"]
    at.selectbox(key="ds_status").set_value("incomplete").run()
    ok(at)
    grid = next(d.value for d in at.dataframe if d.proto.id.endswith(f"-ds_table_{run}"))
    assert grid["questions"].tolist() == ["2 of 3"]
    at.selectbox(key=f"ds_inspect_{run}").set_value(1).run()  # the row with a cut-off question
    ok(at)
    assert not any(s.value.startswith("Relevant") for s in at.success)
    assert any("· incomplete: 2 of 3 questions</span>" in m.value for m in at.markdown)  # badge
    assert not any("· relevant</span>" in m.value for m in at.markdown)
    assert any("incomplete: 2 of 3 questions" in w.value for w in at.warning)
