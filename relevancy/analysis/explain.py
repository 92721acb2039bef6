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

from relevancy.analysis.causes import (
    Analysis,
    PartCoverage,
    Reason,
    enriched,
    explain,
    languages_now,
)
from relevancy.core.formula import cosine_similarities
from relevancy.core.language import describe_languages
from relevancy.core.modes import (
    BlendBreakdown,
    FocusBreakdown,
    blend_breakdown,
    focus_breakdown,
    off_question,
)
from relevancy.core.noncommittal import evasive_wording
from relevancy.core.result import RelevancyResult
from relevancy.core.text import (
    part_evidence,
    split_clauses,
    split_question_parts,
    split_sentences,
)
from relevancy.core.triage import (
    DEFAULT_THRESHOLD,
    NEUTRAL_MARKS,
    PAD_GAP,
    PAD_SHARE,
    SENTENCE_HIGH,
    SENTENCE_LOW,
    PartCheck,
    SentenceScore,
    Triage,
    as_float,
    completeness,
    padded_share,
    part_checks,
    sentence_marks,
    sentences_from_parts,
    triage,
    verdict,
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
class SentenceRow:
    """One sentence of the answer in the explanation's sentence table."""

    index: int  #: 1-based
    text: str
    similarity: float  #: to the user's question
    in_context: float = math.nan  #: focus only: with the neighbours mixed in
    without_it: float = math.nan  #: focus only: score change if left out (+: it lowers it)
    extra: dict[str, Any] = field(default_factory=dict)  #: other keys of a scored part
    #: far below the answer's closest sentence (see :func:`relevancy.core.triage.sentence_marks`)
    padding: bool = False
    #: a list number, a word or two, or a citation: never marked off topic or padding
    fragment: bool = False
    #: citation markers or a list of sources (:func:`relevancy.core.triage.is_citation`)
    citation: bool = False

    @property
    def off_topic(self) -> bool:
        """Far from the question, and (where the row has them) from each of its parts; never a
        fragment."""
        if self.fragment:
            return False
        by_part = as_float(self.extra.get("part_similarity"))
        if math.isnan(by_part):
            return self.similarity < SENTENCE_LOW
        return off_question([self.similarity], [by_part])[0]

    @property
    def lowers_score(self) -> bool:
        return self.without_it > PULLS_DOWN

    @property
    def note(self) -> str:
        """``"off topic"`` or ``"padding"``, ``"lowers the score"``, both, ``"fragment"`` or
        ``""``."""
        if self.citation:
            return "citation or sources (not judged)"
        if self.fragment:
            return "fragment (read with its neighbour)"
        flags = ["off topic"] * self.off_topic + ["padding"] * (self.padding and not self.off_topic)
        return ", ".join(flags + ["lowers the score"] * self.lowers_score)


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
    #: the fewest usable generated questions a verdict may rest on (the run's; None: all)
    min_questions: int | None = None

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
        """The row's main reason and flags, decided again from the evidence shown here and at
        this explanation's threshold (the stored one, ``result.reason``, was decided when the row
        was scored, at ``DEFAULT_THRESHOLD``: see ``stored_reason_differs``)."""
        return triage(self.result, self.threshold, min_questions=self.min_questions)

    @property
    def verdict(self) -> str:
        """``relevant``, ``low``, ``incomplete`` or ``not scored`` (:func:`core.triage.verdict`):
        the one word a badge may say."""
        r = self.result
        return verdict(r.value, self.threshold, r.questions_used, r.strictness, self.min_questions)

    @property
    def completeness(self) -> str:
        """Whether the answer answers every part of the question, in words (checked, or not)."""
        return completeness(self.result)

    @property
    def part_checks(self) -> list[PartCheck]:
        """Each part of a multi-part question: answered (and on what evidence), not answered, or
        not checked (:func:`relevancy.core.triage.part_checks`)."""
        return part_checks(self.result)

    @property
    def secondary(self) -> list[str]:
        """The other reasons that apply, besides the main one (hygiene flags included)."""
        t = self.triage
        return [f for f in t.flags if f != t.reason]

    @property
    def stored_reason_differs(self) -> bool:
        """The row was filed under another main reason when it was scored (an older version, or
        another threshold): the grid's reason column says ``result.reason``."""
        return bool(self.result.reason) and self.result.reason != self.triage.reason

    @property
    def evasion(self) -> str:
        """The words by which the answer dodges the question (``""`` if none)."""
        return evasive_wording(self.result.response)

    @property
    def sentence_verdict(self) -> str:
        """One line on the sentence table that agrees with the main reason: how many sentences
        are off topic, padding, or lower the score; or that none is close to the question."""
        rows = [s for s in self.sentences if not s.fragment]  # a fragment is its neighbour's
        if not rows:
            return ""
        off = sum(s.off_topic for s in rows)
        pad = sum(s.padding and not s.off_topic for s in rows)
        lowers = sum(s.lowers_score for s in rows)
        best = max((s.similarity for s in rows), default=math.nan)
        far = best < SENTENCE_HIGH
        to = (
            " to the question and to each part"
            if any("part_similarity" in s.extra for s in rows)
            else ""
        )
        if len(rows) == 1:
            if off:
                return "The answer is one sentence: off topic."
            if far:
                return (
                    f"The answer is one sentence, not close to the question ({best:.2f} < "
                    f"{SENTENCE_HIGH})."
                )
            return "The answer is one sentence."
        found = (
            [f"{off} off topic (similarity below {SENTENCE_LOW}{to})"] * bool(off)
            + [f"{pad} padding ({PAD_GAP} or more below the closest sentence)"] * bool(pad)
            + [
                f"{lowers} {'lowers' if lowers == 1 else 'lower'} the score (it would rise "
                f"without {'it' if lowers == 1 else 'them'})"
            ]
            * bool(lowers)
        )
        if far:
            found.append(f"none is close to the question (the closest {best:.2f} < 0.5)")
        share = padded_share(self.result)
        if (off or pad) and share < PAD_SHARE:
            found.append(
                f"they hold {share:.0%} of the answer's words, under the {PAD_SHARE:.0%} that "
                "makes an answer padded"
            )
        if found:
            return f"Of {len(rows)} sentences: {'; '.join(found)}."
        return f"None of the {len(rows)} sentences is off topic, padding or lowers the score."

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
        rows.append(SentenceRow(j + 1, s.text, s.similarity, as_float(context), effect, extra))
    return rows


def explain_result(
    result: RelevancyResult,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    analysis: Analysis | None = None,
    min_questions: int | None = None,
) -> Explanation:
    """The whole explanation of ``result``: its main reason and the others, the sentence view,
    the coverage of a multi-part question, and the arithmetic.

    A result scored by this version carries its sentences and part coverage; ``analysis``
    (from :func:`aanalyze` with the embedder that scored the row) fills them in for older ones.
    """
    result = enriched(result, analysis)
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
    marks = sentence_marks(result)
    if len(marks) == len(sentences):
        sentences = [
            dataclasses.replace(
                row,
                padding=mark == "padding",
                fragment=mark in NEUTRAL_MARKS,
                citation=mark == "citation",
            )
            for row, mark in zip(sentences, marks)
        ]
    return Explanation(
        result=result,
        threshold=threshold,
        reasons=explain(result, threshold=threshold, min_questions=min_questions),
        sentences=sentences,
        sentence_source=source,
        parts=[
            PartCoverage(
                str(p.get("part", "")),
                as_float(p.get("coverage")),
                math.nan,
                tuple(part_evidence(str(p.get("part", "")), result.user_input, result.response)),
            )
            for p in result.question_parts
        ],
        worked_ragas=worked_mean(result),
        worked_focus=_worked_focus(breakdown, result) if breakdown is not None else None,
        worked_blend=_worked_blend(blend, result) if blend is not None else None,
        languages=result.languages or languages_now(result),
        min_questions=min_questions,
    )
