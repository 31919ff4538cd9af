"""Recompute, never trust: a solver's answer checked through the problem's own formulas.

:func:`validate_answer` takes a problem and what a solver returned (a
:class:`~cvxkml.solution.Solution`, a bare primal matrix, or ``(matrix, duals)``) and returns a
new ``Solution`` whose objective, violations and dual value are **recomputed** from the
returned primal point and duals (``problem.objective``, ``problem.violations``,
``problem.dual_value``).  It fails (``AssertionError``, one line naming both numbers) when

* the primal matrix is None, not 2-D, of the wrong shape, not finite, not symmetric or not PSD
  within the stated tolerances (:mod:`cvxkml._answer`: :data:`~cvxkml._answer.SYMMETRIC_TOL`,
  :data:`~cvxkml._answer.PSD_TOL`);
* a reported objective, violation or dual value differs from its recomputation beyond rounding
  (:data:`~cvxkml._answer.REPORT_RTOL`), or a reported dual value is NaN/inf;
* ``converged=True`` comes without a certificate, or the recomputed certificate is negative
  beyond ``gap_rtol``; a dual value above a trusted optimum (``optimum``) is not a lower bound.

Families: a table maps each cvxkml problem class to its primal variables (``(M, ξ)`` of a
spectral problem, ``(Σ, h̃)`` of KCR, ``β`` of the spectral re-weighting, …) and to the way its
dual value is recomputed.  A family whose reported bound is not a function of the returned
duals (the MKL weight steps, ``ExtendedProblem``'s conic dual objective) keeps the reported
bound and says so in ``info["dual_value_unverified"]``.
"""

from __future__ import annotations

import numpy as np

from .._answer import (
    PSD_TOL,
    REPORT_RTOL,
    SYMMETRIC_TOL,
    check_certificate,
    check_primal_matrix,
    check_primal_vector,
    check_reported,
    check_scalar,
    relative_distance,
)
from ..errors import CvxkmlError, SolverError
from ..solution import Solution

__all__ = ["validate_answer", "as_solution", "strong_convexity", "distance_bound"]


class _Spec:
    """What one family's answer is made of."""

    def __init__(self, obj_args, viol_args, checks, dual=None, unverified=None, base=None):
        self.obj_args, self.viol_args = obj_args, viol_args
        self.checks = checks  # callables doing the shape/finite/sym/PSD checks
        self.dual = dual  # callable objective -> recomputed dual value, or None
        self.unverified = unverified  # why a reported dual value cannot be recomputed
        self.base = base  # the spectral problem the matrix belongs to (distances)
        self.objective = self.violations = None  # callables overriding problem.objective(*args)


def _matrix_check(M, n, what="matrix", **kw):
    return lambda: check_primal_matrix(M, n, what=what, **kw)


def _vector_check(v, m, what):
    return lambda: check_primal_vector(v, m, what=what)


def _spectral_spec(problem, sol, base=None, **kw):
    base = problem if base is None else base
    N = base.M0.shape[0]
    M = sol.matrix
    checks = [_matrix_check(M, N, **kw)]
    viol_args = (M,)
    if base.gamma is not None and sol.slack is not None:
        # Solution's contract: the objective at M's best slack, the violations against the solver's ξ
        checks.append(_vector_check(sol.slack, len(base.pairs), "slack ξ"))
        viol_args = (M, sol.slack)
    dual = None
    if sol.dual is not None:
        checks.append(_vector_check(sol.dual, base.n_constraints, "dual (one multiplier per constraint)"))
        dual = lambda obj: base.dual_value(sol.dual)
    return _Spec((M,), viol_args, checks, dual, base=base)


def _as_checked(a, **kw):
    """A returned 2-D matrix (square: symmetric and PSD) or vector: finite, any size."""
    if np.ndim(a) == 2 and np.shape(a)[0] == np.shape(a)[1]:
        return check_primal_matrix(a, np.shape(a), **kw)
    return check_primal_vector(a, np.size(a) if np.ndim(a) == 1 else -1, what="primal point")


