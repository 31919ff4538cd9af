"""Linear objective with a LogDet barrier (Jain et al. 2012 eq. 24; Kulis, Sra & Dhillon
2009, "Convex perturbations for scalable semidefinite programming"), by cyclic Bregman
projections — dual coordinate ascent — in the whitened space:

    min_X  tr(X C) − γ log det X   s.t.  tr(X Â_c) <= t_c,      C = Ĉ0 (r × r), γ > 0.

Dual: with Z(λ) = C + Σ_c λ_c Â_c ≻ 0, the primal point is X(λ) = γ Z(λ)⁻¹ and
g(λ) = γ log det Z(λ) + γ r (1 − log γ) − λᵀt.  (For C ≻ 0 the problem is
γ·D_ld(X, γC⁻¹) + const: LogDet with prior X0 = γC⁻¹, λ = γ·λ_ITML.)

Projection onto constraint c (maximize g over λ_c + δ, δ >= −λ_c), with Â_c = U_cᵀ D U_c
(q signed rank-one terms), G = U_c X U_cᵀ (q × q) and μ = eig(G^½ D G^½)/γ:

    X(δ) = X − X U_cᵀ · δD (γI + δ G D)⁻¹ · U_c X                   (Woodbury),
    h(δ) = tr(X(δ) Â_c) − t_c = γ Σ_k μ_k / (1 + δ μ_k) − t_c      (strictly decreasing
           on the interval where every 1 + δμ_k > 0, i.e. Z + δÂ_c ≻ 0).

Rank one (pairs, Z-form linear constraints; q = 1, μ = w p/γ with p = uᵀXu) has the
closed form  δ* = γ (1/t_c − 1/(w p))  when w t_c > 0 (for a pair, w = y, t = y·b:
δ* = yγ(1/b − 1/p), the ITML projection scaled by γ); w > 0 >= t_c is infeasible for any
X ≻ 0; w < 0 <= t_c never binds.  q >= 2 (relative, similarity, dense linear
constraints): the root of h by safeguarded Newton / bisection on its bracket.  Then
δ = max(δ*, −λ_c) (the dual correction that keeps λ >= 0).

Dual feasibility needs a start with Z ≻ 0.  For C ≻ 0, λ = 0.  Otherwise (C indefinite
or singular, e.g. C = −I, "maximize the trace") phase I adds the auxiliary constraint
tr X <= R (Â = I, multiplier ν): with ν0 = −λ_min(C + A(λ0)) + s (s a scale of C and of
the constraints) Z = C + ν0 I + A(λ0) ≻ 0, and the same projections (including the one
onto tr X <= R, a q = r projection) lower ν.  Whenever C + A(λ) ≻ 0 (checked every
``refresh`` sweeps) the auxiliary constraint is dropped (ν = 0) and phase II runs on the
original problem.  While the bound binds (ν > 0 after a chunk of sweeps whose relative
KKT residual is below 1e-3: the bounded problem is roughly solved), R grows tenfold; if it has
grown by ``max_bound_growth`` the problem is declared unbounded below (a recession
direction D ⪰ 0 with tr(DC) <= 0 and tr(DÂ_c) <= 0): code UNBOUNDED.  Faster, while the
bound binds, the top eigenvector v of X (X grows along it) gives a rank-one certificate:
ṽ = v with every positive constraint term projected out satisfies ṽᵀÂ_cṽ <= 0 exactly;
if also ṽᵀCṽ <= ``rec_tol``·‖C‖‖ṽ‖² the problem is unbounded below
(``extra["recession_direction"]`` = ṽ, whitened).

Stopping rule: the largest relative KKT residual of a sweep is below tol — for each
constraint, measured just before its projection, h = tr(XÂ_c) − t_c relative to
max(|t_c|, tr(X|Â_c|)): |h| when λ_c > 0, h₊ when λ_c = 0 (primal feasibility and
complementary slackness; X = γZ(λ)⁻¹ is stationary by construction, and
f(X) − g(λ) = Σ_c λ_c (t_c − tr(XÂ_c))).  (The relative dual change of a sweep, the
rule of :mod:`cvxkml.solvers.bregman`, is not used: a projection moves λ_c by O(γ), so
for small γ the dual change is tiny long before X is feasible.)  The result's
``stop_value`` field holds this KKT residual.  X is recomputed from λ (Cholesky) every
``refresh`` sweeps and at the end, so the returned X is exactly X(λ).
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np

from .._config import WorkBudget, blas_limit
from ._bregman_core import dual_change, quadratic_form, rank_one_update, sweep_end
from ._vocabulary import iteration_limit

# UNBOUNDED: no dual-feasible start found (unbounded below)
from .result import NONFINITE, NONPOSITIVE_DISTANCE, NOT_CONVERGED, OK, UNBOUNDED, FastResult

__all__ = ["barrier_bregman", "barrier_primal", "project_one", "UNBOUNDED"]


@nb.njit(cache=True, error_model="numpy")
def _h(mu, gamma, t, delta):
    """h(δ) = γ Σ μ_k/(1 + δμ_k) − t, h'(δ) and the size Σ|terms| + |t| (for round-off)."""
    h = -t
    dh = 0.0
    size = abs(t)
    for k in range(mu.shape[0]):
        den = 1.0 + delta * mu[k]
        term = gamma * mu[k] / den
        h += term
        size += abs(term)
        dh -= gamma * mu[k] * mu[k] / (den * den)
    return h, dh, size


