"""Run the benches and refresh the tables of ``bench/RESULTS.md``.

    python -m bench.run_all                  # every bench at full size (about half an hour)
    python -m bench.run_all --quick          # small sizes: a smoke run, RESULTS.md untouched
    python -m bench.run_all --only throughput,cache
    python -m bench.run_all --report-only    # refresh the tables from bench/results/*.json
    python -m bench.run_all --report-only --out /tmp/RESULTS.md

Each bench runs as a subprocess (``python -m bench.NAME``, so its peak RSS is its own; the
runner adds ``wait4``'s, children included) and its record goes to ``bench/results/NAME.json``
with its log beside it. Benches start while the budget (``--budget``) is not spent; one that
runs more than ``--grace`` seconds past it is stopped. Then the report: ``RESULTS.md`` is
written by hand, and only what stands between ``<!-- figures:NAME -->`` and ``<!-- /figures
-->`` is replaced, by the tables of that bench's record (``machine`` and ``runs``: the
machine and how each bench ran). Everything else, conclusions included, is left as it is.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.harness import (
    RESULTS_DIR,
    RESULTS_MD,
    ROOT,
    fmt,
    load_average,
    make_record,
    markers,
    read_record,
    refresh,
    save_record,
    table,
)
from bench.setups import ragas_python


@dataclass(frozen=True)
class Entry:
    """One bench run: its module, the arguments beyond the module's defaults (its full size),
    the quick ones (default: the module's own ``--quick``), and its tables' function."""

    module: str
    args: tuple[str, ...] = ()
    quick: tuple[str, ...] = ("--quick",)
    tables: str | None = "tables"
    extra: bool = False  #: only with --all or --only


BENCHES: dict[str, Entry] = {
    "throughput": Entry("throughput"),
    "instant_api": Entry(
        "throughput",
        ("--rows", "0", "--api-rows", "300"),
        ("--rows", "0", "--api-rows", "20"),
        tables="instant_api_tables",
    ),
    "vs_ragas": Entry("vs_ragas"),
    "vs_ragas_api": Entry("vs_ragas_api"),
    "rate_limits": Entry("rate_limits"),
    "cache": Entry("cache"),
    "dashboard_scale": Entry("dashboard_scale"),
    "ray_scaling": Entry("ray_scaling"),
    "faults": Entry("faults"),
    "reasons": Entry("reasons"),
    "padding": Entry("padding"),
    "chance": Entry("chance"),
    "cli_startup": Entry("cli_startup"),
    "follow": Entry("follow"),  # a real Phoenix: lag at --poll 1 and 5; 20,000 rows' memory
    # the alert rule's false alarms and power on the development sets' scores (seconds)
    "alert_rule": Entry("alert_rule"),
    "experiments": Entry("experiments"),  # issue 48: answering under a limit, kill and resume
    # the agreement harness's cheap step (its figures are in the hand-written section)
    "agreement": Entry(
        "agreement",
        ("baselines", "--subset", "heldout", "--out", "/tmp/bench-agreement"),
        ("baselines", "--subset", "dev", "--out", "/tmp/bench-agreement"),
        tables=None,
    ),
    "stability": Entry("stability", extra=True),  # 5 seeds x 24 rows of HaluQuestQA
}
PACKAGES = (
    "relevancy",
    "llama-cpp-python",
    "onnxruntime",
    "tokenizers",
    "numpy",
    "openai",
    "streamlit",
    "umap-learn",
    "numba",
    "ray",
)


def _sh(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine() -> dict[str, Any]:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    cpu = next(
        (x.split(":", 1)[1].strip() for x in info.splitlines() if x.startswith("model name")), ""
    )
    kb = int(Path("/proc/meminfo").read_text().split()[1]) if Path("/proc/meminfo").exists() else 0
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    python = ragas_python()
    code = (
        "from importlib import metadata as m; print(' '.join(f'{p}=={m.version(p)}' "
        "for p in ('ragas', 'instructor', 'langchain-community', 'openai')))"
    )
    ragas = (_sh([str(python), "-c", code]) or "unreadable") if python else "absent"
    versions["ragas venv"] = ragas
    return {
        "date_utc": _sh(["date", "-u"]),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": f"{kb / 2**20:.1f} GiB",
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
        "git": _sh(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]),
    }


def run_bench(name: str, args: list[str], timeout: float, logs: Path) -> dict[str, Any]:
    """One bench in a session of its own (a timeout stops it and all it started)."""
    entry = BENCHES[name]
    tmp = Path(tempfile.mkstemp(prefix=f"bench-{name}-", suffix=".json")[1])
    cmd = [sys.executable, "-m", f"bench.{entry.module}", *args]
    if entry.tables is not None:
        cmd += ["--json", str(tmp)]
    log_path = logs / f"{name}.log"
    load_before = load_average()
    start = time.perf_counter()
    env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true"}
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        status, deadline = "ok", time.monotonic() + timeout
        while True:
            pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGTERM)
                time.sleep(5)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                _, code, usage = os.wait4(proc.pid, 0)
                status = "timed out"
                break
            time.sleep(0.5)
    exit_code = os.waitstatus_to_exitcode(code)
    if status == "ok" and exit_code != 0:
        status = f"failed (exit {exit_code})"
    try:
        figures = json.loads(tmp.read_text()) if entry.tables is not None else None
    except (OSError, ValueError):
        figures = None
    tmp.unlink(missing_ok=True)
    shown = ["python", "-m", f"bench.{entry.module}", *args]
    return make_record(
        status,
        shown,
        time.perf_counter() - start,
        load_before,
        figures,
        log=str(log_path.relative_to(ROOT) if log_path.is_relative_to(ROOT) else log_path),
        max_rss_children_mb=round(usage.ru_maxrss / 1024, 1),
    )


# ------------------------------------------------------------------------------------------
# the report
# ------------------------------------------------------------------------------------------


def machine_block(meta: dict[str, Any]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    return "\n".join(
        [
            f"The last `python -m bench.run_all` ran on **{meta['date_utc']}** (git "
            f"{meta.get('git') or '?'}) for {meta.get('total_s', 0) / 60:.1f} min (budget "
            f"{meta.get('budget_s', 0) / 60:.0f} min); a bench it did not run keeps its older "
            "record.",
            "",
            f"Machine: {meta['cpu']}, {meta['cores']} cores, {meta['memory']} RAM, {meta['os']}, "
            f"Python {meta['python']}.",
            "",
            f"Packages: {versions}.",
        ]
    )


def runs_block(records: dict[str, dict[str, Any]]) -> str:
    rows = [
        [
            name,
            rec["status"],
            rec.get("wall_s"),
            f"{fmt((rec.get('figures') or {}).get('peak_rss_mb'), 0)} / "
            f"{fmt(rec.get('max_rss_children_mb'), 0)}",
            " ".join(map(str, rec.get("load_average_before") or [])),
            f"`{rec['command']}`",
        ]
        for name, rec in records.items()
    ]
    header = [
        "bench",
        "status",
        "wall s",
        "peak RSS MiB (bench / with children)",
        "load before",
        "command",
    ]
    return table(header, rows, digits=1)


def blocks(records: dict[str, dict[str, Any]], meta: dict[str, Any] | None) -> dict[str, str]:
    """Every generated block, by marker name."""
    out = {"runs": runs_block(records)}
    if meta:
        out["machine"] = machine_block(meta)
    for name, rec in records.items():
        entry = BENCHES[name]
        if entry.tables is None or not rec.get("figures"):
            continue
        module = importlib.import_module(f"bench.{entry.module}")
        try:
            made = getattr(module, entry.tables)(rec["figures"])
        except (KeyError, TypeError) as exc:
            print(
                f"[run_all] {name}: figures incomplete ({exc!r}); its tables are left as they were",
                file=sys.stderr,
            )
            continue
        for part, text in made.items():
            if rec["status"] != "ok":
                text += f"\n\nStatus: {rec['status']} (see `{rec.get('log')}`)."
            out[f"{name}/{part}" if part else name] = text
    return out


def write_report(out: Path) -> int:
    records = {n: rec for n in BENCHES if (rec := read_record(n)) is not None}
    meta_path = RESULTS_DIR / "machine.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    made = blocks(records, meta)
    text, done, kept = refresh(RESULTS_MD.read_text(encoding="utf-8"), made)
    out.write_text(text, encoding="utf-8")
    unused = sorted(set(made) - set(markers(text)))
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    print(f"[run_all] {shown}: {len(done)} blocks refreshed; prose left as it was")
    for what, names in (("no figures for", kept), ("no marker in RESULTS.md for", unused)):
        if names:
            print(f"[run_all] {what}: {', '.join(names)}", file=sys.stderr)
    return 0 if all(rec["status"] == "ok" for rec in records.values()) else 1


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.run_all", description=__doc__.split("\n")[0])
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes (a smoke run); its records "
        "go to a temporary folder and RESULTS.md is left alone",
    )
    p.add_argument("--only", default="", help="comma-separated bench names")
    p.add_argument(
        "--all",
        action="store_true",
        help="also the extra benches: " + ", ".join(n for n, e in BENCHES.items() if e.extra),
    )
    p.add_argument("--budget", type=float, default=1800.0, help="overall seconds (default 1800)")
    p.add_argument(
        "--grace",
        type=float,
        default=900.0,
        help="seconds a bench started within the budget may run past it",
    )
    p.add_argument("--report-only", action="store_true", help="only refresh the tables")
    p.add_argument("--out", type=Path, default=RESULTS_MD, help="write the report here")
    args = p.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()] or [
        n for n, e in BENCHES.items() if args.all or not e.extra
    ]
    unknown = set(names) - set(BENCHES)
    if unknown:
        p.error(f"unknown bench(es): {', '.join(sorted(unknown))}; known: {', '.join(BENCHES)}")
    if args.report_only:
        return write_report(args.out.resolve())
    meta = machine() | {"budget_s": args.budget}
    logs = Path(tempfile.mkdtemp(prefix="bench-quick-")) if args.quick else RESULTS_DIR
    logs.mkdir(exist_ok=True)
    start, failed = time.perf_counter(), False
    for name in names:
        left = args.budget - (time.perf_counter() - start)
        if left < 30:
            print(f"[run_all] {name}: skipped, the budget is spent", flush=True)
            continue
        entry = BENCHES[name]
        print(f"[run_all] {name}: up to {left + args.grace:.0f} s", flush=True)
        record = run_bench(
            name, list(entry.quick if args.quick else entry.args), left + args.grace, logs
        )
        print(f"[run_all] {name}: {record['status']} in {record['wall_s']} s", flush=True)
        failed |= record["status"] != "ok"
        if not args.quick:
            save_record(name, record)
    if args.quick:
        print(f"[run_all] quick run: logs in {logs}; records and RESULTS.md left as they were")
        return int(failed)
    meta["total_s"] = time.perf_counter() - start
    (RESULTS_DIR / "machine.json").write_text(json.dumps(meta, indent=2) + "\n")
    return write_report(args.out.resolve()) or int(failed)


if __name__ == "__main__":
    raise SystemExit(main())
