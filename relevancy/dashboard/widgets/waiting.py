"""A slow computation with a progress bar and its expected time, instead of a bare spinner.

The first UMAP on a machine imports ``umap`` and compiles its code (minutes on a busy 2-core
machine); later ones take seconds. :func:`run_with_progress` runs the work in a thread of this
script run and moves a bar along the expected time, which is learned: each computation that took
long enough records its seconds and points in the run store (``meta``), and the next estimate
scales the last one by the number of points. :func:`shade_all_rows` is the Embeddings page's
density of every row beneath its sample, computed the same way (a million rows' vectors take
a while to read).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from relevancy.analysis.projection import Density, density, fit_pca
from relevancy.runs import RunInfo, RunStore
from relevancy.scoring.estimate import duration

__all__ = ["NOT_MEASURED", "expected_seconds", "run_with_progress", "shade_all_rows"]

T = TypeVar("T")

#: before any measurement on this machine there is no estimate: the first UMAP also compiles
#: its code, which takes from seconds to minutes with the machine (26 s here, 161 s on a busier
#: 2-core machine, issue 24), so the bar says how long it has been, not how long it will be
NOT_MEASURED = {
    "umap": "no UMAP measured on this machine yet: the first also compiles its code",
    "tsne": "no t-SNE measured on this machine yet",
}


def _key(method: str) -> str:
    return f"projection:{method}"


def expected_seconds(store: RunStore, method: str, points: int) -> tuple[float | None, str]:
    """The expected seconds of a ``method`` projection of ``points`` points on this machine,
    from the last one measured here (None when there is none), and where the figure comes from
    (in words)."""
    text = store.get_meta(_key(method))
    if text:
        last = json.loads(text)
        per_point = float(last["seconds"]) / max(int(last["points"]), 1)
        return per_point * points, f"the last one here took {duration(float(last['seconds']))}"
    return None, NOT_MEASURED.get(method, f"no {method} measured on this machine yet")


def run_with_progress(
    store: RunStore, method: str, points: int, label: str, work: Callable[[], T]
) -> T:
    """``work()``, with a bar that moves along its expected time (see :func:`expected_seconds`)
    and says it; the time it took is recorded for the next estimate."""
    expected, why = expected_seconds(store, method, points)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # re-raised in the script's own thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    add_script_run_ctx(thread, get_script_run_ctx())
    started = time.perf_counter()
    thread.start()
    thread.join(0.5)  # a cached or quick result: no bar at all
    if thread.is_alive():
        bar = st.progress(0.0, text=f"Computing the {label}… ({why})")
        while thread.is_alive():
            elapsed = time.perf_counter() - started
            if expected is None:  # no estimate: the bar creeps, the text says how long so far
                share = elapsed / (elapsed + 30.0)
                text = f"Computing the {label}: {duration(elapsed)} so far ({why})"
            else:
                share = min(elapsed / max(expected, 1.0), 0.99)
                text = (
                    f"Computing the {label}: {duration(elapsed)} of about "
                    f"{duration(max(expected, elapsed))} ({why})"
                )
            bar.progress(share, text=text)
            thread.join(0.5)
        bar.empty()
    seconds = time.perf_counter() - started
    if "error" in outcome:
        raise outcome["error"]
    if seconds >= 2.0:  # measured, not a cache hit: the next estimate learns from it
        record = {"seconds": seconds, "points": points, "measured": time.strftime("%Y-%m-%d")}
        store.set_meta(_key(method), json.dumps(record))
        said = f"expected about {duration(expected)}; {why}" if expected is not None else why
        st.caption(f"{label[0].upper()}{label[1:]}: {duration(seconds)} ({said}).")
    return outcome["value"]


@st.cache_data(show_spinner=False, max_entries=4)
def _density(
    path: str, run_id: int, version: str, rows: tuple[int, ...], _store: RunStore, _sample: Any
) -> Density:
    fit = fit_pca(_sample, 2)  # the map the sample is drawn on, applied to every row
    return density(fit, _store.vector_chunks(run_id), fit.transform(_sample))


def shade_all_rows(
    store: RunStore,
    info: RunInfo,
    rows: tuple[int, ...] | None,
    sample: np.ndarray,
    *,
    linear: bool,
) -> Density | None:
    """The Embeddings page's toggle that shades where every row falls beneath a drawn sample
    (``rows``; nothing to shade when every row is drawn): the 2-D PCA fitted on the sample's
    vectors ``sample``, applied to every row's, read a chunk at a time. ``linear``: the map is
    that PCA (UMAP and t-SNE cannot place a million rows)."""
    if rows is None:
        return None
    on = st.toggle(
        f"Shade where all {info.n_scored:,} rows fall",
        key=f"emb_density_{info.id}",
        disabled=not linear,
        help="Reads every row's vectors a chunk at a time and places them with the PCA fitted "
        "on the sample (a million rows: about 20 s on 2 cores, once per version of the run)."
        if linear
        else "Only the 2-D PCA map can place every row: UMAP and t-SNE place only the sample.",
    )
    if not (on and linear):
        return None
    return run_with_progress(
        store,
        "density",
        info.n_scored,
        f"density of all {info.n_scored:,} rows",
        lambda: _density(str(store.path), info.id, store.version(info.id), rows, store, sample),
    )
