"""Why a score is what it is: one explanation object per result.

:func:`explain_result` gathers everything the drill-down, the report and the CLI show about one
row: the plain-language reasons a score is low, the answer sentence by sentence (each one's
similarity to the question, flags, and for a focus score what leaving it out would change), how
well each part of a multi-part question is covered, and the arithmetic of the score. The
sentence view is an explanation in every mode; in ``"focus"`` and ``"blend"`` modes it is also
what the score was made of (a blend score counts the sentences that answer nothing asked).

A low score has a small number of readable causes, each checked with a heuristic that uses only
numbers the metric produced (or the same embedder the metric used, via :func:`aanalyze`):

``noncommittal``
    The answer was judged evasive: the score is forced to 0.
``drift``
    Even the closest rebuilt question is far from the user's (best similarity < 0.5): the
    answer is about something else, or answers a different question.
``spread``
    Some rebuilt questions are on topic and others are not (spread > 0.15, or one question
    below 0.4 while another is above 0.6): the answer mixes relevant and unrelated content.
``unanswered_part``
    The question has several parts ("Where is X and what is Y?"); one part matches no sentence
    or clause of the answer (best < 0.35) while another part is well covered (at least 0.3
    better): that part was probably left unanswered. A hint, not a verdict.
``padding``
    Some of the answer's sentences have little to do with the question (similarity < 0.25)
    while others do (> 0.5): filler that dilutes the answer.
``generator``
    The answer as a whole is close to the question (plain cosine >= 0.6) although the rebuilt
    questions are not: the question generator, not the answer, may be at fault.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relevancy._formula import cosine_similarities
from relevancy._modes import (
    BLEND_OFF_BELOW,
    BlendBreakdown,
    FocusBreakdown,
    blend_breakdown,
    focus_breakdown,
    off_question,
)
from relevancy._result import RelevancyResult
from relevancy._text import (
    looks_like_question,
    split_clauses,
    split_question_parts,
    split_sentences,
)
from relevancy.language import describe_languages, language_name, mismatched, row_languages

__all__ = [
    "REASONS",
    "Triage",
    "triage",
    "question_hygiene",
    "Reason",
    "SentenceScore",
    "SentenceRow",
    "PartCoverage",
    "Analysis",
    "Explanation",
    "sentences_from_parts",
    "aanalyze",
    "analyze",
    "explain",
    "explain_result",
    "worked_mean",
    "focus_of",
    "blend_of",
    "DRIFT_BELOW",
    "SPREAD_ABOVE",
    "SENTENCE_LOW",
    "PULLS_DOWN",
]

DRIFT_BELOW = 0.5  #: best question similarity under which the questions "drift"
OFF_TOPIC_BELOW = 0.4  #: a single rebuilt question this far away is "about something else"
ON_TOPIC_ABOVE = 0.6
SPREAD_ABOVE = 0.15  #: population std of the similarities
#: a sentence this far from the question (and from each of its parts) is "off topic": it
#: answers nothing asked (what the blend score counts)
SENTENCE_LOW = BLEND_OFF_BELOW
SENTENCE_HIGH = 0.5
PART_LOW = 0.35  #: a question part whose best-matching clause is below this is "uncovered"
PART_GAP = 0.3  #: ... when the best-covered part is at least this much better covered
GENERATOR_ANSWER_SIM = 0.6
#: a sentence whose removal would raise a focus score by more than this "lowers the score"
PULLS_DOWN = 0.01


#: each row's main reason, in order of precedence (the first that applies wins), with its label
REASONS: dict[str, str] = {
    "error": "not scored",
    "noncommittal": "noncommittal: the answer dodges the question",
    "off_topic": "off topic: nothing in the answer is about the question",
    "partial": "partial: a part of the question is not answered",
    "padded": "padded: some sentences have nothing to do with the question",
    "language_mismatch": "the generated questions are in another language than the question",
    "generator_suspect": "the question generator may be at fault, not the answer",
    "ok": "on topic and complete, as far as the embeddings can tell",
}
#: flags that describe the generated questions, not the answer
HYGIENE = ("duplicate_questions", "non_questions")


@dataclass(frozen=True)
class Triage:
    """A row's main reason (one of ``REASONS``) and every flag that applies."""

    reason: str
    flags: tuple[str, ...]


def question_hygiene(questions: Sequence[str]) -> tuple[int, int]:
    """``(duplicates, non-questions)`` among the usable generated questions: how many repeat an
    earlier one (ignoring case and spaces), and how many are not questions at all (a statement
    ending in ``?``, an echo of the answer)."""
    seen: set[str] = set()
    duplicates = non_questions = 0
    for q in questions:
        key = " ".join(q.lower().split())
        duplicates += key in seen
        seen.add(key)
        non_questions += not looks_like_question(q)
    return duplicates, non_questions


def _sentence_sims(result: RelevancyResult) -> list[float]:
    return [
        s.similarity for s in sentences_from_parts(result.parts) if not math.isnan(s.similarity)
    ]


