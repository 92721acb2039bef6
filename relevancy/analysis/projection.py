"""2D/3D projections of embeddings for the Embeddings page, at any size.

``project(matrix, method, dims)`` is the whole protocol. PCA is plain numpy (the eigenvectors of
the small d x d covariance: instant even for 100,000 points); UMAP (``umap-learn``) and t-SNE
(scikit-learn) are imported only when asked for, because ``import umap`` alone takes ~20 s the
first time (numba compiles; ``NUMBA_CACHE_DIR`` is pointed at a stable folder so that happens
once per machine). Above ``FIT_AT_MOST`` points UMAP is fitted on a random sample and places
the rest with ``transform``; t-SNE cannot place points it was not fitted on, so it is refused
there (draw a sample: :func:`stratified_sample`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd

from relevancy.errors import ConfigError, InputError
from relevancy.paths import default_cache_dir

__all__ = [
    "METHODS",
    "FIT_AT_MOST",
    "Density",
    "Linear",
    "Projector",
    "density",
    "fit_pca",
    "pca",
    "project",
    "stratified_sample",
]

METHODS: dict[str, str] = {"pca": "PCA", "umap": "UMAP", "tsne": "t-SNE"}
#: UMAP is fitted on at most this many points (the rest are placed by ``transform``)
FIT_AT_MOST = 5000


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


@dataclass(frozen=True)
class Linear:
    """A fitted linear projection: ``(x - mean) @ axes``, the columns of ``axes`` being the
    principal components (signs fixed). It places points it was not fitted on, which is how a
    map fitted on a sample of a run is applied to every row (:func:`density`)."""

    mean: np.ndarray
    axes: np.ndarray
    dims: int

    def transform(self, matrix: np.ndarray) -> np.ndarray:
        """The ``dims`` coordinates of each row of ``matrix`` (zeros past the components the
        fit found)."""
        x = np.asarray(matrix, dtype=np.float64)
        return _pad((x - self.mean) @ self.axes, x.shape[0], self.dims)


def fit_pca(matrix: np.ndarray, dims: int = 2) -> Linear:
    """The principal components of ``matrix`` (eigenvectors of its covariance), each component's
    sign chosen so its largest-magnitude coordinate on ``matrix`` is positive (deterministic).

    >>> fit = fit_pca(np.array([[0.0, 0.0], [2.0, 1.0], [4.0, 2.0]]))
    >>> fit.transform(np.array([[6.0, 3.0], [0.0, 5.0]])).round(3).tolist()
    [[-4.472, 0.0], [0.0, -4.472]]
    """
    x = _check(matrix, dims)
    n, d = x.shape
    mean = x.mean(axis=0) if n else np.zeros(d)
    centered = x - mean
    if n <= 1 or not np.any(centered):
        return Linear(mean, np.zeros((d, 0)), dims)
    _, vectors = np.linalg.eigh(centered.T @ centered)  # ascending eigenvalues
    top = vectors[:, ::-1][:, : min(dims, n - 1)]
    coords = centered @ top
    signs = np.sign(coords[np.abs(coords).argmax(axis=0), range(coords.shape[1])])
    signs[signs == 0] = 1
    return Linear(mean, top * signs, dims)


def pca(matrix: np.ndarray, dims: int = 2) -> np.ndarray:
    """Principal components (eigenvectors of the covariance); signs fixed so the output is
    deterministic (:func:`fit_pca`, applied to the points it was fitted on)."""
    x = _check(matrix, dims)
    if x.shape[0] == 0:
        return np.zeros((0, dims))
    return fit_pca(x, dims).transform(x)


@dataclass
class Density:
    """Counts of points on a ``bins`` x ``bins`` grid over ``extent`` (x0, x1, y0, y1): a map
    of every point when there are too many to draw. Points off the grid are counted in
    ``outside``, never dropped silently."""

    extent: tuple[float, float, float, float]
    bins: int = 120
    counts: np.ndarray = field(init=False)
    outside: int = 0

    def __post_init__(self) -> None:
        self.counts = np.zeros((self.bins, self.bins), dtype=np.int64)  # [y, x]

    @property
    def total(self) -> int:
        """Points counted, on the grid or off it."""
        return int(self.counts.sum()) + self.outside

    def add(self, coords: np.ndarray) -> None:
        """Count the points ``coords`` (n x 2 or more; the first two columns)."""
        x0, x1, y0, y1 = self.extent
        ix = np.floor((coords[:, 0] - x0) / (x1 - x0) * self.bins).astype(np.int64)
        iy = np.floor((coords[:, 1] - y0) / (y1 - y0) * self.bins).astype(np.int64)
        on = (ix >= 0) & (ix < self.bins) & (iy >= 0) & (iy < self.bins)
        self.outside += int(len(ix) - on.sum())
        np.add.at(self.counts, (iy[on], ix[on]), 1)

    def centres(self) -> tuple[np.ndarray, np.ndarray]:
        """The x and y of each bin's centre."""
        x0, x1, y0, y1 = self.extent
        step_x, step_y = (x1 - x0) / self.bins, (y1 - y0) / self.bins
        middle = np.arange(self.bins) + 0.5
        return x0 + step_x * middle, y0 + step_y * middle


