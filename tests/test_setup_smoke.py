"""The last step of ``scripts/setup.sh`` (``scripts/smoke.sh``): one row scored in a child process;
a crash (the child kills itself with SIGSEGV: ``RELEVANCY_SMOKE_CRASH``) or a hang
(``RELEVANCY_SMOKE_HANG``) rebuilds llama-cpp-python once, portable and without pip's cache, then
tries again; a second failure stops setup with one line naming the CPU, the component and what
to do. The rebuild's pip is a recorder here (``RELEVANCY_REBUILD_PIP``); the real rebuild was run
by hand (see bench/RESULTS.md, "Intel AMX").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from relevancy.backends._llama_client import llama_cpp_version
from relevancy.scoring.doctor import PORTABLE_CMAKE_ARGS, cpu_info

# smoke.sh is bounded at 600 s (two tries of up to 180 s, a rebuild between): the limit is above
pytestmark = [pytest.mark.models, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "smoke.sh"


def smoke(
    tmp_path: Path, *, pip_exit: int = 0, **env: str
) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run scripts/smoke.sh with this interpreter and a recording pip; the pip calls made."""
    calls = tmp_path / "pip-calls.txt"
    recorder = tmp_path / "pip"
    recorder.write_text(
        f'#!/bin/sh\necho "CMAKE_ARGS=$CMAKE_ARGS | $*" >> "{calls}"\nexit {pip_exit}\n'
    )
    recorder.chmod(0o755)
    full = dict(os.environ, RELEVANCY_PYTHON=sys.executable, RELEVANCY_REBUILD_PIP=str(recorder))
    full.update(env)
    proc = subprocess.run(
        ["bash", str(SCRIPT)], capture_output=True, text=True, env=full, timeout=600
    )
    return proc, calls.read_text().splitlines() if calls.exists() else []


REBUILD = (
    f"CMAKE_ARGS={PORTABLE_CMAKE_ARGS} | install --no-cache-dir --force-reinstall --no-deps "
    f"llama-cpp-python=={llama_cpp_version()}"
)


def test_a_working_install_passes_without_a_rebuild(tmp_path):
    proc, calls = smoke(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls == []
    assert proc.stdout.splitlines()[-1].startswith("==> smoke score 0.")


def test_a_crash_rebuilds_portable_once_and_tries_again(tmp_path):
    proc, calls = smoke(tmp_path, RELEVANCY_SMOKE_CRASH="1")
    assert proc.returncode == 0, proc.stderr
    assert calls == [REBUILD]
    out = proc.stdout.splitlines()
    assert out[1] == (
        f"==> the embedded generator (llama.cpp, llama-cpp-python {llama_cpp_version()}) crashed "
        f"(killed by SIGSEGV) on {cpu_info()['model']}; rebuilding llama-cpp-python without "
        "native CPU flags (~5-10 min)"
    )
    assert out[-2].startswith("==> smoke score 0.")
    assert out[-1] == (
        f"==> llama-cpp-python {llama_cpp_version()} rebuilt without native CPU flags: the "
        "smoke score passes"
    )


def test_a_crash_after_the_rebuild_stops_setup_with_one_line(tmp_path):
    proc, calls = smoke(tmp_path, RELEVANCY_SMOKE_CRASH="1,2")
    assert proc.returncode == 1
    assert calls == [REBUILD]
    assert proc.stderr.splitlines() == [
        f"error: the embedded generator (llama.cpp, llama-cpp-python {llama_cpp_version()}) "
        f"crashed (killed by SIGSEGV) on {cpu_info()['model']}, even rebuilt without native CPU "
        "flags: score with an API model instead (--llm openai:MODEL, see the README), or report "
        "it with the output of `relevancy doctor`"
    ]


def test_a_hang_is_cut_rebuilds_and_is_named(tmp_path):
    proc, calls = smoke(tmp_path, RELEVANCY_SMOKE_HANG="1,2", RELEVANCY_SMOKE_TIMEOUT="3")
    assert proc.returncode == 1
    assert calls == [REBUILD]
    assert "hung (no score in 3 s) on " in proc.stdout
    assert proc.stderr.startswith(
        f"error: the embedded generator (llama.cpp, llama-cpp-python {llama_cpp_version()}) "
        f"hung (no score in 3 s) on {cpu_info()['model']}, even rebuilt"
    )


def test_a_failed_rebuild_says_so(tmp_path):
    proc, calls = smoke(tmp_path, pip_exit=1, RELEVANCY_SMOKE_CRASH="1")
    assert proc.returncode == 1 and calls == [REBUILD]
    assert proc.stderr.splitlines()[-1].startswith(
        f"error: could not rebuild llama-cpp-python {llama_cpp_version()} on {cpu_info()['model']}"
    )


def test_setup_ends_with_the_smoke():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert setup.rstrip().splitlines()[-1] == "bash scripts/smoke.sh"
