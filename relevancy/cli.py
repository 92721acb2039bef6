"""Command line: ``relevancy score``, ``relevancy score-one``, ``relevancy cache``."""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from relevancy._errors import RelevancyError
from relevancy._modes import describe_mode
from relevancy._sync import run_sync

__all__ = ["main", "build_metric"]


def _add_backend_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("backends")
    g.add_argument(
        "--llm",
        default="local",
        metavar="SPEC",
        help="question generator: local (default), openai:MODEL, azure:DEPLOYMENT, ollama:MODEL",
    )
    g.add_argument(
        "--embeddings",
        default=None,
        metavar="SPEC",
        help="embedder: local (default), local:minilm-fp32, openai:MODEL, ...",
    )
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
        choices=("auto", "llm", "exemplars", "off"),
        help="how evasive answers are detected (auto: the LLM's flags for API models, "
        "similarity to evasive exemplars for the embedded model)",
    )
    g.add_argument(
        "--mode",
        default="auto",
        choices=("auto", "ragas", "focus"),
        help="what the score is: ragas (the Ragas Answer Relevancy exactly), focus "
        "(sentence-level, measured to agree better with people on long answers with the "
        "embedded models); auto: focus for the embedded models, ragas for API models",
    )
    g.add_argument("--seed", type=int, default=0, help="sampling seed")
    g.add_argument("--timeout", type=float, default=60.0, help="seconds per API request")
    g.add_argument("--no-cache", action="store_true", help="bypass the persistent cache")
    g.add_argument("--cache-dir", default=None, help="cache folder (default: user cache dir)")


def build_metric(args: argparse.Namespace, concurrency: int = 4) -> Any:
    from relevancy import AnswerRelevancy, Cache, make_embedder, make_generator

    llm_kind = args.llm.partition(":")[0].lower()
    emb_spec = args.embeddings or "local"
    options: dict[str, Any] = {"seed": args.seed}
    if llm_kind != "local":
        options["timeout"] = args.timeout
    llm = make_generator(args.llm, base_url=args.base_url, api_key=args.api_key, **options)
    emb_options: dict[str, Any] = {}
    if emb_spec.partition(":")[0].lower() != "local":
        emb_options["timeout"] = args.timeout
    embeddings = make_embedder(
        emb_spec, base_url=args.base_url, api_key=args.api_key, **emb_options
    )
    cache: Any = False if args.no_cache else (Cache(args.cache_dir) if args.cache_dir else True)
    return AnswerRelevancy(
        llm=llm,
        embeddings=embeddings,
        strictness=args.strictness,
        noncommittal=args.noncommittal,
        mode=args.mode,
        cache=cache,
        concurrency=concurrency,
    )


async def _preflight(metric: Any) -> None:
    """Fail fast, with one line, when a remote backend is unreachable or the key is refused."""
    from relevancy.backends._openai import preflight

    try:
        for backend in (metric.llm, metric.embeddings):
            await preflight(backend)
    finally:
        await metric.aclose()


