"""``relevancy export``: a saved run's scored rows written to a file, a chunk at a time.

The dashboard's download buttons build the file in memory first; this writes a run of any size
in flat memory (:meth:`relevancy.runs.RunStore.export`), to ``OUTPUT.part`` first, so an
interrupted export leaves no half file under the name.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from relevancy.cli import add_command
from relevancy.cli._run_arg import find_run, open_store
from relevancy.errors import InputError


def register(sub: Any) -> None:
    """Add this command's parser to ``sub`` (the subcommands of ``relevancy``)."""
    p = add_command(sub, "export")
    p.add_argument("run", help="the run: its number (12, #12 or run:12) or its name")
    p.add_argument(
        "output", help="the file to write: .csv, .jsonl, .json or .parquet (by its ending)"
    )
    p.add_argument("--store", default=None, help="the run store (default: $RELEVANCY_STORE)")
    p.add_argument("--force", action="store_true", help="replace OUTPUT when it exists")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.exists() and not args.force:
        raise InputError(f"{out} exists: give another name, or --force to replace it")
    store = open_store(args.store)
    info = find_run(store, args.run)
    if not info.n_scored:
        raise InputError(f"run #{info.id} {info.name!r} has no scored rows to export yet")
    written = store.export(info.id, out)
    size = os.path.getsize(written)
    print(
        f"wrote {info.n_scored:,} scored rows of run #{info.id} {info.name!r} to {written} "
        f"({size / 1e6:.1f} MB)"
    )
    if info.n_scored < info.n_rows:
        print(
            f"{info.n_rows - info.n_scored:,} of its {info.n_rows:,} rows are not scored yet and "
            "are not in the file",
            file=sys.stderr,
        )
    return 0
