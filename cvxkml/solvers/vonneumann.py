"""von Neumann kernel learning by cyclic Bregman projections (Kulis, Sustik, Dhillon, JMLR
2009, §5.2, Algorithm 3; slack §6.2.1), factored: X̂ = W diag(exp q) Wᵀ with W orthogonal.

A projection onto the pair constraint δ(tr(X̂ w0 w0ᵀ) − ξ) <= 0 (v = F[i] − F[j],
w = Wᵀv) moves log X̂ ← log X̂ + θ v vᵀ, i.e. diag(q) + θ w wᵀ = U diag(q̃) Uᵀ, then
W ← W U, q ← q̃.  Everything about the diagonal-plus-rank-one eigenproblem comes from
its eigenvalues, the roots of the secular equation 1 + θ Σ_i w_i² / (q_i − λ) = 0:

    (wᵀu_k)² = 1 / (θ² Σ_i w_i² / (q_i − λ_k)²),
    h(θ)  = wᵀ exp(diag q + θwwᵀ) w = Σ_k e^{λ_k} (wᵀu_k)²,
    h'(θ) = Σ_{k,l} (wᵀu_k)² (wᵀu_l)² (e^{λ_k} − e^{λ_l}) / (λ_k − λ_l)   (Daleckii–Krein),

so each evaluation of h costs O(r²) and no eigenvectors.  θ solves log h(θ) = log b (hard)
or log h(θ) + θ/γ = log ξ (slack) — both strictly increasing — by safeguarded Newton on
a bracket (ZEROFINDER).  The dual correction Δλ = max(−δθ*, −λ), θ = −δΔλ keeps λ >= 0
(the multiplier of δ(tr(X̂A) − ξ) <= 0, log X̂ = log X̂0 − Σ δλA).  Eigenvectors use
Gu & Eisenstat's recomputed weights, so U is orthogonal to working precision.
Deflation: components with |w_i| <= 1e-14‖w‖ are left alone, and clustered q_i
(|Δq| <= 1e-12 scale) are merged by Givens rotations applied to W.

Roots are found in offset form λ = q_a + τ from the nearer pole a (as LAPACK's dlaed4),
with a two-pole rational model (Li's "middle way") safeguarded by bisection, stopped when
|f| is at round-off level (8ε(1 + |θ|Σ|w_i²/δ_i|), dlaed4's bound).  One pass over the
poles per iteration gives f, f′, the model and (at the root) the weight (wᵀu_k)² =
1/(θ f′).  Every root solve is warm: root k starts at λ_k(θ_old) + (θ − θ_old)(wᵀu_k)²
(dλ_k/dθ = (wᵀu_k)², Hellmann–Feynman) in the old root's anchored coordinates, bounded by
λ_k(θ_old) on one side (the eigenvalues of Q + θwwᵀ increase with θ); the first solve of
a ZEROFINDER starts from θ_old = 0, where the roots are the poles and the weights w_k².
A cold solve (θ of the other sign than θ_old, or the redo when a warm root lands on its
pole) evaluates f once at the midpoint of
each root's interval and starts from dlaed4's guess.  τ is kept off the pole (a root that
lands on its pole would give u = ẑ/0).  h′ is formed only when a Newton step follows.  The
sums over the poles are vectorized (fastmath reassociation); no transcendental function
runs under fastmath (a vectorized exp in a cached kernel made results depend on memory
layout).

Divisions are the costly operation of the O(k²) work, so none is made twice: the last pass
over the poles of root k leaves 1/(q_i − λ_k), the Cauchy matrix that the Gu–Eisenstat
vectors u_k ∝ ẑ/(q − λ_k) multiply, and ẑ_i² = −((q_i − λ_i)/θ) / Π_{j≠i} (q_i − q_j)/(q_i − λ_j)
is formed from the same matrix by products (k divisions).  The dual correction's clip point
θ = δλ_c is tested by ZEROFINDER when a Newton step passes it, so a clipped projection solves
the roots once, at the clip point.

Exact shortcut: a constraint with λ = 0 that holds at the current X̂ has θ* of the sign
that the dual correction clips to 0, so its projection is the identity; it is detected
from h(0) = Σ e^{q_i} w_i² (O(r) once w is known) before any deflation or root finding.

Cost per projection: O(r²) for w, O(k² · passes) for the roots (k undeflated, about two
passes per root), O(k) divisions and O(k²) products for the eigenvectors,
2 r k² flops for W ← W U (one BLAS-3 gemm; the paper's fast-multipole variant is O(r²)).
The sweeps keep Wᵀ (rows: eigenvectors) with q stored in increasing order (a deflated
update is followed by a permutation that restores it; X̂ does not change), so the active
set is usually 0, …, r − 1 and the gemm reads and writes contiguous rows, no gather.

Driver (:func:`vonneumann_pairs`): full sweeps, optionally alternated with sweeps over the
constraints with λ > 0 (``active_set``; every run ends on a full sweep), stopped by the
paper's relative dual change *and* the Lagrange-dual certificate of the problem
(:func:`certificate`: relative gap |f − g(λ)| and relative violation), so that ``code ==
OK`` means certified.

With slack the same optimum is reached on the Lagrange dual by projected Newton-CG
(:func:`vonneumann_slack_newton`: the slack makes the dual Hessian positive definite; a
few Newton steps, each one r × r eigendecomposition plus O(m r²) Hessian products, instead
of sweeps of rank-one eigen-updates); :class:`cvxkml.estimators.VonNeumannKernelLearner`
uses it.
"""

