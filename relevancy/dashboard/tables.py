"""The Dataset page's results grid: filter widgets, the filtered table, row selection."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from relevancy.dashboard.datasets import SORTS, Filters, apply_filters, results_table

__all__ = ["filter_widgets", "results_grid"]


def filter_widgets(frame: pd.DataFrame, threshold: float) -> Filters:
    """Draw the filters (keys ``ds_*``) and return what they chose."""
    with st.container(border=True):
        f1, f2, f3, f4 = st.columns([2, 1, 1, 2])
        score_range = f1.slider(
            "Score range",
            -1.0,
            1.0,
            value=(-1.0, 1.0),
            step=0.05,
            key="ds_range",
            help="Cosine similarities, so scores can dip slightly below 0.",
        )
        noncommittal = f2.selectbox("Noncommittal", ["all", "yes", "no"], key="ds_nc")
        status = f3.selectbox("Status", ["all", "scored", "NaN / errors"], key="ds_status")
        search = f4.text_input(
            "Search text", placeholder="words in the question or answer", key="ds_search"
        )
        g1, g2, g3 = st.columns([2, 1, 1])
        variants = (
            sorted(frame["variant"].astype(str).unique()) if "variant" in frame.columns else []
        )
        chosen = g1.multiselect(
            "Variants", variants, key="ds_variants", disabled=not variants, placeholder="all"
        )
        sort = g2.selectbox("Sort by", list(SORTS), key="ds_sort")
        only_low = g3.toggle(f"Only below {threshold:.2f}", key="ds_only_low")
    return Filters(
        score_range=tuple(score_range),
        noncommittal=noncommittal,
        status=status,
        search=search,
        variants=tuple(chosen),
        only_below=threshold if only_low else None,
        sort=sort,
    )


def results_grid(
    frame: pd.DataFrame, *, run_id: int, threshold: float, with_ragas: bool
) -> pd.DataFrame:
    """Filters, then the filtered grid; a selected row becomes the drill-down's row.

    Returns the table shown (its ``row`` column lists the rows that pass the filters).
    """
    shown = results_table(
        apply_filters(frame, filter_widgets(frame, threshold)), with_ragas=with_ragas
    )
    # widget keys carry the run id: a table selection or a picked row means nothing elsewhere
    table_key, inspect_key = f"ds_table_{run_id}", f"ds_inspect_{run_id}"
    rows = shown["row"].tolist()

    def on_select() -> None:
        picked = st.session_state[table_key].selection.rows
        if picked and picked[0] < len(rows):
            st.session_state[inspect_key] = rows[picked[0]]

    def low_style(value: float) -> str:
        if pd.isna(value):
            return "background-color: #f3f4f6; color: #6b7280"
        if value < threshold:
            return "background-color: #fde2e1; color: #991b1b; font-weight: 600"
        return "color: #166534"

    st.markdown(
        f"**{len(shown)} of {len(frame)} rows** · low scores (below {threshold:.2f}) in red · "
        "click a column header to sort, select a row to drill down"
    )
    formats = {"score": "{:.3f}", "answer ~ question": "{:.2f}"}
    if with_ragas:
        formats["Ragas value"] = "{:.3f}"
    st.dataframe(
        shown.style.map(low_style, subset=["score"]).format(formats, na_rep="NaN"),
        hide_index=True,
        height=min(38 + 35 * len(shown), 420),
        key=table_key,
        on_select=on_select,
        selection_mode="single-row",
        column_config={
            "row": st.column_config.NumberColumn("row", width="small"),
            "score": st.column_config.NumberColumn(
                "score", help="Answer Relevancy of the row's mode", width="small"
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
            "generated questions": st.column_config.TextColumn(
                "generated questions", width="large"
            ),
        },
    )
    return shown
