"""Fast LMNN solver: a smoothed quasi-Newton phase, then primal–dual projected
(sub)gradient with Weinberger & Saul's active-set bookkeeping, both stopped on the same
certified duality gap (Wang et al. 2011, eq. 18; Weinberger & Saul 2009, §5–6).

Smoothed phase (default first; :func:`_smooth_stages`).  The hinge [z]_+ of eq. 18 is
replaced by h_μ(z) = 0, (z + μ)²/(4μ), z on z <= −μ, |z| < μ, z >= μ (so
[z]_+ <= h_μ(z) <= [z]_+ + μ/4), and F_μ(L Lᵀ) is minimized over a factor L (r × r) by
L-BFGS for the widths μ = 1, 0.3, …, 1e-3, each from the previous L: no eigendecomposition
and no step size.  At a minimizer of the convex F_μ over X̂ ⪰ 0 the multipliers
α_t = γ h_μ'(z_t) ∈ [0, γ] satisfy G(α) = ∇F_μ(X̂) ⪰ 0, i.e. they are dual feasible for
eq. 18, and F(X̂) − Σ α_t = O(μ) per triplet near its kink.  After every width the
certificate of the *unsmoothed* problem is evaluated (F at X̂, the Lagrange bound
g(α) of :func:`cvxkml.formulas.lmnn.lmnn_dual_value`), and from μ <= 0.01 the
restricted-dual barrier recovery below is tried at the best X̂; the solve stops there
once certified, else the PDHG continues from the best X̂ and the last α.  The
factorization makes the phase non-convex in L, but nothing in it is trusted beyond
the certificate.

Coordinates.  Both phases run in the features U W of
:func:`cvxkml.formulas.lmnn.pull_whitening` (W = I unless the target pull G(0) has
eigenvalues between 1e-12 and 1e-4 of its largest: a nearly singular kernel), an exact
change of coordinates X̂ = W X̃ Wᵀ that caps the conditioning of the pull term; the result is
mapped back.  On such kernels the optimal X̂ is huge along G(0)'s near-null directions and
the stalled fits of the Wang et al. reproduction were a misaligned top eigenvector there.

PDHG phase.

The problem is solved in the orthonormal coordinates of the features (see
:func:`cvxkml.formulas.lmnn.orthonormal_factor`): Z = U S Vᵀ, d(i, j) = u_pᵀ X̂ u_p with
u_p = U[i] − U[j], X̂ ⪰ 0 (r × r).  Written as a saddle problem over the hinge
multipliers α_t ∈ [0, γ],

    min_{X̂ ⪰ 0} max_{α ∈ [0, γ]^T}  Σ_t α_t + Σ_p w_p(α) u_pᵀ X̂ u_p ,

one iteration is (Chambolle & Pock 2011)

    X̂ ← Π_PSD(X̂ − τ G(α)),          G(α) = Σ_p w_p(α) u_p u_pᵀ = Uᵀ Ω(α) U,
    α_t ← clip(α_t + σ_t (1 + d̄(i, j) − d̄(i, l)), 0, γ),   d̄ = 2 d(X̂_new) − d(X̂_old).

The X̂-step is Weinberger & Saul's projected gradient step, whose sub-gradient weights
α_t ∈ {0, γ} (violated or not) are replaced by multipliers that converge, so the
iterates reach the optimum instead of oscillating around it.  Π_PSD clips the negative
eigenvalues of an eigendecomposition.  Numba kernels accumulate the pair weights from the
working triplets and Ω(α)U over the pairs (the gradient accumulation), and the pair
distances from the factor.

Active set (Weinberger & Saul §6): between full passes only the *working* triplets —
active (α_t > 0) or near-active (1 + d(i, j) − d(i, l) > −``buffer``) — are updated; a
triplet outside it keeps α_t = 0, exactly what its update would give while its margin
holds.  Every ``check_every`` iterations all pair distances are recomputed, the working
set is rebuilt, and the true objective F (:func:`cvxkml.formulas.lmnn.lmnn_objective`)
and the Lagrange dual bound g (:func:`cvxkml.formulas.lmnn.lmnn_dual_value`) are
evaluated on *all* triplets.

Stopping rule: F(best X̂) − max g <= tol · max(1, |F|) — a certified relative
optimality gap (weak duality), so ``converged`` is never claimed without proof.  The
stall rule (``stall_iter``) ends a PDHG phase whose certified gap has not shrunk by
0.1 % in that many iterations (``status="stalled"``, not converged): on kernel LMNN with
nearly singular kernels F and g mostly stopped moving when the smoothed phase ended.  At
the same checks the method restarts from the better of the current and the averaged
iterate, and re-balances the primal weight ω (τ = η/ω, σ = ηω·s_t) from the distance
travelled (Applegate et al. 2021, PDLP).  σ_t is diagonally preconditioned by
s_t = 1/‖u_ij u_ijᵀ − u_il u_ilᵀ‖_F.

Dual recovery (the certificate).  The primal iterate settles long before the PDHG
multipliers do: on the Wine instance of the tests the best X̂ after 20 000 iterations is
within 5.7e-7 (relative) of the optimum, while the best PDHG / least-squares bound is
still 2.7e-5 below it, because X̂* has rank 5 of 13 and G(α) must be PSD on its null
space.  Once F stops moving, :func:`_barrier_dual` solves the dual restricted to the
kink triplets of the best X̂ by a small interior-point method (strictly feasible, so
certified); :func:`_polish_dual` (least squares on G(α)X̂ = 0) remains as a fallback,
run at a check only when the barrier recovery could not run there.  Before both, the best
multipliers so far are made feasible at least cost (:func:`_repair_dual`: lower the α_t that
raise λ_min(G(α)) most per unit of bound, instead of scaling all of α).

Primal recovery (PDHG phase).  When a recovery leaves the gap open, eq. 18 is solved on the
face its multipliers point to (:func:`_face_primal`: range of the best X̂ plus the near-null
eigenvectors of G(α), a few dimensions), where the r-dimensional iteration crawled: on
high-degree polynomial kernels the optimum has rank 2–3 with hundreds of triplets on their
margin.  A face point is a feasible point, evaluated and certified on the whole problem.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numba as nb
import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.optimize import lsq_linear

from .._config import WorkBudget, blas_limit
from ..formulas.lmnn import (
    PULL_FLOOR,
    STALL_ITER,
    STALLED,
    LMNNTriplets,
    from_pull_coordinates,
    laplacian_quadratic,
    lmnn_dual_value,
    lmnn_objective,
    pair_weights,
    psd_factor,
    pull_whitening,
    reaches_null,
    rows_reach,
    sorted_unique,
    to_pull_coordinates,
)
from ._lmnn_exact import evaluable as _evaluable
from ._lmnn_exact import exact_finish as _exact_finish
from ._lmnn_exact import null_scale as _null_scale
from .result import OK, FastResult, Status

__all__ = ["STALL_ITER", "impostor_scan", "lmnn_active_set", "lmnn_pdhg", "lmnn_result", "pair_distances"]


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
#: the widths above this (1 and 0.3) are solved inexactly; with every width above 0.01
#: inexact, two Ionosphere kernel-LMNN inner-CV fits (polynomial degree 8 and 9) stalled
#: uncertified where they had certified (reference/lmnn-speed.md)
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


def pair_distances(F, M, pi, pj, psd: bool = False) -> np.ndarray:
    """(f_i − f_j)ᵀ M (f_i − f_j) for the index pairs (pi, pj) of the rows of F (n × r):
    the value of :func:`cvxkml.formulas.lmnn.pair_quadratic` by a Numba loop over the
    pairs (no P × r temporaries: for kernel LMNN, r = n).  ``psd=True``: M is PSD (its
    negative eigenvalues are round-off and count as 0) and the distances are ‖Lᵀ(f_i − f_j)‖²
    through its factor, the value of :func:`cvxkml.formulas.lmnn.psd_pair_distances`
    (accurate when ‖M‖ is huge)."""
    F = np.ascontiguousarray(F, dtype=np.float64)
    if psd:
        F = np.ascontiguousarray(F @ psd_factor(M))
        Y = F
    else:
        Y = np.ascontiguousarray(F @ np.asarray(M, dtype=np.float64))
    pi = np.ascontiguousarray(pi, dtype=np.int64)
    pj = np.ascontiguousarray(pj, dtype=np.int64)
    out = np.empty(pi.size)
    _pair_quad(F, Y, pi, pj, np.arange(pi.size, dtype=np.int64), out)
    return out


# --------------------------------------------------------------------------- driver
class _Ops:
    """Full-pass operators on all pairs / triplets (power iteration, checks)."""

    def __init__(self, U, trip: LMNNTriplets):
        self.U = U
        self.trip = trip
        self.all_pairs = np.arange(trip.n_pairs, dtype=np.int64)
        self.all_trip = np.arange(trip.n_triplets, dtype=np.int64)
        self.w = np.empty(trip.n_pairs)
        self.OU = np.empty_like(U)

    def distances(self, X) -> np.ndarray:
        """All pair distances of the PSD X̂ through its factor (``pair_distances(psd=True)``:
        the objective and certificate stay exact when ‖X̂‖ is huge)."""
        return self.distances_factor(psd_factor(X))

    def distances_factor(self, L) -> np.ndarray:
        """All pair distances of X̂ = L Lᵀ: ‖Lᵀ u_p‖²."""
        W = np.ascontiguousarray(self.U @ L)
        out = np.empty(self.trip.n_pairs)
        _pair_quad(W, W, self.trip.pi, self.trip.pj, self.all_pairs, out)
        return out

    def K(self, X) -> np.ndarray:
        """The linear map X ↦ (d_ij − d_il)_t for any symmetric X (power iteration)."""
        q = np.empty(self.trip.n_pairs)
        _pair_quad(self.U, self.U @ X, self.trip.pi, self.trip.pj, self.all_pairs, q)
        return q[self.trip.tt] - q[self.trip.ti]

    def Kt(self, yv) -> np.ndarray:
        P = self.trip.n_pairs
        w = np.bincount(self.trip.tt, yv, minlength=P) - np.bincount(self.trip.ti, yv, minlength=P)
        _omega_times(self.U, self.trip.pi, self.trip.pj, w, self.all_pairs, self.OU)
        G = self.U.T @ self.OU
        return 0.5 * (G + G.T)


def _preconditioner(U, trip: LMNNTriplets) -> np.ndarray:
    """The PDHG's diagonal dual preconditioner s_t = 1 / ‖a aᵀ − b bᵀ‖_F (a = u_ij, b = u_il)."""
    Dv = U[trip.pi] - U[trip.pj]
    nv = np.einsum("ij,ij->i", Dv, Dv)
    ab = np.einsum("ij,ij->i", Dv[trip.tt], Dv[trip.ti])
    fro = np.sqrt(np.maximum(nv[trip.tt] ** 2 + nv[trip.ti] ** 2 - 2.0 * ab**2, 0.0))
    fro = np.maximum(fro, 1e-12 * max(float(fro.max()) if trip.n_triplets else 1.0, 1e-300))
    return 1.0 / fro


