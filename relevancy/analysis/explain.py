"""Why a score is what it is, in words: one :class:`Explanation` per result.

:func:`explain_result` gathers everything the drill-down, the report and the CLI show about one
row: the main reason and the other flags (decided at scoring time by
:func:`relevancy.core.triage.triage`, which lists them), plain-language causes of a low score,
the answer sentence by sentence (each one's similarity to the question, and in ``"focus"`` and
``"blend"`` modes what the score made of it), how well each part of a multi-part question is
covered, and the arithmetic of the score. Everything comes from numbers the metric produced, or
from the same embedder (:func:`aanalyze`) for results scored before every row carried them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from relevancy.core.formula import cosine_similarities
from relevancy.core.language import describe_languages, language_name, row_languages
from relevancy.core.modes import (
    BlendBreakdown,
    FocusBreakdown,
    blend_breakdown,
    focus_breakdown,
    off_question,
)
from relevancy.core.result import RelevancyResult
from relevancy.core.text import (
    split_clauses,
    split_question_parts,
    split_sentences,
)
from relevancy.core.triage import (
    DRIFT_BELOW,
    OFF_TOPIC_BELOW,
    ON_TOPIC_ABOVE,
    PART_GAP,
    PART_LOW,
    SENTENCE_LOW,
    SPREAD_ABOVE,
    SentenceScore,
    Triage,
    as_float,
    question_hygiene,
    sentence_similarities,
    sentences_from_parts,
    triage,
)

if TYPE_CHECKING:  # pragma: no cover
    from relevancy.backends import Embedder

__all__ = [
    "Reason",
    "SentenceRow",
    "PartCoverage",
    "Analysis",
    "Explanation",
    "aanalyze",
    "analyze",
    "explain",
    "explain_result",
    "worked_mean",
    "focus_of",
    "blend_of",
    "PULLS_DOWN",
]

#: a sentence whose removal would raise a focus score by more than this "lowers the score"
PULLS_DOWN = 0.01


@dataclass(frozen=True)
class Reason:
    """One cause of a low score, in plain language."""

    code: str
    title: str
    detail: str
    severity: str = "warning"  #: "error", "warning" or "info"


@dataclass(frozen=True)
class PartCoverage:
    """How well one part of a multi-part question is covered by the answer's sentences."""

    part: str
    coverage: float  #: best cosine between the part and any sentence or clause of the answer
    by_questions: float  #: best cosine between the part and any rebuilt question (NaN if none)


@dataclass
class Analysis:
    """Embedding-based details for one result (computed with the metric's embedder)."""

    sentences: list[SentenceScore] = field(default_factory=list)
    parts: list[PartCoverage] = field(default_factory=list)


@dataclass(frozen=True)
class SentenceRow:
    """One sentence of the answer in the explanation's sentence table."""

    index: int  #: 1-based
    text: str
    similarity: float  #: to the user's question
    in_context: float = math.nan  #: focus only: with the neighbours mixed in
    without_it: float = math.nan  #: focus only: score change if left out (+: it lowers it)
    extra: dict[str, Any] = field(default_factory=dict)  #: other keys of a scored part

    @property
    def off_topic(self) -> bool:
        """Far from the question, and (where the row has them) from each of its parts."""
        by_part = as_float(self.extra.get("part_similarity"))
        if math.isnan(by_part):
            return self.similarity < SENTENCE_LOW
        return off_question([self.similarity], [by_part])[0]

    @property
    def lowers_score(self) -> bool:
        return self.without_it > PULLS_DOWN

    @property
    def note(self) -> str:
        """``"off topic"``, ``"lowers the score"``, both, or ``""``."""
        flags = ["off topic"] * self.off_topic + ["lowers the score"] * self.lowers_score
        return ", ".join(flags)


