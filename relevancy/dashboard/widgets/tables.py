"""The Dataset page's results grid (filter widgets, a page of rows filtered and sorted in the
store, paging, and row selection) and the Runs page's table of runs."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import streamlit as st

from relevancy.analysis.cost import Price, money
from relevancy.core.triage import HYGIENE, REASONS
from relevancy.dashboard.views.datasets import results_table
from relevancy.dashboard.views.format import (
    embedded_caveat,
    esc,
    fmt,
    grid_style,
    mode_text,
    pct,
    reason_counts,
    rows_scored,
)
from relevancy.dashboard.widgets.cost_panel import compact, run_totals, usage_caption
from relevancy.dashboard.widgets.state import (
    input_columns,
    run_counts,
    run_distinct,
    run_figures,
    run_page,
)
from relevancy.runs import SORTS, STATUSES, RowQuery, RunInfo

__all__ = [
    "PAGE_ROWS",
    "results_summary",
    "filter_widgets",
    "results_grid",
    "run_models",
    "rows_card",
    "runs_table",
]

#: rows per page of the grid
PAGE_ROWS = 500


def results_summary(info: RunInfo, *, threshold: float, with_ragas: bool) -> None:
    """The run's heading, what its scores are, its figures and its rows by main reason."""
    st.subheader(f"Results · {esc(info.name)}", anchor=False)
    llm = info.settings.get("llm_name") or info.settings.get("llm", "")
    emb = info.settings.get("embeddings_name") or info.settings.get("embeddings", "")
    figures = run_figures(info.id, threshold)  # computed in the store, not on every row
    st.caption(
        f"Run #{info.id} · {rows_scored(figures.scored, info.n_rows, figures.nan)} · created "
        f"{info.created} · {esc(llm)} + {esc(emb)}  \nScores: {mode_text(info.mode)}."
        + (" The **Ragas value** column has each row's Ragas value." if with_ragas else "")
    )
    if info.settings.get("backend") == "embedded":
        st.caption(embedded_caveat())
    # two rows of at most four cards: "1,000,000" is cut off in a card a seventh wide
    m = [*st.columns(4), *st.columns(4)]
    m[0].metric("Rows scored", f"{figures.scored:,}", border=True, help=f"Of {info.n_rows:,} rows.")
    m[1].metric("Mean score", fmt(figures.mean), border=True, help=f"In {info.mode} mode.")
    m[2].metric("Median", fmt(figures.median), border=True)
    below = figures.below if figures.scored else 0.0
    m[3].metric(f"Below {threshold:.2f}", pct(below), border=True)
    m[4].metric("NaN / errors", f"{figures.nan:,}", border=True)
    m[5].metric(
        "Incomplete",
        f"{figures.incomplete:,}",
        border=True,
        help="Scored rows whose score rests on fewer generated questions than asked (a "
        "generation failed or was cut off): Status → incomplete lists them.",
    )
    if with_ragas:
        m[6].metric("Ragas mean", fmt(figures.ragas_mean), border=True)
    counts = run_counts(info.id, threshold=threshold)  # a row's reason depends on it
    st.caption(reason_counts(counts) + f" (at the threshold {threshold:.2f}; filter below).")
    usage_caption(info)


def filter_widgets(info: RunInfo, threshold: float) -> RowQuery:
    """Draw the filters (keys ``ds_*``) and return the query they make."""
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
        status = f3.selectbox(
            "Status",
            list(STATUSES),
            key="ds_status",
            help="incomplete: scored from fewer generated questions than asked",
        )
        search = f4.text_input(
            "Search text", placeholder="words in the question or answer", key="ds_search"
        )
        g0, g4, g1, g2, g3 = st.columns([2, 2, 1.4, 1.9, 1.6], vertical_alignment="bottom")
        reasons = g0.multiselect(
            "Reason",
            list(REASONS),
            key="ds_reasons",
            placeholder="all reasons",
            help="Each row's main reason: " + "; ".join(f"{k}: {v}" for k, v in REASONS.items()),
        )
        flagged = g4.multiselect(
            "Also flagged",
            [*REASONS, *HYGIENE],
            key="ds_flags",
            placeholder="any flags",
            help="Rows with one of these reasons, main or secondary (the flags column): e.g. "
            "padded behind a language_mismatch.",
        )
        variants = run_distinct(info.id, "variant") if "variant" in info.columns else []
        own = info.shown("variant")  # the input's own name for it (model, system...)
        chosen = g1.multiselect(
            "Variants" if own == "variant" else esc(own),
            variants,
            key="ds_variants",
            disabled=not variants,
            placeholder="all",
        )
        sort = g2.selectbox("Sort by", list(SORTS), key="ds_sort")
        only_low = g3.toggle(f"Only below {threshold:.2f}", key="ds_only_low")
    return RowQuery(
        score_range=(float(score_range[0]), float(score_range[1])),
        noncommittal=noncommittal,
        status=status,
        search=search,
        variants=tuple(chosen),
        reasons=tuple(reasons),
        flags=tuple(flagged),
        below=threshold if only_low else None,
        sort=sort,
        threshold=threshold,  # the Reason filter and column: each row's reason at it
        decided_at=info.decided_at,
    )


