"""Home: score a question with one or more answer variants and see why each score is what it is.

Start the dashboard with ``streamlit run app.py``.
"""

from __future__ import annotations

import streamlit as st

from relevancy._errors import RelevancyError
from relevancy._redact import redact
from relevancy.dashboard.drilldown import render_result
from relevancy.dashboard.sidebar import get_embedder_for, get_metric
from relevancy.dashboard.state import active_run, bind, get_store, load_run
from relevancy.dashboard.ui import PAGES, esc, fmt, mode_of, modes_in, pct, setup_page
from relevancy.store import DEMO_RUN_NAME

settings = setup_page(
    "Answer Relevancy",
    "📐",
    "How directly does an answer address the question? Score it, compare variants, see why.",
)
store = get_store()
threshold = settings.threshold

st.markdown(
    "**Answer Relevancy** (as defined by Ragas) asks an LLM to write the questions an answer "
    "would be a good reply to, then measures how close those questions are to the user's "
    "question (mean cosine similarity of embeddings, from about 0 to 1). Answers that drift "
    "off topic, pad with filler or leave part of the question unanswered score lower; "
    "noncommittal answers score 0. In **focus** mode (the default with the embedded models) "
    "the score also looks at each sentence of the answer: how close it is to the question, "
    "and how evenly; every score keeps its Ragas value beside it."
)
st.caption(
    f"Scores here are produced by the {settings.describe()} · {settings.strictness} questions "
    f"per answer · noncommittal detector: {settings.noncommittal} · "
    f"**{settings.resolved_mode}** mode."
)

# --- overview of the active run -----------------------------------------------------------
info = active_run()
if info is not None and info.n_scored:
    data = load_run(info.id)
    scores = data.frame["score"].astype(float)
    with st.container(border=True):
        run_mode = mode_of(modes_in(data.frame))
        st.markdown(
            f"**Active run:** {esc(info.name)} · {info.n_scored} rows"
            + (f" · {run_mode} mode" if run_mode else "")
        )
        cols = st.columns(4)
        cols[0].metric("Mean score", fmt(scores.mean()), border=True)
        cols[1].metric("Median", fmt(scores.median()), border=True)
        cols[2].metric(
            f"Below {threshold:.2f}",
            pct((scores < threshold).sum() / max(scores.notna().sum(), 1)),
            border=True,
        )
        cols[3].metric(
            "Variants",
            str(data.frame["variant"].nunique()) if "variant" in data.frame.columns else "1",
            border=True,
        )
        links = st.columns(len(PAGES) - 1)
        for col, (script, label, icon, what) in zip(links, PAGES[1:]):
            with col:
                st.page_link(script, label=label, icon=icon)
                st.caption(what)

# --- score your own question and answers --------------------------------------------------
st.subheader("Score a question and its answers", anchor=False)


def _examples() -> dict[str, list[str]]:
    """Demo questions with their answers (one per variant), for the example picker."""
    from relevancy.store import demo_inputs

    out: dict[str, list[str]] = {}
    for _, row in demo_inputs().iterrows():
        out.setdefault(row["user_input"], []).append(row["response"])
    return out


EXAMPLES = _examples()
FIRST = next(iter(EXAMPLES))


def _load_example() -> None:
    question = st.session_state["_w_home_example"]
    st.session_state["home_example"] = question
    answers = EXAMPLES.get(question, [])
    st.session_state["home_question"] = question
    st.session_state["home_n"] = max(1, len(answers))
    for i, answer in enumerate(answers):
        st.session_state[f"home_answer_{i}"] = answer
    st.session_state.pop("home_results", None)


if "home_question" not in st.session_state:
    st.session_state["home_question"] = FIRST
    for i, answer in enumerate(EXAMPLES[FIRST]):
        st.session_state[f"home_answer_{i}"] = answer
    st.session_state["home_n"] = len(EXAMPLES[FIRST])

c1, c2 = st.columns([3, 1])
with c1:
    kw = bind("home_example", FIRST, options=list(EXAMPLES))
    kw["on_change"] = _load_example
    kw.pop("args")
    st.selectbox(
        "Load an example from the demo",
        list(EXAMPLES),
        help="Fills the question and answers.",
        **kw,
    )
with c2:
    n = st.number_input("Answers to compare", 1, 4, key="home_n")

st.text_area("Question (user_input)", key="home_question", height=80)
answer_cols = st.columns(int(n))
answers: list[str] = []
for i, col in enumerate(answer_cols):
    with col:
        answers.append(
            st.text_area(
                f"Answer {chr(65 + i)}",
                key=f"home_answer_{i}",
                height=140,
                placeholder="Paste an answer to score",
            )
        )

go = st.button("Score", type="primary", icon="▶️", key="home_score")
question = st.session_state["home_question"]

if go:
    if not question.strip() or not any(a.strip() for a in answers):
        st.error("Type a question and at least one answer.", icon="✍️")
    else:
        results = []
        with st.status("Scoring…", expanded=True) as status:
            try:
                st.write("Loading the models (cached after the first time)…")
                metric = get_metric(settings)
                for i, answer in enumerate(answers):
                    if not answer.strip():
                        results.append(None)
                        continue
                    st.write(
                        f"Answer {chr(65 + i)}: writing {settings.strictness} questions "
                        "and embedding them…"
                    )
                    results.append(metric.score(user_input=question, response=answer))
                status.update(label="Scored", state="complete", expanded=False)
            except RelevancyError as exc:
                status.update(label="Scoring failed", state="error")
                st.error(esc(redact(exc)), icon="⛔")
                results = []
        if results:
            st.session_state["home_results"] = {
                "question": question,
                "answers": answers,
                "results": results,
                "source": "live",
            }


def _precomputed() -> dict | None:
    """The demo run's results when the inputs are a demo example (instant first screen)."""
    demo = next((r for r in store.list_runs() if r.name == DEMO_RUN_NAME and r.complete), None)
    if demo is None or settings.backend != "embedded" or settings.strictness != 3:
        return None
    data = load_run(demo.id)
    found = []
    for answer in answers:
        match = next(
            (r for r in data.results if r.user_input == question and r.response == answer), None
        )
        if match is None:
            return None
        found.append(match)
    return {"question": question, "answers": answers, "results": found, "source": "demo"}


shown = st.session_state.get("home_results")
if shown and (shown["question"] != question or shown["answers"] != answers):
    shown = None  # the inputs changed since they were scored
if shown is None:
    shown = _precomputed()
    if shown is not None:
        demo_mode = mode_of(sorted({r.mode for r in shown["results"]}))
        live = settings.resolved_mode
        st.caption(
            f"Showing the bundled precomputed result for this demo example ({demo_mode} mode); "
            "press **Score** to run the models live"
            + (f" in {live} mode." if live != demo_mode else ".")
        )

if shown:
    cols = st.columns(len(shown["results"]))
    for i, (col, result) in enumerate(zip(cols, shown["results"])):
        with col, st.container(border=True):
            if result is None:
                st.caption(f"Answer {chr(65 + i)} is empty.")
                continue
            render_result(
                result,
                key=f"home_{i}",
                title=f"Answer {chr(65 + i)}",
                threshold=threshold,
                embedder=get_embedder_for(result.embeddings, settings),
            )
