"""Write-back does no harm in the team's own MLflow: a store made by an older MLflow is never
migrated, a server that stops mid-write is said so within a bound and a rerun writes exactly
what is missing, a trace that is not there is listed, a person's correction is kept, and every
score not written makes a non-zero exit.

The stores are made by an older MLflow than relevancy's client (``.venv-mlflow``: MLflow 3.17
with its server, made by ``bash scripts/setup.sh dev``), with the real OpenAI SDK traced by its
``mlflow.openai.autolog()`` against the toy server (``tests/data/make_old_mlflow_store.py``);
what is in them afterwards is read by that MLflow's own client (``tests/old_mlflow_client.py``),
never through relevancy's code."""

from __future__ import annotations

import hashlib
import json
import shlex
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from relevancy.cli import main
from relevancy.paths import default_store_path
from relevancy.runs import RunStore
from relevancy.testing.openai_server import OpenAICompatServer
from relevancy.testing.processes import free_port
from relevancy.testing.tool_servers import OLD_MLFLOW, MlflowServer, old_mlflow_python

from helpers import ROOT, app, cli_backends, ok, skip_or_fail, visit

MAKE_STORE = ROOT / "tests" / "data" / "make_old_mlflow_store.py"
OLD_CLIENT = ROOT / "tests" / "old_mlflow_client.py"
NAME = "answer_relevancy"
#: the older MLflow's schema revision (a store it makes is at this one)
OLD_REVISION = "dc11669786a5"
pytestmark = pytest.mark.mlflow_store


@pytest.fixture(scope="module")
def old_python():
    found = old_mlflow_python()
    if found is None:
        skip_or_fail(
            f"no older MLflow (.venv-mlflow, MLflow {OLD_MLFLOW}): bash scripts/setup.sh dev"
        )
    return found


@pytest.fixture(scope="module")
def traced_app():
    """The toy server the traced app talks to."""
    with OpenAICompatServer(text_mode="lines") as srv:
        yield srv


