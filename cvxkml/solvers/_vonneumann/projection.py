"""One von Neumann Bregman projection onto a pair constraint (Kulis, Sustik & Dhillon 2009,
Algorithm 3) and the cyclic sweeps over the constraints: deflation, the eigenvectors from
the roots (Gu & Eisenstat's recomputed weights), W ← W U."""

from __future__ import annotations

import numba as nb
import numpy as np

from .._bregman_core import dual_change, run_sliced, sweep_end
from ..result import NONFINITE, NOT_CONVERGED
from .secular import _FM, EXACT_FTOL, _secular_k, _zerofinder_r

#: stats layout of the kernels (a caller may pass a shorter array: only the first two are
#: then written): evaluations of h, projections that ran ZEROFINDER, projections skipped
#: by the exact shortcut, root-finder passes over the poles, roots solved
_N_STATS = 5


# --------------------------------------------------------------------- eigenvectors
@nb.njit(cache=True, error_model="numpy", fastmath=_FM)
def _cauchy_rows(Ut, zhat, k):
    """Ut[j] ← ẑ ∘ Ut[j], normalized (Ut[j] holds 1/Δ_j on entry): u_j ∝ ẑ / Δ_j.  Only the
    sum of squares is a reduction (reassociated); no difference is formed here."""
    for j in range(k):
        row = Ut[j]
        s = 0.0
        for i in range(k):
            u = zhat[i] * row[i]
            row[i] = u
            s += u * u
        s = 1.0 / np.sqrt(s) if s > 0.0 else np.nan  # NaN: caught by the caller's guard
        for i in range(k):
            row[i] *= s


@nb.njit(cache=True, error_model="numpy")
def _eigvecs_r(d, z, rho, anchor, tau, Ut, prod):
    """Gu–Eisenstat eigenvectors of diag(d) + ρ z zᵀ from its roots, as the rows of Ut
    (Ut[j] = u_j), from Ut[j, i] = 1/Δ_ji on entry (the last root-finder pass leaves it:
    :func:`~cvxkml.solvers._vonneumann.secular._secular_k`).  Δ_ji = d_i − λ_j = (d_i −
    d_{a_j}) − τ_j (anchored, accurate); ẑ_i² = −(Δ_ii/ρ) Π_{j≠i} Δ_ji/(d_i − d_j) =
    −(Δ_ii/ρ) / Π_{j≠i} (d_i − d_j)/Δ_ji, the product over j of well-scaled ratios (interlacing)
    formed from the Cauchy matrix by multiplications; u_j ∝ ẑ / Δ_j (Gu & Eisenstat's
    recomputed weights: U orthogonal to working precision).  k divisions."""
    k = d.shape[0]
    for i in range(k):
        prod[i] = 1.0
    for j in range(k):
        dj = d[j]
        Cj = Ut[j]
        pj = prod[j]
        for i in range(k):  # whole rows, vectorized; the factor of i = j (0) is undone below
            prod[i] *= (d[i] - dj) * Cj[i]
        prod[j] = pj
    for i in range(k):
        dii = (d[i] - d[anchor[i]]) - tau[i]
        prod[i] = np.sqrt(max(-dii / (rho * prod[i]), 0.0)) * (1.0 if z[i] >= 0 else -1.0)
    _cauchy_rows(Ut, prod, k)


@nb.njit(cache=True, error_model="numpy")
def _eigvecs_t(d, z, rho, anchor, tau, Ut):
    """Gu–Eisenstat eigenvectors of diag(d) + ρ z zᵀ from its roots, as the rows of Ut
    (Ut[j] = u_j): :func:`_eigvecs_r` with its own Cauchy matrix."""
    k = d.shape[0]
    for j in range(k):
        da = d[anchor[j]]
        for i in range(k):
            Ut[j, i] = 1.0 / ((d[i] - da) - tau[j])
    _eigvecs_r(d, z, rho, anchor, tau, Ut, np.empty(k))


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
def _deflate_rows(q, w, Wt, tol_w, tol_q):
    """Givens-merge clustered q (rotating the rows of Wt = Wᵀ and w), return the active
    indices sorted by q.  Deflated entries keep their (q_i, e_i) eigenpair."""
    r = q.shape[0]
    nw = 0.0
    for i in range(r):
        nw += w[i] * w[i]
    nw = np.sqrt(nw)
    order = np.arange(r)  # the sweeps store q in increasing order: no sort needed then
    for i in range(r - 1):
        if q[i + 1] < q[i]:
            order = np.argsort(q)
            break
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
                for a in range(Wt.shape[1]):
                    wp = Wt[p, a]
                    wi = Wt[i, a]
                    Wt[p, a] = c * wp + s * wi
                    Wt[i, a] = -s * wp + c * wi
                w[p] = rr
                w[i] = 0.0
                q[i] = q[p]
                continue
        active[k] = i
        k += 1
    return active[:k]