@nb.njit(cache=True, error_model="numpy")
def _root(mu, gamma, t, lam_c):
    """δ = max(root of h, −λ_c) on the domain of h; returns (δ, ok)."""
    mu_max = -np.inf
    mu_min = np.inf
    scale = 0.0
    for k in range(mu.shape[0]):
        mu_max = max(mu_max, mu[k])
        mu_min = min(mu_min, mu[k])
        scale = max(scale, abs(mu[k]))
    if scale == 0.0:  # Â_c vanishes on the space
        return (-lam_c, True) if t >= 0.0 else (0.0, False)
    lo_dom = -1.0 / mu_max if mu_max > 0.0 else -np.inf
    hi_dom = -1.0 / mu_min if mu_min < 0.0 else np.inf
    h0, _, _ = _h(mu, gamma, t, 0.0)
    if h0 == 0.0:
        return 0.0, True
    if h0 < 0.0:  # move down (root < 0), capped at −λ_c
        if -lam_c > lo_dom:
            hc, _, _ = _h(mu, gamma, t, -lam_c)
            if hc <= 0.0:
                return -lam_c, True
            lo = -lam_c
            lo_open = False
        else:
            lo = lo_dom  # h → +∞ at the pole
            lo_open = True
        hi = 0.0
        hi_open = False
    else:  # move up (root > 0)
        lo = 0.0
        lo_open = False
        if np.isfinite(hi_dom):
            hi = hi_dom  # h → −∞ at the pole
            hi_open = True
        else:
            if -t >= 0.0:  # h(∞) = −t >= 0: no root
                return 0.0, False
            hi = 1.0 / scale
            for _ in range(2000):
                hh, _, _ = _h(mu, gamma, t, hi)
                if hh < 0.0:
                    break
                hi *= 2.0
            else:
                return 0.0, False
            hi_open = False
    # safeguarded Newton on [lo, hi] (open ends are poles; bisection points stay inside)
    x = hi if not hi_open else (lo if not lo_open else 0.5 * (lo + hi))
    if lo_open and hi_open:
        x = 0.5 * (lo + hi)
    elif not lo_open and hi_open:
        x = lo
    for _ in range(300):
        hx, dx, size = _h(mu, gamma, t, x)
        if abs(hx) <= 1e-15 * size:
            break
        if hx > 0.0:
            lo = x
            lo_open = False
        else:
            hi = x
            hi_open = False
        xn = x - hx / dx if dx != 0.0 else np.nan
        if not (xn > lo and xn < hi) or not np.isfinite(xn):
            xn = 0.5 * (lo + hi)
        if abs(xn - x) <= 4e-16 * max(abs(x), abs(xn)) or hi - lo <= 4e-16 * max(abs(lo), abs(hi)):
            x = xn
            break
        x = xn
    return max(x, -lam_c), True


