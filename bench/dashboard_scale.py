"""Large runs: the dashboard on a synthetic run of 10,000, 100,000 and 1,000,000 rows, and the
CLI scoring 100,000 rows from the toy OpenAI-compatible server.

Each dashboard size runs in a process of its own (so its peak memory is its own):

1. a synthetic run (``relevancy.testing.synthetic``: 3 generated questions per row, 384-d
   float32 vectors clustered by topic, two answer variants per question, a month of times, a
   person's label on one row in 100) written to a fresh run store as a scoring run writes it
   (inputs, then results in batches of 250);
2. the store's size per row, with and without the vectors' own bytes;
3. opening the store and listing its runs, and the whole run exported to CSV in a process of
   its own (its time and peak RSS: flat across sizes when the export streams);
4. the first render of every page under ``streamlit.testing.v1.AppTest`` with the run active
   (the run caches cleared before each, as on a first visit), then one drill-down, one filter
   change and one sort change on the Dataset page, and at 10,000 rows the Embeddings page with
   all points;
5. the process's peak RSS (VmHWM);
6. with ``--browser``, the same store served by ``streamlit run`` and driven by headless
   Chromium: every page's first and warm visits, the actions a person takes, each with the
   server's and the browser's CPU and the bytes sent, and the server's peak RSS
   (``bench/_browser.py``). ``--no-apptest`` leaves out 3-5, ``--store-dir DIR`` keeps each
   size's store to use again.

The store, the pages and the actions are ``bench/_dashboard.py``'s, shared by 1-6: AppTest and
the browser time the same pages and, where both can take it, the same action.

The CLI: ``relevancy score`` as a subprocess on 10,000 and 100,000 generated rows against the
toy server (instant answers, its hashed embeddings), each run saved to a fresh run store
(``--save-run``), with its peak RSS from ``wait4`` and its rows per second; with ``--cli-into
STORE``, each size again saved into STORE (a store already holding a million rows: does writing
there keep the rate and the memory?). The "before" figures are those of the Dec 2 run, kept in
``bench/results/dashboard_scale_before.json``.

The CLI with the embedded embedder (``--local-rows``, default 500 and 3,000): questions from the
toy server, MiniLM in the process (``--llm openai:toy-chat --embeddings local``), answers of 1 to
8 sentences (:func:`sentence_rows`), peak RSS from ``wait4``; the target is 3,000 rows within
100 MiB of 500 (issue 25: 759 MiB for 500 rows and 1,180 MiB for 3,000 before the fix).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._browser import tables as browser_tables
from bench._dashboard import ACTIONS, PAGE, PAGES, build_store, size_home, timed
from bench._scale_cli import cli_run, local_run
from bench.harness import (
    RESULTS_DIR,
    ROOT,
    against,
    fmt,
    log,
    main,
    r,
    table,
    vm_hwm_mb,
)
from bench.setups import ToyServer

BEFORE = RESULTS_DIR / "dashboard_scale_before.json"
TARGETS = {  # rows -> (first render of every page, filter change, peak RSS MiB)
    10_000: (2.0, 0.5, None),
    100_000: (5.0, None, 2048.0),
    1_000_000: (3.0, 1.0, 2048.0),  # issue 38; a drill-down too, and the store per row below
}
#: KiB a row beside the vectors (issue 38), at every size
STORE_KIB_PER_ROW = 1.5


def one_size(
    n: int,
    timeout: float,
    *,
    apptest: bool = True,
    browser: bool = False,
    store_dir: Path | None = None,
    visits: int = 3,
) -> dict[str, Any]:
    """Everything for one size, in this process (run by the parent as a subprocess)."""
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "relevancy" / "numba"))
    home = size_home(n, store_dir)
    from relevancy.runs import RunStore

    run_id, built = build_store(n, home)
    out: dict[str, Any] = {"rows": n, **built}
    started = time.perf_counter()
    infos = RunStore(home / "runs.sqlite3").list_runs()
    out["store_open_list_s"] = r(time.perf_counter() - started)
    assert infos[0].n_scored == n
    if apptest:
        out.update(export_run(home / "runs.sqlite3", run_id, home))
        out.update(page_renders(run_id, n, timeout))
        out["peak_rss_mb"] = r(vm_hwm_mb(), 1)
    if browser:  # the same store served to Chromium (bench/_browser.py)
        from bench._browser import browser_figures

        out["browser"] = browser_figures(home, visits=visits)
    return out


def export_run(path: Path, run_id: int, folder: Path) -> dict[str, Any]:
    """The whole run exported to CSV (``RunStore.export``, a chunk of rows at a time) in a
    process of its own: its time and peak RSS (flat when the export streams)."""
    # the peak is the child's own VmHWM: Linux's maxrss of a spawned child (wait4) counts the
    # parent's RSS at the spawn, and this process holds the run it just wrote (it read 158 / 277
    # / 364 MiB at 10,000 / 100,000 / 1,000,000 rows where the export itself peaks at ~150)
    code = (
        "import sys; from relevancy.runs import RunStore; "
        "RunStore(sys.argv[1]).export(int(sys.argv[2]), sys.argv[3]); "
        "print(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    )
    out = folder / "export.csv"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), str(run_id), str(out)],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    size = out.stat().st_size if out.exists() else 0
    out.unlink(missing_ok=True)
    peak = float(done.stdout.split()[-2]) / 1024 if "VmHWM" in done.stdout else None
    log(f"  export to CSV: {wall:.1f} s, peak RSS {peak or 0:.0f} MiB")
    return {
        "export_exit": done.returncode,
        "export_s": r(wall),
        "export_peak_rss_mb": r(peak, 1) if peak is not None else None,
        "export_mb": r(size / 2**20, 1),
    }


def page_renders(run_id: int, n: int, timeout: float) -> dict[str, Any]:
    """Every page's first render under AppTest (``first_render``, by script file), then the
    actions AppTest takes (bench/_dashboard.py's ``ACTIONS``: each under its record key)."""
    from streamlit.testing.v1 import AppTest

    from relevancy.dashboard.widgets.state import clear_run_caches
    from relevancy.runs import SORTS

    def opened(page: str) -> AppTest:
        """A session on the run with ``page`` drawn."""
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
        at.session_state["active_run"] = run_id
        at.run()
        if page != "Home":
            at.switch_page(PAGE[page].script)
            at.run()
        return at

    renders: dict[str, Any] = {}
    for page in PAGES:
        clear_run_caches()  # a first visit: nothing of the run cached yet
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
        at.session_state["active_run"] = run_id
        if page.name != "Home":
            at.run()
            clear_run_caches()
            at.switch_page(page.script)
        renders[page.file] = {
            "s": r(timed(at.run)),
            "exceptions": [str(e.value)[:200] for e in at.exception],
        }
        log(f"  {n:,} rows, first render {page.file}: {renders[page.file]['s']} s")
    out: dict[str, Any] = {"first_render": renders}
    key = {a.name: a.apptest for a in ACTIONS}
    at = opened("Dataset")
    options = at.selectbox(key=f"ds_inspect_{run_id}").options
    inspect = at.selectbox(key=f"ds_inspect_{run_id}")
    out[key["drill-down"]] = r(timed(inspect.select_index(min(5, len(options) - 1)).run))
    out[key["filter"]] = r(timed(at.toggle(key="ds_only_low").set_value(True).run))
    # the grid sorted the other way (the store's index by score)
    out[key["sort"]] = r(timed(at.selectbox(key="ds_sort").set_value(SORTS[1]).run))
    out["interaction_exceptions"] = [str(e.value)[:200] for e in at.exception]
    if 1_500 < n <= 10_000:  # above the page's sample of 1,500 rows it offers all points
        at.switch_page(PAGE["Embeddings"].script)
        at.run()
        every = at.toggle(key=f"emb_all_{run_id}").set_value(True)
        out[key["embeddings: all points"]] = r(timed(every.run))
    if n > 1_500:  # a sample is drawn: shade where every row falls (PCA applied to every vector)
        at = opened("Embeddings")
        shade = at.toggle(key=f"emb_density_{run_id}").set_value(True)
        out[key["embeddings: shade every row"]] = r(timed(shade.run))
        out["interaction_exceptions"] += [str(e.value)[:200] for e in at.exception]
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    if args.one is not None:  # one size, in this process (the parent runs it as a subprocess)
        return one_size(
            args.one,
            args.timeout,
            apptest=not args.no_apptest,
            browser=args.browser,
            store_dir=args.store_dir,
            visits=args.visits,
        )
    out: dict[str, Any] = {"dashboard": [], "cli": []}
    for n in args.sizes:
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            cmd = [
                sys.executable,
                "-m",
                "bench.dashboard_scale",
                "--one",
                str(n),
                "--json",
                tmp.name,
                "--timeout",
                str(args.timeout),
                *(["--browser"] if args.browser else []),
                *(["--no-apptest"] if args.no_apptest else []),
                *(["--store-dir", str(args.store_dir)] if args.store_dir else []),
                *(["--visits", str(args.visits)]),
            ]
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            if done.returncode:
                out["dashboard"].append({"rows": n, "error": done.stderr[-2000:]})
                continue
            out["dashboard"].append(json.loads(Path(tmp.name).read_text()))
    if args.cli_rows:
        with tempfile.TemporaryDirectory() as folder, ToyServer() as server:
            out["cli"] = [cli_run(n, server.base_url, Path(folder)) for n in args.cli_rows]
            for n in args.cli_rows if args.cli_into else ():  # the same, into a large store
                out["cli"].append(cli_run(n, server.base_url, Path(folder), args.cli_into))
    if args.local_rows:
        with tempfile.TemporaryDirectory() as folder, ToyServer() as server:
            out["local"] = [local_run(n, server.base_url, Path(folder)) for n in args.local_rows]
    return out


def _before() -> dict[str, Any]:
    try:
        return json.loads(BEFORE.read_text())["figures"]
    except (OSError, ValueError, KeyError):
        return {}


def tables(fig: dict[str, Any]) -> dict[str, str]:
    """Each size beside the Dec 2 figures, each size against its targets, the CLI's runs."""
    before = _before()
    steps = before.get("steps", {})
    first = before.get("apptest_first_render", {})
    sizes = [d for d in fig.get("dashboard", []) if "error" not in d]
    rows: list[list[Any]] = []

    def line(label: str, old: Any, key: Any, digits: int = 2) -> None:
        values = [key(d) if callable(key) else d.get(key) for d in sizes]
        rows.append([label, *(fmt(v, digits) for v in (old, *values))])

    line(
        "store write (inputs, then results in batches of 250), s",
        (steps.get("store_write") or {}).get("s"),
        "store_write_s",
    )
    line("store size, MiB", before.get("store_file_mb"), "store_mb", 1)
    line(
        "store per row, KiB (without the 6 KiB of float32 vectors)",
        None,
        "store_kib_per_row_without_vectors",
    )
    line(
        "open the store and list its runs, s",
        (steps.get("store_load_run") or {}).get("s"),
        "store_open_list_s",
    )
    for page in PAGES:
        line(
            f"first render `{page.file}`, s",
            first.get(page.file.removesuffix(".py"), {}).get("s"),
            lambda d, p=page.file: d["first_render"].get(p, {}).get("s"),
        )
    line("one drill-down (Dataset), s", None, "drilldown_s")
    line(
        "one filter change (Dataset), s",
        before.get("apptest_rerender_dataset_s"),
        "filter_change_s",
    )
    line("one sort change (Dataset, highest score first), s", None, "sort_change_s")
    line("Embeddings with all points (WebGL), s", None, "embeddings_all_points_s")
    line(
        "Embeddings: shade every row (the sample's PCA, every vector), s",
        None,
        "embeddings_density_s",
    )
    line("export the whole run to CSV (own process), s", None, "export_s")
    line("export: peak RSS of its process, MiB", None, "export_peak_rss_mb", 0)
    line("peak RSS, MiB", before.get("peak_rss_mb"), "peak_rss_mb", 0)
    targets = []
    for d in sizes:
        render, change, rss = TARGETS.get(d["rows"], (None, None, None))
        n = f"{d['rows']:,} rows"
        slowest = max((v.get("s") or 0) for v in d["first_render"].values())
        if render is not None:
            targets.append(
                (f"{n}: slowest first render, s", slowest, f"≤ {render:g}", slowest <= render)
            )
        if change is not None:
            targets.append(
                (
                    f"{n}: filter change, s",
                    d.get("filter_change_s"),
                    f"≤ {change:g}",
                    d.get("filter_change_s", 99) <= change,
                )
            )
        if rss is not None:
            targets.append(
                (
                    f"{n}: peak RSS, MiB",
                    d.get("peak_rss_mb"),
                    f"≤ {rss:,.0f}",
                    d.get("peak_rss_mb", 1e9) <= rss,
                )
            )
        if d["rows"] >= 1_000_000:
            drill = d.get("drilldown_s")
            targets.append((f"{n}: drill-down, s", drill, "≤ 1", (drill or 99) <= 1))
            if (turn := d.get("sort_change_s")) is not None:  # measured since Dec 6, night
                targets.append((f"{n}: sort change, s", turn, "≤ 1", turn <= 1))
        kib = d.get("store_kib_per_row_without_vectors")
        targets.append(
            (
                f"{n}: store per row beside the vectors, KiB",
                kib,
                f"≤ {STORE_KIB_PER_ROW:g}",
                kib <= STORE_KIB_PER_ROW,
            )
        )
        targets += [
            (f"{n}, {p}: exceptions", "; ".join(v["exceptions"]), "none", False)
            for p, v in d["first_render"].items()
            if v.get("exceptions")
        ]
    targets += [
        (f"{d['rows']:,} rows: failed", d["error"][-300:], "", False)
        for d in fig.get("dashboard", [])
        if "error" in d
    ]
    head = ["", "before: 10,000 rows (Dec 2)", *(f"{d['rows']:,} rows" for d in sizes)]
    cli = table(
        [
            "rows",
            "store held",
            "saved",
            "exit",
            "wall s",
            "rows/s",
            "peak RSS MiB",
            "highest RSS in each quarter of the run, MiB",
            "median RSS in each quarter, MiB",
        ],
        [
            [
                f"{c['rows']:,}",
                fmt(c.get("store_rows_before"), 0),
                fmt(c.get("store_rows_saved"), 0),
                c.get("exit"),
                fmt(c.get("wall_s"), 0),
                fmt(c.get("rows_per_s"), 1),
                fmt(c.get("peak_rss_mb"), 0),
                " / ".join(fmt(q, 0) for q in c.get("rss_quarters_mb") or []) or "–",
                " / ".join(fmt(q, 0) for q in c.get("rss_quarters_median_mb") or []) or "–",
            ]
            for c in fig.get("cli") or []
        ],
    )
    cli_goals = cli_targets(fig.get("cli") or [])
    if cli_goals:
        cli += "\n\n" + against(cli_goals)
    local = fig.get("local") or []
    blocks = {"": table(head, rows) + "\n\n" + against(targets), "cli": cli}
    if browsed := browser_tables(fig.get("dashboard", [])):
        blocks["browser"] = browsed
    if local:
        # the target's sizes (500 and 3,000); a larger run beside them shows where it levels off
        small = next((c for c in local if c["rows"] == 500), local[0])
        large = next((c for c in local if c["rows"] == 3_000), local[-1])
        grows = (large.get("peak_rss_mb") or 0) - (small.get("peak_rss_mb") or 0)
        beyond = [
            (
                f"peak RSS, {c['rows']:,} rows less {large['rows']:,} rows, MiB",
                (c.get("peak_rss_mb") or 0) - (large.get("peak_rss_mb") or 0),
                "–",
                None,
            )
            for c in local
            if c["rows"] > large["rows"]
        ]
        blocks["local"] = (
            table(
                ["rows", "exit", "wall s", "rows/s", "peak RSS MiB"],
                [
                    [
                        f"{c['rows']:,}",
                        c.get("exit"),
                        fmt(c.get("wall_s"), 0),
                        fmt(c.get("rows_per_s"), 2),
                        fmt(c.get("peak_rss_mb"), 0),
                    ]
                    for c in local
                ],
            )
            + "\n\n"
            + against(
                [
                    (
                        f"peak RSS, {large['rows']:,} rows less {small['rows']:,} rows, MiB",
                        grows,
                        "≤ 100",
                        grows <= 100,
                    ),
                    *beyond,
                ]
            )
        )
    return blocks


#: issue 38: a million rows from ``relevancy score`` at a rate within 10% of 10,000 rows', its
#: memory flat: the median RSS of the run's last quarter within 10% of its first quarter's
CLI_RATE_WITHIN = 0.10
CLI_MEMORY_WITHIN = 0.10


def cli_targets(runs: list[dict[str, Any]]) -> list[tuple[str, Any, str, bool | None]]:
    """Each fresh-store CLI run of 1,000,000 rows or more against the fresh 10,000-row run of
    the same bench: its rate, and its memory from the first quarter of the run to the last.

    >>> runs = [{"rows": 10_000, "store_rows_before": 0, "rows_per_s": 100.0},
    ...         {"rows": 1_000_000, "store_rows_before": 0, "rows_per_s": 95.0,
    ...          "rss_quarters_median_mb": [300, 310, 320, 330]}]
    >>> [(k, v, ok) for k, v, _, ok in cli_targets(runs)]  # doctest: +NORMALIZE_WHITESPACE
    [('1,000,000 rows: rows/s against 10,000 rows', 0.95, True),
     ('1,000,000 rows: median RSS, last quarter against the first', 1.1, True)]
    """
    fresh = [c for c in runs if not c.get("store_rows_before") and c.get("rows_per_s")]
    base = next((c for c in fresh if c["rows"] == 10_000), None)
    out: list[tuple[str, Any, str, bool | None]] = []
    for c in fresh:
        if c["rows"] < 1_000_000 or base is None:
            continue
        n = f"{c['rows']:,} rows"
        ratio = round(c["rows_per_s"] / base["rows_per_s"], 3)
        out.append(
            (
                f"{n}: rows/s against 10,000 rows",
                ratio,
                f"≥ {1 - CLI_RATE_WITHIN:g}",
                ratio >= 1 - CLI_RATE_WITHIN,
            )
        )
        medians = c.get("rss_quarters_median_mb") or []
        if len(medians) == 4 and medians[0]:
            growth = round(medians[-1] / medians[0], 3)
            out.append(
                (
                    f"{n}: median RSS, last quarter against the first",
                    growth,
                    f"≤ {1 + CLI_MEMORY_WITHIN:g}",
                    growth <= 1 + CLI_MEMORY_WITHIN,
                )
            )
    return out


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes", type=int, nargs="*", default=[10_000, 100_000], help="dashboard run sizes"
    )
    p.add_argument(
        "--cli-rows",
        type=int,
        nargs="*",
        default=[10_000, 100_000],
        help="CLI run sizes (none: skip)",
    )
    p.add_argument(
        "--local-rows",
        type=int,
        nargs="*",
        default=[500, 3_000],
        help="CLI run sizes with the embedded embedder, answers of 1-8 sentences (none: skip)",
    )
    p.add_argument(
        "--cli-into",
        type=Path,
        default=None,
        metavar="STORE",
        help="also run each CLI size saving its run into this run store (one already holding "
        "a million rows: the rate and memory of writing there)",
    )
    p.add_argument("--timeout", type=float, default=600.0, help="AppTest timeout per page")
    p.add_argument(
        "--browser",
        action="store_true",
        help="also serve each size's store and time every page and action in headless "
        "Chromium (bench/_browser.py): the per-size 'browser' figures",
    )
    p.add_argument(
        "--visits",
        type=int,
        default=3,
        help="with --browser: warm visits of each page, and times each action is taken (default 3)",
    )
    p.add_argument(
        "--no-apptest",
        action="store_true",
        help="skip the AppTest renders and the export (with --browser: the browser alone)",
    )
    p.add_argument(
        "--store-dir",
        type=Path,
        default=None,
        help="keep each size's store in DIR/N and use it again when it is there (a million "
        "rows take minutes to write)",
    )
    p.add_argument("--one", type=int, default=None, help="internal: one size, in this process")


if __name__ == "__main__":
    quick = ["--sizes", "300", "--cli-rows", "300", "--local-rows", "40", "120"]
    raise SystemExit(main("dashboard_scale", measure, arguments, quick=quick))