@dataclass(frozen=True)
class Explanation:
    """Everything that explains one result, ready to draw (no Streamlit, no HTML)."""

    result: RelevancyResult
    threshold: float
    reasons: list[Reason]
    sentences: list[SentenceRow]
    #: ``"score"`` (a focus or blend score's own sentences), ``"result"`` (the sentences every
    #: result carries: an explanation, not what the score is made of) or ``""`` (none: an old
    #: result and no embedder at hand)
    sentence_source: str
    parts: list[PartCoverage]
    worked_ragas: str  #: e.g. ``(0.812 + 0.771 + 0.690) / 3 = 0.758``
    worked_focus: str | None  #: the focus arithmetic, or None (not a focus score, or unknown)
    worked_blend: str | None = None  #: the blend arithmetic, or None (not blend, or unknown)
    #: the row's languages (as recorded, else detected now: see relevancy.core.language)
    languages: dict[str, Any] = field(default_factory=dict)

    @property
    def languages_line(self) -> str:
        """``question in French, answer in French; generated questions in English (3 of 3 in
        another language than the question)``; empty when unknown."""
        return describe_languages(self.languages)

    @property
    def worked_score(self) -> str | None:
        """The arithmetic of a focus or blend score (None for a Ragas value: see
        ``worked_ragas``)."""
        return self.worked_focus or self.worked_blend

    @property
    def scored(self) -> bool:
        return self.result.ok

    @property
    def triage(self) -> Triage:
        """The row's main reason and flags (as stored, or worked out for an older result)."""
        r = self.result
        if not r.reason:
            return triage(r)
        if r.reason == "ok" and r.questions_used < r.strictness:  # scored before the flag was
            return Triage("incomplete_generation", (*r.flags, "incomplete_generation"))
        return Triage(r.reason, tuple(r.flags))

    @property
    def low(self) -> bool:
        return self.scored and self.result.value < self.threshold

    @property
    def off_topic_sentences(self) -> list[SentenceRow]:
        return [s for s in self.sentences if s.off_topic]


async def aanalyze(result: RelevancyResult, embedder: Embedder) -> Analysis:
    """Sentence similarities and question-part coverage for ``result``, with one embedding call.

    ``embedder`` follows the :class:`relevancy.backends.Embedder` protocol (``aembed``); use the
    one that scored the result so the numbers are comparable with the score. Connections an
    API embedder opened in the running event loop are closed before returning.
    """
    try:
        return await _analyze(result, embedder)
    finally:
        await embedder.aclose()  # API embedders: close this loop's connections


async def _analyze(result: RelevancyResult, embedder: Embedder) -> Analysis:
    sentences = split_sentences(result.response)
    parts = split_question_parts(result.user_input)
    if len(parts) < 2:
        parts = []
    questions = [q.question for q in result.questions if q.similarity is not None]
    clauses = [c for s in sentences for c in split_clauses(s) if c != s] if parts else []
    if not sentences:
        return Analysis()
    texts = [result.user_input, *sentences, *clauses, *parts, *questions]
    vectors = np.asarray(await embedder.aembed(texts), dtype=np.float32)
    q_vec = vectors[0]
    n_s, n_c, n_p = len(sentences), len(clauses), len(parts)
    s_vecs = vectors[1 : 1 + n_s]
    c_vecs = vectors[1 : 1 + n_s + n_c]  # sentences and their clauses
    p_vecs = vectors[1 + n_s + n_c : 1 + n_s + n_c + n_p]
    g_vecs = vectors[1 + n_s + n_c + n_p :]
    sims = cosine_similarities(s_vecs, q_vec)
    scored = [SentenceScore(s, float(v)) for s, v in zip(sentences, sims)]
    coverage: list[PartCoverage] = []
    for part, p_vec in zip(parts, p_vecs):
        by_sent = float(cosine_similarities(c_vecs, p_vec).max())
        by_q = float(cosine_similarities(g_vecs, p_vec).max()) if len(g_vecs) else math.nan
        coverage.append(PartCoverage(part, by_sent, by_q))
    return Analysis(scored, coverage)


def analyze(result: RelevancyResult, embedder: Embedder) -> Analysis:
    """Blocking :func:`aanalyze`."""
    return asyncio.run(aanalyze(result, embedder))


def worked_mean(result: RelevancyResult) -> str:
    """The arithmetic behind the Ragas value, e.g. ``(0.812 + 0.771 + 0.690) / 3 = 0.758``."""
    sims = result.similarities
    if not sims:
        return "no usable generated question: the score is not defined (NaN)"
    mean = sum(sims) / len(sims)
    text = f"({' + '.join(f'{s:.3f}' for s in sims)}) / {len(sims)} = {mean:.3f}"
    if result.noncommittal:
        return f"0 (noncommittal); without that rule {text}"
    return text


def focus_of(result: RelevancyResult) -> FocusBreakdown | None:
    """The focus breakdown that gives back ``result.value``, or None (not focus, or unknown).

    ``parts`` may come from an old or foreign file: when the focus formula on them does not
    reproduce the stored score, nothing is claimed about it.
    """
    if result.mode != "focus" or not result.ok or math.isnan(result.ragas_value):
        return None
    sims = [s.similarity for s in sentences_from_parts(result.parts)]
    if not sims or any(math.isnan(s) for s in sims):
        return None
    breakdown = focus_breakdown(sims, result.ragas_value, noncommittal=result.noncommittal)
    if not math.isclose(breakdown.value, result.value, abs_tol=5e-4):
        return None
    return breakdown


