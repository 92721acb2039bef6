"""Run every benchmark and write ``bench/RESULTS.md``.

    .venv/bin/python bench/run_all.py            # full sizes, 25-35 minutes on 2 cores
    .venv/bin/python bench/run_all.py --quick    # tiny sizes: checks that everything runs
    .venv/bin/python bench/run_all.py --only cache,dashboard_scale
    .venv/bin/python bench/run_all.py --report-only   # rewrite RESULTS.md from bench/results/
    .venv/bin/python bench/run_all.py --report-only --out /tmp/RESULTS.md   # write it elsewhere

This script only orchestrates. Each bench is a subprocess (so its peak RSS is its own) and
writes ``bench/results/<name>.json``. Benches start while the overall budget (``--budget``,
default 1,800 s) is not spent; one that runs more than ``--grace`` seconds past it is stopped.
The report is the header and summary table written here, then one section per bench, written by
that bench module's own ``render(figures, record)``. Sections written by hand or by other
benches (:data:`KEEP_SECTIONS`) are taken from ``bench/RESULTS.md`` and kept as they are, also
when ``--out`` writes the report elsewhere.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from _common import fmt, table  # noqa: E402

RESULTS_DIR = BENCH / "results"
RESULTS_MD = BENCH / "RESULTS.md"
#: measured once and kept (their last JSON is re-rendered); run them with --all or --only
EXTRA = {"omp_wait", "speedups", "one_slot", "stability", "language"}
NO_JSON = {"agreement"}  # benches that print figures but take no --json
KEEP_SECTIONS = (
    "Agreement with people",
    "Findings and proposals",
    "Judge check",
    "Intel AMX and the worker process",
)

# name -> (script, full-size args, quick args)
BENCHES: dict[str, tuple[str, list[str], list[str]]] = {
    "throughput": (
        "throughput.py",
        ["--rows", "200", "--chunks", "10"],
        ["--rows", "6", "--chunks", "2"],
    ),
    "vs_ragas": (
        "vs_ragas.py",
        [
            "--rows",
            "100",
            "--chunks",
            "4",
            "--sweep-rows",
            "4",
            "--stock-rows",
            "3",
            "--stock-timeout",
            "30",
        ],
        [
            "--rows",
            "4",
            "--chunks",
            "2",
            "--sweep-rows",
            "2",
            "--stock-rows",
            "1",
            "--stock-timeout",
            "20",
        ],
    ),
    # ours against Ragas on the toy server as a remote API (latency, tokens, n, usage)
    "vs_ragas_api": (
        "vs_ragas_api.py",
        ["--rows", "120", "--chunks", "2"],
        ["--rows", "8", "--chunks", "2", "--equal", "4", "--one-rows", "4", "--no-legacy"],
    ),
    "cache": (
        "cache.py",
        ["--rows", "1000", "--embedded-rows", "12"],
        ["--rows", "40", "--embedded-rows", "2"],
    ),
    "dashboard_scale": (
        "dashboard_scale.py",
        ["--sizes", "10000", "100000", "--cli-rows", "10000", "100000"],
        ["--sizes", "300", "--cli-rows", "300"],
    ),
    # Ray workers 1/2/4 against a latency-bound toy server; Ray's cost on a small run
    "ray_scaling": (
        "ray_scaling.py",
        ["--rows", "400", "--rounds", "2"],
        ["--rows", "40", "--rounds", "1", "--small-rows", "8"],
    ),
    # reason codes against the demo's and the judge check set's hand labels
    "reasons": ("reasons.py", [], []),
    # the estimate before a run (tokens, time) against the run that followed
    "estimate_error": (
        "estimate_error.py",
        ["--rows", "60", "--sample", "10"],
        ["--rows", "6", "--sample", "5"],
    ),
    # the agreement harness (another engineer's): its cheap step, the baselines; its own
    # report goes in the "Agreement with people" section, which is kept as written
    "agreement": (
        "agreement.py",
        ["baselines", "--subset", "heldout", "--out", "/tmp/bench-agreement"],
        ["baselines", "--subset", "dev", "--out", "/tmp/bench-agreement"],
    ),
    # offline completeness candidates on both development sets (issue 19; embedding only)
    "completeness": (
        "completeness.py",
        [],
        ["--n-boot", "200", "--n-boot-dev", "100"],
    ),
    # what unrelated pairs score with the embedder (issue 15: chance level); embedding only,
    # after generating HaluQuestQA dev questions once (cached)
    "chance": ("chance.py", ["--rows", "120"], ["--rows", "4"]),
    # seconds per row of each scoring mode (issue: agreement with people)
    "modes": ("modes.py", ["--rows", "24", "--chunks", "4"], ["--rows", "4", "--chunks", "2"]),
    # noncommittal detectors against a labelled set; the API prompt's question language
    "noncommittal": (
        "noncommittal.py",
        ["--prompts", "french_last,french_first,no_french"],
        ["--skip-llm"],
    ),
    # libgomp busy-waiting vs passive waiting, floor and ours (explains a measurement trap)
    "omp_wait": (
        "omp_wait.py",
        ["--rows", "24", "--chunks", "4"],
        ["--rows", "4", "--chunks", "2"],
    ),
    # our concurrency 1/2/4 on llama.cpp's one-slot server (the proposal in RESULTS.md)
    "one_slot": (
        "one_slot.py",
        ["--rows", "10", "--rounds", "2"],
        ["--rows", "2", "--rounds", "1"],
    ),
    # per-row spread over 5 spaced generator seeds (HaluQuestQA dev; skipped without the data);
    # bench/stability_paths.py reads the same figures from the CLI and the dashboard
    "stability": (
        "stability.py",
        ["--rows", "24", "--repeats", "5"],
        ["--rows", "2", "--repeats", "2"],
    ),
    # generated questions' language before/after prompting in the question's; MiniLM vs e5
    "language": ("language.py", [], ["--calibrate-only"]),
    # candidate speed-ups (settings and bench-side wrappers), beyond the benches
    "speedups": (
        "throughput.py",
        [
            "--rows",
            "0",
            "--variants",
            "gt1,rowlock,c1,et1",
            "--variant-rows",
            "24",
            "--api-rows",
            "300",
        ],
        ["--rows", "0", "--variants", "gt1,rowlock", "--variant-rows", "2", "--api-rows", "20"],
    ),
}
# name -> (section title, module in bench/, its function that renders the section)
SECTIONS: dict[str, tuple[str, str, str]] = {
    "throughput": ("1. Throughput, embedded default", "throughput", "render"),
    "vs_ragas": ("2. Against Ragas on the same server", "vs_ragas", "render"),
    "vs_ragas_api": ("2b. Against Ragas on a remote API", "vs_ragas_api", "render"),
    "dashboard_scale": ("4. Dashboard at scale", "dashboard_scale", "render"),
    "cache": ("5. Cache", "cache", "render"),
    "ray_scaling": ("6. Scaling out on Ray", "ray_scaling", "render"),
    "modes": ("Time per row of each scoring mode", "modes", "render"),
    "noncommittal": ("Noncommittal detection", "noncommittal", "render"),
    "reasons": ("Reason codes against hand labels", "reasons", "render"),
    "estimate_error": ("Estimate before a run", "estimate_error", "render"),
    "completeness": ("Completeness candidates", "completeness", "render"),
    "stability": ("Stability", "stability", "render"),
    "language": ("Language", "language", "render"),
    "chance": ("Chance level", "chance", "render"),
    "speedups": ("Speed-ups tried", "throughput", "render_speedups"),
    "one_slot": ("Concurrency on a one-slot server", "one_slot", "render"),
    "omp_wait": ("OpenMP waiting policy (measurement trap and proposal)", "omp_wait", "render"),
}


def sh(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 2**20:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    versions = {}
    for pkg in (
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
    ):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    ragas_py = BENCH / ".venv-ragas" / "bin" / "python"
    if ragas_py.exists():
        code = (
            "from importlib import metadata as m; print(' '.join(f'{p}=={m.version(p)}' "
            "for p in ('ragas', 'instructor', 'langchain-community', 'openai')))"
        )
        versions["ragas venv"] = sh([str(ragas_py), "-c", code]) or "unreadable"
    else:
        versions["ragas venv"] = "absent"
    return {
        "date_utc": sh(["date", "-u"]),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": mem,
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
        "git": sh(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]),
    }


def run_bench(name: str, args: list[str], timeout: float) -> dict[str, Any]:
    script = BENCH / BENCHES[name][0]
    if not script.exists():
        return {"status": "skipped", "reason": f"no bench/{script.name}"}
    out = RESULTS_DIR / f"{name}.json"
    tmp_out = Path(tempfile.mkstemp(prefix=f"bench-{name}-", suffix=".json")[1])
    env = dict(os.environ)
    env.setdefault("RAGAS_DO_NOT_TRACK", "true")
    cmd = [sys.executable, str(script), *args]
    if name not in NO_JSON:
        cmd += ["--json", str(tmp_out)]
    log_path = RESULTS_DIR / f"{name}.log"
    load_before = [round(x, 2) for x in os.getloadavg()]
    start = time.perf_counter()
    with log_path.open("w") as log:
        # its own session, so a timeout can stop it and everything it started
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        status, maxrss_kb = "ok", 0
        deadline = time.monotonic() + timeout
        while True:
            pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                maxrss_kb = usage.ru_maxrss
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGTERM)
                time.sleep(5)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                _, code, usage = os.wait4(proc.pid, 0)
                maxrss_kb = usage.ru_maxrss
                status = "timed out"
                break
            time.sleep(0.5)
        proc.returncode = os.waitstatus_to_exitcode(code)
    wall = time.perf_counter() - start
    if status == "ok" and proc.returncode != 0:
        status = f"failed (exit {proc.returncode})"
    record: dict[str, Any] = {
        "status": status,
        "command": " ".join([Path(sys.executable).name, f"bench/{script.name}", *args]),
        "wall_s": round(wall, 1),
        "max_rss_children_mb": round(maxrss_kb / 1024, 1),
        "load_average_before": load_before,
        "log": str(log_path.relative_to(ROOT)),
    }
    try:
        record["figures"] = json.loads(tmp_out.read_text())
    except (OSError, ValueError):
        record["figures"] = None
    tmp_out.unlink(missing_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    return record


def _record(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """A results file as :func:`run_bench` writes it; a bench's own ``--json`` output (run by
    hand, e.g. ``completeness.json``) becomes the figures of an "ok" record."""
    if "status" in data:
        return data
    script, args, _ = BENCHES[name]
    return {
        "status": "ok",
        "command": " ".join(["python", f"bench/{script}", *args, "--json", f"{name}.json"]),
        "wall_s": None,
        "log": f"bench/results/{name}.json",
        "figures": data,
    }


# ------------------------------------------------------------------------------------------
# RESULTS.md
# ------------------------------------------------------------------------------------------


def kept_sections(text: str) -> list[str]:
    """``## <title>`` sections of an existing RESULTS.md that this runner must not rewrite."""
    out = []
    chunks = re.split(r"(?m)^(?=## )", text)
    for chunk in chunks:
        m = re.match(r"## (.+)", chunk)
        if m and m.group(1).strip() in KEEP_SECTIONS:
            out.append(chunk.rstrip() + "\n")
    return out