def _family_spec(problem, sol, **kw) -> _Spec:
    from .. import declare
    from ..declare.base import SpectralProblem

    if isinstance(problem, SpectralProblem):
        return _spectral_spec(problem, sol, **kw)
    if isinstance(problem, declare.IPLR):
        return _spectral_spec(problem, sol, base=problem.reduced, **kw)
    if isinstance(problem, declare.ExtendedProblem) and not isinstance(problem.base, SpectralProblem):
        # an extended LMNN/KCR/MKL/Yeung problem: its primal in user coordinates is sol.matrix
        return _Spec(
            (sol.matrix,),
            (sol.matrix,),
            [lambda: _as_checked(sol.matrix, **kw)],
            unverified="the conic solver's dual objective (no closed-form Lagrange dual)",
        )
    if isinstance(problem, declare.ExtendedProblem):
        spec = _spectral_spec(problem, sol, base=problem.base, **kw)
        spec.dual = None
        spec.unverified = "the conic solver's dual objective (no closed-form Lagrange dual)"
        return spec
    if isinstance(problem, declare.LMNNProblem):
        D = problem.matrix_dim  # D (features) or r (the span space)
        checks = [_matrix_check(sol.matrix, D, what="matrix A", **kw)]
        Xh = sol.info.get("X")
        xi = () if sol.slack is None else (sol.slack,)
        if sol.slack is not None:
            checks.append(_vector_check(sol.slack, problem.triplets.n_triplets, "slack ξ"))
        if Xh is not None:
            # the family's own primal variable is the whitened X̂ (A = V S⁻¹ X̂ S⁻¹ Vᵀ is evaluated
            # through it: its condition reaches 1/rank_rtol², LMNNProblem.objective_whitened)
            checks.append(_matrix_check(Xh, problem.rank, what="whitened matrix X̂ (info['X'])", **kw))

            def consistent():
                A = problem.answer_matrix(Xh, sol.info.get("complement"))
                err = float(np.linalg.norm(np.asarray(sol.matrix, dtype=float) - A))
                if err > SYMMETRIC_TOL * max(float(np.linalg.norm(A)), 1e-300):
                    raise SolverError(
                        f"The returned matrix A is not the map of the returned X̂ (info['X']): "
                        f"‖A − A(X̂)‖_F / ‖A(X̂)‖_F = {err / max(float(np.linalg.norm(A)), 1e-300):.3g}."
                    )

            checks.append(consistent)
            objective = lambda: problem.objective_whitened(Xh)
            violations = lambda: problem.violations_whitened(Xh, *xi)
        else:
            objective = lambda: problem.objective(sol.matrix)
            violations = lambda: problem.violations(sol.matrix, *xi)
        dual = None
        if sol.dual is not None:
            checks.append(_vector_check(sol.dual, problem.triplets.n_triplets, "dual α"))
            dual = lambda obj: problem.dual_value(sol.dual, objective_bound=obj)
        spec = _Spec(None, None, checks, dual)
        spec.objective, spec.violations = objective, violations
        return spec
    if isinstance(problem, declare.KCR):
        h = sol.info.get("h")
        checks = [
            _matrix_check(sol.matrix, problem.n, what="matrix Σ", **kw),
            lambda: check_scalar(h, "bandwidth h (info['h'])"),
        ]
        dual = None
        if sol.dual is not None:
            checks.append(
                lambda: check_primal_matrix(sol.dual, problem.n, what="dual weights s", psd=False, symmetric_tol=np.inf)
            )
            dual = lambda obj: problem.dual_value(sol.dual)
        return _Spec((sol.matrix, h), (sol.matrix, h), checks, dual)
    if isinstance(problem, declare.RankOneWeightStep):
        return _Spec(
            (sol.matrix,),
            (sol.matrix,),
            [_matrix_check(sol.matrix, problem.m, what="matrix P", **kw)],
            unverified="the weight step's bound is not a function of returned duals",
        )
    if isinstance(problem, declare.MuWeightStep):
        return _Spec(
            (sol.matrix,),
            (sol.matrix,),
            [_vector_check(sol.matrix, problem.m, "weights μ")],
            unverified="the weight step's bound is not a function of returned duals",
        )
    if isinstance(problem, declare.SpectralReweighting):
        beta = sol.info.get("beta")
        checks = [_vector_check(beta, problem.n_components, "weights β (info['beta'])")]
        dual = None
        if sol.dual is not None:
            checks.append(_vector_check(sol.dual, 1, "dual ρ"))
            dual = lambda obj: problem.dual_value(float(np.ravel(sol.dual)[0]))
        return _Spec((beta,), (beta,), checks, dual)
    if isinstance(problem, declare.EmbeddingWeightProblem):
        checks = [_vector_check(sol.matrix, problem.n_neighbors, "weights w")]
        dual = None
        if sol.dual is not None:
            checks.append(_vector_check(sol.dual, 1, "dual a"))
            dual = lambda obj: problem.dual_value(float(np.ravel(sol.dual)[0]))
        return _Spec((sol.matrix,), (sol.matrix,), checks, dual)
    # a user's Problem subclass: the matrix and, if it has one, its dual_value
    checks = [
        lambda: check_primal_matrix(sol.matrix, np.shape(sol.matrix) if np.ndim(sol.matrix) == 2 else (-1, -1), **kw)
    ]
    dual = (
        (lambda obj: problem.dual_value(sol.dual))
        if (sol.dual is not None and hasattr(problem, "dual_value"))
        else None
    )
    unverified = None if hasattr(problem, "dual_value") else "the problem has no dual_value(dual) to recompute it"
    return _Spec((sol.matrix,), (sol.matrix,), checks, dual, unverified)


