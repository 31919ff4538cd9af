"""von Neumann kernel learning by cyclic Bregman projections (Kulis, Sustik, Dhillon, JMLR
2009, §5.2, Algorithm 3; slack §6.2.1), factored: X̂ = W diag(exp q) Wᵀ with W orthogonal.

A projection onto the pair constraint δ(tr(X̂ w0 w0ᵀ) − ξ) <= 0 (v = F[i] − F[j],
w = Wᵀv) moves log X̂ ← log X̂ + θ v vᵀ, i.e. diag(q) + θ w wᵀ = U diag(q̃) Uᵀ, then
W ← W U, q ← q̃.  Everything about the diagonal-plus-rank-one eigenproblem comes from
its eigenvalues, the roots of the secular equation 1 + θ Σ_i w_i² / (q_i − λ) = 0:

    (wᵀu_k)² = 1 / (θ² Σ_i w_i² / (q_i − λ_k)²),
    h(θ)  = wᵀ exp(diag q + θwwᵀ) w = Σ_k e^{λ_k} (wᵀu_k)²,
    h'(θ) = Σ_{k,l} (wᵀu_k)² (wᵀu_l)² (e^{λ_k} − e^{λ_l}) / (λ_k − λ_l)   (Daleckii–Krein),

so each evaluation of h costs O(r²) and no eigenvectors.  θ solves log h(θ) = log b (hard)
or log h(θ) + θ/γ = log ξ (slack) — both strictly increasing — by safeguarded Newton on
a bracket (ZEROFINDER).  The dual correction Δλ = max(−δθ*, −λ), θ = −δΔλ keeps λ >= 0
(the multiplier of δ(tr(X̂A) − ξ) <= 0, log X̂ = log X̂0 − Σ δλA).  Eigenvectors use
Gu & Eisenstat's recomputed weights, so U is orthogonal to working precision.
Deflation: components with |w_i| <= 1e-14‖w‖ are left alone, and clustered q_i
(|Δq| <= 1e-12 scale) are merged by Givens rotations applied to W.

Roots are found in offset form λ = q_a + τ from the nearer pole a (as LAPACK's dlaed4),
with a two-pole rational model (Li's "middle way") safeguarded by bisection.
Cost per projection: O(r²) for w, O(k² · iterations) for the roots (k undeflated),
O(r k²) for W ← W U (dense product; the paper's fast-multipole variant is O(r²)).
"""
from __future__ import annotations

import time

import numba as nb
import numpy as np

from .._config import blas_limit

from .bregman import NONFINITE, NOT_CONVERGED, OK, BregmanResult, _dual_change

_EPS = np.finfo(np.float64).eps


@nb.njit(cache=True, error_model="numpy")
def _secular_f(d, z2, rho, a, tau):
    """f = 1 + ρ Σ z_i² / ((d_i − d_a) − τ), df/dτ, and the round-off scale 1 + Σ|ρ z_i²/δ_i|."""
    f = 1.0
    df = 0.0
    sabs = 1.0
    for i in range(d.shape[0]):
        delta = (d[i] - d[a]) - tau
        t = z2[i] / delta
        f += rho * t
        df += rho * t / delta
        sabs += abs(rho * t)
    return f, df, sabs


