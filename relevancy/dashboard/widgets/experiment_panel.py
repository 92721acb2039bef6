"""The Experiments page's Streamlit parts: the question set, the templates side by side, the
models, the run with its progress, and the results (matrix, summary, answers, Compare).

Keys are prefixed ``exp_``. Templates, answers and questions are data: drawn with ``st.text``,
in tables, or escaped with :func:`~relevancy.dashboard.views.format.esc`, never as Markdown.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from relevancy.dashboard.views.experiments import (
    EMBEDDED_NOTE,
    STARTERS,
    PageTemplate,
    cell_matrix,
    parse_models,
    summary_table,
)
from relevancy.dashboard.views.format import esc
from relevancy.dashboard.widgets.drilldown import render_result
from relevancy.dashboard.widgets.models import get_api_key
from relevancy.dashboard.widgets.state import (
    clear_run_caches,
    get_store,
    list_runs,
    load_run,
    set_active_run,
)
from relevancy.experiments import (
    DEMO,
    AnswerSettings,
    Plan,
    check_plan,
    estimate,
    load_questions,
    make_answerer,
    run_experiment,
)
from relevancy.experiments.summary import variant_summary
from relevancy.paths import default_cache_dir

__all__ = ["questions", "templates", "models", "plan_and_estimate", "run", "results", "RUN_KEY"]

#: the run the page shows (the last experiment run here)
RUN_KEY = "exp_run"
MAX_TEMPLATES = 4


def questions() -> tuple[pd.DataFrame, str]:
    """The question set: the demo's, or a saved run's."""
    runs = [r for r in list_runs() if r.n_rows]
    picked = st.selectbox(
        "Questions",
        [DEMO, *(f"run:{r.id}" for r in runs)],
        format_func=lambda s: (
            "the bundled demo's 24 questions"
            if s == DEMO
            else next(f"questions of run #{r.id} {r.name}" for r in runs if f"run:{r.id}" == s)
        ),
        key="exp_questions",
    )
    return load_questions(picked, store=get_store())


def templates() -> list[PageTemplate]:
    """Two to four templates, side by side."""
    count = st.number_input("Templates", 1, MAX_TEMPLATES, 2, key="exp_count")
    out = []
    for i, column in enumerate(st.columns(int(count))):
        name, system, user = STARTERS[i] if i < len(STARTERS) else (f"t{i + 1}", "", "{user_input}")
        with column:
            out.append(
                PageTemplate(
                    st.text_input("Name", name, key=f"exp_name_{i}"),
                    st.text_area("System", system, key=f"exp_system_{i}", height=80),
                    st.text_area("User", user, key=f"exp_user_{i}", height=80),
                )
            )
    return out


def models(base_url: str | None) -> tuple[list[str], str | None, AnswerSettings]:
    """The answer models, their endpoint and their settings."""
    left, right = st.columns(2)
    names = parse_models(
        left.text_input(
            "Models (comma-separated; local = the embedded one)", "local", key="exp_models"
        )
    )
    url = right.text_input(
        "OpenAI-compatible endpoint (for models other than local)",
        base_url or "",
        key="exp_base_url",
        help="The key comes from the sidebar or OPENAI_API_KEY; it is never saved.",
    )
    a, b, c = st.columns(3)
    settings = AnswerSettings(
        temperature=float(a.number_input("Temperature", 0.0, 2.0, 0.0, 0.1, key="exp_temp")),
        max_tokens=int(b.number_input("Max tokens", 1, 4096, 120, key="exp_max_tokens")),
        repeats=int(c.number_input("Repeats", 1, 20, 1, key="exp_repeats")),
    )
    if "local" in names:
        st.caption(EMBEDDED_NOTE)
    return names, url.strip() or None, settings


def plan_and_estimate(
    typed: list[PageTemplate],
    names: list[str],
    frame: pd.DataFrame,
    settings: AnswerSettings,
    base_url: str | None,
    metric: Any,
) -> tuple[Plan, dict[str, Any]] | None:
    """The plan, checked (one line when it cannot run), and its estimate before running."""
    try:
        plan = Plan([t.template() for t in typed], names, frame, settings)
        for warning in check_plan(plan):
            st.warning(esc(warning), icon="⚠️")
        key, _ = get_api_key()
        answerers = {m: make_answerer(m, settings, base_url=base_url, api_key=key) for m in names}
    except Exception as exc:  # a RelevancyError says what to fix; anything else, said too
        st.error(esc(str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
        return None
    found = estimate(plan, answerers, metric.cache)
    a, b, c = st.columns(3)
    a.metric("Answers", f"{found.answers:,}", border=True)
    b.metric("To request", f"{found.requests:,}", help="Not in the answer cache", border=True)
    c.metric("Answer tokens at most", f"{found.completion_tokens:,}", border=True)
    cost = "unknown (no list price)" if found.dollars is None else f"${found.dollars:.4f}"
    st.caption(
        f"About {found.prompt_tokens:,} prompt tokens; cost {cost}; then {found.answers:,} "
        "rows scored by the sidebar's judge."
    )
    return plan, answerers


def run(plan: Plan, metric: Any, answerers: dict[str, Any], name: str) -> None:
    """Answer and score, with a progress bar for each; the saved run becomes the page's."""
    store = get_store()
    bars = {what: st.progress(0.0, text=f"{what}: starting") for what in ("Answering", "Scoring")}
    done = {"Answering": 0, "Scoring": 0}

    def tick(what: str) -> Any:
        def step(n: int) -> None:
            done[what] += n
            bars[what].progress(
                min(1.0, done[what] / max(plan.size, 1)),
                text=f"{what}: {done[what]:,} of {plan.size:,}",
            )

        return step

    finished = run_experiment(
        plan,
        metric,
        answerers,
        default_cache_dir() / "experiments" / f"{name or 'experiment'}.csv".replace("/", "_"),
        store=store,
        run_name=name,
        source="the page's question set",
        on_answer=tick("Answering"),
        on_score=tick("Scoring"),
    )
    clear_run_caches()
    st.session_state[RUN_KEY] = finished.run_id
    if finished.failed_answers:
        first = finished.answers[finished.answers["answer_error"].notna()].iloc[0]
        st.error(
            esc(
                f"{finished.failed_answers} answers failed and are kept with their error "
                f"({first['variant']}: {first['answer_error']})"
            )
        )


