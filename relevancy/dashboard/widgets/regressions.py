"""The Compare page's biggest regressions: each pair's two rows side by side, drawn when its
expander is opened. A fragment: opening one, or changing how many are listed, reruns this part
alone (the page's scatter and table are not sent again)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from relevancy.dashboard.views.format import esc, fmt
from relevancy.dashboard.views.links import row_url
from relevancy.dashboard.widgets.drilldown import render_result
from relevancy.dashboard.widgets.models import embedder_for
from relevancy.dashboard.widgets.state import list_runs, run_result

__all__ = ["biggest_regressions"]


@st.fragment
def biggest_regressions(
    losses: pd.DataFrame,
    *,
    runs_of: dict[str, int],
    labels: tuple[str, str],
    threshold: float,
    settings: Any,
) -> None:
    """The ``losses`` (pairs, lowest difference first): a slider for how many, then one
    expander each (the first open)."""
    n_show = (
        st.slider("How many", 1, min(20, len(losses)), min(5, len(losses)), key="cmp_n")
        if len(losses) > 1
        else 1
    )
    settings_of = {r.id: r.settings for r in list_runs()}
    for rank, (_, pair) in enumerate(losses.head(n_show).iterrows(), 1):
        title = f"{rank}. {fmt(pair['diff'])} · {esc(str(pair['user_input'])[:90])}"
        # drawn when opened (each drill-down reads and draws two results)
        with st.expander(title, rank == 1, key=f"cmp_open_{rank}", on_change="rerun") as shown:
            if not shown.open:
                continue
            st.markdown("**Question**")
            st.text(str(pair["user_input"]))
            for col, side, label in zip(st.columns(2), "ab", labels):
                with col, st.container(border=True):
                    run, row = runs_of[side], int(pair[f"row_{side}"])
                    result = run_result(run, row)
                    st.markdown(f"**{esc(label)}** · [row {row + 1}]({row_url(run, row)})")
                    render_result(
                        result,
                        key=f"cmp_{rank}_{side}",
                        threshold=threshold,
                        embedder=embedder_for(result.embeddings, settings),
                        compact=True,
                        min_questions=settings_of.get(run, {}).get("min_questions"),
                    )
