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
* ``converged=True`` comes without a certificate, or with a recomputed certificate that does
  not certify (the gap f − g beyond ``gap_rtol`` · S or ``atol``, or the relative violation
  beyond ``viol_rtol``: no reference solution needed); a certificate is negative beyond
  ``gap_rtol``; a dual value above a trusted ``optimum`` is not a lower bound.

Scale: every gap is judged against ``atol`` when the caller sets one, else relative to
S = max(|f|, |g|, ``problem.objective_scale()``) — the answer's own magnitude and the
problem's declared unit, never a fixed 1 (which waves through any answer of an objective of
order 1e-4).  ``info["certificate"]["scale_rule"]`` says which scale judged it.

Families: the problem's own hooks (:class:`~cvxkml.declare.Problem`: ``answer_primal``,
``check_answer``, ``answer_objective``, ``answer_violations``, ``answer_dual_value``,
``dual_value_unverified``, ``relative_violation_of``, ``objective_scale``, ``certificate``,
``whitened_geometry``) say what an answer is made of and how its certificate is recomputed —
cvxkml's families and a user's problem class alike: nothing here looks at the problem's
type.  A family whose reported bound is not a function of the returned duals (the MKL weight
steps, ``ExtendedProblem``'s conic dual objective: ``dual_value_unverified()`` says why)
keeps the reported bound and says so in ``info["dual_value_unverified"]``.
"""

from __future__ import annotations

import numpy as np

from .._answer import (
    PSD_TOL,
    REPORT_RTOL,
    SYMMETRIC_TOL,
    check_certificate,
    check_reported,
    check_scalar,
    relative_distance,
)
from ..errors import CvxkmlError, SolverError
from ..solution import Solution

__all__ = ["validate_answer", "as_solution", "strong_convexity", "distance_bound"]


class _Spec:
    """What one answer is made of, read from the problem's own hooks (its class's overrides,
    else the :class:`~cvxkml.declare.Problem` defaults; never the problem's type): its checks,
    and how its objective, violations and dual value are recomputed."""

    def __init__(self, problem, sol, symmetric_tol=SYMMETRIC_TOL, psd_tol=PSD_TOL):
        self.base = problem  # the problem whose hooks judge the certificate (and give distances)
        self.unverified = _hook(problem, "dual_value_unverified")()  # why a bound is not recomputed
        self.checks = [lambda: _hook(problem, "check_answer")(sol, symmetric_tol=symmetric_tol, psd_tol=psd_tol)]
        self.objective = lambda: _hook(problem, "answer_objective")(sol)
        self.violations = lambda: _hook(problem, "answer_violations")(sol)
        # objective -> the recomputed dual value (None: the hook found no multipliers), or None
        self.dual = None
        if sol.dual is not None and self.unverified is None:
            self.dual = lambda obj: _hook(problem, "answer_dual_value")(sol, obj)


class _Generic:
    """An object that has ``objective``/``violations`` but is not a
    :class:`~cvxkml.declare.Problem`, seen through the Problem base class's generic hooks."""

    def __init__(self, obj):
        self._obj = obj

    def __getattr__(self, name):
        from ..declare.problem import Problem

        found = getattr(self._obj, name, None)
        if found is not None:
            return found
        return getattr(Problem, name).__get__(self)  # AttributeError when neither has it


def _hook(problem, name):
    """``problem.<name>``, or the :class:`~cvxkml.declare.Problem` generic hook for an object
    that only has the formulas."""
    found = getattr(problem, name, None)
    return found if found is not None else getattr(_Generic(problem), name)


def _geometry(problem):
    """``problem.whitened_geometry()`` (the generic hook for an object that only has the formulas)."""
    return _hook(problem, "whitened_geometry")()


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
    spec = _Spec(problem, Solution(M, np.nan, dual, None, np.zeros(0), 0, False, 0.0, "", ""))
    for check in spec.checks:
        try:
            check()
        except SolverError as exc:
            raise AssertionError(str(exc)) from exc
    return problem.evaluate(M, dual, solver=f"{what} (bare answer)", status="evaluated")


def _raise_if_outside_dual_box(problem, dual) -> None:
    """A ``converged`` answer whose multipliers leave the problem's dual box (λ_c < 0 on an
    inequality, λ_c > C_c under Hinge): the Lagrange dual is −inf there, and the message
    says so rather than "no certificate"."""
    box = getattr(problem, "dual_box", None)
    if not callable(box) or dual is None:
        return
    lower, upper, _ = box()
    lam = np.asarray(dual, dtype=float).ravel()
    if lam.shape != np.shape(lower):
        return
    out = np.flatnonzero((lam < lower) | (lam > upper))
    if out.size:
        k = int(out[0])
        raise SolverError(
            f"The solver says converged=True but {out.size} of its multipliers leave the dual box "
            f"(e.g. λ_{k} = {lam[k]:.6g} outside [{lower[k]:.6g}, {upper[k]:.6g}]), where the Lagrange dual is "
            "−inf: no certificate; project the multipliers onto the box, or return converged=False."
        )


def validate_answer(
    problem,
    sol,
    *,
    gap_rtol: float | None = None,
    viol_rtol: float | None = None,
    atol: float | None = None,
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
        Tolerance of the certificate relative to S = max(|f|, |g|,
        ``problem.objective_scale()``): a ``converged=True`` answer needs |f − g| <= gap_rtol · S,
        and no answer may have f − g < −gap_rtol · S.  None: ``sol.info["gap_tol"]``, else
        1e-6.  ``np.inf``: no certificate is asked of a ``converged`` claim (intermediate
        iterates).
    viol_rtol : float or None
        Largest relative violation of a ``converged=True`` answer; None:
        ``sol.info["viol_tol"]``, else ``gap_rtol``.
    atol : float or None
        An absolute tolerance on the gap instead of ``gap_rtol`` · S (for an optimum at 0).
    optimum, opt_rtol : float or None
        A trusted optimum the dual value must not exceed by more than ``opt_rtol`` (default
        ``gap_rtol``) · max(|optimum|, ``objective_scale()``) (or ``atol``).
    report_rtol, symmetric_tol, psd_tol : float
        Tolerances of the recomputed answer; see :mod:`cvxkml._answer`.

    Returns
    -------
    Solution
        A copy of ``sol`` with ``objective``, ``violations``, ``dual_value`` (and
        ``info["max_relative_violation"]``) recomputed; ``info["reported"]`` keeps the claims,
        ``info["certificate"]`` the recomputed certificate and the scale that judged it.

    Raises
    ------
    AssertionError
        One line naming what is wrong (and both numbers for a disagreement).
    """
    try:
        return _validate(
            problem, sol, gap_rtol, viol_rtol, atol, optimum, opt_rtol, report_rtol, symmetric_tol, psd_tol
        )
    except SolverError as exc:
        raise AssertionError(str(exc)) from exc


def _recompute(problem, spec, sol):
    try:
        obj = float(spec.objective())
        viol = np.asarray(spec.violations(), dtype=float)
    except CvxkmlError as exc:
        raise SolverError(f"The returned point cannot be evaluated by the problem's formulas: {exc}") from exc
    except (ValueError, TypeError, IndexError, ArithmeticError) as exc:
        # a problem class whose check_answer does not know its dimension (Problem's default
        # checks the matrix against its own shape): its formulas meet the malformed answer
        raise SolverError(
            f"The returned matrix has shape {np.shape(sol.matrix)}, which the problem's formulas cannot "
            f"evaluate ({type(exc).__name__}: {exc}); return the problem's primal point."
        ) from exc
    return obj, viol


def _check_reported_violations(rep_viol, viol, obj, report_rtol):
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


def _validate(problem, sol, gap_rtol, viol_rtol, atol, optimum, opt_rtol, report_rtol, symmetric_tol, psd_tol):
    sol = as_solution(problem, sol)
    spec = _Spec(problem, sol, symmetric_tol=symmetric_tol, psd_tol=psd_tol)
    for check in spec.checks:
        check()
    obj, viol = _recompute(problem, spec, sol)
    check_reported(sol.objective, obj, rtol=report_rtol, what="objective")
    rep_viol = np.asarray(sol.violations, dtype=float)
    _check_reported_violations(rep_viol, viol, obj, report_rtol)
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
    recomputed = None
    if spec.dual is not None:
        try:
            recomputed = spec.dual(obj)  # None: the problem found no multipliers to evaluate
        except CvxkmlError as exc:
            raise SolverError(f"The returned duals cannot be evaluated by problem.dual_value: {exc}") from exc
    if recomputed is not None:
        dv = float(recomputed)
        if reported_dv is not None:
            check_reported(reported_dv, dv, rtol=report_rtol, what="dual value", source="the returned duals")
        if not np.isfinite(dv) and sol.converged:
            _raise_if_outside_dual_box(spec.base, sol.dual)
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
    if viol_rtol is None:
        viol_rtol = float(sol.info.get("viol_tol", gap_rtol))
    judge = spec.base
    rel_viol = float(_hook(judge, "relative_violation_of")(viol))
    cert = _hook(judge, "certificate")(obj, dv, viol, rtol=gap_rtol if np.isfinite(gap_rtol) else 1.0, atol=atol)
    tol_abs = cert["gap_tol"] if np.isfinite(gap_rtol) else np.inf
    _check_certificate(obj, dv, sol, viol, spec, cert, tol_abs, rel_viol, viol_rtol, optimum, opt_rtol, gap_rtol, atol)
    info["certificate"] = dict(cert, relative_violation=rel_viol)
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
    if getattr(judge, "_max_relative_violation", None) is not None:
        out.info["max_relative_violation"] = rel_viol
    elif "max_relative_violation" in info:
        out.info.pop("max_relative_violation")  # a claim; relative_violation() falls back to the max
    return out


def _check_certificate(obj, dv, sol, viol, spec, cert, tol_abs, rel_viol, viol_rtol, optimum, opt_rtol, gap_rtol, atol):
    """The weak-duality checks (:func:`cvxkml._answer.check_certificate`, its tolerances
    converted to the absolute ``tol_abs`` of the certificate's scale) and the rule that a
    ``converged`` claim needs a certificate within tolerance."""
    # what an infeasible point's violations buy under weak duality: Σ|λ_c|·viol_c (the
    # multipliers and violations of a spectral problem are in the same order)
    lam = None if sol.dual is None else np.asarray(sol.dual, dtype=float)
    bought = (
        float(np.abs(lam) @ viol)
        if lam is not None and lam.shape == viol.shape and np.all(np.isfinite(lam)) and spec.dual is not None
        else None
    )
    opt_tol = None
    if optimum is not None:
        unit = float(_hook(spec.base, "objective_scale")())
        opt_abs = (
            float(atol)
            if atol is not None
            else (gap_rtol if opt_rtol is None else opt_rtol) * max(abs(float(optimum)), unit)
        )
        opt_tol = opt_abs / max(1.0, abs(float(optimum)))
    check_certificate(
        obj,
        dv,
        converged=bool(sol.converged),
        gap_rtol=tol_abs / max(1.0, abs(obj)),
        optimum=optimum,
        opt_rtol=opt_tol,
        feasible=rel_viol <= gap_rtol,
        bought=bought,
    )
    if sol.converged and dv is not None and np.isfinite(tol_abs):
        gap = obj - dv
        if abs(gap) > tol_abs or rel_viol > viol_rtol:
            raise SolverError(
                f"The solver says converged=True but its recomputed certificate does not certify it: "
                f"gap {gap:.3g} (allowed {tol_abs:.3g}, {cert['scale_rule']}), relative violation "
                f"{rel_viol:.3g} (allowed {viol_rtol:.3g}); converged means certified: solve further "
                "or return converged=False."
            )


# --------------------------------------------------------------------------- distance to a unique optimum
#: points of the grid on which the curvature of f_s is evaluated (both ends included)
_GRID = 65


def _inverse_conj_grad(reg, x):
    """μ with ``conj_grad_s(μ)`` = x for each x > 0 (bisection: ``conj_grad_s``, the maximizer
    of xμ − f_s(x), is non-decreasing), or NaN where no μ attains x (f_s is linear there)."""
    grad = lambda mu: np.nan_to_num(np.asarray(reg.conj_grad_s(mu), dtype=float), nan=np.inf)
    lo, hi = np.full_like(x, -1.0), np.full_like(x, 1.0)
    with np.errstate(all="ignore"):
        for _ in range(64):  # brackets out to ±2^64
            low, high = grad(lo) > x, grad(hi) < x
            if not (low.any() or high.any()):
                break
            lo, hi = np.where(low, 2.0 * lo - 1.0, lo), np.where(high, 2.0 * hi + 1.0, hi)
        ok = (grad(lo) <= x) & (grad(hi) >= x)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            up = grad(mid) < x
            lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        mu = 0.5 * (lo + hi)
        hit = np.abs(grad(mu) - x) <= 1e-6 * np.maximum(x, 1e-300)
    return np.where(ok & hit, mu, np.nan)


def _curvature(reg, x):
    """f_s''(x) on the points x > 0: the regularizer's own ``hess_s`` when it has one, else
    1 / f*_s''(μ) at μ = (f*_s')⁻¹(x) (the second derivatives of a function and of its
    conjugate are reciprocal at matching points).  Returns (values, None) or (None, reason)."""
    hess = getattr(reg, "hess_s", None)
    if hess is not None:
        try:
            with np.errstate(all="ignore"):
                return np.asarray(hess(x), dtype=float) * np.ones_like(x), None
        except NotImplementedError:
            pass
    try:
        mu = _inverse_conj_grad(reg, x)
        with np.errstate(all="ignore"):
            h = np.asarray(reg.conj_hess_s(np.where(np.isnan(mu), 0.0, mu)), dtype=float) * np.ones_like(x)
    except NotImplementedError:
        return None, f"{getattr(reg, 'name', type(reg).__name__)} gives neither hess_s (f_s'') nor conj_hess_s"
    with np.errstate(divide="ignore"):
        # h = 0: f*_s flat, x sits on the boundary x >= 0 (infinite curvature); μ NaN: f_s linear
        return np.where(np.isnan(mu), 0.0, np.where(h > 0, 1.0 / np.where(h > 0, h, 1.0), np.inf)), None


def _modulus(reg, lower: float, upper: float):
    """(σ, None) with σ = min of f_s'' over [lower, upper], or (None, reason)."""
    if not (upper > 0 and np.isfinite(upper)):
        return None, f"the spectrum's range [{lower:.3g}, {upper:.3g}] is empty or unbounded"
    lo = max(float(lower), 1e-12 * upper)
    x = np.unique(np.concatenate([np.geomspace(lo, upper, _GRID), np.linspace(lo, upper, _GRID)]))
    curv, reason = _curvature(reg, x)
    if curv is None:
        return None, reason
    sigma = float(np.min(curv))
    if not (sigma > 0 and np.isfinite(sigma)):
        name = getattr(reg, "name", type(reg).__name__)
        return None, f"{name}: f_s is not strictly convex on the spectrum's range [{lo:.3g}, {upper:.3g}]"
    return sigma, None


def strong_convexity(problem, L: float, lower: float = 0.0) -> float | None:
    """A modulus σ > 0 of strong convexity of the objective in the whitened matrix X̂ on
    {X̂ : lower·I ⪯ X̂ ⪯ L·I}, or None when none is known (:func:`strong_convexity_reason`).

    Argument.  The objective of a problem with a whitened geometry
    (``problem.whitened_geometry()``: M = T X̂ Tᵀ) is F(X̂) = Σ f_s(λ_i(X̂)) plus linear terms
    and convex terms in other variables (slack, hinge).  If f_s'' >= σ on I = [lower, L],
    then x ↦ f_s(x) − σx²/2 is convex on I, so the spectral function
    X̂ ↦ Σ (f_s − σ(·)²/2)(λ_i(X̂)) = F(X̂) − σ‖X̂‖²_F/2 is convex on the convex set of
    symmetric matrices with spectrum in I (Davis 1957, Lewis 1996: a symmetric convex
    function of the eigenvalues is convex), i.e. F is σ-strongly convex there.  σ is the
    minimum of f_s'' over I: from the regularizer's ``hess_s`` (f_s'') when it gives one,
    else from its conjugate, f_s''(x) = 1 / f*_s''(μ) at x = f*_s'(μ) (``conj_grad_s``
    inverted by bisection, ``conj_hess_s``).  The minimum is taken on a grid of
    geometric and linear points of I, both ends included: exact when f_s'' is monotone on
    I (LogDet 1/x², von Neumann 1/x, Frobenius 1, TraceNorm 2, the LogDet barrier γ/x²,
    power and Jeffreys divergences), an estimate otherwise.  ``lower`` is clipped to
    1e-12·L, so a rank-deficient spectrum bounds nothing when f_s'' vanishes at 0.
    """
    sigma, _ = _strong_convexity(problem, L, lower)
    return sigma


def _strong_convexity(problem, L, lower=0.0):
    geometry = _geometry(problem)
    if geometry is None:
        return None, f"{type(problem).__name__} has no whitened geometry (whitened_geometry() is None)"
    return _modulus(geometry[2], max(float(lower), 0.0), float(L))


def distance_bound(problem, fast, exact, gap_fast: float, gap_exact: float) -> dict | None:
    """The distance between two answers and its bound from their certified gaps.

    For an objective σ-strongly convex in X̂ on the feasible set (:func:`strong_convexity`) and
    a feasible X̂, first-order optimality of X̂* gives f(X̂) − f* >= σ/2 ‖X̂ − X̂*‖²_F, so
    ‖X̂ − X̂*‖_F <= sqrt(2 g/σ) with g >= f(X̂) − f* any certified gap.  Through the triangle
    inequality between the two answers and M = T X̂ Tᵀ (‖T Δ Tᵀ‖_F <= ‖T‖₂² ‖Δ‖_F):

        ‖M − M_exact‖_F / ‖M_exact‖_F <= ‖T‖₂² (sqrt(2 g_fast/σ) + sqrt(2 g_exact/σ)) / ‖M_exact‖_F

    with σ the minimum of f_s'' over [a, L], a the smaller λ_min and L the larger λ_max of the
    two whitened matrices (λ_min is concave and λ_max convex, so every point of the segment
    between them, the only points the inequality uses, has its spectrum in [a, L]).  The
    default ``g_fast`` = ``rtol`` · scale is what :func:`assert_matches_reference` already
    accepts; points feasible only within ``viol`` fall outside the inequality's hypothesis,
    which the factor 2 applied by the caller covers.

    Returns
    -------
    dict
        ``distance`` and ``bound`` (relative) and ``sigma``; or, when the distance cannot be
        checked, ``distance`` None and ``reason`` (one line: why).
    """
    geometry = _geometry(problem)
    if geometry is None:
        return {"distance": None, "reason": f"{type(problem).__name__} has no whitened geometry"}
    whiten, T, _ = geometry
    Xf, Xe = whiten(fast.matrix), whiten(exact.matrix)
    if Xf is None or Xe is None:
        return {"distance": None, "reason": "a returned matrix is not in the range of the whitening T"}
    ef, ee = np.linalg.eigvalsh(Xf), np.linalg.eigvalsh(Xe)
    L, a = max(float(ef[-1]), float(ee[-1])), min(float(ef[0]), float(ee[0]))
    sigma, reason = _strong_convexity(problem, L, a)
    if sigma is None:
        return {"distance": None, "reason": reason}
    T2 = float(np.linalg.norm(T, 2)) ** 2
    ref = max(float(np.linalg.norm(exact.matrix)), 1e-300)
    bound = T2 * (np.sqrt(2 * max(gap_fast, 0.0) / sigma) + np.sqrt(2 * max(gap_exact, 0.0) / sigma)) / ref
    return {"distance": relative_distance(fast.matrix, exact.matrix), "bound": float(bound), "sigma": sigma}
