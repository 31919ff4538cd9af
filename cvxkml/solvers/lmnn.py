"""Fast LMNN solver: a smoothed quasi-Newton phase, then primal–dual projected
(sub)gradient with Weinberger & Saul's active-set bookkeeping, both stopped on the same
certified duality gap (Wang et al. 2011, eq. 18; Weinberger & Saul 2009, §5–6).

Smoothed phase (default first; :func:`_smooth_stages`).  The hinge [z]_+ of eq. 18 is
replaced by h_μ(z) = 0, (z + μ)²/(4μ), z on z <= −μ, |z| < μ, z >= μ (so
[z]_+ <= h_μ(z) <= [z]_+ + μ/4), and F_μ(L Lᵀ) is minimized over a factor L (r × r) by
L-BFGS for the widths μ = 1, 0.3, …, 1e-3, each from the previous L: no eigendecomposition
and no step size.  At a minimizer of the convex F_μ over X̂ ⪰ 0 the multipliers
α_t = γ h_μ'(z_t) ∈ [0, γ] satisfy G(α) = ∇F_μ(X̂) ⪰ 0, i.e. they are dual feasible for
eq. 18, and F(X̂) − Σ α_t = O(μ) per triplet near its kink.  After every width the
certificate of the *unsmoothed* problem is evaluated (F at X̂, the Lagrange bound
g(α) of :func:`cvxkml.formulas.lmnn.lmnn_dual_value`), and from μ <= 0.01 the
restricted-dual barrier recovery below is tried at the best X̂; the solve stops there
once certified, else the PDHG continues from the best X̂ and the last α.  The
factorization makes the phase non-convex in L, but nothing in it is trusted beyond
the certificate.

Coordinates.  Both phases run in the features U W of
:func:`cvxkml.formulas.lmnn.pull_whitening` (W = I unless the target pull G(0) has
eigenvalues below 1e-4 of its largest that are not null: a nearly singular kernel), an exact
change of coordinates X̂ = W X̃ Wᵀ that caps the conditioning of the pull term; the result is
mapped back and kept as its factor W L̃ too (X̃ = L̃ L̃ᵀ), through which F is evaluated.  On
such kernels the optimal X̂ is huge along G(0)'s near-null directions, and the stalled fits of
the Wang et al. reproduction were a misaligned top eigenvector there.

PDHG phase.

The problem is solved in the orthonormal coordinates of the features (see
:func:`cvxkml.formulas.lmnn.orthonormal_factor`): Z = U S Vᵀ, d(i, j) = u_pᵀ X̂ u_p with
u_p = U[i] − U[j], X̂ ⪰ 0 (r × r).  Written as a saddle problem over the hinge
multipliers α_t ∈ [0, γ],

    min_{X̂ ⪰ 0} max_{α ∈ [0, γ]^T}  Σ_t α_t + Σ_p w_p(α) u_pᵀ X̂ u_p ,

one iteration is (Chambolle & Pock 2011)

    X̂ ← Π_PSD(X̂ − τ G(α)),          G(α) = Σ_p w_p(α) u_p u_pᵀ = Uᵀ Ω(α) U,
    α_t ← clip(α_t + σ_t (1 + d̄(i, j) − d̄(i, l)), 0, γ),   d̄ = 2 d(X̂_new) − d(X̂_old).

The X̂-step is Weinberger & Saul's projected gradient step, whose sub-gradient weights
α_t ∈ {0, γ} (violated or not) are replaced by multipliers that converge, so the
iterates reach the optimum instead of oscillating around it.  Π_PSD clips the negative
eigenvalues of an eigendecomposition.  Numba kernels accumulate the pair weights from the
working triplets and Ω(α)U over the pairs (the gradient accumulation), and the pair
distances from the factor.

Active set (Weinberger & Saul §6): between full passes only the *working* triplets —
active (α_t > 0) or near-active (1 + d(i, j) − d(i, l) > −``buffer``) — are updated; a
triplet outside it keeps α_t = 0, exactly what its update would give while its margin
holds.  Every ``check_every`` iterations all pair distances are recomputed, the working
set is rebuilt, and the true objective F (:func:`cvxkml.formulas.lmnn.lmnn_objective`)
and the Lagrange dual bound g (:func:`cvxkml.formulas.lmnn.lmnn_dual_value`) are
evaluated on *all* triplets.

Stopping rule: F(best X̂) − max g <= tol · max(1, |F|) — a certified relative
optimality gap (weak duality), so ``converged`` is never claimed without proof.  The
stall rule (``stall_iter``) ends a PDHG phase whose certified gap has not shrunk by
0.1 % in that many iterations (``status="stalled"``, not converged): on kernel LMNN with
nearly singular kernels F and g mostly stopped moving when the smoothed phase ended.  At
the same checks the method restarts from the better of the current and the averaged
iterate, and re-balances the primal weight ω (τ = η/ω, σ = ηω·s_t) from the distance
travelled (Applegate et al. 2021, PDLP).  σ_t is diagonally preconditioned by
s_t = 1/‖u_ij u_ijᵀ − u_il u_ilᵀ‖_F.

Dual recovery (the certificate).  The primal iterate settles long before the PDHG
multipliers do when X̂* is rank deficient: G(α) must then be PSD on its null space,
which the PDHG's multipliers approach slowly.  Once F stops moving, :func:`_barrier_dual`
solves the dual restricted to the kink triplets of the best X̂ by a small interior-point method (strictly feasible, so
certified); :func:`_polish_dual` (least squares on G(α)X̂ = 0) remains as a fallback,
run at a check only when the barrier recovery could not run there.  Before both, the best
multipliers so far are made feasible at least cost (:func:`_repair_dual`: lower the α_t that
raise λ_min(G(α)) most per unit of bound, instead of scaling all of α).

Primal recovery (PDHG phase).  When a recovery leaves the gap open, eq. 18 is solved on the
face its multipliers point to (:func:`_face_primal`: range of the best X̂ plus the near-null
eigenvectors of G(α), a few dimensions), where the r-dimensional iteration crawled: on
high-degree polynomial kernels the optimum has rank 2–3 with hundreds of triplets on their
margin.  A face point is a feasible point, evaluated and certified on the whole problem.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .._config import blas_limit
from ..formulas.lmnn import (
    CONTRADICTED,
    STALL_ITER,
    LMNNTriplets,
    from_pull_coordinates,
    lmnn_dual_value,
    lmnn_objective,
    ordered_pair_distances,
    pairs_reach_null,
    psd_factor,
    pull_factor,
    pull_null_space,
    pull_whitening,
    to_pull_coordinates,
)
from ..solution import CALLBACK_STOP
from ._lmnn import recovery as _recovery
from ._lmnn.active_set import lmnn_active_set
from ._lmnn.kernels import _psd_project
from ._lmnn.ops import _Ops, pair_distances
from ._lmnn.pdhg import _face_primal as _face_primal
from ._lmnn.pdhg import _lmnn_pdhg, lmnn_result
from ._lmnn.recovery import _POLISH_DELTAS as _POLISH_DELTAS
from ._lmnn.recovery import _barrier_dual as _barrier_dual
from ._lmnn.recovery import _kink_gram_system as _kink_gram_system
from ._lmnn.recovery import _repair_dual as _repair_dual
from ._lmnn.scan import impostor_scan
from ._lmnn.smooth import _SMOOTH_MUS as _SMOOTH_MUS
from ._lmnn.smooth import _smooth_stages as _smooth_stages
from ._lmnn.smooth import _smooth_value_grad as _smooth_value_grad
from ._lmnn_exact import null_scale as _null_scale
from .result import OK, FastResult, Status

__all__ = ["STALL_ITER", "impostor_scan", "lmnn_active_set", "lmnn_pdhg", "lmnn_result", "pair_distances"]

#: entries of the dense least-squares matrix of :func:`_polish_dual` (beyond: the K × K system
#: of :func:`_kink_gram_system`); read at call time, so setting it here picks either path
_POLISH_DENSE_MAX = _recovery._POLISH_DENSE_MAX


def _polish_dual(U, trip: LMNNTriplets, gamma, X, p, delta):
    """The least-squares dual recovery (:func:`cvxkml.solvers._lmnn.recovery._polish_dual`)
    with this module's ``_POLISH_DENSE_MAX``."""
    return _recovery._polish_dual(U, trip, gamma, X, p, delta, dense_max=_POLISH_DENSE_MAX)


