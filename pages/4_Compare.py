"""Compare: paired A/B of two answer variants (or two saved runs) on the same questions."""

from __future__ import annotations

import streamlit as st

from relevancy.analysis.compare import no_pairs_message, summarize_pairs
from relevancy.analysis.summary import comparable_value, frame_modes, mode_label
from relevancy.dashboard.views import compare_vega
from relevancy.dashboard.views.compare_table import (
    lowest,
    no_regressions,
    pairs_csv,
    pairs_table,
    verdict,
    win_rate_text,
)
from relevancy.dashboard.views.format import esc, fmt, grid_style
from relevancy.dashboard.widgets.compare_pairs import paired_sides, pairing
from relevancy.dashboard.widgets.compare_picker import choose_sides
from relevancy.dashboard.widgets.page import setup_page
from relevancy.dashboard.widgets.regressions import biggest_regressions
from relevancy.dashboard.widgets.state import list_runs, run_distinct, scored_run

settings = setup_page(
    "Compare",
    "⚖️",
    "Which variant answers more relevantly? Paired differences on the same questions.",
)
info = scored_run()
if info is None:
    st.stop()
threshold = settings.threshold


#: pairs listed in the table (a million rows' pairs would be megabytes in the page)
TABLE_PAIRS = 2000
runs = [r for r in list_runs() if r.n_scored]
has_variants = "variant" in info.columns and len(run_distinct(info.id, "variant", limit=2)) == 2
what = st.segmented_control(
    "Compare",
    ["variants", "runs"],
    format_func={"variants": "Two values of a column of this run", "runs": "Two saved runs"}.get,
    default="variants" if has_variants or len(runs) < 2 else "runs",
    key="cmp_mode",
    required=True,
)
columns = st.columns([2, 2, 1])
tie_margin = columns[2].number_input(
    "Tie margin",
    0.0,
    0.5,
    0.02,
    step=0.01,
    key="cmp_margin",
    help="Differences within ± this count as ties.",
)
sides = choose_sides(info, runs, what, columns)
if sides is None:
    st.stop()
frame_a, frame_b, label_a, label_b = sides.frame_a, sides.frame_b, sides.label_a, sides.label_b

# --- what the numbers are: both sides' scoring modes ---------------------------------------
mode_a, mode_b = mode_label(frame_modes(frame_a)), mode_label(frame_modes(frame_b))
same_mode = mode_a == mode_b and mode_a != "mixed"
value = comparable_value(frame_a, frame_b)
if not same_mode:
    st.warning(
        f"**{esc(label_a)} was scored in {mode_a or '?'} mode and {esc(label_b)} in "
        f"{mode_b or '?'} mode: their scores mean different things**, so a difference between "
        "them says little about the answers. "
        + (
            "Comparing on the **Ragas value** instead, which every row has."
            if value == "ragas_value"
            else "Score both in the same mode to compare them."
        ),
        icon="⚠️",
    )
elif mode_a != "ragas" and "ragas_value" in frame_a.columns:
    picked = st.segmented_control(
        "Compare on",
        ["score", "Ragas value"],
        default="score",
        key="cmp_value",
        required=True,
        help=f"The {mode_a} score of both sides, or the Ragas value every row also keeps.",
    )
    value = comparable_value(frame_a, frame_b, prefer=picked.replace(" ", "_").lower())
on_ragas = value == "ragas_value"
compared = "Ragas value" if on_ragas else f"{mode_a} score" if same_mode and mode_a else "score"
modes_note = "" if same_mode else f" ({esc(label_a)}: {mode_a} mode, {esc(label_b)}: {mode_b})"
st.caption(f"Comparing the **{compared}** of each pair{modes_note}.")
# one run's variants pair on the question (or a shared question id), two runs on id or question
within = sides.column is not None
keys, set_aside = pairing(sides, within=within)
if set_aside:
    st.caption(esc(set_aside))