@nb.njit(cache=True, error_model="numpy")
def _project_q(X, Uc, wc, t_c, lam_c, gamma, XU, G):
    """Projection onto one constraint with q >= 2 terms; updates X and returns (δ, code,
    h(0) = tr(XÂ_c) − t_c before the projection, its scale max(|t_c|, γΣ|μ_k|))."""
    q = Uc.shape[0]
    r = X.shape[0]
    _times_t(X, Uc, XU, r, q, r, False)  # XU = X U_cᵀ (r × q)
    _times_t(Uc, XU.T, G, q, q, r, False)  # G = U_c X U_cᵀ
    Gs = 0.5 * (G[:q, :q] + G[:q, :q].T)
    ev, EV = np.linalg.eigh(Gs)
    for k in range(q):
        ev[k] = np.sqrt(max(ev[k], 0.0))
    EVs = np.ascontiguousarray(EV * ev)
    Gh = EVs @ np.ascontiguousarray(EV.T)  # G^½
    S = np.empty((q, q))
    for a in range(q):
        for b in range(q):
            s = 0.0
            for k in range(q):
                s += Gh[a, k] * wc[k] * Gh[k, b]
            S[a, b] = s
    mu = np.linalg.eigvalsh(0.5 * (S + S.T)) / gamma
    h0, _, _ = _h(mu, gamma, t_c, 0.0)
    size0 = abs(t_c)
    tr_abs = 0.0
    for k in range(q):
        tr_abs += gamma * abs(mu[k])
    size0 = max(size0, tr_abs)
    delta, ok = _root(mu, gamma, t_c, lam_c)
    if not ok:
        return 0.0, NONPOSITIVE_DISTANCE, h0, size0
    if delta == 0.0:
        return 0.0, OK, h0, size0
    # M = δD (γI + δ G D)⁻¹ ;  X ← X − XU M (XU)ᵀ
    Bm = np.empty((q, q))  # γI + δ G D
    for a in range(q):
        for b in range(q):
            Bm[a, b] = delta * Gs[a, b] * wc[b] + (gamma if a == b else 0.0)
    # M = δD Bm⁻¹  ⇔  Mᵀ = Bm⁻ᵀ (δD)
    Mt = np.linalg.solve(np.ascontiguousarray(Bm.T), np.diag(delta * wc))
    XUM = np.zeros((r, q))
    _times_t(XU, Mt, XUM, r, q, q, False)  # XU M
    _times_t(XUM, XU, X, r, r, q, True)
    return delta, OK, h0, size0


@nb.njit(cache=True, error_model="numpy")
def _times_t(A, B, out, rows, cols, inner, subtract):
    """out = A Bᵀ, or out −= A Bᵀ when ``subtract``, on the leading blocks: out[:rows, :cols]
    from A[:rows, :inner] and B[:cols, :inner]; each entry summed over k in increasing order,
    from 0."""
    for i in range(rows):
        for b in range(cols):
            s = 0.0
            for k in range(inner):
                s += A[i, k] * B[b, k]
            if subtract:
                out[i, b] -= s
            else:
                out[i, b] = s


@nb.njit(cache=True, error_model="numpy")
def _kkt_term(h0, size, lam_c):
    """Relative KKT residual of one constraint before its projection: |h| if λ_c > 0, h₊ if
    λ_c = 0 (h = tr(XÂ_c) − t_c)."""
    v = abs(h0) if lam_c > 0.0 else max(h0, 0.0)
    return v / size if size > 0.0 else v


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _sweeps(X, U, w, ptr, t, lam, gamma, tol, max_iter):
    """Cyclic projections.  Stops after the first sweep whose largest relative KKT residual
    (measured at each constraint just before its projection) is below ``tol``.
    Returns (sweeps, relative dual change of the last sweep, KKT residual, code, bad index)."""
    r = X.shape[0]
    m = t.shape[0]
    qmax = 1
    for c in range(m):
        qmax = max(qmax, ptr[c + 1] - ptr[c])
    Xu = np.empty(r)
    XU = np.empty((r, qmax))
    G = np.empty((qmax, qmax))
    lam_old = np.empty(m)
    change = np.inf
    kkt = np.inf
    for sweep in range(max_iter):
        lam_old[:] = lam
        kkt = 0.0
        for c in range(m):
            a0 = ptr[c]
            q = ptr[c + 1] - a0
            if q == 0:  # 0 <= t_c
                if t[c] < 0.0:
                    return sweep, change, kkt, NONPOSITIVE_DISTANCE, c
                lam[c] = 0.0
                continue
            if q == 1:
                p, nu = quadratic_form(X, U, a0, Xu)
                if nu == 0.0:
                    if t[c] < 0.0:
                        return sweep, change, kkt, NONPOSITIVE_DISTANCE, c
                    lam[c] = 0.0
                    continue
                if not (p > 0.0):
                    return sweep, change, kkt, (NONFINITE if not np.isfinite(p) else NONPOSITIVE_DISTANCE), c
                wa = w[a0]
                wp = wa * p
                tc = t[c]
                kkt = max(kkt, _kkt_term(wp - tc, max(abs(tc), abs(wp)), lam[c]))
                if wa * tc > 0.0:
                    delta = gamma * (1.0 / tc - 1.0 / wp)
                elif wa > 0.0:
                    return sweep, change, kkt, NONPOSITIVE_DISTANCE, c  # u Xu <= t/w <= 0 impossible
                else:
                    delta = -np.inf
                delta = max(delta, -lam[c])
                if delta != 0.0:
                    beta = -(delta * wa / gamma) / (1.0 + delta * wp / gamma)
                    rank_one_update(X, Xu, beta)
                    lam[c] += delta
            else:
                delta, code, h0, size0 = _project_q(X, U[a0 : a0 + q], w[a0 : a0 + q], t[c], lam[c], gamma, XU, G)
                kkt = max(kkt, _kkt_term(h0, size0, lam[c]))
                if code != OK:
                    return sweep, change, kkt, code, c
                lam[c] += delta
                if lam[c] < 0.0:
                    lam[c] = 0.0
        change = dual_change(lam, lam_old)
        code = sweep_end(kkt, tol) if np.isfinite(change) else NONFINITE
        if code != NOT_CONVERGED:
            return sweep + 1, change, kkt, code, -1
    return max_iter, change, kkt, NOT_CONVERGED, -1


