"""Run-to-run stability: the same rows scored under several generator seeds.

For each row, the population standard deviation of its score across seeds; reported as the
median and the 95th percentile over rows, for the mode's value and for the Ragas value of the
same generations, with the rows whose noncommittal verdict flips and those whose generated
questions hold a near-duplicate pair. The scoring and the figures come from
``relevancy.analysis.stability`` (what ``relevancy score --repeats`` and the dashboard's "Re-score"
use). Rows come from HaluQuestQA's development split (the first ``--rows`` rows in file
order), so the data set must be present (``--data``); the script exits cleanly when it is not.

    python bench/stability.py --rows 24 --repeats 5 --cache /tmp/relevancy-bench-cache
    python bench/stability.py --rows 24 --seeds 0 1 2 3 4   # the first, overlapping seeds

``--json`` writes the summary (no per-seed values) for ``bench/run_all.py``; its report section
(:func:`render`) also shows, when the record holds them, the overlapping seeds' figures
(``overlapping``) and the same figures read from the CLI and the dashboard (``paths``, from
``bench/stability_paths.py --json``).

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
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agreement_stats import load_rows  # noqa: E402
from _common import fmt, table  # noqa: E402
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
    parser.add_argument("--json", type=Path, default=None, help="the summary, for run_all")
    args = parser.parse_args(argv)
    if not (args.data / "pairs.jsonl").exists():
        print(f"skipped: no data at {args.data} (pass --data DIR holding pairs.jsonl)")
        return
    from relevancy import AnswerRelevancy
    from relevancy.analysis.stability import row_stability, stability_frame, summarize_stability
    from relevancy.scoring.repeats import repeat_seeds, rescore

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
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")


def render(fig: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """The "Stability" section of RESULTS.md."""
    mode = fig.get("mode", "focus")

    def rows_of(f: dict[str, Any], label: str) -> list[list[Any]]:
        return [
            [f"{label}: {name}", fmt(f[name]["median_row_sd"], 3), fmt(f[name]["p95_row_sd"], 3),
             fmt(f[name]["max_row_sd"], 3), f.get("noncommittal_flips"),
             f.get("near_duplicate_rows")]
            for name in (mode, "ragas")
        ]  # fmt: skip

    seeds = ", ".join(map(str, fig["seeds"]))
    body = rows_of(fig, f"seeds {seeds}")
    old = fig.get("overlapping")
    if old:
        body += rows_of(old, f"seeds {', '.join(map(str, old['seeds']))}")
    lines = [
        f"The first {fig['rows']} rows of HaluQuestQA's development split scored under "
        f"{len(fig['seeds'])} generator seeds through `relevancy.analysis.stability` (what "
        "`relevancy score --repeats` and the dashboard's *Re-score k times* call), embedded "
        f"models, `{mode}` mode and the Ragas value of the same generations. Per-row population "
        "sd of the score across seeds, over rows; flips: rows whose noncommittal verdict "
        "changes between seeds; near duplicates: rows with two generated questions at cosine "
        ">= 0.95 in some repeat.",
        "",
        table(
            ["seeds: value", "median per-row sd", "p95", "max", "flips", "near duplicates"], body
        ),  # fmt: skip
        "",
        "Spaced seeds (0, N, 2N, ... with N = strictness 3) share no generated question; "
        "consecutive seeds share N-1 of their N questions (sample i uses seed + i), so they "
        "understate the spread. The sentence view is deterministic: only the Ragas term (weight "
        "0.3) moves with the seed, which is why the mode's sd is about a third of Ragas'.",
    ]
    paths = fig.get("paths")
    if paths:
        runs = paths["dashboard"].get("pages/5_Runs.py", {})
        dist = paths["dashboard"].get("pages/2_Distributions.py", {})
        cli = paths["cli"][mode]
        path_rows = [
            ["bench/stability.py", fmt(fig[mode]["median_row_sd"], 3),
             fmt(fig[mode]["p95_row_sd"], 3), fig.get("noncommittal_flips"),
             fig.get("near_duplicate_rows")],
            ["relevancy score --repeats (score_sd column)", fmt(cli["median_row_sd"], 3),
             fmt(cli["p95_row_sd"], 3), paths.get("cli_flips", ""), paths.get("cli_near", "")],
            ["Runs page", runs.get("Median per-row sd"), runs.get("p95 per-row sd"),
             runs.get("Noncommittal flips"), runs.get("Near-duplicate questions")],
            ["Distributions page", dist.get("Median per-row sd"), dist.get("p95 per-row sd"),
             dist.get("Noncommittal flips"), dist.get("Near-duplicate questions")],
        ]  # fmt: skip
        lines += [
            "",
            f"The same {paths['rows']} rows x {paths['repeats']} repeats from the user's paths "
            "(`bench/stability_paths.py`: `relevancy score --repeats` into a run store, then "
            "the Runs and Distributions pages of that run under AppTest), same cache:",
            "",
            table(["path", "median per-row sd", "p95", "flips", "near duplicates"], path_rows),
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
