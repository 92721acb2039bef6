"""2D/3D projections of embeddings, and the point table the Embeddings page draws.

``project(matrix, method, dims)`` is the whole protocol. PCA is plain numpy (instant);
UMAP (``umap-learn``) and t-SNE (scikit-learn) are imported only when asked for, because
``import umap`` alone takes ~20 s the first time (numba compiles; ``NUMBA_CACHE_DIR`` is pointed
at a stable folder so that happens once per machine).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import pandas as pd

from relevancy._cache import default_cache_dir
from relevancy._errors import ConfigError, InputError
from relevancy._result import RelevancyResult

__all__ = ["METHODS", "Projector", "project", "pca", "build_points"]

METHODS: dict[str, str] = {"pca": "PCA", "umap": "UMAP", "tsne": "t-SNE"}


class Projector(Protocol):
    def __call__(self, matrix: np.ndarray, method: str = "pca", dims: int = 2) -> np.ndarray: ...


def _check(matrix: np.ndarray, dims: int) -> np.ndarray:
    x = np.asarray(matrix, dtype=np.float64)
    if x.ndim != 2:
        raise InputError(f"expected a 2-D matrix, got shape {x.shape}")
    if dims not in (2, 3):
        raise InputError(f"dims must be 2 or 3, got {dims!r}")
    if not np.all(np.isfinite(x)):
        raise InputError("the matrix holds NaN or infinite values")
    return x


def _pad(coords: np.ndarray, n: int, dims: int) -> np.ndarray:
    out = np.zeros((n, dims), dtype=np.float64)
    k = min(dims, coords.shape[1]) if coords.ndim == 2 else 0
    if k:
        out[:, :k] = coords[:, :k]
    return out


def pca(matrix: np.ndarray, dims: int = 2) -> np.ndarray:
    """Principal components by SVD; signs fixed so the output is deterministic."""
    x = _check(matrix, dims)
    n = x.shape[0]
    if n == 0:
        return np.zeros((0, dims))
    centered = x - x.mean(axis=0, keepdims=True)
    if n == 1 or not np.any(centered):
        return np.zeros((n, dims))
    u, s, _ = np.linalg.svd(centered, full_matrices=False)
    coords = u[:, :dims] * s[:dims]
    # make the largest-magnitude entry of each component positive
    signs = np.sign(coords[np.abs(coords).argmax(axis=0), range(coords.shape[1])])
    signs[signs == 0] = 1
    return _pad(coords * signs, n, dims)


def _numba_cache() -> None:
    if "NUMBA_CACHE_DIR" not in os.environ:
        folder = default_cache_dir() / "numba"
        folder.mkdir(parents=True, exist_ok=True)
        os.environ["NUMBA_CACHE_DIR"] = str(folder)


def _umap(x: np.ndarray, dims: int, seed: int) -> np.ndarray:
    _numba_cache()
    try:
        import umap
    except ImportError as exc:
        raise ConfigError("UMAP needs umap-learn: pip install 'relevancy[umap]'") from exc
    reducer = umap.UMAP(
        n_components=dims,
        n_neighbors=max(2, min(15, x.shape[0] - 1)),
        min_dist=0.1,
        metric="cosine",
        random_state=seed,
        init="random" if x.shape[0] <= dims + 1 else "spectral",
    )
    return np.asarray(reducer.fit_transform(x), dtype=np.float64)


def _tsne(x: np.ndarray, dims: int, seed: int) -> np.ndarray:
    try:
        from sklearn.manifold import TSNE
    except ImportError as exc:
        raise ConfigError("t-SNE needs scikit-learn: pip install 'relevancy[dashboard]'") from exc
    perplexity = float(max(1.0, min(30.0, (x.shape[0] - 1) / 3)))
    model = TSNE(
        n_components=dims,
        perplexity=perplexity,
        init="pca",
        learning_rate="auto",
        random_state=seed,
        metric="cosine",
    )
    # one thread: OpenMP's busy-waiting made Barnes-Hut 5-20x slower on small, shared machines
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return np.asarray(model.fit_transform(x), dtype=np.float64)


def project(matrix: np.ndarray, method: str = "pca", dims: int = 2, *, seed: int = 0) -> np.ndarray:
    """Project the rows of ``matrix`` to ``dims`` (2 or 3) coordinates.

    ``method`` is ``"pca"`` (default), ``"umap"`` or ``"tsne"``. Fewer rows than a method needs
    fall back to PCA (t-SNE and UMAP need a handful of points).
    """
    method = method.lower().replace("-", "")
    if method not in METHODS:
        raise InputError(f"unknown projection {method!r}: use one of {', '.join(METHODS)}")
    x = _check(matrix, dims)
    if method == "pca" or x.shape[0] < max(5, dims + 2):
        return pca(x, dims)
    with warnings.catch_warnings():
        # both libraries warn about parallelism/seeds and numba deprecations; none matter here
        warnings.simplefilter("ignore")
        return _umap(x, dims, seed) if method == "umap" else _tsne(x, dims, seed)


def build_points(
    frame: pd.DataFrame, results: Sequence[RelevancyResult]
) -> tuple[pd.DataFrame, np.ndarray]:
    """One point per distinct original question and one per generated question.

    ``frame`` and ``results`` are aligned (as in :class:`relevancy.store.RunData`). Returns the
    point table (``kind``, ``text``, ``row``, ``parent`` = index of the original question's
    point for a generated one, ``score``, ``similarity``, ``variant``, ``noncommittal``) and the
    matrix of their embeddings. Rows without embeddings (NaN rows) are skipped.
    """
    points: list[dict[str, object]] = []
    vectors: list[Sequence[float]] = []
    originals: dict[str, int] = {}
    variants = (
        frame["variant"].astype(str).tolist() if "variant" in frame.columns else [""] * len(frame)
    )
    rows = frame["row"].tolist() if "row" in frame.columns else list(range(len(frame)))
    for pos, result in enumerate(results):
        if result.user_input_embedding is None:
            continue
        row = int(rows[pos])
        if result.user_input not in originals:
            originals[result.user_input] = len(points)
            points.append(
                {
                    "kind": "question",
                    "text": result.user_input,
                    "row": row,
                    "parent": -1,
                    "score": np.nan,
                    "similarity": 1.0,
                    "variant": "(original question)",
                    "noncommittal": "original",
                }
            )
            vectors.append(result.user_input_embedding)
        parent = originals[result.user_input]
        usable = [q for q in result.questions if q.similarity is not None]
        for q, vec in zip(usable, result.question_embeddings or []):
            points.append(
                {
                    "kind": "generated",
                    "text": q.question,
                    "row": row,
                    "parent": parent,
                    "score": result.value,
                    "similarity": q.similarity,
                    "variant": variants[pos],
                    "noncommittal": "yes" if result.noncommittal else "no",
                }
            )
            vectors.append(vec)
    table = pd.DataFrame(
        points,
        columns=["kind", "text", "row", "parent", "score", "similarity", "variant", "noncommittal"],
    )
    dim = len(vectors[0]) if vectors else 0
    matrix = np.asarray(vectors, dtype=np.float64).reshape(len(vectors), dim)
    return table, matrix
