"""The secular equation of a diagonal-plus-rank-one eigenproblem and ZEROFINDER (Kulis,
Sustik & Dhillon 2009, §5.2): the roots in offset form from the nearer pole (as LAPACK's
dlaed4) by a safeguarded two-pole rational model, cold or warm started, and the
safeguarded Newton solve of log h(θ) = log b (hard) or log h(θ) + θ/γ = log ξ (slack)."""

from __future__ import annotations

import numba as nb
import numpy as np

from .._bregman_core import quadratic_roots

_EPS = np.finfo(np.float64).eps

#: ZEROFINDER's stop |φ(θ)| <= EXACT_FTOL · max(1, |log target|) for an exact projection: the
#: projected constraint's value v̂ᵀX̂v̂ equals its target to about this relative accuracy.  A
#: sweep may pass a looser ``ftol`` (:func:`cvxkml.solvers.vonneumann.projection_ftol`)
EXACT_FTOL = 1e-14


# reductions only (sums over poles): reassociation lets LLVM vectorize them; every
# difference that needs its order (d_i − d_a) − τ is formed outside these kernels
_FM = {"reassoc"}


# --------------------------------------------------------------------- secular equation
@nb.njit(cache=True, error_model="numpy")
def _shift(d, da, dd):
    """dd_i = d_i − d_a (the pole offsets of the anchored form)."""
    for i in range(d.shape[0]):
        dd[i] = d[i] - da


@nb.njit(cache=True, error_model="numpy", fastmath=_FM)
def _psi(dd, z2, t, split, inv):
    """ψ1 = Σ_{i<=split} z_i²/δ_i, ψ1′ = Σ_{i<=split} z_i²/δ_i², and ψ2, ψ2′ over i > split,
    with δ_i = dd_i − t (one pass over the poles).  The reciprocals 1/δ_i are left in
    ``inv``: after the last pass of a root they are the entries 1/(d_i − λ_j) of its
    (unnormalized) eigenvector, so the eigenvectors need no division of their own."""
    p1 = 0.0
    dp1 = 0.0
    p2 = 0.0
    dp2 = 0.0
    for i in range(dd.shape[0]):  # one loop (selects, not a split): vectorized at any split
        v = 1.0 / (dd[i] - t)
        inv[i] = v
        s = z2[i] * v
        ds = s * v
        if i <= split:
            p1 += s
            dp1 += ds
        else:
            p2 += s
            dp2 += ds
    return p1, dp1, p2, dp2


@nb.njit(cache=True, error_model="numpy")
def _model_step(rho, t, lo, hi, dl, dr, has_l, has_r, p1, dp1, p2, dp2):
    """The zero in (lo, hi) of the two-pole rational model of f fitted at t ("middle way"):
    f(x) ≈ 1 + ρ(a1 + b1/(dl − x) + a2 + b2/(dr − x)); NaN when it has none there."""
    tn = np.nan
    if has_l and has_r:
        b1 = dp1 * (dl - t) ** 2
        a1 = p1 - b1 / (dl - t)
        b2 = dp2 * (dr - t) ** 2
        a2 = p2 - b2 / (dr - t)
        c = 1.0 / rho + a1 + a2
        # c (dl − x)(dr − x) + b1 (dr − x) + b2 (dl − x) = 0
        A = c
        B = -(c * (dl + dr) + b1 + b2)
        C = c * dl * dr + b1 * dr + b2 * dl
        if A != 0.0:
            r1, r2 = quadratic_roots(A, B, C)
            if lo < r1 < hi:
                tn = r1
            elif lo < r2 < hi:
                tn = r2
        elif B != 0.0:
            tn = -C / B
    elif has_l:
        # last root for ρ > 0: f ≈ 1 + ρ(a1 + b1/(dl − x)) (ψ2 empty)
        b1 = dp1 * (dl - t) ** 2
        a1 = p1 - b1 / (dl - t)
        c = 1.0 / rho + a1 + p2
        if c != 0.0:
            tn = dl + b1 / c
    else:
        # first root for ρ < 0 (ψ1 empty)
        b2 = dp2 * (dr - t) ** 2
        a2 = p2 - b2 / (dr - t)
        c = 1.0 / rho + a2 + p1
        if c != 0.0:
            tn = dr + b2 / c
    return tn


