"""Stability in the dashboard: re-score rows k times, a band in the drill-down, run figures.

The Dataset page offers "Re-score k times" for the inspected row, the rows of the grid's page
or a random sample (:func:`rescore_panel`); the repeats go to the run store's ``repeats``
table through :func:`relevancy.scoring.repeats.rescore`, the function ``relevancy score --repeats``
and ``bench/stability.py`` use. The drill-down draws a row's band (min-max, sd, each repeat:
:func:`draw_band`); the Runs and Distributions pages show the run's median and p95 per-row
sd (:func:`run_stability_figures`).
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from relevancy.analysis.stability import (
    NEAR_DUPLICATE,
    stability_from_repeats,
    summarize_stability,
)
from relevancy.dashboard.views.format import error_text, esc, fmt
from relevancy.dashboard.widgets.models import Settings, get_metric
from relevancy.dashboard.widgets.state import get_store
from relevancy.errors import RelevancyError
from relevancy.runs import RunInfo, RunStore
from relevancy.scoring.repeats import MAX_REPEATS, repeat_seeds, rescore

__all__ = [
    "run_stability",
    "row_band",
    "band_figure",
    "draw_band",
    "rescore_panel",
    "run_stability_figures",
    "models_mismatch",
]

_WHICH = {
    "inspected": "the row in the drill-down",
    "page": "every row of the grid's page (as filtered)",
    "sample": "a random sample of the run's scored rows",
}


@st.cache_data(show_spinner=False, max_entries=16)
def _stability(path: str, run_id: int, version: str) -> pd.DataFrame:
    return stability_from_repeats(RunStore(path).repeats(run_id))


def run_stability(run_id: int) -> pd.DataFrame:
    """Per-row stability of the run's re-scored rows (empty when none), cached per version."""
    store = get_store()
    return _stability(str(store.path), int(run_id), store.version(run_id))


def row_band(run_id: int, row: int) -> pd.Series | None:
    """One row's stability (``seeds``, ``score_sd``, ``score_min``...), or None."""
    table = run_stability(run_id)
    found = table[table["row"] == int(row)]
    return None if found.empty else found.iloc[0]


def band_figure(values: list[float], seeds: list[int], score: float) -> go.Figure:
    """The band: min-max shaded, mean ± sd bracketed, one dot per repeat, the row's score."""
    finite = [(v, s) for v, s in zip(values, seeds) if v == v]
    xs = [v for v, _ in finite]
    fig = go.Figure()
    if xs:
        lo, hi = min(xs), max(xs)
        mean = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))
        fig.add_shape(
            type="rect",
            x0=lo,
            x1=hi,
            y0=-0.5,
            y1=0.5,
            line_width=0,
            fillcolor="rgba(59,130,246,0.18)",
        )
        fig.add_shape(
            type="line", x0=mean - sd, x1=mean + sd, y0=0, y1=0, line=dict(color="#1d4ed8", width=3)
        )
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[0] * len(xs),
                mode="markers",
                marker=dict(size=11, color="#1d4ed8", line=dict(color="white", width=1)),
                hovertext=[f"seed {s}: {v:.3f}" for v, s in finite],
                hoverinfo="text",
                name="repeats",
            )
        )
    if score == score:
        fig.add_vline(x=score, line=dict(color="#111827", dash="dot", width=2))
    left = min([0.0, *xs, score if score == score else 0.0]) - 0.05
    fig.update_layout(
        height=96,
        margin=dict(l=8, r=8, t=6, b=24),
        showlegend=False,
        xaxis=dict(range=[left, 1.02], zeroline=False, title=None),
        yaxis=dict(visible=False, range=[-0.8, 0.8]),
        plot_bgcolor="white",
    )
    return fig


def draw_band(band: pd.Series, score: float, *, key: str) -> None:
    """The drill-down's stability band of one row (drawn where it is called)."""
    seeds = [int(s) for s in band["seeds"]]
    values = [float(v) for v in band["values"]]
    k = int(band["repeats"])
    st.markdown(
        f"**Stability over {k} re-scorings** · range {fmt(band['score_min'])}–"
        f"{fmt(band['score_max'])} · sd {fmt(band['score_sd'])}",
        help="The row scored again with other generator seeds (each repeat draws its own N "
        "questions). The band spans the lowest and highest score, the bar is the mean ± one "
        "(population) standard deviation, the dots are the repeats and the dotted line is the "
        "row's score.",
    )
    st.plotly_chart(
        band_figure(values, seeds, score), config={"displayModeBar": False}, key=f"{key}_band"
    )
    notes = [f"generator seeds {', '.join(str(s) for s in seeds)}"]
    if bool(band["noncommittal_flips"]):
        notes.append("⚠️ the noncommittal verdict flips between repeats")
    if int(band["near_duplicates"]):
        notes.append(
            f"near-duplicate generated questions (cosine ≥ {NEAR_DUPLICATE}) in "
            f"{int(band['near_duplicates'])} of {k} repeats"
        )
    st.caption(" · ".join(notes))


def models_mismatch(info: RunInfo, metric: Any) -> str | None:
    """Why the sidebar's models cannot re-score this run (None when they can)."""
    want = (
        info.settings.get("llm_name"),
        info.settings.get("embeddings_name"),
        info.settings.get("strictness"),
    )
    have = (metric.llm.name, metric.embeddings.name, metric.strictness)
    if want[0] and want != have:
        return (
            f"This run was scored by {want[0]} + {want[1]} (strictness {want[2]}); the sidebar "
            f"has {have[0]} + {have[1]} (strictness {have[2]}). Repeats must come from the "
            "run's own models: choose them in the sidebar."
        )
    return None