@blas_limit()
def project_one(X, U, w, t, lam_c, gamma):
    """One projection (for tests): returns (X_new, δ, code) for the constraint
    tr(X Σ_a w_a u_a u_aᵀ) <= t with current multiplier λ_c (code OK, or
    NONPOSITIVE_DISTANCE when no X ≻ 0 satisfies it)."""
    X = np.array(X, dtype=np.float64, order="C")
    U = np.ascontiguousarray(np.atleast_2d(U), dtype=np.float64)
    w = np.ascontiguousarray(np.atleast_1d(w), dtype=np.float64)
    lam = np.array([lam_c], dtype=np.float64)
    ptr = np.array([0, U.shape[0]], dtype=np.int64)
    _, _, _, code, _ = _safe_sweeps(X, U, w, ptr, np.array([float(t)]), lam, float(gamma), 0.0, 1)
    return 0.5 * (X + X.T), float(lam[0] - lam_c), OK if code == NOT_CONVERGED else int(code)


def _norms(U, w, ptr):
    """‖Â_c‖_F for every constraint."""
    out = np.zeros(len(ptr) - 1)
    for c in range(out.size):
        Uc, wc = U[ptr[c] : ptr[c + 1]], w[ptr[c] : ptr[c + 1]]
        out[c] = np.linalg.norm((Uc.T * wc) @ Uc) if Uc.shape[0] else 0.0
    return out


def _positive_term_nullspace(U, w):
    """Projector P onto the orthogonal complement of the terms u_a with w_a > 0."""
    r = U.shape[1]
    Up = U[w > 0]
    if Up.shape[0] == 0:
        return np.eye(r)
    _, sv, Vt = np.linalg.svd(Up, full_matrices=False)
    k = int(np.sum(sv > 1e-12 * max(float(sv[0]), np.finfo(float).tiny)))
    Q = Vt[:k].T
    return np.eye(r) - Q @ Q.T


def _rank_one_recession(C, P, X, tol):
    """A certificate of unboundedness from the top eigenvector v of X (the direction X
    grows along while the auxiliary trace bound binds): ṽ = Pv, P the projector that
    removes every positive term, so ṽᵀÂ_cṽ = Σ_{w_a<0} w_a (u_a·ṽ)² <= 0 for every
    constraint exactly; if also ṽᵀCṽ <= tol·‖C‖‖ṽ‖², X + s ṽṽᵀ stays feasible for all
    s >= 0 while tr(XC) − γ log det X → −∞.  Returns the direction or None."""
    _, V = np.linalg.eigh(0.5 * (X + X.T))
    v = P @ V[:, -1]
    nv = float(v @ v)
    if nv < 0.25:
        return None
    if float(v @ C @ v) > tol * max(float(np.linalg.norm(C, 2)), np.finfo(float).tiny) * nv:
        return None
    return v / np.sqrt(nv)


def _A(U, w, owner, lam):
    coef = w * lam[owner]
    return (U.T * coef) @ U


