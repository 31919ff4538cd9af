"""Every constraint of a whitened spectral problem as a short sum of signed rank-one terms.

A :class:`~cvxkml.declare.base.SpectralProblem` writes each constraint as
tr(X̂ Â_c) <= t_c on the r × r whitened matrix X̂ (see ``_whitened_family_terms``).
The solvers in :mod:`cvxkml.solvers.pola` and :mod:`cvxkml.solvers.sdp_logdet` take the
constraints in one problem-independent form,

    Â_c = Σ_{a = ptr[c]}^{ptr[c+1]-1} w_a u_a u_aᵀ    (rows u_a of U, weights w_a),

in the order of :meth:`~cvxkml.declare.base.SpectralProblem.violations`:

- pair (i, j, y, bound):          one term  u = F[i] − F[j], w = y;      t = y·bound
- relative d(i,j) + margin <= d(i,k): two terms  F[i]−F[j] (w = +1), F[i]−F[k] (w = −1); t = −margin
- similarity  inner(j, l) >= bound:  −½(f_j f_lᵀ + f_l f_jᵀ) = −¼(f_j+f_l)(f_j+f_l)ᵀ + ¼(f_j−f_l)(f_j−f_l)ᵀ;
  t = −bound
- linear, rank-one form (Z):      one term  u = T ᵀz, w = 1;            t = b
- linear, dense form (C):         the eigen-decomposition of Ĉ = TᵀCT (nonzero eigenvalues).

Memory is O(#terms · r) — no r × r matrix per constraint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ConstraintTerms", "constraint_terms"]


@dataclass(frozen=True)
class ConstraintTerms:
    """Â_c = Σ_{a in ptr[c]:ptr[c+1]} w[a] U[a] U[a]ᵀ and targets t (tr(X̂Â_c) <= t_c)."""

    U: np.ndarray  # (p, r) float64, C-contiguous
    w: np.ndarray  # (p,) float64
    ptr: np.ndarray  # (m + 1,) int64
    t: np.ndarray  # (m,) float64
    lower: np.ndarray | None = None  # (m,) the dual box (default 0: inequalities)
    upper: np.ndarray | None = None  # (m,) (default +inf: hard; C: hinge)
    quad: np.ndarray | None = None  # (m,) squared-penalty weights q = 1/C (default 0)

    @property
    def m(self) -> int:
        return int(self.t.size)

    def owner(self) -> np.ndarray:
        return np.repeat(np.arange(self.m), np.diff(self.ptr))

    def dense(self) -> np.ndarray:
        """All Â_c as an (m, r, r) stack (for tests and small problems)."""
        r = self.U.shape[1]
        out = np.zeros((self.m, r, r))
        np.add.at(out, self.owner(), self.w[:, None, None] * self.U[:, :, None] * self.U[:, None, :])
        return out


def constraint_terms(problem) -> ConstraintTerms:
    """The constraints of ``problem`` (a SpectralProblem) as signed rank-one terms: each atom's
    own :meth:`~cvxkml.sideinfo.ConstraintAtom.terms`, with the dual box of its penalty."""
    F, T = problem.F, problem.T
    r = T.shape[1]
    Us, ws, counts, ts = [], [], [], []
    for atom in problem._atoms():
        U, w, cnt = atom.terms(F, T)
        Us.append(U)
        ws.append(w)
        counts.append(cnt)
        ts.append(np.asarray(atom.targets(), dtype=float))
    cnt = np.concatenate(counts)
    ptr = np.zeros(cnt.size + 1, dtype=np.int64)
    np.cumsum(cnt, out=ptr[1:])
    U = np.ascontiguousarray(np.concatenate(Us, axis=0), dtype=np.float64).reshape(-1, r)
    lower, upper, quad = problem.dual_box()
    return ConstraintTerms(
        U,
        np.ascontiguousarray(np.concatenate(ws), dtype=np.float64),
        ptr,
        np.ascontiguousarray(np.concatenate(ts), dtype=np.float64),
        lower,
        upper,
        quad,
    )
