"""Deprecated: ``relevancy.explain`` is an alias kept for one release (explanations moved to
relevancy.analysis.explain, the triage to relevancy.core.triage).

Importing it warns (:class:`DeprecationWarning`); it will be removed in 0.3.
"""

from __future__ import annotations

import warnings

from relevancy.analysis import explain as _explain
from relevancy.analysis.explain import *  # noqa: F403
from relevancy.core import triage as _triage
from relevancy.core.triage import *  # noqa: F403

__all__ = [*_explain.__all__, *_triage.__all__]

warnings.warn(
    "relevancy.explain is deprecated and will be removed in 0.3: explanations moved to "
    "relevancy.analysis.explain, the triage to relevancy.core.triage",
    DeprecationWarning,
    stacklevel=2,
)
