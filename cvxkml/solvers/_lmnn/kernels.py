"""The Numba kernels of the LMNN solvers: pair distances through a factor, the pair weights
of G(α), the product Ω(α)U, the PSD projection, and the PDHG's inner steps on the working set."""

from __future__ import annotations

import numba as nb
import numpy as np


# --------------------------------------------------------------------------- kernels
@nb.njit(cache=True, error_model="numpy")
def _pair_quad(U, Y, pi, pj, pairs, out):
    """out[p] = (U[i] − U[j]) · (Y[i] − Y[j]) for p in ``pairs`` (Y = U X̂: u_pᵀ X̂ u_p)."""
    r = U.shape[1]
    for q in range(pairs.shape[0]):
        p = pairs[q]
        a = pi[p]
        b = pj[p]
        s = 0.0
        for c in range(r):
            s += (U[a, c] - U[b, c]) * (Y[a, c] - Y[b, c])
        out[p] = s


@nb.njit(cache=True, error_model="numpy")
def _weights(w_base, tt, ti, alpha, work, w):
    """w = w_base + Σ_{t ∈ work} α_t (e_tt − e_ti): the pair weights of G(α)."""
    w[:] = w_base
    for q in range(work.shape[0]):
        t = work[q]
        a = alpha[t]
        if a != 0.0:
            w[tt[t]] += a
            w[ti[t]] -= a


@nb.njit(cache=True, error_model="numpy")
def _omega_times(U, pi, pj, w, pairs, out):
    """out = Ω U with Ω = Σ_p w_p (e_i − e_j)(e_i − e_j)ᵀ over ``pairs``."""
    out[:] = 0.0
    r = U.shape[1]
    for q in range(pairs.shape[0]):
        p = pairs[q]
        wp = w[p]
        if wp == 0.0:
            continue
        a = pi[p]
        b = pj[p]
        for c in range(r):
            d = wp * (U[a, c] - U[b, c])
            out[a, c] += d
            out[b, c] -= d


@nb.njit(cache=True, error_model="numpy")
def _psd_project(M):
    """Π_PSD(M) by eigendecomposition (negative eigenvalues clipped)."""
    S = 0.5 * (M + M.T)
    lam, V = np.linalg.eigh(S)
    r = lam.shape[0]
    for c in range(r):
        if lam[c] < 0.0:
            lam[c] = 0.0
    W = V * lam
    return W @ V.T


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _steps(
    U, X, alpha, p, pi, pj, w_base, tt, ti, work, work_pairs, sig, tau, gamma, n_steps, X_sum, a_sum, w, OU, p_new
):
    """``n_steps`` primal–dual iterations on the working set (in place)."""
    for _ in range(n_steps):
        _weights(w_base, tt, ti, alpha, work, w)
        _omega_times(U, pi, pj, w, work_pairs, OU)
        G = U.T @ OU
        X[:, :] = _psd_project(X - tau * G)
        Y = U @ X
        _pair_quad(U, Y, pi, pj, work_pairs, p_new)
        for q in range(work.shape[0]):
            t = work[q]
            a = tt[t]
            b = ti[t]
            arg = 1.0 + (2.0 * p_new[a] - p[a]) - (2.0 * p_new[b] - p[b])
            v = alpha[t] + sig[t] * arg
            alpha[t] = 0.0 if v < 0.0 else (gamma if v > gamma else v)
        for q in range(work_pairs.shape[0]):
            pp = work_pairs[q]
            p[pp] = p_new[pp]
        X_sum += X
        for q in range(work.shape[0]):
            t = work[q]
            a_sum[t] += alpha[t]
