"""Extending a declared problem with objective terms and constraints written in CVXPY, and
the guard that keeps a fast solver from answering a problem it was not written for.

``problem.extend(term=…, constraints=…)`` returns an :class:`ExtendedProblem`: the family's
exact model plus ``term(X)`` in the objective and ``constraints(X)`` among the constraints,
both functions of the family's primal X written as a CVXPY expression *in the user's
coordinates* (whatever parameterization the exact model uses inside):

====================================  ======  =========================================
family                                X       what it is
====================================  ======  =========================================
spectral problems (ITML, LogDet, …)   M       the learned matrix (W or K)
:class:`~.lmnn.LMNNProblem`           A       the D × D metric (d = (z_i − z_j)ᵀ A (z_i − z_j))
:class:`~.kcr.KCR`                    Σ       the n × n matrix of eq. 9 (in N: Σ ⪰ 0, Σ1 = 0)
:class:`~.mkl.RankOneWeightStep`      P       the m × m weight matrix of (15) (W = 0)
:class:`~.mkl.MuWeightStep`           μ       the m kernel weights (simplex)
:class:`~.yeung.SpectralReweighting`  β       the q spectral weights (1ᵀβ = c)
:class:`~.yeung.EmbeddingWeightProblem` w     the K embedding weights (1ᵀw = 1)
====================================  ======  =========================================

It keeps the problem contract: ``objective(X, …)`` includes the term (evaluated by CVXPY on
the constant X, so the NumPy and CVXPY sides cannot disagree), ``violations(X, …)`` lists
the family's violations and then one per extra constraint, and ``solve_reference()``
returns a :class:`~cvxkml.solution.Solution` whose certificate (``dual_value``) is the
conic solver's own dual objective (Clarabel or SCS;
:func:`~cvxkml.declare._conic.solve_conic_bound`): no closed-form Lagrange dual exists for
an arbitrary term.  ``converged`` is True only when the solver reports an optimum (or an
``optimal_inaccurate`` one its certificate vouches for) *and* the certificate holds: the
relative gap |objective − dual_value| / max(1, |objective|) and the relative violation are
at most the family's :attr:`~cvxkml.declare.problem.Problem.inaccurate_rtol`.  There is no
fast solver for an extension: ``solve()`` raises :class:`~cvxkml.errors.InvalidInputError`
saying to use ``solve_reference()`` — it never solves the parent problem.

One mechanism for every family: a family with an exact model provides
``extension_probe() -> (cvxpy.Variable, name)`` (a variable shaped like X, on which the
term's convexity is judged), ``extension_model() -> ExtensionModel`` (:class:`ExtensionModel`,
:class:`ExtensionPoint`), ``objective(X, …)`` / ``violations(X, …)`` with X first, and
optionally ``extension_size()``.  Spectral problems do not implement these yet:
:func:`_spectral_model` builds theirs from ``to_cvxpy`` / ``matrix_expression`` /
``matrix_from_whitened``.

The guard (:func:`check_fast_solver_applies`), called first by every family's ``solve()``:
a subclass that redefines the model but inherits ``solve()`` would get the parent's optimum
back, certified by the parent's dual (e.g. LMNN with an added term answering
``converged=True`` *below* the extended problem's exact optimum); it raises
:class:`~cvxkml.errors.InvalidInputError` instead.

Example: ITML with an ℓ1 penalty on the off-diagonal of W,

>>> import cvxpy as cp
>>> import numpy as np
>>> from cvxkml.declare import ITML
>>> from cvxkml.sideinfo import PairConstraints, baseline_metric
>>> rng = np.random.default_rng(0)
>>> X, y = rng.normal(size=(30, 4)), rng.integers(0, 2, 30)
>>> pairs = PairConstraints.from_labels(y, baseline_metric(X), n_similar=10, n_dissimilar=10,
...                                     random_state=0)
>>> prob = ITML(X, pairs, gamma=1.0).extend(
...     term=lambda W: 0.1 * cp.sum(cp.abs(W - cp.diag(cp.diag(W)))))
>>> sol = prob.solve_reference()          # exact model only, certified by the conic dual
>>> sol.status, bool(0 <= sol.gap <= 1e-6 * max(1.0, abs(sol.objective)))
('optimal', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import cvxpy as cp
import numpy as np

from .._validation import check_conic_options
from ..errors import InvalidInputError
from ..solution import Solution
from ._conic import solve_conic_bound
from .problem import MODEL_METHODS, Problem, check_fast_solver_applies

__all__ = [
    "ExtendedProblem",
    "Extendable",
    "ExtensionModel",
    "ExtensionPoint",
    "check_fast_solver_applies",
    "MODEL_METHODS",
]


def _sym(X) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    return 0.5 * (X + X.T)


@dataclass
class ExtensionPoint:
    """The solved exact model's point, read back by the family (see :class:`ExtensionModel`).

    Attributes
    ----------
    primal : ndarray
        X, the value of the primal the term and constraints see (user coordinates).
    objective : float
        The family's objective at the point, without the term.
    violations : ndarray
        The family's violations at the point.
    relative_violation : float
        The family's relative violation of the point (its ``max_relative_violation``).
    matrix : object
        What ``Solution.matrix`` holds (the family's convention).
    slack, dual : optional
        ``Solution.slack`` / ``Solution.dual``.
    info : dict
        Extra entries of ``Solution.info`` (e.g. ``"X"``, ``"h"``, ``"mu"``).
    """

    primal: np.ndarray
    objective: float
    violations: np.ndarray
    relative_violation: float
    matrix: Any
    slack: Any = None
    dual: Any = None
    info: dict = field(default_factory=dict)


@dataclass
class ExtensionModel:
    """What :class:`ExtendedProblem` needs from a family to extend its exact model.

    Attributes
    ----------
    problem : cvxpy.Problem
        The family's exact model, freshly built (the extension adds to it).
    primal : cvxpy.Expression
        X in the user's coordinates, as an expression of ``problem``'s variables.
    read : callable () -> ExtensionPoint
        After ``problem`` is solved: the point read back.
    scale : float, default=1
        The family's objective = ``scale`` × ``problem``'s objective (a model written in a
        normalized form); the term is added as term / scale and the bound multiplied back.
    solution_type : type, default=Solution
        The :class:`~cvxkml.solution.Solution` subclass the family returns.
    eps : dict
        Default ``eps`` per solver name (e.g. ``{"CLARABEL": 1e-10}``).
    conic_options : dict
        Extra keywords of :func:`~cvxkml.declare._conic.solve_conic_bound`
        (``scs_eps``, ``scs_max_iters``).
    """

    problem: cp.Problem
    primal: Any
    read: Callable[[], ExtensionPoint]
    scale: float = 1.0
    solution_type: type = Solution
    eps: dict = field(default_factory=dict)
    conic_options: dict = field(default_factory=dict)


# ---------------------------------------------------------------------- spectral adapter
def _spectral_probe(base):
    n = base.M0.shape[0]
    return cp.Variable((n, n), symmetric=True), "M"


def _spectral_model(base) -> ExtensionModel:
    """The :class:`ExtensionModel` of a spectral problem (whitened X̂, M = T X̂ Tᵀ)."""
    prob = base.to_cvxpy()

    def read():
        Xh = prob.var_dict["X"].value
        M = base.matrix_from_whitened(0.5 * (Xh + Xh.T))
        xi = None
        if base.gamma is not None:
            xi = np.asarray(prob.var_dict["xi_ratio"].value, dtype=float) * base.pairs.bound
        viol = base.violations(M, xi)
        return ExtensionPoint(
            primal=M,
            objective=float(base.objective(M, xi)),
            violations=viol,
            relative_violation=base._max_relative_violation(viol),
            matrix=M,
            slack=xi,
        )

    return ExtensionModel(problem=prob, primal=base.matrix_expression(prob), read=read)


def _probe(base):
    if hasattr(base, "extension_probe"):
        return base.extension_probe()
    if hasattr(base, "matrix_expression") and hasattr(base, "M0"):
        return _spectral_probe(base)
    raise InvalidInputError(
        f"{type(base).__name__} cannot be extended: it does not expose its exact model "
        "(extension_probe() and extension_model(), see cvxkml.declare.extend)."
    )


def _describe(var, name: str) -> str:
    shape = tuple(var.shape)
    if len(shape) == 2:
        return f"the {shape[0]} × {shape[1]} matrix {name}"
    if len(shape) == 1:
        return f"the length-{shape[0]} vector {name}"
    return f"the scalar {name}"


# ---------------------------------------------------------------------- the extension
class Extendable:
    """The ``extend`` method of a family with an exact model (``extension_probe`` /
    ``extension_model``, the module docstring); a mixin ahead of :class:`Problem`."""

    def extend(self, term=None, constraints=None):
        """This problem plus a convex objective term and/or constraints on its primal X,
        written in CVXPY: an :class:`~cvxkml.declare.extend.ExtendedProblem` (what X is for
        each family: the table of :mod:`cvxkml.declare.extend`; its shape:
        ``extension_probe()``).

        Parameters
        ----------
        term : callable X -> cvxpy scalar expression, optional
            Added to the objective; convex (DCP) in X, e.g. ``lambda X: 0.1 * cp.norm1(X)``.
        constraints : callable X -> list of cvxpy constraints, optional
            Extra constraints on X (DCP), e.g. ``lambda X: [X >= 0]``.

        Its ``solve_reference()`` returns the family's solution type (its ``matrix``, ``info``
        and ``slack`` conventions) certified by the conic solver's dual objective; its
        ``solve()`` raises: the family's fast solver answers the problem without the
        extension.
        """
        return ExtendedProblem(self, term=term, constraints=constraints)


class ExtendedProblem(Problem):
    """A declared problem with an extra convex objective term and/or extra constraints.

    Parameters
    ----------
    base : Problem
        The declared problem: a spectral problem (ITML, LogDetKernel, SpectralMetric, …) or
        any family that provides ``extension_probe`` / ``extension_model`` (LMNNProblem,
        KCR, RankOneWeightStep, MuWeightStep, SpectralReweighting, EmbeddingWeightProblem;
        the module docstring lists each family's primal X).
    term : callable X -> cvxpy scalar expression, optional
        Added to the objective; must be convex (DCP) in X.
    constraints : callable X -> list of cvxpy constraints, optional
        Extra constraints on X (DCP).

    Attributes
    ----------
    base, term, extra : as given (``extra`` = the constraints callable).
    primal_name : str
        The name of X in the base family ("M", "A", "Sigma", "P", "mu", "beta", "w").
    """

    def __init__(self, base, term=None, constraints=None):
        if term is None and constraints is None:
            raise InvalidInputError("extend() needs a term, constraints, or both.")
        probe, name = _probe(base)
        for what, f in (("term", term), ("constraints", constraints)):
            if f is not None and not callable(f):
                raise InvalidInputError(
                    f"{what} must be a function of the learned {'matrix' if probe.ndim == 2 else 'vector'} "
                    f"{name} returning a CVXPY {'expression' if what == 'term' else 'constraint list'}."
                )
        self.base, self.term, self.extra = base, term, constraints
        self.primal_name = name
        self.inaccurate_rtol = base.inaccurate_rtol
        self.clarabel_max_size = base.clarabel_max_size
        desc = _describe(probe, name)
        if term is not None:  # DCP is judged on a variable
            e = term(probe)
            if not isinstance(e, cp.Expression) or e.size != 1 or not e.is_convex():
                raise InvalidInputError(
                    f"term({name}) must return a convex scalar CVXPY expression of {desc} (DCP); "
                    f"e.g. lambda {name}: 0.1 * cp.sum(cp.abs({name}))."
                )
        if constraints is not None:
            cs = constraints(probe)
            if not isinstance(cs, (list, tuple)) or not all(
                isinstance(c, cp.constraints.constraint.Constraint) for c in cs
            ):
                raise InvalidInputError(
                    f"constraints({name}) must return a list of CVXPY constraints "
                    f"on {desc} (e.g. [cp.sum({name}) <= 10])."
                )
            if not all(c.is_dcp() for c in cs):
                raise InvalidInputError(f"constraints({name}) must be convex (DCP) in {desc}.")

    def _model(self) -> ExtensionModel:
        if hasattr(self.base, "extension_model"):
            return self.base.extension_model()
        return _spectral_model(self.base)

    def exact_size(self) -> int:
        """The side of the extended model's largest PSD block (the base family's
        ``extension_size()`` when it has one, else its ``exact_size()``)."""
        size = getattr(self.base, "extension_size", None)
        return int(size()) if size is not None else self.base.exact_size()

    def _limit_lookup(self, table: dict) -> int | None:
        """The size limits of the base family (an extension adds no PSD block; its cost is
        the family's), except for spectral problems, whose extensions were measured as
        ``"ExtendedProblem"`` (reference/exact-limits.md)."""
        if hasattr(self.base, "extension_model"):
            return self.base._limit_lookup(table)
        return super()._limit_lookup(table)

    def default_solver(self) -> str:
        """The base family's choice: Clarabel up to its ``clarabel_max_size``, SCS above."""
        if getattr(self.base, "extension_size", None) is None:
            return self.base.default_solver()
        return "CLARABEL" if self.exact_size() <= self.clarabel_max_size else "SCS"

    def __getattr__(self, name):  # n_constraints, pairs, M0, … of the base problem
        if name in ("base", "term", "extra", "primal_name"):
            raise AttributeError(name)
        return getattr(self.base, name)

    def extend(self, term=None, constraints=None):
        """This extension plus another term and/or constraints: one
        :class:`ExtendedProblem` of the same base problem whose term is the sum of both terms
        and whose extra constraints are this extension's, then the new ones (so its
        ``violations`` list them in that order).  The new callables are checked as
        ``base.extend`` checks them, with the same messages."""
        ExtendedProblem(self.base, term=term, constraints=constraints)  # the checks, alone
        terms = [t for t in (self.term, term) if t is not None]
        lists = [c for c in (self.extra, constraints) if c is not None]
        return ExtendedProblem(
            self.base,
            term=(lambda X: sum((t(X) for t in terms[1:]), terms[0](X))) if terms else None,
            constraints=(lambda X: [c for f in lists for c in f(X)]) if lists else None,
        )

    # ------------------------------------------------------------------ numpy side
    def term_value(self, X) -> float:
        """The extra term at X (0 without one)."""
        if self.term is None:
            return 0.0
        return float(self.term(cp.Constant(np.asarray(X, dtype=float))).value)

    def extra_violations(self, X) -> np.ndarray:
        """One violation per extra constraint at X (its largest entry, >= 0)."""
        if self.extra is None:
            return np.zeros(0)
        extra = [
            float(np.max(np.asarray(c.violation()), initial=0.0))
            for c in self.extra(cp.Constant(np.asarray(X, dtype=float)))
        ]
        return np.maximum(np.asarray(extra, dtype=float), 0.0)

    def objective(self, X, *rest, **kw) -> float:
        """The base objective at (X, …) plus the term at X."""
        return float(self.base.objective(X, *rest, **kw) + self.term_value(X))

    def violations(self, X, *rest, **kw) -> np.ndarray:
        """The base problem's violations, then one per extra constraint (its largest entry)."""
        v = np.asarray(self.base.violations(X, *rest, **kw), dtype=float)
        if self.extra is None:
            return v
        return np.concatenate([v, self.extra_violations(X)])

    # ------------------------------------------------------------------ the certificate of an answer
    # A spectral base's answer (M, its slack and multipliers) is checked by the base; a family
    # with its own extension model answers its primal X in user coordinates (sol.matrix).  The
    # bound is the conic solver's dual objective: no closed-form Lagrange dual recomputes it.
    def answer_primal(self, sol) -> tuple:
        """The base's (M, ξ) for a spectral base, else (X,) = (``sol.matrix``,)."""
        if hasattr(self.base, "extension_model"):
            return (sol.matrix,)
        return self.base.answer_primal(sol)

    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """A spectral base's checks; else X finite (a square matrix also symmetric and PSD)."""
        from .._answer import check_primal_matrix, check_primal_vector

        if not hasattr(self.base, "extension_model"):
            self.base.check_answer(sol, symmetric_tol=symmetric_tol, psd_tol=psd_tol)
            return
        X = sol.matrix
        if np.ndim(X) == 2 and np.shape(X)[0] == np.shape(X)[1]:
            check_primal_matrix(X, np.shape(X), symmetric_tol=symmetric_tol, psd_tol=psd_tol)
        else:
            check_primal_vector(X, np.size(X) if np.ndim(X) == 1 else -1, what="primal point")

    def answer_objective(self, sol) -> float:
        """The extended objective at X (a spectral base's: at M's best slack)."""
        return float(self.objective(sol.matrix))

    def answer_dual_value(self, sol, objective: float) -> float | None:
        """None: the conic dual objective is not a function of returned multipliers."""
        return None

    def dual_value_unverified(self) -> str | None:
        """The bound is the conic solver's dual objective (kept as reported, flagged)."""
        return "the conic solver's dual objective (no closed-form Lagrange dual)"

    def relative_violation_of(self, violations) -> float:
        """The base's relative violation of its own constraints, and the largest violation of
        the extra constraints (as :meth:`solve_reference` measures it)."""
        viol = np.asarray(violations, dtype=float)
        n_extra = 0 if self.extra is None else len(self.extra(_probe(self.base)[0]))
        n_base = viol.size - n_extra
        extra = float(np.max(viol[n_base:], initial=0.0))
        return max(float(self.base.relative_violation_of(viol[:n_base])), extra)

    def objective_scale(self) -> float:
        """The base family's unit."""
        return self.base.objective_scale()

    def whitened_geometry(self):
        """The base's whitened geometry (the extra term is convex: strong convexity stays)."""
        return self.base.whitened_geometry()

    # ------------------------------------------------------------------ CVXPY side
    def _extended(self, model: ExtensionModel) -> cp.Problem:
        prob, X = model.problem, model.primal
        obj = prob.objective.args[0]
        if self.term is not None:
            obj = obj + (self.term(X) if model.scale == 1.0 else self.term(X) / model.scale)
        cons = list(prob.constraints) + (list(self.extra(X)) if self.extra is not None else [])
        return cp.Problem(cp.Minimize(obj), cons)

    def to_cvxpy(self) -> cp.Problem:
        """The base model with the term added and the constraints appended (the term divided
        by the base model's objective scale when it is written in a normalized form)."""
        return self._extended(self._model())

    def solve_reference(
        self, solver: str | None = None, eps: float | None = None, accept_inaccurate: bool = False, **opts
    ) -> Solution:
        """The extended exact model with Clarabel or SCS (the base problem's default choice).

        Returns
        -------
        Solution
            The base family's ``matrix`` / ``slack`` convention; ``objective`` = the base
            objective plus the term at the returned point; ``violations`` = the base
            family's then one per extra constraint; ``dual_value`` = the conic solver's dual
            objective (a lower bound on the extended optimum, up to the solver's
            tolerance); ``info``: ``solver_objective``, ``term``,
            ``max_relative_violation``, ``certificate``, ``relative_gap``, and
            ``certificate_failed`` when the solver said optimal but the certificate does not
            hold.  ``converged`` only when optimal and the certificate holds (module
            docstring).

        Raises
        ------
        InvalidInputError
            A solver other than Clarabel or SCS (no dual objective, no certificate).
        InfeasibleError, SolverError
            As :func:`~cvxkml.declare._conic.solve_conic_bound`.
        """
        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.default_solver()
        if solver not in ("CLARABEL", "SCS"):
            raise InvalidInputError(
                "An extended problem is certified by Clarabel's or SCS's dual "
                f"objective; use solver='CLARABEL' or 'SCS', not {solver!r}."
            )
        model = self._model()
        if eps is None:
            eps = model.eps.get(solver)
        prob = self._extended(model)
        elapsed, status, iters, bound = solve_conic_bound(
            prob,
            solver,
            eps,
            True,
            what="extended exact model",
            infeasible_hint="relax the extra constraints or use slack.",
            **{**model.conic_options, **opts},
        )
        point = model.read()
        extra = self.extra_violations(point.primal)
        viol = np.concatenate([np.asarray(point.violations, dtype=float), extra])
        rel = max(float(point.relative_violation), float(np.max(extra, initial=0.0)))
        term = self.term_value(point.primal)
        objective = float(point.objective) + term
        bound = float(bound) * model.scale
        sol = model.solution_type.from_conic(
            status,
            solver,
            elapsed,
            iters,
            matrix=point.matrix,
            objective=objective,
            dual=point.dual,
            slack=point.slack,
            violations=viol,
            dual_value=bound,
            info={
                **point.info,
                "solver_objective": float(prob.value) * model.scale,
                "term": term,
                "max_relative_violation": rel,
                "certificate": f"{solver} dual objective (no closed-form Lagrange dual for an extension)",
            },
        )
        sol = self._accept_reference(sol, status, accept_inaccurate, what="extended exact model")
        scale = max(1.0, abs(objective))
        rel_gap = abs(objective - bound) / scale if np.isfinite(bound) else np.inf
        sol.info["relative_gap"] = rel_gap
        holds = rel_gap <= self.inaccurate_rtol and rel <= self.inaccurate_rtol
        if not holds:
            sol.info["certificate_failed"] = (
                f"relative gap {rel_gap:.3g}, relative violation {rel:.3g} > {self.inaccurate_rtol:g}"
            )
        ok = status == cp.OPTIMAL or bool(sol.info.get("accepted_by_certificate"))
        sol.converged = bool(ok and holds)
        if ok and not holds:
            self._warn_unconverged(
                sol,
                f"{solver} reported the extended exact model optimal but its certificate does "
                f"not hold ({sol.info['certificate_failed']}); try the other solver or a smaller eps.",
            )
        return sol

    def solve(self, *args, **kw):
        base = type(self.base).__name__
        if hasattr(self.base, "extension_model"):
            raise InvalidInputError(
                f"An extended {base} has no fast solver: {base}.solve() answers the {base} problem "
                "without the extra term and constraints. Use solve_reference() (the exact model of "
                "the extended problem, certified by the conic solver's dual objective)."
            )
        raise InvalidInputError(
            "An extended problem has no fast solver (the extra term has no conjugate the dual "
            "solvers know); use solve_reference(). A spectral term belongs in a Regularizer "
            "subclass, a soft constraint in sideinfo.Hinge: both keep the fast solvers."
        )
