"""Fast solver for the kernel classification rule SDP (Sriperumbudur et al. 2008, eq. 9):
restarted primal-dual hybrid gradient with a certified duality gap.

Problem, in the whitened coordinates of :func:`cvxkml.formulas.kcr.whitening`
(Σ = T X Tᵀ, tr(KΣ) = tr X, D_ij = z_ijᵀ X z_ij with z_ij = f_i − f_j):

    min_{X ⪰ 0, h̃ >= h_min}  Σ_i φ_i(1 + tau_i·∘(A(X)_i· − h̃)) + λ tr X,
    φ_i(u) = [c_i + Σ_j [u_j]₊]₊ = max_{0 <= s_j <= t <= 1} t c_i + sᵀu,

a convex piecewise-linear function of a linear map of (X, h̃) plus a linear term over a
cone.  The saddle form min_{X, h̃} max_{s ∈ [0,1]^{n×n}} L(X, h̃, s) with

    L = Σ_ij s_ij + Σ_i c_i max_j s_ij + ⟨λI + Aᵀ(tau∘s), X⟩ − h̃ Σ_ij tau_ij s_ij

(c_i <= 0 because every class has at least two members) is solved by PDHG
(Chambolle–Pock), each step exact and cheap:

* primal: X⁺ = P_PSD(X − α(Aᵀ(tau∘s) + λI)) — only the positive eigenpairs are needed
  (X* has low rank), and consecutive matrices differ little, so
  :class:`PositivePartTracker` updates them by one block-Krylov Rayleigh–Ritz step
  from the previous Ritz vectors, applying the matrix as X V − α(Fᵀ L(s) F V + λV)
  without forming it; a LAPACK eigendecomposition re-seeds it after every certificate
  and whenever the Ritz residual exceeds ``eig_step_factor`` (½) times the last primal
  step;
  h̃⁺ = max(h_min, h̃ + α_h Σ tau∘s);
* dual: per row, the proximal map of −(σ-scaled) t c_i over {0 <= s_j <= t <= 1} —
  s_j = min(max(v_j, 0), t) with t ∈ [0, 1] solving Σ_j (v_j − t)₊ = σ|c_i| (water
  filling; Numba);
* Aᵀ(W) = Fᵀ(diag((W + Wᵀ)1) − W − Wᵀ)F and A(X) from the Gram matrix F X Fᵀ (BLAS).

Diagonal preconditioning (``scaling``): the iteration runs on Y with X = D Y D, D the
diagonal that shrinks the spread of the whitened feature-column norms √μ_k (μ the centred
kernel spectrum), which is the conditioning of A; the PSD cone is invariant and the trace
term becomes λ tr(D Y D).  On the small instances of the property tests it cut the
iterations 7× (a ridged linear kernel at λ = 0.01, n = 26, went from > 100 000 to 1 120).
The norms are those of the centred columns (F = KT carries a common part K1 that the
pair differences cancel), and d_k is capped at λ d_k² <= ‖A‖; the exponent is 0.75
(issue 33: the same iterations as 0.5 over 35 small instances, 880 instead of 1 360 on
2 000 blob points, 2 580 instead of 17 856 on Balance with ν = 2⁻⁴, λ = 10⁻³).

Convergence machinery (as in PDLP / r2HPDHG, Applegate et al. 2021, Lu & Yang 2024):
adaptive restarts on the fixed-point residual ‖T(z) − z‖; primal-weight updates at
restarts; adaptive step sizes η <= ‖Δz‖²_ω / (2|⟨Δs, 𝒦Δx⟩|); optionally reflected
Halpern iterations z ← w(2T(z) − z) + (1 − w)z₀, w = (k+1)/(k+2) between restarts
(``halpern=True``; Halpern needed more iterations on 27 of 36 instances of
``python -m benchmarks bench kcr variants``, fewer on 6; see the reference sheet).  With a rank-k iterate
and a tracked PSD step an iteration costs O(n²(k + p) + n r p) for a block of p ≈ k + 10 vectors instead of the
O(n²r + nr² + r³) of forming the r × r matrix and decomposing it.

The certificate lags the primal: late in a solve the primal value is within 1e-4 of
the optimum for hundreds of iterations while the bound from the dual iterate s is not,
partly because S = Σ tau∘s is not exactly 0 and the bound charges a positive S at the
bandwidth bound h_max ~ 1e4.  :func:`balance_dual` moves s to S = 0 (self weights, then
the similar pairs of smallest ‖z_ij‖², with the exact change of Aᵀ) and the better of the
two bounds is kept (``balance=True``).

Dual polishing (``polish``, :func:`polish_dual`): even with balanced weights the bound
lags because λI + Aᵀ(τ∘s) is slightly indefinite on range(X), and the bound pays
R·|λ_min| or the θ-scaling for it.  Below a certified gap of ``polish`` (0.1) a
certificate also solves, for the weights of the pairs nearest their kink in rows whose
outer hinge is active, the least-norm change that makes the dual slack vanish on range(X)
(then on its negative eigenvectors) with Σ τ∘s = 0 — complementary slackness, linear in
the weights — and bounds at every round's point.  On 500 blob points at iteration 800
PDHG's own bound had gap 3.8e-2 and the polished one 6e-4.

Working set (``working_set``, :class:`_WorkingSet`): at the optimum most rows have
their outer hinge clearly inactive (s = 0) or clearly active (t = 1), and in the active
ones most pairs are clearly active (s = 1) or inactive (s = 0); only the pairs near a kink
and the rows near the outer kink are free.  The working-set phase iterates on those only
(the fixed active pairs enter as one r × r matrix), certifies on all n² pairs at each
check and moves what the full primal point shows violated back into the free part, so
``converged`` still means certified for the whole problem.  On 1 000 blob points the free
part was 13 % of the n² pairs.

Stopping rule: a certified duality gap.  Every ``check_every`` iterations the objective
f(X, h̃) (:func:`cvxkml.formulas.kcr.kcr_objective`) of the current primal point and the
Lagrangian lower bound g(s) (:func:`cvxkml.formulas.kcr.dual_lower_bound`, one
λ_min computation) are evaluated; the solver stops with ``converged=True`` as soon as
(f_best − g_best) / max(1, |f_best|) <= tol.  Otherwise it stops at ``max_iter`` or
``time_limit`` with ``converged=False``: the returned gap is then still a valid bound on
the suboptimality.

The paper's own Algorithm 1 (subgradient step + projection onto N) is
:func:`kcr_subgradient`; :func:`alternating_projections` and :func:`dykstra_projections`
are the two iterative projections onto N that :func:`cvxkml.formulas.kcr.project_onto_N`
replaces by an exact one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba as nb
import numpy as np
import scipy.linalg as sla

from .._config import blas_limit
from ..errors import InvalidInputError, SolverError
from ..formulas.kcr import (
    dual_lower_bound,
    dual_objective,
    h_upper_bound,
    kcr_objective,
    project_onto_N,
    sq_distances_from_gram,
)
from .result import NOT_CONVERGED, OK, FastResult

__all__ = [
    "kcr_pdhg",
    "balance_dual",
    "polish_dual",
    "kcr_subgradient",
    "alternating_projections",
    "dykstra_projections",
    "operator_norm",
]


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


@blas_limit()
def operator_norm(F, n_iter: int = 30, seed: int = 0, rtol: float = 1e-4) -> float:
    """Power-iteration estimate of ‖A‖ (A(X)_ij = z_ijᵀXz_ij over all ordered pairs),
    stopped after ``n_iter`` iterations or once two consecutive estimates agree to
    ``rtol`` (from the fifth iteration; each costs O(n²r), ~0.25 CPU s at n = 2 000, and
    the estimate only sets the first step size: 8 iterations agreed to 1e-4 at n = 600)."""
    n, r = F.shape
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((r, r))
    X = X + X.T
    est = 1.0
    W = np.empty((n, n))
    deg = np.empty(n)
    ones = np.ones((n, n))
    prev = np.inf
    for k in range(n_iter):
        X /= np.linalg.norm(X)
        D = sq_distances_from_gram(F @ X @ F.T)  # A(X); D is symmetric, so the
        X2 = _adjoint(F, np.ascontiguousarray(0.5 * D), ones, W, deg) * 2.0  # AᵀA(X)
        est = float(np.sqrt(np.linalg.norm(X2)))
        if not np.isfinite(est) or est == 0.0:
            return max(est, 1.0) if np.isfinite(est) else 1.0
        if k >= 4 and abs(est - prev) <= rtol * est:
            break
        prev = est
        X = X2
    return est


def _eigh(M, dtype, subset_by_value=None, subset_by_index=None):
    """Eigenpairs (ascending) of a symmetric M computed in ``dtype``: LAPACK ``?syevr``
    for a subset (``subset_by_value`` / ``subset_by_index`` as in scipy), ``?syevd``
    otherwise.  LAPACK's MRRR driver can report an internal error on rare matrices (seen
    once in float32 on Wine): then divide and conquer in float64, same subset."""
    Mx = M.astype(dtype, copy=False)
    subset = subset_by_value is not None or subset_by_index is not None
    try:
        if subset:
            return sla.eigh(
                Mx, driver="evr", subset_by_value=subset_by_value, subset_by_index=subset_by_index, check_finite=False
            )
        return np.linalg.eigh(Mx)
    except np.linalg.LinAlgError:
        if not np.all(np.isfinite(M)):
            raise
        w, U = np.linalg.eigh(np.asarray(M, dtype=np.float64))
        if subset_by_value is not None:
            sel = (w > subset_by_value[0]) & (w <= subset_by_value[1])
        elif subset_by_index is not None:
            sel = np.zeros(w.size, bool)
            sel[subset_by_index[0] : subset_by_index[1] + 1] = True
        else:
            sel = np.ones(w.size, bool)
        return w[sel], U[:, sel]


def _psd_part(M, rank_hint, dtype=np.float64):
    """Positive eigen-part of a symmetric matrix as a float64 factor P (X⁺ = P Pᵀ) and
    its eigenvalues; only the positive eigenpairs are computed when few are expected.
    The eigendecomposition runs in ``dtype`` (float32: LAPACK ssyevr/ssyevd)."""
    r = M.shape[0]
    if rank_hint * 8 < r:
        w, U = _eigh(M, dtype, subset_by_value=(0.0, np.inf))
    else:
        w, U = _eigh(M, dtype)
    keep = w > 0.0
    w = w[keep].astype(np.float64)
    return U[:, keep].astype(np.float64) * np.sqrt(w), w


class PositivePartTracker:
    """Positive eigen-part of a sequence of slowly changing symmetric r × r matrices M_k,
    by a warm-started block-Krylov Rayleigh–Ritz step instead of a full eigendecomposition.

    The basis U (r × p, orthonormal) holds the previous step's Ritz vectors of the k
    positive eigenvalues plus ``guard`` Ritz vectors just below zero.  One step builds
    the block Krylov space span[U, M U], computes the Rayleigh–Ritz
    pairs (θ_i, v_i) of M on it and keeps those with θ_i > 0; the cost is a few r × r × p
    products plus a (2p)² eigenproblem — a fraction of a full LAPACK eigendecomposition
    when k << r.  The step is accepted when the Ritz residuals of the kept pairs satisfy
    ‖[M v_i − θ_i v_i]_i‖_F <= ``tol`` · ‖θ₊‖ (this residual bound tracks the relative
    Frobenius error of the projection within a factor ~2 on the KCR iterations; measured in
    ``reference/sriperumbudur2008-kcr.md``), and at least ``guard // 2`` Ritz values are
    <= 0 (so the block reaches below the positive part).  Otherwise — and on every call with
    ``exact=True`` (the solver asks for it at each certificate, so a positive eigenvalue
    that appeared outside the tracked block is picked up) — it falls back to the LAPACK
    eigendecomposition and re-seeds U from it.  ``n_exact`` / ``n_tracked`` count the two,
    ``n_rejected`` the tracked steps that fell back.  Below ``min_size`` (``enabled`` is
    False) every step is LAPACK's positive part (:func:`_psd_part`, with the last rank as
    the hint): :func:`kcr_pdhg` uses it that way below ``eig_min_size`` and for
    ``eig="exact"``.
    """

    def __init__(self, r: int, dtype=np.float64, guard: int = 10, tol: float = 1e-3, min_size: int = 200):
        self.r = int(r)
        self.dtype = dtype
        self.guard = int(guard)
        self.tol = float(tol)
        self.abs_tol = np.inf
        # below this size (or when the positive part is not small) LAPACK is as fast
        self.enabled = self.r >= int(min_size)
        self.U = None
        self.k = 0
        self.n_exact = 0
        self.n_tracked = 0
        self.n_rejected = 0

    def _exact(self, M):
        self.n_exact += 1
        if not self.enabled:  # LAPACK only: the positive part, as _psd_part does
            P, w = _psd_part(M, self.k, self.dtype)
            self.k = w.size
            return P, w
        r = self.r
        p = self.k + self.guard
        w = None
        if 2 * p < r:
            w, U = _eigh(M, self.dtype, subset_by_index=(r - p, r - 1))
            if w[0] > 0.0:  # the positive part may be larger than p
                w = None
        if w is None:
            w, U = _eigh(M, self.dtype)
        keep = w > 0.0
        self.k = int(keep.sum())
        self.U = np.ascontiguousarray(self._block(w, U), dtype=self.dtype) if self._trackable(self.k) else None
        wk = w[keep].astype(np.float64)
        return U[:, keep].astype(np.float64) * np.sqrt(wk), wk

    def _trackable(self, k):
        """A positive part of k pairs is small enough to track (else LAPACK is as fast)."""
        return k + self.guard < self.r // 3

    def _block(self, w, V):
        """The next basis: the Ritz / eigenvectors of the k positive values and ``guard``
        more below them (``w`` ascending)."""
        return V[:, w.size - min(w.size, self.k + self.guard) :]

    def _krylov_step(self, apply):
        U = self.U
        MU = apply(U)
        B = MU - U @ (U.T @ MU)  # U is orthonormal: orthogonalize MU against it
        Q2, _ = np.linalg.qr(B)
        Q2 -= U @ (U.T @ Q2)  # second pass (classical Gram–Schmidt twice)
        Q2, _ = np.linalg.qr(Q2)
        Q = np.hstack([U, Q2])
        MQ = np.hstack([MU, apply(Q2)])
        H = (Q.T @ MQ).astype(np.float64)
        theta, Z = np.linalg.eigh(0.5 * (H + H.T))
        keep = theta > 0.0
        k = int(keep.sum())
        n_guard = theta.size - k
        Zd = Z.astype(self.dtype)
        V = Q @ Zd
        Zk = Zd[:, keep]
        R = MQ @ Zk - V[:, keep] * theta[keep].astype(self.dtype)
        res = float(np.linalg.norm(R))
        scale = float(np.linalg.norm(theta[keep]))
        return theta, V, keep, k, n_guard, res, scale

    def __call__(self, apply, build, exact: bool = False):
        """(P, w): float64 factor with P Pᵀ = P_PSD(M) and the positive eigenvalues w of
        M, given ``apply(V)`` = M V (r × p blocks in ``dtype``) and ``build()`` = M (for
        the LAPACK path)."""
        if exact or self.U is None:
            return self._exact(build())
        theta, V, keep, k, n_guard, res, scale = self._krylov_step(apply)
        ok = n_guard >= max(1, self.guard // 2) and (k == 0 or res <= min(self.tol * scale, self.abs_tol))
        if not ok or not self._trackable(k):
            self.n_rejected += 1
            return self._exact(build())
        self.n_tracked += 1
        self.k = k
        self.U = np.ascontiguousarray(self._block(theta, V))
        wk = theta[keep]
        return V[:, keep].astype(np.float64) * np.sqrt(wk), wk


def _max_similar_sq_norm(F, tau, return_matrix=False):
    G = F @ F.T
    Z = sq_distances_from_gram(G)
    np.fill_diagonal(Z, 0.0)
    sim = tau > 0
    zmax = float(np.max(Z[sim])) if np.any(sim) else 0.0
    return (zmax, Z) if return_matrix else zmax


def _lambda_min(G) -> float:
    """λ_min of a symmetric matrix (LAPACK ``?syevr`` for the one eigenvalue, divide and
    conquer when MRRR reports an internal error)."""
    try:
        return float(sla.eigh(G, eigvals_only=True, subset_by_index=(0, 0), check_finite=False, driver="evr")[0])
    except np.linalg.LinAlgError:
        return float(np.linalg.eigvalsh(G)[0])


def balance_dual(s, tau, F, Zsq=None):
    """Dual weights s' ∈ [0, 1]^{n×n} with Σ tau∘s' = 0 where s can be cheaply moved there,
    and the change of Aᵀ(tau∘s): returns (s', ΔG) with Aᵀ(tau∘s') = Aᵀ(tau∘s) − ΔG.

    The certificate (:func:`cvxkml.formulas.kcr.dual_lower_bound`) charges a positive
    S = Σ tau∘s at the bandwidth bound h_max (a large number) and rewards a negative one
    at h_min only, while an optimal dual has S = 0 (h̃* > h_min).  PDHG's dual iterate
    has S ≈ ±1e-3 … 1e-1 late in a solve, which at h_max ~ 1e4 costs far more than the
    target gap.  The repair, in order:

    * S < 0: raise the self weights s_ii (z_ii = 0, so Aᵀ is unchanged) up to their row
      maximum (so Σ_i c_i max_j s_ij is unchanged) until S = 0 — a gains what S loses;
    * S > 0: lower the self weights (Aᵀ unchanged), then the similar off-diagonal weights
      in the order of increasing ‖z_ij‖² (the smallest change of Aᵀ per unit of S),
      until S = 0; ΔG = Σ δ_ij z_ij z_ijᵀ over the lowered pairs (exact).

    Any s' in the box gives a valid lower bound (weak duality); the caller recomputes
    (a, S) and λ_min for s' and keeps the better of the two bounds.  ``Zsq`` is the
    n × n matrix of ‖z_ij‖² = ‖f_i − f_j‖² (computed from F when None).
    """
    s2 = np.array(s, dtype=np.float64)
    n = s2.shape[0]
    r = F.shape[1]
    S = float(np.sum(tau * s2))
    diag = np.arange(n)
    dG = np.zeros((r, r))
    if S < 0.0:
        room = s2.max(axis=1) - s2[diag, diag]
        tot = float(room.sum())
        if tot > 0.0:
            s2[diag, diag] += room * min(1.0, -S / tot)
        return s2, dG
    if S == 0.0:
        return s2, dG
    d = s2[diag, diag].copy()
    take = min(float(d.sum()), S)
    if take > 0.0:
        s2[diag, diag] = d * (1.0 - take / float(d.sum()))
        S -= take
    if S <= 0.0:
        return s2, dG
    I, J = np.nonzero((tau > 0) & (s2 > 0.0) & ~np.eye(n, dtype=bool))
    if I.size == 0:
        return s2, dG
    if Zsq is None:
        Zsq = sq_distances_from_gram(F @ F.T)
    q = Zsq[I, J]  # ‖z_ij‖², no pair vectors formed
    order = np.argsort(q, kind="stable")
    w = s2[I[order], J[order]]
    cum = np.cumsum(w)
    m = int(np.searchsorted(cum, S)) + 1  # pairs lowered (the last partly)
    m = min(m, order.size)
    delta = w[:m].copy()
    if cum[m - 1] > S:
        delta[m - 1] -= cum[m - 1] - S
    sel = order[:m]
    s2[I[sel], J[sel]] = w[:m] - delta
    Zs = F[I[sel]] - F[J[sel]]
    dG = Zs.T @ (delta[:, None] * Zs)
    return np.clip(s2, 0.0, 1.0), 0.5 * (dG + dG.T)


def _codes_of(tau) -> np.ndarray:
    """Class codes with tau_ij = +1 iff codes_i = codes_j (tau from
    :func:`cvxkml.formulas.kcr.label_structure`); InvalidInputError for any other matrix."""
    n = tau.shape[0]
    first = np.argmax(tau > 0, axis=1)  # the first point of i's class
    codes = np.unique(first, return_inverse=True)[1].astype(np.int64)
    if tau.shape != (n, n) or not np.array_equal(tau, np.where(codes[:, None] == codes[None, :], 1.0, -1.0)):
        raise InvalidInputError(
            "tau must be the ±1 class matrix of label_structure "
            "(+1 for equal labels, −1 otherwise, +1 on the diagonal)."
        )
    return codes


# --------------------------------------------------------------------------- PDHG: setup
@dataclass
class _Setup:
    """What stays fixed during a solve: the data, the preconditioner D (X = D Y D), the
    iteration's features F D (in the iteration precision), the operator norm and the
    bounds the certificate needs."""

    F: np.ndarray
    tau: np.ndarray
    c: np.ndarray
    codes: np.ndarray
    lam: float
    h_min: float
    d: np.ndarray
    Fs: np.ndarray
    lam_d: np.ndarray
    norm_A: float
    hsc: float
    zmax: float
    Zsq: np.ndarray
    fdt: type
    F_it: np.ndarray
    scaling: float
    balance: bool

    @property
    def n(self) -> int:
        return self.F.shape[0]

    @property
    def lam_d_it(self) -> np.ndarray:
        """λ D² in the iteration precision: a float64 vector in the tracked PSD step's
        products would promote the whole block, and every float32 operand after it, to
        float64 (copies of F D included)."""
        return self.lam_d.astype(self.fdt)

    @property
    def r(self) -> int:
        return self.F.shape[1]


#: Cap of the preconditioner: λ d_k² <= _TRACE_CAP · ‖A‖ (in the preconditioned
#: coordinates), see :func:`_setup`.
_TRACE_CAP = 1.0


def _setup(F, tau, c, lam, h_min, scaling, precision, balance) -> _Setup:
    """Check the options and build the fixed part of a solve (preconditioner, operator norm)."""
    F = np.asarray(F, dtype=np.float64)
    # Only the differences z_ij = f_i − f_j enter the problem, so the column means of F
    # are dropped: the centred columns have the norms √μ_k the preconditioner is meant
    # to equalize (F = KT has a common part K1 of about the kernel's mean, which on a
    # wide kernel hid a spread of 2e-6 behind one of 0.07: Balance, ν = 2⁻⁴, 312 points),
    # and the float32 Gram matrices of the iteration lose no digits to that common part.
    F = np.ascontiguousarray(F - F.mean(axis=0))
    tau = np.ascontiguousarray(tau, dtype=np.float64)
    c = np.ascontiguousarray(c, dtype=np.float64)
    r = F.shape[1]
    # τ_ij = +1 iff the class codes agree: the per-iteration kernels read the codes
    # instead of the n × n array
    codes = _codes_of(tau)
    if precision not in ("mixed", "double"):
        raise ValueError(f"precision must be 'mixed' or 'double'; got {precision!r}.")
    scaling = float(scaling)
    if not 0.0 <= scaling <= 1.0:
        raise ValueError(f"scaling must be in [0, 1]; got {scaling!r}.")
    lam = float(lam)
    zmax, Zsq = _max_similar_sq_norm(F, tau, return_matrix=True)
    # diagonal preconditioning: iterate on Y with X = D Y D (X ⪰ 0 ⟺ Y ⪰ 0), i.e. on the
    # features F D and the linear cost λ D²; certificates stay in the X coordinates.
    # d_k is capped so that λ d_k² <= ‖A‖ (of the features F D before the cap): the
    # trace term's diagonal then stays on the scale of the data term in the PSD step's
    # matrix Y − α(Aᵀ(τ∘s) + λD²), whose float32 eigen-steps otherwise lose their
    # accuracy to it (n = 102, λ = 10, d up to 236: λ d² = 5.6e5 against ‖A‖ = 82; the
    # solve stalled at a gap of 9e-6 and the tracker's steps were rejected; capped,
    # 1e-6 in 470 iterations)
    cn = np.sqrt(np.sum(F * F, axis=0))
    d = (cn / cn.max()) ** -scaling if scaling > 0.0 and cn.size and cn.max() > 0 else np.ones(r)
    d = np.where(np.isfinite(d), d, 1.0)
    Fs = F * d
    norm_A = operator_norm(Fs)
    cap = np.sqrt(_TRACE_CAP * norm_A / lam) if lam > 0.0 else np.inf
    if np.any(d > cap):
        d = np.minimum(d, max(cap, 1.0))
        Fs = F * d
        norm_A = operator_norm(Fs)
    fdt = np.float32 if precision == "mixed" else np.float64
    return _Setup(
        F=F,
        tau=tau,
        c=c,
        codes=codes,
        lam=lam,
        h_min=float(h_min),
        d=d,
        Fs=Fs,
        lam_d=lam * d * d,
        norm_A=norm_A,
        hsc=F.shape[0] / norm_A,  # h̃ is scaled so that its column of 𝒦 has norm ‖A‖
        zmax=zmax,
        Zsq=Zsq,
        fdt=fdt,
        F_it=Fs.astype(fdt) if fdt is np.float32 else Fs,
        scaling=scaling,
        balance=bool(balance),
    )


@dataclass
class _State:
    """The PDHG iterate (Y, h̃, s) with its caches: B = (F D) Y (F D)ᵀ, S = Σ τ∘s, the
    Laplacian weights of s in the iteration precision, an explicit Aᵀ(τ∘s) and a factor of
    Y when at hand; the step size η and the primal weight ω."""

    X: np.ndarray
    h: float
    s: np.ndarray
    B: np.ndarray
    St: float
    omega: float
    eta: float
    W_it: np.ndarray
    deg_it: np.ndarray
    X_fac: np.ndarray | None = None
    G_exp: np.ndarray | None = None


def _initial_state(su: _Setup, warm_start, omega0) -> _State:
    """The cold start (Y = 0, h̃ = 1, s = 0) or a warm start from ``FastResult.extra["warm"]``."""
    n, r, lam = su.n, su.r, su.lam
    omega = lam * np.sqrt(r) / n if omega0 is None else float(omega0)
    eta = 0.9 / (np.sqrt(2.0) * su.norm_A)
    if warm_start is not None:
        X = np.array(warm_start["X"], dtype=np.float64)
        h = max(su.h_min, float(warm_start["h"]))
        s = np.clip(np.array(warm_start["s"], dtype=np.float64), 0.0, 1.0)
        if X.shape != (r, r) or s.shape != (n, n):
            raise InvalidInputError(
                f"warm_start has X {X.shape} and s {s.shape}; this problem needs ({r}, {r}) "
                f"and ({n}, {n}) (a warm start must come from a problem with the same points)."
            )
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(s)) and np.isfinite(h)):
            raise InvalidInputError("warm_start contains NaN or infinite values.")
        omega = float(warm_start.get("omega", omega))
        eta = float(warm_start.get("eta", eta))
        X = X / np.outer(su.d, su.d)  # Y = D⁻¹ X D⁻¹
    else:
        X = np.zeros((r, r))
        h = max(su.h_min, 1.0)
        s = np.zeros((n, n))
    W_it, deg_it = np.empty((n, n), su.fdt), np.empty(n, su.fdt)
    _laplacian_weights(s, su.tau, W_it, deg_it)  # Aᵀ(τ∘s) = Fᵀ(diag(deg) − W)F
    B = su.Fs @ X @ su.Fs.T
    return _State(X=X, h=h, s=s, B=B, St=float(np.sum(su.tau * s)), omega=omega, eta=eta, W_it=W_it, deg_it=deg_it)


# --------------------------------------------------------------------------- dual polishing
def polish_dual(F, tau, s, G, P, U, lam, eps=0.3, max_pairs=None, n_neg=5, rounds=5):
    """Dual points for the certificate that make the dual slack Z = λI + Aᵀ(τ∘s) vanish on
    the range of the primal iterate (complementary slackness Z X = 0) and Σ τ∘s = 0,
    by least-norm changes of the weights of pairs at their hinge's kink.

    PDHG's dual iterate lags its primal one: late in a solve λ_min(Z) is a little below 0
    in the directions of range(X), and the bound pays for it in full
    (:func:`cvxkml.formulas.kcr.dual_lower_bound`).  At an optimum Z* ⪰ 0 with
    Z* X* = 0, and the pairs whose inner hinge is at its kink (u_ij = 0) carry the free
    part of s*.  Each round takes Q = an orthonormal basis of [P, the eigenvectors of the
    (at most ``n_neg``) negative eigenvalues of Z] and solves for a change δ of the weights
    of the ``max_pairs`` pairs with the smallest |u_ij| among the rows whose outer hinge
    is active (t_i = max_j s_ij = 1), of least norm, with
    QᵀZ(s + δ)Q = its positive part (0 on range(P) in the first round) and Σ τ∘(s + δ) = 0,
    clipped to the box [0, 1] (a few active-set passes).  The equations are linear in δ:
    Aᵀ(τ∘δ) = Σ_q δ_q τ_q z_q z_qᵀ.  Yields (s', λ_min(Aᵀ(τ∘s'))) for each round; every
    s' is in the box, so every bound computed from it is valid whatever the rounds did.

    Parameters
    ----------
    F : (n, r) array
        Whitened features (the X coordinates).
    tau, s : (n, n) arrays
        Pair labels and the dual point to start from.
    G : (r, r) array
        Aᵀ(τ∘s) in the X coordinates.
    P : (r, k) array
        Factor of the primal iterate (X = P Pᵀ).
    U : (n, n) array
        u = 1 + τ∘(D − h̃) at that primal point.
    lam : float
        λ.
    eps, max_pairs, n_neg, rounds :
        Kink band |u| < ``eps``; pairs used (default max(4 000, 4n)); negative directions
        added per round; rounds.  Measured on 500 blob points at iteration 800 (PDHG's own
        bound: gap 3.8e-2): 20 000 / 8 000 / 4 000 pairs gave 7.7e-4 / 6.7e-4 / 6.2e-4 in
        0.99 / 0.23 / 0.15 CPU s; fewer than 4 000 pairs failed (no useful bound) on a
        less converged iterate.
    """
    n, r = F.shape
    max_pairs = max(4000, 4 * n) if max_pairs is None else int(max_pairs)
    on = s.max(axis=1) >= 1.0
    cand = np.flatnonzero((on[:, None] & (np.abs(U) < eps)).ravel())
    if cand.size == 0 or P.shape[1] == 0:
        return
    if cand.size > max_pairs:
        cand = cand[np.argpartition(np.abs(U.ravel()[cand]), max_pairs - 1)[:max_pairs]]
    I, J = np.divmod(cand, n)
    tq = tau[I, J]
    Zq = F[I] - F[J]
    s = s.copy()
    G = G.copy()
    Y = np.empty((n, r))
    for rnd in range(int(rounds)):
        Zm = G + lam * np.eye(r)
        w, V = _eigh(0.5 * (Zm + Zm.T), np.float64, subset_by_index=(0, min(n_neg, r) - 1))
        if rnd > 0:
            yield s.copy(), float(w[0]) - lam  # λ_min(Aᵀ(τ∘s)) of the previous round's point
        B = np.hstack([P, V[:, w < 0.0]]) if rnd > 0 else P
        Q = np.linalg.qr(B)[0]
        QZQ = Q.T @ Zm @ Q
        QZQ = 0.5 * (QZQ + QZQ.T)
        if rnd > 0:
            wq, Vq = np.linalg.eigh(QZQ)
            target = (Vq * np.maximum(wq, 0.0)) @ Vq.T
        else:
            target = np.zeros_like(QZQ)
        iu = np.triu_indices(Q.shape[1])
        g = Zq @ Q
        A = np.vstack([(tq[:, None] * (g[:, iu[0]] * g[:, iu[1]])).T, tq[None, :]])
        b = np.concatenate([(target - QZQ)[iu], [-float(np.sum(tau * s))]])
        d = _box_least_norm(A, b, -s[I, J], 1.0 - s[I, J])
        s[I, J] += d
        np.clip(s, 0.0, 1.0, out=s)
        Y[:] = 0.0
        _pair_laplacian_apply(I, J, d * tq, F, Y)
        dG = F.T @ Y
        G += 0.5 * (dG + dG.T)
    Zm = G + lam * np.eye(r)
    yield s, _lambda_min(0.5 * (Zm + Zm.T)) - lam


def _box_least_norm(A, b, lo, hi, passes=4):
    """δ of least norm with A δ = b (least squares when inconsistent), lo <= δ <= hi, by
    a few passes of: solve on the entries not at a bound, clip."""
    d = np.zeros(A.shape[1])
    free = np.ones(A.shape[1], bool)
    res = b.copy()
    for _ in range(passes):
        Af = A[:, free]
        M = Af @ Af.T
        y = np.linalg.lstsq(M + 1e-12 * np.trace(M) / max(1, M.shape[0]) * np.eye(M.shape[0]), res, rcond=None)[0]
        d[free] += Af.T @ y
        np.clip(d, lo, hi, out=d)
        res = b - A @ d
        free = (d > lo) & (d < hi)
        if not free.any():
            break
    return d


# --------------------------------------------------------------------------- PDHG: certificate
class _Certificate:
    """The best primal point and the best lower bound seen so far, both in the X
    coordinates, in float64 (objective by :func:`cvxkml.formulas.kcr.kcr_objective`,
    bound by :func:`cvxkml.formulas.kcr.dual_lower_bound`)."""

    def __init__(self, su: _Setup, h0: float):
        self.su = su
        self.f = np.inf
        self.P = np.zeros((su.r, 0))
        self.h = h0
        self.g = -np.inf
        self.s = np.zeros((su.n, su.n))
        self.theta = 0.0
        self._W = np.empty((su.n, su.n))
        self._deg = np.empty(su.n)
        self.polish_start = 0.0  # polishing off
        self.polish_wait, self.polish_spacing = 1, 1

    @property
    def gap(self) -> float:
        return (self.f - self.g) / max(1.0, abs(self.f))

    def polish_due(self, gap: float) -> bool:
        """Polish below the ``polish`` gap at the 1st, 2nd, 4th, 8th, then every 8th
        certificate after the previous polish (a rule of iteration counts, not of clock
        time, so a solve is reproducible)."""
        if gap > self.polish_start:
            return False
        self.polish_wait -= 1
        if self.polish_wait > 0:
            return False
        self.polish_spacing = min(2 * self.polish_spacing, 8)
        self.polish_wait = self.polish_spacing
        return True

    def adjoint(self, s) -> np.ndarray:
        """Aᵀ(τ∘s) in the iteration's coordinates (F D), float64."""
        return _adjoint(self.su.Fs, s, self.su.tau, self._W, self._deg)

    def check(self, P, Bn, hn, sn, Gn) -> float:
        """Evaluate the primal point Y = P Pᵀ (B its Gram matrix) and the dual point s (Gn
        its Aᵀ(τ∘s) in the iteration's coordinates); returns the certified relative gap."""
        su = self.su
        Px = su.d[:, None] * P  # X = Px Pxᵀ
        f = kcr_objective(sq_distances_from_gram(Bn), hn, su.tau, su.c, float(np.sum(Px * Px)), su.lam)
        if f < self.f:
            self.f, self.P, self.h = f, Px, hn
        if su.scaling > 0.0:
            Gn = Gn / np.outer(su.d, su.d)  # Aᵀ(τ∘s) in the X coordinates
        self._last = (Px, Bn, hn, sn, Gn)  # what :meth:`polish` starts from
        R = self.f / su.lam
        h_max = h_upper_bound(R, su.zmax)
        a, S = dual_objective(sn, su.tau, su.c)
        lmin = _lambda_min(Gn)
        self._offer(sn.copy(), *dual_lower_bound(a, S, lmin, su.lam, R, su.h_min, h_max))
        if su.balance and S != 0.0:  # the same s with Σ τ∘s moved to 0
            s2, dG = balance_dual(sn, su.tau, su.F, su.Zsq)
            a2, S2 = dual_objective(s2, su.tau, su.c)
            lmin2 = _lambda_min(Gn - dG) if dG.any() else lmin
            self._offer(s2, *dual_lower_bound(a2, S2, lmin2, su.lam, R, su.h_min, h_max))
        return self.gap

    def _offer(self, s, g, theta):
        if g > self.g:
            self.g, self.s, self.theta = g, s, theta

    def polish(self, tol: float) -> float:
        """Improve the bound from the dual point of the last :meth:`check` by
        :func:`polish_dual` (each round's point is offered; stops once a round gains less
        than 5 % of the gap); returns the certified gap."""
        su = self.su
        Px, Bn, hn, sn, Gn = self._last
        U = 1.0 + su.tau * (sq_distances_from_gram(Bn) - hn)
        R = self.f / su.lam
        h_max = h_upper_bound(R, su.zmax)
        prev = self.gap
        for s2, lmin in polish_dual(su.F, su.tau, sn, Gn, Px, U, su.lam):
            a, S = dual_objective(s2, su.tau, su.c)
            self._offer(s2, *dual_lower_bound(a, S, lmin, su.lam, R, su.h_min, h_max))
            if self.gap <= tol or self.gap > 0.95 * prev:
                break
            prev = self.gap
        return self.gap