@nb.njit(cache=True, error_model="numpy", inline="always")
def _root_interval(d, rho, j, nz2):
    """The poles around root j of 1 + ρ Σ z_i²/(d_i − λ) = 0 and the interval's width:
    (lo_pole, hi_pole, width), −1 for a missing pole (the outermost root lies within ρ‖z‖²
    of its one pole)."""
    k = d.shape[0]
    if rho > 0:
        lo_pole = j
        hi_pole = j + 1 if j + 1 < k else -1
        width = (d[j + 1] - d[j]) if hi_pole >= 0 else rho * nz2
    else:
        lo_pole = j - 1
        hi_pole = j
        width = (d[j] - d[j - 1]) if lo_pole >= 0 else -rho * nz2
    return lo_pole, hi_pole, width


@nb.njit(cache=True, error_model="numpy", inline="always")
def _warm_start(d, lo_pole, hi_pole, width, warm, a_prev, t_prev, step, dd):
    """The start of a warm solve: the previous root d[a_prev] + t_prev moved by ``step``, in
    the previous anchor's coordinates unless the guess crosses the interval's midpoint; the
    previous root bounds the new one on the side it comes from (``warm`` > 0: below).
    Returns (anchor, τ, lo, hi) with dd = d − d[anchor]."""
    both = lo_pole >= 0 and hi_pole >= 0
    a = a_prev
    t = t_prev + step
    b = t_prev
    if both and ((a == lo_pole and t > 0.5 * width) or (a == hi_pole and t < -0.5 * width)):
        s = -width if a == lo_pole else width
        a = hi_pole if a == lo_pole else lo_pole
        t += s
        b += s
    if a == lo_pole:
        lo, hi = 0.0, width
    else:
        lo, hi = -width, 0.0
    slack = 4.0 * _EPS * (abs(b) + width)  # the previous root's round-off
    if warm > 0:
        if b - slack > lo:
            lo = b - slack
    elif b + slack < hi:
        hi = b + slack
    if not (lo < t < hi):
        t = 0.5 * (lo + hi)
    _shift(d, d[a], dd)
    return a, t, lo, hi


@nb.njit(cache=True, error_model="numpy", inline="always")
def _cold_guess(z2, rho, lo_pole, hi_pole, width, xm, psum, xlo, xhi):
    """The initial guess of a cold solve (as LAPACK dlaed4): the nearest poles with their exact
    weights, the rest of the sum (``psum`` = ψ1 + ψ2 at the midpoint ``xm``) frozen; x is
    λ − d[ref] (ref: the lower pole, else the upper).  The midpoint of (xlo, xhi) when the
    model has no zero there."""
    x0 = np.nan
    if lo_pole >= 0 and hi_pole >= 0:
        bl = z2[lo_pole]
        br = z2[hi_pole]
        c = 1.0 / rho + psum - bl / (-xm) - br / (width - xm)
        # c (−x)(w − x) + bl (w − x) − br x = 0
        A = c
        B = -(c * width + bl + br)
        C = bl * width
        if A != 0.0:
            r1, r2 = quadratic_roots(A, B, C)
            if not np.isnan(r1):  # a real pair of roots
                x0 = r1 if xlo < r1 < xhi else r2
        elif B != 0.0:
            x0 = -C / B
    elif lo_pole >= 0:
        bl = z2[lo_pole]
        c = 1.0 / rho + psum - bl / (-xm)
        if c != 0.0:
            x0 = bl / c
    else:
        br = z2[hi_pole]
        c = 1.0 / rho + psum - br / (-xm)
        if c != 0.0:
            x0 = br / c
    if not (xlo < x0 < xhi):
        x0 = 0.5 * (xlo + xhi)
    return x0


