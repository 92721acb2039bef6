"""Scoring modes: what number a result's ``value`` is.

``"ragas"`` (what ``"auto"`` gives, for every backend)
    The Ragas Answer Relevancy, exactly (see ``relevancy/core/formula.py``): the mean cosine of the
    N questions the LLM wrote back from the response to the user's question.
``"focus"`` (by name only)
    A sentence-level score. The response is split into sentences; each sentence ``j`` gets
    ``c_j = cos(E(sentence_j), E(user_input))``, then a little context from its neighbours::

        r_j   = (1 - 2a) * c_j + a * c_(j-1) + a * c_(j+1)       a = 0.25, edges repeat
        view  = mean(r) - std(r)                                  on topic, and evenly so
        focus = (1 - w) * view + w * ragas                        w = 0.3

    ``ragas`` is the Ragas value from the same generations. The noncommittal rule (0) and the
    NaN rule are Ragas'. A one-sentence answer has ``view = cos(E(response), E(user_input))``.

    What it prefers: short answers that stay on one note. Measured (``bench/RESULTS.md``,
    "Agreement with people"): it helped on HaluQuestQA, where shorter answers are more often
    clean, and it is at chance on MedQuAD's excellent-vs-incomplete pairs and fell to 0.16 on a
    held-out set of human preferences where the complete (longer) answer was the better one.
    It is not a better metric, only another view; ``"auto"`` never picks it.
``"blend"`` (by name only)
    Half the Ragas value, half the answer's own similarity to the question, less a penalty for
    sentences that answer nothing asked::

        off   = share of the answer's sentences whose similarity to the question, and to each
                of its parts (a multi-part question), is below 0.25
        blend = (1 - w) * (cos(E(response), E(user_input)) - p * off) + w * ragas
                                                                  w = 0.5, p = 0.5

    The noncommittal rule (0) and the NaN rule are Ragas'; an answer with no sentence is NaN.
    Measured (bench/RESULTS.md, "Completeness candidates", issue 19; constants chosen on the
    development halves, figures on the held-back halves): above the Ragas value on both
    development sets (HaluQuestQA Spearman +0.12, pairwise +0.16; MedQuAD/LiveQA AUROC +0.11,
    Spearman +0.16; those four CIs above 0, no figure below), and about as blind to length as
    the Ragas value.
    It is not a completeness score: on MedQuAD's excellent-vs-incomplete pairs it is no better
    than the Ragas value, and the plain cos(question, answer) stays ahead of it on MedQuAD.

Every result carries ``ragas_value`` whatever the mode, so the two can be compared row by row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relevancy.core.text import split_sentences

__all__ = [
    "MODES",
    "MODE_DESCRIPTIONS",
    "AUTO_MODE",
    "FOCUS_CONTEXT",
    "FOCUS_RAGAS_WEIGHT",
    "FocusBreakdown",
    "BLEND_OFF_BELOW",
    "BLEND_OFF_WEIGHT",
    "BLEND_RAGAS_WEIGHT",
    "BlendBreakdown",
    "off_question",
    "blend_breakdown",
    "check_mode",
    "resolve_mode",
    "describe_mode",
    "split_sentences",
    "focus_parts",
    "focus_breakdown",
    "focus_score",
]

MODES = ("auto", "ragas", "focus", "blend")
#: What ``"auto"`` becomes, for the embedded offline models and for API models. A mode may
#: replace ``"ragas"`` here only when it beats the Ragas value from the same generations on
#: both development sets (``python -m bench.agreement``); today none does.
AUTO_MODE = {"embedded": "ragas", "api": "ragas"}
#: Share of each neighbour's similarity mixed into a sentence's (``a`` above).
FOCUS_CONTEXT = 0.25
#: Weight of the Ragas value in the focus score (``w`` above).
FOCUS_RAGAS_WEIGHT = 0.3
#: A sentence under this similarity to the question and to each of its parts answers nothing
#: asked (also the explanations' "off topic" line, ``relevancy.core.triage.SENTENCE_LOW``).
BLEND_OFF_BELOW = 0.25
#: ``p`` above: what a share of off-question sentences costs the answer's similarity.
BLEND_OFF_WEIGHT = 0.5
#: ``w`` above: weight of the Ragas value in the blend score.
BLEND_RAGAS_WEIGHT = 0.5

#: One plain-words line per mode (the CLI's help, the dashboard's captions and the report).
MODE_DESCRIPTIONS = {
    "ragas": "the Ragas Answer Relevancy: mean cosine of the generated questions to the question",
    "focus": "how evenly the answer's sentences stay on the question, Ragas value mixed in; "
    "prefers short, one-note answers (measured to help on one data set and hurt on another)",
    "blend": "half the Ragas value, half the answer's own similarity to the question less its "
    "sentences that answer nothing asked (measured above the Ragas value on both data sets)",
    "auto": "ragas, for every backend",
}


def check_mode(mode: object) -> str:
    """Return ``mode`` if it is a known mode name, else raise ``ValueError`` quoting it."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    return mode