# --------------------------------------------------------------------------- PDHG: one step
@dataclass
class _Step:
    """The result of one PDHG step T(z): the new primal factor P (Y⁺ = P Pᵀ), its positive
    eigenvalues w, B⁺, h̃⁺, s⁺, S⁺ and the squared fixed-point residual ``num``."""

    P: np.ndarray
    w: np.ndarray
    Bn: np.ndarray
    hn: float
    sn: np.ndarray
    Sn: float
    Xn: np.ndarray
    num: float
    dx2: float


def _psd_apply(su: _Setup, st: _State, alpha: float):
    """M V = Y V − α(Fᵀ L(s) F V + λ D² V) without forming M (the tracked PSD step)."""
    F_it, W_it, deg_it, lam_d = su.F_it, st.W_it, st.deg_it, su.lam_d_it
    alpha = float(alpha)  # a NumPy float64 scalar would promote the float32 block
    if st.X_fac is not None:  # Y = X_fac X_facᵀ (plain PDHG)
        Pt = st.X_fac.astype(su.fdt)

        def X_apply(V):
            return Pt @ (Pt.T @ V)
    else:
        Xt = st.X.astype(su.fdt)

        def X_apply(V):
            return Xt @ V

    def apply_M(V):
        FV = F_it @ V
        return X_apply(V) - alpha * (F_it.T @ (deg_it[:, None] * FV - W_it @ FV) + lam_d[:, None] * V)

    return apply_M