def _operator_norm(ops: _Ops, s, n_iter: int = 40, seed: int = 0) -> float:
    """‖diag(√s) K‖ by power iteration on Kᵀ diag(s) K (K: X̂ ↦ (⟨D̂_t, X̂⟩)_t)."""
    r = ops.U.shape[1]
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((r, r))
    X = X + X.T
    X /= np.linalg.norm(X)
    lam = 0.0
    for _ in range(n_iter):
        Y = ops.Kt(s * ops.K(X))
        nrm = float(np.linalg.norm(Y))
        if nrm == 0.0:
            return 0.0
        lam = nrm
        X = Y / nrm
    return float(np.sqrt(lam))


def _working_set(p, trip: LMNNTriplets, alpha, buffer):
    arg = 1.0 + p[trip.tt] - p[trip.ti]
    work = np.flatnonzero((alpha > 0.0) | (arg > -buffer)).astype(np.int64)
    pairs = sorted_unique(np.flatnonzero(trip.target_weight > 0), trip.ti[work])
    return work, pairs


_THETA = 0.2  # smoothing of the primal weight update
_POLISH_DELTAS = (1e-1, 1e-2, 1e-3, 1e-4)
_POLISH_SETTLED = 1e-3  # dual recovery only once F changes by less than this per check
_POLISH_DENSE_MAX = 1_000_000  # entries of the dense least-squares matrix
_POLISH_MAX_KINKS = 2_000  # beyond, a recovery took minutes (reference/lmnn-speed.md); now O(K³) once


def _polish_dual(U, trip: LMNNTriplets, gamma, X, p, delta):
    """Multipliers recovered from a primal point (complementary slackness).

    Triplets with hinge argument > δ get α = γ, those below −δ get 0; the "kink"
    triplets in between get the α ∈ [0, γ] that best satisfy G(α)X = 0 (bounded least
    squares on G(α)V_X, V_X the range of X).  Returns α (always a valid input to the
    dual bound, which certifies it)."""
    arg = 1.0 + p[trip.tt] - p[trip.ti]
    alpha = np.where(arg > delta, gamma, 0.0)
    kinks = np.flatnonzero(np.abs(arg) <= delta)
    if kinks.size == 0 or kinks.size > _POLISH_MAX_KINKS:
        return alpha
    lam, V = np.linalg.eigh(0.5 * (X + X.T))
    keep = lam > 1e-7 * max(float(lam[-1]), 1e-300)
    if not np.any(keep):
        return alpha
    VX = V[:, keep]
    rhs = -(laplacian_quadratic(U, trip, pair_weights(trip, alpha, gamma)) @ VX).ravel()
    Du = U[trip.pi] - U[trip.pj]
    a = Du[trip.tt[kinks]]
    b = Du[trip.ti[kinks]]
    aV = a @ VX
    bV = b @ VX
    r, q = VX.shape
    if kinks.size * r * q <= _POLISH_DENSE_MAX:
        M = (a[:, :, None] * aV[:, None, :] - b[:, :, None] * bV[:, None, :]).reshape(kinks.size, -1).T
        sol = lsq_linear(M, rhs, bounds=(0.0, gamma), lsmr_tol="auto", max_iter=200)
    else:
        J, y = _kink_gram_system(a, b, aV, bV, rhs.reshape(r, q))
        sol = lsq_linear(J, y, bounds=(0.0, gamma), max_iter=200)
    alpha[kinks] = np.clip(sol.x, 0.0, gamma)
    return alpha


def _kink_gram_system(a, b, aV, bV, R):
    """An at most (K + 1) × K least-squares system equivalent to the r·q × K one of
    :func:`_polish_dual`: ‖J x − y‖ = ‖M x − vec R‖ for every x, where column k of M is
    vec(a_k aV_kᵀ − b_k bV_kᵀ) (``a``, ``b``: K × r; ``aV``, ``bV``: K × q; R: r × q).

    From the Gram matrix MᵀM = (a aᵀ)∘(aV aVᵀ) − (a bᵀ)∘(aV bVᵀ) − (b aᵀ)∘(bV aVᵀ) +
    (b bᵀ)∘(bV bVᵀ) (∘ elementwise) = Q Λ Qᵀ and Mᵀ vec R = c:  J = Λ^½ Qᵀ, y = Λ^-½ Qᵀ c
    on the positive eigenvalues (c lies in range(MᵀM)), and one more row (0, …, 0 |
    ‖(I − Π_M) vec R‖) keeps the constant part of the residual, so that the solver's
    relative tests see the same cost.  Forming it costs O(K²(r + q) + K·r·q + K³) once,
    and it is small enough (K <= ``_POLISH_MAX_KINKS``) for the exact (factorizing)
    least-squares steps that the explicit system could afford only when small: the matrix-free
    LSMR steps on the explicit system cost O(K·r·q) per product and took about a minute a
    recovery on a 500-point kernel (r ≈ q ≈ 490, 500–900 kinks)."""
    H = (a @ a.T) * (aV @ aV.T) + (b @ b.T) * (bV @ bV.T)
    C = (a @ b.T) * (aV @ bV.T)
    H -= C + C.T
    c = np.einsum("kq,kq->k", a @ R, aV) - np.einsum("kq,kq->k", b @ R, bV)
    lam, Q = np.linalg.eigh(H)  # symmetric as built (Gram products, C + Cᵀ)
    keep = lam > lam[-1] * H.shape[0] * np.finfo(float).eps if lam[-1] > 0 else np.zeros(lam.size, bool)
    root = np.sqrt(lam[keep])
    Qk = Q[:, keep]
    J = np.vstack([root[:, None] * Qk.T, np.zeros((1, H.shape[0]))])
    yk = (Qk.T @ c) / root
    rest = max(float(np.sum(R * R)) - float(yk @ yk), 0.0)
    return J, np.append(yk, np.sqrt(rest))


_BARRIER_MAX_KINKS = 500  # variables of the restricted dual (dense Newton system, O(K²r) a step)
_BARRIER_DELTAS = (1e-3, 1e-2, 1e-1)
_EPS = float(np.finfo(float).eps)


#: eigenvalues of G(0) at most this times the largest span its null space in the barrier
_BARRIER_NULL_RTOL = 1e-10


def _pull_range(T):
    """Orthonormal bases (V_R, V_N) of range(T) (eigenvalues above ``_BARRIER_NULL_RTOL``
    times the largest) and of its complement, or None when T is positive definite at that
    threshold."""
    lam, V = np.linalg.eigh(0.5 * (T + T.T))
    keep = lam > _BARRIER_NULL_RTOL * max(float(lam[-1]) if lam.size else 0.0, np.finfo(float).tiny)
    if np.all(keep):
        return None
    return np.ascontiguousarray(V[:, keep]), np.ascontiguousarray(V[:, ~keep])


def _in_range(D, VN):
    """Mask of the rows of D (pair differences) with no component on span(V_N) beyond
    round-off: the complement of :func:`cvxkml.formulas.lmnn.rows_reach`, the test of
    :func:`_seen_null_space`."""
    return ~rows_reach(D, VN)


