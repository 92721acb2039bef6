"""Scoring modes: what number a result's ``value`` is.

``"ragas"``
    The Ragas Answer Relevancy, exactly (see ``relevancy/_formula.py``): the mean cosine of the
    N questions the LLM wrote back from the response to the user's question.
``"focus"``
    A sentence-level view for long answers, measured to agree better with people on the
    embedded default (see ``bench/RESULTS.md``). The response is split into sentences; each
    sentence ``j`` gets ``c_j = cos(E(sentence_j), E(user_input))``, then a little context from
    its neighbours::

        r_j   = (1 - 2a) * c_j + a * c_(j-1) + a * c_(j+1)       a = 0.25, edges repeat
        view  = mean(r) - std(r)                                  on topic, and evenly so
        focus = (1 - w) * view + w * ragas                        w = 0.3

    ``ragas`` is the Ragas value from the same generations, so the LLM's questions still count.
    The noncommittal rule is the same as Ragas' (0 when the response is judged noncommittal),
    and the score is NaN when no generation is usable, as in ``"ragas"``. A one-sentence answer
    has ``view = cos(E(response), E(user_input))``.
``"auto"``
    ``"focus"`` with the embedded default models (SmolLM2 + MiniLM), where it was measured;
    ``"ragas"`` with any other backend.

Every result carries ``ragas_value`` whatever the mode, so the two can be compared row by row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

__all__ = [
    "MODES",
    "FOCUS_CONTEXT",
    "FOCUS_RAGAS_WEIGHT",
    "check_mode",
    "describe_mode",
    "split_sentences",
    "focus_parts",
    "focus_score",
]

MODES = ("auto", "ragas", "focus")
#: Share of each neighbour's similarity mixed into a sentence's (``a`` above).
FOCUS_CONTEXT = 0.25
#: Weight of the Ragas value in the focus score (``w`` above).
FOCUS_RAGAS_WEIGHT = 0.3
#: Longer responses are cut to this many sentences (the rest is left out and noted).
MAX_SENTENCES = 64

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_HAS_WORD = re.compile(r"\w", re.UNICODE)


def check_mode(mode: object) -> str:
    """Return ``mode`` if it is a known mode name, else raise ``ValueError`` quoting it."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    return mode


_DESCRIPTIONS = {
    "ragas": "the Ragas Answer Relevancy: mean cosine of the generated questions to the question",
    "focus": "how evenly the answer's sentences stay on the question, Ragas value mixed in",
    "auto": "focus with the embedded models, ragas with any other backend",
}


def describe_mode(mode: str) -> str:
    """One plain-words line saying what a score of ``mode`` is."""
    return _DESCRIPTIONS[check_mode(mode)]


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split after ``. ! ?`` followed by space, and at line breaks.

    Pieces without a letter or digit (a lone ``-`` or ``*``) are dropped.

    Examples
    --------
    >>> split_sentences("Paris is the capital. It is in France!\\n- Edit: typo")
    ['Paris is the capital.', 'It is in France!', '- Edit: typo']
    """
    parts = [p.strip() for p in _SENTENCE_END.split(text)]
    return [p for p in parts if _HAS_WORD.search(p)][:MAX_SENTENCES]


def focus_parts(similarities: Sequence[float], context: float = FOCUS_CONTEXT) -> np.ndarray:
    """Each sentence's similarity with ``context`` of each neighbour's mixed in (``r_j``)."""
    c = np.asarray(similarities, dtype=np.float64)
    if c.size < 2:
        return c.copy()
    padded = np.concatenate([c[:1], c, c[-1:]])
    return (1 - 2 * context) * c + context * padded[:-2] + context * padded[2:]


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
    r = focus_parts(sentence_similarities, context)
    if r.size == 0 or math.isnan(ragas_value):
        return float("nan")
    if noncommittal:
        return 0.0
    view = float(r.mean() - r.std())
    return (1 - weight) * view + weight * float(ragas_value)
