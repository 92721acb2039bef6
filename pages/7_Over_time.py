"""Over time: a run's relevancy per hour or day with its CI, split by model or prompt, with the
changes of model or prompt marked, a bucket's rows, and alert windows; a followed run redraws
itself as rows arrive."""

from __future__ import annotations

import streamlit as st

from relevancy.dashboard.widgets.page import setup_page
from relevancy.dashboard.widgets.state import get_store, scored_run
from relevancy.dashboard.widgets.timeline_panel import (
    controls,
    draw_live,
    draw_timeline,
    live_caption,
    live_interval,
    time_column,
)

settings = setup_page(
    "Over time",
    "⏱️",
    "Relevancy per hour or day, with its 95% CI, split by model or prompt, and alerts.",
)
info = scored_run()
if info is None:
    st.stop()
column = time_column(info)
if column is None:
    st.stop()
picked = controls(info, column, settings.threshold)
every = live_interval(get_store(), info)
if every is not None or isinstance(info.settings.get("follow"), dict):
    st.caption(live_caption(info, every))
if every is None:
    draw_timeline(info.id, picked)
else:
    st.fragment(run_every=every)(draw_live)(info.id, picked)
