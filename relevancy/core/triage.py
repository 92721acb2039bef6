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

from relevancy.core.citations import in_source_lists, is_citation
from relevancy.core.language import mismatched
from relevancy.core.modes import BLEND_OFF_BELOW, off_question
from relevancy.core.noncommittal import evasive_wording
from relevancy.core.result import RelevancyResult
from relevancy.core.text import (
    answer_of_kind,
    content_words,
    looks_like_question,
    mentions,
    part_evidence,
    part_kind,
    split_sentences,
)

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
    "PART_ANSWERED",
    "PartCheck",
    "part_checks",
    "verdict_text",
    "SentenceScore",
    "sentences_from_parts",
    "sentence_marks",
    "is_fragment",
    "is_citation",
    "NEUTRAL_MARKS",
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


#: a part that asks for no kind of thing words can show ("what is", "how does") counts as
#: answered only when its best-matching clause is at least this close to it and shares one of
#: its words: 0.29-0.38 is what an unanswered "when was it built" gets beside an answered part
PART_ANSWERED = 0.5


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
    ``"citation"``
        citation markers or a list of sources and nothing else ("(ref 1) (ref 2)", "See [3].",
        "Sources: …", "[1] https://…": :func:`is_citation`): where the answer comes from,
        never judged as off topic or padding;
    ``"fragment"``
        fewer than ``FRAGMENT_WORDS`` words (a list number, a lone word): part of its
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
    listed = in_source_lists(result.response, [s.text for s in found])
    neutral = ["citation" if x else _neutral(s.text) for s, x in zip(found, listed)]
    known = [x for x, n in zip(sims, neutral) if not math.isnan(x) and not n]
    best = max(known) if known else math.nan
    marks = []
    for sim, far, mark in zip(sims, off, neutral):
        if mark:
            marks.append(mark)
        elif math.isnan(sim):
            marks.append("")
        elif far:
            marks.append("off topic")
        elif best >= SENTENCE_HIGH and sim <= best - PAD_GAP:
            marks.append("padding")
        else:
            marks.append("")
    return marks


#: the marks that take no side: neither counted as padding nor as the answer
NEUTRAL_MARKS = ("fragment", "citation")


def _neutral(text: str) -> str:
    return "citation" if is_citation(text) else "fragment" if is_fragment(text) else ""


def is_fragment(text: str) -> bool:
    """Fewer than ``FRAGMENT_WORDS`` words of two letters or more: "(ref 1)", "2.", "[3]"."""
    return len(re.findall(r"[^\W\d_]{2,}", text)) < FRAGMENT_WORDS


def padded_share(result: RelevancyResult, marks: Sequence[str] | None = None) -> float:
    """The share of the answer's words in sentences marked off topic or padding (fragments and
    citations count with no side); 0.0 without sentences."""
    found = sentences_from_parts([p for p in result.parts if isinstance(p, dict) and "text" in p])
    marks = sentence_marks(result) if marks is None else marks
    words = [len(s.text.split()) for s, m in zip(found, marks) if m not in NEUTRAL_MARKS]
    marked = [len(s.text.split()) for s, m in zip(found, marks) if m in ("off topic", "padding")]
    return sum(marked) / sum(words) if sum(words) else 0.0


