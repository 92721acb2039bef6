"""Agreement: do the scores agree with people? Human labels beside scores, with CIs."""

from __future__ import annotations

import math

import streamlit as st

from relevancy.dashboard.views.agreement import (
    chart_note,
    few_labels,
    figures_table,
    resampling_note,
)
from relevancy.dashboard.views.agreement_chart import score_label_spec
from relevancy.dashboard.views.format import mode_text, row_label
from relevancy.dashboard.widgets.drilldown import render_row
from relevancy.dashboard.widgets.labels import (
    NO_LABELS,
    agreement_metrics,
    chance_for,
    disagreement_tables,
    label_scale,
    run_agreement,
    run_chance,
)
from relevancy.dashboard.widgets.models import embedder_for
from relevancy.dashboard.widgets.page import setup_page
from relevancy.dashboard.widgets.state import get_store, input_columns, run_result, scored_run

settings = setup_page(
    "Agreement",
    "🤝",
    "Is the metric right? The scores beside human labels: AUROC or Spearman, the best "
    "threshold, and the rows where they disagree.",
)
info = scored_run()
if info is None:
    st.stop()
kind, values = label_scale(info.id)
cut = None
if kind == "graded":
    middle = (values[0] + values[-1]) / 2  # the library's default cut
    cut = st.select_slider(
        "Good answer means a label of at least",
        options=list(values),
        value=min(v for v in values if v >= middle),
        key=f"agr_cut_{info.id}",
        help="Graded labels are cut in two for the AUROC, the threshold and the disagreements "
        "(Spearman uses them as they are).",
    )
view = run_agreement(info.id, cut=cut)
if not view.overall.rows:
    st.info(NO_LABELS, icon="🏷️")
    st.page_link("pages/1_Dataset.py", label="Label rows on the Dataset page", icon="🗂️")
    st.stop()
st.caption(
    f"Run **#{info.id}** · scores: {mode_text(info.mode)} · {view.overall.rows:,} scored rows "
    f"with a {view.overall.kind} label ({view.unlabelled:,} without) · 95% CIs resample "
    f"questions ({view.overall.questions:,}; {resampling_note(view)})."
)
if warning := few_labels(view):  # 4 labels give an AUROC with a CI of 0.00-0.25
    st.warning(warning, icon="⚠️")
agreement_metrics(view)
for note in view.overall.notes:
    st.caption(note)
left, right = st.columns([3, 2])
with left:
    level = None
    if info.mode == "ragas":  # scores are Ragas values: where unrelated pairs score, shaded
        level = max(run_chance(info.id).values(), key=lambda c: c.rows, default=None)
    data, spec = score_label_spec(view, chance=level)
    st.vega_lite_chart(data, spec, key="agr_chart", alt="Scores by human label")
    if note := chart_note(view):
        st.caption(note)
with right:
    st.markdown("**How to read it**")
    st.caption(
        "**AUROC**: the chance that a good answer outscores a bad one (0.5 is a coin, 1 is "
        "perfect). **Best threshold**: the score that best separates them (highest recall minus "
        "false-positive rate); **precision** and **recall** are those of calling the answers at "
        "or above it good. Each figure has its 95% interval: resampled by question, so answers "
        "to one question move together."
        + (
            " **Spearman**: the rank correlation of scores and graded labels."
            if kind == "graded"
            else ""
        )
    )
st.markdown("**By variant**" if view.by_group else "**Figures**")
st.dataframe(figures_table(view), hide_index=True, key="agr_table")

st.subheader("Where the score and the label disagree", anchor=False)
st.caption(
    f"Against the best threshold ({view.threshold:.3f}), furthest from it first; select a row "
    "to open its drill-down and change its label."
    if math.isfinite(view.threshold)
    else "No best threshold: every labelled row has the same label, so no score separates good "
    "from bad answers and no row disagrees with it. Label a few answers of the other kind."
)
picked = disagreement_tables(view, key=f"agr_dis_{info.id}")
INSPECT = f"agr_inspect_{info.id}"
if picked is not None:
    st.session_state[INSPECT] = picked
options = view.disagreements["row"].astype(int).tolist()
current = st.session_state.get(INSPECT)
if current is not None and current not in options:
    options.insert(0, int(current))  # relabelled: no longer a disagreement, still inspected
if not options:
    st.stop()
scores = dict(zip(view.frame["row"].astype(int), view.frame["score"]))
questions = dict(zip(view.frame["row"].astype(int), view.frame["user_input"]))
row = st.selectbox(
    "Row to inspect",
    options,
    format_func=lambda r: row_label(r, scores.get(r), questions.get(r, "")),
    key=INSPECT,
)
result = run_result(info.id, row)
record = get_store().inputs(info.id, [row]).iloc[0]
render_row(
    result,
    row,
    {c: record[c] for c in input_columns(info) if c in record and c != "label"},
    key="agr_drill",
    threshold=settings.threshold,
    embedder=embedder_for(result.embeddings, settings),
    run_id=info.id,
    chance=chance_for(info.id, result.embeddings),
)