def _worked_focus(b: FocusBreakdown, result: RelevancyResult) -> str:
    w = b.weight
    if len(b.similarities) == 1:
        view = f"{b.mean:.3f} (the sentence's similarity)"
    else:
        view = (
            f"({b.mean:.3f} mean − {b.spread:.3f} spread of the sentences' similarities in context)"
        )
    if not b.noncommittal:
        return (
            f"{1 - w:.2g} × {view} + {w:.2g} × {b.ragas_value:.3f} Ragas value = "
            f"{b.before_zeroing:.3f}"
        )
    # the Ragas value of a noncommittal answer is 0 too: show the rule, then what it replaced
    sims = result.similarities
    questions = sum(sims) / len(sims) if sims else math.nan
    before = (1 - w) * (b.mean - b.spread) + w * questions
    return (
        f"0 (noncommittal); without that rule {1 - w:.2g} × {view} + {w:.2g} × {questions:.3f} "
        f"questions' mean = {before:.3f}"
    )


def _part_similarities(result: RelevancyResult) -> list[float] | None:
    """Each sentence's stored best similarity to a question part (None: not stored)."""
    parts = [p for p in result.parts if isinstance(p, dict) and "text" in p]
    if not parts or not all("part_similarity" in p for p in parts):
        return None
    return [as_float(p["part_similarity"]) for p in parts]


def blend_of(result: RelevancyResult) -> BlendBreakdown | None:
    """The blend breakdown that gives back ``result.value``, or None (not blend, or unknown:
    stored numbers that do not reproduce the score are not explained with it)."""
    if result.mode != "blend" or not result.ok or math.isnan(result.ragas_value):
        return None
    sims = [s.similarity for s in sentences_from_parts(result.parts)]
    answer = as_float(result.answer_similarity)
    if not sims or any(math.isnan(s) for s in sims) or math.isnan(answer):
        return None
    off = off_question(sims, _part_similarities(result))
    breakdown = blend_breakdown(answer, off, result.ragas_value, noncommittal=result.noncommittal)
    if not math.isclose(breakdown.value, result.value, abs_tol=5e-4):
        return None
    return breakdown


def _worked_blend(b: BlendBreakdown, result: RelevancyResult) -> str:
    w, p = b.weight, b.off_weight
    own = (
        f"({b.answer_similarity:.3f} answer's similarity − {p:.2g} × {b.off}/{b.sentences} "
        "sentences answering nothing asked)"
    )
    if not b.noncommittal:
        return f"{1 - w:.2g} × {own} + {w:.2g} × {b.ragas_value:.3f} Ragas value = {b.value:.3f}"
    sims = result.similarities
    questions = sum(sims) / len(sims) if sims else math.nan
    before = (1 - w) * (b.answer_similarity - p * b.off_share) + w * questions
    return (
        f"0 (noncommittal); without that rule {1 - w:.2g} × {own} + {w:.2g} × {questions:.3f} "
        f"questions' mean = {before:.3f}"
    )


def _focus_rows(result: RelevancyResult, b: FocusBreakdown | None) -> list[SentenceRow]:
    """A focus or blend score's own sentences; "without it" only for a focus score whose
    breakdown reproduces it."""
    parts = [p for p in result.parts if isinstance(p, dict) and "text" in p]
    scores = sentences_from_parts(parts)
    effects = [math.nan] * len(scores)
    if b is not None and len(scores) > 1 and not result.noncommittal:
        effects = [b.without(j) - result.value for j in range(len(scores))]
    rows = []
    for j, (part, s, effect) in enumerate(zip(parts, scores, effects)):
        extra = {k: v for k, v in part.items() if k not in ("text", "similarity")}
        context = extra.pop("context_similarity", math.nan)
        rows.append(
            SentenceRow(j + 1, s.text, s.similarity, as_float(context), effect, extra)  # fmt: skip
        )
    return rows


