"""``relevancy score --batch-api`` against the toy server's /v1/files and /v1/batches: a batch
job end to end (no live generation request, the same scores as a live run, the batch id kept
with the run), and one interrupted after it was submitted, then resumed without a second batch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pandas as pd

from relevancy.cli import main
from relevancy.runs import RunStore
from relevancy.scoring.batch_api import sidecar_path
from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL, OpenAICompatServer

from helpers import cli_backends, write_rows


def pairs(n: int) -> list[dict[str, str]]:
    return [
        {
            "question": f"What does widget {i} do?",
            "answer": f"Widget {i} tightens the bolts on line {i % 3}.",
        }
        for i in range(n)
    ]


def chat_requests(srv: OpenAICompatServer) -> int:
    return sum(r["path"].endswith("/chat/completions") for r in srv.requests)


def test_a_batch_job_end_to_end_scores_like_a_live_run(tmp_path, capsys) -> None:
    src = write_rows(tmp_path / "pairs.csv", pairs(10))
    out, live = tmp_path / "out.csv", tmp_path / "live.csv"
    with OpenAICompatServer(batch_delay=0.2) as srv:
        code = main(
            [
                "score",
                str(src),
                "-o",
                str(out),
                "--batch-api",
                "--save-run",
                "b",
                "--price",
                f"{CHAT_MODEL}=1/2",
                "--price",
                f"{EMBEDDING_MODEL}=0.1",
                *cli_backends(srv),
            ]
        )
        err = capsys.readouterr().err
        assert code == 0, err
        assert srv.stats()["batches"] == 1 and chat_requests(srv) == 0  # no live generation
        assert (
            main(["score", str(src), "-o", str(live), "-q", "--no-cache", *cli_backends(srv)]) == 0
        )
    saved = json.loads(sidecar_path(out).read_text())
    assert saved["status"] == "completed" and saved["requests"] == 10
    assert f"batch           {saved['batch_id']} submitted: 10 requests" in err
    assert "at the batch price (half of live" in err and "batch cost    about" in err
    batch, again = pd.read_csv(out), pd.read_csv(live)
    assert list(batch.columns) == list(again.columns)
    assert batch["score"].notna().all()
    assert batch["score"].round(6).tolist() == again["score"].round(6).tolist()
    run = RunStore().list_runs()[-1]
    assert RunStore().get_run(run.id).settings["batch_api"]["batch_id"] == saved["batch_id"]


def test_an_interrupted_batch_is_resumed_not_paid_twice(tmp_path, capsys) -> None:
    src = write_rows(tmp_path / "pairs.csv", pairs(6))
    out = tmp_path / "out.csv"
    with OpenAICompatServer(batch_delay=3.0) as srv:
        argv = ["score", str(src), "-o", str(out), "--batch-api", *cli_backends(srv)]
        child = subprocess.Popen(
            [sys.executable, "-m", "relevancy.cli", *argv],
            env=os.environ.copy(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while srv.stats()["batches"] == 0 or not sidecar_path(out).exists():
                assert child.poll() is None, "the command ended before submitting its batch"
                time.sleep(0.05)
        finally:
            child.kill()
            child.wait(timeout=30)
        first = json.loads(sidecar_path(out).read_text())
        assert first["status"] == "submitted" and not out.exists()
        code = main(argv)  # the same command again
        err = capsys.readouterr().err
        assert code == 0, err
        assert srv.stats()["batches"] == 1  # the same batch, not a second one
        assert chat_requests(srv) == 0
    assert f"{first['batch_id']} resumed: 6 requests" in err
    assert json.loads(sidecar_path(out).read_text())["batch_id"] == first["batch_id"]
    assert pd.read_csv(out)["score"].notna().all()


def test_batch_api_needs_the_cache(tmp_path, capsys, toy_server) -> None:
    src = write_rows(tmp_path / "pairs.csv", pairs(2))
    argv = ["score", str(src), "-o", str(tmp_path / "o.csv"), "--batch-api", "--no-cache"]
    assert main([*argv, *cli_backends(toy_server)]) == 2
    assert "--batch-api keeps the batch's questions in the cache" in capsys.readouterr().err
    assert toy_server.stats()["batches"] == 0
