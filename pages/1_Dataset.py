"""Dataset: upload or load data, map and validate columns, score with progress, explore results."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import streamlit as st

from relevancy import RelevancyError, apply_mapping
from relevancy.dashboard.views import datasets
from relevancy.dashboard.views.format import error_text, esc, row_label
from relevancy.dashboard.widgets.cost_panel import estimate_panel
from relevancy.dashboard.widgets.drilldown import render_row
from relevancy.dashboard.widgets.labels import LABEL_SAVED, chance_for
from relevancy.dashboard.widgets.live import follow_notice
from relevancy.dashboard.widgets.models import embedder_for, generator_limit, get_metric
from relevancy.dashboard.widgets.page import setup_page
from relevancy.dashboard.widgets.permalink import DRILL_ANCHOR, linked_row, row_link, sync_link
from relevancy.dashboard.widgets.runner import score_run, stopped_notice
from relevancy.dashboard.widgets.stability_panel import rescore_panel, row_band
from relevancy.dashboard.widgets.state import (
    active_run,
    get_store,
    input_columns,
    run_result,
)
from relevancy.dashboard.widgets.tables import results_grid, results_summary
from relevancy.dashboard.widgets.upload import (
    choose_mapping,
    choose_source,
    remember_scored,
    score_button,
    show_preview_and_issues,
    upload_origin,
)

settings = setup_page(
    "Dataset",
    "🗂️",
    "Score a table of questions and answers, then filter the results and drill into any row.",
    row_links=True,
)
store = get_store()
threshold = settings.threshold

may_start = stopped_notice(store)  # a stopped run is said, and no click restarts it at once


def _new_run() -> None:
    frame, source_name = choose_source()
    if frame is None:
        return
    mapping = choose_mapping(frame, source_name)
    issues = datasets.validate(
        frame, mapping, long_text=generator_limit(settings), embedded=settings.embedded
    )
    show_preview_and_issues(frame, issues)
    if mapping.get("response") in frame.columns and mapping.get("user_input") in frame.columns:
        estimate_panel(
            settings,
            frame[mapping["user_input"]].astype(str).tolist(),
            frame[mapping["response"]].astype(str).tolist(),
        )
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    name = c1.text_input(
        "Run name", value=f"{source_name or 'upload'} · {stamp}", key="ds_run_name"
    )
    go = c2.button(
        **score_button(frame, source_name),
        disabled=any(i.level == "error" for i in issues),
        key="ds_score",
        icon="▶️",
        width="stretch",
    )
    st.caption(
        f"Scoring with the {settings.describe()} · strictness {settings.strictness} · "
        f"{settings.resolved_mode} mode."
    )
    if go and may_start:
        try:
            metric = get_metric(settings)
        except RelevancyError as exc:
            st.error(f"**Cannot build the backend.** {error_text(exc)}", icon="⛔")
            return
        record = {
            **settings.record(),
            "llm_name": metric.llm.name,
            "origin": upload_origin(),
            "embeddings_name": metric.embeddings.name,
            "mode_used": metric.mode,
        }
        run_id = store.create_run(name, record, apply_mapping(frame, mapping), source=source_name)
        remember_scored(frame, source_name, run_id)  # the active run; its button: "Score again"
        outcome = score_run(store, run_id, metric)
        msg = f"Scored {outcome.scored} rows in {outcome.seconds:.1f} s"
        if outcome.errors:
            msg += f" ({outcome.errors} could not be scored: see the NaN filter)"
        st.session_state["ds_flash"] = msg
        st.rerun()


with st.expander(
    "➕ **Score a new dataset**: upload a table or a tool's export, or use the bundled demo",
    expanded=st.session_state.get("ds_upload") is not None,
):
    _new_run()
if "ds_flash" in st.session_state:
    st.success(st.session_state.pop("ds_flash"), icon="✅")

# --- results of the active run ---------------------------------------------------------------
info = active_run()
if info is None:
    sync_link(None)
    st.info("No saved runs yet: score a dataset above.", icon="🗂️")
    st.stop()
if not follow_notice(store, info) and not info.complete:  # a followed run scores its own
    c1, c2 = st.columns([4, 1], vertical_alignment="center")
    c1.info(
        f"Run **{esc(info.name)}** is partial: {info.n_scored:,} of {info.n_rows:,} rows scored.",
        icon="⏳",
    )
    resume_mode = info.resume_mode  # so that the run's scores stay comparable
    if (
        c2.button(
            f"Resume ({info.n_rows - info.n_scored} rows left)",
            key="ds_resume",
            type="primary",
            width="stretch",
            help=f"Scores the rest in {resume_mode} mode, like the rows already scored."
            if resume_mode
            else None,
        )
        and may_start
    ):
        try:
            metric = get_metric(replace(settings, mode=resume_mode) if resume_mode else settings)
        except RelevancyError as exc:
            st.error(f"**Cannot build the backend.** {error_text(exc)}", icon="⛔")
            st.stop()
        outcome = score_run(store, info.id, metric)
        st.session_state["ds_flash"] = f"Resumed: scored {outcome.scored} more rows."
        st.rerun()
if not info.n_scored:
    sync_link(info.id)
    st.stop()
with_ragas = info.mode != "ragas"
results_summary(info, threshold=threshold, with_ragas=with_ragas)
page = results_grid(info, threshold=threshold, with_ragas=with_ragas)

st.subheader("Drill down", anchor=DRILL_ANCHOR)
INSPECT_KEY = f"ds_inspect_{info.id}"
linked = linked_row(info.id, INSPECT_KEY)  # a row opened by a link: offered even off this page
options = page["row"].tolist()
if linked is not None and linked not in options:
    options.insert(0, linked)
if not options:
    sync_link(info.id)
    st.info("No row matches the filters.", icon="🔎")
    st.stop()
if st.session_state.get(INSPECT_KEY) not in options:
    st.session_state[INSPECT_KEY] = options[0]
by_row = {int(r): i for i, r in enumerate(page["row"])}


def _label(r: int) -> str:
    if int(r) in by_row:
        i = by_row[int(r)]
        return row_label(r, page["score"].iloc[i], page["user_input"].iloc[i])
    found = run_result(info.id, r)  # the linked row, not in this page of the grid
    return row_label(r, found.value, found.user_input) + " (from the link)"


@st.fragment  # another row redraws the drill-down alone; a label set, the page (its grid)
def _drill() -> None:
    c1, c2 = st.columns([5, 4], vertical_alignment="bottom")
    row = c1.selectbox("Row to inspect", options, format_func=_label, key=INSPECT_KEY)
    with c2:
        row_link(info.id, row)
    sync_link(info.id, row)
    result = run_result(info.id, row)
    record = page.iloc[by_row[row]] if row in by_row else store.inputs(info.id, [row]).iloc[0]
    rescore_panel(info, settings, page_rows=options, inspected=int(row), may_start=may_start)
    render_row(
        result,
        row,
        {c: record[c] for c in input_columns(info) if c in record},
        key="ds_drill",
        threshold=threshold,
        embedder=embedder_for(result.embeddings, settings),
        band=row_band(info.id, row),
        run_id=info.id,
        chance=chance_for(info.id, result.embeddings),
    )
    if st.session_state.pop(LABEL_SAVED, False):
        st.rerun()


_drill()
