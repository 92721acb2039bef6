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

from relevancy.report.charts import PALETTE, label, rgb

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


def _runs(starts: pd.Series, width: pd.Timedelta) -> list[list[int]]:
    """The positions of ``starts`` (sorted bucket starts) in runs of adjacent buckets: a bucket
    with no rows between two ends a run."""
    out: list[list[int]] = []
    previous = None
    for i, start in enumerate(starts):
        if previous is None or start - previous != width:
            out.append([])
        out[-1].append(i)
        previous = start
    return out


def _with_gaps(part: pd.DataFrame, width: pd.Timedelta) -> pd.DataFrame:
    """``part`` (one group's buckets, by time) with an empty row between buckets that are not
    adjacent, so the line breaks where there is no data rather than crossing the gap."""
    pieces = []
    for run in _runs(part["start"], width):
        if pieces:
            gap = part.iloc[run[:1]].copy()
            gap[["mean", "low", "high", "n", "failed"]] = math.nan
            pieces.append(gap)
        pieces.append(part.iloc[run])
    return pd.concat(pieces, ignore_index=True) if pieces else part


def _band(part: pd.DataFrame, width: pd.Timedelta) -> tuple[list, list, pd.DataFrame]:
    """The CI band's outline (x, y: one closed shape per run of two or more adjacent buckets
    with a CI, shapes parted by None) and the buckets with a CI but no neighbour in the band,
    drawn as error bars instead (a band one bucket wide would not show)."""
    with_ci = part[part["high"].notna() & part["low"].notna()].reset_index(drop=True)
    xs: list = []
    ys: list = []
    alone = []
    for run in _runs(with_ci["start"], width):
        if len(run) == 1:
            alone.append(run[0])
            continue
        seg = with_ci.iloc[run]
        x = (seg["start"] + width / 2).tolist()
        if xs:
            xs.append(None)
            ys.append(None)
        xs += x + x[::-1]
        ys += seg["high"].tolist() + seg["low"].tolist()[::-1]
    return xs, ys, with_ci.iloc[alone]


def _mark_labels(marks: pd.DataFrame, near: pd.Timedelta) -> list[tuple[pd.Timestamp, str]]:
    """One label per cluster of change marks (in time order) closer than ``near`` to the first
    of the cluster: marks at the same time share a label rather than one hiding another."""
    out: list[tuple[pd.Timestamp, list[str]]] = []
    for _, mark in marks.sort_values("time", kind="stable").iterrows():
        text = f"{label(mark['column'])}: {label(str(mark['value'])[:24])}"  # shown as typed
        if out and mark["time"] - out[-1][0] <= near:
            if text not in out[-1][1]:
                out[-1][1].append(text)
        else:
            out.append((mark["time"], [text]))
    return [(when, " · ".join(texts)) for when, texts in out]


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
    line of means at each bucket's middle (broken where buckets have no rows) and its CI as a
    band (as an error bar on a bucket with no neighbour); the rows of all groups per bucket as
    grey bars on the right axis (the bottom third of the chart, whole numbers); ``marks``
    (time, column, value) as dotted vertical lines, those at the same moment under one label;
    ``alerts`` (start, end) shaded red; ``threshold`` (the alert threshold) as a dashed line."""
    fig = go.Figure()
    half = bucket_width / 2
    groups = [g for g in dict.fromkeys(table["group"].tolist())] if len(table) else []
    for i, group in enumerate(groups):
        part = table[table["group"] == group].sort_values("start").reset_index(drop=True)
        color = PALETTE[i % len(PALETTE)]
        name = label(group) or "mean score"  # a value of the split column, shown as typed
        xs, ys, alone = _band(part, bucket_width)
        if xs:
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
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
        if len(alone):
            fig.add_trace(
                go.Scatter(
                    x=alone["start"] + half,
                    y=alone["mean"],
                    mode="markers",
                    marker=dict(size=1, color=color, opacity=0),
                    error_y=dict(
                        type="data",
                        symmetric=False,
                        array=(alone["high"] - alone["mean"]).to_numpy(),
                        arrayminus=(alone["mean"] - alone["low"]).to_numpy(),
                        color=_fill(color, 0.6),
                        thickness=2,
                        width=6,
                    ),
                    hoverinfo="skip",
                    name=f"{name}: 95% CI (a bucket alone)",
                    legendgroup=name,
                    showlegend=False,
                )
            )
        line = _with_gaps(part, bucket_width)
        fig.add_trace(
            go.Scatter(
                x=line["start"] + half,
                y=line["mean"],
                mode="lines+markers",
                connectgaps=False,
                name=name,
                legendgroup=name,
                line=dict(color=color, width=2),
                marker=dict(size=7),
                customdata=line[["n", "failed", "low", "high"]].to_numpy(),
                hovertemplate=(
                    "%{x|%Y-%m-%d %H:%M:%S} UTC<br>mean %{y:.3f} "
                    "(95% CI %{customdata[2]:.3f}-%{customdata[3]:.3f})<br>"
                    "%{customdata[0]:,} rows, %{customdata[1]:,} failed<extra>" + name + "</extra>"
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
                hovertemplate="%{x|%Y-%m-%d %H:%M:%S} UTC<br>%{y:,} rows<extra></extra>",
            )
        )
    for start, end in alerts:
        fig.add_vrect(x0=start, x1=end, fillcolor=ALERT_COLOR, opacity=0.10, line_width=0)
    if marks is not None and len(marks):
        shown = marks.head(MAX_MARKS)
        span = (table["end"].max() - table["start"].min()) if len(table) else bucket_width
        for when in shown["time"]:
            fig.add_vline(x=when, line=dict(color=_MARK_COLOR, width=1.2, dash="dot"), opacity=0.8)
        for when, text in _mark_labels(shown, span / 80):
            fig.add_annotation(
                x=when,
                y=1.0,
                yref="paper",
                text=text,
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
            tickformat=",d",
            showgrid=False,
        ),
        xaxis=dict(title="time (UTC)"),
        bargap=0.1,
        plot_bgcolor="#ffffff",
    )
    fig.update_xaxes(showgrid=True, gridcolor="#f1f5f9")
    fig.update_yaxes(gridcolor="#f1f5f9")
    return fig
