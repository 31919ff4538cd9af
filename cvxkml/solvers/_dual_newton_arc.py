"""The projection arc of the generic dual solver's line search (:mod:`cvxkml.solvers.dual_newton`):
the largest step that keeps every eigenvalue of S − A(λ) inside the conjugate's domain, and
the trial matrices Vᵀ A(λ(s) − λ) V along λ(s) = P(λ + s·d) in the iterate's eigenbasis."""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigvalsh

__all__ = ["max_step", "Arc"]


def max_step(st, D, dom, enough=None):
    """The largest s with every eigenvalue of M − s·A(d̂) below the domain bound ``dom``
    (M = V diag(μ) Vᵀ, D = Vᵀ A(d̂) V): 1 / max(0, −λ_min(Δ^-½ D Δ^-½)), Δ = dom − μ.
    With ``enough``: when I + enough·T ≻ 0 (one Cholesky, a quarter of the tridiagonalization
    λ_min costs) the step ``enough`` is inside, and it is returned instead of s_max."""
    if dom is None or not np.isfinite(dom):
        return np.inf
    gap = dom - st.mu
    if not np.all(gap > 0):
        return np.inf
    h = 1.0 / np.sqrt(gap)
    T = (D * h[:, None]) * h[None, :]
    T = 0.5 * (T + T.T)
    if enough is not None:
        try:
            np.linalg.cholesky(np.eye(T.shape[0]) + enough * T)
            return enough
        except np.linalg.LinAlgError:
            pass
    lmin = float(eigvalsh(T, subset_by_index=[0, 0], check_finite=False)[0])
    return np.inf if lmin >= 0 else -1.0 / lmin


class Arc:
    """Vᵀ A(λ(s) − λ) V along the projection arc λ(s) = P(λ + s·d), V the iterate's
    eigenbasis (Z = U V), for the decreasing steps of the line search.  The multipliers still
    inside the box at s move as s·d_c, the others sit on their bound: Vᵀ A V = s·D_in + D_out,
    and halving s only moves multipliers from the second set to the first.  So the two r × r
    matrices are formed once (at s = 1, their sum the segment's matrix that bounds the domain
    step) and then updated by the terms of the multipliers that come back inside: each trial
    costs its eigenvalues, not a sum over every moving term."""

    def __init__(self, ops, st, d, lower, upper):
        self.ops, self.Z, self.lam, self.d, self.lower, self.upper = ops, st.Z, st.lam, d, lower, upper
        self.inside = self._inside(1.0)
        self.out_delta = np.clip(self.lam + d, lower, upper) - self.lam  # where clipped at s = 1
        self.D_in = self._gram(self.inside, d)
        self.D_out = self._gram(~self.inside, self.out_delta)

    def _inside(self, step):
        x = self.lam + step * self.d
        return (x >= self.lower) & (x <= self.upper)

    def _gram(self, rows, v):
        """Z_kᵀ diag(w_k v_c(k)) Z_k over the terms k of the constraints ``rows`` with v ≠ 0."""
        c = self.ops.w * np.where(rows, v, 0.0)[self.ops.owner]
        k = np.flatnonzero(c)
        Zk = self.Z[k]
        return (Zk.T * c[k]) @ Zk

    def segment(self):
        """Vᵀ A(λ(1) − λ) V."""
        return self.D_in + self.D_out

    def at(self, step):
        """Vᵀ A(λ(step) − λ) V, symmetrized, for a step no larger than the previous one."""
        inside = self._inside(step)
        back = inside & ~self.inside
        if np.any(self.inside & ~inside):  # (a larger step than before: start over)
            self.inside, self.D_in = inside, self._gram(inside, self.d)
            self.D_out = self._gram(~inside, self.out_delta)
        elif np.any(back):
            self.D_in += self._gram(back, self.d)
            self.D_out -= self._gram(back, self.out_delta)
            self.inside = inside
        T = step * self.D_in + self.D_out
        return 0.5 * (T + T.T)
