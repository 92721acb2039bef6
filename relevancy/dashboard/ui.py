"""Page chrome shared by every page: config, CSS, header, navigation, small formatters."""

from __future__ import annotations

import math
import re
from typing import Any

import streamlit as st

from relevancy._modes import describe_mode

__all__ = [
    "PAGES",
    "setup_page",
    "header",
    "esc",
    "fmt",
    "pct",
    "score_badge",
    "nav_links",
    "MODE_SHORT",
    "mode_of",
    "mode_text",
    "modes_in",
]

#: what a result's ``value`` is, in a few plain words per scoring mode
MODE_SHORT = {mode: describe_mode(mode) for mode in ("ragas", "focus")}

#: (script, label, icon, what it is for) in sidebar order
PAGES: list[tuple[str, str, str, str]] = [
    ("app.py", "Home", "🏠", "Score a question and answer variants, see why a score is low."),
    ("pages/1_Dataset.py", "Dataset", "🗂️", "Upload or load data, score it, filter and drill down."),
    ("pages/2_Distributions.py", "Distributions", "📊", "Histograms, box plots, ECDF by group."),
    ("pages/3_Embeddings.py", "Embeddings", "🧭", "Where generated questions land vs. originals."),
    ("pages/4_Compare.py", "Compare", "⚖️", "Paired A/B: wins, losses, biggest regressions."),
    ("pages/5_Runs.py", "Runs", "💾", "Saved runs: reopen, rename, delete, export."),
]

_CSS = """
<style>
.block-container { padding-top: 3rem; padding-bottom: 3rem; max-width: 1400px; }
.rel-header { display: flex; align-items: center; gap: .9rem; margin-bottom: .2rem; }
.rel-header .icon { font-size: 2.1rem; line-height: 1; background: #eef2ff; border-radius: 14px;
  padding: .45rem .55rem; }
.rel-header h1 { font-size: 1.85rem; margin: 0; padding: 0; font-weight: 750; color: #111827; }
.rel-header p { margin: .1rem 0 0; color: #4b5563; font-size: .98rem; }
.rel-shaded { font-size: 1rem; background: #fff; border: 1px solid #e5e7eb; border-radius: 10px;
  padding: .7rem .9rem; }
.rel-sentences { padding: .3rem .5rem; }
.rel-sent { width: 100%; border-collapse: collapse; font-size: .95rem; }
.rel-sent th { text-align: left; font-weight: 600; color: #4b5563; font-size: .8rem;
  padding: .25rem .4rem; border-bottom: 1px solid #e5e7eb; white-space: nowrap; }
.rel-sent td { padding: .4rem .4rem; border-bottom: 1px solid #f3f4f6; vertical-align: top; }
.rel-sent tr:last-child td { border-bottom: none; }
.rel-sent .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.rel-sent tr td:first-child { border-left: 4px solid transparent; color: #6b7280; }
.rel-sent tr.off td:first-child { border-left-color: #dc2626; }
.rel-sent tr.lowers td:first-child { border-left-color: #f59e0b; }
.rel-sent-text { border-radius: 4px; padding: 1px 3px; line-height: 1.7;
  box-decoration-break: clone; -webkit-box-decoration-break: clone; }
.rel-flag { display: inline-block; font-size: .72rem; font-weight: 700; border-radius: 999px;
  padding: 0 .45rem; margin-left: .25rem; white-space: nowrap; }
.rel-flag.off { background: #fee2e2; color: #991b1b; }
.rel-flag.lowers { background: #fef3c7; color: #92400e; }
.rel-badge { display: inline-block; padding: .1rem .6rem; border-radius: 999px; color: #fff;
  font-weight: 700; font-size: .85rem; }
div[data-testid="stMetric"] { background: #ffffff; }
section[data-testid="stSidebar"] .rel-brand { font-weight: 800; font-size: 1.25rem;
  color: #312e81; margin: -.5rem 0 .3rem; }
section[data-testid="stSidebar"] .rel-brand span { color: #6b7280; font-weight: 500;
  font-size: .8rem; margin-left: .3rem; }
</style>
"""

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~<$:])")


def esc(text: Any) -> str:
    """User text made inert for ``st.markdown``: markdown, HTML and LaTeX characters escaped."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def fmt(x: Any, digits: int = 3) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "–"
    return "–" if math.isnan(v) else f"{v:.{digits}f}"


def pct(x: Any) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "–"
    return "–" if math.isnan(v) else f"{100 * v:.0f}%"


def score_badge(value: float | None, threshold: float) -> str:
    """A coloured pill (HTML, no user text) for a score."""
    from relevancy.dashboard.charts import score_color

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return '<span class="rel-badge" style="background:#9ca3af">not scored</span>'
    label = "low" if value < threshold else "relevant"
    return (
        f'<span class="rel-badge" style="background:{score_color(value)}">'
        f"{value:.3f} · {label}</span>"
    )


def modes_in(frame: Any) -> list[str]:
    """The scoring modes of a results table's rows, sorted (``["ragas"]`` for old runs)."""
    from relevancy.report import frame_modes

    return frame_modes(frame)


def mode_of(modes: list[str] | tuple[str, ...]) -> str:
    """One word for a set of modes: the mode, ``"mixed"``, or ``""`` when there is none."""
    if not modes:
        return ""
    return modes[0] if len(modes) == 1 else "mixed"


def mode_text(mode: str) -> str:
    """Markdown naming a mode and what its numbers are (static text, no user input)."""
    if mode in MODE_SHORT:
        return f"**{mode}** mode: {MODE_SHORT[mode]}"
    if mode == "mixed":
        return (
            "**mixed** modes: some rows are Ragas values, others focus scores; compare the "
            "*Ragas value* column across them"
        )
    return f"**{esc(mode)}** mode"


def nav_links() -> None:
    for script, label, icon, _ in PAGES:
        st.sidebar.page_link(script, label=label, icon=icon)


def setup_page(title: str, icon: str, subtitle: str = "") -> Any:
    """Page config, CSS, the shared sidebar and the header; returns the sidebar settings."""
    st.set_page_config(
        page_title=f"{title} · Answer Relevancy",
        page_icon=icon,
        layout="wide",
        initial_sidebar_state="expanded",
        menu_items={"About": "relevancy: compute and explain the Answer Relevancy of LLM answers."},
    )
    st.markdown(_CSS, unsafe_allow_html=True)
    from relevancy.dashboard.sidebar import render_sidebar

    settings = render_sidebar()
    header(title, icon, subtitle)
    return settings


def header(title: str, icon: str, subtitle: str = "") -> None:
    """The consistent page header (static text only: no user input goes here)."""
    sub = f"<p>{subtitle}</p>" if subtitle else ""
    st.markdown(
        f'<div class="rel-header"><div class="icon">{icon}</div><div><h1>{title}</h1>{sub}'
        "</div></div>",
        unsafe_allow_html=True,
    )
