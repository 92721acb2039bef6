"""Command line: ``relevancy score``, ``score-one``, ``check-judge``, ``compare``, ``cache``,
``doctor`` and ``dashboard``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from relevancy._cache import Cache
from relevancy._errors import InputError, RelevancyError
from relevancy._io import OUTPUT_FORMATS, check_text, read_table
from relevancy._metric import PROMPT_LANGUAGES, is_embedded
from relevancy._modes import MODE_DESCRIPTIONS, MODES, describe_mode
from relevancy._noncommittal import DETECTOR_DESCRIPTIONS, DETECTORS
from relevancy._redact import redact
from relevancy._stats import summarize
from relevancy.agreement import agreement
from relevancy.backends import BACKEND_SPECS
from relevancy.batch import CHUNK_ROWS, FileRun, score_file, survey
from relevancy.compare import regression_check
from relevancy.cost import (
    DEFAULT_PRICES,
    PRICES_AS_OF,
    PRICES_SOURCE,
    Price,
    describe_prices,
    parse_price,
    usage_totals,
)
from relevancy.distributed import score_path
from relevancy.doctor import SMOKE_TIMEOUT_S, run_doctor
from relevancy.estimate import estimate, measure_sample
from relevancy.factory import EMBEDDED_NOTE, build_metric, preflight
from relevancy.importers import FORMAT_NAMES, SOURCE_FORMATS
from relevancy.judge import EMBEDDED_DEFAULT, KINDS, check_judge, last_check
from relevancy.launch import run_dashboard
from relevancy.stability import MAX_REPEATS, NEAR_DUPLICATE, summarize_stability
from relevancy.store import RunStore

__all__ = ["main", "make_parser"]


def _add_backend_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("backends")
    for role, what in (("llm", "question generator"), ("embeddings", "embedder")):
        specs = "; ".join(f"{spec}: {meaning}" for spec, meaning in BACKEND_SPECS[role])
        g.add_argument(f"--{role}", default="local", metavar="SPEC", help=f"{what}: {specs}")
    g.add_argument(
        "--base-url",
        default=None,
        help="OpenAI-compatible server URL, e.g. http://127.0.0.1:8080/v1 "
        "(default: $OPENAI_BASE_URL or api.openai.com)",
    )
    g.add_argument(
        "--api-key", default=None, help="API key (prefer the OPENAI_API_KEY environment variable)"
    )
    g.add_argument("--strictness", type=int, default=3, help="questions per answer, 1-10")
    g.add_argument(
        "--noncommittal",
        default="auto",
        choices=DETECTORS,
        help="how evasive answers are detected: "
        + "; ".join(f"{k}: {v}" for k, v in DETECTOR_DESCRIPTIONS.items()),
    )
    g.add_argument(
        "--mode",
        default="auto",
        choices=MODES,
        help="what the score is: " + "; ".join(f"{k}: {v}" for k, v in MODE_DESCRIPTIONS.items()),
    )
    g.add_argument("--seed", type=int, default=0, help="sampling seed")
    g.add_argument(
        "--prompt-language",
        default="answer",
        choices=tuple(PROMPT_LANGUAGES),
        help="the language the generator writes its questions in: "
        + "; ".join(f"{k}: {v}" for k, v in PROMPT_LANGUAGES.items()),
    )
    g.add_argument("--timeout", type=float, default=60.0, help="seconds per API request")
    g.add_argument("--no-cache", action="store_true", help="bypass the persistent cache")
    g.add_argument("--cache-dir", default=None, help="cache folder (default: user cache dir)")


def _metric(args: argparse.Namespace, concurrency: int | None = None, *, check: bool = True) -> Any:
    """The metric the options describe, checked against its servers (one line when not)."""
    cache: Any = False if args.no_cache else (Cache(args.cache_dir) if args.cache_dir else True)
    metric = build_metric(
        llm=args.llm,
        embeddings=args.embeddings,
        base_url=args.base_url,
        api_key=args.api_key,
        strictness=args.strictness,
        noncommittal=args.noncommittal,
        mode=args.mode,
        seed=args.seed,
        prompt_language=args.prompt_language,
        timeout=args.timeout,
        cache=cache,
        concurrency=concurrency,
    )
    if check:
        preflight(metric)
    return metric


def _fmt(x: float | None, digits: int = 3) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _embedded_line(metric: Any) -> str | None:
    """The embedded default's caveat with its judge-check figure (None for API models)."""
    if not is_embedded(metric.llm, metric.embeddings):
        return None
    return (
        f"{EMBEDDED_NOTE} (judge check {EMBEDDED_DEFAULT['agreement']:.2f} on "
        f"{EMBEDDED_DEFAULT['pairs']} pairs; `relevancy check-judge` checks yours)"
    )


