"""Low-rank factorizations K0 ≈ G0 G0ᵀ that also map new points into the factor space
(for the out-of-sample extension of low-rank kernel learning, Kulis et al. 2009 §6.1).

* ``eigen``: G0 = V_r Λ_r^½ (exact for a rank-r K0); new point ↦ Λ_r^-½ V_rᵀ k_x (the
  Nyström map on all training points).
* ``icholesky``: pivoted incomplete Cholesky (greedy on the residual diagonal) until the
  residual trace falls below ``tol``·tr(K0) or ``rank`` pivots; new point ↦ L_P⁻¹ k_P(x),
  with L_P the r × r block of G0 on the pivots (the factor is exact on the pivot columns).
* ``nystroem``: landmark columns P given (or drawn); G0 = K_{:,P} L_P^-ᵀ with
  K_PP = L_P L_Pᵀ; new point ↦ L_P⁻¹ k_P(x).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from ._config import blas_limit
from ._validation import check_kernel_matrix
from .errors import InvalidInputError

__all__ = ["Factorization", "factorize", "incomplete_cholesky"]


@dataclass
class Factorization:
    """G0 (n × r) with K0 ≈ G0 G0ᵀ, and the map of kernel columns of new points to factor
    coordinates: ``transform_cross(K_new_train)`` with K_new_train = κ0(X_new, X_train)."""

    G0: np.ndarray
    method: str
    pivots: np.ndarray | None = None  # columns the map reads (None: all)
    _map: np.ndarray | None = None  # (|pivots| or n) × r, g(x) = k_P(x)ᵀ · _map

    @property
    def rank(self) -> int:
        return int(self.G0.shape[1])

    @blas_limit()
    def transform_cross(self, K_cross) -> np.ndarray:
        K_cross = np.asarray(K_cross, dtype=float)
        if K_cross.ndim != 2 or K_cross.shape[1] != self.G0.shape[0]:
            raise InvalidInputError(f"K_cross must be (m, {self.G0.shape[0]}) = κ0(new points, training points).")
        Kp = K_cross if self.pivots is None else K_cross[:, self.pivots]
        return Kp @ self._map


@blas_limit()
def incomplete_cholesky(K0, rank: int | None = None, tol: float = 1e-10):
    """Pivoted incomplete Cholesky: returns (G0, pivots) with K0 ≈ G0 G0ᵀ, stopping when the
    residual trace ≤ tol·tr(K0) or after ``rank`` pivots.  O(n r²)."""
    K0 = np.asarray(K0, dtype=float)
    n = K0.shape[0]
    rmax = n if rank is None else int(rank)
    d = np.diag(K0).astype(float).copy()
    total = float(np.sum(d))
    G = np.zeros((n, rmax))
    piv = []
    for k in range(rmax):
        p = int(np.argmax(d))
        if d[p] <= max(tol * total, 0.0) or d[p] <= 0:
            break
        piv.append(p)
        col = (K0[:, p] - G[:, :k] @ G[p, :k]) / np.sqrt(d[p])
        G[:, k] = col
        d -= col * col
        d[piv] = 0.0
    r = len(piv)
    return G[:, :r], np.array(piv, dtype=np.int64)


@blas_limit()
def factorize(
    K0, method: str = "eigen", rank: int | None = None, tol: float = 1e-10, landmarks=None, random_state=None
) -> Factorization:
    """Factor a PSD kernel matrix K0 ≈ G0 G0ᵀ (see the module docstring).  BLAS/LAPACK
    threads follow the ``blas_threads`` option (:mod:`cvxkml._config`)."""
    K0 = check_kernel_matrix(K0, "K0")
    n = K0.shape[0]
    if rank is not None and not (1 <= int(rank) <= n):
        raise InvalidInputError(f"rank must be between 1 and n = {n}; got {rank}.")
    if method == "eigen":
        w, V = np.linalg.eigh(K0)
        keep = w > tol * max(float(w[-1]), np.finfo(float).tiny)
        idx = np.flatnonzero(keep)[::-1]
        if rank is not None:
            if int(rank) > idx.size:
                raise InvalidInputError(f"rank {rank} exceeds the numerical rank {idx.size} of K0.")
            idx = idx[: int(rank)]
        Vr, wr = V[:, idx], w[idx]
        return Factorization(Vr * np.sqrt(wr), "eigen", None, Vr / np.sqrt(wr))
    if method == "icholesky":
        G0, piv = incomplete_cholesky(K0, rank, tol)
        if G0.shape[1] == 0:
            raise InvalidInputError("K0 is zero: nothing to factor.")
        Lp = G0[piv]  # lower triangular in pivot order
        return Factorization(G0, "icholesky", piv, sla.solve_triangular(Lp, np.eye(len(piv)), lower=True).T)
    if method == "nystroem":
        if landmarks is None:
            if rank is None:
                raise InvalidInputError("Nyström needs landmarks or a rank (number of landmarks).")
            rng = np.random.default_rng(random_state)
            landmarks = np.sort(rng.choice(n, int(rank), replace=False))
        P = np.asarray(landmarks, dtype=np.int64)
        try:
            Lp = np.linalg.cholesky(K0[np.ix_(P, P)])
        except np.linalg.LinAlgError as exc:
            raise InvalidInputError(
                "The landmark block K0[P, P] is singular (duplicate landmarks?); choose "
                "distinct landmarks or use method='icholesky'."
            ) from exc
        Minv = sla.solve_triangular(Lp, np.eye(len(P)), lower=True).T  # L_P^-ᵀ
        return Factorization(K0[:, P] @ Minv, "nystroem", P, Minv)
    raise InvalidInputError(f"method must be 'eigen', 'icholesky' or 'nystroem'; got {method!r}.")