paired = paired_sides(  # the pairs kept between reruns; the outcomes at this tie margin
    sides, tie_margin=tie_margin, value=value, keys=keys, text=not within or keys == ("user_input",)
)
if paired.empty:
    why = no_pairs_message(frame_a, frame_b, keys, label_a=label_a, label_b=label_b)
    st.warning("  \n".join(esc(line) for line in why.split("\n")), icon="🔗")
    st.stop()

s = summarize_pairs(paired, tie_margin=tie_margin)
m = st.columns(5)
m[0].metric("Pairs", f"{s['pairs']:,}", border=True, help=f"{s['nan_pairs']:,} with a NaN side.")
m[1].metric(f"{esc(label_b)} better", f"{s['wins']:,}", border=True)
m[2].metric("Ties", f"{s['ties']:,}", border=True, help=f"|B − A| ≤ {tie_margin:.2f}")
m[3].metric(f"{esc(label_a)} better", f"{s['losses']:,}", border=True)
m[4].metric("Mean B − A", fmt(s["mean_diff"]), border=True, help="With a 95% bootstrap CI.")
st.markdown(verdict(s, label_a, label_b))
if won := win_rate_text(s, label_a, label_b):
    st.markdown(won)

left, right = st.columns([3, 2])
with left:
    data, spec = compare_vega.scatter_spec(
        paired, label_a=label_a, label_b=label_b, tie_margin=tie_margin
    )
    st.vega_lite_chart(data, spec, key="cmp_scatter", alt=f"{label_b} against {label_a}")
    st.caption(
        f"Each dot is one question: A ({esc(label_a)})'s score across, B ({esc(label_b)})'s up. "
        "Above the diagonal, B is more relevant; dotted lines bound the ties."
    )
with right:
    data, spec = compare_vega.histogram_spec(paired, tie_margin=tie_margin)
    st.vega_lite_chart(data, spec, key="cmp_diffs", alt="The paired differences")
    st.caption("Distribution of paired differences; the grey band is the tie margin.")

shown = dict(label_a=label_a, label_b=label_b, on_ragas=on_ragas, mode_a=mode_a, mode_b=mode_b)
table = pairs_table(paired, **shown, limit=TABLE_PAIRS)
if len(paired) > TABLE_PAIRS:  # the page holds the first pairs; the figures above count all
    st.markdown(
        f"**The {TABLE_PAIRS:,} lowest differences of {len(paired):,} pairs** (regressions first)"
    )
else:
    st.markdown("**All pairs** (sorted by difference, regressions first)")
# a side that failed: "—", not "None" (a Styler); else sent a screenful at a time (lazy)
missing = table.select_dtypes("number").isna().to_numpy().any()
floats = table.select_dtypes("float").columns
st.dataframe(
    grid_style(table, {"B − A": "{:+.3f}"}) if missing else table,
    hide_index=True,
    key="cmp_table",
    height=min(38 + 35 * len(table), 360),
    column_config={
        c: st.column_config.NumberColumn(format="%+.3f" if c == "B − A" else "%.3f")
        for c in ([] if missing else floats)
    },
    lazy=None if missing else True,
)

st.download_button(
    f"All {len(paired):,} pairs (CSV)",
    data=pairs_csv(paired, **shown),  # built when clicked
    file_name="pairs.csv",
    mime="text/csv",
    icon="⬇️",
    key="cmp_download",
    help="Every pair, regressions first, with both scores, B − A and the outcome at this tie "
    "margin (spreadsheet formulas defused).",
)

st.subheader("Biggest regressions", anchor=False)
losses = lowest(paired[paired["outcome"] == "loss"], 20)  # the slider lists 20 at most
if losses.empty:
    (st.success if s["compared"] else st.warning)(no_regressions(s, label_a, label_b))
    st.stop()
biggest_regressions(
    losses,
    runs_of={"a": sides.run_a, "b": sides.run_b},
    labels=(label_a, label_b),
    threshold=threshold,
    settings=settings,
)