@nb.njit(cache=True, error_model="numpy")
def secular_roots(d, z, rho, anchor, tau):
    """Eigenvalues of diag(d) + ρ z zᵀ for strictly increasing d and nonzero z, returned as
    λ_k = d[anchor[k]] + tau[k] (in increasing order)."""
    k = d.shape[0]
    z2 = z * z
    nz2 = 0.0
    for i in range(k):
        nz2 += z2[i]
    for j in range(k):
        # interval of root j
        if rho > 0:
            lo_pole = j
            hi_pole = j + 1 if j + 1 < k else -1
            width = (d[j + 1] - d[j]) if hi_pole >= 0 else rho * nz2
        else:
            lo_pole = j - 1
            hi_pole = j
            width = (d[j] - d[j - 1]) if lo_pole >= 0 else -rho * nz2
        # anchor at the pole nearer the root (sign of f at the midpoint decides), bracket in τ
        if hi_pole >= 0 and lo_pole >= 0:
            f_mid, _, _ = _secular_f(d, z2, rho, lo_pole, 0.5 * width)
            root_left = (f_mid > 0) if rho > 0 else (f_mid < 0)   # f ↑ in λ for ρ > 0, ↓ for ρ < 0
            if root_left:
                a, lo, hi = lo_pole, 0.0, 0.5 * width
            else:
                a, lo, hi = hi_pole, -0.5 * width, 0.0
        elif hi_pole < 0:
            a, lo, hi = lo_pole, 0.0, width          # last root, ρ > 0: (d_last, d_last + ρ|z|²]
        else:
            a, lo, hi = hi_pole, -width, 0.0         # first root, ρ < 0: [d_0 + ρ|z|², d_0)
        # iterate in τ on (lo, hi), poles at τ = 0 and τ = ±width excluded
        t = 0.5 * (lo + hi)
        for _ in range(200):
            f, df, sabs = _secular_f(d, z2, rho, a, t)
            if abs(f) <= 8.0 * _EPS * sabs:          # f at round-off level (as LAPACK dlaed4)
                break
            # bracket update (f monotone: sign tells the side)
            increasing = rho > 0
            if (f < 0) == increasing:
                lo = t
            else:
                hi = t
            # two-pole rational model around the interval ends ("middle way"):
            # psi_left = Σ_{i<=p} z²/(δ_i − x), psi_right = Σ_{i>p} z²/(δ_i − x)
            p_left = lo_pole
            psi1 = 0.0
            dpsi1 = 0.0
            psi2 = 0.0
            dpsi2 = 0.0
            for i in range(k):
                delta = (d[i] - d[a]) - t
                q = z2[i] / delta
                if i <= p_left:
                    psi1 += q
                    dpsi1 += q / delta
                else:
                    psi2 += q
                    dpsi2 += q / delta
            tn = np.nan
            dl = (d[lo_pole] - d[a]) if lo_pole >= 0 else np.nan
            dr = (d[hi_pole] - d[a]) if hi_pole >= 0 else np.nan
            if lo_pole >= 0 and hi_pole >= 0:
                # f(x) ≈ 1 + ρ(a1 + b1/(dl − x) + a2 + b2/(dr − x))
                b1 = dpsi1 * (dl - t) ** 2
                a1 = psi1 - b1 / (dl - t)
                b2 = dpsi2 * (dr - t) ** 2
                a2 = psi2 - b2 / (dr - t)
                c = 1.0 / rho + a1 + a2
                # c (dl − x)(dr − x) + b1 (dr − x) + b2 (dl − x) = 0
                A = c
                B = -(c * (dl + dr) + b1 + b2)
                C = c * dl * dr + b1 * dr + b2 * dl
                if A != 0.0:
                    disc = B * B - 4 * A * C
                    if disc >= 0:
                        sq = np.sqrt(disc)
                        qq = -0.5 * (B + (sq if B >= 0 else -sq))
                        r1 = qq / A
                        r2 = C / qq if qq != 0.0 else np.nan
                        if lo < r1 < hi:
                            tn = r1
                        elif lo < r2 < hi:
                            tn = r2
                elif B != 0.0:
                    tn = -C / B
            elif lo_pole >= 0:
                # last root: f ≈ 1 + ρ(a1 + b1/(dl − x) + ψ2) (ψ2 empty)
                b1 = dpsi1 * (dl - t) ** 2
                a1 = psi1 - b1 / (dl - t)
                c = 1.0 / rho + a1
                if c != 0.0:
                    tn = dl + b1 / c
            else:
                b2 = dpsi2 * (dr - t) ** 2
                a2 = psi2 - b2 / (dr - t)
                c = 1.0 / rho + a2
                if c != 0.0:
                    tn = dr + b2 / c
            if not (lo < tn < hi):
                tn = 0.5 * (lo + hi)
            if abs(tn - t) <= 4.0 * _EPS * max(abs(t), abs(tn)) or hi - lo <= 4.0 * _EPS * max(abs(lo), abs(hi)):
                t = tn
                break
            t = tn
        anchor[j] = a
        tau[j] = t


