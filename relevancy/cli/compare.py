"""``relevancy compare``: two scored files or runs paired, and NEW judged against BASE."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from relevancy.cli import add_command
from relevancy.cli._run_arg import find_run, open_store
from relevancy.cli._values import number
from relevancy.errors import InputError


def register(sub: Any) -> None:
    """Add this command's parser to ``sub`` (the subcommands of ``relevancy``)."""
    p = add_command(sub, "compare")
    p.add_argument(
        "base",
        help="the baseline: a results file of `relevancy score`, or a saved run (run:ID or "
        "run:NAME)",
    )
    p.add_argument("new", help="the candidate, the same way")
    p.add_argument(
        "--fail-on-regression",
        type=number(0, 2),
        default=None,
        metavar="MARGIN",
        help="exit with code 1 when the 95%% CI of the mean difference lies below -MARGIN",
    )
    p.add_argument(
        "--tie-margin", type=number(0, 2), default=0.02, help="differences within count as ties"
    )
    p.add_argument(
        "--markdown", default=None, metavar="FILE", help="append a markdown summary (- for stdout)"
    )
    p.add_argument("--store", default=None, help="run store for run:ID (default: $RELEVANCY_STORE)")
    p.set_defaults(func=cmd_compare)


def _scored_table(spec: str, store_path: str | None) -> tuple[Any, str]:
    """A results file (an export of ``relevancy score``), or ``run:ID`` / ``run:NAME`` from the
    run store."""
    # pandas, the reader and the store load when a comparison runs, not for --help
    import pandas as pd

    from relevancy.io import read_table  # lazy

    if spec.startswith("run:"):
        store = open_store(store_path)
        info = find_run(store, spec)
        names = [c for c in ("id", "variant") if c in info.columns]
        return store.columns(info.id, ["user_input", *names, "score", "mode", "ragas_value"]), (
            f"run #{info.id} {info.name}"
        )
    frame = read_table(spec)
    if "score" not in frame.columns:
        raise InputError(
            f"{spec!r} has no score column: give a file written by `relevancy score` or run:ID"
        )
    frame["score"] = pd.to_numeric(frame["score"], errors="coerce")
    if "ragas_value" in frame.columns:
        frame["ragas_value"] = pd.to_numeric(frame["ragas_value"], errors="coerce")
    return frame, Path(spec).name


def cmd_compare(args: argparse.Namespace) -> int:
    # the analysis (numpy, pandas) loads when a comparison runs, not for --help
    from relevancy.analysis.compare import ignored_ids, regression_check  # lazy
    from relevancy.cli.options import fmt  # lazy

    base, base_name = _scored_table(args.base, args.store)
    new, new_name = _scored_table(args.new, args.store)
    check = regression_check(base, new, margin=args.fail_on_regression, tie_margin=args.tie_margin)
    s = check.summary
    print(f"base            {base_name} ({len(base):,} rows)")
    print(f"new             {new_name} ({len(new):,} rows)")
    set_aside = ignored_ids(base, new)
    if set_aside:
        print(f"pairing         {set_aside}")
    print(
        f"pairs           {s['pairs']:,}  (better {s['wins']:,}, ties {s['ties']:,}, worse "
        f"{s['losses']:,}; NaN {s['nan_pairs']:,})"
    )
    print(f"means           base {fmt(s['mean_a'])}  new {fmt(s['mean_b'])}")
    print(f"verdict         {check.verdict()}")
    for _, row in check.worst.iterrows():
        print(f"regression      {row['diff']:+.3f}  {str(row['user_input'])[:100]}")
    if args.markdown:
        text = check.markdown(base_name, new_name)
        if args.markdown == "-":
            sys.stdout.write(text)
        else:
            with open(args.markdown, "a", encoding="utf-8") as fh:  # a CI step summary appends
                fh.write(text)
    if check.failed:
        print(f"FAIL: {check.verdict()}", file=sys.stderr)
        return 1
    return 0
