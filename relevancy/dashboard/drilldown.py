"""The per-answer explanation used by Home, Dataset, Embeddings and Compare.

For one result: the score, its mode and its verdict, the plain-language reasons a score is low,
each generated question beside its cosine similarity (a bar each), the mean worked out, the
noncommittal verdict with how it was reached, and the answer with each sentence shaded by its
similarity to the question. A focus-mode result also gets a table of the sentences its score was
made of: each one's similarity to the question and what leaving it out would change. User text
is always rendered as inert text.
"""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd
import streamlit as st

from relevancy._result import RelevancyResult
from relevancy.dashboard import charts
from relevancy.dashboard.ui import MODE_SHORT, esc, fmt, score_badge
from relevancy.explain import (
    SENTENCE_LOW,
    Analysis,
    aanalyze,
    explain,
    focus_sentences,
    sentence_effects,
    worked_focus,
    worked_mean,
)

__all__ = ["render_result", "analysis_for", "sentence_table"]

_ICONS = {"error": "⛔", "warning": "⚠️", "info": "💡"}
#: a sentence whose removal would raise the focus score by more than this "lowers the score"
PULLS_DOWN = 0.01
#: column names for known keys of a focus part (others are shown under their own name)
_PART_LABELS = {"context_similarity": "in context"}
_COLUMN_HELP = {
    "similarity": "Cosine similarity between the sentence and the user's question.",
    "in context": "The sentence's similarity mixed with its neighbours': what the focus score "
    "averages.",
    "without it": "How the focus score would change if this sentence were left out: positive "
    "means the sentence lowers the score.",
}


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
    sentences = focus_sentences(result) if result.mode == "focus" else []
    if sentences:
        # explain and shade with the sentences the score was made of, not a second split
        analysis = Analysis(sentences=sentences, parts=analysis.parts if analysis else [])
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
            focus=bool(sentences),
        )
    with left if wide else right:
        _details(result)


def _verdict(
    result: RelevancyResult, *, threshold: float, analysis: Analysis | None, compact: bool
) -> None:
    value = result.value
    scored = not math.isnan(value)
    low = scored and value < threshold
    focus = result.mode == "focus"
    top = [st.container(), st.container()] if compact else st.columns([1, 2])
    with top[0]:
        st.metric(
            "Score",
            fmt(value) if scored else "NaN",
            help=f"{result.mode} mode: {MODE_SHORT.get(result.mode, result.mode)}; 0 when "
            "noncommittal.",
            border=True,
        )
    with top[1]:
        st.markdown(score_badge(value if scored else None, threshold), unsafe_allow_html=True)
        if result.mode == "ragas":
            st.markdown("**Mode:** ragas · the Ragas Answer Relevancy, exactly")
        else:
            st.markdown(
                f"**Mode:** {esc(result.mode)} · **Ragas value:** {fmt(result.ragas_value)}",
                help="The Ragas Answer Relevancy from the same generated questions: comparable "
                "with runs scored in ragas mode.",
            )
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
                "No single cause stands out: the answer's sentences and the generated "
                "questions are all only moderately close to the question."
                if focus
                else "No single cause stands out: the generated questions are all only "
                "moderately close to the question.",
                icon="⚠️",
            )
        for r in reasons:
            box = {"error": st.error, "warning": st.warning, "info": st.info}[r.severity]
            box(f"**{esc(r.title)}**  \n{esc(r.detail)}", icon=_ICONS[r.severity])
    else:
        how = (
            "the answer's sentences stay on the user's question"
            if focus
            else "the rebuilt questions stay close to the user's question"
        )
        st.success(
            f"Relevant: {how} (score {fmt(value)} ≥ threshold {threshold:.2f}).",
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
    focus: bool = False,
) -> None:
    if focus:
        _focus_sentences(result)
    if result.questions:
        st.markdown(
            "**Generated questions and their similarity to the question**"
            + (" (they give the Ragas value)" if focus else "")
        )
        st.plotly_chart(
            charts.question_bars(result, label_chars=label_chars),
            config={"displayModeBar": False},
            key=f"{key}_bars",
        )
        name = "Score" if result.mode == "ragas" else "Ragas value"
        st.caption(f"{name} = {esc(worked_mean(result))}")
    if show_texts and not focus:
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


