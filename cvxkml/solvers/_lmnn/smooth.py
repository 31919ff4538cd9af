"""The smoothed quasi-Newton phase of the LMNN solver: the hinge of eq. 18 smoothed to h_μ
and F_μ(L Lᵀ) minimized over the factor L by L-BFGS, for a decreasing sequence of widths μ."""

from __future__ import annotations

import numba as nb
import numpy as np

from ...formulas.lmnn import LMNNTriplets
from .kernels import _omega_times, _pair_quad
from .ops import _Ops


# --------------------------------------------------------------------------- smoothed phase
@nb.njit(cache=True, error_model="numpy")
def _smooth_value_grad(U, Lf, pi, pj, w_base, tt, ti, work, pairs, gamma, mu, p, w, alpha):
    """Value and gradient in L of the smoothed objective F_μ(L Lᵀ) on the working set.

    F_μ(X̂) = Σ_p w_base_p d(p) + γ Σ_{t ∈ work} h_μ(1 + d(i, j) − d(i, l)) with the
    hinge smoothed on [−μ, μ] (h_μ(z) = 0, (z + μ)²/(4μ), z), d(p) = ‖(u_i − u_j) L‖².
    Writes the pair distances of ``pairs`` into ``p``, the multipliers α_t = γ h_μ'(z_t)
    of ``work`` into ``alpha`` and the pair weights w(α) into ``w``; returns (F_μ,
    ∇_L = 2 Uᵀ Ω(α) U L)."""
    Y = U @ Lf
    _pair_quad(Y, Y, pi, pj, pairs, p)
    f = 0.0
    for q in range(pairs.shape[0]):
        pp = pairs[q]
        w[pp] = w_base[pp]
        f += w_base[pp] * p[pp]
    for q in range(work.shape[0]):
        t = work[q]
        z = 1.0 + p[tt[t]] - p[ti[t]]
        if z <= -mu:
            a = 0.0
        elif z >= mu:
            a = gamma
            f += gamma * z
        else:
            a = gamma * (z + mu) / (2.0 * mu)
            f += gamma * (z + mu) * (z + mu) / (4.0 * mu)
        alpha[t] = a
        if a != 0.0:
            w[tt[t]] += a
            w[ti[t]] -= a
    OY = np.empty_like(Y)
    _omega_times(Y, pi, pj, w, pairs, OY)
    return f, 2.0 * (U.T @ OY)


#: smoothing widths μ of the continuation (in units of the LMNN margin 1)
_SMOOTH_MUS = (1.0, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3)


_SMOOTH_MAXITER = 500  # L-BFGS iterations per width


_SMOOTH_ROUNDS = 5  # working-set rebuilds per width


_SMOOTH_BARRIER_MU = 0.01  # restricted-dual recovery after every width <= this


#: L-BFGS's relative-decrease stop (scipy ``ftol``) at a width μ above ``_SMOOTH_INEXACT_MU``
#: is this × μ: those widths only carry the factor towards the small ones (their check bounds
#: progress; the recovery and the certificate come at the small widths, which run to round-off)
_SMOOTH_FTOL_PER_MU = 1e-3


#: the widths above this (1 and 0.3) are solved inexactly (the smaller ones carry the certificate)
_SMOOTH_INEXACT_MU = 0.2


def _smooth_widths(tol: float) -> list:
    """The widths μ of the continuation: ``_SMOOTH_MUS``, then tenfold smaller ones down
    to 0.01·tol (a tight tolerance needs a small smoothing bias; the phase stops at the
    first certified width, so a loose tol never reaches them)."""
    mus = list(_SMOOTH_MUS)
    while mus[-1] * 0.1 >= 0.01 * tol and mus[-1] > 1e-10:
        mus.append(mus[-1] * 0.1)
    return mus


_SMOOTH_RIDGE = 1e-3  # start factor: eigenvalues lifted to >= this × the largest


def _psd_sqrt(X) -> np.ndarray:
    """A full-rank factor L (r × r) with L Lᵀ = Π_PSD(X) + a small ridge: the gradient of
    F_μ(L Lᵀ) in L is 2 G L, which vanishes on a zero column of L, so a rank-deficient
    start (a warm start at a low-rank metric) would never leave its face."""
    lam, V = np.linalg.eigh(0.5 * (X + X.T))
    top = max(float(lam[-1]) if lam.size else 0.0, 0.0)
    lam = np.maximum(lam, _SMOOTH_RIDGE * top) if top > 0 else np.ones_like(lam)
    return np.ascontiguousarray(V * np.sqrt(lam))


