"""Pieces of the projected Newton-CG dual solvers (POLA, the generic dual solver, von
Neumann with slack, Trace-SSIKDR), written once: truncated conjugate gradients for the
Newton system and the Armijo search along the projection arc on λ >= 0.

Not :func:`scipy.sparse.linalg.cg`: the Newton-CG solvers need the truncated variant — stop
at the first direction of non-positive curvature (the dual Hessians are only semidefinite)
and report the number of steps taken.
"""

from __future__ import annotations

import numpy as np

__all__ = ["cg", "projected_armijo", "round_off", "G_ROUNDOFF"]


def cg(matvec, b, rtol, maxiter, precond=None):
    """(Jacobi-preconditioned) conjugate gradients on H x = b from x = 0 for a symmetric
    positive (semi)definite H given by ``matvec``.

    Stops when ‖r‖ <= ``rtol``·‖b‖, after ``maxiter`` steps, or at a direction p with
    pᵀHp <= 0 (truncated Newton-CG: the iterate so far is still an ascent direction).
    ``precond`` is the inverse of H's diagonal (elementwise) or None.  Returns (x, steps).
    """
    x = np.zeros_like(b)
    r = b.copy()
    z = r if precond is None else precond * r
    p = z.copy()
    rz = float(r @ z)
    stop = (rtol * np.sqrt(float(r @ r))) ** 2
    steps = 0
    for _ in range(maxiter):
        if float(r @ r) <= stop:
            break
        Ap = matvec(p)
        pAp = float(p @ Ap)
        if not pAp > 0:
            break
        a = rz / pAp
        x += a * p
        r -= a * Ap
        z = r if precond is None else precond * r
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
        steps += 1
    return x, steps


#: the relative round-off of a dual value g, below which two values of g are not told apart
G_ROUNDOFF = 64.0 * np.finfo(np.float64).eps


def round_off(g) -> float:
    """The round-off of a dual value ``g``: :data:`G_ROUNDOFF` · max(1, |g|)."""
    return G_ROUNDOFF * max(1.0, abs(float(g)))


def projected_armijo(evaluate, x, d, g0, grad, sigma=1e-4, halvings=50):
    """Armijo search along the projection arc x(s) = max(x + s d, 0) (Bertsekas 1982), s = 1,
    ½, ¼, …: the first state ``evaluate(x(s))`` (a dict with ``"g"``, or None outside the
    domain) with g >= g0 + σ ∇gᵀ(x(s) − x), for a concave g being maximized.  Near the
    optimum the predicted ascent falls below the round-off of g and the comparison is noise
    (it decides differently on different floating-point paths): a step whose predicted
    ascent is within :func:`round_off` is taken when g does not drop by more than that, and
    the caller's certificate judges it.  Returns (state, s), or (None, s) after
    ``halvings`` halvings."""
    step, noise = 1.0, round_off(g0)
    for _ in range(halvings):
        cand = np.maximum(x + step * d, 0.0)
        c = evaluate(cand)
        if c is not None:
            pred = float(grad @ (cand - x))
            if c["g"] >= g0 + sigma * pred or (0.0 <= pred <= noise and c["g"] >= g0 - noise):
                return c, step
        step *= 0.5
    return None, step
