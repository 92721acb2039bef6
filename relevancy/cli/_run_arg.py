"""A saved run named on the command line (``relevancy export RUN``, ``relevancy compare
run:RUN``): the store it is in and the run itself, read the same way by every command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relevancy.errors import InputError

__all__ = ["open_store", "find_run"]

#: runs named in the message for a run that is not there
LISTED = 5


def open_store(store: str | None) -> Any:
    """The run store at ``store`` (default: ``$RELEVANCY_STORE``); :class:`InputError` when
    there is none (opening a missing path would make an empty store)."""
    from relevancy.paths import as_store_file, default_store_path  # lazy: `--help` needs no pandas
    from relevancy.runs import RunStore  # lazy

    path = as_store_file(Path(store).expanduser()) if store else default_store_path()
    if not path.exists():
        raise InputError(f"no run store at {path}: give --store or set RELEVANCY_STORE")
    return RunStore(path)


def _listing(runs: list[Any]) -> str:
    shown = ", ".join(f"#{r.id} {r.name!r} ({r.n_scored:,} scored)" for r in runs[:LISTED])
    more = f" and {len(runs) - LISTED} more" if len(runs) > LISTED else ""
    return f"its runs: {shown}{more}" if runs else "it holds no run yet"


def find_run(store: Any, spec: str) -> Any:
    """The run ``spec`` names: a number (``12``, ``#12``, ``run:12``), else a run's exact name
    (``baseline`` or ``run:baseline``; the newest of that name). :class:`InputError` naming the
    store's runs when none is."""
    runs = store.list_runs()
    text = spec.strip().removeprefix("run:")
    number = text.lstrip("#")
    if number.isdigit():
        found = [r for r in runs if r.id == int(number)]
    else:
        found = [r for r in runs if r.name == text]  # newest first
    if not found:
        raise InputError(f"no run {spec!r} in {store.path}; {_listing(runs)}")
    return found[0]
