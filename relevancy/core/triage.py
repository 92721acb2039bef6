"""Each row's main reason and flags, decided when it is scored, from the numbers the metric
produced: the generated questions' similarities, the answer's sentences, the coverage of each
part of a multi-part question, the noncommittal verdict and the languages.

:data:`REASONS` lists the reasons in order of precedence (what is wrong with the answer before
what is wrong with the tool); :func:`triage` returns the first that applies and every flag.
The words around them (causes, sentence tables) are in :mod:`relevancy.analysis.explain`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from relevancy.core.language import mismatched
from relevancy.core.modes import BLEND_OFF_BELOW, off_question
from relevancy.core.noncommittal import evasive_wording
from relevancy.core.result import RelevancyResult
from relevancy.core.text import answer_of_kind, looks_like_question

__all__ = [
    "DEFAULT_THRESHOLD",
    "PAD_GAP",
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
    "enough_questions",
    "verdict",
    "VERDICTS",
    "completeness",
    "SentenceScore",
    "sentences_from_parts",
    "sentence_marks",
    "is_fragment",
    "padded_share",
    "is_padded",
    "FRAGMENT_WORDS",
    "PAD_SHARE",
    "uncovered_parts",
]

#: the "low score" threshold a stored reason is decided at (the CLI's and the dashboard's
#: default); the dashboard's drill-down decides again at the threshold it is set to
DEFAULT_THRESHOLD = 0.5


DRIFT_BELOW = 0.5  #: best question similarity under which the questions "drift"


OFF_TOPIC_BELOW = 0.4  #: a single rebuilt question this far away is "about something else"


ON_TOPIC_ABOVE = 0.6


SPREAD_ABOVE = 0.15  #: population std of the similarities


#: a sentence this far from the question (and from each of its parts) is "off topic": it
#: answers nothing asked (what the blend score counts)
SENTENCE_LOW = BLEND_OFF_BELOW


SENTENCE_HIGH = 0.5


#: a sentence this much further from the question than the answer's closest sentence (itself
#: at least ``SENTENCE_HIGH``) is "padding": the answer is elsewhere in the answer
PAD_GAP = 0.4


PART_LOW = 0.35  #: a question part whose best-matching clause is below this is "uncovered"


PART_GAP = 0.3  #: ... when the best-covered part is at least this much better covered


GENERATOR_ANSWER_SIM = 0.6


#: a "sentence" of fewer words than this (a citation marker "(ref 1)", a list number "2.", a
#: lone word) belongs to its neighbour: it is never marked off topic or padding on its own
FRAGMENT_WORDS = 2


#: an answer is ``padded`` when its sentences marked off topic or padding hold at least this
#: share of its words: one stray sentence in a long answer is not padding (bench/padding.py)
PAD_SHARE = 0.2


#: each row's main reason, in order of precedence (the first that applies wins), with its label
REASONS: dict[str, str] = {
    "error": "not scored",
    "noncommittal": "noncommittal: the detector judged the answer noncommittal, so the score is 0",
    "evasive": "evasive: the answer says in so many words that it will not or cannot answer, "
    "though the noncommittal detector did not fire (the score is not set to 0)",
    "off_topic": "off topic: no sentence of the answer and no question rebuilt from it is close "
    "to the question",
    "partial": "partial: a part of the question is not answered",
    "padded": "padded: some sentences have nothing to do with the question",
    "language_mismatch": "the generated questions are in another language than the question",
    "generator_suspect": "the question generator may be at fault, not the answer",
    "incomplete_generation": "incomplete: fewer generated questions were usable than asked",
    "drifting": "drifting: below the threshold, the questions rebuilt from the answer stray from "
    "the question",
    "ok": "on topic: the questions rebuilt from the answer are close to the question, as far "
    "as the embeddings can tell",
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


def _part_similarities(parts: list[Any]) -> list[float] | None:
    """Each sentence's stored best similarity to a question part (None: not stored)."""
    if not parts or not all(isinstance(p, dict) and "part_similarity" in p for p in parts):
        return None
    return [as_float(p["part_similarity"]) for p in parts]


