"""Command line: ``relevancy score``, ``score-one``, ``check-judge``, ``compare``,
``experiment``, ``export``, ``cache``, ``doctor`` and ``dashboard``.

One module per command, each with ``register(sub)`` (its parser) and the function that runs it;
the options they share are in :mod:`relevancy.cli.options`. Only the module of the command given
is imported: ``relevancy --help`` and a mistyped command answer without pandas, numpy or the
models (``python -m bench.cli_startup`` measures it).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import shutil
import sqlite3
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

from relevancy.core.interrupt import ctrl_c_interrupts
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
    "experiment": (
        "experiment",
        "answer a question set with prompt templates x models and score every answer into one "
        "run whose variants are TEMPLATE · MODEL (from --prompt/--model or a TOML file)",
    ),
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


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: a usage error is one line (``relevancy score: error: argument
    --poll: 'nan' is not ...``), not the command's usage of forty options before it."""

    def error(self, message: str) -> NoReturn:
        line = " ".join(redact(message).split())
        self.exit(2, f"{self.prog}: error: {line} (`{self.prog} --help` lists the options)\n")


def add_command(sub: Any, name: str, **options: Any) -> argparse.ArgumentParser:
    """The parser of the subcommand ``name``, with its line of help from :data:`COMMANDS`."""
    return sub.add_parser(name, help=COMMANDS[name][1], **options)


def make_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command``, the other subcommands are only a name and a line of help,
    and only that command's module is imported (``""``: none, for ``relevancy --help``)."""
    parser = argparse.ArgumentParser(
        prog="relevancy", description="Compute and explain the Answer Relevancy of LLM answers."
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
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


def _database_of(exc: BaseException, args: argparse.Namespace) -> tuple[str, Path | None, str]:
    """Which of our SQLite files ``exc`` came from: ``("run store" or "cache", its path, the
    option that moves it)``, read from the object whose method failed (the innermost ``self``
    with a path), else the command's ``--store``."""
    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        owner = frame.f_locals.get("self")
        path = getattr(owner, "path", None)
        kind = type(owner).__name__
        if isinstance(path, Path) and kind in ("RunStore", "Cache"):
            if kind == "Cache":
                return "cache", path, "--cache-dir or RELEVANCY_CACHE_DIR (or --no-cache)"
            return "run store", path, "--store or RELEVANCY_STORE"
    store = getattr(args, "store", None)
    return "run store", Path(store) if store else None, "--store or RELEVANCY_STORE"


def _nearly_full(path: Path) -> bool:
    """Whether the disk ``path`` is on has less than a MiB left (SQLite says "disk I/O error"
    for a full disk where the failed write was its shared-memory or WAL file's)."""
    try:
        return shutil.disk_usage(path.parent).free < 1 << 20
    except OSError:
        return False


def _database_trouble(exc: sqlite3.Error, args: argparse.Namespace) -> tuple[str, int]:
    """One line for an SQLite error of the run store or the cache, and the exit code: 2 when
    the fix is another option (a read-only or unreadable file), 1 for trouble at run time (a
    lock held too long, a full disk)."""
    from relevancy._sqlite import store_wait  # lazy: only when something went wrong

    what, path, option = _database_of(exc, args)
    name = f"the {what} {path}" if path else f"the {what}"
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        try:
            waited = f" (waited {store_wait():g} s)"
        except RelevancyError:
            waited = ""
        return (
            f"{name} is locked by another process writing to it{waited}: run again when it is "
            "done, or stop it; RELEVANCY_STORE_WAIT sets how many seconds to wait",
            1,
        )
    if "full" in text or ("i/o" in text and path is not None and _nearly_full(path)):
        return f"the disk holding {name} is full: free some space, or move it with {option}", 1
    if "readonly" in text or "read-only" in text:
        return f"{name} is read-only: give a file you can write with {option}", 2
    if "unable to open" in text:
        locked_out = path is not None and not os.access(path.parent, os.W_OK)
        why = " (its folder cannot be written: a read-only disk?)" if locked_out else ""
        return f"{name} cannot be opened{why}: give a folder you can write with {option}", 2
    if "not a database" in text or "malformed" in text:
        return f"{name} is not a readable SQLite file ({exc}): give another with {option}", 2
    return f"{name} failed ({exc}): check the disk it is on, or move it with {option}", 1


def _os_trouble(exc: OSError) -> tuple[str, int]:
    """One line for a file that could not be read or written, and the exit code: 1 when the
    disk is at fault (full, failing), 2 when the path given is (read-only, not a folder)."""
    path = exc.filename if exc.filename is not None else ""
    where = f" {path}" if path else ""
    why = exc.strerror or type(exc).__name__
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return f"the disk is full writing{where}: free some space, or write elsewhere", 1
    if exc.errno == errno.EIO:
        return f"could not read or write{where} ({why}): check the disk", 1
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"cannot write{where} ({why}): give a path you can write", 2
    if exc.errno in (errno.EEXIST, errno.ENOTDIR) and path:  # a file where a folder should be
        return f"{path} is in the way: a folder is needed there; give another path", 2
    if path:
        return f"cannot use{where} ({why}): give another path", 2
    return f"{why}: {exc}", 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = make_parser(_command_in(argv))
    try:
        args, unknown = parser.parse_known_args(argv)
    except SystemExit as stop:  # --help, or a usage error already said (in one line)
        return stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 2
    if unknown and not getattr(args, "passthrough", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if unknown:  # `relevancy dashboard`: Streamlit's own options
        args.streamlit_options = unknown
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        with ctrl_c_interrupts():  # every command stops on Ctrl-C, even started with it ignored
            return int(args.func(args))
    except RelevancyError as exc:
        print(f"error: {redact(exc)}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # the run store or the cache: locked, read-only, disk full
        line, code = _database_trouble(exc, args)
        print(f"error: {' '.join(redact(line).split())}", file=sys.stderr)
        return code
    except OSError as exc:  # a file or folder that cannot be written: read-only, full, missing
        line, code = _os_trouble(exc)
        print(f"error: {' '.join(redact(line).split())}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print(
            "interrupted: finished rows are saved (in the cache and OUTPUT.partial.jsonl); "
            "run the same command again to resume",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
