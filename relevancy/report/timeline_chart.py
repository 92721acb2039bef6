"""The Over time figure (plotly): each bucket's mean score with its 95% CI band, one line per
group, the rows per bucket as bars underneath (right axis), where the model or the prompt
changed, and the windows that alert. The chance band is added by the caller (the dashboard's
:func:`relevancy.dashboard.views.reference.add_band`, ``axis="y"``).

See :mod:`relevancy.analysis.timeline` for the table drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from relevancy.report.charts import PALETTE, rgb

__all__ = ["timeline_figure", "ROWS_TRACE", "ALERT_COLOR", "MAX_MARKS"]

#: the name of the bars' trace (rows per bucket)
ROWS_TRACE = "rows"
ALERT_COLOR = "#dc2626"
#: change marks drawn at most (the first ones in time)
MAX_MARKS = 12
_MARK_COLOR = "#7c3aed"


def _fill(color: str, alpha: float) -> str:
    r, g, b = rgb(color)
    return f"rgba({r},{g},{b},{alpha})"


def _row_ticks(most: float) -> list[int]:
    """Whole-number ticks for the rows axis, up to the largest bucket."""
    top = max(int(math.ceil(most)), 1)
    return sorted({0, top // 2, top} - ({top // 2} if top < 2 else set()))


def timeline_figure(
    table: pd.DataFrame,
    *,
    bucket_width: pd.Timedelta,
    marks: pd.DataFrame | None = None,
    alerts: Sequence[tuple[pd.Timestamp, pd.Timestamp]] = (),
    threshold: float | None = None,
    height: int = 460,
) -> go.Figure:
    """The figure of :func:`relevancy.analysis.timeline.bucket_table`'s ``table``: per group, a
    line of means at each bucket's middle and its CI as a band; the rows of all groups per bucket
    as grey bars on the right axis (the bottom third of the chart); ``marks`` (time, column,
    value) as dotted vertical lines; ``alerts`` (start, end) shaded red; ``threshold`` (the
    alert threshold) as a dashed line."""
    fig = go.Figure()
    half = bucket_width / 2
    groups = [g for g in dict.fromkeys(table["group"].tolist())] if len(table) else []
    for i, group in enumerate(groups):
        part = table[table["group"] == group].sort_values("start")
        color = PALETTE[i % len(PALETTE)]
        x = part["start"] + half
        name = str(group) or "mean score"
        band = part[part["high"].notna()]
        if len(band):
            fig.add_trace(
                go.Scatter(
                    x=pd.concat([band["start"] + half, (band["start"] + half)[::-1]]),
                    y=pd.concat([band["high"], band["low"][::-1]]),
                    fill="toself",
                    mode="lines",
                    fillcolor=_fill(color, 0.16),
                    line=dict(width=0),
                    hoverinfo="skip",
                    name=f"{name}: 95% CI",
                    legendgroup=name,
                    showlegend=False,
                )
            )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=part["mean"],
                mode="lines+markers",
                name=name,
                legendgroup=name,
                line=dict(color=color, width=2),
                marker=dict(size=7),
                customdata=part[["n", "failed", "low", "high"]].to_numpy(),
                hovertemplate=(
                    "%{x|%Y-%m-%d %H:%M} UTC<br>mean %{y:.3f} "
                    "(95% CI %{customdata[2]:.3f}-%{customdata[3]:.3f})<br>"
                    "%{customdata[0]} rows, %{customdata[1]} failed<extra>" + name + "</extra>"
                ),
            )
        )
    counts = (
        table.groupby("start", sort=True)["n"].sum() if len(table) else pd.Series([], dtype=float)
    )
    if len(counts):
        fig.add_trace(
            go.Bar(
                x=counts.index + half,
                y=counts.to_numpy(),
                name=ROWS_TRACE,
                yaxis="y2",
                marker=dict(color="rgba(100,116,139,0.28)"),
                width=bucket_width.total_seconds() * 1000 * 0.8,
                hovertemplate="%{x|%Y-%m-%d %H:%M} UTC<br>%{y} rows<extra></extra>",
            )
        )
    for start, end in alerts:
        fig.add_vrect(x0=start, x1=end, fillcolor=ALERT_COLOR, opacity=0.10, line_width=0)
    if marks is not None:
        for _, mark in marks.head(MAX_MARKS).iterrows():
            fig.add_vline(
                x=mark["time"], line=dict(color=_MARK_COLOR, width=1.2, dash="dot"), opacity=0.8
            )
            fig.add_annotation(
                x=mark["time"],
                y=1.0,
                yref="paper",
                text=f"{mark['column']}: {str(mark['value'])[:24]}",
                showarrow=False,
                textangle=-90,
                xanchor="right",
                yanchor="top",
                font=dict(size=10, color=_MARK_COLOR),
                bgcolor="rgba(255,255,255,0.8)",
            )
    if threshold is not None and math.isfinite(threshold):
        fig.add_hline(
            y=threshold,
            line=dict(color=ALERT_COLOR, width=1.2, dash="dash"),
            annotation_text=f"alert below {threshold:.2f}",
            annotation_position="bottom right",
            annotation_font=dict(color=ALERT_COLOR, size=11),
        )
    lows = pd.to_numeric(table["low"], errors="coerce") if len(table) else pd.Series([0.0])
    means = pd.to_numeric(table["mean"], errors="coerce") if len(table) else pd.Series([0.0])
    bottom = min(0.0, float(pd.concat([lows, means]).min(skipna=True) or 0.0)) - 0.02
    top_rows = float(counts.max()) if len(counts) else 1.0
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=30, b=10),
        hovermode="closest",
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
        yaxis=dict(title="mean score", range=[bottom, 1.02], zeroline=False),
        yaxis2=dict(
            title="rows",
            overlaying="y",
            side="right",
            range=[0, top_rows * 3.2],
            tickmode="array",
            tickvals=_row_ticks(top_rows),
            showgrid=False,
        ),
        xaxis=dict(title="time (UTC)"),
        bargap=0.1,
        plot_bgcolor="#ffffff",
    )
    fig.update_xaxes(showgrid=True, gridcolor="#f1f5f9")
    fig.update_yaxes(gridcolor="#f1f5f9")
    return fig
