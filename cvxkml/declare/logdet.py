"""LogDet metric and kernel learning (Jain et al. 2012, eq. 2, 3, 4, 7) on the whitened
spectral core (:class:`~cvxkml.declare.base.SpectralProblem` with the LogDet regularizer)."""
from __future__ import annotations

import numpy as np

from .._validation import check_data, check_kernel_matrix, range_space
from ..errors import InvalidInputError
from .base import SpectralProblem

__all__ = ["ITML", "LogDetKernel", "LogDetProblem"]

LogDetProblem = SpectralProblem        # the LogDet instance is the default regularizer


class ITML(SpectralProblem):
    """LogDet (information-theoretic) metric learning, Jain et al. eq. 2 / 4 (7 with slack):

        min_W  D_ld(W, W0) [+ γ D_ld(diag ξ, diag ξ0)]
        s.t.   (x_i − x_j)ᵀ W (x_i − x_j) <= u (similar) / >= l (dissimilar)  [or ξ_ij]

    Parameters
    ----------
    X : (n, d) data.  constraints : PairConstraints (fast + exact), RelativeConstraints
    and/or LinearConstraints on W (exact model only).  W0 : PD prior (default I).
    gamma : None for hard constraints, else the LogDet slack weight γ > 0.
    """

    kind = "metric"

    def __init__(self, X, constraints, W0=None, gamma=None):
        self.X = check_data(X, "X")
        d = self.X.shape[1]
        if W0 is None:
            self.M0 = np.eye(d)
            self.T = np.eye(d)
        else:
            self.M0 = check_kernel_matrix(W0, "W0", require_pd=True)
            if self.M0.shape != (d, d):
                raise InvalidInputError(f"W0 must be {d} × {d} to match X; got {self.M0.shape}.")
            self.T = np.linalg.cholesky(self.M0)
        self.F = self.X @ self.T
        self._init_constraints(constraints, self.X.shape[0], d, gamma)

    def pair_values(self, M, i, j):
        V = self.X[np.asarray(i)] - self.X[np.asarray(j)]
        return np.einsum("ij,jk,ik->i", V, np.asarray(M, dtype=float), V)

    def pair_inner(self, M, j, l):
        return np.einsum("ij,jk,ik->i", self.X[np.asarray(j)], np.asarray(M, dtype=float),
                         self.X[np.asarray(l)])


class LogDetKernel(SpectralProblem):
    """LogDet kernel learning, Jain et al. eq. 3 (7 with slack):

        min_K  D_ld(K, K0) [+ γ D_ld(diag ξ, diag ξ0)]
        s.t.   K_ii + K_jj − 2K_ij <= u (similar) / >= l (dissimilar)  [or ξ_ij]

    K0 must be PSD.  A rank-deficient K0 is handled on its range space (the learned K
    keeps range(K0), Kulis et al. 2009): the exact model works with the r × r matrix
    X̂ (K = G0 X̂ G0ᵀ, K0 = G0 G0ᵀ), and no solver inverts K0.  The fast solver is Jain
    et al. Algorithm 1 on K (O(n²) per projection) for a full-rank K0 with pair
    constraints; for a rank-r K0, or with relative / similarity constraints, it is the
    factored Algorithm 2 of Kulis et al. on G0 (O(r²) per projection;
    ``Solution.info["path"]`` says which ran).
    """

    kind = "kernel"
    kernel_space = True

    def __init__(self, K0, constraints, gamma=None, rank_rtol: float = 1e-10):
        self.M0, w, V, keep = range_space(K0, "K0", rank_rtol)
        self.rank = int(np.sum(keep))
        self._range = (w, V, keep)
        self.T = V[:, keep] * np.sqrt(w[keep])
        self.F = self.T
        n = self.M0.shape[0]
        self._init_constraints(constraints, n, n, gamma)

    def pair_values(self, M, i, j):
        M = np.asarray(M, dtype=float)
        i = np.asarray(i); j = np.asarray(j)
        return M[i, i] + M[j, j] - 2.0 * M[i, j]

    def pair_inner(self, M, j, l):
        return np.asarray(M, dtype=float)[np.asarray(j), np.asarray(l)]
