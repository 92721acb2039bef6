"""Run every benchmark and write ``bench/RESULTS.md``.

    .venv/bin/python bench/run_all.py            # full sizes, 25-35 minutes on 2 cores
    .venv/bin/python bench/run_all.py --quick    # tiny sizes: checks that everything runs
    .venv/bin/python bench/run_all.py --only cache,dashboard_scale
    .venv/bin/python bench/run_all.py --report-only   # rewrite RESULTS.md from bench/results/

Each bench is a subprocess (so its peak RSS is its own) and writes
``bench/results/<name>.json``. Benches start while the overall budget (``--budget``, default
1,800 s) is not spent; one that runs more than ``--grace`` seconds past it is stopped.
``RESULTS.md`` is regenerated from those files; sections written by hand or by other benches
(``## Agreement with people``, ``## Stability``, ``## Findings and proposals``) are kept as
they are.
"""

from __future__ import annotations

import argparse
import contextlib
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
RESULTS_DIR = BENCH / "results"
RESULTS_MD = BENCH / "RESULTS.md"
#: measured once and kept (their last JSON is re-rendered); run them with --all or --only
EXTRA = {"omp_wait", "speedups"}
NO_JSON = {"agreement"}  # benches that print figures but take no --json
KEEP_SECTIONS = ("Agreement with people", "Stability", "Findings and proposals")

# name -> (script, full-size args, quick args, share of the budget it may plan on)
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
    "cache": (
        "cache.py",
        ["--rows", "1000", "--embedded-rows", "12"],
        ["--rows", "40", "--embedded-rows", "2"],
    ),
    "dashboard_scale": ("dashboard_scale.py", ["--rows", "10000"], ["--rows", "300"]),
    # the agreement harness (another engineer's): its cheap step, the baselines; its own
    # report goes in the "Agreement with people" section, which is kept as written
    "agreement": (
        "agreement.py",
        ["baselines", "--subset", "heldout", "--out", "/tmp/bench-agreement"],
        ["baselines", "--subset", "dev", "--out", "/tmp/bench-agreement"],
    ),
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
    # candidate speed-ups (prototypes and settings), beyond the benches
    "speedups": (
        "throughput.py",
        [
            "--rows",
            "0",
            "--variants",
            "parallel,lazy,parallel_lazy,gt1,rowlock,c1,et1",
            "--variant-rows",
            "24",
            "--api-rows",
            "300",
        ],
        [
            "--rows",
            "0",
            "--variants",
            "parallel_lazy,gt1,rowlock",
            "--variant-rows",
            "2",
            "--api-rows",
            "20",
        ],
    ),
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


# ------------------------------------------------------------------------------------------
# RESULTS.md
# ------------------------------------------------------------------------------------------


def f(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if abs(value) and abs(value) < 10 ** (-digits):
            return f"{value:.1e}"
        return f"{value:,.{digits}f}"
    return str(value)


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join(f(c) if not isinstance(c, str) else c for c in r) + " |" for r in rows
    ]
    return "\n".join(lines)