def _psd_explicit(su: _Setup, st: _State, alpha: float):
    """M = Y − α(Aᵀ(τ∘s) + λ D²), formed (the LAPACK PSD step)."""
    if st.G_exp is None:
        st.G_exp = _adjoint(su.F_it, st.s, su.tau, st.W_it, st.deg_it)
    M = st.X - alpha * (st.G_exp + np.diag(su.lam_d))
    return 0.5 * (M + M.T)


def _pdhg_step(su: _Setup, st: _State, tracker, exact: bool, k: int) -> tuple[_Step, bool]:
    """One PDHG step T(z) at the current η, ω and the step-size test; returns the step and
    whether η passed (η is updated in ``st`` either way, as PDLP's adaptive rule does)."""
    alpha = st.eta / st.omega
    beta = st.eta * st.omega
    apply_M = _psd_apply(su, st, alpha) if tracker.enabled else None
    P, w = tracker(apply_M, lambda: _psd_explicit(su, st, alpha), exact=exact or not tracker.enabled)
    FP = su.Fs @ P
    Bn = FP @ FP.T
    hn = max(su.h_min, st.h + alpha / su.hsc**2 * st.St)
    sn = np.empty((su.n, su.n))
    Sn, ds2, inter = _dual_step_stats(st.s, Bn, st.B, st.h, hn, su.codes, beta, su.c, sn)
    if not (np.isfinite(Sn) and np.isfinite(hn)):
        raise SolverError(
            f"KCR PDHG produced a non-finite iterate at iteration {k} "
            f"(step size {st.eta:.3g}, primal weight {st.omega:.3g}). Check the kernel matrix "
            "for huge entries, or solve without the warm start."
        )
    Xn = P @ P.T
    dh = hn - st.h
    inter = abs(inter)
    dx2 = _sq_dist(Xn, st.X)
    num = st.omega * (dx2 + (dh * su.hsc) ** 2) + ds2 / st.omega
    eta_max = num / (2.0 * inter) if inter > 0 else np.inf
    accept = st.eta <= eta_max
    eta_next = min((1.0 - (k + 1) ** -0.3) * eta_max, (1.0 + (k + 1) ** -0.6) * st.eta)
    st.eta = eta_next if np.isfinite(eta_next) else st.eta
    return _Step(P=P, w=w, Bn=Bn, hn=hn, sn=sn, Sn=Sn, Xn=Xn, num=num, dx2=dx2), accept