@nb.njit(cache=True, error_model="numpy", inline="always")
def _cold_start(d, z2, rho, lo_pole, hi_pole, width, dd, inv):
    """The start of a cold solve: one pass at the midpoint of the root's interval halves it and
    fits :func:`_cold_guess`; the anchor is the pole nearer to the root.  Returns (anchor, τ,
    lo, hi) with dd = d − d[anchor] (one pass over the poles)."""
    has_l = lo_pole >= 0
    if has_l:  # coordinates x = λ − d[ref]
        ref = lo_pole
        xlo, xhi = 0.0, width
    else:
        ref = hi_pole
        xlo, xhi = -width, 0.0
    _shift(d, d[ref], dd)
    xm = 0.5 * (xlo + xhi)
    p1, dp1, p2, dp2 = _psi(dd, z2, xm, lo_pole, inv)
    f = 1.0 + rho * (p1 + p2)
    if (f < 0) == (rho > 0):  # f ↑ in λ for ρ > 0, ↓ for ρ < 0
        xlo = xm
    else:
        xhi = xm
    x0 = _cold_guess(z2, rho, lo_pole, hi_pole, width, xm, p1 + p2, xlo, xhi)
    a = ref
    if has_l and hi_pole >= 0 and xhi > xm:  # the root lies right of the midpoint
        a = hi_pole
    off = d[ref] - d[a]  # x → τ = λ − d[a]
    if a != ref:
        _shift(d, d[a], dd)
    return a, x0 + off, xlo + off, xhi + off


@nb.njit(cache=True, error_model="numpy", inline="always")
def _off_pole(t, lo, hi, a, lo_pole):
    """τ moved off the pole (τ = 0: round-off in a tiny bracket) to the bracket's far end."""
    if t == 0.0:
        t = hi if a == lo_pole else lo
        if t == 0.0:
            t = 5e-324 if a == lo_pole else -5e-324
    return t


@nb.njit(cache=True, error_model="numpy", inline="always")
def _refine(d, z2, rho, lo_pole, hi_pole, width, a, t, lo, hi, dd, inv):
    """Safeguarded iteration from (a, τ) in the bracket (lo, hi): the two-pole model step
    (:func:`_model_step`), bisection when it leaves the bracket, until f is at round-off
    level (LAPACK dlaed4) or the step stalls; then the anchor moves to the nearer pole (once)
    and the root is polished there.  Returns (anchor, τ, lo, hi, passes, fresh, ψ1′ + ψ2′)
    — ``fresh``: the ψ's were evaluated at the returned τ."""
    has_l = lo_pole >= 0
    has_r = hi_pole >= 0
    increasing = rho > 0
    passes = 0
    reanchored = False
    dpsi = 0.0
    fresh = False  # ψ's evaluated at the current t
    for _ in range(100):
        t = _off_pole(t, lo, hi, a, lo_pole)
        p1, dp1, p2, dp2 = _psi(dd, z2, t, lo_pole, inv)
        passes += 1
        fresh = True
        dpsi = dp1 + dp2
        f = 1.0 + rho * (p1 + p2)
        sabs = 1.0 + abs(rho) * (p2 - p1)  # Σ|ρ z²/δ|: δ < 0 for i <= lo_pole, > 0 above
        done = abs(f) <= 8.0 * _EPS * sabs  # f at round-off level (LAPACK dlaed4)
        if not done:
            if (f < 0) == increasing:
                lo = t
            else:
                hi = t
            dl = dd[lo_pole] if has_l else np.nan
            dr = dd[hi_pole] if has_r else np.nan
            tn = _model_step(rho, t, lo, hi, dl, dr, has_l, has_r, p1, dp1, p2, dp2)
            if not (lo < tn < hi):
                tn = 0.5 * (lo + hi)
            stall = abs(tn - t) <= 4.0 * _EPS * max(abs(t), abs(tn)) or hi - lo <= 4.0 * _EPS * max(abs(lo), abs(hi))
            t = tn
            fresh = False
            if not stall:
                continue
        # converged; keep the anchor at the nearer pole (one switch at most)
        if (
            has_l
            and has_r
            and not reanchored
            and ((a == lo_pole and t > 0.5 * width) or (a == hi_pole and t < -0.5 * width))
        ):
            s = -width if a == lo_pole else width
            a = hi_pole if a == lo_pole else lo_pole
            t += s
            lo += s
            hi += s
            if a == lo_pole:
                lo = max(lo, 0.0)
            else:
                hi = min(hi, 0.0)
            _shift(d, d[a], dd)
            reanchored = True
            continue
        break
    return a, t, lo, hi, passes, fresh, dpsi