def section_throughput(fig: dict[str, Any]) -> str:
    fl, o = fig["floor"], fig["ours"]
    sp = o["split_s"]
    pct = o["split_pct"]
    parts = [
        f"{fig['rows']} rows, strictness {fig['strictness']}, our concurrency "
        f"{fig['concurrency']}, llama.cpp threads {fig['threads']['llama']}, onnxruntime "
        f"threads {fig['threads']['onnx']}; floor and ours alternate in chunks on the same rows "
        "(same model object, same prompts, grammar, seeds, max_tokens).",
        "",
        table(
            ["", "wall s", "pairs/s", "p50 row s", "p95 row s"],
            [
                [
                    "floor: llama-cpp-python alone",
                    fl["wall_s"],
                    fl["pairs_per_s"],
                    fl["p50_row_s"],
                    fl["p95_row_s"],
                ],
                [
                    "ours: `AnswerRelevancy().score_many`",
                    o["wall_s"],
                    o["pairs_per_s"],
                    o["p50_row_s"],
                    o["p95_row_s"],
                ],
            ],
        ),
        "",
        f"**ours / floor = {f(fig['ours_over_floor'])}x** (goal: at most 1.1x); median "
        f"over the {len(fig.get('ours_over_floor_per_chunk', []))} chunk pairs "
        f"{f(fig.get('ours_over_floor_median_chunk'))}x (per chunk: "
        f"{', '.join(f(x) for x in fig.get('ours_over_floor_per_chunk', []))}). "
        f"Questions identical to the floor's: {o['questions_identical_to_floor']}; "
        f"NaN rows: {o['nan_rows']}.",
        "",
        "Where our wall time went (each layer counts only time when no earlier layer was busy):",
        "",
        table(
            ["generation", "embedding (outside generation)", "cache", "overhead"],
            [
                [
                    f"{f(sp[k])} s ({f(pct[k], 1)}%)"
                    for k in ("generation", "embedding", "cache", "overhead")
                ]
            ],
        ),
        "",
        f"Embedding was busy {f(o['embedding_busy_s'])} s in all, mostly overlapping "
        f"generation; {o['embed_backend_calls']} backend calls for {o['embed_backend_texts']} "
        f"texts. Model load {f(fig['model_load_s'])} s; RSS after load "
        f"{f(fig['rss_after_load_mb'], 0)} MiB; peak RSS {f(fig['peak_rss_mb'], 0)} MiB. "
        f"Floor tokens: {fl['prompt_tokens']} prompt (counted, most reused from the KV cache), "
        f"{fl['completion_tokens']} completion, {fl['llama_calls']} calls. Both sides ran "
        f"with OMP_WAIT_POLICY={fig.get('omp_wait_policy', '?')} (see the OpenMP section).",
    ]
    if fig.get("variants") or fig.get("instant_api"):
        parts += ["", section_speedups(fig)]
    return "\n".join(parts)


def section_speedups(fig: dict[str, Any]) -> str:
    parts: list[str] = []
    v = fig.get("variants")
    if v:
        rows = []
        for name, d in v.items():
            if not isinstance(d, dict):
                continue
            uq = d.get("usable_questions") or {}
            ms = d.get("mean_score") or {}
            rows.append(
                [
                    f"`{name}`",
                    d["what"],
                    d["level"],
                    d["default_s"],
                    d["variant_s"],
                    f"**{f(d['variant_over_default'])}**",
                    f"{uq.get('default')} / {uq.get('variant')}" if uq else "–",
                    d.get("questions_identical_to_default", "–"),
                    f"{f(ms.get('default'))} / {f(ms.get('variant'))}" if ms else "–",
                    d.get("mean_abs_score_diff"),
                ]
            )
        parts += [
            f"Candidate speed-ups on {v['rows']} rows not used above, each against the default "
            "on the same rows at the same time (generator level: order alternating row by row; "
            "metric level: alternating chunks). Scores: same MiniLM, noncommittal off.",
            "",
            table(
                [
                    "variant",
                    "what",
                    "level",
                    "default s",
                    "variant s",
                    "variant / default",
                    "usable questions (default / variant)",
                    "same questions as default",
                    "mean score (default / variant)",
                    "mean abs score diff",
                ],
                rows,
            ),
        ]
    api = fig.get("instant_api")
    if api:
        rows = []
        for k, d in api.items():
            if not isinstance(d, dict):
                continue
            sp = d["split_s"]
            rows.append(
                [
                    k[1:],
                    d["pairs_per_s"],
                    d["wall_s"],
                    sp["embedding"],
                    sp["generation"],
                    sp["cache"],
                    sp["overhead"],
                    d["embed_backend_calls"],
                    d["texts_per_embed_call"],
                    d["nan_rows"],
                ]
            )
        parts += [
            "",
            "Ours behind an OpenAI-compatible server that answers instantly (the toy server, "
            f"{api['rows']} rows, MiniLM int8 embeddings): our own per-row work by concurrency.",
            "",
            table(
                [
                    "concurrency",
                    "pairs/s",
                    "wall s",
                    "embedding s",
                    "generation (HTTP) s",
                    "cache s",
                    "overhead s",
                    "embed calls",
                    "texts per call",
                    "NaN rows",
                ],
                rows,
            ),
        ]
    return "\n".join(parts)


