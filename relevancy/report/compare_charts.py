"""The A-B scatter of the HTML report (plotly), a dot per pair coloured by win/tie/loss, and
what the dashboard's Vega-Lite charts share with it (``relevancy/dashboard/views/compare_vega.py``):
the sample of pairs drawn, the outcome colours, the bins of the differences."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from relevancy.report.charts import hover_text, layout
from relevancy.report.charts import label as plain

__all__ = [
    "SCATTER_PAIRS",
    "DIFF_EDGES",
    "OUTCOME_COLORS",
    "ab_scatter",
    "scatter_sample",
]

#: the differences' bins (one number per bin goes to the page, not one per pair)
DIFF_EDGES = np.linspace(-2.0, 2.0, 81)
#: the A-B scatter draws at most this many pairs (a stated sample, every outcome in proportion;
#: 5,000 with their hovers were 600 KB and a second of the browser's time)
SCATTER_PAIRS = 2000
OUTCOME_COLORS = {"win": "#1e8449", "tie": "#94a3b8", "loss": "#c0392b", "n/a": "#d1d5db"}


def scatter_sample(paired: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The pairs a scatter draws: all of them up to :data:`SCATTER_PAIRS`, else that many
    drawn at random (every outcome in proportion), with the words that say so."""
    if len(paired) <= SCATTER_PAIRS:
        return paired, None
    return paired.sample(SCATTER_PAIRS, random_state=0), f"{SCATTER_PAIRS:,} pairs drawn at random"


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
    paired, sampled = scatter_sample(paired)
    if sampled:  # a stated sample; the page's figures count every pair
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
                marker=dict(size=10, color=OUTCOME_COLORS[key], line=dict(width=1, color="white")),
                text=[hover_text(u, 60, 120) for u in part["user_input"]],
                customdata=part["diff"].to_numpy(dtype=np.float32),
                hovertemplate=hover,
            )
        )
    fig.update_xaxes(title_text=f"score · {label_a}", range=[lo, 1.03], constrain="domain")
    fig.update_yaxes(title_text=f"score · {label_b}", range=[lo, 1.03], scaleanchor="x")
    return layout(fig, title=title, height=460)
