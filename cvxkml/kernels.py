"""Base kernels, kernel matrices, centring, normalisation and kernel distances.

A :class:`Kernel` is a small value object (name + parameters) that evaluates
``kernel(X, Y)`` on any two sets of points, so a learned kernel can evaluate the
base kernel between new points (Jain et al. 2012, eq. 6).

The kernel parameters are checked like every other input (one real number each, in range;
a typed :class:`~cvxkml.errors.InvalidInputError` otherwise), when a :class:`Kernel` is made
and when a kernel function is called.  So is the kernel matrix they give: a Gaussian width
whose γ = 1/(2σ²) overflows or underflows float64, or a training matrix that is 0 (or 1)
between every two distinct points, and a polynomial kernel that overflows, are refused with
what to change, rather than returned as a matrix that carries no information or holds inf.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ._config import blas_limit
from ._validation import check_data, check_int, check_scalar
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
    "KERNEL_PARAMS",
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
    """κ(x, y) = exp(−γ‖x − y‖²) with γ = 1 / (2σ²); give exactly one of ``sigma`` / ``gamma``.

    Raises
    ------
    InvalidInputError
        For a width that is not one finite positive number, whose γ overflows or underflows
        float64, or (``Y`` omitted: the training matrix) that makes the kernel 0, or 1, between
        every two distinct points of ``X``: the width is then too small, or too large, for the
        data's scale and the matrix carries no information about the points.
    """
    X, Y = _pair(X, Y)
    g = _gaussian_gamma(sigma, gamma)
    D = _sq_euclidean(X, Y)
    with np.errstate(over="ignore", under="ignore"):
        K = np.exp(-g * D)
    if Y is X:
        np.fill_diagonal(K, 1.0)
        _check_gaussian_spread(K, D, sigma, gamma)
    return K


def _width(sigma, gamma) -> str:
    return f"sigma = {sigma!r}" if sigma is not None else f"gamma = {gamma!r}"


_SCALE_HINT = "e.g. sigma near the median distance between the points, the estimators' default"


def _gaussian_gamma(sigma, gamma) -> float:
    """γ of the Gaussian kernel from exactly one of ``sigma`` and ``gamma``, each one finite
    positive real number; σ whose γ = 1/(2σ²) is not a positive finite float64 is refused (too
    small: every value between distinct points would be 0; too large: every value 1)."""
    if (sigma is None) == (gamma is None):
        raise InvalidInputError("Give exactly one of sigma or gamma for the Gaussian kernel.")
    positive = dict(low=0.0, low_open=True, what="a finite positive number")
    if gamma is not None:
        return check_scalar(gamma, "gamma", **positive)
    s = np.float64(check_scalar(sigma, "sigma", **positive))
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        g = float(0.5 / (s * s))
    if not np.isfinite(g):
        raise InvalidInputError(
            f"sigma = {sigma!r} is too small: gamma = 1/(2 sigma^2) overflows float64, so the Gaussian "
            f"kernel would be 0 between every two distinct points. Use a width on the data's scale, {_SCALE_HINT}."
        )
    if g == 0.0:
        raise InvalidInputError(
            f"sigma = {sigma!r} is too large: gamma = 1/(2 sigma^2) underflows to 0 in float64, so the "
            f"Gaussian kernel would be 1 everywhere. Use a width on the data's scale, {_SCALE_HINT}."
        )
    return g


def _check_gaussian_spread(K, D, sigma, gamma) -> None:
    """Refuse a Gaussian training matrix that is 0 (underflow) or exactly 1 between every two
    distinct points: at that width the points are all orthogonal, or all alike, in feature
    space, whatever they are.  (Only the training matrix: one new point far from every
    training point has a row of zeros with any width.)"""
    distinct = D > 0
    np.fill_diagonal(distinct, False)
    if not distinct.any():
        return
    values = K[distinct]
    if values.max() == 0.0:
        raise InvalidInputError(
            f"The Gaussian kernel with {_width(sigma, gamma)} is 0 (underflow) between every two distinct "
            f"points: the width is too small for the data's scale (smallest squared distance "
            f"{D[distinct].min():.3g}). Use a larger sigma (smaller gamma), {_SCALE_HINT}."
        )
    if values.min() == 1.0:
        raise InvalidInputError(
            f"The Gaussian kernel with {_width(sigma, gamma)} is 1 between every two distinct points: the "
            f"width is too large for the data's scale (largest squared distance {D[distinct].max():.3g}). "
            f"Use a smaller sigma (larger gamma), {_SCALE_HINT}."
        )


def _polynomial_params(degree=2, coef0=1.0, scale=1.0) -> tuple[int, float, float]:
    """(degree, coef0, scale) of the polynomial kernel, checked: a positive integer degree
    (within a C int), coef0 finite and >= 0, scale finite and > 0 (otherwise the kernel is
    not positive semidefinite, or constant)."""
    d = check_int(degree, "degree", minimum=1, maximum=2**31 - 1)
    c = check_scalar(
        coef0, "coef0", low=0.0, what="a finite number >= 0 (a negative offset makes the kernel indefinite)"
    )
    s = check_scalar(
        scale, "scale", low=0.0, low_open=True, what="a finite positive number (otherwise the kernel is not PSD)"
    )
    return d, c, s


def _polynomial_values(dots, degree, coef0, scale) -> np.ndarray:
    """(scale·dots + coef0)^degree; InvalidInputError when a value overflows float64."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        base = scale * dots + coef0
        K = base**degree
    if not np.all(np.isfinite(K)):
        raise InvalidInputError(
            f"The polynomial kernel (scale x'y + coef0)^degree with degree = {degree}, coef0 = {coef0:g}, "
            f"scale = {scale:g} overflows float64 on these data (largest |scale x'y + coef0| = "
            f"{float(np.max(np.abs(base))):.3g}). Standardize the features, or lower the degree or the scale."
        )
    return K


