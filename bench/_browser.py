"""The dashboard as a person sees it: ``python -m bench.dashboard_scale --browser``.

The store ``bench.dashboard_scale`` built for a size is served by ``streamlit run app.py`` and
driven by headless Chromium (Playwright, Debian's ``/usr/bin/chromium``):

* **pages**: Home and every page, each on a server of its own just started (so nothing of the
  run is cached): a warm-up visit of another page (the imports, the store opened), then the
  page's first visit, then three warm visits, each in a new tab (a new Streamlit session);
* **actions**, on one server that has first visited every page: the Dataset page's filter,
  sort and drill-down; Over time's bucket set to day, then hour; Compare's tie margin changed
  and a regression opened; a point clicked on the Embeddings map. Three of each.

A visit or an action is **done** when the script run is over (the app's
``data-test-script-state`` is ``notRunning``, after a run that began since the click), no
"Running" widget, skeleton or stale element is left, the page's main chart or grid is drawn,
and the page's DOM has not changed for 300 ms; its time runs from the navigation's start (or
the click) to the last change of the DOM or the last message from the server, whichever is
later. For each: the server's CPU (utime + stime of the streamlit process,
``/proc/PID/stat``), the browser's main-thread CPU (Chrome DevTools Protocol
``Performance.getMetrics``: ``TaskDuration``, and ``ScriptDuration`` for JavaScript alone),
and the bytes the server sent over the websocket (the messages' sizes, counted in the page).
The server's peak RSS is the highest VmHWM of its processes.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._dashboard import ACTION, BROWSER_ACTIONS, GRID, PAGE, PAGES, PLOT, summarize
from bench.harness import ROOT, cpu_s, load_average, log, r, vm_hwm_mb

#: the page counts as still when its DOM has not changed for this long
QUIET_S = 0.3
VISITS = 3

# Counts in the page: the last change of the DOM, each script run's start and the app's state,
# and the server's websocket messages (their bytes, the last one's time). Installed before any
# of the page's own scripts.
_PROBE = """
(() => {
  const B = window.__bench = {last: 0, runs: 0, state: null, bytes: 0, frames: 0, lastMsg: 0};
  new MutationObserver(() => { B.last = performance.now(); }).observe(document, {
    subtree: true, childList: true, attributes: true, characterData: true});
  new MutationObserver((ms) => {
    for (const m of ms) {
      const v = m.target.getAttribute('data-test-script-state');
      if (v === 'running' && B.state !== 'running') B.runs++;
      B.state = v;
    }
  }).observe(document, {subtree: true, attributes: true,
                        attributeFilter: ['data-test-script-state']});
  const Socket = window.WebSocket;
  class Counted extends Socket {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (e) => {
        const d = e.data;
        B.bytes += d.byteLength ?? d.size ?? d.length ?? 0;
        B.frames++;
        B.lastMsg = performance.now();
      });
    }
  }
  window.WebSocket = Counted;
})();
"""

_STATE = """
(sel) => {
  const B = window.__bench || {};
  const q = (s) => document.querySelectorAll(s).length;
  const app = document.querySelector('[data-testid="stApp"]');
  return {
    now: performance.now(), last: B.last || 0, lastMsg: B.lastMsg || 0, runs: B.runs || 0,
    state: app ? app.getAttribute('data-test-script-state') : null,
    busy: q('[data-testid="stStatusWidget"]') + q('[data-testid="stSkeleton"]')
          + q('[data-stale="true"]'),
    drawn: sel ? q(sel) : 1,
    errors: q('[data-testid="stException"]'),
    bytes: B.bytes || 0,
  };
}
"""


class Server:
    """The dashboard served on the store ``home/runs.sqlite3`` (a context manager), with its
    CPU so far and its peak RSS."""

    def __init__(self, home: Path) -> None:
        from relevancy.testing.browser import DashboardServer

        self.process = DashboardServer(home, ROOT)
        self.url = self.process.url
        self.peak_mib = 0.0

    def __enter__(self) -> Server:
        self.process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.peak()
        self.process.stop()

    def cpu(self) -> float:
        return cpu_s(self.process.pid)

    def peak(self) -> float:
        now = vm_hwm_mb(self.process.pid)  # NaN once it is gone
        if now == now:
            self.peak_mib = max(self.peak_mib, now)
        return self.peak_mib


@contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    from relevancy.testing.browser import launch_args

    with sync_playwright() as pw:
        browser = pw.chromium.launch(**launch_args())
        try:
            yield browser
        finally:
            browser.close()


def new_context(browser: Any) -> Any:
    from relevancy.testing.browser import VIEWPORT

    context = browser.new_context(viewport=dict(VIEWPORT))
    context.add_init_script(_PROBE)
    return context


class Tab:
    """One browser tab with its DevTools session (main-thread CPU)."""

    def __init__(self, context: Any, server: Server) -> None:
        self.page = context.new_page()
        self.server = server
        self.cdp = context.new_cdp_session(self.page)
        self.cdp.send("Performance.enable")

    def close(self) -> None:
        self.page.close()

    def metrics(self) -> dict[str, float]:
        got = self.cdp.send("Performance.getMetrics")["metrics"]
        return {m["name"]: float(m["value"]) for m in got}

    def state(self, selector: str | None) -> dict[str, Any]:
        return self.page.evaluate(_STATE, selector)

    def wait_done(
        self, selector: str | None, since_ms: float, runs_before: int, timeout: float
    ) -> dict[str, Any]:
        """Wait for a run begun after ``runs_before`` runs to be over and the page still;
        the time (s) from ``since_ms`` (the page's clock) to its last change."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.state(selector)
            done = (
                s["runs"] > runs_before
                and s["state"] == "notRunning"
                and not s["busy"]
                and (s["drawn"] or s["errors"])
                and s["now"] - max(s["last"], s["lastMsg"]) >= QUIET_S * 1000
            )
            if done:
                s["s"] = (max(s["last"], s["lastMsg"]) - since_ms) / 1000
                return s
            time.sleep(0.05)
        raise TimeoutError(f"not done in {timeout:.0f} s: {self.state(selector)}")

    def measure(
        self,
        selector: str | None,
        act: Callable[[], object],
        timeout: float,
        *,
        fresh: bool = False,
    ) -> dict[str, Any]:
        """Do ``act`` on this tab and time it until done: seconds, server and browser CPU,
        bytes received. A ``fresh`` tab's time runs from its navigation's start."""
        before = {"now": 0.0, "runs": 0, "bytes": 0} if fresh else self.state(selector)
        cpu, task = self.server.cpu(), self.metrics()
        act()
        s = self.wait_done(selector, before["now"], before["runs"], timeout)
        after = self.metrics()
        return {
            "s": r(s["s"]),
            "server_cpu_s": r(self.server.cpu() - cpu),
            "browser_cpu_s": r(after["TaskDuration"] - task["TaskDuration"]),
            "browser_script_s": r(after["ScriptDuration"] - task["ScriptDuration"]),
            "bytes_in": int(s["bytes"] - before["bytes"]),
            "errors": s["errors"],
        }

    def visit(self, name: str, timeout: float) -> dict[str, Any]:
        """Open page ``name`` in this (fresh) tab: from the navigation's start until done."""
        page = PAGE[name]
        return self.measure(
            page.drawn,
            lambda: self.page.goto(f"{self.server.url}/{page.path}", wait_until="commit"),
            timeout,
            fresh=True,
        )


def visit(context: Any, server: Server, name: str, timeout: float) -> dict[str, Any]:
    tab = Tab(context, server)
    try:
        return tab.visit(name, timeout)
    finally:
        tab.close()


def page_figures(
    home: Path, browser: Any, timeout: float, visits: int = VISITS
) -> tuple[dict[str, Any], float]:
    """Every page on a server of its own: a warm-up, the first visit, then warm ones."""
    pages: dict[str, Any] = {}
    peak = 0.0
    for name in (p.name for p in PAGES):
        with Server(home) as server:
            context = new_context(browser)
            try:
                visit(context, server, "Home" if name == "Runs" else "Runs", timeout)
                first = visit(context, server, name, timeout)
                warm = [visit(context, server, name, timeout) for _ in range(visits)]
            finally:
                context.close()
            peak = max(peak, server.peak())
        pages[name] = summarize(first, warm, "visits_s")
        pages[name].update({f"first_{k}": first[k] for k in ("server_cpu_s", "browser_cpu_s")})
        pages[name]["first_bytes_in"] = first["bytes_in"]
        log(
            f"  browser {name}: first {first['s']:.2f} s, warm {pages[name]['median_s']} s "
            f"(server {first['server_cpu_s']:.2f} / browser {first['browser_cpu_s']:.2f} s CPU "
            f"first, {first['bytes_in'] / 1024:.0f} KiB)"
        )
    return pages, peak


# --- the actions --------------------------------------------------------------------------


def _find_point(page: Any, k: int, taken: set[int]) -> tuple[float, float]:
    """Where a generated question of a row not clicked before lies on the Embeddings map (a
    canvas: found by its tooltip, before the click is timed; the same row again would not be
    a new selection)."""
    from relevancy.testing.browser import vega_point

    chart = page.get_by_test_id("stVegaLiteChart").first
    for j in range(k * 20, k * 20 + 20):
        x, y, tip = vega_point(page, chart, "generated question", k=j)
        row = int(re.search(r"row\s+(\d+)", tip).group(1))
        if row not in taken:
            taken.add(row)
            return x, y
    raise RuntimeError("no point of a row not clicked before found on the Embeddings map")


def _choose(page: Any, label: str, option: str | int) -> Callable[[], None]:
    """Open the selectbox ``label``'s options now; return the click on ``option``."""
    box = page.get_by_role("combobox", name=label)
    box.scroll_into_view_if_needed()
    box.click()
    options = page.get_by_role("option")
    options.first.wait_for(timeout=10_000)
    if isinstance(option, int):
        return options.nth(option).click
    return options.filter(has_text=option).first.click


def action_figures(
    home: Path, browser: Any, timeout: float, visits: int = VISITS
) -> tuple[dict[str, Any], float]:
    """On one server: every page visited once, then each action three times."""
    from relevancy.runs import SORTS

    out: dict[str, list[dict[str, Any]]] = {}

    def add(name: str, got: dict[str, Any]) -> None:
        out.setdefault(name, []).append(got)
        log(f"  browser action {name}: {got['s']:.2f} s ({got['bytes_in'] / 1024:.0f} KiB)")

    with Server(home) as server:
        context = new_context(browser)
        try:
            for each in PAGES:  # the server as a person leaves it after a tour of the pages
                visit(context, server, each.name, timeout)
            tab = Tab(context, server)
            page = tab.page
            tab.visit("Dataset", timeout)
            only_low = page.get_by_text(re.compile(r"^Only below"))
            for _ in range(visits):
                add("filter", tab.measure(GRID, only_low.click, timeout))
            for k in range(visits):
                click = _choose(page, "Sort by", SORTS[1 - k % 2])
                add("sort", tab.measure(GRID, click, timeout))
            for k in range(visits):
                click = _choose(page, "Row to inspect", k + 2)
                add("drill-down", tab.measure(GRID, click, timeout))
            tab.close()

            tab = Tab(context, server)
            page = tab.page
            tab.visit("Over time", timeout)
            for _ in range(visits):
                for bucket in ("day", "hour"):
                    button = page.get_by_role("radio", name=bucket, exact=True)
                    add(f"over time: {bucket}", tab.measure(PLOT, button.click, timeout))
            tab.close()

            tab = Tab(context, server)
            page = tab.page
            tab.visit("Compare", timeout)
            margin = page.get_by_label("Tie margin", exact=True)
            for k in range(visits):

                def change(value: str = f"{0.03 + 0.01 * k:.2f}") -> None:
                    margin.fill(value)
                    margin.press("Enter")

                add("compare: tie margin", tab.measure(PLOT, change, timeout))
            for k in range(visits):
                title = page.locator('[data-testid="stExpander"] summary p').filter(
                    has_text=re.compile(rf"^{k + 2}\. ")
                )
                title.scroll_into_view_if_needed()
                add("compare: regression opened", tab.measure(PLOT, title.click, timeout))
            tab.close()

            tab = Tab(context, server)
            page = tab.page
            tab.visit("Embeddings", timeout)
            taken: set[int] = set()
            for k in range(visits):
                x, y = _find_point(page, k, taken)
                add(
                    "embeddings: point clicked",
                    tab.measure(PLOT, lambda x=x, y=y: page.mouse.click(x, y), timeout),
                )
            tab.close()
        finally:
            context.close()
        peak = server.peak()
    missing = set(BROWSER_ACTIONS) - set(out)
    if missing:  # bench/_dashboard.py lists an action this function does not take
        raise RuntimeError(f"actions not taken: {', '.join(sorted(missing))}")
    actions = {name: summarize(out[name][0], out[name], "times_s") for name in BROWSER_ACTIONS}
    return actions, peak


def two_tabs(
    home: Path, browser: Any, name: str, timeout: float, visits: int = VISITS
) -> tuple[dict[str, Any], float]:
    """Page ``name`` opened in one tab, then in two tabs at once (two people, one server), on
    a server that has visited it once: the median of ``visits`` of each, the slower of the two
    tabs counting, and their ratio."""
    one: list[float] = []
    both: list[float] = []
    with Server(home) as server:
        context = new_context(browser)
        try:
            visit(context, server, name, timeout)
            for _ in range(visits):
                one.append(visit(context, server, name, timeout)["s"])
                tabs = [Tab(context, server), Tab(context, server)]
                try:
                    for tab in tabs:  # both navigations start before either is waited on
                        tab.page.goto(f"{server.url}/{PAGE[name].path}", wait_until="commit")
                    done = [tab.wait_done(PAGE[name].drawn, 0.0, 0, timeout) for tab in tabs]
                finally:
                    for tab in tabs:
                        tab.close()
                both.append(max(d["s"] for d in done))
                log(f"  browser two tabs on {name}: one {one[-1]:.2f} s, two {both[-1]:.2f} s")
        finally:
            context.close()
        peak = server.peak()
    one_s, two_s = statistics.median(one), statistics.median(both)
    return {
        "page": name,
        "one_tab_s": r(one_s),
        "two_tabs_s": r(two_s),
        "ratio": r(two_s / one_s) if one_s else None,
        "one_tab_times_s": one,
        "two_tabs_times_s": both,
    }, peak


def browser_figures(home: Path, timeout: float = 300.0, visits: int = VISITS) -> dict[str, Any]:
    """The ``browser`` object of one size: pages, actions, two tabs at once on the heaviest
    page (the slowest warm visit), the server's peak, the load."""
    loads = [load_average()]
    started = time.perf_counter()
    with chromium() as browser:
        pages, peak = page_figures(home, browser, timeout, visits)
        loads.append(load_average())
        actions, action_peak = action_figures(home, browser, timeout, visits)
        heaviest = max(pages, key=lambda k: pages[k].get("median_s") or 0.0)
        tabs, tabs_peak = two_tabs(home, browser, heaviest, timeout, visits)
    loads.append(load_average())
    return {
        "pages": pages,
        "actions": actions,
        "two_tabs": tabs,
        "server_peak_mib": r(max(peak, action_peak, tabs_peak), 1),
        "load_avg": loads,
        "wall_s": r(time.perf_counter() - started, 1),
    }


# --- the tables ---------------------------------------------------------------------------

#: rows -> the slowest page (first visit included), s; every action, s (issue 47)
TARGETS = {100_000: (2.0, None), 1_000_000: (3.0, 1.0)}
SERVER_PEAK_MIB = 2048.0


def apptest_s(size: dict[str, Any], kind: str, name: str) -> float | None:
    """The same page's first render, or the same action, under AppTest at this size (None
    where AppTest does not take it).

    >>> size = {"first_render": {"1_Dataset.py": {"s": 0.8}}, "drilldown_s": 0.2}
    >>> apptest_s(size, "pages", "Dataset"), apptest_s(size, "actions", "drill-down")
    (0.8, 0.2)
    >>> apptest_s(size, "actions", "compare: tie margin") is None
    True
    """
    if kind == "pages":
        return size.get("first_render", {}).get(PAGE[name].file, {}).get("s")
    key = ACTION[name].apptest if name in ACTION else None
    return size.get(key) if key else None


def tables(sizes: list[dict[str, Any]]) -> str:
    """Each page and action at each size, and the targets: Markdown."""
    from bench.harness import against, fmt, table

    sizes = [d for d in sizes if d.get("browser")]
    if not sizes:
        return ""
    head = ["", *(f"{d['rows']:,} rows: first / warm s" for d in sizes)]
    head += [f"{d['rows']:,} rows: server / browser CPU s, KiB" for d in sizes]
    beside = [d for d in sizes if d.get("first_render")]  # the same size under AppTest too
    head += [f"{d['rows']:,} rows: AppTest s" for d in beside]

    def cell(got: dict[str, Any] | None, cpu: bool) -> str:
        if not got:
            return "–"
        if cpu:
            return (
                f"{fmt(got.get('server_cpu_s'))} / {fmt(got.get('browser_cpu_s'))}, "
                f"{fmt((got.get('bytes_in') or 0) / 1024, 0)}"
            )
        return f"{fmt(got.get('first_s'))} / {fmt(got.get('median_s'))}"

    rows = []
    for kind in ("pages", "actions"):
        names = list(dict.fromkeys(k for d in sizes for k in d["browser"][kind]))
        for name in names:
            got = [d["browser"][kind].get(name) for d in sizes]
            rows.append(
                [name if kind == "pages" else f"action: {name}"]
                + [cell(g, False) for g in got]
                + [cell(g, True) for g in got]
                + [fmt(apptest_s(d, kind, name)) for d in beside]
            )
    rows.append(
        ["two tabs at once: one tab / two tabs s (page)"]
        + [
            f"{fmt(t['one_tab_s'])} / {fmt(t['two_tabs_s'])} ({t['page']})"
            if (t := d["browser"].get("two_tabs"))
            else "–"
            for d in sizes
        ]
        + ["" for _ in [*sizes, *beside]]
    )
    rows.append(
        ["server peak RSS, MiB"]
        + [fmt(d["browser"].get("server_peak_mib"), 0) for d in sizes]
        + ["" for _ in sizes]
        + [fmt(d.get("peak_rss_mb"), 0) for d in beside]
    )
    rows.append(
        ["load average (start / pages done / end)"]
        + [" / ".join(fmt(x[0], 1) for x in d["browser"].get("load_avg", [])) for d in sizes]
        + ["" for _ in [*sizes, *beside]]
    )
    goals = []
    for d in sizes:
        page_s, action_s = TARGETS.get(d["rows"], (None, None))
        b, n = d["browser"], f"{d['rows']:,} rows"
        if page_s is not None:
            slow = max(
                ((max(v.get("first_s") or 0, v.get("median_s") or 0), k))
                for k, v in b["pages"].items()
            )
            goals.append(
                (f"{n}: slowest page ({slow[1]}), s", slow[0], f"≤ {page_s:g}", slow[0] <= page_s)
            )
        if action_s is not None and b["actions"]:
            slow = max(((v.get("median_s") or 0, k) for k, v in b["actions"].items()))
            goals.append(
                (
                    f"{n}: slowest action ({slow[1]}), s",
                    slow[0],
                    f"≤ {action_s:g}",
                    slow[0] <= action_s,
                )
            )
        if tabs := b.get("two_tabs"):
            goals.append(
                (
                    f"{n}: two tabs at once on {tabs['page']}, x one tab",
                    tabs["ratio"],
                    "≤ 2",
                    tabs["ratio"] is not None and tabs["ratio"] <= 2.0,
                )
            )
        peak = b.get("server_peak_mib") or 0
        goals.append(
            (
                f"{n}: server peak RSS, MiB",
                peak,
                f"≤ {SERVER_PEAK_MIB:,.0f}",
                peak <= SERVER_PEAK_MIB,
            )
        )
    return table(head, rows) + "\n\n" + against(goals)
