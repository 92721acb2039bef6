"""Run-to-run stability: the same rows scored under several generator seeds.

For each row, the population standard deviation of its score across seeds; reported as the
median and the 95th percentile over rows, for the mode's value and for the Ragas value of the
same generations, with the rows whose noncommittal verdict flips and those whose generated
questions hold a near-duplicate pair. The scoring and the figures come from
``relevancy.stability`` (what ``relevancy score --repeats`` and the dashboard's "Re-score"
use). Rows come from HaluQuestQA's development split (the first ``--rows`` rows in file
order), so the data set must be present (``--data``); the script exits cleanly when it is not.

    python bench/stability.py --rows 24 --repeats 5 --cache /tmp/relevancy-bench-cache
    python bench/stability.py --rows 24 --seeds 0 1 2 3 4   # the first, overlapping seeds

``--repeats k`` uses seeds 0, N, 2N, ... (N = strictness, 3), which share no generated
question; consecutive seeds share N-1 of their N questions (sample i uses seed + i).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agreement_stats import load_rows  # noqa: E402
from agreement import DEFAULT_DATA, subset_mask  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--subset", default="dev", choices=["dev", "heldout", "all"])
    parser.add_argument("--rows", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=5, help="seeds 0, N, 2N, ...")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="these seeds instead")
    parser.add_argument("--mode", default="focus")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args(argv)
    if not (args.data / "pairs.jsonl").exists():
        print(f"skipped: no data at {args.data} (pass --data DIR holding pairs.jsonl)")
        return
    from relevancy import AnswerRelevancy
    from relevancy.stability import (
        repeat_seeds,
        rescore,
        row_stability,
        stability_frame,
        summarize_stability,
    )

    rows = load_rows(args.data)
    chosen = [r for r, m in zip(rows, subset_mask(rows, args.subset)) if m][: args.rows]
    pairs = [(r["user_input"], r["response"]) for r in chosen]
    metric = AnswerRelevancy(mode=args.mode, cache=str(args.cache) if args.cache else False)
    seeds = args.seeds or repeat_seeds(0, args.repeats, metric.strictness)
    started = time.perf_counter()
    by_seed = rescore(metric, pairs, seeds)
    print(f"{len(seeds)} seeds x {len(pairs)} rows: {time.perf_counter() - started:.0f} s")
    per_row = [row_stability(seeds, [by_seed[j][i] for j in range(len(seeds))])
               for i in range(len(pairs))]  # fmt: skip
    frame = stability_frame(per_row)
    values = np.array([[r.value for r in results] for results in by_seed], dtype=float)
    ragas = np.array([[r.ragas_value for r in results] for results in by_seed], dtype=float)
    args.out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"rows": len(pairs), "seeds": list(seeds), "mode": args.mode}
    for name, column in ((args.mode, "score_sd"), ("ragas", "ragas_sd")):
        summary[name] = {k: v for k, v in summarize_stability(frame[column]).items() if k != "rows"}
        print(
            f"{name:6s} per-row std over {len(seeds)} seeds: median "
            f"{summary[name]['median_row_sd']:.4f}, p95 {summary[name]['p95_row_sd']:.4f}"
        )
    summary["noncommittal_flips"] = int(frame["noncommittal_flips"].sum())
    summary["near_duplicate_rows"] = int((frame["near_duplicates"] > 0).sum())
    print(f"noncommittal flips in {summary['noncommittal_flips']} rows; near-duplicate "
          f"questions in {summary['near_duplicate_rows']} rows")  # fmt: skip
    spaced = args.seeds is None
    out = args.out / f"stability_{args.subset}_{args.mode}{'' if not spaced else '_spaced'}.json"
    out.write_text(
        json.dumps(
            {
                **summary,
                "values": [[None if math.isnan(x) else x for x in row] for row in values.tolist()],
                "ragas_values": [
                    [None if math.isnan(x) else x for x in row] for row in ragas.tolist()
                ],
            }
        )
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
