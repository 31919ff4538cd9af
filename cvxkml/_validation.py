"""Input checks shared by the whole package (one place for each check)."""
from __future__ import annotations

import numpy as np

from .errors import InvalidInputError, NotPSDError


def as_float_array(a, name: str, ndim: int | None = None) -> np.ndarray:
    """Return ``a`` as a C-contiguous float64 array; reject NaN/inf and wrong ndim."""
    try:
        arr = np.ascontiguousarray(np.asarray(a, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be numeric; got {type(a).__name__} ({exc}).") from exc
    if ndim is not None and arr.ndim != ndim:
        raise InvalidInputError(f"{name} must be {ndim}-dimensional; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(
            f"{name} contains NaN or inf; remove or impute those entries before fitting.")
    return arr


def check_data(X, name: str = "X") -> np.ndarray:
    """A finite 2-D data matrix with at least one row and one column."""
    X = as_float_array(X, name, ndim=2)
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise InvalidInputError(f"{name} must have at least one row and one column; got {X.shape}.")
    return X


def check_symmetric(M, name: str, rtol: float = 1e-8) -> np.ndarray:
    M = as_float_array(M, name, ndim=2)
    if M.shape[0] != M.shape[1]:
        raise InvalidInputError(f"{name} must be square; got shape {M.shape}.")
    scale = max(1.0, float(np.max(np.abs(M)))) if M.size else 1.0
    asym = float(np.max(np.abs(M - M.T))) if M.size else 0.0
    if asym > rtol * scale:
        raise InvalidInputError(
            f"{name} must be symmetric; max |M - M^T| = {asym:.3g}. Pass (M + M.T) / 2 if the "
            "asymmetry is round-off.")
    return 0.5 * (M + M.T)


def psd_rank(M: np.ndarray, name: str, rtol: float = 1e-10) -> tuple[int, np.ndarray, np.ndarray]:
    """Eigen-decompose a symmetric matrix, check PSD, return (rank, eigvals, eigvecs).

    Eigenvalues below ``-rtol * max|eig|`` make it non-PSD; those within
    ``rtol * max|eig|`` of zero count as zero for the rank.
    """
    w, V = np.linalg.eigh(M)
    scale = max(float(np.max(np.abs(w))), np.finfo(float).tiny) if w.size else 1.0
    if w.size and w[0] < -rtol * scale * 10:
        raise NotPSDError(
            f"{name} is not positive semidefinite: smallest eigenvalue {w[0]:.3g} "
            f"(largest {w[-1]:.3g}). Use a valid kernel, or shift it (M + c I) / clip its "
            "negative eigenvalues.")
    rank = int(np.sum(w > rtol * scale))
    return rank, w, V


def check_kernel_matrix(K, name: str = "K0", require_pd: bool = False) -> np.ndarray:
    """A finite, symmetric, PSD float64 matrix (PD when ``require_pd``).

    PSD up to the ``psd_tol`` option (:mod:`cvxkml._config`; automatic by default:
    1e-9 · max|λ| for float64 input, max(1e-9, n·eps) · max|λ| for float32 input, from
    the dtype ``K`` arrives with).  A matrix accepted with an eigenvalue below the float64
    round-off level −1e-9 · max|λ| is returned clipped to PSD (negative eigenvalues set
    to 0, rebuilt, symmetrised); one within it is returned unchanged.  For float32 (and
    narrower) input the symmetry check allows 4·eps relative asymmetry.
    """
    from ._config import FLOAT64_PSD_TOL, blas_limit, get_config, psd_tolerance
    try:
        dtype = np.asarray(K).dtype
    except (TypeError, ValueError):
        dtype = np.dtype(np.float64)          # as_float_array reports the problem
    sym_rtol = 1e-8
    if np.issubdtype(dtype, np.floating):
        sym_rtol = max(sym_rtol, 4.0 * float(np.finfo(dtype).eps))
    K = check_symmetric(K, name, rtol=sym_rtol)
    n = K.shape[0]
    if n < 1:
        raise InvalidInputError(f"{name} must not be empty.")
    tol = psd_tolerance(n, dtype)
    with blas_limit():
        w, V = np.linalg.eigh(K)
        scale = max(float(np.max(np.abs(w))), np.finfo(float).tiny)
        if w[0] < -tol * scale:
            raise NotPSDError(
                f"{name} is not positive semidefinite: smallest eigenvalue {w[0]:.3g} "
                f"(largest {w[-1]:.3g}), {-w[0] / scale:.3g} of the largest |eigenvalue| "
                f"against the PSD tolerance {tol:.3g} ("
                + ("psd_tol" if get_config()["psd_tol"] is not None else f"automatic for {dtype} input")
                + "). Use a valid "
                "kernel, or shift it (K + c I) / clip its negative eigenvalues; if it is PSD "
                "up to the round-off of its computation, raise the tolerance with "
                "cvxkml.set_config(psd_tol=...) or `with cvxkml.config_context(psd_tol=...):`.")
        if w[0] < -FLOAT64_PSD_TOL * scale:          # accepted beyond float64 round-off: clip
            w = np.maximum(w, 0.0)
            K = (V * w) @ V.T
            K = 0.5 * (K + K.T)
    rank = int(np.sum(w > 1e-10 * scale))
    if require_pd and rank < n:
        raise NotPSDError(
            f"{name} must be positive definite; it has rank {rank} < {K.shape[0]} "
            f"(smallest eigenvalue {w[0]:.3g}). Add a ridge (K + eps I) or use the range-space "
            "(low-rank) formulation.")
    return K


def check_positive(value, name: str, allow_none: bool = False):
    if value is None and allow_none:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a positive number; got {value!r}.") from exc
    if not np.isfinite(v) or v <= 0:
        raise InvalidInputError(f"{name} must be a finite positive number; got {value!r}.")
    return v
