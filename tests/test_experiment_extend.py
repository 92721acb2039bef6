"""``relevancy experiment --extend-run``: a saved experiment run gains another template and
another model in place. Against the toy server taught to answer, counting its requests: only the
new variants are asked for, the run keeps its id, rows and scores, a template name reused with
another text and an extension with nothing new are one line, and a store that cannot be written
is a non-zero exit that changes nothing (the answers stay cached for the next try)."""

from __future__ import annotations

import sqlite3
import threading
import time

import pandas as pd
import pytest
from test_experiment_cli import _answer_requests, _questions

from relevancy.cli import main
from relevancy.runs import RunStore
from relevancy.testing.openai_server import OpenAICompatServer

from helpers import cli_backends

MODELS = ("toy-a", "toy-b")


@pytest.fixture
def base_run(tmp_path, monkeypatch):
    """A saved run of 2 templates x toy-a x 5 questions, and the server that answered it."""
    monkeypatch.chdir(tmp_path)
    with OpenAICompatServer() as srv:
        srv.answer_models = MODELS
        questions = _questions(tmp_path / "q.csv", 5)
        argv = ["experiment", "--prompt", "brief=Answer in one sentence.\n---\n{user_input}"]
        argv += ["--prompt", "plain={user_input}", "--model", "toy-a", "--max-tokens", "50"]
        argv += ["--questions"]
        argv += [str(questions), "--save-run", "base", "--store", str(tmp_path / "s.sqlite3")]
        assert main([*argv, "-q", *cli_backends(srv)]) == 0
        yield srv, tmp_path / "s.sqlite3"


def _extend(srv, store, *extra):
    return main(
        ["experiment", "--extend-run", "base", "--store", str(store), "-q", *extra]
        + cli_backends(srv)
    )


def test_another_template_and_model_answer_only_the_new_variants(base_run, capsys):
    srv, path = base_run
    store = RunStore(path)
    run = store.list_runs()[0]
    before = store.export_frame(run.id)
    asked = len(_answer_requests(srv))
    assert asked == 10
    capsys.readouterr()

    code = _extend(
        srv,
        path,
        "--prompt",
        "detailed=Explain in detail ({topic}): {user_input}",
        "--model",
        "toy-b",
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "new variants: brief · toy-b, plain · toy-b, detailed · toy-a, detailed · toy-b" in (
        out.err
    )
    new = _answer_requests(srv)[asked:]
    assert len(new) == 20  # 4 new variants x 5 questions, nothing asked again
    caps = {
        r["body"]["max_tokens"]
        for r in srv.requests
        if r["path"] == "/v1/chat/completions" and r["body"]["model"] in MODELS
    }
    assert caps == {50}  # the new variants answered under the run's own token cap
    assert not any("toy-a" in r and "Explain in detail" not in r for r in new)

    runs = store.list_runs()
    assert [r.id for r in runs] == [run.id]  # the same run, no other
    after = store.export_frame(run.id)
    assert (runs[0].n_rows, runs[0].n_scored) == (30, 30)
    kept = ["user_input", "response", "variant", "score", "reason"]
    pd.testing.assert_frame_equal(after[kept].iloc[:10], before[kept])  # untouched
    assert set(after["variant"]) == {
        f"{t} · {m}" for t in ("brief", "plain", "detailed") for m in MODELS
    }
    made = runs[0].settings["experiment"]
    assert [t["name"] for t in made["templates"]] == ["brief", "plain", "detailed"]
    assert made["models"] == ["toy-a", "toy-b"]
    assert "detailed · toy-b" in out.out and "saved run       #1 'base'" in out.out

    # nothing new asked for: one line, nothing sent
    assert _extend(srv, path, "--model", "toy-b") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already has every variant asked for" in err[0]
    assert len(_answer_requests(srv)) == asked + 20


def test_a_name_the_run_has_with_another_text_is_one_line(base_run, capsys):
    srv, path = base_run
    capsys.readouterr()
    assert _extend(srv, path, "--prompt", "plain=Q: {user_input}") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already has a template 'plain' with another text" in err[0]
    assert _extend(srv, path, "--model", "toy-b", "--temperature", "0.7") == 2
    assert "answered with temperature 0.0, not 0.7" in capsys.readouterr().err
    assert _extend(srv, path, "--model", "toy-b", "--questions", "q.csv") == 2
    assert "drop --questions" in capsys.readouterr().err
    assert main(["experiment", "--extend-run", "nope", "--store", str(path), "--model", "x"]) == 2
    assert "no run 'nope' to extend" in capsys.readouterr().err


def test_a_store_that_cannot_be_written_fails_and_changes_nothing(base_run, capsys, monkeypatch):
    srv, path = base_run
    store = RunStore(path)
    before = store.export_frame(1)
    asked = len(_answer_requests(srv))
    monkeypatch.setenv("RELEVANCY_STORE_WAIT", "0.3")
    srv.latency = 0.2  # one answer at a time, slow enough to take the store meanwhile
    holder = sqlite3.connect(path, timeout=5, check_same_thread=False)
    taken = threading.Event()

    def take_the_store() -> None:
        while not any((r["body"] or {}).get("model") == "toy-b" for r in list(srv.requests)):
            time.sleep(0.005)
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the store
        taken.set()

    thread = threading.Thread(target=take_the_store, daemon=True)
    thread.start()
    try:
        code = _extend(srv, path, "--model", "toy-b", "--concurrency", "1")
    finally:
        thread.join(timeout=10)
        holder.rollback()
        holder.close()
    err = capsys.readouterr().err
    assert taken.is_set()
    assert code not in (0, None) and "Traceback" not in err, err
    said = err.strip().splitlines()[-1]  # after the plan's two lines
    assert said.startswith("error: ") and "RELEVANCY_STORE_WAIT" in said
    assert len(_answer_requests(srv)) == asked + 10  # answered, then the write failed
    run = store.get_run(1)
    assert (run.n_rows, run.n_scored) == (10, 10)
    pd.testing.assert_frame_equal(store.export_frame(1), before)

    # the same command again: the answers come from the cache, the rows land
    srv.latency = 0.0
    assert _extend(srv, path, "--model", "toy-b") == 0
    assert len(_answer_requests(srv)) == asked + 10
    assert store.get_run(1).n_rows == 20 and store.get_run(1).n_scored == 20