@nb.njit(cache=True, error_model="numpy")
def _weights_and_h(d, z, rho, anchor, tau, lam, c2):
    """λ_k, (wᵀu_k)², and log h, h'/h at this ρ (= θ)."""
    k = d.shape[0]
    m = -np.inf
    for j in range(k):
        lam[j] = d[anchor[j]] + tau[j]
        s = 0.0
        for i in range(k):
            delta = (d[i] - d[anchor[j]]) - tau[j]
            s += z[i] * z[i] / (delta * delta)
        c2[j] = 1.0 / (rho * rho * s)
        if lam[j] > m:
            m = lam[j]
    e = np.empty(k)
    h = 0.0
    for j in range(k):
        e[j] = np.exp(lam[j] - m)
        h += e[j] * c2[j]
    dh = 0.0
    for j in range(k):
        ej = e[j]
        dh += c2[j] * c2[j] * ej
        for l in range(j + 1, k):
            dlam = lam[j] - lam[l]
            el = e[l]
            if abs(dlam) > 1e-8 * max(1.0, abs(lam[j])):
                g = (ej - el) / dlam
            else:
                g = 0.5 * (ej + el)
            dh += 2.0 * c2[j] * c2[l] * g
    return m + np.log(h), dh / h


@nb.njit(cache=True, error_model="numpy")
def _eval(d, z, theta, anchor, tau, lam, c2):
    """log h(θ) and d log h / dθ for the deflated problem."""
    k = d.shape[0]
    if theta == 0.0:
        m = -np.inf
        for i in range(k):
            if d[i] > m:
                m = d[i]
        h = 0.0
        for i in range(k):
            h += np.exp(d[i] - m) * z[i] * z[i]
        # h'(0) = Σ_ij z_i² z_j² (e^{d_i} − e^{d_j})/(d_i − d_j)
        dh = 0.0
        for i in range(k):
            ei = np.exp(d[i] - m)
            dh += z[i] ** 4 * ei
            for j in range(i + 1, k):
                ej = np.exp(d[j] - m)
                dd = d[i] - d[j]
                g = (ei - ej) / dd if abs(dd) > 1e-8 * max(1.0, abs(d[i])) else 0.5 * (ei + ej)
                dh += 2.0 * z[i] ** 2 * z[j] ** 2 * g
        return m + np.log(h), dh / h
    secular_roots(d, z, theta, anchor, tau)
    return _weights_and_h(d, z, theta, anchor, tau, lam, c2)


@nb.njit(cache=True, error_model="numpy")
def safeguarded_newton_step(theta, phi, dphi, lo, hi, nz2):
    """The next iterate of ZEROFINDER's safeguarded Newton method for the increasing φ:
    the Newton step when it stays inside the bracket (lo, hi), else bisection of a finite
    bracket, else an expansion towards the open side by at least 1/‖w‖² (``nz2``)."""
    tn = theta - phi / dphi if dphi > 0 else np.nan
    if not np.isfinite(tn) or tn <= lo or tn >= hi:
        if np.isfinite(lo) and np.isfinite(hi):
            tn = 0.5 * (lo + hi)
        elif np.isfinite(lo):
            tn = max(2.0 * max(theta, lo) + 1.0 / nz2, theta + 1.0 / nz2)
        else:
            tn = min(2.0 * min(theta, hi) - 1.0 / nz2, theta - 1.0 / nz2)
    return tn


