"""Deprecated: ``relevancy.store`` is an alias kept for one release (the run store moved to
relevancy.runs (or `from relevancy import RunStore`)).

Importing it warns (:class:`DeprecationWarning`); it will be removed in 0.3.
"""

from __future__ import annotations

import warnings

from relevancy.paths import (  # noqa: F401
    default_store_path,
)
from relevancy.runs import (  # noqa: F401
    DEMO_RUN_NAME,
    EXPORT_FORMATS,
    SORTS,
    RowQuery,
    RunData,
    RunInfo,
    RunStore,
    clean_settings,
    demo_inputs,
    demo_results,
    import_demo,
)

__all__ = [
    "RunStore",
    "RunInfo",
    "RunData",
    "RowQuery",
    "SORTS",
    "clean_settings",
    "import_demo",
    "demo_inputs",
    "demo_results",
    "DEMO_RUN_NAME",
    "EXPORT_FORMATS",
    "default_store_path",
]

warnings.warn(
    "relevancy.store is deprecated and will be removed in 0.3: the run store moved to "
    "relevancy.runs (or `from relevancy import RunStore`)",
    DeprecationWarning,
    stacklevel=2,
)