def resolve_mode(mode: str, *, embedded: bool) -> str:
    """The mode scores will be in: ``mode`` itself, or what ``"auto"`` means for the backends.

    ``embedded`` is true when both backends are the embedded offline models (their ``embedded``
    attribute).

    Examples
    --------
    >>> resolve_mode("auto", embedded=True), resolve_mode("focus", embedded=False)
    ('ragas', 'focus')
    """
    check_mode(mode)
    return AUTO_MODE["embedded" if embedded else "api"] if mode == "auto" else mode


def describe_mode(mode: str) -> str:
    """One plain-words line saying what a score of ``mode`` is."""
    return MODE_DESCRIPTIONS[check_mode(mode)]


def focus_parts(similarities: Sequence[float], context: float = FOCUS_CONTEXT) -> np.ndarray:
    """Each sentence's similarity with ``context`` of each neighbour's mixed in (``r_j``)."""
    c = np.asarray(similarities, dtype=np.float64)
    if c.size < 2:
        return c.copy()
    padded = np.concatenate([c[:1], c, c[-1:]])
    return (1 - 2 * context) * c + context * padded[:-2] + context * padded[2:]


@dataclass(frozen=True)
class FocusBreakdown:
    """Every number of a focus score, for the worked formula and the sentence table."""

    similarities: tuple[float, ...]  #: ``c_j``, each sentence against the question
    in_context: tuple[float, ...]  #: ``r_j``, with the neighbours mixed in
    mean: float  #: mean of ``r``
    spread: float  #: population std of ``r``
    ragas_value: float
    weight: float  #: ``w``
    noncommittal: bool
    #: ``(1 - w) * (mean - spread) + w * ragas`` before the noncommittal rule (NaN when undefined)
    before_zeroing: float
    value: float  #: the score: ``before_zeroing``, 0 when noncommittal, NaN when undefined

    def without(self, j: int, context: float = FOCUS_CONTEXT) -> float:
        """The score with sentence ``j`` left out (NaN when it is the only one)."""
        rest = self.similarities[:j] + self.similarities[j + 1 :]
        return focus_breakdown(
            rest,
            self.ragas_value,
            noncommittal=self.noncommittal,
            weight=self.weight,
            context=context,
        ).value


def focus_breakdown(
    sentence_similarities: Sequence[float],
    ragas_value: float,
    *,
    noncommittal: bool = False,
    weight: float = FOCUS_RAGAS_WEIGHT,
    context: float = FOCUS_CONTEXT,
) -> FocusBreakdown:
    """The focus score with all its parts; NaN when ``ragas_value`` is NaN or no sentence."""
    c = np.asarray(sentence_similarities, dtype=np.float64)
    r = focus_parts(c, context)
    nan = float("nan")
    if r.size == 0 or math.isnan(ragas_value):
        mean = spread = before = value = nan
    else:
        mean, spread = float(r.mean()), float(r.std())
        before = (1 - weight) * (mean - spread) + weight * float(ragas_value)
        value = 0.0 if noncommittal else before
    return FocusBreakdown(
        similarities=tuple(float(x) for x in c),
        in_context=tuple(float(x) for x in r),
        mean=mean,
        spread=spread,
        ragas_value=float(ragas_value),
        weight=weight,
        noncommittal=bool(noncommittal),
        before_zeroing=before,
        value=value,
    )


