"""The embedded generator out of harm's way: llama.cpp's AMX path switched off, and llama.cpp in a
worker process whose crashes and hangs become row errors that name it (the real model and a real
worker; its faults simulated with ``RELEVANCY_WORKER_FAULT``).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from relevancy import AnswerRelevancy, GenerationError, make_embedder
from relevancy.backends import SmolLMGenerator, _llama_client, _local_generator
from relevancy.backends._budget import worst_case_seconds
from relevancy.backends._llama_client import FAULT_ENV, component, worker

pytestmark = pytest.mark.models

ROWS = [
    ("Where is the Eiffel Tower?", "The Eiffel Tower is in Paris."),
    ("What is the capital of Japan?", "Tokyo is the capital of Japan."),
    ("When did the Berlin Wall fall?", "The Berlin Wall fell in November 1989."),
    ("How many legs does a spider have?", "A spider has eight legs."),
]


@pytest.fixture
def fresh_worker(monkeypatch):
    """No worker running and no failure remembered, before and after the test."""
    worker().reset()
    yield worker()
    monkeypatch.delenv(FAULT_ENV, raising=False)
    worker().reset()


def _score(strictness: int = 1, **options) -> list:
    metric = AnswerRelevancy(
        llm=SmolLMGenerator(**options),
        embeddings=make_embedder("local"),
        cache=False,
        strictness=strictness,
        concurrency=1,  # rows reach the worker in order
    )
    return metric.score_many(ROWS)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --- the AMX fix -------------------------------------------------------------------------------


def test_the_model_is_loaded_without_extra_buffer_types(monkeypatch):
    """What llama.cpp's loader is handed, not only what Llama keeps: use_extra_bufts off."""
    import llama_cpp.llama_cpp as lib

    seen = []
    real = lib.llama_model_load_from_file

    def spy(path, params):
        seen.append(bool(params.use_extra_bufts))
        return real(path, params)

    monkeypatch.setattr(lib, "llama_model_load_from_file", spy)
    llm = _local_generator._new_llama(_local_generator.smollm_model_path(), 512, 1)
    try:
        assert seen == [False]
        assert llm.model_params.use_extra_bufts is False
    finally:
        llm.close()
    # llama.cpp's own defaults are untouched for everybody else
    assert lib.llama_model_default_params().use_extra_bufts is True


def test_the_setting_changes_only_the_loading_thread():
    import llama_cpp.llama_cpp as lib

    other: list[bool] = []
    with _local_generator.no_extra_buffer_types():
        mine = lib.llama_model_default_params().use_extra_bufts
        t = threading.Thread(
            target=lambda: other.append(lib.llama_model_default_params().use_extra_bufts)
        )
        t.start()
        t.join()
    assert mine is False and other == [True]


def test_every_thread_changes_every_threads_setting_until_the_block_ends():
    # what relevancy.testing.llama_cpp_server relies on: the server loads its model where it likes
    import llama_cpp.llama_cpp as lib

    other: list[bool] = []
    with _local_generator.no_extra_buffer_types(every_thread=True):
        t = threading.Thread(
            target=lambda: other.append(lib.llama_model_default_params().use_extra_bufts)
        )
        t.start()
        t.join()
    assert other == [False]
    assert lib.llama_model_default_params().use_extra_bufts is True


def test_in_process_and_worker_models_are_loaded_without_extra_buffer_types(fresh_worker):
    here = SmolLMGenerator(in_process=True, threads=1)
    assert here.generate("Paris is the capital of France.", 1).generations[0].question
    llm, _lock = _local_generator._MODELS[(str(here._path), here.n_ctx, 1)]
    assert llm.model_params.use_extra_bufts is False
    there = SmolLMGenerator(threads=1)
    assert there.generate("Paris is the capital of France.", 1).generations[0].question
    info = fresh_worker.call({"op": "info"}, 30)
    assert info["extra_bufts"] == {f"{there._path}|{there.n_ctx}|1": False}


# --- the worker --------------------------------------------------------------------------------


