"""The built-in fast solvers of the spectral problems, registered with what each accepts (the
algorithm of each is in its ``*_solve`` function's docstring):

================  ===========================================  ====================  ===================  =====  =====
spec              problems                                     regularizer           families             hinge  gamma
================  ===========================================  ====================  ===================  =====  =====
bregman-metric    metric space (ITML, SpectralMetric)          LogDet                pairs                –      yes
bregman-kernel    kernel space (LogDetKernel, SpectralKernel)  LogDet                pairs, relative,     –      yes
                                                                                     similarity
lowrank-logdet    factored and span spaces (LowRankLogDet,     LogDet                pairs, relative,     –      yes
                  FactoredSpectralKernel, wide ITML)                                 similarity
vonneumann        every spectral problem                       VonNeumann            pairs                –      yes
pola              every spectral problem                       Frobenius             all                  –      –
trace             every spectral problem                       TraceNorm             pairs                –      –
sdp-barrier       SDPLogDetKernel, SDPLogDetMetric             LinearLogDet (γ > 0)  all                  –      –
dual-newton       every spectral problem                       any with conj_s,      all                  yes    yes
                                                               conj_grad_s,
                                                               conj_hess_s
================  ===========================================  ====================  ===================  =====  =====

dual-newton takes the slack (gamma) of a regularizer with slack_conj, slack_conj_grad,
slack_conj_hess and slack_value.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..declare import registry
from ..declare.base import SpectralProblem
from ..declare.lowrank import LowRankLogDet
from ..declare.regularizers import Frobenius, LogDet, TraceNorm, VonNeumann
from ..declare.sdp import LinearLogDet, SDPLogDetKernel, SDPLogDetMetric
from ..declare.terms import constraint_terms
from ..errors import InfeasibleError, InvalidInputError, SolverError, UnboundedError
from ..sideinfo import ConstraintAtom, LinearConstraints, PairConstraints, RelativeConstraints, SimilarityConstraints
from ..solution import NONFINITE, NONPOSITIVE_DISTANCE, NOT_CONVERGED, OK, FastResult
from ..solvers import lowrank as _lowrank
from ..solvers.bregman import bregman_kernel, bregman_metric
from ..solvers.dual_newton import REQUIRED_METHODS, SLACK_METHODS, dual_newton
from ..solvers.lowrank import PAIR, RANK2
from ..solvers.pola import pola_dual
from ..solvers.sdp_logdet import UNBOUNDED, barrier_bregman
from ..solvers.trace import trace_pair_newton, trace_uzawa
from ..solvers.vonneumann import vonneumann_pairs, vonneumann_slack_newton

__all__ = [
    "bregman_metric_solve",
    "bregman_kernel_solve",
    "lowrank_solve",
    "vonneumann_solve",
    "pola_solve",
    "trace_solve",
    "sdp_barrier_solve",
    "dual_newton_solve",
]

_PRS = (PairConstraints, RelativeConstraints, SimilarityConstraints)


def bregman_metric_solve(problem, tol, max_iter):
    """ITML (Jain et al. Algorithm 1 on W, O(d²) per projection)."""
    P = problem.pairs
    return bregman_metric(problem.M0, problem.X, P.i, P.j, P.y, P.bound, problem.gamma, tol, max_iter)


def bregman_kernel_solve(problem, tol, max_iter, request=None):
    """LogDet kernel learning: Algorithm 1 on K (O(n²) per projection) for a full-rank K0 with
    pair constraints; otherwise the factored Algorithm 2 of Kulis et al. on G0 (O(r²) per
    projection; ``info["path"]`` says which ran)."""
    n = problem.M0.shape[0]
    if problem.rank < n or not problem.pairs_only:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            sub = LowRankLogDet(problem.T, problem._families(), problem.gamma)
        res = lowrank_solve(sub, tol, max_iter, request)
        if sub.skipped_pairs.size:
            # pairs at round-off distance in the factor (seen with data scaled by 1e-6): the
            # sub-problem dropped them; they keep λ = 0 and their bound as slack here
            keep = np.setdiff1d(np.arange(len(problem.pairs)), sub.skipped_pairs)
            n_p = len(problem.pairs)
            lam = np.zeros(problem.n_constraints)
            lam[keep] = res.lam[: keep.size]
            lam[n_p:] = res.lam[keep.size :]
            res.lam = lam
            ray = res.extra.get("farkas_ray")
            if ray is not None:
                full = np.zeros(problem.n_constraints)
                full[keep] = ray[: keep.size]
                full[n_p:] = ray[keep.size :]
                res.extra.update(farkas_ray=full, farkas_candidates=np.flatnonzero(full))
            if res.xi.size:
                xi = problem.pairs.bound.copy()
                xi[keep] = res.xi[: keep.size]
                res.xi = np.concatenate([xi, res.xi[keep.size :]])
        res.matrix = problem.matrix_from_whitened(res.matrix)
        res.extra.update(G=problem.T @ res.extra.pop("B"), path="lowrank")
        return res
    P = problem.pairs
    res = bregman_kernel(problem.M0, P.i, P.j, P.y, P.bound, problem.gamma, tol, max_iter)
    res.extra["path"] = "dense"
    return res


def lowrank_solve(problem, tol, max_iter, request=None):
    """Kulis et al. Algorithm 2 (CHOLUPDATEMULT on the factor B of X̂ = B Bᵀ; rank-two
    projections for relative and similarity constraints), stopped on the certificate of the
    :class:`~cvxkml.declare.registry.SolveRequest` (``gap_tol``, ``viol_tol``) and resumed
    from the last iterate it keeps in ``request.resume`` on a retry."""
    # one row per constraint family: (kind, i, j, k, cu, cv, δ, target)
    rows, P, R, S = [], problem.pairs, problem.relative, problem.similarity
    if P is not None:
        rows.append((PAIR, P.i, P.j, P.j, [0.0, 0.0], [0.0, 0.0], P.y, P.bound))
    if R is not None:  # d(i,j) + margin <= d(i,k)
        rows.append((RANK2, R.i, R.j, R.k, [1.0, -1.0], [1.0, -1.0], 1.0, -R.margin))
    if S is not None:  # −F_jᵀX̂F_l <= −b: u = (g_j − g_l)/2, v = (g_j + g_l)/2
        rows.append((RANK2, S.j, S.l, S.l, [0.5, -0.5], [0.5, 0.5], 1.0, -S.bound))

    def column(c, per_row=lambda v, m: v):
        return np.concatenate([per_row(r[c], len(r[1])) for r in rows])

    def tiled(v, m):
        return np.tile(v, (m, 1))

    # the certificate's tolerances: the request's, else (a direct call) the defaults of solve()
    gap_tol, viol_tol = (request.gap_tol, request.viol_tol) if request is not None else (max(tol, 1e-6),) * 2
    resume = dict(request.resume) if request is not None else {}
    done = resume.pop("projections", 0)
    stats = {}
    B, lam, xi, sweeps, change, code, bad, t = _lowrank.lowrank_logdet(  # looked up at call time
        problem.F,
        column(0, lambda v, m: np.full(m, v)),
        column(1),
        column(2),
        column(3),
        column(4, tiled),
        column(5, tiled),
        column(6, lambda v, m: np.broadcast_to(np.asarray(v, dtype=float), (m,))),
        column(7),
        problem.gamma,
        tol,
        max_iter,
        gap_tol=gap_tol,
        viol_tol=viol_tol,
        stats=stats,
        **resume,
    )
    done += stats["projections"]
    if request is not None:
        request.resume = dict(B0=B, lam0=lam, xi0=xi, projections=done)
    # projections: the Bregman projections done (all attempts of this solve); with the
    # active set a sweep projects only the constraints that can move
    extra = {"B": B, "projections": done, "solver": "bregman"}
    extra.update({k: stats[k] for k in ("farkas_ray", "farkas_candidates", "farkas_test", "stopped") if k in stats})
    return FastResult(B @ B.T, lam, xi, sweeps, change, code, bad, t, extra=extra)


def vonneumann_solve(problem, tol, max_iter):
    """Kulis et al. Algorithm 3 on the r × r matrix (q0 = log prior, 0 for prior I); with the
    slack (γ) first the dual projected Newton-CG of
    :func:`cvxkml.solvers.vonneumann.vonneumann_slack_newton` (same optimum, certified relative
    gap <= ``tol``, run on to 1e-10: quadratic convergence makes that a step or two more),
    Algorithm 3 only when that does not certify."""
    reg = problem.regularizer
    P = problem.pairs
    q0 = np.zeros(problem.F.shape[1]) if reg.logp is None else reg.logp
    res = None
    if problem.gamma is not None:
        res = vonneumann_slack_newton(
            problem.F,
            q0,
            P.i,
            P.j,
            P.y,
            P.bound,
            problem.gamma,
            gap_tol=min(max(tol, 1e-14), 1e-10),
            max_iter=min(max_iter, 200),
        )
        if res.code != OK:
            res = None  # not certified: Algorithm 3 decides
    if res is None:
        res = vonneumann_pairs(problem.F, q0, P.i, P.j, P.y, P.bound, problem.gamma, tol, max_iter)
    res.matrix = problem.matrix_from_whitened(res.matrix)
    return res


def pola_solve(problem, tol, max_iter):
    """POLA's fast solver (:func:`cvxkml.solvers.pola.pola_dual`): FISTA on the dual with
    X̂(λ) = P₊(−Σλ_cÂ_c), plus a projected (semismooth) Newton polish; stops on relative
    duality gap and relative violation <= tol; every constraint family."""
    ct = constraint_terms(problem)
    res = pola_dual(ct.U, ct.w, ct.ptr, ct.t, tol=tol, max_iter=max_iter)
    mmin, lin = res.extra["farkas"]
    if res.code == NONFINITE:  # the multipliers overflowed
        raise InfeasibleError(
            f"The Frobenius (POLA) dual diverged to overflow after {res.sweeps} iterations: the "
            "constraints are most likely infeasible. Relax the bounds (a larger POLA threshold "
            "b) or remove conflicting pairs; solve_reference() confirms."
        )
    if res.code != OK and (res.extra["infeasible"] or (mmin >= -1e-7 and lin <= -1e-3)):
        raise InfeasibleError(
            f"The Frobenius (POLA) constraints look infeasible: after {res.sweeps} iterations the "
            f"dual diverges along d = λ/Σλ with Σd_cÂ_c ⪰ 0 (relative min eigenvalue {mmin:.2g}) and "
            f"Σd_c t_c < 0 (relative {lin:.2g}), a Farkas certificate up to round-off. Relax the "
            "bounds (a larger POLA threshold b) or remove conflicting pairs; solve_reference() "
            "confirms."
        )
    res.matrix = problem.matrix_from_whitened(res.matrix)
    return res


def trace_solve(problem, tol, max_iter):
    """Projected Newton-CG on the dual of Jain et al. eq. 26
    (:func:`cvxkml.solvers.trace.trace_pair_newton`, certified relative gap and violation <=
    ``tol``), else the accelerated Uzawa / singular-value-thresholding dual ascent (Alg. 2)."""
    P = problem.pairs
    tau = problem.regularizer.tau
    V = problem.F[P.i] - problem.F[P.j]
    res = trace_pair_newton(V, P.y, P.y * P.bound, tau, tol=max(tol, 1e-14), max_iter=min(max_iter, 500))
    if res.code != OK or not np.all(np.isfinite(res.matrix)):
        res = trace_uzawa(V, P.y, P.y * P.bound, tau, tol=tol, max_iter=max_iter)
    res.extra["whitened"] = res.matrix
    res.matrix = problem.matrix_from_whitened(res.matrix)
    return res


def sdp_barrier_solve(problem, tol, max_iter, request=None):
    """Bregman projections under the LogDet barrier (Jain et al. eq. 24,
    :func:`cvxkml.solvers.sdp_logdet.barrier_bregman`), warm-started from the request's
    multipliers (``solve(warm_start=…)``)."""
    reg = problem.regularizer
    ct = constraint_terms(problem)
    res = barrier_bregman(
        reg._Ch(),
        reg.gamma,
        ct.U,
        ct.w,
        ct.ptr,
        ct.t,
        tol=tol,
        max_iter=max_iter,
        lam0=None if request is None else request.warm_start,
    )
    if res.code == UNBOUNDED:
        how = (
            "a recession direction v (every constraint term with a positive weight vanishes "
            "on it and vᵀĈ0v <= 0) was found"
            if "recession_direction" in res.extra
            else f"the auxiliary bound tr X̂ <= R kept binding up to R = {res.extra['trace_bounds'][-1]:.3g}"
        )
        raise UnboundedError(
            f"The barrier problem is unbounded below: in phase I ({res.extra['phase1_sweeps']} sweeps) "
            f"{how}, so X̂ + s·vvᵀ stays feasible while tr(X̂Ĉ0) − γ log det X̂ → −∞. Add "
            "constraints that bound that direction (e.g. on the trace or the mean), or check with "
            "solve_reference()."
        )
    if res.code == NONPOSITIVE_DISTANCE:
        raise InfeasibleError(
            f"Constraint {res.bad_index} cannot hold for any positive definite matrix "
            "(e.g. a required squared distance or trace <= 0); the barrier problem (24) has no "
            "interior. Remove it, or solve the plain SDP with gamma=0 and solve_reference()."
        )
    if res.code == NONFINITE:
        raise SolverError(
            f"The barrier Bregman projections became non-finite after {res.sweeps} sweeps; the "
            "constraints may be (nearly) infeasible or badly scaled. Check with solve_reference()."
        )
    res.matrix = problem.matrix_from_whitened(res.matrix)
    if res.code == NOT_CONVERGED and not np.isfinite(problem.objective(res.matrix)):
        # stopped early (e.g. right after phase I) at a matrix outside the barrier's domain,
        # which has no finite objective to report
        raise SolverError(
            f"The barrier Bregman projections stopped after {res.sweeps} sweeps (max_iter; "
            f"phase I took {res.extra['phase1_sweeps']}) at a matrix outside the domain of "
            "log det (no finite objective yet). Raise max_iter, or warm-start with lam0 from "
            "a solve of the same constraints."
        )
    return res


def dual_newton_solve(problem, tol, max_iter, request=None):
    """The generic certified dual solver (:func:`cvxkml.solvers.dual_newton.dual_newton`) on
    the whitened problem; ``matrix`` mapped back to the problem's space.  With the
    regularizer's own slack (``gamma``) the pair constraints (first in ``violations()``
    order, one term each with w = δ, t = δ·bound) carry it: ``slack=(pairs, δ, bounds, γ)``."""
    ct = constraint_terms(problem)
    slack = None
    if getattr(problem, "gamma", None) is not None and problem.pairs is not None:
        P = problem.pairs
        slack = (np.arange(len(P)), P.y, P.bound, problem.gamma)
    res = dual_newton(
        ct.U,
        ct.w,
        ct.ptr,
        ct.t,
        problem.regularizer,
        upper=ct.upper,
        lower=ct.lower,
        quad=ct.quad,
        tol=tol,
        max_iter=max_iter,
        lam0=None if request is None else request.warm_start,
        callback=None if request is None else request.callback,
        slack=slack,
    )
    res.matrix = problem.matrix_from_whitened(res.matrix)
    return res


def _sdp_ok(problem) -> bool:
    if problem.regularizer.gamma == 0:
        raise InvalidInputError(
            "The plain SDP (gamma = 0) has no fast solver; use solve_reference() (CVXPY), or a "
            "small gamma > 0 (the barrier optimum is within gamma·r of the SDP optimum)."
        )
    return True


_INEQ = (PairConstraints, RelativeConstraints, SimilarityConstraints, LinearConstraints)
for _spec in (
    registry.SolverSpec(
        "bregman-metric",
        bregman_metric_solve,
        problems=(SpectralProblem,),
        spaces=("metric",),
        regularizers=(LogDet,),
        families=(PairConstraints,),
        slack=True,
    ),
    registry.SolverSpec(
        "bregman-kernel",
        bregman_kernel_solve,
        problems=(SpectralProblem,),
        spaces=("kernel",),
        regularizers=(LogDet,),
        families=_PRS,
        slack=True,
    ),
    registry.SolverSpec(
        "lowrank-logdet",
        lowrank_solve,
        problems=(SpectralProblem,),
        spaces=("factored", "span"),
        regularizers=(LogDet,),
        families=_PRS,
        slack=True,
    ),
    registry.SolverSpec(
        "vonneumann",
        vonneumann_solve,
        problems=(SpectralProblem,),
        regularizers=(VonNeumann,),
        families=(PairConstraints,),
        slack=True,
    ),
    registry.SolverSpec("pola", pola_solve, problems=(SpectralProblem,), regularizers=(Frobenius,), families=_INEQ),
    registry.SolverSpec(
        "trace", trace_solve, problems=(SpectralProblem,), regularizers=(TraceNorm,), families=(PairConstraints,)
    ),
    registry.SolverSpec(
        "sdp-barrier",
        sdp_barrier_solve,
        problems=(SDPLogDetKernel, SDPLogDetMetric),
        regularizers=(LinearLogDet,),
        families=_INEQ,
        accepts=_sdp_ok,
        warm_start=True,
    ),
    registry.SolverSpec(
        "dual-newton",
        dual_newton_solve,
        problems=(SpectralProblem,),
        needs=REQUIRED_METHODS,
        families=(ConstraintAtom,),
        hinge=True,
        slack=True,
        slack_needs=SLACK_METHODS,
        generic=True,
    ),
):
    registry.register(_spec)
