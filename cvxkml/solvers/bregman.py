"""Cyclic Bregman projections for LogDet metric / kernel learning with pair constraints
(Jain et al. 2012, Algorithm 1; Davis et al. 2007), with the slack parameter γ and the
dual corrections λ.

Kernel form: K ← K + β (K z)(K z)ᵀ with z = e_i − e_j, O(n²) per projection.
Metric form: W ← W + β (W v)(W v)ᵀ with v = x_i − x_j, O(d²) per projection.

Each projection (δ = +1 similar, −1 dissimilar; p = current squared distance):
    α = min(λ_c, δ·γ/(γ+1)·(1/p − 1/ξ_c))       (γ = ∞: δ·(1/p − 1/ξ_c))
    β = δα / (1 − δαp);  ξ_c ← γξ_c / (γ + δαξ_c);  λ_c ← λ_c − α
so that throughout  M⁻¹ = M0⁻¹ + Σ_c δ_c λ_c z_c z_cᵀ  and  1/ξ_c = 1/ξ0_c − δ_c λ_c / γ:
λ ≥ 0 are the Lagrange multipliers of the constraints δ_c (z_cᵀ M z_c − ξ_c) ≤ 0.
The cap α ≤ λ_c is the dual correction that makes the method converge to the optimum
for inequality constraints.

Stopping rule, after every full sweep: Σ|λ − λ_old| / (Σ|λ| + Σ|λ_old|) < tol.

Interrupts.  The compiled loop (:func:`_run`, in both forms :func:`_run_kernel` and
:func:`_run_metric`) releases the GIL and returns to Python after a bounded number of projections (about
:data:`cvxkml._config.CHUNK_SECONDS` of work, :class:`cvxkml._config.WorkBudget`), at any
point of a sweep, and resume there: Ctrl-C raises :class:`KeyboardInterrupt` within that
time, ``time_limit`` holds to it, and the iterates are bit for bit those of one
uninterrupted loop.  The inputs are copied, so an interrupted solve leaves the caller's
arrays as they were.

Infeasible hard constraints.  With ``gamma=None`` the multipliers of conflicting
constraints grow without bound (a Farkas ray).  :class:`FarkasWatch` looks at λ after
8, 16, 32, … sweeps; when the growth over the last window keeps its direction and does not
slow down, and that direction d ≥ 0 (restricted to the constraints carrying it) is a Farkas
certificate — Σ d_c Â_c ⪰ 0 and Σ d_c t_c < 0 within the tolerances of
``SpectralProblem._raise_if_farkas`` — the run stops (code NOT_CONVERGED) with
``extra["farkas_ray"]`` (d, one entry per constraint) and ``extra["farkas_candidates"]``
(its support).  A feasible problem never passes the test (a certificate proves that no
PSD matrix satisfies the constraints, up to the stated relative tolerance).
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np

from .._config import WorkBudget, blas_limit
from ._bregman_core import check_time_limit, dual_change, project, quadratic_form, rank_one_update, sweep_end
from ._farkas import FARKAS_EIG_TOL, FARKAS_LIN_TOL, FarkasWatch, farkas_test  # noqa: F401 (re-exported)
from ._vocabulary import iteration_limit

# status codes of the jitted loops: cvxkml.solvers.result.Status
from .result import NONFINITE, NONPOSITIVE_DISTANCE, NOT_CONVERGED, OK, FastResult

#: kernel code of a chunk that ran out of budget (internal, never in a FastResult)
RUNNING = -1
#: a work budget no run reaches (the whole-sweep loops)
_NO_BUDGET = 1 << 62


@nb.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _direction(M, I, J, V, kernel, c, u):
    """The current squared distance p of constraint ``c`` and the update vector u (in place):
    kernel form (``kernel`` true), z = e_i − e_j with (i, j) = (I[c], J[c]), u = K z and
    p = zᵀ K z; metric form, v = V[c], u = W v and p = vᵀ W v."""
    n = M.shape[0]
    if kernel:
        i = I[c]
        j = J[c]
        for t in range(n):  # K z = K[:, i] − K[:, j] (rows: K symmetric)
            u[t] = M[i, t] - M[j, t]
        return u[i] - u[j]
    p, _ = quadratic_form(M, V, c, u)
    return p


@nb.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _run(M, I, J, V, kernel, delta, xi, lam, lam_old, gamma, tol, c0, max_iter, budget, change):
    """The compiled loop of both forms, resumable: M ← M + β u uᵀ with p and u from
    :func:`_direction` (kernel form: pairs (I, J), V unused; metric form: pair differences
    V, I and J unused).  Starts at constraint ``c0`` of the current sweep (``lam_old`` holds
    λ at the start of that sweep) and returns after at most ``budget`` projections or
    ``max_iter`` completed sweeps.  Returns (sweeps completed, next constraint, dual change
    of the last completed sweep, code, bad constraint, projections); code RUNNING when the
    budget ran out."""
    m = I.shape[0] if kernel else V.shape[0]
    u = np.empty(M.shape[0])
    c = c0
    done = 0
    for sweep in range(max_iter):
        if c == 0:
            lam_old[:] = lam
        while c < m:
            if done >= budget:
                return sweep, c, change, RUNNING, -1, done
            p = _direction(M, I, J, V, kernel, c, u)
            if not (p > 0.0):
                return sweep, c, change, (NONFINITE if not np.isfinite(p) else NONPOSITIVE_DISTANCE), c, done
            alpha, beta, xnew = project(p, delta[c], xi[c], lam[c], gamma)
            xi[c] = xnew
            lam[c] -= alpha
            if beta != 0.0:
                rank_one_update(M, u, beta)
            c += 1
            done += 1
        c = 0
        change = dual_change(lam, lam_old)
        code = sweep_end(change, tol)
        if code != NOT_CONVERGED:
            return sweep + 1, 0, change, code, -1, done
    return max_iter, 0, change, NOT_CONVERGED, -1, done


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _run_kernel(K, I, J, delta, xi, lam, lam_old, gamma, tol, c0, max_iter, budget, change):
    """:func:`_run` on an n × n kernel K with the constrained pairs (I, J)."""
    V = np.empty((0, 0))
    return _run(K, I, J, V, True, delta, xi, lam, lam_old, gamma, tol, c0, max_iter, budget, change)


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _run_metric(W, V, delta, xi, lam, lam_old, gamma, tol, c0, max_iter, budget, change):
    """:func:`_run` on a d × d W with pair differences V."""
    I = np.empty(0, dtype=np.int64)
    return _run(W, I, I, V, False, delta, xi, lam, lam_old, gamma, tol, c0, max_iter, budget, change)


@nb.njit(cache=True, error_model="numpy")
def _sweeps_kernel(K, I, J, delta, xi, lam, gamma, tol, max_iter):
    """Whole cyclic sweeps on K in place until the dual change is below ``tol`` or
    ``max_iter`` sweeps; returns (sweeps, change, code, bad constraint).  :func:`_run_kernel`
    without a work budget."""
    s, _, change, code, bad, _ = _run_kernel(
        K, I, J, delta, xi, lam, np.empty(lam.shape[0]), gamma, tol, 0, max_iter, _NO_BUDGET, np.inf
    )
    return s, change, code, bad


@nb.njit(cache=True, error_model="numpy")
def _sweeps_metric(W, V, delta, xi, lam, gamma, tol, max_iter):
    """:func:`_sweeps_kernel` on a d × d W with pair differences V (:func:`_run_metric`)."""
    s, _, change, code, bad, _ = _run_metric(
        W, V, delta, xi, lam, np.empty(lam.shape[0]), gamma, tol, 0, max_iter, _NO_BUDGET, np.inf
    )
    return s, change, code, bad


def _drive(step, m, max_iter, lam, time_limit=None, watch=None):
    """Run a resumable kernel ``step(c0, sweeps, budget, change)`` (:func:`_run_kernel`
    protocol) in chunks of about :data:`~cvxkml._config.CHUNK_SECONDS` until it stops, the
    sweep limit, ``time_limit`` seconds or a Farkas ray (``watch``).  Returns (sweeps,
    change, code, bad, extra)."""
    budget = WorkBudget(start=min(max(m, 1), 4096))
    sweeps, c0, change = 0, 0, np.inf
    extra = {}
    t0 = time.perf_counter()
    while True:
        left = max_iter - sweeps
        if watch is not None:
            left = min(left, max(watch.next - sweeps, 1))
        tc = time.perf_counter()
        s, c0, change, code, bad, done = step(c0, left, budget.units, change)
        now = time.perf_counter()
        budget.update(done, now - tc)
        sweeps += int(s)
        if code in (OK, NONFINITE, NONPOSITIVE_DISTANCE):
            break
        if code == NOT_CONVERGED:  # a check point or the sweep limit
            if sweeps >= max_iter:
                break
            if watch is not None and sweeps >= watch.next:
                ray = watch.check(sweeps, lam)
                if ray is not None:
                    extra.update(ray)
                    break
        if time_limit is not None and now - t0 >= time_limit:
            code = NOT_CONVERGED
            extra["stopped"] = "time_limit"
            break
    return sweeps, change, (NOT_CONVERGED if code == RUNNING else code), bad, extra


def _prepare(delta, bound, gamma, lam0):
    delta = np.ascontiguousarray(delta, dtype=np.float64)
    xi = np.array(bound, dtype=np.float64)
    lam = np.zeros(delta.size) if lam0 is None else np.array(lam0, dtype=np.float64)
    g = np.inf if gamma is None else float(gamma)
    return delta, xi, lam, g


def _solve(run, M, data, gram, delta, xi, lam, g, tol, max_iter, time_limit, detect_infeasible):
    """The driver of both forms: ``run`` (:func:`_run_kernel` with data = (I, J), or
    :func:`_run_metric` with data = (V,)) on M in place through :func:`_drive`, with a
    :class:`FarkasWatch` on hard constraints whose Gram matrix of the constraints S is
    ``gram(M0, S)`` (M0: M at the start); returns the :class:`FastResult` (M symmetrized)."""
    time_limit = check_time_limit(time_limit)
    lam_old = np.empty_like(lam)
    tol = float(tol)
    watch = None
    if detect_infeasible and np.isinf(g):
        M0 = M.copy()
        watch = FarkasWatch(lambda S: (gram(M0, S), delta[S], np.arange(S.size)), delta * xi)

    def step(c0, sweeps, budget, change):
        return run(M, *data, delta, xi, lam, lam_old, g, tol, c0, sweeps, budget, change)

    t0 = time.perf_counter()
    sweeps, change, code, bad, extra = _drive(step, data[0].shape[0], int(max_iter), lam, time_limit, watch)
    t = time.perf_counter() - t0
    M = 0.5 * (M + M.T)
    return FastResult(M, lam, xi, int(sweeps), float(change), int(code), int(bad), t, extra=extra)


@blas_limit()
def bregman_kernel(
    K0,
    i,
    j,
    delta,
    bound,
    gamma=None,
    tol=1e-9,
    max_iter=10_000,
    lam0=None,
    *,
    time_limit=None,
    detect_infeasible=True,
    max_sweeps=None,
) -> FastResult:
    """Cyclic Bregman projections on an n × n kernel matrix (Jain et al. Algorithm 1).

    ``gamma=None`` means hard constraints.  Works for rank-deficient K0 (the range space
    is kept); every constrained pair must have a positive distance under K0.
    ``time_limit`` (seconds) stops the run with NOT_CONVERGED (``extra["stopped"]``);
    ``detect_infeasible`` (hard constraints only) stops a diverging dual early with
    ``extra["farkas_ray"]`` (module doc).  Ctrl-C raises KeyboardInterrupt within ~0.1 s.
    ``max_iter`` is the sweep limit (``max_sweeps``: its deprecated former name).
    """
    max_iter = iteration_limit("bregman_kernel", max_iter, max_sweeps, stacklevel=5)  # 5: past blas_limit
    K = np.array(K0, dtype=np.float64, order="C")
    delta, xi, lam, g = _prepare(delta, bound, gamma, lam0)
    I = np.ascontiguousarray(i, dtype=np.int64)
    J = np.ascontiguousarray(j, dtype=np.int64)

    def gram(K0c, S):
        a, b = I[S], J[S]
        return K0c[np.ix_(a, a)] - K0c[np.ix_(a, b)] - K0c[np.ix_(b, a)] + K0c[np.ix_(b, b)]

    return _solve(_run_kernel, K, (I, J), gram, delta, xi, lam, g, tol, max_iter, time_limit, detect_infeasible)


@blas_limit()
def bregman_metric(
    W0,
    X,
    i,
    j,
    delta,
    bound,
    gamma=None,
    tol=1e-9,
    max_iter=10_000,
    lam0=None,
    *,
    time_limit=None,
    detect_infeasible=True,
    max_sweeps=None,
) -> FastResult:
    """Cyclic Bregman projections on a d × d Mahalanobis matrix (Davis et al. 2007);
    ``max_iter``, ``time_limit`` and ``detect_infeasible`` as in :func:`bregman_kernel`."""
    max_iter = iteration_limit("bregman_metric", max_iter, max_sweeps, stacklevel=5)  # 5: past blas_limit
    W = np.array(W0, dtype=np.float64, order="C")
    X = np.asarray(X, dtype=np.float64)
    V = np.ascontiguousarray(X[np.asarray(i)] - X[np.asarray(j)])
    delta, xi, lam, g = _prepare(delta, bound, gamma, lam0)

    def gram(W0c, S):
        VS = V[S]
        return VS @ W0c @ VS.T

    return _solve(_run_metric, W, (V,), gram, delta, xi, lam, g, tol, max_iter, time_limit, detect_infeasible)


#: The benchmark hook: the compiled loops ``python -m benchmarks bench itml`` times, by role.
#: ``sweeps_metric(W, V, delta, xi, lam, gamma, tol, max_iter)`` and
#: ``sweeps_kernel(K, I, J, delta, xi, lam, gamma, tol, max_iter)`` run whole cyclic sweeps
#: in place; ``project(p, delta_c, xi_c, lam_c, gamma)`` returns one projection's
#: (alpha, beta, new xi) (``.py_func``: the same code in plain Python).
BENCH_KERNELS = {"sweeps_metric": _sweeps_metric, "sweeps_kernel": _sweeps_kernel, "project": project}