@nb.njit(cache=True, error_model="numpy")
def _root(d, z2, rho, j, nz2, warm, a_prev, t_prev, step, dd, inv):
    """Root j (increasing order) of 1 + ρ Σ z_i²/(d_i − λ) = 0, d strictly increasing.

    Cold (``warm`` == 0): one pass at the midpoint of the root's interval fits the model and
    picks the nearer pole (:func:`_cold_start`).  Warm: the root at the previous ρ,
    d[a_prev] + t_prev, moves by ``step`` (> 0 for ``warm`` > 0) and bounds the new one on
    the side it comes from (:func:`_warm_start`).  Then :func:`_refine`.
    Returns (anchor, τ, (wᵀu_j)², passes) with λ_j = d[anchor] + τ, τ never 0 (a pole)."""
    lo_pole, hi_pole, width = _root_interval(d, rho, j, nz2)
    if warm != 0:
        a, t, lo, hi = _warm_start(d, lo_pole, hi_pole, width, warm, a_prev, t_prev, step, dd)
        passes = 0
    else:
        a, t, lo, hi = _cold_start(d, z2, rho, lo_pole, hi_pole, width, dd, inv)
        passes = 1
    a, t, lo, hi, n, fresh, dpsi = _refine(d, z2, rho, lo_pole, hi_pole, width, a, t, lo, hi, dd, inv)
    passes += n
    if t == 0.0:
        t = _off_pole(t, lo, hi, a, lo_pole)
        fresh = False
    if not fresh:
        p1, dp1, p2, dp2 = _psi(dd, z2, t, lo_pole, inv)
        dpsi = dp1 + dp2
        passes += 1
    c2 = 1.0 / (rho * (rho * dpsi))
    return a, t, c2, passes


@nb.njit(cache=True, error_model="numpy")
def _secular(d, z, rho, anchor, tau, c2, warm, dtheta, dd):
    """Eigenvalues λ_k = d[anchor[k]] + tau[k] of diag(d) + ρ z zᵀ (d strictly increasing,
    z nonzero) and the weights c2[k] = (zᵀu_k)².  ``warm``: anchor, tau, c2 hold the solution
    at ρ − dtheta (same sign as ρ) and seed the roots.  Returns the passes over the poles."""
    k = d.shape[0]
    return _secular_k(d, z, rho, anchor, tau, c2, warm, dtheta, dd, np.empty((k, k)))


@nb.njit(cache=True, error_model="numpy")
def _secular_k(d, z, rho, anchor, tau, c2, warm, dtheta, dd, inv):
    """:func:`_secular`, keeping inv[j, i] = 1/(d_i − λ_j) = 1/((d_i − d[anchor_j]) − τ_j)
    (the last pass of root j, at its returned τ): the Cauchy matrix of the eigenvectors."""
    k = d.shape[0]
    z2 = np.empty(k)
    nz2 = 0.0
    for i in range(k):
        z2[i] = z[i] * z[i]
        nz2 += z2[i]
    if k == 1:
        anchor[0] = 0
        tau[0] = rho * z2[0]
        c2[0] = z2[0]
        inv[0, 0] = 1.0 / ((d[0] - d[0]) - tau[0])
        return 0
    passes = 0
    for j in range(k):
        w = 0
        a_prev = 0
        t_prev = 0.0
        step = 0.0
        if warm:
            a_prev = anchor[j]
            t_prev = tau[j]
            step = dtheta * c2[j]
            w = 1 if dtheta > 0 else -1
        a, t, c, ps = _root(d, z2, rho, j, nz2, w, a_prev, t_prev, step, dd, inv[j])
        anchor[j] = a
        tau[j] = t
        c2[j] = c
        passes += ps
    return passes


