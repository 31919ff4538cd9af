"""The exact model of LMNN (eq. 18) for :class:`~cvxkml.declare.lmnn.LMNNProblem`: the
CVXPY problem over the whitened X̂ (or the literal A), its extension by a user's term and
constraints, and the relative violation of a point — a mixin of the problem class."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from ..formulas.lmnn import (
    lmnn_objective,
    psd_pair_distances,
)


class LMNNExactModel:
    """The exact CVXPY model of :class:`~cvxkml.declare.lmnn.LMNNProblem` (a mixin)."""

    # ------------------------------------------------------------------ CVXPY side
    def to_cvxpy(self, whiten: bool = True) -> cp.Problem:
        """The exact model as a ``cvxpy.Problem``.

        Variables (``problem.var_dict``): ``"X"`` (r × r PSD, the whitened X̂; with
        ``whiten=False`` ``"A"``, the literal D × D matrix) and ``"xi"`` (one slack per
        triplet).  The pair distances are one vectorized expression
        ``sum(multiply(Up @ X, Up), axis=1)`` over the distinct pairs; the margin
        constraints index it (``problem.constraints[0]`` holds their multipliers α).
        """
        if whiten:
            return self._cvx_model(self.U, cp.Variable((self.rank, self.rank), PSD=True, name="X"))
        return self._cvx_model(self.Z, cp.Variable((self.dim, self.dim), PSD=True, name="A"))

    def _cvx_model(self, F, M) -> cp.Problem:
        """Eq. 18 with distances (f_i − f_j)ᵀ M (f_i − f_j) over the rows f_i of ``F``."""
        tr = self.triplets
        Fp = F[tr.pi] - F[tr.pj]
        p = cp.sum(cp.multiply(Fp @ M, Fp), axis=1)
        xi = cp.Variable(tr.n_triplets, nonneg=True, name="xi")
        objective = (1.0 - self.gamma) * (tr.target_weight @ p) + self.gamma * cp.sum(xi)
        margin = p[tr.ti] - p[tr.tt] + xi >= 1.0
        return cp.Problem(cp.Minimize(objective), [margin])

    # ------------------------------------------------------------------ extension
    #: model methods besides to_cvxpy / objective / violations (see
    #: :func:`cvxkml.declare.extend.check_fast_solver_applies`)
    _model_methods = ("objective_whitened", "violations_whitened", "pair_distances")

    def extension_probe(self):
        """(a symmetric D × D CVXPY variable, "A"): the primal the extension's term sees."""
        return cp.Variable((self.dim, self.dim), symmetric=True, name="A"), "A"

    def extension_size(self) -> int:
        """D: the extended model's PSD block (the whole of A, not only its row-space part)."""
        return self.dim

    def _full_basis(self):
        """(Q, F): Q = [V S⁻¹ | N] (D × D, invertible; N an orthonormal basis of the
        complement of the row space of Z) and F = [U | 0] (n × D), so that with A = Q Ŵ Qᵀ
        the distances are (f_i − f_j)ᵀ Ŵ (f_i − f_j): only Ŵ's leading r × r block X̂ is seen."""
        C = (self.Vt / self.s[:, None]).T  # V S⁻¹ (D × r)
        if self.rank == self.dim:
            return C, self.U
        N = np.linalg.svd(self.Vt, full_matrices=True)[2][self.rank :]
        F = np.hstack([self.U, np.zeros((self.U.shape[0], self.dim - self.rank))])
        return np.hstack([C, N.T]), F

    def extension_model(self):
        """The exact model for ``extend`` (a term and/or constraints on the metric A, D × D):
        eq. 18 over Ŵ ⪰ 0 (D × D, variable ``"X"``) with A = Q Ŵ Qᵀ (:meth:`_full_basis`), an
        exact change of variables of the literal model over A ⪰ 0 that keeps the whitened
        conditioning on the row space and models a term that sees the complement of the row
        space of Z exactly."""
        from .extend import ExtensionModel, ExtensionPoint

        Q, F = self._full_basis()
        W = cp.Variable((self.dim, self.dim), PSD=True, name="X")
        prob = self._cvx_model(F, W)
        r, tr = self.rank, self.triplets

        def read():
            Wv = np.asarray(W.value, dtype=float)
            Wv = 0.5 * (Wv + Wv.T)
            X = Wv[:r, :r]
            A = Q @ Wv @ Q.T
            A = 0.5 * (A + A.T)
            xi = np.asarray(prob.var_dict["xi"].value, dtype=float)
            p = psd_pair_distances(self.U, X, tr.pi, tr.pj)
            viol = self._violations(p, Wv, xi)
            return ExtensionPoint(
                primal=A,
                objective=lmnn_objective(p, tr, self.gamma),
                violations=viol,
                relative_violation=self._relative_violation(viol, Wv),
                matrix=A,
                slack=xi,
                info={"X": X, "W": Wv, "rank": r},
            )

        return ExtensionModel(problem=prob, primal=Q @ W @ Q.T, read=read)

    def exact_size(self) -> int:
        """The side of the exact model's PSD block: r, the rank of Z (the whitened X̂ of
        :meth:`to_cvxpy`).  :meth:`default_solver` picks Clarabel up to
        :attr:`clarabel_max_size` = 60 (an r × r block and about n²k/2 slacks: Clarabel is
        fast and exact there, see :mod:`cvxkml.declare.lmnn`), SCS above."""
        return self.rank

    def _relative_violation(self, viol, X) -> float:
        """The contract's relative violation of a point (X̂, ξ): the margin rows of
        :meth:`violations` have target 1 and ξ >= 0 target 0, so they count as they are
        (relative to max(1, |target|) = 1); the PSD violation max(0, −λ_min(X̂)) is taken
        relative to max(1, λ_max(X̂)) (the scale of the matrix it belongs to)."""
        viol = np.asarray(viol, dtype=float)
        X = np.asarray(X, dtype=float)
        top = float(np.linalg.eigvalsh(0.5 * (X + X.T))[-1]) if X.size else 0.0
        margin = float(np.max(viol[:-1], initial=0.0))
        return max(margin, float(viol[-1]) / max(1.0, abs(top)))
