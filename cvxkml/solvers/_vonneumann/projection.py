"""One von Neumann Bregman projection onto a pair constraint (Kulis, Sustik & Dhillon 2009,
Algorithm 3) and the cyclic sweeps over the constraints: deflation, the eigenvectors from
the roots (Gu & Eisenstat's recomputed weights), W ← W U."""

from __future__ import annotations

import numba as nb
import numpy as np

from .._bregman_core import dual_change, run_sliced, sweep_end
from ..result import NONFINITE, NOT_CONVERGED
from .secular import _secular, _zerofinder_w

#: stats layout of the kernels (a caller may pass a shorter array: only the first two are
#: then written): evaluations of h, projections that ran ZEROFINDER, projections skipped
#: by the exact shortcut, root-finder passes over the poles, roots solved
_N_STATS = 5


# --------------------------------------------------------------------- eigenvectors
@nb.njit(cache=True, error_model="numpy")
def _eigvecs_t(d, z, rho, anchor, tau, Ut):
    """Gu–Eisenstat eigenvectors of diag(d) + ρ z zᵀ from its roots, as the rows of Ut
    (Ut[j] = u_j).  Δ_ji = d_i − λ_j = (d_i − d_{a_j}) − τ_j (anchored, accurate);
    ẑ_i² = −(Δ_ii/ρ) Π_{j≠i} Δ_ji/(d_i − d_j), u_j ∝ ẑ / Δ_j."""
    k = d.shape[0]
    prod = np.empty(k)
    for i in range(k):
        prod[i] = 1.0
    for j in range(k):
        da = d[anchor[j]]
        tj = tau[j]
        dj = d[j]
        row = Ut[j]
        for i in range(k):
            delta = (d[i] - da) - tj
            row[i] = delta  # Δ_ji, kept for the vectors below
            prod[i] *= (-delta / rho) if i == j else delta / (d[i] - dj)
    for i in range(k):
        prod[i] = np.sqrt(max(prod[i], 0.0)) * (1.0 if z[i] >= 0 else -1.0)
    for j in range(k):
        row = Ut[j]
        s = 0.0
        for i in range(k):
            u = prod[i] / row[i]
            row[i] = u
            s += u * u
        s = 1.0 / np.sqrt(s) if s > 0.0 else np.nan  # NaN: caught by project_pair's guard
        for i in range(k):
            row[i] *= s


@nb.njit(cache=True, error_model="numpy")
def eigvecs_from_roots(d, z, rho, anchor, tau, U):
    """Gu–Eisenstat eigenvectors of diag(d) + ρ z zᵀ from its computed roots (columns of U)."""
    k = d.shape[0]
    Ut = np.empty((k, k))
    _eigvecs_t(d, z, rho, anchor, tau, Ut)
    for i in range(k):
        for j in range(k):
            U[i, j] = Ut[j, i]


# --------------------------------------------------------------------- one projection
@nb.njit(cache=True, error_model="numpy")
def _deflate(q, w, W, tol_w, tol_q):
    """Givens-merge clustered q (rotating W's columns and w), return the active indices
    sorted by q.  Deflated entries keep their (q_i, e_i) eigenpair."""
    r = q.shape[0]
    nw = 0.0
    for i in range(r):
        nw += w[i] * w[i]
    nw = np.sqrt(nw)
    order = np.argsort(q)
    active = np.empty(r, dtype=np.int64)
    k = 0
    for t in range(r):
        i = order[t]
        if abs(w[i]) <= tol_w * nw:
            continue
        if k > 0:
            p = active[k - 1]
            if abs(q[i] - q[p]) <= tol_q * max(1.0, abs(q[i])):
                # rotate (p, i) so that w_i becomes 0: [c s; −s c]
                rr = np.hypot(w[p], w[i])
                c = w[p] / rr
                s = w[i] / rr
                for a in range(W.shape[0]):
                    wp = W[a, p]
                    wi = W[a, i]
                    W[a, p] = c * wp + s * wi
                    W[a, i] = -s * wp + c * wi
                w[p] = rr
                w[i] = 0.0
                q[i] = q[p]
                continue
        active[k] = i
        k += 1
    return active[:k]


@nb.njit(cache=True, error_model="numpy")
def _log_h0(q, w):
    """log h(0) = log Σ e^{q_i} w_i² (−inf for w = 0), overflow-safe."""
    r = q.shape[0]
    m = -np.inf
    for i in range(r):
        if w[i] != 0.0 and q[i] > m:
            m = q[i]
    if m == -np.inf:
        return -np.inf
    s = 0.0
    for i in range(r):
        s += np.exp(q[i] - m) * (w[i] * w[i])
    return m + np.log(s)


@nb.njit(cache=True, error_model="numpy")
def _all_finite(A):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if not np.isfinite(A[i, j]):
                return False
    return True


