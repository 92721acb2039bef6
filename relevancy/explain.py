"""Deprecated: ``relevancy.explain`` is an alias kept for one release (explanations moved to
relevancy.analysis.explain, the triage to relevancy.core.triage).

Importing it warns (:class:`DeprecationWarning`); it will be removed in 0.3.
"""

from __future__ import annotations

import warnings

from relevancy.analysis.explain import (  # noqa: F401
    PULLS_DOWN,
    Analysis,
    Explanation,
    PartCoverage,
    Reason,
    SentenceRow,
    aanalyze,
    analyze,
    blend_of,
    explain,
    explain_result,
    focus_of,
    worked_mean,
)
from relevancy.core.triage import (  # noqa: F401
    DRIFT_BELOW,
    REASONS,
    SENTENCE_LOW,
    SPREAD_ABOVE,
    SentenceScore,
    Triage,
    question_hygiene,
    sentences_from_parts,
    triage,
)

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
    "REASONS",
    "Triage",
    "triage",
    "question_hygiene",
    "SentenceScore",
    "sentences_from_parts",
    "DRIFT_BELOW",
    "SPREAD_ABOVE",
    "SENTENCE_LOW",
]

warnings.warn(
    "relevancy.explain is deprecated and will be removed in 0.3: explanations moved to "
    "relevancy.analysis.explain, the triage to relevancy.core.triage",
    DeprecationWarning,
    stacklevel=2,
)
