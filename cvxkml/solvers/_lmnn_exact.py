"""The exact working-set finish of the LMNN solver: eq. 18 on the triplets near the margin,
solved by a primal-dual interior-point method, certified on the whole problem.

Why.  On the Wang et al. (2011) inner-CV fits with polynomial kernels of degree 8-10 the
PDHG stalls above the optimum and no multipliers recovered from its point certify it.  On a
Wine degree-10 fit (r = 75, 20 500 triplets) the PDHG stopped at F = 185.34822 with a best
bound of 185.29678; the optimum is 185.31999 (this finish), so the primal was 1.5e-4 above
it.  The restricted-dual barrier of :func:`cvxkml.solvers.lmnn._barrier_dual` stopped at
184.77 there: a dual-only barrier runs off its central path once G(α) is singular to 1e-12
of its norm (the optimal metric has eigenvalues 2 144 and 10 in those coordinates).  A
primal-dual method moves X̂ and α together and does not have that weakness.

The problem.  With the triplets split at the PDHG's point X̂₀ into W (hinge argument
1 + d(i, j) − d(i, l) at least −0.1: violated or near the margin; beyond
:data:`EXACT_MAX_TRIPLETS` of them, those nearest to 0), V (the violated ones beyond the cap:
multiplier γ, hinge linear) and the rest (multiplier 0):

    (P)  min  ⟨C, X̂⟩ + γ Σ_W ξ_t + γ|V|   s.t.  ξ_t ≥ 1 + ⟨E_t, X̂⟩,  ξ ≥ 0,  X̂ ⪰ 0,
    (D)  max  Σ_W α_t + γ|V|              s.t.  S = C + Σ_W α_t E_t ⪰ 0,  0 ≤ α ≤ γ,

E_t = a_t a_tᵀ − b_t b_tᵀ (a_t = u_ij, b_t = u_il) and C = G(0) + γ Σ_V E_t = G(α_V) (eq. 18's
Lagrangian, :func:`cvxkml.formulas.lmnn.pair_weights`).  Where the split is right, as at
the optimum, both equal F*.

The method (:func:`working_set_ipm`): infeasible primal-dual path following with the HKM
direction and Mehrotra's predictor-corrector (Helmberg, Rendl, Vanderbei & Wolkowicz 1996;
Mehrotra 1992).  The complementarity pairs are (X̂, S), (μ, α) and (ξ, γ − α), μ_t = ξ_t −
1 − ⟨E_t, X̂⟩ the slack of the hinge rows.  Eliminating ΔX̂, Δμ, Δξ leaves one K × K system
per step, (M + diag(d)) Δα = h, with the Schur matrix M_ts = tr(E_t X̂ E_s S⁻¹):

    M = (A X̂ Aᵀ)∘(A S⁻¹ Aᵀ) + (B X̂ Bᵀ)∘(B S⁻¹ Bᵀ) − Q − Qᵀ,   Q = (A X̂ Bᵀ)∘(A S⁻¹ Bᵀ),
    d_t = ξ_t / (γ − α_t) + μ_t / α_t,

(∘ elementwise), so a step costs O(K²r + K³/3) dense BLAS (measured steps and seconds on the
stalled fits: reference/wang2011-mkl.md, "The exact working-set finish").

Nothing the method reports is trusted.  Its X̂ is projected on the PSD cone and F is
evaluated on *every* triplet (an upper bound on F*); α (γ on V, 0 outside W ∪ V) is a dual
point of the whole problem, certified by :func:`cvxkml.formulas.lmnn.lmnn_dual_value` (a
lower bound on F*).  Triplets the new point moves to the margin join W (held ones that are
no longer clearly violated, dropped ones that are violated or on the margin) and the problem
is solved again, a cutting-plane loop that ends when the recomputed gap closes, when no
triplet joins, when the set is full (:data:`EXACT_GROWN_TRIPLETS`), or after
:data:`EXACT_ROUNDS` solves.  Between two steps the interpreter
runs, so Ctrl-C acts within one step (under a second at K = 3 000).
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from ..formulas.lmnn import (
    LMNNTriplets,
    laplacian_quadratic,
    lmnn_dual_value,
    lmnn_objective,
    pair_weights,
    pairs_reach_null,
    pull_basis,
    sorted_unique,
)

__all__ = [
    "EXACT_GROWN_TRIPLETS",
    "EXACT_MAX_TRIPLETS",
    "EXACT_ROUNDS",
    "EXACT_SECONDS",
    "evaluable",
    "exact_finish",
    "null_scale",
    "working_set_ipm",
]

#: at most this many triplets in the first working set (the ones nearest to the margin);
#: the K × K Schur matrix is 72 MB at 3 000
EXACT_MAX_TRIPLETS = 3_000
#: the cutting-plane rounds grow the working set to at most this many triplets (the joining
#: ones nearest to the margin first); 288 MB of Schur matrix, K³/3 = 7e10 flops a step.
#: Some inner-CV fits have more than 3 000 triplets near the margin, and their finish needs
#: the larger set (reference/wang2011-mkl.md)
EXACT_GROWN_TRIPLETS = 6_000
#: at most this many interior-point solves (the cutting-plane rounds over the triplets)
EXACT_ROUNDS = 4
#: the time limit of one interior-point solve, in seconds (checked between steps)
EXACT_SECONDS = 300.0
#: a triplet with hinge argument 1 + d(i, j) − d(i, l) within ±this joins the first working set
_START_MARGIN = 0.1
#: a triplet with hinge argument at least −this at a new point joins the working set
_JOIN_MARGIN = 1e-6
#: interior-point steps per solve
_IPM_MAX_ITER = 100
#: the method stops when ν has fallen by less than 10 % over this many steps (jammed: on small
#: draws it sat at ν ≈ 1e-10 for 80 steps, its point unchanged)
_JAM_STEPS = 5
#: fraction of the step to the boundary of the cones that a step takes
_STEP_FRACTION = 0.95


def _sym(M) -> np.ndarray:
    return 0.5 * (M + M.T)


def _e_sum(A, B, w, base=None) -> np.ndarray:
    """base + Σ_t w_t E_t = base + Σ_t w_t (a_t a_tᵀ − b_t b_tᵀ) (not symmetrized; base
    added first)."""
    P = (A.T * w) @ A
    return (P if base is None else base + P) - (B.T * w) @ B


def _e_inner(A, B, M) -> np.ndarray:
    """⟨E_t, M⟩ = a_tᵀ M a_t − b_tᵀ M b_t for every row t."""
    return np.einsum("ij,ij->i", A @ M, A) - np.einsum("ij,ij->i", B @ M, B)


def _cone_step(L, D) -> float:
    """The largest τ with L Lᵀ + τ D ⪰ 0 (inf when D ⪰ 0)."""
    Y = solve_triangular(L, solve_triangular(L, D, lower=True).T, lower=True)
    lam = float(np.linalg.eigvalsh(_sym(Y))[0])
    return np.inf if lam >= 0.0 else -1.0 / lam


def _box_step(v, dv) -> float:
    """The largest τ with v + τ dv >= 0 (inf when dv >= 0)."""
    neg = dv < 0.0
    return float(np.min(-v[neg] / dv[neg])) if np.any(neg) else np.inf


def working_set_ipm(C, A, B, gamma: float, gap: float, max_iter: int = _IPM_MAX_ITER, seconds: float = np.inf):
    """Solve (P) and (D) of the module docstring by primal-dual path following.

    Parameters
    ----------
    C : ndarray (r, r)
        The linear term (symmetric).
    A, B : ndarray (K, r)
        The rows a_t = u_ij and b_t = u_il of the working triplets.
    gamma : float
        The box of the multipliers, 0 <= α <= γ.
    gap : float
        Stop when ⟨C, X̂⟩ + γ Σ ξ − Σ α <= gap, the hinge rows are met to 1e-9 and S to 1e-10.
    max_iter : int
        At most this many steps.
    seconds : float
        Stop after the first step that ends past this many seconds.

    Returns
    -------
    X : ndarray (r, r)
        The primal point (symmetric; PSD up to round-off).
    alpha : ndarray (K,)
        The multipliers, in (0, γ).
    n_steps : int
        Steps taken.  Neither is certified here: the caller evaluates both on the whole problem.
    """
    t0 = time.perf_counter()
    r, K = C.shape[0], A.shape[0]
    scale = max(1.0, float(np.linalg.norm(C, 2)))
    alpha = np.full(K, 0.5 * gamma)
    S = _sym(_e_sum(A, B, alpha, C))
    low = float(np.linalg.eigvalsh(S)[0])
    if low < 1e-2 * scale:  # an infeasible start: S is kept apart from C + Σ α E, its residual shrinks
        S += (1e-2 * scale - low) * np.eye(r)
    X, mu, xi = np.eye(r), np.ones(K), np.ones(K)
    n = r + 2 * K
    steps = 0
    last = (X, alpha)
    rd_tol, rd_min = 1e-9 * (1.0 + np.sqrt(K)), np.inf
    nus = []  # complementarity by step: the method stops when it no longer falls
    while steps < max_iter:
        inside = np.all((alpha > 0.0) & (alpha < gamma) & (mu > 0.0) & (xi > 0.0))
        if not (inside and np.all(np.isfinite(X)) and np.all(np.isfinite(S))):
            X, alpha = last  # round-off pushed a variable onto its bound: keep the last point
            break
        prev, last = last, (X, alpha)
        Rp = _sym(_e_sum(A, B, alpha, C) - S)
        rd = 1.0 + _e_inner(A, B, X) - xi + mu
        rd_norm = float(np.linalg.norm(rd))
        if rd_min <= rd_tol and rd_norm > max(10.0 * rd_min, rd_tol):
            # the hinge rows, once met, lost to round-off: keep the last point that met them
            # (a guard: with Δμ taken from those rows, below, rd only shrinks in exact arithmetic)
            X, alpha = prev
            break
        rd_min = min(rd_min, rd_norm)
        nu = (float(np.sum(X * S)) + alpha @ mu + (gamma - alpha) @ xi) / n
        nus.append(nu)
        if len(nus) > _JAM_STEPS and nu > 0.9 * nus[-1 - _JAM_STEPS]:
            break  # jammed at round-off: ν down by less than 10 % in the last steps
        duality = float(np.sum(C * X)) + gamma * float(xi.sum()) - float(alpha.sum())
        if abs(duality) <= gap and rd_norm <= rd_tol and np.linalg.norm(Rp) <= 1e-10 * scale:
            break
        if time.perf_counter() - t0 > seconds:
            break
        try:
            L = np.linalg.cholesky(S)
            LX = np.linalg.cholesky(X)
        except np.linalg.LinAlgError:  # round-off at the end of the path: keep the last point
            break
        Si = _sym(cho_solve((L, True), np.eye(r)))
        AX, BX, AS, BS = A @ X, B @ X, A @ Si, B @ Si
        M = (AX @ A.T) * (AS @ A.T)
        M += (BX @ B.T) * (BS @ B.T)
        Q = (AX @ B.T) * (AS @ B.T)
        M -= Q + Q.T
        del Q
        M[np.diag_indices(K)] += xi / (gamma - alpha) + mu / alpha
        factor = None
        for shift in (0.0, 1e-14, 1e-12, 1e-10):  # round-off can make M + D indefinite near the end
            try:
                Ms = M + shift * float(np.max(np.diag(M))) * np.eye(K) if shift else M
                factor = cho_factor(Ms, lower=True, check_finite=False)
                break
            except np.linalg.LinAlgError:
                continue
        del M
        if factor is None:
            break
        eS = np.einsum("ij,ij->i", AS, A) - np.einsum("ij,ij->i", BS, B)  # ⟨E_t, S⁻¹⟩
        eXRS = _e_inner(A, B, X @ Rp @ Si)

        def direction(target, pred=None):
            """The Newton direction to the point with complementarity ``target`` (0: the
            predictor); with ``pred`` (the predictor's direction) Mehrotra's corrector."""
            h = 1.0 + target * (eS + 1.0 / alpha - 1.0 / (gamma - alpha)) - eXRS
            N, second_mu, second_xi = None, 0.0, 0.0
            if pred is not None:
                da_p, dS_p, dX_p, dmu_p, dxi_p = pred
                N = dX_p @ dS_p @ Si
                h -= _e_inner(A, B, N)
                second_mu, second_xi = da_p * dmu_p, da_p * dxi_p
                h -= second_xi / (gamma - alpha) + second_mu / alpha
            da = cho_solve(factor, h, check_finite=False)
            dS = _sym(_e_sum(A, B, da) + Rp)
            G = target * Si - X - X @ dS @ Si
            if N is not None:
                G -= N
            dxi = (target - (gamma - alpha) * xi + second_xi + xi * da) / (gamma - alpha)
            dX = _sym(G)
            # Δμ from the hinge rows themselves, ⟨E_t, ΔX̂⟩ − Δξ_t + Δμ_t = −rd_t, not from its
            # complementarity row: the step then keeps rd at (1 − τ)·rd whatever the error of
            # the Schur solve, which otherwise let rd grow from 7e-10 to 1.4e-6 at the end of the
            # path (a 14-point draw; F 1.8e-7 above the optimum)
            dmu = -rd - _e_inner(A, B, dX) + dxi
            return da, dS, dX, dmu, dxi

        def lengths(d):
            da, dS, dX, dmu, dxi = d
            tp = min(1.0, _cone_step(LX, dX), _box_step(mu, dmu), _box_step(xi, dxi))
            td = min(1.0, _cone_step(L, dS), _box_step(alpha, da), _box_step(gamma - alpha, -da))
            return tp, td

        pred = direction(0.0)
        tp, td = lengths(pred)
        da, dS, dX, dmu, dxi = pred
        nu_aff = (
            float(np.sum((X + tp * dX) * (S + td * dS)))
            + (alpha + td * da) @ (mu + tp * dmu)
            + (gamma - alpha - td * da) @ (xi + tp * dxi)
        ) / n
        sigma = min(1.0, max(nu_aff, 0.0) / nu) ** 3
        corr = direction(sigma * nu, pred)
        tp, td = lengths(corr)
        tp, td = _STEP_FRACTION * tp, _STEP_FRACTION * td
        da, dS, dX, dmu, dxi = corr
        X, mu, xi = _sym(X + tp * dX), mu + tp * dmu, xi + tp * dxi
        alpha, S = alpha + td * da, _sym(S + td * dS)
        steps += 1
    return X, alpha, steps


def null_scale(p_R, n_N, trip: LMNNTriplets, gamma: float, reach=None) -> float:
    """The c >= 0 minimizing F(X_R + c V_N V_Nᵀ) exactly: with d_p = p_R + c·n_N (pair
    distances of X_R and squared lengths in N), F(c) = A + B c + γ Σ_t [z_t + s_t c]_+ is
    convex and piecewise linear; walk its breakpoints until the slope turns non-negative.

    ``reach`` (per pair, optional; :func:`cvxkml.formulas.lmnn.pairs_reach_null`): the pairs
    whose n_N is real; the others' is round-off (1e-31 where their true length in N is 0)
    and counts as 0.  Counted, a violated triplet whose impostor pair has such a length
    would be switched off at c = 1e31, where every distance is round-off times c.

    The slope after each breakpoint is summed from terms of one sign each (the pull and the
    rising terms switched on so far; the falling terms not yet switched off, summed from the
    last breakpoint back), never as a running total: after the large falling terms switch
    off, the slope left can be 1e-12 of what they summed to (impostor pairs with a squared
    length of 1e-16 in N: a scale of 1e15 is optimal), below a running sum's round-off."""
    if reach is not None:
        n_N = np.where(reach, n_N, 0.0)
    z = 1.0 + p_R[trip.tt] - p_R[trip.ti]
    sl = n_N[trip.tt] - n_N[trip.ti]
    # the slope just right of 0 from the terms active there (z > 0, or z = 0 and rising)
    active0 = (z > 0) | ((z == 0) & (sl > 0))
    rise0 = (1.0 - gamma) * float(n_N[trip.target_pair].sum()) + gamma * float(sl[active0 & (sl > 0)].sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        c_t = -z / sl
    cross = (sl != 0) & (c_t > 0) & np.isfinite(c_t)
    order = np.argsort(c_t[cross], kind="stable")
    cs, ss = c_t[cross][order], sl[cross][order]
    # crossing a breakpoint: a falling term (s < 0, active from 0) switches off, a rising
    # one (s > 0, z < 0) switches on; the falling terms still on after breakpoint k:
    fall = np.where(ss < 0, -ss, 0.0)
    fall_left = np.concatenate([np.cumsum(fall[::-1])[::-1][1:], [0.0]]) if ss.size else fall
    if not rise0 < gamma * float(fall.sum()):
        return 0.0
    slope_after = rise0 + gamma * (np.cumsum(np.where(ss > 0, ss, 0.0)) - fall_left)
    hit = np.flatnonzero(slope_after >= 0.0)
    return float(cs[hit[0]]) if hit.size else float(cs[-1]) if cs.size else 0.0


def evaluable(f_split: float, f_matrix: float, tol: float) -> bool:
    """Whether a point extended along G(0)'s null space, X̂ = X̂_R + c·P_N, may be kept: F from
    the split pair distances d_p = d_R(p) + c·‖P_N u_p‖² (each term computed well, no
    cancellation) and F from the matrix itself (through its eigenvector factor, as every later
    evaluation does) agree to 1e-3·tol·max(1, F).  When c is huge the factor's small
    eigenvectors carry round-off of ε·c: on one draw the matrix evaluated to F = 11.09 where
    the optimum is 14.02; such a point is not kept."""
    return abs(f_split - f_matrix) <= 1e-3 * tol * max(1.0, abs(f_split))


def _psd_part(X) -> np.ndarray:
    lam, V = np.linalg.eigh(_sym(X))
    return (V * np.maximum(lam, 0.0)) @ V.T


def exact_finish(
    U,
    trip: LMNNTriplets,
    gamma: float,
    distances,
    X,
    f_up: float,
    g_low: float,
    tol: float,
    max_start: int | None = None,
    free=None,
):
    """The exact working-set finish from the point X̂ (see the module docstring).

    It runs in the coordinates of :func:`cvxkml.formulas.lmnn.pull_basis` (U·W, G(0) the
    identity off its null space N), where the interior-point method starts from X̂ = I: on a
    Wine degree-10 fit whose G(0) spans eigenvalues from 8.8e-13 to 1 of the largest it
    certified 1.6e-7 there and nothing in the solver's coordinates.  When N is not empty, the
    triplets whose impostor pair reaches N (:func:`cvxkml.formulas.lmnn.reaches_null`) keep
    α = 0 and leave the working set (they can be satisfied for free), the method runs on
    range(G(0)) — or, when no triplet is left, the range part is 0, the optimum of its pull
    alone — and its point is extended by c·(the projector on N) with c the exact minimizer
    of F along it (:func:`null_scale`).

    Parameters
    ----------
    U : ndarray (n, r)
        The solver's feature factor (its coordinates).
    trip : LMNNTriplets
        The problem's triplets.
    gamma : float
        Weight of the hinge terms.
    distances : callable
        X̂ ↦ the pair distances in the solver's coordinates (its evaluation of d(i, j)).
    X : ndarray (r, r)
        The point whose triplets near the margin start the working set.
    f_up, g_low : float
        The best objective value and certified bound so far.
    tol : float
        The relative gap (F − g) / max(1, |F|) at which the loop stops.
    max_start : int, optional
        Return None instead of solving when more triplets than this start the working set
        (an early, speculative finish that should cost seconds, not a truncated set).
    free : ndarray of bool (T,), optional
        Triplets satisfied for free in the problem's own coordinates
        (:func:`cvxkml.formulas.lmnn.free_triplets`), which U's may not show: they keep α = 0
        and leave the working set too.

    Returns
    -------
    dict or None
        None when there is nothing to finish (G(0) = 0, or no triplet violated or within 0.1
        of the margin outside those that reach G(0)'s null space while some triplets do not
        reach it); else ``objective`` and
        ``matrix`` (the best
        point found in the solver's coordinates, F on the whole problem by ``distances``, or
        inf and None), ``dual_value`` and ``alpha`` (the best certified bound and its
        multipliers, or −inf and None), ``rounds``, ``working_triplets``, ``steps``
        (interior-point steps) and ``time``.
    """
    if trip.n_triplets == 0:
        return None
    t0 = time.perf_counter()
    basis = pull_basis(U, trip, gamma)
    if basis is None:
        return None
    W = basis.W
    Uf = np.ascontiguousarray(U @ W)
    rng = ~basis.null  # G(0) is the identity there
    Du = Uf[trip.pi] - Uf[trip.pj]
    # impostor pair reaches the null space: satisfied for free, α = 0
    reach = pairs_reach_null(U, trip, basis.VN) if np.any(basis.null) else np.zeros(trip.n_pairs, dtype=bool)
    free = reach[trip.ti] if free is None else reach[trip.ti] | np.asarray(free, dtype=bool)
    Dr = np.ascontiguousarray(Du[:, rng])
    n_N = np.einsum("ij,ij->i", Du[:, ~rng], Du[:, ~rng])  # squared pair lengths in N (none: 0)
    p = distances(X)
    arg = 1.0 + p[trip.tt] - p[trip.ti]
    W_set = np.flatnonzero((arg >= -_START_MARGIN) & ~free)  # violated or near the margin
    if W_set.size == 0 and not np.all(free):
        return None
    if max_start is not None and W_set.size > max_start:
        return None
    if W_set.size > EXACT_MAX_TRIPLETS:  # the triplets nearest to the margin
        W_set = np.sort(W_set[np.argsort(np.abs(arg[W_set]), kind="stable")[:EXACT_MAX_TRIPLETS]])
    held = (arg > 0.0) & ~free
    held[W_set] = False  # the violated triplets beyond the cap: α_t = γ, ξ_t = 1 + ⟨E_t, X̂⟩ (linear)
    best = {"objective": np.inf, "matrix": None, "dual_value": -np.inf, "alpha": None}
    rounds, steps = 0, 0
    while rounds < EXACT_ROUNDS:
        rounds += 1
        alpha = np.where(held, gamma, 0.0)
        C = laplacian_quadratic(Uf, trip, pair_weights(trip, alpha, gamma))[np.ix_(rng, rng)]
        gap = 1e-3 * tol * max(1.0, abs(min(f_up, best["objective"])))
        if W_set.size:
            A, B = Dr[trip.tt[W_set]], Dr[trip.ti[W_set]]
            Xr, aw, n_steps = working_set_ipm(C, A, B, gamma, gap, seconds=EXACT_SECONDS)
        else:  # every triplet reaches N: the range problem is min ⟨G(0), X̂_R⟩, at X̂_R = 0
            Xr, aw, n_steps = np.zeros((int(rng.sum()),) * 2), np.zeros(0), 0
        steps += n_steps
        if not (np.all(np.isfinite(Xr)) and np.all(np.isfinite(aw))):
            break
        Xf = np.zeros_like(W)
        Xf[np.ix_(rng, rng)] = _psd_part(Xr)
        Xw = _sym(W @ Xf @ W.T)
        p = distances(Xw)
        if not np.all(rng):  # the exact step along the null space
            c = null_scale(p, n_N, trip, gamma, reach)
            Xf[~rng, ~rng] += c
            Xc = _sym(W @ Xf @ W.T)
            p_c = distances(Xc)
            if evaluable(lmnn_objective(p + c * n_N, trip, gamma), lmnn_objective(p_c, trip, gamma), tol):
                Xw, p = Xc, p_c
        f = lmnn_objective(p, trip, gamma)
        alpha[W_set] = np.clip(aw, 0.0, gamma)
        g = lmnn_dual_value(U, trip, alpha, gamma, objective_bound=min(f, f_up))
        if f < best["objective"]:
            best["objective"], best["matrix"] = f, Xw
        if g > best["dual_value"]:
            best["dual_value"], best["alpha"] = g, alpha
        f_best = min(f_up, best["objective"])
        if f_best - max(g_low, best["dual_value"]) <= tol * max(1.0, abs(f_best)):
            break
        # triplets join the working set where the new point puts them near the margin: held
        # ones that are no longer clearly violated, dropped ones that are violated or on it
        arg = 1.0 + p[trip.tt] - p[trip.ti]
        join = np.where(held, arg <= _START_MARGIN, arg >= -_JOIN_MARGIN) & ~free
        join[W_set] = False
        new = np.flatnonzero(join)
        room = EXACT_GROWN_TRIPLETS - W_set.size
        if new.size == 0 or room <= 0:
            break  # nothing new, or the set is as large as the Schur system is sized for
        if new.size > room:  # the joining triplets nearest to the margin
            new = np.sort(new[np.argsort(np.abs(arg[new]), kind="stable")[:room]])
        held[new] = False
        W_set = sorted_unique(W_set, new)
    best.update(rounds=rounds, working_triplets=int(W_set.size), steps=steps, time=time.perf_counter() - t0)
    return best
