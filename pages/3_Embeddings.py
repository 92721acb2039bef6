"""Embeddings: where the generated questions land relative to the questions that were asked."""

from __future__ import annotations

import numpy as np
import streamlit as st

from relevancy import RelevancyError
from relevancy.dashboard import charts
from relevancy.dashboard.drilldown import render_row
from relevancy.dashboard.models import embedder_for
from relevancy.dashboard.page import setup_page
from relevancy.dashboard.state import get_store, input_columns, load_run_data
from relevancy.dashboard.ui import esc, row_label
from relevancy.projection import METHODS, build_points, project

settings = setup_page(
    "Embeddings",
    "🧭",
    "Each question that was asked, and the questions rebuilt from its answers, in one map.",
)
data = load_run_data()
if data is None:
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
        "longer (UMAP's first use compiles code: up to a minute).",
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
        default="score",
        key="emb_color",
        required=True,
    )


@st.cache_data(show_spinner=False, max_entries=24)
def _projection(
    store_path: str, run_id: int, version: str, method: str, dims: int, _matrix: np.ndarray
) -> np.ndarray:
    return project(_matrix, method, dims)


points, matrix = build_points(data.frame, data.results)
if points.empty:
    st.info("This run has no embeddings to show (all rows failed).", icon="🫥")
    st.stop()
store = get_store()
label = METHODS[method]
try:
    with st.spinner(f"Computing the {label} projection of {len(points)} points…"):
        coords = _projection(
            str(store.path), data.info.id, store.version(data.info.id), method, int(dims), matrix
        )
except RelevancyError as exc:
    st.error(esc(exc), icon="⛔")
    st.stop()

n_orig = int((points["kind"] == "question").sum())
st.caption(
    f"{n_orig} questions asked (◆) and {len(points) - n_orig} generated questions (●), "
    f"{label} of their embeddings. A line joins each generated question to the question it "
    "should match: short lines and tight clusters mean relevant answers; long lines and "
    "distant points mean the answer drifted. Hover for the text; draw a lasso (or a box, from "
    "the chart's toolbar) around points to open their rows below."
)
event = st.plotly_chart(
    charts.projection_scatter(points, coords, color_by=color_by, dims=int(dims)),
    key="emb_chart",
    on_select="rerun",
    selection_mode=("points", "box", "lasso"),
)


selected_rows = charts.selected_rows(getattr(event, "selection", None))

ROW_KEY = f"emb_row_{data.info.id}"
rows = data.frame["row"].astype(int).tolist()
by_row = {r: i for i, r in enumerate(rows)}
if selected_rows:
    st.session_state[ROW_KEY] = selected_rows[0]
    if len(selected_rows) > 1:
        st.caption(f"{len(selected_rows)} rows selected; showing the first. Pick another below.")
options = selected_rows if len(selected_rows) > 1 else rows
if st.session_state.get(ROW_KEY) not in options:
    st.session_state[ROW_KEY] = options[0]
row = st.selectbox(
    "Row",
    options,
    key=ROW_KEY,
    format_func=lambda r: row_label(
        r, data.frame["score"].iloc[by_row[r]], data.frame["user_input"].iloc[by_row[r]]
    ),
)
result, record = data.results[by_row[int(row)]], data.frame.iloc[by_row[int(row)]]
meta = {c: record[c] for c in input_columns(data) if c not in ("user_input", "response")}
render_row(
    result,
    row,
    meta,
    key="emb_drill",
    threshold=settings.threshold,
    embedder=embedder_for(result.embeddings, settings),
)
