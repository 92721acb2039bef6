"""The per-answer explanation used by Home, Dataset, Embeddings and Compare.

It draws a :class:`relevancy.analysis.explain.Explanation` and computes nothing itself: the score,
its mode and verdict, the reasons a score is low, each generated question with its similarity (a bar
each) and the mean worked out, the noncommittal verdict, and the answer sentence by sentence (in
every mode; for a focus score also what each sentence does to it, for a blend score which sentences
answer nothing asked). User text is always rendered as inert text.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pandas as pd
import streamlit as st

from relevancy.analysis.chance import ChanceLevel
from relevancy.analysis.explain import Analysis, Explanation, aanalyze, explain_result
from relevancy.core.redact import redact
from relevancy.core.result import QuestionScore, RelevancyResult
from relevancy.core.triage import REASONS, incomplete_text
from relevancy.dashboard.views import reference
from relevancy.dashboard.views import sentence_table as sentence_html
from relevancy.dashboard.views.format import MODE_SHORT, cell_text, esc, fmt, score_badge
from relevancy.dashboard.widgets import labels
from relevancy.dashboard.widgets.stability_panel import draw_band
from relevancy.dashboard.widgets.state import get_store

__all__ = ["render_result", "render_row", "analysis_for", "sentence_table"]

_ICONS = {"error": "⛔", "warning": "⚠️", "info": "💡"}
_COLUMN_HELP = {
    "similarity": "Cosine similarity between the sentence and the user's question.",
    "in context": "The sentence's similarity mixed with its neighbours': what the focus score "
    "averages.",
    "without it": "How the focus score would change if this sentence were left out: positive "
    "means the sentence lowers the score.",
    "part similarity": "The sentence's best similarity to a part of the multi-part question: a "
    "sentence far from the question and from every part answers nothing asked.",
}


@st.cache_data(show_spinner=False, max_entries=512)
def _analysis(
    user_input: str, response: str, questions: tuple[str, ...], embedder_name: str, _embedder: Any
) -> Analysis:
    result = RelevancyResult(
        user_input=user_input,
        response=response,
        value=0.0,
        questions=[QuestionScore(q, 0.0, None) for q in questions],
    )
    return asyncio.run(aanalyze(result, _embedder))


def analysis_for(result: RelevancyResult, embedder: Any | None) -> Analysis | None:
    """Sentence similarities and question-part coverage (cached), or None without an embedder."""
    if embedder is None or not result.response.strip():
        return None
    questions = tuple(q.question for q in result.questions if q.similarity is not None)
    try:
        return _analysis(result.user_input, result.response, questions, embedder.name, embedder)
    except Exception as exc:  # an API embedder failing must not break the page
        st.caption(f"Sentence view unavailable: {esc(redact(exc))}")
        return None


def sentence_table(explanation: Explanation) -> pd.DataFrame:
    """The explanation's sentences as a table: ``#``, ``similarity``, the focus columns when the
    score was made of them (``in context``, extra part keys, ``without it``), ``note`` and
    ``sentence``."""
    rows = explanation.sentences
    table: dict[str, list[Any]] = {
        "#": [s.index for s in rows],
        "similarity": [s.similarity for s in rows],
    }
    if explanation.sentence_source == "score":
        if any(s.in_context == s.in_context for s in rows):  # focus only (NaN otherwise)
            table["in context"] = [s.in_context for s in rows]
        for key in dict.fromkeys(k for s in rows for k in s.extra):
            label = key.replace("_", " ")
            if label in table or label in ("without it", "note", "sentence"):
                label = f"{label} (part)"
            table[label] = [s.extra.get(key, "") for s in rows]
        table["without it"] = [s.without_it for s in rows]
    table["note"] = [s.note for s in rows]
    table["sentence"] = [s.text for s in rows]
    return pd.DataFrame(table)


def render_result(
    result: RelevancyResult,
    *,
    key: str,
    threshold: float,
    embedder: Any | None = None,
    title: str | None = None,
    compact: bool = False,
    wide: bool = False,
    min_questions: int | None = None,
) -> None:
    """Draw the full explanation of one result in the current container.

    ``key`` must be unique on the page (it prefixes the keys of the elements drawn here).
    ``wide`` puts the verdict and reasons on the left and the evidence (sentences, questions)
    on the right; ``compact`` stacks everything for narrow columns. ``min_questions``: the
    run's (no verdict rests on fewer usable questions; default all).
    """
    explanation = explain_result(
        result,
        threshold=threshold,
        analysis=analysis_for(result, embedder),
        min_questions=min_questions,
    )
    if title:
        st.markdown(f"##### {esc(title)}")
    if wide:
        left, right = st.columns([2, 3], gap="large")
    else:
        left = right = st.container()
    with left:
        _verdict(explanation, compact=compact or wide)
    with right:
        _evidence(explanation, key=key, embedder=embedder)
    with left if wide else right:
        _details(result, languages=explanation.languages_line)


def render_row(
    result: RelevancyResult,
    row: int,
    meta: dict[str, object],
    *,
    key: str,
    threshold: float,
    embedder: Any | None,
    band: pd.Series | None = None,
    run_id: int | None = None,
    chance: ChanceLevel | None = None,
    min_questions: int | None = None,
) -> None:
    """One row of a run in a bordered box: its number and columns, the question, the
    explanation (wide). With ``band`` (its re-scorings), the row's stability band; with
    ``run_id``, the row's human label can be set; ``chance`` (the run's chance level) says
    where the score sits against unrelated pairs. ``min_questions``: the run's (by default
    read from run ``run_id``'s settings; else all)."""
    if min_questions is None and run_id is not None:
        min_questions = get_store().get_run(run_id).settings.get("min_questions")
    with st.container(border=True):
        # a missing cell is "—" on every page (it was "nan" on one and "None" on another)
        shown = [f"{esc(name)}: {esc(cell_text(value))}" for name, value in meta.items()]
        st.caption(" · ".join([f"row {int(row) + 1}", *shown]))  # 1-based, as in the CLI
        if run_id is not None:
            labels.label_control(run_id, row, key=key)
        st.markdown("**Question**")
        st.text(result.user_input)
        for severity, text in reference.row_notes(result, chance):
            (st.warning(text, icon="⚠️") if severity == "warning" else st.caption(text))
        if band is not None:
            draw_band(band, result.value, key=key)
        render_result(
            result,
            key=key,
            threshold=threshold,
            embedder=embedder,
            wide=True,
            min_questions=min_questions,
        )


