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

Implementation (issue "Paper scale"; measurements in reference/kulis2009-lowrank.md):

* The loops keep R = Bᵀ (upper triangular, C order).  :func:`cholupdatemult_t` is
  CHOLUPDATEMULT swept by columns of B, whose inner loop vectorizes (the row sweep of
  Algorithm 1 is a serial recurrence), and w = Bᵀv = R v reads R by rows.
  :func:`cholupdatemult` (B itself) stays as the paper's reference.
* :func:`lowrank_logdet` reshuffles the constraint order every sweep (a fixed cyclic order
  needs hundreds of times more sweeps on the MNIST-shape workload), projects only the
  constraints with λ > 0 or violated (refreshed from one product G0 B per sweep), and stops
  on the Lagrange certificate of the whole constraint set, not on the dual change alone.
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np

from .._config import WorkBudget, blas_limit
from ._bregman_core import check_time_limit, project, quadratic_roots, run_sliced, sweep_end
from ._vocabulary import iteration_limit
from .bregman import FarkasWatch
from .result import NONFINITE, NONPOSITIVE_DISTANCE, NOT_CONVERGED, OK

# constraint kinds
PAIR, RANK2 = 0, 1
# below this r the update loops index R directly instead of through row views
_VIEW_MIN_R = 32


@nb.njit(cache=True, error_model="numpy", inline="always")
def _chol_step(a, xk):
    """One step of the recurrence of Algorithm 1: (h_k, α_{k+1}) with t = 1 + α_k x_k²,
    h_k = √t (the diagonal of L) and α_{k+1} = α_k / t."""
    t = 1.0 + a * xk * xk
    return np.sqrt(t), a / t


@nb.njit(cache=True, error_model="numpy")
def cholupdatemult(alpha, x, B):
    """B ← B L with L Lᵀ = I + α x xᵀ, B lower triangular (Kulis et al. Algorithm 1).

    Exactly 3r² + 2r flops (on the triangle).  Requires 1 + α‖x‖² > 0.
    """
    r = x.shape[0]
    a = alpha
    h = np.empty(r)
    acoef = np.empty(r + 1)  # acoef[i + 1] = α_{i+1} (0-based i)
    acoef[0] = alpha
    for i in range(r):
        h[i], a = _chol_step(a, x[i])
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
        hk, a_next = _chol_step(a, x[k])
        z[k] = (y[k] - x[k] * s) / hk
        s += a_next * x[k] * hk * z[k]
        a = a_next


@nb.njit(cache=True, error_model="numpy", inline="always")
def cholupdatemult_t(alpha, x, R, h, acoef, s):
    """:func:`cholupdatemult` on the transposed factor: R ← Lᵀ R, i.e. B ← B L with
    R = Bᵀ (upper triangular, C order) and L Lᵀ = I + α x xᵀ.

    The same flops, each entry computed by the same operations in the same order (bit for
    bit the result of :func:`cholupdatemult`), but swept by columns of B (rows of R):
    ``s[i]`` carries row i's running sum Σ_{l' > l} B_il' x_l', so the inner loop runs over
    the rows of B without a loop-carried dependency and vectorizes (1.5–2.4× at r = 100–200;
    the row-by-row sweep of Algorithm 1 is a serial recurrence).  Work arrays: h, s (r,),
    acoef (r + 1,).  Requires 1 + α‖x‖² > 0.
    """
    r = x.shape[0]
    a = alpha
    acoef[0] = alpha
    for i in range(r):
        h[i], a = _chol_step(a, x[i])
        acoef[i + 1] = a
        s[i] = 0.0
    if r < _VIEW_MIN_R:  # short rows: the views cost more than they save
        for l in range(r - 1, -1, -1):
            c = acoef[l + 1] * x[l]
            hl = h[l]
            xl = x[l]
            for i in range(l, r):
                old = R[l, i]
                R[l, i] = (old + c * s[i]) * hl
                s[i] += old * xl
        return
    for l in range(r - 1, -1, -1):
        c = acoef[l + 1] * x[l]
        hl = h[l]
        xl = x[l]
        row = R[l, l:]  # 1-D views from index 0: no wraparound checks, SIMD
        sl = s[l:]
        for i in range(row.shape[0]):
            old = row[i]
            row[i] = (old + c * sl[i]) * hl
            sl[i] += old * xl


@nb.njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _rt_times(R, v, out):
    """out = R v = Bᵀ v for R = Bᵀ upper triangular: contiguous dot products of the rows of
    R (reassociation allowed so that the reduction vectorizes; no other fast-math flag)."""
    r = v.shape[0]
    for l in range(r):
        row = R[l, l:]
        vv = v[l:]
        acc = 0.0
        for i in range(row.shape[0]):
            acc += row[i] * vv[i]
        out[l] = acc


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
    # (numerically unattainable: the update would leave a singular, then non-finite factor;
    # seen with μ₋ = −1.6e-8, θ = 6.3e7)
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
    """``gram(S)`` for :class:`~cvxkml.solvers.bregman.FarkasWatch`: the rows of the
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
    (a skipped constraint costs only its Bᵀv, about as much per sweep as the refresh itself
    on the MNIST workload)."""
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
    the paper's fixed order.  On the MNIST-shape workload the fixed order needs ~3400 sweeps
    to certify 1e-3, the reshuffled one 12–16 (reference/kulis2009-lowrank.md).
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
    (:class:`~cvxkml.solvers.bregman.FarkasWatch`) ends the run with NOT_CONVERGED and
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