# --------------------------------------------------------------------------- PDHG: restarts
class _Restarts:
    """Adaptive restarts on the fixed-point residual (PDLP): the anchor z₀, the residual at
    the last restart and at the last test, and the primal-weight update at a restart."""

    def __init__(self, st: _State, params):
        self.params = params
        self.anchor(st.X, st.h, st.s, st.B, st.St)
        self.count = 0
        self.k_in = 0

    def anchor(self, X, h, s, B, S):
        self.z0 = (X.copy(), h, s.copy(), None if B is None else B.copy(), S)
        self.res0 = None
        self.res_prev = np.inf

    def due(self, res: float, k_total: int, test: bool) -> bool:
        """Whether to restart now (tested every ``restart_every`` iterations)."""
        if self.res0 is None:
            self.res0 = res
        if not test or self.k_in == 0:
            return False
        b_suff, b_nec, b_art = self.params
        restart = (
            res <= b_suff * self.res0
            or (res <= b_nec * self.res0 and res > self.res_prev)
            or self.k_in >= b_art * k_total
        )
        self.res_prev = res
        return restart

    def restart(self, su: _Setup, st: _State, step: _Step) -> None:
        """Restart at the new point: update ω from the primal and dual moves since z₀."""
        self.count += 1
        X0, h0, s0 = self.z0[0], self.z0[1], self.z0[2]
        dx = np.sqrt(np.sum((step.Xn - X0) ** 2) + ((step.hn - h0) * su.hsc) ** 2)
        dy = float(np.linalg.norm(step.sn - s0))
        if dx > 1e-12 and dy > 1e-12:
            st.omega = float(np.exp(0.5 * np.log(dy / dx) + 0.5 * np.log(st.omega)))
        self.anchor(step.Xn, step.hn, step.sn, step.Bn, step.Sn)
        self.k_in = 0


