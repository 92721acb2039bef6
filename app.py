"""Home: score a question with one or more answer variants and see why each score is what it is.

Start the dashboard with ``streamlit run app.py``.
"""

from __future__ import annotations

import streamlit as st

from relevancy import RelevancyError
from relevancy.analysis.summary import mode_label
from relevancy.dashboard.views.examples import demo_examples, precomputed
from relevancy.dashboard.views.format import embedded_caveat, error_text, esc, fmt, pct
from relevancy.dashboard.widgets.drilldown import render_result
from relevancy.dashboard.widgets.health import health_slot, show_health
from relevancy.dashboard.widgets.judge_panel import render_judge_panel
from relevancy.dashboard.widgets.models import embedder_for, get_metric, judge_of
from relevancy.dashboard.widgets.page import setup_page
from relevancy.dashboard.widgets.sidebar import PAGES
from relevancy.dashboard.widgets.state import (
    active_run,
    demo_run,
    load_run,
    run_distinct,
    run_figures,
)
from relevancy.scoring.judge import load_check_set

settings = setup_page(
    "Answer Relevancy",
    "📐",
    "How directly does an answer address the question? Score it, compare variants, see why.",
)
threshold = settings.threshold
health = health_slot()  # one line when the installation or the embedded generator is not well

st.markdown(
    "**Answer Relevancy** (as defined by Ragas) asks an LLM to write the questions an answer "
    "would be a good reply to, then measures how close those questions are to the user's "
    "question (mean cosine similarity of embeddings, from about 0 to 1). Answers that drift "
    "off topic, pad with filler or leave part of the question unanswered score lower; "
    "noncommittal answers score 0. Every answer is also shown sentence by sentence, so you can "
    "see which parts sit far from the question."
)
st.caption(
    f"Scores here are produced by the {settings.describe()} · {settings.strictness} questions "
    f"per answer · noncommittal detector: {settings.noncommittal} · "
    f"**{settings.resolved_mode}** mode."
)
if settings.embedded:  # the sidebar's judge check line reads the same check
    judge_metric, judge = judge_of(settings)
    st.caption(embedded_caveat(judge, looked=judge_metric is not None))

# --- overview of the active run -----------------------------------------------------------
info = active_run()
if info is not None and info.n_scored:
    figures = run_figures(info.id, threshold)  # computed in the store, not on every row
    with st.container(border=True):
        st.markdown(
            f"**Active run:** {esc(info.name)} · {info.n_scored:,} rows"
            + (f" · {info.mode} mode" if info.mode else "")
        )
        cols = st.columns(4)
        cols[0].metric("Mean score", fmt(figures.mean), border=True)
        cols[1].metric("Median", fmt(figures.median), border=True)
        low = figures.below if figures.scored else 0.0
        cols[2].metric(f"Below {threshold:.2f}", pct(low), border=True)
        variants = len(run_distinct(info.id, "variant")) if "variant" in info.columns else 1
        cols[3].metric("Variants", str(variants), border=True)
        for col, (script, label, icon, what) in zip(st.columns(len(PAGES) - 1), PAGES[1:]):
            with col:
                st.page_link(script, label=label, icon=icon)
                st.caption(what)

# --- score your own question and answers --------------------------------------------------
st.subheader("Score a question and its answers", anchor=False)
EXAMPLES = demo_examples()
CUSTOM = "(your own question)"


def _fill(question: str) -> None:
    """Put an example's question and answers into the inputs."""
    answers = EXAMPLES.get(question, ())
    st.session_state["home_question"] = question
    st.session_state["home_n"] = max(1, len(answers))
    for i, answer in enumerate(answers):
        st.session_state[f"home_answer_{i}"] = answer


def _pick_example() -> None:
    picked = st.session_state["home_example"]
    if picked == CUSTOM:  # blank inputs for the user's own question and answers
        st.session_state["home_question"] = ""
        for i in range(4):
            st.session_state[f"home_answer_{i}"] = ""
    else:
        _fill(picked)
    st.session_state.pop("home_results", None)


if "home_question" not in st.session_state:
    _fill(next(iter(EXAMPLES)))
question = st.session_state["home_question"]
# the picker shows the example only while its question is in the box
st.session_state["home_example"] = question if question in EXAMPLES else CUSTOM

c1, c2 = st.columns([3, 1])
with c1:
    st.selectbox(
        "Load an example from the demo",
        [CUSTOM, *EXAMPLES],
        key="home_example",
        on_change=_pick_example,
        help="Fills the question and answers.",
    )
with c2:
    n = st.number_input("Answers to compare", 1, 4, key="home_n")
st.text_area("Question (user_input)", key="home_question", height=80)
answers: list[str] = []
for i, col in enumerate(st.columns(int(n))):
    with col:
        answers.append(
            st.text_area(
                f"Answer {chr(65 + i)}",
                key=f"home_answer_{i}",
                height=140,
                placeholder="Paste an answer to score",
            )
        )

if st.button("Score", type="primary", icon="▶️", key="home_score"):
    if not question.strip() or not any(a.strip() for a in answers):
        st.error("Type a question and at least one answer.", icon="✍️")
    else:
        with st.status("Scoring…", expanded=True) as status:
            try:
                st.write("Loading the models (cached after the first time)…")
                metric = get_metric(settings)
                results = []
                for i, answer in enumerate(answers):
                    st.write(f"Answer {chr(65 + i)}: writing and embedding the questions…")
                    scored = answer.strip() and metric.score(user_input=question, response=answer)
                    results.append(scored or None)
                status.update(label="Scored", state="complete", expanded=False)
                st.session_state["home_results"] = {
                    "question": question,
                    "answers": answers,
                    "results": results,
                }
            except RelevancyError as exc:
                status.update(label="Scoring failed", state="error")
                st.error(error_text(exc), icon="⛔")

shown = st.session_state.get("home_results")
if shown and (shown["question"] != question or shown["answers"] != answers):
    shown = None  # the inputs changed since they were scored
results = shown["results"] if shown else None
if results is None and settings.embedded and settings.strictness == 3:
    demo = demo_run()
    results = precomputed(question, answers, load_run(demo.id) if demo else None)
    if results is not None:
        st.caption(
            "Showing the bundled precomputed result for this demo example (embedded models, "
            f"{mode_label(r.mode for r in results if r)} mode); press **Score** to run the "
            f"models live in {settings.resolved_mode} mode (a live score can differ slightly: "
            "generation is repeatable on one machine, not across CPUs)."
        )
if results:
    for i, (col, result) in enumerate(zip(st.columns(len(results)), results)):
        with col, st.container(border=True):
            if result is None:
                st.caption(f"Answer {chr(65 + i)} is empty.")
                continue
            render_result(
                result,
                key=f"home_{i}",
                title=f"Answer {chr(65 + i)}",
                threshold=threshold,
                embedder=embedder_for(result.embeddings, settings),
            )

st.subheader("Can these models be trusted as a judge?", anchor=False)
with st.expander(
    f"⚖️ **Judge check**: the sidebar's models on {len(load_check_set())} labelled pairs",
    expanded=bool(st.session_state.get("home_judge_open")),
):
    render_judge_panel(settings)
show_health(health)
