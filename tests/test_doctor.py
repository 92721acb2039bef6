"""``relevancy doctor`` and the Home page's health line: the real installation checked, a failing
folder and a crashing or hanging smoke child named in one line, and the dashboard staying up
when the embedded generator's worker crashes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from relevancy.backends._llama_client import FAULT_ENV, component, llama_cpp_version, worker
from relevancy.dashboard.views.format import esc
from relevancy.scoring.doctor import PORTABLE_CMAKE_ARGS, Check, cpu_info, summary_line

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
NAMES = [
    "cpu",
    "llama-cpp-python",
    "onnxruntime",
    "tokenizers",
    "generator model",
    "embedder model",
    "cache",
    "run store",
    "extras",
]


def doctor(*args: str, env: dict[str, str] | None = None, timeout: float = 300):
    return subprocess.run(
        [sys.executable, "-m", "relevancy.cli", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )


@pytest.mark.models
def test_doctor_is_all_green_here():
    proc = doctor()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("relevancy 0.1.0, Python ")
    assert [line.split()[0] for line in lines[1:-1]] == ["ok"] * (len(NAMES) + 1)
    text = proc.stdout
    assert f"llama-cpp-python  {llama_cpp_version()}, llama.cpp built with " in text
    assert cpu_info()["model"] in text and " avx2" in text
    assert "generator model   " in text and "SmolLM2-135M-Instruct.Q4_1.gguf" in text
    assert "dashboard (streamlit " in text
    smoke = lines[-2]
    assert smoke.startswith("ok    smoke score       0.") and smoke.endswith("(child process)")
    assert lines[-1] == "all checks passed" and proc.stderr == ""


def test_doctor_names_a_folder_it_cannot_write(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RELEVANCY_CACHE_DIR", str(blocker / "cache"))
    proc = doctor("--no-smoke")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"FAIL: cache: {blocker / 'cache'} is not writable (Not a directory): set "
        "$RELEVANCY_CACHE_DIR"
    ]
    assert "smoke score" not in proc.stdout


def test_doctor_json_lists_every_check():
    proc = doctor("--no-smoke", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [c["name"] for c in data["checks"]] == NAMES
    assert {c["status"] for c in data["checks"]} == {"ok"}


def test_a_crashing_smoke_child_is_named_with_the_cpu_and_the_fix(monkeypatch):
    monkeypatch.setenv("RELEVANCY_SMOKE_CRASH", "1")
    proc = doctor()
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"FAIL: smoke score: {component()} crashed: killed by SIGSEGV on {cpu_info()['model']}; "
        f'rebuild it portable: CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" pip install --no-cache-dir '
        f"--force-reinstall --no-deps llama-cpp-python=={llama_cpp_version()}, or score with an "
        "API model (--llm openai:MODEL)"
    ]


def test_a_hanging_smoke_child_is_stopped_and_named(monkeypatch):
    monkeypatch.setenv("RELEVANCY_SMOKE_HANG", "1")
    proc = doctor("--timeout", "3", timeout=60)
    assert proc.returncode == 1
    assert f"FAIL: smoke score: {component()} hung: no score in 3 s on " in proc.stderr


def test_only_the_listed_attempt_is_simulated(monkeypatch):
    monkeypatch.setenv("RELEVANCY_SMOKE_CRASH", "1")
    monkeypatch.setenv("RELEVANCY_SMOKE_ATTEMPT", "2")
    proc = subprocess.run(
        [sys.executable, "-m", "relevancy.scoring.doctor", "smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("smoke score 0.")


def test_the_summary_line_is_the_worst_problem():
    ok = Check("cpu", "ok", "fine")
    warn = Check("cpu", "warn", "no AVX2")
    fail = Check("cache", "fail", "/x is not writable")
    crash = Check("generator", "fail", "the embedded generator (llama.cpp) crashed")
    assert summary_line([ok]) is None
    assert summary_line([ok, warn]) == ("warn", "cpu: no AVX2. Details: `relevancy doctor`.")
    assert summary_line([warn, fail, ok]) == (
        "fail",
        "cache: /x is not writable (and 1 more). Details: `relevancy doctor`.",
    )
    assert summary_line([crash]) == (
        "fail",
        "the embedded generator (llama.cpp) crashed. Details: `relevancy doctor`.",
    )


@pytest.fixture
def fresh_worker(monkeypatch):
    worker().reset()
    yield worker()
    monkeypatch.delenv(FAULT_ENV, raising=False)
    worker().reset()


@pytest.mark.models
def test_home_stays_up_and_says_the_generator_crashed(fresh_worker, monkeypatch):
    """Every worker kills itself with SIGSEGV at its first request: the answer gets the error,
    the page draws on and says what happened, and the next run still works."""
    monkeypatch.setenv(FAULT_ENV, "crash@1")
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    assert not at.exception
    assert not [e for e in at.error if "Details: `relevancy doctor`" in e.value]  # all well
    at.number_input(key="home_n").set_value(1)
    at.text_area(key="home_question").input("Where is the Eiffel Tower?")
    at.text_area(key="home_answer_0").input("The Eiffel Tower is in Paris.")
    at.button(key="home_score").click().run()
    assert not at.exception, [e.value for e in at.exception]
    crashed = f"{component()} crashed: killed by SIGSEGV"
    assert [e.value for e in at.error if "Details" in e.value] == [
        f"{crashed}; embedded scoring is off until this process restarts. Details: "
        "`relevancy doctor`."
    ]
    assert any(  # the answer's own error, in its details (as markdown, escaped)
        f"**Error:** {esc(f'generation failed: {crashed}; run `relevancy doctor`')}" in m.value
        for m in at.markdown
    )
    assert fresh_worker.started == 2  # restarted once, then given up on
    at.run()
    assert not at.exception and any("Details" in e.value for e in at.error)
