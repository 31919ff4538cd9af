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
"""
from __future__ import annotations

import time

import numba as nb
import numpy as np

from .._config import blas_limit
# status codes of the jitted loops: cvxkml.solvers.result.Status
from .result import NONFINITE, NONPOSITIVE_DISTANCE, NOT_CONVERGED, OK, FastResult

BregmanResult = FastResult        # the former name of the public result type


@nb.njit(cache=True, inline="always")
def _quadratic_roots(a, b, c):
    """The roots of a x² + b x + c = 0 (a ≠ 0) by the cancellation-free formula
    q = −½(b + sign(b)√disc): (q / a, c / q), c / q NaN when q = 0; (NaN, NaN) when the
    discriminant is negative or NaN."""
    disc = b * b - 4.0 * a * c
    if not disc >= 0.0:
        return np.nan, np.nan
    sq = np.sqrt(disc)
    q = -0.5 * (b + (sq if b >= 0 else -sq))
    return q / a, (c / q if q != 0.0 else np.nan)


@nb.njit(cache=True, fastmath=False)
def _project(p, d, xi_c, lam_c, gamma):
    """One Bregman projection parameter: returns (alpha, beta, new xi)."""
    hard = np.isinf(gamma)
    factor = 1.0 if hard else gamma / (gamma + 1.0)
    alpha = min(lam_c, d * factor * (1.0 / p - 1.0 / xi_c))
    beta = d * alpha / (1.0 - d * alpha * p)
    if not hard:
        xi_c = gamma * xi_c / (gamma + d * alpha * xi_c)
    return alpha, beta, xi_c


@nb.njit(cache=True, error_model="numpy")
def _rank_one_update(M, u, beta):
    """M ← M + β u uᵀ (full symmetric matrix)."""
    n = u.shape[0]
    for a in range(n):
        bu = beta * u[a]
        for b in range(n):
            M[a, b] += bu * u[b]


@nb.njit(cache=True, error_model="numpy")
def _dual_change(lam, lam_old):
    num = 0.0
    den = 0.0
    for c in range(lam.shape[0]):
        num += abs(lam[c] - lam_old[c])
        den += abs(lam[c]) + abs(lam_old[c])
    return 0.0 if den == 0.0 else num / den


@nb.njit(cache=True, error_model="numpy")
def _sweeps_kernel(K, I, J, delta, xi, lam, gamma, tol, max_sweeps):
    n = K.shape[0]
    m = I.shape[0]
    Kz = np.empty(n)
    lam_old = np.empty(m)
    change = np.inf
    for sweep in range(max_sweeps):
        lam_old[:] = lam
        for c in range(m):
            i = I[c]
            j = J[c]
            for t in range(n):                     # K z = K[:, i] − K[:, j] (rows: K symmetric)
                Kz[t] = K[i, t] - K[j, t]
            p = Kz[i] - Kz[j]
            if not (p > 0.0):
                return sweep, change, (NONFINITE if not np.isfinite(p) else NONPOSITIVE_DISTANCE), c
            alpha, beta, xnew = _project(p, delta[c], xi[c], lam[c], gamma)
            xi[c] = xnew
            lam[c] -= alpha
            if beta != 0.0:
                _rank_one_update(K, Kz, beta)
        change = _dual_change(lam, lam_old)
        if not np.isfinite(change):
            return sweep + 1, change, NONFINITE, -1
        if change < tol:
            return sweep + 1, change, OK, -1
    return max_sweeps, change, NOT_CONVERGED, -1


@nb.njit(cache=True, error_model="numpy")
def _sweeps_metric(W, V, delta, xi, lam, gamma, tol, max_sweeps):
    d = W.shape[0]
    m = V.shape[0]
    Wv = np.empty(d)
    lam_old = np.empty(m)
    change = np.inf
    for sweep in range(max_sweeps):
        lam_old[:] = lam
        for c in range(m):
            p = 0.0
            for a in range(d):                     # W v and p = vᵀ W v
                s = 0.0
                for b in range(d):
                    s += W[a, b] * V[c, b]
                Wv[a] = s
                p += V[c, a] * s
            if not (p > 0.0):
                return sweep, change, (NONFINITE if not np.isfinite(p) else NONPOSITIVE_DISTANCE), c
            alpha, beta, xnew = _project(p, delta[c], xi[c], lam[c], gamma)
            xi[c] = xnew
            lam[c] -= alpha
            if beta != 0.0:
                _rank_one_update(W, Wv, beta)
        change = _dual_change(lam, lam_old)
        if not np.isfinite(change):
            return sweep + 1, change, NONFINITE, -1
        if change < tol:
            return sweep + 1, change, OK, -1
    return max_sweeps, change, NOT_CONVERGED, -1


def _prepare(delta, bound, gamma, lam0):
    delta = np.ascontiguousarray(delta, dtype=np.float64)
    xi = np.array(bound, dtype=np.float64)
    lam = np.zeros(delta.size) if lam0 is None else np.array(lam0, dtype=np.float64)
    g = np.inf if gamma is None else float(gamma)
    return delta, xi, lam, g


@blas_limit()
def bregman_kernel(K0, i, j, delta, bound, gamma=None, tol=1e-9, max_sweeps=10_000,
                   lam0=None) -> BregmanResult:
    """Cyclic Bregman projections on an n × n kernel matrix (Jain et al. Algorithm 1).

    ``gamma=None`` means hard constraints.  Works for rank-deficient K0 (the range space
    is kept); every constrained pair must have a positive distance under K0.
    """
    K = np.array(K0, dtype=np.float64, order="C")
    delta, xi, lam, g = _prepare(delta, bound, gamma, lam0)
    I = np.ascontiguousarray(i, dtype=np.int64)
    J = np.ascontiguousarray(j, dtype=np.int64)
    t0 = time.perf_counter()
    sweeps, change, code, bad = _sweeps_kernel(K, I, J, delta, xi, lam, g, float(tol), int(max_sweeps))
    t = time.perf_counter() - t0
    K = 0.5 * (K + K.T)
    return BregmanResult(K, lam, xi, int(sweeps), float(change), int(code), int(bad), t)


@blas_limit()
def bregman_metric(W0, X, i, j, delta, bound, gamma=None, tol=1e-9, max_sweeps=10_000,
                   lam0=None) -> BregmanResult:
    """Cyclic Bregman projections on a d × d Mahalanobis matrix (Davis et al. 2007)."""
    W = np.array(W0, dtype=np.float64, order="C")
    X = np.asarray(X, dtype=np.float64)
    V = np.ascontiguousarray(X[np.asarray(i)] - X[np.asarray(j)])
    delta, xi, lam, g = _prepare(delta, bound, gamma, lam0)
    t0 = time.perf_counter()
    sweeps, change, code, bad = _sweeps_metric(W, V, delta, xi, lam, g, float(tol), int(max_sweeps))
    t = time.perf_counter() - t0
    W = 0.5 * (W + W.T)
    return BregmanResult(W, lam, xi, int(sweeps), float(change), int(code), int(bad), t)