def make_store(old_python, traced_app, folder: Path, traces: int) -> tuple[str, Path, dict]:
    """A SQLite store made by the older MLflow, with ``traces`` autologged chat calls; its URI,
    the traces' export and what the script said (version, experiment, schema revision)."""
    folder.mkdir(parents=True, exist_ok=True)
    uri, export = f"sqlite:///{folder}/mlflow.db", folder / "traces.json"
    cmd = [
        str(old_python),
        str(MAKE_STORE),
        "--tracking-uri",
        uri,
        "--base-url",
        traced_app.base_url,
        "--traces",
        str(traces),
        "--export",
        str(export),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["mlflow"] == OLD_MLFLOW and info["traces"] == traces
    return uri, export, info


def old_client(old_python, *args: str) -> dict:
    """What the older MLflow's own client says (``tests/old_mlflow_client.py``)."""
    done = subprocess.run(
        [str(old_python), str(OLD_CLIENT), *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def cli(toy_server, path: str, out: str, *options: str) -> list[str]:
    """``relevancy score PATH -o OUT OPTIONS...`` on the toy server's models."""
    return ["score", path, "-o", out, *options, *cli_backends(toy_server)]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def revision(db: Path) -> str:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]


def feedback_rows(db: Path) -> int:
    for _ in range(100):
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                return conn.execute("SELECT COUNT(*) FROM assessments").fetchone()[0]
        except sqlite3.OperationalError:  # the server holds a write lock: read again
            time.sleep(0.05)
    raise RuntimeError(f"cannot read {db}")


def test_a_store_made_by_an_older_mlflow_is_never_migrated(
    old_python, traced_app, tmp_path, capsys, monkeypatch, toy_server
):
    uri, export, info = make_store(old_python, traced_app, tmp_path / "old", 6)
    db = tmp_path / "old" / "mlflow.db"
    assert info["revision"] == OLD_REVISION
    before = digest(db)
    out = tmp_path / "scores.csv"
    expected = (
        f"error: the MLflow store {uri} has schema {OLD_REVISION}, made by an older "
        "MLflow (3.17): this MLflow ("
    )
    # feedback, and a run alone (the tracking URI from the environment): refused before scoring
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    for extra in (["--to-mlflow", uri], ["--to-mlflow"], ["--mlflow-run"]):
        args = ["score", str(export), "-o", str(out), "-q", *extra, *cli_backends(toy_server)]
        assert main(args) == 2, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith(expected), err
        assert "would migrate it to " in err[-1] and "nothing was written to it" in err[-1]
        assert not out.exists()  # nothing was scored either
    assert digest(db) == before and revision(db) == OLD_REVISION
    # the Runs page refuses it the same way
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    args = cli(toy_server, str(export), str(out), "-q", "--save-run", "old store")
    assert main(args) == 0
    run = next(r for r in RunStore(default_store_path()).list_runs() if r.name == "old store")
    at = app()
    at.session_state["active_run"] = run.id
    visit(at, "5_Runs.py")
    at.text_input(key=f"runs_wb_mlflow_{run.id}").input(uri)
    ok(at.button(key="runs_to_mlflow").click().run())
    (error,) = [e.value.replace("\\", "") for e in at.error]
    assert "made by an older MLflow (3.17)" in error and "nothing was written to it" in error
    assert not at.success
    assert digest(db) == before and revision(db) == OLD_REVISION
    # and the team's MLflow still opens its own store
    seen = old_client(old_python, "read", uri, info["experiment_id"], NAME)
    assert len(seen["traces"]) == 6 and all(v == [] for v in seen["traces"].values())


def test_through_the_teams_server_feedback_lands_once_and_names_its_run(
    old_python, traced_app, tmp_path, capsys, toy_server
):
    uri, export, info = make_store(old_python, traced_app, tmp_path / "old", 8)
    db = tmp_path / "old" / "mlflow.db"
    out = tmp_path / "scores.csv"
    with MlflowServer(tmp_path / "server", uri) as server:
        args = cli(
            toy_server, str(export), str(out), "--to-mlflow", server.url, "--mlflow-run", "-q"
        )
        assert main(args) == 0
        printed = capsys.readouterr()
        assert f"mlflow          8 feedback '{NAME}' written to {server.url}\n" in printed.out
        run_id = printed.out.split(" as run ")[1].split()[0]
        scores = pd.read_csv(out).set_index("trace_id")
        seen = old_client(old_python, "read", server.url, info["experiment_id"], NAME)
        for trace_id, found in seen["traces"].items():
            (f,) = found
            assert f["valid"] and f["source"] == "LLM_JUDGE" and f["run_id"] == run_id
            assert f["value"] == pytest.approx(scores.loc[trace_id, "score"])
            assert f["label"] == ("relevant" if f["value"] >= 0.5 else "irrelevant")
        assert seen["runs"] == {run_id: sorted(scores.index)}  # the traces are linked to it
        # the same command again: nothing is written twice, the new run is linked too
        assert main(args) == 0
        printed = capsys.readouterr()
        assert (
            f"mlflow          0 feedback '{NAME}' written to {server.url} (8 already there)\n"
            in printed.out
        )
        again = old_client(old_python, "read", server.url, info["experiment_id"], NAME)
        assert {t: [f["id"] for f in v] for t, v in again["traces"].items()} == {
            t: [f["id"] for f in v] for t, v in seen["traces"].items()
        }
        assert len(again["runs"]) == 2
        assert all(linked == sorted(scores.index) for linked in again["runs"].values())
        # a person overrides one score; scoring at another threshold replaces only ours
        person = next(iter(seen["traces"]))
        old_client(old_python, "override", server.url, person, seen["traces"][person][0]["id"], "0")
        args = cli(
            toy_server,
            str(export),
            str(out),
            "--to-mlflow",
            server.url,
            "--threshold",
            "0.99",
            "-q",
        )
        assert main(args) == 0
        printed = capsys.readouterr()
        assert (
            f"mlflow          7 feedback '{NAME}' written to {server.url} (1 kept: a "
            "person overrode relevancy's feedback)\n"
        ) in printed.out
        last = old_client(old_python, "read", server.url, info["experiment_id"], NAME)
    for trace_id, found in last["traces"].items():
        valid = [f for f in found if f["valid"]]
        assert len(valid) == 1
        if trace_id == person:
            assert (valid[0]["source"], valid[0]["value"]) == ("HUMAN", 0)
        else:
            assert (valid[0]["source"], valid[0]["label"]) == ("LLM_JUDGE", "irrelevant")
            assert valid[0]["reason"] != "ok"  # decided at 0.99 too: below it is never "ok"
    assert revision(db) == OLD_REVISION  # the server kept its store's schema


def test_a_server_killed_mid_write_is_said_at_once_and_a_rerun_writes_the_rest(
    old_python, traced_app, tmp_path, capsys, toy_server
):
    n = 120
    uri, export, info = make_store(old_python, traced_app, tmp_path / "old", n)
    db = tmp_path / "old" / "mlflow.db"
    out = tmp_path / "scores.csv"
    server = MlflowServer(tmp_path / "server", uri).start()
    killed: list[float] = []

    def kill_after(rows: int) -> None:  # the server dies mid-write, as a crash does
        while feedback_rows(db) < rows:
            time.sleep(0.05)
        server.kill()
        killed.append(time.monotonic())

    try:
        watcher = threading.Thread(target=kill_after, args=(40,), daemon=True)
        watcher.start()
        args = cli(toy_server, str(export), str(out), "--to-mlflow", server.url, "-q")
        assert main(args) == 1
        ended = time.monotonic()
        watcher.join(5)
        assert killed, "the server was not killed: the write-back ended first"
        assert ended - killed[0] < 120  # bounded (about 30 s); MLflow's own retries took 246 s
        printed = capsys.readouterr()
        written = int(printed.out.split("mlflow          ")[1].split()[0])
        assert 39 <= written < n  # one more may have landed as the server died
        err = printed.err.strip().splitlines()
        assert err[-2].startswith(f"FAIL: mlflow: {server.url} did not answer (")
        assert (
            f"{written} feedback written before it stopped, {n - written} scores not tried"
            in err[-2]
        )
        assert err[-1].startswith(f"FAIL: {n - written} of {n} scores not written to {server.url};")
        assert (
            "not in this tracking store" not in printed.err and "trace_id column" not in printed.err
        )
        in_store = feedback_rows(db)
        assert in_store in (written, written + 1)  # one may have landed as the server died
        # back up: the same command writes exactly what is missing
        server.start()
        assert main(args) == 0
        printed = capsys.readouterr()
        assert (
            f"mlflow          {n - in_store} feedback '{NAME}' written to {server.url} "
            f"({in_store} already there)\n"
        ) in printed.out
        seen = old_client(old_python, "read", server.url, info["experiment_id"], NAME)
    finally:
        server.stop()
    assert len(seen["traces"]) == n
    assert all(len(found) == 1 and found[0]["valid"] for found in seen["traces"].values())


def test_unreachable_is_not_missing_and_missing_traces_are_listed(
    old_python, traced_app, tmp_path, capsys, toy_server
):
    uri, export, info = make_store(old_python, traced_app, tmp_path / "old", 5)
    out = tmp_path / "scores.csv"
    # nothing listens: the server is said not to answer, within a bound
    nobody = f"http://127.0.0.1:{free_port()}"
    args = cli(toy_server, str(export), str(out), "--to-mlflow", nobody, "-q")
    started = time.monotonic()
    assert main(args) == 1
    assert time.monotonic() - started < 120  # MLflow's own retries took 246 s a trace
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2].startswith(f"FAIL: mlflow: {nobody} did not answer (ConnectionRefusedError")
    assert err[-2].endswith("0 feedback written before it stopped, 5 scores not tried")
    assert err[-1].startswith(f"FAIL: 5 of 5 scores not written to {nobody};")
    # two rows whose traces are not there: listed, the others written, exit 1
    rows = json.loads(export.read_text())
    strangers = [dict(rows[0], trace_id=f"tr-{i:032x}") for i in (1, 2)]
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(rows + strangers))
    with MlflowServer(tmp_path / "server", uri) as server:
        args = cli(toy_server, str(mixed), str(out), "--to-mlflow", server.url, "-q")
        assert main(args) == 1
        printed = capsys.readouterr()
        assert f"mlflow          5 feedback '{NAME}' written to {server.url}\n" in printed.out
        err = printed.err.strip().splitlines()
        ids = ", ".join(s["trace_id"] for s in strangers)
        assert err[-2] == f"FAIL: mlflow: 2 rows whose trace is not in this tracking store: {ids}"
        assert err[-1].startswith(f"FAIL: 2 of 7 scores not written to {server.url};")
        seen = old_client(old_python, "read", server.url, info["experiment_id"], NAME)
    assert all(len(found) == 1 for found in seen["traces"].values())


