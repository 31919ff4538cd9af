"""Trusted ground truth and honest fast solves (see :mod:`cvxkml.testing`)."""

from __future__ import annotations

import os
import warnings
from collections import Counter

import numpy as np

from ..errors import ConvergenceWarning, CvxkmlError, InfeasibleError, InvalidInputError, SolverError
from ..solution import Solution

_DISCARDS: Counter = Counter()


class UntrustedReference(CvxkmlError):
    """No conic solve of the exact model met the trust rules (status, certificate, violations)."""


def _scale(sol, problem=None) -> float:
    """The magnitude a certificate of ``sol`` is judged against: max(|f|, |g|,
    ``problem.objective_scale()``) (:meth:`cvxkml.declare.Problem.certificate`), never a
    fixed 1, which would wave through every answer of a small objective."""
    from ._validate import _hook

    unit = 0.0 if problem is None else float(_hook(problem, "objective_scale")())
    dv = sol.dual_value
    g = abs(float(dv)) if dv is not None and np.isfinite(dv) else 0.0
    return max(abs(float(sol.objective)), g, unit)


def _scale_rule(scale: float, rtol: float, atol) -> tuple:
    """(absolute tolerance, one line naming the scale that sets it)."""
    if atol is not None:
        return float(atol), f"absolute: atol = {float(atol):.3g}"
    return rtol * scale, f"relative to max(|f|, |g|, objective_scale()) = {scale:.3g} (rtol {rtol:.3g})"


def relative_violation(problem, sol) -> float:
    """Largest violation of ``sol`` relative to max(1, |target|) when the problem knows its
    targets (spectral problems), else the absolute largest violation."""
    rel = getattr(problem, "_max_relative_violation", None)
    if rel is not None:
        return float(rel(sol.violations))
    if "max_relative_violation" in sol.info:  # the Problem contract's own measure
        return float(sol.info["max_relative_violation"])
    return sol.max_violation


def _untrusted_reason(problem, sol, cert_rtol, viol_tol, require_certificate) -> str | None:
    if sol.status != "optimal":
        return f"status {sol.status!r}"
    if not np.isfinite(sol.objective):
        return "non-finite objective"
    gap = sol.gap
    if gap is None:
        if require_certificate:
            return "no certificate (dual value)"
    elif abs(gap) > cert_rtol * _scale(sol, problem):
        return f"certificate {gap:.3g} beyond {cert_rtol:g} x {_scale(sol, problem):.3g}"
    viol = relative_violation(problem, sol)
    if viol > viol_tol:
        return f"violation {viol:.3g} > {viol_tol:g}"
    return None


def _attempts(problem):
    """(solver, eps) pairs to try: the problem's default first, then the other conic solver
    at a tighter tolerance, then the default again at a tighter tolerance."""
    default = getattr(problem, "default_solver", lambda: "CLARABEL")().upper()
    other = "SCS" if default == "CLARABEL" else "CLARABEL"
    tight = {"CLARABEL": 1e-10, "SCS": 1e-10}
    return [(default, None), (other, tight[other]), (default, tight[default])]


