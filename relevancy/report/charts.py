"""Plotly figure builders for the dashboard and the HTML report (pure: no Streamlit).

Every builder takes plain data (a DataFrame, a result, arrays) and returns a
``plotly.graph_objects.Figure``. Scores use one red -> yellow -> green scale everywhere; user
text shown in hovers, legends, tick labels and titles is HTML-escaped (plotly renders a subset
of HTML there, links included), and :func:`layout` makes any ``<a>`` tag left in a figure inert.
"""

from __future__ import annotations

import math
import re
import textwrap
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from relevancy.core.inert import inert
from relevancy.core.result import RelevancyResult

__all__ = [
    "SCORE_SCALE",
    "binned_counts",
    "box_stats",
    "groups_of",
    "histogram_counts",
    "PALETTE",
    "score_color",
    "score_histogram",
    "score_box",
    "score_ecdf",
    "question_bars",
    "hover_text",
    "label",
    "defang",
]

#: red (irrelevant) -> amber -> green (relevant), for scores in [0, 1]
SCORE_SCALE: list[list[Any]] = [
    [0.0, "#c0392b"],
    [0.25, "#e67e22"],
    [0.5, "#f1c40f"],
    [0.75, "#7dbb42"],
    [1.0, "#1e8449"],
]
#: categorical colours (variants, runs, models)
PALETTE = ["#4f46e5", "#0ea5e9", "#f59e0b", "#10b981", "#ec4899", "#8b5cf6", "#64748b", "#ef4444"]
_THRESHOLD_COLOR = "#b91c1c"
#: above this many rows a group's box/violin shows outliers only (no per-row dots and hovers)
DOTS_UP_TO = 2000
#: a 2D map with more points than this is drawn with WebGL
WEBGL_ABOVE = 5000
#: an ECDF is drawn with at most this many steps (quantiles of the scores above it)
ECDF_STEPS = 1000
#: above this many scores in a group, its box is drawn from quartiles computed here (no
#: outlier points), and its violin from a sample of VIOLIN_SAMPLE scores (two groups of 50,000
#: scores each were 1.3 MB of the Distributions page, a second of the browser's time)
BOX_SCORES_UP_TO = 10_000
VIOLIN_SAMPLE = 20_000
_FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13, color="#1f2937")


