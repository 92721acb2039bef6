"""The embedded generator on a busy machine: its cut-off follows the measured speed and a sample
cut off is retried once, so a slow machine gives the same questions, later (the real model in
its worker, made slow on purpose with ``RELEVANCY_LLAMA_SLOW_S``); its threads; and two
embedded scorers side by side both finish with every question."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from relevancy.backends import SmolLMGenerator, _budget
from relevancy.backends._budget import CAP, SLOW_ENV, THREADS_ENV, Budget, default_threads
from relevancy.backends._llama_client import worker

RESPONSE = "Tokyo is the capital of Japan."


# --- the budget's arithmetic (no model) ------------------------------------------------------
def test_the_budget_follows_the_measured_speed_between_its_floor_and_its_cap():
    speed = _budget._Speed()
    budget = Budget(20.0, 40, speed)
    assert budget.seconds(0) == 20.0 and budget.seconds(1) == 40.0  # nothing measured yet
    speed.observe(2.0, 50)  # 0.04 s a token: a quiet machine; the floor holds
    assert budget.seconds(0) == 20.0
    speed = _budget._Speed()
    budget = Budget(20.0, 40, speed)
    speed.observe(15.0, 50)  # 0.3 s a token: 4 x 0.3 x 40 = 48 s
    assert budget.seconds(0) == pytest.approx(48.0) and budget.seconds(1) == CAP * 20.0
    speed.observe(100.0, 50)  # slower still: never beyond the cap
    assert budget.seconds(0) == budget.seconds(1) == CAP * 20.0


def test_threads_are_the_cores_this_process_may_use_unless_set(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2}, raising=False)
    assert default_threads() == 3  # its affinity, not the machine's cores
    monkeypatch.setenv(THREADS_ENV, "1")
    assert default_threads() == 1


# --- the real model in its worker, made slow on purpose ------------------------------------------
@pytest.fixture
def fresh_worker(monkeypatch):
    worker().reset()
    yield worker()
    monkeypatch.delenv(SLOW_ENV, raising=False)
    worker().reset()


@pytest.mark.models
def test_a_slow_machine_gives_the_same_questions_later(fresh_worker, monkeypatch):
    quiet = SmolLMGenerator(time_limit=2.0, threads=1).generate(RESPONSE, 3)
    assert all(g.error is None for g in quiet.generations)
    fresh_worker.reset()
    monkeypatch.setenv(SLOW_ENV, "0.3")  # each token 0.3 s slower: a question takes 3-5 s
    slow = SmolLMGenerator(time_limit=2.0, threads=1).generate(RESPONSE, 3)
    # a fixed 2 s cut-off would have dropped them all; the budget and its retry keep them
    assert [g.error for g in slow.generations] == [None] * 3
    assert [g.question for g in slow.generations] == [g.question for g in quiet.generations]
    assert slow.seconds > quiet.seconds


@pytest.mark.models
def test_a_machine_too_slow_for_the_cap_says_exactly_what_was_cut_off(fresh_worker, monkeypatch):
    monkeypatch.setenv(SLOW_ENV, "1.0")  # a token a second: more than 4 x 0.5 s for a question
    out = SmolLMGenerator(time_limit=0.5, threads=1).generate(RESPONSE, 1)
    (gen,) = out.generations
    assert gen.question == "" and gen.error == "cut off after 0.5 s and again after 2 s"
    assert not out.cacheable  # a cut-off is transient: tried again next time


# --- two embedded scorers side by side ------------------------------------------------------------
@pytest.mark.models
@pytest.mark.slow
@pytest.mark.timeout(1200)  # its two children are bounded at 900 s
def test_two_embedded_scorers_side_by_side_both_use_every_question(tmp_path):
    """Two ``relevancy score-one`` at once on the real models (their own workers, the default
    threads and waiting policy): both finish, each score from all 3 questions."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", THREADS_ENV)}
    pairs = [
        ("What is the capital of Japan?", "Tokyo is the capital of Japan."),
        ("Where is the Eiffel Tower?", "The Eiffel Tower is in Paris, France."),
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "relevancy.cli", "score-one", q, a, "--no-cache"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        for q, a in pairs
    ]
    outputs = [p.communicate(timeout=900) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, out + err
        assert "questions: 3 of 3 used" in out, out
        assert "unusable" not in out and "incomplete" not in out, out
