"""Deprecated: ``relevancy.distributed`` is an alias kept for one release (the Ray engine moved to
relevancy.scoring.distributed).

Importing it warns (:class:`DeprecationWarning`); it will be removed in 0.3.
"""

from __future__ import annotations

import warnings

from relevancy.scoring.distributed import *  # noqa: F403
from relevancy.scoring.distributed import __all__ as _moved

__all__ = list(_moved)

warnings.warn(
    "relevancy.distributed is deprecated and will be removed in 0.3: the Ray engine moved to "
    "relevancy.scoring.distributed",
    DeprecationWarning,
    stacklevel=2,
)
