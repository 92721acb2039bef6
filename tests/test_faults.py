"""Faulty endpoints: a large batch against a misbehaving server finishes, row by row."""

import collections
import math
import re

import pytest

from relevancy.cli import main
from relevancy.testing.openai_server import FaultPlan, OpenAICompatServer

from helpers import cli_backends, toy_metric, write_rows

# Every failed row must say specifically what went wrong.
SPECIFIC = re.compile(
    r"HTTP (429|500|503)|timed out|cannot reach|malformed response|empty content|"
    r"returned \d+ embeddings for \d+ texts|mixed dimensions|no choices|unusable output|"
    r"no embeddings"
)


def rows(n):
    topics = ["France", "Japan", "Brazil", "Kenya", "Canada", "Norway", "Egypt", "Chile"]
    return [
        (
            f"What is the capital of {topics[i % 8]} (case {i})?",
            f"The capital of {topics[i % 8]} is a large city; this is answer {i}.",
        )
        for i in range(n)
    ]


def metric_for(srv, *, timeout=1.0, max_retries=3):
    client = {"timeout": timeout, "max_retries": max_retries}
    return toy_metric(srv, client=client, cache=False, concurrency=16)


@pytest.mark.slow
def test_300_rows_at_30_percent_mixed_faults_finish_with_specific_errors():
    plan = FaultPlan(rate=0.3, seed=7)
    with OpenAICompatServer(faults=plan, retry_after=0.05, slow_seconds=1.5) as srv:
        results = metric_for(srv).score_many(rows(300))
        stats = srv.stats()
    assert len(results) == 300
    failed = [r for r in results if not r.ok]
    for r in failed:
        assert r.error and SPECIFIC.search(r.error), r.error
    assert len(failed) < 60  # retries and top-ups recover most rows
    assert sum(stats["by_fault"].values()) > 60  # the faults really happened
    assert set(stats["by_fault"]) >= {"429", "500", "503", "slow", "drop", "invalid_json"}
    scored = [r for r in results if r.ok]
    assert all(len(r.questions) == 3 and not math.isnan(r.value) for r in scored)


def test_429s_are_waited_out_beyond_max_retries_and_bounded_by_the_longest_wait():
    # a 429 is not an error to give up on after max_retries: the row waits and is sent again
    with OpenAICompatServer(retry_after=0.05) as srv:
        m = metric_for(srv, max_retries=1)
        srv.script(["429"] * 4)
        r = m.score(user_input="Where is Paris?", response="Paris is in France.")
        chat = [q for q in srv.requests if q["path"].endswith("/chat/completions")]
    assert r.ok and len(chat) == 5  # four refusals, then the answer
    # ... within a bounded time: past the longest wait, the row fails with a clear line
    with OpenAICompatServer(retry_after=0.05) as srv:
        m = metric_for(srv, max_retries=1)
        m.llm.rate.max_wait = 0.3
        srv.script(["429"] * 1000)
        r = m.score(user_input="Where is Paris?", response="Paris is in France.")
        chat = [q for q in srv.requests if q["path"].endswith("/chat/completions")]
    assert not r.ok and "still rate-limited" in r.error
    assert 2 <= len(chat) < 1000


def test_cli_summary_counts_failures_by_reason(tmp_path, capsys):
    src = write_rows(tmp_path / "pairs.csv", [{"question": q, "answer": a} for q, a in rows(24)])
    with OpenAICompatServer(retry_after=0.05) as srv:
        srv.set_faults(FaultPlan(rate=0.7, kinds=("500",), seed=3))
        backends = cli_backends(srv, "-q", "--no-cache", "--timeout", "2")
        code = main(["score", str(src), "-o", str(tmp_path / "out.csv"), *backends])
    out = capsys.readouterr().out
    assert code == 0
    nan = int(re.search(r"NaN (\d+)", out).group(1))
    assert nan > 0
    reasons = collections.Counter(
        int(m.group(1)) for m in re.finditer(r"failed \(\s*(\d+)\)\s+\S", out)
    )
    assert sum(n * c for n, c in reasons.items()) == nan
    assert "HTTP 500" in out
