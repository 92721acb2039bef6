"""The Compare page's logic, without Streamlit: the pairs table and the verdict in words."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from relevancy.dashboard.views.format import esc, fmt, pct
from relevancy.io.writer import csv_bytes

__all__ = ["lowest", "no_regressions", "pairs_csv", "pairs_table", "verdict", "win_rate_text"]


def lowest(frame: pd.DataFrame, limit: int | None, column: str = "diff") -> pd.DataFrame:
    """The ``limit`` rows of ``frame`` lowest in ``column``, in the order a stable sort gives
    (equal values in their rows' order, missing values last), without sorting every row (half
    a million pairs sorted on every rerun were a tenth of a second); all of them sorted when
    ``limit`` is None."""
    if limit is None or len(frame) <= limit:
        return frame.sort_values(column, kind="stable")
    key = frame[column].to_numpy(dtype=float)
    key = np.where(np.isnan(key), np.inf, key)
    kth = np.partition(key, limit - 1)[limit - 1]
    below = np.flatnonzero(key < kth)
    pick = np.concatenate([below, np.flatnonzero(key == kth)[: limit - len(below)]])
    order = np.lexsort((pick, key[pick]))  # by value, then by position: stable
    return frame.iloc[pick[order]]


def pairs_table(
    paired: pd.DataFrame,
    *,
    label_a: str,
    label_b: str,
    on_ragas: bool,
    mode_a: str,
    mode_b: str,
    limit: int | None = None,
) -> pd.DataFrame:
    """Every pair (the ``limit`` lowest differences when given), regressions first, with
    readable column names.

    Beside non-Ragas scores each side's Ragas value; each side's mode when the modes differ.
    """
    table = lowest(paired, limit)
    same_mode = mode_a == mode_b and mode_a != "mixed"
    beside = not on_ragas and mode_a != "ragas" and "ragas_value_a" in table
    extra = ["ragas_value_a", "ragas_value_b"] if beside else []
    modes = ["mode_a", "mode_b"] if not same_mode and "mode_a" in table else []
    suffix = " (Ragas value)" if on_ragas else ""
    names = {
        "user_input": "question",
        "score_a": f"{label_a}{suffix}",
        "score_b": f"{label_b}{suffix}",
        "ragas_value_a": f"{label_a} Ragas value",
        "ragas_value_b": f"{label_b} Ragas value",
        "diff": "B − A",
        "mode_a": f"{label_a} mode",
        "mode_b": f"{label_b} mode",
    }
    order = ("id", "user_input", "score_a", "score_b", *extra, "diff", "outcome", *modes)
    return table[[c for c in order if c in table]].rename(columns=names)


def verdict(summary: dict[str, Any], label_a: str, label_b: str) -> str:
    """Which side is more relevant on average, in one markdown sentence."""
    lo, hi = summary["ci_low"], summary["ci_high"]
    ci = f"mean difference {fmt(summary['mean_diff'])}, 95% CI [{fmt(lo)}, {fmt(hi)}]"
    if not summary["compared"]:
        return (
            f"**Nothing to compare**: none of the {summary['pairs']:,} pairs has a score on both "
            "sides (a side's scoring failed on every one of them; see its rows on the Dataset "
            "page)."
        )
    if math.isnan(lo):
        return "Too few pairs for a confidence interval."
    if lo > 0:
        return f"**{esc(label_b)} is more relevant on average** ({ci}: above 0)."
    if hi < 0:
        return f"**{esc(label_a)} is more relevant on average** ({ci}: below 0)."
    return (
        f"**No clear winner**: the {ci} includes 0, so the gap may be noise. Look at the "
        "regressions below."
    )


def no_regressions(summary: dict[str, Any], label_a: str, label_b: str) -> str:
    """The all-clear when no pair is a regression, true to what was compared: the pairs scored
    on both sides, and those left out because a side failed."""
    if not summary["compared"]:
        return (
            f"No pair has a score on both sides, so nothing says whether {esc(label_b)} does "
            f"better or worse than {esc(label_a)}."
        )
    left_out = (
        f" ({summary['nan_pairs']:,} of {summary['pairs']:,} pairs left out: a side failed)"
        if summary["nan_pairs"]
        else ""
    )
    n = summary["compared"]
    return (
        f"No regressions: {esc(label_b)} never scores worse than {esc(label_a)} beyond the "
        f"margin on the {n:,} pair{'s' if n != 1 else ''} scored on both sides{left_out}."
    )


def win_rate_text(summary: dict[str, Any], label_a: str, label_b: str) -> str | None:
    """B's win rate in one markdown sentence: its wins among the pairs that are not ties, as a
    percentage with the Wilson 95% interval, the counts, and the ties left out. None when no
    pair was compared."""
    if not summary["compared"]:
        return None
    wins, losses, ties = summary["wins"], summary["losses"], summary["ties"]
    if not wins + losses:
        return f"Every pair compared is a tie at this margin ({ties:,}): no side wins one."
    return (
        f"**{esc(label_b)} wins {pct(summary['win_rate'])} of the pairs that are not ties** "
        f"(95% CI {pct(summary['win_low'])} to {pct(summary['win_high'])}, Wilson; {wins:,} of "
        f"{wins + losses:,}, {esc(label_a)} the other {losses:,}; {ties:,} "
        f"tie{'s' if ties != 1 else ''} left out)."
    )


def pairs_csv(paired: pd.DataFrame, **table: Any) -> Callable[[], bytes]:
    """Every pair as the table shows them (:func:`pairs_table`'s ``table`` arguments, no limit),
    as CSV with spreadsheet formulas defused; built when called (a download button's data: half
    a million pairs take a moment, and only a click needs them)."""
    return lambda: csv_bytes(pairs_table(paired, **table))