@blas_limit()
def _safe_sweeps(X, U, w, ptr, t, lam, gamma, tol, max_iter):
    """:func:`_sweeps`, with a singular q × q system inside a multi-term projection (the
    iterate at the barrier's boundary: LinAlgError from Numba's solve) reported as NONFINITE
    at an unknown constraint instead of raised.

    Run in calls of about 0.1 s of whole sweeps (:class:`~cvxkml._config.WorkBudget`, one
    sweep first): Ctrl-C raises KeyboardInterrupt between two calls.  Each sweep starts
    afresh in :func:`_sweeps`, so the iterates and the return values are those of one call."""
    budget = WorkBudget(start=1)
    done = 0
    out = (0, np.inf, np.inf, NOT_CONVERGED, -1)
    while done < max_iter:
        k = min(budget.units, max_iter - done)
        t0 = time.perf_counter()
        try:
            sw, change, kkt, code, bad = _sweeps(X, U, w, ptr, t, lam, gamma, tol, k)
        except np.linalg.LinAlgError:
            return done, np.inf, np.inf, NONFINITE, -1
        budget.update(max(int(sw), 1), time.perf_counter() - t0)
        done += int(sw)
        out = (done, change, kkt, code, bad)
        if code != NOT_CONVERGED:
            break
    return out


def barrier_primal(C, U, w, ptr, lam, gamma, tau=0.0):
    """X(λ) = γ (C + τI + Σλ_cÂ_c)⁻¹, or None when that matrix is not positive definite."""
    owner = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    Z = C + _A(U, w, owner, lam) + tau * np.eye(C.shape[0])
    Z = 0.5 * (Z + Z.T)
    if not np.all(np.isfinite(Z)):
        return None
    try:  # (a Cholesky factor with a zero pivot is singular: also None)
        Lc = np.linalg.cholesky(Z)
        Li = np.linalg.solve(Lc, np.eye(C.shape[0]))
    except np.linalg.LinAlgError:
        return None
    X = gamma * (Li.T @ Li)
    if not np.all(np.isfinite(X)):
        return None
    return 0.5 * (X + X.T)