def lmnn_pdhg(
    U,
    trip: LMNNTriplets,
    gamma: float,
    X0=None,
    alpha0=None,
    tol: float = 1e-6,
    max_iter: int = 20_000,
    check_every: int = 200,
    buffer: float = 1.0,
    polish: bool = True,
    seed: int = 0,
    blas_threads: int | str | None = "config",
    callback=None,
    smooth: bool = True,
    stall_iter: int | None = STALL_ITER,
    exact_finish: bool = True,
) -> FastResult:
    """Solve eq. 18 in the orthonormal coordinates U (n × r) of the features: the smoothed
    quasi-Newton phase, then PDHG (see the module docstring), in the coordinates of
    :func:`cvxkml.formulas.lmnn.pull_whitening`, the answer mapped back.

    Parameters
    ----------
    U : ndarray (n, r)
        Orthonormal (or any full-column-rank) feature factor; d(i, j) = u_pᵀ X̂ u_p.
    trip : LMNNTriplets
        Targets, pairs and triplets.
    gamma : float in (0, 1)
        Weight of the hinge terms (the paper's γ = 0.5).
    X0 : ndarray (r, r), optional
        Warm start (default: the identity).
    alpha0 : ndarray (T,), optional
        Warm-start multipliers.
    tol : float
        Certified relative optimality gap (F − g) / max(1, |F|) to stop at.
    max_iter : int
        Iteration budget; when reached the result is not converged.
    check_every : int
        Iterations between full passes (objective, dual bound, working set, restart).
    buffer : float
        Near-active margin of the working set (in units of the LMNN margin 1).
    polish : bool
        Once F settles, also recover multipliers from the best primal point: the
        restricted-dual barrier (:func:`_barrier_dual`), or where it cannot run, by
        complementary slackness (bounded least squares on the kink triplets); they are
        kept when they give a better certified bound.
    seed : int
        Seed of the power iteration that estimates the operator norm.
    blas_threads : int, "config" or None
        BLAS / LAPACK threads during the solve (:func:`cvxkml._config.blas_limit`): default
        ``"config"``, the ``blas_threads`` option (default 1: the matrices are small, and
        oversubscribed BLAS threads on a busy machine slow the eigendecompositions); an int
        sets it for this call; None leaves the pools alone.
    callback : callable or None
        Called at every check (iteration 0, the end of every smoothing width, then every
        ``check_every`` PDHG iterations) with a dict: ``iteration``, ``objective`` (F at the
        best X̂ so far), ``dual_value`` (the best certified bound g), ``gap`` ((F − g) /
        max(1, |F|), the certified relative gap), ``current_objective`` (F at the current
        iterate) and ``working_triplets``.  A truthy return stops the run (status
        ``"stopped by callback"``) unless that check already certified ``tol``.
    smooth : bool
        Run the smoothed quasi-Newton phase (:func:`_smooth_stages`) after the check at
        iteration 0 (its L-BFGS iterations count towards ``max_iter``); False: the PDHG alone.
    stall_iter : int or None, default STALL_ITER (2000)
        The stall rule: stop (status ``"stalled"``, not converged) when the PDHG phase has run
        this many iterations without shrinking the certified gap F − g (best F, best g) by
        more than 0.1 %.  Why: on kernel LMNN with nearly singular kernels F and g can stop
        moving when the smoothed phase ends.  0 or None: run to ``max_iter``.
    exact_finish : bool, default True
        When the stall rule stops the PDHG — or before, once the certified gap is below 1e-2
        with at most 1 500 triplets near the margin, where the PDHG closes a small gap too
        slowly for the stall rule to fire (``_EARLY_FINISH_*`` of
        :mod:`cvxkml.solvers._lmnn.pdhg`) — solve eq. 18 on the triplets near the margin (at
        most 3 000) with a primal-dual interior-point method and certify its answer on the
        whole problem (:mod:`cvxkml.solvers._lmnn_exact`: F recomputed on every triplet, the
        multipliers through :func:`cvxkml.formulas.lmnn.lmnn_dual_value`).  False: never (a
        stalled run returns its stalled point).

    Returns
    -------
    FastResult
        ``matrix`` = X̂ (r × r, the best primal iterate), ``lam`` = α (the multipliers of the
        best bound), ``sweeps`` = iterations, ``stop_value`` = the certified relative gap
        (F − g) / max(1, |F|), ``code`` = ``Status.OK`` only when it is <= tol, else
        ``Status.NOT_CONVERGED``; ``extra``: ``objective`` F, ``dual_value`` g, ``status``
        (``"converged"``, ``"max_iter reached"``, ``"stalled"`` or ``"stopped by
        callback"``), ``history`` (iteration, F, g, working triplets per check; g is NaN where a wide smoothing
        width's check skipped the bound because Σα could not certify) and the
        solver details (``operator_norm``, ``primal_weight``, ``polish_time``,
        ``smooth_iterations``, ``smooth_time``, ``working_triplets``, ``triplets``; ``exact_finish``
        when the exact finish ran: its ``rounds``, ``working_triplets``, interior-point ``steps``, ``time``);
        ``factor`` = L (r × q, ``matrix`` = L Lᵀ) when the answer spans more scales than the formed
        matrix keeps (a whitened solve, or an answer extended along G(0)'s null space): F was
        evaluated through it, and so is every later distance.
    """
    with blas_limit(blas_threads):
        U = np.ascontiguousarray(U, dtype=np.float64)
        kw = dict(
            check_every=check_every,
            buffer=buffer,
            polish=polish,
            seed=seed,
            callback=callback,
            smooth=smooth,
            stall_iter=stall_iter,
            exact=exact_finish,
        )
        null = _seen_null_space(U, trip, gamma)
        if null is None:
            return _whitened_solve(U, trip, gamma, X0, alpha0, tol, max_iter, **kw)
        # an exactly singular pull reached by impostor pairs: first the problem off its null
        # space; if that does not certify, the whole problem too, the better of the two kept
        off = _solve_off_null(U, trip, gamma, null, X0, alpha0, tol, max_iter, **kw)
        if off.code == OK or off.extra["status"] == CALLBACK_STOP or off.sweeps >= max_iter:
            return off
        # the whole problem, its bounds without the triplets free in these coordinates (the
        # whitened ones can hide them: see free of lmnn_dual_value)
        res = _whitened_solve(U, trip, gamma, X0, alpha0, tol, max_iter - off.sweeps, free=null[2], **kw)
        return _better_of(off, res, U, trip, gamma, tol)


def _better_of(a: FastResult, b: FastResult, U, trip, gamma, tol) -> FastResult:
    """b with the lower objective's matrix and the higher bound's multipliers of a and b
    (each is a valid upper / lower bound of the same problem), re-certified.

    Weak duality is checked across the two: a bound above the other run's objective by more
    than ``tol`` (relative) proves one of the two numbers wrong (e.g. a null direction taken
    for range), so that pair certifies nothing: the bound kept is the other run's when it is
    consistent with the lower objective, else that of α = 0 (F >= 0), and the status is
    ``CONTRADICTED``, not converged."""
    ea, eb = a.extra, b.extra
    best = a if ea["objective"] < eb["objective"] else b
    X, F = best.matrix, best.extra["objective"]
    scale = max(1.0, abs(F))
    # (bound, multipliers): the higher first, b's on a tie
    high, low = (ea["dual_value"], a.lam), (eb["dual_value"], b.lam)
    if not high[0] > low[0]:
        high, low = low, high
    g, alpha = high
    status = "converged" if F - g <= tol * scale else eb["status"]
    if g - F > tol * scale:  # a bound above a primal value: not a bound, or F is wrong
        # the other run's bound if it is consistent, else α = 0, whose bound 0 holds (F >= 0)
        g, alpha = low if low[0] - F <= tol * scale else (0.0, np.zeros_like(b.lam))
        status = CONTRADICTED
    skip = ("solver", "objective", "dual_value", "status", "history", "factor")
    info = {k: v for k, v in eb.items() if k not in skip}
    if "factor" in best.extra:  # the matrix's factor, when its solve kept one
        info["factor"] = best.extra["factor"]
    info["off_null"] = {k: ea[k] for k in ("objective", "dual_value", "status", "null_dim", "free_triplets")}
    history = ea["history"] + [(h[0] + a.sweeps,) + tuple(h[1:]) for h in eb["history"]]
    return lmnn_result(X, alpha, F, g, a.sweeps + b.sweeps, status, a.time + b.time, history, info)


