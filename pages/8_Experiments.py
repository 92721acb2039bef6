"""Experiments: prompt templates x models over a question set, answered, scored into one run,
and compared; or a saved experiment run extended with another template or model (issue 48; the
library is relevancy.experiments)."""

from __future__ import annotations

import streamlit as st

from relevancy.dashboard.views.format import esc
from relevancy.dashboard.widgets import experiment_panel as panel
from relevancy.dashboard.widgets.models import get_metric
from relevancy.dashboard.widgets.page import setup_page

settings = setup_page(
    "Experiments",
    "🧪",
    "Which prompt, and which model, answers your questions more relevantly? Answer them all, "
    "score every answer, compare.",
)
metric = get_metric(settings)
if panel.mode() == panel.EXTEND:
    panel.extend(settings)
else:
    try:
        loaded = panel.questions()
    except Exception as exc:  # a question set that cannot be read: one line
        st.error(esc(str(exc).splitlines()[0]))
        st.stop()
    if loaded is None:
        st.info("Upload a question set to plan the experiment.")
        st.stop()
    frame, source = loaded
    st.caption(esc(f"{len(frame):,} questions from {source}; columns: {', '.join(frame.columns)}"))
    typed = panel.templates()
    names, base_url, answer_settings = panel.models(settings.base_url)
    planned = panel.plan_and_estimate(typed, names, frame, answer_settings, base_url, metric)
    name = st.text_input("Save the run as", "experiment", key="exp_run_name")
    if planned is not None and st.button("Run the experiment", key="exp_go", type="primary"):
        panel.run(planned[0], metric, planned[1], name, settings)
if st.session_state.get(panel.RUN_KEY) is not None:
    panel.results(st.session_state[panel.RUN_KEY], settings.threshold)
