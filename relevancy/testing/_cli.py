"""The toy server's command line (``python -m relevancy.testing.openai_server``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from relevancy.testing._batches import BATCH_FAULTS
from relevancy.testing._faults import FAULT_KINDS, FaultPlan
from relevancy.testing._toy_model import TEXT_MODES

__all__ = ["TOKENIZERS", "parse_args", "server_options"]

#: how usage can be counted (see the server's ``tokenizer``)
TOKENIZERS = ("words", "approx")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m relevancy.testing.openai_server",
        description="Serve a toy OpenAI-compatible API that can inject faults.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--api-key", default=None, help="require this Bearer key")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument(
        "--fault-kinds",
        default=",".join(FAULT_KINDS),
        help="comma-separated kinds for the random plan (default: all)",
    )
    parser.add_argument(
        "--fault-pattern",
        default=None,
        help="faults in turn instead of at random, 'ok' for none: 'ok,ok,429' is a 429 on "
        "every third request",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seeds the fault plan and salts the answers: the same seed, the same server",
    )
    parser.add_argument(
        "--seeded",
        action="store_true",
        help="choice i of a request with seed s is what seed s + i gives alone (as llama.cpp)",
    )
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--no-n", action="store_true", help="ignore n; answer one choice")
    parser.add_argument("--max-n", type=int, default=None)
    parser.add_argument("--text-mode", choices=TEXT_MODES, default="json")
    parser.add_argument("--no-json-schema", action="store_true")
    parser.add_argument("--no-json-object", action="store_true")
    parser.add_argument(
        "--retry-after", type=float, default=1.0, help="seconds a fault's 429 asks to wait"
    )
    parser.add_argument(
        "--no-retry-after", action="store_true", help="a fault's 429 says nothing of the wait"
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="send this header with every chat and embeddings answer (repeat it for more), "
        "e.g. x-ratelimit-remaining-requests=nan",
    )
    parser.add_argument("--slow-seconds", type=float, default=5.0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument(
        "--token-latency", type=float, default=0.0, help="seconds per completion token"
    )
    parser.add_argument("--slots", type=int, default=None, help="requests served at once")
    parser.add_argument("--tokenizer", choices=TOKENIZERS, default="words")
    parser.add_argument("--usage-log", default=None, help="append a JSON line per request")
    parser.add_argument("--verbose", action="store_true", help="log each request to stderr")
    limits = parser.add_argument_group("rate limits (per model, like OpenAI's)")
    limits.add_argument("--rpm", type=int, default=None, help="requests per window (minute)")
    limits.add_argument("--tpm", type=int, default=None, help="tokens per window (minute)")
    limits.add_argument(
        "--limit-window",
        type=float,
        default=60.0,
        help="seconds the rate-limit window lasts (default 60; less is a faster clock)",
    )
    limits.add_argument(
        "--no-limit-retry-after",
        action="store_true",
        help="a rate-limit 429 carries no retry-after headers",
    )
    parser.add_argument(
        "--batch-delay",
        type=float,
        default=0.0,
        help="seconds a batch (/v1/batches) takes to complete",
    )
    parser.add_argument(
        "--batch-fault", choices=BATCH_FAULTS, default=None, help="how every batch ends badly"
    )
    parser.add_argument(
        "--answer-models",
        type=lambda text: tuple(m.strip() for m in text.split(",") if m.strip()),
        default=(),
        metavar="A,B",
        help="answer chat prompts as these models, differently per prompt and model "
        "(relevancy.testing._answers; an experiment's answer models)",
    )
    args = parser.parse_args(argv)
    for header in args.header:
        if "=" not in header or not header.split("=", 1)[0].strip():
            parser.error(f"--header {header!r}: write NAME=VALUE")
    return args


def server_options(args: argparse.Namespace) -> dict[str, Any]:
    """The server's keyword arguments from the parsed command line."""
    plan = None
    if args.fault_pattern:
        pattern = [k.strip() for k in args.fault_pattern.split(",")]
        none = ("", "-", "ok", "none")
        plan = FaultPlan(pattern=[None if k in none else k for k in pattern], seed=args.seed)
    elif args.fault_rate > 0:
        kinds = tuple(k.strip() for k in args.fault_kinds.split(",") if k.strip())
        plan = FaultPlan(rate=args.fault_rate, kinds=kinds, seed=args.seed)
    return {
        "host": args.host,
        "port": args.port,
        "api_key": args.api_key,
        "faults": plan,
        "embedding_dim": args.embedding_dim,
        "honour_n": not args.no_n,
        "max_n": args.max_n,
        "accept_json_schema": not args.no_json_schema,
        "accept_json_object": not args.no_json_object,
        "text_mode": args.text_mode,
        "retry_after": None if args.no_retry_after else args.retry_after,
        "slow_seconds": args.slow_seconds,
        "seed": args.seed,
        "latency": args.latency,
        "token_latency": args.token_latency,
        "slots": args.slots,
        "tokenizer": args.tokenizer,
        "usage_log": args.usage_log,
        "log_requests": args.verbose,
        "rpm": args.rpm,
        "tpm": args.tpm,
        "limit_window": args.limit_window,
        "limit_retry_after": not args.no_limit_retry_after,
        "batch_delay": args.batch_delay,
        "batch_fault": args.batch_fault,
        "seeded": args.seeded,
        "headers": dict(h.split("=", 1) for h in args.header),
    }
