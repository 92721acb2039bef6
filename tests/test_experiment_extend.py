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


def _toy_c(srv) -> int:
    return sum(
        1
        for r in list(srv.requests)
        if r["path"] == "/v1/chat/completions" and (r["body"] or {}).get("model") == "toy-c"
    )


def test_an_extension_scores_with_the_runs_own_judge_and_refuses_another(base_run, capsys):
    srv, path = base_run
    capsys.readouterr()
    where = "run #1 'base' was scored with"
    for given, line in (
        (["--strictness", "7"], f"{where} --strictness 3, not 7: drop --strictness"),
        (["--mode", "blend"], f"{where} --mode auto, not blend: drop --mode"),
        (["--llm", "local"], f"{where} --llm openai:toy-chat, not local: drop --llm"),
    ):
        argv = ["experiment", "--extend-run", "base", "--store", str(path), "-q", "--model"]
        assert main([*argv, "toy-b", *given]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and line in err[0], err
    assert len(_answer_requests(srv)) == 10  # nothing asked

    # no judge option (and no endpoint) given: the run's own, at the run's own server
    argv = ["experiment", "--extend-run", "base", "--store", str(path), "-q", "--model", "toy-b"]
    assert main(argv) == 0, capsys.readouterr().err
    frame = RunStore(path).export_frame(1)
    assert set(frame["llm"]) == {"openai:toy-chat"} and set(frame["strictness"]) == {3}
    assert frame["score"].notna().all() and len(_answer_requests(srv)) == 20
    # the same judge given again is no difference
    assert _extend(srv, path, "--prompt", "other=Q: {user_input}", "--strictness", "3") == 0


def test_the_runs_endpoint_is_kept_without_a_key_and_used_by_an_extension(
    base_run, capsys, monkeypatch
):
    srv, path = base_run
    made = RunStore(path).get_run(1).settings
    assert made["experiment"]["base_url"] == srv.base_url.rstrip("/")
    assert made["judge"]["base_url"] == srv.base_url.rstrip("/")
    assert "api_key" not in str(made) and "sk-" not in str(made)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    capsys.readouterr()
    argv = ["experiment", "--extend-run", "base", "--store", str(path), "-q", "--model", "toy-b"]
    assert main([*argv, "--base-url", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: run #1 'base' was answered at {srv.base_url.rstrip('/')}, not "
        "http://127.0.0.1:9/v1: drop --base-url (the new variants are answered where the old "
        "ones were)"
    ]
    assert main(argv) == 0, capsys.readouterr().err
    assert len(_answer_requests(srv)) == 20  # at the run's server, not $OPENAI_BASE_URL's


def test_public_url_keeps_no_secret():
    from relevancy.experiments.run import public_url

    assert public_url("http://user:pw@host:8080/v1/?api-key=abc&x=1#frag") == "http://host:8080/v1"
    assert public_url("https://api.openai.com/v1") == "https://api.openai.com/v1"
    assert public_url(None) is None and public_url("not a url") is None


def test_failed_answers_of_an_extension_are_asked_again_in_place(base_run, capsys):
    srv, path = base_run
    store = RunStore(path)
    before = store.export_frame(1)
    capsys.readouterr()
    assert _extend(srv, path, "--model", "toy-c") == 1  # the server does not know toy-c
    err = capsys.readouterr().err
    assert "10 answers failed" in err and "run again to retry them" in err
    assert _toy_c(srv) == 10
    failed_run = store.export_frame(1)
    assert failed_run["answer_error"].iloc[10:].str.contains("HTTP 404").all()

    srv.answer_models = (*MODELS, "toy-c")  # now it does: the same command retries them
    assert _extend(srv, path, "--model", "toy-c") == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "10 failed answers asked again" in err
    assert _toy_c(srv) == 20 and len(_answer_requests(srv)) == 10  # only those, none else
    after = store.export_frame(1)
    run = store.get_run(1)
    assert (run.n_rows, run.n_scored) == (20, 20)  # filled in place, no row added
    kept = ["user_input", "response", "variant", "score", "reason"]
    pd.testing.assert_frame_equal(after[kept].iloc[:10], before[kept])  # the rest untouched
    new = after.iloc[10:]
    assert new["answer_error"].isna().all() and new["response"].str.len().gt(0).all()
    assert new["score"].notna().all()
    assert (new["variant"] == "brief · toy-c").sum() == 5 and new["id"].tolist() == (
        failed_run["id"].iloc[10:].tolist()
    )
    # nothing left to retry: one line
    assert _extend(srv, path, "--model", "toy-c") == 2
    assert "already has every variant asked for" in capsys.readouterr().err


def test_two_runs_with_one_name_are_told_apart_by_id(base_run, capsys, monkeypatch):
    srv, path = base_run
    questions = _questions(path.parent / "q2.csv", 2)
    argv = ["experiment", "--prompt", "p={user_input}", "--model", "toy-a", "--questions"]
    argv += [str(questions), "--save-run", "base", "--store", str(path), "-q"]
    assert main([*argv, *cli_backends(srv)]) == 0
    capsys.readouterr()
    assert _extend(srv, path, "--model", "toy-b") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: 2 runs are named 'base' (#2, #1): give --extend-run ID, e.g. --extend-run 2"
    ]
    assert (
        main(["experiment", "--extend-run", "1", "--store", str(path), "-q", "--model", "toy-b"])
        == 0
    )


def test_a_rerun_of_an_experiment_fills_its_failed_answers_in_place(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.sqlite3"
    with OpenAICompatServer() as srv:
        srv.answer_models = MODELS  # not toy-c: its answers fail
        questions = _questions(tmp_path / "q.csv", 5)
        argv = ["experiment", "--prompt", "plain={user_input}", "--model", "toy-a", "--model"]
        argv += ["toy-c", "--questions", str(questions), "--save-run", "x", "--store", str(path)]
        argv += ["-q", *cli_backends(srv)]
        assert main(argv) == 1
        assert "run again to retry them" in capsys.readouterr().err
        store = RunStore(path)
        before = store.export_frame(1)
        assert before["answer_error"].iloc[5:].str.contains("HTTP 404").all()

        srv.answer_models = (*MODELS, "toy-c")
        assert main(argv) == 0
        err = capsys.readouterr().err
        assert "rerun           run #1 'x' is this experiment: 5 failed answers asked again" in err
        assert _toy_c(srv) == 10 and len(_answer_requests(srv)) == 5  # only the failed ones
        assert [r.id for r in store.list_runs()] == [1]  # the same run, filled in place
        after = store.export_frame(1)
        kept = ["user_input", "response", "variant", "score", "reason"]
        pd.testing.assert_frame_equal(after[kept].iloc[:5], before[kept].iloc[:5])
        assert after["answer_error"].isna().all() and after["score"].notna().all()
        written = pd.read_csv(tmp_path / "experiment.relevancy.csv")
        assert len(written) == 10 and written["score"].notna().all()