def render_section(name: str, record: dict[str, Any]) -> str:
    """One bench's section, by its module's renderer, or a line saying why there is none."""
    _, module, function = SECTIONS[name]
    if not record.get("figures"):
        return f"{record['status']}: {record.get('reason', '')} (see `{record.get('log')}`)."
    render = getattr(importlib.import_module(module), function)
    try:
        text = render(record["figures"], record)
    except (KeyError, TypeError) as exc:
        text = f"(figures incomplete: {exc!r}; see `bench/results/{name}.json`)"
    if record["status"] != "ok":
        text += f"\n\nStatus: {record['status']} (see `{record.get('log')}`)."
    return text


def write_results(
    records: dict[str, dict[str, Any]], meta: dict[str, Any], total: float, out: Path
) -> None:
    """Write the report to ``out``, keeping the hand-written sections of ``bench/RESULTS.md``."""
    old = RESULTS_MD.read_text(encoding="utf-8") if RESULTS_MD.exists() else ""
    keep = kept_sections(old)
    v = meta["versions"]
    lines = [
        "# Benchmark results",
        "",
        f"Written by `bench/run_all.py` on **{meta['date_utc']}** (git {meta['git'] or '?'}).",
        "",
        f"Machine: {meta['cpu']}, {meta['cores']} cores, {meta['memory']} RAM, {meta['os']}, "
        f"Python {meta['python']}. Shared with other work while measured (load averages "
        "below), so absolute times are noisy; the ratios compare runs interleaved on the same "
        "machine at the same time.",
        "",
        "Packages: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".",
        "",
        f"Total wall time: **{total / 60:.1f} min** (budget {meta['budget_s'] / 60:.0f} min).",
        "",
        table(
            [
                "bench",
                "status",
                "wall s",
                "peak RSS MiB (bench / with children)",
                "load before",
                "command",
            ],
            [
                [
                    name,
                    rec["status"],
                    rec.get("wall_s"),
                    f"{fmt((rec.get('figures') or {}).get('peak_rss_mb'), 0)} / "
                    f"{fmt(rec.get('max_rss_children_mb'), 0)}",
                    " ".join(map(str, rec.get("load_average_before", []))),
                    f"`{rec.get('command', '')}`",
                ]
                for name, rec in records.items()
            ],
        ),
        "",
    ]
    for name, (title, _, _) in SECTIONS.items():
        rec = records.get(name)
        lines += [f"## {title}", "", "Not run." if rec is None else render_section(name, rec), ""]
    agreement = records.get("agreement")
    if agreement and agreement["status"] != "skipped":
        lines += [
            "## 3. Agreement harness run",
            "",
            f"`{agreement.get('command')}`: {agreement['status']} in "
            f"{fmt(agreement.get('wall_s'), 0)} s (output in `{agreement.get('log')}`). The "
            "agreement figures themselves are in the section below written by that harness.",
            "",
        ]
    lines += keep
    out.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    p.add_argument("--only", default="", help="comma-separated bench names")
    p.add_argument("--budget", type=float, default=1800.0, help="overall seconds (default 1800)")
    p.add_argument(
        "--grace",
        type=float,
        default=900.0,
        help="seconds a bench started within the budget may run past it before it is stopped "
        "(benches not started when the budget is spent are skipped)",
    )
    p.add_argument("--report-only", action="store_true", help="rewrite RESULTS.md only")
    p.add_argument(
        "--out",
        type=Path,
        default=RESULTS_MD,
        help="write the report here (default bench/RESULTS.md); the hand-written sections are "
        "still taken from bench/RESULTS.md",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help=f"also the extra benches ({', '.join(sorted(EXTRA))}); their last results are "
        "kept in RESULTS.md otherwise",
    )
    args = p.parse_args()
    RESULTS_DIR.mkdir(exist_ok=True)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or [
        n for n in BENCHES if args.all or n not in EXTRA
    ]
    unknown = set(names) - set(BENCHES)
    if unknown:
        p.error(f"unknown bench(es): {', '.join(sorted(unknown))}")
    meta = machine()
    meta["budget_s"] = args.budget
    records: dict[str, dict[str, Any]] = {}
    start = time.perf_counter()
    if not args.report_only:
        for name in names:
            left = args.budget - (time.perf_counter() - start)
            script, full, quick = BENCHES[name]
            if left < 30:
                records[name] = {"status": "skipped", "reason": "time budget spent"}
                continue
            print(f"[run_all] {name}: up to {left + args.grace:.0f} s", flush=True)
            records[name] = run_bench(name, quick if args.quick else full, left + args.grace)
            print(
                f"[run_all] {name}: {records[name]['status']} in "
                f"{records[name].get('wall_s', 0)} s",
                flush=True,
            )
            if records[name]["status"] == "skipped":
                continue
    total = time.perf_counter() - start
    # merge with earlier results of benches not run this time
    for name in BENCHES:
        if name not in records and (RESULTS_DIR / f"{name}.json").exists():
            records[name] = _record(name, json.loads((RESULTS_DIR / f"{name}.json").read_text()))
    if args.report_only:
        total = sum(rec.get("wall_s", 0) or 0 for rec in records.values())
    records = {n: records[n] for n in BENCHES if n in records}
    out = args.out.resolve()
    write_results(records, meta, total, out)
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    print(f"[run_all] wrote {shown} ({total / 60:.1f} min)")
    return 0 if all(rec["status"] in ("ok", "skipped") for rec in records.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