def _newton_step(M, grad):
    """−M⁻¹ grad for the barrier's Hessian M (positive definite in exact arithmetic): by
    Cholesky, and when round-off has made M indefinite, by Cholesky of M + τ·diag(M) with the
    smallest τ in 1e-12, 1e-10, … that is positive definite (a descent direction either way;
    the caller's line search keeps the iterate strictly inside the barrier's domain)."""
    d = np.sqrt(np.maximum(np.diag(M), np.finfo(float).tiny))
    Ms = M / d[:, None] / d[None, :]  # unit diagonal: the shift is relative to each variable's scale
    gs = grad / d
    for tau in (0.0, 1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0):
        try:
            c = cho_factor(Ms + tau * np.eye(M.shape[0]) if tau else Ms, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            continue
        return -cho_solve(c, gs, check_finite=False) / d
    return -gs / d  # the scaled gradient step


def _barrier_dual(U, trip: LMNNTriplets, gamma, p, delta, gap_target, max_newton: int = 300, primal: bool = False):
    """Multipliers from a primal point by an interior-point method on a *restricted* dual.

    The Lagrange dual of eq. 18 is  max Σ_t α_t  s.t.  α ∈ [0, γ]^T,  G(α) ⪰ 0.  Near an
    optimal X̂ the triplets split into clearly violated ones (hinge argument > δ; α_t = γ
    at the optimum), clearly satisfied ones (< −δ; α_t = 0) and the "kinks" in between.
    Restricting α to  α_t = sγ (violated), α_t free in [0, γ] (kinks), 0 (others), with
    one scalar s ∈ [0, 1], leaves a small SDP in (s, α_K):

        max  sγ|V| + Σ_K α_k   s.t.  T + sH + Σ_K α_k (a_k a_kᵀ − b_k b_kᵀ) ⪰ 0,

    T = G(0) (the target pull), H = γ Σ_V (a aᵀ − b bᵀ).  It is solved by a log-barrier
    path-following Newton method (dense Hessian tr(G⁻¹E_i G⁻¹E_j), rank-two E_k, so
    O(K²r + Kr² + r³) per step) from the strictly feasible point s = α = 10⁻³γ, until the
    barrier gap ν/t <= ``gap_target``.  Every iterate is strictly feasible, so the α
    returned is a valid dual point whatever the split; when the split is right its value
    is the optimum.  Why it is needed: at the optimum X̂ is often rank deficient (rank 5
    of 13 on Wine), G(α) must then be PSD on X̂'s null space, which neither the PDHG's
    multipliers nor the least-squares recovery of :func:`_polish_dual` enforce; scaling
    their α back to feasibility costs 1e-5–1e-4 of the bound.  When T is singular (an
    exactly singular target pull: the constant direction of a kernel with an offset, or a
    direction no target pair sees) the SDP is solved on range(T) (:func:`_pull_range`), with
    the kinks whose impostor pair reaches T's null space held at α = 0; the caller certifies
    the α returned on the whole space (:func:`cvxkml.formulas.lmnn.lmnn_dual_value`), so
    this restriction can cost bound but never validity.  The start is the largest of
    s = α_k/γ = 10⁻³, 10⁻⁴, … that is strictly feasible (a nearly singular T admits only
    tiny multipliers on the kinks that reach its small eigenvalues).  Returns α, or None when
    no start is strictly feasible or the restriction has too many kinks.

    With ``primal=True`` returns (α, Z) (or None): Z = G(α)⁻¹ / t at the last centre, the
    primal point of the log-barrier's central path (the matrix paired with the LMI; on
    range(G(0)) when the pull is singular, 0 on its null space).  Z ⪰ 0, so it is a feasible
    point of eq. 18 whose F the caller evaluates on the whole problem; where the split is
    right it is within about ν/t of the optimum: on a WDBC inner-CV fit (linear-offset
    kernel, r = 31, 166 kinks) F(Z) = 975.06209 against 975.07175 at the PDHG's best point
    after 7 931 iterations, the bound 975.06172 (relative gap 3.8e-7 instead of 1.03e-5).
    """
    arg = 1.0 + p[trip.tt] - p[trip.ti]
    Vs = np.flatnonzero(arg > delta)
    Ks = np.flatnonzero(np.abs(arg) <= delta)
    if Ks.size > _BARRIER_MAX_KINKS:
        return None
    T = laplacian_quadratic(U, trip, pair_weights(trip, np.zeros(trip.n_triplets), gamma))
    Du = U[trip.pi] - U[trip.pj]
    split = _pull_range(T)
    VR = None if split is None else split[0]
    if split is not None:  # a singular target pull: the restricted dual on range(G(0)), where
        # every triplet whose impostor pair reaches the null space (violated or kink) has α = 0
        Vs = Vs[_in_range(Du[trip.ti[Vs]], split[1])]
        Ks = Ks[_in_range(Du[trip.ti[Ks]], split[1])]
    K = Ks.size
    av = np.zeros(trip.n_triplets)
    av[Vs] = gamma
    H = laplacian_quadratic(U, trip, pair_weights(trip, av, gamma)) - T
    A = Du[trip.tt[Ks]]
    B = Du[trip.ti[Ks]]
    if VR is not None:
        T, H, A, B = VR.T @ T @ VR, VR.T @ H @ VR, A @ VR, B @ VR
    # E_k = a aᵀ − b bᵀ = ½(u vᵀ + v uᵀ), u = a + b, v = a − b: the Newton matrix from the
    # products of u and v (no difference of squares of ‖a‖², which lost the small entries
    # to cancellation and made the matrix indefinite near the optimum)
    Uk, Vk = A + B, A - B
    r = T.shape[0]
    cV = gamma * Vs.size

    def barrier(t, s, al):
        if not (0.0 < s < 1.0) or np.any(al <= 0.0) or np.any(al >= gamma):
            return np.inf, None
        G = T + s * H + 0.5 * ((Uk.T * al) @ Vk + (Vk.T * al) @ Uk)
        try:
            L = np.linalg.cholesky(0.5 * (G + G.T))
        except np.linalg.LinAlgError:
            return np.inf, None
        logdet = 2.0 * float(np.sum(np.log(np.diag(L))))
        f = cV * s + float(al.sum())
        return (
            -t * f - logdet - float(np.sum(np.log(al)) + np.sum(np.log(gamma - al))) - np.log(s) - np.log(1.0 - s)
        ), L

    for c in 10.0 ** -np.arange(3.0, 15.0):  # strictly feasible start (G(0) may be nearly singular)
        s, al = c, np.full(K, c * gamma)
        if barrier(1.0, s, al)[1] is not None:
            break
    else:
        return None
    nu = r + 2 * K + 2  # barrier parameter: the gap is ν / t at the centre
    t = nu / max(1.0, cV + gamma * K)
    newton = 0
    while True:
        for _ in range(100):  # centring
            val, L = barrier(t, s, al)
            if L is None:  # cannot happen after an accepted step; be safe
                return None
            Ut = solve_triangular(L, Uk.T, lower=True).T  # rows L⁻¹u_k
            Vt = solve_triangular(L, Vk.T, lower=True).T
            Ht = solve_triangular(L, solve_triangular(L, H, lower=True).T, lower=True)
            Ht = 0.5 * (Ht + Ht.T)
            grad = np.empty(K + 1)
            grad[0] = -t * cV - np.trace(Ht) - 1.0 / s + 1.0 / (1.0 - s)
            grad[1:] = -t - np.einsum("ij,ij->i", Ut, Vt) - 1.0 / al + 1.0 / (gamma - al)
            UV = Ut @ Vt.T
            M = np.empty((K + 1, K + 1))
            M[1:, 1:] = 0.5 * ((Ut @ Ut.T) * (Vt @ Vt.T) + UV * UV.T)
            M[1:, 1:] += np.diag(1.0 / al**2 + 1.0 / (gamma - al) ** 2)
            hk = np.einsum("ij,jk,ik->i", Ut, Ht, Vt)
            M[0, 1:] = hk
            M[1:, 0] = hk
            M[0, 0] = float(np.sum(Ht * Ht)) + 1.0 / s**2 + 1.0 / (1.0 - s) ** 2
            dx = _newton_step(M, grad)
            dec = float(-grad @ dx)
            newton += 1
            if not dec > 2e-9 or newton > max_newton:
                break
            step = 1.0
            while step > 1e-12:  # backtracking (the barrier keeps the iterate inside)
                if barrier(t, s + step * dx[0], al + step * dx[1:])[0] <= val - 0.25 * step * dec:
                    break
                step *= 0.5
            else:
                break  # no decrease found (round-off): end this centring
            s += step * dx[0]
            al = al + step * dx[1:]
        if nu / t <= gap_target or newton > max_newton:
            break
        t *= 20.0
    alpha = np.zeros(trip.n_triplets)
    alpha[Vs] = s * gamma
    alpha[Ks] = al
    if not primal:
        return alpha
    L = barrier(t, s, al)[1]
    Li = solve_triangular(L, np.eye(r), lower=True)
    Z = (Li.T @ Li) / t
    if VR is not None:
        Z = VR @ Z @ VR.T
    return alpha, 0.5 * (Z + Z.T)


_REPAIR_ROUNDS = 30  # eigendecompositions of G(α) in one :func:`_repair_dual`
_REPAIR_RTOL = 1e-12  # λ_min(G(α)) above −this × ‖G(α)‖ counts as feasible (lmnn_dual_value allows 1e-11)


def _repair_dual(U, trip: LMNNTriplets, gamma, alpha, rounds: int = _REPAIR_ROUNDS):
    """α made dual feasible (G(α) ⪰ 0) by lowering the multipliers that cost least bound,
    or None when α is feasible already (or all-zero).

    G(α) is linear in α: lowering α_t by Δ raises vᵀG(α)v by Δ·c_t, c_t = (u_ilᵀv)² −
    (u_ijᵀv)².  While λ_min(G(α)) = vᵀG(α)v < 0, the triplets with the largest c_t are lowered
    (greedily, to 0 in that order) until vᵀG(α)v reaches 0 — the least Σα lost along v to
    first order.  :func:`cvxkml.formulas.lmnn.lmnn_dual_value` instead scales *all* of α by the
    s that makes G(sα) ⪰ 0, which on the Wang et al. inner-CV fits (polynomial kernel of degree
    9, a multiplier vector within 1.4e-8 of F with λ_min(G(α)) = −4.6e-7 λ_max) lost 1.1e-5 of
    the bound where this loses 1.7e-6.  Whatever it returns is certified by that bound."""
    alpha = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, gamma)
    if not np.any(alpha > 0.0):
        return None
    Du = U[trip.pi] - U[trip.pj]
    out = alpha.copy()
    changed = False
    for _ in range(rounds):
        G = laplacian_quadratic(U, trip, pair_weights(trip, out, gamma))
        lam, V = np.linalg.eigh(G)
        if lam[0] >= -_REPAIR_RTOL * max(float(np.max(np.abs(lam))), np.finfo(float).tiny):
            break  # feasible to round-off (an exactly singular G(0) has λ_min = −1e-28)
        v = V[:, 0]
        pv = Du @ v
        c = pv[trip.ti] ** 2 - pv[trip.tt] ** 2
        cand = np.flatnonzero((c > 0.0) & (out > 0.0))
        if cand.size == 0:
            break
        order = cand[np.argsort(-c[cand], kind="stable")]
        need = -float(lam[0]) + 1e-12 * max(float(lam[-1]), 0.0)
        gain = np.cumsum(c[order] * out[order])
        k = int(np.searchsorted(gain, need))
        out[order[:k]] = 0.0
        if k < order.size:
            out[order[k]] = max(0.0, out[order[k]] - (need - (float(gain[k - 1]) if k else 0.0)) / c[order[k]])
        changed = True
    return out if changed else None


def _recover_dual(U, trip: LMNNTriplets, gamma, ops, X, f, best_g, best_alpha, tol, least_squares: bool = True):
    """Dual recovery from the primal point X̂ (objective f): the restricted-dual barrier
    (:func:`_barrier_dual`) at the splits ``_BARRIER_DELTAS`` (smallest first: fewest
    kinks, cheapest), and only where it could not run the least-squares recovery
    (:func:`_polish_dual`).  Returns the better of (best_g, best_alpha) and the recovered
    bounds (every bound is certified by :func:`lmnn_dual_value`), and (F, X̂) of the best
    barrier primal point Z (:func:`_barrier_dual`, F evaluated on the whole problem), or
    (inf, None) when none was computed."""
    p_best = ops.distances(X)
    scale = max(1.0, abs(f))
    target = 0.1 * tol * scale
    if f - best_g > tol * scale:  # the best multipliers so far, made feasible at least cost
        a_rep = _repair_dual(U, trip, gamma, best_alpha)
        if a_rep is not None:
            g_rep = lmnn_dual_value(U, trip, a_rep, gamma, objective_bound=f)
            if g_rep > best_g:
                best_g, best_alpha = g_rep, a_rep
    barrier_ran = False
    f_primal, X_primal = np.inf, None
    pair_scale = None  # max ‖u_p‖² over the pairs, once a barrier primal point needs it

    def closed() -> bool:
        f_up = min(f, f_primal)
        return f_up - best_g <= tol * max(1.0, abs(f_up))

    for delta in _BARRIER_DELTAS:  # certified dual of the restricted problem
        if closed():
            break
        out = _barrier_dual(U, trip, gamma, p_best, delta, target, primal=True)
        if out is None:
            continue
        a_bar, Z = out
        barrier_ran = True
        if pair_scale is None:  # ‖u_p‖² = the pair distances of the identity, no P × r temporary
            pair_scale = float(np.max(ops.distances_factor(np.eye(U.shape[1])))) if trip.n_pairs else 0.0
        f_z = lmnn_objective(ops.distances(Z), trip, gamma)
        g_bar = lmnn_dual_value(U, trip, a_bar, gamma, objective_bound=min(f, f_primal))
        # Z only where its F is computed well: its round-off (about ε·tr Z·‖u_p‖² per pair
        # distance, over the pairs) far below tol, and F not below a bound (weak duality).  On
        # a nearly singular Gaussian-kernel draw (tr Z = 6.8e9) F(Z) came out 2.3e-8 below the
        # bound, which would have reported g > F
        if (
            f_z < min(f, f_primal)
            and f_z >= max(best_g, g_bar)
            and _EPS * float(np.trace(Z)) * pair_scale * trip.n_pairs <= 1e-3 * tol * max(1.0, abs(f_z))
        ):
            f_primal, X_primal = f_z, Z
        if g_bar > best_g:
            best_g, best_alpha = g_bar, a_bar
    # the least-squares recovery only as the fallback of a barrier that could not run
    # (too many kinks, or a singular target pull): where the barrier ran, its bound
    # was never beaten by this one in our measurements, which cost 20 of 30 s on
    # breast cancer (n = 380, 335 580 triplets) for the same certificate
    for delta in () if barrier_ran or not least_squares else _POLISH_DELTAS:
        if closed():
            break
        a_pol = _polish_dual(U, trip, gamma, X, p_best, delta)
        a_fix = _repair_dual(U, trip, gamma, a_pol)
        for a_c in (a_pol,) if a_fix is None else (a_pol, a_fix):
            g_c = lmnn_dual_value(U, trip, a_c, gamma, objective_bound=f)
            if g_c > best_g:
                best_g, best_alpha = g_c, a_c
    return best_g, best_alpha, f_primal, X_primal


