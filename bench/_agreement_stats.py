"""Agreement figures for the two development sets, with bootstrap confidence intervals.

Used by ``bench/agreement.py`` and ``bench/stability.py``. Reads nothing at import time. The set
is recognised from its rows:

HaluQuestQA (rows have ``role`` and ``pair_id``; one human and one GPT-4 answer per question)
    * ``auroc_human_answer`` / ``auroc_model_answer``: AUROC within each answer source,
      P(score of a clean answer > score of an answer with expert-marked irrelevant spans), ties
      one half. Within a source so that the human vs GPT-4 style difference does not count.
    * ``spearman``: rank correlation with the graded label (1 - share of irrelevant sentences).
    * ``pairwise``: over the questions whose two answers have different labels, the share where
      the metric ranks the better answer higher (ties one half), as the Ragas paper does.
MedQuAD/LiveQA (rows have ``qid``; several answers per question, graded 1-4)
    * ``auroc``: AUROC of grade >= 3 against grade < 3 over all answers (mostly topic match:
      most poor answers were retrieved for other questions).
    * ``spearman``: rank correlation with the grade over all answers.
    * ``pairwise_4v3``: within a question, grade 4 (excellent) against grade 3 (correct but
      incomplete): the completeness test. ``pairwise_2v1``: grade 2 (related) against 1.

Intervals are percentile bootstraps that resample questions (all answers of a question move
together). ``minus=`` gives paired differences on the same resampled questions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "load_rows",
    "load_split",
    "dataset_kind",
    "figure_names",
    "evaluate",
    "evaluate_matched",
    "MATCHED_FIGURES",
    "format_ci",
    "ROLES",
]

ROLES = ("human_answer", "model_answer")
#: the figures of each set, in report order
FIGURES = {
    "haluquestqa": ("auroc_human_answer", "auroc_model_answer", "spearman", "pairwise"),
    "medquad": ("auroc", "spearman", "pairwise_4v3", "pairwise_2v1"),
}
#: pair kinds per set: which two labels a within-question pair compares (None: any that differ)
_PAIR_KINDS: dict[str, dict[str, tuple[float, float] | None]] = {
    "haluquestqa": {"pairwise": None},
    "medquad": {"pairwise_4v3": (4, 3), "pairwise_2v1": (2, 1)},
}


def load_rows(data: Path) -> list[dict[str, Any]]:
    with open(Path(data) / "pairs.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_split(path: Path) -> dict[str, list[int]]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)["pair_ids"]


def dataset_kind(rows: Sequence[dict[str, Any]]) -> str:
    """``"haluquestqa"`` or ``"medquad"``, from the fields of the rows."""
    first = rows[0] if rows else {}
    if "role" in first and "pair_id" in first:
        return "haluquestqa"
    if "qid" in first:
        return "medquad"
    raise ValueError(f"unknown data set: rows have fields {sorted(first)}")


def figure_names(kind: str) -> tuple[str, ...]:
    return FIGURES[kind]


def question_of(row: dict[str, Any]) -> Any:
    """The question a row belongs to (the bootstrap's unit)."""
    return row["pair_id"] if "pair_id" in row else row["qid"]


def _rankdata(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    sx = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sx[j + 1] == sx[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _auroc(pos: np.ndarray, neg: np.ndarray) -> float:
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    ranks = _rankdata(np.concatenate([pos, neg]))
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = _rankdata(a), _rankdata(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float((ra**2).sum() * (rb**2).sum()))
    return float((ra * rb).sum() / denom) if denom else float("nan")


def _win(better: float, worse: float) -> float:
    return 1.0 if better > worse else 0.5 if better == worse else 0.0


class _Data:
    """Arrays of one set restricted to scored rows, grouped by question, with its pairs."""

    def __init__(self, rows: Sequence[dict[str, Any]], score: np.ndarray) -> None:
        self.kind = dataset_kind(rows)
        self.label = np.array([r["label"] for r in rows], dtype=np.float64)
        self.binary = np.array([r["label_binary"] for r in rows], dtype=np.int64)
        self.role = np.array([r.get("role", "") for r in rows])
        self.score = score
        self.by_q: dict[Any, list[int]] = {}
        for i, r in enumerate(rows):
            self.by_q.setdefault(question_of(r), []).append(i)
        self.questions = sorted(self.by_q)
        # pairs[kind][question] = [(better row, worse row), ...]
        self.pairs: dict[str, dict[Any, list[tuple[int, int]]]] = {}
        for name, labels in _PAIR_KINDS[self.kind].items():
            per_q: dict[Any, list[tuple[int, int]]] = {}
            for q, idx in self.by_q.items():
                found = []
                for a in idx:
                    for b in idx:
                        la, lb = self.label[a], self.label[b]
                        if labels is None and la > lb or labels is not None and (la, lb) == labels:
                            found.append((a, b))
                if found:
                    per_q[q] = found
            self.pairs[name] = per_q

    def figures(self, questions: Sequence[Any], score: np.ndarray) -> dict[str, float]:
        idx = np.concatenate([self.by_q[q] for q in questions]) if len(questions) else []
        idx = np.asarray(idx, dtype=np.int64)
        label, binary, role, s = self.label[idx], self.binary[idx], self.role[idx], score[idx]
        out: dict[str, float] = {}
        if self.kind == "haluquestqa":
            for r in ROLES:
                m = role == r
                out[f"auroc_{r}"] = _auroc(s[m & (binary == 1)], s[m & (binary == 0)])
        else:
            out["auroc"] = _auroc(s[binary == 1], s[binary == 0])
        out["spearman"] = _spearman(label, s)
        for name, per_q in self.pairs.items():
            wins = [_win(score[a], score[b]) for q in questions for a, b in per_q.get(q, [])]
            out[name] = float(np.mean(wins)) if wins else float("nan")
        return {k: out[k] for k in FIGURES[self.kind]}


def evaluate(
    rows: Sequence[dict[str, Any]],
    scores: Sequence[float],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    minus: Sequence[float] | None = None,
    transform: Callable[[np.ndarray], np.ndarray] | None = None,
) -> dict[str, Any]:
    """Point figures and 95% bootstrap CIs; rows with a NaN score are left out (and counted).

    With ``minus`` (another metric's scores on the same rows), the figures are the differences
    ``figure(scores) - figure(minus)``, each resample scoring both on the same questions: a
    paired interval that excludes 0 means the two are clearly apart. Rows where either is NaN
    are left out of both.
    """
    if len(rows) != len(scores):
        raise ValueError(f"{len(rows)} rows but {len(scores)} scores")
    score = np.asarray(scores, dtype=np.float64)
    keep = np.isfinite(score)
    other = None
    if minus is not None:
        other = np.asarray(minus, dtype=np.float64)
        keep &= np.isfinite(other)
        other = other[keep]
    kept = [r for r, k in zip(rows, keep) if k]
    data = _Data(kept, score[keep])
    q_arr = data.questions
    point = data.figures(q_arr, data.score)
    if other is not None:
        base = data.figures(q_arr, other)
        point = {k: v - base[k] for k, v in point.items()}
    rng = np.random.default_rng(seed)
    boots: dict[str, list[float]] = {k: [] for k in point}
    for _ in range(n_boot):
        sample = [q_arr[i] for i in rng.integers(0, len(q_arr), size=len(q_arr))]
        fig = data.figures(sample, data.score)
        if other is not None:
            base = data.figures(sample, other)
            fig = {k: v - base[k] for k, v in fig.items()}
        for k, v in fig.items():
            boots[k].append(v)
    result: dict[str, Any] = {
        "kind": data.kind,
        "rows": int(keep.size),
        "scored": int(keep.sum()),
        "questions": len(q_arr),
        "pairs": {name: sum(map(len, per_q.values())) for name, per_q in data.pairs.items()},
    }
    for k, v in point.items():
        b = np.asarray(boots[k])
        b = b[np.isfinite(b)]
        lo, hi = np.quantile(b, [0.025, 0.975]) if b.size else (float("nan"), float("nan"))
        result[k] = {"value": v, "ci": [float(lo), float(hi)]}
    return result


def format_ci(fig: dict[str, Any]) -> str:
    lo, hi = fig["ci"]
    if math.isnan(fig["value"]):
        return "–"
    return f"{fig['value']:.3f} ({lo:.3f} to {hi:.3f})"


#: the figures that compare two answers (``evaluate_matched`` can restrict them by length)
MATCHED_FIGURES = {
    "haluquestqa": ("auroc_human_answer", "auroc_model_answer", "pairwise"),
    "medquad": ("auroc", "pairwise_4v3", "pairwise_2v1"),
}


def _comparisons(data: _Data) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every (better row, worse row) comparison behind each comparing figure.

    AUROC: every answer of the positive class against every one of the negative class (within
    an answer source for HaluQuestQA), across questions; pairwise: within a question.
    """
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if data.kind == "haluquestqa":
        for r in ROLES:
            pos = np.flatnonzero((data.role == r) & (data.binary == 1))
            neg = np.flatnonzero((data.role == r) & (data.binary == 0))
            out[f"auroc_{r}"] = (np.repeat(pos, len(neg)), np.tile(neg, len(pos)))
    else:
        pos, neg = np.flatnonzero(data.binary == 1), np.flatnonzero(data.binary == 0)
        out["auroc"] = (np.repeat(pos, len(neg)), np.tile(neg, len(pos)))
    for name, per_q in data.pairs.items():
        pairs = [p for q in data.questions for p in per_q.get(q, [])]
        out[name] = (
            np.array([a for a, _ in pairs], dtype=np.int64),
            np.array([b for _, b in pairs], dtype=np.int64),
        )
    return out


def evaluate_matched(
    rows: Sequence[dict[str, Any]],
    scores: Sequence[float],
    lengths: Sequence[float],
    *,
    max_ratio: float = 1.5,
    n_boot: int = 2000,
    seed: int = 0,
    minus: Sequence[float] | None = None,
) -> dict[str, Any]:
    """The comparing figures (AUROC, pairwise) on length-matched comparisons only.

    A comparison of two answers counts only when the longer is at most ``max_ratio`` times the
    length of the shorter, so a score cannot win it by preferring long (or short) answers.
    Each figure is the share of its kept comparisons the score gets right (ties one half): for
    AUROC that is AUROC over matched (positive, negative) couples. Bootstrap as in
    :func:`evaluate`: questions resampled, a comparison weighted by how often each of its two
    answers' questions was drawn; ``minus`` gives paired differences on the same draws.
    Rows with a NaN score (either side) are left out.
    """
    score = np.asarray(scores, dtype=np.float64)
    length = np.asarray(lengths, dtype=np.float64)
    keep = np.isfinite(score)
    other = None
    if minus is not None:
        other = np.asarray(minus, dtype=np.float64)
        keep &= np.isfinite(other)
        other = other[keep]
    kept = [r for r, k in zip(rows, keep) if k]
    data = _Data(kept, score[keep])
    length = length[keep]
    q_index = {q: k for k, q in enumerate(data.questions)}
    row_q = np.empty(len(kept), dtype=np.int64)
    for q, idx in data.by_q.items():
        row_q[idx] = q_index[q]
    rng = np.random.default_rng(seed)
    draws = np.stack(
        [np.bincount(rng.integers(0, len(q_index), size=len(q_index)), minlength=len(q_index))
         for _ in range(n_boot)]
    ).astype(np.float64)  # fmt: skip
    result: dict[str, Any] = {"kind": data.kind, "max_ratio": max_ratio, "comparisons": {}}
    for name, (a, b) in _comparisons(data).items():
        la, lb = length[a], length[b]
        matched = np.maximum(la, lb) <= max_ratio * np.maximum(np.minimum(la, lb), 1e-9)
        a, b = a[matched], b[matched]
        result["comparisons"][name] = int(a.size)
        if not a.size:
            result[name] = {"value": float("nan"), "ci": [float("nan"), float("nan")]}
            continue
        win = np.sign(data.score[a] - data.score[b]) * 0.5 + 0.5
        if other is not None:
            win = win - (np.sign(other[a] - other[b]) * 0.5 + 0.5)
        boots = []
        for start in range(0, n_boot, 100):
            d = draws[start : start + 100]
            # a pair within a question counts once per draw of it (as in ``evaluate``); a
            # couple across answers counts once per draw of each side's question
            w = d[:, row_q[a]] if name.startswith("pairwise") else d[:, row_q[a]] * d[:, row_q[b]]
            total = w.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                boots.append((w @ win) / total)
        b_all = np.concatenate(boots)
        b_all = b_all[np.isfinite(b_all)]
        lo, hi = np.quantile(b_all, [0.025, 0.975]) if b_all.size else (float("nan"),) * 2
        result[name] = {"value": float(win.mean()), "ci": [float(lo), float(hi)]}
    return result