def density(
    fit: Linear,
    chunks: Iterable[np.ndarray],
    around: np.ndarray,
    *,
    bins: int = 120,
    margin: float = 0.25,
) -> Density:
    """Every point of ``chunks`` (matrices of vectors, read a chunk at a time: memory stays that
    of one chunk) placed by ``fit`` and counted on a grid spanning ``around`` (the drawn
    sample's coordinates) widened by ``margin`` of its span on each side.

    >>> fit = fit_pca(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]))
    >>> sample = np.array([[0.0, 0.0], [2.0, 2.0]])
    >>> d = density(fit, [np.array([[1.0, 1.0], [9.0, 9.0]])], fit.transform(sample), bins=4)
    >>> d.total, d.outside
    (2, 1)
    """
    xy = np.asarray(around, dtype=np.float64)[:, :2]
    lo, hi = (xy.min(axis=0), xy.max(axis=0)) if len(xy) else (np.zeros(2), np.ones(2))
    span = np.where(hi > lo, hi - lo, 1.0)  # one point, or a line: a unit-wide grid
    lo, hi = lo - margin * span, hi + margin * span
    out = Density((float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1])), bins)
    for chunk in chunks:
        if len(chunk):
            out.add(fit.transform(chunk))
    return out


def _numba_cache() -> None:
    if "NUMBA_CACHE_DIR" not in os.environ:
        folder = default_cache_dir() / "numba"
        folder.mkdir(parents=True, exist_ok=True)
        os.environ["NUMBA_CACHE_DIR"] = str(folder)


def _umap(x: np.ndarray, dims: int, seed: int, fit_at_most: int) -> np.ndarray:
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
    if x.shape[0] <= fit_at_most:
        return np.asarray(reducer.fit_transform(x), dtype=np.float64)
    sample = np.random.default_rng(seed).choice(x.shape[0], fit_at_most, replace=False)
    reducer.fit(x[sample])
    return np.asarray(reducer.transform(x), dtype=np.float64)


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


def project(
    matrix: np.ndarray,
    method: str = "pca",
    dims: int = 2,
    *,
    seed: int = 0,
    fit_at_most: int = FIT_AT_MOST,
) -> np.ndarray:
    """Project the rows of ``matrix`` to ``dims`` (2 or 3) coordinates.

    ``method`` is ``"pca"`` (default), ``"umap"`` or ``"tsne"``. Fewer rows than a method needs
    fall back to PCA (t-SNE and UMAP need a handful of points). Above ``fit_at_most`` rows UMAP
    is fitted on a sample, and t-SNE raises :class:`InputError`.
    """
    method = method.lower().replace("-", "")
    if method not in METHODS:
        raise InputError(f"unknown projection {method!r}: use one of {', '.join(METHODS)}")
    x = _check(matrix, dims)
    if method == "pca" or x.shape[0] < max(5, dims + 2):
        return pca(x, dims)
    if method == "tsne" and x.shape[0] > fit_at_most:
        raise InputError(
            f"t-SNE of {x.shape[0]:,} points would take very long and cannot place points it "
            f"was not fitted on: draw a sample of at most {fit_at_most:,} points, or use UMAP"
        )
    with warnings.catch_warnings():
        # both libraries warn about parallelism/seeds and numba deprecations; none matter here
        warnings.simplefilter("ignore")
        if method == "umap":
            return _umap(x, dims, seed, fit_at_most)
        return _tsne(x, dims, seed)


def stratified_sample(groups: Sequence[object], n: int, *, seed: int = 0) -> np.ndarray:
    """Indexes of ``n`` items, each group (e.g. variant x score band) keeping its share (at
    least one item per group while there are no more groups than ``n``), sorted; all of them
    when there are at most ``n``. Shares are rounded by largest remainder, so they add up to
    ``n`` exactly.

    >>> stratified_sample(["a"] * 8 + ["b"] * 2, 5).tolist()
    [2, 3, 4, 6, 8]
    """
    labels = pd.Series(groups, dtype=object).astype(str)  # on the column, in C
    if len(labels) <= n:
        return np.arange(len(labels))
    rng = np.random.default_rng(seed)
    codes, names = pd.factorize(labels, sort=True)  # hashed; only the group names sorted
    sizes = np.bincount(codes, minlength=len(names))
    exact = n * sizes / len(labels)
    take = np.minimum(np.maximum(np.floor(exact).astype(int), 1 if len(names) <= n else 0), sizes)
    order = np.argsort(-(exact - np.floor(exact)), kind="stable")
    while take.sum() < n:  # hand out what rounding down left, largest remainders first
        for i in order:
            if take.sum() >= n:
                break
            if take[i] < sizes[i]:
                take[i] += 1
    while take.sum() > n:  # the minimum of one per group overshot: trim the largest groups
        take[int(np.argmax(take))] -= 1
    picked = []
    for code, count in enumerate(take):
        members = np.flatnonzero(codes == code)
        picked.append(rng.choice(members, int(count), replace=False))
    return np.sort(np.concatenate(picked))
