"""Embeddings: where the generated questions land relative to the questions that were asked."""

from __future__ import annotations

import numpy as np
import streamlit as st

from relevancy._errors import RelevancyError
from relevancy.dashboard import charts
from relevancy.dashboard.drilldown import render_result
from relevancy.dashboard.sidebar import get_embedder_for
from relevancy.dashboard.state import get_store, load_run_data
from relevancy.dashboard.ui import esc, setup_page
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


def _row_of(point: dict) -> int | None:
    """The row a selected point belongs to (``customdata`` = ``[row, point index]``)."""
    custom = point.get("customdata")
    if isinstance(custom, dict):  # some plotly versions send arrays as {"0": .., "1": ..}
        custom = [custom[k] for k in sorted(custom, key=int)]
    if isinstance(custom, (list, tuple)) and custom:
        return int(custom[0])
    return None


selected_rows: list[int] = []
selection = getattr(event, "selection", None)
for p in (selection or {}).get("points", []) if selection is not None else []:
    row_of = _row_of(p)
    if row_of is not None:
        selected_rows.append(row_of)
selected_rows = list(dict.fromkeys(selected_rows))

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
    format_func=lambda r: f"row {r} · {str(data.frame['user_input'].iloc[by_row[r]])[:80]}",
)
result = data.results[by_row[int(row)]]
record = data.frame.iloc[by_row[int(row)]]
with st.container(border=True):
    meta = [f"row {int(row)}"] + [
        f"{c}: {esc(record[c])}" for c in ("id", "variant") if c in data.frame.columns
    ]
    st.caption(" · ".join(meta))
    st.markdown("**Question**")
    st.text(result.user_input)
    render_result(
        result,
        key="emb_drill",
        threshold=settings.threshold,
        embedder=get_embedder_for(result.embeddings, settings),
        wide=True,
    )
