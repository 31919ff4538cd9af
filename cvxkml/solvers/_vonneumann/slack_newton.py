"""The von Neumann problem with slack solved on its Lagrange dual by projected Newton-CG
(the slack makes the dual Hessian positive definite)."""

from __future__ import annotations

import time

import numpy as np

from ..._config import blas_limit
from .._newton import cg, projected_armijo
from ..result import NONFINITE, NOT_CONVERGED, OK, FastResult


# --------------------------------------------------------------------- dual Newton (slack)
@blas_limit()
def _slack_newton_direction(st, dl, gamma, rel_gap, cg_maxiter):
    """The projected Newton direction of :func:`vonneumann_slack_newton` at the dual point
    ``st`` (its ``evaluate`` dict): preconditioned CG on −∇²g over the free variables
    (forcing term η = min(0.1, √gap)), the scaled gradient ∇g / diag(−∇²g) on the ε-active
    ones.  Returns (direction, CG iterations)."""
    lam, grad, mu, x, Y = st["lam"], st["grad"], st["mu"], st["x"], st["Y"]
    dm = mu[:, None] - mu[None, :]
    tie = np.abs(dm) <= 1e-9 * np.maximum(1.0, np.abs(mu)[:, None])
    with np.errstate(over="ignore", invalid="ignore"):
        Gam = np.where(tie, 0.5 * (x[:, None] + x[None, :]), (x[:, None] - x[None, :]) / np.where(tie, 1.0, dm))
    sdiag = st["xi"] / gamma
    Y2 = Y * Y
    hdiag = np.einsum("ck,ck->c", Y2 @ Gam, Y2) + sdiag
    eps = min(1e-3, float(np.max(np.abs(lam - np.maximum(lam + grad, 0.0)), initial=0.0)))
    free = ~((lam <= eps) & (grad < 0))
    d = grad / hdiag  # scaled gradient (active set)
    steps = 0
    if np.any(free):
        Yf, dlf, sdf, gf, pre = Y[free], dl[free], sdiag[free], grad[free], 1.0 / hdiag[free]

        def hv(u):
            D = (Yf.T * (dlf * u)) @ Yf
            return dlf * np.einsum("ck,ck->c", Yf @ (Gam * D), Yf) + sdf * u

        u, steps = cg(hv, gf, min(0.1, max(1e-12, np.sqrt(abs(rel_gap)))), cg_maxiter, precond=pre)
        d[free] = u
    return d, steps


