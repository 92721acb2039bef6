"""Plotly figure builders for the dashboard and the HTML report (pure: no Streamlit).

Every builder takes plain data (a DataFrame, a result, arrays) and returns a
``plotly.graph_objects.Figure``. Scores use one red -> yellow -> green scale everywhere; user
text shown in hovers is HTML-escaped (plotly renders a subset of HTML in hover labels).
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from relevancy._result import RelevancyResult

__all__ = [
    "SCORE_SCALE",
    "PALETTE",
    "score_color",
    "score_histogram",
    "score_box",
    "score_ecdf",
    "question_bars",
    "projection_scatter",
    "selected_rows",
    "row_questions",
    "ab_scatter",
    "diff_histogram",
    "sentence_shading_html",
    "sentence_table_html",
    "hover_text",
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
_FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13, color="#1f2937")


def _hex(rgb: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{int(round(c)):02x}" for c in rgb)


def _rgb(hex_color: str) -> tuple[int, int, int]:
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
            a, b = _rgb(c0), _rgb(c1)
            return _hex(tuple(x + (y - x) * t for x, y in zip(a, b)))
    return SCORE_SCALE[-1][1]


def hover_text(text: Any, width: int = 70, limit: int = 400) -> str:
    """User text made safe and readable for a plotly hover: escaped, cut and wrapped."""
    s = "" if text is None else str(text)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return "<br>".join(html.escape(line) for line in textwrap.wrap(s, width) or [""])


def _layout(fig: go.Figure, *, title: str | None = None, height: int = 380) -> go.Figure:
    fig.update_layout(
        template="plotly_white",
        font=_FONT,
        title=dict(text=title, x=0, xanchor="left", font=dict(size=15)) if title else None,
        height=height,
        margin=dict(l=10, r=10, t=48 if title else 16, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1),
        hoverlabel=dict(font_size=12, align="left"),
    )
    return fig


def _groups(frame: pd.DataFrame, by: str | None) -> list[tuple[str, pd.DataFrame]]:
    if by and by in frame.columns:
        keys = frame[by].astype(str).fillna("(none)")
        return [(str(k), frame[keys == k]) for k in sorted(keys.unique())]
    return [("all rows", frame)]


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
    groups = _groups(frame, by)
    start = math.floor(min(0.0, _lowest(frame)) * bins) / bins
    for i, (name, part) in enumerate(groups):
        fig.add_trace(
            go.Histogram(
                x=_binned(_scores(part)),
                name=name,
                xbins=dict(start=start, end=1.0, size=1.0 / bins),
                marker=dict(color=PALETTE[i % len(PALETTE)], line=dict(color="white", width=1)),
                opacity=0.75 if len(groups) > 1 else 0.9,
                hovertemplate="score %{x}<br>%{y} rows<extra>" + html.escape(name) + "</extra>",
            )
        )
    fig.update_layout(barmode="overlay", bargap=0.02, showlegend=len(groups) > 1)
    fig.update_xaxes(title_text="Answer Relevancy", range=[min(0, _lowest(frame)) - 0.02, 1.02])
    # counts are whole rows: with few rows, a tick per row (plotly would draw 0.5 steps)
    tallest = max(
        (np.histogram(_binned(_scores(part)), bins=np.arange(start, 1.0 + 1e-9, 1.0 / bins))[0]
         .max(initial=0) for _, part in groups),
        default=0,
    )  # fmt: skip
    fig.update_yaxes(
        title_text="rows", rangemode="tozero", **({"dtick": 1} if tallest <= 8 else {})
    )
    _threshold_vline(fig, threshold)
    return _layout(fig, title=title)


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
        hover = (
            "%{y:.3f}<br>%{text}" if dots else "%{y:.3f}"
        ) + f"<extra>{html.escape(name)}</extra>"
        if kind == "violin":
            fig.add_trace(
                go.Violin(
                    y=_scores(part),
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
            fig.add_trace(
                go.Box(
                    y=_scores(part),
                    name=name,
                    boxpoints="all" if dots else "outliers",
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
    return _layout(fig, title=title)


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
                hovertemplate="%{y:.0%} of rows score ≤ %{x:.3f}<extra>"
                + html.escape(name)
                + "</extra>",
            )
        )
    _threshold_vline(fig, threshold)
    fig.update_xaxes(title_text="Answer Relevancy", range=[min(0, _lowest(frame)) - 0.02, 1.02])
    fig.update_yaxes(title_text="share of rows ≤ score", tickformat=".0%", range=[0, 1.02])
    return _layout(fig, title=title)


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
            text=html.escape(short),
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
    fig = _layout(fig, height=height or 95 + 62 * max(1, n))
    fig.update_layout(margin=dict(l=10, r=16, t=28, b=10))
    return fig


def _custom(points: pd.DataFrame, idx: Sequence[int]) -> list[list[int]]:
    """``[row, point index]`` per point, as plain lists (selection events echo them back)."""
    return [[int(points.at[i, "row"]), int(i)] for i in idx]


def projection_scatter(
    points: pd.DataFrame,
    coords: np.ndarray,
    *,
    color_by: str = "score",
    dims: int = 2,
    title: str | None = None,
    height: int = 620,
) -> go.Figure:
    """Original questions (diamonds) and generated questions (dots) in 2D or 3D.

    A thin line joins each generated question to its original. ``color_by`` is ``"score"``
    (continuous, red -> green), ``"variant"`` or ``"noncommittal"``. ``customdata`` holds
    ``[row, point index]`` so a selection can be mapped back to a row.
    """
    coords = np.asarray(coords, dtype=float)
    three = dims == 3 and coords.shape[1] >= 3
    # WebGL for many points in 2D: SVG slows down past a few thousand markers
    scatter = go.Scatter3d if three else go.Scattergl if len(points) > WEBGL_ABOVE else go.Scatter

    def xyz(idx: Sequence[int]) -> dict[str, Any]:
        out = {"x": coords[idx, 0], "y": coords[idx, 1]}
        if three:
            out["z"] = coords[idx, 2]
        return out

    fig = go.Figure()
    gen = points.index[points["kind"] == "generated"].to_numpy()
    orig = points.index[points["kind"] == "question"].to_numpy()
    # lines from each generated question to its original
    lx: list[float | None] = []
    ly: list[float | None] = []
    lz: list[float | None] = []
    for i in gen:
        p = int(points.at[i, "parent"])
        if p < 0:
            continue
        lx += [coords[p, 0], coords[i, 0], None]
        ly += [coords[p, 1], coords[i, 1], None]
        if three:
            lz += [coords[p, 2], coords[i, 2], None]
    line_kw: dict[str, Any] = {"x": lx, "y": ly}
    if three:
        line_kw["z"] = lz
    fig.add_trace(
        scatter(
            **line_kw,
            mode="lines",
            name="links",
            hoverinfo="skip",
            showlegend=False,
            # WebGL (3D) draws no see-through lines: solid and thicker there
            line=dict(color="#94a3b8", width=2)
            if three
            else dict(color="rgba(100,116,139,0.35)", width=1),  # fmt: skip
        )
    )

    def hovers(idx: Sequence[int]) -> list[str]:
        out = []
        for i in idx:
            r = points.loc[i]
            head = "Original question" if r["kind"] == "question" else "Generated question"
            extra = (
                ""
                if r["kind"] == "question"
                else f"<br>similarity {r['similarity']:.3f} · row score {r['score']:.3f}"
                f"<br>variant {html.escape(str(r['variant']))} · noncommittal {r['noncommittal']}"
            )
            out.append(f"<b>{head}</b> (row {int(r['row']) + 1})<br>{hover_text(r['text'])}{extra}")
        return out

    size = 4 if three else 8
    if len(gen):
        if color_by == "score":
            fig.add_trace(
                scatter(
                    **xyz(gen),
                    mode="markers",
                    name="generated questions",
                    marker=dict(
                        size=size,
                        color=points.loc[gen, "score"].astype(float),
                        colorscale=SCORE_SCALE,
                        cmin=0,
                        cmax=1,
                        opacity=0.9,
                        colorbar=dict(title="score", thickness=12, len=0.6),
                        line=dict(width=0.5, color="white") if not three else None,
                    ),
                    text=hovers(gen),
                    hoverinfo="text",
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
                name = f"noncommittal: {value}" if column == "noncommittal" else value
                fig.add_trace(
                    scatter(
                        **xyz(idx),
                        mode="markers",
                        name=name,
                        marker=dict(size=size, color=color, opacity=0.9),
                        text=hovers(idx),
                        hoverinfo="text",
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
                    size=size + 4,
                    color="#111827",
                    symbol="diamond",
                    line=dict(width=1, color="white") if not three else None,
                ),
                text=hovers(orig),
                hoverinfo="text",
                customdata=_custom(points, orig),
            )
        )
    if three:
        fig.update_layout(scene=dict(xaxis_title="", yaxis_title="", zaxis_title=""))
    else:
        fig.update_xaxes(showticklabels=False, title_text="", zeroline=False)
        fig.update_yaxes(showticklabels=False, title_text="", zeroline=False)
    fig.update_layout(dragmode="pan" if three else "lasso", clickmode="event+select")
    fig = _layout(fig, title=title, height=height)
    # legend on the left: the chart's toolbar sits top right
    fig.update_layout(legend=dict(x=0, xanchor="left", y=1.02, yanchor="bottom"))
    return fig


def row_questions(points: pd.DataFrame) -> dict[int, str]:
    """Each row's original question, from a point table (a row's generated points name their
    original's point as ``parent``)."""
    out: dict[int, str] = {}
    for row, kind, text, parent in zip(points["row"], points["kind"], points["text"],
                                       points["parent"]):  # fmt: skip
        out.setdefault(int(row), text if kind == "question" else points["text"].iloc[parent])
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
    lo = float(np.nanmin([0.0, *paired["score_a"].tolist(), *paired["score_b"].tolist()]))
    lo = min(0.0, lo) - 0.03
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
    names = {"win": f"{label_b} better", "tie": "tie", "loss": f"{label_a} better", "n/a": "NaN"}
    for key in ("win", "tie", "loss"):
        part = paired[paired["outcome"] == key]
        if part.empty:
            continue
        text = [
            f"{hover_text(u, 60, 200)}<br>{html.escape(label_a)}: {a:.3f} · "
            f"{html.escape(label_b)}: {b:.3f} · diff {d:+.3f}"
            for u, a, b, d in zip(
                part["user_input"], part["score_a"], part["score_b"], part["diff"]
            )
        ]
        fig.add_trace(
            go.Scatter(
                x=part["score_a"],
                y=part["score_b"],
                mode="markers",
                name=names[key],
                marker=dict(size=10, color=_OUTCOME_COLORS[key], line=dict(width=1, color="white")),
                text=text,
                hoverinfo="text",
                customdata=part.index.to_numpy(),
            )
        )
    fig.update_xaxes(title_text=f"score · {label_a}", range=[lo, 1.03], constrain="domain")
    fig.update_yaxes(title_text=f"score · {label_b}", range=[lo, 1.03], scaleanchor="x")
    return _layout(fig, title=title, height=460)


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
        part = paired.loc[paired["outcome"] == key, "diff"].astype(float)
        fig.add_trace(
            go.Histogram(
                x=part,
                name=name,
                marker=dict(color=_OUTCOME_COLORS[key]),
                xbins=dict(start=-2.0, end=2.0, size=0.05),
                hovertemplate="%{y} pairs<extra>" + name + "</extra>",
            )
        )
    fig.add_vrect(x0=-tie_margin, x1=tie_margin, fillcolor="#94a3b8", opacity=0.15, line_width=0)
    fig.add_vline(x=0, line=dict(color="#111827", width=1))
    fig.update_layout(barmode="stack", bargap=0.05)
    fig.update_xaxes(title_text=f"difference ({label})")
    fig.update_yaxes(title_text="pairs")
    return _layout(fig, title=title, height=300)


