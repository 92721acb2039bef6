"""The Distributions page's three views of the scores, one tab each: a histogram, a box or
violin, and an ECDF. Only the open tab is drawn (each figure is most of a second of the
browser's time); opening another reruns the page and draws that one. The histogram, the tab
a visit opens on, is Vega-Lite's (:mod:`relevancy.dashboard.views.score_vega`); the other two
are plotly's, shared with the HTML report."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from relevancy.dashboard.views import score_vega
from relevancy.dashboard.views.reference import add_band
from relevancy.report import charts

__all__ = ["score_charts"]


def score_charts(frame: pd.DataFrame, *, threshold: float, by: str | None, level: Any) -> None:
    """The tabs (key ``dist_tab``), the open one drawn: ``frame``'s scores split ``by`` a
    column (or not), the ``threshold`` line and the chance band of ``level`` (or none)."""
    tab1, tab2, tab3 = st.tabs(
        ["📊 Histogram", "📦 Box / violin", "📈 ECDF"], key="dist_tab", on_change="rerun"
    )
    if tab1.open:
        with tab1:
            # Vega-Lite: the tab every visit opens on loads no plotly (its script alone is
            # most of a second of the browser's time); the other two tabs are plotly's
            data, spec = score_vega.histogram_spec(frame, threshold=threshold, by=by, level=level)
            st.vega_lite_chart(data, spec, key="dist_hist", alt="Histogram of the scores")
            st.caption("How many rows fall in each score band; the dashed line is the threshold.")
    if tab2.open:
        with tab2:
            kind = st.radio(
                "Shape",
                ["box", "violin"],
                horizontal=True,
                key="dist_kind",
                label_visibility="collapsed",
            )
            st.plotly_chart(
                add_band(
                    charts.score_box(frame, threshold=threshold, by=by, kind=kind), level, axis="y"
                ),
                key="dist_box",
            )
            st.caption(
                f"Each dot is a row (a group of more than {charts.DOTS_UP_TO:,} rows shows "
                f"its outliers only, and one of more than {charts.BOX_SCORES_UP_TO:,} its box "
                "alone, its quartiles computed from every row; a violin's shape then comes "
                f"from {charts.VIOLIN_SAMPLE:,} rows drawn at random); the box spans the middle "
                "half of the scores, the line inside is the median and the dashed line the "
                "mean. Hover a dot to see its question."
            )
    if tab3.open:
        with tab3:
            st.plotly_chart(
                add_band(charts.score_ecdf(frame, threshold=threshold, by=by), level),
                key="dist_ecdf",
            )
            st.caption(
                "For each score x, the share of rows scoring at most x. Where a curve crosses the "
                "threshold line is the share of low rows; a curve further right is better."
            )