def trusted_reference(
    problem, cert_rtol: float = 1e-7, viol_tol: float = 1e-7, require_certificate: bool = True, **opts
):
    """The exact model's solution, used only if it can be trusted.

    Parameters
    ----------
    problem : problem
        A declared problem with ``solve_reference(solver=, eps=, accept_inaccurate=)``.
    cert_rtol : float
        Largest accepted |objective − dual value| relative to max(|objective|, |dual value|,
        ``problem.objective_scale()``).
    viol_tol : float
        Largest accepted (relative) constraint violation.
    require_certificate : bool
        Reject a solution without a dual value (default).  False for an exact model that
        carries none (a user's variant; every cvxkml family carries one): then status and
        violations decide.
    **opts
        Passed to ``solve_reference``.

    Returns
    -------
    Solution
        The first attempt that is ``optimal`` with a certificate within ``cert_rtol`` and
        violations within ``viol_tol`` (``info["reference_attempts"]`` lists the tries).

    Raises
    ------
    UntrustedReference
        When no attempt qualifies (the message lists why each was rejected).
    InfeasibleError
        When every attempt reports the problem infeasible (one solver's infeasibility
        claim against another's optimum makes the reference untrusted instead).
    """
    tried, infeasible = [], []
    for solver, eps in _attempts(problem):
        try:
            sol = problem.solve_reference(solver=solver, eps=eps, accept_inaccurate=True, **opts)
        except NotImplementedError as exc:
            reg = getattr(problem, "regularizer", None)
            what = (
                f"the {getattr(reg, 'name', type(reg).__name__)} regularizer"
                if reg is not None
                else type(problem).__name__
            )
            raise InvalidInputError(
                f"The exact model of this {type(problem).__name__} cannot be certified: {what} does not "
                f"implement a method its Lagrange dual needs ({type(exc).__name__} {exc}); implement "
                "conj_s (the conjugate of f_s over x >= 0, checked by cvxkml.testing.check_regularizer)"
                "."
            ) from exc
        except InfeasibleError as exc:  # a conic claim, checked against the others
            infeasible.append(exc)
            tried.append(f"{solver}(eps={eps}): {exc}")
            continue
        except SolverError as exc:
            tried.append(f"{solver}(eps={eps}): {exc}")
            continue
        if sol.dual_value is None and "certificate" in sol.info:
            # the exact model solved without a certificate (a regularizer without conj_s)
            raise InvalidInputError(
                f"The exact model of this {type(problem).__name__} cannot be certified: the "
                f"{problem.regularizer.name} regularizer does not implement conj_s, which its "
                "Lagrange dual needs (the conjugate of f_s over x >= 0, checked by "
                "cvxkml.testing.check_regularizer)."
            )
        reason = _untrusted_reason(problem, sol, cert_rtol, viol_tol, require_certificate)
        if reason is None:
            sol.info["reference_attempts"] = tried + [f"{solver}(eps={eps}): trusted"]
            return sol
        tried.append(f"{solver}(eps={eps}): {reason}")
    if len(infeasible) == len(tried):
        raise infeasible[0]  # every attempt says infeasible
    raise UntrustedReference("No trustworthy exact solution: " + "; ".join(tried))


def reference_or_discard(problem, feasible=None, keep_draw: bool = False, **kw):
    """:func:`trusted_reference` inside a Hypothesis test: an untrusted reference discards
    the draw (``hypothesis.assume(False)``) and is counted under the running test's name
    (:func:`discards`).

    ``keep_draw=True``: return None instead of discarding (still counted), for a test
    whose other checks of the draw do not need the reference (the exact comparison is
    then skipped, never made against an untrusted answer).

    ``feasible`` (optional): a solution already in hand, e.g. the certified fast one.  When
    every conic attempt says *infeasible* but this solution satisfies the constraints to
    ``viol_tol`` (relative, :func:`relative_violation`), the conic claim is refuted by a
    feasible point and the draw is discarded (counted) instead of failing the test with
    :class:`~cvxkml.errors.InfeasibleError` (conic solvers may call a problem infeasible
    whose only feasible matrices are very large).

    Outside a Hypothesis test there is no draw to discard: the untrusted reference raises
    :class:`UntrustedReference` (a refuted *infeasible* too, naming the refuting violation),
    unless ``keep_draw=True``."""
    from hypothesis import assume, currently_in_test_context, note

    test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
    try:
        return trusted_reference(problem, **kw)
    except UntrustedReference as exc:
        untrusted = exc
    except InfeasibleError as exc:
        violation = None if feasible is None else relative_violation(problem, feasible)
        if violation is None or not violation <= kw.get("viol_tol", 1e-7):
            raise
        untrusted = UntrustedReference(
            f"Every conic solve said infeasible, refuted by a point at relative violation {violation:.2g}: {exc}"
        )
    _DISCARDS[test] += 1
    in_test = currently_in_test_context()
    if in_test:
        note(str(untrusted))
    if keep_draw:
        return None
    if not in_test:
        raise untrusted
    assume(False)