def _verdict(e: Explanation, *, compact: bool) -> None:
    result = e.result
    top = [st.container(), st.container()] if compact else st.columns([1, 2])
    with top[0]:
        st.metric(
            "Score",
            fmt(result.value) if e.scored else "failed",
            help=f"{result.mode} mode: {MODE_SHORT.get(result.mode, result.mode)}; 0 when "
            "noncommittal.",
            border=True,
        )
    with top[1]:
        st.markdown(
            score_badge(
                result.value if e.scored else None,
                e.threshold,
                used=result.questions_used,
                asked=result.strictness,
                min_questions=e.min_questions,
            ),
            unsafe_allow_html=True,
        )
        if result.mode == "ragas":
            st.markdown("**Mode:** ragas · the Ragas Answer Relevancy, exactly")
        else:
            st.markdown(
                f"**Mode:** {esc(result.mode)} · **Ragas value:** {fmt(result.ragas_value)}",
                help="The Ragas Answer Relevancy from the same generated questions: comparable "
                "with runs scored in ragas mode.",
            )
        main = e.triage.reason
        said = REASONS.get(main, "")
        head, _, rest = said.partition(": ")
        if rest and head.replace(" ", "_") == main:  # "noncommittal · noncommittal: ..." once
            said = rest
        if main == "ok":  # "complete" only where each part was checked and found
            said = f"{said}; {e.completeness}"
        st.markdown(
            f"**Main reason:** {main} · {esc(said)}",
            help="The one main reason per row (the grid's reason column), decided from the "
            "evidence on this page at the threshold set in the sidebar; the others that apply "
            "are listed beside it.",
        )
        if e.secondary:
            st.markdown(
                f"**Also:** {' · '.join(e.secondary)}",
                help="The other reasons that apply (the grid's flags column; filter on them "
                "with 'Also flagged').",
            )
        if e.stored_reason_differs:
            st.caption(
                f"The grid files this row under {esc(result.reason)}: decided when it was "
                "scored (by an older version, or at another threshold than the sidebar's)."
            )
        nc = "yes: score forced to 0" if result.noncommittal else "no"
        if not result.noncommittal and main == "evasive":
            nc = f"the detector says no (score not forced to 0), the answer says “{esc(e.evasion)}”"
        st.markdown(f"**Noncommittal:** {nc} · _{esc(result.noncommittal_method or 'n/a')}_")
        if result.noncommittal_detail:
            st.caption(esc(result.noncommittal_detail))
        if result.answer_similarity is not None:
            st.caption(
                f"Plain cosine(answer, question): {fmt(result.answer_similarity)} "
                "(a cross-check that needs no generator)"
            )
    if e.verdict == "incomplete":  # whatever the main reason and either side of the threshold
        also = e.triage.reason
        also = "" if also == "incomplete_generation" else f"; also {REASONS[also].split(':')[0]}"
        side = "<" if e.low else "≥"
        st.warning(
            f"Not a verdict: {incomplete_text(result)} (score {fmt(result.value)} {side} "
            f"threshold {e.threshold:.2f}): the score rests on fewer questions than asked{also}.",
            icon="⚠️",
        )
        for r in e.reasons:
            box = {"error": st.error, "warning": st.warning, "info": st.info}[r.severity]
            box(f"**{esc(r.title)}**  \n{esc(r.detail)}", icon=_ICONS[r.severity])
        return
    if e.low or not e.scored:
        if not e.reasons:
            st.warning(
                "No single cause stands out: the generated questions are all only moderately "
                "close to the question.",
                icon="⚠️",
            )
        for r in e.reasons:
            box = {"error": st.error, "warning": st.warning, "info": st.info}[r.severity]
            box(f"**{esc(r.title)}**  \n{esc(r.detail)}", icon=_ICONS[r.severity])
        return
    how = {
        "focus": "the answer's sentences stay on the user's question",
        "blend": "the answer and the questions rebuilt from it stay close to the user's question",
    }.get(result.mode, "the rebuilt questions stay close to the user's question")
    if e.triage.reason == "ok" and e.verdict == "relevant":
        st.success(
            f"Relevant: {how} (score {fmt(result.value)} ≥ threshold {e.threshold:.2f}); "
            f"{esc(e.completeness)}.",
            icon="✅",
        )
    else:  # above the threshold, but not clean: say why first (a partial answer can pass)
        st.warning(
            f"Above the threshold ({fmt(result.value)} ≥ {e.threshold:.2f}), but "
            f"{REASONS[e.triage.reason].split(':')[0]}: read the reasons below.",
            icon="⚠️",
        )
    for r in e.reasons:
        box = st.warning if r.severity != "info" else st.info
        box(
            f"**{esc(r.title)}**  \n{esc(r.detail)}",
            icon=_ICONS[r.severity] if r.severity != "error" else "⚠️",
        )


