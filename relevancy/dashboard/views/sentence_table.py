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
