"""Scoring modes: what number a result's ``value`` is.

``"ragas"`` (what ``"auto"`` gives, for every backend)
    The Ragas Answer Relevancy, exactly (see ``relevancy/_formula.py``): the mean cosine of the
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

Every result carries ``ragas_value`` whatever the mode, so the two can be compared row by row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relevancy._text import split_sentences

__all__ = [
    "MODES",
    "MODE_DESCRIPTIONS",
    "AUTO_MODE",
    "FOCUS_CONTEXT",
    "FOCUS_RAGAS_WEIGHT",
    "FocusBreakdown",
    "check_mode",
    "resolve_mode",
    "describe_mode",
    "split_sentences",
    "focus_parts",
    "focus_breakdown",
    "focus_score",
]

MODES = ("auto", "ragas", "focus")
#: What ``"auto"`` becomes, for the embedded offline models and for API models. A mode may
#: replace ``"ragas"`` here only when it beats the Ragas value from the same generations on
#: both development sets (``bench/agreement.py``); today none does.
AUTO_MODE = {"embedded": "ragas", "api": "ragas"}
#: Share of each neighbour's similarity mixed into a sentence's (``a`` above).
FOCUS_CONTEXT = 0.25
#: Weight of the Ragas value in the focus score (``w`` above).
FOCUS_RAGAS_WEIGHT = 0.3

#: One plain-words line per mode (the CLI's help, the dashboard's captions and the report).
MODE_DESCRIPTIONS = {
    "ragas": "the Ragas Answer Relevancy: mean cosine of the generated questions to the question",
    "focus": "how evenly the answer's sentences stay on the question, Ragas value mixed in; "
    "prefers short, one-note answers (measured to help on one data set and hurt on another)",
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
            rest, self.ragas_value, noncommittal=self.noncommittal, weight=self.weight,
            context=context,
        ).value  # fmt: skip


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
        sentence_similarities, ragas_value, noncommittal=noncommittal, weight=weight,
        context=context,
    ).value  # fmt: skip
