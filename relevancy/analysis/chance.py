"""Chance level: what an *unrelated* answer scores with the same embedder.

A cosine of 0.7 means little until you know what unrelated texts score: every embedder has a
floor of its own (MiniLM puts unrelated questions near 0.1, some API embedders near 0.3). The
chance level of a run is measured on the run itself, with no extra LLM call: each row's user
question is paired with the generated questions of every other row that asks a *different*
question, and the pair is scored as the metric scores a row,

.. math:: \\mathrm{chance}(i, j) = \\frac{1}{N_j} \\sum_{k=1}^{N_j}
          \\cos\\big(E(\\mathrm{question}_{j,k}), E(\\mathrm{user\\_input}_i)\\big)
          = \\hat u_i \\cdot \\frac{1}{N_j} \\sum_k \\hat q_{j,k}

(hats: unit vectors), so all pairs of up to ``max_rows`` rows take one matrix product. The
distribution of these scores is the reference band the Distributions page draws; a Ragas value
below its 95th percentile is one an unrelated answer reaches at least 1 time in 20.
Numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ChanceLevel", "chance_level", "MAX_ROWS"]

#: rows sampled for the pairs (all pairs among them: up to 4 million)
MAX_ROWS = 2000
#: pair scores kept for drawing
KEEP_VALUES = 5000
#: rows of the pair matrix computed at once
_BLOCK_ROWS = 128


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


@dataclass(frozen=True)
class ChanceLevel:
    """The distribution of scores of unrelated (question, answer) pairs of one run."""

    embedder: str  #: the embedder's name
    rows: int  #: rows whose vectors were used
    pairs: int  #: unrelated pairs scored
    median: float
    mean: float
    p5: float
    p95: float  #: the chance level: a score below this is one an unrelated answer reaches
    #: single generated questions against unrelated user questions: 95th percentile and the
    #: share of negative cosines
    cosine_p95: float = math.nan
    negative_share: float = math.nan
    values: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False, compare=False)

    @property
    def short_name(self) -> str:
        """The embedder's name without its backend (``local:``), path or ``org/`` prefix."""
        name = self.embedder.rstrip("/").rsplit("/", 1)[-1]
        return name.split(":", 1)[-1] or "this embedder"

    def describe(self) -> str:
        """``"unrelated pairs score 0.12 (p95 0.25) with all-MiniLM-L6-v2"``."""
        return (
            f"unrelated pairs score {self.median:.2f} (p95 {self.p95:.2f}) with {self.short_name}"
        )

    def below(self, value: float) -> bool:
        """Whether a Ragas value is at chance level (below the 95th percentile)."""
        return bool(math.isfinite(value) and value < self.p95)

    def compare(self, value: float) -> str:
        """``"typical unrelated pair scores 0.12 with MiniLM; this answer scores 0.31"``."""
        base = f"a typical unrelated pair scores {self.median:.2f} with {self.short_name}"
        if not math.isfinite(value):
            return base
        where = "at chance level" if self.below(value) else f"{value - self.median:+.2f} above it"
        return f"{base}; this answer scores {value:.2f} ({where})"

    def to_dict(self) -> dict[str, object]:
        return {
            "embedder": self.embedder,
            "rows": self.rows,
            "pairs": self.pairs,
            "median": self.median,
            "mean": self.mean,
            "p5": self.p5,
            "p95": self.p95,
            "cosine_p95": self.cosine_p95,
            "negative_share": self.negative_share,
        }


def _unrelated_scores(u: np.ndarray, means: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``u[i] . means[j]`` for every pair of rows with different keys, row by row (float32).

    Filled a block of rows at a time into one array: at 2,000 rows (4 million pairs) the full
    matrix, its mask and the copy of its unrelated cells would take about 40 MB beside it.
    """
    counts = np.unique(key, return_counts=True)
    same = dict(zip(counts[0].tolist(), counts[1].tolist()))
    per_row = len(key) - np.array([same[k] for k in key.tolist()], dtype=np.int64)
    values = np.empty(int(per_row.sum()), dtype=np.float32)
    at = 0
    for start in range(0, len(key), _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, len(key))
        block = u[start:stop] @ means.T
        taken = block[key[start:stop, None] != key[None, :]]
        values[at : at + taken.size] = taken
        at += taken.size
    return values


def chance_level(
    user_inputs: np.ndarray,
    questions: Sequence[np.ndarray],
    keys: Sequence[Hashable],
    *,
    embedder: str = "",
    max_rows: int = MAX_ROWS,
    seed: int = 0,
) -> ChanceLevel | None:
    """The chance level of a run from its stored vectors.

    Parameters
    ----------
    user_inputs : array of shape (n, d)
        Each row's user-question embedding.
    questions : sequence of n arrays of shape (k_i, d)
        Each row's generated-question embeddings (rows with none are left out).
    keys : sequence of n hashables
        What makes two rows related: rows with equal keys (the same question text) are never
        paired.
    embedder : str
        The embedder's name, for the wording.
    max_rows : int
        Above this many usable rows, a seeded sample of them is used.

    Returns
    -------
    ChanceLevel or None
        None when fewer than two distinct questions have vectors.

    Examples
    --------
    >>> import numpy as np
    >>> u = np.eye(3)                                   # three unrelated user questions
    >>> q = [np.eye(3)[[i]] for i in range(3)]          # each row's own question rebuilt
    >>> c = chance_level(u, q, ["a", "b", "c"])
    >>> c.pairs, c.median, c.p95
    (6, 0.0, 0.0)
    """
    keep = [i for i, q in enumerate(questions) if q is not None and len(q)]
    if len(keep) > max_rows:
        keep = sorted(np.random.default_rng(seed).choice(keep, size=max_rows, replace=False))
    if len({keys[i] for i in keep}) < 2:
        return None
    u = _unit(np.asarray(user_inputs, dtype=np.float64)[keep])
    means = np.stack([_unit(np.asarray(questions[i], dtype=np.float64)).mean(axis=0) for i in keep])
    codes = {k: c for c, k in enumerate(dict.fromkeys(keys[i] for i in keep))}
    key = np.array([codes[keys[i]] for i in keep])
    values = _unrelated_scores(u.astype(np.float32), means.astype(np.float32), key)
    # single questions (a few hundred rows are plenty for a 95th percentile)
    few = keep[:300]
    q_all = np.concatenate([_unit(np.asarray(questions[i], dtype=np.float64)) for i in few])
    owner = np.concatenate([[codes[keys[i]]] * len(questions[i]) for i in few])
    cos = u[: len(few)] @ q_all.T
    single = cos[key[: len(few)][:, None] != owner[None, :]]
    if values.size > KEEP_VALUES:
        pick = np.random.default_rng(seed).choice(values.size, size=KEEP_VALUES, replace=False)
        kept = values[np.sort(pick)].astype(np.float64)
    else:  # (a float64 copy of every pair only when there are few)
        kept = values.astype(np.float64)
    pairs, mean = int(values.size), float(values.mean(dtype=np.float64))
    # in place: no copy of the pairs (values is not used after this)
    p5, median, p95 = np.quantile(values, [0.05, 0.5, 0.95], overwrite_input=True)
    return ChanceLevel(
        embedder=embedder,
        rows=len(keep),
        pairs=pairs,
        median=float(median),
        mean=mean,
        p5=float(p5),
        p95=float(p95),
        cosine_p95=float(np.quantile(single, 0.95)) if single.size else math.nan,
        negative_share=float((single < 0).mean()) if single.size else math.nan,
        values=kept,
    )
