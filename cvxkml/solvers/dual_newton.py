"""A certified dual solver for ANY spectral regularizer (Jain et al. 2012, eq. 12–13 with
Definition 3), hard or hinge-slack constraints of every family.

Problem, in the whitened space (constraints as signed rank-one terms,
:mod:`cvxkml.declare.terms`: Â_c = Σ_{a ∈ c} w_a u_a u_aᵀ):

    min_{X̂ ⪰ 0}  f(X̂) + Σ_c C_c ξ_c   s.t.  tr(X̂ Â_c) <= t_c + ξ_c,  ξ_c >= 0

(C_c = +inf: a hard constraint, ξ_c = 0).  Its Lagrange dual is box constrained,

    max_{0 <= λ <= C}  g(λ) = −f*_+(S − A(λ)) − λᵀt,   A(λ) = Σ_c λ_c Â_c,

with f*_+(M) = Σ_k f*_s(μ_k(M)) the conjugate over the PSD cone and S the regularizer's
``conj_shift`` (zero for spectral regularizers; log p for the von Neumann prior).  With
S − A(λ) = V diag(μ) Vᵀ the primal map is X̂(λ) = V diag(f*_s'(μ)) Vᵀ,
∇g(λ)_c = tr(X̂Â_c) − t_c = ρ_c (the residual), and −∇²g = 𝒜*𝒥𝒜 with
𝒥[D] = V(Γ ∘ VᵀDV)Vᵀ, Γ_kl the divided differences of f*_s' (Daleckii–Krein).

Algorithm: projected Newton ascent on the box (Bertsekas 1982: Newton on the free
variables, scaled gradient on the ε-active ones, Armijo search along the projection
arc), from λ = 0 or a warm start; the Newton system is dense for small p·r², Newton-CG
(matrix-free H v) above.  The search rejects points outside the conjugate's domain
(LogDet: μ < 1), so barrier regularizers need no step-size rule.  Near the optimum the
ascent of a step falls below the round-off of g (whose terms f* and λᵀt cancel) while ∇g
is still accurate: a step that keeps g within that round-off is then accepted when it
reduces the certificate below (a sufficient decrease, as Armijo's rule on g).

Stopping rule = the certificate.  By Fenchel–Young, f(X̂(λ)) = ⟨X̂, M⟩ − f*_+(M), so at
every dual point

    gap(λ) = f(X̂) + Σ_c C_c (ρ_c)₊ − g(λ) = Σ_c [C_c (ρ_c)₊ − λ_c ρ_c] >= 0     (box-feasible λ),

with the hinge terms only over soft constraints; the solve stops when
gap <= tol·max(1, |f|) and every hard residual (ρ_c)₊ <= tol·max(1, |t_c|).  The cost per
iteration is one r × r eigendecomposition plus the Hessian (O(p² r²) dense); the time goes
to LAPACK and BLAS-3, so there is no Numba here.

The regularizer is any object with ``conj_s``, ``conj_grad_s``, ``conj_hess_s`` (vectorized
over eigenvalues) and ``conj_shift(r)``: :data:`REQUIRED_METHODS`.  No CVXPY, no
``cvxkml.declare`` import.
"""
from __future__ import annotations

import time

import numpy as np

from .._config import blas_limit
from ._newton import cg
from .pola import _farkas, _Ops
from .result import NONFINITE, NOT_CONVERGED, OK, FastResult

__all__ = ["dual_newton", "missing_methods", "REQUIRED_METHODS"]

_TINY = np.finfo(np.float64).tiny
_G_ERR = 64.0 * np.finfo(np.float64).eps        # the relative round-off allowed in g (see _evaluate)
REQUIRED_METHODS = ("conj_s", "conj_grad_s", "conj_hess_s", "conj_shift")


def missing_methods(conjugate) -> list[str]:
    """The methods of :data:`REQUIRED_METHODS` that ``conjugate`` does not implement (a base
    class method raising NotImplementedError counts as missing)."""
    out = []
    probe = np.array([-0.5, 0.0, 0.5])
    for name in REQUIRED_METHODS:
        fn = getattr(conjugate, name, None)
        if not callable(fn):
            out.append(name)
            continue
        try:
            with np.errstate(all="ignore"):
                fn(2) if name == "conj_shift" else fn(probe)
        except NotImplementedError:
            out.append(name)
    return out


def _divided_differences(mu, x, xp):
    """Γ_kl = (x_k − x_l) / (μ_k − μ_l), the mean of f*_s'' on (near) ties."""
    dm = mu[:, None] - mu[None, :]
    tie = np.abs(dm) <= 1e-9 * np.maximum(1.0, np.maximum(np.abs(mu)[:, None], np.abs(mu)[None, :]))
    with np.errstate(all="ignore"):
        G = np.where(tie, 0.5 * (xp[:, None] + xp[None, :]),
                     (x[:, None] - x[None, :]) / np.where(tie, 1.0, dm))
    return np.where(np.isfinite(G), G, 0.0)