def as_solution(problem, answer, what: str = "The solver") -> Solution:
    """A solver's answer as a :class:`Solution`: a ``Solution`` as is; a bare matrix or
    ``(matrix, duals)`` through ``problem.evaluate`` (after the matrix checks, so a 1-D, None
    or NaN matrix fails with the checks' message, not inside a formula)."""
    if isinstance(answer, Solution):
        return answer
    if isinstance(answer, tuple) and len(answer) == 2:
        M, dual = answer
    else:
        M, dual = answer, None
    spec = _family_spec(problem, Solution(M, np.nan, dual, None, np.zeros(0), 0, False, 0.0, "", ""))
    for check in spec.checks:
        try:
            check()
        except SolverError as exc:
            raise AssertionError(str(exc)) from exc
    return problem.evaluate(M, dual, solver=f"{what} (bare answer)", status="evaluated")


def validate_answer(
    problem,
    sol,
    *,
    gap_rtol: float | None = None,
    optimum: float | None = None,
    opt_rtol: float | None = None,
    report_rtol: float = REPORT_RTOL,
    symmetric_tol: float = SYMMETRIC_TOL,
    psd_tol: float = PSD_TOL,
) -> Solution:
    """Check a solver's answer by recomputing it (module docstring).

    Parameters
    ----------
    problem : problem
        A declared problem.
    sol : Solution, array, or (array, duals)
        What the solver returned (a bare answer goes through ``problem.evaluate``).
    gap_rtol : float or None
        Largest accepted negative relative certificate; None: ``sol.info["gap_tol"]``, else 1e-6.
    optimum, opt_rtol : float or None
        A trusted optimum the dual value must not exceed by more than ``opt_rtol`` (default
        ``gap_rtol``) · max(1, |optimum|).
    report_rtol, symmetric_tol, psd_tol : float
        Tolerances of the recomputed answer; see :mod:`cvxkml._answer`.

    Returns
    -------
    Solution
        A copy of ``sol`` with ``objective``, ``violations``, ``dual_value`` (and
        ``info["max_relative_violation"]``) recomputed; ``info["reported"]`` keeps the claims.

    Raises
    ------
    AssertionError
        One line naming what is wrong (and both numbers for a disagreement).
    """
    try:
        return _validate(problem, sol, gap_rtol, optimum, opt_rtol, report_rtol, symmetric_tol, psd_tol)
    except SolverError as exc:
        raise AssertionError(str(exc)) from exc


