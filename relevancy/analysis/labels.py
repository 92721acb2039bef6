"""Human labels read from a column or set in the dashboard: binary (1/0, yes/no,
relevant/irrelevant, good/bad...) or graded numbers, with the words :data:`LABEL_WORDS` reads
as good and bad; what :mod:`relevancy.analysis.agreement` holds scores against."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from relevancy.errors import InputError

__all__ = [
    "LABEL_WORDS",
    "label_value",
    "parse_labels",
    "label_kind",
    "positive_labels",
    "default_cut",
]

#: text read as a good (1) or a bad (0) label, compared without case or surrounding spaces
LABEL_WORDS: dict[str, float] = {
    **dict.fromkeys(
        (
            "1",
            "yes",
            "y",
            "true",
            "t",
            "relevant",
            "good",
            "pass",
            "correct",
            "positive",
            "ok",
            "👍",
        ),
        1.0,
    ),
    **dict.fromkeys(
        (
            "0",
            "no",
            "n",
            "false",
            "f",
            "irrelevant",
            "not relevant",
            "not_relevant",
            "bad",
            "fail",
            "incorrect",
            "negative",
            "👎",
        ),
        0.0,
    ),
}
_MISSING = {"", "nan", "none", "null", "na", "n/a", "-"}


def label_value(value: Any) -> float:
    """One label as a number: NaN when missing, 1/0 for yes/no-style words, else the number.

    Raises :class:`ValueError` for anything else.

    >>> [label_value(v) for v in ("yes", "No", 0.75, "4", "", None)]
    [1.0, 0.0, 0.75, 4.0, nan, nan]
    """
    if value is None:
        return math.nan
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        x = float(value)
        if math.isinf(x):
            raise ValueError(value)
        return x
    text = str(value).strip().lower()
    if text in _MISSING:
        return math.nan
    if text in LABEL_WORDS:
        return LABEL_WORDS[text]
    try:
        x = float(text)
    except ValueError:
        raise ValueError(value) from None
    if not math.isfinite(x):
        raise ValueError(value)
    return x


def parse_labels(values: Sequence[Any], *, column: str = "label", start: int = 0) -> np.ndarray:
    """Labels as numbers (:func:`label_value`), NaN where a row has none.

    Raises :class:`InputError` with one line quoting the first value that is not a label
    (rows numbered from 1, plus ``start``, as the CLI's notes are).

    >>> parse_labels(["yes", "no", "", "yes"]).tolist()
    [1.0, 0.0, nan, 1.0]
    """
    out = np.empty(len(values), dtype=np.float64)
    for i, value in enumerate(values):
        try:
            out[i] = label_value(value)
        except ValueError:
            shown = str(value)
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            raise InputError(
                f"column {column!r}, row {start + i + 1}: {shown!r} is not a label: use two "
                "values such as 1/0, yes/no, true/false, relevant/irrelevant, good/bad, or "
                "numbers for graded labels"
            ) from None
    return out


def label_kind(labels: Sequence[float]) -> str:
    """``"binary"`` (at most two distinct values, or only 0 and 1), ``"graded"`` or ``"none"``.

    >>> label_kind([1, 0, 1]), label_kind([1, 2, 3, 2]), label_kind([4, 5]), label_kind([])
    ('binary', 'graded', 'binary', 'none')
    """
    x = np.asarray(labels, dtype=np.float64)
    distinct = np.unique(x[np.isfinite(x)])
    if not distinct.size:
        return "none"
    if distinct.size == 2 or set(distinct.tolist()) <= {0.0, 1.0}:
        return "binary"
    return "graded"


def positive_labels(labels: Sequence[float], cut: float | None = None) -> np.ndarray:
    """Which labels are good: 1.0, 0.0, or NaN where there is no label.

    Binary labels: the higher of the two values (1 for 1/0). Graded labels: ``label >= cut``,
    ``cut`` defaulting to the middle of the labels' range (2.5 for labels 1 to 4, so grade 3
    and up is good). A ``cut`` given for binary labels is used the same way.
    """
    x = np.asarray(labels, dtype=np.float64)
    finite = np.isfinite(x)
    out = np.full(x.shape, np.nan)
    if not finite.any():
        return out
    if cut is None:
        distinct = np.unique(x[finite])
        if label_kind(x) == "binary":
            cut = 1.0 if set(distinct.tolist()) <= {0.0, 1.0} else float(distinct.max())
        else:
            cut = float(distinct.min() + distinct.max()) / 2
    out[finite] = (x[finite] >= cut).astype(np.float64)
    return out


def default_cut(labels: Sequence[float]) -> float | None:
    """The cut :func:`positive_labels` uses for graded labels (None for binary or none)."""
    x = np.asarray(labels, dtype=np.float64)
    x = x[np.isfinite(x)]
    if label_kind(x) != "graded":
        return None
    return float(x.min() + x.max()) / 2
