"""The causes of a score in plain words: :func:`explain` turns a row's main reason and the
other flags (:func:`relevancy.core.triage.triage`) into :class:`Reason` boxes, each with the
numbers behind it. :mod:`relevancy.analysis.explain` gathers them with the rest of a row's
explanation.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from relevancy.core.language import language_name, row_languages
from relevancy.core.noncommittal import evasive_wording
from relevancy.core.result import RelevancyResult
from relevancy.core.triage import (
    DEFAULT_THRESHOLD,
    DRIFT_BELOW,
    OFF_TOPIC_BELOW,
    ON_TOPIC_ABOVE,
    PAD_GAP,
    SENTENCE_HIGH,
    SENTENCE_LOW,
    SPREAD_ABOVE,
    SentenceScore,
    question_hygiene,
    sentence_marks,
    sentence_similarities,
    triage,
    uncovered_parts,
)

__all__ = ["Reason", "PartCoverage", "Analysis", "enriched", "languages_now", "explain"]


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
    #: what in the answer shows the part answered (a year for "when", a place for "where", in a
    #: sentence about what the part asks): see :func:`relevancy.core.text.part_evidence`
    found: tuple[str, ...] = ()


@dataclass
class Analysis:
    """Embedding-based details for one result (computed with the metric's embedder)."""

    sentences: list[SentenceScore] = field(default_factory=list)
    parts: list[PartCoverage] = field(default_factory=list)


def enriched(result: RelevancyResult, analysis: Analysis | None) -> RelevancyResult:
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


def languages_now(result: RelevancyResult) -> dict[str, Any]:
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


def _below(value: float, threshold: float) -> str:
    """``"0.23 < 0.50"``, with the digits it takes to show the difference (``"0.4999 < 0.50"``)."""
    for digits in (2, 3, 4, 6):
        if round(value, digits) < round(threshold, digits):
            return f"{value:.{digits}f} < {threshold:.2f}"
    return f"{value!r} < {threshold!r}"


def explain(
    result: RelevancyResult,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    analysis: Analysis | None = None,
    min_questions: int | None = None,
) -> list[Reason]:
    """Why the score is what it is: the main reason (:func:`triage`) first, then the others
    that do not contradict it; empty when nothing stands out.

    ``analysis`` (from :func:`aanalyze`) supplies the sentences and part coverage of results
    scored before every row carried them; ``min_questions`` is the run's (default: all).
    """
    result = enriched(result, analysis)
    t = triage(result, threshold, min_questions=min_questions)
    if t.reason == "error":
        return [
            Reason(
                "error",
                "Not scored",
                (
                    f"There is no score: {result.error or 'NaN'}"
                    if result.similarities or not result.questions  # nothing was generated
                    else "No generated question was usable, so there is no score: "
                    f"{result.error or 'NaN'}"
                ),
                "error",
            )
        ]
    sims, sentences = result.similarities, sentence_similarities(result)
    low = result.value < threshold
    reasons: list[Reason] = []
    if t.reason == "evasive":
        reasons.append(
            Reason(
                "evasive",
                "Evasive answer: it says it will not or cannot answer",
                f"The answer says “{evasive_wording(result.response)}” and scores below the "
                f"threshold ({_below(result.value, threshold)}). The noncommittal detector "
                f"did not fire ({result.noncommittal_detail or 'no detail'}), so the score was not "
                "set to 0; it is low because the questions rebuilt from a refusal are about "
                "something else.",
                "error",
            )
        )
        return reasons
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
                f"({_fmt(closest)} < {SENTENCE_HIGH}). The answer talks about something else, or "
                "answers a different question.",
            )
        )
    if "partial" in t.flags and t.reason not in ("off_topic",):
        for part, c, best in uncovered_parts(result):
            reasons.append(
                Reason(
                    "partial",
                    "Part of the question is not answered",
                    f"The question has {len(result.question_parts)} parts. “{part}” is barely "
                    f"covered by any sentence of the answer (best {_fmt(c)}, versus {_fmt(best)} "
                    "for the best-covered part), and the answer holds nothing of the kind it "
                    "asks for.",
                    "warning",
                )
            )
    if "padded" in t.flags and t.reason not in ("off_topic",):
        marks = sentence_marks(result)
        weak = sum(m in ("off topic", "padding") for m in marks)  # citations are neutral
        reasons.append(
            Reason(
                "padded",
                f"{weak} of {len(marks)} sentences have nothing to do with the question",
                f"They are off topic (similarity below {SENTENCE_LOW}) or padding ({PAD_GAP} or "
                f"more below the closest sentence, {_fmt(max(sentences))}) while another "
                "sentence answers: filler that dilutes the answer. They are marked in the "
                "sentence table.",
                "warning" if low else "info",
            )
        )
    if t.reason == "drifting":
        off = [x for x in sims if x < OFF_TOPIC_BELOW]
        most = (
            f"{len(off)} of {len(sims)} questions rebuilt from the answer are about something "
            f"else (below {OFF_TOPIC_BELOW})"
            if off
            else f"the questions rebuilt from the answer are only moderately close to the "
            f"question (mean {_fmt(sum(sims) / len(sims))})"
        )
        reasons.append(
            Reason(
                "drifting",
                "The answer strays from the question",
                f"The score is below the threshold ({_below(result.value, threshold)}) and "
                f"no single cause stands out: {most}. Read the answer: it may answer a "
                "neighbouring question.",
            )
        )
    if sims and t.reason not in ("off_topic", "generator_suspect", "drifting"):
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
        langs = result.languages or languages_now(result)  # a stored row keeps only its flag
        other = [
            g
            for g, d in zip(langs.get("generated") or [], langs.get("generated_differs") or [])
            if d
        ]
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
        missing = sorted(
            {q.error or "empty question" for q in result.questions if q.similarity is None}
        )
        reasons.insert(
            0 if t.reason == "incomplete_generation" else len(reasons),
            Reason(
                "incomplete_generation",
                f"Incomplete: {result.questions_used} of {result.strictness} questions",
                f"The score rests on {result.questions_used} of the {result.strictness} generated "
                f"questions asked; the others are unusable ({'; '.join(missing) or 'missing'}). "
                "Fewer questions give a noisier score: score the row again.",
                "warning",
            ),
        )
    return reasons
