"""Embeddings: where the generated questions land relative to the questions that were asked."""

from __future__ import annotations

import numpy as np
import streamlit as st

from relevancy import RelevancyError
from relevancy.analysis.projection import METHODS, project, stratified_sample
from relevancy.dashboard.views import projection_chart, projection_vega
from relevancy.dashboard.views.format import esc
from relevancy.dashboard.widgets.drilldown import render_row
from relevancy.dashboard.widgets.models import embedder_for
from relevancy.dashboard.widgets.page import setup_page
from relevancy.dashboard.widgets.permalink import row_link
from relevancy.dashboard.widgets.state import (
    get_store,
    input_columns,
    run_columns,
    run_points,
    run_result,
    scored_run,
)
from relevancy.dashboard.widgets.waiting import run_with_progress, shade_all_rows
from relevancy.report.charts import WEBGL_ABOVE

#: above this many scored rows the map draws a stratified sample (all points one click away;
#: the browser's drawing grows with the points: 1,000 rows, 4,000 points, took 0.3 s more)
SAMPLE_ROWS = 500
#: the most rows whose points are drawn at once (a larger run draws a sample of this many)
ALL_POINTS_UP_TO = 20_000
settings = setup_page(
    "Embeddings",
    "🧭",
    "Each question that was asked, and the questions rebuilt from its answers, in one map.",
)
info = scored_run()
if info is None:
    st.stop()

c1, c2, c3 = st.columns([2, 1, 2])
with c1:
    method = st.segmented_control(
        "Projection",
        list(METHODS),
        format_func=METHODS.get,
        default="pca",
        key="emb_method",
        required=True,
        help="PCA is instant. UMAP and t-SNE show local neighbourhoods better but take "
        "longer (UMAP's first use on a machine compiles code: minutes; a bar shows how long).",
    )
with c2:
    dims = st.segmented_control(
        "Dimensions",
        [2, 3],
        format_func=lambda d: f"{d}D",
        default=2,
        key="emb_dims",
        required=True,
    )
with c3:
    color_by = st.segmented_control(
        "Colour by",
        ["score", "variant", "noncommittal"],
        format_func=lambda c: esc(info.shown(c)),  # the input's own name for the variant
        default="score",
        key="emb_color",
        required=True,
    )


@st.cache_data(show_spinner=False, max_entries=24)
def _projection(
    path: str,
    run_id: int,
    version: str,
    rows: tuple[int, ...] | None,
    method: str,
    dims: int,
    _matrix: np.ndarray,
) -> np.ndarray:
    return project(_matrix, method, dims)


rows = None  # every scored row
if info.n_scored > SAMPLE_ROWS:
    most = min(info.n_scored, ALL_POINTS_UP_TO)  # a million rows' vectors would be 6 GB
    shown = f"All {most:,}" if most == info.n_scored else f"{most:,} of the {info.n_scored:,}"
    everything = st.toggle(
        f"{shown} rows (slower to draw)",
        key=f"emb_all_{info.id}",
        help=f"Off: a sample of {SAMPLE_ROWS:,} rows that keeps each variant's and each score "
        f"band's share; on, the same kind of sample of {most:,} rows"
        + (" (every row)" if most == info.n_scored else f" (at most {ALL_POINTS_UP_TO:,})")
        + f". Above {WEBGL_ABOVE:,} points the map is drawn with WebGL, and selects by lasso.",
    )
    if (take := most if everything else SAMPLE_ROWS) < info.n_scored:
        strata = run_columns(
            info.id, ["score", *(["variant"] if "variant" in info.columns else [])]
        )
        band = (strata["score"].fillna(-1) * 10).round().astype(int).astype(str)
        labels = strata.get("variant", "").astype(str) + "|" + band
        rows = tuple(strata["row"].iloc[stratified_sample(labels, take)].tolist())
points, matrix = run_points(info.id, rows)
if points.empty:
    st.info("This run has no embeddings to show (all rows failed).", icon="🫥")
    st.stop()
