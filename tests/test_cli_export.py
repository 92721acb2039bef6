"""``relevancy export RUN OUTPUT``: a saved run written to a file by the CLI, the run named by
number or name, in every format, never over a file already there, and one line for a run or
a store that is not there."""

from __future__ import annotations

import shlex

import pandas as pd
import pytest

from relevancy import read_table
from relevancy.cli import main
from relevancy.runs import RunStore, import_demo
from relevancy.testing.synthetic import synthetic_inputs, synthetic_results


@pytest.fixture()
def store(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    demo = import_demo(store)  # the precomputed demo: real models' scores, labels
    run = store.create_run("partly scored", {}, synthetic_inputs(30, labelled_every=3))
    for batch in synthetic_results(30, batch=7):
        store.append_results(run, [b for b in batch if b[0] != 4])  # row 4 not scored
    return store, demo, run


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".json", ".parquet"])
def test_a_run_exports_to_each_format_as_the_store_reads_it(store, tmp_path, capsys, suffix):
    store, demo, _ = store
    out = tmp_path / f"demo{suffix}"
    assert main(["export", str(demo), str(out), "--store", str(store.path)]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"wrote 48 scored rows of run #{demo} ") and str(out) in said
    got, want = read_table(out), store.export_frame(demo)
    assert list(got.columns) == list(want.columns) and len(got) == len(want) == 48
    for column in ("score", "label"):  # read back as text from CSV
        values = pd.to_numeric(got[column], errors="coerce").tolist()
        assert values == pytest.approx(want[column].astype(float).tolist(), nan_ok=True)
    assert got["user_input"].tolist() == want["user_input"].tolist()
    assert not out.with_name(out.name + ".part").exists()


def test_a_run_is_named_by_number_or_name_and_unscored_rows_are_said(store, tmp_path, capsys):
    store, _, run = store
    for i, spec in enumerate([str(run), f"#{run}", f"run:{run}", "partly scored"]):
        out = tmp_path / f"r{i}.csv"
        assert main(["export", spec, str(out), "--store", str(store.path)]) == 0
        frame, scored = pd.read_csv(out), store.export_frame(run)
        assert len(frame) == len(scored) == 29
        assert frame["created_at"].tolist() == scored["created_at"].tolist()
        said = capsys.readouterr()
        assert "1 of its 30 rows are not scored yet" in said.err


def test_an_existing_file_is_kept_unless_forced(store, tmp_path, capsys):
    store, demo, _ = store
    out = tmp_path / "mine.csv"
    out.write_text("a person's file\n")
    assert main(["export", str(demo), str(out), "--store", str(store.path)]) == 2
    assert out.read_text() == "a person's file\n"
    assert "exists: give another name, or --force" in capsys.readouterr().err
    assert main(["export", str(demo), str(out), "--store", str(store.path), "--force"]) == 0
    assert len(pd.read_csv(out)) == 48


def test_a_run_or_store_that_is_not_there_is_one_line(store, tmp_path, capsys):
    store, demo, run = store
    out = tmp_path / "x.csv"
    assert main(["export", "99", str(out), "--store", str(store.path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no run '99'" in err
    assert f"#{run} 'partly scored' (29 scored)" in err and f"#{demo} " in err
    assert main(["export", "nameless", str(out), "--store", str(store.path)]) == 2
    assert "no run 'nameless'" in capsys.readouterr().err
    missing = tmp_path / "elsewhere" / "runs.sqlite3"
    assert main(["export", "1", str(out), "--store", str(missing)]) == 2
    assert "no run store at" in capsys.readouterr().err
    assert not missing.exists() and not out.exists()  # nothing made on the way
    assert main(["export", str(demo), str(tmp_path / "x.xlsx"), "--store", str(store.path)]) == 2
    assert "use an output name ending in" in capsys.readouterr().err


def test_the_runs_page_gives_a_big_runs_export_command_and_it_works(monkeypatch, tmp_path):
    """Above FILE_IN_MEMORY_UP_TO rows the Runs page says the download is built in memory and
    gives the command that streams it; the command as shown writes the run."""
    import relevancy.dashboard.views.format as format_view
    from relevancy.paths import default_store_path

    from helpers import app, ok, visit

    at = visit(app(), "5_Runs.py")
    assert not [c for c in at.caption if "relevancy export" in c.value]  # 48 rows: no note
    monkeypatch.setattr(format_view, "FILE_IN_MEMORY_UP_TO", 40)
    at.run()
    ok(at)
    (note,) = [c.value for c in at.caption if "relevancy export" in c.value]
    assert note.startswith("The file of these 48 rows is built whole in this server's memory")
    command = shlex.split(note.split("`")[1])
    assert command[:2] == ["relevancy", "export"] and command[3].endswith(".parquet")
    assert command[4:] == ["--store", str(default_store_path())]  # the dashboard's own store
    monkeypatch.chdir(tmp_path)
    assert main(command[1:]) == 0  # as shown, run from a terminal
    assert len(read_table(tmp_path / command[3])) == 48