def cmd_score(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    if args.engine == "ray":
        return _score_on_ray(args)
    out = Path(args.output) if args.output else Path(Path(args.input).stem + ".relevancy.csv")
    if out.suffix.lower() not in OUTPUT_FORMATS:
        raise InputError(
            f"cannot write {out.name!r}: use an output name ending in " + ", ".join(OUTPUT_FORMATS)
        )
    repeats = _repeats(args)
    metric = _metric(args, concurrency=args.concurrency, check=False)
    found = survey(
        args.input, metric, source_format=args.source_format, label_column=args.label_column
    )
    print(f"input           {found.source.describe()}", file=sys.stderr)
    if found.label_column:
        print(f"labels          column {found.label_column!r}: {found.labelled:,} rows labelled",
              file=sys.stderr)  # fmt: skip
    for note in found.notes:
        print(f"note: {note}", file=sys.stderr)
    for problem in found.problems:
        print(f"note: row {problem.row}: {problem.problem}", file=sys.stderr)
    if found.n_problems > len(found.problems):
        more = found.n_problems - len(found.problems)
        print(f"note: ... and {more:,} more rows with problems", file=sys.stderr)
    prices = _prices(args)
    if args.sample < 0:
        raise InputError(f"--sample must be 0 or more rows, got {args.sample}")
    if args.sample:
        preflight(metric)
        measured = measure_sample(metric, found.stats, args.sample)
        print(f"sample          scored {len(measured)} rows of the file to measure these models "
              "(they are in the cache for the run)", file=sys.stderr)  # fmt: skip
        found = survey(
            args.input, metric, source_format=found.source.format,
            label_column=found.label_column,
        )  # fmt: skip
    stats = found.stats
    if repeats > 1:  # every repeat is scored (its cache is not looked up: an upper bound)
        stats = dataclasses.replace(
            stats,
            rows=stats.rows * repeats,
            question_chars=stats.question_chars * repeats,
            answer_chars=stats.answer_chars * repeats,
        )
    plan = estimate(metric, stats)
    print(f"estimate        {plan.describe()}", file=sys.stderr)
    print(f"  tokens        {plan.describe_tokens()}", file=sys.stderr)
    models = (plan.llm, plan.embeddings)
    print(f"  cost          {_cost_hint(plan.describe_cost(prices), models, prices)}",
          file=sys.stderr)  # fmt: skip
    if args.estimate:
        return 0
    preflight(metric)
    store = RunStore(args.store) if args.store else RunStore() if args.save_run else None
    total = found.rows * repeats
    with tqdm(total=total, unit="row", desc="scoring", file=sys.stderr, disable=args.quiet,
              dynamic_ncols=True) as bar:  # fmt: skip
        run = score_file(
            metric,
            args.input,
            out,
            chunk_rows=args.chunk_rows,
            progress=bar.update,
            store=store,
            run_name=args.save_run or "",
            settings=_run_settings(args, metric),
            source_format=found.source.format,  # detected once, by the survey
            repeats=repeats,
            label_column=found.label_column,
        )
    return _report(args, metric, run, store)


def _report(args: argparse.Namespace, metric: Any, run: FileRun, store: Any) -> int:
    """The summary of a finished run, and the exit code (--fail-under)."""
    stats = summarize(run.values.tolist(), threshold=args.threshold)
    print(
        f"rows            {stats['rows']:,}  (scored {stats['scored']:,}, NaN {stats['nan']:,}, "
        f"from cache {run.cached:,})"
    )
    print(f"mode            {metric.mode} ({describe_mode(metric.mode)})")
    print(
        f"mean            {_fmt(stats['mean'])}  95% CI [{_fmt(stats['ci_low'])}, "
        f"{_fmt(stats['ci_high'])}]"
    )
    print(f"median          {_fmt(stats['median'])}")
    print(f"below {args.threshold:<9} {_fmt(100 * stats['below_threshold'], 1)}%")
    print("reasons         " + ", ".join(f"{n:,} {r}" for r, n in run.reasons.most_common()))
    _print_chance(run)
    _print_agreement(run)
    rate = run.seconds / max(len(run.values), 1)
    print(f"time            {run.seconds:.1f} s ({rate:.2f} s/row)")
    prices = _prices(args)
    spent = usage_totals(run.usage, prices)
    print(f"tokens          {spent.describe_tokens()}")
    print(f"cost            {_cost_hint(spent.describe_cost(), spent.models, prices)}")
    _print_languages(run)
    if run.row_sd is not None:
        _print_stability(run)
    for error, count in run.errors.most_common(5):
        print(f"failed ({count:>3})    {error[:160]}")
    _print_judge(metric)
    print(f"wrote           {run.out}")
    if run.run_id is not None:
        print(f"saved           run #{run.run_id} in {store.path} (open it in the dashboard)")
    if not stats["scored"]:
        print(f"FAIL: none of the {stats['rows']:,} rows could be scored", file=sys.stderr)
        return 1
    if args.fail_under is not None and not (stats["mean"] >= args.fail_under):
        print(
            f"FAIL: mean {_fmt(stats['mean'])} is below --fail-under {args.fail_under}",
            file=sys.stderr,
        )
        return 1
    return 0


def _repeats(args: argparse.Namespace) -> int:
    repeats = getattr(args, "repeats", 1)
    if not 1 <= repeats <= MAX_REPEATS:
        raise InputError(f"--repeats must be from 1 to {MAX_REPEATS}, got {repeats}")
    return repeats


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
    print(f"repeats         {len(run.seeds)} per row (generator seeds {seeds}; columns score_sd, "
          "score_min, score_max, noncommittal_flips, near_duplicates)")  # fmt: skip
    print(
        f"stability       per-row sd median {_fmt(s['median_row_sd'])}, p95 "
        f"{_fmt(s['p95_row_sd'])}, max {_fmt(s['max_row_sd'])} ({s['rows']:,} rows)"
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
        print(f"negative cosine {run.negative:,} rows have a generated question with a negative "
              "cosine to the question (counted as it is in the mean)")  # fmt: skip


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


def _prices(args: argparse.Namespace) -> dict[str, Price]:
    """The default price table with the user's ``--price`` entries on top."""
    table = dict(DEFAULT_PRICES)
    table.update(parse_price(text) for text in args.price or ())
    return table


def _cost_hint(text: str, models: Any, prices: dict[str, Price]) -> str:
    if text.startswith("unknown"):
        return f"{text} (add --price MODEL=INPUT/OUTPUT, dollars per 1M tokens)"
    used = describe_prices(models, prices)
    if text.startswith("$0 (") or not text or not used:
        return text
    return f"{text} at {used}; change with --price"


def _score_on_ray(args: argparse.Namespace) -> int:
    """``relevancy score --engine ray``: the rows scored by Ray workers, the same summary."""
    from tqdm import tqdm

    if args.estimate or args.save_run or args.store or _repeats(args) > 1 or args.label_column:
        raise InputError(
            "--estimate, --save-run, --store, --repeats and --label-column work with --engine "
            "local only"
        )
    source = Path(args.input)
    # by default in the working folder, as with the local engine; a folder for a folder
    out = Path(
        args.output or source.stem + (".relevancy.parquet" if source.is_file() else ".relevancy")
    )
    metric = _metric(args, concurrency=args.concurrency)  # checks the servers from here
    settings = {
        "llm": args.llm,
        "embeddings": args.embeddings,
        "base_url": args.base_url,
        "api_key": args.api_key,
        "strictness": args.strictness,
        "noncommittal": args.noncommittal,
        "mode": args.mode,
        "seed": args.seed,
        "prompt_language": args.prompt_language,
        "timeout": args.timeout,
        "cache": False if args.no_cache else (args.cache_dir or True),
        "concurrency": args.concurrency,
    }
    with tqdm(unit="row", desc="scoring", file=sys.stderr, disable=args.quiet) as bar:
        run = score_path(
            source,
            out,
            settings=settings,
            address=args.address,
            workers=args.workers,
            part_rows=args.chunk_rows,
            progress=bar.update,
            quiet=args.quiet,
        )
    return _report(args, metric, run, None)


def _run_settings(args: argparse.Namespace, metric: Any) -> dict[str, Any]:
    """What a run saved from the command line records (never the key)."""
    return {
        "backend": "embedded" if is_embedded(metric.llm, metric.embeddings) else "cli",
        "llm": args.llm,
        "embeddings": args.embeddings,
        "base_url": args.base_url,
        "strictness": args.strictness,
        "noncommittal": args.noncommittal,
        "mode": args.mode,
        "prompt_language": args.prompt_language,
        "llm_name": metric.llm.name,
        "embeddings_name": metric.embeddings.name,
        "mode_used": metric.mode,
        "from": "relevancy score",
    }


def _print_judge(metric: Any) -> None:
    """The judge's last check, or how to run one; and the embedded caveat."""
    check = last_check(metric)
    if check is not None:
        print(f"judge           {check.summary()} (95% CI {_fmt(check.ci_low, 2)}-"
              f"{_fmt(check.ci_high, 2)})")  # fmt: skip
    else:
        print("judge           not checked: `relevancy check-judge` with the same options")
    note = _embedded_line(metric)
    if note:
        print(f"note            {note}")


def cmd_score_one(args: argparse.Namespace) -> int:
    check_text("question", args.question)
    check_text("answer", args.answer)
    metric = _metric(args, concurrency=1)
    r = metric.score(user_input=args.question, response=args.answer)
    print(f"question : {args.question}")
    print(f"answer   : {args.answer}")
    print(f"models   : {r.llm} + {r.embeddings}")
    print("generated questions (cosine similarity to the question):")
    for q in r.questions:
        if q.similarity is None:
            print(f"  {'  -  ':>6}  [unusable: {q.error}]")
        else:
            flag = "  (flagged noncommittal)" if q.noncommittal else ""
            print(f"  {q.similarity:6.3f}  {q.question}{flag}")
    verdict = "yes" if r.noncommittal else "no"
    print(f"noncommittal: {verdict} ({r.noncommittal_method}: {r.noncommittal_detail})")
    if r.error:
        print(f"score    : nan ({r.error})")
        return 1
    sims = r.similarities
    worked = " + ".join(f"{s:.3f}" for s in sims)
    rule = "  x 0 (noncommittal)" if r.noncommittal else ""
    ragas = "score    " if r.mode == "ragas" else "ragas    "
    print(f"{ragas}: {r.ragas_value:.3f}   = ({worked}) / {len(sims)}{rule}")
    if r.mode != "ragas":
        print("sentences of the answer (cosine similarity to the question):")
        for part in r.parts:
            print(f"  {part['similarity']:6.3f}  {part['text']}")
        print(f"score    : {r.value:.3f}   ({r.mode} mode: {describe_mode(r.mode)})")
    note = _embedded_line(metric)
    if note:
        print(f"note     : {note}")
    return 0


def cmd_check_judge(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    metric = _metric(args, concurrency=args.concurrency)
    with tqdm(total=80, unit="answer", desc="checking", file=sys.stderr, disable=args.quiet) as bar:
        check = check_judge(metric, progress=lambda done, total: bar.update(1))
    print(f"judge           {check.llm} + {check.embeddings} ({check.mode} mode, strictness "
          f"{check.strictness})")  # fmt: skip
    print(f"check set       {check.pairs} questions, each with a complete answer and a worse "
          "one (partial, padded, drifting, evasive)")  # fmt: skip
    print(
        f"agreement       {check.agreement:.3f}  95% CI [{_fmt(check.ci_low)}, "
        f"{_fmt(check.ci_high)}]  (share of pairs where the complete answer scores higher)"
    )
    print("by kind         " + " · ".join(f"{k} {check.by_kind[k]:.2f}" for k in KINDS))
    print("baselines       " + " · ".join(f"{k} {v:.3f}" for k, v in check.baselines.items()))
    print(f"embedded        {EMBEDDED_DEFAULT['agreement']:.3f} (the embedded default, measured "
          f"{EMBEDDED_DEFAULT['measured']})")  # fmt: skip
    print(f"verdict         {check.verdict()}")
    wrong = [o for o in check.disagreements() if o.outcome == 0]
    if wrong:
        print("preferred the worse answer: " + ", ".join(f"{o.id} ({o.kind})" for o in wrong))
    print(f"time            {check.seconds:.1f} s (stored in the cache: `relevancy cache clear` "
          "forgets it)")  # fmt: skip
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


def _scored_table(spec: str, store_path: str | None) -> tuple[Any, str]:
    """A results file (an export of ``relevancy score``), or ``run:ID`` from the run store."""
    if spec.startswith("run:"):
        store = RunStore(store_path) if store_path else RunStore()
        try:
            run_id = int(spec[4:].lstrip("#"))
        except ValueError:
            raise InputError(f"{spec!r} is not a run: write run:ID, e.g. run:12") from None
        info = store.get_run(run_id)
        names = [c for c in ("id", "variant") if c in info.columns]
        return store.columns(run_id, ["user_input", *names, "score", "mode", "ragas_value"]), (
            f"run #{run_id} {info.name}"
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
    base, base_name = _scored_table(args.base, args.store)
    new, new_name = _scored_table(args.new, args.store)
    check = regression_check(base, new, margin=args.fail_on_regression, tie_margin=args.tie_margin)
    s = check.summary
    print(f"base            {base_name} ({len(base):,} rows)")
    print(f"new             {new_name} ({len(new):,} rows)")
    print(f"pairs           {s['pairs']:,}  (better {s['wins']:,}, ties {s['ties']:,}, worse "
          f"{s['losses']:,}; NaN {s['nan_pairs']:,})")  # fmt: skip
    print(f"means           base {_fmt(s['mean_a'])}  new {_fmt(s['mean_b'])}")
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


def cmd_cache(args: argparse.Namespace) -> int:
    cache = Cache(args.cache_dir) if args.cache_dir else Cache()
    if args.action == "clear":
        before = cache.stats()
        cache.clear()
        print(
            f"cleared {before['generations']} generations and {before['embeddings']} "
            f"embeddings from {before['path']}"
        )
    else:
        s = cache.stats()
        print(
            f"path         {s['path']}\ngenerations  {s['generations']}\n"
            f"embeddings   {s['embeddings']}\nsize         {s['bytes'] / 1e6:.1f} MB"
        )
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    return run_doctor(smoke=not args.no_smoke, timeout=args.timeout, as_json=args.json)


def cmd_dashboard(args: argparse.Namespace) -> int:
    return run_dashboard(args.port, args.streamlit_options)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relevancy", description="Compute and explain the Answer Relevancy of LLM answers."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "score",
        help="score a file of question/answer pairs: a table (CSV/JSON/JSONL/Parquet) or an export "
        "of Langfuse, LangSmith, Phoenix, OpenAI chat logs or a Hugging Face dataset",
    )
    p.add_argument(
        "input",
        help="table with user_input/question and response/answer columns, a tool's export, or a "
        "Hugging Face save_to_disk folder",
    )
    p.add_argument(
        "--format",
        dest="source_format",
        choices=SOURCE_FORMATS,
        default="auto",
        help="what the input is (default: detected from its content): "
        + "; ".join(f"{k}: {v}" for k, v in FORMAT_NAMES.items()),
    )
    p.add_argument("-o", "--output", help="results file (" + ", ".join(OUTPUT_FORMATS) + ")")
    p.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="rows scored at once (default: 4 with the embedded generator, 16 with an API; "
        "1 for llama-cpp-python's one-request-at-a-time server)",
    )
    p.add_argument("--threshold", type=float, default=0.5, help="a 'low score' threshold")
    p.add_argument(
        "--fail-under",
        type=float,
        default=None,
        help="exit with code 1 when the mean score is below this",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--price",
        action="append",
        metavar="MODEL=IN/OUT",
        help="dollars per 1M tokens for a model (input/output; repeatable), e.g. "
        "gpt-4o-mini=0.15/0.60; the defaults are " + f"{PRICES_SOURCE} of {PRICES_AS_OF}",
    )
    p.add_argument(
        "--sample",
        type=int,
        default=0,
        metavar="K",
        help="before estimating, score K rows drawn from the file to measure these models' "
        "speed and tokens (they are cached for the run)",
    )
    p.add_argument(
        "--estimate", action="store_true", help="check the file and print the estimate only"
    )
    p.add_argument(
        "--save-run",
        default=None,
        metavar="NAME",
        help="also save the run in the run store, to open it in the dashboard",
    )
    p.add_argument(
        "--store", default=None, help="run store for --save-run (default: $RELEVANCY_STORE)"
    )
    p.add_argument(
        "--chunk-rows", type=int, default=CHUNK_ROWS, help="rows read and written at a time"
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        metavar="K",
        help="score every row K times under generator seeds that share no sample (seed, "
        "seed+N, ...): adds score_sd (population sd), score_min, score_max, ragas_sd, "
        "noncommittal_flips and near_duplicates columns and a stability summary",
    )
    p.add_argument(
        "--label-column",
        default=None,
        metavar="COL",
        help="column of human labels: binary (1/0, yes/no, true/false, relevant/irrelevant, "
        "good/bad) or graded (numbers); the summary then gives the scores' AUROC or Spearman "
        "and the best threshold (default: a column named label, human_score, rating or "
        "relevant; '' for none)",
    )
    g = p.add_argument_group("engine")
    g.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: score here; ray: on a Ray cluster, INPUT a file or a folder of files "
        '(pip install "relevancy[ray]")',
    )
    g.add_argument(
        "--address", default=None, help="Ray cluster (default: $RAY_ADDRESS, else a local one)"
    )
    g.add_argument(
        "--workers", type=int, default=None, help="Ray workers (default: from the cluster's CPUs)"
    )
    _add_backend_options(p)
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("score-one", help="score one question/answer pair and explain it")
    p.add_argument("question")
    p.add_argument("answer")
    _add_backend_options(p)
    p.set_defaults(func=cmd_score_one)

    p = sub.add_parser(
        "check-judge",
        help="measure whether the configured LLM + embedder prefer complete answers, on a "
        "small labelled set shipped with the package",
    )
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
    _add_backend_options(p)
    p.set_defaults(func=cmd_check_judge)

    p = sub.add_parser(
        "compare",
        help="pair two scored result files (or run:ID) and judge NEW against BASE",
    )
    p.add_argument("base", help="the baseline: a results file of `relevancy score`, or run:ID")
    p.add_argument("new", help="the candidate, the same way")
    p.add_argument(
        "--fail-on-regression",
        type=float,
        default=None,
        metavar="MARGIN",
        help="exit with code 1 when the 95%% CI of the mean difference lies below -MARGIN",
    )
    p.add_argument(
        "--tie-margin", type=float, default=0.02, help="differences within count as ties"
    )
    p.add_argument(
        "--markdown", default=None, metavar="FILE", help="append a markdown summary (- for stdout)"
    )
    p.add_argument("--store", default=None, help="run store for run:ID (default: $RELEVANCY_STORE)")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("cache", help="show or clear the persistent cache")
    p.add_argument("action", choices=("info", "clear"), nargs="?", default="info")
    p.add_argument("--cache-dir", default=None)
    p.set_defaults(func=cmd_cache)

    p = sub.add_parser(
        "doctor",
        help="check this installation: native parts, CPU, models, folders, extras, and one row "
        "scored in a child process; exit code 1 with the failing line when something is off",
    )
    p.add_argument("--no-smoke", action="store_true", help="skip the smoke score")
    p.add_argument(
        "--timeout", type=float, default=SMOKE_TIMEOUT_S, help="seconds the smoke score may take"
    )
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser(
        "dashboard",
        help="serve the dashboard (streamlit run app.py); options such as --server.headless "
        "true are passed to Streamlit",
    )
    p.add_argument("--port", type=int, default=None, help="port (default: Streamlit's, 8501)")
    p.set_defaults(func=cmd_dashboard, streamlit_options=[], passthrough=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "passthrough", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if unknown:  # `relevancy dashboard`: Streamlit's own options
        args.streamlit_options = unknown
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        return int(args.func(args))
    except RelevancyError as exc:
        print(f"error: {redact(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "interrupted: finished rows are saved (in the cache and OUTPUT.partial.jsonl); "
            "run the same command again to resume",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