def test_the_worker_gives_the_in_process_questions(fresh_worker):
    response = "The Great Barrier Reef lies off the coast of Queensland, Australia."
    here = SmolLMGenerator(in_process=True).generate(response, 3)
    there = SmolLMGenerator().generate(response, 3)
    assert [g.question for g in there.generations] == [g.question for g in here.generations]
    assert there.usage == here.usage and there.cacheable and there.model == here.model
    assert fresh_worker.started == 1 and fresh_worker.status() is None


def test_a_crash_is_retried_once_then_names_the_component(fresh_worker, monkeypatch):
    """Each worker kills itself with SIGSEGV at its 2nd request: row 1 is fine, row 2 crashes
    the first worker and is retried on a second one, row 3 crashes that one too: no third
    worker, rows 3 and 4 get the error, and this process goes on."""
    monkeypatch.setenv(FAULT_ENV, "crash@2")
    results = _score()
    crashed = f"{component()} crashed: killed by SIGSEGV; run `relevancy doctor`"
    assert "llama-cpp-python 0.3." in crashed
    assert [r.ok for r in results] == [True, True, False, False]
    assert [r.error for r in results[2:]] == [f"generation failed: {crashed}"] * 2
    assert [r.reason for r in results[2:]] == ["error", "error"]
    assert fresh_worker.started == 2
    assert fresh_worker.broken == crashed
    assert fresh_worker.status() == (
        f"{component()} crashed: killed by SIGSEGV; embedded scoring is off until this process "
        "restarts"
    )
    # and later rows fail at once, without starting a third worker
    started = time.perf_counter()
    later = _score()
    assert time.perf_counter() - started < 5
    assert not any(r.ok for r in later) and fresh_worker.started == 2


def test_a_worker_killed_between_requests_is_restarted(fresh_worker):
    gen = SmolLMGenerator()
    assert gen.generate("Tokyo is the capital of Japan.", 1).generations[0].question
    pid = fresh_worker.call({"op": "info"}, 30)["pid"]
    os.kill(pid, signal.SIGKILL)
    again = gen.generate("Tokyo is the capital of Japan.", 1)
    assert again.generations[0].question
    assert fresh_worker.call({"op": "info"}, 30)["pid"] != pid
    assert fresh_worker.status() == (
        f"{component()} crashed: killed by SIGKILL; it was restarted and its request retried"
    )
    assert fresh_worker.broken is None


def test_a_hang_is_stopped_retried_and_named(fresh_worker, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "hang@1")
    monkeypatch.setattr(_llama_client, "HANG_MARGIN_S", 3.0)
    gen = SmolLMGenerator(time_limit=1.0)
    started = time.perf_counter()
    (result,) = AnswerRelevancy(
        llm=gen, embeddings=make_embedder("local"), cache=False, strictness=1
    ).score_many(ROWS[:1])
    assert time.perf_counter() - started < 30
    assert result.error == (
        f"generation failed: {component()} hung: no answer in "
        f"{worst_case_seconds(1.0, 1) + 3:.0f} s (stopped); run `relevancy doctor`"
    )
    assert fresh_worker.started == 2
    pids = [f["pid"] for f in fresh_worker.failures]
    assert len(pids) == 2 and not any(_alive(p) for p in pids)  # both stopped, none left behind


def test_an_error_in_the_worker_is_raised_and_the_worker_stays(fresh_worker):
    assert SmolLMGenerator().generate("Tokyo is the capital of Japan.", 1).generations
    with pytest.raises(GenerationError, match="TypeError: .*'no_such_setting'"):
        _llama_client.generate_in_worker({"no_such_setting": 1}, "Tokyo.", 1, None)
    assert SmolLMGenerator().generate("Tokyo is the capital of Japan.", 1).generations
    assert fresh_worker.started == 1 and not fresh_worker.failures


def test_the_worker_waits_passively_unless_told_otherwise(fresh_worker, monkeypatch):
    """Busy-waiting from one calling thread starves on a loaded machine (bench/RESULTS.md,
    "Intel AMX and the worker process"): PASSIVE by default, the user's policy if set."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert fresh_worker.call({"op": "info"}, 30)["omp_wait_policy"] == "PASSIVE"
    assert "OMP_WAIT_POLICY" not in os.environ  # this process's own setting is left alone
    fresh_worker.reset()
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert fresh_worker.call({"op": "info"}, 30)["omp_wait_policy"] == "ACTIVE"