def _hex(rgb: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{int(round(c)):02x}" for c in rgb)


def rgb(hex_color: str) -> tuple[int, int, int]:
    h = hex_color.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def score_color(value: float | None) -> str:
    """The scale's colour for a score (clipped to [0, 1]); grey for NaN/None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "#9ca3af"
    v = min(1.0, max(0.0, float(value)))
    for (p0, c0), (p1, c1) in zip(SCORE_SCALE, SCORE_SCALE[1:]):
        if v <= p1:
            t = 0.0 if p1 == p0 else (v - p0) / (p1 - p0)
            a, b = rgb(c0), rgb(c1)
            return _hex(tuple(x + (y - x) * t for x, y in zip(a, b)))
    return SCORE_SCALE[-1][1]


def hover_text(text: Any, width: int = 70, limit: int = 400) -> str:
    """User text made safe and readable for a plotly hover: escaped, cut and wrapped."""
    s = "" if text is None else str(text)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return "<br>".join(inert(line, html=True) for line in textwrap.wrap(s, width) or [""])


def label(text: Any) -> str:
    """User text (a variant, a run or column name) escaped for a plotly legend, tick, axis
    title or ``<extra>`` part of a hover: shown as typed, never read as markup
    (:func:`relevancy.core.inert.inert`)."""
    return inert("" if text is None else text, html=True)


# an opening or closing <a> tag as plotly's text renderer would read it
_LINK_TAG = re.compile(r"<(?=\s*/?\s*a(?:[\s>/]|$))", re.IGNORECASE)


def _inert(value: Any) -> Any:
    """``value`` with every ``<`` that opens an ``<a>`` tag written as ``&lt;`` (plotly shows
    it as ``<``), looking into dicts, lists, tuples and object arrays."""
    if isinstance(value, str):
        return _LINK_TAG.sub("&lt;", value) if "<" in value else value
    if isinstance(value, dict):
        return {k: _inert(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_inert(v) for v in value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.array([_inert(v) for v in value.ravel()], dtype=object).reshape(value.shape)
    return value


def defang(fig: go.Figure) -> go.Figure:
    """Make every ``<a>`` tag in a figure's text inert (traces and layout), so no text from
    data becomes a live link in a legend, hover, tick or title. Returns ``fig``."""
    for trace in fig.data:
        for key, value in trace.to_plotly_json().items():
            if key == "type" or isinstance(value, (int, float, bool)) or value is None:
                continue
            if isinstance(value, np.ndarray) and value.dtype != object:
                continue
            clean = _inert(value)
            if not _same(clean, value):
                trace[key] = clean
    for key, value in fig.layout.to_plotly_json().items():
        if key == "template":
            continue
        clean = _inert(value)
        if not _same(clean, value):
            fig.layout[key] = clean
    return fig


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        both = isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
        return both and a.shape == b.shape and bool(np.all(a == b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def layout(fig: go.Figure, *, title: str | None = None, height: int = 380) -> go.Figure:
    """The dashboard's look for a figure (font, margins, legend, ``title``); every ``<a>``
    tag in its text is made inert (:func:`defang`)."""
    fig.update_layout(
        template="plotly_white",
        font=_FONT,
        title=dict(text=title, x=0, xanchor="left", font=dict(size=15)) if title else None,
        height=height,
        margin=dict(l=10, r=10, t=48 if title else 16, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1),
        hoverlabel=dict(font_size=12, align="left"),
    )
    return defang(fig)


def groups_of(frame: pd.DataFrame, by: str | None) -> list[tuple[str, pd.DataFrame]]:
    """``frame``'s rows by the value of column ``by`` as text (one pass over the rows), or all
    rows as one group; each group's name as it is in the data."""
    if by and by in frame.columns:
        keys = frame[by].astype(str).fillna("(none)")
        return list(frame.groupby(keys, sort=True))
    return [("all rows", frame)]


def _groups(frame: pd.DataFrame, by: str | None) -> list[tuple[str, pd.DataFrame]]:
    # names escaped once here: plotly reads legend and tick text as markup
    return [(label(k), part) for k, part in groups_of(frame, by)]


def histogram_counts(
    frame: pd.DataFrame, by: str | None, bins: int = 20
) -> tuple[list[str], np.ndarray, list[np.ndarray]]:
    """The score histogram's figures: each group's name (as in the data), the bin edges
    (``k / bins``, from 0 or below it to 1) and each group's rows per bin. A perfect 1.0 is
    in the last bin."""
    groups = groups_of(frame, by)
    first = math.floor(min(0.0, _lowest(frame)) * bins)
    edges = np.arange(first, bins + 1) / bins  # k / bins: 0.6 is an edge, not 0.6000000001
    counts = [np.histogram(_binned(_scores(part)), bins=edges)[0] for _, part in groups]
    return [name for name, _ in groups], edges, counts


def _scores(frame: pd.DataFrame) -> np.ndarray:
    x = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=float)
    return x[np.isfinite(x)]


def _binned(x: np.ndarray) -> np.ndarray:
    """Scores for a histogram: a perfect 1.0 falls in the last bin, not past the axis."""
    return np.minimum(x, 1.0 - 1e-9)


def _threshold_vline(fig: go.Figure, threshold: float | None) -> None:
    if threshold is None:
        return
    fig.add_vline(
        x=threshold,
        line=dict(color=_THRESHOLD_COLOR, width=2, dash="dash"),
        annotation_text=f"threshold {threshold:.2f}",
        annotation_position="top",
        annotation_font=dict(color=_THRESHOLD_COLOR, size=12),
    )


def score_histogram(
    frame: pd.DataFrame,
    *,
    threshold: float | None = 0.5,
    by: str | None = None,
    bins: int = 20,
    title: str | None = None,
) -> go.Figure:
    """Histogram of scores (one overlaid trace per group), with the threshold as a line."""
    fig = go.Figure()
    raw, edges, counts = histogram_counts(frame, by, bins)
    groups = [label(name) for name in raw]
    start = float(edges[0])
    for i, (name, count) in enumerate(zip(groups, counts)):
        x, y = binned_counts(edges, count)
        fig.add_trace(
            go.Histogram(
                x=x,
                y=y,
                histfunc="sum",
                name=name,
                xbins=dict(start=start, end=1.0, size=1.0 / bins),
                marker=dict(color=PALETTE[i % len(PALETTE)], line=dict(color="white", width=1)),
                opacity=0.75 if len(groups) > 1 else 0.9,
                hovertemplate="score %{x}<br>%{y} rows<extra>" + name + "</extra>",
            )
        )
    fig.update_layout(barmode="overlay", bargap=0.02, showlegend=len(groups) > 1)
    fig.update_xaxes(title_text="Answer Relevancy", range=[min(0, _lowest(frame)) - 0.02, 1.02])
    # counts are whole rows: with few rows, a tick per row (plotly would draw 0.5 steps)
    tallest = max((c.max(initial=0) for c in counts), default=0)
    fig.update_yaxes(
        title_text="rows", rangemode="tozero", **({"dtick": 1} if tallest <= 8 else {})
    )
    _threshold_vline(fig, threshold)
    return layout(fig, title=title)