from __future__ import annotations

import time

import numpy as np

from .._config import WorkBudget, blas_limit
from ._bregman_core import check_time_limit
from ._farkas import FarkasWatch
from ._vocabulary import iteration_limit
from ._vonneumann.projection import _N_STATS, _deflate, _sweeps_vn, _vn_run
from ._vonneumann.projection import _eigvecs_t as _eigvecs_t
from ._vonneumann.projection import _sweeps_vn_set as _sweeps_vn_set
from ._vonneumann.projection import eigvecs_from_roots as eigvecs_from_roots
from ._vonneumann.projection import project_pair as project_pair
from ._vonneumann.secular import EXACT_FTOL, _zerofinder
from ._vonneumann.secular import _secular as _secular
from ._vonneumann.secular import _zerofinder_w as _zerofinder_w
from ._vonneumann.secular import narrow_bracket as narrow_bracket
from ._vonneumann.secular import safeguarded_newton_step as safeguarded_newton_step
from ._vonneumann.secular import secular_roots as secular_roots
from ._vonneumann.slack_newton import vonneumann_slack_newton as vonneumann_slack_newton
from .result import NONFINITE, NOT_CONVERGED, OK, FastResult


# --------------------------------------------------------------------- certificate
def certificate(F, q0, i, j, delta, bound, xi, lam, W, q, gamma=None, chunk=20_000):
    """The Lagrange-dual certificate of the factored problem

        min D_vN(X̂, diag e^{q0}) [+ γ Σ_c (ξ_c log(ξ_c/b_c) − ξ_c + b_c)]
        s.t. δ_c (v_cᵀ X̂ v_c − ξ_c) <= 0,  v_c = F[i_c] − F[j_c]

    at X̂ = W diag(e^q) Wᵀ and multipliers λ — the same quantities as
    ``SpectralProblem.objective / dual_value / violations`` (the slack in the objective is
    the best one for X̂, the violations are measured against the solver's ξ):

        g(λ) = −tr exp(diag q0 − Σ_c δ_c λ_c v_c v_cᵀ) + tr e^{q0}
               + γ Σ_c b_c (1 − e^{δ_c λ_c/γ})   (slack)   or   − Σ_c λ_c δ_c b_c   (hard).

    O(m r²) in blocks of ``chunk`` constraints plus one r × r ``eigvalsh``.  Returns a dict:
    objective f, dual g, gap f − g, rel_gap = gap / max(1, |f|), rel_violation =
    max δ(p − ξ)_+ / max(1, |b|), distances p."""
    F = np.asarray(F, dtype=np.float64)
    i = np.asarray(i)
    j = np.asarray(j)
    delta = np.asarray(delta, dtype=np.float64)
    bound = np.asarray(bound, dtype=np.float64)
    lam = np.asarray(lam, dtype=np.float64)
    q0 = np.asarray(q0, dtype=np.float64)
    r = F.shape[1]
    m = i.shape[0]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        eq = np.exp(q)
        p = np.empty(m)
        C = np.zeros((r, r))
        for s in range(0, m, chunk):
            V = F[i[s : s + chunk]] - F[j[s : s + chunk]]
            Y = V @ W
            p[s : s + chunk] = (Y * Y) @ eq
            C += V.T @ (V * (delta[s : s + chunk] * lam[s : s + chunk])[:, None])
        Xdiag = (W * W) @ eq
        f = float(np.sum(eq * q) - np.sum(eq) - Xdiag @ q0 + np.sum(np.exp(q0)))
        mu = np.linalg.eigvalsh(np.diag(q0) - 0.5 * (C + C.T))
        g = float(-np.sum(np.exp(mu)) + np.sum(np.exp(q0)))
        target = bound if gamma is None else np.asarray(xi, dtype=np.float64)
        viol = np.maximum(delta * (p - target), 0.0)
        rel_viol = float(np.max(viol / np.maximum(1.0, np.abs(bound)), initial=0.0))
        if gamma is None:
            g -= float(lam @ (delta * bound))
        else:
            ok = delta * (p - bound) <= 0
            xs = np.where(ok, bound, p)
            t = np.where(xs > 0, xs * np.log(np.where(xs > 0, xs, 1.0) / bound), 0.0)
            f += gamma * float(np.sum(t - xs + bound)) if np.all(xs >= 0) else np.inf
            g += float(gamma * np.sum(bound * (1.0 - np.exp(delta * lam / gamma))))
    gap = f - g
    return {
        "objective": f,
        "dual": g,
        "gap": gap,
        "rel_gap": gap / max(1.0, abs(f)),
        "rel_violation": rel_viol,
        "distances": p,
    }


