"""The Embeddings page's point cloud: questions and their rebuilt questions in 2-D or 3-D
(WebGL above a few thousand points), and what a lasso selection picked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from relevancy.analysis.projection import Density
from relevancy.report.charts import (
    PALETTE,
    SCORE_SCALE,
    WEBGL_ABOVE,
    hover_text,
    label,
    layout,
)

__all__ = [
    "HOW",
    "projection_scatter",
    "row_questions",
    "selected_rows",
]


#: how to pick points on this map, as the page says it
HOW = (
    "click a point to open its row below, or pick the lasso or the box in the chart's toolbar "
    "to select several"
)


def _custom(points: pd.DataFrame, idx: Sequence[int]) -> np.ndarray:
    """``[row, point index, row + 1, similarity, row score]`` per point (a selection event
    echoes the first two back; the hover reads the last three), one compact array."""
    picked = points.loc[list(idx)]
    return np.column_stack(
        [
            picked["row"].to_numpy(dtype=float),
            np.asarray(idx, dtype=float),
            picked["row"].to_numpy(dtype=float) + 1,
            pd.to_numeric(picked["similarity"], errors="coerce").to_numpy(dtype=float),
            pd.to_numeric(picked["score"], errors="coerce").to_numpy(dtype=float),
        ]
    ).astype(np.float32)


#: each kind of point's hover: its text (the question, with the variant and the noncommittal
#: flag of a generated one) and its numbers from ``customdata`` (sent once, as numbers)
_HOVER = {
    "question": "<b>Original question</b> (row %{customdata[2]})<br>%{text}<extra></extra>",
    "generated": "<b>Generated question</b> (row %{customdata[2]})<br>%{text}<br>similarity "
    "%{customdata[3]:.3f} · row score %{customdata[4]:.3f}<extra></extra>",
}


def projection_scatter(
    points: pd.DataFrame,
    coords: np.ndarray,
    *,
    color_by: str = "score",
    dims: int = 2,
    title: str | None = None,
    height: int = 620,
    density: Density | None = None,
) -> go.Figure:
    """Original questions (diamonds) and generated questions (dots) in 2D or 3D.

    A thin line joins each generated question to its original. ``color_by`` is ``"score"``
    (continuous, red -> green), ``"variant"`` or ``"noncommittal"``. ``customdata`` holds
    ``[row, point index]`` so a selection can be mapped back to a row. A ``density`` (2-D
    only) is shaded beneath: where every row's points fall, of which the dots are a sample.
    """
    coords = np.asarray(coords, dtype=float)
    three = dims == 3 and coords.shape[1] >= 3
    # WebGL for many points in 2D: SVG slows down past a few thousand markers
    scatter = go.Scatter3d if three else go.Scattergl if len(points) > WEBGL_ABOVE else go.Scatter

    def xyz(idx: Sequence[int]) -> dict[str, Any]:
        # float32: the browser draws pixels, and half the bytes travel
        out = {"x": coords[idx, 0].astype(np.float32), "y": coords[idx, 1].astype(np.float32)}
        if three:
            out["z"] = coords[idx, 2].astype(np.float32)
        return out

    fig = go.Figure()
    shaded = density is not None and not three  # the sample drawn lighter over a density
    if shaded:
        fig.add_trace(_density_trace(density))
    gen = points.index[points["kind"] == "generated"].to_numpy()
    orig = points.index[points["kind"] == "question"].to_numpy()
    # lines from each generated question to its original: (parent, child, gap) triples, one
    # array per axis (NaN breaks the line), sent as numbers rather than JSON lists
    parents = points.loc[gen, "parent"].to_numpy(dtype=int) if len(gen) else np.array([], int)
    linked = gen[parents >= 0]
    parents = parents[parents >= 0]

    def segments(axis: int) -> np.ndarray:
        out = np.full((len(linked), 3), np.nan, dtype=np.float32)
        out[:, 0], out[:, 1] = coords[parents, axis], coords[linked, axis]
        return out.ravel()

    lx, ly = segments(0), segments(1)
    link_line = (
        dict(color="#94a3b8", width=2)  # WebGL (3D) draws no see-through lines: solid, thicker
        if three
        else dict(color=f"rgba(100,116,139,{0.15 if shaded else 0.35})", width=1)
    )
    if scatter is go.Scatter and not shaded:
        # SVG: one path of every link beneath the points; as a trace each link would be an SVG
        # element of its own (3,000 of them, a third of the map's drawing time)
        if path := _link_path(lx, ly):  # empty: no generated question to join
            fig.add_shape(
                type="path",
                path=path,
                xref="x",
                yref="y",
                layer="between",
                line=link_line,
                name="links",
            )
    else:  # WebGL draws lines at once; over a density the links must lie above its shading
        line_kw: dict[str, Any] = {"x": lx, "y": ly}
        if three:
            line_kw["z"] = segments(2)
        fig.add_trace(
            scatter(
                **line_kw,
                mode="lines",
                name="links",
                hoverinfo="skip",
                showlegend=False,
                line=link_line,
            )
        )

    def hovers(idx: Sequence[int]) -> list[str]:
        """Each point's own words: the question, and a generated one's variant and flag (its
        numbers come from ``customdata``: see :data:`_HOVER`)."""
        out = []
        fields = ["kind", "text", "variant", "noncommittal"]
        for kind, text, variant, flag in points.loc[list(idx), fields].itertuples(
            index=False, name=None
        ):  # the rows' values at once: a pandas lookup per point costs 0.1 ms
            extra = (
                "" if kind == "question" else f"<br>variant {label(variant)} · noncommittal {flag}"
            )
            out.append(hover_text(text) + extra)
        return out

    size = 4 if three or shaded else 8
    see = 0.6 if shaded else 0.9
    if len(gen):
        if color_by == "score":
            fig.add_trace(
                scatter(
                    **xyz(gen),
                    mode="markers",
                    name="generated questions",
                    marker=dict(
                        size=size,
                        color=points.loc[gen, "score"].to_numpy(dtype=np.float32),
                        colorscale=SCORE_SCALE,
                        cmin=0,
                        cmax=1,
                        opacity=see,
                        colorbar=dict(title="score", thickness=12, len=0.6),
                    ),
                    text=hovers(gen),
                    hovertemplate=_HOVER["generated"],
                    customdata=_custom(points, gen),
                )
            )
        else:
            column = "variant" if color_by == "variant" else "noncommittal"
            fixed = {"yes": "#c0392b", "no": "#0ea5e9"}
            for j, value in enumerate(sorted(points.loc[gen, column].astype(str).unique())):
                idx = gen[points.loc[gen, column].astype(str).to_numpy() == value]
                color = (
                    fixed.get(value, PALETTE[j % len(PALETTE)])
                    if column == "noncommittal"
                    else PALETTE[j % len(PALETTE)]
                )
                name = f"noncommittal: {value}" if column == "noncommittal" else label(value)
                fig.add_trace(
                    scatter(
                        **xyz(idx),
                        mode="markers",
                        name=name,
                        marker=dict(size=size, color=color, opacity=see),
                        text=hovers(idx),
                        hovertemplate=_HOVER["generated"],
                        customdata=_custom(points, idx),
                    )
                )
    if len(orig):
        fig.add_trace(
            scatter(
                **xyz(orig),
                mode="markers",
                name="original questions",
                marker=dict(
                    size=size + (2 if shaded else 4),
                    opacity=0.8 if shaded else 1.0,
                    color="#111827",
                    symbol="diamond",
                    line=dict(width=1, color="white") if not three else None,
                ),
                text=hovers(orig),
                hovertemplate=_HOVER["question"],
                customdata=_custom(points, orig),
            )
        )
    if three:
        fig.update_layout(scene=dict(xaxis_title="", yaxis_title="", zaxis_title=""))
    else:
        fig.update_xaxes(showticklabels=False, title_text="", zeroline=False)
        fig.update_yaxes(showticklabels=False, title_text="", zeroline=False)
    # no dragmode of our own: with points selectable, Streamlit then pans on a drag and selects
    # the point clicked (it turns clicks off in lasso or box mode, which the toolbar offers)
    fig.update_layout(dragmode="pan") if three else None
    fig = layout(fig, title=title, height=height)
    # legend on the left: the chart's toolbar sits top right
    fig.update_layout(legend=dict(x=0, xanchor="left", y=1.02, yanchor="bottom"))
    return fig


def _link_path(x: np.ndarray, y: np.ndarray) -> str:
    """An SVG path of the links (``x``, ``y``: from, to, NaN for each link): one move and one
    line a link, numbers to five significant digits (far below a pixel)."""
    ends = np.column_stack([x.reshape(-1, 3)[:, :2], y.reshape(-1, 3)[:, :2]])
    ends = ends[np.isfinite(ends).all(axis=1)]  # a point without a place has no link
    return "".join(f"M{x0:.5g},{y0:.5g}L{x1:.5g},{y1:.5g}" for x0, x1, y0, y1 in ends)


def _density_trace(density: Density) -> go.Heatmap:
    """Every row's points as shaded bins (log counts: a few dense spots would wash out the
    rest); empty bins are left clear."""
    xs, ys = density.centres()
    counts = density.counts
    used_y, used_x = np.flatnonzero(counts.any(axis=1)), np.flatnonzero(counts.any(axis=0))
    if len(used_x):  # the occupied bins only: empty margins would widen the map
        keep_y = slice(used_y[0], used_y[-1] + 1)
        keep_x = slice(used_x[0], used_x[-1] + 1)
        xs, ys, counts = xs[keep_x], ys[keep_y], counts[keep_y, keep_x]
    shade = np.where(counts > 0, np.log10(np.maximum(counts, 1)) + 1.0, np.nan)
    return go.Heatmap(
        x=xs,
        y=ys,
        z=shade,
        customdata=counts,
        colorscale=[[0.0, "#dbeafe"], [1.0, "#1e40af"]],
        showscale=False,
        opacity=0.9,
        name="every row",
        hovertemplate="%{customdata:,} points of every row here<extra></extra>",
    )


def row_questions(points: pd.DataFrame) -> dict[int, str]:
    """Each row's original question, from a point table (a row's generated points name their
    original's point as ``parent``)."""
    out: dict[int, str] = {}
    texts = points["text"].to_numpy()
    for row, kind, text, parent in zip(points["row"], points["kind"], texts, points["parent"]):
        out.setdefault(int(row), text if kind == "question" else texts[parent])
    return out


def selected_rows(selection: Any) -> list[int]:
    """The rows of the points a plotly selection event holds (``customdata`` = ``[row, i]``),
    each once, in selection order."""
    rows: list[int] = []
    for point in (selection or {}).get("points", []) if selection is not None else []:
        custom = point.get("customdata")
        if isinstance(custom, dict):  # some plotly versions send arrays as {"0": .., "1": ..}
            custom = [custom[k] for k in sorted(custom, key=int)]
        if isinstance(custom, (list, tuple)) and custom:
            rows.append(int(custom[0]))
    return list(dict.fromkeys(rows))
