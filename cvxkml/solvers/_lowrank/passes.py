"""The compiled projections and passes of the low-rank LogDet solver (Kulis, Sustik &
Dhillon 2009, Algorithm 2; slack §6.2.1): a distance or rank-two constraint projected on
the factor in O(r²), passes in a reshuffled order, and the sweeps the benchmark times."""

from __future__ import annotations

import numba as nb
import numpy as np

from .._bregman_core import project, quadratic_roots, run_sliced, sweep_end
from ..result import NONFINITE, NONPOSITIVE_DISTANCE, NOT_CONVERGED, OK
from .cholesky import _VIEW_MIN_R, _chol_factor_solve, _rt_times, cholupdatemult_t

# constraint kinds
PAIR, RANK2 = 0, 1


@nb.njit(cache=True, error_model="numpy")
def _rank2_theta(g11, g12, g22, target):
    """Root θ* of h(θ) = Σ μ_k/(1 + θμ_k) = target on the PD interval, μ = eig(diag(1,−1) G).
    Returns (θ*, μ₊, μ₋)."""
    tr = g11 - g22
    det = g12 * g12 - g11 * g22  # ≤ 0
    disc = np.sqrt(max(tr * tr - 4.0 * det, 0.0))
    mp = 0.5 * (tr + disc)
    mm = 0.5 * (tr - disc)
    lo = -1.0 / mp if mp > 0 else -np.inf
    hi = -1.0 / mm if mm < 0 else np.inf
    # b P θ² + (b S − 2P) θ + (b − S) = 0 with S = μ₊ + μ₋, P = μ₊μ₋
    S = mp + mm
    P = mp * mm
    A = target * P
    Bq = target * S - 2.0 * P
    Cq = target - S
    theta = np.nan
    if abs(A) > 1e-300:
        r1, r2 = quadratic_roots(A, Bq, Cq)  # NaN, NaN without real roots
        ok1 = lo < r1 < hi
        ok2 = lo < r2 < hi
        if ok1 and ok2:
            # h is strictly decreasing on the interval, so only one root is h's; the
            # other can land inside by rounding next to a pole: μ₋ = −1.4e-17 (a
            # rank-one Gram matrix in round-off) put r1 = 7.2e16 ≈ −1/μ₋ inside, and a
            # satisfied constraint broke down (fuzz draw, r = 1)
            theta = r1 if abs(_h(r1, mp, mm) - target) <= abs(_h(r2, mp, mm) - target) else r2
        elif ok1:
            theta = r1
        elif ok2:
            theta = r2
    elif Bq != 0.0:
        r1 = -Cq / Bq
        if lo < r1 < hi:
            theta = r1
    # a closed-form root that is not h's root (cancellation): bisection instead
    if np.isfinite(theta) and not (abs(_h(theta, mp, mm) - target) <= 1e-6 * (abs(target) + abs(mp) + abs(mm))):
        theta = np.nan
    if not np.isfinite(theta):  # safeguard: bisection on the monotone h
        a_ = lo if np.isfinite(lo) else -1.0
        b_ = hi if np.isfinite(hi) else 1.0
        # an open end is pushed out by doubling, at most to overflow: h may stay on one side
        # of the target on the whole PD interval (a rank-one G, μ₋ = 0: h = μ₊/(1 + θμ₊) > 0
        # never reaches a target ≤ 0); the root is then ±∞: −∞ lets the caller's θ = max(θ*, −λ)
        # release the multiplier, +∞ is an unattainable constraint
        for _ in range(1100):
            if np.isfinite(lo) or not np.isfinite(a_) or not (_h(a_, mp, mm) < target):
                break
            a_ *= 2.0
        for _ in range(1100):
            if np.isfinite(hi) or not np.isfinite(b_) or not (_h(b_, mp, mm) > target):
                break
            b_ *= 2.0
        if not np.isfinite(lo) and not (np.isfinite(a_) and _h(a_, mp, mm) >= target):
            return -np.inf, mp, mm  # h < target everywhere: the root is at −∞
        if not np.isfinite(hi) and not (np.isfinite(b_) and _h(b_, mp, mm) <= target):
            return np.inf, mp, mm  # h > target everywhere: unattainable
        for _ in range(200):
            mid = 0.5 * (a_ + b_)
            if _h(mid, mp, mm) > target:
                a_ = mid
            else:
                b_ = mid
        theta = 0.5 * (a_ + b_)
    return theta, mp, mm


@nb.njit(cache=True, error_model="numpy")
def _h(theta, mp, mm):
    return mp / (1.0 + theta * mp) + mm / (1.0 + theta * mm)


@nb.njit(cache=True, inline="always")
def _gram2(a, b):
    """The 2 × 2 Gram matrix of two vectors: (aᵀa, aᵀb, bᵀb)."""
    g11 = 0.0
    g12 = 0.0
    g22 = 0.0
    for k in range(a.shape[0]):
        g11 += a[k] * a[k]
        g12 += a[k] * b[k]
        g22 += b[k] * b[k]
    return g11, g12, g22


@nb.njit(cache=True, error_model="numpy")
def _rank2_factors(ut, vt, theta, work_y1, work_y2, work_z):
    """The two rank-one steps of B ← B F, F Fᵀ = C(θ)⁻¹, C(θ) = I + θ(ũũᵀ − ṽṽᵀ)
    (ũ = Bᵀu, ṽ = Bᵀv given): F = L₁ L₂ with L₁L₁ᵀ = I + a₁ y₁y₁ᵀ (y₁ in ``work_y1``) and
    L₂L₂ᵀ = I + a₂ z zᵀ (z in ``work_z``; a₂ = 0: no second step).  Returns (a₁, a₂)."""
    r = ut.shape[0]
    g11, g12, g22 = _gram2(ut, vt)
    # E = −θ (Σ + θG)⁻¹, Σ = diag(1, −1)
    m11 = 1.0 + theta * g11
    m12 = theta * g12
    m22 = -1.0 + theta * g22
    detm = m11 * m22 - m12 * m12
    e11 = -theta * m22 / detm
    e12 = theta * m12 / detm
    e22 = -theta * m11 / detm
    # orthonormal basis q1, q2 of span(ũ, ṽ) (Gram–Schmidt), U = Q R
    n1 = np.sqrt(g11)
    if n1 == 0.0:
        # ũ = 0: only the ṽ term, C⁻¹ = I + e22 ṽṽᵀ
        for k in range(r):
            work_y1[k] = vt[k]
        return e22, 0.0
    r11 = n1
    r12 = g12 / n1
    r22sq = g22 - r12 * r12
    r22 = np.sqrt(r22sq) if r22sq > 1e-28 * max(g22, 1e-300) else 0.0
    # K2 = R E Rᵀ (2 × 2), R = [[r11, r12], [0, r22]]
    a11 = r11 * (r11 * e11 + r12 * e12) + r12 * (r11 * e12 + r12 * e22)
    a12 = (r11 * e12 + r12 * e22) * r22
    a22 = r22 * r22 * e22
    # eigen-decomposition of the symmetric 2 × 2 [[a11, a12], [a12, a22]]
    tr = a11 + a22
    df = a11 - a22
    rad = np.sqrt(0.25 * df * df + a12 * a12)
    l1 = 0.5 * tr + rad
    l2 = 0.5 * tr - rad
    # eigenvector of l1 from the well-conditioned row of (A − l1 I)x = 0: (l1 − a22, a12)
    # cancels to round-off when a11 < a22 and a12 is tiny — ũ ⟂ ṽ, which is every similarity
    # constraint at B = I on a kernel with a constant diagonal (Gaussian): the other row gives
    # an eigenvector 45° off there, a wrong update and a certified-looking wrong optimum
    if a11 >= a22:
        c1, s1 = l1 - a22, a12
    else:
        c1, s1 = a12, l1 - a11
    if c1 == 0.0 and s1 == 0.0:  # a12 = 0, a11 = a22: any basis
        c1, s1 = 1.0, 0.0
    nrm = np.sqrt(c1 * c1 + s1 * s1)
    c1 /= nrm
    s1 /= nrm
    # y1 = Q p1, y2 = Q p2 with p2 = (−s1, c1); q1 = ũ/n1, q2 = (ṽ − r12 q1)/r22
    for k in range(r):
        q1 = ut[k] / n1
        q2 = (vt[k] - r12 * q1) / r22 if r22 > 0.0 else 0.0
        work_y1[k] = c1 * q1 + s1 * q2
        work_y2[k] = -s1 * q1 + c1 * q2
    # positive term first (keeps the intermediate factor PD), then the other through L₁⁻¹
    if l1 < l2:
        l1, l2 = l2, l1
        for k in range(r):
            tmp = work_y1[k]
            work_y1[k] = work_y2[k]
            work_y2[k] = tmp
    if l2 != 0.0:
        _chol_factor_solve(l1, work_y1, work_y2, work_z)
    return l1, l2


@nb.njit(cache=True)
def _next_random(state):
    """splitmix64 step on state[0] (uint64); a private, seeded stream that leaves NumPy's and
    Numba's global generators alone."""
    state[0] += np.uint64(0x9E3779B97F4A7C15)
    x = state[0]
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@nb.njit(cache=True)
def _shuffle(order, n, state):
    """Fisher–Yates shuffle of order[:n]."""
    for i in range(n - 1, 0, -1):
        j = np.int64(_next_random(state) % np.uint64(i + 1))
        t = order[i]
        order[i] = order[j]
        order[j] = t


@nb.njit(cache=True, error_model="numpy")
def _project_rank2(c, R, G0, I, J, Kx, coef_u, coef_v, xi, lam, work):
    """Bregman projection onto the rank-two constraint ``c`` (target ξ_c), θ = max(θ*, −λ_c),
    on R = Bᵀ (updates R and λ_c in place); ``work`` is (10, r + 1) scratch.  Returns OK, or
    NONFINITE (no finite root, or the edge of the PD cone)."""
    r = R.shape[0]
    u = work[0, :r]
    v = work[1, :r]
    w = work[2, :r]
    wt = work[3, :r]
    y1 = work[4, :r]
    y2 = work[5, :r]
    z = work[6, :r]
    h = work[7, :r]
    s = work[8, :r]
    acoef = work[9]
    for k in range(r):
        u[k] = coef_u[c, 0] * G0[I[c], k] + coef_u[c, 1] * G0[J[c], k]
        v[k] = coef_v[c, 0] * G0[I[c], k] + coef_v[c, 1] * G0[Kx[c], k]
    _rt_times(R, u, w)
    _rt_times(R, v, wt)
    g11, g12, g22 = _gram2(w, wt)
    theta_star, mp, mm = _rank2_theta(g11, g12, g22, xi[c])
    theta = max(theta_star, -lam[c])
    if np.isnan(theta_star) or not np.isfinite(theta):
        return NONFINITE
    # the update scales the matrix by 1/(1 + θμ±) on two directions; when the two factors
    # differ by more than 1e12 the constraint holds only at the edge of the PD cone
    # (numerically unattainable: the update would leave a singular, then non-finite factor)
    f1 = 1.0 + theta * mp
    f2 = 1.0 + theta * mm
    if theta != 0.0 and not (min(f1, f2) > 0.0 and max(f1, f2) < 1e12 * min(f1, f2)):
        return NONFINITE
    lam[c] += theta
    if theta != 0.0:
        a1, a2 = _rank2_factors(w, wt, theta, y1, y2, z)
        cholupdatemult_t(a1, y1, R, h, acoef, s)
        if a2 != 0.0:
            cholupdatemult_t(a2, z, R, h, acoef, s)
    return OK


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _passes(
    R, G0, kind, I, J, Kx, coef_u, coef_v, delta, xi, lam, gamma, order, n_visit, state, shuffle, tol, max_passes
):
    """Up to ``max_passes`` passes of Bregman projections (with the dual correction) over the
    constraints order[:n_visit], on the transposed factor R = Bᵀ (updated in place with λ
    and ξ), the order reshuffled before each pass when ``shuffle``.  After each pass the
    relative dual change Σ|Δλ| / Σ(|λ| + |λ_old|) over the visited constraints (the whole
    sweep's value when the others have λ = 0); stops after a pass with change < ``tol``
    (code OK).  Returns (passes, change, code, bad): a breakdown (NONPOSITIVE_DISTANCE,
    NONFINITE) stops at constraint ``bad``.

    The distance projection is written out in the loop and the rank-two one is a call with
    few arguments: a call with twenty array arguments (reference counts on each) halved the
    projection rate at r = 10.
    """
    r = R.shape[0]
    v = np.empty(r)
    w = np.empty(r)
    h = np.empty(r)
    s = np.empty(r)
    acoef = np.empty(r + 1)
    work = np.zeros((10, r + 1))
    change = np.inf
    for it in range(max_passes):
        if shuffle:
            _shuffle(order, n_visit, state)
        num = 0.0
        den = 0.0
        for t in range(n_visit):
            c = order[t]
            old = lam[c]
            if kind[c] == PAIR:
                a = I[c]
                b = J[c]
                for k in range(r):
                    v[k] = G0[a, k] - G0[b, k]
                if r < _VIEW_MIN_R:  # short rows: inline dot products
                    for l in range(r):
                        acc = 0.0
                        for i in range(l, r):
                            acc += R[l, i] * v[i]
                        w[l] = acc
                else:
                    _rt_times(R, v, w)
                p = 0.0
                for k in range(r):
                    p += w[k] * w[k]
                if not (p > 0.0):
                    return it, change, (NONFINITE if not np.isfinite(p) else NONPOSITIVE_DISTANCE), c
                alpha, beta, xnew = project(p, delta[c], xi[c], old, gamma)
                xi[c] = xnew
                lam[c] = old - alpha
                if beta != 0.0:
                    cholupdatemult_t(beta, w, R, h, acoef, s)
            else:
                code = _project_rank2(c, R, G0, I, J, Kx, coef_u, coef_v, xi, lam, work)
                if code != OK:
                    return it, change, code, c
            num += abs(lam[c] - old)
            den += abs(lam[c]) + abs(old)
        change = 0.0 if den == 0.0 else num / den
        code = sweep_end(change, tol)
        if code != NOT_CONVERGED:
            return it + 1, change, code, -1
    return max_passes, change, NOT_CONVERGED, -1


@nb.njit(cache=True, error_model="numpy")
def _pass_change(lam, old, idx):
    """The relative dual change of a pass over ``idx`` from λ = ``old`` (before, indexed like
    idx), summed in the order of :func:`_passes` (the same bits)."""
    num = 0.0
    den = 0.0
    for t in range(idx.shape[0]):
        c = idx[t]
        num += abs(lam[c] - old[t])
        den += abs(lam[c]) + abs(old[t])
    return 0.0 if den == 0.0 else num / den


def _run_passes(R, rows, xi, lam, g, order, n_visit, state, shuffle, tol, max_passes, budget):
    """:func:`_passes` in calls of about ``budget.units`` projections
    (:func:`~cvxkml.solvers._bregman_core.run_sliced`): whole passes when a pass fits the
    budget, else one pass in slices of the (shuffled) order.  Same iterates, same return
    values as one call of :func:`_passes`.  ``rows`` = (G0, kind, I, J, Kx, coef_u,
    coef_v, delta), the constraint arrays in :func:`_passes`' order."""
    n_visit = int(n_visit)

    def whole(k):
        return _passes(R, *rows, xi, lam, g, order, n_visit, state, shuffle, tol, k)

    def begin():
        if shuffle:
            _shuffle(order, n_visit, state)
        idx = order[:n_visit].copy()
        return idx, lam[idx]

    def piece(sliced, a, b):
        _, _, code, bad = _passes(R, *rows, xi, lam, g, sliced[0][a:b], b - a, state, False, -1.0, 1)
        return code, bad

    def change_of(sliced):
        return _pass_change(lam, sliced[1], sliced[0])

    return run_sliced(whole, piece, begin, change_of, max_passes, n_visit, tol, budget)


def _lowrank_gram(G0, kind, I, J, Kx, cu, cv, delta):
    """``gram(S)`` for :class:`~cvxkml.solvers._farkas.FarkasWatch`: the rows of the
    constraints S in the factor coordinates (prior I): a pair δ v vᵀ, a rank-two row
    u uᵀ − v vᵀ."""

    def gram(S):
        rows, sign, owner = [], [], []
        for k, c in enumerate(S):
            if kind[c] == PAIR:
                rows.append(G0[I[c]] - G0[J[c]])
                sign.append(delta[c])
                owner.append(k)
            else:
                rows.append(cu[c, 0] * G0[I[c]] + cu[c, 1] * G0[J[c]])
                sign.append(1.0)
                rows.append(cv[c, 0] * G0[I[c]] + cv[c, 1] * G0[Kx[c]])
                sign.append(-1.0)
                owner += [k, k]
        W = np.array(rows)
        return W @ W.T, np.array(sign), np.array(owner, dtype=np.int64)

    return gram


@nb.njit(cache=True, error_model="numpy")
def _sweeps_lowrank(B, G0, kind, I, J, Kx, coef_u, coef_v, delta, xi, lam, gamma, tol, max_iter):
    """Cyclic projections over mixed constraints in their given order (the paper's
    schedule), B (lower triangular, C order) updated in place.  PAIR rows use (I, J, delta,
    xi); RANK2 rows use u = G0[I]·cu1 + G0[J]·cu2, v = G0[I]·cv1 + G0[Kx]·cv2 and target
    xi.  Stops when a sweep's relative dual change is below ``tol``; returns (sweeps,
    change, code, bad).  Works on Bᵀ internally (:func:`_passes`)."""
    R = np.ascontiguousarray(B.T)
    order = np.arange(I.shape[0])
    state = np.zeros(1, dtype=np.uint64)
    out = _passes(
        R, G0, kind, I, J, Kx, coef_u, coef_v, delta, xi, lam, gamma, order, I.shape[0], state, False, tol, max_iter
    )
    B[:, :] = R.T
    return out