def _validate(problem, sol, gap_rtol, optimum, opt_rtol, report_rtol, symmetric_tol, psd_tol):
    sol = as_solution(problem, sol)
    spec = _family_spec(problem, sol, symmetric_tol=symmetric_tol, psd_tol=psd_tol)
    for check in spec.checks:
        check()
    try:
        obj = float(spec.objective() if spec.objective else problem.objective(*spec.obj_args))
        viol = np.asarray(spec.violations() if spec.violations else problem.violations(*spec.viol_args), dtype=float)
    except CvxkmlError as exc:
        raise SolverError(f"The returned point cannot be evaluated by the problem's formulas: {exc}") from exc
    check_reported(sol.objective, obj, rtol=report_rtol, what="objective")
    rep_viol = np.asarray(sol.violations, dtype=float)
    if rep_viol.shape != viol.shape:
        raise SolverError(
            f"The solver reported {rep_viol.size} violation(s) but the problem has {viol.size} "
            "(one per constraint, in problem.violations() order)."
        )
    if viol.size:
        if not np.all(np.isfinite(rep_viol)):
            raise SolverError("The solver reported NaN/inf violations.")
        tol = report_rtol * max(1.0, abs(obj), float(np.max(np.abs(viol))))
        k = int(np.argmax(np.abs(rep_viol - viol)))
        if abs(rep_viol[k] - viol[k]) > tol:
            raise SolverError(
                f"The reported violation of constraint {k} {rep_viol[k]:.12g} disagrees with "
                f"{viol[k]:.12g} recomputed from the returned point; report the violations of "
                "what you return."
            )
    reported_dv = sol.dual_value
    if reported_dv is not None and not (np.isscalar(reported_dv) and reported_dv == -np.inf):
        reported_dv = check_scalar(reported_dv, "dual value")  # NaN and +inf fail
    elif reported_dv is not None:
        reported_dv = None  # −inf: a valid, empty lower bound (no certificate)
    info = dict(sol.info)
    info["reported"] = {
        "objective": sol.objective,
        "dual_value": sol.dual_value,
        "max_violation": float(np.max(rep_viol, initial=0.0)),
    }
    if spec.dual is not None:
        try:
            dv = float(spec.dual(obj))
        except CvxkmlError as exc:
            raise SolverError(f"The returned duals cannot be evaluated by problem.dual_value: {exc}") from exc
        if reported_dv is not None:
            check_reported(reported_dv, dv, rtol=report_rtol, what="dual value", source="the returned duals")
        dv = dv if np.isfinite(dv) else None
    elif reported_dv is not None and spec.unverified is None:
        raise SolverError(
            f"The solver reports a dual value ({reported_dv:.12g}) but no duals, so it cannot be "
            "recomputed; return the multipliers that give it (Solution.dual)."
        )
    else:
        dv = reported_dv
        if reported_dv is not None:
            info["dual_value_unverified"] = spec.unverified
    if gap_rtol is None:
        gap_rtol = float(sol.info.get("gap_tol", 1e-6))
    rel = getattr(spec.base, "_max_relative_violation", None) or getattr(problem, "_max_relative_violation", None)
    rel_viol = float(rel(viol)) if rel is not None else float(np.max(viol, initial=0.0))
    # what an infeasible point's violations buy under weak duality: Σ|λ_c|·viol_c (the
    # multipliers and violations of a spectral problem are in the same order)
    lam = None if sol.dual is None else np.asarray(sol.dual, dtype=float)
    bought = (
        float(np.abs(lam) @ viol)
        if lam is not None and lam.shape == viol.shape and np.all(np.isfinite(lam)) and spec.dual is not None
        else None
    )
    check_certificate(
        obj,
        dv,
        converged=bool(sol.converged),
        gap_rtol=gap_rtol,
        optimum=optimum,
        opt_rtol=opt_rtol,
        feasible=rel_viol <= gap_rtol,
        bought=bought,
    )
    out = Solution(
        matrix=sol.matrix,
        objective=obj,
        dual=sol.dual,
        slack=sol.slack,
        violations=viol,
        n_iter=sol.n_iter,
        converged=bool(sol.converged),
        time=sol.time,
        status=sol.status,
        solver=sol.solver,
        dual_value=dv,
        info=info,
    )
    if rel is not None:
        out.info["max_relative_violation"] = rel_viol
    elif "max_relative_violation" in info:
        out.info.pop("max_relative_violation")  # a claim; relative_violation() falls back to the max
    return out


