"""The harness every bench runs through: its arguments, its JSON record, its RESULTS.md tables.

A bench is a module of this package with

* ``measure(args) -> dict``: takes the measurements, returns the figures (JSON-able);
* ``tables(figures) -> dict[str, str]``: its Markdown tables for ``RESULTS.md``, by block name
  (``""`` for the bench's own block ``<!-- figures:NAME -->``, ``"part"`` for
  ``<!-- figures:NAME/part -->``); figures only, no conclusions: those are written by hand;
* ``arguments(parser)``: its own options, beside the common ones;

and ends with ``main("NAME", measure, arguments, rows=..., quick=[...])``. Every bench then
takes ``--rows N`` (where rows make sense), ``--quick`` (its small sizes: a smoke run),
``--json OUT`` (the figures) and ``--save`` (the record in ``bench/results/NAME.json``, what
``python -m bench.run_all --report-only`` makes the tables from). Nothing here imports the
library; the benches import it inside their functions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS_DIR = BENCH / "results"
RESULTS_MD = BENCH / "RESULTS.md"
SHARED_DATA = ROOT.parent / "shared" / "data"

Measure = Callable[[argparse.Namespace], dict[str, Any]]


# --------------------------------------------------------------------------------------------
# running a bench
# --------------------------------------------------------------------------------------------


def main(
    name: str,
    measure: Measure,
    arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    *,
    rows: int | None = None,
    quick: Sequence[str] = (),
    argv: Sequence[str] | None = None,
) -> int:
    """Parse the common and the bench's own arguments, measure, print and keep the figures."""
    module = sys.modules.get("__main__")
    p = argparse.ArgumentParser(
        prog=f"python -m bench.{name}",
        description=(module.__doc__ or name).split("\n")[0] if module else name,
    )
    if rows is not None:
        p.add_argument("--rows", type=int, default=rows, help=f"rows (default {rows})")
    p.add_argument("--quick", action="store_true", help=f"small sizes: {' '.join(quick)}")
    p.add_argument("--json", type=Path, default=None, help="write the figures to this file")
    p.add_argument(
        "--save", action="store_true", help=f"write the record to bench/results/{name}.json"
    )
    p.add_argument(
        "--merge",
        action="store_true",
        help="with --save: keep the record's other figures; those this run measured replace "
        "theirs (a part measured again, e.g. --sizes --cli-rows --local-rows 500 3000)",
    )
    if arguments is not None:
        arguments(p)
    given = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(given)
    if args.quick:  # the quick sizes first, so that options given too win
        args = p.parse_args([*quick, *given])
    if args.save and args.quick:
        p.error("--save keeps the figures RESULTS.md is made from: not with --quick")
    if args.merge and not args.save:
        p.error("--merge changes the saved record: give --save too")
    # run_all stops a bench that runs too long with SIGTERM: leave through the finally blocks,
    # so servers and clusters started in sessions of their own stop too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load_before = load_average()
    started = time.perf_counter()
    figures = finish(measure(args))
    text = json.dumps(figures, indent=2, default=_plain)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    if args.save:
        command = ["python", "-m", f"bench.{name}", *given]
        record = make_record(
            "ok", command, time.perf_counter() - started, load_before, figures, log=None
        )
        if args.merge:
            record = merge_record(read_record(name), record)
        save_record(name, record)
        log(f"wrote bench/results/{name}.json")
    return 0


def finish(figures: dict[str, Any]) -> dict[str, Any]:
    """The figures with what every record carries: peak RSS, load at the end, Python."""
    figures.setdefault("peak_rss_mb", r(vm_hwm_mb(), 1))
    figures.setdefault("load_average_end", load_average())
    figures.setdefault("python", platform.python_version())
    return figures


def make_record(
    status: str,
    command: Sequence[str],
    wall_s: float,
    load_before: list[float],
    figures: dict[str, Any] | None,
    *,
    log: str | None,
    **extra: Any,
) -> dict[str, Any]:
    """A bench's record: how it ran and its figures (``bench/results/NAME.json``)."""
    return {
        "status": status,
        "command": shlex.join(command),
        "wall_s": round(wall_s, 1),
        "load_average_before": load_before,
        **extra,
        "log": log,
        "figures": figures,
    }


