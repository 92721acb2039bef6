"""Runs: every scored dataset, saved with its settings, results and embeddings."""

from __future__ import annotations

import re
from collections.abc import Callable

import streamlit as st

from relevancy import RelevancyError
from relevancy.dashboard.views.format import esc, export_note, fmt, grid_style, mode_text
from relevancy.dashboard.widgets.cost_panel import current_prices, usage_metrics
from relevancy.dashboard.widgets.page import setup_page
from relevancy.dashboard.widgets.permalink import dashboard_url
from relevancy.dashboard.widgets.stability_panel import run_stability_figures
from relevancy.dashboard.widgets.state import active_run, get_store, list_runs, set_active_run
from relevancy.dashboard.widgets.tables import rows_card, run_models, runs_table
from relevancy.dashboard.widgets.writeback_panel import writeback_panel
from relevancy.report.html import build_report
from relevancy.runs import RunStore, import_demo

settings = setup_page(
    "Runs",
    "💾",
    "Saved runs: reopen, rename, delete, resume, and export as CSV, JSON, Parquet or a report.",
)
store = get_store()
if "runs_flash" in st.session_state:
    st.success(st.session_state.pop("runs_flash"), icon="✅")

runs = list_runs()
size = sum(p.stat().st_size for p in store.path.parent.glob(store.path.name + "*") if p.is_file())
st.caption(f"Store: `{store.path}` · {len(runs)} run(s) · {size / 1e6:.1f} MB")

if not runs:
    st.info("No saved runs. Score a dataset on the **Dataset** page, or load the demo.", icon="🗂️")
    if st.button("Load the demo run", key="runs_demo"):
        import_demo(store, force=True)
        st.rerun()
    st.stop()


table = runs_table(runs, current_prices())


def _pick() -> None:
    picked = st.session_state["runs_table"].selection.rows
    if picked:
        set_active_run(runs[picked[0]].id)


st.dataframe(
    grid_style(table, {"id": "{:d}"}),  # a run with no mean: "—"
    hide_index=True,
    key="runs_table",
    on_select=_pick,
    selection_mode="single-row",
    column_config={
        "id": st.column_config.NumberColumn("#", width="small"),
        "mode": st.column_config.TextColumn(
            "mode", help="What the scores are: ragas, focus or blend (mixed: rows of several)"
        ),
        "mean": st.column_config.NumberColumn("mean score", format="%.3f"),
        "ragas_mean": st.column_config.NumberColumn(
            "mean Ragas value",
            format="%.3f",
            help="The mean Ragas Answer Relevancy of the run's rows, whatever its mode: "
            "comparable across runs.",
        ),
        "name": st.column_config.TextColumn(width="medium"),
        "tokens": st.column_config.TextColumn(
            "tokens", help="Tokens billed: generation in + out, and embeddings"
        ),
        "cost": st.column_config.TextColumn(
            "cost", help="At the sidebar's Prices table; unknown when a model has no price"
        ),
    },
)

info = active_run(runs)  # the sidebar's active run: select a row above to change it
st.caption("Select a run in the table (or in the sidebar's **Active run**) to act on it below.")

