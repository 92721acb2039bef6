"""``relevancy score`` with human labels: the label column (by name or ``--label-column``),
the agreement and chance lines of the summary, the labels kept in the results file and the run
store; bad label columns in one line. Scored against the toy OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from relevancy import read_table
from relevancy.analysis.agreement import agreement, parse_labels
from relevancy.cli import main
from relevancy.runs import RunStore
from relevancy.testing.openai_server import EMBEDDING_MODEL

from helpers import cli_backends, region_rows, write_rows


def labelled_set(path: Path, column: str = "rating") -> Path:
    """24 answers, every third evasive; the evasive ones labelled bad, two others too."""
    rows = []
    for i, row in enumerate(region_rows(24, evasive_every=3)):
        evasive = i % 3 == 0
        good = "no" if evasive or i in (4, 10) else "yes"
        rows.append({**row, column: good, "kind": "evasive" if evasive else "direct"})
    return write_rows(path, rows)


def _line(out: str, head: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(head))


def test_score_with_a_label_column_prints_the_agreement_and_keeps_the_labels(
    toy_server, tmp_path, capsys
):
    backends = cli_backends(toy_server, "-q")
    src, out = labelled_set(tmp_path / "in.csv"), tmp_path / "out.csv"
    store = tmp_path / "runs.sqlite3"
    code = main(
        [
            "score",
            str(src),
            "-o",
            str(out),
            "--save-run",
            "labelled",
            "--store",
            str(store),
            *backends,
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "labels          column 'rating': 24 rows labelled" in captured.err
    table = pd.read_csv(out)
    assert table["label"].tolist()[:4] == ["no", "yes", "yes", "no"]  # as written in the input
    # the summary's figures are the library's on the written file (questions resampled)
    expected = agreement(
        table["score"].to_numpy(),
        parse_labels(table["label"].tolist()),
        groups=table["user_input"].tolist(),
    )
    text = captured.out
    assert (
        _line(text, "labels  ")
        == "labels          24 rows (binary: 14 good, 10 bad) on 24 questions"
    )
    assert _line(text, "auroc ") == f"auroc           {expected.auroc.format()}"
    assert _line(text, "best threshold") == f"best threshold  {expected.threshold.format()}"
    assert f"precision       {expected.precision.format()} at that threshold" in text
    assert f"recall          {expected.recall.format()}" in text
    assert expected.auroc.value > 0.5 and "95% CI" in _line(text, "auroc ")
    assert _line(text, "chance").startswith("chance          unrelated pairs score ")
    assert f"with {EMBEDDING_MODEL}" in _line(text, "chance")
    # the saved run has the labels, and its export writes them back as numbers
    saved = RunStore(store)
    run = saved.list_runs()[0].id
    labels = saved.labels(run)
    assert labels["label"].tolist() == parse_labels(table["label"].tolist()).tolist()
    assert set(labels["source"]) == {"input"}
    exported = saved.export(run, tmp_path / "export.csv")
    assert read_table(exported)["label"].tolist() == [str(int(v)) for v in labels["label"]]


def test_a_column_named_label_is_found_by_name(toy_server, tmp_path, capsys):
    backends = cli_backends(toy_server, "-q")
    src = labelled_set(tmp_path / "in.csv", column="label")
    assert main(["score", str(src), "-o", str(tmp_path / "o.csv"), *backends]) == 0
    captured = capsys.readouterr()
    assert "column 'label': 24 rows labelled" in captured.err
    assert "auroc           " in captured.out


def test_label_column_problems_are_one_line(toy_server, tmp_path, capsys):
    backends = cli_backends(toy_server, "-q")
    src = labelled_set(tmp_path / "in.csv")
    out = str(tmp_path / "o.csv")
    # a column named like labels that holds none: not used, said, and scoring goes on
    frame = pd.read_csv(src).rename(columns={"rating": "drop"}).assign(label="medical")
    other = write_rows(tmp_path / "other.csv", frame)
    assert main(["score", str(other), "-o", out, *backends]) == 0
    captured = capsys.readouterr()
    assert "note: not used as human labels: column 'label', row 1: 'medical' is not a label" in (
        captured.err
    )
    assert "auroc" not in captured.out and "chance " in captured.out
    # asked for by name: the bad value, the missing column, a column taken by another role
    for column, message in (
        ("kind", "error: column 'kind', row 1: 'evasive' is not a label"),
        ("nope", "error: no label column 'nope' in 'in.csv'; columns found: 'question'"),
        ("question", "error: column 'question' is the user_input column"),
    ):
        assert main(["score", str(src), "-o", out, "--label-column", column, *backends]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 or err[-1].startswith("error:")
        assert err[-1].startswith(message), err
    # '' turns a label column off
    assert main(["score", str(src), "-o", out, "--label-column", "", *backends]) == 0
    assert "auroc" not in capsys.readouterr().out
    assert np.isfinite(pd.read_csv(out)["score"]).all()
