"""Run-to-run stability: the same rows scored under several generator seeds.

For each row, the standard deviation of its score across seeds; reported as the median and the
95th percentile over rows, for the mode's value and for the Ragas value of the same
generations. Rows come from HaluQuestQA's development split (the first ``--rows`` rows in file
order), so the data set must be present (``--data``); the script exits cleanly when it is not.

    python bench/stability.py --rows 24 --seeds 0 1 2 3 4 --cache /tmp/relevancy-bench-cache
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
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--mode", default="focus")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args(argv)
    if not (args.data / "pairs.jsonl").exists():
        print(f"skipped: no data at {args.data} (pass --data DIR holding pairs.jsonl)")
        return
    from relevancy import AnswerRelevancy
    from relevancy.backends._local_generator import SmolLMGenerator

    rows = load_rows(args.data)
    chosen = [r for r, m in zip(rows, subset_mask(rows, args.subset)) if m][: args.rows]
    pairs = [(r["user_input"], r["response"]) for r in chosen]
    values = np.full((len(args.seeds), len(pairs)), np.nan)
    ragas = np.full_like(values, np.nan)
    for k, seed in enumerate(args.seeds):
        metric = AnswerRelevancy(
            llm=SmolLMGenerator(seed=seed),
            mode=args.mode,
            cache=str(args.cache) if args.cache else False,
        )
        started = time.perf_counter()
        results = metric.score_many(pairs, concurrency=2)
        values[k] = [r.value for r in results]
        ragas[k] = [r.ragas_value for r in results]
        print(f"seed {seed}: {time.perf_counter() - started:.0f} s", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"rows": len(pairs), "seeds": args.seeds, "mode": args.mode}
    for name, table in ((args.mode, values), ("ragas", ragas)):
        std = np.nanstd(table, axis=0)
        std = std[np.isfinite(std)]
        summary[name] = {
            "median_row_std": float(np.median(std)),
            "p95_row_std": float(np.quantile(std, 0.95)),
            "max_row_std": float(std.max()),
        }
        print(
            f"{name:6s} per-row std over {len(args.seeds)} seeds: median "
            f"{summary[name]['median_row_std']:.4f}, p95 {summary[name]['p95_row_std']:.4f}"
        )
    out = args.out / f"stability_{args.subset}_{args.mode}.json"
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
