"""Summaries of a results table: its scoring modes, statistics per group, what can be compared.

A results table is what :func:`relevancy.results_to_frame` returns (or a run store loads): one
row per answer with ``score``, ``mode`` and ``ragas_value`` columns. Tables written before modes
existed have no ``mode`` column; their scores were Ragas values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from relevancy.core.stats import summarize

__all__ = ["frame_modes", "mode_label", "comparable_value", "summary_table"]


def frame_modes(frame: pd.DataFrame | None) -> list[str]:
    """The scoring modes of a results table's rows, sorted; rows without one are ``"ragas"``."""
    if frame is None or len(frame) == 0:
        return []
    if "mode" not in frame.columns:
        return ["ragas"]
    # the distinct values first (on the column, in C), then one word each
    return sorted({m if isinstance(m, str) and m else "ragas" for m in pd.unique(frame["mode"])})


def mode_label(modes: Iterable[str]) -> str:
    """One word for a set of modes: the mode, ``"mixed"``, or ``""`` when there is none."""
    modes = sorted(set(modes))
    if not modes:
        return ""
    return modes[0] if len(modes) == 1 else "mixed"


def comparable_value(*frames: pd.DataFrame, prefer: str = "score") -> str:
    """Which column compares the rows of ``frames`` fairly: ``"score"`` or ``"ragas_value"``.

    Scores of different modes mean different things; every row keeps its Ragas value, so rows of
    several modes (in one table or across tables) are compared on ``"ragas_value"``. With one
    mode everywhere, ``prefer`` decides (``"ragas_value"`` to compare Ragas values anyway).
    """
    labels = {mode_label(frame_modes(f)) for f in frames if len(f)}
    has_ragas = all("ragas_value" in f.columns for f in frames)
    same = len(labels) <= 1 and "mixed" not in labels
    if not same:
        return "ragas_value" if has_ragas else "score"
    return prefer if prefer == "score" or has_ragas else "score"


def summary_table(frame: pd.DataFrame, *, threshold: float, by: str | None = None) -> pd.DataFrame:
    """Summary statistics overall and per group (rows, NaN, mean, 95% CI, median, % below).

    Columns ``mode`` (the group's scoring mode, ``"mixed"`` when several) and, when a row is
    not in ``"ragas"`` mode, ``ragas_mean`` (the mean Ragas value of the same rows).
    """
    groups: list[tuple[str, pd.DataFrame]] = [("all rows", frame)]
    if by and by in frame.columns and frame[by].nunique() > 1:
        groups += [(str(k), g) for k, g in frame.groupby(frame[by].astype(str), sort=True)]
    with_ragas = frame_modes(frame) not in ([], ["ragas"]) and "ragas_value" in frame.columns
    rows = []
    for name, part in groups:
        s = summarize(
            pd.to_numeric(part["score"], errors="coerce").to_numpy(dtype=float), threshold=threshold
        )
        row = {
            "group": name,
            "mode": mode_label(frame_modes(part)),
            "rows": s["rows"],
            "NaN": s["nan"],
            "mean": s["mean"],
        }
        if with_ragas:
            ragas = pd.to_numeric(part["ragas_value"], errors="coerce")
            row["ragas_mean"] = float(ragas.mean()) if ragas.notna().any() else math.nan
        row.update(
            {
                "ci_low": s["ci_low"],
                "ci_high": s["ci_high"],
                "median": s["median"],
                "below": s["below_threshold"],
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)