def section_omp(fig: dict[str, Any]) -> str:
    d, p = fig["default"], fig["passive"]
    return "\n".join(
        [
            f"The throughput comparison on {fig['rows']} rows, once per libgomp waiting policy "
            "(separate processes, one after the other):",
            "",
            table(
                ["OMP_WAIT_POLICY", "floor s", "ours s", "ours / floor", "load at end"],
                [
                    [
                        "libgomp default (busy-wait)",
                        d["floor_s"],
                        d["ours_s"],
                        d["ours_over_floor"],
                        " ".join(map(str, d.get("load_average_end") or [])),
                    ],
                    [
                        "PASSIVE",
                        p["floor_s"],
                        p["ours_s"],
                        p["ours_over_floor"],
                        " ".join(map(str, p.get("load_average_end") or [])),
                    ],
                ],
            ),
            "",
            f"Floor default/passive: {f(fig['floor_default_over_passive'])}x; ours "
            f"default/passive: {f(fig['ours_default_over_passive'])}x.",
        ]
    )


_SERVER_SPLIT_KEYS = (
    "requests_per_row",
    "prompt_tokens_reused_per_row",
    "prompt_tokens_evaluated_per_row",
    "completion_tokens_per_row",
    "server_s_per_row",
    "prompt_eval_s_per_row",
    "decode_s_per_row",
    "other_s_per_row",
)


