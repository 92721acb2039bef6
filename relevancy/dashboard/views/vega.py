"""What the dashboard's Vega-Lite charts share (Compare's, Agreement's)."""

from __future__ import annotations

from typing import Any

__all__ = ["no_tooltip_where_none", "PLAIN_CONFIG"]

#: no ARIA description per mark: Vega-Lite writes one from the channels' titles as an
#: expression that does not escape a backslash, so a side's own name holding one broke the
#: chart. The chart keeps its accessible name (``st.vega_lite_chart(..., alt=...)``), as
#: Streamlit's own charts of more than 5,000 rows do.
PLAIN_CONFIG = {"aria": False}


def no_tooltip_where_none(layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``layers`` with no tooltip on each layer whose encoding sets ``"tooltip": None`` (lines,
    bands, notes). Streamlit turns tooltips on for every mark, and the browser then builds one
    from the layer's channel titles as a Vega expression that does not escape a backslash: a
    title holding one (a variant's own name) broke the whole chart. The encoding's ``None``
    alone is not honoured; the mark's ``tooltip: false`` is."""
    out = []
    for layer in layers:
        encoding = dict(layer.get("encoding", {}))
        if "tooltip" in encoding and encoding["tooltip"] is None:
            del encoding["tooltip"]
            layer = {**layer, "mark": {**layer["mark"], "tooltip": False}, "encoding": encoding}
        out.append(layer)
    return out
