"""Distributions: how scores spread, split by variant, model or run, against a threshold."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from relevancy.dashboard import charts
from relevancy.dashboard.state import list_runs, load_run, load_run_data
from relevancy.dashboard.ui import fmt, mode_of, mode_text, modes_in, pct, setup_page
from relevancy.report import summary_table
from relevancy.store import RunInfo

settings = setup_page(
    "Distributions",
    "📊",
    "How scores spread across rows: histogram, box/violin and ECDF, split by group.",
)
threshold = settings.threshold
data = load_run_data()
if data is None:
    st.stop()
info: RunInfo = data.info

SPLITS = {"variant": "variant", "model": "model", "run": "run", "none": "nothing"}
c1, c2 = st.columns([2, 3])
with c1:
    split = st.segmented_control(
        "Split by",
        list(SPLITS),
        format_func=lambda s: SPLITS[s],
        default="variant",
        key="dist_split",
        required=True,
    )
runs = list_runs()
frame = data.frame.copy()
frame["run"] = f"#{info.id} {info.name}"
frame["model"] = frame["llm"].astype(str) + " + " + frame["embeddings"].astype(str)
if split == "run":
    with c2:
        labels = {r.id: r.label for r in runs if r.n_scored}
        chosen = st.multiselect(
            "Runs to include",
            list(labels),
            default=[info.id],
            format_func=lambda i: labels[i],
            key="dist_runs",
        )
    parts = []
    for run_id in chosen:
        d = load_run(run_id).frame.copy()
        d["run"] = f"#{run_id} {load_run(run_id).info.name}"
        parts.append(d)
    if not parts:
        st.info("Pick at least one run.", icon="☝️")
        st.stop()
    frame = pd.concat(parts, ignore_index=True)
by = None if split == "none" else split
if by == "variant" and "variant" not in frame.columns:
    st.caption("This run has no variant column: showing all rows together.")
    by = None

modes = modes_in(frame)
mode = mode_of(modes)
value = "score"
if mode != "ragas" and "ragas_value" in frame.columns:
    value = st.segmented_control(
        "Show",
        ["score", "Ragas value"],
        default="score",
        key="dist_value",
        required=True,
        help="The score of each row's mode, or the Ragas value every row keeps (the same for "
        "every mode, so comparable across runs).",
    )
if value == "Ragas value":
    frame = frame.assign(score=pd.to_numeric(frame["ragas_value"], errors="coerce"))
    st.caption("Showing each row's **Ragas value** (the Ragas Answer Relevancy).")
elif mode == "mixed":
    st.warning(
        f"These rows were scored in different modes ({', '.join(modes)}): their scores mean "
        "different things, so the groups are not comparable. Show the **Ragas value** instead, "
        "which every row has.",
        icon="⚠️",
    )
else:
    st.caption(f"Scores: {mode_text(mode)}.")
scores = pd.to_numeric(frame["score"], errors="coerce")
stats = summary_table(frame, threshold=threshold, by=by)
if value == "Ragas value":
    stats = stats.drop(columns=["ragas_mean"], errors="ignore")
overall = stats.iloc[0]
m = st.columns(4)
m[0].metric(
    "Mean score",
    fmt(overall["mean"]),
    border=True,
    help="With a 95% bootstrap confidence interval (below).",
)
m[1].metric("Median", fmt(overall["median"]), border=True)
m[2].metric(f"Below {threshold:.2f}", pct(overall["below"]), border=True)
m[3].metric("NaN rows", str(int(overall["NaN"])), border=True)
st.markdown(
    f"Mean **{fmt(overall['mean'])}**, 95% CI **[{fmt(overall['ci_low'])}, "
    f"{fmt(overall['ci_high'])}]** over {int(overall['rows'] - overall['NaN'])} scored rows."
)
if value == "Ragas value" or mode == "ragas":
    st.caption(
        "Good answers usually score above 0.7 with the embedded models (0.8+ with API models); "
        "scores under the threshold deserve a look on the Dataset page. Noncommittal answers "
        "sit at exactly 0."
    )
else:
    st.caption(
        "Focus scores have a scale of their own: compare them with other focus scores, not "
        "with Ragas values (switch **Show** to compare those). Scores under the threshold "
        "deserve a look on the Dataset page. Noncommittal answers sit at exactly 0."
    )

tab1, tab2, tab3 = st.tabs(["📊 Histogram", "📦 Box / violin", "📈 ECDF"])
with tab1:
    st.plotly_chart(
        charts.score_histogram(frame, threshold=threshold, by=by),
        key="dist_hist",
    )
    st.caption("How many rows fall in each score band; the dashed line is the threshold.")
with tab2:
    kind = st.radio(
        "Shape", ["box", "violin"], horizontal=True, key="dist_kind", label_visibility="collapsed"
    )
    st.plotly_chart(
        charts.score_box(frame, threshold=threshold, by=by, kind=kind),
        key="dist_box",
    )
    st.caption(
        "Each dot is a row; the box spans the middle half of the scores, the line inside is "
        "the median and the dashed line the mean. Hover a dot to see its question."
    )
with tab3:
    st.plotly_chart(
        charts.score_ecdf(frame, threshold=threshold, by=by),
        key="dist_ecdf",
    )
    st.caption(
        "For each score x, the share of rows scoring at most x. Where a curve crosses the "
        "threshold line is the share of low rows; a curve further right is better."
    )

st.markdown("**Summary statistics**")
table = stats.assign(
    **{
        "95% CI": [f"[{fmt(a)}, {fmt(b)}]" for a, b in zip(stats["ci_low"], stats["ci_high"])],
        f"below {threshold:.2f}": [pct(x) for x in stats["below"]],
    }
).drop(columns=["ci_low", "ci_high", "below"])
st.dataframe(
    table,
    hide_index=True,
    key="dist_table",
    column_config={
        "mean": st.column_config.NumberColumn(format="%.3f"),
        "median": st.column_config.NumberColumn(format="%.3f"),
        "ragas_mean": st.column_config.NumberColumn(
            "mean Ragas value",
            format="%.3f",
            help="The mean Ragas Answer Relevancy of the same rows.",
        ),
    },
)
st.caption(
    "The 95% confidence interval of the mean is a percentile bootstrap (2,000 resamples): "
    "with few rows it is wide, so differences inside it may be noise."
)
