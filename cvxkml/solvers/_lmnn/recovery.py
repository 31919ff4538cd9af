"""Dual recovery of the LMNN solver (the certificate): multipliers from a primal point by
the restricted-dual barrier, by bounded least squares on the kink triplets, and the
least-cost repair that makes a multiplier vector dual feasible."""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.optimize import lsq_linear

from ...formulas.lmnn import (
    LMNNTriplets,
    laplacian_quadratic,
    lmnn_dual_value,
    lmnn_objective,
    pair_weights,
    rows_reach,
)

_POLISH_DELTAS = (1e-1, 1e-2, 1e-3, 1e-4)


_POLISH_DENSE_MAX = 1_000_000  # entries of the dense least-squares matrix


_POLISH_MAX_KINKS = 2_000  # beyond, the O(K³) least-squares recovery is not tried


def _polish_dual(U, trip: LMNNTriplets, gamma, X, p, delta, dense_max: int = _POLISH_DENSE_MAX):
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
    if kinks.size * r * q <= dense_max:
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
    least-squares steps that the explicit system could afford only when small (the matrix-free
    LSMR steps on the explicit system cost O(K·r·q) per product)."""
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
    is the optimum.  Why it is needed: at the optimum X̂ is often rank deficient, G(α)
    must then be PSD on X̂'s null space, which neither the PDHG's multipliers nor the
    least-squares recovery of :func:`_polish_dual` enforce; scaling their α back to feasibility
    costs 1e-5–1e-4 of the bound.  When T is singular (an exactly singular target pull: the
    constant direction of a kernel with an offset, or a direction no target pair sees) the SDP is
    solved on range(T) (:func:`_pull_range`), with the kinks whose impostor pair reaches T's null
    space held at α = 0; the caller certifies the α returned on the whole space
    (:func:`cvxkml.formulas.lmnn.lmnn_dual_value`), so this restriction can cost bound but never
    validity.  The start is the largest of s = α_k/γ = 10⁻³, 10⁻⁴, … that is strictly feasible (a
    nearly singular T admits only tiny multipliers on the kinks that reach its small eigenvalues).
    Returns α, or None when no start is strictly feasible or the restriction has too many kinks.

    With ``primal=True`` returns (α, Z) (or None): Z = G(α)⁻¹ / t at the last centre, the
    primal point of the log-barrier's central path (the matrix paired with the LMI; on
    range(G(0)) when the pull is singular, 0 on its null space).  Z ⪰ 0, so it is a feasible
    point of eq. 18 whose F the caller evaluates on the whole problem; where the split is
    right it is within about ν/t of the optimum.
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
            hk = np.einsum("ij,ij->i", Ut @ Ht, Vt)  # u_kᵀ H̃ v_k: one gemm (a three-operand einsum runs unblocked)
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
    s that makes G(sα) ⪰ 0, which loses more bound on a nearly feasible α.  Whatever it returns
    is certified by that bound."""
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


def _recover_dual(
    U, trip: LMNNTriplets, gamma, ops, X, f, best_g, best_alpha, tol, least_squares: bool = True, free=None
):
    """Dual recovery from the primal point X̂ (objective f): the restricted-dual barrier
    (:func:`_barrier_dual`) at the splits ``_BARRIER_DELTAS`` (smallest first: fewest
    kinks, cheapest), and only where it could not run the least-squares recovery
    (:func:`_polish_dual`).  Returns the better of (best_g, best_alpha) and the recovered
    bounds (every bound is certified by :func:`lmnn_dual_value`), and (F, X̂) of the best
    barrier primal point Z (:func:`_barrier_dual`, F evaluated on the whole problem), or
    (inf, None) when none was computed.  ``free``: the ``free`` triplets of every bound
    (:func:`lmnn_dual_value`)."""
    p_best = ops.distances(X)
    scale = max(1.0, abs(f))
    target = 0.1 * tol * scale
    if f - best_g > tol * scale:  # the best multipliers so far, made feasible at least cost
        a_rep = _repair_dual(U, trip, gamma, best_alpha)
        if a_rep is not None:
            g_rep = lmnn_dual_value(U, trip, a_rep, gamma, objective_bound=f, free=free)
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
        g_bar = lmnn_dual_value(U, trip, a_bar, gamma, objective_bound=min(f, f_primal), free=free)
        # Z only where its F is computed well: its round-off (about ε·tr Z·‖u_p‖² per pair
        # distance, over the pairs) far below tol, and F not below a bound (weak duality: on a
        # nearly singular kernel with a huge tr Z, F(Z) can round below the bound)
        if (
            f_z < min(f, f_primal)
            and f_z >= max(best_g, g_bar)
            and _EPS * float(np.trace(Z)) * pair_scale * trip.n_pairs <= 1e-3 * tol * max(1.0, abs(f_z))
        ):
            f_primal, X_primal = f_z, Z
        if g_bar > best_g:
            best_g, best_alpha = g_bar, a_bar
    # the least-squares recovery only as the fallback of a barrier that could not run
    # (too many kinks, or a singular target pull): where the barrier ran, its bound is
    # the better one and the least squares would only cost time
    for delta in () if barrier_ran or not least_squares else _POLISH_DELTAS:
        if closed():
            break
        a_pol = _polish_dual(U, trip, gamma, X, p_best, delta)
        a_fix = _repair_dual(U, trip, gamma, a_pol)
        for a_c in (a_pol,) if a_fix is None else (a_pol, a_fix):
            g_c = lmnn_dual_value(U, trip, a_c, gamma, objective_bound=f, free=free)
            if g_c > best_g:
                best_g, best_alpha = g_c, a_c
    return best_g, best_alpha, f_primal, X_primal