def results(run_id: int, threshold: float) -> None:
    """The matrix, the summary per variant, one question's answers and the Compare link."""
    data = load_run(run_id)
    frame = data.frame
    if frame.empty or "variant" not in frame:
        st.info("This run has no scored experiment rows yet.")
        return
    st.subheader(f"Run #{run_id}: {esc(data.info.name)}", anchor=False)
    st.markdown("**Per variant** (mean with its 95% CI, share below the threshold)")
    st.dataframe(
        summary_table(variant_summary(frame, threshold=threshold)),
        hide_index=True,
        key="exp_summary",
    )
    st.markdown("**Question × variant** (score and main reason)")
    st.dataframe(cell_matrix(frame), key="exp_matrix")
    question = st.selectbox(
        "Answers to", list(dict.fromkeys(frame["user_input"])), key="exp_question"
    )
    rows = frame[frame["user_input"] == question]
    variant = st.radio(
        "Variant", list(dict.fromkeys(rows["variant"])), format_func=esc, key="exp_variant"
    )
    row = rows[rows["variant"] == variant].iloc[0]
    st.caption("Prompt sent")
    st.text(str(row.get("prompt", "")))
    st.caption(
        "Answer" + (f" — {row['answer_error']}" if pd.notna(row.get("answer_error")) else "")
    )
    st.text(str(row.get("response", "") if pd.notna(row.get("response")) else ""))
    index = frame.index[(frame["user_input"] == question) & (frame["variant"] == variant)][0]
    render_result(data.results[index], key=f"exp_drill_{run_id}", threshold=threshold, compact=True)
    compare(run_id, list(dict.fromkeys(frame["variant"])))


def compare(run_id: int, variants: list[str]) -> None:
    """Open Compare on two variants of the run (paired by question)."""
    if len(variants) < 2:
        return
    a, b, c = st.columns([2, 2, 1], vertical_alignment="bottom")
    first = a.selectbox("Compare A", variants, index=0, key="exp_cmp_a")
    second = b.selectbox("with B", variants, index=1, key="exp_cmp_b")
    if c.button("Open in Compare", key="exp_open_compare", icon="⚖️"):
        set_active_run(run_id)
        st.session_state.update(cmp_column="variant", cmp_a=first, cmp_b=second)
        st.switch_page("pages/4_Compare.py")
