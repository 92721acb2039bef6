"""How fast the CLI answers when it does no work: ``relevancy --help``, a subcommand's help, a
mistyped option, and ``import relevancy``; beside a bare interpreter's start.

Each case is the installed ``relevancy`` command (or ``python -c``) in a fresh process, run
``--repeats`` times, the cases taking turns so that a load on the machine falls on all of them.
Each is also run once under ``python -X importtime``: how many modules it imports, which heavy
ones (pandas, numpy, pyarrow, Streamlit, plotly, the models' runtimes) and the slowest imports.

``--checkout PATH`` measures another checkout's ``relevancy`` package with this interpreter and
its packages (``PYTHONPATH=PATH``): e.g. a ``git archive`` of an older commit, for a before and
after. Nothing here is asserted (tests/test_cli_startup.py checks what the help imports).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import in_turn, load_average, log, main, r, table

#: the cases: a name and what follows ``relevancy`` (``None``: a Python one-liner instead)
CASES: dict[str, tuple[list[str], str | None]] = {
    "python -c pass (the interpreter alone)": ([], "pass"),
    "python -c 'import relevancy'": ([], "import relevancy"),
    "relevancy --help": (["--help"], None),
    "relevancy --no-such-option (an error)": (["--no-such-option"], None),
    "relevancy compare --help": (["compare", "--help"], None),
    "relevancy score --help": (["score", "--help"], None),
    "relevancy score --no-such-option (an error)": (["score", "--no-such-option"], None),
}
#: third-party packages whose import alone costs a tenth of a second or more
HEAVY = (
    "pandas",
    "numpy",
    "pyarrow",
    "streamlit",
    "plotly",
    "sklearn",
    "onnxruntime",
    "llama_cpp",
    "openai",
    "tokenizers",
)
RUN_MAIN = "import sys; from relevancy.cli import main; sys.exit(main(sys.argv[1:]))"


def _command(args: list[str], code: str | None) -> list[str]:
    """The case as a command line: the installed script when there is one, as a user runs it."""
    if code is not None:
        return [sys.executable, "-c", code]
    script = Path(sys.executable).with_name("relevancy")
    if script.is_file():
        return [str(script), *args]
    return [sys.executable, "-c", RUN_MAIN, *args]


def _env(checkout: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    return env


def _wall(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, env=env, cwd=cwd, timeout=120)  # exit 0 or 2
    return time.perf_counter() - start


def import_profile(
    args: list[str], code: str | None, env: dict[str, str], cwd: str
) -> dict[str, Any]:
    """One run under ``-X importtime``: modules imported, the heavy ones, the slowest five."""
    cmd = [sys.executable, "-X", "importtime", "-c", code or RUN_MAIN, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    packages: dict[str, int] = {}  # top-level package: its import's cumulative microseconds
    modules, total = 0, 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        _, cumulative, name = line.split("|")
        if not cumulative.strip().isdigit():
            continue  # the header line
        modules += 1
        if not name.startswith("  "):  # imported by the script itself, not by another module
            total += int(cumulative)
        if "." not in name.strip():
            packages[name.strip()] = int(cumulative)
    slowest = sorted(packages.items(), key=lambda kv: -kv[1])[:5]
    return {
        "modules": modules,
        "heavy": [name for name in HEAVY if name in packages],
        "slowest": [f"{name} {us / 1e6:.2f} s" for name, us in slowest],
        "import_s": r(total / 1e6),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    checkout = args.checkout.resolve() if args.checkout else None
    env = _env(checkout)
    log(
        f"cli_startup: {args.repeats} runs of {len(CASES)} cases"
        + (f", checkout {checkout}" if checkout else "")
    )
    seconds: dict[str, list[float]] = {name: [] for name in CASES}
    load_before = load_average()
    cases = {}
    # an empty working folder: `python -c` puts it first on sys.path, before PYTHONPATH
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as cwd:
        for turn in range(args.repeats):
            for name in in_turn(list(CASES), turn):
                cmd_args, code = CASES[name]
                seconds[name].append(_wall(_command(cmd_args, code), env, cwd))
        for name, (cmd_args, code) in CASES.items():
            cases[name] = {
                "median_s": r(statistics.median(seconds[name])),
                "min_s": r(min(seconds[name])),
                **import_profile(cmd_args, code, env, cwd),
            }
            log(f"  {name}: median {cases[name]['median_s']} s, heavy {cases[name]['heavy']}")
    return {
        "bench": "cli_startup",
        "checkout": str(checkout) if checkout else "this one",
        "repeats": args.repeats,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "cases": cases,
    }


def tables(fig: dict[str, Any]) -> dict[str, str]:
    header = [
        "case",
        "median s",
        "fastest s",
        "imports s",
        "modules imported",
        "heavy packages imported",
        "slowest packages (cumulative)",
    ]
    rows = [
        [
            name,
            d["median_s"],
            d["min_s"],
            d["import_s"],
            d["modules"],
            ", ".join(d["heavy"]) or "none",
            "; ".join(d["slowest"][:3]),
        ]
        for name, d in fig.get("cases", {}).items()
    ]
    load = ", ".join(f"{x:.2f}" for x in fig.get("load_average_before", []))
    return {
        "": table(header, rows, digits=3)
        + f"\n\n{fig.get('repeats')} runs of each case, in turn; load average before: {load}."
    }


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeats", type=int, default=9, help="runs of each case (default 9)")
    p.add_argument(
        "--checkout",
        type=Path,
        default=None,
        help="measure this checkout's relevancy package instead (PYTHONPATH)",
    )


if __name__ == "__main__":
    raise SystemExit(main("cli_startup", measure, arguments, quick=["--repeats", "2"]))
