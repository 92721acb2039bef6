"""``relevancy experiment`` end to end: against the toy server taught to answer (prompts inline,
from files and from a TOML file; a run killed with SIGKILL resumes without asking again for an
answer it had), with the embedded model offline, and bad input in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.runs import RunStore
from relevancy.testing.openai_server import OpenAICompatServer

from helpers import app, cli_backends, metrics, ok, visit

MODELS = ("toy-a", "toy-b")
PROMPTS = [
    "--prompt",
    "brief=Answer in one sentence.\n---\n{user_input}",
    "--prompt",
    "detailed=Explain in detail ({topic}): {user_input}",
    "--prompt",
    "plain=@plain.txt",
]


def _questions(path, n: int):
    topics = ["geography", "history", "science", "sport", "music"]
    rows = [
        {
            "question": f"What is notable about {topic} fact number {i}?",
            "topic": topics[i % len(topics)],
        }
        for i, topic in ((i, topics[i % len(topics)]) for i in range(n))
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _answer_requests(srv: OpenAICompatServer) -> list[str]:
    """Each answer request served (200), as its model and messages."""
    return [
        json.dumps([r["body"]["model"], r["body"]["messages"], r["body"].get("seed")])
        for r in srv.requests
        if r["path"] == "/v1/chat/completions"
        and r["status"] == 200
        and r["body"]["model"] in MODELS
    ]


@pytest.fixture
def answering_server():
    with OpenAICompatServer() as srv:
        srv.answer_models = MODELS
        yield srv


def test_three_templates_two_models_into_one_saved_run(
    answering_server, tmp_path, capsys, monkeypatch
):
    srv = answering_server
    (tmp_path / "plain.txt").write_text("{user_input}\n", encoding="utf-8")
    questions = _questions(tmp_path / "q.csv", 5)
    store = tmp_path / "runs.sqlite3"
    monkeypatch.chdir(tmp_path)
    argv = [
        "experiment",
        *PROMPTS,
        "--model",
        "toy-a",
        "--model",
        "toy-b",
        "--questions",
        str(questions),
        "--save-run",
        "prompts v1",
        "--store",
        str(store),
        "-o",
        str(tmp_path / "out.jsonl"),
        "-q",
        *cli_backends(srv),
    ]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "3 templates x 2 models x 5 questions (q.csv) = 30 answers" in out.err
    assert "brief · toy-a" in out.out and "saved run       #1 'prompts v1'" in out.out
    assert len(_answer_requests(srv)) == 30
    runs = RunStore(store)
    inputs = runs.inputs(runs.list_runs()[0].id)
    assert len(inputs) == 30 and inputs["variant"].nunique() == 6
    assert set(inputs["template_text"]) == {
        "Answer in one sentence.\n---\n{user_input}",
        "Explain in detail ({topic}): {user_input}",
        "{user_input}",
    }
    scored = pd.read_json(tmp_path / "out.jsonl", lines=True)
    means = scored.groupby("variant")["score"].mean()
    assert means["brief · toy-a"] - means["plain · toy-b"] > 0.1

    # --estimate on the same experiment: everything is in the cache
    assert main([*argv, "--estimate"]) == 0
    assert "0 answers to request (30 in the cache)" in capsys.readouterr().err


@pytest.mark.slow
def test_a_run_killed_mid_way_resumes_without_asking_twice(tmp_path, monkeypatch):
    """3 templates x 2 models x 50 questions; SIGKILL after some answers; the same command
    again finishes as one run, which the Experiments page opens in Compare (50 pairs). The
    answer requests are counted at the server: each of the 300 asked for, and again only if
    its request was in flight at the kill (at most --concurrency per model)."""
    with OpenAICompatServer(latency=0.02) as srv:
        srv.answer_models = MODELS
        (tmp_path / "plain.txt").write_text("{user_input}\n", encoding="utf-8")
        questions = _questions(tmp_path / "q.csv", 50)
        argv = [
            sys.executable,
            "-m",
            "relevancy.cli",
            "experiment",
            *PROMPTS,
            "--model",
            "toy-a",
            "--model",
            "toy-b",
            "--questions",
            str(questions),
            "--concurrency",
            "2",
            "--save-run",
            "kill test",
            "--store",
            str(tmp_path / "runs.sqlite3"),
            "-o",
            str(tmp_path / "out.csv"),
            "-q",
            *cli_backends(srv),
        ]
        env = dict(os.environ, PYTHONPATH=os.getcwd())
        proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while len(_answer_requests(srv)) < 60 and time.monotonic() < deadline:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=30)
            if proc.stderr:
                proc.stderr.close()
        before = len(_answer_requests(srv))
        assert 60 <= before < 300
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        asked = Counter(_answer_requests(srv))
        assert len(asked) == 300
        # asked again: only what was in flight at the kill, --concurrency per model at most
        assert sum(n - 1 for n in asked.values()) <= 2 * len(MODELS)
        store = RunStore(tmp_path / "runs.sqlite3")
        run = store.list_runs()[0]
        assert (run.name, run.n_rows, run.n_scored) == ("kill test", 300, 300)

    # the run opens in Compare from the Experiments page, two variants paired by question
    monkeypatch.setenv("RELEVANCY_STORE", str(tmp_path / "runs.sqlite3"))
    at = visit(app(), "8_Experiments.py")
    at.session_state["exp_run"] = run.id
    ok(at.run())
    assert at.main.dataframe[0].value["answers"].tolist() == [50] * 6
    at.selectbox(key="exp_cmp_b").set_value("detailed · toy-a")
    at.button(key="exp_open_compare").click()
    ok(at.run())
    assert (at.selectbox(key="cmp_a").value, at.selectbox(key="cmp_b").value) == (
        "brief · toy-a",
        "detailed · toy-a",
    )
    assert metrics(at)["Pairs"] == "50"


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--prompt", "a=Hello {context}"], "names {context}, which the questions lack"),
        (["--prompt", "a={user_input}", "--prompt", "a=Q: {user_input}"], "two templates"),
        (["--prompt", "a"], "write NAME=TEXT or NAME=@FILE"),
        (["--prompt", "a=@nowhere.txt"], "cannot read"),
        (["--prompt", "a={user_input}", "--questions", "empty.csv"], "holds no question"),
        (["--prompt", "a={user_input}", "--questions", "run:nothing"], "no run 'run:nothing'"),
        (["--prompt", "a={user_input}", "--model", "x", "--model", "x"], "given twice"),
        (["bad.toml"], "holds an api_key"),
    ],
)
def test_bad_input_is_one_line(extra, words, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.csv").write_text("question\n", encoding="utf-8")
    (tmp_path / "bad.toml").write_text('api_key = "sk-secret-123"\n', encoding="utf-8")
    models = [] if "--model" in extra or extra == ["bad.toml"] else ["--model", "local"]
    code = main(["experiment", *extra, *models, "--store", str(tmp_path / "s.sqlite3")])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in err
    assert "sk-secret-123" not in err


def test_no_model_and_no_prompt_say_what_to_give(capsys):
    assert main(["experiment", "--prompt", "a={user_input}"]) == 2
    assert "no model: give --model NAME" in capsys.readouterr().err
    assert main(["experiment", "--model", "local"]) == 2
    assert "no prompt template: give --prompt" in capsys.readouterr().err


def test_a_template_without_the_question_is_a_warning(
    answering_server, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    argv = ["experiment", "--prompt", "same=Tell me something.", "--model", "toy-a"]
    argv += ["--questions", str(_questions(tmp_path / "q.csv", 2)), "--estimate"]
    assert main([*argv, *cli_backends(answering_server)]) == 0
    assert "warning: template 'same' has no {user_input}" in capsys.readouterr().err


@pytest.mark.models
@pytest.mark.slow
def test_offline_with_the_embedded_model(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"question": ["What is the capital of France?", "Who wrote Hamlet?"]}).to_csv(
        tmp_path / "q.csv", index=False
    )
    argv = ["experiment", "--prompt", "short=Answer in one short sentence: {user_input}"]
    argv += ["--prompt", "story=Tell a story about: {user_input}", "--model", "local"]
    argv += ["--questions", "q.csv", "--max-tokens", "40", "--strictness", "1", "-q"]
    argv += ["--save-run", "offline"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "short · local" in out and "story · local" in out
    store = RunStore()
    frame = store.inputs(store.list_runs()[0].id)
    assert frame["response"].str.len().gt(0).all()
    assert set(frame["model"]) == {"local"}
