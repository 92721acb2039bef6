"""``relevancy score``: a file of question/answer pairs scored, here or on Ray, and its summary."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from relevancy.analysis.cost import (
    PRICES_AS_OF,
    PRICES_SOURCE,
    money,
)
from relevancy.cli import add_command
from relevancy.cli._values import MAX_CONCURRENCY, number, whole
from relevancy.cli.follow import add_follow_options, cmd_follow, wants_follow
from relevancy.cli.options import (
    add_backend_options,
    cost_hint,
    metric_from_args,
    prices_from_args,
    repeats_from_args,
    run_settings,
)
from relevancy.cli.score_summary import report
from relevancy.cli.writeback import (
    add_tool_options,
    check_write_back,
    open_source,
    temporary_store,
    wants_write_back,
    write_back,
)
from relevancy.core.interrupt import ctrl_c_interrupts
from relevancy.errors import InputError
from relevancy.io import OUTPUT_FORMATS
from relevancy.io.exporters import origin
from relevancy.io.importers import FORMAT_NAMES, SOURCE_FORMATS
from relevancy.paths import default_store_path
from relevancy.runs import RunStore
from relevancy.scoring.batch_api import batch_cost, run_batch
from relevancy.scoring.config import preflight
from relevancy.scoring.distributed import Interrupted, score_path
from relevancy.scoring.estimate import estimate, measure_sample
from relevancy.scoring.files import CHUNK_ROWS, score_file, survey
from relevancy.scoring.repeats import MAX_REPEATS


def register(sub: Any) -> None:
    """Add this command's parser to ``sub`` (the subcommands of ``relevancy``)."""
    p = add_command(sub, "score")
    p.add_argument(
        "input",
        nargs="?",
        help="table with user_input/question and response/answer columns, a tool's export, a "
        "Hugging Face save_to_disk folder or a folder of files of one type (or --from)",
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
        type=whole(1, MAX_CONCURRENCY),
        default=None,
        help="rows scored at once (default: 4 with the embedded generator); with an API, the "
        "most requests at once per model (default 64): the number sent adapts to the rate "
        "limit; 1 for llama-cpp-python's one-request-at-a-time server",
    )
    p.add_argument(
        "--fixed-concurrency",
        action="store_true",
        help="send --concurrency requests at once, not adapting to the rate limit "
        "(429s are still waited out)",
    )
    p.add_argument(
        "--rpm",
        type=number(0, above=True),
        default=None,
        help="the generator model's requests-per-minute limit, for the estimate",
    )
    p.add_argument(
        "--tpm",
        type=number(0, above=True),
        default=None,
        help="the generator model's tokens-per-minute limit, for the estimate",
    )
    p.add_argument("--threshold", type=number(-1, 1), default=0.5, help="a 'low score' threshold")
    p.add_argument(
        "--fail-under",
        type=number(-1, 1),
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
        type=whole(0),
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
        "--chunk-rows",
        type=whole(1, 10_000_000),
        default=CHUNK_ROWS,
        help="rows read and written at a time",
    )
    p.add_argument(
        "--repeats",
        type=whole(1, MAX_REPEATS),
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
    p.add_argument(
        "--batch-api",
        action="store_true",
        help="generate the questions with OpenAI's Batch API (half the price; done within 24 h; "
        "any server with /v1/files and /v1/batches): the batch id is kept in "
        "OUTPUT.batch.json, so the same command run again resumes it; embeddings are live",
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
        "--workers",
        type=whole(1, 100_000),
        default=None,
        help="Ray workers (default: from the cluster's CPUs)",
    )
    add_tool_options(p)
    add_follow_options(p)
    add_backend_options(p)
    p.set_defaults(func=cmd_score)


def cmd_score(args: argparse.Namespace) -> int:
    # Ctrl-C stops a run (rows kept, exit 130) even when started with SIGINT ignored (in the
    # background by a script): Ray's engine and the local one alike
    with ctrl_c_interrupts():
        if wants_follow(args):
            return cmd_follow(args)
        if args.engine == "ray":
            return _score_on_ray(args)
        with contextlib.ExitStack() as stack:
            return _score_here(args, stack)


def _score_here(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    from tqdm import tqdm

    source = open_source(args, stack)
    stem = Path(source.path).stem if args.from_url is None else source.where["project"]
    out = Path(args.output) if args.output else Path(stem + ".relevancy.csv")
    if out.suffix.lower() not in OUTPUT_FORMATS:
        raise InputError(
            f"cannot write {out.name!r}: use an output name ending in " + ", ".join(OUTPUT_FORMATS)
        )
    repeats = repeats_from_args(args)
    metric = metric_from_args(args, concurrency=args.concurrency, check=False)
    found = survey(
        source.path, metric, source_format=args.source_format, label_column=args.label_column
    )
    print(f"input           {found.source.describe()}", file=sys.stderr)
    for line in found.source.describe_bad_lines():  # lines of the file that could not be read
        print(f"note: {line}", file=sys.stderr)
    if found.label_column:
        print(
            f"labels          column {found.label_column!r}: {found.labelled:,} rows labelled",
            file=sys.stderr,
        )
    for note in found.notes:
        print(f"note: {note}", file=sys.stderr)
    for problem in found.problems:
        print(f"note: row {problem.row}: {problem.problem}", file=sys.stderr)
    if found.n_problems > len(found.problems):
        more = found.n_problems - len(found.problems)
        print(f"note: ... and {more:,} more rows with problems", file=sys.stderr)
    prices = prices_from_args(args)
    if args.sample < 0:
        raise InputError(f"--sample must be 0 or more rows, got {args.sample}")
    if args.sample:
        preflight(metric)
        measured = measure_sample(metric, found.stats, args.sample)
        print(
            f"sample          scored {len(measured)} rows of the file to measure these models "
            "(they are in the cache for the run)",
            file=sys.stderr,
        )
        found = survey(
            source.path,
            metric,
            source_format=found.source.format,
            label_column=found.label_column,
        )
    stats = found.stats
    if repeats > 1:  # every repeat is scored (its cache is not looked up: an upper bound)
        stats = dataclasses.replace(
            stats,
            rows=stats.rows * repeats,
            question_chars=stats.question_chars * repeats,
            answer_chars=stats.answer_chars * repeats,
            generator_chars=stats.generator_chars * repeats,
        )
    known = default_store_path()  # the dashboard's runs on this machine know their speed too
    plan = estimate(
        metric, stats, store=RunStore(known) if known.exists() else None, rpm=args.rpm, tpm=args.tpm
    )
    print(f"estimate        {plan.describe()}", file=sys.stderr)
    if plan.describe_limit():
        print(f"  rate limit    {plan.describe_limit()}", file=sys.stderr)
    print(f"  tokens        {plan.describe_tokens()}", file=sys.stderr)
    models = (plan.llm, plan.embeddings)
    print(
        f"  cost          {cost_hint(plan.describe_cost(prices), models, prices)}", file=sys.stderr
    )
    if args.batch_api:
        dollars = batch_cost(plan, prices)
        if math.isfinite(dollars):
            print(
                f"  batch cost    about {money(dollars)} with --batch-api (generation at half "
                "price)",
                file=sys.stderr,
            )
    if args.estimate:
        return 0
    preflight(metric)
    check_write_back(args)
    store = RunStore(args.store) if args.store else RunStore() if args.save_run else None
    store = store or temporary_store(args, stack)
    settings = {
        **run_settings(args, metric),
        "origin": origin(found.source.format, **source.where),
    }
    if args.batch_api:
        settings["batch_api"] = _batch(args, metric, source.path, out, found.source.format, prices)
    total = found.rows * repeats
    bar = tqdm(
        total=total,
        unit="row",
        desc="scoring",
        file=sys.stderr,
        disable=args.quiet,
        dynamic_ncols=True,
    )
    with bar, _status_beside(bar, metric):
        run = score_file(
            metric,
            source.path,
            out,
            chunk_rows=args.chunk_rows,
            progress=_ticker(bar, metric),
            store=store,
            run_name=args.save_run or "",
            settings=settings,
            source_name=source.name,
            source_format=found.source.format,  # detected once, by the survey
            repeats=repeats,
            label_column=found.label_column,
        )
    code = report(args, metric, run, store if args.save_run or args.store else None)
    return write_back(args, run, settings, store, source) or code


def _batch(
    args: argparse.Namespace, metric: Any, path: Any, out: Path, source_format: str, prices: Any
) -> dict[str, Any]:
    """``--batch-api``: the generations from one batch (resumed when OUTPUT.batch.json names
    one), into the cache; what the run keeps of it."""
    from tqdm import tqdm

    with tqdm(
        unit="request", desc="batch", file=sys.stderr, disable=args.quiet, dynamic_ncols=True
    ) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        batch = run_batch(
            metric,
            path,
            out,
            source_format=source_format,
            chunk_rows=args.chunk_rows,
            progress=progress,
        )
    for note in batch.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"batch           {batch.describe(prices)}", file=sys.stderr)
    return batch.to_settings()


def _ticker(bar: Any, metric: Any) -> Any:
    """``bar.update``, and the requests at once (and any wait for the rate limit) beside it."""

    def tick(n: int = 1) -> None:
        status = metric.rate_status()
        if status:
            bar.set_postfix_str(status, refresh=False)
        bar.update(n)

    return tick


@contextlib.contextmanager
def _status_beside(bar: Any, metric: Any, every: float = 0.5) -> Iterator[None]:
    """The requests at once, and any wait for the rate limit, kept fresh beside the bar every
    ``every`` seconds while rows are scored: during a wait no row finishes to refresh it."""
    stop = threading.Event()

    def refresh() -> None:
        shown = None
        while not stop.wait(every):
            status = metric.rate_status()
            if status and status != shown:  # shown at once (a row's tick only sets it)
                bar.set_postfix_str(status)
                shown = status

    thread = threading.Thread(target=refresh, name="progress-status", daemon=True)
    if not bar.disable and metric.rate_status():
        thread.start()
    try:
        yield
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()


def _score_on_ray(args: argparse.Namespace) -> int:
    """``relevancy score --engine ray``: the rows scored by Ray workers, the same summary."""
    from tqdm import tqdm

    local_only = (
        args.estimate,
        args.save_run,
        args.store,
        repeats_from_args(args) > 1,
        args.label_column,
        args.from_url,
        wants_write_back(args),
        args.batch_api,
    )
    if any(local_only):
        raise InputError(
            "--estimate, --save-run, --store, --repeats, --label-column, --from, --batch-api "
            "and the write-back options work with --engine local only"
        )
    if not args.input:
        raise InputError("give a file or a folder of files to score")
    source = Path(args.input)
    # by default in the working folder, as with the local engine; a folder for a folder
    out = Path(
        args.output or source.stem + (".relevancy.parquet" if source.is_file() else ".relevancy")
    )
    metric = metric_from_args(args, concurrency=args.concurrency)  # checks the servers from here
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
        "min_questions": args.min_questions,
        "threshold": args.threshold,
        "timeout": args.timeout,
        "cache": False if args.no_cache else (args.cache_dir or True),
        "concurrency": args.concurrency,
    }
    if args.max_response_chars is not None:
        settings["max_response_chars"] = args.max_response_chars
    try:
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
                on_note=lambda note: print(f"note: {note}", file=sys.stderr),
            )
    except Interrupted as stop:
        print(
            f"interrupted: {stop.rows:,} scored rows kept in {stop.kept}; their generations "
            "are in the workers' caches, so the same command scores the rest",
            file=sys.stderr,
        )
        return 130
    return report(args, metric, run, None)
