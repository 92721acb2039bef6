"""Plain-language reasons why an Answer Relevancy score is low, and sentence-level shading.

The score is the mean cosine similarity between the user's question and N questions an LLM
rebuilt from the answer. So a low score has a small number of readable causes, each checked
here with a heuristic that only uses numbers the metric already produced (or the same
embedder the metric used):

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
    better): that part was probably left unanswered. Short parts made of pronouns ("who won
    it?") carry little meaning on their own, so this check is a hint, not a verdict.
``padding``
    Some of the answer's sentences have little to do with the question (similarity < 0.25)
    while others do (> 0.5): filler that dilutes the answer.
``generator``
    The answer as a whole is close to the question (plain cosine >= 0.6) although the rebuilt
    questions are not: the question generator, not the answer, may be at fault.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relevancy._formula import cosine_similarities
from relevancy._result import RelevancyResult

__all__ = [
    "Reason",
    "SentenceScore",
    "sentences_from_parts",
    "PartCoverage",
    "Analysis",
    "split_sentences",
    "split_question_parts",
    "split_clauses",
    "aanalyze",
    "analyze",
    "explain",
    "worked_mean",
    "worked_focus",
    "focus_sentences",
    "sentence_effects",
    "DRIFT_BELOW",
    "SPREAD_ABOVE",
]

DRIFT_BELOW = 0.5  #: best question similarity under which the questions "drift"
OFF_TOPIC_BELOW = 0.4  #: a single rebuilt question this far away is "about something else"
ON_TOPIC_ABOVE = 0.6
SPREAD_ABOVE = 0.15  #: population std of the similarities
SENTENCE_LOW = 0.25
SENTENCE_HIGH = 0.5
PART_LOW = 0.35  #: a question part whose best-matching clause is below this is "uncovered"
PART_GAP = 0.3  #: ... when the best-covered part is at least this much better covered
GENERATOR_ANSWER_SIM = 0.6

_QUESTION_WORDS = (
    r"what|where|when|who|whom|whose|which|why|how|is|are|was|were|do|does|did|can|could|"
    r"should|will|would|has|have|"
    r"qu(?:e|el|elle|els|elles|oi)|où|quand|comment|pourquoi|combien|qui|"  # fr
    r"qué|cuál|cuándo|cómo|dónde|quién|cuánto|por qué|"  # es
    r"was|wie|wo|wann|warum|welche[rsnm]?|wer"  # de
)
_PART_SPLIT = re.compile(
    rf"\s*(?:[;?]|,?\s+(?:and|et|y|und|also)\s+(?=(?:{_QUESTION_WORDS})\b))\s*", re.IGNORECASE
)
_CLAUSE_SPLIT = re.compile(
    r"\s*(?:[,;:]|\s(?:and|but|which|et|mais|qui|que|y|pero|und|aber)\s)\s*", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])\s+(?=[\"'“(¿¡]?[A-Z0-9À-ÖØ-Þ`])")


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


def split_sentences(text: str) -> list[str]:
    """Sentences of a response (line breaks and ``. ! ?`` followed by a capital)."""
    out: list[str] = []
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def split_question_parts(question: str) -> list[str]:
    """The parts of a multi-part question: split on ``?``/``;`` and on "and" + question word.

    >>> split_question_parts("Where is France and what is its capital?")
    ['Where is France', 'what is its capital']
    """
    parts = [p.strip(" ,.!?") for p in _PART_SPLIT.split(str(question))]
    return [p for p in parts if len(p.split()) >= 2]


def split_clauses(sentence: str) -> list[str]:
    """Clauses of a sentence (split on , ; : and conjunctions), at least two words each."""
    return [c for c in _CLAUSE_SPLIT.split(sentence) if len(c.split()) >= 2]


async def _aembed(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    if hasattr(embedder, "aembed"):
        vectors = await embedder.aembed(list(texts))
    else:  # relevancy's EmbeddingService (metric._embedder): async ``embed``
        vectors = await embedder.embed(list(texts))
    return np.asarray(vectors, dtype=np.float32)


async def aanalyze(result: RelevancyResult, embedder: Any) -> Analysis:
    """Sentence shading and question-part coverage for ``result``, with one embedding call.

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
    """The arithmetic behind the score, e.g. ``(0.812 + 0.771 + 0.690) / 3 = 0.758``."""
    sims = result.similarities
    if not sims:
        return "no usable generated question: the score is not defined (NaN)"
    mean = sum(sims) / len(sims)
    text = f"({' + '.join(f'{s:.3f}' for s in sims)}) / {len(sims)} = {mean:.3f}"
    if result.noncommittal:
        text += " × 0 (noncommittal) = 0.000"
    return text


def focus_sentences(result: RelevancyResult) -> list[SentenceScore]:
    """The sentences a focus score was made of (``result.parts``), with their similarity."""
    return sentences_from_parts(result.parts)


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


def _focus_reproduces(result: RelevancyResult, sims: list[float]) -> bool:
    """True when the focus formula on ``sims`` gives back ``result.value`` (before any zeroing)."""
    from relevancy._modes import focus_score

    if result.mode != "focus" or not sims or not result.ok or math.isnan(result.ragas_value):
        return False
    if any(math.isnan(s) for s in sims):
        return False
    try:
        value = focus_score(sims, result.ragas_value, noncommittal=result.noncommittal)
    except Exception:  # a formula with another signature: explain nothing rather than wrongly
        return False
    return math.isclose(value, result.value, abs_tol=5e-4)


