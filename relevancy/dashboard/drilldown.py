"""The per-answer explanation used by Home, Dataset, Embeddings and Compare.

For one result: the score and its verdict, the plain-language reasons a score is low, each
generated question beside its cosine similarity (a bar each), the mean worked out, the
noncommittal verdict with how it was reached, and the answer with each sentence shaded by its
similarity to the question. User text is always rendered as inert text.
"""

from __future__ import annotations

import html
import math
from typing import Any

import streamlit as st

from relevancy._result import RelevancyResult
from relevancy.dashboard import charts
from relevancy.dashboard.ui import esc, fmt, score_badge
from relevancy.explain import Analysis, aanalyze, explain, worked_mean

__all__ = ["render_result", "analysis_for"]

_ICONS = {"error": "⛔", "warning": "⚠️", "info": "💡"}


@st.cache_data(show_spinner=False, max_entries=512)
def _analysis(
    user_input: str, response: str, questions: tuple[str, ...], embedder_name: str, _embedder: Any
) -> Analysis:
    import asyncio

    from relevancy._result import QuestionScore

    result = RelevancyResult(
        user_input=user_input,
        response=response,
        value=0.0,
        questions=[QuestionScore(q, 0.0, None) for q in questions],
    )
    return asyncio.run(aanalyze(result, _embedder))


def analysis_for(result: RelevancyResult, embedder: Any | None) -> Analysis | None:
    """Sentence shading and question-part coverage (cached), or ``None`` without an embedder."""
    if embedder is None or not result.response.strip():
        return None
    questions = tuple(q.question for q in result.questions if q.similarity is not None)
    try:
        return _analysis(result.user_input, result.response, questions, embedder.name, embedder)
    except Exception as exc:  # an API embedder failing must not break the page
        from relevancy._redact import redact

        st.caption(f"Sentence shading unavailable: {redact(exc)}")
        return None


def render_result(
    result: RelevancyResult,
    *,
    key: str,
    threshold: float,
    embedder: Any | None = None,
    title: str | None = None,
    show_texts: bool = True,
    compact: bool = False,
    wide: bool = False,
) -> None:
    """Draw the full explanation of one result in the current container.

    ``key`` must be unique on the page (it prefixes the keys of the elements drawn here).
    ``wide`` puts the verdict and reasons on the left and the evidence (questions, shaded
    answer) on the right; ``compact`` stacks everything for narrow columns.
    """
    analysis = analysis_for(result, embedder)
    if title:
        st.markdown(f"##### {esc(title)}")
    if wide:
        left, right = st.columns([2, 3], gap="large")
    else:
        left = right = st.container()
    with left:
        _verdict(result, threshold=threshold, analysis=analysis, compact=compact or wide)
    with right:
        _evidence(
            result,
            key=key,
            analysis=analysis,
            embedder=embedder,
            show_texts=show_texts,
            label_chars=90 if wide else 48,
        )
    with left if wide else right:
        _details(result)


def _verdict(
    result: RelevancyResult, *, threshold: float, analysis: Analysis | None, compact: bool
) -> None:
    value = result.value
    scored = not math.isnan(value)
    low = scored and value < threshold
    top = [st.container(), st.container()] if compact else st.columns([1, 2])
    with top[0]:
        st.metric(
            "Score",
            fmt(value) if scored else "NaN",
            help="Mean cosine similarity between the user's question and the questions "
            "rebuilt from the answer; 0 when noncommittal.",
            border=True,
        )
    with top[1]:
        st.markdown(score_badge(value if scored else None, threshold), unsafe_allow_html=True)
        nc = "yes: score forced to 0" if result.noncommittal else "no"
        method = result.noncommittal_method or "n/a"
        st.markdown(f"**Noncommittal:** {nc} · _{esc(method)}_")
        if result.noncommittal_detail:
            st.caption(esc(result.noncommittal_detail))
        if result.answer_similarity is not None:
            st.caption(
                f"Plain cosine(answer, question): {fmt(result.answer_similarity)} "
                "(a cross-check that needs no generator)"
            )
    reasons = explain(result, threshold=threshold, analysis=analysis)
    if low or not scored:
        if not reasons:
            st.warning(
                "No single cause stands out: the generated questions are all only "
                "moderately close to the question.",
                icon="⚠️",
            )
        for r in reasons:
            box = {"error": st.error, "warning": st.warning, "info": st.info}[r.severity]
            box(f"**{esc(r.title)}**  \n{esc(r.detail)}", icon=_ICONS[r.severity])
    else:
        st.success(
            f"Relevant: the rebuilt questions stay close to the user's question "
            f"(score {fmt(value)} ≥ threshold {threshold:.2f}).",
            icon="✅",
        )
        for r in reasons:
            if r.severity == "info" or r.code == "unanswered_part":
                st.info(f"**{esc(r.title)}**  \n{esc(r.detail)}", icon="💡")


def _evidence(
    result: RelevancyResult,
    *,
    key: str,
    analysis: Analysis | None,
    embedder: Any | None,
    show_texts: bool,
    label_chars: int,
) -> None:
    if result.questions:
        st.markdown("**Generated questions and their similarity to the question**")
        st.plotly_chart(
            charts.question_bars(result, label_chars=label_chars),
            config={"displayModeBar": False},
            key=f"{key}_bars",
        )
        st.caption(f"Score = {esc(worked_mean(result))}")
    if show_texts:
        st.markdown("**Answer, shaded by each sentence's similarity to the question**")
        if analysis is not None and analysis.sentences:
            st.markdown(charts.sentence_shading_html(analysis.sentences), unsafe_allow_html=True)
            st.caption("Strong colour: close to the question. Pale: padding or off-topic detail.")
        else:
            st.text(result.response)
            if embedder is None and result.embeddings:
                st.caption(
                    f"Shading needs the embedder that scored this row ({esc(result.embeddings)}): "
                    "select it in the sidebar."
                )
    if analysis is not None and analysis.parts:
        parts = " · ".join(f"“{esc(p.part)}” {fmt(p.coverage, 2)}" for p in analysis.parts)
        st.caption(f"Question parts, best match in the answer: {parts}")


def _details(result: RelevancyResult) -> None:
    with st.expander("Details", expanded=False):
        gen_errors = [q.error for q in result.questions if q.error]
        lines = [
            f"- **Generator:** {esc(result.llm or '?')}",
            f"- **Embeddings:** {esc(result.embeddings or '?')} · **Strictness:** "
            f"{result.strictness}",
            f"- **Time:** {fmt(result.timings.get('total_s', float('nan')), 2)} s"
            + (" (from cache)" if result.cached else ""),
        ]
        if result.error:
            lines.append(f"- **Error:** {esc(result.error)}")
        if gen_errors:
            lines.append(f"- **Unusable generations:** {esc('; '.join(gen_errors))}")
        for note in result.notes:
            lines.append(f"- {esc(note)}")
        st.markdown("\n".join(lines))


def texts_html(text: str) -> str:
    """Escaped text for small HTML blocks."""
    return html.escape(text).replace("\n", "<br>")
