"""The Agreement page's figures with a label on every row: the intervals' resamples on every
score against the same resamples on score bins (``relevancy/analysis/_binned.py``), side by side.

For each size and kind of label (binary; a 0-4 rating; a continuous label with more distinct
values than ``LABEL_BINS``), synthetic scores and labels (three answers a question, the
question the bootstrap's unit) go through ``agreement()`` twice, in turn: ``bins=0`` (every
score apart, as before) and the default (``BOOT_BINS`` bins above ``BOOT_ROWS`` rows). Wall
time of each, and how far the binned bounds sit from the exact ones: AUROC, Spearman, the
threshold, precision and recall. Nothing here is asserted (tests/test_agreement.py checks the
bounds on 25,000 rows).

``--store PATH --run ID`` also times the Agreement page's whole computation on a saved run
(``relevancy.dashboard.views.agreement.load``: reading the scores and labels, the figures, the
disagreements' answers), reading the labelled rows from SQLite one by one against reading the
run's columns whole beside its labels (``WHOLE_READ``), in turn, ``--repeats`` times each.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from bench.harness import in_turn, load_average, log, main, r, table
from relevancy.analysis.agreement import agreement
from relevancy.dashboard.views import agreement as agreement_view
from relevancy.runs import RunStore

FIGURES = ("auroc", "spearman", "threshold", "precision", "recall")


def labels_of(kind: str, scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = scores.size
    if kind == "binary":
        return (rng.random(n) < scores) * 1.0
    if kind == "rating":
        return np.clip(np.round(scores * 4 + rng.normal(0, 1, n)), 0, 4)
    return scores + rng.normal(0, 0.3, n)  # continuous


def one(n: int, kind: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    scores = rng.random(n)
    labels = labels_of(kind, scores, rng)
    groups = (np.arange(n) // 3).tolist()
    out: dict[str, Any] = {"rows": n, "labels": kind}
    found = {}
    for side, bins in (("every score", 0), ("score bins", None)):
        started = time.perf_counter()
        found[side] = agreement(scores, labels, groups=groups, bins=bins)
        out[f"{side} s"] = r(time.perf_counter() - started, 2)
    exact, binned = found["every score"], found["score bins"]
    out["bins"] = binned.bins
    out["n_boot"] = binned.n_boot
    for name in FIGURES:
        a, b = getattr(binned, name), getattr(exact, name)
        gap = max(abs(a.low - b.low), abs(a.high - b.high))
        out[f"{name} bound gap"] = None if np.isnan(gap) else float(gap)
        out[f"{name} width"] = None if np.isnan(b.high - b.low) else float(b.high - b.low)
    log(
        f"  {n:,} {kind}: every score {out['every score s']} s, bins {out['score bins s']} s, "
        f"AUROC gap {out['auroc bound gap']:.1e}"
    )
    return out


def page_load(path: str, run_id: int, repeats: int) -> dict[str, Any]:
    """The page's computation on a saved run, each way of reading it, in turn."""
    store = RunStore(path)
    sides = {"labelled rows from SQLite": 10**12, "columns whole beside the labels": None}
    seconds: dict[str, list[float]] = {side: [] for side in sides}
    default = agreement_view.WHOLE_READ
    rows = 0
    for turn in range(repeats):
        for side in in_turn(list(sides), turn):
            agreement_view.WHOLE_READ = sides[side] or default
            started = time.perf_counter()
            view = agreement_view.load(store, run_id)
            seconds[side].append(time.perf_counter() - started)
            rows = view.overall.rows
    agreement_view.WHOLE_READ = default
    out = {"store": path, "run": run_id, "labelled rows": rows, "whole_read": default}
    out.update({f"{side} s": r(min(v), 2) for side, v in seconds.items()})
    log(f"  page load: {out}")
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    load_before = load_average()
    runs = []
    for n in args.sizes:
        for kind in args.labels:
            runs.append(one(n, kind, args.seed))
    out = {
        "bench": "agreement_scale",
        "sizes": args.sizes,
        "load_average_before": load_before,
        "runs": runs,
    }
    if args.store:
        out["page"] = page_load(args.store, args.run, args.repeats)
    return out


def tables(fig: dict[str, Any]) -> dict[str, str]:
    header = [
        "labelled rows",
        "labels",
        "every score s",
        "score bins s",
        "speed-up",
        "AUROC bounds moved",
        "Spearman bounds moved",
        "threshold bounds moved (interval width)",
        "precision, recall moved",
    ]
    rows = []
    for run in fig.get("runs", []):

        def gap(name: str, run: dict[str, Any] = run) -> str:
            value = run.get(f"{name} bound gap")
            return "–" if value is None else f"{value:.1e}"

        width = run.get("threshold width")
        rows.append(
            [
                run["rows"],
                run["labels"],
                run["every score s"],
                run["score bins s"],
                f"{run['every score s'] / max(run['score bins s'], 1e-9):.1f}x",
                gap("auroc"),
                gap("spearman"),
                f"{gap('threshold')} ({width:.3f})" if width is not None else gap("threshold"),
                f"{gap('precision')}, {gap('recall')}",
            ]
        )
    load = ", ".join(f"{x:.2f}" for x in fig.get("load_average_before", []))
    runs = fig.get("runs") or [{}]
    note = (
        f"\n\n{runs[0].get('n_boot', '?')} resamples of whole questions (three rows each), "
        f"{runs[0].get('bins', '?'):,} score bins; the two sides take the same draws. "
        f"Load average before: {load}."
    )
    text = table(header, rows, digits=2) + note
    page = fig.get("page")
    if page:
        sides = ("labelled rows from SQLite", "columns whole beside the labels")
        text += "\n\n" + table(
            ["the page's computation, a saved run", *(f"{side}, s" for side in sides)],
            [[f"{page['labelled rows']:,} labelled rows", *(page[f"{s} s"] for s in sides)]],
        )
        text += "\n\nThe faster of each side's runs."
    return {"": text}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes", type=int, nargs="+", default=[100_000, 1_000_000], help="labelled rows"
    )
    p.add_argument(
        "--labels", nargs="+", default=["binary", "rating", "continuous"], help="label kinds"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--store", default=None, help="a run store: time the page's load on a run")
    p.add_argument("--run", type=int, default=1, help="with --store: the run (default 1)")
    p.add_argument("--repeats", type=int, default=2, help="with --store: runs of each side")


if __name__ == "__main__":
    raise SystemExit(main("agreement_scale", measure, arguments, quick=["--sizes", "25000"]))
