"""Page setup shared by every page: config, CSS, the sidebar, and the header."""

from __future__ import annotations

import threading

import streamlit as st

from relevancy.core.language import load as load_languages
from relevancy.dashboard.widgets.models import Settings
from relevancy.dashboard.widgets.permalink import notes_slot, open_link, sync_link
from relevancy.dashboard.widgets.sidebar import render_sidebar

__all__ = ["setup_page", "header"]

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
.rel-questions .rel-qtrack { position: relative; width: 34%; min-width: 120px; }
.rel-qbar { position: absolute; top: .55rem; height: .8rem; border-radius: 3px; }
.rel-qmean { position: absolute; top: .25rem; bottom: .25rem; border-left: 2px dotted #111827; }
.rel-link { display: flex; align-items: center; gap: .5rem; }
.rel-link code { flex: 1; overflow-x: auto; white-space: nowrap; padding: .45rem .6rem;
  background: #f6f7f9; border-radius: 6px; font-size: .85rem; color: #111827; }
.rel-link button { border: 1px solid #d1d5db; background: #fff; border-radius: 6px;
  padding: .3rem .7rem; cursor: pointer; font-size: .85rem; }
.rel-link button:hover { border-color: #6366f1; color: #4338ca; }
.rel-badge { display: inline-block; padding: .1rem .6rem; border-radius: 999px; color: #fff;
  font-weight: 700; font-size: .85rem; }
div[data-testid="stMetric"] { background: #ffffff; }
section[data-testid="stSidebar"] .rel-brand { font-weight: 800; font-size: 1.25rem;
  color: #312e81; margin: -.5rem 0 .3rem; }
section[data-testid="stSidebar"] .rel-brand span { color: #6b7280; font-weight: 500;
  font-size: .8rem; margin-left: .3rem; }
</style>
"""


def setup_page(title: str, icon: str, subtitle: str = "", *, row_links: bool = False) -> Settings:
    """Page config, CSS, the shared sidebar and the header; returns the sidebar's settings.

    The URL's ``?run=ID`` is opened (before the sidebar shows the active run) and kept in step
    with the active run. ``row_links``: the page also opens and writes ``&row=N`` for its
    drill-down, and calls :func:`~relevancy.dashboard.widgets.permalink.sync_link` itself, once it
    knows the row (see :mod:`relevancy.dashboard.widgets.permalink`).
    """
    st.set_page_config(
        page_title=f"{title} · Answer Relevancy",
        page_icon=icon,
        layout="wide",
        initial_sidebar_state="expanded",
        menu_items={"About": "relevancy: compute and explain the Answer Relevancy of LLM answers."},
    )
    st.markdown(_CSS, unsafe_allow_html=True)
    _warm_up()
    open_link(title, rows=row_links)
    settings = render_sidebar()
    header(title, icon, subtitle)
    notes_slot(title)
    if not row_links:  # the sidebar has just settled the active run
        sync_link(st.session_state.get("active_run"))
    return settings


@st.cache_resource(show_spinner=False)
def _warm_up() -> bool:
    """Load the language identifier (0.5 s) in the background, once per server: stored runs
    have their rows' languages detected when a drill-down opens them."""
    threading.Thread(target=load_languages, name="relevancy-warm-up", daemon=True).start()
    return True


def header(title: str, icon: str, subtitle: str = "") -> None:
    """The consistent page header (static text only: no user input goes here)."""
    sub = f"<p>{subtitle}</p>" if subtitle else ""
    st.markdown(
        f'<div class="rel-header"><div class="icon">{icon}</div><div><h1>{title}</h1>{sub}'
        "</div></div>",
        unsafe_allow_html=True,
    )
