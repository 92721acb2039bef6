"""``--batch-api`` when the batch goes wrong, against the toy server's ``batch_fault``: nothing
strands a rerun, nothing is a traceback, nothing unusable is cached, and what is scored live is
said with what it cost.

A batch that ends failed or expired leaves its answers to the live run; one left "submitted"
in ``OUTPUT.batch.json`` that has since died, or that the server does not know, is replaced by a
new batch; a sidecar cut short is read for the batch it names; a server that stops while the
batch is polled is one line, and the same command picks the batch up again. Output lines that
are missing, cut short, failed, short of choices or not the JSON asked for are generated live.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.scoring.batch_api import sidecar_path
from relevancy.testing.openai_server import CHAT_MODEL, OpenAICompatServer

from helpers import ROOT, cli_backends, write_rows

PRICE = ["--price", f"{CHAT_MODEL}=1/2"]


def pairs(n: int) -> list[dict[str, str]]:
    return [
        {"question": f"What does widget {i} do?", "answer": f"Widget {i} tightens line {i}."}
        for i in range(n)
    ]


def chat_requests(srv: OpenAICompatServer) -> int:
    return sum(r["path"].endswith("/chat/completions") for r in srv.requests)


def argv(src: Path, out: Path, srv: OpenAICompatServer) -> list[str]:
    return ["score", str(src), "-o", str(out), "--batch-api", *PRICE, *cli_backends(srv)]


def score(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def submitted_then_killed(src: Path, out: Path, srv: OpenAICompatServer) -> dict[str, object]:
    """``relevancy score --batch-api`` in a child, killed once its batch is submitted: the
    sidecar says "submitted" and the batch goes on at the server."""
    child = subprocess.Popen(
        [sys.executable, "-m", "relevancy.cli", *argv(src, out, srv)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
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
    saved = json.loads(sidecar_path(out).read_text())
    assert saved["status"] == "submitted"
    return saved


@pytest.mark.parametrize("fault", ["failed", "expired"])
def test_a_batch_that_ends_without_output_leaves_its_answers_to_the_live_run(
    tmp_path, capsys, fault
) -> None:
    src, out = write_rows(tmp_path / "pairs.csv", pairs(6)), tmp_path / "out.csv"
    with OpenAICompatServer(batch_delay=0.2, batch_fault=fault) as srv:
        code, stdout, err = score(argv(src, out, srv), capsys)
        assert code == 0, err
        live = chat_requests(srv)
        assert live > 0  # the answers were generated live
        saved = json.loads(sidecar_path(out).read_text())
        assert saved["status"] == fault  # not "submitted": a rerun does not wait on it
        again, _, err2 = score(argv(src, out, srv), capsys)
        assert again == 0 and srv.stats()["batches"] == 1 and chat_requests(srv) == live
    assert f"note: batch {saved['batch_id']} {fault} (" in err
    assert ": its 6 answers are generated live" in err
    assert (
        f"batch           {saved['batch_id']} {fault}: 6 requests; 6 answers generated live" in err
    )
    assert "batch, live     6 rows generated live: " in stdout and "at the live price" in stdout
    assert "no batch needed" in err2
    assert pd.read_csv(out)["score"].notna().all()


def test_a_rerun_replaces_a_batch_that_died_while_nobody_waited(tmp_path, capsys) -> None:
    # the probe: OUTPUT.batch.json still said "submitted" and every rerun polled the dead batch
    src, out = write_rows(tmp_path / "pairs.csv", pairs(6)), tmp_path / "out.csv"
    with OpenAICompatServer(batch_delay=3.0) as srv:
        first = submitted_then_killed(src, out, srv)
        srv.batch_fault = "expired"  # the batch expires before anyone looks again
        code, _, err = score(argv(src, out, srv), capsys)
        assert code == 0, err
        assert srv.stats()["batches"] == 2  # a new one, which expired too: then live
    assert f"note: batch {first['batch_id']} expired (" in err
    assert f"({out.name}.batch.json named it): a new batch is submitted" in err
    assert pd.read_csv(out)["score"].notna().all()


def test_a_sidecar_cut_short_resumes_the_batch_it_names(tmp_path, capsys) -> None:
    src, out = write_rows(tmp_path / "pairs.csv", pairs(6)), tmp_path / "out.csv"
    with OpenAICompatServer(batch_delay=3.0) as srv:
        first = submitted_then_killed(src, out, srv)
        text = sidecar_path(out).read_text()
        sidecar_path(out).write_text(text[: text.index('"requests"')])  # cut short
        code, _, err = score(argv(src, out, srv), capsys)
        assert code == 0, err
        assert srv.stats()["batches"] == 1 and chat_requests(srv) == 0  # the same batch
    assert f"note: {out.name}.batch.json was cut short: waiting for the batch it names, " in err
    assert f"{first['batch_id']} resumed: " in err
    assert pd.read_csv(out)["score"].notna().all()


def test_a_sidecar_that_names_no_batch_is_one_line(tmp_path, capsys, toy_server) -> None:
    src, out = write_rows(tmp_path / "pairs.csv", pairs(2)), tmp_path / "out.csv"
    sidecar_path(out).write_text('{"batch')
    code = main(argv(src, out, toy_server))
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines()[-1] == (
        f"error: {sidecar_path(out)} is cut short or not JSON and names no batch: delete it and "
        "run again (a new batch is submitted)"
    )
    assert toy_server.stats()["batches"] == 0


def test_a_sidecar_naming_a_batch_the_server_does_not_know_submits_a_new_one(
    tmp_path, capsys
) -> None:
    # before: openai.NotFoundError, a traceback, on every rerun
    src, out = write_rows(tmp_path / "pairs.csv", pairs(4)), tmp_path / "out.csv"
    with OpenAICompatServer(batch_delay=3.0) as srv:
        saved = submitted_then_killed(src, out, srv)
        sidecar_path(out).write_text(json.dumps({**saved, "batch_id": "batch_nobody_knows"}))
        srv.batch_delay = 0.1
        code, _, err = score(argv(src, out, srv), capsys)
        assert code == 0, err
        assert srv.stats()["batches"] == 2 and chat_requests(srv) == 0
        where = srv.base_url
    assert f"note: batch batch_nobody_knows is not known to {where} " in err
    assert "a new batch is submitted" in err
    assert json.loads(sidecar_path(out).read_text())["status"] == "completed"
    assert pd.read_csv(out)["score"].notna().all()


def test_a_server_that_stops_while_the_batch_is_polled_is_one_line(tmp_path) -> None:
    src, out = write_rows(tmp_path / "pairs.csv", pairs(4)), tmp_path / "out.csv"
    srv = OpenAICompatServer(batch_delay=60.0).start()
    where = srv.base_url
    child = subprocess.Popen(
        [sys.executable, "-m", "relevancy.cli", *argv(src, out, srv), "--timeout", "2"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not sidecar_path(out).exists():
            assert child.poll() is None
            time.sleep(0.05)
    finally:
        srv.stop()
    _, err = child.communicate(timeout=240)
    batch_id = json.loads(sidecar_path(out).read_text())["batch_id"]
    assert child.returncode == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot reach {where}")
    assert last.endswith(
        f"while waiting for batch {batch_id}: the batch goes on there; run the same command "
        f"again to pick up {batch_id}"
    )
    assert json.loads(sidecar_path(out).read_text())["status"] == "submitted"  # kept


@pytest.mark.parametrize(
    "fault, said",
    [
        ("truncated", "unreadable"),
        ("missing", "3 missing from its output"),
        ("unknown_ids", "3 under unknown custom_ids (ignored)"),
        ("unusable", "6 failed, short or unusable"),
        ("few_choices", "6 failed, short or unusable"),
    ],
)
def test_answers_the_batch_did_not_give_back_usably_are_generated_live(
    tmp_path, capsys, fault, said
) -> None:
    src, out = write_rows(tmp_path / "pairs.csv", pairs(6)), tmp_path / "out.csv"
    with OpenAICompatServer(batch_delay=0.1, batch_fault=fault) as srv:
        code, stdout, err = score(argv(src, out, srv), capsys)
        assert code == 0, err
        live = chat_requests(srv)
        again, _, err2 = score(argv(src, out, srv), capsys)  # the rerun: all in the cache
        assert again == 0 and chat_requests(srv) == live and srv.stats()["batches"] == 1
    line = next(x for x in err.splitlines() if x.startswith("batch "))
    assert said in line and "answers generated live, at the live price" in line
    generated = int(line.split("; ")[-2].split()[0])
    assert live >= generated > 0
    assert f"batch, live     {generated} rows generated live: " in stdout
    assert "no batch needed" in err2
    frame = pd.read_csv(out)
    assert frame["score"].notna().all()
    # nothing unusable was cached and scored: every row rests on all its questions
    assert (frame["questions_used"] == frame["strictness"]).all()
    assert not frame["reason"].eq("incomplete_generation").any()


def test_a_short_set_from_the_batch_is_not_cached(tmp_path, capsys) -> None:
    # the batch answered one choice where three were asked: cached, each row would rest on one
    # question three times over, never topped up
    src, out = write_rows(tmp_path / "pairs.csv", pairs(3)), tmp_path / "out.csv"
    with OpenAICompatServer(batch_delay=0.1, batch_fault="few_choices") as srv:
        assert main(argv(src, out, srv)) == 0
    capsys.readouterr()
    for questions in pd.read_csv(out)["generated_questions"]:
        asked = json.loads(questions)
        assert len(set(asked)) == len(asked) == 3, asked
