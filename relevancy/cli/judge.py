"""``relevancy check-judge``: is this LLM + embedder a judge worth trusting?"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from relevancy.cli import add_command
from relevancy.cli.options import add_backend_options, fmt, metric_from_args
from relevancy.scoring.judge import EMBEDDED_DEFAULT, KINDS, check_judge, judge_estimate


def register(sub: Any) -> None:
    """Add this command's parser to ``sub`` (the subcommands of ``relevancy``)."""
    p = add_command(sub, "check-judge")
    p.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="answers scored at once (default: 4 embedded, 16 API)",
    )
    p.add_argument("--json", default=None, metavar="OUT", help="also write the check as JSON")
    p.add_argument(
        "--fail-under", type=float, default=None, help="exit with code 1 below this agreement"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_backend_options(p)
    p.set_defaults(func=cmd_check_judge)


def cmd_check_judge(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    metric = metric_from_args(args, concurrency=args.concurrency)
    print(f"estimate        {judge_estimate(metric).describe()}", file=sys.stderr)
    with tqdm(total=80, unit="answer", desc="checking", file=sys.stderr, disable=args.quiet) as bar:
        check = check_judge(metric, progress=lambda done, total: bar.update(1))
    print(
        f"judge           {check.llm} + {check.embeddings} ({check.mode} mode, strictness "
        f"{check.strictness})"
    )
    print(
        f"check set       {check.pairs} questions, each with a complete answer and a worse "
        "one (partial, padded, drifting, evasive)"
    )
    print(
        f"agreement       {check.agreement:.3f}  95% CI [{fmt(check.ci_low)}, "
        f"{fmt(check.ci_high)}]  (share of pairs where the complete answer scores higher)"
    )
    print("by kind         " + " · ".join(f"{k} {check.by_kind[k]:.2f}" for k in KINDS))
    print("baselines       " + " · ".join(f"{k} {v:.3f}" for k, v in check.baselines.items()))
    print(
        f"embedded        {EMBEDDED_DEFAULT['agreement']:.3f} (the embedded default, measured "
        f"{EMBEDDED_DEFAULT['measured']})"
    )
    print(f"verdict         {check.verdict()}")
    wrong = [o for o in check.disagreements() if o.outcome == 0]
    if wrong:
        print("preferred the worse answer: " + ", ".join(f"{o.id} ({o.kind})" for o in wrong))
    print(
        f"time            {check.seconds:.1f} s (stored in the cache: `relevancy cache clear` "
        "forgets it)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(check.to_dict(), indent=1) + "\n", "utf-8")
        print(f"wrote           {args.json}")
    if args.fail_under is not None and not (check.agreement >= args.fail_under):
        print(
            f"FAIL: agreement {check.agreement:.3f} is below --fail-under {args.fail_under}",
            file=sys.stderr,
        )
        return 1
    return 0