#: G(α) eigenvalues at most these times its largest span the candidate faces of :func:`_face_primal`
_FACE_RTOLS = (1e-6, 1e-4, 1e-3)
_FACE_MAX_ITER = 3000  # iterations of one face solve (a few dimensions: about 0.1 s)
_FACE_SMALL = 20  # up to this r a face may be the whole space (a restart), beyond it r / 2


def _face_primal(U, trip: LMNNTriplets, gamma, ops, X, alpha, tol):
    """A primal point from the multipliers α: eq. 18 solved on the face they point to.

    At an optimal pair (X̂*, α*), ⟨G(α*), X̂*⟩ = 0 with both PSD, so range(X̂*) lies in the
    null space of G(α*); and for any α ∈ [0, γ]^T with G(α) ⪰ 0, ⟨G(α), X̂⟩ <= F(X̂) − Σ α_t,
    so a near-optimal α leaves X̂* almost no weight on the eigenvectors of G(α) with large
    eigenvalues.  The face F_V = {V M Vᵀ : M ⪰ 0}, V an orthonormal basis of range(X̂) (the
    current best point, eigenvalues above 1e-9 of its largest) and of the eigenvectors of
    G(α) with eigenvalues at most ρ·λ_max(G(α)) (ρ in ``_FACE_RTOLS``), is a q-dimensional
    LMNN problem (features U V, the same triplets) that :func:`_lmnn_pdhg` solves in a
    fraction of a second where the r-dimensional iteration crawls: on the Wang et al.
    inner-CV fits with high-degree polynomial kernels X̂* has rank 2–3 at a vertex where
    hundreds of triplets sit on their margin, the barrier had the optimal bound after 315
    iterations, and the PDHG closed the primal gap from 2.7e-4 to 1.0e-5 in 9 000 more.
    Nothing is assumed: the caller evaluates F of the returned point on the whole problem
    (a face point is a feasible point) and certifies it with its own bound.  Returns (F,
    X̂) of the best face point, (inf, None) when no face is small enough (q > r / 2).  Up to
    r = ``_FACE_SMALL`` the face may be the whole space: a restart of the smoothed phase from
    the best point (on an Iris fit with the linear kernel, r = 5, it took the gap from 2.7e-5,
    stalled after 9 905 iterations, to 1.6e-7)."""
    r = U.shape[1]
    G = laplacian_quadratic(U, trip, pair_weights(trip, alpha, gamma))
    lam, V = np.linalg.eigh(G)
    lx, VX = np.linalg.eigh(0.5 * (X + X.T))
    top_x = float(lx[-1]) if lx.size else 0.0
    VXk = VX[:, lx > 1e-9 * top_x] if top_x > 0.0 else VX[:, :0]
    best_f, best_X, seen = np.inf, None, set()
    for rho in _FACE_RTOLS:
        q = int(np.sum(lam <= rho * max(float(lam[-1]), np.finfo(float).tiny)))
        if q == 0 or q in seen:
            continue
        seen.add(q)
        B = np.hstack([VXk, V[:, :q]])
        Q, R = np.linalg.qr(B)
        d = np.abs(np.diag(R))
        VF = np.ascontiguousarray(Q[:, d > 1e-8 * max(float(d.max()), np.finfo(float).tiny)])
        if VF.shape[1] > (r if r <= _FACE_SMALL else r // 2):
            break
        res = _lmnn_pdhg(
            np.ascontiguousarray(U @ VF),
            trip,
            gamma,
            VF.T @ X @ VF,
            alpha,
            tol=0.1 * tol,
            max_iter=_FACE_MAX_ITER,
            check_every=200,
            buffer=1.0,
            polish=True,
            seed=0,
            callback=None,
            smooth=True,
            stall_iter=STALL_ITER,
            face=False,  # no face solve inside a face solve
            exact=False,  # nor an exact finish
        )
        XF = VF @ res.matrix @ VF.T
        XF = 0.5 * (XF + XF.T)
        f = lmnn_objective(ops.distances(XF), trip, gamma)
        if f < best_f:
            best_f, best_X = f, XF
    return best_f, best_X


def lmnn_pdhg(
    U,
    trip: LMNNTriplets,
    gamma: float,
    X0=None,
    alpha0=None,
    tol: float = 1e-6,
    max_iter: int = 20_000,
    check_every: int = 200,
    buffer: float = 1.0,
    polish: bool = True,
    seed: int = 0,
    blas_threads: int | str | None = "config",
    callback=None,
    smooth: bool = True,
    stall_iter: int | None = STALL_ITER,
    exact_finish: bool = True,
) -> FastResult:
    """Solve eq. 18 in the orthonormal coordinates U (n × r) of the features: the smoothed
    quasi-Newton phase, then PDHG (see the module docstring), in the coordinates of
    :func:`cvxkml.formulas.lmnn.pull_whitening`, the answer mapped back.

    Parameters
    ----------
    U : ndarray (n, r)
        Orthonormal (or any full-column-rank) feature factor; d(i, j) = u_pᵀ X̂ u_p.
    trip : LMNNTriplets
        Targets, pairs and triplets.
    gamma : float in (0, 1)
        Weight of the hinge terms (the paper's γ = 0.5).
    X0 : ndarray (r, r), optional
        Warm start (default: the identity).
    alpha0 : ndarray (T,), optional
        Warm-start multipliers.
    tol : float
        Certified relative optimality gap (F − g) / max(1, |F|) to stop at.
    max_iter : int
        Iteration budget; when reached the result is not converged.
    check_every : int
        Iterations between full passes (objective, dual bound, working set, restart).
    buffer : float
        Near-active margin of the working set (in units of the LMNN margin 1).
    polish : bool
        Once F settles, also recover multipliers from the best primal point: the
        restricted-dual barrier (:func:`_barrier_dual`), or where it cannot run, by
        complementary slackness (bounded least squares on the kink triplets); they are
        kept when they give a better certified bound.
    seed : int
        Seed of the power iteration that estimates the operator norm.
    blas_threads : int, "config" or None
        BLAS / LAPACK threads during the solve (:func:`cvxkml._config.blas_limit`): default
        ``"config"``, the ``blas_threads`` option (default 1: the matrices are small, and on a
        busy machine oversubscribed BLAS threads slowed an r = 106 eigendecomposition 30-fold
        in our measurements); an int sets it for this call; None leaves the pools alone.
    callback : callable or None
        Called at every check (iteration 0, the end of every smoothing width, then every
        ``check_every`` PDHG iterations) with a dict: ``iteration``, ``objective`` (F at the
        best X̂ so far), ``dual_value`` (the best certified bound g), ``gap`` ((F − g) /
        max(1, |F|), the certified relative gap), ``current_objective`` (F at the current
        iterate) and ``working_triplets``.  A truthy return stops the run (status
        ``"stopped by callback"``) unless that check already certified ``tol``.
    smooth : bool
        Run the smoothed quasi-Newton phase (:func:`_smooth_stages`) after the check at
        iteration 0 (its L-BFGS iterations count towards ``max_iter``); False: the PDHG alone.
    stall_iter : int or None, default STALL_ITER (2000)
        The stall rule: stop (status ``"stalled"``, not converged) when the PDHG phase has run
        this many iterations without shrinking the certified gap F − g (best F, best g) by
        more than 0.1 %.  Why: on kernel LMNN with nearly singular kernels F and g mostly
        stopped moving when the smoothed phase ended (reference/wang2011-mkl.md).  0 or None:
        run to ``max_iter``.
    exact_finish : bool, default True
        When the stall rule stops the PDHG, solve eq. 18 on the triplets near the margin (at
        most 3 000) with a primal-dual interior-point method and certify its answer on the
        whole problem (:mod:`cvxkml.solvers._lmnn_exact`: F recomputed on every triplet, the
        multipliers through :func:`cvxkml.formulas.lmnn.lmnn_dual_value`).  It closed the gap
        of the degree 8-10 polynomial-kernel fits of reference/wang2011-mkl.md on which the
        PDHG stalls.  False: return the stalled point.

    Returns
    -------
    FastResult
        ``matrix`` = X̂ (r × r, the best primal iterate), ``lam`` = α (the multipliers of the
        best bound), ``sweeps`` = iterations, ``dual_change`` = the certified relative gap
        (F − g) / max(1, |F|), ``code`` = ``Status.OK`` only when it is <= tol, else
        ``Status.NOT_CONVERGED``; ``extra``: ``objective`` F, ``dual_value`` g, ``status``
        (``"converged"``, ``"max_iter reached"``, ``"stalled"`` or ``"stopped by
        callback"``), ``history`` (iteration, F, g, working triplets per check; g is NaN where a wide smoothing
        width's check skipped the bound because Σα could not certify) and the
        solver details (``operator_norm``, ``primal_weight``, ``polish_time``,
        ``smooth_iterations``, ``smooth_time``, ``working_triplets``, ``triplets``; ``exact_finish``
        when the exact finish ran: its ``rounds``, ``working_triplets``, interior-point ``steps``, ``time``).
    """
    with blas_limit(blas_threads):
        U = np.ascontiguousarray(U, dtype=np.float64)
        kw = dict(
            check_every=check_every,
            buffer=buffer,
            polish=polish,
            seed=seed,
            callback=callback,
            smooth=smooth,
            stall_iter=stall_iter,
            exact=exact_finish,
        )
        null = _seen_null_space(U, trip, gamma)
        if null is None:
            return _whitened_solve(U, trip, gamma, X0, alpha0, tol, max_iter, **kw)
        # an exactly singular pull reached by impostor pairs: first the problem off its null
        # space; if that does not certify, the whole problem too, the better of the two kept
        off = _solve_off_null(U, trip, gamma, null, X0, alpha0, tol, max_iter, **kw)
        if off.code == OK or off.extra["status"] == CALLBACK_STOP or off.sweeps >= max_iter:
            return off
        res = _whitened_solve(U, trip, gamma, X0, alpha0, tol, max_iter - off.sweeps, **kw)
        return _better_of(off, res, U, trip, gamma, tol)


def _better_of(a: FastResult, b: FastResult, U, trip, gamma, tol) -> FastResult:
    """b with the lower objective's matrix and the higher bound's multipliers of a and b
    (each is a valid upper / lower bound of the same problem), re-certified."""
    ea, eb = a.extra, b.extra
    X, F = (a.matrix, ea["objective"]) if ea["objective"] < eb["objective"] else (b.matrix, eb["objective"])
    alpha, g = (a.lam, ea["dual_value"]) if ea["dual_value"] > eb["dual_value"] else (b.lam, eb["dual_value"])
    status = "converged" if F - g <= tol * max(1.0, abs(F)) else eb["status"]
    info = {k: v for k, v in eb.items() if k not in ("solver", "objective", "dual_value", "status", "history")}
    info["off_null"] = {k: ea[k] for k in ("objective", "dual_value", "status", "null_dim", "free_triplets")}
    history = ea["history"] + [(h[0] + a.sweeps,) + tuple(h[1:]) for h in eb["history"]]
    return lmnn_result(X, alpha, F, g, a.sweeps + b.sweeps, status, a.time + b.time, history, info)


def _whitened_solve(U, trip, gamma, X0, alpha0, tol, max_iter, **kw) -> FastResult:
    """:func:`_lmnn_pdhg` in the coordinates of :func:`pull_whitening`, the answer mapped back."""
    white = pull_whitening(U, trip.target_i, trip.target_j, gamma)
    Uw = U if white is None else np.ascontiguousarray(U @ white[0])  # the solver's coordinates
    res = _lmnn_pdhg(
        Uw,
        trip,
        gamma,
        to_pull_coordinates(X0, white),
        alpha0,
        tol,
        max_iter,
        kw["check_every"],
        kw["buffer"],
        kw["polish"],
        kw["seed"],
        kw["callback"],
        kw["smooth"],
        kw["stall_iter"],
        exact=kw["exact"],
    )
    if white is None:
        return res
    # F of the matrix returned, in the caller's coordinates (mapping back rounds X̂ at about
    # ε·‖W‖²‖X̃‖: 2e-9 of F on a 10-point Gaussian draw), and the stop re-checked against it
    res.matrix = from_pull_coordinates(res.matrix, white)
    F = lmnn_objective(_Ops(U, trip).distances(res.matrix), trip, gamma)
    g = res.extra["dual_value"]
    total = float(np.sum(res.lam))
    if g > F and g > 0.0 and total > 0.0:
        # the map back rounded F below the bound (both within about ε·‖W‖²‖X̃‖ of each other: a
        # nearly singular Gaussian-kernel draw, F 2.3e-8 below g): the multipliers are scaled
        # down to a sum just below F — c·α is dual feasible for every c <= g / Σα (G(cα) is a
        # convex combination of G(0) and a feasible G) — and the bound recomputed, as
        # LMNNProblem.dual_value does, in the solver's coordinates
        res.lam = res.lam * ((F / total) * (1.0 - 1e-12))
        g = lmnn_dual_value(Uw, trip, res.lam, gamma, objective_bound=F)
        res.extra["dual_value"] = g
    res.extra["objective"] = F
    res.dual_change = (F - g) / max(1.0, abs(F))
    if res.extra["status"] == "converged" and res.dual_change > tol:
        res.extra["status"], res.code = "max_iter reached", int(Status.NOT_CONVERGED)
    return res


def _seen_null_space(U, trip: LMNNTriplets, gamma: float):
    """(V_R, V_N, seeing) when the target pull G(0) is exactly singular (eigenvalues at most
    ``PULL_FLOOR`` times the largest: round-off) on a space N that some impostor pairs
    reach (``seeing``: :func:`cvxkml.formulas.lmnn.reaches_null`); None otherwise."""
    D = U[trip.target_i] - U[trip.target_j]
    G0 = (1.0 - gamma) * (D.T @ D)
    lam, V = np.linalg.eigh(0.5 * (G0 + G0.T))
    top = float(lam[-1]) if lam.size else 0.0
    null = lam <= PULL_FLOOR * top
    if not top > 0.0 or not np.any(null) or np.all(null):
        return None
    VN, VR = np.ascontiguousarray(V[:, null]), np.ascontiguousarray(V[:, ~null])
    seeing = reaches_null(U, trip, VN)
    return (VR, VN, seeing) if np.any(seeing) else None


def _null_lengths(U, trip: LMNNTriplets, VN):
    """‖V_Nᵀ u_p‖² of every pair."""
    W = (U[trip.pi] - U[trip.pj]) @ VN
    return np.einsum("ij,ij->i", W, W)


def _solve_off_null(U, trip, gamma, null, X0, alpha0, tol, max_iter, **kw) -> FastResult:
    """eq. 18 when G(0) is exactly singular on N and impostor pairs reach N: the triplets
    whose impostor pair reaches N can be satisfied for free (X̂ + c V_N V_Nᵀ raises their
    d(i, l) and no target distance), so F* is the optimum of the problem on range(G(0))
    without them.  That problem is solved (features U V_R, the other triplets), its answer
    is extended by the exact minimizer c of F along V_N V_Nᵀ (:func:`_null_scale`) and its
    multipliers by zeros; F and the Lagrange bound are evaluated on the whole problem."""
    t0 = time.perf_counter()
    if X0 is not None and alpha0 is not None:  # the check at iteration 0, on the whole problem
        Xs = _psd_project(np.ascontiguousarray(X0, dtype=np.float64))
        a_s = np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, gamma)
        F0 = lmnn_objective(_Ops(U, trip).distances(Xs), trip, gamma)
        g0 = lmnn_dual_value(U, trip, a_s, gamma, objective_bound=F0)
        if F0 - g0 <= tol * max(1.0, abs(F0)):
            info = {"null_dim": int(null[1].shape[1]), "free_triplets": int(null[2].sum()), "triplets": trip.n_triplets}
            return lmnn_result(Xs, a_s, F0, g0, 0, "converged", time.perf_counter() - t0, [(0, F0, g0, 0)], info)
    VR, VN, seeing = null
    keep = ~seeing
    sub = replace(
        trip,
        trip_i=trip.trip_i[keep],
        trip_j=trip.trip_j[keep],
        trip_l=trip.trip_l[keep],
        tt=trip.tt[keep],
        ti=trip.ti[keep],
    )
    if np.any(keep):
        res = _whitened_solve(
            np.ascontiguousarray(U @ VR),
            sub,
            gamma,
            None if X0 is None else VR.T @ np.asarray(X0, dtype=np.float64) @ VR,
            None if alpha0 is None else np.asarray(alpha0, dtype=np.float64)[keep],
            tol,
            max_iter,
            **kw,
        )
        sweeps, status, history, lam_kept = res.sweeps, res.extra["status"], res.extra["history"], res.lam
        skip = ("solver", "objective", "dual_value", "status", "history")
        info = {k: v for k, v in res.extra.items() if k not in skip}
        X_R = VR @ res.matrix @ VR.T
    else:  # every triplet reaches N: the range problem is min ⟨G(0), X̂_R⟩, solved by X̂_R = 0
        sweeps, status, history, lam_kept, info = 0, "converged", [], np.zeros(0), {}
        X_R = np.zeros((U.shape[1], U.shape[1]))
    ops = _Ops(U, trip)
    n_N = _null_lengths(U, trip, VN)
    p_R = ops.distances(X_R)
    c = _null_scale(p_R, n_N, trip, gamma)
    X = X_R + c * (VN @ VN.T)
    X = 0.5 * (X + X.T)
    F = lmnn_objective(ops.distances(X), trip, gamma)
    if not _evaluable(lmnn_objective(p_R + c * n_N, trip, gamma), F, tol):
        c, X = 0.0, X_R  # the extended point's F is round-off (see _lmnn_exact.evaluable)
        F = lmnn_objective(p_R, trip, gamma)
    alpha = np.zeros(trip.n_triplets)
    alpha[keep] = lam_kept
    g = lmnn_dual_value(U, trip, alpha, gamma, objective_bound=F)
    if F - g <= tol * max(1.0, abs(F)):
        status = "converged"
    elif status == "converged":
        status = "max_iter reached"  # certified on range(G(0)) only: not the whole problem's tol
    info.update(null_dim=int(VN.shape[1]), null_scale=c, free_triplets=int(seeing.sum()), triplets=int(trip.n_triplets))
    # iterations: the reduced solve's, and one for the exact step along V_N
    return lmnn_result(X, alpha, F, g, sweeps + 1, status, time.perf_counter() - t0, history, info)