def is_padded(result: RelevancyResult, share: float = PAD_SHARE) -> bool:
    """Padded: besides a sentence close to the question (``SENTENCE_HIGH``), sentences marked
    off topic or padding that hold at least ``share`` of the answer's words."""
    marks = sentence_marks(result)
    real = [m for m in marks if m not in NEUTRAL_MARKS]
    sentences = [
        s.similarity
        for s, m in zip(sentences_from_parts(result.parts), marks)
        if m not in NEUTRAL_MARKS and not math.isnan(s.similarity)
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


def verdict_text(
    value: Any,
    threshold: float,
    used: Any = None,
    asked: Any = None,
    min_questions: int | None = None,
) -> str:
    """:func:`verdict` as every page, the HTML report and the CLI show it: the word, and for
    ``incomplete`` what the score rests on (``"incomplete: 2 of 3 questions"``), whichever
    side of the threshold the score is."""
    word = verdict(value, threshold, used, asked, min_questions)
    if word != "incomplete":
        return word
    u, a = as_float(used), as_float(asked)
    return f"incomplete: {u:.0f} of {a:.0f} questions"


#: what a part of each kind needs to be shown answered, in words
_KIND_NEEDS = {
    "quantity": "number",
    "time": "year, date or time",
    "place": "place (“in …”, “at …”)",
    "person": "name",
    "name": "name",
    "reason": "reason (“because …”, “due to …”)",
}


@dataclass(frozen=True)
class PartCheck:
    """What is known of one part of a multi-part question: ``state`` is ``"answered"`` (with
    the ``evidence`` that shows it), ``"not answered"`` (it looks left out: see
    :func:`uncovered_parts`) or ``"not checked"`` (nothing shows it either way: ``why``)."""

    part: str
    coverage: float
    state: str
    evidence: tuple[str, ...] = ()
    why: str = ""


def part_checks(result: RelevancyResult) -> list[PartCheck]:
    """Each part of a multi-part question (none for a question that reads as one part),
    checked against the answer.

    A part is *answered* only on evidence that can show it: for a part that asks for a kind of
    thing (:func:`relevancy.core.text.part_kind`: a number, a year, a place, a name, a reason),
    something of that kind in a sentence of the answer that speaks of what the part asks
    (:func:`relevancy.core.text.part_evidence`: a year beside "built" for "when was it built";
    not "330" for it, nor "Vinci" for "where is it displayed"), whatever the similarity; for
    any other part ("what is its capital", "how does it work"), a best-matching clause at least
    ``PART_ANSWERED`` close that shares one of the part's words. A part is *not answered* when
    :func:`uncovered_parts` finds it left out; otherwise it is *not checked*.
    """
    parts = [p for p in result.question_parts if isinstance(p, dict)]
    if len(parts) < 2:
        return []
    missing = {part for part, _, _ in uncovered_parts(result)}
    sentences = split_sentences(result.response)
    out = []
    for p in parts:
        part, c = str(p.get("part", "")), as_float(p.get("coverage"))
        kind = part_kind(part)
        if part in missing:
            out.append(PartCheck(part, c, "not answered", why="barely covered"))
        elif kind:
            found = part_evidence(part, result.user_input, result.response)
            if found:
                out.append(PartCheck(part, c, "answered", tuple(found)))
            else:
                about = " about it" if content_words(part) else ""
                why = f"no {_KIND_NEEDS[kind]} in a sentence of the answer{about}"
                out.append(PartCheck(part, c, "not checked", why=why))
        else:
            words = content_words(part)
            shared = not words or any(mentions(s, words) for s in sentences)
            if c >= PART_ANSWERED and shared:
                out.append(PartCheck(part, c, "answered", (f"similarity {c:.2f}",)))
            elif not shared:
                why = f"the answer has none of its words ({', '.join(words)})"
                out.append(PartCheck(part, c, "not checked", why=why))
            else:
                why = f"similarity {c:.2f}, under the {PART_ANSWERED} that shows it"
                out.append(PartCheck(part, c, "not checked", why=why))
    return out


def completeness(result: RelevancyResult) -> str:
    """What is known of whether the answer answers every part of the question, in words: each
    of its parts answered (with the evidence: :func:`part_checks`), the parts left out, or
    which parts were not checked and why (a number is no evidence that "when" is answered, nor
    a similarity of 0.3). A question that reads as one part is not checked ("the capital of
    Japan and its population" is one to the splitter)."""
    checks = part_checks(result)
    if not checks:
        return (
            "whether it answers every part of the question was not checked (the question "
            "reads as one part)"
        )
    n = len(checks)
    missing = [c for c in checks if c.state == "not answered"]
    if missing:
        names = "; ".join(f"“{c.part}”" for c in missing)
        return f"{len(missing)} of the question's {n} parts not answered: {names}"
    unsure = [c for c in checks if c.state == "not checked"]
    if unsure:
        said = "; ".join(f"“{c.part}” ({c.why})" for c in unsure)
        return f"whether it answers every part of the question was not checked: {said}"
    shown = "; ".join(f"“{c.part}”: {', '.join(c.evidence[:3])}" for c in checks)
    return f"each of the question's {n} parts is answered ({shown})"


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
