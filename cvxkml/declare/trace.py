"""Trace-SSIKDR: trace-norm inductive semi-supervised kernel dimensionality reduction
(Jain et al. 2012, §5.4, eq. 26–28, Algorithm 2, Lemma 10).

    min_{K̃ ⪰ 0} τ tr K̃ + ‖K̃‖²_F  s.t. tr(C_i K) <= b_i,  K = K0^½ K̃ K0^½        (26)

The exact model is the spectral framework's whitened core with ``TraceNorm(tau)`` (K̃ as
the PSD variable, constraints mapped through the factor of K0); the fast solver is the
accelerated Uzawa iteration of :mod:`cvxkml.solvers.trace`.  The learned transformation
is low rank, which gives a k-dimensional embedding of any point:

    x ↦ diag(√s) Uᵀ ĝ(x),   ĝ(x) = Λ^-½ Vᵀ κ0(X_train, x)  (factor coordinates),

where K̂ = U diag(s) Uᵀ is the whitened solution (s = (μ − τ)₊/2 > 0) and K0 = V Λ Vᵀ;
inner products of training embeddings reproduce the learned kernel K = G K̂ Gᵀ exactly.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from .regularizers import TraceNorm
from .spectral import SpectralKernel

__all__ = ["TraceSSIKDR"]


class TraceSSIKDR(SpectralKernel):
    """Trace-SSIKDR on a PSD K0 with hard pair (or, in the exact model, general linear)
    constraints.  ``tau`` > 0 is the trace weight.  See :meth:`embedding` for new points."""

    def __init__(self, K0, constraints, tau: float = 1.0):
        super().__init__(K0, constraints, TraceNorm(tau), gamma=None)
        self.tau = float(tau)
        w, V, keep = self._range
        # the same factor G = V √w the core uses (T); ĝ(x) = diag(1/√w) Vᵀ k_x
        self._gmap = V[:, keep] / np.sqrt(w[keep])

    def embedding_basis(self, solution, rtol: float = 1e-9):
        """(P, s): x ↦ (k_xᵀ P) with P = Λ^-½V · U diag(√s) over the kept components (n × k)."""
        Kh = self.whiten(solution.matrix)
        if Kh is None:
            raise InvalidInputError("The solution matrix is not in the range of K0.")
        s, U = np.linalg.eigh(Kh)
        keep = s > rtol * max(float(s[-1]), np.finfo(float).tiny) if s.size else s > 0
        s, U = s[keep][::-1], U[:, keep][:, ::-1]
        return self._gmap @ (U * np.sqrt(s)), s

    def embedding(self, solution, K_cross) -> np.ndarray:
        """k-dimensional coordinates of points from κ0(X, X_train) (rows), k = rank of the
        learned transformation."""
        P, _ = self.embedding_basis(solution)
        K_cross = np.asarray(K_cross, dtype=float)
        if K_cross.ndim != 2 or K_cross.shape[1] != self.M0.shape[0]:
            raise InvalidInputError(f"K_cross must be (m, {self.M0.shape[0]}) = κ0(points, training points).")
        return K_cross @ P