def _advance(su: _Setup, st: _State, step: _Step, rs: _Restarts, restart: bool, halpern: bool, Gn) -> None:
    """Move the iterate: to T(z) (plain PDHG or a restart), or by a reflected Halpern step
    towards the anchor; then refresh the Laplacian weights of s."""
    if restart or not halpern:
        if restart:
            rs.restart(su, st, step)
        else:
            rs.k_in += 1
        # plain PDHG: fresh arrays every iteration, no copies needed
        st.X, st.h, st.s, st.B, st.St = step.Xn, step.hn, step.sn, step.Bn, step.Sn
        st.X_fac, st.G_exp = step.P, Gn
    else:
        wk = (rs.k_in + 1.0) / (rs.k_in + 2.0)
        z0 = rs.z0
        _halpern(step.Xn, st.X, z0[0], wk)
        _halpern(step.sn, st.s, z0[2], wk)
        _halpern(step.Bn, st.B, z0[3], wk)
        st.h = wk * (2.0 * step.hn - st.h) + (1.0 - wk) * z0[1]
        st.St = wk * (2.0 * step.Sn - st.St) + (1.0 - wk) * z0[4]
        rs.k_in += 1
        st.G_exp = st.X_fac = None
    _laplacian_weights_codes(st.s, su.codes, st.W_it, st.deg_it)


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


# --------------------------------------------------------------------------- working set
_OFF, _ON, _NEAR = 0, 1, 2  # row kinds
_ZERO, _ONE, _FREE = 0, 1, 2  # pair classes inside ON rows


