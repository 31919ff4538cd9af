"""Fast solver for the kernel classification rule SDP (Sriperumbudur et al. 2008, eq. 9):
restarted Halpern primal-dual hybrid gradient with a certified duality gap.

Problem, in the whitened coordinates of :func:`cvxkml.kcr_formulas.whitening`
(Σ = T X Tᵀ, tr(KΣ) = tr X, D_ij = z_ijᵀ X z_ij with z_ij = f_i − f_j):

    min_{X ⪰ 0, h̃ >= h_min}  Σ_i φ_i(1 + tau_i·∘(A(X)_i· − h̃)) + λ tr X,
    φ_i(u) = [c_i + Σ_j [u_j]₊]₊ = max_{0 <= s_j <= t <= 1} t c_i + sᵀu,

a convex piecewise-linear function of a linear map of (X, h̃) plus a linear term over a
cone.  The saddle form min_{X, h̃} max_{s ∈ [0,1]^{n×n}} L(X, h̃, s) with

    L = Σ_ij s_ij + Σ_i c_i max_j s_ij + ⟨λI + Aᵀ(tau∘s), X⟩ − h̃ Σ_ij tau_ij s_ij

(c_i <= 0 because every class has at least two members) is solved by PDHG
(Chambolle–Pock), each step exact and cheap:

* primal: X⁺ = P_PSD(X − α(Aᵀ(tau∘s) + λI)) — one symmetric eigendecomposition (LAPACK);
  h̃⁺ = max(h_min, h̃ + α_h Σ tau∘s);
* dual: per row, the proximal map of −(σ-scaled) t c_i over {0 <= s_j <= t <= 1} —
  s_j = min(max(v_j, 0), t) with t ∈ [0, 1] solving Σ_j (v_j − t)₊ = σ|c_i| (water
  filling; Numba);
* Aᵀ(W) = Fᵀ(diag((W + Wᵀ)1) − W − Wᵀ)F and A(X) from the Gram matrix F X Fᵀ (BLAS).

Convergence machinery (as in PDLP / r2HPDHG, Applegate et al. 2021, Lu & Yang 2024):
reflected Halpern iterations z ← w(2T(z) − z) + (1 − w)z₀, w = (k+1)/(k+2); adaptive
restarts on the fixed-point residual ‖T(z) − z‖; primal-weight updates at restarts;
adaptive step sizes η <= ‖Δz‖²_ω / (2|⟨Δs, 𝒦Δx⟩|).  All linear maps of the Halpern
combinations are combined from cached values, so an iteration costs one
eigendecomposition (r × r), one Gram product (n² k for a rank-k X) and one adjoint
(n² r + n r²).

Stopping rule: a certified duality gap.  Every ``check_every`` iterations the objective
f(X, h̃) (:func:`cvxkml.kcr_formulas.kcr_objective`) of the current primal point and the
Lagrangian lower bound g(s) (:func:`cvxkml.kcr_formulas.dual_lower_bound`, one
λ_min computation) are evaluated; the solver stops with ``converged=True`` as soon as
(f_best − g_best) / max(1, |f_best|) <= tol.  Otherwise it stops at ``max_iter`` or
``time_limit`` with ``converged=False``: the returned gap is then still a valid bound on
the suboptimality.

The paper's own Algorithm 1 (subgradient step + projection onto N) is
:func:`kcr_subgradient`; :func:`alternating_projections` and :func:`dykstra_projections`
are the two iterative projections onto N that :func:`cvxkml.kcr_formulas.project_onto_N`
replaces by an exact one.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numba as nb
import numpy as np
import scipy.linalg as sla

from ..kcr_formulas import (dual_lower_bound, dual_objective, h_upper_bound, kcr_objective,
                            project_onto_N, sq_distances_from_gram)

__all__ = [
    "KCRResult", "kcr_pdhg", "kcr_subgradient", "alternating_projections",
    "dykstra_projections", "operator_norm",
]


@dataclass
class KCRResult:
    """Output of :func:`kcr_pdhg` (whitened coordinates).

    ``factor`` is an r × k matrix P with X = P Pᵀ (the best primal point found), ``h``
    its bandwidth, ``s`` the n × n dual weights of the best lower bound and ``theta`` its
    scaling (θs is the dual point certified), ``objective`` / ``lower_bound`` / ``gap``
    the certificate (gap = (objective − lower_bound) / max(1, |objective|)); ``history``
    rows are (iteration, best objective, best lower bound, gap, wall s, CPU s).
    """

    factor: np.ndarray
    h: float
    s: np.ndarray
    theta: float
    objective: float
    lower_bound: float
    gap: float
    converged: bool
    n_iter: int
    n_restarts: int
    time: float
    status: str
    warm: dict = field(repr=False, default_factory=dict)
    history: list = field(repr=False, default_factory=list)


# --------------------------------------------------------------------------- Numba kernels
@nb.njit(cache=True)
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


@nb.njit(cache=True)
def _dual_step(s, Bn, B, hbar, tau, beta, c, s_out):
    """s_out = prox_{β f*}(s + β(1 + tau∘(D(B̄) − h̄))) row by row, B̄ = 2Bn − B (the
    Gram matrix of the extrapolated primal point); returns Σ tau∘s_out."""
    n = s.shape[0]
    v = np.empty(n)
    bd = np.empty(n)
    for i in range(n):
        bd[i] = 2.0 * Bn[i, i] - B[i, i]
    S = 0.0
    for i in range(n):
        bii = bd[i] - hbar
        for j in range(n):
            bij = 2.0 * Bn[i, j] - B[i, j]
            v[j] = s[i, j] + beta * (1.0 + tau[i, j] * (bii + bd[j] - 2.0 * bij))
        _row_prox(v, -beta * c[i], s_out[i])
        for j in range(n):
            S += tau[i, j] * s_out[i, j]
    return S


@nb.njit(cache=True)
def _step_stats(s_new, s, Bn, B, dh, tau):
    """(‖Δs‖², ⟨Δs, 𝒦Δx⟩) with Δs = s_new − s and 𝒦Δx = tau∘(D(Bn − B) − Δh)."""
    n = s.shape[0]
    bd = np.empty(n)
    for i in range(n):
        bd[i] = Bn[i, i] - B[i, i]
    sq = 0.0
    inter = 0.0
    for i in range(n):
        bii = bd[i] - dh
        for j in range(n):
            ds = s_new[i, j] - s[i, j]
            sq += ds * ds
            inter += ds * tau[i, j] * (bii + bd[j] - 2.0 * (Bn[i, j] - B[i, j]))
    return sq, inter


@nb.njit(cache=True)
def _halpern(new, cur, anchor, wk):
    """cur ← wk (2 new − cur) + (1 − wk) anchor, in place (reflected Halpern step)."""
    a, b = cur.shape
    for i in range(a):
        for j in range(b):
            cur[i, j] = wk * (2.0 * new[i, j] - cur[i, j]) + (1.0 - wk) * anchor[i, j]


@nb.njit(cache=True)
def _sq_dist(a, b):
    """‖a − b‖²_F."""
    acc = 0.0
    m, k = a.shape
    for i in range(m):
        for j in range(k):
            d = a[i, j] - b[i, j]
            acc += d * d
    return acc


@nb.njit(cache=True)
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


def operator_norm(F, n_iter: int = 30, seed: int = 0) -> float:
    """Power-iteration estimate of ‖A‖ (A(X)_ij = z_ijᵀXz_ij over all ordered pairs)."""
    n, r = F.shape
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((r, r))
    X = X + X.T
    est = 1.0
    W = np.empty((n, n))
    deg = np.empty(n)
    ones = np.ones((n, n))
    for _ in range(n_iter):
        X /= np.linalg.norm(X)
        D = sq_distances_from_gram(F @ X @ F.T)          # A(X); D is symmetric, so the
        X2 = _adjoint(F, np.ascontiguousarray(0.5 * D), ones, W, deg) * 2.0   # AᵀA(X)
        est = float(np.sqrt(np.linalg.norm(X2)))
        if not np.isfinite(est) or est == 0.0:
            return max(est, 1.0) if np.isfinite(est) else 1.0
        X = X2
    return est


def _psd_part(M, rank_hint, dtype=np.float64):
    """Positive eigen-part of a symmetric matrix as a float64 factor P (X⁺ = P Pᵀ) and
    its eigenvalues; only the positive eigenpairs are computed when few are expected.
    The eigendecomposition runs in ``dtype`` (float32: LAPACK ssyevr/ssyevd)."""
    r = M.shape[0]
    Mx = M.astype(dtype, copy=False)
    try:
        if rank_hint * 8 < r:
            w, U = sla.eigh(Mx, driver="evr", subset_by_value=(0.0, np.inf), check_finite=False)
        else:
            w, U = np.linalg.eigh(Mx)
    except np.linalg.LinAlgError:
        # LAPACK's MRRR driver (?syevr) can report an internal error on rare matrices
        # (seen once in float32 on Wine); fall back to divide and conquer in float64.
        if not np.all(np.isfinite(M)):
            raise
        w, U = np.linalg.eigh(np.asarray(M, dtype=np.float64))
    keep = w > 0.0
    w = w[keep].astype(np.float64)
    return U[:, keep].astype(np.float64) * np.sqrt(w), w


def _max_similar_sq_norm(F, tau):
    G = F @ F.T
    Z = sq_distances_from_gram(G)
    np.fill_diagonal(Z, 0.0)
    sim = tau > 0
    return float(np.max(Z[sim])) if np.any(sim) else 0.0


# --------------------------------------------------------------------------- PDHG
def kcr_pdhg(F, tau, c, lam, h_min=1e-6, tol=1e-3, max_iter=20_000, time_limit=None,
             check_every=10, warm_start=None, verbose=False, halpern=True,
             restart_params=(0.2, 0.8, 0.36), omega0=None, precision="mixed") -> KCRResult:
    """Restarted Halpern PDHG for eq. 9 in whitened coordinates (see the module text).

    Parameters
    ----------
    F : (n, r) array
        Whitened kernel features (:func:`cvxkml.kcr_formulas.whitening`).
    tau : (n, n) array of ±1;  c : (n,) array, c_i = 2 − n_i⁺ <= 0.
    lam : float > 0.  h_min : lower bound ε on h̃.
    tol : float
        Target certified relative gap (f − g) / max(1, |f|).
    max_iter : int;  time_limit : float seconds or None.
    check_every : int
        Iterations between certificate evaluations (and restart checks).
    warm_start : dict or None
        ``KCRResult.warm`` of an earlier solve with the same F shape (e.g. a
        neighbouring λ): keys ``X`` (r × r), ``h``, ``s`` (n × n), ``omega``, ``eta``.
    verbose : bool
    halpern : bool
        Reflected Halpern iterations (default) or plain PDHG between restarts.
    restart_params : (sufficient, necessary, artificial)
        Restart when the fixed-point residual fell below ``sufficient`` × its value at
        the last restart, or below ``necessary`` × and grew since the last check, or
        after ``artificial`` × the total iteration count without a restart.
    omega0 : float or None
        Initial primal weight (default λ√r / n).
    precision : {"mixed", "double"}
        ``"mixed"`` (default) runs the two O(n²r + r³) kernels of an iteration — the
        adjoint Aᵀ(tau∘s) and the eigendecomposition of the PSD projection — in float32
        (twice as fast; relative error ~1e-7, far below the gaps targeted); everything
        else, every certificate (objective, λ_min, lower bound) and every returned point
        is float64.  ``"double"`` runs all of it in float64.

    Returns
    -------
    KCRResult
    """
    t0 = time.perf_counter()
    c0 = time.process_time()
    F = np.ascontiguousarray(F, dtype=np.float64)
    tau = np.ascontiguousarray(tau, dtype=np.float64)
    c = np.ascontiguousarray(c, dtype=np.float64)
    n, r = F.shape
    lam = float(lam)
    h_min = float(h_min)
    zmax = _max_similar_sq_norm(F, tau)
    norm_A = operator_norm(F)
    hsc = n / norm_A                     # h̃ is scaled so that its column of 𝒦 has norm ‖A‖
    W = np.empty((n, n))
    deg = np.empty(n)
    eye_lam = lam * np.eye(r)
    if precision not in ("mixed", "double"):
        raise ValueError(f"precision must be 'mixed' or 'double'; got {precision!r}.")
    if precision == "mixed":
        fdt = np.float32
        F_it, W_it, deg_it = F.astype(np.float32), np.empty((n, n), np.float32), np.empty(n, np.float32)
    else:
        fdt = np.float64
        F_it, W_it, deg_it = F, W, deg

    if warm_start is not None:
        X = np.array(warm_start["X"], dtype=np.float64)
        h = max(h_min, float(warm_start["h"]))
        s = np.clip(np.array(warm_start["s"], dtype=np.float64), 0.0, 1.0)
        omega = float(warm_start.get("omega", lam * np.sqrt(r) / n if omega0 is None else omega0))
        eta = float(warm_start.get("eta", 0.9 / (np.sqrt(2.0) * norm_A)))
    else:
        X = np.zeros((r, r))
        h = max(h_min, 1.0)
        s = np.zeros((n, n))
        omega = lam * np.sqrt(r) / n if omega0 is None else float(omega0)
        eta = 0.9 / (np.sqrt(2.0) * norm_A)
    B = F @ X @ F.T
    G = _adjoint(F, s, tau, W, deg)
    St = float(np.sum(tau * s))
    rank_hint = r if warm_start is None else int(np.linalg.matrix_rank(X)) if X.any() else 0
    z0 = (X.copy(), h, s.copy(), B.copy(), G.copy(), St)

    best = dict(f=np.inf, P=np.zeros((r, 0)), h=h)
    lower = dict(g=-np.inf, s=np.zeros((n, n)), theta=0.0)
    s_new = np.empty((n, n))
    k_in = 0
    k_total = 0
    n_restarts = 0
    res0 = None
    res_prev = np.inf
    history = []
    status = "max_iter reached"
    converged = False

    def certify(P, wsum, Bn, hn, sn, Gn):
        f = kcr_objective(sq_distances_from_gram(Bn), hn, tau, c, wsum, lam)
        if f < best["f"]:
            best.update(f=f, P=P.copy(), h=hn)
        R = best["f"] / lam
        a, S = dual_objective(sn, tau, c)
        try:
            lmin = float(sla.eigh(Gn, eigvals_only=True, subset_by_index=(0, 0),
                                  check_finite=False, driver="evr")[0])
        except np.linalg.LinAlgError:      # rare ?syevr internal error: divide and conquer
            lmin = float(np.linalg.eigvalsh(Gn)[0])
        g, th = dual_lower_bound(a, S, lmin, lam, R, h_min, h_upper_bound(R, zmax))
        if g > lower["g"]:
            lower.update(g=g, s=sn.copy(), theta=th)
        return (best["f"] - lower["g"]) / max(1.0, abs(best["f"]))

    while k_total < max_iter:
        # ---- one PDHG step T(z), with the adaptive step-size rule
        while True:
            alpha = eta / omega
            beta = eta * omega
            M = X - alpha * (G + eye_lam)
            P, w = _psd_part(0.5 * (M + M.T), rank_hint, fdt)
            rank_hint = w.size
            FP = F @ P
            Bn = FP @ FP.T
            hn = max(h_min, h + alpha / hsc ** 2 * St)
            Sn = _dual_step(s, Bn, B, 2.0 * hn - h, tau, beta, c, s_new)
            Xn = P @ P.T
            dh = hn - h
            ds2, inter = _step_stats(s_new, s, Bn, B, dh, tau)
            inter = abs(inter)
            num = omega * (_sq_dist(Xn, X) + (dh * hsc) ** 2) + ds2 / omega
            eta_max = num / (2.0 * inter) if inter > 0 else np.inf
            k_total += 1
            accept = eta <= eta_max
            eta_next = min((1.0 - (k_total + 1) ** -0.3) * eta_max, (1.0 + (k_total + 1) ** -0.6) * eta)
            eta = eta_next if np.isfinite(eta_next) else eta
            if accept or k_total >= max_iter:
                break
        sn = s_new.copy()
        check = k_total % check_every == 0 or k_total >= max_iter
        Gn = _adjoint(F if check else F_it, sn, tau, W if check else W_it, deg if check else deg_it)
        res = np.sqrt(num)
        if res0 is None:
            res0 = res
        # ---- certificate (float64) and restart test
        restart = False
        if check:
            gap = certify(P, float(np.sum(w)), Bn, hn, sn, Gn)
            history.append((k_total, best["f"], lower["g"], gap, time.perf_counter() - t0,
                            time.process_time() - c0))
            if verbose:
                print(f"it {k_total:6d}  f {best['f']:.8g}  lb {lower['g']:.8g}  gap {gap:.2e}  "
                      f"h {hn:.4g}  rank {w.size}  omega {omega:.3g}  eta·‖A‖ {eta * norm_A:.3g}  "
                      f"restarts {n_restarts}")
            if gap <= tol:
                converged = True
                status = "converged"
                break
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                status = "time_limit reached"
                break
            if k_in > 0:
                b_suff, b_nec, b_art = restart_params
                if res <= b_suff * res0 or (res <= b_nec * res0 and res > res_prev) \
                        or k_in >= b_art * k_total:
                    restart = True
                res_prev = res
        if restart:
            n_restarts += 1
            X0, h0, s0 = z0[0], z0[1], z0[2]
            dx = np.sqrt(np.sum((Xn - X0) ** 2) + ((hn - h0) * hsc) ** 2)
            dy = float(np.linalg.norm(sn - s0))
            if dx > 1e-12 and dy > 1e-12:
                omega = float(np.exp(0.5 * np.log(dy / dx) + 0.5 * np.log(omega)))
            X, h, s, B, G, St = Xn.copy(), hn, sn.copy(), Bn.copy(), Gn.copy(), Sn
            z0 = (Xn, hn, sn, Bn, Gn, Sn)
            k_in = 0
            res0 = None
            res_prev = np.inf
            continue
        # ---- reflected Halpern step (all linear images combined from caches)
        if not halpern:
            X, h, s, B, G, St = Xn.copy(), hn, sn.copy(), Bn.copy(), Gn.copy(), Sn
            k_in += 1
            continue
        wk = (k_in + 1.0) / (k_in + 2.0)
        _halpern(Xn, X, z0[0], wk)
        _halpern(sn, s, z0[2], wk)
        _halpern(Bn, B, z0[3], wk)
        _halpern(Gn, G, z0[4], wk)
        h = wk * (2.0 * hn - h) + (1.0 - wk) * z0[1]
        St = wk * (2.0 * Sn - St) + (1.0 - wk) * z0[5]
        k_in += 1

    gap = (best["f"] - lower["g"]) / max(1.0, abs(best["f"]))
    Xb = best["P"] @ best["P"].T
    warm = dict(X=Xb, h=best["h"], s=sn, omega=omega, eta=eta)
    return KCRResult(
        factor=best["P"], h=float(best["h"]), s=lower["s"], theta=lower["theta"],
        objective=float(best["f"]), lower_bound=float(lower["g"]), gap=float(gap),
        converged=converged, n_iter=k_total, n_restarts=n_restarts,
        time=time.perf_counter() - t0, status=status, warm=warm, history=history)


# --------------------------------------------------------------------------- the paper's method
def alternating_projections(X, n_iter: int = 1000) -> np.ndarray:
    """The paper's projection onto N (§4.1): B_m = A_m − (1ᵀA_m1/n²)11ᵀ,
    A_{m+1} = P_PSD(B_m), starting from A_0 = P_PSD(X).  Converges to *a* point of N —
    in general not the nearest one — and only sublinearly (N has no interior)."""
    A = np.asarray(X, dtype=np.float64)
    A = 0.5 * (A + A.T)
    n = A.shape[0]
    A = _psd(A)
    for _ in range(int(n_iter)):
        Bm = A - A.sum() / n ** 2
        A = _psd(Bm)
    return A


def dykstra_projections(X, n_iter: int = 1000) -> np.ndarray:
    """Dykstra's alternating projections onto {1ᵀΣ1 = 0} and the PSD cone: converges to
    the nearest point P_N(X) (Boyle & Dykstra 1986), slowly here (no Slater point)."""
    x = np.asarray(X, dtype=np.float64)
    x = 0.5 * (x + x.T)
    n = x.shape[0]
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    for _ in range(int(n_iter)):
        y = x + p
        y = y - y.sum() / n ** 2
        p = x + p - y
        x_new = _psd(y + q)
        q = y + q - x_new
        x = x_new
    return x


def _psd(M):
    w, U = np.linalg.eigh(0.5 * (M + M.T))
    keep = w > 0
    return (U[:, keep] * w[keep]) @ U[:, keep].T


def kcr_subgradient(K, tau, c, lam, h_min=1e-6, step=None, max_iter=1000, projection="exact",
                    n_proj=20, time_limit=None, h0=1.0, cpu_limit=None) -> dict:
    """The paper's Algorithm 1 on Σ (n × n): subgradient step, then projection onto N.

    Σ_{t+1} = P_N(Σ_t − α_t(Σ_{(i,j)∈N_t} tau_ij M_ij + λK)),
    h̃_{t+1} = max(h_min, h̃_t + α_t Σ_{(i,j)∈N_t} tau_ij), with N_t the (i, j) whose
    inner hinge is active in a row whose outer hinge is active (steps 3–5) and
    M_ij = (k_i − k_j)(k_i − k_j)ᵀ.  The paper leaves {α_t} open; here
    α_t = step / √(t + 1) (``step`` default: 1 / (‖K‖² · n)).  ``projection="exact"``
    uses :func:`cvxkml.kcr_formulas.project_onto_N`; ``"alternating"`` runs ``n_proj``
    sweeps of :func:`alternating_projections` (the paper).  Returns the best iterate as
    a dict (Sigma, h, objective, n_iter, time, history).  ``time_limit`` / ``cpu_limit``
    bound wall / CPU seconds.  A baseline for benchmarks: it has no certificate and no
    reliable stopping rule.
    """
    t0 = time.perf_counter()
    c0 = time.process_time()
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    if step is None:
        step = 1.0 / (np.linalg.norm(K, 2) ** 2 * n)
    Sigma = np.zeros((n, n))
    h = max(h_min, float(h0))
    best = dict(objective=np.inf, Sigma=Sigma.copy(), h=h)
    history = []
    for t in range(int(max_iter)):
        Bm = K @ Sigma @ K
        D = sq_distances_from_gram(Bm)
        f = kcr_objective(D, h, tau, c, float(np.sum(K * Sigma)), lam)
        if f < best["objective"]:
            best.update(objective=f, Sigma=Sigma.copy(), h=h)
        history.append((t, f, time.perf_counter() - t0))
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        if cpu_limit is not None and time.process_time() - c0 > cpu_limit:
            break
        U = 1.0 + tau * (D - h)
        rows = (c + np.maximum(U, 0.0).sum(axis=1)) > 0.0          # outer hinge active
        act = (U > 0.0) & rows[:, None]                             # N_t = B_t \ A_t
        Wt = np.where(act, tau, 0.0)
        Ws = Wt + Wt.T
        Lap = np.diag(Ws.sum(axis=1)) - Ws
        grad = K @ Lap @ K + lam * K                                # Σ_{N_t} tau M_ij + λK
        alpha = step / np.sqrt(t + 1.0)
        Y = Sigma - alpha * grad
        Sigma = project_onto_N(Y) if projection == "exact" else \
            alternating_projections(Y, n_proj)
        h = max(h_min, h + alpha * float(Wt.sum()))
    best.update(n_iter=len(history), time=time.perf_counter() - t0, history=history)
    return best