def _whitened_solve(U, trip, gamma, X0, alpha0, tol, max_iter, free=None, **kw) -> FastResult:
    """:func:`_lmnn_pdhg` in the coordinates of :func:`pull_whitening`, the answer mapped back
    (``matrix``) and kept as its factor W L̃ (``extra["factor"]``, X̃ = L̃ L̃ᵀ): F is evaluated
    through the factor, which keeps every scale of the answer.  ``free``: the triplets
    satisfied for free in U's coordinates (zero multipliers in every bound)."""
    white = pull_whitening(U, trip.target_i, trip.target_j, gamma)
    Uw = U if white is None else np.ascontiguousarray(U @ white[0])  # the solver's coordinates
    res = _lmnn_pdhg(
        Uw,
        trip,
        gamma,
        to_pull_coordinates(X0, white),
        alpha0,
        tol,
        max_iter,
        kw["check_every"],
        kw["buffer"],
        kw["polish"],
        kw["seed"],
        kw["callback"],
        kw["smooth"],
        kw["stall_iter"],
        exact=kw["exact"],
        free=free,
    )
    if white is None:
        return res
    # F of the answer in the caller's coordinates, through its factor (the formed W X̃ Wᵀ rounds
    # at about ε·‖W‖²‖X̃‖), and the stop re-checked against it
    factor = pull_factor(res.matrix, white)
    res.matrix = from_pull_coordinates(res.matrix, white)
    res.extra["factor"] = factor
    F = lmnn_objective(ordered_pair_distances(U, None, trip.pi, trip.pj, factor=factor), trip, gamma)
    g = res.extra["dual_value"]
    total = float(np.sum(res.lam))
    if g > F and g > 0.0 and total > 0.0:
        # the map back rounded F below the bound (both within about ε·‖W‖ of each other): the
        # multipliers are scaled down to a sum just below F — c·α is dual feasible for every
        # c <= g / Σα (G(cα) is a convex combination of G(0) and a feasible G) — and the bound
        # recomputed, as LMNNProblem.dual_value does, in the solver's coordinates
        res.lam = res.lam * ((F / total) * (1.0 - 1e-12))
        g = lmnn_dual_value(Uw, trip, res.lam, gamma, objective_bound=F, free=free)
        res.extra["dual_value"] = g
    res.extra["objective"] = F
    res.stop_value = (F - g) / max(1.0, abs(F))
    if res.extra["status"] == "converged" and res.stop_value > tol:
        res.extra["status"], res.code = "max_iter reached", int(Status.NOT_CONVERGED)
    return res