def discards() -> dict:
    """Draws discarded by :func:`reference_or_discard` so far, per test."""
    return dict(_DISCARDS)


def solve_fast_honestly(problem, gap_rtol: float | None = None, atol: float | None = None, **kw):
    """``problem.solve(**kw)``, asserting the honesty rule: it warns (ConvergenceWarning)
    exactly when it returns ``converged=False``; and the answer survives
    :func:`~cvxkml.testing.validate_answer` at ``gap_rtol`` (default: the solve's own
    ``info["gap_tol"]``, else 1e-6) or ``atol``.  Returns the solver's own Solution."""
    from ._validate import validate_answer

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        sol = problem.solve(**kw)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in rec)
    assert warned == (not sol.converged), (
        f"a non-converged solve must warn, a converged one must not (converged={sol.converged}, warned={warned})"
    )
    validate_answer(
        problem, sol, gap_rtol=gap_rtol if gap_rtol is not None else sol.info.get("gap_tol", 1e-6), atol=atol
    )
    return sol


def _first_order_allowance(multipliers, violations) -> float:
    """Σ_c |λ*_c| · v_c: how far below the optimum a point with violations v may lie, to first
    order, given the optimum's multipliers λ* (0 when they do not pair one to one)."""
    if multipliers is None or violations is None:
        return 0.0
    lam = np.asarray(multipliers, dtype=float).ravel()
    v = np.asarray(violations, dtype=float).ravel()
    if lam.shape != v.shape or not (np.all(np.isfinite(lam)) and np.all(np.isfinite(v))):
        return 0.0
    return float(np.abs(lam) @ np.maximum(v, 0.0))


