"""Option values checked where argparse reads them: numbers that must be finite and within a
range, and spans and times that must parse. A bad value is refused by the parser in one line
that quotes it and says what to give (``relevancy score: error: argument --poll: 'nan' is not
...``), before the command does anything.

Standard library only, so that a usage error imports nothing heavy.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from relevancy.errors import InputError

__all__ = [
    "number",
    "whole",
    "span",
    "when",
    "parse_when",
    "DAY_SECONDS",
    "SEED_MAX",
    "MAX_CONCURRENCY",
]

#: a day in seconds: the longest wait any option asks for
DAY_SECONDS = 86_400
#: the largest ``--seed`` (every generator takes a signed 32-bit seed)
SEED_MAX = 2**31 - 1
#: the most requests or rows at once ``--concurrency`` may ask for
MAX_CONCURRENCY = 4096


def _n(x: float) -> str:
    """``2147483647``, ``0.5``: a bound as it is typed."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _range(low: float | None, high: float | None, above: bool, kind: str) -> str:
    """``a number from 0 to 1``, ``a whole number of 2 or more``, ``a number above 0 and at
    most 86400``..."""
    if low is None and high is None:
        return kind
    if low is None:
        return f"{kind} of at most {_n(high)}"  # type: ignore[arg-type]
    if above:
        return f"{kind} above {_n(low)}" + (f" and at most {_n(high)}" if high is not None else "")
    if high is None:
        return f"{kind} of {_n(low)} or more"
    return f"{kind} from {_n(low)} to {_n(high)}"


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "...")


def number(
    low: float | None = None,
    high: float | None = None,
    *,
    above: bool = False,
    unit: str = "",
) -> Callable[[str], float]:
    """An argparse ``type``: a finite float within ``low``..``high`` (``above``: ``low`` itself
    is refused too); ``unit`` names what it counts in the message (``"seconds"``).

    >>> number(0, 1)("0.25")
    0.25
    >>> number(0, 1)("nan")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 'nan' is not a number from 0 to 1
    """
    kind = f"a number of {unit}" if unit else "a number"
    wanted = _range(low, high, above, kind)

    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        fits = (
            math.isfinite(value)
            and (low is None or (value > low if above else value >= low))
            and (high is None or value <= high)
        )
        if not fits:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not {wanted}")
        return value

    check.__name__ = "number"
    return check


def whole(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer within ``low``..``high``.

    >>> whole(1, 10)("3")
    3
    >>> whole(1, 10)("1e308")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '1e308' is not a whole number from 1 to 10
    """
    wanted = _range(low, high, False, "a whole number")

    def check(text: str) -> int:
        value: int | None
        try:
            value = int(text)
        except ValueError:
            value = None
        too_low = value is not None and low is not None and value < low
        if value is None or too_low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not {wanted}")
        return value

    check.__name__ = "whole"
    return check


def span(text: str) -> str:
    """An argparse ``type`` for ``--window``-like options: ``text`` itself, once it parses as a
    span of time (:func:`relevancy.analysis.alerts.parse_window`); the command parses it again
    where it uses it."""
    from relevancy.analysis.alerts import parse_window  # lazy: pandas

    try:
        parse_window(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(text: str | None, *, now: datetime | None = None) -> datetime | None:
    """``--since``/``--until`` as a time: an ISO 8601 time (UTC unless it says otherwise) or a
    span back from ``now`` (``30m``, ``24h``, ``7d``, ``2w``); None for None or blank."""
    if text is None or not text.strip():
        return None
    now = now or datetime.now(timezone.utc)
    match = _SPAN.match(text)
    if match:
        return now - timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{text!r} is not a time: give an ISO 8601 time (2025-06-01, 2025-06-01T08:00) or a "
            "span back from now (30m, 24h, 7d)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def when(text: str) -> str:
    """An argparse ``type`` for ``--since``/``--until``: ``text`` itself, once it reads as a
    time or a span back from now (:func:`parse_when`)."""
    try:
        parse_when(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    except (OverflowError, ValueError):  # a span so long it falls before year 1
        raise argparse.ArgumentTypeError(
            f"{_shown(text)} is too far back: give a later time, or a span such as 30m, 24h or 7d"
        ) from None
    return text
