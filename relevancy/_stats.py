"""Summary statistics of a set of scores (NaN-aware), with bootstrap confidence intervals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["bootstrap_ci", "summarize"]


def bootstrap_ci(
    values: Sequence[float], *, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of the finite values (NaNs when fewer than 2)."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    return (float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha)))


def summarize(values: Sequence[float], *, threshold: float = 0.5) -> dict[str, Any]:
    """Rows, NaN count, mean with a 95% bootstrap CI, median, and share below ``threshold``."""
    x = np.asarray(values, dtype=np.float64)
    finite = x[np.isfinite(x)]
    lo, hi = bootstrap_ci(finite)
    return {
        "rows": int(x.size),
        "scored": int(finite.size),
        "nan": int(x.size - finite.size),
        "mean": float(finite.mean()) if finite.size else float("nan"),
        "ci_low": lo,
        "ci_high": hi,
        "median": float(np.median(finite)) if finite.size else float("nan"),
        "threshold": threshold,
        "below_threshold": float((finite < threshold).mean()) if finite.size else float("nan"),
    }
