"""What the dashboard's Vega-Lite charts share (Compare, Agreement, Embeddings, Distributions)."""

from __future__ import annotations

from typing import Any

from relevancy.report.charts import PALETTE

__all__ = ["MIDDLE_CUT", "PLAIN_CONFIG", "QUIET", "category_scale", "legend", "legend_height"]

#: no ARIA description per mark: Vega-Lite writes one from the channels' titles as an
#: expression that does not escape a backslash, so a side's own name holding one broke the
#: chart. The chart keeps its accessible name (``st.vega_lite_chart(..., alt=...)``), as
#: Streamlit's own charts of more than 5,000 rows do.
PLAIN_CONFIG = {"aria": False}

#: the mark properties of a layer that shows no tooltip (lines, bands, notes): Streamlit turns
#: tooltips on for every mark, and the browser then builds one from the layer's channel titles,
#: as an expression that does not escape a backslash either (an encoding's ``tooltip: null`` is
#: not honoured there; the mark's ``tooltip: false`` is)
QUIET = {"tooltip": False}

#: a legend's ``labelExpr``: a label (a variant's name) over 34 characters loses its middle,
#: not its end, where names often differ ("…-v3", "…-v17"); what is left fits the legend's
#: 240 px. The name is the expression's data, never its text
MIDDLE_CUT = (
    "length(datum.label) > 34 ? slice(datum.label, 0, 16) + '…' + slice(datum.label, -16) "
    ": datum.label"
)


def legend(**more: Any) -> dict[str, Any]:
    """A legend of names above the chart: three columns (a fourth ran past the edge of a
    chart half a page wide), each label cut in its middle to 240 px."""
    return {
        "orient": "top",
        "direction": "horizontal",
        "columns": 3,
        "labelLimit": 240,
        "labelExpr": MIDDLE_CUT,
        **more,
    }


def legend_height(names: int) -> int:
    """Pixels a :func:`legend` of ``names`` names takes: Streamlit fits the whole chart,
    legend included, in its height, so the plot gets this much more (22 names squeezed a
    histogram's bars to 40 px)."""
    return 20 * -(-names // 3)


def category_scale(values: list[str]) -> dict[str, Any]:
    """One colour per name: the dashboard's palette (as the plotly figures'), and past its
    eight a scheme of twenty, before any colour repeats."""
    if len(values) <= len(PALETTE):
        return {"domain": values, "range": PALETTE[: len(values)]}
    return {"domain": values, "scheme": "tableau20"}
