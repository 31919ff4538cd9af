"""Low-rank LogDet kernel learning (Kulis, Sustik, Dhillon, JMLR 2009, §5.1, Algorithms 1–2,
slack §6.2.1, further constraints §6.2.2).

The learned kernel keeps the range space of K0 = G0 G0ᵀ (G0 n × r): K = G0 B Bᵀ G0ᵀ with
B r × r lower triangular, B = I initially.  A projection never touches n:

* distance constraint (i, j):  v = G0[i] − G0[j], w = Bᵀv, p = ‖w‖²; α, β and the slack
  update as in the dense solver (:func:`~cvxkml.solvers._bregman_core.project`), then B ← B L with
  L Lᵀ = I + β w wᵀ by CHOLUPDATEMULT (Algorithm 1, 3r² + 2r flops, no r × r product).
* rank-two constraint tr(K Â) ≤ t with Â = u uᵀ − v vᵀ (relative comparisons
  d(i,j) + margin ≤ d(i,k): u = G0[i]−G0[j], v = G0[i]−G0[k], t = −margin; similarity
  K_jl ≥ b: u = (g_j − g_l)/2, v = (g_j + g_l)/2, t = −b).  With ũ = Bᵀu, ṽ = Bᵀv,
  Σ = diag(1, −1) and the Gram matrix G of (ũ, ṽ), the Bregman projection
  X̂⁻¹ ← X̂⁻¹ + θ Â gives C(θ) = I + θ(ũũᵀ − ṽṽᵀ) and
      h(θ) = tr(Â X̂(θ)) = Σ_k μ_k / (1 + θ μ_k),  μ_k = eig(Σ G)  (μ₊ ≥ 0 ≥ μ₋),
  strictly decreasing on the PD interval (−1/μ₊, −1/μ₋); h(θ*) = t is a quadratic
  equation whose root in that interval is taken (bisection as a safeguard).  The dual
  correction θ = max(θ*, −λ), λ ← λ + θ keeps λ ≥ 0.  C(θ)⁻¹ = I + U E Uᵀ with
  E = −θ (Σ + θG)⁻¹ is applied as two rank-one CHOLUPDATEMULT steps (positive term
  first; the second vector mapped through L₁⁻¹ in O(r)), so B stays lower triangular.
  Total O(r²) per projection.

Implementation:

* The loops keep R = Bᵀ (upper triangular, C order).  :func:`cholupdatemult_t` is
  CHOLUPDATEMULT swept by columns of B, whose inner loop vectorizes (the row sweep of
  Algorithm 1 is a serial recurrence), and w = Bᵀv = R v reads R by rows.
  :func:`cholupdatemult` (B itself) stays as the paper's reference.
* :func:`lowrank_logdet` reshuffles the constraint order every sweep (a fixed cyclic order
  can need far more sweeps), projects only the
  constraints with λ > 0 or violated (refreshed from one product G0 B per sweep), and stops
  on the Lagrange certificate of the whole constraint set, not on the dual change alone.
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np

from .._config import WorkBudget, blas_limit
from ._bregman_core import check_time_limit
from ._farkas import FarkasWatch
from ._lowrank.cholesky import _chol_factor_solve as _chol_factor_solve
from ._lowrank.cholesky import _rt_times as _rt_times
from ._lowrank.cholesky import cholupdatemult as cholupdatemult
from ._lowrank.cholesky import cholupdatemult_t as cholupdatemult_t
from ._lowrank.passes import PAIR, _lowrank_gram, _run_passes, _sweeps_lowrank
from ._lowrank.passes import RANK2 as RANK2
from ._lowrank.passes import _passes as _passes
from ._lowrank.passes import _rank2_theta as _rank2_theta
from ._vocabulary import iteration_limit
from .result import NONFINITE, NOT_CONVERGED, OK


@nb.njit(cache=True, error_model="numpy")
def _residuals(G, kind, I, J, Kx, coef_u, coef_v, delta, xi, res, val):
    """From the rows of G = G0 B (learned coordinates): ``val`` = the constraint's learned
    value (PAIR: the squared distance p; RANK2: ‖Bᵀu‖² − ‖Bᵀv‖²) and ``res`` its signed
    residual (PAIR: δ(p − ξ); RANK2: value − target; > 0 means violated).  O(m r)."""
    r = G.shape[1]
    for c in range(I.shape[0]):
        a = I[c]
        s = 0.0
        if kind[c] == PAIR:
            b = J[c]
            for k in range(r):
                d = G[a, k] - G[b, k]
                s += d * d
            val[c] = s
            res[c] = delta[c] * (s - xi[c])
        else:
            b = J[c]
            e = Kx[c]
            for k in range(r):
                x = coef_u[c, 0] * G[a, k] + coef_u[c, 1] * G[b, k]
                y = coef_v[c, 0] * G[a, k] + coef_v[c, 1] * G[e, k]
                s += x * x - y * y
            val[c] = s
            res[c] = s - xi[c]


def _certificate(B, G0, kind, I, J, Kx, coef_u, coef_v, delta, target, xi, lam, gamma, val, res):
    """The Lagrange-dual certificate of an iterate, by the formulas of
    :class:`~cvxkml.declare.base.SpectralProblem` (LogDet, prior I in the factor space):

    * objective f = D_ld(X̂, I) [+ γ D_ld(diag ξ*, diag ξ0)], X̂ = B Bᵀ, ξ* the best slack
      (the bound where it holds, else the distance);
    * dual g(λ) = log det(I + Σ λ_c Â_c) + γ Σ log(1 − δλb/γ) (slack pairs) − Σ λ_c t_c
      (hard rows), Â_c = δ v vᵀ for a pair, u uᵀ − v vᵀ for a rank-two row;
    * violations max(0, residual) / max(1, |target|) (pairs with slack against ξ).

    Returns (f, g, relative gap (f − g)/max(1, |f|), max relative violation).  It only
    decides when the solver stops; the problem computes its own certificate afterwards.
    """
    r = B.shape[0]
    X = B @ B.T
    try:
        ev = np.linalg.eigvalsh(0.5 * (X + X.T))
    except np.linalg.LinAlgError:
        return np.inf, -np.inf, np.inf, np.inf
    if not (np.all(np.isfinite(ev)) and ev[0] > 0.0):
        return np.inf, -np.inf, np.inf, np.inf
    f = float(np.sum(ev - np.log(ev) - 1.0))
    pair = kind == PAIR
    slack = np.isfinite(gamma)
    if slack and np.any(pair):
        dl, b, p = delta[pair], target[pair], val[pair]
        x = np.where(dl * (p - b) <= 0.0, b, p) / b
        f += gamma * float(np.sum(x - np.log(x) - 1.0)) if np.all(x > 0) else np.inf
    viol = float(np.max(np.maximum(res, 0.0) / np.maximum(1.0, np.abs(target)), initial=0.0))
    A = np.zeros((r, r))
    lin = 0.0
    nz = np.flatnonzero(lam)
    q = nz[kind[nz] == PAIR]
    if q.size:
        V = G0[I[q]] - G0[J[q]]
        dl = delta[q] * lam[q]
        A += V.T @ (dl[:, None] * V)
        if slack:
            arg = 1.0 - dl * target[q] / gamma
            lin += gamma * float(np.sum(np.log(arg))) if np.all(arg > 0) else -np.inf
        else:
            lin -= float(dl @ target[q])
    q = nz[kind[nz] != PAIR]
    if q.size:
        Uq = coef_u[q, :1] * G0[I[q]] + coef_u[q, 1:] * G0[J[q]]
        Vq = coef_v[q, :1] * G0[I[q]] + coef_v[q, 1:] * G0[Kx[q]]
        A += Uq.T @ (lam[q, None] * Uq) - Vq.T @ (lam[q, None] * Vq)
        lin -= float(lam[q] @ target[q])
    if np.any(lam < 0):
        lin = -np.inf
    try:
        mu = np.linalg.eigvalsh(np.eye(r) + 0.5 * (A + A.T))
    except np.linalg.LinAlgError:
        mu = np.full(r, np.nan)
    g = float(np.sum(np.log(mu))) + lin if mu[0] > 0.0 and np.all(np.isfinite(mu)) else -np.inf
    gap = (f - g) / max(1.0, abs(f)) if np.isfinite(f) and np.isfinite(g) else np.inf
    return f, g, gap, viol


# relative dual change at which a pass no longer moves λ beyond round-off
STALL = 1e-15


@blas_limit()
def _lowrank_arrays(G0, B0, kind, I, J, Kx, coef_u, coef_v, delta, target, lam0, xi0):
    """The inputs of :func:`lowrank_logdet` as contiguous float64 / int64 copies, with the
    loops' R = Bᵀ (upper triangular, C order: cholupdatemult_t, _rt_times)."""
    G0 = np.ascontiguousarray(G0, dtype=np.float64)
    m = len(I)
    # a copy, never a view of the caller's B0 (the loops update R in place)
    R = np.eye(G0.shape[1]) if B0 is None else np.array(B0, dtype=np.float64).T.copy()
    lam = np.zeros(m) if lam0 is None else np.array(lam0, dtype=np.float64)
    target = np.array(target, dtype=np.float64)
    xi = target.copy() if xi0 is None else np.array(xi0, dtype=np.float64)
    I, J, Kx, kind = (np.ascontiguousarray(a, dtype=np.int64) for a in (I, J, Kx, kind))
    cu = np.ascontiguousarray(coef_u, dtype=np.float64).reshape(m, 2)
    cv = np.ascontiguousarray(coef_v, dtype=np.float64).reshape(m, 2)
    delta = np.ascontiguousarray(delta, dtype=np.float64)
    return G0, R, kind, I, J, Kx, cu, cv, delta, target, lam, xi