def sentence_shading_html(sentences: Sequence[Any]) -> str:
    """The response as escaped HTML, each sentence shaded by its similarity to the question.

    ``sentences`` are :class:`relevancy.explain.SentenceScore`-like (``text``, ``similarity``).
    Strong colour = close to the question; pale = padding or off-topic detail.
    """
    spans = []
    for s in sentences:
        sim = float(s.similarity)
        alpha = 0.10 + 0.55 * min(1.0, max(0.0, sim))
        r, g, b = _rgb(score_color(sim))
        spans.append(
            f'<span title="similarity {sim:.2f}" style="background: rgba({r},{g},{b},{alpha:.2f});'
            " border-radius: 4px; padding: 2px 3px; line-height: 1.9;"
            ' box-decoration-break: clone; -webkit-box-decoration-break: clone;">'
            f"{html.escape(s.text)}"
            f' <sup style="color:#374151; font-size: 0.72em;">{sim:.2f}</sup></span>'
        )
    return '<div class="rel-shaded">' + " ".join(spans) + "</div>"


def _shade(sim: float) -> str:
    """The background the shaded answer gives a sentence of this similarity."""
    if math.isnan(sim):
        return "transparent"
    r, g, b = _rgb(score_color(sim))
    return f"rgba({r},{g},{b},{0.10 + 0.55 * min(1.0, max(0.0, sim)):.2f})"