def focus_score(
    sentence_similarities: Sequence[float],
    ragas_value: float,
    *,
    noncommittal: bool = False,
    weight: float = FOCUS_RAGAS_WEIGHT,
    context: float = FOCUS_CONTEXT,
) -> float:
    """The focus score; NaN when ``ragas_value`` is NaN or there is no sentence.

    Examples
    --------
    >>> round(focus_score([0.5, 0.5], 0.8), 3)
    0.59
    >>> focus_score([0.5, 0.1], 0.8, noncommittal=True)
    0.0
    """
    return focus_breakdown(
        sentence_similarities,
        ragas_value,
        noncommittal=noncommittal,
        weight=weight,
        context=context,
    ).value


def off_question(
    similarities: Sequence[float],
    part_similarities: Sequence[float] | None = None,
    below: float = BLEND_OFF_BELOW,
) -> list[bool]:
    """For each sentence: True when it answers nothing asked, i.e. its similarity to the question
    (``similarities``) and its best similarity to a part of the question (``part_similarities``,
    multi-part questions only) are both below ``below``.

    >>> off_question([0.6, 0.1, 0.2], [0.5, 0.1, 0.4])
    [False, True, False]
    """
    best = [float(s) for s in similarities]
    if part_similarities is not None:
        best = [max(s, float(p)) for s, p in zip(best, part_similarities)]
    return [s < below for s in best]


@dataclass(frozen=True)
class BlendBreakdown:
    """Every number of a blend score, for the worked formula and the sentence table."""

    answer_similarity: float  #: cos(E(response), E(user_input))
    sentences: int  #: the answer's sentences
    off: int  #: of those, how many answer nothing asked
    ragas_value: float
    noncommittal: bool
    #: ``(1 - w) * (answer_similarity - p * off / sentences) + w * ragas`` (NaN when undefined)
    before_zeroing: float
    value: float  #: the score: ``before_zeroing``, 0 when noncommittal, NaN when undefined
    off_weight: float = BLEND_OFF_WEIGHT  #: ``p``
    weight: float = BLEND_RAGAS_WEIGHT  #: ``w``

    @property
    def off_share(self) -> float:
        return self.off / self.sentences if self.sentences else float("nan")


def blend_breakdown(
    answer_similarity: float,
    off: Sequence[bool],
    ragas_value: float,
    *,
    noncommittal: bool = False,
    off_weight: float = BLEND_OFF_WEIGHT,
    weight: float = BLEND_RAGAS_WEIGHT,
) -> BlendBreakdown:
    """The blend score with its parts; NaN when ``ragas_value`` or ``answer_similarity`` is NaN
    or the answer has no sentence. ``off``: per sentence, whether it answers nothing asked
    (:func:`off_question`).

    Examples
    --------
    >>> round(blend_breakdown(0.8, [False, True], 0.6).value, 3)
    0.575
    >>> blend_breakdown(0.8, [False], 0.6, noncommittal=True).value
    0.0
    """
    n, k = len(off), int(sum(bool(x) for x in off))
    nan = float("nan")
    if not n or math.isnan(float(answer_similarity)) or math.isnan(float(ragas_value)):
        before = value = nan
    else:
        own = float(answer_similarity) - off_weight * k / n
        before = (1 - weight) * own + weight * float(ragas_value)
        value = 0.0 if noncommittal else before
    return BlendBreakdown(
        answer_similarity=float(answer_similarity),
        sentences=n,
        off=k,
        ragas_value=float(ragas_value),
        noncommittal=bool(noncommittal),
        before_zeroing=before,
        value=value,
        off_weight=off_weight,
        weight=weight,
    )