#: the ``extra["status"]`` of a run its callback stopped (= cvxkml.declare.problem.CALLBACK_STOP)
CALLBACK_STOP = "stopped by callback"
_STALL_SHRINK = 1e-3  # progress = the certified gap shrinks by more than this fraction


def lmnn_result(X, alpha, objective, dual_value, n_iter, status, elapsed, history, info) -> FastResult:
    """The solver result of an LMNN run (see :func:`lmnn_pdhg`, Returns)."""
    gap = (objective - dual_value) / max(1.0, abs(objective))
    return FastResult(
        matrix=X,
        lam=alpha,
        xi=np.zeros(0),
        sweeps=int(n_iter),
        dual_change=float(gap),
        code=int(Status.OK if status == "converged" else Status.NOT_CONVERGED),
        bad_index=-1,
        time=elapsed,
        extra={
            "solver": "pdhg-lmnn",
            "objective": float(objective),
            "dual_value": float(dual_value),
            "status": status,
            "history": history,
            **info,
        },
    )


class _Run:
    """The state of one :func:`_lmnn_pdhg` run: the iterate, the best primal point and the
    best certified bound so far, the check history and the bookkeeping of the dual recovery
    (the phases below read and update it)."""

    def __init__(self, U, trip, gamma, X, alpha, tol, polish, callback, face=False):
        self.U, self.trip, self.gamma, self.tol = U, trip, gamma, tol
        self.polish, self.callback, self.face = polish, callback, face
        self.face_time, self.face_gain, self.face_key = 0.0, 0.0, None
        self.ops = _Ops(U, trip)
        self.X, self.alpha = X, alpha
        self.p = self.ops.distances(X)
        self.best_f, self.best_X = np.inf, X.copy()
        self.best_g, self.best_alpha = -np.inf, alpha.copy()
        self.history = []
        self.it = 0
        self.status, self.converged = "max_iter reached", False
        self.polish_wait, self.polish_backoff, self.polish_time = 0, 1, 0.0
        self.prev_f = np.inf
        self.smooth_iter, self.smooth_time = 0, 0.0

    def bound(self, alpha, f) -> float:
        return lmnn_dual_value(self.U, self.trip, alpha, self.gamma, objective_bound=min(f, self.best_f))

    def keep(self, f, X, g, alpha) -> None:
        if f < self.best_f:
            self.best_f, self.best_X = f, X.copy()
        if g > self.best_g:
            self.best_g, self.best_alpha = g, alpha.copy()

    def recover(self, least_squares: bool = True) -> None:
        tp = time.perf_counter()
        self.best_g, self.best_alpha, f_z, Z = _recover_dual(
            self.U,
            self.trip,
            self.gamma,
            self.ops,
            self.best_X,
            self.best_f,
            self.best_g,
            self.best_alpha,
            self.tol,
            least_squares=least_squares,
        )
        if Z is not None:  # the barrier's central-path primal point, when it lowers F
            self.keep(f_z, Z, -np.inf, self.best_alpha)
        self.polish_time += time.perf_counter() - tp

    def open_gap(self) -> bool:
        return self.best_f - self.best_g > self.tol * max(1.0, abs(self.best_f))

    def recover_face(self) -> None:
        """The primal side of the recovery (:func:`_face_primal` from the best multipliers);
        when it lowers F, the best point moves there and the barrier recovery runs again at
        it (its kinks are those of the better point; the least-squares fallback waits for the
        next check: run here too it tripled a Sonar fit's time).  The PDHG iterate keeps its own path: moved
        to the face point it lost its progress (a Sonar degree-10 fit stalled at 4 989
        iterations with F 3.7e-5 above the 12 589-iteration run)."""
        key = (self.best_f, self.best_g)
        if key == self.face_key:  # the same point and multipliers: the same faces, no gain
            return
        self.face_key = key
        tp = time.perf_counter()
        f, X = _face_primal(self.U, self.trip, self.gamma, self.ops, self.best_X, self.best_alpha, self.tol)
        self.face_time += time.perf_counter() - tp
        if X is None or not f < self.best_f:
            return
        self.face_gain += self.best_f - f
        self.keep(f, X, -np.inf, self.best_alpha)
        if self.open_gap():  # the barrier at the better point's kinks (least squares: next check)
            self.recover(least_squares=False)

    def report(self, f, g, n_work) -> bool:
        """Record the check and ask the callback; True when the run ends here (certified,
        stopped by the callback)."""
        if self.best_g > self.best_f:  # a later primal value shows the bound's round-off allowance failed
            self.best_g = lmnn_dual_value(self.U, self.trip, self.best_alpha, self.gamma, objective_bound=self.best_f)
        self.history.append((self.it, f, g, int(n_work)))
        scale = max(1.0, abs(self.best_f))
        stop = self.callback is not None and bool(
            self.callback(
                {
                    "iteration": int(self.it),
                    "objective": float(self.best_f),
                    "dual_value": float(self.best_g),
                    "gap": float((self.best_f - self.best_g) / scale),
                    "current_objective": float(f),
                    "working_triplets": int(n_work),
                }
            )
        )
        if self.best_f - self.best_g <= self.tol * scale:
            self.converged, self.status = True, "converged"
            return True
        if stop:
            self.status = CALLBACK_STOP
            return True
        return False


