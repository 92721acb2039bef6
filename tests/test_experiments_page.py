"""The Experiments page under AppTest, reached from app.py: templates edited side by side, two
toy models, the estimate, a run with progress, the matrix and summary, an answer, Compare."""

from __future__ import annotations

import pytest

from relevancy.testing.openai_server import OpenAICompatServer

from helpers import app, choose_toy_backend, ok, visit

pytestmark = pytest.mark.slow


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

        at.selectbox(key="exp_cmp_b").set_value("concise · toy-b")
        at.button(key="exp_open_compare").click()
        ok(at.run())
        assert at.selectbox(key="cmp_a").value == "concise · toy-a"
        assert at.selectbox(key="cmp_b").value == "concise · toy-b"