def section_vs_ragas(fig: dict[str, Any]) -> str:
    o = fig["ours"]
    parts = [
        f"{fig['rows']} rows, strictness {fig['strictness']}, one llama-cpp-python server "
        "(SmolLM2-135M Q4_1, n_threads 2, n_ctx 4096) shared by both, the same MiniLM int8 "
        "embeddings on both sides, alternating chunks.",
        "",
    ]
    rows = [
        [
            "ours (" + o["backend"] + f", concurrency {o['concurrency']})",
            o["pairs_per_s"],
            o["nan_rows"],
            o["zeroed_noncommittal"],
            o["identical_3_questions"],
            o["p50_row_s"],
            o["p95_row_s"],
        ]
    ]
    m = fig.get("ours_multi")
    if m:
        rows.append(
            [
                f"ours, {m['backend']}",
                m["pairs_per_s"],
                m["nan_rows"],
                m["zeroed_noncommittal"],
                m["identical_3_questions"],
                m["p50_row_s"],
                m["p95_row_s"],
            ]
        )
    g = fig.get("ragas")
    if g:
        rows.append(
            [
                f"Ragas {g.get('ragas_version', '')} ({g['setup']}, concurrency "
                f"{g.get('concurrency')})",
                g["pairs_per_s"],
                g["nan_rows"],
                g["zeroed_noncommittal"],
                g["identical_3_questions"],
                g["p50_row_s"],
                g["p95_row_s"],
            ]
        )
    parts.append(
        table(
            [
                "",
                "pairs/s",
                "NaN rows",
                "zeroed (noncommittal)",
                "3 identical questions",
                "p50 row s",
                "p95 row s",
            ],
            rows,
        )
    )
    if g:
        parts += [
            "",
            f"**ours / Ragas pairs/s = {f(fig['ours_over_ragas_pairs_per_s'])}x** (goal: at "
            "least 3x, with fewer NaN rows)"
            + (
                f"; with all questions in one request (prototype): "
                f"**{f(fig.get('multi_over_ragas_pairs_per_s'))}x**"
                if m
                else ""
            )
            + f". Per chunk, ours/Ragas: "
            f"{', '.join(f(x) for x in fig.get('ours_over_ragas_per_chunk', []))}. "
            f"Pearson correlation of our "
            f"and Ragas' scores over rows both scored: "
            f"{f(fig.get('score_correlation_pearson'))}; mean score ours "
            f"{f(fig.get('mean_score', {}).get('ours'))}, Ragas "
            f"{f(fig.get('mean_score', {}).get('ragas'))}"
            + (
                f", one-request prototype {f(fig.get('mean_score', {}).get('multi'))} "
                f"(correlation with ours {f(fig.get('multi_vs_ours_score_pearson'))})"
                if m
                else ""
            )
            + ".",
        ]
        split_rows = [
            [label, *(d["server"].get(k) for k in _SERVER_SPLIT_KEYS)]
            for label, d in (("ours", o), ("one-request prototype", m), ("Ragas", g))
            if d and d.get("server")
        ]
        if split_rows:
            parts += [
                "",
                "Where the server's time goes, per row (from the server's own log):",
                "",
                table(
                    [
                        "",
                        "requests",
                        "prompt tokens reused",
                        "prompt tokens evaluated",
                        "completion tokens",
                        "server s",
                        "prompt eval s",
                        "decode s",
                        "other s (sampling, grammar)",
                    ],
                    split_rows,
                ),
            ]
    elif fig.get("ragas_skipped"):
        parts += ["", f"Ragas side skipped: {fig['ragas_skipped']}"]
    sw = fig.get("ours_concurrency_sweep")
    if sw:
        parts += [
            "",
            f"Our concurrency against this one-request-at-a-time server ({sw['rows']} rows): "
            + ", ".join(f"{k.split('_')[0]} {f(v)} pairs/s" for k, v in sw.items() if k != "rows"),
        ]
    par = fig.get("parity")
    if par:
        parts += [
            "",
            f"**Parity**: {par['cases']} cases ({par['from_run']} from this run's real "
            "questions, flags and MiniLM vectors, the rest random: negative cosines, "
            "unnormalised vectors, 1-5 questions, all/some/no flags) fed to our "
            "`cosine_similarities` + `relevancy_score` and to Ragas' scoring code: max |diff| "
            f"legacy `ResponseRelevancy._calculate_score` {f(par.get('max_abs_diff_legacy'))}, "
            f"collections `AnswerRelevancy.ascore` {f(par.get('max_abs_diff_collections'))} "
            "(goal: below 1e-9).",
        ]
    st = fig.get("stock")
    if st:
        rows = []
        for key, label in (
            ("ours_as_shipped", "ours as shipped (`make_generator('openai:…')`)"),
            ("ragas_stock", "Ragas stock: " + st.get("ragas_stock", {}).get("setup", "")),
            ("ragas_legacy", "Ragas legacy: " + st.get("ragas_legacy", {}).get("setup", "")),
        ):
            d = st.get(key)
            if d:
                errs = "; ".join(
                    e.replace("|", "/").replace("\n", " ") for e in d.get("errors", [])
                )
                rows.append([label, f"{d['nan_rows']}/{st['rows']}", d["wall_s"], errs[:160]])
        parts += [
            "",
            f"Stock set-ups on {st['rows']} rows "
            f"(per-row time limit {f(st['row_timeout_s'], 0)} s):",
            "",
            table(["set-up", "NaN rows", "wall s", "errors"], rows),
        ]
    srv = fig.get("server", {})
    parts += [
        "",
        f"Server start {f(srv.get('start_s'))} s, server peak RSS "
        f"{f(srv.get('peak_rss_mb'), 0)} MiB; our process peak RSS "
        f"{f(fig.get('peak_rss_mb'), 0)} MiB"
        + (
            f"; Ragas process peak RSS {f(g.get('peak_rss_mb'), 0)} MiB "
            f"(import {f(g.get('import_s'))} s, not counted)."
            if g
            else "."
        ),
    ]
    return "\n".join(parts)


