"""Each row's main reason and flags, decided when it is scored, from the numbers the metric
produced: the generated questions' similarities, the answer's sentences, the coverage of each
part of a multi-part question, the noncommittal verdict and the languages.

:data:`REASONS` lists the reasons in order of precedence (what is wrong with the answer before
what is wrong with the tool); :func:`triage` returns the first that applies and every flag.
The words around them (causes, sentence tables) are in :mod:`relevancy.analysis.explain`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from relevancy.core.language import mismatched
from relevancy.core.modes import BLEND_OFF_BELOW
from relevancy.core.result import RelevancyResult
from relevancy.core.text import looks_like_question

__all__ = [
    "DRIFT_BELOW",
    "OFF_TOPIC_BELOW",
    "ON_TOPIC_ABOVE",
    "SPREAD_ABOVE",
    "SENTENCE_LOW",
    "SENTENCE_HIGH",
    "PART_LOW",
    "PART_GAP",
    "GENERATOR_ANSWER_SIM",
    "REASONS",
    "HYGIENE",
    "Triage",
    "triage",
    "question_hygiene",
    "incomplete_text",
    "SentenceScore",
    "sentences_from_parts",
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


#: each row's main reason, in order of precedence (the first that applies wins), with its label
REASONS: dict[str, str] = {
    "error": "not scored",
    "noncommittal": "noncommittal: the answer dodges the question",
    "off_topic": "off topic: nothing in the answer is about the question",
    "partial": "partial: a part of the question is not answered",
    "padded": "padded: some sentences have nothing to do with the question",
    "language_mismatch": "the generated questions are in another language than the question",
    "generator_suspect": "the question generator may be at fault, not the answer",
    "incomplete_generation": "incomplete: fewer generated questions were usable than asked",
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


@dataclass(frozen=True)
class SentenceScore:
    text: str
    similarity: float


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


def sentence_similarities(result: RelevancyResult) -> list[float]:
    return [
        s.similarity for s in sentences_from_parts(result.parts) if not math.isnan(s.similarity)
    ]


def incomplete_text(result: RelevancyResult) -> str:
    """``"incomplete: 1 of 3 questions"`` (what a verdict says instead of ok)."""
    return f"incomplete: {result.questions_used} of {result.strictness} questions"


def triage(result: RelevancyResult, *, min_questions: int | None = None) -> Triage:
    """Why this row scores what it does: one main reason and all the flags, from the numbers
    the metric produced (generated questions, sentences, question parts, noncommittal).

    Precedence: what is wrong with the answer comes before what is wrong with the tool.
    ``error``, ``noncommittal``, ``off_topic`` (no sentence and no rebuilt question is close to
    the question), ``partial`` (a part of a multi-part question that no sentence covers),
    ``padded`` (sentences far from the question beside sentences close to it),
    ``generator_suspect`` (the answer is close to the question but the rebuilt questions are
    not, or half of them are not questions: the score, not the answer, is off),
    ``incomplete_generation`` (nothing else is wrong, but the score rests on fewer usable
    questions than ``min_questions``, by default all ``strictness`` of them: a cut-off or failed
    generation), else ``ok``. The flag ``incomplete_generation`` is set whenever fewer than
    ``strictness`` questions were usable.
    """
    if not result.ok:
        return Triage("error", ("error",))
    flags: list[str] = []
    questions = [q.question for q in result.questions if q.similarity is not None]
    duplicates, non_questions = question_hygiene(questions)
    sims, sentences = result.similarities, sentence_similarities(result)
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
    coverage = [as_float(p.get("coverage")) for p in result.question_parts]
    if len(coverage) >= 2 and any(c < PART_LOW and max(coverage) - c >= PART_GAP for c in coverage):
        flags.append("partial")
    if len(sentences) > 1 and min(sentences) < SENTENCE_LOW and max(sentences) >= SENTENCE_HIGH:
        flags.append("padded")
    if mismatched(result.languages) or (
        not result.languages and "language_mismatch" in result.flags  # stored, not recomputable
    ):
        flags.append("language_mismatch")
    flags += ["duplicate_questions"] * bool(duplicates) + ["non_questions"] * bool(non_questions)
    used, asked = result.questions_used, result.strictness
    if used < asked:
        flags.append("incomplete_generation")
    enough = used >= (asked if min_questions is None else min(min_questions, asked))
    reason = next(
        (c for c in REASONS if c in flags and (c != "incomplete_generation" or not enough)), "ok"
    )
    return Triage(reason, tuple(flags))


def as_float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan
