"""The fast solvers of the MKL weight steps (Wang et al. 2011), registered as
:class:`~cvxkml.declare.registry.SolverSpec`: the orchestration that drives a declared step
into its algorithms, so that ``RankOneWeightStep.solve()`` and ``MuWeightStep.solve()`` are
the one certified-solve pipeline (:meth:`~cvxkml.declare.problem.Problem.run_pipeline`).

* ``mkl-convex-iteration`` (:class:`~cvxkml.declare.mkl.RankOneWeightStep`, eq. 15–17): the
  convex iteration over the w grid, each (15) solved by the step's ``method`` — the
  working-set interior-point method of :mod:`cvxkml.solvers.mkl` (array in, array out), or
  the step's CVXPY model of (15) whole, by a working set of hinges, or by Kelley's cutting
  planes.  Its :class:`~cvxkml.solution.FastResult` holds the last P* and, in ``extra``,
  the relaxation's Lagrange bound (the certificate the step checks), the history and the
  solver statistics.  The same spec answers the step's ``solve_relaxation`` and
  ``convex_iteration`` (``request.options["task"]``).
* ``mkl-mu-conic`` (:class:`~cvxkml.declare.mkl.MuWeightStep`, eq. 6): the step's conic
  model (no fast algorithm of its own), its answer and the solver's dual objective.

The algorithms' state that outlives one call (compiled models, cuts, the working set, the
interior point's start) is cached on the step, as a re-solve of the same step reuses it.
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np

from ..declare import registry
from ..declare.mkl import MuWeightStep, RankOneWeightStep, _feasible_set, _set_bound, mu_from_P
from ..errors import SolverError
from ..solution import NONFINITE, NOT_CONVERGED, OK, FastResult
from ..solvers.mkl import lagrange_bound, smat, start_point, weight_step_ipm

__all__ = ["relax", "iterate", "rank_one_solve", "mu_step_solve", "SPECS"]


# --------------------------------------------------------------------------- (15), one solve
def _solve_model(step, w, W, what, certify):
    """Solve the step's compiled model of (15) (``step._model``: parameters ``s`` =
    1 / max(1, w) and ``wW`` = s·w·sym(W)); returns P (symmetrized), the raw solve, s and
    sym(W)."""
    prob, _ = step._model
    s = 1.0 / max(1.0, w)
    Ws = 0.5 * (W + W.T)
    prob.param_dict["s"].value = s
    prob.param_dict["wW"].value = s * w * Ws
    raw = step._solve(prob, what, want_bound=certify and not step.h.has_minorant)
    P = np.asarray(prob.var_dict["P"].value, dtype=float)
    return 0.5 * (P + P.T), raw, s, Ws


def _solve_full(step, w, W, certify=False):
    if step._model is None:
        step._model = step._full_model()
    P, raw, s, Ws = _solve_model(step, w, W, "MKL_P weight step (15)", certify)
    cert = step._certificate(*step._model, s, w * Ws, raw) if certify else None
    return P, step.h.value(P) + w * float(np.sum(W * P)), cert


def _solve_cutting_plane(step, w, W, certify=False):
    """Kelley's cutting planes on h's piecewise part; returns the best P found, its
    value, the master bound, whether the gap closed, and (with ``certify``) the Lagrange
    bound of the last master: with the cut multipliers β normalized to θ = β / Σβ,
    h(P') >= ⟨C, P'⟩ + Σ θ_k (a_k + ⟨G_k, P'⟩) for every P', bounded over the feasible
    set by :func:`_set_bound`."""
    m = step.m
    if step._cuts is None:
        step._cuts = list(step.h.initial_cuts())
        step._C = step.h.linear_part()
    s = 1.0 / max(1.0, w)
    C = s * (step._C + w * W)
    best_val, best_P, lower, cert = np.inf, None, -np.inf, None
    for _ in range(step.max_cuts):
        a = np.array([c[0] for c in step._cuts])
        G = np.stack([c[1].ravel() for c in step._cuts])
        P = cp.Variable((m, m), PSD=True)
        xi = cp.Variable()
        prob = cp.Problem(
            cp.Minimize(cp.sum(cp.multiply(C, P)) + s * xi), _feasible_set(P) + [a + G @ cp.vec(P, order="C") <= xi]
        )
        step._solve(prob, "cutting-plane master of (15)")
        Pk = np.asarray(P.value, dtype=float)
        Pk = 0.5 * (Pk + Pk.T)
        lower = max(lower, float(prob.value) / s)
        if certify:
            beta = prob.constraints[2].dual_value
            beta = None if beta is None else np.maximum(np.ravel(np.asarray(beta, dtype=float)), 0.0)
            if beta is not None and beta.sum() > 0:
                theta = beta / beta.sum()
                Wsym = 0.5 * (W + W.T)
                Gm = step._C + w * Wsym + np.tensordot(theta, G.reshape(-1, m, m), axes=1)
                b = _set_bound(float(theta @ a), Gm, prob.constraints[:2], s)
                if np.isfinite(b) and (cert is None or b > cert[0]):
                    cert = (b, "Lagrange dual of the cutting-plane master of (15) (cut multipliers)")
        val = step.h.value(Pk) + w * float(np.sum(W * Pk))
        if val < best_val:
            best_val, best_P = val, Pk
        if best_val - lower <= step.tol * max(1.0, abs(best_val)):
            return best_P, best_val, lower, True, cert
        step._cuts.append(step.h.cut(Pk))
    return best_P, best_val, lower, False, cert


def _solve_active_set(step, w, W, certify=False):
    """Constraint generation on h's hinge terms: solve (15) with the hinges of a working
    set S only (h_S <= h everywhere), then add every hinge that is active at the
    solution and outside S (plus the near-active ones, argument > −``active_buffer``);
    when none is left out, h_S = h at the solution, which is then optimal for (15)
    exactly (h_S(P') + w⟨W, P'⟩ <= h(P') + w⟨W, P'⟩ for all P').  The working set is
    kept across solves, and its compiled model is reused while it does not change.
    A Lagrange bound of the last working-set model bounds (15) too (h_S <= h)."""
    for _ in range(100):
        if step._active is None:
            args = step.h.hinge_arguments(np.full((step.m, step.m), 1.0 / step.m**2))
            step._active = np.flatnonzero(args > -step.active_buffer)
            step._model = None
        if step._model is None:
            step._model = step._full_model(step._active)
        P, raw, s, Ws = _solve_model(step, w, W, "MKL_P weight step (15), working set", certify)
        args = step.h.hinge_arguments(P)
        inside = np.zeros(args.size, dtype=bool)
        inside[step._active] = True
        if not np.any((args > 1e-9) & ~inside):
            cert = step._certificate(*step._model, s, w * Ws, raw, step._active) if certify else None
            return P, step.h.value(P) + w * float(np.sum(W * P)), cert
        step._active = np.flatnonzero(inside | (args > -step.active_buffer))
        step._model = None
    raise SolverError("The working-set solve of (15) did not settle in 100 rounds; use method='cutting-plane'.")


def _solve_ipm(step, w, W, certify=False):
    """(15) by the working-set interior-point method (:func:`~cvxkml.solvers.mkl.weight_step_ipm`), its
    hinges classified at ``step._ipm_start`` (the previous P* of the convex iteration;
    None: a cold start).  The certificate is the Lagrange bound at the solver's
    multipliers of every hinge (α ∈ [0, γ]), of Σ P = 1 (ν) and of P >= 0 (N):
    Σ_t α_t b_t + ν + min(0, λ_min(C + w·W + Σ_t α_t D_t − ν 11ᵀ − N)), valid for any
    such multipliers (:func:`lagrange_bound`)."""
    terms = step.h.hinge_terms()
    Ws = 0.5 * (W + W.T)
    res = weight_step_ipm(terms, w * Ws if w * np.abs(Ws).max(initial=0.0) > 0 else None, P0=step._ipm_start)
    step.n_solves += 1
    step._ipm_stats.append((res.time, res.extra["rounds"], res.sweeps, res.extra["kept"][-1]))
    if res.code == NONFINITE or not np.all(np.isfinite(res.matrix)):
        raise SolverError("The interior-point solve of (15) produced non-finite iterates.")
    P = 0.5 * (res.matrix + res.matrix.T)
    step._ipm_start = P
    val = step.h.value(P) + w * float(np.sum(W * P))
    cert = None
    if certify:
        G = smat(terms.Cs + terms.adjoint(res.lam), step.m) + w * Ws
        bound = lagrange_bound(float(res.lam @ terms.b), G, res.extra["nu"], res.extra["N"])
        cert = (bound, "Lagrange dual of (15) (interior-point multipliers of every hinge and of the feasible set)")
    return P, val, cert


def relax(step, w, W, certify=False):
    """(15) for (w, W) by the chosen method: (P*, value, certificate or None)."""
    if step.method == "interior-point":
        return _solve_ipm(step, float(w), W, certify)
    if step.method == "full":
        return _solve_full(step, float(w), W, certify)
    if step.method == "active-set":
        return _solve_active_set(step, float(w), W, certify)
    P, val, _, settled, cert = _solve_cutting_plane(step, float(w), W, certify)
    if not settled:
        step._unsettled += 1
    if certify and cert is None:
        cert = (None, "the cutting-plane master returned no cut multipliers")
    return P, val, cert


def iterate(step, w, W0, max_iter, report=None):
    """The convex iteration (15)–(16) of ``step`` for one w from W0 (None: 0) with
    ``max_iter`` iterations and ``report(w, it, P, tail, reached)`` after each solve (a
    truthy return stops), until (17) holds or (15)'s value stops decreasing; returns (P,
    reached, history, W, stopped)."""
    W = np.zeros((step.m, step.m)) if W0 is None else np.asarray(W0, dtype=float)
    hist = []
    prev = np.inf
    P = None
    for it in range(max_iter):
        try:
            if W0 is None and it == 0 and step._relaxation is not None:
                P, val = step._relaxation[:2]  # (15) with W = 0 does not depend on w
            else:
                P, val, cert = relax(step, w, W, certify=W0 is None and it == 0)
                if W0 is None and it == 0:
                    step._relaxation = (P, val, cert)
        except SolverError:
            hist.append((float(w), it, np.nan, np.nan, np.nan))
            return P, False, hist, W, False  # numerical failure at this w: try the next w
        step._ipm_start = P  # the next solve's hinges are classified here
        tail, rel = step._tail(P)
        hist.append((float(w), it, step.h.value(P), float(np.sum(W * P)), tail))
        reached = rel <= step.rank_tol
        if report is not None and report(w, it, P, rel, reached) and not reached:
            return P, False, hist, W, True
        if reached:
            return P, True, hist, W, False
        if it > 0 and val >= prev - 1e-10 * max(1.0, abs(prev)):
            return P, False, hist, W, False  # stalled at a point that is not rank one
        prev = val
        W = RankOneWeightStep.direction(P)
    return P, False, hist, W, False


# --------------------------------------------------------------------------- the P step
def _interior_point_stats(stats) -> dict | None:
    if not stats:
        return None
    st = np.array([(t, r, it, k) for t, r, it, k in stats], dtype=float)
    return {
        "solves": len(st),
        "seconds": float(st[:, 0].sum()),
        "max_seconds": float(st[:, 0].max()),
        "rounds": int(st[:, 1].sum()),
        "iterations": int(st[:, 2].sum()),
        "max_kept": int(st[:, 3].max()),
    }


def _relaxation_task(step, options):
    """``solve_relaxation``: (15) for one (W, w)."""
    t0 = time.perf_counter()
    before = step._unsettled
    P, val, _ = relax(step, float(options["w"]), options["W"])
    extra = {"value": val, "unsettled": step._unsettled - before}
    return FastResult(P, np.empty(0), np.empty(0), 1, float("nan"), OK, -1, time.perf_counter() - t0, extra)


def _convex_iteration_task(step, options):
    """``convex_iteration``: (15)–(16) for one w."""
    t0 = time.perf_counter()
    P, reached, hist, W, _ = iterate(step, options["w"], options["W0"], step.max_convex_iter)
    extra = {"rank_one": reached, "history": hist, "W": W}
    code = OK if reached else NOT_CONVERGED
    return FastResult(P, np.empty(0), np.empty(0), len(hist), float("nan"), code, -1, time.perf_counter() - t0, extra)


def rank_one_solve(step, tol, max_iter, request=None) -> FastResult:
    """The MKL_P weight step (Wang et al. eq. 15–17): the convex iteration for w =
    w_grid[0], w_grid[1], … until one reaches the rank-one point (17), then the relaxation
    (15) with W = 0 for the certificate when it was not solved first (a warm start).

    ``max_iter`` caps the iterations per w; ``request.warm_start`` is the start direction W
    (validated by the step); ``request.callback`` gets a dict after every solve of (15).
    Returns the last P* (``matrix``) and, in ``extra``, ``lower_bound`` and
    ``certificate_how`` (the relaxation's Lagrange bound), ``relaxed``, ``relaxation_P``,
    ``w``, ``W``, ``history``, ``n_solves``, ``method``, ``stopped``, ``unsettled`` and
    ``interior_point`` (statistics), for the step's :meth:`solution_from_fast`."""
    options = dict(request.options) if request is not None else {}
    task = options.get("task", "solve")
    if task == "relaxation":
        return _relaxation_task(step, options)
    if task == "convex_iteration":
        return _convex_iteration_task(step, options)
    t0 = time.perf_counter()
    callback = None if request is None else request.callback
    W0 = None if request is None or request.warm_start is None else np.asarray(request.warm_start, dtype=float)
    step.n_solves = 0
    step._relaxation = None
    step._unsettled = 0
    step._ipm_stats = []
    step._ipm_start = None if W0 is None else start_point(W0)
    history = []
    reached = stopped = False
    w_used = last_P = W_last = None
    count = [0]

    def report(w, it, P, rank_gap, reached_now):
        if callback is None:
            return False
        count[0] += 1
        mu_now = mu_from_P(P)
        f = step.objective(np.outer(mu_now, mu_now))
        bound = step._relaxation[2][0] if step._relaxation is not None else None
        return callback(
            {
                "iteration": count[0],
                "w": float(w),
                "convex_iteration": it,
                "objective": f,
                "relaxed_objective": step.h.value(P),
                "rank_gap": rank_gap,
                "rank_one": bool(reached_now),
                "lower_bound": bound,
                "gap": None if bound is None else (f - bound) / max(1.0, abs(f)),
            }
        )

    for w in step.w_grid:
        P, reached, hist, W, stopped = iterate(step, w, W0, max_iter, report)
        history += hist
        if P is not None:
            last_P, w_used, W_last = P, w, W
        if reached or stopped:
            break
    if last_P is None:
        raise SolverError(
            "Every solve of the weight step (15) failed; rescale the kernels "
            "(normalize them by their mean diagonal) or try solver='SCS'."
        )
    # the certificate: the relaxation (15) with W = 0 (solved first unless warm-started)
    if step._relaxation is None:
        try:
            Pr, vr, cert = relax(step, 1.0, np.zeros((step.m, step.m)), certify=True)
            step._relaxation = (Pr, vr, cert)
        except SolverError as exc:
            step._relaxation = (None, None, (None, f"the relaxation (15) with W = 0 failed: {exc}"))
    P_rel, relaxed, (bound, how) = step._relaxation
    extra = {
        "solver": f"convex-iteration-{step.method}",
        "lower_bound": bound,
        "certificate_how": how,
        "relaxed": relaxed,
        "relaxation_P": P_rel,
        "w": w_used,
        "W": W_last,
        "history": history,
        "n_solves": step.n_solves,
        "method": step.method,
        "stopped": bool(stopped),
        "unsettled": step._unsettled,
        "interior_point": _interior_point_stats(step._ipm_stats),
    }
    code = OK if reached else NOT_CONVERGED
    return FastResult(
        last_P, np.empty(0), np.empty(0), len(history), float("nan"), code, -1, time.perf_counter() - t0, extra
    )


# --------------------------------------------------------------------------- the μ step
def mu_step_solve(step, tol, max_iter, request=None) -> FastResult:
    """The MKL_μ weight step (eq. 6): the step's conic model (``solve_reference``, the
    constructor's solver, ``optimal_inaccurate`` accepted and judged by the certificate),
    ``request.options["max_iter"]`` the conic solver's iteration cap (None: its own).  The
    callback is called once with the certificate of the answer; ``extra["lower_bound"]``
    is the solver's dual objective, ``extra["info"]`` what the conic solve reported."""
    options = {} if request is None else dict(request.options)
    cap = options.get("max_iter")
    opts = {}
    if cap is not None:
        opts = {"scs_max_iters": cap} if step.solver == "SCS" else {"max_iter": cap}
    try:
        sol = step.solve_reference(accept_inaccurate=True, **opts)
    except SolverError as exc:
        if cap is None or "user_limit" not in str(exc):
            raise
        raise SolverError(
            f"The conic solve of the MKL_μ step stopped at max_iter={cap} without an answer ({exc}); raise max_iter."
        ) from exc
    stopped = False
    callback = None if request is None else request.callback
    if callback is not None:
        scale = max(1.0, abs(sol.objective))
        gap = sol.gap
        stopped = bool(
            callback(
                {
                    "iteration": sol.n_iter,
                    "objective": sol.objective,
                    "lower_bound": sol.dual_value,
                    "gap": None if gap is None else gap / scale,
                    "violation": sol.info["max_relative_violation"],
                }
            )
        )
    extra = {
        "solver": sol.solver,
        "lower_bound": sol.dual_value,
        "info": dict(sol.info),
        "stopped": stopped,
    }
    return FastResult(sol.matrix, np.empty(0), np.empty(0), sol.n_iter, float("nan"), OK, -1, sol.time, extra)


SPECS = (
    registry.SolverSpec("mkl-convex-iteration", rank_one_solve, problems=(RankOneWeightStep,), warm_start=True),
    registry.SolverSpec("mkl-mu-conic", mu_step_solve, problems=(MuWeightStep,)),
)

for _spec in SPECS:
    registry.register(_spec)