store = get_store()
label = METHODS[method]
try:
    coords = run_with_progress(
        store,
        method,
        len(points),
        f"{label} projection of {len(points):,} points",
        lambda: _projection(
            str(store.path), info.id, store.version(info.id), rows, method, int(dims), matrix
        ),
    )
except RelevancyError as exc:
    st.error(esc(exc), icon="⛔")
    st.stop()

shade = shade_all_rows(store, info, rows, matrix, linear=method == "pca" and int(dims) == 2)

n_orig = int((points["kind"] == "question").sum())
# a canvas (Vega-Lite) draws the 2-D map of up to a few thousand points; 3-D and bigger maps
# are plotly's (WebGL, the lasso): its script alone is half a second of every visit
flat = int(dims) == 2 and len(points) <= WEBGL_ABOVE
st.caption(
    (f"A sample of {len(rows):,} of {info.n_scored:,} rows: " if rows is not None else "")
    + f"{n_orig:,} questions asked (◆) and {len(points) - n_orig:,} generated questions (●), "
    f"{label} of their embeddings. A line joins each generated question to the question it "
    "should match: short lines and tight clusters mean relevant answers; long lines and "
    "distant points mean the answer drifted. Hover for the text; "
    + (projection_vega.HOW if flat else projection_chart.HOW)
    + "."
    + (
        f" Shaded: all {shade.total:,} points of the {info.n_scored:,} rows (each row's "
        "question and generated questions), placed by the same PCA, fitted on the sample"
        + (f"; {shade.outside:,} fall outside the frame." if shade.outside else ".")
        if shade is not None
        else ""
    )
)
if flat:
    data, spec = projection_vega.map_spec(points, coords, color_by=color_by, density=shade)
    event = st.vega_lite_chart(
        data,
        spec,
        # a new map, a new selection: a box drawn on another run or projection is not this one's
        key=f"emb_map_{info.id}_{method}_{color_by}_{len(points)}_{shade is not None}",
        alt=f"{label} map of the questions asked and generated",
        on_select="rerun",
        selection_mode=(projection_vega.PICK, projection_vega.BOX),
    )
else:
    event = st.plotly_chart(
        projection_chart.projection_scatter(
            points, coords, color_by=color_by, dims=int(dims), density=shade
        ),
        key="emb_chart",
        on_select="rerun",
        selection_mode=("points", "box", "lasso"),
    )
selection = getattr(event, "selection", None)
selected_rows = (
    projection_vega.selected_rows(selection, data)
    if flat
    else projection_chart.selected_rows(selection)
)

ROW_KEY, CLICK_KEY = f"emb_row_{info.id}", f"emb_click_{info.id}"
options = selected_rows if len(selected_rows) > 1 else sorted(set(points["row"].astype(int)))
if selected_rows and len(selected_rows) > 1:
    st.caption(f"{len(selected_rows)} rows selected; showing the first. Pick another below.")
# the chart sends its selection again on every rerun: only a new one moves the picker, so a
# row picked below after a click stays picked
if selected_rows and st.session_state.get(CLICK_KEY) != repr(selection):
    st.session_state[ROW_KEY] = selected_rows[0]
st.session_state[CLICK_KEY] = repr(selection)
if st.session_state.get(ROW_KEY) not in options:
    st.session_state[ROW_KEY] = options[0]
texts = projection_chart.row_questions(points)
row = st.selectbox(
    "Row", options, key=ROW_KEY, format_func=lambda r: f"row {r + 1} · {texts[r][:80]}"
)
row_link(info.id, row)  # opens the row's drill-down on the Dataset page
result = run_result(info.id, row)
meta = store.inputs(info.id, [row]).iloc[0]
render_row(
    result,
    row,
    {c: meta[c] for c in input_columns(info) if c in meta},
    key="emb_drill",
    threshold=settings.threshold,
    embedder=embedder_for(result.embeddings, settings),
    min_questions=info.settings.get("min_questions"),
)