with st.container(border=True):
    followed = isinstance(info.settings.get("follow"), dict)  # grows: its follower scores it
    status = "followed (grows as its source does)" if followed else info.status
    st.subheader(f"#{info.id} · {esc(info.name)} · {status}", anchor=False)  # no link
    run_mode = info.mode or info.resume_mode
    c = st.columns(4 if run_mode not in ("", "ragas") else 3)
    rows_card(c[0], info, settings.threshold)
    c[1].metric("Mean score", fmt(info.mean), border=True)
    c[2].metric("Strictness", str(info.settings.get("strictness", "?")), border=True)
    if run_mode not in ("", "ragas"):
        c[3].metric("Mean Ragas value", fmt(info.ragas_mean), border=True)
    st.caption(
        f"Created {info.created} · source {esc(info.source or '?')} · "
        f"{esc(run_models(info.settings))}"
        f" · noncommittal {esc(info.settings.get('noncommittal', '?'))}"
    )
    if run_mode:
        st.caption(f"Scores: {mode_text(run_mode)}.")
    if followed:  # the follower finds its run by source and name
        st.caption("Followed by this command (a renamed run needs the new name in it):")
        source = info.settings["follow"].get("source", "SOURCE")
        st.code(f'relevancy score --from "{source}" --follow --save-run "{info.name}"', "bash")
    usage_metrics(info)
    run_stability_figures(info.id)
    with st.expander("Settings saved with this run (never any API key)"):
        st.json(info.settings)

    a1, a2, a3 = st.columns(3)
    with a1:
        if st.button("Open in the dashboard", icon="📂", key="runs_open", type="primary"):
            set_active_run(info.id)
            st.switch_page("pages/1_Dataset.py")
        if (
            not info.complete
            and not followed
            and st.button(
                f"Resume ({info.n_rows - info.n_scored} rows left)", icon="⏯️", key="runs_resume"
            )
        ):
            set_active_run(info.id)
            st.switch_page("pages/1_Dataset.py")
    with a2:
        new_name = st.text_input("New name", value=info.name, key=f"runs_name_{info.id}")
        if st.button("Rename", icon="✏️", key="runs_rename"):
            try:
                store.rename(info.id, new_name)
            except RelevancyError as exc:
                st.error(esc(exc))
            else:
                st.session_state["runs_flash"] = f"Renamed run #{info.id}."
                st.rerun()
    with a3:
        sure = st.checkbox("Yes, delete this run for good", key=f"runs_sure_{info.id}")
        if st.button("Delete", icon="🗑️", key="runs_delete", disabled=not sure):
            store.delete(info.id)
            if st.session_state.get("active_run") == info.id:
                st.session_state.pop("active_run", None)
            st.session_state["runs_flash"] = f"Deleted run #{info.id}."
            st.rerun()

st.subheader("Export", anchor=False)
if not info.n_scored:
    st.info("Nothing to export yet: this run has no scored rows.")
    st.stop()
slug = re.sub(r"[^A-Za-z0-9._-]+", "-", info.name).strip("-")[:60] or f"run-{info.id}"


def _export(fmt_: str, threshold: float) -> Callable[[], bytes]:
    """The export, built when its button is clicked (a large run takes a while)."""
    path, run_id, dashboard = str(store.path), info.id, dashboard_url()  # rows link back here

    def build() -> bytes:
        runs = RunStore(path)  # runs on a thread of its own: no Streamlit here
        if fmt_ == "html":
            report = build_report(runs, run_id, threshold=threshold, dashboard_url=dashboard)
            return report.encode("utf-8")
        return runs.export_bytes(run_id, fmt_)

    return build


MIMES = {
    "csv": "text/csv",
    "json": "application/json",
    "parquet": "application/octet-stream",
    "html": "text/html",
}
for col, fmt_ in zip(st.columns(4), ("csv", "json", "parquet", "html")):
    with col:
        st.download_button(
            "HTML report" if fmt_ == "html" else fmt_.upper(),
            data=_export(fmt_, settings.threshold),
            file_name=f"{slug}.{fmt_}",
            mime=MIMES[fmt_],
            icon="⬇️",
            key=f"runs_dl_{fmt_}",
            type="primary" if fmt_ == "html" else "secondary",
            width="stretch",
        )
st.caption(
    "CSV/JSON/Parquet hold one row per answer with its score, mode, Ragas value, generated "
    "questions and similarities, and in focus and blend modes its sentences with theirs "
    "(spreadsheet formulas are defused in CSV). The HTML report is a single offline file with "
    "the summary, charts and lowest rows, each linking back to its drill-down here."
)
# a download is built in memory: a big run's note gives the CLI command that streams it
if note := export_note(info.id, info.n_scored, slug, str(store.path)):
    st.caption(note)
writeback_panel(store, info, settings.threshold)  # runs read from Phoenix or MLflow
