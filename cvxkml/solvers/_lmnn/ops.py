"""Full-pass operators of the LMNN solvers: all pair distances, the linear map K and its
adjoint, the PDHG's diagonal preconditioner and operator norm, and the working set."""

from __future__ import annotations

import numpy as np

from ...formulas.lmnn import LMNNTriplets, psd_factor, sorted_unique
from .kernels import _omega_times, _pair_quad


def pair_distances(F, M, pi, pj, psd: bool = False) -> np.ndarray:
    """(f_i − f_j)ᵀ M (f_i − f_j) for the index pairs (pi, pj) of the rows of F (n × r):
    the value of :func:`cvxkml.formulas.lmnn.pair_quadratic` by a Numba loop over the
    pairs (no P × r temporaries: for kernel LMNN, r = n).  ``psd=True``: M is PSD (its
    negative eigenvalues are round-off and count as 0) and the distances are ‖Lᵀ(f_i − f_j)‖²
    through its factor, the value of :func:`cvxkml.formulas.lmnn.psd_pair_distances`
    (accurate when ‖M‖ is huge)."""
    F = np.ascontiguousarray(F, dtype=np.float64)
    if psd:
        F = np.ascontiguousarray(F @ psd_factor(M))
        Y = F
    else:
        Y = np.ascontiguousarray(F @ np.asarray(M, dtype=np.float64))
    pi = np.ascontiguousarray(pi, dtype=np.int64)
    pj = np.ascontiguousarray(pj, dtype=np.int64)
    out = np.empty(pi.size)
    _pair_quad(F, Y, pi, pj, np.arange(pi.size, dtype=np.int64), out)
    return out


# --------------------------------------------------------------------------- driver
class _Ops:
    """Full-pass operators on all pairs / triplets (power iteration, checks)."""

    def __init__(self, U, trip: LMNNTriplets):
        self.U = U
        self.trip = trip
        self.all_pairs = np.arange(trip.n_pairs, dtype=np.int64)
        self.all_trip = np.arange(trip.n_triplets, dtype=np.int64)
        self.w = np.empty(trip.n_pairs)
        self.OU = np.empty_like(U)

    def distances(self, X) -> np.ndarray:
        """All pair distances of the PSD X̂ through its factor (``pair_distances(psd=True)``:
        the objective and certificate stay exact when ‖X̂‖ is huge)."""
        return self.distances_factor(psd_factor(X))

    def distances_factor(self, L) -> np.ndarray:
        """All pair distances of X̂ = L Lᵀ: ‖Lᵀ u_p‖²."""
        W = np.ascontiguousarray(self.U @ L)
        out = np.empty(self.trip.n_pairs)
        _pair_quad(W, W, self.trip.pi, self.trip.pj, self.all_pairs, out)
        return out

    def K(self, X) -> np.ndarray:
        """The linear map X ↦ (d_ij − d_il)_t for any symmetric X (power iteration)."""
        q = np.empty(self.trip.n_pairs)
        _pair_quad(self.U, self.U @ X, self.trip.pi, self.trip.pj, self.all_pairs, q)
        return q[self.trip.tt] - q[self.trip.ti]

    def Kt(self, yv) -> np.ndarray:
        P = self.trip.n_pairs
        w = np.bincount(self.trip.tt, yv, minlength=P) - np.bincount(self.trip.ti, yv, minlength=P)
        _omega_times(self.U, self.trip.pi, self.trip.pj, w, self.all_pairs, self.OU)
        G = self.U.T @ self.OU
        return 0.5 * (G + G.T)


def _preconditioner(U, trip: LMNNTriplets) -> np.ndarray:
    """The PDHG's diagonal dual preconditioner s_t = 1 / ‖a aᵀ − b bᵀ‖_F (a = u_ij, b = u_il)."""
    Dv = U[trip.pi] - U[trip.pj]
    nv = np.einsum("ij,ij->i", Dv, Dv)
    ab = np.einsum("ij,ij->i", Dv[trip.tt], Dv[trip.ti])
    fro = np.sqrt(np.maximum(nv[trip.tt] ** 2 + nv[trip.ti] ** 2 - 2.0 * ab**2, 0.0))
    fro = np.maximum(fro, 1e-12 * max(float(fro.max()) if trip.n_triplets else 1.0, 1e-300))
    return 1.0 / fro


def _operator_norm(ops: _Ops, s, n_iter: int = 40, seed: int = 0) -> float:
    """‖diag(√s) K‖ by power iteration on Kᵀ diag(s) K (K: X̂ ↦ (⟨D̂_t, X̂⟩)_t)."""
    r = ops.U.shape[1]
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((r, r))
    X = X + X.T
    X /= np.linalg.norm(X)
    lam = 0.0
    for _ in range(n_iter):
        Y = ops.Kt(s * ops.K(X))
        nrm = float(np.linalg.norm(Y))
        if nrm == 0.0:
            return 0.0
        lam = nrm
        X = Y / nrm
    return float(np.sqrt(lam))


def _working_set(p, trip: LMNNTriplets, alpha, buffer):
    arg = 1.0 + p[trip.tt] - p[trip.ti]
    work = np.flatnonzero((alpha > 0.0) | (arg > -buffer)).astype(np.int64)
    pairs = sorted_unique(np.flatnonzero(trip.target_weight > 0), trip.ti[work])
    return work, pairs
