"""Large runs: files read in chunks and written as they go, estimates, runs saved from the CLI,
and two writers (the CLI and the dashboard) in one run store at once."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.paths import default_store_path
from relevancy.runs import RunStore
from relevancy.testing.openai_server import CHAT_MODEL, OpenAICompatServer

from helpers import app, choose_toy_backend, cli_backends, ok, visit, write_pairs


def test_a_file_with_no_scoreable_row_exits_with_one_line(tmp_path, capsys):
    src = tmp_path / "empty.csv"
    src.write_text("question,answer\n,\n  ,x\ny,\n")
    assert main(["score", str(src), "-o", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        "error: 'empty.csv' has no row with both a question and an answer (3 rows, all empty in "
        "one or the other): fill in the question and answer columns"
    )
    assert not (tmp_path / "o.csv").exists()


def test_chunks_give_the_same_output_and_the_run_is_saved(tmp_path, capsys, toy_server):
    backends = cli_backends(toy_server)
    src = write_pairs(tmp_path / "pairs.jsonl", 23, kinds=True)
    whole, chunked = tmp_path / "whole.csv", tmp_path / "chunked.parquet"
    assert main(["score", str(src), "-o", str(whole), "-q", *backends]) == 0
    capsys.readouterr()
    args = [
        "score",
        str(src),
        "-o",
        str(chunked),
        "-q",
        "--chunk-rows",
        "5",
        "--save-run",
        "from the CLI",
        *backends,
    ]
    assert main(args) == 0
    out = capsys.readouterr()
    a, b = pd.read_csv(whole), pd.read_parquet(chunked)
    assert len(a) == len(b) == 23 and list(a.columns) == list(b.columns)
    assert a["score"].tolist() == pytest.approx(b["score"].tolist())
    assert a["kind"].tolist() == b["kind"].tolist()  # the user's own column travels
    assert "from cache 23" in out.out and "estimate        " in out.err
    store = RunStore(default_store_path())
    (run,) = store.list_runs()
    assert f"saved           run #{run.id}" in out.out
    assert (run.name, run.n_rows, run.n_scored) == ("from the CLI", 23, 23)
    assert run.settings["llm"] == f"openai:{CHAT_MODEL}" and "api_key" not in run.settings
    assert run.columns == ("user_input", "response", "kind")
    assert store.columns(run.id, ["score"])["score"].tolist() == pytest.approx(a["score"])


def test_estimate_from_the_measured_speed(tmp_path, capsys, toy_server):
    backends = cli_backends(toy_server)
    src = write_pairs(tmp_path / "pairs.csv", 12, kinds=True)
    more = write_pairs(tmp_path / "more.csv", 40, kinds=True)
    assert main(["score", str(src), "--estimate", *backends]) == 0
    assert "time unknown until the first rows finish" in capsys.readouterr().err
    assert main(["score", str(src), "-o", str(tmp_path / "o.csv"), "-q", *backends]) == 0
    capsys.readouterr()
    assert main(["score", str(more), "--estimate", *backends]) == 0
    err = capsys.readouterr().err
    assert "estimate        about" in err and "for 28 rows" in err  # 12 of 40 are cached
    assert "measured on 12 rows" in err and "12 rows are in the cache already" in err
    assert not (tmp_path / "more.relevancy.csv").exists()  # --estimate scores nothing


def test_embedded_estimate_before_any_run(tmp_path, capsys):
    src = write_pairs(tmp_path / "pairs.csv", 100, kinds=True)
    assert main(["score", str(src), "--estimate"]) == 0
    assert "about 3 min for 100 rows (1.75 s/row, the embedded models' benchmark" in (
        capsys.readouterr().err
    )


@pytest.mark.slow
def test_the_cli_and_the_dashboard_write_one_store_at_once(tmp_path):
    """A CLI run saved into the store while the Dataset page scores another: nothing lost."""
    src = write_pairs(tmp_path / "big.csv", 300, kinds=True)
    store_path = default_store_path()
    with OpenAICompatServer(latency=0.01) as srv:
        env = {**os.environ, "RELEVANCY_STORE": str(store_path)}
        cli = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "relevancy.cli",
                "score",
                str(src),
                "-o",
                str(tmp_path / "big.jsonl"),
                "-q",
                "--chunk-rows",
                "50",
                "--save-run",
                "cli run",
                *cli_backends(srv),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        at = visit(choose_toy_backend(app(), srv), "1_Dataset.py")
        at.segmented_control(key="_w_ds_source").set_value("Bundled demo").run()
        at.button(key="ds_score").click().run()
        ok(at)
        assert any("Scored 48 rows" in s.value for s in at.success)
        stdout, stderr = cli.communicate(timeout=300)
    assert cli.returncode == 0, stderr
    runs = {r.name: r for r in RunStore(store_path).list_runs()}
    assert runs["cli run"].n_scored == 300 and runs["cli run"].complete
    with sqlite3.connect(store_path) as db:  # each row's vector went in with the row
        vectors = dict(db.execute("SELECT run_id, COUNT(*) FROM result_vectors GROUP BY run_id"))
    assert vectors[runs["cli run"].id] == 300
    dashboard = next(r for n, r in runs.items() if n.startswith("demo.csv"))
    assert dashboard.n_scored == dashboard.n_rows == 48
    assert len(pd.read_json(tmp_path / "big.jsonl", lines=True)) == 300
    with open(tmp_path / "big.jsonl") as fh:
        assert all(json.loads(line)["score"] is not None for line in fh)