@nb.njit(cache=True, error_model="numpy")
def secular_roots(d, z, rho, anchor, tau):
    """Eigenvalues of diag(d) + ρ z zᵀ for strictly increasing d and nonzero z, returned as
    λ_k = d[anchor[k]] + tau[k] (in increasing order)."""
    k = d.shape[0]
    c2 = np.empty(k)
    dd = np.empty(k)
    _secular(d, z, rho, anchor, tau, c2, False, 0.0, dd)


@nb.njit(cache=True, error_model="numpy", fastmath=_FM)
def _dh(lam, c2, e):
    """Σ_kl c2_k c2_l (e_k − e_l)/(λ_k − λ_l) (the divided difference of exp; the mean of the
    two exponentials when λ_k ≈ λ_l).  Whole rows (k ≠ l; g symmetric) so that the inner
    loop is long and vectorized.  No transcendental calls here: a vectorized exp under
    fastmath gave results that depended on the memory layout."""
    k = lam.shape[0]
    dh = 0.0
    for j in range(k):
        ej = e[j]
        lj = lam[j]
        thr = 1e-8 * max(1.0, abs(lj))
        s = 0.0
        for l in range(k):
            dlam = lj - lam[l]
            el = e[l]
            g = 0.5 * (ej + el) if abs(dlam) <= thr else (ej - el) / dlam
            s += c2[l] * g
        s -= c2[j] * ej  # l = j: dlam = 0 took the mean e_j
        dh += c2[j] * (c2[j] * ej + s)
    return dh


@nb.njit(cache=True, error_model="numpy")
def _logh(lam, c2, e):
    """(log h, h) for h = Σ_k e^{λ_k} c2_k, with e_k = e^{λ_k − max λ} left in ``e`` (h is
    scaled by e^{−max λ}; h′/h = :func:`_dh`(λ, c2, e) / h)."""
    k = lam.shape[0]
    m = -np.inf
    for j in range(k):
        if lam[j] > m:
            m = lam[j]
    h = 0.0
    for j in range(k):
        e[j] = np.exp(lam[j] - m)
        h += e[j] * c2[j]
    return m + np.log(h), h


@nb.njit(cache=True, error_model="numpy")
def _eval_roots(d, z, theta, anchor, tau, lam, c2, warm, dtheta, dd, e, inv):
    """log h(θ) of the deflated problem (and the scaled h; d log h/dθ = _dh(lam, c2, e)/h
    from the arrays left behind).  The roots stay in anchor/tau, their weights in c2, the
    eigenvalues in lam.  Returns (log h, h, passes over the poles)."""
    k = d.shape[0]
    if theta == 0.0:
        for i in range(k):
            lam[i] = d[i]
            c2[i] = z[i] * z[i]
        lh, h = _logh(lam, c2, e)
        return lh, h, 0
    passes = _secular_k(d, z, theta, anchor, tau, c2, warm, dtheta, dd, inv)
    for j in range(k):
        lam[j] = d[anchor[j]] + tau[j]
    lh, h = _logh(lam, c2, e)
    return lh, h, passes


@nb.njit(cache=True, error_model="numpy", inline="always")
def narrow_bracket(theta, phi, lo, hi):
    """The bracket (lo, hi) of the root of the increasing φ after an evaluation φ(θ): θ
    replaces hi where φ > 0, else lo.  Returns (lo, hi, closed): closed when both ends are
    finite and within 1e-15·max(1, |θ|) (ZEROFINDER's stop)."""
    if phi > 0:
        hi = theta
    else:
        lo = theta
    return lo, hi, bool(np.isfinite(lo) and np.isfinite(hi) and hi - lo <= 1e-15 * max(1.0, abs(theta)))


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
def _zerofinder_w(d, z, target_log, inv_gamma, anchor, tau, lam, c2, dd, e, counts, ftol=EXACT_FTOL):
    """θ with φ(θ) = log h(θ) + θ/γ − target_log = 0 (inv_gamma = 0 for hard constraints);
    the roots at the returned θ stay in anchor/tau/c2.  Returns (θ, evaluations);
    counts[0] += passes over the poles, counts[1] += roots solved.  See
    :func:`_zerofinder_r`."""
    k = d.shape[0]
    return _zerofinder_r(d, z, target_log, inv_gamma, anchor, tau, lam, c2, dd, e, counts, np.empty((k, k)), ftol, 0.0)


