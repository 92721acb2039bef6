"""Deprecated: ``relevancy.batch`` is an alias kept for one release (file scoring moved to
relevancy.scoring.files (or `from relevancy import score_file`)).

Importing it warns (:class:`DeprecationWarning`); it will be removed in 0.3.
"""

from __future__ import annotations

import warnings

from relevancy.scoring.files import *  # noqa: F403
from relevancy.scoring.files import __all__ as _moved

__all__ = list(_moved)

warnings.warn(
    "relevancy.batch is deprecated and will be removed in 0.3: file scoring moved to "
    "relevancy.scoring.files (or `from relevancy import score_file`)",
    DeprecationWarning,
    stacklevel=2,
)