class _WorkingSet:
    """The pairs PDHG iterates on, once the iterate shows which hinges are active.

    Rows whose outer hinge is clearly inactive (``OFF``: t_i = max_j s_ij = 0 and
    ρ_i = c_i + Σ_j [u_ij]₊ well below 0) are dropped (s = 0).  Rows whose outer hinge is
    clearly active (``ON``: t_i = 1, ρ_i well above 0) keep t_i = 1, and in them the pairs
    with u_ij well above 0 and s_ij = 1 are fixed at 1 (``ONE``: they enter the primal step
    as one constant r × r matrix G₁ = Aᵀ(τ∘1_ONE) and the h̃ step as Σ τ), those well below
    0 with s_ij = 0 are fixed at 0 (``ZERO``), the others are free pairs with the box prox.
    All other rows (``NEAR``) keep all n pairs and the water-filling prox.  So the
    iteration solves eq. 9 with each fixed hinge replaced by its active (linear) or
    inactive (zero) piece; every dual iterate is a dual point of the whole problem, and
    the certificate is evaluated on all n² pairs (:meth:`full_dual`).  At each certificate
    :meth:`update` moves what the full primal point shows violated (a fixed pair whose u
    came within ``margin`` / 2 of 0, a row whose ρ came within ``row_margin`` / 2 of 0) back
    to the free part, and with ``shrink=True`` fixes what settled (beyond 2 × the margins,
    dual at its bound).  A reclassification never changes the full dual point.
    """

    def __init__(self, su: _Setup, margin: float, row_margin: float):
        self.su = su
        self.margin = float(margin)
        self.row_margin = float(row_margin)
        n = su.n
        self.kind = np.full(n, _NEAR, np.int8)
        self.cls = np.full((n, n), _FREE, np.int8)
        self.one = np.zeros((n, n), bool)
        self.G1 = np.zeros((su.r, su.r))
        self.S1 = 0.0
        self._W64 = np.empty((n, n))
        self._deg64 = np.empty(n)

    # ---- classification
    def update(self, U, s, shrink: bool, first: bool = False) -> bool:
        """Reclassify from u = 1 + τ∘(D − h̃) at the current primal point and the full dual
        s; returns whether anything changed."""
        m, rm = self.margin, self.row_margin
        rho = self.su.c + np.maximum(U, 0.0).sum(axis=1)
        t = s.max(axis=1)
        kind = self.kind.copy()
        was_on = kind == _ON
        if first or shrink:
            f = 1.0 if first else 2.0
            near = kind == _NEAR
            kind[near & (t >= 1.0) & (rho > f * rm)] = _ON
            kind[near & (t <= 0.0) & (rho < -f * rm)] = _OFF
        kind[(kind == _ON) & (rho < 0.5 * rm)] = _NEAR
        kind[(kind == _OFF) & (rho > -0.5 * rm)] = _NEAR
        cls = self.cls.copy()
        new_on = (kind == _ON) & ~was_on
        if new_on.any():  # rows entering ON: classify their pairs afresh
            f = 1.0 if first else 2.0
            Un, sn = U[new_on], s[new_on]
            cls[new_on] = np.where(
                (Un > f * m) & (sn >= 1.0), _ONE, np.where((Un < -f * m) & (sn <= 0.0), _ZERO, _FREE)
            )
        cls[(cls == _ONE) & (U < 0.5 * m)] = _FREE
        cls[(cls == _ZERO) & (U > -0.5 * m)] = _FREE
        if shrink:
            free = cls == _FREE
            cls[free & (U > 2.0 * m) & (s >= 1.0)] = _ONE
            cls[free & (U < -2.0 * m) & (s <= 0.0)] = _ZERO
        changed = first or not (
            np.array_equal(kind, self.kind) and np.array_equal(cls[kind == _ON], self.cls[kind == _ON])
        )
        if changed:
            self._set(kind, cls, s)
        return changed

    def _set(self, kind, cls, s):
        su = self.su
        on = kind == _ON
        one = on[:, None] & (cls == _ONE)
        added, removed = one & ~self.one, self.one & ~one
        n_change = int(added.sum() + removed.sum())
        if n_change * su.r < su.n * su.n:  # G₁ by the changed pairs' rank-one terms
            for mask, sign in ((added, 1.0), (removed, -1.0)):
                I, J = np.nonzero(mask)
                if I.size:
                    Z = su.Fs[I] - su.Fs[J]
                    self.G1 += sign * (Z.T @ (su.tau[I, J][:, None] * Z))
        else:
            self.G1 = _adjoint(su.Fs, one.astype(np.float64), su.tau, self._W64, self._deg64)
        self.G1 = 0.5 * (self.G1 + self.G1.T)
        self.one = one
        self.S1 = float(np.sum(su.tau[one]))
        self.kind, self.cls = kind, cls
        self.rows = np.flatnonzero(kind == _NEAR)
        I, J = np.nonzero(on[:, None] & (cls == _FREE))
        self.I, self.J = I, J
        self.tw = su.tau[I, J]
        self.nw = I.size
        self.tau_rows = su.tau[self.rows]
        self.tau_rows32 = self.tau_rows.astype(su.fdt)
        self.G1_it = self.G1.astype(su.fdt)
        # the dual iterate of the free part: the free pairs, then the NEAR rows
        self.s = np.concatenate([s[I, J], s[self.rows].ravel()])

    def describe(self) -> dict:
        """Sizes: free pairs (in ON rows), NEAR / ON / OFF rows, pairs fixed at 1, and the
        free entries in all (free pairs + n × NEAR rows) against n²."""
        k = np.bincount(self.kind, minlength=3)
        free = self.nw + self.su.n * int(k[_NEAR])
        return dict(
            free_pairs=self.nw,
            near_rows=int(k[_NEAR]),
            on_rows=int(k[_ON]),
            off_rows=int(k[_OFF]),
            fixed_one=int(self.one.sum()),
            free_fraction=free / self.su.n**2,
        )

    # ---- views and assembly
    def split(self, vec):
        """(pair part, row part) views of a free-part vector."""
        return vec[: self.nw], vec[self.nw :].reshape(self.rows.size, self.su.n)

    def full_dual(self, vec) -> np.ndarray:
        """The n × n dual point of the whole problem: 1 on fixed ONE pairs, the free part,
        0 elsewhere."""
        sw, sr = self.split(vec)
        s = self.one.astype(np.float64)
        s[self.I, self.J] = sw
        s[self.rows] = sr
        return s

    def distances(self, FP):
        """Learned squared distances of the free pairs and of the NEAR rows at the primal
        point with features FP (n × k)."""
        dw = np.empty(self.nw)
        _pair_sq_dists(FP, self.I, self.J, dw)
        q = np.sum(FP * FP, axis=1)
        dr = q[self.rows, None] + q[None, :] - 2.0 * (FP[self.rows] @ FP.T)
        return dw, np.maximum(dr, 0.0)

    # ---- the adjoint Aᵀ(τ∘s) = G₁ + Fᵀ L(s_free) F
    def weights(self, vec, dtype):
        """Laplacian weights τ∘s of the free part (pairs, rows) and the degree vector of the
        row part, in ``dtype``."""
        sw, sr = self.split(vec)
        ww = (self.tw * sw).astype(dtype)
        wr = (self.tau_rows32 if dtype is self.su.fdt else self.tau_rows) * sr.astype(dtype)
        deg = wr.sum(axis=0)
        deg[self.rows] += wr.sum(axis=1)
        return ww, wr, deg

    def laplacian_apply(self, wts, FV):
        """L(s_free) FV (n × p) for the weights of :meth:`weights`."""
        ww, wr, deg = wts
        Y = deg[:, None] * FV
        Y[self.rows] -= wr @ FV
        Y -= wr.T @ FV[self.rows]
        _pair_laplacian_apply(self.I, self.J, ww, FV, Y)
        return Y

    def adjoint(self, wts, F, G1) -> np.ndarray:
        """Aᵀ(τ∘s) (r × r) in F's coordinates and precision, as float64."""
        G = (F.T @ self.laplacian_apply(wts, F)).astype(np.float64) + G1
        return 0.5 * (G + G.T)


@dataclass
class _WSState:
    """The iterate of the working-set phase: Y (and a factor), h̃, the free dual part,
    S = Σ τ∘s over all pairs, and the learned distances of the free part at Y."""

    X: np.ndarray
    X_fac: np.ndarray
    FP: np.ndarray
    h: float
    s: np.ndarray
    St: float
    Dw: np.ndarray
    Dr: np.ndarray
    wts: tuple
    fresh: bool = True  # the next PSD step is a LAPACK re-seed


def _ws_state(ws: _WorkingSet, X, X_fac, h, s_full) -> _WSState:
    """The working-set iterate at the primal point Y = X_fac X_facᵀ and the full dual s."""
    su = ws.su
    FP = su.Fs @ X_fac
    Dw, Dr = ws.distances(FP)
    return _WSState(
        X=X,
        X_fac=X_fac,
        FP=FP,
        h=h,
        s=ws.s,
        St=float(np.sum(su.tau * s_full)),
        Dw=Dw,
        Dr=Dr,
        wts=ws.weights(ws.s, su.fdt),
    )


def _ws_step(ws: _WorkingSet, w: _WSState, st: _State, tracker, k: int):
    """One PDHG step on the working set (plain PDHG; the step-size rule as in
    :func:`_pdhg_step`); returns (step, accepted, new distances)."""
    su = ws.su
    alpha, beta = st.eta / st.omega, st.eta * st.omega
    Pt = w.X_fac.astype(su.fdt)
    lam_d, a = su.lam_d_it, float(alpha)  # NumPy float64 scalars or vectors promote the block

    def apply_M(V):
        FV = su.F_it @ V
        G = ws.G1_it @ V + su.F_it.T @ ws.laplacian_apply(w.wts, FV)
        return Pt @ (Pt.T @ V) - a * (G + lam_d[:, None] * V)

    def build():
        M = w.X - alpha * (ws.adjoint(w.wts, su.F_it, ws.G1) + np.diag(su.lam_d))
        return 0.5 * (M + M.T)

    P, ev = tracker(apply_M, build, exact=w.fresh or not tracker.enabled)
    FP = su.Fs @ P
    Dw, Dr = ws.distances(FP)
    hn = max(su.h_min, w.h + alpha / su.hsc**2 * w.St)
    sn = np.empty_like(w.s)
    sw, sr = ws.split(w.s)
    snw, snr = ws.split(sn)
    S1, q1, i1 = _pair_dual_step(sw, ws.tw, Dw, w.Dw, w.h, hn, beta, snw)
    S2, q2, i2 = _rows_dual_step(ws.rows, sr, Dr, w.Dr, su.codes, w.h, hn, beta, su.c, snr)
    Sn = ws.S1 + S1 + S2
    if not (np.isfinite(Sn) and np.isfinite(hn)):
        raise SolverError(
            f"KCR PDHG produced a non-finite iterate at iteration {k} "
            f"(step size {st.eta:.3g}, primal weight {st.omega:.3g}). Check the kernel matrix "
            "for huge entries, or solve without the warm start."
        )
    Xn = P @ P.T
    dx2 = _sq_dist(Xn, w.X)
    num = st.omega * (dx2 + ((hn - w.h) * su.hsc) ** 2) + (q1 + q2) / st.omega
    inter = abs(i1 + i2)
    eta_max = num / (2.0 * inter) if inter > 0 else np.inf
    accept = st.eta <= eta_max
    eta_next = min((1.0 - (k + 1) ** -0.3) * eta_max, (1.0 + (k + 1) ** -0.6) * st.eta)
    st.eta = eta_next if np.isfinite(eta_next) else st.eta
    step = _Step(P=P, w=ev, Bn=None, hn=hn, sn=sn, Sn=Sn, Xn=Xn, num=num, dx2=dx2)
    return step, accept, (FP, Dw, Dr)