def sentence_marks(result: RelevancyResult) -> list[str]:
    """What the sentence table says of each of the answer's sentences (``result.parts``):

    ``"off topic"``
        it answers nothing asked: below ``SENTENCE_LOW`` to the question and (where the row
        has them) to each part of it;
    ``"padding"``
        ``PAD_GAP`` or more below the answer's closest sentence, which is itself close to the
        question (``SENTENCE_HIGH``): the answer is elsewhere;
    ``"fragment"``
        fewer than ``FRAGMENT_WORDS`` words (a citation marker, a list number): part of its
        neighbour, never marked on its own;
    ``""``
        none of these.

    The ``padded`` reason is these marks (when they hold ``PAD_SHARE`` of the answer's words:
    :func:`padded_share`), so the table and the reason cannot disagree.
    """
    parts = [p for p in result.parts if isinstance(p, dict) and "text" in p]
    found = sentences_from_parts(parts)
    sims = [s.similarity for s in found]
    if not sims:
        return []
    off = off_question([0.0 if math.isnan(x) else x for x in sims], _part_similarities(parts))
    known = [x for x, s in zip(sims, found) if not math.isnan(x) and not is_fragment(s.text)]
    best = max(known) if known else math.nan
    marks = []
    for sim, far, sentence in zip(sims, off, found):
        if is_fragment(sentence.text):
            marks.append("fragment")
        elif math.isnan(sim):
            marks.append("")
        elif far:
            marks.append("off topic")
        elif best >= SENTENCE_HIGH and sim <= best - PAD_GAP:
            marks.append("padding")
        else:
            marks.append("")
    return marks


def is_fragment(text: str) -> bool:
    """Fewer than ``FRAGMENT_WORDS`` words of two letters or more: "(ref 1)", "2.", "[3]"."""
    return len(re.findall(r"[^\W\d_]{2,}", text)) < FRAGMENT_WORDS


def padded_share(result: RelevancyResult, marks: Sequence[str] | None = None) -> float:
    """The share of the answer's words in sentences marked off topic or padding (fragments
    count with no side); 0.0 without sentences."""
    found = sentences_from_parts([p for p in result.parts if isinstance(p, dict) and "text" in p])
    marks = sentence_marks(result) if marks is None else marks
    words = [len(s.text.split()) for s, m in zip(found, marks) if m != "fragment"]
    marked = [len(s.text.split()) for s, m in zip(found, marks) if m in ("off topic", "padding")]
    return sum(marked) / sum(words) if sum(words) else 0.0


def is_padded(result: RelevancyResult, share: float = PAD_SHARE) -> bool:
    """Padded: besides a sentence close to the question (``SENTENCE_HIGH``), sentences marked
    off topic or padding that hold at least ``share`` of the answer's words."""
    marks = sentence_marks(result)
    real = [m for m in marks if m != "fragment"]
    sentences = [
        s.similarity
        for s, m in zip(sentences_from_parts(result.parts), marks)
        if m != "fragment" and not math.isnan(s.similarity)
    ]
    return (
        len(real) > 1
        and any(m in ("off topic", "padding") for m in real)
        and max(sentences, default=0.0) >= SENTENCE_HIGH
        and padded_share(result, marks) >= share
    )


def uncovered_parts(result: RelevancyResult) -> list[tuple[str, float, float]]:
    """The parts of a multi-part question the answer leaves out: ``(part, coverage, best)``.

    A part is left out when its best-matching sentence or clause is below ``PART_LOW`` while
    another part is covered ``PART_GAP`` better, unless the answer holds what the part asks for
    (:func:`relevancy.core.text.answer_of_kind`: a number for "how tall", a name for "which
    countries").
    """
    parts = result.question_parts
    coverage = [(str(p.get("part", "")), as_float(p.get("coverage"))) for p in parts]
    if len(coverage) < 2:
        return []
    best = max(c for _, c in coverage)
    return [
        (part, c, best)
        for part, c in coverage
        if c < PART_LOW
        and best - c >= PART_GAP
        and not answer_of_kind(part, result.user_input, result.response)
    ]


def incomplete_text(result: RelevancyResult) -> str:
    """``"incomplete: 1 of 3 questions"`` (what a verdict says instead of ok)."""
    return f"incomplete: {result.questions_used} of {result.strictness} questions"


def enough_questions(used: Any, asked: Any, min_questions: int | None = None) -> bool:
    """Whether a verdict may rest on ``used`` usable generated questions of ``asked``: at
    least ``min_questions`` (default: all ``asked``). Unknown counts (a row scored before they
    were recorded) are taken as enough."""
    used, asked = as_float(used), as_float(asked)
    if math.isnan(used) or math.isnan(asked):
        return True
    needed = asked if min_questions is None else min(float(min_questions), asked)
    return used >= needed


