"""POLA in kernel space (Jain et al. 2012 §5.2; Shalev-Shwartz et al. 2004): the Frobenius
regularizer ½‖X̂‖²_F over X̂ ⪰ 0 with linear constraints tr(X̂ Â_c) <= t_c, solved on its
Lagrange dual by accelerated projected gradient (FISTA with adaptive restart), polished by
a projected semismooth Newton method.

Dual (f*_+(M) = ½‖P₊(M)‖², P₊ the projection on the PSD cone):

    g(λ) = −½‖P₊(−A(λ))‖²_F − λᵀt,   A(λ) = Σ_c λ_c Â_c,   λ >= 0,
    ∇g(λ)_c = tr(X̂(λ) Â_c) − t_c,     X̂(λ) = P₊(−A(λ))   (the primal map),

concave, with ∇g Lipschitz of constant L = ‖𝒜‖² = λ_max(G), G_cd = tr(Â_c Â_d) (P₊ is
non-expansive).  FISTA steps λ ← max(0, y + ∇g(y)/L) with O'Donoghue–Candès gradient
restarts.  Newton polish: the generalized Hessian of −g is H = 𝒜* 𝒥 𝒜 with
𝒥[D] = V(Γ ∘ VᵀDV)Vᵀ (−A = V diag μ Vᵀ, Γ_kl the divided differences of max(μ, 0));
projected Newton (Bertsekas 1982) on the free set, with an Armijo search along the
projection arc; the Newton system is solved densely when p·r² is small (O(p² r²) per
Hessian), else by conjugate gradients with matrix-free products Hv, formed in the
eigenbasis (Y = U V once per Newton step) on the rows of the k positive eigenvalues only
(Γ vanishes on the non-positive block): O(p r k) each.

Stopping rule (checked at the current dual point λ, with X̂ = X̂(λ)):

    relative duality gap   |f(X̂) − g(λ)| / max(f(X̂), |g(λ)|)               <= tol, and
    relative violation     max_c (tr(X̂Â_c) − t_c)₊ / max(|t_c|, 10⁻⁶‖Â_c‖_F ‖X̂‖_F) <= tol

(relative to the target; the floor only matters for t_c ≈ 0, e.g. relative constraints
with zero margin, where round-off in tr(X̂Â_c) is of order ε‖Â_c‖‖X̂‖), where
f(X̂) − g(λ) = Σ_c λ_c (t_c − tr(X̂Â_c)).  Since ½‖·‖² is 1-strongly convex,
‖X̂(λ) − X̂*‖²_F <= 2 (g* − g(λ)).

Constraints arrive as signed rank-one terms (:mod:`cvxkml.declare.terms`):
Â_c = Σ_{a ∈ c} w_a u_a u_aᵀ.  Cost per FISTA iteration: one r × r eigendecomposition
plus O(p r²) (A(λ) over the terms with λ ≠ 0 only).  The Lipschitz constant λ_max(G) is
found by Lanczos above 500 constraints.  No CVXPY here.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackError, eigsh

from .._config import blas_limit
from ._newton import cg
from ._terms import RankOneTerms
from .result import NONFINITE, NOT_CONVERGED, OK, FastResult

__all__ = ["pola_dual", "psd_part"]

_TINY = np.finfo(np.float64).tiny


@blas_limit()
def psd_part(M):
    """(P₊(M), eigenvalues, eigenvectors) of a symmetric M."""
    mu, V = np.linalg.eigh(0.5 * (M + M.T))
    return (V * np.maximum(mu, 0.0)) @ V.T, mu, V


class _Ops(RankOneTerms):
    """A(λ), its adjoint, norms and the Hessian for signed rank-one terms."""

    def __init__(self, U, w, ptr, t):
        super().__init__(U, w, ptr, t)
        self._basis = None  # hess_vec's cache: (V, Γ, U V, …) of one point

    def _aggregate(self, Ht):
        """Σ over the terms of each constraint, rows and columns: Sᵀ Ht S with S the
        term-to-constraint indicator (Ht itself when every constraint is one term)."""
        p = self.U.shape[0]
        if p == self.m and np.array_equal(self.owner, np.arange(p)):
            return Ht
        S = sp.csr_matrix((np.ones(p), (np.arange(p), self.owner)), shape=(p, self.m))
        return np.asarray((S.T @ (S.T @ Ht).T).T)

    def adjoint(self, X):
        q = self.w * np.einsum("ij,ij->i", self.U @ X, self.U)
        return np.bincount(self.owner, weights=q, minlength=self.m)

    def lipschitz(self, exact_max_terms=4000, rng_seed=0):
        """λ_max(G), G_cd = tr(Â_c Â_d): exact for up to ``exact_max_terms`` terms, else power
        iteration with a 10 % margin."""
        p = self.U.shape[0]
        if p == 0:
            return 1.0
        if p <= exact_max_terms:
            Gt = self.U @ self.U.T
            Gt = (Gt * Gt) * np.outer(self.w, self.w)
            G = self._aggregate(Gt)
            G = 0.5 * (G + G.T)
            if self.m <= 500:
                return max(float(np.linalg.eigvalsh(G)[-1]), _TINY)
            # the largest eigenvalue by Lanczos (a dense eigvalsh of an m × m G costs m³)
            v0 = np.random.default_rng(rng_seed).standard_normal(self.m)
            try:
                top = float(eigsh(G, k=1, which="LA", tol=1e-12, v0=v0, return_eigenvectors=False)[0])
            except ArpackError:
                top = float(np.linalg.eigvalsh(G)[-1])
            return max(top, _TINY)
        x = np.random.default_rng(rng_seed).normal(size=self.m)
        L = 0.0
        for _ in range(100):
            y = self.adjoint(self.A(x))
            ny = np.linalg.norm(y)
            if ny == 0.0:
                return 1.0
            L = ny / np.linalg.norm(x)
            x = y / ny
        return 1.1 * L

    @staticmethod
    def divided_differences(mu):
        """Γ_kl = (max(μ_k,0) − max(μ_l,0)) / (μ_k − μ_l) (1 / 0 on ties of positive /
        non-positive eigenvalues): the Jacobian of P₊ is D ↦ V(Γ ∘ VᵀDV)Vᵀ."""
        fp = np.maximum(mu, 0.0)
        dm = mu[:, None] - mu[None, :]
        same = np.abs(dm) <= 1e-14 * max(1.0, float(np.max(np.abs(mu))))
        return np.where(
            same, (mu[:, None] > 0) & (mu[None, :] > 0), (fp[:, None] - fp[None, :]) / np.where(same, 1.0, dm)
        ).astype(float)

    def hess_vec(self, Gam, V, v):
        """H v = 𝒜*(V(Γ ∘ Vᵀ A(v) V)Vᵀ) (matrix-free), computed in the eigenbasis: with
        Y = U V (cached per V), Vᵀ A(v) V = Yᵀ diag(c) Y (c the term weights of v) and the
        adjoint term a is w_a y_aᵀ (Γ ∘ ·) y_a.  Where Γ vanishes on a block (the
        eigenvalues in a flat piece of f*: X̂ = P₊(·) for Frobenius and trace), only the
        rows of the k other eigenvalues are formed: O(p r k) instead of O(p r² + r³)."""
        cache = self._basis
        if cache is None or cache[0] is not V or cache[1] is not Gam:
            Y = self.U @ V
            flat = np.diag(Gam) == 0.0
            if flat.any() and np.any(Gam[np.ix_(flat, flat)] != 0.0):
                flat = np.zeros_like(flat)
            P = np.flatnonzero(~flat)
            Z = np.flatnonzero(flat)
            cache = self._basis = (
                V,
                Gam,
                Y,
                P,
                Z,
                np.ascontiguousarray(Y[:, P]),
                np.ascontiguousarray(Y[:, Z]),
                np.ascontiguousarray(Gam[P]),
            )
        _, _, Y, P, Z, YP, YZ, GP = cache
        coef = self.w * v[self.owner]
        nz = np.flatnonzero(coef)
        if nz.size == 0:
            return np.zeros(self.m)
        Dp = (YP[nz] * coef[nz, None]).T @ Y[nz]  # rows P of Yᵀ diag(c) Y
        Mp = GP * Dp  # rows P of Γ ∘ Dt
        q = np.einsum("ij,ij->i", YP @ Mp, Y)
        if Z.size:
            q += np.einsum("ij,ij->i", YZ @ Mp[:, Z].T, YP)
        return np.bincount(self.owner, weights=self.w * q, minlength=self.m)

    def hessian(self, mu, V, Gam=None):
        """H = −∇²g (generalized, m × m, PSD) at the point with −A(λ) = V diag(μ) Vᵀ,
        dense: O(p² r²).  ``Gam``: the divided differences of the primal map's eigenvalue
        function (default: those of max(μ, 0), the Frobenius case)."""
        if Gam is None:
            Gam = self.divided_differences(mu)
        Ut = self.U @ V  # (p, r)
        Q = (Ut[:, :, None] * Ut[:, None, :]).reshape(Ut.shape[0], -1)
        Ht = (Q * Gam.ravel()) @ Q.T * np.outer(self.w, self.w)
        H = self._aggregate(Ht)
        return 0.5 * (H + H.T)


def _evaluate(ops, lam):
    """(g, ∇g, X̂, f, μ, V) at λ; g = −inf when A(λ) overflows."""
    A = ops.A(lam)
    if not np.all(np.isfinite(A)):
        nan = np.full(ops.m, np.nan)
        return -np.inf, nan, None, np.inf, None, None
    X, mu, V = psd_part(-A)
    f = 0.5 * float(np.sum(np.maximum(mu, 0.0) ** 2))
    g = -f - float(lam @ ops.t)
    grad = ops.adjoint(X) - ops.t
    return g, grad, X, f, mu, V


def _kkt(ops, lam, g, grad, X, f):
    """(relative gap, relative violation) of the stopping rule."""
    gap = float(lam @ (-grad))  # f − g = Σ λ_c (t_c − tr(X̂Â_c))
    rel_gap = abs(gap) / max(f, abs(g), _TINY)
    scale = np.maximum(np.maximum(np.abs(ops.t), 1e-6 * ops.norms * np.linalg.norm(X)), _TINY)
    rel_viol = float(np.max(np.maximum(grad, 0.0) / scale, initial=0.0))
    return rel_gap, rel_viol


def _newton(ops, lam, L, tol, max_steps=30, sigma=1e-4, dense=True):
    """Projected semismooth Newton ascent from λ; returns (λ, steps, converged).  The
    Newton system on the free set is solved densely (``dense``) or by conjugate gradients
    with matrix-free Hessian products (Newton-CG, for large p·r²)."""
    g, grad, X, f, mu, V = _evaluate(ops, lam)
    for step in range(max_steps):
        rg, rv = _kkt(ops, lam, g, grad, X, f)
        if rg <= tol and rv <= tol:
            return lam, step, True
        eps = float(np.max(np.abs(lam - np.maximum(lam + grad / L, 0.0)), initial=0.0))
        active = (lam <= eps) & (grad < 0)
        free = ~active
        d = grad / L  # projected-gradient part on the active set
        if np.any(free) and dense:
            H = ops.hessian(mu, V)[np.ix_(free, free)]
            reg = 1e-12 * max(float(np.max(np.diag(H), initial=0.0)), _TINY)
            try:
                dF = np.linalg.lstsq(H + reg * np.eye(H.shape[0]), grad[free], rcond=1e-13)[0]
            except np.linalg.LinAlgError:
                return lam, step, False
            d[free] = dF
        elif np.any(free):
            Gam = ops.divided_differences(mu)
            reg = 1e-10 * L
            vfull = np.zeros(ops.m)

            def matvec(vF):
                vfull[:] = 0.0
                vfull[free] = vF
                return ops.hess_vec(Gam, V, vfull)[free] + reg * vF

            eta = min(0.1, max(1e-10, np.sqrt(max(rg, rv))))
            d[free] = cg(matvec, grad[free], eta, maxiter=min(500, 5 * int(np.sum(free)) + 10))[0]
        s = 1.0
        for _ in range(40):
            cand = np.maximum(lam + s * d, 0.0)
            gc, gradc, Xc, fc, muc, Vc = _evaluate(ops, cand)
            if np.isfinite(gc) and gc >= g + sigma * float(grad @ (cand - lam)) and gc >= g:
                break
            s *= 0.5
        else:
            return lam, step, False
        if gc <= g:  # no progress: stagnation
            return lam, step, False
        lam, g, grad, X, f, mu, V = cand, gc, gradc, Xc, fc, muc, Vc
    rg, rv = _kkt(ops, lam, g, grad, X, f)
    return lam, max_steps, (rg <= tol and rv <= tol)


@blas_limit()
def pola_dual(
    U,
    w,
    ptr,
    t,
    tol: float = 1e-9,
    max_iter: int = 20_000,
    lam0=None,
    newton: str | bool = "auto",
    check_every: int = 5,
    newton_budget: float = 1e6,
) -> FastResult:
    """Solve min ½‖X̂‖²_F s.t. X̂ ⪰ 0, tr(X̂Â_c) <= t_c on the dual (see the module doc).
    BLAS/LAPACK threads follow the ``blas_threads`` option (default 1: many small
    eigendecompositions, and multithreaded ones stall on a busy machine).

    Parameters
    ----------
    U, w, ptr, t : ndarray
        The constraints as signed rank-one terms (:mod:`cvxkml.declare.terms`).
    tol : float
        Tolerance of the stopping rule (relative gap and relative violation).
    max_iter : int
        Maximum number of FISTA iterations (Newton steps count too).
    lam0 : ndarray or None
        Warm start (λ >= 0), default 0.
    newton : bool or "auto"
        True / "auto" (Newton polish; dense Newton systems when p·r² <= ``newton_budget``,
        Newton-CG above) or False (FISTA only).
    check_every : int
        FISTA iterations between checks of the stopping rule.
    newton_budget : float
        Largest p·r² for which the Newton system is formed densely.

    Returns a :class:`~cvxkml.solvers.result.FastResult` with ``matrix`` = X̂(λ) (r × r,
    whitened), ``lam`` = λ, ``sweeps`` = iterations (FISTA + Newton), ``stop_value`` = the
    larger of the two stopping quantities, ``code`` OK / NOT_CONVERGED / NONFINITE (λ
    overflowed) and ``extra`` =
    {"rel_gap", "rel_violation", "fista_iterations", "newton_steps", "restarts",
    "lipschitz", "farkas", "infeasible"}; ``farkas`` = (μ_min(A(d)) / Σ d_c‖Â_c‖,
    dᵀt / Σ d_c|t_c|) for d = λ/Σλ: the first >= −1e-12 and the second <= −1e-6 is a
    Farkas certificate of infeasibility up to round-off (the dual diverges along d); the
    solver then stops early with ``infeasible`` = True (code NOT_CONVERGED).
    """
    ops = _Ops(U, w, ptr, t)
    m = ops.m
    t0 = time.perf_counter()
    lam = np.zeros(m) if lam0 is None else np.maximum(np.array(lam0, dtype=np.float64), 0.0)
    L = ops.lipschitz()
    use_newton = newton is True or newton == "auto"
    dense = ops.U.shape[0] * ops.r**2 <= newton_budget and ops.m <= 3000
    lam_prev = lam.copy()
    tk = 1.0
    restarts = 0
    newton_steps = 0
    next_newton = 50
    wait = 50
    it = 0
    converged = False
    rel_gap = rel_viol = np.inf
    infeasible = False
    nonfinite = False
    next_farkas = 100
    while True:
        g, grad, X, f, mu, V = _evaluate(ops, lam)
        if not np.isfinite(g):
            nonfinite = True
            break
        rel_gap, rel_viol = _kkt(ops, lam, g, grad, X, f)
        if rel_gap <= tol and rel_viol <= tol:
            converged = True
            break
        if it + newton_steps >= max_iter:
            break
        if it >= next_farkas:
            next_farkas = it + 100
            mmin, lin = ops.farkas_test(lam)
            if mmin >= -1e-12 and lin <= -1e-6:
                infeasible = True
                break
        if use_newton and it >= next_newton:
            lam_n, steps, ok = _newton(ops, lam, L, tol, max_steps=min(30, max_iter - it - newton_steps), dense=dense)
            newton_steps += steps
            if steps:
                lam, lam_prev, tk = lam_n, lam_n.copy(), 1.0
            if ok:
                continue  # re-evaluated (and accepted) at the loop top
            mmin, lin = ops.farkas_test(lam)
            if mmin >= -1e-12 and lin <= -1e-6:
                infeasible = True
                break
            next_newton = it + wait
            wait *= 2
        for _ in range(check_every):  # FISTA iterations between checks
            if it + newton_steps >= max_iter:
                break
            tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * tk * tk))
            y = lam + ((tk - 1.0) / tn) * (lam - lam_prev)
            Ay = ops.A(y)
            if not np.all(np.isfinite(Ay)):
                nonfinite = True
                break
            Xy, _, _ = psd_part(-Ay)
            new = np.maximum(y + (ops.adjoint(Xy) - ops.t) / L, 0.0)
            if float((y - new) @ (new - lam)) > 0.0:  # gradient restart
                tn = 1.0
                restarts += 1
            lam_prev, lam, tk = lam, new, tn
            it += 1
        if nonfinite:
            break
    A = ops.A(lam)
    if np.all(np.isfinite(A)):
        X, _, _ = psd_part(-A)
        farkas = ops.farkas_test(lam)
    else:
        nonfinite = True
        X = np.full((ops.r, ops.r), np.nan)
        farkas = (np.nan, np.nan)
    elapsed = time.perf_counter() - t0
    code = OK if converged else (NONFINITE if nonfinite else NOT_CONVERGED)
    return FastResult(
        matrix=0.5 * (X + X.T),
        lam=lam,
        xi=np.zeros(0),
        sweeps=int(it + newton_steps),
        stop_value=float(max(rel_gap, rel_viol)),
        code=code,
        bad_index=-1,
        time=elapsed,
        extra={
            "solver": "pola-dual",
            "rel_gap": float(rel_gap),
            "rel_violation": float(rel_viol),
            "fista_iterations": int(it),
            "newton_steps": int(newton_steps),
            "restarts": int(restarts),
            "lipschitz": float(L),
            "farkas": farkas,
            "infeasible": bool(infeasible),
        },
    )
