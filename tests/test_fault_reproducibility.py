"""Reruns under faults (issue 25 item 8): top-ups are seeded like first generations, so two
fresh-cache runs against a server that fails 30% of requests give the same questions and scores.

"Equal" here is what docs/troubleshooting.md promises: every row scored in both runs has the same
generated questions and the same score (bit for bit); a row may be NaN, or scored on fewer than
N questions, in one run only when its requests failed after every retry or top-up (its ``error``,
or its failed question's, says so; such a row is not cached, so running again fills it).
"""

from __future__ import annotations

import math

from relevancy.testing.openai_server import FaultPlan, OpenAICompatServer

from helpers import toy_metric

TOPICS = ["France", "Japan", "Brazil", "Kenya", "Canada", "Norway", "Egypt", "Chile"]
ROWS = [
    (
        f"What is the capital of {TOPICS[i % 8]} and its river {i}?",
        f"The capital of {TOPICS[i % 8]} is a large city near river {i}; it has a port.",
    )
    for i in range(60)
]


def _run(plan: FaultPlan | None, *, honour_n: bool = True):
    """Every row scored with no cache against a seeded toy server with ``plan``'s faults (all
    kinds: errors, drops, slow, malformed bodies, short or empty replies, bad embeddings)."""
    with OpenAICompatServer(
        faults=plan, seeded=True, honour_n=honour_n, retry_after=0.01, slow_seconds=0.05
    ) as srv:
        metric = toy_metric(
            srv, client={"timeout": 5.0, "max_retries": 4}, cache=False, concurrency=8
        )
        results = metric.score_many(ROWS)
        faults = sum(srv.stats()["by_fault"].values())
    return results, faults


def _complete(r) -> bool:
    """Scored on all N questions: no generation failed."""
    return r.ok and not any(q.error for q in r.questions)


def _same(a, b) -> int:
    """How many rows both runs scored on all N questions; asserts those are equal, and that a row
    one run could not score whole says why."""
    both = 0
    for x, y in zip(a, b):
        if not (_complete(x) and _complete(y)):
            for r in (x, y):
                if not r.ok:
                    assert r.error
                elif not _complete(r):
                    assert "incomplete_generation" in r.flags and r.questions_used < r.strictness
            continue
        both += 1
        assert [q.question for q in x.questions] == [q.question for q in y.questions]
        assert x.value == y.value or (math.isnan(x.value) and math.isnan(y.value))
    return both


def test_two_runs_at_30_percent_faults_give_equal_scores():
    clean, none = _run(None)
    assert none == 0 and all(r.ok for r in clean)
    first, faults_1 = _run(FaultPlan(rate=0.3, seed=1))
    second, faults_2 = _run(FaultPlan(rate=0.3, seed=2))
    assert faults_1 > 20 and faults_2 > 20  # the faults happened, differently in each run
    assert _same(first, second) >= 55
    assert _same(clean, first) >= 55  # and equal to a run without faults


def test_a_server_that_ignores_n_gets_the_same_questions_under_faults():
    clean, _ = _run(None, honour_n=False)
    faulty, faults = _run(FaultPlan(rate=0.3, seed=3), honour_n=False)
    assert faults > 20
    assert _same(clean, faulty) >= 55
    # one question per seed: the three questions of a row differ
    assert all(len({q.question for q in r.questions}) == 3 for r in clean)
