"""The exact model of LMNN (eq. 18) for :class:`~cvxkml.declare.lmnn.LMNNProblem`: the
CVXPY problem over the whitened X̂ (or the literal A), its extension by a user's term and
constraints, the relative violation of a point, and its conic solve (:meth:`solve_reference`)
— a mixin of the problem class."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from .._validation import check_conic_options
from ..errors import InvalidInputError
from ..formulas.lmnn import (
    lmnn_objective,
    psd_pair_distances,
)
from ..solution import Solution
from ._conic import solve_conic


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

    def solve_reference(
        self,
        solver: str | None = None,
        eps: float | None = None,
        accept_inaccurate: bool = False,
        whiten: bool = True,
        **opts,
    ) -> Solution:
        """Solve the exact model (eq. 18 over X̂ ⪰ 0, :meth:`to_cvxpy`) with a conic solver
        at high accuracy.

        Parameters
        ----------
        solver : {"CLARABEL", "SCS", …} or None
            None: :meth:`default_solver` — Clarabel (``eps`` = 1e-8) when the PSD block
            (r, or D with ``whiten=False``) is at most :attr:`clarabel_max_size` = 60,
            SCS (``eps`` = 1e-9) above.  See the module docstring for the sizes where this
            is practical.
        eps : float or None
            The solver's tolerances (:func:`cvxkml.declare._conic.solve_conic`).
        accept_inaccurate : bool, default=False
            Return an ``optimal_inaccurate`` answer whatever its certificate says.  Without
            it such an answer is returned only when its own certificate vouches for it
            (relative gap and relative violation at most
            :data:`~cvxkml.declare.problem.INACCURATE_RTOL`; then
            ``info["accepted_by_certificate"] = True``), else :class:`SolverError`.
        whiten : bool, default=True
            Solve over X̂ (r × r, well conditioned); False: the literal model over A (D × D).
        **opts
            Passed to the solver.

        Returns
        -------
        Solution
            ``matrix`` = A (D × D), ``slack`` = ξ, ``dual`` = α (the multipliers of the
            margin constraints, clipped to [0, γ]), ``dual_value`` = g(α), the Lagrange
            lower bound of :func:`cvxkml.formulas.lmnn.lmnn_dual_value` (so ``gap`` =
            F − g certifies the answer), ``info["X"]`` = X̂,
            ``info["max_relative_violation"]`` (:meth:`_relative_violation`).
            ``converged`` is True only for status ``optimal`` or an ``optimal_inaccurate``
            answer accepted by its certificate.

        Raises
        ------
        InfeasibleError, SolverError
            A failed or non-optimal conic solve (see ``accept_inaccurate``).
        """
        solver, eps = check_conic_options(solver, eps)
        if not isinstance(whiten, (bool, np.bool_)):
            raise InvalidInputError(f"whiten must be True or False; got {whiten!r}.")
        if solver is None:
            size = self.exact_size() if whiten else self.dim
            solver = "CLARABEL" if size <= self.clarabel_max_size else "SCS"
        prob = self.to_cvxpy(whiten=whiten)
        elapsed, status, iters = solve_conic(prob, solver, eps, True, "exact LMNN model", **opts)
        M = np.asarray(prob.var_dict["X" if whiten else "A"].value, dtype=float)
        M = 0.5 * (M + M.T)
        if whiten:
            X = M
            A = self._answer(X)
        else:
            X = self.whiten(M)
            A = M if self.space == "features" else self._answer(X)
        xi = np.asarray(prob.var_dict["xi"].value, dtype=float)
        alpha = np.clip(np.asarray(prob.constraints[0].dual_value, dtype=float).ravel(), 0.0, self.gamma)
        viol = self.violations_whitened(X, xi)
        sol = Solution.from_conic(
            status,
            solver,
            elapsed,
            iters,
            matrix=A,
            objective=self.objective_whitened(X),
            dual=alpha,
            slack=xi,
            violations=viol,
            dual_value=self.dual_value(alpha),
            info={
                "solver_objective": float(prob.solution.opt_val),
                "X": X,
                "rank": self.rank,
                "max_relative_violation": self._relative_violation(viol, X),
            },
        )
        sol = self._accept_reference(sol, status, accept_inaccurate, "exact LMNN model")
        sol.converged = status == cp.OPTIMAL or bool(sol.info.get("accepted_by_certificate"))
        return sol