@nb.njit(cache=True, error_model="numpy")
def _zerofinder(d, z, target_log, inv_gamma, anchor, tau, lam, c2):
    """θ with φ(θ) = log h(θ) + θ/γ − target_log = 0 (inv_gamma = 0 for hard constraints);
    returns (θ, evaluations)."""
    lh, dl = _eval(d, z, 0.0, anchor, tau, lam, c2)
    phi = lh - target_log
    dphi = dl + inv_gamma
    lo = -np.inf
    hi = np.inf
    if phi > 0:
        hi = 0.0
    else:
        lo = 0.0
    theta = 0.0
    evals = 1
    nz2 = 0.0
    for i in range(z.shape[0]):
        nz2 += z[i] * z[i]
    for it in range(100):
        if abs(phi) <= 1e-14 * max(1.0, abs(target_log)):
            break
        theta = safeguarded_newton_step(theta, phi, dphi, lo, hi, nz2)
        lh, dl = _eval(d, z, theta, anchor, tau, lam, c2)
        evals += 1
        phi = lh + theta * inv_gamma - target_log
        dphi = dl + inv_gamma
        if phi > 0:
            hi = theta
        else:
            lo = theta
        if np.isfinite(lo) and np.isfinite(hi) and hi - lo <= 1e-15 * max(1.0, abs(theta)):
            break
    return theta, evals


@nb.njit(cache=True, error_model="numpy")
def eigvecs_from_roots(d, z, rho, anchor, tau, U):
    """Gu–Eisenstat eigenvectors of diag(d) + ρ z zᵀ from its computed roots (columns of U)."""
    k = d.shape[0]
    zhat = np.empty(k)
    for i in range(k):
        # ẑ_i² = Π_j (λ_j − d_i) / (ρ Π_{j≠i} (d_j − d_i))
        prod = 1.0
        for j in range(k):
            lam_minus_di = (d[anchor[j]] - d[i]) + tau[j]
            prod *= lam_minus_di
            if j != i:
                prod /= (d[j] - d[i])
        prod /= rho
        zhat[i] = np.sqrt(max(prod, 0.0)) * (1.0 if z[i] >= 0 else -1.0)
    for j in range(k):
        s = 0.0
        for i in range(k):
            delta = (d[i] - d[anchor[j]]) - tau[j]
            U[i, j] = zhat[i] / delta
            s += U[i, j] * U[i, j]
        s = np.sqrt(s)
        for i in range(k):
            U[i, j] /= s


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
def project_pair(W, q, v, target, delta, lam_c, gamma, stats):
    """One von Neumann Bregman projection (in place on W, q).  Returns (Δλ, new target)."""
    r = q.shape[0]
    w = np.empty(r)
    for j in range(r):
        s = 0.0
        for i in range(r):
            s += W[i, j] * v[i]
        w[j] = s
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
    inv_g = 0.0 if np.isinf(gamma) else 1.0 / gamma
    theta_star, evals = _zerofinder(d, z, np.log(target), inv_g, anchor, tau, lam, c2)
    stats[0] += evals
    stats[1] += 1
    if not np.isfinite(theta_star):
        return np.nan, np.nan                    # the caller reports NONFINITE at this constraint
    dlam = max(-delta * theta_star, -lam_c)
    theta = -delta * dlam
    if theta == 0.0:
        return 0.0, target
    if theta != theta_star:
        secular_roots(d, z, theta, anchor, tau)
    U = np.empty((k, k))
    eigvecs_from_roots(d, z, theta, anchor, tau, U)
    # W[:, idx] ← W[:, idx] U ;  q[idx] ← λ
    Wa = np.empty((W.shape[0], k))
    for a in range(W.shape[0]):
        for t in range(k):
            Wa[a, t] = W[a, idx[t]]
    Wn = Wa @ U
    for a in range(W.shape[0]):
        for t in range(k):
            W[a, idx[t]] = Wn[a, t]
    for t in range(k):
        q[idx[t]] = d[anchor[t]] + tau[t]
    new_target = target
    if not np.isinf(gamma):
        new_target = target * np.exp(-theta / gamma)
    return dlam, new_target


