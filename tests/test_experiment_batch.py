"""``relevancy experiment --batch-api`` against the toy server's /v1/files and /v1/batches: the
answers from one batch per model and the judge's generations from one more (no live chat
request at all), the same answers as live ones at half their cost; a command killed while its
batches run, then run again, waits for the same batches instead of paying for new ones; a batch
that fails leaves its answers to be asked for live, said in a note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pandas as pd

from relevancy.cli import main
from relevancy.experiments.batch import answers_sidecar
from relevancy.testing.openai_server import OpenAICompatServer

from helpers import cli_backends

MODELS = ("toy-a", "toy-b")


def _questions(path, n: int):
    pd.DataFrame(
        {"question": [f"What does widget {i} do on line {i % 3}?" for i in range(n)]}
    ).to_csv(path, index=False)
    return path


def _argv(tmp_path, srv, out: str) -> list[str]:
    argv = ["experiment", "--prompt", "brief=Answer in one sentence.\n---\n{user_input}"]
    argv += ["--prompt", "plain={user_input}", "--model", "toy-a", "--model", "toy-b"]
    argv += ["--questions", str(_questions(tmp_path / "q.csv", 5)), "-o", str(tmp_path / out)]
    argv += ["--price", "toy-a=1/2", "--price", "toy-b=1/2", "-q"]
    return [*argv, *cli_backends(srv)]


def _live_chat(srv: OpenAICompatServer) -> int:
    return sum(r["path"].endswith("/chat/completions") for r in srv.requests)


def test_answers_and_judging_from_batches_like_a_live_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with OpenAICompatServer(batch_delay=0.2) as srv:
        srv.answer_models = MODELS
        code = main([*_argv(tmp_path, srv, "batch.csv"), "--batch-api"])
        err = capsys.readouterr().err
        assert code == 0, err
        assert srv.stats()["batches"] == 3  # one per answer model, one for the judge
        assert _live_chat(srv) == 0
        assert "answer batch    toy-a: batch_" in err and "10 requests, 10 answered" in err
        assert "judge batch     batch_" in err
        live_code = main([*_argv(tmp_path, srv, "live.csv"), "--no-cache"])
        assert live_code == 0, capsys.readouterr().err
    batch = pd.read_json(tmp_path / "batch.answers.jsonl", lines=True)
    live = pd.read_json(tmp_path / "live.answers.jsonl", lines=True)
    assert len(batch) == 20 and batch["answer_error"].isna().all()
    assert batch["response"].tolist() == live["response"].tolist()
    assert (batch["answer_cost"] * 2).round(12).tolist() == live["answer_cost"].round(12).tolist()
    assert pd.read_csv(tmp_path / "batch.csv")["score"].notna().all()
    saved = json.loads(answers_sidecar(tmp_path / "batch.csv", "toy-b").read_text())
    assert saved["status"] == "completed" and saved["requests"] == 10


def test_a_killed_command_resumes_its_batches_not_paying_twice(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with OpenAICompatServer(batch_delay=3.0) as srv:
        srv.answer_models = MODELS
        argv = [*_argv(tmp_path, srv, "out.csv"), "--batch-api"]
        sidecar = answers_sidecar(tmp_path / "out.csv", "toy-a")
        child = subprocess.Popen(
            [sys.executable, "-m", "relevancy.cli", *argv],
            cwd=tmp_path,
            env=dict(os.environ, PYTHONPATH=os.getcwd()),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while srv.stats()["batches"] == 0 or not sidecar.exists():
                assert child.poll() is None, "the command ended before submitting its batch"
                time.sleep(0.05)
        finally:
            child.kill()
            child.wait(timeout=30)
        first = json.loads(sidecar.read_text())
        assert first["status"] == "submitted"
        assert main(argv) == 0, capsys.readouterr().err
        err = capsys.readouterr().err
        # toy-a's batch waited for again; toy-b's and the judge's submitted once each
        assert srv.stats()["batches"] == 3
        assert _live_chat(srv) == 0
    assert f"toy-a: {first['batch_id']} resumed, 10 requests, 10 answered" in err
    assert pd.read_csv(tmp_path / "out.csv")["score"].notna().all()


def test_a_failed_batch_leaves_its_answers_to_live_requests(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with OpenAICompatServer(batch_fault="failed") as srv:
        srv.answer_models = MODELS
        code = main([*_argv(tmp_path, srv, "out.csv"), "--batch-api"])
        err = capsys.readouterr().err
        assert code == 0, err
        answered_live = [
            r
            for r in srv.requests
            if r["path"].endswith("/chat/completions") and r["body"]["model"] in MODELS
        ]
        assert len(answered_live) == 20
    assert "note: batch batch_" in err and "failed" in err and "asked for live" in err
    assert pd.read_json(tmp_path / "out.answers.jsonl", lines=True)["answer_error"].isna().all()
