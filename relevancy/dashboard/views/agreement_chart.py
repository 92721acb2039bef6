"""The Agreement page's chart, scores against human labels, as a Vega-Lite spec.

Binary labels: a box per label (its quartiles and 1.5-IQR whiskers computed here, of every
labelled row) with the dots of the rows over it; graded labels: a scatter, the label across
(jittered), the cut that makes a label good as a dotted line. The best threshold is a dashed
line; where unrelated pairs score (the chance level) a shaded band. Above ``points`` labelled
rows the dots are a stated random sample (:func:`relevancy.dashboard.views.agreement.chart_note`).

Vega-Lite, not plotly, here: plotly's script is 0.5 s of the browser's time on every visit of
a page that draws it (``bench/RESULTS.md``, "In the browser"). Returns ``(data, spec)`` for
``st.vega_lite_chart``; text goes in as typed (Vega draws text as text, never a link).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis.chance import ChanceLevel
from relevancy.dashboard.views.agreement import CHART_POINTS, AgreementView
from relevancy.dashboard.views.reference import BAND_COLOR
from relevancy.dashboard.views.vega import PLAIN_CONFIG, QUIET
from relevancy.report.charts import PALETTE, box_stats

__all__ = ["score_label_spec"]

_GOOD, _BAD = "#16a34a", "#dc2626"
#: the boxes' ink, over the dots of either colour
_INK = "#1f2937"
#: characters of a question in a dot's tooltip
_TIP_CHARS = 200


def _band(level: ChanceLevel) -> list[dict[str, Any]]:
    """Where unrelated pairs score (5th to 95th percentile) shaded on the score axis, their
    median dotted, and a note saying so."""
    note = f"unrelated pairs, {level.short_name} (5-95%; median {level.median:.2f})"
    y = {"field": "y", "type": "quantitative", "title": "score"}
    return [
        {
            "data": {"values": [{"y": level.p5, "y2": level.p95}]},
            "mark": {"type": "rect", "color": BAND_COLOR, "opacity": 0.14, **QUIET},
            "encoding": {"y": y, "y2": {"field": "y2"}},
        },
        {
            "data": {"values": [{"y": level.median, "note": note}]},
            "mark": {
                "type": "rule",
                "color": BAND_COLOR,
                "strokeDash": [2, 3],
                "strokeWidth": 1.5,
                **QUIET,
            },
            "encoding": {"y": y},
        },
        {
            # beneath the band, where answers seldom score: not over the dots
            "data": {"values": [{"y": level.p5, "note": note}]},
            "mark": {
                "type": "text",
                "align": "right",
                "baseline": "top",
                "x": {"expr": "width - 4"},
                "dy": 3,
                "fontSize": 11,
                "color": "#334155",
                **QUIET,
            },
            "encoding": {"y": y, "text": {"field": "note"}},
        },
    ]


def _line(
    value: float, text: str, *, axis: str, title: str, colour: str, dash: list[int]
) -> list[dict[str, Any]]:
    """A line across the chart at ``value`` on ``axis`` (titled ``title``, as the dots' axis)
    with its words beside it."""
    enc = {axis: {"field": "v", "type": "quantitative", "title": title}}
    where = {"x": 4, "align": "left", "dy": -7} if axis == "y" else {"y": 8, "dx": 4}
    return [
        {
            "data": {"values": [{"v": value}]},
            "mark": {
                "type": "rule",
                "color": colour,
                "strokeDash": dash,
                "strokeWidth": 2,
                **QUIET,
            },
            "encoding": enc,
        },
        {
            "data": {"values": [{"v": value, "t": text}]},
            "mark": {"type": "text", "color": colour, "fontSize": 12, **where, **QUIET},
            "encoding": {**enc, "text": {"field": "t"}},
        },
    ]


def score_label_spec(
    view: AgreementView,
    *,
    height: int = 380,
    points: int = CHART_POINTS,
    chance: ChanceLevel | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The chart of ``view`` (see the module's words), with ``chance``'s band when given."""
    every = view.frame
    frame = every.sample(points, random_state=0).sort_index() if len(every) > points else every
    binary = view.overall.kind == "binary"
    names = {
        0.0: f"bad label ({int((every['good'] == 0).sum())})",
        1.0: f"good label ({int((every['good'] == 1).sum())})",
    }
    score = {"field": "score", "type": "quantitative", "title": "score", "scale": {"zero": False}}
    colour = {
        "field": "group",
        "type": "nominal",
        "scale": {"domain": [names[0.0], names[1.0]], "range": [_BAD, _GOOD]},
        "legend": None,
    }
    rng = np.random.default_rng(0)
    data = pd.DataFrame(
        {
            "group": frame["good"].map(names).to_numpy(dtype=object),
            "score": frame["score"].to_numpy(dtype=float),
            "row": frame["row"].astype(int).to_numpy() + 1,
            "label": frame["label"].to_numpy(dtype=float),
            "question": [str(q)[:_TIP_CHARS] for q in frame["user_input"]],
            "jitter": rng.uniform(-1.0, 1.0, len(frame)),
        }
    )
    tooltip = [
        {"field": "row", "title": "row"},
        *([] if binary else [{"field": "label", "title": "label"}]),
        {"field": "score", "title": "score", "format": ".3f"},
        {"field": "question", "title": "question"},
    ]
    layers: list[dict[str, Any]] = _band(chance) if chance is not None else []
    if binary:
        group = {
            "field": "group",
            "type": "nominal",
            "title": None,
            "sort": [names[0.0], names[1.0]],
            "axis": {"labelAngle": 0},
        }
        boxes = []
        for good, name in names.items():
            scores = every.loc[every["good"] == good, "score"].to_numpy(dtype=float)
            scores = scores[np.isfinite(scores)]
            if scores.size:  # its quartiles computed here: not every score sent
                stats = {k: float(v[0]) for k, v in box_stats(scores).items()}
                boxes.append({"group": name, **stats})
        box_data = {"values": boxes}
        dots = {
            "mark": {"type": "circle", "size": 36, "opacity": 0.7},
            "encoding": {
                "x": group,
                "xOffset": {
                    "field": "jitter",
                    "type": "quantitative",
                    "scale": {"domain": [-1.6, 1.6]},
                },
                "y": score,
                "color": colour,
                "tooltip": tooltip,
            },
        }
        # the boxes over the dots, dark and unfilled: under a thousand dots they were hidden
        ink = {"color": _INK, "strokeWidth": 2}
        layers += [
            dots,
            {
                "data": box_data,
                "mark": {"type": "rule", **ink, **QUIET},
                "encoding": {
                    "x": group,
                    "y": {**score, "field": "lowerfence"},
                    "y2": {"field": "upperfence"},
                },
            },
            {
                "data": box_data,
                "mark": {
                    "type": "bar",
                    "size": 56,
                    "fillOpacity": 0,
                    "stroke": _INK,
                    "strokeWidth": 2,
                },
                "encoding": {
                    "x": group,
                    "y": {**score, "field": "q1"},
                    "y2": {"field": "q3"},
                    "tooltip": [
                        {"field": "group", "title": "rows"},
                        {"field": "upperfence", "title": "upper whisker", "format": ".3f"},
                        {"field": "q3", "title": "75th percentile", "format": ".3f"},
                        {"field": "median", "title": "median", "format": ".3f"},
                        {"field": "q1", "title": "25th percentile", "format": ".3f"},
                        {"field": "lowerfence", "title": "lower whisker", "format": ".3f"},
                        {"field": "mean", "title": "mean", "format": ".3f"},
                    ],
                },
            },
            {
                "data": box_data,
                "mark": {"type": "tick", "size": 56, "thickness": 3, "color": _INK, **QUIET},
                "encoding": {"x": group, "y": {**score, "field": "median"}},
            },
        ]
    else:
        labels = data["label"].to_numpy(dtype=float)
        spread = float(np.ptp(labels)) if labels.size else 1.0
        data["x"] = labels + data["jitter"] * 0.015 * (spread or 1.0)
        layers.append(
            {
                "mark": {"type": "circle", "size": 40, "opacity": 0.7},
                "encoding": {
                    "x": {
                        "field": "x",
                        "type": "quantitative",
                        "title": "human label (jittered)",
                        "scale": {"zero": False},
                    },
                    "y": score,
                    "color": colour,
                    "tooltip": tooltip,
                },
            }
        )
        if view.overall.cut is not None:
            layers += _line(
                view.overall.cut,
                f"good ≥ {view.overall.cut:g}",
                axis="x",
                title="human label (jittered)",
                colour="#6b7280",
                dash=[2, 3],
            )
    if math.isfinite(view.threshold):
        text = f"best threshold {view.threshold:.3f}"
        layers += _line(
            view.threshold, text, axis="y", title="score", colour=PALETTE[0], dash=[6, 4]
        )
    spec = {
        "height": height,
        "title": {"text": "Score by human label", "anchor": "start", "fontSize": 15},
        "layer": layers,
        "config": PLAIN_CONFIG,
    }
    return data, spec
