"""The Distributions page's histogram as a Vega-Lite spec: the page's first tab, drawn on
every visit. Vega-Lite, not plotly, because plotly's script alone is most of a second of the
browser's time on every visit (``bench/RESULTS.md``, "In the browser"); the box/violin and
ECDF tabs, drawn when opened, and the HTML report keep plotly's figures
(:mod:`relevancy.report.charts`), of the same bins
(:func:`~relevancy.report.charts.histogram_counts`).

:func:`histogram_spec` returns ``(data, spec)`` for ``st.vega_lite_chart``. Group names are
only ever data (legend labels, tooltips), drawn as text: never markup, a link or part of an
expression.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis.chance import ChanceLevel
from relevancy.dashboard.views.vega import (
    PLAIN_CONFIG,
    QUIET,
    category_scale,
    legend,
    legend_height,
)
from relevancy.report.charts import histogram_counts

__all__ = ["histogram_spec"]

#: the threshold's colour and the chance band's (as the plotly figures')
_THRESHOLD = "#b91c1c"
_BAND = "#64748b"


def histogram_spec(
    frame: pd.DataFrame,
    *,
    threshold: float | None = 0.5,
    by: str | None = None,
    level: ChanceLevel | None = None,
    bins: int = 20,
    height: int = 380,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The scores in bins of ``1 / bins`` (counted here: a number per bin is sent, not one per
    row), one overlaid colour per group of column ``by``; the ``threshold`` as a dashed line,
    and where unrelated pairs score (``level``: 5th to 95th percentile shaded, the median
    dotted) beneath."""
    names, edges, counts = histogram_counts(frame, by, bins)
    parts = []
    for name, count in zip(names, counts):
        used = np.flatnonzero(count)
        parts.append(
            pd.DataFrame(
                {
                    "start": edges[used],
                    "end": edges[used + 1],
                    "rows": count[used],
                    "group": name,
                }
            )
        )
    data = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    low = min(0.0, float(edges[0])) - 0.02
    x = {
        "field": "start",
        "type": "quantitative",
        "title": "Answer Relevancy",
        "scale": {"domain": [low, 1.02], "nice": False, "zero": False},
    }
    tallest = max((int(c.max(initial=0)) for c in counts), default=0)
    several = len(names) > 1
    colour: dict[str, Any] = {
        "field": "group",
        "type": "nominal",
        "scale": category_scale(names),
        "legend": legend(title=None) if several else None,
    }
    layers: list[dict[str, Any]] = []
    if level is not None:  # beneath the bars, within the axis
        lo, hi = max(level.p5, low), min(level.p95, 1.02)
        note = f"unrelated pairs, {level.short_name} (5-95%; median {level.median:.2f})"
        band = {"values": [{"start": lo, "end": hi, "median": level.median, "note": note}]}
        layers += [
            {
                "data": band,
                "mark": {"type": "rect", "color": _BAND, "opacity": 0.14, **QUIET},
                "encoding": {"x": x, "x2": {"field": "end"}},
            },
            {
                "data": band,
                "mark": {"type": "rule", "color": _BAND, "strokeWidth": 1.5, **QUIET},
                "encoding": {"x": {**x, "field": "median"}},
            },
        ]
    layers.append(
        {
            "mark": {
                "type": "bar",
                "opacity": 0.75 if several else 0.9,
                "stroke": "white",
                "strokeWidth": 1,
            },
            "encoding": {
                "x": x,
                "x2": {"field": "end"},
                "y": {
                    "field": "rows",
                    "type": "quantitative",
                    "title": "rows",
                    "stack": None,  # overlaid, as the groups are drawn on one another
                    # whole rows: with few, a tick per row (not 0.5 steps)
                    "axis": {"format": ",d", **({"tickMinStep": 1} if tallest <= 8 else {})},
                },
                "y2": {"datum": 0},
                "color": colour,
                "tooltip": [
                    {"field": "group", "title": "group"},
                    {"field": "start", "title": "from", "format": ".2f"},
                    {"field": "end", "title": "to", "format": ".2f"},
                    {"field": "rows", "title": "rows", "format": ","},
                ],
            },
        }
    )
    if level is not None:  # the band's note above the bars, not hidden behind them
        layers += [
            {
                "data": band,
                "mark": {
                    "type": "text",
                    "align": "left",
                    "baseline": "top",
                    "dx": 4,
                    "y": 4,
                    "fontSize": 11,
                    "color": "#334155",
                    **QUIET,
                },
                "encoding": {"x": x, "text": {"field": "note"}},
            },
        ]
    if threshold is not None:
        mark = {"values": [{"start": threshold, "note": f"threshold {threshold:.2f}"}]}
        layers += [
            {
                "data": mark,
                "mark": {
                    "type": "rule",
                    "color": _THRESHOLD,
                    "strokeWidth": 2,
                    "strokeDash": [6, 4],
                    **QUIET,
                },
                "encoding": {"x": x},
            },
            {
                "data": mark,
                "mark": {
                    "type": "text",
                    "baseline": "bottom",
                    "y": -4,
                    "fontSize": 12,
                    "color": _THRESHOLD,
                    **QUIET,
                },
                "encoding": {"x": x, "text": {"field": "note"}},
            },
        ]
    tall = height + (legend_height(len(names)) if several else 0)
    spec = {"height": tall, "config": PLAIN_CONFIG, "layer": layers}
    return data, spec