def _certified_now(R, rows, target, xi, lam, g, val, res, scale, change, fresh, gap_tol, viol_tol, st) -> bool:
    """Whether :func:`lowrank_logdet` may stop after a pass that met the dual-change rule: the
    violation half of the certificate comes free with the residuals; the dual value (O(m r²)
    and two r × r eigendecompositions) is computed only when it holds (or the duals stall)."""
    viol = float(np.max(np.maximum(res, 0.0) / scale, initial=0.0))
    if not (viol <= viol_tol or change <= STALL):
        return False
    tc = time.perf_counter()
    cert = _certificate(R.T, *rows, target, xi, lam, g, val, res)
    st["checks"] += 1
    st["check_time"] += time.perf_counter() - tc
    st["certificate"] = cert
    return bool((-gap_tol <= cert[2] <= gap_tol and cert[3] <= viol_tol) or (change <= STALL and not fresh))


def _cyclic_loop(R, rows, xi, lam, g, tol, max_iter, budget, watch, time_limit, stop_here, st, t0):
    """The paper's loop of :func:`lowrank_logdet`: cyclic sweeps over every constraint until the
    dual-change rule holds, in chunks that end at the Farkas checks and the time limit."""
    m = len(xi)
    sweeps, change, code = 0, np.inf, NOT_CONVERGED
    every, bad = np.arange(m), -1
    no_state = np.zeros(1, np.uint64)
    while sweeps < max_iter:
        k = max_iter - sweeps
        if watch is not None:
            k = min(k, max(watch.next - sweeps, 1))
        if budget.units < 64 * max(m, 1) or time_limit is not None:
            k = min(k, max(budget.units // max(m, 1), 1))
        s, change, code, bad = _run_passes(R, rows, xi, lam, g, every, m, no_state, False, tol, k, budget)
        sweeps += int(s)
        if code != NOT_CONVERGED or stop_here(sweeps):
            break
    st["projections"] = sweeps * m
    return (
        np.ascontiguousarray(R.T),
        lam,
        xi,
        int(sweeps),
        float(change),
        int(code),
        int(bad),
        time.perf_counter() - t0,
    )


def _stop_rule(watch, time_limit, lam, st, t0):
    """``stop_here(sweeps)`` of :func:`lowrank_logdet`, called between chunks: a Farkas ray
    (``watch``, recorded in ``st``) or the time limit ends the run."""

    def stop_here(sweeps):
        if watch is not None and sweeps >= watch.next:
            ray = watch.check(sweeps, lam)
            if ray is not None:
                st.update(ray)
                return True
        if time_limit is not None and time.perf_counter() - t0 >= time_limit:
            st["stopped"] = "time_limit"
            return True
        return False

    return stop_here


def _touched_rows(G0, I, J, Kx):
    """Only the rows of G0 that the constraints touch (G = G0 B costs O(rows · r²)), the
    indices renumbered into them."""
    m = len(I)
    pts, inv = np.unique(np.concatenate([I, J, Kx]), return_inverse=True)
    if pts.size < G0.shape[0]:
        G0 = np.ascontiguousarray(G0[pts])
        I, J, Kx = (np.ascontiguousarray(a, dtype=np.int64) for a in (inv[:m], inv[m : 2 * m], inv[2 * m :]))
    return G0, I, J, Kx


def _refresh_active(lam, res, visit, visited, every):
    """The active set of :func:`lowrank_logdet` from fresh residuals: the constraints with
    λ != 0 or violated (``res`` > 0) into ``visit[:n]``, ``visited`` marks them.  Returns
    (n, passes between refreshes): doubled up to 8 while at most 1 % of the set enters, else 1
    (a skipped constraint costs only its Bᵀv, about as much per sweep as the refresh itself)."""
    act = np.flatnonzero((lam != 0.0) | (res > 0.0))
    entering = int(np.count_nonzero(~visited[act]))
    every = min(2 * every, 8) if entering <= 0.01 * act.size else 1
    visit[: act.size] = act
    visited[:] = False
    visited[act] = True
    return act.size, every


def _chunk_limit(chunk, sweeps, max_iter, n_visit, budget, time_limit, watch):
    """Passes of :func:`lowrank_logdet` before it looks again: at most ``chunk``, the sweeps
    left, about one budget of projections under a time limit, and up to the next Farkas
    check."""
    chunk = min(chunk, max_iter - sweeps)
    if time_limit is not None:
        chunk = min(chunk, max(budget.units // max(n_visit, 1), 1))
    if watch is not None:
        chunk = min(chunk, max(watch.next - sweeps, 1))
    return chunk


def _passes_per_refresh(n_visit, r, rows, m, every):
    """Passes over the active set between two refreshes of it: at least one per refresh's
    cost (a pass ~4r² flops per projection in a Numba loop, a refresh 2·rows·r² in BLAS plus
    ~50 µs of Python), at least ``every``, up to 64 on small problems."""
    pass_cost = max(n_visit, 1) * 4.0 * r * r / 4e9
    refresh_cost = 5e-5 + 2.0 * rows * r * r / 2e10 + m * r / 1e9
    return int(min(64, max(every, refresh_cost // pass_cost)))


def lowrank_logdet(
    G0,
    kind,
    I,
    J,
    Kx,
    coef_u,
    coef_v,
    delta,
    target,
    gamma=None,
    tol=1e-9,
    max_iter=10_000,
    B0=None,
    *,
    lam0=None,
    xi0=None,
    gap_tol=None,
    viol_tol=None,
    order="shuffle",
    active_set=True,
    seed=0,
    stats=None,
    time_limit=None,
    detect_infeasible=True,
    max_sweeps=None,
):
    """Run the low-rank projections; returns (B, λ, ξ/targets, sweeps, change, code, bad, time).

    ``gamma`` applies to PAIR rows only (rank-two rows are hard constraints).

    Schedule
    --------
    ``order="shuffle"`` (default) visits the constraints in a fresh random order every
    sweep (a seeded private stream: the same input gives the same answer); ``"cyclic"`` is
    the paper's fixed order, which can need far more sweeps.
    ``active_set=True`` projects only the constraints that can move: λ > 0 or violated.
    A refresh, one product G = G0 B over the rows the constraints touch, gives every
    constraint's current value in O(m r) (:func:`_residuals`).  A constraint with λ = 0
    that holds is a no-op for a projection (α = min(λ, ·) = 0), so skipping it changes
    nothing, and it re-enters as soon as a refresh finds it violated.  The refresh
    interval starts at one sweep and doubles, up to 8, while fewer than 1 % of the set
    enters; small problems refresh every few sweeps (a refresh's ~50 µs of Python).

    Stopping rule
    -------------
    Without ``gap_tol`` / ``viol_tol``: the paper's rule, a sweep's relative dual change
    below ``tol``.  With them (what :class:`~cvxkml.declare.LowRankLogDet` passes): the
    dual change below ``tol`` *and* the Lagrange certificate of the whole constraint set
    (:func:`_certificate`): relative gap in [−gap_tol, gap_tol], largest relative
    violation ≤ viol_tol.  It is checked after each pass that meets the dual-change rule,
    from a fresh G; its dual value is computed only once the violations pass.  A pass that
    no longer changes λ (relative change ≤ 1e-15) also ends the run (code OK, uncertified:
    the caller's own certificate then decides).

    ``lam0`` / ``xi0`` continue from multipliers and slacks consistent with ``B0``.
    ``stats`` (a dict, optional) receives counters: projections, refreshes, checks,
    check_time, last certificate.

    Interrupts and limits
    ---------------------
    The compiled passes return to Python after about 0.1 s of work (mid-pass when a pass
    is longer; the iterates are the same), so Ctrl-C raises KeyboardInterrupt within that
    time; ``time_limit`` (seconds) ends the run there with NOT_CONVERGED
    (``stats["stopped"] = "time_limit"``).  With hard constraints (``gamma=None``) and
    ``detect_infeasible``, a diverging dual that is a Farkas certificate
    (:class:`~cvxkml.solvers._farkas.FarkasWatch`) ends the run with NOT_CONVERGED and
    ``stats["farkas_ray"]``, ``stats["farkas_candidates"]``, ``stats["farkas_test"]``.
    ``max_iter`` is the sweep limit (``max_sweeps``: its deprecated former name).
    """
    max_iter = iteration_limit("lowrank_logdet", max_iter, max_sweeps)
    if order not in ("shuffle", "cyclic"):
        raise ValueError(f"order must be 'shuffle' or 'cyclic', not {order!r}")
    G0, R, kind, I, J, Kx, cu, cv, delta, target, lam, xi = _lowrank_arrays(
        G0, B0, kind, I, J, Kx, coef_u, coef_v, delta, target, lam0, xi0
    )
    r, m = G0.shape[1], len(I)
    g = np.inf if gamma is None else float(gamma)
    tol = float(tol)
    max_iter = int(max_iter)
    certify = gap_tol is not None or viol_tol is not None
    gap_tol = np.inf if gap_tol is None else float(gap_tol)
    viol_tol = np.inf if viol_tol is None else float(viol_tol)
    st = {} if stats is None else stats
    st.update(projections=0, refreshes=0, checks=0, check_time=0.0, certificate=None)
    time_limit = check_time_limit(time_limit)
    budget = WorkBudget(start=max(m, 1) * 4)
    rows = (G0, kind, I, J, Kx, cu, cv, delta)  # the constraint arrays, in the compiled loops' order
    watch = None
    if detect_infeasible and np.isinf(g) and m:
        watch = FarkasWatch(_lowrank_gram(*rows), np.where(kind == PAIR, delta * target, target))
    t0 = time.perf_counter()
    stop_here = _stop_rule(watch, time_limit, lam, st, t0)
    if order == "cyclic" and not active_set and not certify:  # the paper's loop
        return _cyclic_loop(R, rows, xi, lam, g, tol, max_iter, budget, watch, time_limit, stop_here, st, t0)
    # only the rows of G0 that the constraints touch (G = G0 B costs O(rows · r²))
    G0, I, J, Kx = _touched_rows(G0, I, J, Kx)
    rows = (G0, kind, I, J, Kx, cu, cv, delta)
    G = np.empty_like(G0)
    scale = np.maximum(1.0, np.abs(target))  # relative violations, as the problem's
    res = np.empty(m)
    val = np.empty(m)
    visit = np.arange(m, dtype=np.int64)
    n_visit = m
    state = np.array([0x5EED0000 + int(seed)], dtype=np.uint64)
    sweeps, change, code, bad = 0, np.inf, NOT_CONVERGED, -1
    rule = False  # the last pass met the dual-change rule
    visited = np.ones(m, dtype=np.bool_)
    every = 1  # passes between refreshes of the active set
    while True:
        if active_set or (certify and rule):
            np.dot(G0, R.T, out=G)  # G = G0 B
            _residuals(G, *rows[1:], xi, res, val)
            st["refreshes"] += 1
            if not np.all(np.isfinite(res)):
                code, bad = NONFINITE, -1
                break
        # a violated constraint the last passes left out (it became violated meanwhile)
        fresh = rule and active_set and bool(np.any((res > 0.0) & ~visited))
        if rule and not certify:
            if not fresh:  # the paper's rule, over every constraint that can move
                code = OK
                break
        elif rule and _certified_now(
            R, rows, target, xi, lam, g, val, res, scale, change, fresh, gap_tol, viol_tol, st
        ):
            code = OK
            break
        if sweeps >= max_iter:
            code = NOT_CONVERGED
            break
        chunk = max_iter
        if active_set:
            n_visit, every = _refresh_active(lam, res, visit, visited, every)
            chunk = _passes_per_refresh(n_visit, r, G0.shape[0], m, every)
        chunk = _chunk_limit(chunk, sweeps, max_iter, n_visit, budget, time_limit, watch)
        s, change, code, bad = _run_passes(
            R, rows, xi, lam, g, visit, n_visit, state, order == "shuffle", tol, chunk, budget
        )
        st["projections"] += s * n_visit
        sweeps += s
        if code not in (OK, NOT_CONVERGED):  # a breakdown at constraint ``bad``
            break
        rule = code == OK
        code = NOT_CONVERGED
        if not rule and stop_here(sweeps):
            break
    elapsed = time.perf_counter() - t0
    return np.ascontiguousarray(R.T), lam, xi, int(sweeps), float(change), int(code), int(bad), elapsed


#: The benchmark hook: the compiled loop ``python -m benchmarks bench lowrank`` times.
#: ``sweeps(B, G0, kind, I, J, Kx, coef_u, coef_v, delta, xi, lam, gamma, tol, max_iter)``
#: runs cyclic sweeps on the factor B in place (kinds: :data:`PAIR`, ...).
BENCH_KERNELS = {"sweeps": _sweeps_lowrank}
