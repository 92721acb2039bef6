"""Two embedded scorers side by side against one alone (``relevancy score`` processes).

The commonest busy machine is our own: a CLI run while the dashboard (or another CLI run)
scores with the embedded models on the same cores. Each run here is a ``relevancy score
--no-cache`` process on ``--rows`` distinct rows (its own worker, the default threads and
OpenMP waiting policy):

* **one alone**, before and after the pairs (their mean is the baseline);
* **two side by side, one thread each** (``RELEVANCY_LLAMA_THREADS=1``: what a generator
  that leaves the cores to the other one would do);
* **two side by side** with the defaults (every core each, passive waiting).

For each: the wall time until every process is done, the combined rows per second, and the
rows that lost a generated question (``questions_used`` below ``strictness``) or have no score.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import ROOT, load_average, log, main, r, table
from bench.rows import make_rows


def _write(rows: list[dict[str, str]], path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.DictWriter(f, fieldnames=["user_input", "response"])
        out.writeheader()
        out.writerows({"user_input": x["user_input"], "response": x["response"]} for x in rows)
    return path


def _outcome(path: Path) -> tuple[int, int, int]:
    """(rows, rows with fewer questions than asked, rows without a score) of a scored file."""
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    fewer = sum(int(float(x["questions_used"] or 0)) < int(float(x["strictness"])) for x in rows)
    nan = sum(x["score"] in ("", "nan", "NaN") for x in rows)
    return len(rows), fewer, nan


def _run(files: list[Path], work: Path, env: dict[str, str]) -> dict[str, Any]:
    """Score ``files`` at once, one process each; the wall time until the last is done."""
    load = load_average()
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "relevancy.cli",
                "score",
                str(f),
                "-o",
                str(work / f"{f.stem}.{i}.out.csv"),
                "--no-cache",
                "-q",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for i, f in enumerate(files)
    ]
    errors = [p.communicate()[1] for p in procs]
    wall = time.perf_counter() - started
    for p, err in zip(procs, errors):
        if p.returncode != 0:
            raise RuntimeError(f"relevancy score failed ({p.returncode}): {err[-500:]}")
    outcomes = [_outcome(work / f"{f.stem}.{i}.out.csv") for i, f in enumerate(files)]
    rows = sum(o[0] for o in outcomes)
    return {
        "processes": len(files),
        "rows": rows,
        "wall_s": r(wall, 1),
        "rows_per_s": r(rows / wall, 3),
        "fewer_questions_rows": sum(o[1] for o in outcomes),
        "nan_rows": sum(o[2] for o in outcomes),
        "load_before": load,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    rows = make_rows(4 * args.rows, seed=11)
    chosen = ("OMP_WAIT_POLICY", "RELEVANCY_LLAMA_THREADS")  # the defaults are measured
    base = {k: v for k, v in os.environ.items() if k not in chosen}
    base["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), base.get("PYTHONPATH")) if p)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    out: dict[str, Any] = {"bench": "side_by_side", "rows_per_process": args.rows, "cores": cores}
    with tempfile.TemporaryDirectory(prefix="bench-side-") as tmp:
        work = Path(tmp)
        files = [
            _write(rows[i * args.rows : (i + 1) * args.rows], work / f"part{i}.csv")
            for i in range(4)
        ]
        log(f"side_by_side: {args.rows} rows a process, {cores} cores")
        out["alone_before"] = _run(files[:1], work, base)
        log(f"  alone: {out['alone_before']['wall_s']} s")
        one = {**base, "RELEVANCY_LLAMA_THREADS": "1"}
        out["pair_one_thread"] = _run(files[1:3], work, one)
        log(f"  two, one thread each: {out['pair_one_thread']['wall_s']} s")
        out["pair_default"] = _run(files[2:4], work, base)
        log(f"  two, every core each (the default): {out['pair_default']['wall_s']} s")
        out["alone_after"] = _run(files[3:4], work, base)
        log(f"  alone again: {out['alone_after']['wall_s']} s")
    alone = (out["alone_before"]["rows_per_s"] + out["alone_after"]["rows_per_s"]) / 2
    out["alone_rows_per_s"] = r(alone, 3)
    for key in ("pair_one_thread", "pair_default"):
        out[key]["over_alone"] = r(out[key]["rows_per_s"] / alone, 2)
    return out


def tables(fig: dict[str, Any]) -> dict[str, str]:
    header = [
        "set-up",
        "processes",
        "rows",
        "wall s",
        "rows/s (all processes)",
        "/ one alone",
        "rows with a question lost",
        "NaN rows",
        "load before",
    ]
    names = {
        "alone_before": "one alone (before)",
        "pair_one_thread": "two side by side, one thread each",
        "pair_default": "two side by side, every core each (the default)",
        "alone_after": "one alone (after)",
    }
    lines = []
    for key, label in names.items():
        d = fig[key]
        ratio = d.get("over_alone")
        lines.append(
            [
                label,
                d["processes"],
                d["rows"],
                d["wall_s"],
                d["rows_per_s"],
                "-" if ratio is None else f"{ratio:.2f}x",
                d["fewer_questions_rows"],
                d["nan_rows"],
                " ".join(f"{x:.2f}" for x in d["load_before"]),
            ]
        )
    note = (
        f"\n\n{fig['rows_per_process']} rows a process, {fig['cores']} cores; one alone: "
        f"{fig['alone_rows_per_s']:.3f} rows/s (mean of before and after)."
    )
    return {"": table(header, lines) + note}


def arguments(p: argparse.ArgumentParser) -> None:  # noqa: ARG001 - no options of its own
    return None


if __name__ == "__main__":
    raise SystemExit(main("side_by_side", measure, arguments, rows=12, quick=["--rows", "2"]))
