"""Session state, the run store and cached run loading shared by every page.

Keys: shared settings are ``sb_*`` plus ``active_run``; each page prefixes its own keys (``home_``,
``ds_``, ``dist_``, ``emb_``, ``cmp_``, ``runs_``); links to a run or a row keep theirs under
``link_*`` (:mod:`relevancy.dashboard.widgets.permalink`). A widget whose value must survive page
switches is bound with :func:`bind`: its value lives under the plain key and the widget uses
``_w_<key>``, re-seeded on every run (Streamlit forgets the state of widgets that a page does not
draw).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from relevancy.core.result import RelevancyResult
from relevancy.dashboard.views.format import esc
from relevancy.paths import default_store_path
from relevancy.runs import DEMO_RUN_NAME, RowQuery, RunData, RunInfo, RunStore, import_demo
from relevancy.runs.aggregate import RunFigures

__all__ = [
    "bind",
    "get_store",
    "store_path",
    "list_runs",
    "active_run",
    "set_active_run",
    "demo_run",
    "input_columns",
    "load_run",
    "run_columns",
    "reasons_at",
    "run_figures",
    "run_distinct",
    "split_columns",
    "SPLIT_UP_TO",
    "run_counts",
    "split_labels",
    "run_page",
    "run_result",
    "run_points",
    "scored_run",
    "clear_run_caches",
]

#: pandas 3 copies on write: a shallow copy of a cached frame can be changed without changing
#: the cached one (pandas 2 needs a deep copy for that)
_COPY_ON_WRITE = int(pd.__version__.split(".")[0]) >= 3


def _sync(key: str) -> None:
    st.session_state[key] = st.session_state[f"_w_{key}"]


def bind(key: str, default: Any, *, options: list[Any] | None = None) -> dict[str, Any]:
    """Widget kwargs (``key``, ``on_change``, ``args``) for a value that outlives the page.

    With ``options``, a stored value that is no longer among them falls back to ``default``.
    """
    if key not in st.session_state or (
        options is not None and st.session_state[key] not in options
    ):
        st.session_state[key] = default
    st.session_state[f"_w_{key}"] = st.session_state[key]
    return {"key": f"_w_{key}", "on_change": _sync, "args": (key,)}


def store_path() -> str:
    return str(st.session_state.get("sb_store") or default_store_path())


@st.cache_resource(show_spinner=False)
def _store(path: str) -> RunStore:
    store = RunStore(path)
    import_demo(store)  # once per store: the precomputed demo as a first run
    return store


def get_store() -> RunStore:
    """The run store at the configured location (created, with the demo, on first use)."""
    return _store(store_path())


def list_runs() -> list[RunInfo]:
    return get_store().list_runs()


def active_run(runs: list[RunInfo] | None = None) -> RunInfo | None:
    """The run the pages show (the sidebar picks it); the newest when none was picked."""
    runs = list_runs() if runs is None else runs
    if not runs:
        st.session_state.pop("active_run", None)  # none: no stale id (in links, say)
        return None
    chosen = st.session_state.get("active_run")
    for info in runs:
        if info.id == chosen:
            return info
    st.session_state["active_run"] = runs[0].id
    return runs[0]


def set_active_run(run_id: int) -> None:
    st.session_state["active_run"] = int(run_id)


def demo_run() -> RunInfo | None:
    """The complete precomputed demo run of this store, if it is still there."""
    return next((r for r in list_runs() if r.name == DEMO_RUN_NAME and r.complete), None)


@st.cache_data(show_spinner=False, max_entries=4)
def _load(path: str, run_id: int, version: str) -> RunData:
    return RunStore(path).load_run(run_id)


def load_run(run_id: int) -> RunData:
    """A small run loaded whole (the demo's examples); large runs are read a piece at a time
    (:func:`run_columns`, :func:`run_page`, :func:`run_result`, :func:`run_points`)."""
    store = get_store()
    return _load(str(store.path), int(run_id), store.version(run_id))


# kept as the frame itself, not pickled (st.cache_data pickles what it keeps and unpickles it
# on every read: 0.4 s and 0.1 s for a million rows' Compare columns); each read gets a copy
@st.cache_resource(show_spinner=False, max_entries=24)
def _columns(path: str, run_id: int, version: str, names: tuple[str, ...]) -> pd.DataFrame:
    return RunStore(path).columns(run_id, names)


def run_columns(run_id: int, names: Sequence[str]) -> pd.DataFrame:
    """Just these columns of every scored row (and ``row``), cached until the run changes."""
    store = get_store()
    frame = _columns(str(store.path), int(run_id), store.version(run_id), tuple(names))
    return frame.copy(deep=not _COPY_ON_WRITE)


@st.cache_data(show_spinner=False, max_entries=32)
def _moved(path: str, run_id: int, version: str, threshold: float) -> dict[int, str]:
    moved = RunStore(path).reasons_moved(run_id, threshold)
    return {row: now for row, (_, now) in moved.items()}


def reasons_at(run_id: int, frame: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """``frame`` (rows of run ``run_id``, with ``row`` and ``reason``) with each row's main
    reason at ``threshold`` (the sidebar's), not as stored at the run's own threshold: only
    rows scored between the two can differ (cached per version and threshold)."""
    store = get_store()
    moved = _moved(str(store.path), int(run_id), store.version(run_id), float(threshold))
    if not moved or "reason" not in frame or "row" not in frame:
        return frame
    rows = frame["row"].astype(int)
    hit = rows.isin(list(moved)).to_numpy()
    reason = frame["reason"].astype(object).to_numpy(copy=True)
    reason[hit] = rows[hit].map(moved).to_numpy()
    return frame.assign(reason=reason)


def clear_run_caches() -> None:
    """Forget every run's cached figures and columns (the models stay loaded): a page then
    reads the store as on a first visit."""
    st.cache_data.clear()
    _columns.clear()


@st.cache_data(show_spinner=False, max_entries=16)
def _figures(path: str, run_id: int, version: str, threshold: float) -> RunFigures:
    return RunStore(path).figures(run_id, threshold=threshold)


def run_figures(run_id: int, threshold: float) -> RunFigures:
    """The run's headline figures (mean, median, share below ``threshold``...), computed in the
    store, cached until the run changes."""
    store = get_store()
    return _figures(str(store.path), int(run_id), store.version(run_id), float(threshold))


@st.cache_data(show_spinner=False, max_entries=16)
def _counts(
    path: str, run_id: int, version: str, column: str, threshold: float | None
) -> dict[str, int]:
    return RunStore(path).counts(run_id, column, threshold=threshold)


def run_counts(
    run_id: int, column: str = "reason", *, threshold: float | None = None
) -> dict[str, int]:
    """How many scored rows have each main reason (at the sidebar's ``threshold``: a reason
    depends on it) or value of another result column."""
    store = get_store()
    at = None if threshold is None else float(threshold)
    return _counts(str(store.path), int(run_id), store.version(run_id), column, at)


@st.cache_data(show_spinner=False, max_entries=16)
def _distinct(path: str, run_id: int, version: str, column: str, limit: int | None) -> list[str]:
    return RunStore(path).distinct(run_id, column, limit=limit)


def run_distinct(run_id: int, column: str, *, limit: int | None = None) -> list[str]:
    """The distinct values of one of the run's input columns (the first ``limit`` found)."""
    store = get_store()
    return _distinct(str(store.path), int(run_id), store.version(run_id), column, limit)


#: a column with more values than this is not offered to split rows by or to compare the
#: values of (a time or an id would make a group of each row)
SPLIT_UP_TO = 50


def split_columns(info: RunInfo) -> list[str]:
    """The run's own input columns (not the question, the answer or the id) with at most
    :data:`SPLIT_UP_TO` values: what a page may split the rows by. Each is counted with
    ``DISTINCT ... LIMIT``, not read whole."""
    own = [c for c in info.columns if c not in ("user_input", "response", "id")]
    return [c for c in own if len(run_distinct(info.id, c, limit=SPLIT_UP_TO + 1)) <= SPLIT_UP_TO]


def split_labels(info: RunInfo) -> dict[str, str]:
    """What a page may split the run's rows by, each with its label (Markdown): the variant
    under the input's own name for it (``model``, ``system``...), the main reason, the scoring
    models, the run, the run's own columns of few values (:func:`split_columns`), nothing."""
    variant = esc(info.shown("variant"))
    models = "scoring models" if variant == "model" else "model"  # the LLM and the embeddings
    labels = {"variant": variant, "reason": "main reason", "model": models, "run": "run"}
    own = [c for c in split_columns(info) if c != "variant"]
    return labels | {c: esc(c) for c in own} | {"none": "nothing"}  # a name is Markdown there


@st.cache_data(show_spinner=False, max_entries=32)
def _page(
    path: str, run_id: int, version: str, query: RowQuery, limit: int, offset: int
) -> tuple[pd.DataFrame, int]:
    store = RunStore(path)
    return store.query(run_id, query, limit=limit, offset=offset), store.count(run_id, query)


def run_page(run_id: int, query: RowQuery, *, limit: int, offset: int) -> tuple[pd.DataFrame, int]:
    """A page of the results table filtered and sorted in the store, and how many rows match."""
    store = get_store()
    return _page(str(store.path), int(run_id), store.version(run_id), query, limit, offset)


@st.cache_data(show_spinner=False, max_entries=64)
def _result(path: str, run_id: int, version: str, row: int) -> RelevancyResult:
    return RunStore(path).result(run_id, row)


def run_result(run_id: int, row: int) -> RelevancyResult:
    """One scored row, whole."""
    store = get_store()
    return _result(str(store.path), int(run_id), store.version(run_id), int(row))


@st.cache_data(show_spinner=False, max_entries=8)
def _points(
    path: str, run_id: int, version: str, rows: tuple[int, ...] | None
) -> tuple[pd.DataFrame, np.ndarray]:
    return RunStore(path).points(run_id, rows)


def run_points(run_id: int, rows: Sequence[int] | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """The Embeddings page's points and vectors, for ``rows`` (or all)."""
    store = get_store()
    key = None if rows is None else tuple(int(r) for r in rows)
    return _points(str(store.path), int(run_id), store.version(run_id), key)


def scored_run() -> RunInfo | None:
    """The active run when it has scored rows; else ``None``, with a message saying why."""
    info = active_run()
    if info is None:
        st.info("No saved runs yet: score a dataset on the **Dataset** page.", icon="🗂️")
        return None
    if not info.n_scored:
        st.info(
            f"Run **{esc(info.name)}** has no scored rows yet: resume it on the **Dataset** page.",
            icon="⏳",
        )
        return None
    return info


def input_columns(info: RunInfo) -> list[str]:
    """The run's own input columns besides the question and the answer (id, variant...)."""
    return [c for c in info.columns if c not in ("user_input", "response")]