def sentence_effects(result: RelevancyResult) -> list[float]:
    """How much a focus score would change if each sentence were left out (one per sentence).

    Positive: the score would rise without the sentence, so it pulls the score down. NaN when
    that cannot be worked out: one sentence only, a noncommittal answer (0 whatever the
    sentences), or parts that do not reproduce the score.
    """
    from relevancy._modes import focus_score

    sims = [s.similarity for s in focus_sentences(result)]
    nan = [math.nan] * len(sims)
    if len(sims) < 2 or result.noncommittal or not _focus_reproduces(result, sims):
        return nan
    return [
        focus_score(sims[:j] + sims[j + 1 :], result.ragas_value) - result.value
        for j in range(len(sims))
    ]


def worked_focus(result: RelevancyResult) -> str | None:
    """The arithmetic behind a focus score, or ``None`` when the parts do not reproduce it.

    E.g. ``0.7 × (0.612 mean − 0.081 spread of the sentences' similarities in context) +
    0.3 × 0.771 Ragas value = 0.603``; for one sentence ``0.7 × 0.612 (the sentence's
    similarity) + ...``.
    """
    from relevancy._modes import FOCUS_RAGAS_WEIGHT, focus_parts

    sims = [s.similarity for s in focus_sentences(result)]
    if not _focus_reproduces(result, sims):
        return None
    r = focus_parts(sims)
    w = FOCUS_RAGAS_WEIGHT
    before = (1 - w) * float(r.mean() - r.std()) + w * result.ragas_value
    if not result.noncommittal and not math.isclose(before, result.value, abs_tol=5e-4):
        return None
    if len(sims) == 1:
        view = f"{r.mean():.3f} (the sentence's similarity)"
    else:
        view = (
            f"({r.mean():.3f} mean − {r.std():.3f} spread of the sentences' similarities "
            "in context)"
        )
    text = f"{1 - w:.2g} × {view} + {w:.2g} × {result.ragas_value:.3f} Ragas value = {before:.3f}"
    if result.noncommittal:
        text += " × 0 (noncommittal) = 0.000"
    return text


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def explain(
    result: RelevancyResult, *, threshold: float = 0.5, analysis: Analysis | None = None
) -> list[Reason]:
    """Reasons the score is low (most important first); empty when nothing stands out.

    Pass ``analysis`` (from :func:`aanalyze`) to also check unanswered parts and padding.
    """
    reasons: list[Reason] = []
    if result.error or not result.ok:
        reasons.append(
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
        )
        return reasons
    if result.noncommittal:
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
    sims = result.similarities
    low = result.value < threshold
    if sims:
        best, worst = max(sims), min(sims)
        off = [s for s in sims if s < OFF_TOPIC_BELOW]
        if best < DRIFT_BELOW:
            reasons.append(
                Reason(
                    "drift",
                    "Generated questions drift off topic",
                    f"Even the closest question rebuilt from the answer is far from the user's "
                    f"question (best similarity {_fmt(best)} < {DRIFT_BELOW}). The answer talks "
                    "about something else, or answers a different question.",
                )
            )
        elif off and (result.similarity_std > SPREAD_ABOVE or (best >= ON_TOPIC_ABOVE)):
            reasons.append(
                Reason(
                    "spread",
                    f"{len(off)} of {len(sims)} generated questions are about something else",
                    f"Similarities range from {_fmt(worst)} to {_fmt(best)} (spread "
                    f"{_fmt(result.similarity_std)}): part of the answer is on topic, part is "
                    "not. Look for padding or off-topic detail in the answer.",
                )
            )
    if analysis is not None and analysis.parts:
        best_part = max(p.coverage for p in analysis.parts)
        for p in analysis.parts:
            if p.coverage < PART_LOW and best_part - p.coverage >= PART_GAP:
                reasons.append(
                    Reason(
                        "unanswered_part",
                        "Part of the question may be unanswered",
                        f"The question has {len(analysis.parts)} parts. “{p.part}” is barely "
                        f"covered by any sentence of the answer (best {_fmt(p.coverage)}, versus "
                        f"{_fmt(best_part)} for the best-covered part).",
                    )
                )
    if analysis is not None and analysis.sentences and len(analysis.sentences) > 1:
        weak = [s for s in analysis.sentences if s.similarity < SENTENCE_LOW]
        if weak and max(s.similarity for s in analysis.sentences) >= SENTENCE_HIGH:
            reasons.append(
                Reason(
                    "padding",
                    f"{len(weak)} of {len(analysis.sentences)} sentences are unrelated padding",
                    "These sentences have little to do with the question (similarity below "
                    f"{SENTENCE_LOW}), while others answer it; they dilute the answer. They are "
                    "the palest in the shaded answer.",
                    "info" if not low else "warning",
                )
            )
    if (
        low
        and not result.noncommittal
        and result.answer_similarity is not None
        and result.answer_similarity >= GENERATOR_ANSWER_SIM
    ):
        reasons.append(
            Reason(
                "generator",
                "The question generator may be at fault",
                f"The answer itself is close to the question (plain cosine "
                f"{_fmt(result.answer_similarity)}) although the rebuilt questions are not. "
                "Small generators misread answers (echoes, off-topic questions): read the "
                "generated questions before blaming the answer.",
                "info",
            )
        )
    return reasons