class _State:
    """Everything known at one dual point λ; ``g_err`` bounds the round-off of ``g``."""

    __slots__ = ("lam", "g", "grad", "mu", "V", "x", "f", "g_err")

    def __init__(self, lam, g, grad, mu, V, x, f, g_err=0.0):
        self.lam, self.g, self.grad, self.mu, self.V, self.x, self.f = lam, g, grad, mu, V, x, f
        self.g_err = g_err


def _evaluate(ops, conj, shift, lam):
    """The dual at λ, or None outside the conjugate's domain / on overflow."""
    A = ops.A(lam)
    if not np.all(np.isfinite(A)):
        return None
    M = shift - A
    mu, V = np.linalg.eigh(0.5 * (M + M.T))
    with np.errstate(all="ignore"):
        fs = np.asarray(conj.conj_s(mu), dtype=float)
        x = np.asarray(conj.conj_grad_s(mu), dtype=float)
    if not (np.all(np.isfinite(fs)) and np.all(np.isfinite(x))):
        return None
    fstar = float(np.sum(fs))
    g = -fstar - float(lam @ ops.t)
    X = (V * x) @ V.T
    grad = ops.adjoint(X) - ops.t
    f = float(x @ mu) - fstar                    # f(X̂) = ⟨X̂, M⟩ − f*(M)  (Fenchel–Young)
    if not (np.isfinite(g) and np.all(np.isfinite(grad)) and np.isfinite(f)):
        return None
    # round-off of g: the sums Σ f*_s(μ_k) and λᵀt, and the eigenvalues' backward error
    # ε‖M‖ carried through f*_s' = x (the cancellation in g = −f* − λᵀt is not seen by ∇g)
    g_err = _G_ERR * (float(np.sum(np.abs(fs))) + float(np.abs(lam) @ np.abs(ops.t))
                      + float(np.max(np.abs(mu), initial=0.0)) * float(np.sum(np.abs(x))))
    return _State(lam, g, grad, mu, V, x, f, g_err)


def _certificate(st, upper, soft, scale_t):
    """(relative gap, relative hard violation) at a box-feasible state."""
    rho = st.grad
    pos = np.maximum(rho, 0.0)
    hinge = float(upper[soft] @ pos[soft]) if soft.any() else 0.0
    gap = hinge - float(st.lam @ rho)
    f_total = st.f + hinge
    rel_gap = abs(gap) / max(1.0, abs(f_total))
    hard = ~soft
    rel_viol = float(np.max(pos[hard] / scale_t[hard], initial=0.0))
    return rel_gap, rel_viol, f_total


def _expand(ops, conj, shift, lam, d, upper, best):
    """The accepted point ``best`` = λ + d (clipped) moved on to λ + 2^k d while the dual keeps
    increasing (k ≤ 30)."""
    step = 1.0
    while step < 2.0 ** 30:
        step *= 2.0
        cand = np.clip(lam + step * d, 0.0, upper)
        if np.array_equal(cand, best.lam):
            break                                    # clipped on every coordinate
        c = _evaluate(ops, conj, shift, cand)
        if c is None or c.g <= best.g:
            break
        best = c
    return best


