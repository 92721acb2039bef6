"""Deprecated: ``relevancy.store`` is an alias kept for one release (the run store moved to
relevancy.runs (or `from relevancy import RunStore`)).

Importing it warns (:class:`DeprecationWarning`); it will be removed in 0.3.
"""

from __future__ import annotations

import warnings

from relevancy.paths import default_store_path
from relevancy.runs import *  # noqa: F403
from relevancy.runs import __all__ as _moved

__all__ = [*_moved, "default_store_path"]

warnings.warn(
    "relevancy.store is deprecated and will be removed in 0.3: the run store moved to "
    "relevancy.runs (or `from relevancy import RunStore`)",
    DeprecationWarning,
    stacklevel=2,
)