def _barrier_bregman_impl(
    C, gamma, U, w, ptr, t, tol=1e-9, max_iter=20_000, lam0=None, refresh=100, max_bound_growth=1e15, rec_tol=1e-12
) -> FastResult:
    """Solve min tr(XC) − γ log det X s.t. tr(XÂ_c) <= t_c (see the module doc).

    Returns a :class:`~cvxkml.solvers.result.FastResult` with ``matrix`` = X(λ)
    (whitened), ``lam`` = λ, ``sweeps`` (phase I included), ``stop_value``, ``code``
    (OK, NOT_CONVERGED, NONPOSITIVE_DISTANCE: constraint ``bad_index`` cannot hold for any
    X ≻ 0, NONFINITE, UNBOUNDED: phase I found no dual-feasible point) and ``extra`` =
    {"kkt_residual" (= ``stop_value``, the stopping quantity), "last_dual_change",
    "phase1_sweeps", "trace_bounds", "phase1_nu"}.
    """
    C = np.ascontiguousarray(0.5 * (C + C.T), dtype=np.float64)
    U = np.ascontiguousarray(U, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    ptr = np.ascontiguousarray(ptr, dtype=np.int64)
    t = np.ascontiguousarray(t, dtype=np.float64)
    gamma = float(gamma)
    m = t.size
    r = C.shape[0]
    owner = np.repeat(np.arange(m), np.diff(ptr))
    lam = np.zeros(m) if lam0 is None else np.maximum(np.array(lam0, dtype=np.float64), 0.0)
    t0 = time.perf_counter()
    total = 0
    sweeps1 = 0
    bounds = []
    nu_final = 0.0

    kkt = np.inf

    def result(X, code, change, bad):
        return FastResult(
            matrix=X,
            lam=lam,
            xi=np.zeros(0),
            sweeps=int(total),
            stop_value=float(kkt),
            code=int(code),
            bad_index=int(bad),
            time=time.perf_counter() - t0,
            extra={
                "solver": "barrier-bregman",
                "kkt_residual": float(kkt),
                "last_dual_change": float(change),
                "phase1_sweeps": int(sweeps1),
                "trace_bounds": bounds,
                "phase1_nu": float(nu_final),
            },
        )

    X = barrier_primal(C, U, w, ptr, lam, gamma)
    change = np.inf
    if X is None:
        # Phase I: the auxiliary constraint tr X <= R (Â = I, multiplier ν) makes Z = C + νI
        # + A(λ) ≻ 0 for a large ν0 at λ = λ0; the same projections then lower ν, and as
        # soon as C + A(λ) ≻ 0 the auxiliary constraint is dropped (ν = 0).  While the
        # bound binds at a (nearly) solved bounded problem, R grows tenfold.
        Z = C + _A(U, w, owner, lam)
        sig = float(np.linalg.eigvalsh(0.5 * (Z + Z.T))[0])
        norms = _norms(U, w, ptr)
        tt = np.abs(t)
        ok = (norms > 0) & (tt > 0)
        s_con = gamma * float(np.median(norms[ok] / tt[ok])) if np.any(ok) else 0.0
        s = max(float(np.linalg.norm(C, 2)), s_con, np.finfo(float).tiny)
        nu0 = -sig + s
        Ue = np.ascontiguousarray(np.vstack([U, np.eye(r)]))
        we = np.concatenate([w, np.ones(r)])
        pe = np.concatenate([ptr, [ptr[-1] + r]]).astype(np.int64)
        lam_e = np.concatenate([lam, [nu0]])
        Xe = barrier_primal(C, Ue, we, pe, lam_e, gamma)
        s_tr = r * float(np.median(tt[ok] / norms[ok])) if np.any(ok) else 0.0
        R = 10.0 * max(float(np.trace(Xe)), s_tr)  # constraint scale: tr X ~ r·t/‖Â‖
        R0 = R
        bounds.append(R)
        te = np.concatenate([t, [R]])
        P = _positive_term_nullspace(U, w)
        while True:
            n_sw = min(refresh, max_iter - total)
            sw, change, kkt, code, bad = _safe_sweeps(Xe, Ue, we, pe, te, lam_e, gamma, float(tol), n_sw)
            total += sw
            sweeps1 += sw
            lam[:] = lam_e[:m]
            if code not in (OK, NOT_CONVERGED):
                return result(Xe, code, change, bad)
            X = barrier_primal(C, U, w, ptr, lam, gamma)
            if X is not None:  # dual feasible: drop the bound
                nu_final = float(lam_e[m])
                break
            Xr = barrier_primal(C, Ue, we, pe, lam_e, gamma)  # refresh (remove drift)
            if Xr is None:
                return result(Xe, NONFINITE, change, -1)
            Xe = Xr
            if lam_e[m] > 0:
                direction = _rank_one_recession(C, P, Xe, rec_tol)
                if direction is not None:
                    nu_final = float(lam_e[m])
                    res = result(Xe, UNBOUNDED, change, -1)
                    res.extra["recession_direction"] = direction
                    return res
            if total >= max_iter:
                return result(Xe, NOT_CONVERGED, change, -1)
            if lam_e[m] > 0 and (code == OK or kkt < 1e-3):
                if R >= max_bound_growth * R0:
                    nu_final = float(lam_e[m])
                    return result(Xe, UNBOUNDED, change, -1)
                R *= 10.0  # the bound binds: relax it
                te[m] = R
                bounds.append(R)
    code = NOT_CONVERGED
    bad = -1
    while total < max_iter:
        n_sw = min(refresh, max_iter - total)
        sw, change, kkt, code, bad = _safe_sweeps(X, U, w, ptr, t, lam, gamma, float(tol), n_sw)
        total += sw
        if code != NOT_CONVERGED:
            break
        Xn = barrier_primal(C, U, w, ptr, lam, gamma)  # refresh: remove the drift of the updates
        if Xn is None:
            code = NONFINITE
            break
        X = Xn
    if code == OK:
        Xn = barrier_primal(C, U, w, ptr, lam, gamma)
        if Xn is None:
            return result(X, NONFINITE, change, -1)
        X = Xn
    return result(X, code, change, bad)


def barrier_bregman(
    C,
    gamma,
    U,
    w,
    ptr,
    t,
    tol=1e-9,
    max_iter=20_000,
    lam0=None,
    refresh=100,
    max_bound_growth=1e15,
    rec_tol=1e-12,
    *,
    max_sweeps=None,
) -> FastResult:
    """Solve min tr(XC) − γ log det X s.t. tr(XÂ_c) <= t_c (see :func:`_barrier_bregman_impl`
    and the module doc).  BLAS/LAPACK threads follow the ``blas_threads`` option
    (:mod:`cvxkml._config`, default 1).  ``max_iter`` is the sweep limit (``max_sweeps``:
    its deprecated former name)."""
    max_iter = iteration_limit("barrier_bregman", max_iter, max_sweeps)
    with blas_limit():
        return _barrier_bregman_impl(
            C,
            gamma,
            U,
            w,
            ptr,
            t,
            tol=tol,
            max_iter=max_iter,
            lam0=lam0,
            refresh=refresh,
            max_bound_growth=max_bound_growth,
            rec_tol=rec_tol,
        )
