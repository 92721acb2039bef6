"""``relevancy score``'s summary: what a finished run prints (rows, mean and its CI, reasons,
chance level, tokens and cost, rate limits, languages, stability, agreement with labels, the
judge check), one line each."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import numpy as np

from relevancy.analysis.agreement import agreement
from relevancy.analysis.cost import (
    usage_totals,
)
from relevancy.analysis.stability import NEAR_DUPLICATE, summarize_stability
from relevancy.cli.options import (
    cost_hint,
    embedded_line,
    fmt,
    prices_from_args,
)
from relevancy.core.modes import describe_mode
from relevancy.core.stats import summarize
from relevancy.scoring.batch_api import live_generation
from relevancy.scoring.files import FileRun
from relevancy.scoring.judge import last_check

__all__ = ["report"]


def report(args: argparse.Namespace, metric: Any, run: FileRun, store: Any) -> int:
    """The summary of a finished run, and the exit code (--fail-under)."""
    stats = summarize(run.values.tolist(), threshold=args.threshold)
    print(
        f"rows            {stats['rows']:,}  (scored {stats['scored']:,}, NaN {stats['nan']:,}, "
        f"incomplete {run.incomplete:,}, from cache {run.cached:,})"
    )
    if run.incomplete:
        print(
            f"incomplete      {run.incomplete:,} rows scored from fewer generated questions than "
            "asked (flag incomplete_generation; column questions_used)"
        )
    print(f"mode            {metric.mode} ({describe_mode(metric.mode)})")
    print(
        f"mean            {fmt(stats['mean'])}  95% CI [{fmt(stats['ci_low'])}, "
        f"{fmt(stats['ci_high'])}]"
    )
    print(f"median          {fmt(stats['median'])}")
    print(f"below {args.threshold:<9} {fmt(100 * stats['below_threshold'], 1)}%")
    print("reasons         " + ", ".join(f"{n:,} {r}" for r, n in run.reasons.most_common()))
    _print_chance(run)
    _print_agreement(run)
    rate = run.seconds / max(len(run.values), 1)
    print(f"time            {run.seconds:.1f} s ({rate:.2f} s/row)")
    if metric.rate_summary():
        print(f"rate limit      {metric.rate_summary()}")
    prices = prices_from_args(args)
    spent = usage_totals(run.usage, prices)
    print(f"tokens          {spent.describe_tokens()}")
    print(f"cost            {cost_hint(spent.describe_cost(), spent.models, prices)}")
    live = live_generation(run.usage, str(metric.llm.name), prices) if args.batch_api else None
    if live:
        print(f"batch, live     {live} (answers the batch did not give back usably)")
    _print_languages(run)
    if run.row_sd is not None:
        _print_stability(run)
    for error, count in run.errors.most_common(5):
        print(f"failed ({count:>3})    {error[:160]}")
    _print_judge(metric)
    print(f"wrote           {run.out}")
    if run.run_id is not None and store is not None:
        print(f"saved           run #{run.run_id} in {store.path} (open it in the dashboard)")
    if not stats["scored"]:
        print(f"FAIL: none of the {stats['rows']:,} rows could be scored", file=sys.stderr)
        return 1
    if args.fail_under is not None and not (stats["mean"] >= args.fail_under):
        print(
            f"FAIL: mean {fmt(stats['mean'])} is below --fail-under {args.fail_under}",
            file=sys.stderr,
        )
        return 1
    return 0


def _print_languages(run: Any) -> None:
    """Which languages the questions were in, and the rows whose languages do not match."""
    if not run.question_languages:
        return
    seen = ", ".join(f"{n:,} {lang}" for lang, n in run.question_languages.most_common(8))
    print(f"languages       questions: {seen}")
    print(
        f"mismatch        {run.language_mismatch:,} rows with generated questions in another "
        f"language than the question (flag language_mismatch); {run.answer_other_language:,} "
        "answers in another language than their question"
    )


def _print_stability(run: Any) -> None:
    """The stability lines of a run scored with --repeats."""
    s = summarize_stability(run.row_sd.tolist())
    seeds = ", ".join(str(x) for x in run.seeds)
    print(
        f"repeats         {len(run.seeds)} per row (generator seeds {seeds}; columns score_sd, "
        "score_min, score_max, noncommittal_flips, near_duplicates)"
    )
    print(
        f"stability       per-row sd median {fmt(s['median_row_sd'])}, p95 "
        f"{fmt(s['p95_row_sd'])}, max {fmt(s['max_row_sd'])} ({s['rows']:,} rows)"
    )
    print(
        f"flips           {run.flips:,} rows change their noncommittal verdict between repeats; "
        f"{run.near_duplicate_rows:,} rows have near-duplicate generated questions "
        f"(cosine >= {NEAR_DUPLICATE})"
    )


def _print_chance(run: FileRun) -> None:
    """What unrelated pairs score with this embedder, and the rows scoring no better (their
    Ragas value; noncommittal rows, zeroed on purpose, aside)."""
    if run.chance is None:
        return
    ragas = run.ragas if run.ragas is not None else run.values
    answered = np.isfinite(ragas)
    if run.noncommittal is not None:
        answered &= ~run.noncommittal
    below = int((ragas[answered] < run.chance.p95).sum())
    what = "" if np.array_equal(ragas, run.values, equal_nan=True) else " (Ragas value)"
    rows = "1 row scores" if below == 1 else f"{below:,} rows score"
    print(f"chance          {run.chance.describe()}; {rows} below that{what}")
    if run.negative:
        print(
            f"negative cosine {run.negative:,} rows have a generated question with a negative "
            "cosine to the question (counted as it is in the mean)"
        )


def _print_agreement(run: FileRun) -> None:
    """The scores' agreement with the human labels (AUROC or Spearman, best threshold)."""
    if run.labels is None:
        return
    a = agreement(run.values, run.labels, groups=run.groups)
    if not a.rows:
        print("labels          no labelled row has a score")
        return
    split = (
        f"{a.positives:,} at or above {a.cut:g}, {a.negatives:,} below"
        if a.cut is not None
        else f"{a.positives:,} good, {a.negatives:,} bad"
    )
    print(f"labels          {a.rows:,} rows ({a.kind}: {split}) on {a.questions:,} questions")
    if a.kind == "graded":
        print(f"spearman        {a.spearman.format()}")
    print(f"auroc           {a.auroc.format()}")
    if math.isfinite(a.threshold.value):
        print(f"best threshold  {a.threshold.format()}")
        print(f"precision       {a.precision.format()} at that threshold")
        print(f"recall          {a.recall.format()}")
    for note in a.notes:
        print(f"note            {note}")


def _print_judge(metric: Any) -> None:
    """The judge's last check, or how to run one; and the embedded caveat."""
    check = last_check(metric)
    if check is not None:
        print(
            f"judge           {check.summary()} (95% CI {fmt(check.ci_low, 2)}-"
            f"{fmt(check.ci_high, 2)})"
        )
    else:
        print("judge           not checked: `relevancy check-judge` with the same options")
    note = embedded_line(metric)
    if note:
        print(f"note            {note}")
