"""The judge-check panel: run :func:`relevancy.scoring.judge.check_judge` for the sidebar's
models."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from relevancy.core.redact import redact
from relevancy.dashboard.views.claims import embedded_judge, judge_balance
from relevancy.dashboard.views.format import esc, fmt
from relevancy.dashboard.widgets.models import Settings, get_metric, judge_of
from relevancy.errors import RelevancyError
from relevancy.scoring.judge import (
    EMBEDDED_DEFAULT,
    KINDS,
    JudgeCheck,
    check_judge,
    judge_estimate,
    load_check_set,
)

__all__ = ["render_judge_panel"]


def render_judge_panel(settings: Settings) -> None:
    """Explain the check, run it on request (with progress), and show the last one."""
    st.markdown(
        "Before acting on scores, check the judge: the models in the sidebar score "
        f"{len(load_check_set())} questions "
        "shipped with the tool, each with a complete answer and a worse one (**partial**, "
        "**padded**, **drifting**, **evasive**). The figure is the share of pairs where the "
        f"complete answer scores higher. {judge_balance().text}; {embedded_judge().text}."
    )
    metric, check = judge_of(settings)
    label = (
        "Run the judge check again"
        if check
        else f"Run the judge check ({2 * len(load_check_set())} answers)"
    )
    if metric is not None:  # how long it should take, said before it starts
        st.caption(f"Estimate: {esc(judge_estimate(metric).describe())}.")
    if st.button(label, key="home_judge_run", icon="⚖️", disabled=metric is None):
        bar = st.progress(0.0, text="Scoring the check set…")
        try:
            check_judge(
                get_metric(settings),
                progress=lambda done, total: bar.progress(
                    done / total, text=f"Scored {done} of {total} answers"
                ),
            )
        except RelevancyError as exc:
            st.error(f"**The judge check failed.** {esc(redact(exc))}", icon="⛔")
            return
        st.session_state["home_judge_open"] = True
        st.rerun()  # the sidebar and every caption show the new check
    if metric is None:
        st.info("Set up the models in the sidebar (an API model needs its key) to check them.")
        return
    if check is None:
        st.caption(f"No check yet for {esc(settings.describe())}.")
        return
    _show(check)


def _show(check: JudgeCheck) -> None:
    m = st.columns(4)
    m[0].metric(
        "Agreement",
        fmt(check.agreement, 2),
        border=True,
        help=f"95% bootstrap CI {fmt(check.ci_low, 2)}-{fmt(check.ci_high, 2)} over the "
        f"{check.pairs} pairs; a tie or a pair with a NaN side counts one half.",
    )
    m[1].metric("Longer answer wins", fmt(check.baselines["longer answer wins"], 2), border=True)
    m[2].metric(
        "cos(question, answer)",
        fmt(check.baselines["cos(question, answer)"], 2),
        border=True,
        help="The plain cosine of question and answer, with the same embedder, on the same pairs.",
    )
    m[3].metric("Embedded default", fmt(EMBEDDED_DEFAULT["agreement"], 2), border=True)
    st.markdown(
        f"**{esc(check.summary().capitalize())}** (95% CI {fmt(check.ci_low, 2)}-"
        f"{fmt(check.ci_high, 2)}) · {esc(check.llm)} + {esc(check.embeddings)}, "
        f"{check.mode} mode · {esc(check.verdict())}"
    )
    st.caption("By kind: " + " · ".join(f"{k} {fmt(check.by_kind.get(k), 2)}" for k in KINDS) + ".")
    wrong = check.disagreements()
    if wrong:
        pairs = {p.id: p for p in load_check_set()}
        table = pd.DataFrame(
            {
                "pair": [o.id for o in wrong],
                "kind": [o.kind for o in wrong],
                "question": [pairs[o.id].user_input for o in wrong],
                "complete answer": [o.better_score for o in wrong],
                "worse answer": [o.worse_score for o in wrong],
                "what the worse one does": [pairs[o.id].note for o in wrong],
            }
        )
        st.markdown(f"**Pairs the judge got wrong or could not tell apart ({len(wrong)})**")
        st.dataframe(
            table,
            hide_index=True,
            key="home_judge_wrong",
            column_config={
                "complete answer": st.column_config.NumberColumn(format="%.3f"),
                "worse answer": st.column_config.NumberColumn(format="%.3f"),
            },
        )
