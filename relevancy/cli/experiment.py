"""``relevancy experiment``: prompt templates x models over a question set, answered and scored
into one run (see docs/experiments.md)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from relevancy.analysis.cost import PRICES_AS_OF, PRICES_SOURCE, money
from relevancy.cli import add_command
from relevancy.cli._values import MAX_CONCURRENCY, SEED_MAX, number, whole
from relevancy.cli.options import add_backend_options, fmt, metric_from_args, prices_from_args
from relevancy.core.interrupt import ctrl_c_interrupts
from relevancy.errors import InputError
from relevancy.experiments import (
    DEMO,
    AnswerSettings,
    Plan,
    answers_path,
    check_plan,
    estimate,
    load_config,
    load_questions,
    make_answerer,
    parse_prompt,
    run_experiment,
)
from relevancy.experiments.batch import batch_answers
from relevancy.experiments.config import JUDGE_KEYS
from relevancy.experiments.extend import (
    check_endpoint,
    check_judge,
    extend_experiment,
    plan_extension,
    rerun_of,
)
from relevancy.experiments.questions import notes as question_notes
from relevancy.experiments.run import JUDGE_OPTIONS, answer_endpoint
from relevancy.experiments.summary import failed, variant_summary
from relevancy.io import OUTPUT_FORMATS
from relevancy.paths import as_store_file, default_store_path
from relevancy.runs import RunStore
from relevancy.scoring.batch_api import run_batch
from relevancy.scoring.config import preflight

__all__ = ["register", "cmd_experiment"]

#: the experiment's own settings: the option's name in a config file, and its default
DEFAULTS: dict[str, Any] = {
    "questions": DEMO,
    "base_url": None,
    "temperature": 0.0,
    "max_tokens": 300,
    "seed": 0,
    "repeats": 1,
    "save_run": None,
    "output": None,
}


def register(sub: Any) -> None:
    """Add this command's parser to ``sub`` (the subcommands of ``relevancy``)."""
    p = add_command(sub, "experiment")
    p.add_argument(
        "config",
        nargs="?",
        help="a TOML file naming the prompts, models, settings, questions and judge (options "
        "given here win over it)",
    )
    g = p.add_argument_group("experiment")
    g.add_argument(
        "--prompt",
        action="append",
        default=[],
        metavar="NAME=TEXT",
        help="a prompt template (repeatable): NAME=TEXT or NAME=@FILE; {user_input} and any "
        "{column} of the questions are filled in; a line '---' splits system from user",
    )
    g.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME",
        help="a chat model at --base-url (repeatable); 'local' for the embedded SmolLM2 "
        "(offline, weak answers)",
    )
    g.add_argument(
        "--questions",
        default=None,
        metavar="SOURCE",
        help="a CSV/JSONL/Parquet file with user_input (or question) and any other columns, "
        "run:NAME (a saved run's questions) or demo (the bundled 24; the default)",
    )
    g.add_argument(
        "--temperature", type=number(0, 2), default=None, help="the answers' temperature (0)"
    )
    g.add_argument(
        "--max-tokens", type=whole(1, 100_000), default=None, help="tokens per answer at most (300)"
    )
    g.add_argument(
        "--answer-seed",
        type=whole(0, SEED_MAX),
        default=None,
        help="the answers' seed; repeat k uses seed + k (0)",
    )
    g.add_argument(
        "--repeats",
        type=whole(1, 100),
        default=None,
        metavar="N",
        help="answers per question, template and model, each under its own seed (1)",
    )
    g.add_argument(
        "--concurrency",
        type=whole(1, MAX_CONCURRENCY),
        default=None,
        help="the most requests at once per model (default: adapts to the rate limit)",
    )
    p.add_argument("-o", "--output", help="results file (" + ", ".join(OUTPUT_FORMATS) + ")")
    p.add_argument("--save-run", default=None, metavar="NAME", help="save the run under NAME")
    p.add_argument(
        "--extend-run",
        default=None,
        metavar="NAME",
        help="add the --prompt templates and --model models to a saved experiment run (a name "
        "or an id): only the variants it lacks are answered and scored, into that run",
    )
    p.add_argument("--store", default=None, help="run store (default: $RELEVANCY_STORE)")
    p.add_argument("--threshold", type=number(-1, 1), default=0.5, help="a 'low score' threshold")
    p.add_argument("--estimate", action="store_true", help="check the input, print the estimate")
    p.add_argument(
        "--batch-api",
        action="store_true",
        help="answers and the judge's generations from OpenAI's Batch API (half price, within "
        "24 h; any server with /v1/files and /v1/batches): each batch id is kept beside the "
        "output, so the same command run again resumes it; the embedded model answers live",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.add_argument(
        "--price",
        action="append",
        metavar="MODEL=IN/OUT",
        help=f"dollars per 1M tokens (repeatable); defaults: {PRICES_SOURCE} of {PRICES_AS_OF}",
    )
    add_backend_options(p)
    judge_defaults = {k: p.get_default(k) for k in (*JUDGE_KEYS, *JUDGE_OPTIONS)}
    # None: not given (an extension tells an option given from the default: it scores with
    # the run's own judge, and refuses another)
    p.set_defaults(
        func=cmd_experiment, judge_defaults=judge_defaults, **dict.fromkeys(JUDGE_OPTIONS)
    )


def _settings(args: argparse.Namespace, config: Any) -> dict[str, Any]:
    """The experiment's settings: the command line's, else the config file's, else defaults."""
    given = {
        "questions": args.questions,
        "base_url": args.base_url,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "seed": args.answer_seed,
        "repeats": args.repeats,
        "save_run": args.save_run,
        "output": args.output,
    }
    values = dict(config.values) if config is not None else {}
    out = {}
    for key, default in DEFAULTS.items():
        out[key] = given[key] if given[key] is not None else values.get(key, default)
    return out


def _judge_from_config(args: argparse.Namespace, config: Any) -> None:
    """The config's ``[judge]`` options, where the command line gave none."""
    for key, value in (config.judge if config is not None else {}).items():
        now = getattr(args, key)
        if now is None or (key not in JUDGE_OPTIONS and now == args.judge_defaults[key]):
            setattr(args, key, value)


def _judge_defaults(args: argparse.Namespace, judge: dict[str, Any] | None = None) -> None:
    """Each judge option not given: ``judge``'s (a run's own), else the default."""
    for key in JUDGE_OPTIONS:
        if getattr(args, key) is None:
            value = (judge or {}).get(key)
            setattr(args, key, args.judge_defaults[key] if value is None else value)


def _judge_given(args: argparse.Namespace) -> dict[str, Any]:
    """The judge's options as given, for the run to keep (its endpoint too)."""
    return {**{k: getattr(args, k) for k in JUDGE_OPTIONS}, "base_url": args.base_url}


def _store(args: argparse.Namespace, save_run: str | None, questions: str) -> RunStore | None:
    if args.store:
        return RunStore(as_store_file(Path(args.store).expanduser()))
    if save_run or questions.startswith("run:") or args.extend_run:
        return RunStore(default_store_path())
    return None


def cmd_experiment(args: argparse.Namespace) -> int:
    with ctrl_c_interrupts():
        return _experiment(args)


def _experiment(args: argparse.Namespace) -> int:
    if args.extend_run:
        return _extend(args)
    config = load_config(args.config) if args.config else None
    values = _settings(args, config)
    args.base_url = values["base_url"]
    _judge_from_config(args, config)
    _judge_defaults(args)
    base = Path(args.config).parent if args.config else Path.cwd()
    templates = [
        *(config.templates if config else []),
        *(parse_prompt(s, base=base) for s in args.prompt),
    ]
    models = args.model or (config.models if config else [])
    out = Path(values["output"] or (Path(args.config).stem if args.config else "experiment"))
    if not values["output"]:
        out = out.with_name(out.name + ".relevancy.csv")
    if out.suffix.lower() not in OUTPUT_FORMATS:
        raise InputError(
            f"cannot write {out.name!r}: use an output name ending in " + ", ".join(OUTPUT_FORMATS)
        )
    store = _store(args, values["save_run"], values["questions"])
    questions, source = load_questions(values["questions"], store=store)
    for note in question_notes(questions):
        print(f"note: {note}", file=sys.stderr)
    settings = AnswerSettings(
        temperature=float(values["temperature"]),
        max_tokens=int(values["max_tokens"]),
        seed=int(values["seed"]),
        repeats=int(values["repeats"]),
    )
    plan = Plan(templates, models, questions, settings)
    for warning in check_plan(plan):
        print(f"warning: {warning}", file=sys.stderr)
    metric = metric_from_args(args, check=False)
    answerers = {
        m: make_answerer(
            m,
            settings,
            base_url=args.base_url,
            api_key=args.api_key,
            timeout=args.timeout,
            concurrency=args.concurrency,
        )
        for m in models
    }
    if store is not None and values["save_run"]:
        judge = {k: getattr(args, k) for k in JUDGE_OPTIONS}
        again = rerun_of(store, values["save_run"], plan, judge, answer_endpoint(answerers))
        if again is not None:  # the same experiment, some answers failed: those, in place
            url = answer_endpoint(answerers) or args.base_url
            return _extend_go(args, store, again, metric, url, out, rerun=True)
    prices = prices_from_args(args)
    plan_cost = estimate(plan, answerers, metric.cache, prices)
    cost = (
        "unknown (add --price MODEL=IN/OUT)"
        if plan_cost.dollars is None
        else money(plan_cost.dollars)
    )
    print(
        f"experiment      {_count(len(templates), 'template')} x {_count(len(models), 'model')}"
        f" x {_count(len(questions), 'question')} ({source})"
        + (f" x {settings.repeats} repeats" if settings.repeats > 1 else "")
        + f" = {_count(plan_cost.answers, 'answer')}",
        file=sys.stderr,
    )
    _print_estimate(plan_cost, cost, plan_cost.answers)
    if args.estimate:
        return 0
    preflight(metric)
    asyncio.run(_preflight(answerers.values()))
    if args.batch_api:
        _answer_batches(args, plan, answerers, metric, out)
    return _run(args, plan, metric, answerers, out, store, values["save_run"], source, prices)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _answer_batches(
    args: argparse.Namespace, plan: Plan, answerers: dict[str, Any], metric: Any, out: Path
) -> None:
    """``--batch-api``: each API model's uncached answers from one batch, into the cache."""
    from tqdm import tqdm

    with tqdm(unit="request", desc="answer batch", file=sys.stderr, disable=args.quiet) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        batches = batch_answers(plan, answerers, metric.cache, out, progress=progress)
    for batch in batches:
        for note in batch.notes:
            print(f"note: {note}", file=sys.stderr)
        print(f"answer batch    {batch.describe()}", file=sys.stderr)


def _judge_batch(args: argparse.Namespace, metric: Any, out: Path, prices: Any) -> Any:
    """``--batch-api``: the judge's generations for the answers' file from one batch."""
    if not args.batch_api:
        return None

    def go(path: Path) -> None:
        batch = run_batch(metric, path, out)
        for note in batch.notes:
            print(f"note: {note}", file=sys.stderr)
        print(f"judge batch     {batch.describe(prices)}", file=sys.stderr)

    return go


def _print_estimate(found: Any, cost: str, rows: int) -> None:
    print(
        f"estimate        {_count(found.requests, 'answer')} to request ({found.cached:,} in the "
        f"cache), about {found.prompt_tokens:,} prompt tokens and at most "
        f"{found.completion_tokens:,} answer tokens, {cost}; then {rows:,} rows to score",
        file=sys.stderr,
    )


async def _preflight(answerers: Any) -> None:
    for answerer in answerers:
        await answerer.apreflight()
        await answerer.aclose()


def _run(
    args: argparse.Namespace,
    plan: Plan,
    metric: Any,
    answerers: dict[str, Any],
    out: Path,
    store: RunStore | None,
    save_run: str | None,
    source: str,
    prices: Any,
) -> int:
    from tqdm import tqdm

    bars = {
        what: tqdm(
            total=plan.size,
            unit=unit,
            desc=what,
            file=sys.stderr,
            disable=args.quiet,
            dynamic_ncols=True,
        )
        for what, unit in (("answering", "answer"), ("scoring", "row"))
    }
    with bars["answering"], bars["scoring"]:
        done = run_experiment(
            plan,
            metric,
            answerers,
            out,
            store=store if save_run else None,
            run_name=save_run or "",
            source=source,
            judge=_judge_given(args),
            prices=prices,
            on_answer=bars["answering"].update,
            on_score=bars["scoring"].update,
            before_scoring=_judge_batch(args, metric, out, prices),
        )
    return _report(args, _scored(out), out, done.run_id, save_run)


def _report(
    args: argparse.Namespace, scored: Any, out: Path, run_id: int | None, name: str | None
) -> int:
    """The summary per variant, where things went, and exit 1 when an answer failed."""
    table = variant_summary(scored, threshold=args.threshold)
    width = max(len(v) for v in table["variant"])
    print(f"{'variant':<{width}}  answers  mean   95% CI          below  failed  reasons")
    for row in table.itertuples():
        if not row.scored:
            print(
                f"{row.variant:<{width}}  {row.answers:>7,}  no score{'':25}{row.failed:>6,}  "
                f"{row.reasons}"
            )
            continue
        print(
            f"{row.variant:<{width}}  {row.answers:>7,}  {fmt(row.mean)}  "
            f"[{fmt(row.ci_low)}, {fmt(row.ci_high)}]  {fmt(100 * row.below, 0):>4}%  "
            f"{row.failed:>6,}  {row.reasons}"
        )
    print(f"answers         {answers_path(out)}")
    print(f"scores          {out}")
    if run_id is not None:
        first, second = list(table["variant"])[:2] + [""] * (2 - min(2, len(table)))
        print(
            f"saved run       #{run_id} {name!r}: open it in the dashboard (Compare "
            f"pairs two variants by question, e.g. {first!r} and {second!r})"
        )
    lost = scored[failed(scored)]
    if not lost.empty:
        first = lost.iloc[0]
        print(
            f"FAIL: {len(lost):,} answers failed, kept as rows with their error "
            f"({first['variant']}: {first['answer_error']}); run again to retry them",
            file=sys.stderr,
        )
        return 1
    return 0


def _extend(args: argparse.Namespace) -> int:
    """``--extend-run``: the run's questions and settings, its variants and the new ones; only
    the new ones answered and scored, into the run."""
    if args.questions or args.save_run:
        given = "--questions" if args.questions else "--save-run"
        raise InputError(
            f"--extend-run takes the run's questions and adds to the run itself: drop {given}"
        )
    config = load_config(args.config) if args.config else None
    _judge_from_config(args, config)
    values = _settings(args, config)
    base = Path(args.config).parent if args.config else Path.cwd()
    templates = [
        *(config.templates if config else []),
        *(parse_prompt(s, base=base) for s in args.prompt),
    ]
    store = _store(args, None, "")
    assert store is not None
    given = {
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "seed": args.answer_seed,
        "repeats": args.repeats,
    }
    models = args.model or (config.models if config else [])
    extension = plan_extension(store, args.extend_run, templates, models, settings=given)
    # scored with the run's own judge and answered at its own endpoint (another one given: one
    # line, nothing sent)
    judge = check_judge(extension, {k: getattr(args, k) for k in JUDGE_OPTIONS})
    answer_url = check_endpoint(extension, values["base_url"])
    _judge_defaults(args, judge)
    args.base_url = judge.get("base_url") or answer_url
    plan = extension.plan
    for warning in check_plan(plan):
        print(f"warning: {warning}", file=sys.stderr)
    out = Path(values["output"] or f"{extension.name}.extended.relevancy.csv".replace("/", "_"))
    if out.suffix.lower() not in OUTPUT_FORMATS:
        raise InputError(
            f"cannot write {out.name!r}: use an output name ending in " + ", ".join(OUTPUT_FORMATS)
        )
    metric = metric_from_args(args, check=False)
    return _extend_go(args, store, extension, metric, answer_url, out)


def _extend_go(
    args: argparse.Namespace,
    store: RunStore,
    extension: Any,
    metric: Any,
    answer_url: str | None,
    out: Path,
    *,
    rerun: bool = False,
) -> int:
    """Estimate, answer and score an extension (``rerun``: a saved run of this same experiment,
    its failed answers asked again, and its whole table written to ``out``)."""
    plan = extension.plan
    needed = list(dict.fromkeys(m for _, m, _, _ in plan.cells()))
    answerers = {
        m: make_answerer(
            m,
            plan.settings,
            base_url=answer_url,
            api_key=args.api_key,
            timeout=args.timeout,
            concurrency=args.concurrency,
        )
        for m in needed
    }
    prices = prices_from_args(args)
    found = estimate(plan, answerers, metric.cache, prices)
    cost = "unknown (add --price MODEL=IN/OUT)" if found.dollars is None else money(found.dollars)
    new = ", ".join(extension.new_variants) or "none"
    print(
        f"rerun           run #{extension.run_id} {extension.name!r} is this experiment: "
        f"{extension.retried:,} failed answers asked again, their rows filled in place"
        if rerun
        else f"extend          run #{extension.run_id} {extension.name!r}: "
        f"{len(plan.questions):,} questions; new variants: {new}"
        + (f"; {len(extension.pending):,} rows left unscored before" if extension.pending else "")
        + (
            f"; {extension.retried:,} failed answers asked again (their rows kept in place)"
            if extension.retried and not rerun
            else ""
        ),
        file=sys.stderr,
    )
    _print_estimate(found, cost, found.answers + len(extension.pending))
    if args.estimate:
        return 0
    preflight(metric)
    asyncio.run(_preflight(answerers.values()))
    if args.batch_api:
        _answer_batches(args, plan, answerers, metric, out)
    from tqdm import tqdm

    bars = [
        tqdm(total=total, unit=unit, desc=what, file=sys.stderr, disable=args.quiet)
        for what, unit, total in (
            ("answering", "answer", plan.size),
            ("scoring", "row", plan.size + len(extension.pending)),
        )
    ]
    with bars[0], bars[1]:
        extend_experiment(
            extension,
            metric,
            answerers,
            out,
            store,
            prices=prices,
            on_answer=bars[0].update,
            on_score=bars[1].update,
        )
    if rerun:  # the experiment's files hold the whole run, as a first run's do
        store.export(extension.run_id, out)
        store.inputs(extension.run_id).to_json(
            answers_path(out), orient="records", lines=True, force_ascii=False
        )
    whole = store.export_frame(extension.run_id)
    return _report(args, whole, out, extension.run_id, extension.name)


def _scored(out: Path) -> Any:
    import pandas as pd

    readers = {".csv": pd.read_csv, ".parquet": pd.read_parquet, ".json": pd.read_json}
    if out.suffix.lower() == ".jsonl":
        return pd.read_json(out, lines=True)
    return readers[out.suffix.lower()](out)