def _objective(run: _Run, p) -> float:
    f = lmnn_objective(p, run.trip, run.gamma)
    if not np.isfinite(f):
        raise FloatingPointError("LMNN iterates became non-finite")
    return f


def _pdhg_check(run: _Run, pd) -> bool:
    """The full pass every ``check_every`` PDHG iterations (and at iteration 0): F and g at
    the iterate, the restart from the averaged iterate when its gap is smaller, the dual
    recovery once F settles (after a recovery that does not certify, wait 1, 2, 4, … checks:
    O(log) recoveries per run), then :meth:`_Run.report`.  True when the run ends here."""
    f = _objective(run, run.p)
    g = run.bound(run.alpha, f)
    if pd.cnt > 0:  # restart from the averaged iterate when it is better
        Xa = pd.X_sum / pd.cnt
        aa = run.alpha.copy()
        aa[pd.work] = pd.a_sum[pd.work] / pd.cnt
        pa = run.ops.distances(Xa)
        fa = lmnn_objective(pa, run.trip, run.gamma)
        ga = run.bound(aa, min(fa, f))
        if fa - ga < f - g:
            run.X[:, :] = Xa
            run.alpha[:] = aa
            run.p[:] = pa
            f, g = fa, ga
    run.keep(f, run.X, g, run.alpha)
    settled = abs(run.prev_f - run.best_f) <= _POLISH_SETTLED * max(1.0, abs(run.best_f))
    run.prev_f = run.best_f
    open_gap = run.best_f - run.best_g > run.tol * max(1.0, abs(run.best_f))
    if run.polish_wait > 0:
        run.polish_wait -= 1
    elif run.polish and settled and open_gap:
        run.recover()
        if run.face and run.open_gap():
            run.recover_face()
        if run.best_f - run.best_g > run.tol * max(1.0, abs(run.best_f)):
            run.polish_wait, run.polish_backoff = run.polish_backoff, 2 * run.polish_backoff
    return run.report(f, g, pd.work.size)


def _smoothed_phase(run: _Run, max_iter: int, buffer: float) -> bool:
    """The smoothed quasi-Newton phase from the best point (:func:`_smooth_stages`), with a
    check after every width (the unsmoothed certificate, from μ <= ``_SMOOTH_BARRIER_MU`` the
    barrier recovery, the history and the callback); the PDHG continues from the best point
    and the last multipliers.  True when the run ends in this phase."""
    ts = time.perf_counter()
    gap0 = (run.best_f - run.best_g) / max(1.0, abs(run.best_f))
    mus = [m for m in _smooth_widths(run.tol) if m <= max(gap0, _SMOOTH_MUS[-1])]
    a_last = None
    finished = False
    stages = _smooth_stages(run.U, run.trip, run.gamma, run.best_X, mus, max_iter - run.it, buffer)
    for mu, Xs, a_s, nit, n_work in stages:
        run.it += nit
        run.smooth_iter += nit
        a_last = a_s
        f = _objective(run, run.ops.distances(Xs))
        # a way-point width's bound is evaluated only when it could certify: g(α) <= Σα (s <= 1,
        # the trace correction only lowers it), so F − Σα above the tolerance settles the check
        # without the eigenvalue test (NaN in the history; breast cancer: 30 ms per check)
        fb = min(f, run.best_f)
        hopeless = mu > _SMOOTH_BARRIER_MU and fb - float(a_s.sum()) > run.tol * max(1.0, abs(fb))
        g = np.nan if hopeless else run.bound(a_s, f)
        run.keep(f, Xs, g, a_s)
        if run.polish and mu <= _SMOOTH_BARRIER_MU and run.best_f - run.best_g > run.tol * max(1.0, abs(run.best_f)):
            run.recover(least_squares=False)
        if run.report(f, g, n_work) or run.it >= max_iter:
            finished = True
            break
    run.smooth_time = time.perf_counter() - ts
    if not finished:
        run.X[:, :] = run.best_X
        if a_last is not None:
            run.alpha[:] = a_last
        run.p = run.ops.distances(run.X)
        run.prev_f = run.best_f
    return finished


class _PDHG:
    """The PDHG phase's own state: steps, preconditioner, primal weight, restart point,
    working set and the running sums of the averaged iterate."""

    def __init__(self, run: _Run, buffer: float, seed: int):
        n, r = run.U.shape
        P, T = run.trip.n_pairs, run.trip.n_triplets
        self.buffer, self.seed = buffer, seed
        self.s = None  # the preconditioner and operator norm: when the PDHG first steps
        self.L = None
        self.eta = 0.0
        self.omega = 1.0
        self.w_base = np.ascontiguousarray((1.0 - run.gamma) * run.trip.target_weight)
        self.w = np.empty(P)
        self.OU = np.empty((n, r))
        self.p_new = run.p.copy()
        self.work, self.work_pairs = _working_set(run.p, run.trip, run.alpha, buffer)
        self.X_r, self.a_r = run.X.copy(), run.alpha.copy()
        self.X_sum = np.zeros_like(run.X)
        self.a_sum = np.zeros(T)
        self.cnt = 0
        self.budget = WorkBudget(start=4)

    def restart_point(self, run: _Run) -> None:
        self.X_r[:, :] = run.X
        self.a_r[:] = run.alpha

    def block(self, run: _Run, n_steps: int) -> None:
        """``n_steps`` PDHG iterations from the current point: the primal weight from the
        movement since the last restart (PDLP), the working set, then the Numba steps in
        calls of about 0.1 s (Ctrl-C between them; the state lives in the arrays)."""
        dX = float(np.linalg.norm(run.X - self.X_r))
        da = 0.0 if self.s is None else float(np.linalg.norm((run.alpha - self.a_r) / np.sqrt(self.s)))
        if dX > 1e-14 and da > 1e-14:
            self.omega = float(np.exp(_THETA * np.log(da / dX) + (1.0 - _THETA) * np.log(self.omega)))
        self.restart_point(run)
        self.work, self.work_pairs = _working_set(run.p, run.trip, run.alpha, self.buffer)
        if self.L is None:
            self.s = _preconditioner(run.U, run.trip)
            self.L = _operator_norm(run.ops, self.s, seed=self.seed) * 1.05
            if not self.L > 0:
                self.L = 1.0
            self.eta = 0.95 / self.L
        tau = self.eta / self.omega
        sig = self.eta * self.omega * self.s
        self.X_sum[:, :] = 0.0
        self.a_sum[:] = 0.0
        trip = run.trip
        done = 0
        while done < n_steps:
            k = min(self.budget.units, n_steps - done)
            tk = time.perf_counter()
            _steps(
                run.U,
                run.X,
                run.alpha,
                run.p,
                trip.pi,
                trip.pj,
                self.w_base,
                trip.tt,
                trip.ti,
                self.work,
                self.work_pairs,
                sig,
                tau,
                run.gamma,
                k,
                self.X_sum,
                self.a_sum,
                self.w,
                self.OU,
                self.p_new,
            )
            self.budget.update(k, time.perf_counter() - tk)
            done += k
        self.cnt = n_steps
        run.it += n_steps
        run.p = run.ops.distances(run.X)