@nb.njit(cache=True, error_model="numpy")
def _sweeps_vn(W, q, F, I, J, delta, xi, lam, gamma, tol, max_sweeps, stats):
    m = I.shape[0]
    r = q.shape[0]
    v = np.empty(r)
    lam_old = np.empty(m)
    change = np.inf
    for sweep in range(max_sweeps):
        lam_old[:] = lam
        for c in range(m):
            for a in range(r):
                v[a] = F[I[c], a] - F[J[c], a]
            dl, xnew = project_pair(W, q, v, xi[c], delta[c], lam[c], gamma, stats)
            if not (np.isfinite(xnew) and np.isfinite(dl)):
                return sweep, change, NONFINITE, c
            lam[c] += dl
            xi[c] = xnew
        change = _dual_change(lam, lam_old)
        if not np.isfinite(change):
            return sweep + 1, change, NONFINITE, -1
        if change < tol:
            return sweep + 1, change, OK, -1
    return max_sweeps, change, NOT_CONVERGED, -1


@blas_limit()
def vonneumann_pairs(F, q0, i, j, delta, bound, gamma=None, tol=1e-9, max_sweeps=10_000):
    """Cyclic von Neumann projections on X̂ = W diag(e^q) Wᵀ (W = I, q = q0 initially)
    for pair constraints δ(v̂ᵀX̂v̂ − ξ) <= 0 with v̂ = F[i] − F[j]; returns a
    :class:`BregmanResult` whose ``matrix`` is X̂ and ``extra`` holds W, q and the
    root-finder statistics."""
    F = np.ascontiguousarray(F, dtype=np.float64)
    r = F.shape[1]
    W = np.eye(r)
    q = np.array(q0, dtype=np.float64)
    lam = np.zeros(len(i))
    xi = np.array(bound, dtype=np.float64)
    stats = np.zeros(2)
    g = np.inf if gamma is None else float(gamma)
    t0 = time.perf_counter()
    sweeps, change, code, bad = _sweeps_vn(W, q, F, np.ascontiguousarray(i, dtype=np.int64),
                                           np.ascontiguousarray(j, dtype=np.int64),
                                           np.ascontiguousarray(delta, dtype=np.float64),
                                           xi, lam, g, float(tol), int(max_sweeps), stats)
    elapsed = time.perf_counter() - t0
    with np.errstate(over="ignore", invalid="ignore"):
        Xh = (W * np.exp(q)) @ W.T
    if code == OK and not (np.all(np.isfinite(Xh)) and np.all(np.isfinite(lam))):
        code = NONFINITE                 # e^q overflowed: multipliers diverging (infeasible)
    return BregmanResult(0.5 * (Xh + Xh.T), lam, xi, int(sweeps), float(change), int(code), int(bad),
                         elapsed, extra={"W": W, "q": q,
                                         "evals_per_projection": stats[0] / max(stats[1], 1),
                                         "solver": "vonneumann-alg3"})


@blas_limit()
def rank_one_eig_update(q, w, theta):
    """Eigen-decomposition of diag(q) + θ w wᵀ by deflation + secular equation +
    Gu–Eisenstat vectors (the update of one projection); returns (eigenvalues, U) with
    diag(q) + θwwᵀ = U diag(eigenvalues) Uᵀ.  Python-level entry point for tests and users."""
    q = np.array(q, dtype=np.float64)
    w = np.array(w, dtype=np.float64)
    r = q.size
    W = np.eye(r)
    idx = _deflate(q, w, W, 1e-14, 1e-12)
    k = idx.size
    if k and theta != 0.0:
        d, z = q[idx].copy(), w[idx].copy()
        anchor = np.empty(k, dtype=np.int64)
        tau = np.empty(k)
        secular_roots(d, z, float(theta), anchor, tau)
        U = np.empty((k, k))
        eigvecs_from_roots(d, z, float(theta), anchor, tau, U)
        W[:, idx] = W[:, idx] @ U
        q[idx] = d[anchor] + tau
    return q, W
