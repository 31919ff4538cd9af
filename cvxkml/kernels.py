"""Base kernels, kernel matrices, centring, normalisation and kernel distances.

A :class:`Kernel` is a small value object (name + parameters) that evaluates
``kernel(X, Y)`` on any two sets of points, so a learned kernel can evaluate the
base kernel between new points (Jain et al. 2012, eq. 6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._config import blas_limit
from ._validation import check_data
from .errors import InvalidInputError

__all__ = [
    "Kernel",
    "linear_kernel",
    "gaussian_kernel",
    "polynomial_kernel",
    "kernel_matrix",
    "center_kernel",
    "normalize_mean_diagonal",
    "kernel_sq_distances",
    "pair_sq_distances",
]


def _pair(X, Y):
    X = check_data(X, "X")
    Y = X if Y is None else check_data(Y, "Y")
    if X.shape[1] != Y.shape[1]:
        raise InvalidInputError(f"X and Y must have the same number of features; got {X.shape[1]} and {Y.shape[1]}.")
    return X, Y


def _sq_euclidean(X, Y):
    xx = np.einsum("ij,ij->i", X, X)
    yy = np.einsum("ij,ij->i", Y, Y)
    D = xx[:, None] + yy[None, :] - 2.0 * (X @ Y.T)
    np.maximum(D, 0.0, out=D)
    return D


@blas_limit()
def linear_kernel(X, Y=None) -> np.ndarray:
    """κ(x, y) = xᵀy."""
    X, Y = _pair(X, Y)
    return X @ Y.T


@blas_limit()
def gaussian_kernel(X, Y=None, *, sigma: float | None = None, gamma: float | None = None) -> np.ndarray:
    """κ(x, y) = exp(−γ‖x − y‖²) with γ = 1 / (2σ²); give exactly one of ``sigma`` / ``gamma``."""
    X, Y = _pair(X, Y)
    g = _gaussian_gamma(sigma, gamma)
    K = np.exp(-g * _sq_euclidean(X, Y))
    if Y is X:
        np.fill_diagonal(K, 1.0)
    return K


def _gaussian_gamma(sigma, gamma) -> float:
    if (sigma is None) == (gamma is None):
        raise InvalidInputError("Give exactly one of sigma or gamma for the Gaussian kernel.")
    if sigma is not None:
        if not np.isfinite(sigma) or sigma <= 0:
            raise InvalidInputError(f"sigma must be a finite positive number; got {sigma!r}.")
        return 1.0 / (2.0 * float(sigma) ** 2)
    if not np.isfinite(gamma) or gamma <= 0:
        raise InvalidInputError(f"gamma must be a finite positive number; got {gamma!r}.")
    return float(gamma)


@blas_limit()
def polynomial_kernel(X, Y=None, *, degree: int = 2, coef0: float = 1.0, scale: float = 1.0) -> np.ndarray:
    """κ(x, y) = (scale·xᵀy + coef0)^degree."""
    X, Y = _pair(X, Y)
    if int(degree) != degree or degree < 1:
        raise InvalidInputError(f"degree must be a positive integer; got {degree!r}.")
    if coef0 < 0:
        raise InvalidInputError(f"coef0 must be >= 0 for a PSD polynomial kernel; got {coef0!r}.")
    return (scale * (X @ Y.T) + coef0) ** int(degree)


_KERNELS = {"linear", "gaussian", "rbf", "polynomial", "poly", "precomputed"}


@dataclass(frozen=True)
class Kernel:
    """A base kernel κ0 by name and parameters.

    ``name`` is one of ``"linear"``, ``"gaussian"`` (alias ``"rbf"``; parameters ``sigma``
    or ``gamma``), ``"polynomial"`` (alias ``"poly"``; ``degree``, ``coef0``, ``scale``) or
    ``"precomputed"`` (the inputs already are kernel values; ``Kernel("precomputed")(K)``
    returns ``K`` unchanged).
    """

    name: str = "linear"
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.name not in _KERNELS:
            raise InvalidInputError(f"Unknown kernel {self.name!r}; choose one of {sorted(_KERNELS)}.")
        if self.name in ("gaussian", "rbf"):
            _gaussian_gamma(self.params.get("sigma"), self.params.get("gamma"))

    @property
    def precomputed(self) -> bool:
        return self.name == "precomputed"

    def __call__(self, X, Y=None) -> np.ndarray:
        if self.precomputed:
            return check_data(X, "K")
        if self.name == "linear":
            return linear_kernel(X, Y)
        if self.name in ("gaussian", "rbf"):
            return gaussian_kernel(X, Y, **self.params)
        return polynomial_kernel(X, Y, **self.params)

    def paired(self, A, B) -> np.ndarray:
        """κ0(a_t, b_t) for the rows of A and B (without forming the full matrix)."""
        if self.precomputed:
            raise InvalidInputError("Paired values of a precomputed kernel are not available from X.")
        A, B = _pair(A, B)
        if A.shape[0] != B.shape[0]:
            raise InvalidInputError("A and B must have the same number of rows.")
        if self.name in ("gaussian", "rbf"):
            D = A - B
            return np.exp(
                -_gaussian_gamma(self.params.get("sigma"), self.params.get("gamma")) * np.einsum("ij,ij->i", D, D)
            )
        dots = np.einsum("ij,ij->i", A, B)
        if self.name == "linear":
            return dots
        p = {"degree": 2, "coef0": 1.0, "scale": 1.0, **self.params}
        return (p["scale"] * dots + p["coef0"]) ** int(p["degree"])

    def diag(self, X) -> np.ndarray:
        """κ0(x, x) for each row of X."""
        return self.paired(X, X)


def kernel_matrix(X, Y=None, kernel: str | Kernel = "linear", **params) -> np.ndarray:
    """The kernel matrix [κ(x_i, y_j)] between the rows of X and of Y (Y = X by default)."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel, params)
    return k(X, Y)


def center_kernel(K) -> np.ndarray:
    """H K H with H = I − 11ᵀ/n (centring in feature space)."""
    K = np.asarray(K, dtype=float)
    row = K.mean(axis=0)
    return K - row[None, :] - K.mean(axis=1)[:, None] + row.mean()


def centering_roundoff(K) -> float:
    """Absolute round-off level of :func:`center_kernel` on ``K``: 4 · n · eps · max|K|.

    Eigenvalues of ``H K H`` within this of zero are indistinguishable from zero, however
    small the centred matrix is (points that nearly coincide in feature space)."""
    K = np.asarray(K, dtype=float)
    return 4.0 * K.shape[0] * float(np.finfo(float).eps) * float(np.max(np.abs(K), initial=0.0))


def normalize_mean_diagonal(K) -> np.ndarray:
    """K / mean(diag K), so the mean squared norm in feature space is one."""
    K = np.asarray(K, dtype=float)
    m = float(np.mean(np.diag(K)))
    if not m > 0:
        raise InvalidInputError("Cannot normalise a kernel matrix whose mean diagonal is not positive.")
    return K / m


def kernel_sq_distances(K) -> np.ndarray:
    """All squared feature-space distances K_ii + K_jj − 2K_ij (clipped at 0)."""
    K = np.asarray(K, dtype=float)
    d = np.diag(K)
    D = d[:, None] + d[None, :] - 2.0 * K
    np.maximum(D, 0.0, out=D)
    return D


def pair_sq_distances(K, i, j) -> np.ndarray:
    """Squared feature-space distances K_ii + K_jj − 2K_ij for index arrays i, j."""
    K = np.asarray(K, dtype=float)
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    return K[i, i] + K[j, j] - 2.0 * K[i, j]