def _ws_phase(su, st, step, cert, tracker, rs, k_total, max_iter, opts, history, t0, c0):
    """Continue the solve on a working set of pairs (see :class:`_WorkingSet`) from the
    full iterate ``step``, certifying on all pairs every ``check_every`` iterations and
    moving violated hinges back into the free part; returns (k_total, status)."""
    ws_opts = opts["ws"]
    ws = _WorkingSet(su, ws_opts["margin"], ws_opts["row_margin"])
    FP = su.Fs @ step.P
    s_full = step.sn
    U = 1.0 + su.tau * (sq_distances_from_gram(FP @ FP.T) - step.hn)
    ws.update(U, s_full, shrink=False, first=True)
    w = _ws_state(ws, step.Xn, step.P, step.hn, s_full)
    rs.anchor(w.X, w.h, w.s, None, w.St)
    n_checks, last = 0, None
    info = dict(start=k_total, **ws.describe(), updates=0)
    while k_total < max_iter:
        while True:
            k_total += 1
            step, accept, new = _ws_step(ws, w, st, tracker, k_total)
            if accept or k_total >= max_iter:
                break
        FP, Dw, Dr = new
        w.X, w.X_fac, w.FP, w.h, w.s, w.St, w.Dw, w.Dr = step.Xn, step.P, FP, step.hn, step.sn, step.Sn, Dw, Dr
        w.wts, w.fresh = ws.weights(w.s, su.fdt), False
        tracker.abs_tol = opts["eig_step_factor"] * np.sqrt(step.dx2)
        if k_total % opts["check_every"] == 0 or k_total >= max_iter:
            n_checks += 1
            s_full = ws.full_dual(w.s)
            B = FP @ FP.T
            Gn = ws.adjoint(ws.weights(w.s, np.float64), su.Fs, ws.G1)
            last = _Step(step.P, step.w, B, step.hn, s_full, step.Sn, step.Xn, step.num, step.dx2)
            status = _checkpoint(cert, st, last, Gn, rs, k_total, history, t0, c0, *opts["check"])
            if status is not None:
                return k_total, status, last, info
            w.fresh = True  # re-seed the PSD step after a certificate, as the full phase does
            U = 1.0 + su.tau * (sq_distances_from_gram(B) - step.hn)
            if ws.update(U, s_full, shrink=n_checks % ws_opts["shrink_every"] == 0):
                info.update(ws.describe(), updates=info["updates"] + 1)
                if opts["check"][1]:  # verbose
                    print(f"    working set: {ws.describe()}")
                w = _ws_state(ws, w.X, w.X_fac, w.h, s_full)
                rs.anchor(w.X, w.h, w.s, None, w.St)
                rs.k_in = 0
                continue
        if rs.due(np.sqrt(step.num), k_total, k_total % opts["restart_every"] == 0):
            rs.restart(su, st, step)
        else:
            rs.k_in += 1
    return k_total, None, last, info


# --------------------------------------------------------------------------- PDHG: the solver
def kcr_pdhg(
    F,
    tau,
    c,
    lam,
    h_min=1e-6,
    tol=1e-3,
    max_iter=20_000,
    time_limit=None,
    check_every=None,
    warm_start=None,
    verbose=False,
    halpern=False,
    restart_params=(0.2, 0.5, 0.2),
    omega0=None,
    precision="mixed",
    eig="track",
    eig_tol=1e-3,
    eig_step_factor=0.5,
    eig_guard=10,
    eig_min_size=200,
    restart_every=10,
    blas_threads="config",
    scaling=0.75,
    callback=None,
    balance=True,
    working_set=None,
    polish=0.1,
) -> FastResult:
    """Restarted PDHG (plain, or Halpern with ``halpern=True``) for eq. 9 in whitened
    coordinates, diagonally preconditioned, stopped by a certified duality gap (see the
    module text; measurements behind the defaults: ``reference/sriperumbudur2008-kcr.md``).

    Parameters
    ----------
    F : (n, r) array
        Whitened kernel features (:func:`cvxkml.formulas.kcr.whitening`).
    tau : (n, n) array of ±1
        Pair labels τ_ij = y_i y_j (the class matrix of ``label_structure``).
    c : (n,) array
        c_i = 2 − n_i⁺ <= 0 (eq. 9).
    lam : float > 0
        The regularization weight λ.
    h_min, tol : float
        Lower bound ε on h̃; target certified relative gap (f − g) / max(1, |f|).
    max_iter, time_limit : int, float or None
        Iteration limit; seconds before the solve stops (uncertified unless certified).
    check_every : int or None
        Iterations between certificates (default 10, or n/25 above n = 250).
    warm_start : dict or None
        ``FastResult.extra["warm"]`` of an earlier solve on the same points (``X``, ``h``,
        ``s``, ``omega``, ``eta``), e.g. at a neighbouring λ.
    verbose, halpern : bool
        Log each certificate; reflected Halpern iterations between restarts (default plain).
    restart_params : (sufficient, necessary, artificial)
        Restart when the fixed-point residual fell below ``sufficient`` × its value at the
        last restart, or below ``necessary`` × and grew since the last test, or after
        ``artificial`` × the total iteration count without a restart.
    omega0 : float or None
        Initial primal weight (default λ√r / n).
    precision : {"mixed", "double"}
        ``"mixed"``: the adjoint and the PSD step in float32, every certificate and
        returned point in float64; ``"double"``: all float64.
    eig : {"track", "exact"}
        PSD step by :class:`PositivePartTracker` (LAPACK at every certificate and when the
        tracked pairs miss their tolerance) or by LAPACK at every iteration.
    eig_tol, eig_step_factor : float
        Ritz-residual tolerance of the tracked step: min(``eig_tol`` · ‖θ₊‖,
        ``eig_step_factor`` · ‖Y_k − Y_{k−1}‖_F), so the projection error vanishes with
        the primal step (a fixed tolerance stalls tight solves at its error floor).
    eig_guard, eig_min_size, restart_every : int
        Guard vectors of the tracked block; the smallest r at which the tracker is used;
        iterations between restart tests.
    blas_threads : "config", int or None
        BLAS/LAPACK threads during the solve (:func:`cvxkml._config.blas_limit`; default:
        the ``blas_threads`` option, 1); ``None`` leaves the process setting alone.
    scaling : float in [0, 1]
        Diagonal preconditioning X = D Y D, d_k = (‖F_k‖ / max_l ‖F_l‖)^(−scaling)
        over the centred columns of F (‖F_k − mean‖ = √μ_k), capped at λ d_k² <= ‖A‖;
        the cone and the problem are unchanged, the iteration sees F D and λ D².
    callback : callable or None
        Called at every certificate that does not converge with a dict (``iteration``,
        ``objective``, ``lower_bound``, ``gap``, ``h``, ``n_restarts``); a truthy return
        stops the solve (status ``"stopped by callback"``).
    balance : bool
        Also bound at :func:`balance_dual` (s) at each certificate; keep the better bound.
    polish : float
        Certified gap below which certificates also try :func:`polish_dual` (dual weights
        made complementary to the primal iterate; at spaced checks, ``polish_due``); 0: off.
    working_set : None, bool or dict
        Iterate on a working set of pairs (:class:`_WorkingSet`) once the certified gap is
        below ``start``; the certificate still covers all pairs.  A dict sets ``start``,
        ``margin``, ``row_margin``, ``shrink_every`` (defaults in ``_WS_DEFAULTS``);
        ``None`` (default): on from n = 800 (plain PDHG only).

    Returns
    -------
    FastResult
        ``matrix`` the best primal point X (r × r, whitened coordinates), ``lam`` the
        certified dual weights θs (n × n, flattened), ``sweeps`` the iterations,
        ``dual_change`` the certified relative gap, ``code`` ``OK`` (certified to
        ``tol``) or ``NOT_CONVERGED``, ``time`` wall seconds; ``extra``: ``factor``
        (r × k, X = factor factorᵀ), ``h``, ``theta``, ``objective``, ``lower_bound``,
        ``converged``, ``status`` (text), ``n_restarts``, ``warm`` (a ``warm_start``),
        ``history`` rows (iteration, objective, bound, gap, wall s, CPU s),
        ``eig_exact`` / ``eig_tracked`` (PSD steps by LAPACK / by the tracker).
    """
    if blas_threads is not None:
        args = dict(locals(), blas_threads=None)  # every parameter, as passed
        with blas_limit(blas_threads):
            return kcr_pdhg(**args)
    t0, c0 = time.perf_counter(), time.process_time()
    su = _setup(F, tau, c, lam, h_min, scaling, precision, balance)
    if check_every is None:  # a certificate costs about two iterations at n = 250
        check_every = 10 if su.n <= 250 else round(su.n / 25)
    check_every = max(1, int(check_every))
    opts = dict(check_every=check_every, restart_every=max(1, int(restart_every)), eig_step_factor=eig_step_factor)
    opts.update(check=(tol, verbose, callback, time_limit), ws=_working_set_options(working_set, halpern, su.n))
    tracker = _make_tracker(su, eig, eig_guard, eig_tol, eig_min_size)
    st = _initial_state(su, warm_start, omega0)
    if not tracker.enabled:  # rank hint of the LAPACK step (the tracker starts at 0)
        tracker.k = su.r if warm_start is None else int(np.linalg.matrix_rank(st.X)) if st.X.any() else 0
    cert, rs = _Certificate(su, st.h), _Restarts(st, restart_params)
    cert.polish_start = float(polish)
    k_total, history, status, step, extra = 0, [], None, None, {}
    while k_total < max_iter:
        while True:  # one PDHG step T(z), repeated until the adaptive step size passes
            exact = st.G_exp is not None or (halpern and (k_total + 1) % check_every == 0)
            k_total += 1
            step, accept = _pdhg_step(su, st, tracker, exact, k_total)
            if accept or k_total >= max_iter:
                break
        check = k_total % check_every == 0 or k_total >= max_iter
        Gn = cert.adjoint(step.sn) if check else None  # float64 certificate
        if check:
            status = _checkpoint(cert, st, step, Gn, rs, k_total, history, t0, c0, *opts["check"])
            if status is not None:
                break
            if opts["ws"] is not None and cert.gap <= opts["ws"]["start"]:  # on to the working set
                k_total, status, last, extra["working_set"] = _ws_phase(
                    su, st, step, cert, tracker, rs, k_total, max_iter, opts, history, t0, c0
                )
                step = last or step
                break
        restart = rs.due(np.sqrt(step.num), k_total, k_total % opts["restart_every"] == 0)
        _advance(su, st, step, rs, restart, halpern, Gn)
        tracker.abs_tol = eig_step_factor * np.sqrt(step.dx2)  # PSD-step error vs the last step
    extra.update(status=status or "max_iter reached", history=history, n_restarts=rs.count)
    return _result(cert, st, step, tracker, k_total, status == "converged", extra, t0)


