"""Scaling out on Ray: rows/s with 1, 2 and 4 workers, and what Ray costs a small run.

A one-node Ray cluster (``ray start --head --num-cpus 2``, its own process group) and the toy
OpenAI-compatible server (its own process) answering every request after a fixed
``--latency``: a latency-bound set-up, so on 2 cores more workers (each scoring
``--concurrency`` rows at once, 0.25 CPU each) should mean more rows/s until the CPUs run out.

* **scaling**: ``relevancy.scoring.distributed.score_path`` (what ``relevancy score --engine ray``
  runs) on a CSV of ``--rows`` rows, from this process as the cluster's driver, with 1, 2 and 4
  workers, each count run ``--rounds`` times in the order 1, 2, 4, 4, 2, 1...; beside it the
  plain CLI (``relevancy score``, one process) on the same file. No cache (``--no-cache``).
* **overhead**: ``--small-rows`` rows through the command line, each a fresh process: the plain
  CLI, ``--engine ray --address`` (the running cluster) and ``--engine ray`` without an address
  (it starts a local Ray and stops it), ``--rounds`` times each, alternating.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import ROOT, facts, fmt, load_average, log, main, r, table
from bench.rows import make_rows
from bench.setups import ToyServer

WORKERS = (1, 2, 4)


class Cluster:
    """``ray start --head --block`` in its own session; stopped by its process group id."""

    def __init__(self, cpus: int, env: dict[str, str]) -> None:
        from relevancy.testing.processes import free_port

        self.temp = Path(tempfile.mkdtemp(prefix="rb-", dir="/tmp"))  # short socket paths
        port = free_port()
        ports = [
            f"--{name}={free_port()}"
            for name in (
                "dashboard-agent-listen-port",
                "dashboard-agent-grpc-port",
                "runtime-env-agent-port",
                "metrics-export-port",
                "node-manager-port",
                "object-manager-port",
            )
        ]
        ray_cli = Path(sys.executable).with_name("ray")
        cmd = [
            str(ray_cli),
            "start",
            "--head",
            "--block",
            f"--port={port}",
            f"--num-cpus={cpus}",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={self.temp}",
            *ports,
        ]
        self.log = self.temp / "ray-start.log"
        started = time.perf_counter()
        with self.log.open("wb") as fh:
            self.proc = subprocess.Popen(
                cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
            )
        while b"Ray runtime started" not in self.log.read_bytes():
            if self.proc.poll() is not None or time.perf_counter() - started > 120:
                self.stop()
                raise RuntimeError("ray start failed: " + self.log.read_text()[-2000:])
            time.sleep(0.2)
        self.start_s = time.perf_counter() - started
        self.address = f"127.0.0.1:{port}"

    def stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.killpg(self.proc.pid, 0)
                except ProcessLookupError:
                    break
                self.proc.poll()
                time.sleep(0.2)
        self.proc.wait(10)
        shutil.rmtree(self.temp, ignore_errors=True)


def write_rows(path: Path, n: int, seed: int) -> Path:
    import pandas as pd

    frame = pd.DataFrame(make_rows(n, seed=seed))[["id", "user_input", "response"]]
    frame["id"] = [f"r{i}" for i in range(len(frame))]
    frame.to_csv(path, index=False)
    return path


def cli_run(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """One ``relevancy score`` process: its wall time, as a user waits for it."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "relevancy.cli", "score", *args, "-q", "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=1800,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"relevancy score {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    line = next((x for x in proc.stdout.splitlines() if x.startswith("time ")), "")
    scoring = float(line.split()[1]) if line else float("nan")
    return {"wall_s": wall, "scoring_s": scoring}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import ray

    from relevancy.scoring.distributed import connect, score_path

    out: dict[str, Any] = {
        "bench": "ray_scaling",
        "rows": args.rows,
        "small_rows": args.small_rows,
        "latency_s": args.latency,
        "concurrency_per_worker": args.concurrency,
        "cluster_cpus": args.cpus,
        "cores": os.cpu_count(),
        "ray_version": ray.__version__,
        "load_average_start": load_average(),
    }
    tmp = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RELEVANCY_CACHE_DIR=str(tmp / "cache"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    os.environ["RAY_AUTH_MODE"] = "disabled"
    server = ToyServer(latency=args.latency)
    base = server.base_url
    backend = [
        "--llm",
        "openai:toy-chat",
        "--embeddings",
        "openai:toy-embed",
        "--base-url",
        base,
        "--concurrency",
        str(args.concurrency),
    ]
    settings = {
        "llm": "openai:toy-chat",
        "embeddings": "openai:toy-embed",
        "base_url": base,
        "concurrency": args.concurrency,
        "cache": False,
    }
    cluster = None
    try:
        cluster = Cluster(args.cpus, env)
        out["cluster_start_s"] = r(cluster.start_s)
        log(f"ray_scaling: cluster {cluster.address} in {cluster.start_s:.1f} s")
        big = write_rows(tmp / "rows.csv", args.rows, seed=5)
        small = write_rows(tmp / "small.csv", args.small_rows, seed=6)

        # --- scaling: this process drives the cluster -------------------------------------
        connect(cluster.address, quiet=True)
        order = [w for k in range(args.rounds) for w in (WORKERS if k % 2 == 0 else WORKERS[::-1])]
        runs: dict[str, list[float]] = {str(w): [] for w in WORKERS}
        for i, w in enumerate(order):
            started = time.perf_counter()
            run = score_path(big, tmp / f"w{w}-{i}.parquet", settings=settings, workers=w)
            wall = time.perf_counter() - started
            assert len(run.values) == args.rows and not run.errors, run.errors
            runs[str(w)].append(wall)
            log(f"  {w} worker(s): {args.rows} rows in {wall:.1f} s ({args.rows / wall:.1f}/s)")
        ray.shutdown()
        plain = []
        for k in range(args.rounds):
            res = cli_run([str(big), "-o", str(tmp / f"plain-{k}.csv"), *backend], env, tmp)
            plain.append(res["wall_s"])
            log(f"  plain CLI: {args.rows} rows in {res['wall_s']:.1f} s")
        best = {w: min(v) for w, v in runs.items()}
        out["scaling"] = {
            "walls_s": {w: [r(x) for x in v] for w, v in runs.items()},
            "rows_per_s": {w: r(args.rows / t, 2) for w, t in best.items()},
            "speedup_over_1": {w: r(best["1"] / t, 2) for w, t in best.items()},
            "plain_cli_walls_s": [r(x) for x in plain],
            "plain_cli_rows_per_s": r(args.rows / min(plain), 2),
        }

        # --- overhead of Ray on a small run, each a fresh process --------------------------
        kinds = {
            "plain": [],
            "ray_address": ["--engine", "ray", "--address", cluster.address, "--workers", "1"],
            "ray_local": ["--engine", "ray", "--workers", "1"],
        }
        small_env = {k: v for k, v in env.items() if k != "RAY_ADDRESS"}
        walls: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
        for k in range(args.rounds):
            for kind in kinds if k % 2 == 0 else list(kinds)[::-1]:
                suffix = "csv" if kind == "plain" else "parquet"
                res = cli_run(
                    [
                        str(small),
                        "-o",
                        str(tmp / f"small-{kind}-{k}.{suffix}"),
                        *kinds[kind],
                        *backend,
                    ],
                    small_env,
                    tmp,
                )
                walls[kind].append(res)
                log(f"  small {kind}: {res['wall_s']:.1f} s (scoring {res['scoring_s']:.1f} s)")
        med = {k: min(x["wall_s"] for x in v) for k, v in walls.items()}
        out["overhead"] = {
            "walls_s": {k: [r(x["wall_s"]) for x in v] for k, v in walls.items()},
            "scoring_s": {k: [r(x["scoring_s"]) for x in v] for k, v in walls.items()},
            "best_wall_s": {k: r(v) for k, v in med.items()},
            "ray_address_minus_plain_s": r(med["ray_address"] - med["plain"]),
            "ray_local_minus_plain_s": r(med["ray_local"] - med["plain"]),
        }
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if cluster is not None:
            cluster.stop()
        server.stop()
    return out


def tables(fig: dict[str, Any]) -> dict[str, str]:
    """Rows per second by workers, Ray's cost on a small run, the set-up."""
    sc, ov = fig["scaling"], fig["overhead"]
    scaling = table(
        ["", "rows/s", "x 1 worker", "runs (s)"],
        [
            [
                f"Ray, {w} worker{'s' if w != '1' else ''}",
                sc["rows_per_s"][w],
                sc["speedup_over_1"][w],
                fmt(sc["walls_s"][w], 1),
            ]
            for w in sc["rows_per_s"]
        ]
        + [
            [
                "plain CLI (`relevancy score`, one process)",
                sc["plain_cli_rows_per_s"],
                None,
                fmt(sc["plain_cli_walls_s"], 1),
            ]
        ],
    )
    labels = {
        "plain": "`relevancy score` (plain)",
        "ray_address": "`--engine ray --address` (a running cluster, 1 worker)",
        "ray_local": "`--engine ray` (starts a local Ray, 1 worker)",
    }
    cost = table(
        [
            f"{fig['small_rows']} rows, each a fresh process",
            "wall s (best)",
            "of which scoring s",
            "runs (s)",
        ],
        [
            [label, ov["best_wall_s"][k], min(ov["scoring_s"][k]), fmt(ov["walls_s"][k], 1)]
            for k, label in labels.items()
        ],
    )
    setup = facts(
        [
            (
                "Ray; cluster CPUs; machine cores",
                f"{fig['ray_version']}; {fig['cluster_cpus']}; {fig['cores']}",
            ),
            ("rows; runs per setting", f"{fig['rows']}; {len(sc['walls_s']['1'])}"),
            ("toy server latency per request, s", fig["latency_s"]),
            ("rows at once per worker", fig["concurrency_per_worker"]),
            (
                "Ray's cost on a running cluster / starting its own, s",
                f"{ov['ray_address_minus_plain_s']:.1f} / {ov['ray_local_minus_plain_s']:.1f}",
            ),
            ("cluster start alone, s", fig.get("cluster_start_s")),
            (
                "load average at the start / the end",
                f"{fmt(fig.get('load_average_start'))} / {fmt(fig.get('load_average_end'))}",
            ),
        ]
    )
    return {"": scaling, "cost": cost + "\n\n" + setup}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    p.add_argument("--concurrency", type=int, default=4, help="rows at once per worker")
    p.add_argument("--rounds", type=int, default=2, help="runs of each setting")
    p.add_argument("--small-rows", type=int, default=40, help="rows of the overhead run")
    p.add_argument("--cpus", type=int, default=2, help="the cluster's CPUs")


QUICK = ["--rows", "40", "--rounds", "1", "--small-rows", "8"]

if __name__ == "__main__":
    raise SystemExit(main("ray_scaling", measure, arguments, rows=400, quick=QUICK))
