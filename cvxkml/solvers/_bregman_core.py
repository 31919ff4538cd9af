"""The pieces every Bregman-projection solver shares: the dense ITML/LogDet solver
(:mod:`~cvxkml.solvers.bregman`), the low-rank one (:mod:`~cvxkml.solvers.lowrank`), von
Neumann's (:mod:`~cvxkml.solvers.vonneumann`) and the LogDet-barrier one
(:mod:`~cvxkml.solvers.sdp_logdet`).

Compiled kernels (Numba, cached):

* :func:`project` — one LogDet projection's (α, β, new ξ) from the current squared distance
  (Jain et al. 2012, Algorithm 1, with the slack parameter γ and the dual correction α ≤ λ_c);
* :func:`quadratic_roots` — the cancellation-free roots of a quadratic (the root finders of the
  rank-two and von Neumann projections);
* :func:`quadratic_form` — u = M v, vᵀ M v and vᵀ v for one row v of a matrix of directions;
* :func:`rank_one_update` — M ← M + β u uᵀ;
* :func:`dual_change` and :func:`sweep_end` — the tail of every sweep: the relative dual change
  Σ|λ − λ_old| / Σ(|λ| + |λ_old|) and the code it gives (NONFINITE, OK below ``tol``, else
  NOT_CONVERGED).

Python:

* :func:`check_time_limit` — a ``time_limit`` argument checked;
* :func:`run_sliced` — a compiled sweep loop run in calls of about ``budget.units``
  projections (Ctrl-C and time limits between calls), whole sweeps when one fits the budget,
  else one sweep in slices, with the same iterates and return values as one call.
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np

from .result import NONFINITE, NOT_CONVERGED, OK


@nb.njit(cache=True, inline="always")
def quadratic_roots(a, b, c):
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
def project(p, d, xi_c, lam_c, gamma):
    """One Bregman projection parameter for the constraint d·(p − ξ_c) ≤ 0 at the current
    squared distance ``p`` (``gamma`` = inf: hard constraint): returns (alpha, beta, new xi),
    α = min(λ_c, d·γ/(γ+1)·(1/p − 1/ξ_c)), β = dα / (1 − dαp), ξ_c ← γξ_c / (γ + dαξ_c)."""
    hard = np.isinf(gamma)
    factor = 1.0 if hard else gamma / (gamma + 1.0)
    alpha = min(lam_c, d * factor * (1.0 / p - 1.0 / xi_c))
    beta = d * alpha / (1.0 - d * alpha * p)
    if not hard:
        xi_c = gamma * xi_c / (gamma + d * alpha * xi_c)
    return alpha, beta, xi_c


@nb.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def quadratic_form(M, V, c, u):
    """u = M v for v = V[c] (M n × n); returns (vᵀ M v, vᵀ v), each sum in index order (a
    caller that drops vᵀ v does not pay for it: the function is inlined)."""
    n = M.shape[0]
    p = 0.0
    nu = 0.0
    for a in range(n):
        s = 0.0
        for b in range(n):
            s += M[a, b] * V[c, b]
        u[a] = s
        p += V[c, a] * s
        nu += V[c, a] * V[c, a]
    return p, nu


@nb.njit(cache=True, error_model="numpy")
def rank_one_update(M, u, beta):
    """M ← M + β u uᵀ (full symmetric matrix, in place)."""
    n = u.shape[0]
    for a in range(n):
        bu = beta * u[a]
        for b in range(n):
            M[a, b] += bu * u[b]


@nb.njit(cache=True, error_model="numpy")
def dual_change(lam, lam_old):
    """Σ|λ − λ_old| / Σ(|λ| + |λ_old|) (0 when both are 0)."""
    num = 0.0
    den = 0.0
    for c in range(lam.shape[0]):
        num += abs(lam[c] - lam_old[c])
        den += abs(lam[c]) + abs(lam_old[c])
    return 0.0 if den == 0.0 else num / den


@nb.njit(cache=True, inline="always")
def sweep_end(change, tol):
    """The code a finished sweep with this stopping quantity gives: NONFINITE when it is not
    finite, OK when it is below ``tol``, else NOT_CONVERGED (go on)."""
    if not np.isfinite(change):
        return NONFINITE
    if change < tol:
        return OK
    return NOT_CONVERGED


def check_time_limit(time_limit):
    """``time_limit`` as a positive float, or None."""
    if time_limit is None:
        return None
    t = float(time_limit)
    if not t > 0:
        raise ValueError(f"time_limit must be a positive number of seconds or None; got {time_limit!r}.")
    return t


def run_sliced(whole, piece, begin, change_of, n_sweeps, length, tol, budget):
    """Run up to ``n_sweeps`` sweeps of ``length`` projections each in calls of about
    ``budget.units`` projections (:class:`~cvxkml._config.WorkBudget`).

    Parameters
    ----------
    whole : callable
        ``whole(k) -> (sweeps, change, code, bad)`` runs up to k whole sweeps (the compiled
        loop, stopping on ``tol`` or a breakdown).
    piece : callable
        ``piece(state, a, b) -> (code, bad)`` projects positions a:b of one sweep (no stop).
    begin : callable
        ``begin() -> state`` starts a sliced sweep (e.g. λ before it; a reshuffle).
    change_of : callable
        ``change_of(state) -> change``: the sliced sweep's relative dual change, summed in
        the order of the compiled loop (the same bits).
    n_sweeps, length : int
        The sweep limit and the projections per sweep.
    tol : float
        The stopping tolerance of a sliced sweep (:func:`sweep_end`).
    budget : WorkBudget
        Projections per call, updated from the measured time.

    Returns
    -------
    (sweeps, change, code, bad) as one call of the compiled loop would.
    """
    done = 0
    change = np.inf
    while done < n_sweeps:
        if budget.units >= length:
            k = min(n_sweeps - done, max(1, budget.units // max(length, 1)))
            t = time.perf_counter()
            s, change, code, bad = whole(k)
            budget.update(max(int(s), 1) * length, time.perf_counter() - t)
            done += int(s)
            if code != NOT_CONVERGED:
                return done, change, code, bad
            continue
        state = begin()
        a = 0
        while a < length:
            b = min(length, a + max(budget.units, 1))
            t = time.perf_counter()
            code, bad = piece(state, a, b)
            budget.update(b - a, time.perf_counter() - t)
            if code not in (OK, NOT_CONVERGED):
                return done, change, code, bad
            a = b
        change = change_of(state)
        done += 1
        code = sweep_end(change, tol)
        if code != NOT_CONVERGED:
            return done, change, code, -1
    return done, change, NOT_CONVERGED, -1
