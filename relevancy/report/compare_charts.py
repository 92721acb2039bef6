"""Compare's figures: A against B per pair (coloured by win/tie/loss), and the differences."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from relevancy.report.charts import binned_counts, hover_text, layout
from relevancy.report.charts import label as plain

__all__ = [
    "SCATTER_PAIRS",
    "ab_scatter",
    "diff_histogram",
]

#: the differences' bins (one number per bin goes to the page, not one per pair)
_DIFF_EDGES = np.linspace(-2.0, 2.0, 81)
#: the A-B scatter draws at most this many pairs (a stated sample, every outcome in proportion;
#: 5,000 with their hovers were 600 KB and a second of the browser's time)
SCATTER_PAIRS = 2000
_OUTCOME_COLORS = {"win": "#1e8449", "tie": "#94a3b8", "loss": "#c0392b", "n/a": "#d1d5db"}


def ab_scatter(
    paired: pd.DataFrame,
    *,
    label_a: str = "A",
    label_b: str = "B",
    tie_margin: float = 0.02,
    title: str | None = None,
) -> go.Figure:
    """Score of B against score of A per pair; above the diagonal, B is more relevant."""
    fig = go.Figure()
    both = paired[["score_a", "score_b"]].to_numpy(dtype=float)
    finite = both[np.isfinite(both)]
    lo = min(0.0, float(finite.min()) if finite.size else 0.0) - 0.03
    if len(paired) > SCATTER_PAIRS:  # a stated sample; the page's figures count every pair
        paired = paired.sample(SCATTER_PAIRS, random_state=0)
        sampled = f"{SCATTER_PAIRS:,} pairs drawn at random"
        title = f"{title} · {sampled}" if title else sampled
    fig.add_trace(
        go.Scatter(
            x=[lo, 1.03],
            y=[lo, 1.03],
            mode="lines",
            hoverinfo="skip",
            showlegend=False,
            line=dict(color="#475569", width=1),
        )
    )
    for sign in (1, -1):
        fig.add_trace(
            go.Scatter(
                x=[lo, 1.03],
                y=[lo + sign * tie_margin, 1.03 + sign * tie_margin],
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                line=dict(color="#94a3b8", width=1, dash="dot"),
            )
        )
    label_a, label_b = plain(label_a), plain(label_b)  # drawn as markup by plotly
    names = {"win": f"{label_b} better", "tie": "tie", "loss": f"{label_a} better", "n/a": "NaN"}
    # SVG: at most SCATTER_PAIRS markers, drawn 0.3 s sooner in headless Chromium than with
    # WebGL (2,000 pairs, measured); the hover's numbers from the point, not its text
    hover = (
        f"%{{text}}<br>{label_a}: %{{x:.3f}} · {label_b}: %{{y:.3f}} · "
        "diff %{customdata:+.3f}<extra></extra>"
    )
    for key in ("win", "tie", "loss"):
        part = paired[paired["outcome"] == key]
        if part.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=part["score_a"].to_numpy(dtype=np.float32),  # pixels: float32 is plenty
                y=part["score_b"].to_numpy(dtype=np.float32),
                mode="markers",
                name=names[key],
                marker=dict(size=10, color=_OUTCOME_COLORS[key], line=dict(width=1, color="white")),
                text=[hover_text(u, 60, 120) for u in part["user_input"]],
                customdata=part["diff"].to_numpy(dtype=np.float32),
                hovertemplate=hover,
            )
        )
    fig.update_xaxes(title_text=f"score · {label_a}", range=[lo, 1.03], constrain="domain")
    fig.update_yaxes(title_text=f"score · {label_b}", range=[lo, 1.03], scaleanchor="x")
    return layout(fig, title=title, height=460)


def diff_histogram(
    paired: pd.DataFrame,
    *,
    tie_margin: float = 0.02,
    label: str = "B − A",
    title: str | None = None,
) -> go.Figure:
    """Histogram of paired differences, coloured by outcome; zero and the tie band marked."""
    fig = go.Figure()
    for key, name in (("loss", "regression"), ("tie", "tie"), ("win", "improvement")):
        part = paired.loc[paired["outcome"] == key, "diff"].to_numpy(dtype=float)
        x, y = binned_counts(_DIFF_EDGES, np.histogram(part[np.isfinite(part)], _DIFF_EDGES)[0])
        fig.add_trace(
            go.Histogram(
                x=x,
                y=y,
                histfunc="sum",
                name=name,
                marker=dict(color=_OUTCOME_COLORS[key]),
                xbins=dict(start=-2.0, end=2.0, size=0.05),
                hovertemplate="%{y} pairs<extra>" + name + "</extra>",
            )
        )
    fig.add_vrect(x0=-tie_margin, x1=tie_margin, fillcolor="#94a3b8", opacity=0.15, line_width=0)
    fig.add_vline(x=0, line=dict(color="#111827", width=1))
    fig.update_layout(barmode="stack", bargap=0.05)
    fig.update_xaxes(title_text=f"difference ({plain(label)})")
    fig.update_yaxes(title_text="pairs")
    return layout(fig, title=title, height=300)
