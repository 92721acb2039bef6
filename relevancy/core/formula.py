"""The Answer Relevancy formula, with nothing else around it.

Given the embedding ``E_o`` of the user's question and the embeddings ``E_g1 .. E_gN`` of the
questions an LLM wrote back from the response::

    score = (1/N) * sum_i cos(E_gi, E_o)        and 0 when all N generations are noncommittal

This is the definition used by Ragas' ``AnswerRelevancy`` / ``ResponseRelevancy``. Three rules
are pinned by the tests:

* empty generated questions are left out (N counts only the usable ones);
* when none is left the score is undefined: NaN, and the caller records why;
* the score is not clipped (a cosine can be negative).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["cosine_similarities", "relevancy_score"]


def cosine_similarities(vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``vectors`` to ``reference``.

    A zero vector (on either side) has similarity 0 instead of a division by zero.

    Examples
    --------
    >>> cosine_similarities(np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]), np.array([3.0, 0.0]))
    array([1., 0., 0.])
    """
    vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    reference = np.asarray(reference, dtype=np.float64).ravel()
    if vectors.shape[1] != reference.shape[0]:
        raise ValueError(
            f"dimension mismatch: vectors have {vectors.shape[1]} values, reference has "
            f"{reference.shape[0]}"
        )
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference)
    dots = vectors @ reference
    with np.errstate(invalid="ignore", divide="ignore"):
        sims = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)
    return sims


def relevancy_score(similarities: Sequence[float], noncommittal: Sequence[bool]) -> float:
    """Mean similarity, or 0 when every generation is noncommittal, or NaN when there is none.

    Parameters
    ----------
    similarities : sequence of float
        ``cos(E_gi, E_o)`` for each usable generated question.
    noncommittal : sequence of bool
        The noncommittal verdict for each of those generations (same length).

    Examples
    --------
    >>> relevancy_score([0.5, 0.25], [False, True])
    0.375
    >>> relevancy_score([0.5, 0.25], [True, True])
    0.0
    """
    sims = np.asarray(similarities, dtype=np.float64)
    if len(noncommittal) != len(sims):
        raise ValueError(f"got {len(sims)} similarities but {len(noncommittal)} noncommittal flags")
    if sims.size == 0:
        return float("nan")
    if all(noncommittal):
        return 0.0
    return float(sims.mean())
