"""The answer sentence by sentence, shaded by similarity to the question (HTML, escaped)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from relevancy.core.inert import inert
from relevancy.report.charts import rgb, score_color

__all__ = [
    "question_bars_html",
    "sentence_shading_html",
    "sentence_table_html",
]


def sentence_shading_html(sentences: Sequence[Any]) -> str:
    """The response as escaped HTML, each sentence shaded by its similarity to the question.

    ``sentences`` are :class:`relevancy.core.triage.SentenceScore`-like (``text``, ``similarity``).
    Strong colour = close to the question; pale = padding or off-topic detail.
    """
    spans = []
    for s in sentences:
        sim = float(s.similarity)
        alpha = 0.10 + 0.55 * min(1.0, max(0.0, sim))
        r, g, b = rgb(score_color(sim))
        spans.append(
            f'<span title="similarity {sim:.2f}" style="background: rgba({r},{g},{b},{alpha:.2f});'
            " border-radius: 4px; padding: 2px 3px; line-height: 1.9;"
            ' box-decoration-break: clone; -webkit-box-decoration-break: clone;">'
            f"{inert(s.text, html=True)}"
            f' <sup style="color:#374151; font-size: 0.72em;">{sim:.2f}</sup></span>'
        )
    return '<div class="rel-shaded">' + " ".join(spans) + "</div>"


def _shade(sim: float) -> str:
    """The background the shaded answer gives a sentence of this similarity."""
    if math.isnan(sim):
        return "transparent"
    r, g, b = rgb(score_color(sim))
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
        flag = f' <span class="rel-flag {kind}">{inert(note, html=True)}</span>' if note else ""
        sim = float(row["similarity"])
        cells = [
            f'<td class="num">{int(row["#"])}</td>',
            f'<td><span class="rel-sent-text" style="background: '
            f'{"#f3f4f6" if neutral else _shade(sim)}">'
            f"{inert(row['sentence'], html=True)}</span>{flag}</td>",
            f'<td class="num"><b>{"–" if math.isnan(sim) else f"{sim:.2f}"}</b></td>',
        ]
        for c in others:
            v = row[c]
            if not numeric[c]:
                cells.append(f"<td>{inert(v, html=True)}</td>")
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


def question_bars_html(questions: Sequence[Any]) -> str:
    """The generated questions as escaped HTML, one bar each: its cosine similarity to the
    user's question, coloured red (far) to green (close), with the mean of the usable ones
    (the score before any noncommittal zeroing) as a dotted line across the bars.

    ``questions`` are :class:`relevancy.core.result.QuestionScore`-like (``question``,
    ``similarity``, ``noncommittal``, ``error``). An unusable generation shows its error and
    no bar. Drawn by the browser as a table: no chart library to load.
    """
    sims = [float(q.similarity) for q in questions if q.similarity is not None]
    low = min([0.0, *sims])  # a negative similarity gets room left of 0
    span = 1.0 - low

    def at(x: float) -> float:
        return 100.0 * (x - low) / span

    zero = at(0.0)
    mean = sum(sims) / len(sims) if sims else None
    line = (
        f'<span class="rel-qmean" style="left: {at(mean):.1f}%"></span>' if mean is not None else ""
    )
    rows = []
    for i, q in enumerate(questions, 1):
        usable = q.similarity is not None and bool(str(q.question or "").strip())
        text = (
            inert(q.question, html=True)
            if str(q.question or "").strip()
            else f"<i>(unusable: {inert(q.error or 'empty', html=True)})</i>"
        )
        flag = (
            ' <span class="rel-flag lowers">LLM flag: noncommittal</span>' if q.noncommittal else ""
        )
        if usable:
            sim = float(q.similarity)
            left, width = (at(sim), zero - at(sim)) if sim < 0 else (zero, at(sim) - zero)
            bar = (
                f'<span class="rel-qbar" style="left: {left:.1f}%; width: {width:.1f}%; '
                f'background: {score_color(sim)}"></span>'
            )
            number = f"{sim:.3f}"
        else:
            bar, number = "", "n/a"
        rows.append(
            f'<tr><td class="num">Q{i}</td><td>{text}{flag}</td>'
            f'<td class="rel-qtrack">{bar}{line}</td><td class="num"><b>{number}</b></td></tr>'
        )
    head = (
        '<th class="num">#</th><th>generated question</th>'
        '<th title="cosine similarity to the question; the dotted line is their mean">'
        + ("similarity (dotted: mean " + f"{mean:.3f})" if mean is not None else "similarity")
        + '</th><th class="num"></th>'
    )
    return (
        '<div class="rel-shaded rel-sentences"><table class="rel-sent rel-questions"><thead><tr>'
        + head
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )
