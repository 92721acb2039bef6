"""The Embeddings page's 2-D map as a Vega-Lite spec, for the views a canvas draws at once: up
to :data:`~relevancy.report.charts.WEBGL_ABOVE` points, with or without every row's shading.
3-D and bigger maps stay plotly's (:mod:`relevancy.dashboard.views.projection_chart`: WebGL,
the lasso). Vega-Lite here because plotly's script alone is about 0.5 s of the browser's time
on every visit, and a page of this map is held to 2 s (``bench/RESULTS.md``, "In the
browser").

:func:`map_spec` returns ``(data, spec)`` for ``st.vega_lite_chart``; the chart reports a
click as the ``pick`` selection (the point's ``row``) and a dragged box as ``box`` (its x and
y ranges), and :func:`selected_rows` turns either into the rows whose points it holds.
Holding Shift, a drag pans and the wheel zooms; a double click resets the view and clears the
box. Text from the data is only ever a field's value (legend labels, tooltips): Vega draws it
as text, never as markup or a link, and no title or expression is built from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from relevancy.analysis.projection import Density
from relevancy.dashboard.views.vega import (
    PLAIN_CONFIG,
    QUIET,
    category_scale,
    legend,
    legend_height,
)
from relevancy.report.charts import PALETTE, SCORE_SCALE

__all__ = ["BOX", "HOW", "PICK", "map_spec", "selected_rows"]

#: the selection parameters Streamlit reports (``selection_mode``)
PICK, BOX = "pick", "box"
#: how to pick points on this map, as the page says it
HOW = (
    "click a point to open its row below, or drag a box to select several (hold Shift to pan "
    "or, with the wheel, zoom; a double click resets)"
)
#: characters of a question shown in a point's tooltip
_TIP_CHARS = 300
#: noncommittal flags' colours (as the plotly map's)
_FLAG_COLOURS = {"no": "#0ea5e9", "yes": "#c0392b"}
#: a drag draws the box; with Shift held it pans, and the wheel zooms only then (the page
#: scrolls over the map as anywhere else)
_DRAG = "[pointerdown[!event.shiftKey], window:pointerup] > window:pointermove!"
_PAN = "[pointerdown[event.shiftKey], window:pointerup] > window:pointermove!"


def _points_frame(points: pd.DataFrame, coords: np.ndarray) -> pd.DataFrame:
    """One record per point: its place, its link's other end (a generated question's
    original), and what the tooltip and colour read."""
    xy = np.asarray(coords, dtype=float)[:, :2].astype(np.float32)
    parent = points["parent"].to_numpy(dtype=int)
    linked = (points["kind"].to_numpy() == "generated") & (parent >= 0)
    px = np.where(linked, xy[np.maximum(parent, 0), 0], np.nan).astype(np.float32)
    py = np.where(linked, xy[np.maximum(parent, 0), 1], np.nan).astype(np.float32)
    data = pd.DataFrame(
        {
            "x": xy[:, 0],
            "y": xy[:, 1],
            "px": px,
            "py": py,
            "kind": points["kind"].to_numpy(dtype=object),
            "row": points["row"].to_numpy(dtype=np.int64),
            "row_no": points["row"].to_numpy(dtype=np.int64) + 1,
            "text": [_cut(t) for t in points["text"]],
            "similarity": pd.to_numeric(points["similarity"], errors="coerce").astype("float32"),
            "score": pd.to_numeric(points["score"], errors="coerce").astype("float32"),
            "variant": points["variant"].astype(str).to_numpy(dtype=object),
            "noncommittal": points["noncommittal"].astype(str).to_numpy(dtype=object),
        }
    )
    # a point without a place (a projection can give NaN) is left out, as plotly leaves it
    return data[np.isfinite(xy).all(axis=1)].reset_index(drop=True)


def _cut(text: Any) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= _TIP_CHARS else s[: _TIP_CHARS - 1] + "…"


def _colour(data: pd.DataFrame, color_by: str) -> dict[str, Any]:
    """The generated questions' colour: the row's score (red to green, 0 to 1, as every score
    colour of the dashboard), or one colour per variant or noncommittal flag."""
    if color_by == "score":
        return {
            "field": "score",
            "type": "quantitative",
            "title": "row score",
            "scale": {
                "domain": [stop for stop, _ in SCORE_SCALE],
                "range": [colour for _, colour in SCORE_SCALE],
                "clamp": True,
            },
            "legend": {"orient": "top", "direction": "horizontal", "gradientLength": 160},
        }
    field = "variant" if color_by == "variant" else "noncommittal"
    values = sorted(data.loc[data["kind"] == "generated", field].unique())
    if field == "noncommittal":
        flags = [_FLAG_COLOURS.get(v, PALETTE[j % len(PALETTE)]) for j, v in enumerate(values)]
        scale = {"domain": values, "range": flags}
    else:
        scale = category_scale(values)
    return {
        "field": field,
        "type": "nominal",
        "title": "noncommittal" if field == "noncommittal" else None,
        "scale": scale,
        "legend": legend(symbolType="circle"),
    }


def _shade_frame(density: Density) -> pd.DataFrame:
    """Every row's points as the grid's occupied bins (``kind`` "shade"; log counts: a few
    dense spots would wash out the rest), as records of the map's one frame."""
    x0, x1, y0, y1 = density.extent
    step_x, step_y = (x1 - x0) / density.bins, (y1 - y0) / density.bins
    iy, ix = np.nonzero(density.counts)
    counts = density.counts[iy, ix]
    return pd.DataFrame(
        {
            "x": (x0 + step_x * ix).astype(np.float32),
            "y": (y0 + step_y * iy).astype(np.float32),
            "x2": (x0 + step_x * (ix + 1)).astype(np.float32),
            "y2": (y0 + step_y * (iy + 1)).astype(np.float32),
            "kind": "shade",
            "row": -1,
            "points": counts.astype(np.int64),
            "shade": (np.log10(counts) + 1.0).astype(np.float32),
        }
    )