def _fmt(x: float, digits: int = 3) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def cmd_score(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from relevancy import inspect_rows, read_table, results_to_frame, summarize, write_results

    frame = read_table(args.input)
    if frame.empty:
        raise RelevancyError(f"{args.input!r} has a header but no rows: add question/answer rows")
    problems = inspect_rows(frame)
    for problem in problems[:10]:
        print(f"note: row {problem.row}: {problem.problem}", file=sys.stderr)
    if len(problems) > 10:
        print(f"note: ... and {len(problems) - 10} more rows with problems", file=sys.stderr)
    out = Path(args.output) if args.output else Path(Path(args.input).stem + ".relevancy.csv")
    if out.suffix.lower() not in (".csv", ".json", ".jsonl", ".parquet"):
        raise RelevancyError(
            f"cannot write {out.name!r}: use an output name ending in .csv, .json, .jsonl or "
            ".parquet"
        )
    metric = build_metric(args, concurrency=args.concurrency)
    run_sync(_preflight(metric))
    started = time.perf_counter()
    bar = tqdm(
        total=len(frame),
        unit="row",
        desc="scoring",
        file=sys.stderr,
        disable=args.quiet,
        dynamic_ncols=True,
    )

    def progress(done: int, total: int) -> None:
        bar.update(1)

    # Each finished row is appended to a checkpoint file at once, so a run that dies keeps what
    # it scored; generations are in the cache too, so running the same command again resumes.
    partial = out.with_name(out.name + ".partial.jsonl")
    with partial.open("w", encoding="utf-8") as checkpoint:

        def on_result(index: int, result: Any) -> None:
            record = {"row": index + 1, **result.to_dict(embeddings=False)}
            checkpoint.write(json.dumps(record, ensure_ascii=False) + "\n")
            checkpoint.flush()

        try:
            results = metric.score_many(
                frame, concurrency=args.concurrency, progress=progress, on_result=on_result
            )
        finally:
            bar.close()
    elapsed = time.perf_counter() - started
    table = results_to_frame(results, frame)
    write_results(table, out)
    partial.unlink(missing_ok=True)
    stats = summarize([r.value for r in results], threshold=args.threshold)
    cached = sum(r.cached for r in results)
    print(
        f"rows            {stats['rows']}  (scored {stats['scored']}, NaN {stats['nan']}, "
        f"from cache {cached})"
    )
    print(f"mode            {metric.mode} ({describe_mode(metric.mode)})")
    print(
        f"mean            {_fmt(stats['mean'])}  95% CI [{_fmt(stats['ci_low'])}, "
        f"{_fmt(stats['ci_high'])}]"
    )
    print(f"median          {_fmt(stats['median'])}")
    print(f"below {args.threshold:<9} {_fmt(100 * stats['below_threshold'], 1)}%")
    print(f"time            {elapsed:.1f} s ({elapsed / max(len(results), 1):.2f} s/row)")
    errors = collections.Counter(r.error for r in results if r.error)
    for error, count in errors.most_common(5):
        print(f"failed ({count:>3})    {error[:160]}")
    print(f"wrote           {out}")
    if args.fail_under is not None and not (stats["mean"] >= args.fail_under):
        print(
            f"FAIL: mean {_fmt(stats['mean'])} is below --fail-under {args.fail_under}",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_score_one(args: argparse.Namespace) -> int:
    from relevancy._metric import _check_text

    _check_text("question", args.question)
    _check_text("answer", args.answer)
    metric = build_metric(args, concurrency=1)
    run_sync(_preflight(metric))
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
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    from relevancy import Cache

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


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relevancy", description="Compute and explain the Answer Relevancy of LLM answers."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("score", help="score a CSV/JSON/JSONL/Parquet file of question/answer pairs")
    p.add_argument("input", help="table with user_input/question and response/answer columns")
    p.add_argument("-o", "--output", help="results file (.csv, .json, .jsonl, .parquet)")
    p.add_argument("--concurrency", type=int, default=4, help="rows scored at once")
    p.add_argument("--threshold", type=float, default=0.5, help="a 'low score' threshold")
    p.add_argument(
        "--fail-under",
        type=float,
        default=None,
        help="exit with code 1 when the mean score is below this",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _add_backend_options(p)
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("score-one", help="score one question/answer pair and explain it")
    p.add_argument("question")
    p.add_argument("answer")
    _add_backend_options(p)
    p.set_defaults(func=cmd_score_one)

    p = sub.add_parser("cache", help="show or clear the persistent cache")
    p.add_argument("action", choices=("info", "clear"), nargs="?", default="info")
    p.add_argument("--cache-dir", default=None)
    p.set_defaults(func=cmd_cache)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        return int(args.func(args))
    except RelevancyError as exc:
        from relevancy._redact import redact

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