def sentence_table(result: RelevancyResult) -> pd.DataFrame:
    """One row per sentence of a focus result: its numbers, a note, and its text.

    Columns: ``#``, ``similarity`` (to the user's question), one column per other key of the
    parts (``context_similarity`` as ``in context``), ``without it`` (how the score would
    change if the sentence were left out; NaN when that cannot be worked out), ``note``
    (``off topic`` and/or ``lowers the score``) and ``sentence``.
    """
    parts = [p for p in result.parts if isinstance(p, dict) and "text" in p]
    sentences = focus_sentences(result)
    effects = sentence_effects(result)
    table: dict[str, list[object]] = {
        "#": list(range(1, len(sentences) + 1)),
        "similarity": [s.similarity for s in sentences],
    }
    extra = [
        k for k in dict.fromkeys(k for p in parts for k in p) if k not in ("text", "similarity")
    ]
    for k in extra:
        values = [p.get(k) for p in parts]
        numeric = all(v is None or isinstance(v, (int, float)) for v in values)
        label = _PART_LABELS.get(k, k.replace("_", " "))
        if label in table or label in ("without it", "note", "sentence"):
            label = f"{label} (part)"
        table[label] = (
            [math.nan if v is None else float(v) for v in values]
            if numeric
            else ["" if v is None else str(v) for v in values]
        )
    table["without it"] = effects
    notes = []
    for s, e in zip(sentences, effects):
        flags = (["off topic"] if s.similarity < SENTENCE_LOW else []) + (
            ["lowers the score"] if e > PULLS_DOWN else []
        )
        notes.append(", ".join(flags))
    table["note"] = notes
    table["sentence"] = [s.text for s in sentences]
    return pd.DataFrame(table)


def _focus_sentences(result: RelevancyResult) -> None:
    table = sentence_table(result)
    if table.empty:
        return
    st.markdown("**The answer, sentence by sentence: what the focus score is made of**")
    low = int((table["similarity"] < SENTENCE_LOW).sum())
    lowers = int(table["note"].str.contains("lowers").sum())
    if table["without it"].isna().all():
        table = table.drop(columns=["without it"])
    st.markdown(charts.sentence_table_html(table, help=_COLUMN_HELP), unsafe_allow_html=True)
    found = ([f"{low} off topic (similarity below {SENTENCE_LOW})"] if low else []) + (
        [
            f"{lowers} {'lowers' if lowers == 1 else 'lower'} the score (it would rise "
            f"without {'it' if lowers == 1 else 'them'})"
        ]
        if lowers
        else []
    )
    legend = "Similarity: to the user's question (green close, red far)." + (
        " Without it: how the score would change if the sentence were left out."
        if "without it" in table
        else ""
    )
    if len(table) == 1:
        verdict = "The answer is one sentence" + (": off topic. " if low else ". ")
    elif found:
        verdict = f"Of {len(table)} sentences: {'; '.join(found)}. "
    else:
        verdict = f"None of the {len(table)} sentences is off topic or lowers the score. "
    st.caption(verdict + legend)
    worked = worked_focus(result)
    if worked:
        st.caption(f"Score = {worked}")  # numbers only: no user text


def _details(result: RelevancyResult) -> None:
    with st.expander("Details", expanded=False):
        gen_errors = [q.error for q in result.questions if q.error]
        lines = [
            f"- **Generator:** {esc(result.llm or '?')}",
            f"- **Embeddings:** {esc(result.embeddings or '?')} · **Strictness:** "
            f"{result.strictness}",
            f"- **Mode:** {esc(result.mode)}"
            + ("" if result.mode == "ragas" else f" · **Ragas value:** {fmt(result.ragas_value)}"),
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
