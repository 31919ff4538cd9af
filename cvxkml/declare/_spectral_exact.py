"""The exact model of a spectral problem (Jain et al. 2012, eq. 12–13) in CVXPY: the
whitened variable X̂, the regularizer's form and each constraint atom's, hard or soft, built
once with any auxiliary variables the parts bring; and ``solve_reference``, which reads the
conic duals back into the problem's own multipliers and certifies the answer with its
Lagrange dual.  A part of :class:`~cvxkml.declare.base.SpectralProblem`."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from .._validation import check_conic_options
from ..errors import InfeasibleError, InvalidInputError, SolverError
from ..solution import Solution
from ._conic import solve_conic
from .registry import missing_methods

__all__ = ["SpectralExactModel", "cvx_part"]


def cvx_part(result, what: str):
    """(expression, constraints) of a part's CVXPY form: a regularizer's ``cvx(X)`` or an
    atom's ``cvx_values(F, T, X)`` returns an expression, or a pair (expression, list of
    constraints) when it brings auxiliary variables (e.g. the epigraph of tr X^{3/2} through
    two LMIs); the constraints join the exact model once."""
    if isinstance(result, tuple):
        if len(result) != 2 or not isinstance(result[1], (list, tuple)):
            raise InvalidInputError(
                f"{what} must return a CVXPY expression or a pair (expression, list of constraints); "
                f"got a tuple of {len(result)}."
            )
        expr, cons = result
        cons = list(cons)
    else:
        expr, cons = result, []
    if not isinstance(expr, cp.Expression) or any(
        not isinstance(c, cp.constraints.constraint.Constraint) for c in cons
    ):
        raise InvalidInputError(
            f"{what} must return a CVXPY expression (and optionally a list of CVXPY constraints); "
            f"got {type(expr).__name__}."
        )
    return expr, cons


class SpectralExactModel:
    """The exact-model side of :class:`~cvxkml.declare.base.SpectralProblem` (its methods
    read the problem's space, regularizer and constraint atoms)."""

    # ------------------------------------------------------------------ CVXPY side
    def to_cvxpy(self) -> cp.Problem:
        """The exact model as a ``cvxpy.Problem``.

        Variables (``problem.var_dict``): ``"X"``, the r × r whitened matrix X̂ with
        M = T X̂ Tᵀ (see :meth:`matrix_expression`), and for slack problems
        ``"xi_ratio"`` = ξ / ξ0 (the slack relative to the bounds; this scaling keeps
        the conic solvers accurate when slacks span orders of magnitude).  Pair
        constraints are written divided by their bounds, δ(p/b − 1) <= 0 (hard) or
        δ(p/b − ξ/ξ0) <= 0 (slack).  Constraints are vectorized: one expression per
        constraint family.
        """
        return self._exact_model()[0]

    def _exact_model(self):
        """(the exact model, how its multipliers are read): :meth:`to_cvxpy`'s problem and,
        per atom in :meth:`violations` order, a constraint, a (+, −) pair of them (a hinge
        equality: λ = λ₊ − λ₋) or a callable of the solved problem (a squared penalty's
        λ = C·ρ₊, its KKT value), returned together — built once per call, never kept on the
        problem."""
        r = self.T.shape[1]
        X = cp.Variable((r, r), symmetric=True, name="X")
        objective, aux = cvx_part(self.regularizer.cvx(X), f"{type(self.regularizer).__name__}.cvx")
        # LogDet and von Neumann imply X ⪰ 0 through their cones; the others need it stated
        cons = ([] if self.regularizer.implies_psd else [X >> 0]) + aux
        readers = []  # how each atom's multipliers are read, in violations() order
        pair_con = None
        if self.pairs is not None:
            # Scaled by the bounds: rows v̂/√b give p/b, and the slack is the ratio s = ξ/ξ0,
            # so every constraint and slack variable is O(1) (duals are mapped back below).
            P = self.pairs
            Vh = (self.F[P.i] - self.F[P.j]) / np.sqrt(P.bound)[:, None]
            p = cp.sum(cp.multiply(Vh @ X, Vh), axis=1)
            pw = self._wrapper(P)
            if pw is not None and pw.loss == "squared":
                # (C/2)·ρ₊², ρ = y(p − b) = b·y(p/b − 1); λ = C·ρ₊ (its KKT value; the pair
                # multipliers are read times b, as the scaled rows' duals are)
                rho_s = cp.multiply(P.y, p - 1.0)
                Cb = pw.C * P.bound**2
                objective = objective + 0.5 * Cb @ cp.square(cp.pos(rho_s))
                readers.append(lambda r=rho_s, Cb=Cb: Cb * np.maximum(np.asarray(r.value, dtype=float), 0.0))
            elif pw is not None:  # y(p − b) <= ξ, written over b: ξ/b
                s = cp.Variable(len(P), nonneg=True, name="hinge_pairs")
                objective = objective + (pw.C * P.bound) @ s
                pair_con = cp.multiply(P.y, p - 1.0) <= s
            elif self.gamma is None:
                pair_con = cp.multiply(P.y, p - 1.0) <= 0
            else:
                s = cp.Variable(len(P), name="xi_ratio")
                objective = objective + self.gamma * self.regularizer.slack_cvx(s, P.bound)
                pair_con = cp.multiply(P.y, p - s) <= 0
            if pair_con is not None:
                cons.append(pair_con)
                readers.append(pair_con)
        names = [type(f).__name__.lower() for f in self._constraint_atoms]
        for k, (f, w) in enumerate(zip(self._constraint_atoms, self._wrappers)):
            if f is not self.pairs:
                values, aux = cvx_part(f.cvx_values(self.F, self.T, X), f"{type(f).__name__}.cvx_values")
                cons += aux
                name = names[k] if names.count(names[k]) == 1 else f"{names[k]}_{k}"
                objective = self._soft_constraint(f, w, name, values - f.targets(), objective, cons, readers)
        offset = self.space.offset(self.regularizer)
        return cp.Problem(cp.Minimize(objective + offset if offset else objective), cons), readers

    def _soft_constraint(self, family, wrapper, name, residual, objective, cons, readers):
        """The atom's residual ρ = g − t in the model: hard ``ρ <= 0`` (``ρ == 0`` for an
        equality); :class:`~cvxkml.sideinfo.Hinge` ``ρ <= ξ`` (and ``−ρ <= ξ`` for an
        equality), ξ >= 0, C·ξ in the objective (variable ``"hinge_<name>"``);
        :class:`~cvxkml.sideinfo.Squared` (C/2)·ρ₊² ((C/2)·ρ² for an equality) in the
        objective.  Appends to ``readers`` how its multipliers are read (a
        constraint, a (+, −) pair of them, or a callable of the solved problem: the squared
        penalty's λ = C·ρ₊ is its KKT value); returns the objective."""
        C = None if wrapper is None else wrapper.C
        eq = family.equality
        if C is None:
            cons.append(residual == 0 if eq else residual <= 0)
            readers.append(cons[-1])
        elif wrapper.loss == "squared":
            objective = objective + 0.5 * C @ cp.square(residual if eq else cp.pos(residual))
            readers.append(
                lambda r=residual, C=C, eq=eq: (
                    C * (np.asarray(r.value, dtype=float) if eq else np.maximum(np.asarray(r.value, dtype=float), 0.0))
                )
            )
        else:
            xi = cp.Variable(len(family), nonneg=True, name=f"hinge_{name}")
            cons.append(residual <= xi)
            objective = objective + C @ xi
            if eq:
                cons.append(-residual <= xi)
                readers.append((cons[-2], cons[-1]))
            else:
                readers.append(cons[-1])
        return objective

    def solve_reference(
        self, solver: str | None = None, eps: float | None = None, accept_inaccurate: bool = False, **opts
    ) -> Solution:
        """Solve the exact model with a conic solver at high accuracy.

        Default solver: Clarabel (interior point, gap and feasibility tolerances
        ``eps`` = 1e-8) when the matrix variable is at most 40 × 40, SCS
        (``eps_abs = eps_rel = eps`` = 1e-9, up to 200 000 iterations) above, where
        Clarabel's memory becomes prohibitive.  Raises :class:`InfeasibleError`
        for infeasible hard constraints and :class:`SolverError` for any other
        non-optimal status (``accept_inaccurate=True`` accepts ``optimal_inaccurate``).
        ``time_limit=<seconds>`` stops the solve there with a :class:`SolverError`; other
        keyword options go to the conic solver.
        """
        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.default_solver()
        prob, readers = self._exact_model()
        hint = (
            "Use slack: pass gamma=<positive number> (e.g. 1.0)."
            if self.regularizer.has_slack
            else f"The {self.regularizer.name} problem has no slack formulation: relax or "
            "remove conflicting constraints."
        )
        elapsed, status, iters = solve_conic(prob, solver, eps, True, what="exact model", infeasible_hint=hint, **opts)
        Xh = prob.var_dict["X"].value
        Xh = 0.5 * (Xh + Xh.T)
        M = self.matrix_from_whitened(Xh)

        def read(c):
            if callable(c):
                return np.asarray(c(), dtype=float).ravel()
            if isinstance(c, tuple):  # a hinge equality: λ = λ₊ − λ₋
                return read(c[0]) - read(c[1])
            return np.asarray(c.dual_value, dtype=float).ravel()

        duals = [read(c) for c in readers]
        if self.pairs is not None:
            duals[0] = duals[0] / self.pairs.bound  # pair rows were divided by the bounds
        lower, upper, _ = self.dual_box()  # the dual box (round-off outside it)
        lam = np.clip(np.concatenate(duals), lower, upper)
        xi = None
        if self.gamma is not None:
            xi = np.asarray(prob.var_dict["xi_ratio"].value, dtype=float) * self.pairs.bound
        certified = not missing_methods(self.regularizer, ("conj_s",))
        # a regularizer declared with f_s and cvx only has no conjugate: the answer is the
        # conic solver's, without a Lagrange certificate of cvxkml's (said in info)
        dual_value = self.dual_value(lam) if certified else None
        objective = self.objective(M)
        projected = False
        if not np.isfinite(objective):
            # a conic solver's X̂ is PSD only up to its tolerance (eigenvalues of −1e-8 at a
            # singular optimum): its projection onto the PSD cone is a primal point too, judged
            # by the same certificate below
            w, V = np.linalg.eigh(Xh)
            if w[0] < 0:
                Xp = (V * np.maximum(w, 0.0)) @ V.T
                Mp = self.matrix_from_whitened(Xp)
                fp = self.objective(Mp)
                if np.isfinite(fp):
                    Xh, M, objective, projected = Xp, Mp, fp, True
        if not np.isfinite(objective):
            cause = self._domain_diagnosis(M)
            hard = [f for f, w in zip(self._constraint_atoms, self._wrappers) if w is None]
            if self.gamma is not None:
                hard = [f for f in hard if f is not self.pairs]
            if hard:
                # the solver runs toward the domain's edge: the hard constraints admit no matrix
                # inside it (for LogDet: no positive definite matrix on the range of K0)
                raise InfeasibleError(
                    f"The exact model ({solver}) ended '{status}' at a matrix outside the domain of the "
                    f"{self.regularizer.name} objective ({cause}; solver objective "
                    f"{float(prob.solution.opt_val):.3g}), singular on the range of K0: no matrix in the "
                    "domain satisfies the hard constraints. "
                    + (
                        "gamma adds slack to the pair constraints only: relax or remove the hard ones."
                        if self.gamma is not None
                        else hint
                    )
                )
            raise SolverError(
                f"The exact model ({solver}) ended '{status}' at a matrix outside the domain of the "
                f"{self.regularizer.name} objective ({cause}), even after projecting it onto the PSD cone; "
                "every constraint is soft, so this is the solver's accuracy: try the other solver or a smaller eps."
            )
        sol = Solution.from_conic(
            status,
            solver,
            elapsed,
            iters,
            matrix=M,
            objective=objective,
            dual=lam,
            slack=xi,
            violations=self.violations(M, xi),
            dual_value=dual_value,
            info={"solver_objective": float(prob.solution.opt_val)},
        )
        if projected:
            sol.info["projected_psd"] = "the conic solver's X̂ had negative eigenvalues; its PSD projection is returned"
        if not certified:
            sol.info["certificate"] = (
                f"none: {self.regularizer.name} declares no conj_s, so the Lagrange dual cannot be "
                "evaluated; converged is the conic solver's own 'optimal' status"
            )
        sol.info["max_relative_violation"] = self._max_relative_violation(sol.violations)
        sol = self._accept_reference(sol, status, accept_inaccurate)
        sol.converged = sol.converged or bool(sol.info.get("accepted_by_certificate"))
        return sol