def assert_matches_reference(
    problem,
    fast,
    exact,
    rtol: float = 1e-6,
    viol: float = 1e-6,
    distance_rtol: float | None = None,
    atol: float | None = None,
) -> dict:
    """Assert that a certified fast answer agrees with a trusted reference, recomputing the
    fast side from what it returned (never its reported numbers).

    Every objective comparison is judged against ``tol`` = ``rtol`` · S with
    S = max(|f|, |g| of both answers, ``problem.objective_scale()``) — the answers' own
    magnitude, so an optimum of 4e-4 is held to 4e-10 at rtol = 1e-6 — or against ``atol``
    when given (an absolute tolerance, for an optimum at 0).

    * ``fast`` (a :class:`~cvxkml.solution.Solution`, a bare matrix or ``(matrix, duals)``)
      passes :func:`~cvxkml.testing.validate_answer` at ``rtol``, with the reference objective
      as the trusted optimum;
    * its matrix has the reference's shape (the problem's own, also where the problem class's
      ``check_answer`` does not know it);
    * it says ``converged=True``;
    * it is feasible: recomputed relative violation <= ``viol``;
    * weak duality across the two: each lower bound (dual value) is at most the other's
      objective + ``tol``;
    * the fast objective is within ``tol`` of the best lower bound, of its own lower bound
      when it has one, and of the reference objective — below them by at most ``tol`` plus
      λ*ᵀv, v the answer's violations (within ``viol``) and λ* the reference's multipliers:
      the first-order room a point feasible to round-off has under the optimum;
    * where the objective is strongly convex on the feasible set (unique optimum,
      :func:`~cvxkml.testing.strong_convexity`): ‖M − M*‖_F / ‖M*‖_F <= ``distance_rtol``,
      default twice :func:`~cvxkml.testing.distance_bound` at g_fast = ``tol`` and the
      reference's own certified gap.  Where it cannot be checked, the report says why
      (``distance_note``).

    Returns
    -------
    dict with ``rel_diff`` (|f_fast − f_exact| / S), ``fast_gap`` (relative, recomputed),
    ``scale`` and ``scale_rule`` (which scale judged the comparisons), ``distance`` /
    ``distance_bound`` (None where the optimum is not known to be unique) and
    ``distance_note`` (None, or one line: why the distance was not checked).
    """
    from ._validate import distance_bound, validate_answer

    bare = not isinstance(fast, Solution)  # a bare answer claims nothing: no converged flag
    fast = validate_answer(
        problem, fast, gap_rtol=rtol, viol_rtol=viol, atol=atol, optimum=float(exact.objective), opt_rtol=rtol
    )
    # the problem's own shape, whatever its class's check_answer knows of it (Problem's default
    # checks a matrix against its own shape, and a formula may broadcast a wrong one)
    shape, want = np.shape(fast.matrix), np.shape(exact.matrix)
    assert shape == want, (
        f"The solver's matrix has shape {shape}, but the trusted reference (the problem's exact answer) has {want}."
    )
    scale = max(_scale(fast, problem), _scale(exact, problem))
    tol, rule = _scale_rule(scale, rtol, atol)
    assert bare or fast.converged, (
        f"the fast solution says converged=False (status {fast.status!r}): it is not a certified answer"
    )
    rv = relative_violation(problem, fast)
    assert rv <= viol, f"fast solution infeasible: recomputed relative violation {rv:.3g} > {viol:g}: {fast}"
    # a point that violates its constraints by v may sit below the optimum by up to λ*ᵀv (the
    # Lagrangian with the reference's multipliers λ*: f(M) >= g(λ*) − λ*ᵀ v(M)); within viol this
    # first-order allowance is what a feasible-to-round-off answer is owed, not a pass for errors
    below = _first_order_allowance(exact.dual, fast.violations)
    lower = [s.dual_value for s in (fast, exact) if s.dual_value is not None and np.isfinite(s.dual_value)]
    for lb in lower:
        assert lb <= fast.objective + tol + below and lb <= exact.objective + tol, (
            f"a lower bound exceeds an objective (weak duality, {rule}): fast={fast}, exact={exact}"
        )
    if lower:
        assert fast.objective - max(lower) <= tol, (
            f"fast objective above the best lower bound by more than {tol:.3g} ({rule}): fast={fast}, exact={exact}"
        )
    if fast.dual_value is not None:
        assert fast.objective - fast.dual_value <= tol, (
            f"the fast solution's own certificate does not certify it: objective {fast.objective:.12g} − "
            f"its recomputed dual value {fast.dual_value:.12g} > {tol:.3g} ({rule})"
        )
    assert -(tol + below) <= fast.objective - exact.objective <= tol, (
        f"fast objective {fast.objective:.12g} (recomputed) differs from the reference {exact.objective:.12g} "
        f"by more than {tol:.3g} ({rule}"
        + (f"; {below:.3g} more allowed below it for the answer's violations, λ*ᵀv" if below else "")
        + ")"
    )
    out = {
        "rel_diff": abs(fast.objective - exact.objective) / scale if scale > 0 else 0.0,
        "fast_gap": None if fast.gap is None or scale == 0 else fast.gap / scale,
        "scale": scale,
        "scale_rule": rule,
        "distance": None,
        "distance_bound": None,
        "distance_note": None,
    }
    gap_e = exact.gap if exact.gap is not None else np.inf
    if not np.isfinite(gap_e):
        out["distance_note"] = "distance not checked: the reference carries no certified gap"
        return out
    dist = distance_bound(problem, fast, exact, tol, max(gap_e, 0.0))
    if dist["distance"] is None:
        out["distance_note"] = f"distance not checked: {dist['reason']}"
        return out
    limit = 2.0 * dist["bound"] if distance_rtol is None else distance_rtol
    out["distance"], out["distance_bound"] = dist["distance"], limit
    assert dist["distance"] <= limit, (
        f"the fast matrix is {dist['distance']:.3g} away from the unique optimum (relative Frobenius), "
        f"beyond {limit:.3g} (derived from rtol {rtol:g}: strong convexity σ = {dist['sigma']:.3g})"
    )
    return out
