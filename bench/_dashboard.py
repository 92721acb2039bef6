"""What ``bench.dashboard_scale``'s two ways of timing the dashboard share: the synthetic store
of N rows, the pages and the actions a person takes on them, and how repeated timings become
a page's or an action's figures.

* the AppTest bench (``dashboard_scale.page_renders``) runs each page's script from
  :attr:`Page.script` and records its first render under :attr:`Page.file`, and each action it
  can take under :attr:`Action.apptest`;
* the browser bench (``_browser.py``) opens each page at :attr:`Page.path` and waits for
  :attr:`Page.drawn`, and takes the actions whose :attr:`Action.browser` is true.

Both serve the same store (:func:`size_home`, :func:`build_store`); the browser bench's figures
of a page or action come from :func:`summarize`.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import r

#: a chart drawn: a plotly figure's SVG layer (WebGL traces draw beside it), or a Vega-Lite
#: chart's canvas or SVG (Compare's charts)
PLOT = ".js-plotly-plot .main-svg, .vega-embed canvas, .vega-embed svg.marks"
GRID = '[data-testid="stDataFrame"]'


@dataclass(frozen=True)
class Page:
    name: str  #: as the browser figures and RESULTS.md name it
    script: str  #: the Streamlit script, from the repository's root
    path: str  #: the page's path in the served dashboard's address
    drawn: str  #: a CSS selector: what must be on the page before it counts as drawn

    @property
    def file(self) -> str:
        """The script's file name: the AppTest record's key (``first_render``)."""
        return Path(self.script).name


PAGES: tuple[Page, ...] = (
    Page("Home", "app.py", "", '[data-testid="stMetric"]'),
    Page("Dataset", "pages/1_Dataset.py", "Dataset", GRID),
    Page("Distributions", "pages/2_Distributions.py", "Distributions", PLOT),
    Page("Embeddings", "pages/3_Embeddings.py", "Embeddings", PLOT),
    Page("Compare", "pages/4_Compare.py", "Compare", PLOT),
    Page("Runs", "pages/5_Runs.py", "Runs", GRID),
    Page("Agreement", "pages/6_Agreement.py", "Agreement", PLOT),
    Page("Over time", "pages/7_Over_time.py", "Over_time", PLOT),
)
PAGE = {p.name: p for p in PAGES}


@dataclass(frozen=True)
class Action:
    name: str  #: as the browser figures name it
    page: str  #: the page it is taken on
    apptest: str | None = None  #: the AppTest record's key, when AppTest takes it too
    browser: bool = True  #: whether the browser bench takes it


ACTIONS: tuple[Action, ...] = (
    Action("filter", "Dataset", "filter_change_s"),
    Action("sort", "Dataset", "sort_change_s"),
    Action("drill-down", "Dataset", "drilldown_s"),
    Action("over time: day", "Over time"),
    Action("over time: hour", "Over time"),
    Action("compare: tie margin", "Compare"),
    Action("compare: regression opened", "Compare"),
    Action("embeddings: point clicked", "Embeddings"),
    # AppTest alone: toggles whose cost is the server's (the browser draws the same points)
    Action("embeddings: all points", "Embeddings", "embeddings_all_points_s", browser=False),
    Action("embeddings: shade every row", "Embeddings", "embeddings_density_s", browser=False),
)
ACTION = {a.name: a for a in ACTIONS}
BROWSER_ACTIONS = tuple(a.name for a in ACTIONS if a.browser)


# --- the store ----------------------------------------------------------------------------


def size_home(n: int, store_dir: Path | None) -> Path:
    """The folder of the ``n``-row store (``store_dir/N``, kept, or a fresh temporary one),
    made this process's store and model cache as the served dashboard's will be."""
    home = (
        store_dir / str(n) if store_dir else Path(tempfile.mkdtemp(prefix=f"relevancy-scale-{n}-"))
    )
    os.environ["RELEVANCY_STORE"] = str(home / "runs.sqlite3")
    os.environ["RELEVANCY_CACHE_DIR"] = str(home / "cache")
    return home


def build_store(n: int, home: Path) -> tuple[int, dict[str, Any]]:
    """A synthetic run of ``n`` rows in the run store ``home/runs.sqlite3``, written as a
    scoring run writes it: the run's id and the store's figures. A store this function built
    before in ``home`` (``--store-dir``) is used again as it is (its figures: ``reused``)."""
    from relevancy.runs import RunStore
    from relevancy.testing.synthetic import DIM, synthetic_inputs, synthetic_results

    made = home / "bench_run_id"
    if made.exists():
        return int(made.read_text()), {"store_reused": True}
    home.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {}
    store = RunStore(home / "runs.sqlite3")
    store.set_meta("demo_imported", "bench")  # the pages would import the demo otherwise
    started = time.perf_counter()
    # a person's label on one row in 100 (the Agreement page at volume)
    inputs = synthetic_inputs(n, labelled_every=100)
    run_id = store.create_run("scale", {"backend": "embedded"}, inputs)
    writing = time.perf_counter() - started  # the time in the store, not in making the rows
    for batch in synthetic_results(n):  # as a scoring run writes them
        writing += timed(lambda batch=batch: store.append_results(run_id, batch))
    out["store_write_s"] = r(writing)
    # the SQLite files and the run's Parquet segments beside them (runs.sqlite3.columns/)
    size = sum(p.stat().st_size for p in home.glob("runs.sqlite3*") if p.is_file())
    size += sum(p.stat().st_size for p in home.glob("runs.sqlite3.columns/**/*") if p.is_file())
    vectors = n * 4 * DIM * 4  # the question's and three generated questions' float32 vectors
    out["store_mb"] = r(size / 2**20, 1)
    out["store_kib_per_row"] = r(size / n / 1024, 2)
    out["store_kib_per_row_without_vectors"] = r((size - vectors) / n / 1024, 2)
    made.write_text(str(run_id))
    return run_id, out


# --- timings ------------------------------------------------------------------------------


def timed(act: Callable[[], object]) -> float:
    """Seconds ``act()`` took (not rounded)."""
    started = time.perf_counter()
    act()
    return time.perf_counter() - started


def median(timings: Sequence[dict[str, Any]], key: str) -> float | None:
    """The median of ``key`` over the timings that have it; None when none has.

    >>> median([{"s": 3.0}, {"s": 1.0}, {"s": None}, {"s": 2.0}], "s")
    2.0
    """
    values = [t[key] for t in timings if t.get(key) is not None]
    return r(statistics.median(values)) if values else None


#: what each timing of a visit or an action holds beside its seconds (``s``)
MEASURED = ("server_cpu_s", "browser_cpu_s", "bytes_in")


def summarize(
    first: dict[str, Any], repeats: Sequence[dict[str, Any]], each: str
) -> dict[str, Any]:
    """A page's or an action's figures: the median of ``repeats`` (seconds, server and browser
    CPU, bytes), the ``first`` one's seconds, every repeat's seconds under ``each``, and the
    most errors any of them showed.

    >>> got = summarize({"s": 4.0, "errors": 0}, [{"s": 2.0, "errors": 0},
    ...                 {"s": 1.0, "errors": 1}, {"s": 3.0, "errors": 0}], "times_s")
    >>> got["median_s"], got["first_s"], got["times_s"], got["errors"], got["bytes_in"]
    (2.0, 4.0, [2.0, 1.0, 3.0], 1, None)
    """
    out: dict[str, Any] = {"median_s": median(repeats, "s"), "first_s": first["s"]}
    out.update({key: median(repeats, key) for key in MEASURED})
    out[each] = [t["s"] for t in repeats]
    out["errors"] = max(t.get("errors", 0) for t in [first, *repeats])
    return out