@nb.njit(cache=True, error_model="numpy")
def _zerofinder_r(d, z, target_log, inv_gamma, anchor, tau, lam, c2, dd, e, counts, inv, ftol, theta_clip):
    """ZEROFINDER (Kulis et al. §5.2.2): safeguarded Newton on φ(θ) = log h(θ) + θ/γ −
    target_log (:func:`_zerofinder_w`).  The first root solve starts warm from θ = 0 (where
    the roots are the poles), the later ones from the previous θ when it has the same sign.
    φ′ is :func:`_dh` at the current roots (at θ = 0 the poles); ``inv`` (k × k): the Cauchy
    matrix of the roots at the returned θ (:func:`_secular_k`).  Stops when |φ(θ)| <= ``ftol`` · max(1, |target_log|)
    (:data:`EXACT_FTOL` for an exact projection) or the bracket closes.

    ``theta_clip`` (0: none): the point where the projection's dual correction clips θ
    (Δλ = −λ_c, θ = δλ_c).  When a Newton step would pass it, h is evaluated there first: if
    θ* lies at or beyond it (φ(θ_clip)·θ_clip <= 0, φ increasing), θ_clip is returned with its
    roots (the projection's θ, found with one root solve instead of one for θ* and one more at
    θ_clip); otherwise it bounds the bracket and the Newton steps go on."""
    k = d.shape[0]
    lh, h, _ = _eval_roots(d, z, 0.0, anchor, tau, lam, c2, False, 0.0, dd, e, inv)
    phi = lh - target_log
    lo = -np.inf
    hi = np.inf
    if phi > 0:
        hi = 0.0
    else:
        lo = 0.0
    theta = 0.0
    evals = 1
    nz2 = 0.0
    for i in range(k):
        nz2 += z[i] * z[i]
    # the roots at θ = 0 are the poles (λ_j = d_j, weights z_j²): the first solve starts warm
    # from them (λ_j ≈ d_j + θ z_j², Hellmann–Feynman) instead of cold
    for i in range(k):
        anchor[i] = i
        tau[i] = 0.0
    have = False  # roots of a nonzero θ in anchor/tau/c2
    prev = 0.0
    clip_open = theta_clip != 0.0 and (phi * theta_clip < 0.0)  # θ* on the clip point's side
    for _ in range(100):
        if abs(phi) <= ftol * max(1.0, abs(target_log)):
            break
        # φ′ only when a step is taken (the last evaluation needs none)
        dphi = _dh(lam, c2, e) / h + inv_gamma
        theta = safeguarded_newton_step(theta, phi, dphi, lo, hi, nz2)
        if clip_open and theta / theta_clip > 1.0 and lo < theta_clip < hi:
            theta = theta_clip  # the step passes the clip point: test it first (once)
            clip_open = False
        warm = theta != 0.0 and (not have or (theta > 0) == (prev > 0))
        lh, h, ps = _eval_roots(d, z, theta, anchor, tau, lam, c2, warm, theta - prev, dd, e, inv)
        if theta != 0.0:
            have = True
            prev = theta
            counts[0] += ps
            counts[1] += k
        evals += 1
        phi = lh + theta * inv_gamma - target_log
        if theta == theta_clip and phi * theta_clip <= 0.0:
            break  # θ* at or beyond the clip point: the projection's θ is θ_clip
        lo, hi, closed = narrow_bracket(theta, phi, lo, hi)
        if closed:
            break
    if theta != 0.0 and not (have and prev == theta):
        _secular_k(d, z, theta, anchor, tau, c2, False, 0.0, dd, inv)
    return theta, evals


@nb.njit(cache=True, error_model="numpy")
def _zerofinder(d, z, target_log, inv_gamma, anchor, tau, lam, c2):
    """θ with φ(θ) = log h(θ) + θ/γ − target_log = 0 (inv_gamma = 0 for hard constraints);
    returns (θ, evaluations)."""
    k = d.shape[0]
    counts = np.zeros(2)
    return _zerofinder_w(d, z, target_log, inv_gamma, anchor, tau, lam, c2, np.empty(k), np.empty(k), counts)