def test_a_file_store_is_one_line_not_a_traceback(tmp_path, capsys, monkeypatch, toy_server):
    import mlflow

    store = tmp_path / "mlruns"
    data = ROOT / "tests" / "data" / "mlflow" / "search_traces.json"
    out = tmp_path / "scores.csv"
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    for uri in (store.as_uri(), str(store)):
        args = cli(toy_server, str(data), str(out), "--mlflow-run", "--to-mlflow", uri, "-q")
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1] == (
            f"error: no MLflow store at {uri}: {store} is not a folder (check the "
            "tracking URI; the traces' store is needed)"
        )
        assert not any(line.startswith("Traceback") for line in err)
    store.mkdir()
    args = cli(toy_server, str(data), str(out), "--mlflow-run", "--to-mlflow", store.as_uri(), "-q")
    assert main(args) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(
        f"error: MLflow {mlflow.__version__} writes to a file store "
        f"({store.as_uri()}) only with MLFLOW_ALLOW_FILE_STORE=true"
    )
    assert list(store.iterdir()) == []  # nothing written
    # allowed: the run is logged (the sample's traces are not in this store: listed, exit 1)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    args[args.index("--mlflow-run") + 1 : args.index("--mlflow-run") + 1] = ["checks"]
    assert main(args) == 1
    printed = capsys.readouterr()
    run_id = printed.out.split(" as run ")[1].split()[0]
    assert (
        mlflow.MlflowClient(tracking_uri=store.as_uri()).get_run(run_id).info.status == "FINISHED"
    )
    assert "rows whose trace is not in this tracking store" in printed.err


def docs_command(tool: str) -> list[str]:
    """The example of docs/cli.md's write-back section that sends scores to ``tool``."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("### Scores back to Phoenix and MLflow", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    (line,) = [s for s in block.splitlines() if s.startswith("relevancy ") and f"--to-{tool}" in s]
    return shlex.split(line)[1:]


def test_the_docs_mlflow_example_runs_as_written(old_python, traced_app, tmp_path, toy_server):
    uri, export, info = make_store(old_python, traced_app, tmp_path / "old", 3)
    with MlflowServer(tmp_path / "server", uri) as server:
        args = docs_command("mlflow")
        args = [server.url if a == "http://localhost:5000" else a for a in args]
        args = [str(export) if a == "traces.json" else a for a in args]
        out = tmp_path / "scores.csv"
        assert main([*args, "-o", str(out), "-q", *cli_backends(toy_server)]) == 0
        seen = old_client(old_python, "read", server.url, info["experiment_id"], NAME)
    assert all(len(found) == 1 for found in seen["traces"].values())
    assert len(seen["runs"]) == 1