def _evidence(e: Explanation, *, key: str, embedder: Any | None) -> None:
    result = e.result
    focus = e.sentence_source == "score"
    if focus:
        _sentences(
            e, f"**The answer, sentence by sentence: what the {result.mode} score is made of**"
        )
    if result.questions:
        st.markdown(
            "**Generated questions and their similarity to the question**"
            + (" (they give the Ragas value)" if focus else "")
        )
        st.markdown(sentence_html.question_bars_html(result.questions), unsafe_allow_html=True)
        name = "Score" if result.mode == "ragas" else "Ragas value"
        st.caption(f"{name} = {esc(e.worked_ragas)}")
    if not focus:
        if e.sentences:
            _sentences(e, "**The answer, sentence by sentence: how close each is to the question**")
        else:
            st.markdown("**Answer**")
            if not str(result.response or "").strip():
                st.caption("The answer is empty: there is nothing to show.")
            else:
                st.text(result.response)
            if embedder is None and result.embeddings and str(result.response or "").strip():
                st.caption(
                    f"The sentence view needs the embedder that scored this row "
                    f"({esc(result.embeddings)}): select it in the sidebar."
                )
    if e.parts:
        state = {c.part: c.state for c in e.part_checks}
        parts = " · ".join(
            f"“{esc(p.part)}” {fmt(p.coverage, 2)}"
            + (f" (the answer gives {esc(', '.join(p.found[:4]))})" if p.found else "")
            + (f": {state[p.part]}" if p.part in state else "")
            for p in e.parts
        )
        st.caption(f"Question parts, best match in the answer: {parts}")


def _sentences(e: Explanation, title: str) -> None:
    table = sentence_table(e)
    if table.empty:
        return
    st.markdown(title)
    if "without it" in table and table["without it"].isna().all():
        table = table.drop(columns=["without it"])
    evasive = e.result.noncommittal  # its sentences' closeness is not relevance: no green
    st.markdown(
        sentence_html.sentence_table_html(table, help=_COLUMN_HELP, neutral=evasive),
        unsafe_allow_html=True,
    )
    legend = "Similarity: to the user's question (green close, red far)." + (
        " Without it: how the score would change if the sentence were left out."
        if "without it" in table
        else ""
    )
    verdict = e.sentence_verdict + " "
    if e.sentence_source == "result":
        legend += " An explanation only: the score does not use these sentences."
    if evasive:
        legend += (
            " Not shaded: the answer was judged noncommittal, and an evasion that repeats the "
            "question sits close to it without answering."
        )
    st.caption(verdict + legend)
    if e.worked_score:
        st.caption(f"Score = {e.worked_score}")  # numbers only: no user text


def row_usage(result: RelevancyResult) -> str:
    """``"312 in + 41 out (generation, from cache: not billed), 58 embedded"``."""
    u = result.usage or {}
    if not u:
        return "not recorded"
    gen = f"{u.get('prompt_tokens', 0):,} in + {u.get('completion_tokens', 0):,} out (generation"
    gen += ", from cache: not billed)" if result.cached else ")"
    emb = u.get("embedding_tokens")
    return gen + (f", {emb:,} embedded" if emb is not None else "")


def _details(result: RelevancyResult, *, languages: str = "") -> None:
    if languages:  # question, answer, generated questions: see relevancy.core.language
        mark = "⚠️ " if "another language than the question" in languages else ""
        st.caption(f"{mark}Languages: {esc(languages)}")
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
            f"- **Tokens:** {row_usage(result)}",
        ]
        if result.error:
            lines.append(f"- **Error:** {esc(result.error)}")
        if gen_errors:
            lines.append(f"- **Unusable generations:** {esc('; '.join(gen_errors))}")
        for note in result.notes:
            lines.append(f"- {esc(note)}")
        st.markdown("\n".join(lines))