def _certified(cert, gap_tol, viol_tol) -> bool:
    return bool(
        np.isfinite(cert["rel_gap"]) and -gap_tol <= cert["rel_gap"] <= gap_tol and cert["rel_violation"] <= viol_tol
    )


def _rel_violations(F, I, J, dl, xi, b0, W, q, chunk=20_000):
    """The relative violations δ_c(v_cᵀX̂v_c − ξ_c)_+ / max(1, |b_c|) of all pair constraints at
    X̂ = W diag(e^q) Wᵀ (the violation part of :func:`certificate`), O(m r²) in blocks."""
    m = I.shape[0]
    p = np.empty(m)
    with np.errstate(over="ignore", invalid="ignore"):
        eq = np.exp(q)
        for s in range(0, m, chunk):
            Y = (F[I[s : s + chunk]] - F[J[s : s + chunk]]) @ W
            p[s : s + chunk] = (Y * Y) @ eq
        return np.maximum(dl * (p - xi), 0.0) / np.maximum(1.0, np.abs(b0))


def _violated_stage(state, stats, budget, rel_viol, viol_tol, max_passes, ftol):
    """Passes of Bregman projections over the constraints whose relative violation exceeds
    ``viol_tol``/2 (recomputed before every pass, at most ``max_passes``; ``rel_viol``: the
    violations at the start).  The same projections (Algorithm 3 with the dual correction) as
    a sweep, in another control order: each is exact coordinate ascent on the Lagrange dual,
    so the dual value only grows.  ``state`` = (W, q, F, I, J, δ, ξ, λ, γ, b), updated in
    place; ``ftol``: the projections' ZEROFINDER stop (:func:`projection_ftol`).  Returns
    (passes, visits, code, bad constraint)."""
    W, q, F, I, J, dl, xi, lam, g, b0 = state
    passes = visits = 0
    for _ in range(max_passes):
        A = np.flatnonzero(rel_viol > 0.5 * viol_tol).astype(np.int64)
        if A.size == 0:
            break
        _, _, kcode, bad = _vn_run(W, q, F, I, J, dl, xi, lam, g, -1.0, 1, stats, A, budget, ftol)
        passes += 1
        visits += A.size
        if kcode == NONFINITE:
            return passes, visits, NONFINITE, bad
        rel_viol = _rel_violations(F, I, J, dl, xi, b0, W, q)
    return passes, visits, NOT_CONVERGED, -1


def _violated_round(state, stats, budget, cert, tols, max_passes, recertify, ftol):
    """The violated stage of :func:`vonneumann_pairs` after a full sweep whose certificate
    ``cert`` fails on the violation: :func:`_violated_stage` from the certificate's distances,
    then (``recertify``: the rule is the certificate alone) the certificate again.  ``state``
    = (W, q, F, I, J, δ, ξ, λ, γ, b, q0, γ or None); ``stats[5:7]`` += passes, visits.
    Returns (code: OK when certified, NONFINITE, else NOT_CONVERGED; bad constraint; the new
    certificate or None; its seconds)."""
    W, q, F, I, J, dl, xi, lam, g, b0, q0, gam = state
    rv = np.maximum(dl * (cert["distances"] - xi), 0.0) / np.maximum(1.0, np.abs(b0))
    n_pass, n_visit, kcode, bad = _violated_stage(state[:10], stats, budget, rv, tols[1], max_passes, ftol)
    stats[5] += n_pass
    stats[6] += n_visit
    if kcode == NONFINITE or not recertify:
        return kcode, bad, None, 0.0
    tc = time.perf_counter()
    cert = certificate(F, q0, I, J, dl, b0, xi, lam, W, q, gam)
    code = OK if _certified(cert, *tols) else NOT_CONVERGED
    return code, -1, cert, time.perf_counter() - tc