def _smooth_stages(U, trip: LMNNTriplets, gamma, X0, mus, budget, buffer):
    """Continuation on the smoothed objective: for each μ in ``mus`` minimize F_μ(L Lᵀ)
    over the factor L (r × r) by L-BFGS (scipy), from the previous width's L, and yield
    (μ, X̂ = L Lᵀ, α, L-BFGS iterations).

    Why: F_μ is smooth, so a quasi-Newton method needs no eigendecomposition and no
    step-size tuning, and at the minimizer of the convex F_μ over X̂ ⪰ 0 the multipliers
    α_t = γ h_μ'(z_t) ∈ [0, γ] are dual feasible for eq. 18 (G(α) = ∇F_μ(X̂) ⪰ 0) with
    F(X̂) − Σα = O(μ) per kink triplet: primal and dual close together, which the caller
    certifies with the exact :func:`lmnn_dual_value` (or the barrier recovery).  The
    factorization makes the problem non-convex in L, but nothing here is trusted: every
    claim is the certificate of the unsmoothed problem.  Only the *working* triplets
    (hinge argument > −1 − μ − ``buffer``) are summed; after each L-BFGS run the full
    set is checked, and the run is repeated with a larger set if a triplet outside it
    has entered the smoothing zone, so every yielded point minimizes the full F_μ as
    far as L-BFGS does.  The widths above ``_SMOOTH_INEXACT_MU`` stop at a relative decrease
    of ``_SMOOTH_FTOL_PER_MU``·μ per iteration (their minimizers are way points, biased by
    O(μ) per kink anyway); the smaller widths, which the caller certifies, run to round-off."""
    from scipy.optimize import minimize

    n, r = U.shape
    T, P = trip.n_triplets, trip.n_pairs
    w_base = np.ascontiguousarray((1.0 - gamma) * trip.target_weight)
    targets = np.flatnonzero(trip.target_weight > 0)
    ops = _Ops(U, trip)
    Lf = _psd_sqrt(X0)
    p = np.zeros(P)
    w = np.zeros(P)
    scratch = np.zeros(T)  # α of the working triplets (written by the kernel)
    used = 0
    for mu in mus:
        nit = 0
        for _ in range(_SMOOTH_ROUNDS):
            pf = ops.distances_factor(Lf)
            z = 1.0 + pf[trip.tt] - pf[trip.ti]
            inside = z > -mu - buffer
            work = np.flatnonzero(inside).astype(np.int64)
            used_pair = np.zeros(P, dtype=bool)  # the target pairs and the working impostor pairs
            used_pair[targets] = True
            used_pair[trip.ti[work]] = True
            pairs = np.flatnonzero(used_pair).astype(np.int64)
            left = budget - used - nit
            if left <= 0:
                break

            def fun(x, work=work, pairs=pairs, mu=mu):
                f, g = _smooth_value_grad(
                    U,
                    x.reshape(r, r),
                    trip.pi,
                    trip.pj,
                    w_base,
                    trip.tt,
                    trip.ti,
                    work,
                    pairs,
                    gamma,
                    mu,
                    p,
                    w,
                    scratch,
                )
                return f, g.ravel()

            res = minimize(
                fun,
                Lf.ravel(),
                jac=True,
                method="L-BFGS-B",
                options={
                    "maxiter": int(min(_SMOOTH_MAXITER, left)),
                    "maxcor": 20 if r <= 100 else 10,  # kernel LMNN: r = n
                    "ftol": _SMOOTH_FTOL_PER_MU * mu if mu > _SMOOTH_INEXACT_MU else 1e-13,
                    "gtol": 1e-10,
                },
            )
            nit += int(res.nit)
            Lf = np.ascontiguousarray(res.x.reshape(r, r))
            if not np.all(np.isfinite(Lf)):
                raise FloatingPointError("LMNN smoothed iterates became non-finite")
            pf = ops.distances_factor(Lf)
            z = 1.0 + pf[trip.tt] - pf[trip.ti]
            if not np.any((z > -mu) & ~inside):
                break
        # α of the returned point on all triplets (0 outside the smoothing zone)
        alpha = np.where(z >= mu, gamma, np.where(z <= -mu, 0.0, gamma * (z + mu) / (2.0 * mu)))
        used += nit
        yield mu, Lf @ Lf.T, alpha, nit, int(work.size)
        if used >= budget:
            return