def rescore_panel(
    info: RunInfo, settings: Settings, *, page_rows: list[int], inspected: int, may_start: bool
) -> None:
    """The Dataset page's "Re-score k times" expander (keys ``ds_stab_*``)."""
    done = run_stability(info.id)
    title = "🔁 **Stability**: re-score rows k times with other generator seeds"
    if not done.empty:
        title += f" ({_rows_text(len(done))} re-scored)"
    with st.expander(title, expanded=False):
        c1, c2, c3 = st.columns([1, 2, 1], vertical_alignment="bottom")
        k = c1.number_input("k (repeats)", 2, MAX_REPEATS, 5, key="ds_stab_k")
        which = c2.radio("Rows", list(_WHICH), format_func=_WHICH.get, key="ds_stab_which")
        size = c3.number_input(
            "Sample size",
            1,
            max(1, info.n_scored),
            min(12, info.n_scored),
            key="ds_stab_n",
            disabled=which != "sample",
        )
        rows = _rows(info, which, page_rows, inspected, int(size))
        st.caption(
            f"{len(rows)} row(s) x {int(k)} repeats. Each repeat draws its own N questions "
            "(seeds spaced by N, so no two repeats share one); repeats already made come from "
            "the cache."
        )
        go_ = st.button(
            f"Re-score {len(rows)} row(s) {int(k)} times",
            key="ds_stab_go",
            icon="🔁",
            disabled=not rows,
        )
        if go_ and may_start:
            _run(info, settings, rows, int(k))
        if not done.empty:
            st.caption(_summary_line(done))


def _rows(info: RunInfo, which: str, page_rows: list[int], inspected: int, size: int) -> list[int]:
    if which == "inspected":
        return [int(inspected)]
    if which == "page":
        return [int(r) for r in page_rows]
    scored = get_store().columns(info.id, ["score"])["row"].astype(int).tolist()
    return sorted(random.Random(info.id).sample(scored, min(size, len(scored))))


def _run(info: RunInfo, settings: Settings, rows: list[int], k: int) -> None:
    store = get_store()
    try:
        mode = info.resume_mode
        metric = get_metric(replace(settings, mode=mode) if mode else settings)
    except RelevancyError as exc:
        st.error(f"**Cannot build the backend.** {error_text(exc)}", icon="⛔")
        return
    why = models_mismatch(info, metric)
    if why:
        st.warning(esc(why), icon="⚠️")
        return
    seeds = repeat_seeds(metric.llm.seed or 0, k, metric.strictness)
    inputs = store.inputs(info.id, rows)[["user_input", "response"]].reset_index(drop=True)
    bar = st.progress(0.0, text=f"Re-scoring {len(rows)} row(s) x {k}")

    def saved(seed: int, i: int, result: Any) -> None:
        store.append_repeats(info.id, [(rows[i], seed, result)])

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"Re-scored {done} of {total}")

    rescore(metric, inputs, seeds, progress=progress, on_result=saved)
    st.session_state["ds_flash"] = (
        f"Re-scored {len(rows)} row(s) {k} times (generator seeds "
        f"{', '.join(str(s) for s in seeds)})."
    )
    st.rerun()


def _summary_line(table: pd.DataFrame) -> str:
    s = summarize_stability(table["score_sd"].tolist())
    flips = int(table["noncommittal_flips"].astype(bool).sum())
    dups = int((table["near_duplicates"] > 0).sum())
    return (
        f"{_rows_text(s['rows'])} re-scored: per-row sd median {fmt(s['median_row_sd'])}, p95 "
        f"{fmt(s['p95_row_sd'])}, max {fmt(s['max_row_sd'])} · noncommittal verdict flips in "
        f"{flips} · near-duplicate questions in {dups}"
    )


def _rows_text(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def run_stability_figures(run_id: int) -> None:
    """Median and p95 per-row sd of the run's re-scored rows (nothing when none)."""
    table = run_stability(run_id)
    if table.empty:
        st.caption(
            "Stability: no row of this run has been re-scored yet (Dataset page, "
            "**Stability**; or `relevancy score --repeats K --save-run`)."
        )
        return
    s = summarize_stability(table["score_sd"].tolist())
    k = int(table["repeats"].max())
    st.markdown(f"**Stability** · {_rows_text(len(table))} re-scored up to {k} times")
    flips = int(table["noncommittal_flips"].astype(bool).sum())
    dups = int((table["near_duplicates"] > 0).sum())
    c = st.columns(4)
    c[0].metric(
        "Median per-row sd",
        fmt(s["median_row_sd"]),
        border=True,
        help="Population standard deviation of each re-scored row's scores over its repeats; "
        "the median over rows.",
    )
    c[1].metric("p95 per-row sd", fmt(s["p95_row_sd"]), border=True)
    c[2].metric(
        "Noncommittal flips",
        str(flips),
        border=True,
        help="Rows whose noncommittal verdict changes between repeats.",
    )
    c[3].metric(
        "Near-duplicate questions",
        str(dups),
        border=True,
        help=f"Rows with two generated questions at cosine ≥ {NEAR_DUPLICATE} in some repeat.",
    )
