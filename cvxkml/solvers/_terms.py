"""The constraints of a whitened spectral problem as signed rank-one terms, the one
representation the dual solvers share (:mod:`cvxkml.solvers.dual_newton`,
:mod:`cvxkml.solvers.pola`; built by :func:`cvxkml.declare.terms.constraint_terms`)."""

from __future__ import annotations

import numpy as np

__all__ = ["RankOneTerms"]

_TINY = np.finfo(np.float64).tiny


class RankOneTerms:
    """The constraints as signed rank-one terms Â_c = Σ_{a in c} w_a u_a u_aᵀ (rows of U,
    constraint c owning the rows ptr[c]:ptr[c+1]): A(λ) = Σ_a w_a λ_{c(a)} u_a u_aᵀ, the norms
    ‖Â_c‖_F, and sums over each constraint's terms."""

    #: the regularizer's own slack on some constraints (set by the dual solver), or None
    slack = None

    def __init__(self, U, w, ptr, t):
        self.U = np.ascontiguousarray(U, dtype=np.float64)
        self.w = np.ascontiguousarray(w, dtype=np.float64)
        self.ptr = np.ascontiguousarray(ptr, dtype=np.int64)
        self.t = np.ascontiguousarray(t, dtype=np.float64)
        self.m = self.t.size
        self.r = self.U.shape[1]
        self.owner = np.repeat(np.arange(self.m), np.diff(self.ptr))
        self.single = self.U.shape[0] == self.m  # one term per constraint (pairs only)
        # ‖Â_c‖_F (the Farkas test's scale): |w|·‖u‖² for one term, Σ_ab w_a w_b (u_a·u_b)² else
        if self.single:
            self.norms = np.abs(self.w) * np.einsum("ij,ij->i", self.U, self.U)
        else:
            self.norms = np.zeros(self.m)
            for c in range(self.m):
                Uc = self.U[self.ptr[c] : self.ptr[c + 1]]
                wc = self.w[self.ptr[c] : self.ptr[c + 1]]
                Gc = Uc @ Uc.T
                self.norms[c] = np.sqrt(max(float(wc @ (Gc * Gc) @ wc), 0.0))

    def A(self, lam):
        coef = self.w * lam[self.owner]
        nz = coef != 0.0
        if np.count_nonzero(nz) * 4 < 3 * coef.size:  # sparse λ: skip the exact zeros
            U = self.U[nz]
            return (U.T * coef[nz]) @ U
        return (self.U.T * coef) @ self.U

    def per_constraint(self, q):
        """Σ of a per-term quantity over each constraint's terms."""
        return q if self.single else np.bincount(self.owner, weights=q, minlength=self.m)

    def farkas_test(self, lam):
        """(μ_min(A(d)) / Σ_c |d_c|‖Â_c‖_F, dᵀt / Σ_c |d_c t_c|) for d = λ / Σ|λ| (0, 0 at
        λ = 0); λ >= 0 on inequalities, of either sign on equalities.

        A(d) ⪰ 0 with dᵀt < 0 is a Farkas certificate of infeasibility: every feasible X̂ ⪰ 0
        would give 0 <= tr(X̂A(d)) <= dᵀt < 0 (and a dual value g(sλ) → ∞ as s → ∞)."""
        s = float(np.sum(np.abs(lam)))
        if not s > 0 or self.r == 0:
            return 0.0, 0.0
        d = lam / s
        a = np.abs(d)
        mmin = float(np.linalg.eigvalsh(self.A(d))[0])
        return mmin / max(float(a @ self.norms), _TINY), float(d @ self.t) / max(float(a @ np.abs(self.t)), _TINY)