def _lmnn_pdhg(
    U,
    trip,
    gamma,
    X0,
    alpha0,
    tol,
    max_iter,
    check_every,
    buffer,
    polish,
    seed,
    callback,
    smooth,
    stall_iter,
    face=True,
    exact=True,
) -> FastResult:
    """:func:`lmnn_pdhg` in the coordinates it is given (the parameters are its own): a
    check at iteration 0, the smoothed phase, then PDHG blocks of ``check_every``
    iterations each followed by a check, until certified, stopped, stalled or out of
    budget; a stalled run then gets the exact working-set finish
    (:func:`cvxkml.solvers._lmnn_exact.exact_finish`) when ``exact``; the reported bound is
    re-evaluated with the best primal value as F_up."""
    t0 = time.perf_counter()
    U = np.ascontiguousarray(U, dtype=np.float64)
    r = U.shape[1]
    X = np.eye(r) if X0 is None else np.array(X0, dtype=np.float64, order="C")
    X = np.ascontiguousarray(_psd_project(X))
    T = trip.n_triplets
    alpha = np.zeros(T) if alpha0 is None else np.clip(np.array(alpha0, dtype=np.float64), 0, gamma)
    run = _Run(U, trip, gamma, X, alpha, tol, polish, callback, face=face and polish)
    pd = _PDHG(run, buffer, seed)
    smooth_pending = bool(smooth)  # the smoothed phase runs after the check at the start
    stall_gap, stall_it = np.inf, 0  # the stall rule: the gap to beat and since when
    while True:
        if _pdhg_check(run, pd) or run.it >= max_iter:
            break
        if not smooth_pending:  # the stall rule (PDHG phase only)
            if run.best_f - run.best_g < (1.0 - _STALL_SHRINK) * stall_gap:
                stall_gap, stall_it = run.best_f - run.best_g, run.it
            elif stall_iter and run.it - stall_it >= stall_iter:
                run.status = STALLED
                break
        if smooth_pending:
            smooth_pending = False
            if _smoothed_phase(run, max_iter, buffer):
                break
            stall_gap, stall_it = run.best_f - run.best_g, run.it
            pd.restart_point(run)
        pd.block(run, int(min(check_every, max_iter - run.it)))
    finish = None
    if exact and run.status == STALLED and not run.converged:
        finish = _exact_finish(U, trip, gamma, run.ops.distances, run.best_X, run.best_f, run.best_g, tol)
        if finish is not None:  # its point and multipliers, each kept where better (inf / −inf when none)
            run.keep(finish["objective"], finish["matrix"], finish["dual_value"], finish["alpha"])
            run.history.append((run.it, run.best_f, run.best_g, finish["working_triplets"]))
            if not run.open_gap():
                run.converged, run.status = True, "converged"
    # the reported bound with the best primal value as F_up (the tightest trace correction
    # of lmnn_dual_value, so never below the bound the stopping test used)
    best_g = lmnn_dual_value(U, trip, run.best_alpha, gamma, objective_bound=run.best_f)
    info = {
        "operator_norm": pd.L,
        "primal_weight": pd.omega,
        "polish_time": run.polish_time,
        "face_time": run.face_time,
        "face_gain": run.face_gain,
        "smooth_iterations": int(run.smooth_iter),
        "smooth_time": run.smooth_time,
        "working_triplets": int(pd.work.size),
        "triplets": int(T),
    }
    if finish is not None:
        info["exact_finish"] = {k: finish[k] for k in ("rounds", "working_triplets", "steps", "time")}
    status = run.status if not run.converged else "converged"
    return lmnn_result(
        run.best_X, run.best_alpha, run.best_f, best_g, run.it, status, time.perf_counter() - t0, run.history, info
    )


# --------------------------------------------------------------------------- active set of impostors
_SCAN_ROWS = 256  # points per distance block of the impostor scan
#: inner tolerance of the active-set rounds before the last: their answers only choose the next
#: impostors, so the smoothed phase stops once the set's certified gap is within it (usually
#: after its inexact widths 1 and 0.3); 0.3 against 0.1, 0.2, 0.4 and 1e-2 measured in
#: reference/lmnn-speed.md
_LOOSE_TOL = 0.3
#: the tight solve starts once the *full* gap (full F against the set's bound) is within this
_FINAL_GAP = 0.1
#: new impostors per target entry after a tight solve: the set is nearly complete then, but an
#: entry whose target lies beyond hundreds of impostors (full pendigits: up to 1 102 violated
#: ones after the first tight solve) took a round per ``cap`` of them (13 rounds, the last five
#: for one entry); 200, 1 000 and no cap measured alike (reference/lmnn-speed.md), and 1 000
#: bounds the scan's buffers
_TIGHT_CAP = 1000


def _entry_offsets(target_i, n) -> np.ndarray:
    """off[i] … off[i + 1] − 1: the target entries of point i (target_i sorted)."""
    return np.searchsorted(target_i, np.arange(n + 1)).astype(np.int64)


@nb.njit(cache=True, error_model="numpy")
def _row_distances(W, a, b, out):
    """out[q] = ‖W[a[q]] − W[b[q]]‖² (no temporaries)."""
    r = W.shape[1]
    for q in range(a.shape[0]):
        x = a[q]
        y = b[q]
        s = 0.0
        for c in range(r):
            d = W[x, c] - W[y, c]
            s += d * d
        out[q] = s


@nb.njit(cache=True, error_model="numpy")
def _keep_largest(idx, zz, m, cap):
    """Keep the ``cap`` largest of zz[:m] (ties: the first ones) in place, in their order, with
    their idx; returns the smallest kept.  A selection (O(m)), not a sort: at the start every
    impostor is a candidate of the nearest-impostor scan."""
    thr = np.partition(zz[:m], m - cap)[m - cap]
    ties = cap
    for t in range(m):
        if zz[t] > thr:
            ties -= 1
    k = 0
    for t in range(m):
        if zz[t] > thr or (zz[t] == thr and ties > 0):
            if zz[t] == thr:
                ties -= 1
            idx[k] = idx[t]
            zz[k] = zz[t]
            k += 1
    return thr


@nb.njit(cache=True, error_model="numpy")
def _scan_block(W, D, i0, e0, e1, target_i, codes, sq, fuzz, dt, margin, cap, known, out_e, out_l, out_z):
    """One block of :func:`impostor_scan`: the entries e0 … e1 − 1 (points i0 + row of ``D``);
    the hinge argument of entry e and impostor l (another class than i) is 1 + dt[e] − D[i − i0, l]
    from the GEMM distances ``D``, within a = fuzz·(‖W_i‖² + ‖W_l‖²) of the exact value (read
    in place: no entries × n temporaries); a candidate within a of −margin or of 0 is
    recomputed from the rows (a sum of squares), the others keep the GEMM value and add a to
    the hinge sum's error allowance.  Returns (Σ [z]_+ + allowance, candidates above −margin,
    kept) and writes the kept triplets (outside ``known``, at most ``cap`` per entry: the largest
    z, in index order)."""
    n = D.shape[1]
    r = W.shape[1]
    hinge = 0.0
    total = 0
    cnt = 0
    idx = np.empty(n, np.int64)
    zz = np.empty(n)
    nk = known.shape[0]
    room = min(n, max(4 * cap, 64))  # kept candidates before a selection trims them to ``cap``
    for e in range(e0, e1):
        i = target_i[e]
        ci = codes[i]
        row = i - i0
        base = 1.0 + dt[e]
        m = 0
        thr = -np.inf  # the cap-th largest z kept so far (once trimmed): smaller ones cannot enter
        for l in range(n):
            if codes[l] == ci:
                continue
            z = base - D[row, l]
            a = fuzz * (sq[i] + sq[l])
            if not z + a > -margin:
                continue
            exact = False
            if abs(z + margin) <= a or abs(z) <= a:
                s = 0.0
                for c in range(r):
                    d = W[i, c] - W[l, c]
                    s += d * d
                z = 1.0 + dt[e] - s
                exact = True
                if not z > -margin:
                    continue
            total += 1
            if z > 0.0:
                hinge += z if exact else z + a
            if cap == 0 or z <= thr:  # a later tie of the threshold loses to the earlier ones
                continue
            if nk > 0:
                key = e * n + l
                p = np.searchsorted(known, key)
                if p < nk and known[p] == key:
                    continue
            idx[m] = l
            zz[m] = z
            m += 1
            if m == room and m > cap:
                thr = _keep_largest(idx, zz, m, cap)
                m = cap
        if m > cap:
            _keep_largest(idx, zz, m, cap)
            m = cap
        for t in range(m):
            out_e[cnt] = e
            out_l[cnt] = idx[t]
            out_z[cnt] = zz[t]
            cnt += 1
    return hinge, total, cnt


def impostor_scan(W, codes, target_i, target_j, margin: float, cap: int | None = None, known=None):
    """Every triplet (e, l) whose hinge argument 1 + d(i, j) − d(i, l) exceeds −``margin``
    under the distances of the rows of W (n × q: d(a, b) = ‖W_a − W_b‖²), never forming the
    full list of triplets (Weinberger & Saul's impostor search, in blocks of points).

    Distances come from a block GEMM (‖W_i‖² + ‖W_l‖² − 2 W_i·W_l), each within a round-off
    allowance a = 64ε(q + 2)(‖W_i‖² + ‖W_l‖²) of the exact one; candidates within a of a
    threshold (−margin, or 0 for the hinge) are recomputed from the rows (a sum of squares), so
    no triplet with z > −margin is missed, and the hinge sum returned is an upper bound on the
    exact Σ[z]_+ (by at most Σ a over the positive hinges: round-off).  Cost O(n²q) flops for
    the GEMM, O(n²k) for the selection, O(n·k·``_SCAN_ROWS``) memory.

    Parameters
    ----------
    W : ndarray (n, q)
        Coordinates of the points under the current metric.
    codes : int array (n,)
        Class code of each point.
    target_i, target_j : int arrays (E,)
        The target entries (i, j), target_i sorted.
    margin : float >= 0
        Triplets whose hinge argument z exceeds −margin are returned.
    cap : int, optional
        Return at most this many triplets per target entry outside ``known`` (the largest z).
    known : sorted int64 array, optional
        Keys e·n + l of triplets that are not returned (already in a set).

    Returns
    -------
    entries, impostors : int64 arrays (Q,), the triplets outside ``known`` with z > −margin
    z : float array (Q,), their hinge arguments (to round-off)
    hinge_sum : float, an upper bound (to round-off) on Σ [z]_+ over every triplet
    n_candidates : int, the triplets with z > −margin (known or not)
    """
    W = np.ascontiguousarray(W, dtype=np.float64)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    n = W.shape[0]
    off = _entry_offsets(target_i, n)
    sq = np.einsum("ij,ij->i", W, W)
    Dt = W[target_i] - W[target_j]
    dt = np.einsum("ij,ij->i", Dt, Dt)
    fuzz = 64.0 * np.finfo(float).eps * (W.shape[1] + 2)
    known = np.zeros(0, np.int64) if known is None else np.asarray(known, dtype=np.int64)
    ents, imps, zs = [], [], []
    total, hinge = 0, 0.0
    for i0 in range(0, n, _SCAN_ROWS):
        i1 = min(n, i0 + _SCAN_ROWS)
        e0, e1 = off[i0], off[i1]
        if e1 == e0:
            continue
        D = W[i0:i1] @ W.T
        D *= -2.0
        D += sq[i0:i1, None]
        D += sq[None, :]
        m = n if cap is None else min(cap, n)
        oe = np.empty((e1 - e0) * m, np.int64)
        ol = np.empty_like(oe)
        oz = np.empty(oe.size)
        h, tot, cnt = _scan_block(W, D, i0, e0, e1, target_i, codes, sq, fuzz, dt, float(margin), m, known, oe, ol, oz)
        del D
        hinge += h
        total += tot
        ents.append(oe[:cnt].copy())
        imps.append(ol[:cnt].copy())
        zs.append(oz[:cnt].copy())
    cat = lambda a, t: np.concatenate(a).astype(t) if a else np.zeros(0, t)
    return cat(ents, np.int64), cat(imps, np.int64), cat(zs, np.float64), hinge, int(total)


