"""Deprecated: ``relevancy.distributed`` is an alias kept for one release (the Ray engine moved to
relevancy.scoring.distributed).

Importing it warns (:class:`DeprecationWarning`); it will be removed in 0.3.
"""

from __future__ import annotations

import warnings

from relevancy.scoring.distributed import (  # noqa: F401
    BATCH_ROWS,
    READ_FORMATS,
    ScoreBatches,
    connect,
    default_workers,
    read_dataset,
    score_batch,
    score_dataset,
    score_path,
)

__all__ = [
    "BATCH_ROWS",
    "READ_FORMATS",
    "ScoreBatches",
    "score_batch",
    "score_dataset",
    "score_path",
    "connect",
    "read_dataset",
    "default_workers",
]

warnings.warn(
    "relevancy.distributed is deprecated and will be removed in 0.3: the Ray engine moved to "
    "relevancy.scoring.distributed",
    DeprecationWarning,
    stacklevel=2,
)