def _enriched(result: RelevancyResult, analysis: Analysis | None) -> RelevancyResult:
    """``result`` with the sentence view and part coverage of ``analysis`` where it lacks them
    (results scored before every row carried them)."""
    if analysis is None or (result.parts and result.question_parts):
        return result
    return dataclasses.replace(
        result,
        parts=result.parts
        or [{"text": s.text, "similarity": s.similarity} for s in analysis.sentences],
        question_parts=result.question_parts
        or [{"part": p.part, "coverage": p.coverage} for p in analysis.parts],
    )


def explain_result(
    result: RelevancyResult, *, threshold: float = 0.5, analysis: Analysis | None = None
) -> Explanation:
    """The whole explanation of ``result``: its main reason and the others, the sentence view,
    the coverage of a multi-part question, and the arithmetic.

    A result scored by this version carries its sentences and part coverage; ``analysis``
    (from :func:`aanalyze` with the embedder that scored the row) fills them in for older ones.
    """
    result = _enriched(result, analysis)
    breakdown = focus_of(result)
    blend = blend_of(result)
    scored_sentences = sentences_from_parts(result.parts)
    if result.mode in ("focus", "blend") and scored_sentences:
        sentences, source = _focus_rows(result, breakdown), "score"
    elif scored_sentences:
        sentences = [
            SentenceRow(j + 1, x.text, x.similarity) for j, x in enumerate(scored_sentences)
        ]
        source = "result"
    else:
        sentences, source = [], ""
    return Explanation(
        result=result,
        threshold=threshold,
        reasons=explain(result, threshold=threshold),
        sentences=sentences,
        sentence_source=source,
        parts=[
            PartCoverage(str(p.get("part", "")), as_float(p.get("coverage")), math.nan)
            for p in result.question_parts
        ],
        worked_ragas=worked_mean(result),
        worked_focus=_worked_focus(breakdown, result) if breakdown is not None else None,
        worked_blend=_worked_blend(blend, result) if blend is not None else None,
        languages=result.languages or _languages_now(result),
    )