def _make_tracker(su: _Setup, eig, guard, tol, min_size) -> PositivePartTracker:
    """The PSD-step object; below ``min_size`` (or with eig="exact") it is LAPACK only."""
    if eig not in ("track", "exact"):
        raise ValueError(f"eig must be 'track' or 'exact'; got {eig!r}.")
    return PositivePartTracker(su.r, su.fdt, guard=guard, tol=tol, min_size=min_size if eig == "track" else su.r + 1)


_WS_DEFAULTS = dict(start=1.0, margin=0.1, row_margin=1.0, shrink_every=4)
_WS_AUTO_MIN_N = 800  # working_set=None: on from this n (measured: slower at n = 250, 500; faster at 1 000)


def _working_set_options(working_set, halpern, n) -> dict | None:
    """The working-set options (``True``: the defaults; a dict overrides them; ``None``:
    the defaults from n = ``_WS_AUTO_MIN_N`` with plain PDHG, else off)."""
    if working_set is None:
        working_set = n >= _WS_AUTO_MIN_N and not halpern
    if working_set is False:
        return None
    if halpern:
        raise ValueError("working_set needs plain PDHG (halpern=False).")
    opts = dict(_WS_DEFAULTS)
    if isinstance(working_set, dict):
        unknown = set(working_set) - set(opts)
        if unknown:
            raise ValueError(f"unknown working_set options {sorted(unknown)}; known: {sorted(opts)}.")
        opts.update(working_set)
    elif working_set is not True:
        raise ValueError(f"working_set must be a bool or a dict; got {working_set!r}.")
    return opts


def _checkpoint(cert, st, step, Gn, rs, k_total, history, t0, c0, tol, verbose, callback, time_limit):
    """Certify the step's primal and dual points, log them, and decide whether to stop:
    returns the final status ("converged", "stopped by callback", "time_limit reached") or
    None to go on."""
    gap = cert.check(step.P, step.Bn, step.hn, step.sn, Gn)
    if gap > tol and cert.polish_due(gap):
        gap = cert.polish(tol)
    history.append((k_total, cert.f, cert.g, gap, time.perf_counter() - t0, time.process_time() - c0))
    if verbose:
        print(
            f"it {k_total:6d}  f {cert.f:.8g}  lb {cert.g:.8g}  gap {gap:.2e}  h {step.hn:.4g}  "
            f"rank {step.w.size}  omega {st.omega:.3g}  eta·‖A‖ {st.eta * cert.su.norm_A:.3g}  "
            f"restarts {rs.count}"
        )
    if gap <= tol:
        return "converged"
    info = dict(iteration=k_total, objective=cert.f, lower_bound=cert.g, gap=gap, h=step.hn, n_restarts=rs.count)
    if callback is not None and callback(info):
        return "stopped by callback"
    if time_limit is not None and time.perf_counter() - t0 > time_limit:
        return "time_limit reached"
    return None


def _result(cert, st, step, tracker, k_total, converged, extra, t0) -> FastResult:
    """The :class:`FastResult` of a KCR solve (see :func:`kcr_pdhg`)."""
    Xb = cert.P @ cert.P.T
    sn = step.sn if step is not None else st.s
    return FastResult(
        matrix=Xb,
        lam=(cert.s * cert.theta).ravel(),
        xi=np.zeros(0),
        sweeps=int(k_total),
        dual_change=float(cert.gap),
        code=OK if converged else NOT_CONVERGED,
        bad_index=-1,
        time=time.perf_counter() - t0,
        extra=dict(
            solver="pdhg-kcr",
            factor=cert.P,
            h=float(cert.h),
            theta=float(cert.theta),
            objective=float(cert.f),
            lower_bound=float(cert.g),
            converged=bool(converged),
            warm=dict(X=Xb, h=cert.h, s=sn, omega=st.omega, eta=st.eta),
            eig_exact=tracker.n_exact,
            eig_tracked=tracker.n_tracked,
            **extra,
        ),
    )


# --------------------------------------------------------------------------- the paper's method
@blas_limit()
def alternating_projections(X, n_iter: int = 1000) -> np.ndarray:
    """The paper's projection onto N (§4.1): B_m = A_m − (1ᵀA_m1/n²)11ᵀ,
    A_{m+1} = P_PSD(B_m), starting from A_0 = P_PSD(X).  Converges to *a* point of N —
    in general not the nearest one — and only sublinearly (N has no interior)."""
    A = np.asarray(X, dtype=np.float64)
    A = 0.5 * (A + A.T)
    n = A.shape[0]
    A = _psd(A)
    for _ in range(int(n_iter)):
        Bm = A - A.sum() / n**2
        A = _psd(Bm)
    return A


@blas_limit()
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
        y = y - y.sum() / n**2
        p = x + p - y
        x_new = _psd(y + q)
        q = y + q - x_new
        x = x_new
    return x


def _psd(M):
    w, U = np.linalg.eigh(0.5 * (M + M.T))
    keep = w > 0
    return (U[:, keep] * w[keep]) @ U[:, keep].T


@blas_limit()
def kcr_subgradient(
    K,
    tau,
    c,
    lam,
    h_min=1e-6,
    step=None,
    max_iter=1000,
    projection="exact",
    n_proj=20,
    time_limit=None,
    h0=1.0,
    cpu_limit=None,
) -> dict:
    """The paper's Algorithm 1 on Σ (n × n): subgradient step, then projection onto N.

    Σ_{t+1} = P_N(Σ_t − α_t(Σ_{(i,j)∈N_t} tau_ij M_ij + λK)),
    h̃_{t+1} = max(h_min, h̃_t + α_t Σ_{(i,j)∈N_t} tau_ij), with N_t the (i, j) whose
    inner hinge is active in a row whose outer hinge is active (steps 3–5) and
    M_ij = (k_i − k_j)(k_i − k_j)ᵀ.  The paper leaves {α_t} open; here
    α_t = step / √(t + 1) (``step`` default: 1 / (‖K‖² · n)).  ``projection="exact"``
    uses :func:`cvxkml.formulas.kcr.project_onto_N`; ``"alternating"`` runs ``n_proj``
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
        rows = (c + np.maximum(U, 0.0).sum(axis=1)) > 0.0  # outer hinge active
        act = (U > 0.0) & rows[:, None]  # N_t = B_t \ A_t
        Wt = np.where(act, tau, 0.0)
        Ws = Wt + Wt.T
        Lap = np.diag(Ws.sum(axis=1)) - Ws
        grad = K @ Lap @ K + lam * K  # Σ_{N_t} tau M_ij + λK
        alpha = step / np.sqrt(t + 1.0)
        Y = Sigma - alpha * grad
        Sigma = project_onto_N(Y) if projection == "exact" else alternating_projections(Y, n_proj)
        h = max(h_min, h + alpha * float(Wt.sum()))
    best.update(n_iter=len(history), time=time.perf_counter() - t0, history=history)
    return best
