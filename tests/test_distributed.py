"""Scoring on Ray: a real local cluster (``ray start --head``), the CLI connecting to it with
``--address``, the Python API, a worker killed mid-run. Values must equal the single-process
run's, row for row.

Ray is an optional extra; without it these tests are skipped on a workstation and fail in CI
(``CI`` set), where ``scripts/setup.sh dev`` installs it.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from helpers import ROOT, cli_backends, in_ci, with_sigint_ignored, write_rows

try:
    import ray
    import ray.data
except ImportError:  # pragma: no cover - depends on the install
    if in_ci():
        raise
    pytest.skip('Ray is not installed (pip install "relevancy[ray]")', allow_module_level=True)

from relevancy.errors import InputError
from relevancy.io import RESULT_COLUMNS, results_to_frame
from relevancy.scoring.config import build_metric
from relevancy.scoring.distributed import default_workers, fit_workers, score_batch, score_dataset
from relevancy.testing.openai_server import CHAT_MODEL, EMBEDDING_MODEL, OpenAICompatServer
from relevancy.testing.processes import free_ports

#: columns that may differ between two runs of the same rows (time, cache state, and which
#: of two rows sharing a text was first to embed it: the total is checked instead)
UNSTABLE = {"seconds", "cached", "embedding_tokens"}
NUMBERS = {
    "score",
    "ragas_value",
    "answer_similarity",
    "similarity_std",
    "strictness",
    "questions_used",
    "prompt_tokens",
    "completion_tokens",
}
# Ray's own modules warn about their internals; that is not ours to fail on
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


@dataclass
class Cluster:
    address: str
    marker: str
    cache_dir: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A real one-node Ray cluster in its own process group, stopped by its pid."""
    temp = Path(tempfile.mkdtemp(prefix="rr-", dir="/tmp"))  # Ray's socket paths must be short
    marker = uuid.uuid4().hex
    env = dict(
        os.environ,
        RAY_AUTH_MODE="disabled",  # drivers connect with Ray's default
        RELEVANCY_CACHE_DIR=str(temp / "node-cache"),  # the node's cache folder
        RELEVANCY_TEST_CLUSTER=marker,  # finds this cluster's worker processes
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    names = (
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
        "metrics-export-port",
        "node-manager-port",
        "object-manager-port",
    )
    # all different, and different from the cluster's own port: ray refuses a port used twice
    chosen = free_ports(len(names) + 1)
    port = chosen.pop()
    ports = [f"--{name}={p}" for name, p in zip(names, chosen)]
    ray_cli = Path(sys.executable).with_name("ray")
    cmd = [
        str(ray_cli),
        "start",
        "--head",
        "--block",
        f"--port={port}",
        "--num-cpus=4",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={temp}",
        *ports,
    ]
    log = temp / "ray-start.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 120
    while b"Ray runtime started" not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("ray start --head failed:\n" + log.read_text(errors="replace")[-3000:])
        time.sleep(0.3)
    try:
        yield Cluster(f"127.0.0.1:{port}", marker, temp / "node-cache", env)
    finally:
        stop_group(proc)
        shutil.rmtree(temp, ignore_errors=True)


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop the cluster: the process group `ray start` leads (its own session), by its id."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 15)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and group_alive(proc.pid):
            proc.poll()
            time.sleep(0.2)
        if not group_alive(proc.pid):
            break
    proc.wait(15)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def connected(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """This test process as a driver of the cluster."""
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()


def pairs(n: int) -> pd.DataFrame:
    """Distinct rows: on topic, partial, off topic, evasive; an id and a user column."""
    kinds = ["on", "partial", "off", "evasive"]
    rows = []
    for i in range(n):
        kind = kinds[i % 4]
        question = f"Which river flows through city number {i}, and how long is it?"
        answer = {
            "on": f"The river Alda{i} flows through city {i}; it is {100 + i} km long.",
            "partial": f"The river Alda{i} flows through that city.",
            "off": f"The museum of city {i} opens at nine and sells postcards.",
            "evasive": f"I don't know which river that is, sorry ({i}).",
        }[kind]
        rows.append({"id": f"r{i:04d}", "question": question, "answer": answer, "kind": kind})
    return pd.DataFrame(rows)


def settings(srv: OpenAICompatServer, **extra: object) -> dict[str, object]:
    return {
        "llm": f"openai:{CHAT_MODEL}",
        "embeddings": f"openai:{EMBEDDING_MODEL}",
        "base_url": srv.base_url,
        **extra,
    }


def reference(frame: pd.DataFrame, srv: OpenAICompatServer) -> pd.DataFrame:
    """The single-process run of the same rows, as ``relevancy score`` exports it."""
    metric = build_metric(**settings(srv, cache=False))  # type: ignore[arg-type]
    mapped = frame.rename(columns={"question": "user_input", "answer": "response"})
    results = metric.score_many(mapped)
    return results_to_frame(results, mapped)


def assert_same_rows(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Every row once, and every result column equal to the single-process run's."""
    assert got["id"].is_unique and len(got) == len(want)
    got = got.set_index("id").loc[want["id"]].reset_index()
    for column in [c for c in RESULT_COLUMNS if c not in UNSTABLE]:
        a, b = got[column].tolist(), want[column].tolist()
        if column in NUMBERS:
            assert [float(x) for x in a] == pytest.approx(
                [float(x) for x in b], abs=1e-12, nan_ok=True
            ), column
        else:
            assert [str(x) for x in a] == [str(x) for x in b], column
    # a text two rows share is billed to whichever embedded it first, once per batch
    sent = got["embedding_tokens"].astype(float).sum()
    assert sent >= want["embedding_tokens"].astype(float).sum() > 0


def cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relevancy.cli", "score", *args, "--engine", "ray", "-q"],
        capture_output=True,
        text=True,
        env=dict(cluster.env, RELEVANCY_CACHE_DIR=str(cluster.cache_dir.parent / "driver")),
        timeout=300,
    )


# ------------------------------------------------------------------------------ no cluster


@pytest.mark.parametrize("per_worker", [0.25, 0.5, 1.0, 1.5, 2.0, 3.0])
def test_default_workers_keep_a_cpu_free_for_the_reads(per_worker):
    for cpus in [1, 2, 3, 4, 5, 8, 16, 100, 200]:
        # by hand: the most workers (at most one per CPU, at most 64) that leave one CPU free
        fits = [w for w in range(1, 65) if w <= cpus and w * per_worker <= cpus - 1]
        expected = max(fits, default=1)
        got = default_workers(float(cpus), per_worker)
        assert got == expected, (cpus, per_worker)
        if cpus > 1 and got * per_worker > cpus - 1:  # only the floor of one may take them all
            assert got == 1


def test_score_batch_keeps_every_row_when_a_batch_cannot_be_scored(
    toy_server: OpenAICompatServer,
) -> None:
    metric = build_metric(**settings(toy_server, cache=False))  # type: ignore[arg-type]
    good = score_batch(metric, pairs(3))
    bad = score_batch(metric, pd.DataFrame({"id": ["a", "b"], "text": ["x", "y"]}))
    head = ["id", "user_input", "response", "kind"]
    assert list(good.columns) == [*head, *RESULT_COLUMNS]
    assert good["score"].notna().all() and not good["error"].any()
    assert list(bad["id"]) == ["a", "b"] and bad["score"].isna().all()
    assert bad["error"].str.contains("missing column 'user_input'").all()
    assert set(bad["reason"]) == {"error"}


# ------------------------------------------------------------------------------ on the cluster


def test_python_api_equals_the_single_process_run(
    connected: Cluster, toy_server: OpenAICompatServer
) -> None:
    frame = pairs(240)
    want = reference(frame, toy_server)
    scored = score_dataset(
        ray.data.from_pandas(frame), workers=2, batch_size=40, **settings(toy_server, cache=False)
    )
    got = scored.to_pandas()
    assert list(got.columns) == list(want.columns)
    assert_same_rows(got, want)
    assert set(got["reason"]) >= {"ok", "noncommittal"}  # the rows are not all alike


def test_cli_connects_with_address_and_the_node_cache_serves_a_rerun(
    cluster: Cluster, tmp_path: Path, toy_server: OpenAICompatServer
) -> None:
    frame = pairs(200)
    src = write_rows(tmp_path / "pairs.csv", frame)
    want = reference(frame, toy_server)
    backend = cli_backends(toy_server)
    out = tmp_path / "scored.parquet"
    done = cli(
        cluster, str(src), "-o", str(out), "--address", cluster.address, "--workers", "2", *backend
    )
    assert done.returncode == 0, done.stderr[-3000:]
    chat_calls = toy_server.stats()["by_path"]["/v1/chat/completions"]

    # the same command again: every row from the node's cache, no new generation
    again = cli(
        cluster,
        str(src),
        "-o",
        str(tmp_path / "again.csv"),
        "--address",
        cluster.address,
        "--workers",
        "2",
        "--fail-under",
        "0.99",
        *backend,
    )
    assert toy_server.stats()["by_path"]["/v1/chat/completions"] == chat_calls
    assert "rows            200  (scored 200, NaN 0, incomplete 0, from cache 0)" in done.stdout
    assert "mean " in done.stdout and "reasons " in done.stdout
    got = pd.read_parquet(out)
    assert list(got["id"]) == list(frame["id"])  # a file keeps its order
    assert_same_rows(got, want)
    # --fail-under works as with the local engine: exit 1, the output still written
    assert again.returncode == 1, again.stderr[-3000:]
    assert "from cache 200" in again.stdout and "is below --fail-under 0.99" in again.stderr
    assert pd.read_csv(tmp_path / "again.csv")["score"].tolist() == pytest.approx(
        got["score"].tolist()
    )


def test_cli_scores_a_folder_into_a_folder_of_parquet(
    cluster: Cluster, tmp_path: Path, toy_server: OpenAICompatServer
) -> None:
    frame = pairs(260)
    folder = tmp_path / "in"
    folder.mkdir()
    for i, part in enumerate((frame[:100], frame[100:200], frame[200:])):
        write_rows(folder / f"part{i}.jsonl", part)
    want = reference(frame, toy_server)
    out = tmp_path / "out"
    done = cli(
        cluster,
        str(folder),
        "-o",
        str(out),
        "--address",
        cluster.address,
        "--chunk-rows",
        "50",
        *cli_backends(toy_server),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    parts = sorted(out.glob("part-*.parquet"))
    assert [len(pd.read_parquet(p)) for p in parts] == [50, 50, 50, 50, 50, 10]
    assert_same_rows(pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True), want)


@pytest.mark.timeout(900)  # its child (which starts a cluster) is bounded at 600 s
def test_cli_starts_a_local_cluster_without_an_address(
    tmp_path: Path, toy_server: OpenAICompatServer
) -> None:
    src = write_rows(tmp_path / "pairs.jsonl", pairs(12))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "relevancy.cli",
            "score",
            str(src),
            "--engine",
            "ray",
            "--workers",
            "1",
            "-q",
            *cli_backends(toy_server),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rows            12  (scored 12" in done.stdout
    assert len(pd.read_parquet(tmp_path / "pairs.relevancy.parquet")) == 12


def test_options_that_need_the_local_engine_say_so(tmp_path: Path) -> None:
    src = write_rows(tmp_path / "pairs.csv", pairs(2))
    from relevancy.cli import main

    assert main(["score", str(src), "--engine", "ray", "--estimate"]) == 2
    assert main(["score", str(src), "-o", str(tmp_path / "x.txt"), "--engine", "ray"]) == 2


def test_a_worker_killed_mid_run_is_retried_and_nothing_is_lost(connected: Cluster) -> None:
    frame = pairs(300)
    # requests slow enough that a worker spends most of its time inside a batch, so the kill
    # usually lands on one in progress
    with OpenAICompatServer(latency=0.1) as srv:
        want = reference(frame, srv)
        srv.clear()
        killed: list[int] = []
        finished = threading.Event()

        def kill_one_worker() -> None:
            # wait until the run is well under way, then kill a scoring actor's process
            while srv.stats()["total"] < 120 and not finished.is_set():
                time.sleep(0.05)
            while not killed and not finished.is_set():
                for pid in worker_pids(connected.marker):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    break
                time.sleep(0.05)

        killer = threading.Thread(target=kill_one_worker, daemon=True)
        killer.start()
        scored = score_dataset(
            ray.data.from_pandas(frame), workers=2, batch_size=25, **settings(srv, cache=False)
        )
        got = scored.to_pandas()
        finished.set()
        killer.join(10)
        chat_calls = srv.stats()["by_path"]["/v1/chat/completions"]
    assert killed, "no scoring worker was found to kill"
    # a batch in progress on the killed worker is scored again (more calls than rows); on a
    # busy machine the kill can land between two batches, with nothing to redo
    assert chat_calls >= len(frame)
    assert (got["error"] == "").all()
    assert_same_rows(got, want)


def worker_pids(marker: str) -> list[int]:
    """This cluster's scoring actors (their environment carries the fixture's marker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"ScoreBatches" in title and f"RELEVANCY_TEST_CLUSTER={marker}".encode() in environ:
            found.append(int(entry.name))
    return found


@pytest.mark.models
def test_the_embedded_models_score_on_a_worker_as_here(connected: Cluster) -> None:
    frame = pairs(4)
    scored = score_dataset(ray.data.from_pandas(frame), workers=1, batch_size=4, cache=False)
    got = scored.to_pandas()
    metric = build_metric(cache=False)
    mapped = frame.rename(columns={"question": "user_input", "answer": "response"})
    results = metric.score_many(mapped)
    want = results_to_frame(results, mapped)
    assert got["llm"].str.startswith("local:").all() and got["score"].notna().all()
    assert_same_rows(got, want)


# ---------------------------------------------------------------- issue 25: workers, Ctrl-C


def test_workers_are_checked_against_the_cpus_the_reads_need() -> None:
    assert fit_workers(2, 4.0, 1.0) == (2, None)
    assert fit_workers(3, 4.0, 1.0) == (3, None)
    workers, note = fit_workers(2, 2.0, 1.0)  # the hang: 2 workers on 2 CPUs
    assert workers == 1 and note is not None
    assert note.startswith("--workers 2 is more than fits: the cluster has 2 CPUs") and (
        "so 1 worker run (the most that fits" in note
    )
    assert fit_workers(12, 4.0, 0.25) == (12, None) and fit_workers(13, 4.0, 0.25)[0] == 12
    with pytest.raises(InputError, match="the Ray cluster has 1 CPU: .* no worker fits"):
        fit_workers(1, 1.0, 1.0)


def test_workers_more_than_fit_are_cut_with_a_note_and_the_run_finishes(
    connected: Cluster, toy_server: OpenAICompatServer
) -> None:
    notes: list[str] = []
    frame = pairs(12)
    scored = score_dataset(
        ray.data.from_pandas(frame),
        workers=8,
        batch_size=4,
        cpus_per_worker=1.0,
        on_note=notes.append,
        **settings(toy_server, cache=False),
    )
    assert notes == [
        "--workers 8 is more than fits: the cluster has 4 CPUs, each worker takes 1 and reading "
        "the input 1, so 3 workers run (the most that fits; with more, the reads would wait "
        "forever)"
    ]
    assert len(scored.to_pandas()) == 12  # with 4 workers on 4 CPUs this waited forever


def complete_csv_rows(path: Path) -> int:
    """The data rows wholly written to the CSV file ``path`` so far (its writer may be midway
    through a row, or have flushed part of one)."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    whole = text[: text.rfind("\r\n") + 2]
    return max(0, sum(1 for _ in csv.reader(io.StringIO(whole, newline=""))) - 1)


def test_ctrl_c_stops_a_ray_run_and_keeps_what_was_written(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Ctrl-C stops the run and exits 130, keeping every row written before it, also when the
    command was started with SIGINT ignored (a background job of a CI script inherits SIG_IGN:
    the signal was lost there, and the run went on to the end and exited 0)."""
    src = write_rows(tmp_path / "pairs.csv", pairs(1200))
    out = tmp_path / "scored.csv"
    part = out.with_name(out.name + ".part")
    with OpenAICompatServer(latency=0.1) as slow:
        argv = [
            sys.executable,
            "-m",
            "relevancy.cli",
            "score",
            str(src),
            "-o",
            str(out),
            "--engine",
            "ray",
            "-q",
            "--address",
            cluster.address,
            "--workers",
            "1",
            "--concurrency",
            "4",
            *cli_backends(slow),
        ]
        proc = subprocess.Popen(
            with_sigint_ignored(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(cluster.env, RELEVANCY_CACHE_DIR=str(tmp_path / "driver")),
        )
        try:
            deadline = time.monotonic() + 300
            written = 0
            while not written:  # wait for rows in the file, not for the file
                assert proc.poll() is None, proc.communicate()[1][-3000:]
                assert time.monotonic() < deadline, "no row was written in 300 s"
                time.sleep(0.2)
                written = complete_csv_rows(part) if part.exists() else 0
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=120)  # a bound, not a speed check
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130, err[-3000:]
    # the last line says where the rows are (Ray may log its own noise before it)
    kept = tmp_path / "scored.partial.csv"
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted: ") and f"scored rows kept in {kept}" in last, err[-3000:]
    assert "KeyboardInterrupt" not in err
    rows = pd.read_csv(kept)
    assert written <= len(rows) < 1200 and rows["score"].notna().all()
    assert not out.exists() and not part.exists()