def _languages_now(result: RelevancyResult) -> dict[str, Any]:
    """The languages of a result scored before they were recorded (detected from its texts)."""
    if not result.user_input.strip() or not result.response.strip():
        return {}
    return row_languages(
        result.user_input,
        result.response,
        [q.question if q.similarity is not None else None for q in result.questions],
    )


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def explain(
    result: RelevancyResult, *, threshold: float = 0.5, analysis: Analysis | None = None
) -> list[Reason]:
    """Why the score is what it is: the main reason (:func:`triage`) first, then the others
    that do not contradict it; empty when nothing stands out.

    ``analysis`` (from :func:`aanalyze`) supplies the sentences and part coverage of results
    scored before every row carried them.
    """
    result = _enriched(result, analysis)
    t = triage(result)
    if t.reason == "error":
        return [
            Reason(
                "error",
                "Not scored",
                (
                    f"There is no score: {result.error or 'NaN'}"
                    if result.similarities
                    else "No generated question was usable, so there is no score: "
                    f"{result.error or 'NaN'}"
                ),
                "error",
            )
        ]
    sims, sentences = result.similarities, sentence_similarities(result)
    low = result.value < threshold
    reasons: list[Reason] = []
    if t.reason == "noncommittal":
        how = {
            "llm": "the LLM flagged every generated question as noncommittal",
            "exemplars": "the answer is very similar to a typical evasive reply",
        }.get(result.noncommittal_method, "the noncommittal detector fired")
        reasons.append(
            Reason(
                "noncommittal",
                "Noncommittal answer: the score is set to 0",
                f"The answer dodges the question ({how}; {result.noncommittal_detail}). "
                "Evasive or vague answers ('I don't know', 'it depends') score 0 whatever "
                "the generated questions are.",
                "error",
            )
        )
        if sentences and max(sentences) >= ON_TOPIC_ABOVE:
            reasons.append(
                Reason(
                    "noncommittal",
                    "Its sentences still sit close to the question",
                    f"The closest sentence is at {_fmt(max(sentences))}: an evasion that repeats "
                    "the question's words does that. If the answer does answer, the detector is "
                    "wrong here (its threshold is in the details above).",
                    "info",
                )
            )
        return reasons
    if t.reason == "generator_suspect":
        questions = [q.question for q in result.questions if q.similarity is not None]
        _, not_questions = question_hygiene(questions)
        if not_questions * 2 >= len(questions) and questions:
            why = (
                f"{not_questions} of {len(questions)} generated 'questions' are not questions "
                "(a statement, or the answer echoed), so their similarity says little."
            )
        else:
            why = (
                f"The answer itself is close to the question (plain cosine "
                f"{_fmt(result.answer_similarity or math.nan)}) although the rebuilt questions "
                f"are not (mean {_fmt(sum(sims) / len(sims))})."
            )
        reasons.append(
            Reason(
                "generator_suspect",
                "The question generator may be at fault",
                why + " Small generators misread answers: read the generated questions before "
                "blaming the answer.",
                "warning" if low else "info",
            )
        )
    elif t.reason == "off_topic":
        closest = max(sentences) if sentences else result.answer_similarity or math.nan
        reasons.append(
            Reason(
                "off_topic",
                "The answer is about something else",
                f"Even the closest question rebuilt from the answer is far from the user's "
                f"(best {_fmt(max(sims))} < {DRIFT_BELOW}), and so is the closest sentence "
                f"({_fmt(closest)}). The answer talks about something else, or answers a "
                "different question.",
            )
        )
    if "partial" in t.flags and t.reason not in ("off_topic",):
        coverage = [
            (str(p.get("part")), as_float(p.get("coverage"))) for p in result.question_parts
        ]
        best = max(c for _, c in coverage)
        for part, c in coverage:
            if c < PART_LOW and best - c >= PART_GAP:
                reasons.append(
                    Reason(
                        "partial",
                        "Part of the question is not answered",
                        f"The question has {len(coverage)} parts. “{part}” is barely covered by "
                        f"any sentence of the answer (best {_fmt(c)}, versus {_fmt(best)} for "
                        "the best-covered part).",
                        "warning",
                    )
                )
    if "padded" in t.flags and t.reason not in ("off_topic",):
        weak = [x for x in sentences if x < SENTENCE_LOW]
        reasons.append(
            Reason(
                "padded",
                f"{len(weak)} of {len(sentences)} sentences have nothing to do with the question",
                f"Their similarity to the question is below {SENTENCE_LOW} while other sentences "
                "answer it: filler that dilutes the answer. They are flagged red in the sentence "
                "table.",
                "warning" if low else "info",
            )
        )
    if sims and t.reason not in ("off_topic", "generator_suspect"):
        off = [x for x in sims if x < OFF_TOPIC_BELOW]
        if off and (result.similarity_std > SPREAD_ABOVE or max(sims) >= ON_TOPIC_ABOVE):
            reasons.append(
                Reason(
                    "spread",
                    f"{len(off)} of {len(sims)} generated questions are about something else",
                    f"Similarities range from {_fmt(min(sims))} to {_fmt(max(sims))} (spread "
                    f"{_fmt(result.similarity_std)}): part of the answer is on topic, part is "
                    "not.",
                    "warning" if low else "info",
                )
            )
    if "language_mismatch" in t.flags:
        langs = result.languages or _languages_now(result)  # a stored row keeps only its flag
        other = [g for g, d in zip(langs.get("generated") or [], langs.get("generated_differs")
                                   or []) if d]  # fmt: skip
        usable = [g for g in langs.get("generated") or [] if g]
        names = ", ".join(sorted({language_name(g) for g in other}))
        reasons.append(
            Reason(
                "language_mismatch",
                "The generated questions are in another language than the question",
                f"{len(other)} of {len(usable)} generated questions are in {names}, the "
                f"question is in {language_name(langs.get('question'))}: their cosine with the "
                "question falls for the language alone (with an English-only embedder most of "
                "all). Ask the generator for questions in the question's language (prompt "
                "language: question), or use a multilingual embedder.",
                "warning" if low else "info",
            )
        )
    if "duplicate_questions" in t.flags:
        questions = [q.question for q in result.questions if q.similarity is not None]
        duplicates, _ = question_hygiene(questions)
        reasons.append(
            Reason(
                "duplicate_questions",
                "Some generated questions are the same question",
                f"{duplicates} of {len(questions)} repeat an earlier one, so the score rests on "
                "fewer questions than it seems.",
                "info",
            )
        )
    if "incomplete_generation" in t.flags:
        missing = sorted({q.error or "empty question" for q in result.questions
                          if q.similarity is None})  # fmt: skip
        reasons.insert(0 if t.reason == "incomplete_generation" else len(reasons), Reason(
            "incomplete_generation",
            f"Incomplete: {result.questions_used} of {result.strictness} questions",
            f"The score rests on {result.questions_used} of the {result.strictness} generated "
            f"questions asked; the others are unusable ({'; '.join(missing) or 'missing'}). "
            "Fewer questions give a noisier score: score the row again.",
            "warning",
        ))  # fmt: skip
    return reasons