def binned_counts(edges: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A histogram's non-empty bins as (bin centre, rows), for a ``go.Histogram`` with
    ``histfunc="sum"``: the figure carries one number per bin, not one per row (a million
    rows would be megabytes in the page), and plotly draws and labels the same bins."""
    centres = (edges[:-1] + edges[1:]) / 2
    keep = counts > 0
    return centres[keep], counts[keep]


def box_stats(y: np.ndarray) -> dict[str, Any]:
    """A box's figures computed here (quartiles, fences at 1.5 IQR within the data, mean), for
    a group too large to send every score."""
    q1, median, q3 = np.quantile(y, [0.25, 0.5, 0.75])
    iqr = q3 - q1
    inside = y[(y >= q1 - 1.5 * iqr) & (y <= q3 + 1.5 * iqr)]
    return dict(
        q1=[q1],
        median=[median],
        q3=[q3],
        lowerfence=[inside.min()],
        upperfence=[inside.max()],
        mean=[y.mean()],
    )


def _lowest(frame: pd.DataFrame) -> float:
    x = _scores(frame)
    return float(x.min()) if x.size else 0.0


def score_box(
    frame: pd.DataFrame,
    *,
    threshold: float | None = 0.5,
    by: str | None = None,
    kind: str = "box",
    title: str | None = None,
) -> go.Figure:
    """Box or violin plot of scores per group (``kind`` = ``"box"`` or ``"violin"``)."""
    fig = go.Figure()
    groups = _groups(frame, by)
    for i, (name, part) in enumerate(groups):
        color = PALETTE[i % len(PALETTE)]
        finite = np.isfinite(pd.to_numeric(part["score"], errors="coerce").to_numpy(dtype=float))
        dots = len(part) <= DOTS_UP_TO
        questions = part["user_input"] if "user_input" in part.columns else [""] * len(part)
        text = [hover_text(u, 60, 160) for u, ok in zip(questions, finite) if ok] if dots else None
        hover = ("%{y:.3f}<br>%{text}" if dots else "%{y:.3f}") + f"<extra>{name}</extra>"
        y = _scores(part)
        if kind == "violin":
            if y.size > VIOLIN_SAMPLE:  # its shape from a stated sample, not every score
                y = np.random.default_rng(0).choice(y, VIOLIN_SAMPLE, replace=False)
            fig.add_trace(
                go.Violin(
                    y=y,
                    name=name,
                    box_visible=True,
                    meanline_visible=True,
                    points="all" if dots else "outliers",
                    pointpos=0,
                    jitter=0.3,
                    line_color=color,
                    fillcolor=color,
                    opacity=0.55,
                    marker=dict(size=5),
                    text=text,
                    hovertemplate=hover,
                )
            )
        else:
            # a large group's box from figures computed here (no points): every score would
            # be megabytes in the page
            whole = y.size <= BOX_SCORES_UP_TO
            shape = dict(y=y) if whole else dict(x=[name], **box_stats(y))
            fig.add_trace(
                go.Box(
                    **shape,
                    name=name,
                    boxpoints="all" if dots else "outliers" if whole else False,
                    jitter=0.35,
                    pointpos=0,
                    boxmean=True,
                    marker=dict(color=color, size=5),
                    line=dict(color=color),
                    text=text,
                    hovertemplate=hover,
                )
            )
    if threshold is not None:
        fig.add_hline(
            y=threshold,
            line=dict(color=_THRESHOLD_COLOR, width=2, dash="dash"),
            annotation_text=f"threshold {threshold:.2f}",
            annotation_position="top left",
            annotation_font=dict(color=_THRESHOLD_COLOR, size=12),
        )
    fig.update_yaxes(title_text="Answer Relevancy", range=[min(0, _lowest(frame)) - 0.05, 1.05])
    fig.update_layout(showlegend=False)
    return layout(fig, title=title)


def score_ecdf(
    frame: pd.DataFrame,
    *,
    threshold: float | None = 0.5,
    by: str | None = None,
    title: str | None = None,
) -> go.Figure:
    """Empirical CDF per group: at x, the share of rows scoring at most x."""
    fig = go.Figure()
    for i, (name, part) in enumerate(_groups(frame, by)):
        x = np.sort(_scores(part))
        if not x.size:
            continue
        y = np.arange(1, x.size + 1) / x.size
        if x.size > ECDF_STEPS:  # the same curve, drawn from evenly spaced quantiles
            keep = np.unique(np.linspace(0, x.size - 1, ECDF_STEPS).round().astype(int))
            x, y = x[keep], y[keep]
        x, y = np.r_[x[0], x], np.r_[0.0, y]  # the step starts from 0%
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines",
                name=name,
                line=dict(shape="hv", width=2.5, color=PALETTE[i % len(PALETTE)]),
                hovertemplate="%{y:.0%} of rows score ≤ %{x:.3f}<extra>" + name + "</extra>",
            )
        )
    _threshold_vline(fig, threshold)
    fig.update_xaxes(title_text="Answer Relevancy", range=[min(0, _lowest(frame)) - 0.02, 1.02])
    fig.update_yaxes(title_text="share of rows ≤ score", tickformat=".0%", range=[0, 1.02])
    return layout(fig, title=title)


def question_bars(
    result: RelevancyResult, *, height: int | None = None, label_chars: int = 80
) -> go.Figure:
    """One horizontal bar per generated question: its cosine similarity to the user's question.

    Each bar is labelled ``Q1``, ``Q2``... with the question's text written above it, cut at
    ``label_chars`` (the hover shows it whole); unusable generations show their error and no
    bar. The dotted line is the mean of the similarities (the score before any noncommittal
    zeroing).
    """
    n = len(result.questions)
    ys = list(range(n))
    values, colors, hovers, texts = [], [], [], []
    for q in result.questions:
        text = q.question if q.question.strip() else f"(unusable: {q.error or 'empty'})"
        sim = q.similarity
        values.append(0.0 if sim is None else sim)
        colors.append(score_color(sim))
        flag = "" if q.noncommittal is None else f"<br>LLM noncommittal flag: {q.noncommittal}"
        hovers.append(
            f"{hover_text(text)}<br>similarity: " + ("n/a" if sim is None else f"{sim:.3f}") + flag
        )
        texts.append(text)
    fig = go.Figure(
        go.Bar(
            x=values,
            y=ys,
            orientation="h",
            width=0.42,
            marker=dict(color=colors),
            text=[
                "n/a" if q.similarity is None else f"{q.similarity:.3f}" for q in result.questions
            ],
            textposition="outside",
            cliponaxis=False,
            hovertext=hovers,
            hoverinfo="text",
        )
    )
    sims = result.similarities
    low = min([0.0, *sims]) - (0.12 if any(s < 0 for s in sims) else 0.0)
    for y, text in zip(ys, texts):
        short = text if len(text) <= label_chars else text[: label_chars - 1] + "…"
        fig.add_annotation(
            x=low - 0.02,
            y=y - 0.26,
            xref="x",
            yref="y",
            text=inert(short, html=True),
            showarrow=False,
            xanchor="left",
            yanchor="bottom",
            font=dict(size=12, color="#374151"),
        )
    if sims:
        mean = sum(sims) / len(sims)
        fig.add_vline(
            x=mean,
            line=dict(color="#111827", width=1.5, dash="dot"),
            annotation_text=f"mean {mean:.3f}",
            annotation_position="top",
        )
    fig.update_xaxes(title_text="similarity to the question", range=[low - 0.02, 1.12])
    fig.update_yaxes(
        tickvals=ys,
        ticktext=[f"Q{i + 1}" for i in ys],
        range=[n - 0.5, -0.75],
        showgrid=False,
    )
    fig.update_layout(showlegend=False)
    fig = layout(fig, height=height or 95 + 62 * max(1, n))
    fig.update_layout(margin=dict(l=10, r=16, t=28, b=10))
    return fig