def section_cache(fig: dict[str, Any]) -> str:
    rows = []
    for key in ("api", "embedded"):
        d = fig.get(key)
        if d:
            rows.append(
                [
                    d["generator"],
                    d["rows"],
                    d["first_s"],
                    d["rerun_s"],
                    d["first_pairs_per_s"],
                    d["rerun_pairs_per_s"],
                    f"**{f(d['first_over_rerun'], 1)}x**",
                    d["rerun_rows_from_cache"],
                    str(d["rerun_values_identical"]),
                    d["cache_file_mb"],
                ]
            )
    return "\n".join(
        [
            "Fresh cache folder; the re-run is a new `AnswerRelevancy` on the same folder.",
            "",
            table(
                [
                    "set-up",
                    "rows",
                    "first s",
                    "re-run s",
                    "first pairs/s",
                    "re-run pairs/s",
                    "first / re-run",
                    "re-run rows from cache",
                    "same values",
                    "cache MiB",
                ],
                rows,
            ),
            "",
            "The toy server answers instantly, so the `api` ratio is a lower bound for a real "
            f"API. Peak RSS {f(fig.get('peak_rss_mb'), 0)} MiB.",
        ]
    )


def section_dashboard(fig: dict[str, Any]) -> str:
    s = fig.get("steps", {})
    rows = []
    names = {
        "build_results": "build synthetic results (bench only)",
        "store_write": "run store: create_run + append_results (batches of 250)",
        "store_load_run": "run store: load_run",
        "store_json_encode": "JSON-encoding the results alone (`store._result_json`)",
        "cache_data_hit_copy": "`st.cache_data` hit: an unpickled copy of the RunData",
        "build_points": "projection.build_points",
        "pca_2d": "PCA 2D (`projection.pca`, SVD of the n x 384 matrix)",
        "pca_2d_covariance_eigh": "PCA 2D via eigh of the 384 x 384 covariance (alternative)",
        "umap_import": "`import umap` (numba)",
        "umap_warmup_fit_200": "UMAP warm-up fit, 200 points (numba compile)",
        "umap_2d": "UMAP 2D, all points",
        "umap_2d_5000_points": "UMAP 2D, a 5,000-point sample",
    }
    for key, label in names.items():
        d = s.get(key)
        if d:
            rows.append([label, d.get("s", d.get("error")), d.get("rss_mb")])
    for name, d in (fig.get("apptest_first_render") or {}).items():
        exc = "; ".join(d.get("exceptions", []))[:120]
        rows.append(
            [
                f"AppTest first render `{name}`" + (f" (exception: {exc})" if exc else ""),
                d.get("s", d.get("skipped")),
                d.get("rss_mb"),
            ]
        )
    if fig.get("apptest_rerender_dataset_s") is not None:
        rows.append(
            ["AppTest re-render `1_Dataset` (cached run)", fig["apptest_rerender_dataset_s"], None]
        )
    for name, d in (fig.get("apptest_cache_resource_variant") or {}).items():
        if isinstance(d, dict):
            rows.append(
                [
                    f"AppTest `{name}` with the run in `st.cache_resource` (bench-side patch)",
                    d.get("s"),
                    d.get("rss_mb"),
                ]
            )
    extra = [fig[k] for k in ("store_skipped", "umap_skipped", "apptest_skipped") if k in fig]
    return "\n".join(
        [
            f"{fig['rows']:,} synthetic rows (3 questions each, 384-d vectors clustered by topic, "
            f"two variants per question) = {f(fig.get('points'), 0)} points to project; store "
            f"file {f(fig.get('store_file_mb'), 1)} MiB.",
            "",
            table(["step", "seconds", "RSS after, MiB"], rows),
            "",
            f"Peak RSS {f(fig.get('peak_rss_mb'), 0)} MiB (one process: store, projections and "
            "AppTest)." + (" Skipped: " + "; ".join(extra) if extra else ""),
        ]
    )


