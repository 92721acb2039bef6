"""The chance level in the dashboard, without Streamlit: measured from a run's stored vectors,
drawn as a band on the Distributions charts, and said in words beside scores.

See :mod:`relevancy.analysis.chance` for what the chance level is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from relevancy.analysis.chance import ChanceLevel, chance_level
from relevancy.core.result import RelevancyResult
from relevancy.runs import RunStore

__all__ = ["run_chance", "add_band", "chance_summary", "row_notes", "BAND_COLOR"]

BAND_COLOR = "#64748b"


#: rows of a run the dashboard measures its chance level on: 500 rows are 250,000 unrelated
#: pairs, percentiles steady to the second decimal, in a tenth of the time of 2,000
PAGE_ROWS = 500


def run_chance(
    store: RunStore, run_id: int, *, max_rows: int = PAGE_ROWS, seed: int = 0
) -> dict[str, ChanceLevel]:
    """The chance level of each embedder of a run (most runs have one), from up to
    ``max_rows`` rows of it (a seeded sample of a large run): embedder name -> level.

    A large run is sampled by row number before anything is read (2 x ``max_rows`` rows, so an
    embedder of half the rows still gets its share), not by reading every row first."""
    n_rows = store.get_run(run_id).n_rows
    sample = None
    if n_rows > 2 * max_rows:
        rng = np.random.default_rng(seed)
        sample = np.sort(rng.choice(n_rows, 2 * max_rows, replace=False)).tolist()
    table, user, generated = store.vectors(run_id, sample)
    out: dict[str, ChanceLevel] = {}
    for embedder, part in table.groupby("embeddings", sort=True):
        keep = part.index.to_numpy()
        if keep.size > max_rows:
            keep = np.sort(np.random.default_rng(seed).choice(keep, max_rows, replace=False))
        level = chance_level(
            user[keep],
            [generated[i] for i in keep],
            table["user_input"].iloc[keep].tolist(),
            embedder=str(embedder),
            seed=seed,
        )
        if level is not None:
            out[str(embedder)] = level
    return out


def add_band(
    fig: go.Figure, level: ChanceLevel | None, *, axis: str = "x", note: str = "top left"
) -> go.Figure:
    """Shade where unrelated pairs score (5th to 95th percentile) and mark their median, on the
    score axis (``"x"``: histogram, ECDF; ``"y"``: box/violin, scores over time), cut to the
    axis's range when it has one, its note at ``note`` (a plotly annotation position); no
    ``level``: ``fig`` as is."""
    if level is None:
        return fig
    note = dict(
        annotation_text=f"unrelated pairs, {level.short_name} (5-95%; median {level.median:.2f})",
        annotation_position=note,
        annotation_font=dict(color="#334155", size=11),
        annotation_bgcolor="rgba(255,255,255,0.85)",
    )
    shape = dict(fillcolor=BAND_COLOR, opacity=0.14, line_width=0, layer="below")
    line = dict(color=BAND_COLOR, width=1.5, dash="dot")
    # within the axis's range when it has one (plotly hides a note anchored outside it)
    shown = (fig.layout.xaxis if axis == "x" else fig.layout.yaxis).range
    low, high = level.p5, level.p95
    if shown is not None:
        low, high = max(low, shown[0]), min(high, shown[1])
    if axis == "x":
        fig.add_vrect(x0=low, x1=high, **shape, **note)
        fig.add_vline(x=level.median, line=line)
    else:
        fig.add_hrect(y0=low, y1=high, **shape, **note)
        fig.add_hline(y=level.median, line=line)
    return fig


def chance_summary(
    level: ChanceLevel, ragas: Sequence[float], noncommittal: Sequence[bool] | None = None
) -> dict[str, float]:
    """How a run's Ragas values sit against the chance level: ``median`` (of the answered
    rows), ``above`` (their median minus the chance median), ``below`` (answered rows under
    the 95th percentile of unrelated pairs), ``answered``. Noncommittal rows (zeroed on
    purpose) are left aside."""
    x = pd.to_numeric(pd.Series(list(ragas)), errors="coerce").to_numpy(dtype=float)
    answered = np.isfinite(x)
    if noncommittal is not None:
        answered &= ~np.asarray(noncommittal, dtype=bool)
    x = x[answered]
    median = float(np.median(x)) if x.size else math.nan
    return {
        "answered": int(x.size),
        "median": median,
        "above": median - level.median,
        "below": int((x < level.p95).sum()),
    }


def row_notes(result: RelevancyResult, level: ChanceLevel | None) -> list[tuple[str, str]]:
    """What the drill-down says about a row against chance: ``(severity, markdown)`` with
    severity ``"info"`` (where the row sits), ``"warning"`` (at chance level; a negative
    cosine). Static text and numbers only."""
    notes: list[tuple[str, str]] = []
    value = result.ragas_value
    name = "this answer scores" if result.mode == "ragas" else "this answer's Ragas value is"
    if level is not None and result.embeddings == level.embedder:
        # a noncommittal answer is zeroed by rule: no comparison with chance
        shown = math.nan if result.noncommittal else value
        text = level.compare(shown).replace("this answer scores", name)
        notes.append(("info", f"Chance level: {text[0].lower()}{text[1:]}."))
        if level.below(shown):
            notes.append(
                (
                    "warning",
                    f"**At chance level.** {value:.2f} is below what 5% of unrelated pairs "
                    f"reach with {level.short_name} ({level.p95:.2f}): by this score the answer "
                    "is no closer to the question than an answer to another question.",
                )
            )
    negative = [
        q.similarity for q in result.questions if q.similarity is not None and q.similarity < 0
    ]
    if negative:
        share = (
            f" ({100 * level.negative_share:.0f}% of unrelated questions do so with "
            f"{level.short_name})"
            if level is not None and math.isfinite(level.negative_share)
            else ""
        )
        notes.append(
            (
                "warning",
                f"**Negative cosine.** {len(negative)} generated question"
                f"{' has' if len(negative) == 1 else 's have'} a negative similarity to the "
                f"question ({', '.join(f'{s:.3f}' for s in negative)}): the embedder puts "
                f"{'it' if len(negative) == 1 else 'them'} further from the question than a "
                f"typical unrelated question{share}. Scores are not clipped: a negative cosine "
                "counts as it is in the mean.",
            )
        )
    return notes