# --------------------------------------------------------------------- driver
#: the loosest ZEROFINDER stop a solve uses (|φ| relative to max(1, |log target|))
_FTOL_CAP = 1e-6
#: the projections' stop as a fraction of the solve's tightest tolerance
_FTOL_FRACTION = 1e-3


def projection_ftol(*tols) -> float:
    """ZEROFINDER's stop for a solve with stopping tolerances ``tols`` (the dual change, the
    certificate's gap and violation; those <= 0 are ignored): 1e-3 of the tightest, at most
    1e-6, at least :data:`~cvxkml.solvers._vonneumann.secular.EXACT_FTOL`.

    A projection then leaves its constraint at its target to this relative accuracy instead of
    to round-off.  That is enough: the iterate stays X̂ = exp(log X̂0 − Σ δλ vvᵀ) of the
    multipliers λ it reports (the certificate is computed from them, whatever the projections'
    accuracy), and a projected constraint within 1e-3·tol of its target is a thousand times
    closer than any violation or gap the solve certifies.  What it saves: after the first
    Newton step of ZEROFINDER |φ| is typically 1e-6 … 1e-12, and each further step costs a
    root solve of all k roots; an exact stop pays about two per projection, the looser stop
    about one.  Tight solves (tol 1e-11 and below) keep exact projections: their dual change
    would otherwise stall at the projections' accuracy."""
    pos = [float(t) for t in tols if t is not None and float(t) > 0]
    if not pos:
        return EXACT_FTOL
    return max(EXACT_FTOL, min(_FTOL_CAP, _FTOL_FRACTION * min(pos)))


def _pair_watch(F, I, J, dl, b0):
    """The :class:`~cvxkml.solvers._farkas.FarkasWatch` of hard pair constraints
    δ_c (v_cᵀX̂v_c − b_c) <= 0, v_c = F[I_c] − F[J_c] (whitened coordinates: prior I)."""

    def gram(S):
        V = F[I[S]] - F[J[S]]
        return V @ V.T, dl[S], np.arange(S.size)

    return FarkasWatch(gram, dl * b0)


def _stop_met(stop, tol, met_change, cert, gap_tol, viol_tol):
    """Whether :func:`vonneumann_pairs` stops after a full sweep under rule ``stop``: the dual
    change below ``tol`` (``met_change``), the certificate ``cert``, or both."""
    if stop == "dual_change":
        return met_change
    if stop == "both":
        return met_change and _certified(cert, gap_tol, viol_tol)
    return tol > 0 and _certified(cert, gap_tol, viol_tol)


def _root_stats(stats):
    """The projection counters of :func:`_vn_run` (``stats``) as ``extra`` entries."""
    return {
        "evals_per_projection": stats[0] / max(stats[1], 1),
        "projections": int(stats[1]),
        "skipped": int(stats[2]),
        "passes_per_root": stats[3] / max(stats[4], 1),
    }


def _pairs_result(W, q, lam, xi, stats, run, t0, cert, cert_time, counts) -> FastResult:
    """The :class:`FastResult` of :func:`vonneumann_pairs`: X̂ = W diag(e^q) Wᵀ (NONFINITE
    when it or λ overflowed), ``run`` = (sweeps, change, code, bad), ``extra`` with W, q,
    the root-finder and stage counters, ``counts`` and the last certificate."""
    sweeps, change, code, bad = run
    elapsed = time.perf_counter() - t0
    with np.errstate(over="ignore", invalid="ignore"):
        Xh = (W * np.exp(q)) @ W.T
    if code == OK and not (np.all(np.isfinite(Xh)) and np.all(np.isfinite(lam))):
        code = NONFINITE  # e^q overflowed: multipliers diverging (infeasible)
    extra = {
        "W": W,
        "q": q,
        **_root_stats(stats),
        "violated_passes": int(stats[5]),
        "visited_violated": int(stats[6]),
        "certificate_s": cert_time,
        "solver": "vonneumann-alg3",
        **counts,
    }
    if cert is not None:
        extra["certificate"] = {k: v for k, v in cert.items() if k != "distances"}
    return FastResult(0.5 * (Xh + Xh.T), lam, xi, int(sweeps), float(change), int(code), int(bad), elapsed, extra=extra)


