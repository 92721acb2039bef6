"""``bench.dashboard_scale``'s runs of ``relevancy score`` as a subprocess: the CLI on generated
rows against the toy server (its rate and its memory through the run), and with the embedded
embedder on answers of 1-8 sentences (its peak RSS)."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import RssSampler, log, r


def _scored_rows(store: Path) -> int:
    """Scored rows a run store holds (0 when there is none yet), read with sqlite3 alone."""
    import sqlite3

    if not store.exists():
        return 0
    with contextlib.closing(sqlite3.connect(store)) as db:
        return int(db.execute("SELECT COALESCE(SUM(rows), 0) FROM run_stats").fetchone()[0])


def _quarters(samples: list[dict[str, Any]], wall: float, pick: Any = max) -> list[float | None]:
    """The RSS sampled in each quarter of the run (MiB), reduced by ``pick``: the highest (a
    segment's seal, a transient, lands in one quarter) or the median (the level between seals).
    Flat memory keeps the four close; a leak makes them climb with the rows written."""
    out: list[float | None] = []
    for q in range(4):
        seen = [s["rss_mb"] for s in samples if q * wall / 4 <= s["t"] < (q + 1) * wall / 4 + 1e-9]
        out.append(r(pick(seen), 0) if seen else None)
    return out


def cli_run(n: int, base_url: str, folder: Path, store: Path | None = None) -> dict[str, Any]:
    """``relevancy score`` on ``n`` generated rows as a subprocess, the run saved to a run store
    (``--save-run``; a fresh one in ``folder``, or ``store``, which may hold a million rows
    already): wall time, rows/s and peak RSS."""
    import pandas as pd

    src = folder / f"rows_{n}.csv"
    pd.DataFrame(
        {
            "question": [f"What is the tallest mountain in range {i}?" for i in range(n)],
            "answer": [
                f"The tallest peak of range {i} rises above valley {i * 7 % 1000}."
                for i in range(n)
            ],
        }
    ).to_csv(src, index=False)
    store = store or folder / f"runs_{n}.sqlite3"
    before = _scored_rows(store)
    env = {
        **os.environ,
        "RELEVANCY_CACHE_DIR": str(folder / f"cache_{n}_{before}"),
        "RELEVANCY_STORE": str(store),
    }
    cmd = [
        sys.executable,
        "-m",
        "relevancy.cli",
        "score",
        str(src),
        "-o",
        str(folder / f"out_{n}.jsonl"),
        "-q",
        "--concurrency",
        "16",
        "--llm",
        "openai:toy-chat",
        "--embeddings",
        "openai:toy-embed",
        "--base-url",
        base_url,
        "--save-run",
        f"bench {n:,} rows",
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with RssSampler(proc.pid, started=started) as sampler:  # its RSS through the run
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    stdout = proc.stdout.read().decode() if proc.stdout else ""
    after = _scored_rows(store)
    log(
        f"  CLI {n:,} rows into a store of {before:,}: {wall:.0f} s, peak RSS "
        f"{usage.ru_maxrss / 1024:.0f} MiB"
    )
    return {
        "rows": n,
        "store_rows_before": before,
        "store_rows_saved": after - before,
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": r(wall),
        "rows_per_s": r(n / wall, 1),
        "peak_rss_mb": r(usage.ru_maxrss / 1024, 1),
        "rss_quarters_mb": _quarters(sampler.samples, wall),
        "rss_quarters_median_mb": _quarters(sampler.samples, wall, statistics.median),
        "summary": stdout.strip().splitlines()[:2],
    }


def sentence_rows(n: int, seed: int = 0) -> Any:
    """``n`` rows whose answers hold 1 to 8 sentences (drawn from the benches' rows), each
    answer distinct."""
    import random

    import pandas as pd

    from bench.rows import make_rows

    base = make_rows(max(n, 50), seed=seed)
    sentences = sorted(
        {s.strip().rstrip(".") for row in base for s in row["response"].split(". ") if s.strip()}
    )
    rng = random.Random(seed)
    return pd.DataFrame(
        {
            "user_input": [base[i % len(base)]["user_input"] for i in range(n)],
            "response": [
                ". ".join(rng.sample(sentences, rng.randint(1, 8))) + f". Note {i}."
                for i in range(n)
            ],
        }
    )


def local_run(n: int, base_url: str, folder: Path) -> dict[str, Any]:
    """``relevancy score`` with the toy server's questions and the embedded MiniLM embedder
    (``--llm openai:toy-chat --embeddings local``) on ``n`` rows of 1-8 sentences: peak RSS."""
    src = folder / f"sentences_{n}.csv"
    sentence_rows(n).to_csv(src, index=False)
    env = {
        **os.environ,
        "RELEVANCY_CACHE_DIR": str(folder / f"local_cache_{n}"),
        "OMP_WAIT_POLICY": "PASSIVE",
    }
    cmd = [
        sys.executable,
        "-m",
        "relevancy.cli",
        "score",
        str(src),
        "-o",
        str(folder / f"local_out_{n}.jsonl"),
        "-q",
        "--llm",
        "openai:toy-chat",
        "--embeddings",
        "local",
        "--base-url",
        base_url,
        "--save-run",
        f"bench {n:,} rows",
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    log(
        f"  CLI, embedded embedder, {n:,} rows: {wall:.0f} s, peak {usage.ru_maxrss / 1024:.0f} MiB"
    )
    return {
        "rows": n,
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": r(wall),
        "rows_per_s": r(n / wall, 2),
        "peak_rss_mb": r(usage.ru_maxrss / 1024, 1),
    }