def results_grid(info: RunInfo, *, threshold: float, with_ragas: bool) -> pd.DataFrame:
    """Filters, then one page of the filtered grid; a selected row becomes the drill-down's.

    Returns the page shown, with its columns (its ``row`` column is the run's 0-based row,
    the grid shows it 1-based).
    """
    query = filter_widgets(info, threshold)
    # widget keys carry the run id: a page, a selection or a picked row means nothing elsewhere
    table_key, inspect_key, page_key = (f"ds_{k}_{info.id}" for k in ("table", "inspect", "page"))
    page_no = int(st.session_state.get(page_key, 1))
    page, matched = run_page(info.id, query, limit=PAGE_ROWS, offset=(page_no - 1) * PAGE_ROWS)
    pages = max(1, -(-matched // PAGE_ROWS))
    if page_no > pages:  # the filters left fewer pages: back to the first
        page_no = st.session_state[page_key] = 1
        page, matched = run_page(info.id, query, limit=PAGE_ROWS, offset=0)
    if pages > 1:
        st.number_input(f"Page (of {pages}, {PAGE_ROWS} rows each)", 1, pages, key=page_key)
    shown = results_table(page, inputs=input_columns(info), with_ragas=with_ragas)
    if (own := info.shown("variant")) not in shown.columns:  # the input's name, not the role
        shown = shown.rename(columns={"variant": own})
    rows = page["row"].tolist()  # the run's 0-based rows (the grid shows them 1-based)

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

    where = f" (page {page_no} of {pages})" if pages > 1 else ""
    st.markdown(
        f"**{matched:,} of {info.n_scored:,} rows**{where} · low scores (below {threshold:.2f}) "
        "in red · click a column header to sort this page, select a row to drill down"
    )
    formats = {"score": "{:.3f}", "answer ~ question": "{:.2f}"}
    if with_ragas:
        formats["Ragas value"] = "{:.3f}"
    st.dataframe(
        grid_style(shown, formats).map(low_style, subset=["score"]),  # failed: "—"
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
                "mode",
                help="What the score is: ragas, focus or blend (see the sidebar)",
                width="small",
            ),
            "reason": st.column_config.TextColumn(
                "reason", help="The row's main reason (see the Reason filter)", width="small"
            ),
            "flags": st.column_config.TextColumn("flags", help="Every reason that applies"),
            "questions": st.column_config.TextColumn(
                "questions",
                help="Generated questions the score rests on, of those asked (fewer: a "
                "generation failed or was cut off; flag incomplete_generation)",
                width="small",
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
    return page


def rows_card(column: Any, info: RunInfo, threshold: float) -> None:
    """The Runs page's "Rows scored" card, counted as the Dataset page counts them; the run's
    rows in its help ("1,000,000 / 1,000,000" does not fit a card)."""
    figures = run_figures(info.id, threshold)
    column.metric(
        "Rows scored",
        f"{figures.scored:,}",
        border=True,
        help=rows_scored(figures.scored, info.n_rows, figures.nan) + ".",
    )


def run_models(settings: dict[str, Any]) -> str:
    """``"openai:gpt-4o-mini + openai:text-embedding-3-small"`` from a run's saved settings."""
    llm = settings.get("llm_name") or settings.get("llm", "")
    emb = settings.get("embeddings_name") or settings.get("embeddings", "")
    return f"{llm} + {emb}"


def runs_table(runs: list[RunInfo], prices: dict[str, Price]) -> pd.DataFrame:
    """The Runs page's table: one line per saved run, with its tokens and cost."""
    with_ragas = any((r.mode or r.resume_mode) not in ("", "ragas") for r in runs)
    lines = []
    for r in runs:
        totals = run_totals(r.id, prices)
        line: dict[str, Any] = {
            "id": r.id,
            "name": r.name,
            "created": r.created.replace("T", " ")[:16],
            "status": r.status,
            "rows": f"{r.n_scored:,}/{r.n_rows:,}",
            "mode": r.mode or r.resume_mode,
            "mean": None if math.isnan(r.mean) else r.mean,
        }
        if with_ragas:
            line["ragas_mean"] = None if math.isnan(r.ragas_mean) else r.ragas_mean
        line |= {
            "tokens": compact(totals.billed_tokens),
            "cost": money(totals.cost),
            "models": run_models(r.settings),
            "strictness": r.settings.get("strictness"),
            "source": r.source,
        }
        lines.append(line)
    return pd.DataFrame(lines)
