"""Extending a declared problem with objective terms and constraints written in CVXPY.

:meth:`SpectralProblem.extend` returns an :class:`ExtendedProblem`: the same exact model
plus ``term(M)`` in the objective and ``constraints(M)`` (both functions of the learned
matrix M — K for a kernel problem, W for a metric problem — as a CVXPY expression).  It
keeps the problem contract: ``objective(M)`` includes the term (evaluated by CVXPY on the
constant M, so the NumPy and CVXPY sides cannot disagree), ``violations(M)`` lists the
base constraints' and then the extra constraints' violations, and ``solve_reference()``
returns a :class:`~cvxkml.solution.Solution` whose certificate is the conic solver's own
dual objective (Clarabel or SCS; :func:`~cvxkml.declare._conic.solve_conic_bound`): no
closed-form Lagrange dual exists for an arbitrary term.  There is no fast solver for an
extension (``solve()`` says so).

Example: ITML with an ℓ1 penalty on the off-diagonal of W,

>>> prob = ITML(X, pairs).extend(term=lambda W: 0.1 * cp.sum(cp.abs(W - cp.diag(cp.diag(W)))))
...                                                                # doctest: +SKIP
>>> sol = prob.solve_reference()                                   # doctest: +SKIP
"""
from __future__ import annotations

import cvxpy as cp
import numpy as np

from .._validation import check_conic_options
from ..errors import InvalidInputError
from ..solution import Solution
from ._conic import solve_conic_bound
from .problem import Problem

__all__ = ["ExtendedProblem"]


class ExtendedProblem(Problem):
    """A declared problem with an extra convex objective term and/or extra constraints.

    Parameters
    ----------
    base : SpectralProblem
        The declared problem (ITML, LogDetKernel, SpectralMetric, …).
    term : callable M -> cvxpy scalar expression, optional
        Added to the objective; must be convex (DCP) in M.
    constraints : callable M -> list of cvxpy constraints, optional
        Extra constraints on M (DCP).

    Attributes
    ----------
    base, term, extra : as given (``extra`` = the constraints callable).
    """

    def __init__(self, base, term=None, constraints=None):
        if term is None and constraints is None:
            raise InvalidInputError("extend() needs a term, constraints, or both.")
        for name, f in (("term", term), ("constraints", constraints)):
            if f is not None and not callable(f):
                raise InvalidInputError(f"{name} must be a function of the learned matrix M "
                                        f"returning a CVXPY {'expression' if name == 'term' else 'constraint list'}.")
        self.base, self.term, self.extra = base, term, constraints
        n = base.M0.shape[0]
        probe = cp.Variable((n, n), symmetric=True)          # DCP is judged on a variable
        if term is not None:
            e = term(probe)
            if not isinstance(e, cp.Expression) or e.size != 1 or not e.is_convex():
                raise InvalidInputError(
                    f"term(M) must return a convex scalar CVXPY expression of the {n} × {n} matrix "
                    "M (DCP); e.g. lambda M: 0.1 * cp.sum(cp.abs(M)).")
        if constraints is not None:
            cs = constraints(probe)
            if not isinstance(cs, (list, tuple)) or not all(isinstance(c, cp.constraints.constraint.Constraint)
                                                            for c in cs):
                raise InvalidInputError("constraints(M) must return a list of CVXPY constraints "
                                        "(e.g. [cp.trace(M) <= 10]).")

    def exact_size(self) -> int:
        """The base problem's (the extension adds no PSD block)."""
        return self.base.exact_size()

    def __getattr__(self, name):              # n_constraints, pairs, M0, … of the base problem
        if name in ("base", "term", "extra"):
            raise AttributeError(name)
        return getattr(self.base, name)

    # ------------------------------------------------------------------ numpy side
    def term_value(self, M) -> float:
        """The extra term at M (0 without one)."""
        if self.term is None:
            return 0.0
        return float(self.term(cp.Constant(np.asarray(M, dtype=float))).value)

    def objective(self, M, xi=None) -> float:
        """The base objective plus the term."""
        return float(self.base.objective(M, xi) + self.term_value(M))

    def violations(self, M, xi=None) -> np.ndarray:
        """The base problem's violations, then one per extra constraint (its largest entry)."""
        v = self.base.violations(M, xi)
        if self.extra is None:
            return v
        extra = [float(np.max(np.asarray(c.violation()), initial=0.0))
                 for c in self.extra(cp.Constant(np.asarray(M, dtype=float)))]
        return np.concatenate([v, np.maximum(extra, 0.0)])

    # ------------------------------------------------------------------ CVXPY side
    def to_cvxpy(self) -> cp.Problem:
        """The base model with the term added and the constraints appended."""
        prob = self.base.to_cvxpy()
        M = self.base.matrix_expression(prob)
        obj = prob.objective.args[0] + (self.term(M) if self.term is not None else 0)
        cons = list(prob.constraints) + (list(self.extra(M)) if self.extra is not None else [])
        return cp.Problem(cp.Minimize(obj), cons)

    def solve_reference(self, solver: str | None = None, eps: float | None = None,
                        accept_inaccurate: bool = False, **opts) -> Solution:
        """The exact model with Clarabel or SCS (the base problem's default choice); the
        certificate (``dual_value``) is the conic solver's dual objective."""
        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.base.default_solver()
        if solver not in ("CLARABEL", "SCS"):
            raise InvalidInputError("An extended problem is certified by Clarabel's or SCS's dual "
                                    f"objective; use solver='CLARABEL' or 'SCS', not {solver!r}.")
        prob = self.to_cvxpy()
        elapsed, status, iters, bound = solve_conic_bound(
            prob, solver, eps, True, what="extended exact model",
            infeasible_hint="relax the extra constraints or use slack.", **opts)
        Xh = prob.var_dict["X"].value
        M = self.base.matrix_from_whitened(0.5 * (Xh + Xh.T))
        xi = None
        if self.base.gamma is not None:
            xi = np.asarray(prob.var_dict["xi_ratio"].value, dtype=float) * self.base.pairs.bound
        viol = self.violations(M, xi)
        m = self.base.n_constraints
        rel = max(self.base._max_relative_violation(viol[:m]), float(np.max(viol[m:], initial=0.0)))
        sol = Solution(
            matrix=M, objective=self.objective(M, xi), dual=None, slack=xi,
            violations=viol, n_iter=iters, converged=status == cp.OPTIMAL,
            time=elapsed, status=status, solver=f"cvxpy-{solver.lower()}", dual_value=bound,
            info={"solver_objective": float(prob.value), "term": self.term_value(M),
                  "max_relative_violation": rel,
                  "certificate": f"{solver} dual objective (no closed-form Lagrange dual for an "
                                 "extension)"})
        sol = self._accept_reference(sol, status, accept_inaccurate, what="extended exact model")
        sol.converged = status == cp.OPTIMAL or bool(sol.info.get("accepted_by_certificate"))
        return sol

    def solve(self, *args, **kw):
        raise InvalidInputError(
            "An extended problem has no fast solver (the extra term has no conjugate the dual "
            "solvers know); use solve_reference(). A spectral term belongs in a Regularizer "
            "subclass, a soft constraint in sideinfo.Hinge: both keep the fast solvers.")