@blas_limit()
def polynomial_kernel(X, Y=None, *, degree: int = 2, coef0: float = 1.0, scale: float = 1.0) -> np.ndarray:
    """κ(x, y) = (scale·xᵀy + coef0)^degree.

    Raises
    ------
    InvalidInputError
        For a degree that is not a positive integer, a coef0 that is not finite and >= 0, a
        scale that is not finite and positive, a value that overflows float64, or (``Y``
        omitted) a training matrix that is 0 everywhere (underflow: the scale is too small for
        the data's).
    """
    X, Y = _pair(X, Y)
    d, c, s = _polynomial_params(degree, coef0, scale)
    K = _polynomial_values(X @ Y.T, d, c, s)
    if Y is X and not K.any() and X.any():
        raise InvalidInputError(
            f"The polynomial kernel with degree = {d}, coef0 = {c:g}, scale = {s:g} is 0 (underflow) for "
            "every pair of points: the scale is too small for the data's. Use a larger scale or coef0, "
            "or standardize the features."
        )
    return K


#: kernel name -> the parameters it takes (the estimators' ``kernel_params`` too)
KERNEL_PARAMS = {
    "linear": frozenset(),
    "precomputed": frozenset(),
    "gaussian": frozenset({"sigma", "gamma"}),
    "rbf": frozenset({"sigma", "gamma"}),
    "polynomial": frozenset({"degree", "coef0", "scale"}),
    "poly": frozenset({"degree", "coef0", "scale"}),
}


@dataclass(frozen=True)
class Kernel:
    """A base kernel κ0 by name and parameters.

    ``name`` is one of ``"linear"``, ``"gaussian"`` (alias ``"rbf"``; parameters ``sigma``
    or ``gamma``), ``"polynomial"`` (alias ``"poly"``; ``degree``, ``coef0``, ``scale``) or
    ``"precomputed"`` (the inputs already are kernel values; ``Kernel("precomputed")(K)``
    returns ``K`` unchanged).  The parameters are checked when the kernel is made (names the
    kernel takes, values in range; :class:`~cvxkml.errors.InvalidInputError` otherwise);
    ``params`` None means none.
    """

    name: str = "linear"
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.name, str) or self.name not in KERNEL_PARAMS:
            raise InvalidInputError(f"Unknown kernel {self.name!r}; choose one of {sorted(KERNEL_PARAMS)}.")
        if self.params is None:
            object.__setattr__(self, "params", {})
        if not isinstance(self.params, Mapping):
            raise InvalidInputError(
                f"The parameters of the {self.name} kernel must be a dict; got {type(self.params).__name__}."
            )
        allowed = KERNEL_PARAMS[self.name]
        unknown = sorted(repr(k) for k in self.params if k not in allowed)
        if unknown:
            raise InvalidInputError(
                f"Unknown parameter(s) {', '.join(unknown)} for the {self.name} kernel; "
                + (f"use only {', '.join(sorted(allowed))}." if allowed else "it takes none: pass no parameters.")
            )
        if self.name in ("gaussian", "rbf"):
            _gaussian_gamma(self.params.get("sigma"), self.params.get("gamma"))
        elif self.name in ("polynomial", "poly"):
            _polynomial_params(**self.params)

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
        return _polynomial_values(dots, *_polynomial_params(**self.params))

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