def _dual_newton_impl(U, w, ptr, t, conj, upper, tol, max_iter, lam0, newton_budget, callback=None,
                      damping=1e-2):
    ops = _Ops(U, w, ptr, t)
    m, r = ops.m, ops.r
    upper = np.full(m, np.inf) if upper is None else np.asarray(upper, dtype=np.float64)
    soft = np.isfinite(upper)
    shift = np.asarray(conj.conj_shift(r), dtype=float)
    scale_t = np.maximum(np.abs(ops.t), 1.0)
    lam = np.zeros(m) if lam0 is None else np.clip(np.asarray(lam0, dtype=np.float64), 0.0, upper)
    t0 = time.perf_counter()
    st = _evaluate(ops, conj, shift, lam)
    if st is None and lam0 is not None:          # a warm start outside the domain: cold start
        lam = np.zeros(m)
        st = _evaluate(ops, conj, shift, lam)
    if st is None:
        return FastResult(matrix=np.full((r, r), np.nan), lam=lam, xi=np.zeros(0), sweeps=0,
                             dual_change=np.inf, code=NONFINITE, bad_index=-1,
                             time=time.perf_counter() - t0,
                             extra={"solver": "dual-newton", "reason": "f* is not finite at λ = 0"})
    dense = ops.U.shape[0] * r * r <= newton_budget and m <= 3000
    boost = 1.0          # Levenberg–Marquardt: ×10 after a failed / short Newton step, ÷10 after a full one
    it = grad_steps = cg_steps = 0
    converged = infeasible = stopped = False
    while True:
        rel_gap, rel_viol, f_total = _certificate(st, upper, soft, scale_t)
        if rel_gap <= tol and rel_viol <= tol:
            converged = True
            break
        if it >= max_iter:
            break
        if callback is not None and callback({"iteration": it, "objective": f_total, "gap": rel_gap,
                                              "violation": rel_viol, "dual": st.lam.copy()}):
            stopped = True
            break
        if it and it % 25 == 0 and not soft.all():
            # over the hard multipliers only: soft constraints can always be met with slack
            mmin, lin = _farkas(ops, np.where(soft, 0.0, st.lam))
            if mmin >= -1e-12 and lin <= -1e-6:
                infeasible = True
                break
        lam, grad = st.lam, st.grad
        # Bertsekas' ε-active set on the box
        eps = min(1e-3, float(np.max(np.abs(lam - np.clip(lam + grad, 0.0, upper)), initial=0.0)))
        active = ((lam <= eps) & (grad < 0)) | ((lam >= upper - eps) & (grad > 0))
        free = ~active
        x_p = np.asarray(conj.conj_hess_s(st.mu), dtype=float)
        Gam = _divided_differences(st.mu, st.x, x_p)
        # curvature of g along e_c bounded by ‖Â_c‖²·max|Γ|: the scaled-gradient step's scale
        grad_curv = np.maximum(ops.norms ** 2 * float(np.max(np.abs(Gam), initial=1.0)), _TINY)
        d = np.zeros(m)
        if np.any(free):
            if dense:
                H = ops.hessian(st.mu, st.V, Gam)
                diag = np.diag(H).copy()
                Hf = H[np.ix_(free, free)]
                # Levenberg–Marquardt damping: the dual Hessian is singular whenever m exceeds
                # r(r+1)/2 or a regularizer is flat (Frobenius, trace); the damping vanishes
                # with the certificate, keeping the fast local convergence
                # (Marquardt's scaling: μ·diag(H), so one stiff constraint — a trace budget —
                # does not damp the others into gradient steps)
                mu_lm = min(1e8, boost * min(1e-2, max(1e-12, damping * np.sqrt(max(rel_gap, rel_viol)))))
                dH = diag[free]
                scale_d = np.maximum(dH, 1e-12 * max(float(np.max(dH, initial=0.0)), _TINY))
                Hreg = Hf + np.diag(mu_lm * scale_d)
                try:
                    d[free] = np.linalg.solve(Hreg, grad[free])
                except np.linalg.LinAlgError:
                    d[free] = np.linalg.lstsq(Hreg, grad[free], rcond=1e-13)[0]
            else:
                vfull = np.zeros(m)
                hv_reg = 1e-10 * max(float(np.max(ops.norms, initial=1.0)) ** 2, _TINY)

                def matvec(vF):
                    vfull[:] = 0.0
                    vfull[free] = vF
                    return ops.hess_vec(Gam, st.V, vfull)[free] + hv_reg * vF
                eta = min(0.1, max(1e-10, np.sqrt(max(rel_gap, rel_viol))))
                d[free] = cg(matvec, grad[free], eta, maxiter=min(500, 5 * int(np.sum(free)) + 10))[0]
                cg_steps += 1
                diag = None
            if not np.all(np.isfinite(d)) or float(d @ grad) <= 0.0:
                d[:] = 0.0
                free[:] = False
        if np.any(active) or not np.any(free):
            # scaled gradient on the active (or every) variable: 1 / curvature along e_c
            if dense and np.any(free):
                curv = np.maximum(diag, _TINY)
            else:
                curv = grad_curv
            sel = active if np.any(free) else np.ones(m, dtype=bool)
            d[sel] = grad[sel] / curv[sel]
            if not np.any(free):
                grad_steps += 1
        step, new = 1.0, None
        for _ in range(60):
            cand = np.clip(lam + step * d, 0.0, upper)
            if not np.any(cand != lam):
                break
            c = _evaluate(ops, conj, shift, cand)
            if c is not None and c.g >= st.g + 1e-4 * float(grad @ (cand - lam)) and c.g >= st.g:
                new = c
                break
            if (c is not None and c.g >= st.g - max(st.g_err, c.g_err)
                    and max(_certificate(c, upper, soft, scale_t)[:2])
                    <= (1.0 - 1e-4 * step) * max(rel_gap, rel_viol)):
                # the ascent is below the round-off of g (its terms ~ λᵀt cancel) while ∇g,
                # hence the certificate, is still accurate: the step is accepted when it
                # reduces the certificate (fuzz seed 14884: the full Newton step took the gap
                # from 1.4e-6 to 5e-11 with g "decreasing" by 2e-14 of 12.2; the solve stopped)
                new = c
                break
            step *= 0.5
        if new is not None and step == 1.0 and not np.any(free):
            # a pure scaled-gradient step taken in full: its curvature scale may be far too
            # small (where every μ lies in a flat piece of f*, e.g. X̂ = 0 under Frobenius,
            # g is linear and the step is ‖Â‖⁻² of the way: fuzz seed 4713 crawled 20 000
            # iterations), so it is expanded while it keeps improving
            new = _expand(ops, conj, shift, lam, d, upper, new)
        it += 1
        boost = max(1.0, boost / 10.0) if (new is not None and step == 1.0) else min(boost * 10.0, 1e12)
        if new is None or step < 1e-2:
            # Newton failed or crawled (a singular Hessian: kinks of f*, flat regularizers):
            # a scaled gradient step, expanded while it keeps improving
            d_g = grad / grad_curv
            base_st = new if new is not None else st
            best, step = None, 1.0
            for _ in range(60):
                cand = np.clip(base_st.lam + step * d_g, 0.0, upper)
                c = _evaluate(ops, conj, shift, cand)
                if c is not None and c.g > base_st.g:
                    best = c
                    break
                step *= 0.5
            if best is not None:
                best = _expand(ops, conj, shift, base_st.lam, step * d_g, upper, best)
            grad_steps += 1
            if best is not None:
                new = best
            if new is None:
                break                                    # no ascent possible at round-off
        st = new
    elapsed = time.perf_counter() - t0
    X = (st.V * st.x) @ st.V.T
    code = OK if converged else NOT_CONVERGED
    return FastResult(
        matrix=0.5 * (X + X.T), lam=st.lam, xi=np.zeros(0), sweeps=int(it),
        dual_change=float(max(rel_gap, rel_viol)), code=code, bad_index=-1, time=elapsed,
        extra={"solver": "dual-newton", "rel_gap": float(rel_gap), "rel_violation": float(rel_viol),
               "newton_iterations": int(it), "gradient_steps": int(grad_steps),
               "cg_solves": int(cg_steps), "farkas": _farkas(ops, np.where(soft, 0.0, st.lam)),
               "infeasible": bool(infeasible), "stopped": bool(stopped),
               "residuals": st.grad.copy(), "objective_fy": float(f_total)})


