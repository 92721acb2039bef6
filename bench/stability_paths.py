"""bench/stability.py's figures again, from the CLI's and the dashboard's path.

Writes the rows ``bench/stability.py`` scores (the first ``--rows`` of HaluQuestQA's development
split) as a CSV, scores it with ``relevancy score --repeats K --mode focus --save-run`` into a
throwaway run store (the same cache as the bench, so the same generations), then opens that
store's Runs and Distributions pages under Streamlit's AppTest and reads their stability
figures. Prints the bench's figures (from its JSON), the CLI's columns summarised by
``relevancy.analysis.stability.summarize_stability``, and the pages' metrics, side by side.

    python bench/stability.py --rows 24 --repeats 5 --cache /tmp/relevancy-stab --out bench/out
    python bench/stability_paths.py --rows 24 --repeats 5 --cache /tmp/relevancy-stab \\
        --bench-json bench/out/stability_dev_focus_spaced.json --json bench/out/paths.json

``--reuse DIR`` reads the figures again from a folder an earlier run left (its ``scored.csv``
and ``runs.sqlite3``) instead of scoring the rows again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agreement_stats import load_rows  # noqa: E402
from agreement import DEFAULT_DATA, subset_mask  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--rows", type=int, default=24)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--mode", default="focus")
    p.add_argument("--cache", type=Path, required=True, help="the cache bench/stability.py used")
    p.add_argument("--bench-json", type=Path, required=True)
    p.add_argument("--json", type=Path, default=None, help="write the figures here too")
    p.add_argument("--reuse", type=Path, default=None, help="an earlier run's folder")
    args = p.parse_args(argv)
    if not (args.data / "pairs.jsonl").exists():
        print(f"skipped: no data at {args.data}")
        return 0
    from streamlit.testing.v1 import AppTest

    from relevancy.analysis.stability import summarize_stability
    from relevancy.cli import main as cli
    from relevancy.runs import RunStore

    rows = load_rows(args.data)
    chosen = [r for r, m in zip(rows, subset_mask(rows, "dev")) if m][: args.rows]
    home = args.reuse or Path(tempfile.mkdtemp(prefix="relevancy-stab-paths-"))
    csv = home / "rows.csv"
    store = home / "runs.sqlite3"
    out = home / "scored.csv"
    if args.reuse is None:
        frame = pd.DataFrame(
            [{"question": r["user_input"], "answer": r["response"]} for r in chosen]
        )
        frame.to_csv(csv, index=False)
        argv_cli = ["score", str(csv), "-o", str(out), "-q", "--mode", args.mode,
                    "--repeats", str(args.repeats), "--cache-dir", str(args.cache),
                    "--save-run", "stability paths", "--store", str(store)]  # fmt: skip
        assert cli(argv_cli) == 0
    table = pd.read_csv(out)
    bench = json.loads(args.bench_json.read_text())
    found = {
        "bench": {
            args.mode: bench[args.mode],
            "ragas": bench["ragas"],
            "seeds": bench["seeds"],
        },
        "cli": {
            args.mode: summarize_stability(table["score_sd"]),
            "ragas": summarize_stability(table["ragas_sd"]),
        },
    }
    os.environ["RELEVANCY_STORE"] = str(store)
    os.environ["RELEVANCY_CACHE_DIR"] = str(args.cache)
    run_id = next(r.id for r in RunStore(store).list_runs() if r.name == "stability paths")
    pages = {}
    for page in ("pages/5_Runs.py", "pages/2_Distributions.py"):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
        at.run()
        at.session_state["active_run"] = run_id
        at.switch_page(page)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        metrics = {m.label: m.value for m in at.metric}
        pages[page] = {k: metrics.get(k) for k in ("Median per-row sd", "p95 per-row sd",
                                                   "Noncommittal flips",
                                                   "Near-duplicate questions")}  # fmt: skip
    found["dashboard"] = pages
    found["rows"], found["repeats"] = len(table), int(table["repeats"].max())
    found["cli_flips"] = int(table["noncommittal_flips"].astype(bool).sum())
    found["cli_near"] = int((table["near_duplicates"] > 0).sum())
    print(json.dumps(found, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(found, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