@blas_limit()
def _progress(sweeps, change, cert, t0) -> dict:
    """The callback's dict after a full sweep (``dual_change``: the former name of
    ``stop_value``, until 0.3)."""
    change = float(change)
    return {
        "sweeps": sweeps,
        "stop_value": change,
        "dual_change": change,
        "certificate": cert,
        "time": time.perf_counter() - t0,
    }


def vonneumann_pairs(
    F,
    q0,
    i,
    j,
    delta,
    bound,
    gamma=None,
    tol=1e-9,
    max_iter=10_000,
    *,
    gap_tol=None,
    viol_tol=None,
    stop="both",
    active_set=False,
    callback=None,
    time_limit=None,
    detect_infeasible=True,
    max_sweeps=None,
    violated_passes=0,
):
    """Cyclic von Neumann projections on X̂ = W diag(e^q) Wᵀ (W = I, q = q0 initially)
    for pair constraints δ(v̂ᵀX̂v̂ − ξ) <= 0 with v̂ = F[i] − F[j]; returns a
    :class:`FastResult` whose ``matrix`` is X̂ and ``extra`` holds W, q, the certificate
    and the root-finder statistics.

    Stopping rule (checked after full sweeps only): ``stop="both"`` (default) — the
    relative dual change of a full sweep is below ``tol`` *and* the dual certificate
    (:func:`certificate`) holds: relative gap within ±``gap_tol`` and relative violation
    <= ``viol_tol`` (both default max(tol, 1e-6)); ``stop="certificate"``: the certificate
    alone, checked after every full sweep; ``stop="dual_change"``: the paper's rule alone
    (the certificate is then left to the caller).  ``code == OK`` only when the rule
    holds, so with the certificate in the rule OK means certified.  ``tol <= 0`` never
    stops early (exactly ``max_iter`` sweeps).  Each projection solves ZEROFINDER to
    :func:`projection_ftol` of the tolerances the rule uses (exactly, to round-off, for tight
    ones and when ``tol <= 0``).

    ``active_set`` (default False): after a full sweep, sweep only over the constraints with
    λ > 0 until their dual change is below ``tol``, then verify with a full sweep (λ = 0
    constraints that became violated re-enter); a run always ends on a full sweep.  It
    saves little: constraints with λ = 0 that hold are skipped exactly in every sweep anyway
    (their projection is the identity, detected in O(r²)).
    ``violated_passes`` (default 0): after a full sweep whose certificate fails on the
    violation, up to this many passes over the violated constraints (:func:`_violated_round`).
    ``callback(dict)`` is called after every full sweep that does not end the run (keys
    sweeps; stop_value, the relative dual change of the sweep, also as dual_change, its
    former name, until 0.3; certificate, None unless computed; time, seconds so far); a
    truthy return stops the run with NOT_CONVERGED (e.g. a time budget).

    The compiled sweeps return to Python after about 0.1 s of work (mid-sweep when a sweep
    is longer; same iterates), so Ctrl-C raises KeyboardInterrupt within that time;
    ``time_limit`` (seconds) ends the run there with NOT_CONVERGED (``extra["stopped"]``).
    With hard constraints and ``detect_infeasible``, a diverging dual that is a Farkas
    certificate (:class:`~cvxkml.solvers._farkas.FarkasWatch`) ends the run with
    NOT_CONVERGED and ``extra["farkas_ray"]``, ``extra["farkas_candidates"]``.
    ``max_iter`` is the sweep limit (``max_sweeps``: its deprecated former name).
    """
    max_iter = iteration_limit("vonneumann_pairs", max_iter, max_sweeps, stacklevel=5)  # 5: past blas_limit
    if stop not in ("both", "certificate", "dual_change"):
        raise ValueError("stop must be 'both', 'certificate' or 'dual_change'")
    F = np.ascontiguousarray(F, dtype=np.float64)
    r = F.shape[1]
    W = np.eye(r)
    q0 = np.array(q0, dtype=np.float64)
    q = q0.copy()
    I = np.ascontiguousarray(i, dtype=np.int64)
    J = np.ascontiguousarray(j, dtype=np.int64)
    dl = np.ascontiguousarray(delta, dtype=np.float64)
    b0 = np.array(bound, dtype=np.float64)
    m = I.shape[0]
    lam = np.zeros(m)
    xi = b0.copy()
    stats = np.zeros(_N_STATS + 2)  # + passes and visits of the violated stage
    g = np.inf if gamma is None else float(gamma)
    gam = None if gamma is None else float(gamma)
    tol = float(tol)
    max_iter = int(max_iter)
    base = max(tol, 1e-6)
    gap_tol = base if gap_tol is None else float(gap_tol)
    viol_tol = base if viol_tol is None else float(viol_tol)
    # a fixed number of sweeps (tol <= 0) is Algorithm 3 as printed: exact projections
    ftol = EXACT_FTOL if tol <= 0 else projection_ftol(tol, *(() if stop == "dual_change" else (gap_tol, viol_tol)))
    time_limit = check_time_limit(time_limit)
    budget = WorkBudget(start=max(m, 1))
    every = np.arange(m)
    watch = _pair_watch(F, I, J, dl, b0) if detect_infeasible and gamma is None and m else None
    found = {}
    t0 = time.perf_counter()
    sweeps, full_sweeps, active_sweeps, visited_active = 0, 0, 0, 0
    change, code, bad, cert = np.inf, NOT_CONVERGED, -1, None
    cert_time = 0.0
    while sweeps < max_iter:
        # full sweep(s): one at a time with the active set, the certificate rule or a callback
        one = active_set or violated_passes > 0 or stop == "certificate" or tol <= 0 or callback is not None
        n_full = 1 if one else max_iter - sweeps
        if watch is not None:
            n_full = min(n_full, max(watch.next - sweeps, 1))
        if time_limit is not None:
            n_full = min(n_full, max(budget.units // max(m, 1), 1))
        done, change, kcode, bad = _vn_run(W, q, F, I, J, dl, xi, lam, g, tol, n_full, stats, every, budget, ftol)
        sweeps += int(done)
        full_sweeps += int(done)
        if kcode == NONFINITE:
            code = NONFINITE
            break
        met_change = tol > 0 and change < tol
        cert = None
        if stop == "certificate" or (stop == "both" and met_change) or violated_passes > 0:
            tc = time.perf_counter()
            cert = certificate(F, q0, I, J, dl, b0, xi, lam, W, q, gam)
            cert_time += time.perf_counter() - tc
        if _stop_met(stop, tol, met_change, cert, gap_tol, viol_tol):
            code = OK
            break
        if callback is not None and callback(_progress(sweeps, change, cert, t0)):
            break
        if watch is not None and sweeps >= watch.next:
            found = watch.check(sweeps, lam) or {}
            if found:
                break
        if time_limit is not None and time.perf_counter() - t0 >= time_limit:
            found = {"stopped": "time_limit"}
            break
        if violated_passes > 0 and cert["rel_violation"] > viol_tol and max_iter - sweeps >= 2:
            state = (W, q, F, I, J, dl, xi, lam, g, b0, q0, gam)
            recert = stop == "certificate"
            code, bad, cert, dt = _violated_round(
                state, stats, budget, cert, (gap_tol, viol_tol), violated_passes, recert, ftol
            )
            cert_time += dt
            if code != NOT_CONVERGED:
                break
        if active_set and max_iter - sweeps >= 2:
            A = np.flatnonzero(lam > 0.0).astype(np.int64)
            if 0 < A.size < m:
                done, ch, kcode, bad = _vn_run(
                    W, q, F, I, J, dl, xi, lam, g, tol, max_iter - sweeps - 1, stats, A, budget, ftol
                )
                sweeps += int(done)
                active_sweeps += int(done)
                visited_active += int(done) * A.size
                if kcode == NONFINITE:
                    code = NONFINITE
                    break
    counts = {"full_sweeps": full_sweeps, "active_sweeps": active_sweeps, "visited_active": visited_active}
    return _pairs_result(W, q, lam, xi, stats, (sweeps, change, code, bad), t0, cert, cert_time, {**counts, **found})


#: The benchmark hook: the compiled pieces ``python -m benchmarks bench vonneumann`` times, by role.
#: ``sweeps(W, q, F, I, J, delta, xi, lam, gamma, tol, max_iter, stats)`` runs cyclic sweeps
#: in place; ``deflate(q, w, W, tol_w, tol_q)`` and ``zerofinder(d, z, target_log, inv_gamma,
#: anchor, tau, lam, c2)`` are one projection's deflation and root finder.
BENCH_KERNELS = {"sweeps": _sweeps_vn, "deflate": _deflate, "zerofinder": _zerofinder}
