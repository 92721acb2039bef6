"""What the dashboard's Vega-Lite charts share (Compare, Agreement, Embeddings, Distributions)."""

from __future__ import annotations

__all__ = ["MIDDLE_CUT", "PLAIN_CONFIG", "QUIET"]

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

#: a legend's ``labelExpr``: a label (a variant's name) over 48 characters loses its middle,
#: not its end, where names often differ ("…-v3", "…-v17"). The name is the expression's
#: data, never its text
MIDDLE_CUT = (
    "length(datum.label) > 48 ? slice(datum.label, 0, 23) + '…' + slice(datum.label, -24) "
    ": datum.label"
)