#: what every record's figures carry (``finish``): not a part of its own when merging
_COMMON = ("peak_rss_mb", "load_average_end", "python")


def merge_record(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """``new``'s figures over ``old``'s: each part ``new`` measured (a top-level key of its
    figures, not empty) replaces ``old``'s, the others are kept, and the command names the
    runs whose figures are left, each with the parts it measured after the first.

    >>> old = {"command": "python -m bench.x", "figures": {"a": [1], "b": [2]}}
    >>> new = {"command": "python -m bench.x --b 3", "figures": {"a": [], "b": [3]}}
    >>> merged = merge_record(old, new)
    >>> merged["figures"], merged["command"]
    ({'a': [1], 'b': [3]}, 'python -m bench.x; then python -m bench.x --b 3 (measured again: b)')
    >>> again = {"command": "python -m bench.x --a 4", "figures": {"a": [4], "b": []}}
    >>> merge_record(merged, again)["command"]  # the first run's figures are all replaced
    'python -m bench.x --b 3; then python -m bench.x --a 4 (measured again: a)'
    """
    if not old or not isinstance(old.get("figures"), dict):
        return new
    measured = {
        k: v
        for k, v in (new.get("figures") or {}).items()
        if k not in _COMMON and v not in (None, [], {})
    }
    common = {k: v for k, v in (new.get("figures") or {}).items() if k in _COMMON}
    figures = {**old["figures"], **measured, **common}
    runs = [*_runs(old["command"]), (new["command"], list(measured))]
    owner = {part: 0 for part in figures if part not in _COMMON}  # the first run: the rest
    for index, (_, parts) in enumerate(runs):
        for part in parts or ():
            owner[part] = index
    kept = [
        (command, [part for part, index in owner.items() if index == at])
        for at, (command, _) in enumerate(runs)
    ]
    last = len(runs) - 1  # the newest stays named: the wall time and load are its
    kept = [(c, parts) for at, (c, parts) in enumerate(kept) if parts or at == last]
    steps = [kept[0][0]] + [
        f"{command} (measured again: {', '.join(parts) or 'nothing'})"
        for command, parts in kept[1:]
    ]
    return {**new, "command": "; then ".join(steps), "figures": figures}


_AGAIN = re.compile(r"^(?P<command>.*) \(measured again: (?P<parts>[^()]*)\)$")


def _runs(command: str) -> list[tuple[str, list[str] | None]]:
    """The runs a merged record's command names, oldest first, each with the parts it
    measured again (None for the first run, which measured the rest; none for a step
    written by hand)."""
    runs: list[tuple[str, list[str] | None]] = []
    for at, step in enumerate(command.split("; then ")):
        found = _AGAIN.match(step)
        if found:
            parts = [p.strip() for p in found["parts"].split(",")]
            runs.append((found["command"], [p for p in parts if p and p != "nothing"]))
        else:
            runs.append((step, None if at == 0 else []))
    return runs


def save_record(name: str, record: dict[str, Any]) -> None:
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(record, indent=2, default=_plain) + "\n", encoding="utf-8")