def vonneumann_slack_newton(
    F, q0, i, j, delta, bound, gamma, *, gap_tol=1e-6, max_iter=200, lam0=None, callback=None, cg_maxiter=200
):
    """The von Neumann problem with Kulis' slack (§6.2.1) solved on its Lagrange dual by
    projected Newton-CG — the same optimum as Algorithm 3 (:func:`vonneumann_pairs`),
    reached in a few Newton steps instead of many sweeps of rank-one eigen-updates.

    Problem (the one of :func:`certificate`, γ > 0):

        min D_vN(X̂, diag e^{q0}) + γ Σ_c (ξ_c log(ξ_c/b_c) − ξ_c + b_c)
        s.t. δ_c (v_cᵀ X̂ v_c − ξ_c) <= 0,   v_c = F[i_c] − F[j_c].

    Minimizing the Lagrangian over X̂ and ξ gives X̂(λ) = exp(diag q0 − Σ_c δ_c λ_c v_c v_cᵀ)
    and ξ_c(λ) = b_c e^{δ_c λ_c/γ}, so the dual (maximized over λ >= 0) is

        g(λ) = −tr X̂(λ) + tr e^{q0} + γ Σ_c b_c (1 − e^{δ_c λ_c/γ}),
        ∇g_c = δ_c (v_cᵀ X̂(λ) v_c − ξ_c(λ)),
        −∇²g = 𝒜*𝒥𝒜 + diag(ξ(λ)/γ),

    𝒥 the Daleckii–Krein derivative of exp at the eigenvalues μ of diag q0 − Σδλvvᵀ
    (Γ_kl = (e^{μ_k} − e^{μ_l})/(μ_k − μ_l)).  The slack term makes −∇²g positive definite,
    so Newton converges quadratically near the optimum.  Each Newton step: one r × r
    ``eigh``, then conjugate gradients (Jacobi preconditioner = the exact diagonal of
    −∇²g) with Hessian products in the eigenbasis, Y = V W_μ: 𝒜*𝒥𝒜u =
    δ ∘ rowsum((Y (Γ ∘ Yᵀ diag(δu) Y)) ∘ Y), O(m r²) each (no r³); projected Newton on
    λ >= 0 (Bertsekas 1982: Newton on the free variables, scaled gradient on the
    ε-active ones, Armijo search along the projection arc).

    Stopping rule = the certificate of :func:`certificate`: at X̂(λ) the best slack
    ξ̂ (ξ̂_c = b_c where the bound holds, else the distance) makes (X̂, ξ̂) feasible, and the
    solve stops when the relative gap (f(X̂, ξ̂) − g(λ)) / max(1, |f|) <= ``gap_tol``.

    Returns a :class:`FastResult` with ``matrix`` = X̂ (whitened), ``lam`` = λ, ``xi``
    = ξ̂, ``sweeps`` = Newton steps, ``stop_value`` = the relative gap, ``code`` OK
    (certified) / NOT_CONVERGED / NONFINITE, and ``extra`` = {W, q (X̂ = W diag(e^q) Wᵀ),
    certificate, cg_iterations, solver}.  ``callback(dict)`` is called before each Newton
    step (``iteration``, ``objective``, ``gap``, ``violation``, ``dual``); a truthy return
    stops the solve.
    """
    F = np.asarray(F, dtype=np.float64)
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    dl = np.asarray(delta, dtype=np.float64)
    b = np.asarray(bound, dtype=np.float64)
    q0 = np.asarray(q0, dtype=np.float64)
    gamma = float(gamma)
    m, r = i.size, F.shape[1]
    Vc = np.ascontiguousarray(F[i] - F[j])
    eq0_sum = float(np.sum(np.exp(q0)))
    t0 = time.perf_counter()

    def evaluate(lam):
        with np.errstate(over="ignore", invalid="ignore"):
            C = (Vc.T * (dl * lam)) @ Vc
            mu, W = np.linalg.eigh(np.diag(q0) - 0.5 * (C + C.T))
            x = np.exp(mu)
            xi = b * np.exp(dl * lam / gamma)
            g = -float(np.sum(x)) + eq0_sum + gamma * float(np.sum(b - xi))
            if not (np.isfinite(g) and np.all(np.isfinite(x))):
                return None
            Y = Vc @ W
            p = (Y * Y) @ x  # v_cᵀ X̂ v_c
            grad = dl * (p - xi)
        return {"lam": lam, "g": g, "mu": mu, "W": W, "x": x, "xi": xi, "Y": Y, "p": p, "grad": grad}

    def cert(st):
        """(f, rel_gap, best slack): the primal value at X̂(λ) with its best slack."""
        mu, W, x, p = st["mu"], st["W"], st["x"], st["p"]
        Xdiag = (W * W) @ x
        f = float(x @ mu - np.sum(x) - Xdiag @ q0) + eq0_sum
        ok = dl * (p - b) <= 0
        xs = np.where(ok, b, p)
        if np.any(xs <= 0):
            return np.inf, np.inf, xs
        f += gamma * float(np.sum(xs * np.log(xs / b) - xs + b))
        return f, (f - st["g"]) / max(1.0, abs(f)), xs

    lam = np.zeros(m) if lam0 is None else np.maximum(np.asarray(lam0, dtype=np.float64), 0.0)
    st = evaluate(lam)
    if st is None and lam0 is not None:
        st = evaluate(np.zeros(m))
    if st is None:
        return FastResult(
            np.full((r, r), np.nan),
            np.zeros(m),
            b.copy(),
            0,
            np.inf,
            NONFINITE,
            -1,
            time.perf_counter() - t0,
            extra={"solver": "vonneumann-dual-newton"},
        )
    code, it, cg_total = NOT_CONVERGED, 0, 0
    f, rel_gap, xs = cert(st)
    while True:
        f, rel_gap, xs = cert(st)
        if abs(rel_gap) <= gap_tol:
            code = OK
            break
        if it >= max_iter:
            break
        if callback is not None and callback(
            {"iteration": it, "objective": f, "gap": rel_gap, "violation": 0.0, "dual": st["lam"].copy()}
        ):
            break
        lam, grad = st["lam"], st["grad"]
        d, steps = _slack_newton_direction(st, dl, gamma, rel_gap, cg_maxiter)
        cg_total += steps
        new, step = projected_armijo(evaluate, lam, d, st["g"], grad)
        it += 1
        if new is None or new["g"] <= st["g"]:
            break  # no ascent left at round-off
        st = new
    elapsed = time.perf_counter() - t0
    W, mu = st["W"], st["mu"]
    Xh = (W * st["x"]) @ W.T
    return FastResult(
        0.5 * (Xh + Xh.T),
        st["lam"],
        xs,
        int(it),
        float(rel_gap),
        int(code),
        -1,
        elapsed,
        extra={
            "W": W,
            "q": mu,
            "solver": "vonneumann-dual-newton",
            "certificate": {"objective": f, "dual": st["g"], "rel_gap": float(rel_gap)},
            "cg_iterations": int(cg_total),
        },
    )