def _keys(entries, impostors, n) -> np.ndarray:
    return np.asarray(entries, dtype=np.int64) * n + np.asarray(impostors, dtype=np.int64)


def lmnn_active_set(
    U,
    codes,
    k: int,
    target_i,
    target_j,
    gamma: float,
    X0=None,
    tol: float = 1e-6,
    max_iter: int = 20_000,
    check_every: int = 200,
    buffer: float = 0.5,
    cap: int = 50,
    init_cap: int = 10,
    max_rounds: int = 50,
    polish: bool = True,
    blas_threads: int | str | None = "config",
    callback=None,
    smooth: bool = True,
    stall_iter: int | None = STALL_ITER,
    exact_finish: bool = True,
) -> FastResult:
    """LMNN (eq. 18) on all triplets, solved on an active set of impostors that a full scan
    refreshes between solves (Weinberger & Saul §6), so that the n·k·(n − n_c) triplets are
    never stored.

    Each round solves the problem restricted to the current set S (:func:`lmnn_pdhg`, the
    smoothed phase then PDHG, certified on S to ``tol``), then scans every triplet at the
    answer (:func:`impostor_scan`):  F(X̂) = F_S(X̂) + γ Σ_{t ∉ S} [z_t]_+ exactly, and the
    triplets outside S with z_t > −``buffer`` join S (at most ``cap`` per target entry per
    round).  The certificate is that of the full problem: the multipliers of S extended by
    zeros have the same G(α), so g_S(α) is a Lagrange lower bound on the full optimum, and the
    run converges when F(X̂) − g_S(α) <= tol · max(1, F(X̂)) with the full F.

    Parameters
    ----------
    U : ndarray (n, r)
        Orthonormal feature factor.
    codes : int array (n,)
        Class code of each point.
    k : int
        Target neighbours per point.
    target_i, target_j : int arrays (E,)
        The target entries (i, j), target_i sorted.
    gamma, X0, tol, max_iter, check_every, polish, smooth, stall_iter, exact_finish, blas_threads
        As :func:`lmnn_pdhg` (max_iter counts over all rounds).
    buffer : float, default 0.5
        Triplets with z > −buffer at a round's answer join the set.
    cap : int, default 50
        At most this many new impostors per target entry per round (after a tight solve at most
        max(``cap``, 1 000): the set is nearly complete then, and an entry with many violated
        impostors would otherwise take a round per ``cap`` of them).
    init_cap : int, default 10
        The first set also holds this many nearest impostors of every target entry.
    max_rounds : int, default 50
        Most scan-and-solve rounds.
    callback : callable or None
        Called at every check of every round, as :func:`lmnn_pdhg`'s (the values are those of
        the round's set; ``round`` is added); a truthy return stops the run.

    Returns
    -------
    FastResult
        As :func:`lmnn_pdhg`'s: ``extra["objective"]`` is the full F, ``extra["dual_value"]``
        the bound of the set's multipliers; ``lam`` lives on ``extra["triplets"]`` (the final
        set, an :class:`LMNNTriplets`); ``extra["rounds"]``, ``["scan_time"]``,
        ``["set_sizes"]``, ``["round_trace"]`` ((seconds, full F, bound) after each round).
    """
    with blas_limit(blas_threads):
        t0 = time.perf_counter()
        U = np.ascontiguousarray(U, dtype=np.float64)
        n, r = U.shape
        codes = np.asarray(codes, dtype=np.int64)
        target_i = np.asarray(target_i, dtype=np.int64)
        target_j = np.asarray(target_j, dtype=np.int64)
        X = _psd_project(np.ascontiguousarray(np.eye(r) if X0 is None else np.array(X0, dtype=np.float64)))
        white = pull_whitening(U, target_i, target_j, gamma)
        U_pull = U if white is None else np.ascontiguousarray(U @ white[0])
        ts = time.perf_counter()
        keys = _first_set(U @ psd_factor(X), codes, target_i, target_j, buffer, cap, init_cap)
        rs = _Rounds(scan_time=time.perf_counter() - ts)
        final = tol >= _LOOSE_TOL
        while True:
            rs.rounds += 1
            sub = LMNNTriplets.from_impostors(codes, k, target_i, target_j, keys // n, keys % n)
            rs.sizes.append(int(keys.size))
            skeys = _keys(keys // n, keys % n, n)  # the order of sub's triplets (= keys)
            # a loose inner tolerance while the set still grows (its answer only chooses the
            # next impostors); the asked one once the last scan found no triplet outside the
            # set with a positive hinge
            res = _lmnn_pdhg(
                U_pull,
                sub,
                gamma,
                to_pull_coordinates(X, white),
                rs.start_alpha(skeys),
                tol if final else max(tol, _LOOSE_TOL),
                max(max_iter - rs.it, 0),
                check_every,
                buffer,
                polish,
                0,
                rs.callback(callback),
                smooth,
                stall_iter,
                exact=final and exact_finish,  # the exact finish on the last set only
            )
            X = from_pull_coordinates(res.matrix, white)
            rs.after_solve(res, skeys)
            ts = time.perf_counter()
            W = U @ psd_factor(X)
            per_entry = max(cap, _TIGHT_CAP) if final else cap
            e, l, z, hinge, _ = impostor_scan(W, codes, target_i, target_j, buffer, per_entry, known=keys)
            rs.scan_time += time.perf_counter() - ts
            fresh = sorted_unique(_keys(e, l, n))
            Dt = W[target_i] - W[target_j]
            rs.F_full = (1.0 - gamma) * float(np.einsum("ij,ij->", Dt, Dt)) + gamma * hinge
            rs.g = res.extra["dual_value"]
            rs.trace.append((time.perf_counter() - t0, float(rs.F_full), float(rs.g)))
            if rs.F_full - rs.g <= tol * max(1.0, abs(rs.F_full)):
                rs.status = "converged"
                break
            if res.extra["status"] != "converged":
                rs.status = res.extra["status"]
                break
            if fresh.size == 0:
                if final:  # nothing new to add, yet not certified: the set's own gap is the full one
                    rs.status = res.extra["status"]
                    break
                final = True  # the set is complete at this answer: solve it to tol
                continue
            # the tight solve next when no outside triplet has a positive hinge, when the full
            # gap is already within the loose tolerance (the loose rounds have done their part),
            # or when this round's loose solve did not move (its start was certified on the
            # grown set: another loose round would only scan again; pendigits-5000 spent 4 scans
            # adding 50 triplets each at the same F)
            final = (
                (bool(np.max(z) <= 0.0) if z.size else True)
                or rs.F_full - rs.g <= _FINAL_GAP * max(1.0, abs(rs.F_full))
                or res.sweeps == 0
            )
            if rs.it >= max_iter:
                break
            if rs.rounds >= max_rounds:
                rs.status = "max rounds reached"
                break
            keys = sorted_unique(keys, fresh)
        info = {
            **rs.info_last,
            "triplets": sub,
            "set_entries": keys // n,
            "set_impostors": keys % n,
            "rounds": rs.rounds,
            "scan_time": rs.scan_time,
            "smooth_time": rs.smooth_time,
            "polish_time": rs.polish_time,
            "set_sizes": rs.sizes,
            "round_trace": rs.trace,
            "set_objective": float(res.extra["objective"]),
        }
        return lmnn_result(X, res.lam, rs.F_full, rs.g, rs.it, rs.status, time.perf_counter() - t0, rs.history, info)


def _first_set(W0, codes, target_i, target_j, buffer, cap, init_cap) -> np.ndarray:
    """The keys of the first impostor set at the start (learned coordinates W0): the triplets
    near their margin and the ``init_cap`` nearest impostors of every target entry (the
    start is usually far too wide a metric: with the near-margin triplets alone the first
    answer collapses and the next scan finds most triplets violated)."""
    n = W0.shape[0]
    e, l, _, _, _ = impostor_scan(W0, codes, target_i, target_j, buffer, cap)
    if init_cap:
        e2, l2, _, _, _ = impostor_scan(W0, codes, target_i, target_j, np.inf, init_cap)
        e, l = np.concatenate([e, e2]), np.concatenate([l, l2])
    return sorted_unique(_keys(e, l, n))


class _Rounds:
    """The bookkeeping of :func:`lmnn_active_set`'s rounds: iterations, history, the last
    set's multipliers (the next round's warm start), times, the full F and the bound."""

    def __init__(self, scan_time: float):
        self.scan_time, self.smooth_time, self.polish_time = scan_time, 0.0, 0.0
        self.it, self.rounds = 0, 0
        self.history, self.sizes, self.trace = [], [], []
        self.alpha_keys, self.alpha_vals = np.zeros(0, np.int64), np.zeros(0)
        self.info_last = {}
        self.status = "max_iter reached"
        self.F_full = self.g = np.inf

    def start_alpha(self, skeys) -> np.ndarray:
        """The last round's multipliers on this round's set (0 on the new triplets)."""
        a0 = np.zeros(skeys.size)
        if self.alpha_keys.size:
            pos = np.searchsorted(skeys, self.alpha_keys)
            ok = (pos < skeys.size) & (skeys[np.minimum(pos, skeys.size - 1)] == self.alpha_keys)
            a0[pos[ok]] = self.alpha_vals[ok]
        return a0

    def callback(self, callback):
        """The round's callback: the user's, with ``round`` and the run's iteration count."""
        rnd, it = self.rounds, self.it

        def cb(d):
            return False if callback is None else callback(dict(d, round=rnd, iteration=d["iteration"] + it))

        return cb

    def after_solve(self, res: FastResult, skeys) -> None:
        self.it += res.sweeps
        self.history += [(h[0] + self.it - res.sweeps,) + tuple(h[1:]) for h in res.extra["history"]]
        self.alpha_keys, self.alpha_vals = skeys, res.lam
        self.info_last = {
            key: v for key, v in res.extra.items() if key not in ("objective", "dual_value", "status", "history")
        }
        self.smooth_time += res.extra.get("smooth_time", 0.0)
        self.polish_time += res.extra.get("polish_time", 0.0)
