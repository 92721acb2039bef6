"""What an experiment's scored rows say per variant, and the question x variant matrix.

Both read the rows of a saved experiment (or its output file): ``variant``, ``score``,
``reason``, ``user_input`` and the answer columns :mod:`relevancy.experiments.answering` adds.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from relevancy.core.stats import summarize

__all__ = ["variant_summary", "score_matrix", "failed", "SUMMARY_COLUMNS", "ANSWER_FAILED"]

SUMMARY_COLUMNS = (
    "variant",
    "answers",
    "scored",
    "mean",
    "ci_low",
    "ci_high",
    "below",
    "failed",
    "reasons",
    "answer_tokens",
    "answer_cost",
)


def failed(frame: pd.DataFrame) -> pd.Series:
    """Rows whose answer never came (an error and no text), as opposed to a flagged answer."""
    if "answer_error" not in frame:
        return pd.Series(False, index=frame.index)
    text = frame["response"].map(lambda v: "" if v is None or v != v else str(v).strip())
    return frame["answer_error"].notna() & (text == "")


#: the reason a summary gives a row whose answer failed (no text came back)
ANSWER_FAILED = "answer failed"


def _reasons(group: pd.DataFrame) -> Counter[str]:
    """The rows' reasons, a failed answer's named as such (its own reason may be blank)."""
    given = group["reason"] if "reason" in group else pd.Series("", index=group.index)
    given = pd.Series(
        ["" if r is None or r != r else str(r).strip() for r in given], index=group.index
    )
    return Counter(
        ANSWER_FAILED if lost else (r or "no reason") for r, lost in zip(given, group["_failed"])
    )


def _tokens(frame: pd.DataFrame) -> pd.Series:
    total = pd.Series(0, index=frame.index, dtype="int64")
    for column in ("answer_prompt_tokens", "answer_completion_tokens"):
        if column in frame:
            total += pd.to_numeric(frame[column], errors="coerce").fillna(0).astype("int64")
    return total


def variant_summary(frame: pd.DataFrame, *, threshold: float = 0.5) -> pd.DataFrame:
    """One row per variant, in the order they first appear: answers, mean with its 95% CI,
    share below ``threshold``, failed answers, the commonest reasons, answer tokens and cost."""
    frame = frame.assign(_failed=failed(frame), _tokens=_tokens(frame))
    rows = []
    for variant, group in frame.groupby("variant", sort=False):
        stats = summarize(
            pd.to_numeric(group["score"], errors="coerce").tolist(), threshold=threshold
        )
        reasons = _reasons(group)
        cost = (
            pd.to_numeric(group["answer_cost"], errors="coerce") if "answer_cost" in group else None
        )
        rows.append(
            {
                "variant": variant,
                "answers": len(group),
                "scored": stats["scored"],
                "mean": stats["mean"],
                "ci_low": stats["ci_low"],
                "ci_high": stats["ci_high"],
                "below": stats["below_threshold"],
                "failed": int(group["_failed"].sum()),
                "reasons": ", ".join(f"{n} {r}" for r, n in reasons.most_common(3)),
                "answer_tokens": int(group["_tokens"].sum()),
                "answer_cost": float(cost.sum())
                if cost is not None and cost.notna().all()
                else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def score_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    """Questions down, variants across, each cell the mean score of its answers (repeats are
    averaged); the questions in the order they first appear."""
    scores = frame.assign(score=pd.to_numeric(frame["score"], errors="coerce"))
    table = scores.pivot_table(
        index="user_input", columns="variant", values="score", aggfunc="mean", sort=False
    )
    order = list(dict.fromkeys(frame["variant"]))
    return table.reindex(index=list(dict.fromkeys(frame["user_input"])), columns=order)
