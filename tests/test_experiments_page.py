"""The Experiments page under AppTest, reached from app.py: templates edited side by side, two
toy models, the estimate, a run with progress, the matrix and summary, an answer, Compare."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest

from relevancy.paths import default_store_path
from relevancy.runs import RunStore
from relevancy.testing.openai_server import OpenAICompatServer

from helpers import app, choose_toy_backend, ok, visit

pytestmark = pytest.mark.slow


def _answers(srv: OpenAICompatServer) -> list[dict]:
    """The answer requests the server served (not the judge's)."""
    return [
        r
        for r in list(srv.requests)
        if r["path"] == "/v1/chat/completions"
        and (r["body"] or {}).get("model") in srv.answer_models
    ]


def test_an_experiment_from_the_page_to_compare():
    with OpenAICompatServer() as srv:
        srv.answer_models = ("toy-a", "toy-b")
        at = choose_toy_backend(app(), srv)
        at = visit(at, "8_Experiments.py")
        at.text_input(key="exp_models").input("toy-a, toy-b")
        at.text_input(key="exp_base_url").input(srv.base_url)
        at.text_area(key="exp_system_0").input("Answer in one sentence. *not bold*")
        ok(at.run())
        shown = {m.label: m.value for m in at.metric}
        assert shown["Answers"] == "96" and shown["To request"] == "96"

        # a template naming a column the questions lack: one line, nothing run
        at.text_area(key="exp_user_1").input("{context}: {user_input}")
        ok(at.run())
        assert any("context" in e.value and "which the questions lack" in e.value for e in at.error)
        at.text_area(key="exp_user_1").input("Explain in detail: {user_input}")
        ok(at.run())

        at.button(key="exp_go").click()
        ok(at.run())
        run_id = at.session_state["exp_run"]
        assert run_id is not None and not at.error
        assert srv.stats()["by_path"]["/v1/chat/completions"] >= 96
        summary = at.main.dataframe[0].value
        assert len(summary) == 4 and set(summary["answers"]) == {24}
        means = summary.set_index("variant")["mean"]
        assert means["concise · toy-a"] > means["detailed · toy-b"]
        matrix = at.main.dataframe[1].value
        assert matrix.shape == (24, 4) and matrix.iloc[0, 0].split()[1] in ("ok", "padded")
        # the prompt and answer are text, not Markdown
        assert any("*not bold*" in t.value for t in at.text)

        # re-opened and extended with another template: only its variants answered, in place
        asked = len(_answers(srv))
        at.radio(key="exp_mode").set_value("extend")
        ok(at.run())
        assert at.selectbox(key="exp_extend_run").value == run_id
        assert at.text_input(key="exp_x_name_0").value == "friendly"  # a name the run lacks
        assert any(t.value == "new variants: friendly · toy-a, friendly · toy-b" for t in at.text)
        assert {m.label: m.value for m in at.metric}["To request"] == "48"
        at.button(key="exp_extend_go").click()
        ok(at.run())
        assert not at.error and at.session_state["exp_run"] == run_id
        assert len(_answers(srv)) == asked + 48
        run = RunStore(default_store_path()).get_run(run_id)
        assert (run.n_rows, run.n_scored) == (144, 144)
        summary = at.main.dataframe[0].value
        assert list(summary["variant"])[-2:] == ["friendly · toy-a", "friendly · toy-b"]

        at.selectbox(key="exp_cmp_b").set_value("concise · toy-b")
        at.button(key="exp_open_compare").click()
        ok(at.run())
        assert at.selectbox(key="cmp_a").value == "concise · toy-a"
        assert at.selectbox(key="cmp_b").value == "concise · toy-b"


def _drawn(markdown: str) -> str:
    """Text as the page draws it (its escapes, which keep data inert, are not drawn)."""
    return re.sub(r"\\(.)", r"\1", markdown)


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def test_a_question_set_uploaded_and_bad_files_said_in_one_line():
    at = visit(app(), "8_Experiments.py")
    at.selectbox(key="exp_questions").set_value("upload")
    ok(at.run())
    assert any("Upload a question set" in i.value for i in at.info)
    assert not at.metric  # nothing planned without questions

    questions = pd.DataFrame(
        {"question": ["Who wrote Hamlet?", "Why is the sky blue?", " "], "topic": ["a", "b", "c"]}
    )
    files = [
        ("q.csv", questions.to_csv(index=False).encode(), "text/csv"),
        ("q.jsonl", questions.to_json(orient="records", lines=True).encode(), "application/json"),
        ("q.parquet", _parquet(questions), "application/octet-stream"),
    ]
    for name, data, kind in files:
        at.file_uploader(key="exp_upload").upload(name, data, kind)
        ok(at.run())
        assert not at.error, name
        caption = next(_drawn(c.value) for c in at.caption if "questions from" in c.value)
        assert f"2 questions from {name}" in caption and "topic" in caption, caption
        assert {m.label: m.value for m in at.metric}["Answers"] == "4"

    # no question column: the columns found; no question: an empty set
    at.file_uploader(key="exp_upload").upload("notes.csv", b"title,body\nx,y\n", "text/csv")
    ok(at.run())
    (error,) = [_drawn(e.value) for e in at.error]
    assert "has no question column" in error and "its columns: title, body" in error
    at.file_uploader(key="exp_upload").upload("empty.csv", b"question,topic\n", "text/csv")
    ok(at.run())
    (error,) = [_drawn(e.value) for e in at.error]
    assert "empty.csv holds no question" in error and "\n" not in error


def test_extending_a_saved_run_keeps_its_endpoint_and_judge_and_reaches_every_row(tmp_path):
    from relevancy.cli import main

    from helpers import cli_backends

    with OpenAICompatServer() as srv:
        srv.answer_models = ("toy-a", "toy-b")
        questions = tmp_path / "q.csv"
        pd.DataFrame(
            {"id": ["q1", "q2", "q3"], "question": ["Same (x)?", "Same (x)?", "Other?"]}
        ).to_csv(questions, index=False)
        argv = ["experiment", "--prompt", "brief={user_input}", "--model", "toy-a", "-q"]
        argv += ["--questions", str(questions), "--save-run", "cli [run]"]
        argv += ["--store", str(default_store_path()), "-o", str(tmp_path / "e.csv")]
        assert main([*argv, *cli_backends(srv)]) == 0

        at = visit(app(), "8_Experiments.py")  # the sidebar's judge: the embedded default
        at.radio(key="exp_mode").set_value("extend")
        ok(at.run())
        (label,) = at.selectbox(key="exp_extend_run").options
        assert "\\" not in label and "cli [run]" in label  # plain text, not Markdown
        # the run's endpoint and judge, not the sidebar's
        assert at.text_input(key="exp_x_base_url").value == srv.base_url.rstrip("/")
        assert any("judge: openai:toy-chat writes the questions" in t.value for t in at.text)
        at.text_input(key="exp_x_models").input("toy-b")
        # another endpoint typed: one line, nothing planned
        at.text_input(key="exp_x_base_url").input("http://127.0.0.1:9/v1")
        ok(at.run())
        (error,) = [_drawn(e.value).replace("\u2060", "") for e in at.error]
        assert f"was answered at {srv.base_url.rstrip('/')}, not http://127.0.0.1:9/v1" in error
        assert "put the run's endpoint back in the field" in error
        at.text_input(key="exp_x_base_url").input(srv.base_url)
        ok(at.run())
        assert not at.error
        at.button(key="exp_extend_go").click()
        ok(at.run())
        assert not at.error
        run_id = at.session_state["exp_run"]
        frame = RunStore(default_store_path()).export_frame(run_id)
        assert len(frame) == 12 and frame["score"].notna().all()
        assert set(frame["llm"]) == {"openai:toy-chat"}  # every row by the run's judge
        # each question row reachable, though two ask the same text
        assert at.selectbox(key="exp_question").options == [
            "q1 · Same (x)?",
            "q2 · Same (x)?",
            "q3 · Other?",
        ]
        at.selectbox(key="exp_question").set_value(1)
        ok(at.run())
        assert any(t.value == "Same (x)?" for t in at.text)


def test_no_model_on_the_page_says_pick_a_model():
    at = visit(app(), "8_Experiments.py")
    at.text_input(key="exp_models").input("")
    ok(at.run())
    (error,) = [_drawn(e.value) for e in at.error]
    assert error.startswith("no model: pick a model") and "--model" not in error