def section_modes(fig: dict[str, Any]) -> str:
    return (
        f"{fig['rows']} rows ({fig['source']}, {fig['sentences_per_row']} sentences per answer "
        "on average) scored in both modes with the embedded default, no cache, alternating "
        "chunks:\n\n"
        + table(
            ["mode", "s per row"],
            [["ragas", fig["ragas_s_per_row"]], ["focus", fig["focus_s_per_row"]]],
        )
        + f"\n\nfocus / ragas = **{f(fig['focus_over_ragas'])}x** (focus adds one embedding "
        "call for the answer's sentences; the generations are the same). Rows whose Ragas value "
        f"was identical in both runs: {fig['ragas_value_identical_rows']}/{fig['rows']}."
    )


def section_noncommittal(fig: dict[str, Any]) -> str:
    ex = fig["exemplars"]
    before, after = ex["response_only"]["heldout_at_0.6"], ex["with_question_words_out"]
    shipped = after["heldout_at_chosen"]
    kinds = list(shipped["by_kind"])

    def ci(x: dict[str, Any]) -> str:
        lo, hi = x["accuracy_ci"]
        return f"{f(x['accuracy'])} ({f(lo)}-{f(hi)})"

    rows = [
        [
            "exemplars, the response only, threshold 0.6 (before)",
            ci(before),
            f(before["recall"]),
            before["false_zeroes"],
            *[before["by_kind"][k] for k in kinds],
        ],
        [
            "exemplars, the response only, threshold "
            f"{ex['response_only']['chosen_on_dev']} (chosen on dev)",
            ci(ex["response_only"]["heldout_at_chosen"]),
            f(ex["response_only"]["heldout_at_chosen"]["recall"]),
            ex["response_only"]["heldout_at_chosen"]["false_zeroes"],
            *[ex["response_only"]["heldout_at_chosen"]["by_kind"][k] for k in kinds],
        ],
        [
            f"**exemplars, also without the question's words, threshold {after['chosen_on_dev']}"
            " (shipped)**",
            ci(shipped),
            f(shipped["recall"]),
            shipped["false_zeroes"],
            *[shipped["by_kind"][k] for k in kinds],
        ],
    ]
    out = (
        f"A labelled set written for this bench (`bench/noncommittal_set.jsonl`, {fig['items']} "
        f"answers, {fig['noncommittal']} noncommittal), split by id: {fig['dev_items']} to choose "
        f"the threshold (the best balanced accuracy that zeroes no real answer), "
        f"{fig['heldout_items']} held out. Held-out figures, accuracy with a 95% bootstrap CI; "
        "per kind, items judged right:\n\n"
        + table(["detector", "accuracy", "recall", "real answers zeroed", *kinds], rows)
    )
    demo = ex.get("demo")
    if demo:
        b, a = demo["response_only_at_0.6"], demo["shipped"]
        out += (
            f"\n\nThe shipped demo ({demo['rows']} rows, {demo['evasive']} hand-labelled "
            "evasive; not used to choose anything): evasive answers caught "
            f"{demo['evasive'] - b['missed']}/{demo['evasive']} before, "
            f"{demo['evasive'] - a['missed']}/{demo['evasive']} now; real answers zeroed "
            f"{b['false_zeroes']} before, {a['false_zeroes']} now."
        )
    llm = fig.get("llm")
    if llm:
        names = [k for k, v in llm.items() if isinstance(v, dict)]
        out += (
            "\n\nSmolLM2-135M's own flag through the API prompt (what an OpenAI-compatible "
            f"server running it returns; JSON-schema grammar, {llm['strictness']} samples at "
            f"temperature {llm['temperature']}), on all {fig['items']} items, for each order of "
            "the prompt's few-shot examples:\n\n"
            + table(
                [
                    "few-shot examples",
                    "accuracy, all samples flagged (Ragas' rule)",
                    "accuracy, any sample flagged",
                    "per sample",
                    "French questions for English answers",
                ],
                [
                    [
                        f"**{n} (shipped)**" if llm[n]["shipped"] else n,
                        ci(llm[n]["all_flagged"]),
                        f(llm[n]["any_flagged"]["accuracy"]),
                        f(llm[n]["per_sample_accuracy"]),
                        f"{llm[n]['french_questions']}/{llm[n]['questions']}",
                    ]
                    for n in names
                ],
            )
            + "\n\nThe small model's flag is at chance whatever the order, which is why the "
            "embedded default uses the exemplar detector. The order matters for the language: "
            "with the French example right before the response, the model wrote French "
            "questions for English answers."
        )
    return out