@nb.njit(cache=True, error_model="numpy")
def project_pair(W, q, v, target, delta, lam_c, gamma, stats):
    """One von Neumann Bregman projection (in place on W, q).  Returns (Δλ, new target).

    ``stats``: [evaluations of h, projections that ran ZEROFINDER] and, when it has
    ``_N_STATS`` entries, [shortcut skips, passes over the poles, roots solved]."""
    r = q.shape[0]
    w = np.zeros(r)
    for i in range(r):  # w = Wᵀv (row-wise: contiguous)
        vi = v[i]
        for j in range(r):
            w[j] += W[i, j] * vi
    long_stats = stats.shape[0] >= _N_STATS
    if lam_c == 0.0:
        # exact shortcut: a satisfied constraint without multiplier is not moved
        lh0 = _log_h0(q, w)
        lt = np.log(target)
        if lh0 == -np.inf:
            return 0.0, target
        if np.isfinite(lh0) and np.isfinite(lt) and delta * (lh0 - lt) <= 0.0:
            if long_stats:
                stats[2] += 1
            return 0.0, target
    idx = _deflate(q, w, W, 1e-14, 1e-12)
    k = idx.shape[0]
    if k == 0:
        return 0.0, target
    d = np.empty(k)
    z = np.empty(k)
    for t in range(k):
        d[t] = q[idx[t]]
        z[t] = w[idx[t]]
    anchor = np.empty(k, dtype=np.int64)
    tau = np.empty(k)
    lam = np.empty(k)
    c2 = np.empty(k)
    dd = np.empty(k)
    e = np.empty(k)
    counts = np.zeros(2)
    inv_g = 0.0 if np.isinf(gamma) else 1.0 / gamma
    theta_star, evals = _zerofinder_w(d, z, np.log(target), inv_g, anchor, tau, lam, c2, dd, e, counts)
    stats[0] += evals
    stats[1] += 1
    if not np.isfinite(theta_star):
        return np.nan, np.nan  # the caller reports NONFINITE at this constraint
    dlam = max(-delta * theta_star, -lam_c)
    theta = -delta * dlam
    if theta == 0.0:
        if long_stats:
            stats[3] += counts[0]
            stats[4] += counts[1]
        return 0.0, target
    if theta != theta_star:
        # clipped by the dual correction: same sign, |θ| < |θ*| — warm from the roots at θ*
        counts[0] += _secular(d, z, theta, anchor, tau, c2, True, theta - theta_star, dd)
        counts[1] += k
    if long_stats:
        stats[3] += counts[0]
        stats[4] += counts[1]
    Ut = np.empty((k, k))
    _eigvecs_t(d, z, theta, anchor, tau, Ut)
    if not _all_finite(Ut):
        # guard: a warm root on a pole would give u = ẑ/0; redo the roots cold
        _secular(d, z, theta, anchor, tau, c2, False, 0.0, dd)
        _eigvecs_t(d, z, theta, anchor, tau, Ut)
        if not _all_finite(Ut):
            return np.nan, np.nan  # reported as NONFINITE, W untouched
    # W[:, idx] ← W[:, idx] U  (U = Utᵀ; one BLAS-3 product)
    nr = W.shape[0]
    Wa = np.empty((nr, k))
    for a in range(nr):
        for t in range(k):
            Wa[a, t] = W[a, idx[t]]
    Wn = np.dot(Wa, Ut.T)
    for a in range(nr):
        for t in range(k):
            W[a, idx[t]] = Wn[a, t]
    for t in range(k):
        q[idx[t]] = d[anchor[t]] + tau[t]
    new_target = target
    if not np.isinf(gamma):
        new_target = target * np.exp(-theta / gamma)
    return dlam, new_target


# --------------------------------------------------------------------- sweeps
@nb.njit(cache=True, nogil=True, error_model="numpy")
def _sweeps_vn_set(W, q, F, I, J, delta, xi, lam, gamma, tol, max_iter, stats, order):
    """Sweeps over the constraints ``order`` (in that order) until the relative dual change
    of a sweep is below ``tol`` or ``max_iter``; returns (sweeps, change, code, bad
    constraint)."""
    m = I.shape[0]
    r = q.shape[0]
    v = np.empty(r)
    lam_old = np.empty(m)
    change = np.inf
    for sweep in range(max_iter):
        lam_old[:] = lam
        for t in range(order.shape[0]):
            c = order[t]
            ic = I[c]
            jc = J[c]
            for a in range(r):
                v[a] = F[ic, a] - F[jc, a]
            dl, xnew = project_pair(W, q, v, xi[c], delta[c], lam[c], gamma, stats)
            if not (np.isfinite(xnew) and np.isfinite(dl)):
                return sweep, change, NONFINITE, c
            lam[c] += dl
            xi[c] = xnew
        change = dual_change(lam, lam_old)
        code = sweep_end(change, tol)
        if code != NOT_CONVERGED:
            return sweep + 1, change, code, -1
    return max_iter, change, NOT_CONVERGED, -1


@nb.njit(cache=True, error_model="numpy")
def _sweeps_vn(W, q, F, I, J, delta, xi, lam, gamma, tol, max_iter, stats):
    """Full cyclic sweeps (the paper's loop): see :func:`_sweeps_vn_set`."""
    order = np.arange(I.shape[0])
    return _sweeps_vn_set(W, q, F, I, J, delta, xi, lam, gamma, tol, max_iter, stats, order)


def _vn_run(W, q, F, I, J, delta, xi, lam, gamma, tol, n_sweeps, stats, order, budget):
    """:func:`_sweeps_vn_set` in calls of about ``budget.units`` projections
    (:func:`~cvxkml.solvers._bregman_core.run_sliced`): whole sweeps when one fits the
    budget, else one sweep in slices of ``order``.  Same iterates and return values as one
    call."""

    def whole(k):
        return _sweeps_vn_set(W, q, F, I, J, delta, xi, lam, gamma, tol, k, stats, order)

    def piece(start, a, b):
        _, _, code, bad = _sweeps_vn_set(W, q, F, I, J, delta, xi, lam, gamma, -1.0, 1, stats, order[a:b])
        return code, bad

    def change_of(start):
        return dual_change(lam, start)

    return run_sliced(whole, piece, lam.copy, change_of, n_sweeps, order.shape[0], tol, budget)