def map_spec(
    points: pd.DataFrame,
    coords: np.ndarray,
    *,
    color_by: str = "score",
    density: Density | None = None,
    height: int = 620,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Original questions (dark diamonds) and generated questions (dots) on a 2-D map, a thin
    line from each generated question to its original; ``density`` shades where every row's
    points fall beneath (the drawn points are then a sample, lighter and smaller).

    ``color_by`` is ``"score"`` (the row's score), ``"variant"`` or ``"noncommittal"``.
    Clicking a point selects its row (:data:`PICK`), a dragged box the points in it
    (:data:`BOX`): see :func:`selected_rows`.
    """
    data = _points_frame(points, coords)
    shaded = density is not None
    axis = {"labels": False, "ticks": False, "domain": False, "title": None}
    scale = {"zero": False, "nice": False, "padding": 12}
    x = {"field": "x", "type": "quantitative", "axis": axis, "scale": scale}
    y = {"field": "y", "type": "quantitative", "axis": axis, "scale": scale}
    generated = {"filter": "datum.kind === 'generated'"}
    boxed = {"param": BOX, "empty": True}
    layers: list[dict[str, Any]] = []
    colour = _colour(data, color_by)
    if colour.get("type") == "nominal":  # the legend's rows come out of the map's height
        height += legend_height(len(colour["scale"]["domain"]))
    spec: dict[str, Any] = {"height": height, "config": PLAIN_CONFIG}
    if shaded:  # the bins in the same frame: a chart's named datasets left the points none
        data = pd.concat([_shade_frame(density), data], ignore_index=True)
        layers.append(
            {
                "transform": [{"filter": "datum.kind === 'shade'"}],
                "mark": {"type": "rect", "opacity": 0.9},
                "encoding": {
                    "x": x,
                    "x2": {"field": "x2"},
                    "y": y,
                    "y2": {"field": "y2"},
                    "color": {
                        "field": "shade",
                        "type": "quantitative",
                        "scale": {"range": ["#dbeafe", "#1e40af"]},
                        "legend": None,
                    },
                    "tooltip": [{"field": "points", "title": "points of every row", "format": ","}],
                },
            }
        )
    layers.append(
        {
            "transform": [generated, {"filter": "isValid(datum.px) && isValid(datum.py)"}],
            "mark": {
                "type": "rule",
                "color": "#64748b",
                "opacity": 0.15 if shaded else 0.35,
                "strokeWidth": 1,
                **QUIET,
            },
            "encoding": {"x": x, "y": y, "x2": {"field": "px"}, "y2": {"field": "py"}},
        }
    )
    see = 0.6 if shaded else 0.9
    layers.append(
        {
            "transform": [generated],
            "params": [
                {"name": PICK, "select": {"type": "point", "fields": ["row"], "on": "click"}},
                {
                    "name": BOX,
                    "select": {
                        "type": "interval",
                        "encodings": ["x", "y"],
                        "on": _DRAG,
                        "clear": "dblclick",
                        "mark": {"fill": "#334155", "fillOpacity": 0.08, "stroke": "#334155"},
                    },
                },
                {
                    "name": "view",
                    "select": {
                        "type": "interval",
                        "encodings": ["x", "y"],
                        "on": _PAN,
                        "translate": _PAN,
                        "zoom": "wheel![event.shiftKey]",
                        "clear": "dblclick",
                    },
                    "bind": "scales",
                },
            ],
            "mark": {"type": "circle", "size": 20 if shaded else 64},
            "encoding": {
                "x": x,
                "y": y,
                "color": colour,
                "opacity": {"condition": {**boxed, "value": see}, "value": 0.15},
                "tooltip": [
                    {"field": "text", "title": "generated question"},
                    {"field": "row_no", "title": "row"},
                    {"field": "similarity", "title": "similarity", "format": ".3f"},
                    {"field": "score", "title": "row score", "format": ".3f"},
                    {"field": "variant", "title": "variant"},
                    {"field": "noncommittal", "title": "noncommittal"},
                ],
            },
        }
    )
    layers.append(
        {
            "transform": [{"filter": "datum.kind === 'question'"}],
            "mark": {
                "type": "point",
                "shape": "diamond",
                "filled": True,
                "color": "#111827",
                "stroke": "white",
                "strokeWidth": 0 if shaded else 1,
                "size": 50 if shaded else 110,
            },
            "encoding": {
                "x": x,
                "y": y,
                "opacity": {"condition": {**boxed, "value": 0.8 if shaded else 1.0}, "value": 0.2},
                "tooltip": [
                    {"field": "text", "title": "original question"},
                    {"field": "row_no", "title": "row"},
                ],
            },
        }
    )
    spec["layer"] = layers
    # the shading's blues and the dots' colours are two scales, not one shared
    spec["resolve"] = {"scale": {"color": "independent"}}
    # a canvas: thousands of dots drawn at once, not an SVG node each
    spec["usermeta"] = {"embedOptions": {"renderer": "canvas"}}
    return data, spec


def selected_rows(selection: Any, data: pd.DataFrame) -> list[int]:
    """The rows a selection of :func:`map_spec`'s chart holds: a clicked point's row, or the
    rows of every point (generated or original) inside a dragged box, in the order the map
    lists its points; each once."""
    got = selection or {}
    picked = got.get(PICK) or []
    # a click's row (row 0 too); a click on a shading bin has none (-1)
    rows = [
        int(p["row"])
        for p in picked
        if isinstance(p, dict) and (p.get("row") is not None) and p["row"] >= 0
    ]
    box = got.get(BOX) or {}
    if isinstance(box, dict) and "x" in box and "y" in box:
        (x0, x1), (y0, y1) = sorted(box["x"]), sorted(box["y"])
        inside = data["x"].between(x0, x1) & data["y"].between(y0, y1)
        inside &= data["kind"] != "shade"
        rows += data.loc[inside, "row"].astype(int).tolist()
    return list(dict.fromkeys(rows))