@nb.njit(cache=True, error_model="numpy")
def _deflate(q, w, W, tol_w, tol_q):
    """:func:`_deflate_rows` on the columns of W (W's eigenvectors are its columns)."""
    return _deflate_rows(q, w, W.T, tol_w, tol_q)


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


@nb.njit(cache=True, error_model="numpy", fastmath=_FM)
def _all_finite(A):
    """Whether every entry of A is finite: Σ a_ij · 0 is 0 then and NaN otherwise (inf · 0 and
    NaN · 0 are NaN).  One reduction without branches, so vectorized (reassociation only: the
    product with 0 is not folded)."""
    s = 0.0
    for i in range(A.shape[0]):
        row = A[i]
        for j in range(A.shape[1]):
            s += row[j] * 0.0
    return s == 0.0


@nb.njit(cache=True, error_model="numpy", fastmath=_FM)
def _matvec(Wt, v, w):
    """w = Wt v (row dot products; reassociated sums, so vectorized)."""
    r = Wt.shape[0]
    c = Wt.shape[1]
    for j in range(r):
        row = Wt[j]
        s = 0.0
        for i in range(c):
            s += row[i] * v[i]
        w[j] = s


@nb.njit(cache=True, error_model="numpy")
def _new_work(r):
    """Scratch of :func:`_project_t` for rank r (allocated once per sweep call): three flat
    r² buffers (Ut, the gathered rows of Wᵀ, their product) and nine r-vectors."""
    return np.empty((3, r * r)), np.empty((9, r)), np.empty(r, dtype=np.int64)


@nb.njit(cache=True, error_model="numpy")
def _rotate_rows(Wt, Wn, idx, Ut, mats, k):
    """Wt[idx] ← Ut Wt[idx] (W[:, idx] ← W[:, idx] U, U = Utᵀ): one BLAS-3 product of
    C-contiguous k × k and k × r operands.  When idx is 0, 1, …, r − 1 (q stored in
    increasing order, nothing deflated: the usual case, see :func:`_sort_storage`) the
    product reads Wt itself and is written to Wn (returns True: Wn is the new Wᵀ, the
    caller swaps the buffers); otherwise the k rows are gathered and scattered back into Wt
    (returns False)."""
    r = Wt.shape[1]
    whole = k == Wt.shape[0]
    for t in range(k):
        if idx[t] != t:
            whole = False
            break
    if whole:
        np.dot(Ut, Wt, Wn)
        return True
    P = mats[2, : k * r].reshape((k, r))
    G = mats[1, : k * r].reshape((k, r))
    for t in range(k):
        G[t, :] = Wt[idx[t], :]
    np.dot(Ut, G, P)
    for t in range(k):
        Wt[idx[t], :] = P[t, :]
    return False


@nb.njit(cache=True, error_model="numpy")
def _sort_storage(Wt, q, mats):
    """Permute q into increasing order and the rows of Wt with it (X̂ = Σ e^{q_i} w_i w_iᵀ
    does not change), so that the next projection's active set is 0, …, r − 1 and W ← W U
    needs no gather (:func:`_rotate_rows`).  O(r) when q is already sorted."""
    r = q.shape[0]
    ordered = True
    for i in range(r - 1):
        if q[i + 1] < q[i]:
            ordered = False
            break
    if ordered:
        return
    order = np.argsort(q, kind="mergesort")
    G = mats[1, : r * r].reshape((r, r))
    qs = q[order]
    for t in range(r):
        G[t, :] = Wt[order[t], :]
    Wt[:, :] = G
    q[:] = qs


@nb.njit(cache=True, error_model="numpy")
def _project_t(Wt, Wn, q, v, target, delta, lam_c, gamma, stats, mats, vecs, anchor, ftol):
    """One von Neumann Bregman projection (Kulis et al. Algorithm 3) on Wt = Wᵀ (rows: the
    eigenvectors of log X̂) and q in place, with the scratch of :func:`_new_work`.
    Returns (Δλ, new target, swapped): when ``swapped`` the new Wᵀ is in Wn (an r × r
    buffer, :func:`_rotate_rows`); (NaN, NaN, False) and Wt, q untouched on a non-finite
    step.  ``ftol``: ZEROFINDER's stop (:data:`~.secular.EXACT_FTOL` for an exact
    projection).

    w = Wᵀv; the exact shortcut (λ = 0 and the constraint holds: the identity); deflation;
    ZEROFINDER for θ* on the secular roots; the dual correction Δλ = max(−δθ*, −λ),
    θ = −δΔλ; the eigenvectors U of diag(q) + θwwᵀ and W ← W U (one gemm)."""
    w = vecs[0]
    _matvec(Wt, v, w)
    long_stats = stats.shape[0] >= _N_STATS
    if lam_c == 0.0:
        # exact shortcut: a satisfied constraint without multiplier is not moved
        lh0 = _log_h0(q, w)
        lt = np.log(target)
        if lh0 == -np.inf:
            return 0.0, target, False
        if np.isfinite(lh0) and np.isfinite(lt) and delta * (lh0 - lt) <= 0.0:
            if long_stats:
                stats[2] += 1
            return 0.0, target, False
    idx = _deflate_rows(q, w, Wt, 1e-14, 1e-12)
    k = idx.shape[0]
    if k == 0:
        return 0.0, target, False
    d, z, tau, lam, c2, dd, e = (
        vecs[1, :k],
        vecs[2, :k],
        vecs[3, :k],
        vecs[4, :k],
        vecs[5, :k],
        vecs[6, :k],
        vecs[7, :k],
    )
    an = anchor[:k]
    for t in range(k):
        d[t] = q[idx[t]]
        z[t] = w[idx[t]]
    counts = np.zeros(2)
    inv_g = 0.0 if np.isinf(gamma) else 1.0 / gamma
    Ut = mats[0, : k * k].reshape((k, k))  # the Cauchy matrix of the roots, then U's rows
    # the dual correction clips θ at δλ_c (δ = ±1): ZEROFINDER tests that point when it passes it
    theta_clip = delta * lam_c if lam_c > 0.0 and abs(delta) == 1.0 else 0.0
    theta_star, evals = _zerofinder_r(
        d, z, np.log(target), inv_g, an, tau, lam, c2, dd, e, counts, Ut, ftol, theta_clip
    )
    stats[0] += evals
    stats[1] += 1
    if not np.isfinite(theta_star):
        return np.nan, np.nan, False  # the caller reports NONFINITE at this constraint
    dlam = max(-delta * theta_star, -lam_c)
    theta = -delta * dlam
    if theta == 0.0:
        if long_stats:
            stats[3] += counts[0]
            stats[4] += counts[1]
        return 0.0, target, False
    if theta != theta_star:
        # clipped by the dual correction: same sign, |θ| < |θ*| — warm from the roots at θ*
        counts[0] += _secular_k(d, z, theta, an, tau, c2, True, theta - theta_star, dd, Ut)
        counts[1] += k
    if long_stats:
        stats[3] += counts[0]
        stats[4] += counts[1]
    prod = vecs[8, :k]
    _eigvecs_r(d, z, theta, an, tau, Ut, prod)
    if not _all_finite(Ut):
        # guard: a warm root on a pole would give u = ẑ/0; redo the roots cold
        _secular_k(d, z, theta, an, tau, c2, False, 0.0, dd, Ut)
        _eigvecs_r(d, z, theta, an, tau, Ut, prod)
        if not _all_finite(Ut):
            return np.nan, np.nan, False  # reported as NONFINITE, W untouched
    swapped = _rotate_rows(Wt, Wn, idx, Ut, mats, k)
    for t in range(k):
        q[idx[t]] = d[an[t]] + tau[t]
    if not swapped:
        _sort_storage(Wt, q, mats)
    new_target = target
    if not np.isinf(gamma):
        new_target = target * np.exp(-theta / gamma)
    return dlam, new_target, swapped


@nb.njit(cache=True, error_model="numpy")
def project_pair(W, q, v, target, delta, lam_c, gamma, stats, ftol=EXACT_FTOL):
    """One von Neumann Bregman projection (in place on W, q).  Returns (Δλ, new target).

    ``stats``: [evaluations of h, projections that ran ZEROFINDER] and, when it has
    ``_N_STATS`` entries, [shortcut skips, passes over the poles, roots solved].  ``ftol``:
    ZEROFINDER's stop (default: exact, :data:`~.secular.EXACT_FTOL`).
    :func:`_project_t` on Wᵀ (the sweeps keep Wᵀ throughout)."""
    r = q.shape[0]
    Wt = np.ascontiguousarray(W.T)
    Wn = np.empty((r, r))
    mats, vecs, anchor = _new_work(r)
    dl, new_target, swapped = _project_t(Wt, Wn, q, v, target, delta, lam_c, gamma, stats, mats, vecs, anchor, ftol)
    W[:, :] = Wn.T if swapped else Wt.T
    return dl, new_target


# --------------------------------------------------------------------- sweeps
@nb.njit(cache=True, nogil=True, error_model="numpy")
def _sweeps_vn_set(W, q, F, I, J, delta, xi, lam, gamma, tol, max_iter, stats, order, ftol=EXACT_FTOL):
    """Sweeps over the constraints ``order`` (in that order) until the relative dual change
    of a sweep is below ``tol`` or ``max_iter``; returns (sweeps, change, code, bad
    constraint).  W is kept transposed (rows: eigenvectors) during the call; ``ftol``: the
    projections' ZEROFINDER stop."""
    m = I.shape[0]
    r = q.shape[0]
    v = np.empty(r)
    lam_old = np.empty(m)
    change = np.inf
    B = np.empty((2, r, r))  # Wᵀ and the buffer of the next product, swapped by the projections
    B[0] = W.T
    cur = 0
    mats, vecs, anchor = _new_work(r)
    for sweep in range(max_iter):
        lam_old[:] = lam
        for t in range(order.shape[0]):
            c = order[t]
            ic = I[c]
            jc = J[c]
            for a in range(r):
                v[a] = F[ic, a] - F[jc, a]
            dl, xnew, swapped = _project_t(
                B[cur], B[1 - cur], q, v, xi[c], delta[c], lam[c], gamma, stats, mats, vecs, anchor, ftol
            )
            if swapped:
                cur = 1 - cur
            if not (np.isfinite(xnew) and np.isfinite(dl)):
                W[:, :] = B[cur].T
                return sweep, change, NONFINITE, c
            lam[c] += dl
            xi[c] = xnew
        change = dual_change(lam, lam_old)
        code = sweep_end(change, tol)
        if code != NOT_CONVERGED:
            W[:, :] = B[cur].T
            return sweep + 1, change, code, -1
    W[:, :] = B[cur].T
    return max_iter, change, NOT_CONVERGED, -1


@nb.njit(cache=True, error_model="numpy")
def _sweeps_vn(W, q, F, I, J, delta, xi, lam, gamma, tol, max_iter, stats):
    """Full cyclic sweeps (the paper's loop): see :func:`_sweeps_vn_set`."""
    order = np.arange(I.shape[0])
    return _sweeps_vn_set(W, q, F, I, J, delta, xi, lam, gamma, tol, max_iter, stats, order)


def _vn_run(W, q, F, I, J, delta, xi, lam, gamma, tol, n_sweeps, stats, order, budget, ftol):
    """:func:`_sweeps_vn_set` in calls of about ``budget.units`` projections
    (:func:`~cvxkml.solvers._bregman_core.run_sliced`): whole sweeps when one fits the
    budget, else one sweep in slices of ``order``.  Same iterates and return values as one
    call; ``ftol``: the projections' ZEROFINDER stop."""

    def whole(k):
        return _sweeps_vn_set(W, q, F, I, J, delta, xi, lam, gamma, tol, k, stats, order, ftol)

    def piece(start, a, b):
        _, _, code, bad = _sweeps_vn_set(W, q, F, I, J, delta, xi, lam, gamma, -1.0, 1, stats, order[a:b], ftol)
        return code, bad

    def change_of(start):
        return dual_change(lam, start)

    return run_sliced(whole, piece, lam.copy, change_of, n_sweeps, order.shape[0], tol, budget)
