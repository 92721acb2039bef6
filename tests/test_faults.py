"""Faulty endpoints: a large batch against a misbehaving server finishes, row by row."""

import collections
import math
import re
import time

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
def test_500_rows_at_30_percent_mixed_faults_finish_with_specific_errors():
    plan = FaultPlan(rate=0.3, seed=7)
    with OpenAICompatServer(faults=plan, retry_after=0.05, slow_seconds=1.5) as srv:
        results = metric_for(srv).score_many(rows(500))
        stats = srv.stats()
    assert len(results) == 500
    failed = [r for r in results if not r.ok]
    for r in failed:
        assert r.error and SPECIFIC.search(r.error), r.error
    assert len(failed) < 100  # retries and top-ups recover most rows
    assert sum(stats["by_fault"].values()) > 100  # the faults really happened
    assert set(stats["by_fault"]) >= {"429", "500", "503", "slow", "drop", "invalid_json"}
    scored = [r for r in results if r.ok]
    assert all(len(r.questions) == 3 and not math.isnan(r.value) for r in scored)


# The SDK's own backoff without a Retry-After header (openai's _base_client: 0.5 s * 2**k, less
# up to 25% jitter) waits 0.375-0.5 s, then 0.75-1.0 s: at most 1.5 s for two retries. The
# server announces 1.25 s, so honouring it takes at least 2.5 s and ignoring it at most 1.5 s.
RETRY_AFTER = 1.25


def test_retry_after_is_honoured_and_retries_are_bounded():
    with OpenAICompatServer(retry_after=RETRY_AFTER) as srv:
        m = metric_for(srv, max_retries=2)
        srv.script(["429"] * 50)
        started = time.perf_counter()
        r = m.score(user_input="Where is Paris?", response="Paris is in France.")
        elapsed = time.perf_counter() - started
        chat = [q for q in srv.requests if q["path"].endswith("/chat/completions")]
    assert not r.ok and "HTTP 429" in r.error
    assert len(chat) == 3  # one try + max_retries, then the row fails: bounded
    # waited the announced 1.25 s before each of the 2 retries (not the SDK's own <= 1.5 s in
    # all), and not much more
    assert 2 * RETRY_AFTER - 0.05 <= elapsed < 2 * RETRY_AFTER + 2.0, elapsed


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