def _base(problem):
    from .. import declare

    if isinstance(problem, declare.IPLR):
        return problem.reduced
    if isinstance(problem, declare.ExtendedProblem):
        return problem.base
    return problem


# --------------------------------------------------------------------------- distance to a unique optimum
def strong_convexity(problem, L: float) -> float | None:
    """A modulus σ > 0 of strong convexity of the objective in the whitened matrix X̂ on
    {0 ⪯ X̂ ⪯ L·I}, or None when the regularizer is not known to be strictly convex there.

    A spectral function Σ f_s(λ_i(X̂)) is σ-strongly convex on that set when f_s is on [0, L]
    (Lewis 1996: strong convexity of a symmetric f carries to f∘λ).  Hence LogDet
    (f_s'' = 1/x²): σ = 1/L²; von Neumann (1/x): σ = 1/L; Frobenius (1): σ = 1; the LogDet
    barrier γ tr(X̂Ĉ0) − γ log det X̂: σ = γ/L².  Slack and hinge terms are convex and do not
    lower σ in X̂.  Trace-norm, LMNN and KCR objectives are not strictly convex: None.
    """
    from .. import declare
    from ..declare.base import SpectralProblem
    from ..declare.sdp import LinearLogDet

    if isinstance(problem, declare.IPLR):
        problem = problem.reduced
    if not isinstance(problem, SpectralProblem) or not (L > 0 and np.isfinite(L)):
        return None
    reg = problem.regularizer
    kind = type(reg)
    if kind is declare.LogDet:
        return 1.0 / L**2
    if kind is declare.VonNeumann:
        return 1.0 / L
    if kind is declare.Frobenius:
        return 1.0
    if kind is LinearLogDet and reg.gamma > 0:
        return float(reg.gamma) / L**2
    return None


def distance_bound(problem, fast, exact, gap_fast: float, gap_exact: float) -> dict | None:
    """The distance between two answers and its bound from their certified gaps.

    For an objective σ-strongly convex in X̂ on the feasible set (:func:`strong_convexity`) and
    a feasible X̂, first-order optimality of X̂* gives f(X̂) − f* >= σ/2 ‖X̂ − X̂*‖²_F, so
    ‖X̂ − X̂*‖_F <= sqrt(2 g/σ) with g >= f(X̂) − f* any certified gap.  Through the triangle
    inequality between the two answers and M = T X̂ Tᵀ (‖T Δ Tᵀ‖_F <= ‖T‖₂² ‖Δ‖_F):

        ‖M − M_exact‖_F / ‖M_exact‖_F <= ‖T‖₂² (sqrt(2 g_fast/σ) + sqrt(2 g_exact/σ)) / ‖M_exact‖_F

    with σ taken at L = the larger λ_max of the two whitened matrices (λ_max is convex, so the
    segment between them stays below L).  The default ``g_fast`` = ``rtol`` · scale is what
    :func:`assert_matches_reference` already accepts; points feasible only within ``viol``
    fall outside the inequality's hypothesis, which the factor 2 applied by the caller covers.

    Returns
    -------
    dict with ``distance`` and ``bound`` (relative), or None when no σ is known.
    """
    base = _base(problem)
    if not hasattr(base, "whiten"):
        return None
    Xf, Xe = base.whiten(fast.matrix), base.whiten(exact.matrix)
    if Xf is None or Xe is None:
        return None
    L = max(float(np.linalg.eigvalsh(Xf)[-1]), float(np.linalg.eigvalsh(Xe)[-1]))
    sigma = strong_convexity(problem, L)
    if sigma is None:
        return None
    T2 = float(np.linalg.norm(base.T, 2)) ** 2
    ref = max(float(np.linalg.norm(exact.matrix)), 1e-300)
    bound = T2 * (np.sqrt(2 * max(gap_fast, 0.0) / sigma) + np.sqrt(2 * max(gap_exact, 0.0) / sigma)) / ref
    return {"distance": relative_distance(fast.matrix, exact.matrix), "bound": float(bound), "sigma": sigma}
