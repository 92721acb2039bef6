"""The command line, end to end on the embedded models."""

import json
import subprocess
import sys
from importlib import resources

import pandas as pd
import pytest

from relevancy.cli import main


@pytest.fixture(scope="module")
def demo_subset(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "pairs.csv"
    demo = pd.read_csv(resources.files("relevancy") / "data" / "demo.csv")
    demo.head(6).to_csv(path, index=False)
    return path


@pytest.mark.models
def test_score_writes_questions_and_is_cached_the_second_time(demo_subset, tmp_path, capsys):
    out = tmp_path / "scored.csv"
    assert main(["score", str(demo_subset), "-o", str(out), "--quiet"]) == 0
    first = capsys.readouterr().out
    assert "rows            6" in first and "95% CI" in first and "median" in first
    table = pd.read_csv(out)
    assert {"score", "generated_questions", "similarities", "variant", "id"} <= set(table.columns)
    assert len(json.loads(table.loc[0, "generated_questions"])) == 3
    assert main(["score", str(demo_subset), "-o", str(tmp_path / "again.csv"), "--quiet"]) == 0
    assert "from cache 6" in capsys.readouterr().out
    assert pd.read_csv(tmp_path / "again.csv")["score"].tolist() == table["score"].tolist()


@pytest.mark.models
def test_mode_option_names_the_mode_and_reuses_generations(demo_subset, tmp_path, capsys):
    focus, ragas = tmp_path / "focus.csv", tmp_path / "ragas.csv"
    assert main(["score", str(demo_subset), "-o", str(ragas), "-q"]) == 0
    out = capsys.readouterr().out
    assert "mode            ragas" in out  # the embedded default, as for every backend
    assert "for trying the tool offline" in out and "judge           not checked" in out
    assert main(["score", str(demo_subset), "-o", str(focus), "-q", "--mode", "focus"]) == 0
    out = capsys.readouterr().out
    assert "mode            focus" in out and "from cache 6" in out
    f, r = pd.read_csv(focus), pd.read_csv(ragas)
    assert set(f["mode"]) == {"focus"} and set(r["mode"]) == {"ragas"}
    # the same generations: the Ragas value of a focus run is the score of a ragas run
    assert f["ragas_value"].tolist() == pytest.approx(r["score"].tolist())
    assert r["score"].tolist() == pytest.approx(r["ragas_value"].tolist())
    assert json.loads(f.loc[0, "parts"])[0]["text"]
    assert main(["score", str(demo_subset), "--mode", "Focus"]) == 2  # a usage error: one line
    assert "invalid choice: 'Focus'" in capsys.readouterr().err


@pytest.mark.models
def test_fail_under_sets_exit_code(demo_subset, tmp_path, capsys):
    code = main(
        ["score", str(demo_subset), "-o", str(tmp_path / "o.json"), "-q", "--fail-under", "0.99"]
    )
    assert code == 1
    assert "below --fail-under 0.99" in capsys.readouterr().err


@pytest.mark.models
def test_score_one_explains(capsys):
    code = main(
        [
            "score-one",
            "Where is France and what is it's capital?",
            "France is in western Europe and Paris is its capital.",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "generated questions" in out and "noncommittal: no" in out
    assert "score    : 0." in out and ") / 3" in out
    # each part checked and found: only then "each ... part is answered"
    assert "verdict  : relevant (" in out and "from 3 of 3 generated questions)" in out
    assert "reason   : ok · on topic: " in out
    assert "each of the question's 2 parts is answered" in out


@pytest.mark.models
def test_score_one_names_an_evasive_answer_apart_from_the_metrics_noncommittal(capsys):
    # the example: the detector says no (the score is not 0), the answer dodges
    args = [
        "score-one",
        "What is the chemical symbol for gold?",
        "I'm not sure, it could be many things. (ref 1)",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "noncommittal: no (" in out
    (reason,) = [line for line in out.splitlines() if line.startswith("reason   : ")]
    assert reason.startswith("reason   : evasive: the answer says in so many words")
    assert "noncommittal detector did not fire" in reason and "“I'm not sure”" in reason
    (verdict,) = [line for line in out.splitlines() if line.startswith("verdict  : ")]
    used = int(out.split("questions: ")[1].split()[0])
    if used < 3:  # no verdict on fewer questions than asked
        assert verdict.startswith(f"verdict  : incomplete: the score rests on {used} of 3")
    else:
        assert verdict.startswith("verdict  : low (")


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("question,text\nq,a\n")
    assert main(["score", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: missing column 'response'")
    header_only = tmp_path / "h.csv"
    header_only.write_text("question,answer\n")
    assert main(["score", str(header_only)]) == 2
    assert "no rows" in capsys.readouterr().err


def test_strictness_out_of_range(tmp_path, capsys):
    f = tmp_path / "ok.csv"
    f.write_text("question,answer\nq?,a\n")
    assert main(["score", str(f), "--strictness", "11"]) == 2
    assert "--strictness: '11' is not a whole number from 1 to 10" in capsys.readouterr().err


def test_cache_info_and_clear(capsys):
    assert main(["cache", "info"]) == 0
    assert "generations" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "cleared" in capsys.readouterr().out


def test_console_script_runs():
    out = subprocess.run(
        [sys.executable, "-m", "relevancy.cli", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0 and "score-one" in out.stdout
