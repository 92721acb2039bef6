"""Run-to-run stability: the same rows scored under several generator seeds.

For each row, the population standard deviation of its score across seeds; reported as the
median, the 95th percentile and the maximum over rows, for the mode's value and for the Ragas
value of the same generations, with the rows whose noncommittal verdict flips and those whose
generated questions hold a near-duplicate pair. The scoring and the figures come from
``relevancy.analysis.stability`` (what ``relevancy score --repeats`` and the dashboard's
"Re-score" use). Rows: the first ``--rows`` of HaluQuestQA's development split, so the data set
must be present (``--data``); without it the bench says so and measures nothing.

``--repeats k`` uses seeds 0, N, 2N, ... (N = strictness, 3), which share no generated
question; ``--seeds 0 1 2 3 4`` (consecutive) share N-1 of their N questions (sample i uses
seed + i). The figures keep each row's value under each seed.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

from bench.agreement import DEFAULT_DATA, subset_rows
from bench.harness import log, main, table


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from relevancy import AnswerRelevancy
    from relevancy.analysis.stability import row_stability, stability_frame, summarize_stability
    from relevancy.scoring.repeats import repeat_seeds, rescore

    chosen = subset_rows(args.data, args.subset, args.rows)
    if not chosen:
        log(f"skipped: no data at {args.data} (pass --data DIR holding pairs.jsonl)")
        return {"skipped": f"no data at {args.data}"}
    pairs = [(r["user_input"], r["response"]) for r in chosen]
    metric = AnswerRelevancy(mode=args.mode, cache=str(args.cache) if args.cache else False)
    seeds = args.seeds or repeat_seeds(0, args.repeats, metric.strictness)
    started = time.perf_counter()
    by_seed = rescore(metric, pairs, seeds)
    log(f"{len(seeds)} seeds x {len(pairs)} rows: {time.perf_counter() - started:.0f} s")
    frame = stability_frame(
        [row_stability(seeds, [run[i] for run in by_seed]) for i in range(len(pairs))]
    )
    out: dict[str, Any] = {"rows": len(pairs), "seeds": list(seeds), "mode": args.mode}
    for name, column in ((args.mode, "score_sd"), ("ragas", "ragas_sd")):
        out[name] = {k: v for k, v in summarize_stability(frame[column]).items() if k != "rows"}
    out["noncommittal_flips"] = int(frame["noncommittal_flips"].sum())
    out["near_duplicate_rows"] = int((frame["near_duplicates"] > 0).sum())

    def plain(x: float | None) -> float | None:
        return None if x is None or math.isnan(x) else x

    out["values"] = [[plain(x.value) for x in run] for run in by_seed]
    out["ragas_values"] = [[plain(x.ragas_value) for x in run] for run in by_seed]
    return out


def tables(fig: dict[str, Any]) -> dict[str, str]:
    """Per-row sd over seeds for the mode and the Ragas value; the overlapping seeds too when
    the record holds them (``overlapping``)."""
    rows = []
    for f in (fig, fig.get("overlapping")):
        if not f:
            continue
        seeds = ", ".join(map(str, f["seeds"]))
        rows += [
            [
                f"seeds {seeds}: {name}",
                f[name]["median_row_sd"],
                f[name]["p95_row_sd"],
                f[name]["max_row_sd"],
                f.get("noncommittal_flips"),
                f.get("near_duplicate_rows"),
            ]
            for name in (f.get("mode", "focus"), "ragas")
        ]
    header = ["seeds: value", "median per-row sd", "p95", "max", "flips", "near duplicates"]
    return {"": f"{fig['rows']} rows.\n\n" + table(header, rows, digits=3)}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--subset", default="dev", choices=["dev", "heldout", "all"])
    p.add_argument("--repeats", type=int, default=5, help="seeds 0, N, 2N, ...")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="these seeds instead")
    p.add_argument("--mode", default="focus")
    p.add_argument("--cache", type=Path, default=None, help="cache folder (default: none)")


if __name__ == "__main__":
    quick = ["--rows", "2", "--repeats", "2"]
    raise SystemExit(main("stability", measure, arguments, rows=24, quick=quick))
