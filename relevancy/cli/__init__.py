"""Command line: ``relevancy score``, ``score-one``, ``check-judge``, ``compare``, ``export``,
``cache``, ``doctor`` and ``dashboard``.

One module per command, each with ``register(sub)`` (its parser) and the function that runs it;
the options they share are in :mod:`relevancy.cli.options`. Only the module of the command given
is imported: ``relevancy --help`` and a mistyped command answer without pandas, numpy or the
models (``python -m bench.cli_startup`` measures it).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from relevancy.core.redact import redact
from relevancy.errors import RelevancyError

__all__ = ["main", "make_parser", "add_command", "COMMANDS"]

#: the subcommands, in the order ``relevancy --help`` lists them: the module under
#: ``relevancy/cli/`` that builds the command's options and runs it, and its line of help
COMMANDS: dict[str, tuple[str, str]] = {
    "score": (
        "score",
        "score a file of question/answer pairs: a table (CSV/JSON/JSONL/Parquet) or an export "
        "of Langfuse, LangSmith, Phoenix, OpenAI chat logs or a Hugging Face dataset",
    ),
    "score-one": ("score_one", "score one question/answer pair and explain it"),
    "check-judge": (
        "judge",
        "measure whether the configured LLM + embedder prefer complete answers, on a small "
        "labelled set shipped with the package",
    ),
    "compare": ("compare", "pair two scored result files (or run:ID) and judge NEW against BASE"),
    "export": (
        "export",
        "write a saved run's scored rows to a CSV, JSONL, JSON or Parquet file, a chunk at a "
        "time (a run of any size, in flat memory)",
    ),
    "cache": ("cache", "show or clear the persistent cache"),
    "doctor": (
        "doctor",
        "check this installation: native parts, CPU, models, folders, extras, and one row "
        "scored in a child process; exit code 1 with the failing line when something is off",
    ),
    "dashboard": (
        "dashboard",
        "serve the dashboard (streamlit run app.py); options such as --server.headless true "
        "are passed to Streamlit",
    ),
}


def add_command(sub: Any, name: str, **options: Any) -> argparse.ArgumentParser:
    """The parser of the subcommand ``name``, with its line of help from :data:`COMMANDS`."""
    return sub.add_parser(name, help=COMMANDS[name][1], **options)


def make_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command``, the other subcommands are only a name and a line of help,
    and only that command's module is imported (``""``: none, for ``relevancy --help``)."""
    parser = argparse.ArgumentParser(
        prog="relevancy", description="Compute and explain the Answer Relevancy of LLM answers."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module, line) in COMMANDS.items():
        if command is None or name == command:
            # the command's module, by name: the one dynamic import of the CLI (all are ours)
            importlib.import_module(f"relevancy.cli.{module}").register(sub)
        else:
            sub.add_parser(name, help=line)
    return parser


def _command_in(argv: list[str]) -> str:
    """The subcommand ``argv`` names: its first word that is not an option (``relevancy`` itself
    takes only ``-h``), or ``""``."""
    return next((word for word in argv if not word.startswith("-")), "")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = make_parser(_command_in(argv))
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