SECTIONS = {
    "throughput": ("1. Throughput, embedded default", section_throughput),
    "vs_ragas": ("2. Against Ragas on the same server", section_vs_ragas),
    "dashboard_scale": ("4. Dashboard at scale", section_dashboard),
    "cache": ("5. Cache", section_cache),
    "modes": ("Time per row of each scoring mode", section_modes),
    "noncommittal": ("Noncommittal detection", section_noncommittal),
    "speedups": ("Speed-ups tried", section_speedups),
    "omp_wait": ("OpenMP waiting policy (measurement trap and proposal)", section_omp),
}


def kept_sections(text: str) -> list[str]:
    """``## <title>`` sections of an existing RESULTS.md that this runner must not rewrite."""
    out = []
    chunks = re.split(r"(?m)^(?=## )", text)
    for chunk in chunks:
        m = re.match(r"## (.+)", chunk)
        if m and m.group(1).strip() in KEEP_SECTIONS:
            out.append(chunk.rstrip() + "\n")
    return out


def write_results(records: dict[str, dict[str, Any]], meta: dict[str, Any], total: float) -> None:
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
                    f"{f((rec.get('figures') or {}).get('peak_rss_mb'), 0)} / "
                    f"{f(rec.get('max_rss_children_mb'), 0)}",
                    " ".join(map(str, rec.get("load_average_before", []))),
                    f"`{rec.get('command', '')}`",
                ]
                for name, rec in records.items()
            ],
        ),
        "",
    ]
    for name, (title, render) in SECTIONS.items():
        rec = records.get(name)
        lines.append(f"## {title}")
        lines.append("")
        if rec is None:
            lines.append("Not run.")
        elif rec.get("figures"):
            try:
                lines.append(render(rec["figures"]))
            except (KeyError, TypeError) as exc:
                lines.append(f"(figures incomplete: {exc!r}; see `bench/results/{name}.json`)")
            if rec["status"] != "ok":
                lines.append(f"\nStatus: {rec['status']} (see `{rec.get('log')}`).")
        else:
            lines.append(f"{rec['status']}: {rec.get('reason', '')} (see `{rec.get('log')}`).")
        lines.append("")
    agreement = records.get("agreement")
    if agreement and agreement["status"] != "skipped":
        lines += [
            "## 3. Agreement harness run",
            "",
            f"`{agreement.get('command')}`: {agreement['status']} in "
            f"{f(agreement.get('wall_s'), 0)} s (output in `{agreement.get('log')}`). The "
            "agreement figures themselves are in the section below written by that harness.",
            "",
        ]
    lines += keep
    RESULTS_MD.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


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
            records[name] = json.loads((RESULTS_DIR / f"{name}.json").read_text())
    if args.report_only:
        total = sum(rec.get("wall_s", 0) or 0 for rec in records.values())
    records = {n: records[n] for n in BENCHES if n in records}
    write_results(records, meta, total)
    print(f"[run_all] wrote {RESULTS_MD.relative_to(ROOT)} ({total / 60:.1f} min)")
    return 0 if all(rec["status"] in ("ok", "skipped") for rec in records.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
