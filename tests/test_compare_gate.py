"""The regression gate: ``relevancy compare BASE NEW`` on files scored by ``relevancy score``
against the toy OpenAI-compatible server, on runs in the store, and the GitHub Actions recipe
from docs/cli.md run as written."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from relevancy.analysis.compare import regression_check
from relevancy.cli import main
from relevancy.core.result import QuestionScore, RelevancyResult
from relevancy.errors import InputError
from relevancy.runs import RunStore
from relevancy.testing.openai_server import OpenAICompatServer

from helpers import ROOT, cli_backends, region_rows, write_rows


def eval_set(path: Path, *, evasive_every: int = 0) -> Path:
    """A small eval set with ids; with ``evasive_every`` some answers dodge the question."""
    rows = region_rows(24, evasive_every=evasive_every)
    return write_rows(path, [{"id": f"q{i}", **row} for i, row in enumerate(rows)])


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """Base answers and a candidate where every second answer is evasive, both scored."""
    d = tmp_path_factory.mktemp("gate")
    with OpenAICompatServer() as srv:
        base, new = d / "base.csv", d / "new.csv"
        backends = cli_backends(srv, "-q")
        assert main(["score", str(eval_set(d / "a.csv")), "-o", str(base), *backends]) == 0
        src = eval_set(d / "b.csv", evasive_every=2)
        assert main(["score", str(src), "-o", str(new), *backends]) == 0
    return base, new


def test_worse_candidate_fails_the_gate_and_names_its_worst_rows(scored, tmp_path, capsys):
    base, new = scored
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    code = main(
        ["compare", str(base), str(new), "--fail-on-regression", "0.02", "--markdown", str(summary)]
    )
    out = capsys.readouterr()
    assert code == 1
    assert "pairs           24  (better 0, ties 12, worse 12; NaN 0)" in out.out
    assert "REGRESSION" in out.out and out.err.startswith("FAIL: REGRESSION")
    worst = [line for line in out.out.splitlines() if line.startswith("regression ")]
    assert len(worst) == 5 and all("region" in line for line in worst)
    text = summary.read_text()
    assert text.startswith("earlier step\n### ❌ Answer Relevancy: `new.csv` against `base.csv`")
    assert "| 24 | 0 | 12 | 12 |" in text and "Largest regressions:" in text


def test_same_answers_pass_and_the_better_side_passes(scored, capsys):
    base, new = scored
    assert main(["compare", str(base), str(base), "--fail-on-regression", "0.02"]) == 0
    assert "no regression beyond -0.02" in capsys.readouterr().out
    # the reverse direction is an improvement, which never fails the gate
    assert main(["compare", str(new), str(base), "--fail-on-regression", "0"]) == 0
    out = capsys.readouterr().out
    assert "better 12, ties 12, worse 0" in out and "regression      " not in out


def test_without_a_margin_it_reports_and_never_fails(scored, capsys):
    base, new = scored
    assert main(["compare", str(base), str(new), "--markdown", "-"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"verdict         mean difference -0\.\d{3}, 95% CI \[-", out)
    assert "### ✅ Answer Relevancy" in out  # no gate asked for: nothing failed


def test_runs_from_the_store_pair_by_id(scored, toy_server, tmp_path, capsys):
    d = tmp_path
    for name, src in (
        ("base", eval_set(d / "a.csv")),
        ("new", eval_set(d / "b.csv", evasive_every=3)),
    ):
        args = ["score", str(src), "-o", str(d / f"{name}.jsonl"), "--save-run", name]
        assert main([*args, *cli_backends(toy_server, "-q")]) == 0
    saved = re.findall(r"saved           run #(\d+)", capsys.readouterr().out)
    assert len(saved) == 2
    code = main(["compare", f"run:{saved[0]}", f"run:#{saved[1]}", "--fail-on-regression", "0"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"base            run #{saved[0]} base (24 rows)" in out
    assert "worse 8" in out
    # runs by name, as `relevancy export` takes them
    assert main(["compare", "run:base", "run:new", "--fail-on-regression", "0"]) == 1
    assert f"new             run #{saved[1]} new (24 rows)" in capsys.readouterr().out
    # a run that is not there is one line naming the store's runs
    assert main(["compare", "run:999", "run:base"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no run 'run:999'" in err[0] and "its runs: #" in err[0]
    # a run against a file works too: the same rows, paired by id
    assert main(["compare", f"run:{saved[0]}", str(scored[0]), "--fail-on-regression", "0"]) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # no store: said, not made empty
        (["run:x", "{base}"], "no run store at "),
        (["{src}", "{base}"], "has no score column"),
        (["{base}", "{other}"], "BASE and NEW share no question"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(scored, tmp_path, capsys, args, message):
    src = eval_set(tmp_path / "unscored.csv")
    other = tmp_path / "other.csv"
    write_rows(other, [{"user_input": "Why?", "response": "Because.", "score": 0.5}])
    paths = {"base": str(scored[0]), "src": str(src), "other": str(other)}
    assert main(["compare", *(a.format(**paths) for a in args)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]


def test_regression_check_logic():
    base = pd.DataFrame({"user_input": list("abcdef"), "score": [0.8] * 6})
    same = regression_check(base, base, margin=0.0)
    assert not same.failed and same.worst.empty and same.summary["ties"] == 6
    worse = base.assign(score=[0.5] * 6)
    assert regression_check(base, worse, margin=0.1).failed  # -0.3 is below -0.1
    assert not regression_check(base, worse, margin=0.5).failed  # within the allowed drop
    assert not regression_check(base, worse).failed  # no margin: no gate
    # an all-NaN side has no interval: the gate cannot say it regressed
    nan = regression_check(base, base.assign(score=math.nan), margin=0.0)
    assert not nan.failed and nan.summary["nan_pairs"] == 6
    # two runs of several variants without ids: each variant meets itself
    two = pd.DataFrame({"user_input": ["q", "q"], "variant": ["x", "y"], "score": [0.9, 0.1]})
    flipped = two.assign(score=[0.9, 0.0])
    check = regression_check(two, flipped, tie_margin=0.05)
    assert check.summary["pairs"] == 2 and check.summary["losses"] == 1
    assert check.worst["variant"].tolist() == ["y"]
    with pytest.raises(InputError, match="share no question"):
        regression_check(base, pd.DataFrame({"user_input": ["zz"], "score": [1.0]}))


def test_the_largest_regressions_come_worst_first(capsys, tmp_path):
    rng = np.random.default_rng(3)
    base_scores = rng.uniform(0.5, 1.0, size=12)
    drops = rng.uniform(0.05, 0.45, size=12)
    base = pd.DataFrame(
        {
            "user_input": [f"question {i}" for i in range(12)],
            "response": [f"answer {i}" for i in range(12)],
            "score": base_scores,
        }
    )
    new = base.assign(score=base_scores - drops)
    check = regression_check(base, new, worst=4)
    by_hand = sorted(zip(-drops, base["user_input"]))[:4]  # the four largest drops
    assert check.worst["user_input"].tolist() == [q for _, q in by_hand]
    assert check.worst["diff"].tolist() == pytest.approx([d for d, _ in by_hand])
    table = check.markdown("base", "new").split("Largest regressions:")[1]
    assert re.findall(r"\| (question \d+) \|", table) == [q for _, q in by_hand]
    # and the CLI prints them in that order
    write_rows(tmp_path / "base.csv", base)
    write_rows(tmp_path / "new.csv", new)
    assert main(["compare", str(tmp_path / "base.csv"), str(tmp_path / "new.csv")]) == 0
    printed = re.findall(r"regression +\S+ +(question \d+)", capsys.readouterr().out)
    assert printed == [q for _, q in sorted(zip(-drops, base["user_input"]))[:5]]


def _stored_run(store: RunStore, name: str, rows: list[tuple[str, str, float]]) -> int:
    """A run of ``(id, question, score)`` rows, scored, saved without the models."""
    inputs = pd.DataFrame(
        [{"id": i, "user_input": q, "response": f"answer {i}"} for i, q, _ in rows]
    )
    run_id = store.create_run(name, {}, inputs)
    results = [
        RelevancyResult(
            user_input=q,
            response=f"answer {i}",
            value=v,
            ragas_value=v,
            questions=[QuestionScore("What is it?", v, None)],
        )
        for i, q, v in rows
    ]
    store.append_results(run_id, list(enumerate(results)))
    return run_id


def test_runs_with_a_repeated_question_pair_on_their_ids(tmp_path, capsys):
    store_path = tmp_path / "runs.sqlite3"
    store = RunStore(store_path)
    # the same question twice; the new run lists its rows in another order, with equal scores
    base = _stored_run(
        store, "base", [("a", "Same?", 0.9), ("b", "Same?", 0.1), ("c", "Other?", 0.5)]
    )
    new = _stored_run(
        store, "new", [("b", "Same?", 0.1), ("a", "Same?", 0.9), ("c", "Other?", 0.5)]
    )
    code = main(
        [
            "compare",
            f"run:{base}",
            f"run:{new}",
            "--fail-on-regression",
            "0",
            "--store",
            str(store_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "pairs           3  (better 0, ties 3, worse 0; NaN 0)" in out


def test_the_documented_github_actions_recipe_runs_as_written(tmp_path, toy_server):
    """docs/cli.md's CI step, run through a shell with the console script, as Actions would."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", page.split("## Regression gate in CI\n")[1], re.S)
    assert block, "docs/cli.md has a GitHub Actions example under 'Regression gate in CI'"
    run_lines = re.findall(r"^\s+run: (relevancy .+)$", block.group(1), re.M)
    assert [line.split()[1] for line in run_lines] == ["score", "compare"]
    (tmp_path / "eval").mkdir()
    eval_set(tmp_path / "eval" / "answers.csv", evasive_every=2)
    (tmp_path / "baseline").mkdir()
    assert (
        main(
            [
                "score",
                str(eval_set(tmp_path / "base_src.csv")),
                "-q",
                "-o",
                str(tmp_path / "baseline" / "scores.csv"),
                *cli_backends(toy_server),
            ]
        )
        == 0
    )
    env = {
        **os.environ,
        "OPENAI_BASE_URL": toy_server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env["PATH"]
    codes = []
    for line in run_lines:
        done = subprocess.run(
            ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        codes.append(done.returncode)
        assert "Traceback" not in done.stderr
    assert codes == [0, 1]  # the candidate's evasive answers fail the gate
    assert "### ❌ Answer Relevancy" in (tmp_path / "summary.md").read_text()
