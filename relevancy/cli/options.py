"""What the subcommands share: the backend options and the metric they describe, number
formatting, prices and the embedded default's caveat."""

from __future__ import annotations

import argparse
import math
from typing import Any

from relevancy.analysis.cost import (
    DEFAULT_PRICES,
    Price,
    describe_prices,
    parse_price,
)
from relevancy.backends import BACKEND_SPECS
from relevancy.backends.cache import Cache
from relevancy.cli._values import DAY_SECONDS, SEED_MAX, number, whole
from relevancy.core.modes import MODE_DESCRIPTIONS, MODES
from relevancy.core.noncommittal import DETECTOR_DESCRIPTIONS, DETECTORS
from relevancy.errors import InputError
from relevancy.scoring.config import EMBEDDED_NOTE, build_metric, preflight
from relevancy.scoring.judge import EMBEDDED_DEFAULT
from relevancy.scoring.metric import PROMPT_LANGUAGES, is_embedded
from relevancy.scoring.repeats import MAX_REPEATS


def add_backend_options(p: argparse.ArgumentParser) -> None:
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
    g.add_argument("--strictness", type=whole(1, 10), default=3, help="questions per answer, 1-10")
    g.add_argument(
        "--min-questions",
        type=whole(1, 10),
        default=None,
        metavar="K",
        help="the fewest usable generated questions a row may be called ok on (default: all "
        "--strictness of them); a row scored from fewer is flagged incomplete_generation",
    )
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
    g.add_argument("--seed", type=whole(0, SEED_MAX), default=0, help="sampling seed")
    g.add_argument(
        "--prompt-language",
        default="answer",
        choices=tuple(PROMPT_LANGUAGES),
        help="the language the generator writes its questions in: "
        + "; ".join(f"{k}: {v}" for k, v in PROMPT_LANGUAGES.items()),
    )
    g.add_argument(
        "--max-response-chars",
        type=whole(1, 10_000_000),
        default=None,
        metavar="N",
        help="characters of each answer sent to the question generator (longer ones are cut; "
        "default: 2,000 for the embedded model, 20,000 for API models)",
    )
    g.add_argument(
        "--timeout",
        type=number(0, DAY_SECONDS, above=True, unit="seconds"),
        default=60.0,
        help="seconds per API request",
    )
    g.add_argument("--no-cache", action="store_true", help="bypass the persistent cache")
    g.add_argument("--cache-dir", default=None, help="cache folder (default: user cache dir)")


def metric_from_args(
    args: argparse.Namespace, concurrency: int | None = None, *, check: bool = True
) -> Any:
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
        min_questions=getattr(args, "min_questions", None),
        **({"threshold": args.threshold} if getattr(args, "threshold", None) is not None else {}),
        timeout=args.timeout,
        cache=cache,
        concurrency=concurrency,
        adaptive=not getattr(args, "fixed_concurrency", False),
        **(
            {"max_response_chars": args.max_response_chars}
            if getattr(args, "max_response_chars", None) is not None
            else {}
        ),
    )
    if check:
        preflight(metric)
    return metric


def fmt(x: float | None, digits: int = 3) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def embedded_line(metric: Any) -> str | None:
    """The embedded default's caveat with its judge-check figure (None for API models)."""
    if not is_embedded(metric.llm, metric.embeddings):
        return None
    return (
        f"{EMBEDDED_NOTE} (judge check {EMBEDDED_DEFAULT['agreement']:.2f} on "
        f"{EMBEDDED_DEFAULT['pairs']} pairs; `relevancy check-judge` checks yours)"
    )


def prices_from_args(args: argparse.Namespace) -> dict[str, Price]:
    """The default price table with the user's ``--price`` entries on top."""
    table = dict(DEFAULT_PRICES)
    table.update(parse_price(text) for text in args.price or ())
    return table


def cost_hint(text: str, models: Any, prices: dict[str, Price]) -> str:
    if text.startswith("unknown"):
        return f"{text} (add --price MODEL=INPUT/OUTPUT, dollars per 1M tokens)"
    used = describe_prices(models, prices)
    if text.startswith("$0 (") or not text or not used:
        return text
    return f"{text} at {used}; change with --price"


def repeats_from_args(args: argparse.Namespace) -> int:
    repeats = getattr(args, "repeats", 1)
    if not 1 <= repeats <= MAX_REPEATS:
        raise InputError(f"--repeats must be from 1 to {MAX_REPEATS}, got {repeats}")
    return repeats


def run_settings(args: argparse.Namespace, metric: Any) -> dict[str, Any]:
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
        "min_questions": metric.min_questions,
        "threshold": metric.threshold,
        "llm_name": metric.llm.name,
        "embeddings_name": metric.embeddings.name,
        "mode_used": metric.mode,
        "from": "relevancy score",
    }
