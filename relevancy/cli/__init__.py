"""Command line: ``relevancy score``, ``score-one``, ``check-judge``, ``compare``, ``cache``,
``doctor`` and ``dashboard``.

One module per command, each with ``register(sub)`` (its parser) and the function that runs it;
the options they share are in :mod:`relevancy.cli.options`.
"""

from __future__ import annotations

import argparse
import os
import sys

from relevancy.cli import cache, compare, dashboard, doctor, judge, score, score_one
from relevancy.core.redact import redact
from relevancy.errors import RelevancyError

__all__ = ["main", "make_parser"]

COMMANDS = (score, score_one, judge, compare, cache, doctor, dashboard)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relevancy", description="Compute and explain the Answer Relevancy of LLM answers."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
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