def read_record(name: str) -> dict[str, Any] | None:
    path = RESULTS_DIR / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _plain(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


# --------------------------------------------------------------------------------------------
# small helpers the benches share
# --------------------------------------------------------------------------------------------


def log(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


def r(value: float, digits: int = 3) -> float:
    return round(float(value), digits)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile, linear between the two nearest values; NaN when empty."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def row_seconds(seconds: Sequence[float]) -> dict[str, float | None]:
    """The median and 95th percentile of rows' seconds (None when there are none)."""
    if not seconds:
        return {"p50_row_s": None, "p95_row_s": None}
    return {"p50_row_s": r(percentile(seconds, 50)), "p95_row_s": r(percentile(seconds, 95))}


def chunks(rows: Sequence[Any], k: int) -> list[Sequence[Any]]:
    """``rows`` in ``k`` nearly equal consecutive chunks (the alternating comparisons' unit)."""
    size = max(1, -(-len(rows) // max(1, k)))
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def in_turn(sides: Sequence[str], chunk: int) -> list[str]:
    """The order of the sides in a chunk: as given in even chunks, reversed in odd ones, so
    that load from other processes falls on all sides alike."""
    return list(sides) if chunk % 2 == 0 else list(reversed(sides))


def _status_kib(field: str, pid: int | str) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def vm_hwm_mb(pid: int | str = "self") -> float:
    """Peak resident set size (VmHWM) of a process, in MiB; NaN when unreadable."""
    peak = _status_kib("VmHWM", pid)
    if peak != peak and pid == "self":
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return peak


def vm_rss_mb(pid: int | str = "self") -> float:
    return _status_kib("VmRSS", pid)


def cpu_s(pid: int | str = "self") -> float:
    """User and system CPU seconds a process has used so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssSampler:
    """A process's resident memory (VmRSS, MiB) every ``every`` seconds, from a thread, until
    the process exits or the ``with`` block ends: ``samples``, each ``{"t": seconds since
    start, "rss_mb": MiB}`` and what ``extra()`` adds (e.g. the rows done by then).

        with RssSampler(proc.pid, every=2.0) as sampler:
            proc.wait()
        highest = max(s["rss_mb"] for s in sampler.samples)
    """

    def __init__(
        self,
        pid: int,
        every: float = 2.0,
        *,
        started: float | None = None,
        extra: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.pid = pid
        self.every = every
        self.started = time.perf_counter() if started is None else started
        self.extra = extra
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        # NaN once the process has exited (a zombie has no VmRSS)
        while (mb := vm_rss_mb(self.pid)) == mb:
            sample = {"t": r(time.perf_counter() - self.started, 1), "rss_mb": r(mb, 1)}
            self.samples.append({**sample, **(self.extra() if self.extra else {})})
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(self.every + 5)

    def highest(self) -> float | None:
        return max((s["rss_mb"] for s in self.samples), default=None)


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------


def fmt(value: Any, digits: int = 2) -> str:
    """A figure for a table: ``digits`` decimals with thousands separators, tiny values in
    scientific notation, "–" for a missing one; lists joined by commas."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value and abs(value) < 10 ** (-digits):
            return f"{value:.1e}"
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(x, digits) for x in value)
    return str(value)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 2) -> str:
    """A Markdown table; cells that are not strings go through :func:`fmt`."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [c if isinstance(c, str) else fmt(c, digits) for c in row]
        cells = [c.replace("|", "/").replace("\n", " ") for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def facts(rows: Sequence[tuple[str, Any]], digits: int = 2) -> str:
    """A two-column table of named figures (``None`` values left out)."""
    return table(["figure", "value"], [[k, v] for k, v in rows if v is not None], digits)


def against(rows: Sequence[tuple[str, float | None, str, bool | None]]) -> str:
    """Figures against their targets: (figure, value, target in words, met or None)."""
    return table(
        ["figure", "value", "target", "met"],
        [[k, v, t, "–" if ok is None else ("yes" if ok else "**no**")] for k, v, t, ok in rows],
    )


_BLOCK = re.compile(r"(<!-- figures:([\w./-]+) -->\n)(.*?)(<!-- /figures -->)", re.S)


def refresh(text: str, blocks: dict[str, str]) -> tuple[str, list[str], list[str]]:
    """``text`` with the generated blocks between their markers replaced, the rest untouched.

    Returns the new text, the markers refreshed, and the markers it has no block for (left
    as they were).
    """
    done: list[str] = []
    kept: list[str] = []

    def put(m: re.Match[str]) -> str:
        name = m.group(2)
        if name not in blocks:
            kept.append(name)
            return m.group(0)
        done.append(name)
        return f"{m.group(1)}{blocks[name].strip()}\n{m.group(4)}"

    return _BLOCK.sub(put, text), done, kept


def markers(text: str) -> list[str]:
    return [m.group(2) for m in _BLOCK.finditer(text)]
