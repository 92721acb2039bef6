"""``relevancy score`` with human labels: the label column (by name or ``--label-column``),
the agreement and chance lines of the summary, the labels kept in the results file and the run
store; bad label columns in one line. Scored against the toy OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from relevancy import read_table
from relevancy.analysis.agreement import agreement, parse_labels
from relevancy.cli import main
from relevancy.runs import RunStore
from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL, OpenAICompatServer

TOPICS = ("tallest mountain", "longest river", "largest desert", "deepest lake", "oldest city")


def labelled_set(path: Path, column: str = "rating") -> Path:
    """24 answers, every third evasive; the evasive ones labelled bad, two others too."""
    rows = []
    for i in range(24):
        topic = TOPICS[i % len(TOPICS)]
        answer = f"The {topic} of region {i} is famous for its {topic} records and maps."
        good = "yes"
        if i % 3 == 0:
            answer, good = "I don't know, it depends on many things I cannot help with.", "no"
        if i in (4, 10):
            good = "no"
        rows.append({"question": f"What is the {topic} of region {i}?", "answer": answer,
                     column: good, "kind": "evasive" if i % 3 == 0 else "direct"})  # fmt: skip
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def server():
    with OpenAICompatServer() as srv:
        yield srv


def backends(srv: OpenAICompatServer) -> list[str]:
    return ["--llm", f"openai:{CHAT_MODEL}", "--embeddings", f"openai:{EMBEDDING_MODEL}",
            "--base-url", srv.base_url, "-q"]  # fmt: skip


def _line(out: str, head: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(head))


def test_score_with_a_label_column_prints_the_agreement_and_keeps_the_labels(
    server, tmp_path, capsys
):
    src, out = labelled_set(tmp_path / "in.csv"), tmp_path / "out.csv"
    store = tmp_path / "runs.sqlite3"
    code = main(["score", str(src), "-o", str(out), "--save-run", "labelled", "--store",
                 str(store), *backends(server)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "labels          column 'rating': 24 rows labelled" in captured.err
    table = pd.read_csv(out)
    assert table["label"].tolist()[:4] == ["no", "yes", "yes", "no"]  # as written in the input
    # the summary's figures are the library's on the written file (questions resampled)
    expected = agreement(
        table["score"].to_numpy(), parse_labels(table["label"].tolist()),
        groups=table["user_input"].tolist(),
    )  # fmt: skip
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


def test_a_column_named_label_is_found_by_name(server, tmp_path, capsys):
    src = labelled_set(tmp_path / "in.csv", column="label")
    assert main(["score", str(src), "-o", str(tmp_path / "o.csv"), *backends(server)]) == 0
    captured = capsys.readouterr()
    assert "column 'label': 24 rows labelled" in captured.err
    assert "auroc           " in captured.out


def test_label_column_problems_are_one_line(server, tmp_path, capsys):
    src = labelled_set(tmp_path / "in.csv")
    out = str(tmp_path / "o.csv")
    # a column named like labels that holds none: not used, said, and scoring goes on
    frame = pd.read_csv(src).rename(columns={"rating": "drop"}).assign(label="medical")
    frame.to_csv(tmp_path / "other.csv", index=False)
    assert main(["score", str(tmp_path / "other.csv"), "-o", out, *backends(server)]) == 0
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
        assert main(["score", str(src), "-o", out, "--label-column", column,
                     *backends(server)]) == 2  # fmt: skip
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 or err[-1].startswith("error:")
        assert err[-1].startswith(message), err
    # '' turns a label column off
    assert main(["score", str(src), "-o", out, "--label-column", "", *backends(server)]) == 0
    assert "auroc" not in capsys.readouterr().out
    assert np.isfinite(pd.read_csv(out)["score"]).all()
