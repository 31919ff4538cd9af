"""CHOLUPDATEMULT (Kulis, Sustik & Dhillon 2009, Algorithm 1): the factor B ← B L with
L Lᵀ = I + β w wᵀ in O(r²), on B itself (the paper's row sweep) and on R = Bᵀ (swept by
columns of B, whose inner loop vectorizes), and the triangular helpers of the rank-two step."""

from __future__ import annotations

import numba as nb
import numpy as np

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
    the rows of B without a loop-carried dependency and vectorizes (the row-by-row sweep of
    Algorithm 1 is a serial recurrence).  Work arrays: h, s (r,), acoef (r + 1,).  Requires 1 + α‖x‖² > 0.
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
