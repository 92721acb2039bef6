"""Compare: paired A/B of two answer variants (or two saved runs) on the same questions."""

from __future__ import annotations

import json
import math

import pandas as pd
import streamlit as st

from relevancy._result import RelevancyResult
from relevancy.compare import pair_rows, summarize_pairs
from relevancy.dashboard import charts
from relevancy.dashboard.drilldown import render_result
from relevancy.dashboard.sidebar import get_embedder_for
from relevancy.dashboard.state import list_runs, load_run, load_run_data
from relevancy.dashboard.ui import esc, fmt, mode_of, modes_in, setup_page

settings = setup_page(
    "Compare",
    "⚖️",
    "Which variant answers more relevantly? Paired differences on the same questions.",
)
data = load_run_data()
if data is None:
    st.stop()
threshold = settings.threshold
frame = data.frame
has_variants = "variant" in frame.columns and frame["variant"].nunique() >= 2
runs = [r for r in list_runs() if r.n_scored]

modes = ["variants", "runs"]
mode = st.segmented_control(
    "Compare",
    modes,
    format_func={"variants": "Two variants of this run", "runs": "Two saved runs"}.get,
    default="variants" if has_variants else "runs",
    key="cmp_mode",
    required=True,
)
tie_margin = 0.02
results_a: dict[int, RelevancyResult] = {}
results_b: dict[int, RelevancyResult] = {}
c1, c2, c3 = st.columns([2, 2, 1])
if mode == "variants":
    if not has_variants:
        st.info(
            "This run has fewer than two variants. Score a table with a variant column, or "
            "compare two saved runs instead.",
            icon="ℹ️",
        )
        st.stop()
    variants = sorted(frame["variant"].astype(str).unique())
    with c1:
        label_a = st.selectbox("A (baseline)", variants, index=0, key="cmp_a")
    with c2:
        label_b = st.selectbox(
            "B (candidate)", variants, index=1 if len(variants) > 1 else 0, key="cmp_b"
        )
    with c3:
        tie_margin = st.number_input(
            "Tie margin",
            0.0,
            0.5,
            0.02,
            step=0.01,
            key="cmp_margin",
            help="Differences within ± this count as ties.",
        )
    values = frame["variant"].astype(str)
    frame_a, frame_b = frame[values == label_a], frame[values == label_b]
    by_row = {int(r): res for r, res in zip(frame["row"], data.results)}
    results_a = results_b = by_row
else:
    if len(runs) < 2:
        st.info("Only one run has scored rows: score another dataset to compare runs.", icon="ℹ️")
        st.stop()
    labels = {r.id: r.label for r in runs}
    ids = list(labels)
    with c1:
        run_a = st.selectbox(
            "A (baseline run)",
            ids,
            index=min(1, len(ids) - 1),
            format_func=labels.get,
            key="cmp_run_a",
        )
    with c2:
        run_b = st.selectbox(
            "B (candidate run)", ids, index=0, format_func=labels.get, key="cmp_run_b"
        )
    with c3:
        tie_margin = st.number_input(
            "Tie margin",
            0.0,
            0.5,
            0.02,
            step=0.01,
            key="cmp_margin",
            help="Differences within ± this count as ties.",
        )
    da, db = load_run(run_a), load_run(run_b)
    label_a, label_b = f"#{run_a}", f"#{run_b}"
    variant = None
    if "variant" in da.frame.columns and "variant" in db.frame.columns:
        common = sorted(set(da.frame["variant"].astype(str)) & set(db.frame["variant"].astype(str)))
        if len(common) > 1:
            pick = st.selectbox("Variant (in both runs)", ["(all)", *common], key="cmp_run_variant")
            variant = None if pick == "(all)" else pick
    frame_a, frame_b = da.frame, db.frame
    if variant is not None:
        frame_a = frame_a[frame_a["variant"].astype(str) == variant]
        frame_b = frame_b[frame_b["variant"].astype(str) == variant]
    results_a = {int(r): res for r, res in zip(da.frame["row"], da.results)}
    results_b = {int(r): res for r, res in zip(db.frame["row"], db.results)}

# --- what the numbers are: both sides' scoring modes ---------------------------------------
modes_a, modes_b = modes_in(frame_a), modes_in(frame_b)
mode_a, mode_b = mode_of(modes_a), mode_of(modes_b)
same_mode = mode_a == mode_b and mode_a != "mixed"
has_ragas = "ragas_value" in frame_a.columns and "ragas_value" in frame_b.columns
on_ragas = False
if not same_mode:
    st.warning(
        f"**{esc(label_a)} was scored in {mode_a or '?'} mode and {esc(label_b)} in "
        f"{mode_b or '?'} mode: their scores mean different things**, so a difference between "
        "them says little about the answers. "
        + (
            "Comparing on the **Ragas value** instead, which every row has."
            if has_ragas
            else "Score both in the same mode to compare them."
        ),
        icon="⚠️",
    )
    on_ragas = has_ragas
elif mode_a != "ragas" and has_ragas:
    on_ragas = (
        st.segmented_control(
            "Compare on",
            ["score", "Ragas value"],
            default="score",
            key="cmp_value",
            required=True,
            help=f"The {mode_a} score of both sides, or the Ragas value every row also keeps.",
        )
        == "Ragas value"
    )
if on_ragas:
    frame_a = frame_a.assign(score=pd.to_numeric(frame_a["ragas_value"], errors="coerce"))
    frame_b = frame_b.assign(score=pd.to_numeric(frame_b["ragas_value"], errors="coerce"))
    compared = "Ragas value"
else:
    compared = f"{mode_a} score" if same_mode and mode_a else "score"
