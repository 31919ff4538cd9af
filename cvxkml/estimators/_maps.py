"""Kernel and feature maps of the estimators, all picklable: the learned maps of new points
(:class:`LinearMap`, :class:`KernelMap`, :class:`FactorCross`), the learned distances and
kernel built on them (:class:`EmbeddingDistance`, :class:`EmbeddingKernel`,
:func:`point_distance`), the maps of a learned Mahalanobis metric, dense or factored
(:class:`MetricMap`, :class:`MetricDistance`), the training kernel matrix (:func:`training_kernel`) and the
data-driven defaults of the base kernel: the median-heuristic width
(:func:`median_heuristic_gamma`) and the standardization of the features
(:func:`standardization`, :class:`StandardizedKernel`).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..kernels import Kernel

__all__ = [
    "LinearMap",
    "KernelMap",
    "FactorCross",
    "EmbeddingDistance",
    "EmbeddingKernel",
    "point_distance",
    "training_kernel",
    "MEDIAN_SAMPLE",
    "median_heuristic_gamma",
    "standardization",
    "StandardizedKernel",
    "MetricMap",
    "MetricDistance",
]


class LinearMap:
    """x ↦ L x (rows: X Lᵀ)."""

    def __init__(self, L):
        self.L = L

    def __call__(self, X):
        return X @ self.L.T


class KernelMap:
    """x ↦ g(κ0(x, X_fit)): ``cross`` is a matrix P (g(k) = k P) or a callable g.
    ``from_cross`` takes κ0(X, X_fit) itself (a precomputed kernel)."""

    def __init__(self, kernel, X_fit, cross):
        self.kernel, self.X_fit, self.cross = kernel, X_fit, cross

    def from_cross(self, K_cross):
        return K_cross @ self.cross if isinstance(self.cross, np.ndarray) else self.cross(K_cross)

    def __call__(self, X):
        return self.from_cross(self.kernel(X, self.X_fit))


class FactorCross:
    """κ0(x, X_fit) ↦ Bᵀ g(x), g the factor coordinates of a factorization K0 ≈ G0 G0ᵀ
    (Kulis et al. 2009 §6.1)."""

    def __init__(self, factorization, B):
        self.factorization, self.B = factorization, B

    def __call__(self, K_cross):
        return self.factorization.transform_cross(K_cross) @ self.B


class EmbeddingDistance:
    """Squared Euclidean distances between the embeddings of paired rows of A and B."""

    def __init__(self, embed):
        self.embed = embed

    def __call__(self, A, B):
        # a linear map takes the difference first (one product, no cancellation)
        D = self.embed(A - B) if isinstance(self.embed, LinearMap) else self.embed(A) - self.embed(B)
        return np.einsum("ij,ij->i", D, D)


class EmbeddingKernel:
    """The learned kernel as inner products of embeddings."""

    def __init__(self, embed):
        self.embed = embed

    def __call__(self, X, Y):
        return self.embed(X) @ self.embed(Y).T


def point_distance(u, v, sq_distances):
    """The learned distance between two feature vectors (what ``get_metric`` returns)."""
    a = np.asarray(u, dtype=float).reshape(1, -1)
    b = np.asarray(v, dtype=float).reshape(1, -1)
    return float(np.sqrt(max(float(sq_distances(a, b)[0]), 0.0)))


def training_kernel(kern: Kernel, X) -> np.ndarray:
    """The symmetrized training kernel matrix κ0(X, X); with ``kern`` precomputed, X must
    be that square matrix (a clear error otherwise)."""
    if kern.precomputed and X.shape[0] != X.shape[1]:
        raise InvalidInputError(
            "With kernel='precomputed', X must be the square training kernel matrix "
            f"κ0(X_train, X_train); got shape {X.shape}."
        )
    K0 = kern(X, X)
    return 0.5 * (K0 + K0.T)


#: the median heuristic uses at most this many training points (a fixed-seed sample above)
MEDIAN_SAMPLE = 1000


def median_heuristic_gamma(Z) -> float:
    """The median heuristic of the Gaussian width: gamma = 1 / median_{i<j} ‖z_i − z_j‖²
    over the rows of Z (the squared distances from :func:`sklearn.metrics.pairwise_distances`;
    above :data:`MEDIAN_SAMPLE` rows, over a fixed-seed sample of that many rows, so the
    rule does not depend on ``random_state``).  Zero distances (repeated points) are left
    out; with no positive distance at all gamma = 1.  Equivalently σ² = median / 2 in
    exp(−‖x − y‖² / (2σ²)): the kernel value at the median distance is e^{-1}."""
    from sklearn.metrics import pairwise_distances

    Z = np.asarray(Z, dtype=float)
    if Z.shape[0] > MEDIAN_SAMPLE:
        Z = Z[np.sort(np.random.default_rng(0).choice(Z.shape[0], MEDIAN_SAMPLE, replace=False))]
    D = pairwise_distances(Z, metric="sqeuclidean")
    d = D[np.triu_indices(Z.shape[0], 1)]
    d = d[d > 0]
    if d.size == 0:
        return 1.0
    med = float(np.median(d))
    return 1.0 / med if np.isfinite(med) and med > 0 else 1.0


def standardization(X):
    """(mean, scale) of the columns of X: the training mean and standard deviation, a
    standard deviation of 0 (a constant feature) replaced by 1 (as
    :class:`sklearn.preprocessing.StandardScaler`)."""
    X = np.asarray(X, dtype=float)
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(
        np.isfinite(scale) & (scale > 10 * np.finfo(float).eps * np.maximum(np.abs(mean), 1.0)), scale, 1.0
    )
    return mean, scale


class StandardizedKernel:
    """A base kernel evaluated on standardized features, κ(x, y) = κ0((x − m) / s, (y − m) / s)
    with the training mean m and standard deviation s (one per feature).  It has the
    interface of :class:`cvxkml.kernels.Kernel` (called on two point sets, ``paired``,
    ``diag``, ``name``, ``params``, ``precomputed``), so every learned map built on κ0 applies
    it to new points unchanged."""

    def __init__(self, kernel: Kernel, mean, scale):
        self.kernel = kernel
        self.mean = np.asarray(mean, dtype=float)
        self.scale = np.asarray(scale, dtype=float)

    name = property(lambda self: self.kernel.name)
    params = property(lambda self: self.kernel.params)
    precomputed = property(lambda self: False)

    def standardize(self, X) -> np.ndarray:
        """(X − m) / s."""
        return (np.asarray(X, dtype=float) - self.mean) / self.scale

    def __call__(self, X, Y=None):
        Z = self.standardize(X)
        return self.kernel(Z, None if Y is None or Y is X else self.standardize(Y))

    def paired(self, A, B):
        Za = self.standardize(A)
        return self.kernel.paired(Za, Za if B is A else self.standardize(B))

    def diag(self, X):
        Z = self.standardize(X)
        return self.kernel.paired(Z, Z)

    def __repr__(self):
        return f"StandardizedKernel({self.kernel!r})"


class MetricMap:
    """x ↦ L (x / s): the map of a learned metric (:class:`~cvxkml.learned.LearnedMetric` or
    :class:`~cvxkml.learned.FactoredMetric`, W = LᵀL) learned on features divided by the
    scale s (None: the features as given).  A factored metric maps in O(d k) per point."""

    def __init__(self, metric, scale=None):
        self.metric, self.scale = metric, scale

    def scaled(self, X):
        return X if self.scale is None else np.asarray(X, dtype=float) / self.scale

    def __call__(self, X):
        return self.metric.transform(self.scaled(X))


class MetricDistance(MetricMap):
    """Squared learned distances of the paired rows of A and B under a :class:`MetricMap`'s
    metric (through the metric's factors, never a d × d matrix for a factored one)."""

    def __call__(self, A, B):
        return self.metric.pair_sq_distances(self.scaled(A), self.scaled(B))
