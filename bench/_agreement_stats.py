"""Agreement figures for HaluQuestQA, with bootstrap confidence intervals over questions.

Used by ``bench/agreement.py`` and ``bench/stability.py``. Reads nothing at import time.

* AUROC within each answer source (``role``): P(score of a clean answer > score of an answer
  with expert-marked irrelevant spans), ties count one half. Within a role so that the human vs
  GPT-4 style difference does not count.
* Spearman rank correlation with the graded label (1 - share of irrelevant sentences).
* Pairwise accuracy: over the questions whose two answers have different labels, the share where
  the metric ranks the better answer higher (ties count one half), as the Ragas paper does.

The intervals are percentile bootstraps that resample questions (both answers move together).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["load_rows", "load_split", "evaluate", "format_ci", "ROLES"]

ROLES = ("human_answer", "model_answer")


def load_rows(data: Path) -> list[dict[str, Any]]:
    with open(Path(data) / "pairs.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_split(path: Path) -> dict[str, list[int]]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)["pair_ids"]


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


def _figures(label: np.ndarray, binary: np.ndarray, role: np.ndarray, score: np.ndarray,
             pair_wins: np.ndarray) -> dict[str, float]:  # fmt: skip
    out = {}
    for r in ROLES:
        m = role == r
        out[f"auroc_{r}"] = _auroc(score[m & (binary == 1)], score[m & (binary == 0)])
    out["spearman"] = _spearman(label, score)
    out["pairwise"] = float(pair_wins.mean()) if len(pair_wins) else float("nan")
    return out


def evaluate(
    rows: Sequence[dict[str, Any]],
    scores: Sequence[float],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    minus: Sequence[float] | None = None,
    _raw: bool = False,
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
    if minus is not None:
        other = np.asarray(minus, dtype=np.float64)
        keep &= np.isfinite(other)
        base = evaluate([r for r, k in zip(rows, keep) if k], other[keep], n_boot=n_boot,
                        seed=seed, _raw=True)  # fmt: skip
    rows = [r for r, k in zip(rows, keep) if k]
    score = score[keep]
    label = np.array([r["label"] for r in rows], dtype=np.float64)
    binary = np.array([r["label_binary"] for r in rows], dtype=np.int64)
    role = np.array([r["role"] for r in rows])
    pid = np.array([r["pair_id"] for r in rows])
    # pairwise outcome per question whose two labels differ
    by_pair: dict[int, list[int]] = {}
    for i, p in enumerate(pid):
        by_pair.setdefault(int(p), []).append(i)
    questions = sorted(by_pair)
    wins_of: dict[int, float] = {}
    for p, idx in by_pair.items():
        if len(idx) == 2 and label[idx[0]] != label[idx[1]]:
            hi, lo = sorted(idx, key=lambda i: -label[i])
            wins_of[p] = 1.0 if score[hi] > score[lo] else 0.5 if score[hi] == score[lo] else 0.0
    point = _figures(label, binary, role, score, np.array(list(wins_of.values())))
    rng = np.random.default_rng(seed)
    boots: dict[str, list[float]] = {k: [] for k in point}
    q_arr = np.array(questions)
    for _ in range(n_boot):
        sample = q_arr[rng.integers(0, len(q_arr), size=len(q_arr))]
        idx = np.concatenate([by_pair[int(p)] for p in sample])
        wins = np.array([wins_of[int(p)] for p in sample if int(p) in wins_of])
        fig = _figures(label[idx], binary[idx], role[idx], score[idx], wins)
        for k, v in fig.items():
            boots[k].append(v)
    if _raw:
        return {"point": point, "boots": boots}
    if minus is not None:
        point = {k: v - base["point"][k] for k, v in point.items()}
        boots = {k: list(np.asarray(v) - np.asarray(base["boots"][k])) for k, v in boots.items()}
    result: dict[str, Any] = {
        "rows": int(keep.size),
        "scored": int(keep.sum()),
        "pairs": len(wins_of),
    }
    for k, v in point.items():
        b = np.asarray(boots[k])
        b = b[np.isfinite(b)]
        lo, hi = np.quantile(b, [0.025, 0.975]) if b.size else (float("nan"), float("nan"))
        result[k] = {"value": v, "ci": [float(lo), float(hi)]}
    for r in ROLES:
        m = role == r
        result[f"n_{r}"] = [int((m & (binary == 1)).sum()), int((m & (binary == 0)).sum())]
    return result


def format_ci(fig: dict[str, Any]) -> str:
    lo, hi = fig["ci"]
    return f"{fig['value']:.3f} ({lo:.3f}-{hi:.3f})"
