"""The Compare page's two charts as Vega-Lite specs: the A-B scatter and the histogram of the
paired differences. Vega-Lite, not plotly, on this page: plotly's script alone is 0.5 s of the
browser's time on every visit, a Vega-Lite chart of the same 2,000 pairs is drawn in 0.3 s all
told (``bench/RESULTS.md``, "In the browser"). The HTML report keeps plotly's scatter
(:func:`relevancy.report.compare_charts.ab_scatter`): the same sample, the same colours.

Each function returns ``(data, spec)`` for ``st.vega_lite_chart(data, spec)``: the data a plain
frame (sent as Arrow). The sides' own names appear only in the axis titles, cut to a width
(Vega draws text as text: a name holding markup or an address shows as typed, never as a
link); legends and tooltips say A and B. A tooltip is a Vega-Lite expression built from its
titles, which does not escape a backslash: a name there could break the chart, so every
layer without a tooltip of its own has none (Streamlit turns tooltips on for all).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from relevancy.dashboard.views.vega import PLAIN_CONFIG, QUIET
from relevancy.report.compare_charts import DIFF_EDGES, OUTCOME_COLORS, scatter_sample

__all__ = ["scatter_spec", "histogram_spec"]

#: characters of a question shown in a point's tooltip
_TIP_CHARS = 120
#: each outcome's name in the legend (the axes say which side is A and which B)
_NAMES = {"win": "B better", "tie": "tie", "loss": "A better"}
#: an axis title is cut to the plot's own width (uncut, a long name made Vega shrink the plot
#: to fit it, to nothing in a narrow column), and a name to this many characters, its middle
#: left out (names often differ at their end: "…-v17", "…-v3")
_TITLE_CHARS = 48


def _short(name: str) -> str:
    """``name`` with its middle left out when it is longer than :data:`_TITLE_CHARS`."""
    if len(name) <= _TITLE_CHARS:
        return name
    half = (_TITLE_CHARS - 1) // 2
    return f"{name[:half]}…{name[-half:]}"


def _colour(names: dict[str, str], keys: list[str]) -> dict[str, Any]:
    """One colour per outcome, the legend in the order of ``keys``."""
    return {
        "field": "outcome",
        "type": "nominal",
        "scale": {
            "domain": [names[k] for k in keys],
            "range": [OUTCOME_COLORS[k] for k in keys],
        },
        "legend": {"orient": "top", "title": None},
    }


def scatter_spec(
    paired: pd.DataFrame, *, label_a: str = "A", label_b: str = "B", tie_margin: float = 0.02
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """B's score against A's, a dot per pair (at most
    :data:`~relevancy.report.compare_charts.SCATTER_PAIRS`, drawn at random and said in the
    title); the diagonal and the tie band's edges as lines. Above the diagonal, B is more
    relevant."""
    both = paired[["score_a", "score_b"]].to_numpy(dtype=float)
    finite = both[np.isfinite(both)]
    lo = min(0.0, float(finite.min()) if finite.size else 0.0) - 0.03
    hi = max(1.0, float(finite.max()) if finite.size else 1.0) + 0.03
    shown, sampled = scatter_sample(paired)
    keys = [k for k in ("win", "tie", "loss") if (shown["outcome"] == k).any()]
    shown = shown[shown["outcome"].isin(keys)]
    data = pd.DataFrame(
        {
            "a": shown["score_a"].to_numpy(dtype=np.float32),
            "b": shown["score_b"].to_numpy(dtype=np.float32),
            "diff": shown["diff"].to_numpy(dtype=np.float32),
            "outcome": shown["outcome"].map(_NAMES).to_numpy(dtype=object),
            "question": [str(q)[:_TIP_CHARS] for q in shown["user_input"]],
        }
    )
    scale = {"domain": [lo, hi], "nice": False, "zero": False}
    x = {"field": "a", "type": "quantitative", "title": f"A: {_short(label_a)}", "scale": scale}
    y = {"field": "b", "type": "quantitative", "title": f"B: {_short(label_b)}", "scale": scale}
    x["axis"] = {"titleLimit": {"expr": "width"}}
    y["axis"] = {"titleLimit": {"expr": "height"}}

    def line(offset: float, dash: list[int] | None, colour: str) -> dict[str, Any]:
        ends = [{"a": lo, "b": lo + offset}, {"a": hi, "b": hi + offset}]
        mark: dict[str, Any] = {"type": "line", "color": colour, "strokeWidth": 1, "clip": True}
        mark.update(QUIET)
        if dash:
            mark["strokeDash"] = dash
        return {
            "data": {"values": ends},
            "mark": mark,
            "encoding": {"x": x, "y": y},
        }

    spec: dict[str, Any] = {
        "height": 440,
        "layer": (
            [
                line(0.0, None, "#475569"),
                line(tie_margin, [3, 3], "#94a3b8"),
                line(-tie_margin, [3, 3], "#94a3b8"),
                {
                    "mark": {
                        "type": "circle",
                        "size": 64,
                        "opacity": 0.85,
                        "stroke": "white",
                        "strokeWidth": 1,
                    },
                    "encoding": {
                        "x": x,
                        "y": y,
                        "color": _colour(_NAMES, keys),
                        "tooltip": [
                            {"field": "question", "title": "question"},
                            {"field": "a", "title": "A", "format": ".3f"},
                            {"field": "b", "title": "B", "format": ".3f"},
                            {"field": "diff", "title": "B − A", "format": "+.3f"},
                        ],
                    },
                },
            ]
        ),
        # a canvas: 2,000 dots drawn at once, not an SVG node each
        "usermeta": {"embedOptions": {"renderer": "canvas"}},
        "config": PLAIN_CONFIG,
    }
    if sampled:
        spec["title"] = {"text": sampled, "anchor": "start", "fontSize": 13}
    return data, spec


def histogram_spec(
    paired: pd.DataFrame, *, tie_margin: float = 0.02
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The paired differences in bins of 0.05 (counted here: a number per bin is sent, not one
    per pair), stacked by outcome; the tie band shaded and zero marked."""
    names = {"loss": "regression", "tie": "tie", "win": "improvement"}
    parts, below = [], np.zeros(len(DIFF_EDGES) - 1, dtype=np.int64)
    for key, name in names.items():  # stacked here, regressions at the bottom
        diff = paired.loc[paired["outcome"] == key, "diff"].to_numpy(dtype=float)
        counts = np.histogram(diff[np.isfinite(diff)], DIFF_EDGES)[0]
        used = np.flatnonzero(counts)
        parts.append(
            pd.DataFrame(
                {
                    "start": DIFF_EDGES[used],
                    "end": DIFF_EDGES[used + 1],
                    "pairs": counts[used],
                    "low": below[used],
                    "high": below[used] + counts[used],
                    "outcome": name,
                }
            )
        )
        below += counts
    data = pd.concat(parts, ignore_index=True)
    x = {"field": "start", "type": "quantitative", "title": "difference, B − A"}
    colour = {
        "field": "outcome",
        "type": "nominal",
        "scale": {
            "domain": list(names.values()),
            "range": [OUTCOME_COLORS[k] for k in names],
        },
        # two a line: three in one were cut in a narrow column ("regression ■ tie ■")
        "legend": {"orient": "top", "title": None, "columns": 2},
    }
    band = {"values": [{"start": -tie_margin, "end": tie_margin}]}
    spec: dict[str, Any] = {
        "height": 280,
        "config": PLAIN_CONFIG,
        "layer": (
            [
                {
                    "data": band,
                    "mark": {"type": "rect", "color": "#94a3b8", "opacity": 0.15, **QUIET},
                    "encoding": {"x": x, "x2": {"field": "end"}},
                },
                {
                    "mark": {"type": "bar", "binSpacing": 1},
                    "encoding": {
                        "x": x,
                        "x2": {"field": "end"},
                        "y": {"field": "high", "type": "quantitative", "title": "pairs"},
                        "y2": {"field": "low"},
                        "color": colour,
                        "tooltip": [
                            {"field": "outcome", "title": "outcome"},
                            {"field": "pairs", "title": "pairs", "format": ","},
                            {"field": "start", "title": "from", "format": "+.2f"},
                            {"field": "end", "title": "to", "format": "+.2f"},
                        ],
                    },
                },
                {
                    "data": {"values": [{"start": 0.0}]},
                    "mark": {"type": "rule", "color": "#111827", "strokeWidth": 1, **QUIET},
                    "encoding": {"x": x},
                },
            ]
        ),
    }
    return data, spec