st.caption(
    f"Comparing the **{compared}** of each pair"
    + (
        f" ({esc(label_a)}: {mode_a} mode, {esc(label_b)}: {mode_b} mode)."
        if not same_mode
        else "."
    )
)
paired = pair_rows(frame_a, frame_b, tie_margin=tie_margin)

if paired.empty:
    st.warning(
        "No pairs: A and B share no question (pairs are matched on the question text, and on "
        "the id column when both sides have one).",
        icon="🔗",
    )
    st.stop()

s = summarize_pairs(paired, tie_margin=tie_margin)
m = st.columns(5)
m[0].metric(
    "Pairs",
    str(s["pairs"]),
    border=True,
    help=f"{s['nan_pairs']} pair(s) with a NaN side are left out of the statistics.",
)
m[1].metric(f"{label_b} better", str(s["wins"]), border=True)
m[2].metric("Ties", str(s["ties"]), border=True, help=f"|B − A| ≤ {tie_margin:.2f}")
m[3].metric(f"{label_a} better", str(s["losses"]), border=True)
m[4].metric(
    "Mean B − A",
    fmt(s["mean_diff"]),
    border=True,
    help="Mean of B − A over the pairs, with a 95% bootstrap confidence interval.",
)
lo, hi = s["ci_low"], s["ci_high"]
ci = f"mean difference {fmt(s['mean_diff'])}, 95% CI [{fmt(lo)}, {fmt(hi)}]"
if math.isnan(lo):
    verdict = "Too few pairs for a confidence interval."
elif lo > 0:
    verdict = f"**{esc(label_b)} is more relevant on average** ({ci}: above 0)."
elif hi < 0:
    verdict = f"**{esc(label_a)} is more relevant on average** ({ci}: below 0)."
else:
    verdict = (
        f"**No clear winner**: the {ci} includes 0, so the gap may be noise. Look at the "
        "regressions below."
    )
st.markdown(verdict)

left, right = st.columns([3, 2])
with left:
    st.plotly_chart(
        charts.ab_scatter(paired, label_a=label_a, label_b=label_b, tie_margin=tie_margin),
        key="cmp_scatter",
    )
    st.caption(
        f"Each dot is one question: {label_a}'s score across, {label_b}'s up. Above the "
        "diagonal, B is more relevant; dotted lines bound the ties."
    )
with right:
    st.plotly_chart(
        charts.diff_histogram(paired, tie_margin=tie_margin, label=f"{label_b} − {label_a}"),
        key="cmp_diffs",
    )
    st.caption("Distribution of paired differences; the grey band is the tie margin.")

st.markdown("**All pairs** (sorted by difference, regressions first)")
table = paired.sort_values("diff", kind="stable")
# beside non-Ragas scores, each side's Ragas value; each side's mode when they differ
ragas_cols = (
    ["ragas_value_a", "ragas_value_b"]
    if not on_ragas and mode_a != "ragas" and "ragas_value_a" in table
    else []
)
mode_cols = ["mode_a", "mode_b"] if not same_mode and "mode_a" in table else []
cols = [
    c
    for c in ("id", "user_input", "score_a", "score_b", *ragas_cols, "diff", "outcome", *mode_cols)
    if c in table
]
value_a = f"{label_a} (Ragas value)" if on_ragas else label_a
value_b = f"{label_b} (Ragas value)" if on_ragas else label_b
names = {
    "user_input": "question",
    "score_a": value_a,
    "score_b": value_b,
    "ragas_value_a": f"{label_a} Ragas value",
    "ragas_value_b": f"{label_b} Ragas value",
    "diff": "B − A",
    "mode_a": f"{label_a} mode",
    "mode_b": f"{label_b} mode",
}
st.dataframe(
    table[cols].rename(columns=names),
    hide_index=True,
    key="cmp_table",
    height=min(38 + 35 * len(table), 360),
    column_config={
        value_a: st.column_config.NumberColumn(format="%.3f"),
        value_b: st.column_config.NumberColumn(format="%.3f"),
        names["ragas_value_a"]: st.column_config.NumberColumn(format="%.3f"),
        names["ragas_value_b"]: st.column_config.NumberColumn(format="%.3f"),
        "B − A": st.column_config.NumberColumn(format="%+.3f"),
    },
)

st.subheader("Biggest regressions", anchor=False)
losses = paired[paired["outcome"] == "loss"].sort_values("diff", kind="stable")
if losses.empty:
    st.success(f"No regressions: {label_b} never scores worse than {label_a} beyond the margin.")
    st.stop()
n_show = (
    st.slider("How many", 1, max(1, min(20, len(losses))), min(5, len(losses)), key="cmp_n")
    if len(losses) > 1
    else 1
)


def _questions(text: str) -> list[str]:
    try:
        return list(json.loads(text))
    except (TypeError, ValueError):
        return []


for rank, (_, pair) in enumerate(losses.head(n_show).iterrows(), 1):
    title = f"{rank}. {fmt(pair['diff'], 3)} · {str(pair['user_input'])[:90]}"
    with st.expander(title, expanded=rank == 1):
        st.markdown("**Question**")
        st.text(str(pair["user_input"]))
        ca, cb = st.columns(2)
        for col, side, label, res_map in (
            (ca, "a", label_a, results_a),
            (cb, "b", label_b, results_b),
        ):
            with col, st.container(border=True):
                result = res_map.get(int(pair[f"row_{side}"]))
                st.markdown(f"**{esc(label)}** · row {int(pair[f'row_{side}'])}")
                if result is None:
                    st.text(str(pair.get(f"response_{side}", "")))
                    continue
                render_result(
                    result,
                    key=f"cmp_{rank}_{side}",
                    threshold=threshold,
                    embedder=get_embedder_for(result.embeddings, settings),
                    compact=True,
                )
