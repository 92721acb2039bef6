"""Numbers and missing values in words, the one way every page, report and CLI line writes
them: a share never rounded to 0 % or 100 % when it is not exactly so, and a missing value
(None, NaN, an empty cell) always shown as :data:`MISSING`.

>>> percent(0.998), percent(0.9999), percent(0.002), percent(0.00001), percent(1.0)
('99.8%', '>99.9%', '0.2%', '<0.1%', '100%')
>>> percent(0.5), percent(0.12345, 1), percent(float("nan"))
('50%', '12.3%', '–')
>>> cell_text(None), cell_text(float("nan")), cell_text(""), cell_text(0), cell_text("a")
('—', '—', '—', '0', 'a')
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MISSING", "NO_NUMBER", "is_missing", "cell_text", "percent", "short_duration"]

#: a missing value (a label not given, an input cell left empty) wherever it is shown
MISSING = "—"
#: a figure that cannot be worked out (no rows, a failed score)
NO_NUMBER = "–"


def is_missing(value: Any) -> bool:
    """None, NaN (float, numpy, pandas NA/NaT) or text with nothing in it."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    try:
        return bool(value != value)  # NaN, NaT and pd.NA are not equal to themselves
    except (TypeError, ValueError):  # pd.NA's comparison cannot be made a bool
        return True


def cell_text(value: Any) -> str:
    """A cell as text: :data:`MISSING` for a missing value, else the value's own text."""
    return MISSING if is_missing(value) else str(value)


def percent(share: Any, digits: int = 0) -> str:
    """``share`` (0-1) as a percentage with ``digits`` decimals, one more when that rounds a
    share strictly between 0 and 1 to 0 % or 100 %; still so, ``<0.1%`` or ``>99.9%``."""
    try:
        v = float(share)
    except (TypeError, ValueError):
        return NO_NUMBER
    if math.isnan(v):
        return NO_NUMBER
    if v <= 0.0 or v >= 1.0:
        return f"{100 * v:.{digits}f}%"
    for d in (digits, digits + 1):
        text = f"{100 * v:.{d}f}"
        if 0.0 < float(text) < 100.0:
            return f"{text}%"
    step = 10.0 ** -(digits + 1)
    return f"<{step:.{digits + 1}f}%" if v < 0.5 else f">{100 - step:.{digits + 1}f}%"


def short_duration(seconds: float) -> str:
    """A duration short enough for a card (at most 9 characters): ``"45 s"``, ``"12 min"``,
    ``"5.6 h"``, ``"11.6 days"``.

    >>> short_duration(45), short_duration(720), short_duration(20_000), short_duration(1e6)
    ('45 s', '12 min', '5.6 h', '11.6 days')
    """
    if not math.isfinite(seconds):
        return NO_NUMBER
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 120 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    days = seconds / 86_400
    return f"{days:.1f} days" if days < 1000 else f"{days:,.0f} d"