def dual_newton(U, w, ptr, t, conjugate, upper=None, tol: float = 1e-9, max_iter: int = 500,
                lam0=None, newton_budget: float = 4e6, callback=None) -> FastResult:
    """Solve min f(X̂) + Σ C_c ξ_c s.t. tr(X̂Â_c) <= t_c + ξ_c, X̂ ⪰ 0 on its dual (module doc).

    Parameters
    ----------
    U, w, ptr, t : the constraints as signed rank-one terms (:mod:`cvxkml.declare.terms`).
    conjugate : the regularizer (an object with :data:`REQUIRED_METHODS`).
    upper : (m,) array or None
        The hinge weights C_c (the dual's upper bounds); +inf for a hard constraint.  None:
        every constraint hard.
    tol : float
        The certificate: relative gap (over max(1, |f|)) and relative hard violation (over
        max(1, |t_c|)) at most ``tol``.
    max_iter : int
        Newton iterations.
    lam0 : (m,) array or None
        Warm start (clipped to the box; a point outside the conjugate's domain falls back
        to λ = 0).
    newton_budget : float
        Dense Newton systems while p·r² is at most this; Newton-CG above.
    callback : callable or None
        Called before each Newton iteration with a dict (``iteration``, ``objective`` the
        primal value f + hinge, ``gap`` and ``violation`` relative, ``dual`` λ); a truthy
        return stops the solve (``extra["stopped"]``).

    Returns
    -------
    FastResult
        ``matrix`` = X̂(λ) (r × r, whitened), ``lam`` = λ, ``sweeps`` = Newton iterations,
        ``dual_change`` = max(relative gap, relative violation), ``code`` OK (certified) /
        NOT_CONVERGED / NONFINITE (f* infinite at λ = 0), ``extra`` with the certificate's
        parts, the Farkas test of :func:`cvxkml.solvers.pola._farkas` and the residuals ρ.
    """
    with blas_limit():
        return _dual_newton_impl(U, w, ptr, t, conjugate, upper, tol, max_iter, lam0, newton_budget,
                                 callback)
