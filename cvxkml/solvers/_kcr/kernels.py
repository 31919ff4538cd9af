"""The Numba kernels of the KCR solver: the row-wise proximal map of the dual (water
filling), the dual step with its statistics, the Laplacian weights and the adjoint Aᵀ, and
their working-set variants on a subset of rows or pairs."""

from __future__ import annotations

import numba as nb
import numpy as np


# --------------------------------------------------------------------------- Numba kernels
@nb.njit(cache=True, error_model="numpy")
def _row_prox(v, kappa, out_row):
    """argmin_{s ∈ [0,1]^m} ½‖s − v‖² + kappa · max_j s_j   (kappa >= 0).

    The optimal s is min(max(v, 0), t) for t ∈ [0, 1] minimizing
    kappa t + ½ Σ_j (v_j − t)₊² (t >= 0), i.e. the root of φ(t) = Σ_j (v_j − t)₊ = kappa
    clipped to [0, 1].  The root is found by Michelot's fixed point
    t ← (Σ_{v_j > t} v_j − kappa) / #{v_j > t} from t = 0, which increases monotonically
    to the root in a few O(m) passes (a sort is the fallback after 30 passes).
    """
    m = v.shape[0]
    s1 = 0.0
    s0 = 0.0
    npos = 0
    for j in range(m):
        if v[j] > 1.0:
            s1 += v[j] - 1.0
        if v[j] > 0.0:
            s0 += v[j]
            npos += 1
    if s1 >= kappa:
        t = 1.0
    elif s0 <= kappa:
        t = 0.0
    else:
        t = (s0 - kappa) / npos
        done = False
        for _ in range(30):
            tot = 0.0
            cnt = 0
            for j in range(m):
                if v[j] > t:
                    tot += v[j]
                    cnt += 1
            if cnt == 0:  # t reached max(v): kappa below its rounding, or v not finite
                done = True
                break
            t_new = (tot - kappa) / cnt
            if t_new <= t:
                done = True
                break
            t = t_new
        if not done:
            w = np.sort(v)[::-1]
            cum = 0.0
            for q in range(npos):
                cum += w[q]
                tt = (cum - kappa) / (q + 1)
                nxt = w[q + 1] if q + 1 < npos else 0.0
                if tt >= nxt:
                    t = tt
                    break
        t = min(max(t, 0.0), 1.0)
    for j in range(m):
        x = v[j]
        out_row[j] = 0.0 if x <= 0.0 else (x if x < t else t)


@nb.njit(cache=True, error_model="numpy")
def _dual_step_stats(s, Bn, B, h, hn, codes, beta, c, s_out):
    """One dual step and its step statistics in one pass over the n × n arrays:
    s_out = prox_{β f*}(s + β(1 + tau∘(D(B̄) − h̄))) row by row, B̄ = 2Bn − B (the Gram
    matrix of the extrapolated primal point), h̄ = 2hn − h; tau_ij = ±1 is read from the
    class codes instead of an n × n array (at n = 2 000 the iteration is bound by memory
    traffic).  Returns (Σ tau∘s_out, ‖Δs‖², ⟨Δs, 𝒦Δx⟩) with Δs = s_out − s and
    𝒦Δx = tau∘(D(Bn − B) − (hn − h))."""
    n = s.shape[0]
    v = np.empty(n)
    bd = np.empty(n)
    dd = np.empty(n)
    for i in range(n):
        bd[i] = 2.0 * Bn[i, i] - B[i, i]
        dd[i] = Bn[i, i] - B[i, i]
    hbar = 2.0 * hn - h
    dh = hn - h
    S = 0.0
    sq = 0.0
    inter = 0.0
    for i in range(n):
        bii = bd[i] - hbar
        ci = codes[i]
        for j in range(n):
            t = 1.0 if codes[j] == ci else -1.0
            bij = 2.0 * Bn[i, j] - B[i, j]
            v[j] = s[i, j] + beta * (1.0 + t * (bii + bd[j] - 2.0 * bij))
        _row_prox(v, -beta * c[i], s_out[i])
        dii = dd[i] - dh
        for j in range(n):
            t = 1.0 if codes[j] == ci else -1.0
            so = s_out[i, j]
            S += t * so
            ds = so - s[i, j]
            sq += ds * ds
            inter += ds * t * (dii + dd[j] - 2.0 * (Bn[i, j] - B[i, j]))
    return S, sq, inter


@nb.njit(cache=True, error_model="numpy")
def _laplacian_weights_codes(s, codes, W, deg):
    """:func:`_laplacian_weights` with tau from the class codes, in 64 × 64 tiles (W needs
    s and sᵀ; the tiles keep the transposed reads in cache)."""
    n = s.shape[0]
    bs = 64
    for ib in range(0, n, bs):
        ie = min(n, ib + bs)
        for jb in range(0, n, bs):
            je = min(n, jb + bs)
            for i in range(ib, ie):
                ci = codes[i]
                for j in range(jb, je):
                    w = s[i, j] + s[j, i]
                    W[i, j] = w if codes[j] == ci else -w
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += W[i, j]
        deg[i] = acc


@nb.njit(cache=True, error_model="numpy")
def _halpern(new, cur, anchor, wk):
    """cur ← wk (2 new − cur) + (1 − wk) anchor, in place (reflected Halpern step)."""
    a, b = cur.shape
    for i in range(a):
        for j in range(b):
            cur[i, j] = wk * (2.0 * new[i, j] - cur[i, j]) + (1.0 - wk) * anchor[i, j]


@nb.njit(cache=True, error_model="numpy")
def _sq_dist(a, b):
    """‖a − b‖²_F."""
    acc = 0.0
    m, k = a.shape
    for i in range(m):
        for j in range(k):
            d = a[i, j] - b[i, j]
            acc += d * d
    return acc


def _factor_sq_dist(A, B) -> float:
    """‖A Aᵀ − B Bᵀ‖²_F from the factors (r × ka, r × kb) in O(r (ka + kb)²): with
    [A, B] = Q R, A Aᵀ − B Bᵀ = Q (R_A R_Aᵀ − R_B R_Bᵀ) Qᵀ, and Q has orthonormal columns.
    The small difference is taken entry by entry, as the dense ‖A Aᵀ − B Bᵀ‖ would be."""
    ka = A.shape[1]
    if ka + B.shape[1] == 0:
        return 0.0
    R = np.linalg.qr(np.hstack([A, B]), mode="r")
    D = R[:, :ka] @ R[:, :ka].T - R[:, ka:] @ R[:, ka:].T
    return float(np.sum(D * D))


@nb.njit(cache=True, error_model="numpy")
def _laplacian_weights(s, tau, W, deg):
    """W = tau∘(s + sᵀ) and deg = W 1 (so Aᵀ(tau∘s) = Fᵀ(diag(deg) − W)F)."""
    n = s.shape[0]
    for i in range(n):
        acc = 0.0
        for j in range(n):
            w = tau[i, j] * (s[i, j] + s[j, i])
            W[i, j] = w
            acc += w
        deg[i] = acc


# --------------------------------------------------------------------------- linear maps
def _adjoint(F, s, tau, W, deg):
    """Aᵀ(tau∘s) = Σ_ij tau_ij s_ij z_ij z_ijᵀ = Fᵀ(diag(deg) − W)F (r × r), in the
    precision of F, W and deg (float64, or float32 for the mixed-precision iterations)."""
    _laplacian_weights(s, tau, W, deg)
    LF = deg[:, None] * F - W @ F
    G = (F.T @ LF).astype(np.float64)
    return 0.5 * (G + G.T)


# --------------------------------------------------------------------------- working set: kernels
@nb.njit(cache=True, error_model="numpy")
def _pair_sq_dists(G, I, J, out):
    """out_q = ‖G_{I_q} − G_{J_q}‖² (the learned squared distances of listed pairs)."""
    k = G.shape[1]
    for q in range(I.shape[0]):
        i, j = I[q], J[q]
        acc = 0.0
        for l in range(k):
            t = G[i, l] - G[j, l]
            acc += t * t
        out[q] = acc


@nb.njit(cache=True, error_model="numpy")
def _pair_dual_step(s, tw, Dn, Dp, h, hn, beta, s_out):
    """Dual step of the free pairs of rows whose outer hinge is fixed active (t = 1): the
    prox of the box [0, 1], s⁺ = clip(s + β(1 + τ(D̄ − h̄)), 0, 1) with D̄ = 2Dn − Dp;
    returns (Σ τ s⁺, ‖Δs‖², ⟨Δs, 𝒦Δx⟩) as :func:`_dual_step_stats` does."""
    hbar = 2.0 * hn - h
    dh = hn - h
    S = 0.0
    sq = 0.0
    inter = 0.0
    for q in range(s.shape[0]):
        t = tw[q]
        v = s[q] + beta * (1.0 + t * (2.0 * Dn[q] - Dp[q] - hbar))
        so = 0.0 if v <= 0.0 else (v if v < 1.0 else 1.0)
        s_out[q] = so
        S += t * so
        ds = so - s[q]
        sq += ds * ds
        inter += ds * t * (Dn[q] - Dp[q] - dh)
    return S, sq, inter


@nb.njit(cache=True, error_model="numpy")
def _rows_dual_step(rows, s, Dn, Dp, codes, h, hn, beta, c, s_out):
    """:func:`_dual_step_stats` for a subset of rows (all their n pairs), from the learned
    squared distances of those rows at the new (Dn) and the previous (Dp) primal point."""
    m, n = s.shape
    v = np.empty(n)
    hbar = 2.0 * hn - h
    dh = hn - h
    S = 0.0
    sq = 0.0
    inter = 0.0
    for a in range(m):
        i = rows[a]
        ci = codes[i]
        for j in range(n):
            t = 1.0 if codes[j] == ci else -1.0
            v[j] = s[a, j] + beta * (1.0 + t * (2.0 * Dn[a, j] - Dp[a, j] - hbar))
        _row_prox(v, -beta * c[i], s_out[a])
        for j in range(n):
            t = 1.0 if codes[j] == ci else -1.0
            so = s_out[a, j]
            S += t * so
            ds = so - s[a, j]
            sq += ds * ds
            inter += ds * t * (Dn[a, j] - Dp[a, j] - dh)
    return S, sq, inter


@nb.njit(cache=True, error_model="numpy")
def _pair_laplacian_apply(I, J, w, FV, Y):
    """Y += L FV for the graph Laplacian L of the weights w on the listed pairs (each pair
    (i, j) adds w to L's (i, j) and (j, i) entries): Σ_q w_q z_q z_qᵀ = Fᵀ L F."""
    p = FV.shape[1]
    for q in range(I.shape[0]):
        i, j = I[q], J[q]
        wq = w[q]
        if wq == 0.0 or i == j:
            continue
        for l in range(p):
            d = wq * (FV[i, l] - FV[j, l])
            Y[i, l] += d
            Y[j, l] -= d
