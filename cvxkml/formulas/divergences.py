"""Numpy values of the matrix divergences — the one place their formulas live.

The CVXPY models, the fast solvers' certificates and the tests all evaluate
divergences through these functions.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_symmetric
from ..errors import InvalidInputError

__all__ = [
    "logdet_divergence",
    "logdet_divergence_diag",
    "von_neumann_divergence",
    "frobenius_divergence",
    "range_basis",
]


def range_basis(Y: np.ndarray, rtol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal basis V (n × r) of range(Y) and the r positive eigenvalues of a PSD Y."""
    w, V = np.linalg.eigh(0.5 * (Y + Y.T))
    scale = max(float(np.max(np.abs(w))), np.finfo(float).tiny)
    keep = w > rtol * scale
    return V[:, keep], w[keep]


def _same_range(X: np.ndarray, V: np.ndarray, rtol: float) -> bool:
    """Whether X = P X P for P the projector on span(V) (up to ``rtol`` relative)."""
    XV = X @ V
    resid = X - V @ (V.T @ XV) @ V.T
    return float(np.linalg.norm(resid)) <= rtol * max(1.0, float(np.linalg.norm(X)))


def logdet_divergence(X, Y, rtol: float = 1e-10) -> float:
    """D_ld(X, Y) = tr(X Y⁻¹) − log det(X Y⁻¹) − n.

    Computed on the range space of Y (Kulis et al. 2009, Definition 4 / Theorem 7):
    with Y = V diag(w) Vᵀ over its eigenvalues w > ``rtol``·max(w),
    D_ld(X, Y) = D_ld(VᵀXV, diag w) when range(X) = range(Y), and +inf otherwise.  For a
    positive definite Y this is the usual formula.  No singular matrix is ever inverted;
    returns +inf when X is not PD on that range.
    """
    X = check_symmetric(X, "X")
    Y = check_symmetric(Y, "Y")
    if X.shape != Y.shape:
        raise InvalidInputError(f"X and Y must have the same shape; got {X.shape} and {Y.shape}.")
    # One path for PD and PSD Y: the rank is decided on Y's eigenvalues (a Cholesky that
    # "succeeds" on a numerically singular Y is not a rank test).
    V, w = range_basis(Y, rtol)
    r = w.size
    if r == 0:
        return 0.0 if np.allclose(X, 0.0) else np.inf
    if r < X.shape[0] and not _same_range(X, V, 1e-7):
        return np.inf
    Xh = V.T @ X @ V  # X on range(Y); Y there is diag(w)
    try:
        cX = np.linalg.cholesky(0.5 * (Xh + Xh.T))
    except np.linalg.LinAlgError:
        return np.inf
    logdet_x = 2.0 * float(np.sum(np.log(np.diag(cX))))
    return float(np.sum(np.diag(Xh) / w) - logdet_x + np.sum(np.log(w)) - r)


def logdet_divergence_diag(x, y) -> float:
    """D_ld(diag x, diag y) = Σ x/y − log(x/y) − 1 for positive vectors (LogDet slack term)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if np.any(x <= 0):
        return np.inf
    r = x / y
    return float(np.sum(r - np.log(r) - 1.0))


def _psd_log(w: np.ndarray, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues and a mask of the positive ones (others count as exact zeros)."""
    scale = max(float(np.max(np.abs(w))), np.finfo(float).tiny)
    pos = w > rtol * scale
    if np.any(w < -1e3 * rtol * scale):
        raise InvalidInputError("von Neumann divergence needs PSD arguments.")
    return np.where(pos, w, 0.0), pos


def von_neumann_divergence(X, Y, rtol: float = 1e-12) -> float:
    """D_vN(X, Y) = tr(X log X − X log Y − X + Y) for PSD X, Y (0 log 0 = 0).

    +inf when range(X) is not contained in range(Y).
    """
    X = check_symmetric(X, "X")
    Y = check_symmetric(Y, "Y")
    lx, U = np.linalg.eigh(X)
    ly, V = np.linalg.eigh(Y)
    lx, px = _psd_log(lx, rtol)
    ly, py = _psd_log(ly, rtol)
    xlogx = float(np.sum(lx[px] * np.log(lx[px])))
    # range(X) ⊆ range(Y) decided on X itself, as in logdet_divergence (an eigenvector of a
    # tiny eigenvalue of X is round-off and may point anywhere: with a rank-2 K0, an X of
    # eigenvalue ~1e-11·‖X‖ can have an eigenvector that overlaps null(Y) by more than 1e-9)
    if not np.all(py) and not _same_range(X, V[:, py], 1e-7):
        return np.inf
    # tr(X log Y) = Σ_ij λ_i(X) (u_iᵀ v_j)² log μ_j over μ_j > 0
    C = (U[:, px].T @ V) ** 2  # |px| × n
    xlogy = float(lx[px] @ (C[:, py] @ np.log(ly[py])))
    return xlogx - xlogy - float(np.trace(X)) + float(np.trace(Y))


def frobenius_divergence(X, Y) -> float:
    """‖X − Y‖²_F (squared Frobenius distance)."""
    D = np.asarray(X, dtype=float) - np.asarray(Y, dtype=float)
    return float(np.sum(D * D))