#: what :func:`verdict` may say: the only words a page, the CLI or a write-back's label use
VERDICTS = ("relevant", "low", "incomplete", "not scored")


def verdict(
    value: Any,
    threshold: float,
    used: Any = None,
    asked: Any = None,
    min_questions: int | None = None,
) -> str:
    """A row's verdict in one word: ``relevant`` (at or above ``threshold``), ``low`` (below),
    ``incomplete`` (scored from fewer usable questions than ``min_questions``, default all of
    them: no verdict either way) or ``not scored``. Every verdict word shown anywhere comes from
    here, so none rests on fewer questions than asked."""
    score = as_float(value)
    if math.isnan(score):
        return "not scored"
    if not enough_questions(used, asked, min_questions):
        return "incomplete"
    return "relevant" if score >= threshold else "low"


def completeness(result: RelevancyResult) -> str:
    """What is known of whether the answer answers every part of the question, in words: each
    of its parts covered, the parts left out, or that it was not checked (the question reads as
    one part: "the capital of Japan and its population" is one to the splitter)."""
    parts = [str(p.get("part", "")) for p in result.question_parts if isinstance(p, dict)]
    if len(parts) < 2:
        return (
            "whether it answers every part of the question was not checked (the question "
            "reads as one part)"
        )
    missing = uncovered_parts(result)
    if missing:
        names = "; ".join(f"“{part}”" for part, _, _ in missing)
        return f"{len(missing)} of the question's {len(parts)} parts not answered: {names}"
    return f"each of the question's {len(parts)} parts is answered"


def triage(
    result: RelevancyResult,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    min_questions: int | None = None,
) -> Triage:
    """Why this row scores what it does: one main reason and all the flags, from the evidence
    the drill-down shows (the generated questions' similarities, the sentence table, the
    coverage of each part of the question, the noncommittal verdict, the languages).

    Precedence: what is wrong with the answer comes before what is wrong with the tool.
    ``error``; ``noncommittal`` (the detector fired: the score is 0); ``evasive`` (it did not,
    but the answer scores below ``threshold`` and dodges in so many words: "I can't help",
    "I'm not sure"); ``off_topic`` (no sentence
    and no rebuilt question is close to the question); ``partial`` (a part of a multi-part
    question the answer leaves out); ``padded`` (a sentence the sentence table marks off topic
    or padding, beside one that answers); ``language_mismatch``; ``generator_suspect`` (the
    answer is close to the question but the rebuilt questions are not, or half of them are not
    questions: the score, not the answer, is off); then ``ok`` at or above ``threshold`` and
    ``drifting`` below it: a score below the threshold is never "ok". A score that rests on fewer
    usable questions than ``min_questions`` (by default all ``strictness`` of them: a cut-off or
    failed generation) is ``incomplete_generation`` where it would have been ``ok`` or
    ``drifting``; the flag ``incomplete_generation`` is set whenever fewer than ``strictness``
    questions were usable.
    """
    if not result.ok:
        return Triage("error", ("error",))
    flags: list[str] = []
    questions = [q.question for q in result.questions if q.similarity is not None]
    duplicates, non_questions = question_hygiene(questions)
    sims, sentences = result.similarities, sentence_similarities(result)
    answer = result.answer_similarity
    low = result.value < threshold
    if result.noncommittal:
        flags.append("noncommittal")
    elif low and evasive_wording(result.response):
        flags.append("evasive")
    mean = sum(sims) / len(sims) if sims else math.nan
    if (questions and 2 * non_questions >= len(questions)) or (
        answer is not None and answer >= GENERATOR_ANSWER_SIM and mean < DRIFT_BELOW
    ):
        flags.append("generator_suspect")
    closest = max(sentences) if sentences else (answer if answer is not None else math.nan)
    if sims and max(sims) < DRIFT_BELOW and closest < SENTENCE_HIGH:
        flags.append("off_topic")
    if uncovered_parts(result):
        flags.append("partial")
    if is_padded(result):
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
    if reason == "ok" and low:
        reason = "drifting"
        flags.append("drifting")
    return Triage(reason, tuple(flags))


def as_float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan
