"""Low-rank LogDet kernel learning (Kulis, Sustik, Dhillon, JMLR 2009, §5.1, Algorithms 1–2,
slack §6.2.1, further constraints §6.2.2).

The learned kernel keeps the range space of K0 = G0 G0ᵀ (G0 n × r): K = G0 B Bᵀ G0ᵀ with
B r × r lower triangular, B = I initially.  A projection never touches n:

* distance constraint (i, j):  v = G0[i] − G0[j], w = Bᵀv, p = ‖w‖²; α, β and the slack
  update as in the dense solver (``bregman._project``), then B ← B L with
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
"""
from __future__ import annotations

import time

import numba as nb
import numpy as np

from .._config import blas_limit

from .bregman import NONFINITE, NONPOSITIVE_DISTANCE, NOT_CONVERGED, OK, _dual_change, _project

# constraint kinds
PAIR, RANK2 = 0, 1


@nb.njit(cache=True, error_model="numpy")
def cholupdatemult(alpha, x, B):
    """B ← B L with L Lᵀ = I + α x xᵀ, B lower triangular (Kulis et al. Algorithm 1).

    Exactly 3r² + 2r flops (on the triangle).  Requires 1 + α‖x‖² > 0.
    """
    r = x.shape[0]
    a = alpha
    h = np.empty(r)
    acoef = np.empty(r + 1)          # acoef[i + 1] = α_{i+1} (0-based i)
    acoef[0] = alpha
    for i in range(r):
        t = 1.0 + a * x[i] * x[i]
        h[i] = np.sqrt(t)
        a = a / t
        acoef[i + 1] = a
        t = B[i, i]
        s = 0.0
        B[i, i] = B[i, i] * h[i]
        for j in range(i - 1, -1, -1):
            s += t * x[j + 1]
            t = B[i, j]
            B[i, j] = (B[i, j] + acoef[j + 1] * x[j] * s) * h[j]


@nb.njit(cache=True, error_model="numpy")
def _chol_factor_solve(alpha, x, y, z):
    """z ← L⁻¹ y for L the Cholesky factor of I + α x xᵀ, in O(r) (forward substitution
    with L_jj = h_j, L_kj = α_{j+1} x_j h_j x_k for k > j)."""
    r = x.shape[0]
    a = alpha
    s = 0.0
    for k in range(r):
        t = 1.0 + a * x[k] * x[k]
        hk = np.sqrt(t)
        a_next = a / t
        z[k] = (y[k] - x[k] * s) / hk
        s += a_next * x[k] * hk * z[k]
        a = a_next


@nb.njit(cache=True, error_model="numpy")
def _bt_times(B, v, out):
    """out = Bᵀ v for lower-triangular B, reading B row by row (contiguous)."""
    r = v.shape[0]
    for j in range(r):
        out[j] = 0.0
    for i in range(r):
        vi = v[i]
        for j in range(i + 1):
            out[j] += B[i, j] * vi


@nb.njit(cache=True, error_model="numpy")
def _rank2_theta(g11, g12, g22, target):
    """Root θ* of h(θ) = Σ μ_k/(1 + θμ_k) = target on the PD interval, μ = eig(diag(1,−1) G).
    Returns (θ*, μ₊, μ₋)."""
    tr = g11 - g22
    det = g12 * g12 - g11 * g22                     # ≤ 0
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
        d = Bq * Bq - 4.0 * A * Cq
        if d >= 0.0:
            sq = np.sqrt(d)
            q = -0.5 * (Bq + (sq if Bq >= 0 else -sq))
            r1 = q / A
            r2 = Cq / q if q != 0.0 else np.nan
            if lo < r1 < hi:
                theta = r1
            elif lo < r2 < hi:
                theta = r2
    elif Bq != 0.0:
        r1 = -Cq / Bq
        if lo < r1 < hi:
            theta = r1
    if not np.isfinite(theta):                      # safeguard: bisection on the monotone h
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
            return -np.inf, mp, mm                  # h < target everywhere: the root is at −∞
        if not np.isfinite(hi) and not (np.isfinite(b_) and _h(b_, mp, mm) <= target):
            return np.inf, mp, mm                   # h > target everywhere: unattainable
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


@nb.njit(cache=True, error_model="numpy")
def _rank2_update(B, ut, vt, theta, work_y1, work_y2, work_z):
    """B ← B F with F Fᵀ = C(θ)⁻¹, C(θ) = I + θ(ũũᵀ − ṽṽᵀ) (ũ = Bᵀu, ṽ = Bᵀv given)."""
    r = ut.shape[0]
    g11 = 0.0
    g12 = 0.0
    g22 = 0.0
    for k in range(r):
        g11 += ut[k] * ut[k]
        g12 += ut[k] * vt[k]
        g22 += vt[k] * vt[k]
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
        cholupdatemult(e22, vt, B)
        return
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
    if a12 != 0.0:
        c1, s1 = l1 - a22, a12
    elif a11 >= a22:
        c1, s1 = 1.0, 0.0
    else:
        c1, s1 = 0.0, 1.0
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
    cholupdatemult(l1, work_y1, B)
    if l2 != 0.0:
        _chol_factor_solve(l1, work_y1, work_y2, work_z)
        cholupdatemult(l2, work_z, B)


@nb.njit(cache=True, error_model="numpy")
def _sweeps_lowrank(B, G0, kind, I, J, Kx, coef_u, coef_v, delta, xi, lam, gamma, tol, max_sweeps):
    """Cyclic projections over mixed constraints.  PAIR rows use (I, J, delta, xi);
    RANK2 rows use u = G0[I]·cu1 + G0[J]·cu2, v = G0[I]·cv1 + G0[Kx]·cv2 and target xi."""
    r = B.shape[0]
    m = I.shape[0]
    v = np.empty(r)
    u = np.empty(r)
    w = np.empty(r)
    wt = np.empty(r)
    y1 = np.empty(r)
    y2 = np.empty(r)
    z = np.empty(r)
    lam_old = np.empty(m)
    change = np.inf
    for sweep in range(max_sweeps):
        lam_old[:] = lam
        for c in range(m):
            if kind[c] == PAIR:
                for k in range(r):
                    v[k] = G0[I[c], k] - G0[J[c], k]
                _bt_times(B, v, w)
                p = 0.0
                for k in range(r):
                    p += w[k] * w[k]
                if not (p > 0.0):
                    return sweep, change, (NONFINITE if not np.isfinite(p) else NONPOSITIVE_DISTANCE), c
                alpha, beta, xnew = _project(p, delta[c], xi[c], lam[c], gamma)
                xi[c] = xnew
                lam[c] -= alpha
                if beta != 0.0:
                    cholupdatemult(beta, w, B)
            else:
                for k in range(r):
                    u[k] = coef_u[c, 0] * G0[I[c], k] + coef_u[c, 1] * G0[J[c], k]
                    v[k] = coef_v[c, 0] * G0[I[c], k] + coef_v[c, 1] * G0[Kx[c], k]
                _bt_times(B, u, w)
                _bt_times(B, v, wt)
                g11 = 0.0
                g12 = 0.0
                g22 = 0.0
                for k in range(r):
                    g11 += w[k] * w[k]
                    g12 += w[k] * wt[k]
                    g22 += wt[k] * wt[k]
                theta_star, mp, mm = _rank2_theta(g11, g12, g22, xi[c])
                theta = max(theta_star, -lam[c])
                if np.isnan(theta_star) or not np.isfinite(theta):
                    return sweep, change, NONFINITE, c
                # the update scales the matrix by 1/(1 + θμ±) on two directions; when the
                # two factors differ by more than 1e12 the constraint holds only at the edge
                # of the PD cone (numerically unattainable: the update would leave a
                # singular, then non-finite factor; seen with μ₋ = −1.6e-8, θ = 6.3e7)
                f1 = 1.0 + theta * mp
                f2 = 1.0 + theta * mm
                if theta != 0.0 and not (min(f1, f2) > 0.0 and max(f1, f2) < 1e12 * min(f1, f2)):
                    return sweep, change, NONFINITE, c
                lam[c] += theta
                if theta != 0.0:
                    _rank2_update(B, w, wt, theta, y1, y2, z)
        change = _dual_change(lam, lam_old)
        if not np.isfinite(change):
            return sweep + 1, change, NONFINITE, -1
        if change < tol:
            return sweep + 1, change, OK, -1
    return max_sweeps, change, NOT_CONVERGED, -1


@blas_limit()
def lowrank_logdet(G0, kind, I, J, Kx, coef_u, coef_v, delta, target, gamma=None, tol=1e-9,
                   max_sweeps=10_000, B0=None):
    """Run the low-rank cyclic projections; returns (B, λ, ξ/targets, sweeps, change, code, bad, time).

    ``gamma`` applies to PAIR rows only (rank-two rows are hard constraints).
    """
    G0 = np.ascontiguousarray(G0, dtype=np.float64)
    r = G0.shape[1]
    B = np.eye(r) if B0 is None else np.array(B0, dtype=np.float64, order="C")
    m = len(I)
    lam = np.zeros(m)
    xi = np.array(target, dtype=np.float64)
    g = np.inf if gamma is None else float(gamma)
    args = (np.ascontiguousarray(kind, dtype=np.int64), np.ascontiguousarray(I, dtype=np.int64),
            np.ascontiguousarray(J, dtype=np.int64), np.ascontiguousarray(Kx, dtype=np.int64),
            np.ascontiguousarray(coef_u, dtype=np.float64).reshape(m, 2),
            np.ascontiguousarray(coef_v, dtype=np.float64).reshape(m, 2),
            np.ascontiguousarray(delta, dtype=np.float64))
    t0 = time.perf_counter()
    sweeps, change, code, bad = _sweeps_lowrank(B, G0, *args, xi, lam, g, float(tol), int(max_sweeps))
    elapsed = time.perf_counter() - t0
    return B, lam, xi, int(sweeps), float(change), int(code), int(bad), elapsed