def sentence_table_html(
    table: pd.DataFrame, *, help: dict[str, str] | None = None, neutral: bool = False
) -> str:
    """A sentence table as escaped HTML: each sentence shaded, flagged, beside its numbers.

    ``table`` has ``#``, ``similarity``, ``note`` and ``sentence`` columns and any number of
    other columns (shown after ``similarity``; ``without it`` as a signed number). A note with
    "off topic" marks the row red, any other note amber. ``help`` gives column tooltips;
    ``neutral`` draws the sentences unshaded (a noncommittal answer: closeness is not
    relevance there).
    """
    help = help or {}
    others = [c for c in table.columns if c not in ("#", "sentence", "similarity", "note")]
    numeric = {c: pd.api.types.is_numeric_dtype(table[c]) for c in others}

    def th(name: str, cls: str = "") -> str:
        tip = f' title="{html.escape(help[name])}"' if name in help else ""
        return f'<th class="{cls}"{tip}>{html.escape(name)}</th>'

    head = th("#", "num") + th("sentence") + th("similarity", "num")
    head += "".join(th(c, "num" if numeric[c] else "") for c in others)
    rows = []
    for _, row in table.iterrows():
        note = str(row["note"] or "")
        kind = "off" if "off topic" in note else "lowers" if note else ""
        flag = f' <span class="rel-flag {kind}">{html.escape(note)}</span>' if note else ""
        sim = float(row["similarity"])
        cells = [
            f'<td class="num">{int(row["#"])}</td>',
            f'<td><span class="rel-sent-text" style="background: '
            f'{"#f3f4f6" if neutral else _shade(sim)}">'
            f"{html.escape(str(row['sentence']))}</span>{flag}</td>",
            f'<td class="num"><b>{"–" if math.isnan(sim) else f"{sim:.2f}"}</b></td>',
        ]
        for c in others:
            v = row[c]
            if not numeric[c]:
                cells.append(f"<td>{html.escape(str(v))}</td>")
            elif pd.isna(v):
                cells.append('<td class="num">–</td>')
            else:
                cells.append(
                    f'<td class="num">{v:+.3f}</td>'
                    if c == "without it"
                    else f'<td class="num">{v:.2f}</td>'
                )
        rows.append(f'<tr class="{kind}">' + "".join(cells) + "</tr>")
    return (
        '<div class="rel-shaded rel-sentences"><table class="rel-sent"><thead><tr>'
        + head
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )
