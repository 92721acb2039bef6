"""The fault probe's rate-limit cases against the toy server, over HTTP as a user meets them: a
429 that asks for an hour and a window that resets in a day end the run at once in the server's
words (no hang), 429s on every third request without Retry-After lose no row, ``nan`` and
``inf`` in ``x-ratelimit-remaining-*`` are no headers, and the progress line says when the run
waits for the rate limit while the summary counts the 429s and the time waited.

Runs that could hang before the fix go through ``relevancy score`` in a child process, so a
hang is a failure of this test, not of the session; the assertions are counts and words.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pandas as pd
import pytest

from relevancy.backends import forget_controllers
from relevancy.cli import main
from relevancy.testing._cli import parse_args, server_options
from relevancy.testing.openai_server import OpenAICompatServer

from helpers import ROOT, cli_backends, toy_metric, write_rows

#: a guard against a hang (the runs take seconds): past it, the test fails
HANG = 240


@pytest.fixture(autouse=True)
def fresh_controllers() -> Iterator[None]:
    """Each test's models start with fresh rate controllers, and leave none behind (a port the
    system hands out again would otherwise find the last test's, its state and its longest
    wait)."""
    forget_controllers()
    yield
    forget_controllers()


def rows(n: int) -> list[dict[str, str]]:
    return [
        {"question": f"What does widget {i} do?", "answer": f"Widget {i} tightens bolts."}
        for i in range(n)
    ]


def score_in_a_child(srv: OpenAICompatServer, src, out) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "relevancy.cli",
        "score",
        str(src),
        "-o",
        str(out),
        "--no-cache",
        *cli_backends(srv),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=HANG, env=env, cwd=ROOT)


def test_a_429_asking_for_an_hour_ends_the_run_at_once(tmp_path) -> None:
    # the probe: --fault-rate 1 --fault-kinds 429 --retry-after 3600, 60 rows still running
    # at 300 s after 8-9 requests, nothing written
    src, out = write_rows(tmp_path / "rows.csv", rows(20)), tmp_path / "out.csv"
    options = server_options(
        parse_args(["--fault-rate", "1", "--fault-kinds", "429", "--retry-after", "3600"])
    )
    with OpenAICompatServer(**{**options, "port": 0}) as srv:
        done = score_in_a_child(srv, src, out)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "FAIL: none of the 20 rows could be scored" in done.stderr
    errors = pd.read_csv(out)["error"]
    assert len(errors) == 20
    assert errors.str.contains("the server asks to wait 1.0 h more").all(), errors[0]
    assert errors.str.contains("retry-after: 3600;").all()  # its header and its message:
    assert errors.str.contains('"Rate limit reached for requests.').all()
    assert errors.str.contains("past the longest wait of 300 s").all()
    assert "requests refused (429)" in done.stdout


def test_a_window_that_resets_in_a_day_ends_the_run_at_once(tmp_path) -> None:
    src, out = write_rows(tmp_path / "rows.csv", rows(20)), tmp_path / "out.csv"
    argv = [
        "--header",
        "x-ratelimit-remaining-requests=0",
        "--header",
        "x-ratelimit-reset-requests=23h",
    ]
    with OpenAICompatServer(**{**server_options(parse_args(argv)), "port": 0}) as srv:
        done = score_in_a_child(srv, src, out)
        sent = srv.stats()["by_path"]
    assert "Traceback" not in done.stderr
    frame = pd.read_csv(out)
    assert len(frame) == 20
    failed = frame["error"].dropna()
    assert len(failed) >= 12  # the first requests, sent before any answer, were answered
    said = "x-ratelimit-remaining-requests: 0, x-ratelimit-reset-requests: 23h"
    assert failed.str.contains(said, regex=False).all(), failed.iloc[0]
    assert sent["/v1/chat/completions"] <= 8  # that first burst: then none may go


def test_429s_on_every_third_request_without_retry_after_lose_no_row() -> None:
    # before, each 429 that names no wait doubled the backoff (1, 2, 4, 8, 16 s) and an answer
    # never reset it: here, with a longest wait of 30 s, 5 to 8 of the 16 rows failed
    plan = server_options(parse_args(["--fault-pattern", "ok,ok,429", "--no-retry-after"]))
    with OpenAICompatServer(faults=plan["faults"], retry_after=None) as srv:
        m = toy_metric(srv, cache=False)
        for backend in (m.llm, m.embeddings):
            backend.rate.max_wait = 30.0
        results = m.score_many(
            pd.DataFrame(rows(16)).rename(columns={"question": "user_input", "answer": "response"})
        )
        stats = srv.stats()
    assert [r.error for r in results if r.error] == []
    assert stats["by_fault"]["429"] >= 5
    refused = [r for r in srv.requests if r["status"] == 429]
    assert all(r["fault"] == "429" for r in refused)


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_remaining_nan_or_inf_is_no_header(value) -> None:
    # before: every row NaN ("cannot convert float NaN to integer") and, with nan, 7x requests
    lying = {"x-ratelimit-remaining-requests": value, "x-ratelimit-remaining-tokens": value}
    with OpenAICompatServer(headers=lying) as srv:
        m = toy_metric(srv, cache=False)
        results = m.score_many(
            pd.DataFrame(rows(10)).rename(columns={"question": "user_input", "answer": "response"})
        )
        chat = srv.stats()["by_path"]["/v1/chat/completions"]
        said = [r for r in srv.requests if r["path"] == "/v1/chat/completions"]
    assert [r.error for r in results if r.error] == []
    assert chat == 10  # one request a row, as without the header
    assert said and all(r["status"] == 200 for r in said)


def test_the_progress_line_says_it_waits_and_the_summary_counts_429s(tmp_path, capsys) -> None:
    src = write_rows(tmp_path / "rows.csv", rows(4))
    with OpenAICompatServer(retry_after=2.0) as srv:
        srv.script([None, None, None, "429", "429"])  # the preflight's three, then two 429s
        code = main(
            ["score", str(src), "-o", str(tmp_path / "out.csv"), "--no-cache", *cli_backends(srv)]
        )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "waiting for the rate limit" in captured.err  # the bar, while no row finished
    line = next(x for x in captured.out.splitlines() if x.startswith("rate limit"))
    assert line.startswith("rate limit      2 requests refused (429) and sent again; ")
    waited = float(line.split("; ")[1].split(" s waiting")[0])
    assert waited >= 1.5  # the server asked for 2 s: the wait is counted