def triage(result: RelevancyResult) -> Triage:
    """Why this row scores what it does: one main reason and all the flags, from the numbers
    the metric produced (generated questions, sentences, question parts, noncommittal).

    Precedence: what is wrong with the answer comes before what is wrong with the tool.
    ``error``, ``noncommittal``, ``off_topic`` (no sentence and no rebuilt question is close to
    the question), ``partial`` (a part of a multi-part question that no sentence covers),
    ``padded`` (sentences far from the question beside sentences close to it),
    ``generator_suspect`` (the answer is close to the question but the rebuilt questions are
    not, or half of them are not questions: the score, not the answer, is off), else ``ok``.
    """
    if not result.ok:
        return Triage("error", ("error",))
    flags: list[str] = []
    questions = [q.question for q in result.questions if q.similarity is not None]
    duplicates, non_questions = question_hygiene(questions)
    sims, sentences = result.similarities, _sentence_sims(result)
    answer = result.answer_similarity
    if result.noncommittal:
        flags.append("noncommittal")
    mean = sum(sims) / len(sims) if sims else math.nan
    if (questions and 2 * non_questions >= len(questions)) or (
        answer is not None and answer >= GENERATOR_ANSWER_SIM and mean < DRIFT_BELOW
    ):
        flags.append("generator_suspect")
    closest = max(sentences) if sentences else (answer if answer is not None else math.nan)
    if sims and max(sims) < DRIFT_BELOW and closest < SENTENCE_HIGH:
        flags.append("off_topic")
    coverage = [_float(p.get("coverage")) for p in result.question_parts]
    if len(coverage) >= 2 and any(c < PART_LOW and max(coverage) - c >= PART_GAP for c in coverage):
        flags.append("partial")
    if len(sentences) > 1 and min(sentences) < SENTENCE_LOW and max(sentences) >= SENTENCE_HIGH:
        flags.append("padded")
    if mismatched(result.languages) or (
        not result.languages and "language_mismatch" in result.flags  # stored, not recomputable
    ):
        flags.append("language_mismatch")
    flags += ["duplicate_questions"] * bool(duplicates) + ["non_questions"] * bool(non_questions)
    reason = next((code for code in REASONS if code in flags), "ok")
    return Triage(reason, tuple(flags))


@dataclass(frozen=True)
class Reason:
    """One cause of a low score, in plain language."""

    code: str
    title: str
    detail: str
    severity: str = "warning"  #: "error", "warning" or "info"


@dataclass(frozen=True)
class SentenceScore:
    text: str
    similarity: float


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
        by_part = _float(self.extra.get("part_similarity"))
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
    #: the row's languages (as recorded, else detected now: see relevancy.language)
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
        if self.result.reason:
            return Triage(self.result.reason, tuple(self.result.flags))
        return triage(self.result)

    @property
    def low(self) -> bool:
        return self.scored and self.result.value < self.threshold

    @property
    def off_topic_sentences(self) -> list[SentenceRow]:
        return [s for s in self.sentences if s.off_topic]


def sentences_from_parts(parts: Any) -> list[SentenceScore]:
    """``parts`` (plain JSON, maybe from an old or foreign file) as sentence scores."""
    out = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict) or "text" not in part:
            continue
        try:
            sim = float(part.get("similarity"))
        except (TypeError, ValueError):
            sim = math.nan
        out.append(SentenceScore(str(part["text"]), sim))
    return out


async def _aembed(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    if hasattr(embedder, "aembed"):
        vectors = await embedder.aembed(list(texts))
    else:  # relevancy's EmbeddingService (metric._embedder): async ``embed``
        vectors = await embedder.embed(list(texts))
    return np.asarray(vectors, dtype=np.float32)


async def aanalyze(result: RelevancyResult, embedder: Any) -> Analysis:
    """Sentence similarities and question-part coverage for ``result``, with one embedding call.

    ``embedder`` follows the :class:`relevancy.backends.Embedder` protocol (``aembed``); use the
    one that scored the result so the numbers are comparable with the score. Connections an
    API embedder opened in the running event loop are closed before returning.
    """
    try:
        return await _analyze(result, embedder)
    finally:
        close = getattr(embedder, "aclose", None)  # API embedders: close this loop's connections
        if close is not None:
            await close()


async def _analyze(result: RelevancyResult, embedder: Any) -> Analysis:
    sentences = split_sentences(result.response)
    parts = split_question_parts(result.user_input)
    if len(parts) < 2:
        parts = []
    questions = [q.question for q in result.questions if q.similarity is not None]
    clauses = [c for s in sentences for c in split_clauses(s) if c != s] if parts else []
    if not sentences:
        return Analysis()
    texts = [result.user_input, *sentences, *clauses, *parts, *questions]
    vectors = await _aembed(embedder, texts)
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


def analyze(result: RelevancyResult, embedder: Any) -> Analysis:
    """Blocking :func:`aanalyze` (uses a sync ``embed(texts)`` when the embedder has one)."""
    sync = getattr(embedder, "embed", None)
    if sync is not None and not asyncio.iscoroutinefunction(sync):

        class _Sync:
            async def aembed(self, texts: Sequence[str]) -> np.ndarray:
                return sync(list(texts))

        return asyncio.run(aanalyze(result, _Sync()))
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
    return [_float(p["part_similarity"]) for p in parts]


def blend_of(result: RelevancyResult) -> BlendBreakdown | None:
    """The blend breakdown that gives back ``result.value``, or None (not blend, or unknown:
    stored numbers that do not reproduce the score are not explained with it)."""
    if result.mode != "blend" or not result.ok or math.isnan(result.ragas_value):
        return None
    sims = [s.similarity for s in sentences_from_parts(result.parts)]
    answer = _float(result.answer_similarity)
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
            SentenceRow(j + 1, s.text, s.similarity, _float(context), effect, extra)  # fmt: skip
        )
    return rows


def _float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


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
            PartCoverage(str(p.get("part", "")), _float(p.get("coverage")), math.nan)
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
    sims, sentences = result.similarities, _sentence_sims(result)
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
        coverage = [(str(p.get("part")), _float(p.get("coverage"))) for p in result.question_parts]
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
    return reasons
