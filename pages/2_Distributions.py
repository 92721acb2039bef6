"""Distributions: how scores spread, split by variant, model or run, against a threshold."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from relevancy import bootstrap_ci
from relevancy.analysis.summary import comparable_value, frame_modes, mode_label, summary_table
from relevancy.core.stats import NORMAL_ABOVE
from relevancy.dashboard.views.claims import demo_scale
from relevancy.dashboard.views.datasets import reason_table
from relevancy.dashboard.views.format import embedded_caveat, fmt, mode_text, pct
from relevancy.dashboard.views.reference import chance_summary
from relevancy.dashboard.widgets.labels import chance_caption, run_chance
from relevancy.dashboard.widgets.page import setup_page
from relevancy.dashboard.widgets.score_charts import score_charts
from relevancy.dashboard.widgets.stability_panel import run_stability_figures
from relevancy.dashboard.widgets.state import (
    list_runs,
    reasons_at,
    run_columns,
    scored_run,
    split_labels,
)
from relevancy.report import charts

settings = setup_page(
    "Distributions",
    "📊",
    "How scores spread across rows: histogram, box/violin and ECDF, split by group.",
)
threshold = settings.threshold
info = scored_run()
if info is None:
    st.stop()

SPLITS = split_labels(info)  # the variant under the input's own name (model, system...)
own = [c for c in SPLITS if c in info.columns and c != "variant"]  # its own columns
c1, c2 = st.columns([3, 2])
split = c1.segmented_control(
    "Split by",
    list(SPLITS),
    format_func=lambda s: SPLITS[s],
    default="variant",
    key="dist_split",
    required=True,
)
chosen = [info.id]
if split == "run":
    labels = {r.id: r.label for r in list_runs() if r.n_scored}
    chosen = c2.multiselect(
        "Runs to include",
        list(labels),
        default=[info.id],
        format_func=lambda i: labels[i],
        key="dist_runs",
    )
    if not chosen:
        st.info("Pick at least one run.", icon="☝️")
        st.stop()
frames = []
for run_id in chosen:
    run = next(r for r in list_runs() if r.id == run_id)
    names = ["score", "ragas_value", "mode", "llm", "embeddings", "reason"]
    text = run.n_scored <= charts.BOX_SCORES_UP_TO  # a box's dots name their question on hover
    names += [c for c in ("variant", "user_input") if c in run.columns and (text or c[0] == "v")]
    names += [split] if split in own and split in run.columns else []
    part = reasons_at(run_id, run_columns(run_id, names), threshold)  # at the sidebar's
    frames.append(part.assign(run=f"#{run_id} {run.name}"))
frame = pd.concat(frames, ignore_index=True)
frame["model"] = frame["llm"].astype(str) + " + " + frame["embeddings"].astype(str)
by = None if split == "none" else split
if by is not None and by not in frame.columns:
    st.caption(f"This run has no {SPLITS[by]} column: showing all rows together.")
    by = None

modes = frame_modes(frame)
mode = mode_label(modes)
value = comparable_value(frame)  # rows of several modes: their Ragas values
if mode not in ("ragas", "mixed") and "ragas_value" in frame.columns:
    shown = st.segmented_control(
        "Show",
        ["score", "Ragas value"],
        default="score",
        key="dist_value",
        required=True,
        help="The score of each row's mode, or the Ragas value every row keeps (the same for "
        "every mode, so comparable across runs).",
    )
    value = "ragas_value" if shown == "Ragas value" else "score"
if value == "ragas_value":
    frame = frame.assign(score=pd.to_numeric(frame["ragas_value"], errors="coerce"))
    if mode == "mixed":
        st.warning(
            f"These rows were scored in different modes ({', '.join(modes)}): their scores "
            "mean different things, so each row's **Ragas value** is shown instead.",
            icon="⚠️",
        )
    else:
        st.caption("Showing each row's **Ragas value** (the Ragas Answer Relevancy).")
else:
    st.caption(f"Scores: {mode_text(mode)}.")
if info.settings.get("backend") == "embedded":
    st.caption(embedded_caveat())
stats = summary_table(frame, threshold=threshold, by=by)
if value == "ragas_value":
    stats = stats.drop(columns=["ragas_mean"], errors="ignore")
overall = stats.iloc[0]
m = st.columns(4)
m[0].metric("Mean score", fmt(overall["mean"]), border=True, help="With a 95% bootstrap CI.")
m[1].metric(
    "Median, all scored rows",
    fmt(overall["median"]),
    border=True,
    help="Every scored row counts, noncommittal ones (0 by rule) too; the chance-level line "
    "below takes the median of the answered rows only.",
)
m[2].metric(f"Below {threshold:.2f}", pct(overall["below"]), border=True)
m[3].metric("NaN rows", str(int(overall["NaN"])), border=True)
st.markdown(
    f"Mean **{fmt(overall['mean'])}**, 95% CI **[{fmt(overall['ci_low'])}, "
    f"{fmt(overall['ci_high'])}]** over {int(overall['rows'] - overall['NaN']):,} scored rows."
)
if value == "ragas_value" or mode == "ragas":
    st.caption(
        f"{demo_scale().text} Scores under the threshold deserve a look on the Dataset page; "
        "noncommittal answers sit at exactly 0."
    )
else:
    st.caption(
        f"{mode.capitalize() or 'These'} scores have a scale of their own: compare them with "
        "scores of the same mode, not with Ragas values (switch **Show** to compare those). "
        "Noncommittal answers sit at 0."
    )

# chance level: what unrelated pairs of the active run score with its embedder (Ragas values)
levels = run_chance(info.id) if value == "ragas_value" or mode == "ragas" else {}
level = max(levels.values(), key=lambda c: c.rows, default=None)
if level is not None:
    own = run_columns(info.id, ["ragas_value", "noncommittal"])
    st.markdown(
        chance_caption(level, chance_summary(level, own["ragas_value"], own["noncommittal"]))
    )


score_charts(frame, threshold=threshold, by=by, level=level)  # one tab drawn: the open one

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
            "mean Ragas value", format="%.3f", help="The mean Ragas value of the same rows."
        ),
    },
)
st.caption(
    "The 95% confidence interval of the mean is a percentile bootstrap "
    f"({bootstrap_ci.__kwdefaults__['n_boot']:,} resamples; the normal interval above "
    f"{NORMAL_ABOVE:,} rows): with few rows it is wide, so differences inside it may be noise."
)
run_stability_figures(info.id)
st.markdown("**Rows by main reason**")
st.dataframe(reason_table(frame, by), key="dist_reasons")
st.caption(
    "Each row's one main reason (see the Dataset page's reason filter); percentages of "
    "the group's rows."
)
