"""Dataset: upload or load data, map and validate columns, score with progress, explore results."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

import pandas as pd
import streamlit as st

from relevancy._errors import RelevancyError
from relevancy._redact import redact
from relevancy.dashboard import datasets
from relevancy.dashboard.drilldown import render_result
from relevancy.dashboard.runner import interrupted_job, score_run
from relevancy.dashboard.sidebar import get_embedder_for, get_metric
from relevancy.dashboard.state import (
    active_run,
    bind,
    get_store,
    load_run,
    set_active_run,
)
from relevancy.dashboard.ui import esc, fmt, mode_of, mode_text, modes_in, pct, setup_page
from relevancy.store import demo_inputs

settings = setup_page(
    "Dataset",
    "🗂️",
    "Score a table of questions and answers, then filter the results and drill into any row.",
)
store = get_store()
threshold = settings.threshold

# --- a previous scoring run that did not finish (Cancel, or the page was left) -------------
stopped = interrupted_job()
# A click while scoring (Cancel, or any widget) interrupts the script run; the browser then
# re-sends the Score/Resume click with it. Never start scoring in the run that follows a stop.
may_start = stopped is None and not st.session_state.get("ds_cancel")
if stopped:
    info = store.get_run(stopped["run_id"])
    st.warning(
        f"Scoring stopped. Run **{esc(info.name)}** keeps every row scored so far "
        f"({info.n_scored} of {info.n_rows} now; rows that were in flight finish in the "
        "background and are kept too). Resume it below to score the rest.",
        icon="⏹️",
    )
    set_active_run(info.id)


# --- 1. new run: data source, mapping, validation, scoring --------------------------------
def _source_frame() -> tuple[pd.DataFrame | None, str]:
    source = st.segmented_control(
        "Data",
        ["Upload a file", "Bundled demo"],
        help="CSV, TSV, JSON (records), JSONL or Parquet with a question and an answer column.",
        **bind("ds_source", "Upload a file"),
    )
    if source == "Bundled demo":
        st.caption(
            "48 rows: 24 questions answered by two prompt versions (prompt-A, prompt-B), "
            "with on-topic, partial, padded, off-topic and evasive answers."
        )
        return demo_inputs(), "demo.csv (bundled)"
    upload = st.file_uploader(
        "Upload a table of question/answer pairs",
        type=list(datasets.UPLOAD_TYPES),
        key="ds_upload",
    )
    if upload is None:
        st.caption(
            "Columns are matched by name (question/user_input, answer/response, variant/model, "
            "id); you can change the mapping after uploading."
        )
        return None, ""
    try:
        return datasets.read_upload(upload.name, upload.getvalue()), upload.name
    except RelevancyError as exc:
        st.error(f"**Cannot read this file.** {esc(exc)}", icon="⛔")
        return None, ""


def _mapping(frame: pd.DataFrame) -> dict[str, str | None]:
    guess = datasets.guess_mapping(list(frame.columns))
    columns = list(frame.columns)
    none = "(none)"
    cols = st.columns(4)
    mapping: dict[str, str | None] = {}
    for col, (role, label) in zip(
        cols,
        (
            ("user_input", "Question column"),
            ("response", "Answer column"),
            ("variant", "Variant column (optional)"),
            ("id", "ID column (optional)"),
        ),
    ):
        options = [none, *columns]
        default = guess.get(role) or none
        with col:
            choice = st.selectbox(
                label, options, index=options.index(default), key=f"ds_map_{role}"
            )
        mapping[role] = None if choice == none else choice
    return mapping


def _new_run_section() -> None:
    frame, source_name = _source_frame()
    if frame is None:
        return
    if source_name.startswith("demo"):
        mapping = {r: r for r in ("user_input", "response", "variant", "id")}
    else:
        st.markdown("**Map columns**")
        mapping = _mapping(frame)
    issues = datasets.validate(frame, mapping, embedded=settings.backend == "embedded")
    st.markdown(f"**Preview** · {len(frame)} rows · {frame.shape[1]} columns")
    preview = frame.head(20)
    st.dataframe(
        preview, hide_index=True, height=min(38 + 35 * len(preview), 420), key="ds_preview"
    )
    for issue in issues:
        box = {"error": st.error, "warning": st.warning, "info": st.info}[issue.level]
        box(issue.message, icon={"error": "⛔", "warning": "⚠️", "info": "ℹ️"}[issue.level])
    blocked = any(i.level == "error" for i in issues)
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    with c1:
        name = st.text_input(
            "Run name", value=f"{source_name or 'upload'} · {stamp}", key="ds_run_name"
        )
    with c2:
        go = st.button(
            f"Score {len(frame)} rows",
            type="primary",
            disabled=blocked,
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
            st.error(f"**Cannot build the backend.** {esc(redact(exc))}", icon="⛔")
            return
        inputs = datasets.apply_mapping(frame, mapping)
        record = {
            **settings.record(),
            "llm_name": metric.llm.name,
            "embeddings_name": metric.embeddings.name,
            "mode_used": metric.mode,
        }
        run_id = store.create_run(name, record, inputs, source=source_name)
        set_active_run(run_id)
        outcome = score_run(store, run_id, metric)
        msg = f"Scored {outcome.scored} rows in {outcome.seconds:.1f} s"
        if outcome.errors:
            msg += f" ({outcome.errors} could not be scored: see the NaN filter)"
        st.session_state["ds_flash"] = msg
        st.rerun()


with st.expander(
    "➕ **Score a new dataset**: upload CSV/JSON/JSONL/Parquet or use the bundled demo",
    expanded="ds_upload" in st.session_state and st.session_state.get("ds_upload") is not None,
):
    _new_run_section()

if "ds_flash" in st.session_state:
    st.success(st.session_state.pop("ds_flash"), icon="✅")

# --- 2. results of the active run ---------------------------------------------------------
info = active_run()
if info is None:
    st.info("No saved runs yet: score a dataset above.", icon="🗂️")
    st.stop()

if not info.complete:
    left = info.n_rows - info.n_scored
    c1, c2 = st.columns([4, 1], vertical_alignment="center")
    c1.info(
        f"Run **{esc(info.name)}** is partial: {info.n_scored} of {info.n_rows} rows scored.",
        icon="⏳",
    )
    # finish the run in the mode it was started in, so that its scores stay comparable
    resume_mode = info.mode if info.mode in ("ragas", "focus") else info.settings.get("mode_used")
    resume = c2.button(
        f"Resume ({left} rows left)",
        key="ds_resume",
        type="primary",
        width="stretch",
        help=f"Scores the rest in {resume_mode} mode, like the rows already scored."
        if resume_mode
        else None,
    )
    if resume and may_start:
        try:
            metric = get_metric(replace(settings, mode=resume_mode) if resume_mode else settings)
        except RelevancyError as exc:
            st.error(f"**Cannot build the backend.** {esc(redact(exc))}", icon="⛔")
            st.stop()
        outcome = score_run(store, info.id, metric)
        st.session_state["ds_flash"] = f"Resumed: scored {outcome.scored} more rows."
        st.rerun()

data = load_run(info.id)
frame = data.frame
if frame.empty:
    st.stop()

st.subheader(f"Results · {info.name}", anchor=False)
modes = modes_in(frame)
run_mode = mode_of(modes)
# a "Ragas value" column beside the score whenever the score is something else
with_ragas = run_mode != "ragas" and "ragas_value" in frame.columns
st.caption(
    f"Run #{info.id} · {info.n_scored} of {info.n_rows} rows scored · created {info.created} · "
    f"{esc(info.settings.get('llm_name') or info.settings.get('llm', ''))} + "
    f"{esc(info.settings.get('embeddings_name') or info.settings.get('embeddings', ''))}"
)
st.caption(
    f"Scores: {mode_text(run_mode)}."
    + (" The **Ragas value** column has each row's Ragas value." if with_ragas else "")
)
scores = pd.to_numeric(frame["score"], errors="coerce")
m = st.columns(6 if with_ragas else 5)
m[0].metric("Rows scored", f"{int(scores.notna().sum())}", border=True)
m[1].metric(
    "Mean score", fmt(scores.mean()), border=True, help=f"In {run_mode} mode." if run_mode else None
)
m[2].metric("Median", fmt(scores.median()), border=True)
m[3].metric(
    f"Below {threshold:.2f}",
    pct((scores < threshold).sum() / max(scores.notna().sum(), 1)),
    border=True,
)
m[4].metric("NaN / errors", f"{int(scores.isna().sum())}", border=True)
if with_ragas:
    m[5].metric(
        "Ragas mean",
        fmt(pd.to_numeric(frame["ragas_value"], errors="coerce").mean()),
        border=True,
        help="The Ragas Answer Relevancy of the same rows: comparable with ragas-mode runs.",
    )

# filters
with st.container(border=True):
    f1, f2, f3, f4 = st.columns([2, 1, 1, 2])
    with f1:
        score_range = st.slider(
            "Score range",
            -1.0,
            1.0,
            value=(-1.0, 1.0),
            step=0.05,
            key="ds_range",
            help="Cosine similarities, so scores can dip slightly below 0.",
        )
    with f2:
        nc_filter = st.selectbox("Noncommittal", ["all", "yes", "no"], key="ds_nc")
    with f3:
        status = st.selectbox("Status", ["all", "scored", "NaN / errors"], key="ds_status")
    with f4:
        search = st.text_input(
            "Search text", placeholder="words in the question or answer", key="ds_search"
        )
    g1, g2, g3 = st.columns([2, 1, 1])
    variants = sorted(frame["variant"].astype(str).unique()) if "variant" in frame.columns else []
    with g1:
        chosen_variants = st.multiselect(
            "Variants",
            variants,
            key="ds_variants",
            disabled=not variants,
            placeholder="all variants",
        )
    with g2:
        sort = st.selectbox("Sort by", ["score ↑ (lowest first)", "score ↓", "row"], key="ds_sort")
    with g3:
        only_low = st.toggle(f"Only below {threshold:.2f}", key="ds_only_low")

view = frame.copy()
view["score"] = scores
mask = pd.Series(True, index=view.index)
finite = view["score"].notna()
mask &= ~finite | view["score"].between(score_range[0], score_range[1])
if status == "scored":
    mask &= finite
elif status == "NaN / errors":
    mask &= ~finite | (view["error"].astype(str) != "")
if nc_filter != "all":
    mask &= view["noncommittal"].astype(bool) == (nc_filter == "yes")
if variants:
    mask &= view["variant"].astype(str).isin(chosen_variants or variants)
if search.strip():
    needle = search.strip().lower()
    mask &= view["user_input"].astype(str).str.lower().str.contains(needle, regex=False) | view[
        "response"
    ].astype(str).str.lower().str.contains(needle, regex=False)
if only_low:
    mask &= finite & (view["score"] < threshold)
view = view[mask]
if sort.startswith("score ↑"):
    view = view.sort_values("score", na_position="first", kind="stable")
elif sort.startswith("score ↓"):
    view = view.sort_values("score", ascending=False, na_position="last", kind="stable")


def _questions(text: str) -> str:
    try:
        return " · ".join(json.loads(text))
    except (TypeError, ValueError):
        return ""


shown = pd.DataFrame(
    {
        "row": view["row"].astype(int),
        **({"id": view["id"].astype(str)} if "id" in view.columns else {}),
        **({"variant": view["variant"].astype(str)} if "variant" in view.columns else {}),
        "score": view["score"],
        **(
            {"Ragas value": pd.to_numeric(view["ragas_value"], errors="coerce")}
            if with_ragas
            else {}
        ),
        "mode": view["mode"].astype(str) if "mode" in view.columns else "ragas",
        "question": view["user_input"].astype(str),
        "answer": view["response"].astype(str),
        "noncommittal": view["noncommittal"].astype(bool),
        "answer ~ question": pd.to_numeric(view["answer_similarity"], errors="coerce"),
        "generated questions": view["generated_questions"].map(_questions),
        "error": view["error"].astype(str),
    }
).reset_index(drop=True)
# widget keys carry the run id: a table selection or a picked row means nothing in another run
TABLE_KEY, INSPECT_KEY = f"ds_table_{info.id}", f"ds_inspect_{info.id}"
st.session_state["ds_table_rows"] = shown["row"].tolist()


def _low_style(value: float) -> str:
    if pd.isna(value):
        return "background-color: #f3f4f6; color: #6b7280"
    if value < threshold:
        return "background-color: #fde2e1; color: #991b1b; font-weight: 600"
    return "color: #166534"


def _on_select() -> None:
    rows = st.session_state[TABLE_KEY].selection.rows
    if rows:
        table_rows = st.session_state.get("ds_table_rows", [])
        if rows[0] < len(table_rows):
            st.session_state[INSPECT_KEY] = table_rows[rows[0]]


st.markdown(
    f"**{len(shown)} of {len(frame)} rows** · low scores (below {threshold:.2f}) in red · "
    "click a column header to sort, select a row to drill down"
)
st.dataframe(
    shown.style.map(_low_style, subset=["score"]).format(
        {"score": "{:.3f}", "Ragas value": "{:.3f}", "answer ~ question": "{:.2f}"}
        if with_ragas
        else {"score": "{:.3f}", "answer ~ question": "{:.2f}"},
        na_rep="NaN",
    ),
    hide_index=True,
    height=min(38 + 35 * len(shown), 420),
    key=TABLE_KEY,
    on_select=_on_select,
    selection_mode="single-row",
    column_config={
        "row": st.column_config.NumberColumn("row", width="small"),
        "score": st.column_config.NumberColumn(
            "score",
            help=f"Answer Relevancy, {run_mode} mode" if run_mode else "Answer Relevancy",
            width="small",
        ),
        "Ragas value": st.column_config.NumberColumn(
            "Ragas value",
            help="The Ragas Answer Relevancy from the same generated questions",
            width="small",
        ),
        "mode": st.column_config.TextColumn(
            "mode", help="What the score is: ragas or focus (see the sidebar)", width="small"
        ),
        "question": st.column_config.TextColumn("question", width="medium"),
        "answer": st.column_config.TextColumn("answer", width="large"),
        "answer ~ question": st.column_config.NumberColumn(
            "answer ~ question", help="Plain cosine between answer and question"
        ),
        "generated questions": st.column_config.TextColumn("generated questions", width="large"),
    },
)

# --- 3. drill-down ------------------------------------------------------------------------
st.subheader("Drill down", anchor=False)
options = shown["row"].tolist()
if not options:
    st.info("No row matches the filters.", icon="🔎")
    st.stop()
if st.session_state.get(INSPECT_KEY) not in options:
    st.session_state[INSPECT_KEY] = options[0]
by_row = {int(r): i for i, r in enumerate(frame["row"])}
labels = {
    int(r): f"row {int(r)} · {fmt(frame['score'].iloc[by_row[int(r)]])} · "
    f"{str(frame['user_input'].iloc[by_row[int(r)]])[:70]}"
    for r in options
}
row = st.selectbox(
    "Row to inspect", options, format_func=lambda r: labels.get(int(r), str(r)), key=INSPECT_KEY
)
pos = by_row[int(row)]
result = data.results[pos]
record = frame.iloc[pos]
with st.container(border=True):
    meta = [f"row {int(row)}"]
    for col in ("id", "variant", "answer_type", "language"):
        if col in frame.columns and str(record.get(col, "")):
            meta.append(f"{col}: {esc(record[col])}")
    st.caption(" · ".join(meta))
    st.markdown("**Question**")
    st.text(result.user_input)
    render_result(
        result,
        key="ds_drill",
        threshold=threshold,
        embedder=get_embedder_for(result.embeddings, settings),
        wide=True,
    )