def _seen_null_space(U, trip: LMNNTriplets, gamma: float):
    """(V_R, V_N, seeing, reach) when the target pull G(0) is exactly singular (its null space N
    of :func:`cvxkml.formulas.lmnn.pull_null_space`, the N of the Lagrange bound) and some
    impostor pairs reach N (``reach`` per pair: :func:`cvxkml.formulas.lmnn.pairs_reach_null`;
    ``seeing`` per triplet, its impostor pair's); None otherwise."""
    split = pull_null_space(U, trip, gamma)
    if split is None or split[0].shape[1] == 0:
        return None
    VR, VN = split
    reach = pairs_reach_null(U, trip, VN)
    seeing = reach[trip.ti]
    return (VR, VN, seeing, reach) if np.any(seeing) else None


def _null_lengths(U, trip: LMNNTriplets, VN):
    """‖V_Nᵀ u_p‖² of every pair."""
    W = (U[trip.pi] - U[trip.pj]) @ VN
    return np.einsum("ij,ij->i", W, W)


def _solve_off_null(U, trip, gamma, null, X0, alpha0, tol, max_iter, **kw) -> FastResult:
    """eq. 18 when G(0) is exactly singular on N and impostor pairs reach N: the triplets
    whose impostor pair reaches N can be satisfied for free (X̂ + c V_N V_Nᵀ raises their
    d(i, l) and no target distance), so F* is the optimum of the problem on range(G(0))
    without them.  That problem is solved (features U V_R, the other triplets), its answer
    is extended by the exact minimizer c of F along V_N V_Nᵀ (:func:`_null_scale`) and its
    multipliers by zeros; F and the Lagrange bound are evaluated on the whole problem."""
    t0 = time.perf_counter()
    if X0 is not None and alpha0 is not None:  # the check at iteration 0, on the whole problem
        Xs = _psd_project(np.ascontiguousarray(X0, dtype=np.float64))
        a_s = np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, gamma)
        F0 = lmnn_objective(_Ops(U, trip).distances(Xs), trip, gamma)
        g0 = lmnn_dual_value(U, trip, a_s, gamma, objective_bound=F0)
        if F0 - g0 <= tol * max(1.0, abs(F0)):
            info = {"null_dim": int(null[1].shape[1]), "free_triplets": int(null[2].sum()), "triplets": trip.n_triplets}
            return lmnn_result(Xs, a_s, F0, g0, 0, "converged", time.perf_counter() - t0, [(0, F0, g0, 0)], info)
    VR, VN, seeing, reach = null
    keep = ~seeing
    sub = replace(
        trip,
        trip_i=trip.trip_i[keep],
        trip_j=trip.trip_j[keep],
        trip_l=trip.trip_l[keep],
        tt=trip.tt[keep],
        ti=trip.ti[keep],
    )
    if np.any(keep):
        res = _whitened_solve(
            np.ascontiguousarray(U @ VR),
            sub,
            gamma,
            None if X0 is None else VR.T @ np.asarray(X0, dtype=np.float64) @ VR,
            None if alpha0 is None else np.asarray(alpha0, dtype=np.float64)[keep],
            tol,
            max_iter,
            **kw,
        )
        sweeps, status, history, lam_kept = res.sweeps, res.extra["status"], res.extra["history"], res.lam
        skip = ("solver", "objective", "dual_value", "status", "history", "factor")
        info = {k: v for k, v in res.extra.items() if k not in skip}
        X_R = VR @ res.matrix @ VR.T
        L_R = VR @ (res.extra["factor"] if "factor" in res.extra else psd_factor(res.matrix))
    else:  # every triplet reaches N: the range problem is min ⟨G(0), X̂_R⟩, solved by X̂_R = 0
        sweeps, status, history, lam_kept, info = 0, "converged", [], np.zeros(0), {}
        X_R, L_R = np.zeros((U.shape[1], U.shape[1])), np.zeros((U.shape[1], 0))
    # the answer X̂_R + c·V_N V_Nᵀ as its factor [L_R, √c V_N]: c is often many orders above
    # X̂_R, and the formed matrix would keep only the larger part (the solve's F through the
    # factor, as the declared problem recomputes it)
    n_N = _null_lengths(U, trip, VN)
    p_R = ordered_pair_distances(U, None, trip.pi, trip.pj, factor=L_R)
    c = _null_scale(p_R, n_N, trip, gamma, reach)
    L = np.hstack([L_R, np.sqrt(c) * VN]) if c > 0.0 else L_R
    X = X_R + c * (VN @ VN.T)
    X = 0.5 * (X + X.T)
    F = lmnn_objective(ordered_pair_distances(U, None, trip.pi, trip.pj, factor=L), trip, gamma)
    alpha = np.zeros(trip.n_triplets)
    alpha[keep] = lam_kept
    g = lmnn_dual_value(U, trip, alpha, gamma, objective_bound=F)
    if F - g <= tol * max(1.0, abs(F)):
        status = "converged"
    elif status == "converged":
        status = "max_iter reached"  # certified on range(G(0)) only: not the whole problem's tol
    info.update(null_dim=int(VN.shape[1]), null_scale=c, free_triplets=int(seeing.sum()))
    info.update(triplets=int(trip.n_triplets), factor=L)
    # iterations: the reduced solve's, and one for the exact step along V_N
    return lmnn_result(X, alpha, F, g, sweeps + 1, status, time.perf_counter() - t0, history, info)
