"""A certified dual solver for ANY spectral regularizer (Jain et al. 2012, eq. 12–13 with
Definition 3): hard, hinge (ℓ1) and squared-hinge (ℓ2) constraints of every family,
inequalities and equalities.

Problem, in the whitened space (constraints as signed rank-one terms,
:mod:`cvxkml.declare.terms`: Â_c = Σ_{a ∈ c} w_a u_a u_aᵀ, residual ρ_c = tr(X̂Â_c) − t_c):

    min_{X̂ ⪰ 0}  f(X̂) + Σ_c φ_c(ρ_c),   φ_c(ρ) = sup_{l_c <= λ <= u_c} λρ − ½ q_c λ²

(hard inequality: [0, ∞), q = 0; hard equality: (−∞, ∞), q = 0; hinge C·ρ₊: [0, C];
squared hinge ρ₊²/(2q): [0, ∞) with q = 1/C; two-sided versions for equalities).  Its
Lagrange dual is box constrained,

    max_{l <= λ <= u}  g(λ) = −f*_+(S − A(λ)) − λᵀt − ½ Σ_c q_c λ_c²,   A(λ) = Σ_c λ_c Â_c,

with f*_+(M) = Σ_k f*_s(μ_k(M)) the conjugate over the PSD cone and S the regularizer's
``conj_shift``.  With S − A(λ) = V diag(μ) Vᵀ the primal map is X̂(λ) = V diag(f*_s'(μ)) Vᵀ,
∇g = ρ − qλ, and −∇²g = 𝒜*𝒥𝒜 + diag(q), 𝒥[D] = V(Γ ∘ VᵀDV)Vᵀ, Γ_kl the divided
differences of f*_s' (Daleckii–Krein).

Algorithm: projected Newton ascent on the box (Bertsekas 1982: Newton on the free
variables, scaled gradient on the ε-active ones, Armijo's rule along the projection arc).
What makes it scale (n = 1 000 dense, r = 100 factored with 10⁴ constraints):

- the Newton system lives on the free constraints F only (at a hinge optimum most
  multipliers sit on a bound), written in the eigenbasis with Z = U V, so that no term of
  another constraint is touched: a Hessian product costs O(|F| r²);
- Γ is the Loewner matrix of the smooth map x(μ) = f*_s'(μ) and numerically of low rank
  (one term for LogDet, 5–15 at 1e-12 for von Neumann and the symmetrized LogDet, 2 plus
  two per clipped eigenvalue for the alpha-power divergence), found by a randomized range
  finder, to 1e-2 × the certificate (1e-3 … 1e-8: an inexact Newton system far from the
  optimum, the Armijo search judges the step); H_FF = Σ_s σ_s (Z_F diag(g_s) Z_Fᵀ)∘² is
  then formed in O(s |F|² r) by symmetric rank-k updates (|F| up to 8 000: two |F| × |F|
  buffers) and solved by Cholesky (truncated conjugate gradients when the rank is not low);
- with fewer terms than r and S = c·I, the dual lives on the k × k problem of the terms'
  span (:class:`_Span`: the eigenvalue c off it is a constant), lifted back at the end;
- an active-set outer loop (:mod:`._dual_newton_active`) holds multipliers on their bounds
  while the rest are solved for and releases them a few at a time, most promising first:
  on a nearly singular Hessian the iteration on the whole box would churn the free set;
- the first trial step is the fraction 0.7 of the largest step that keeps every eigenvalue
  in the conjugate's domain (LogDet: μ < 1; found from ``conj_s``): barrier regularizers no
  longer spend their line search outside the domain; trial points need eigenvalues only, of
  diag(μ) − Vᵀ A(λ(s) − λ) V, whose two parts (multipliers inside the box, on a bound) are
  formed once per direction and updated as s halves; the accepted point's eigenbasis is V W.

Near the optimum the ascent of a step falls below the round-off of g (whose terms f* and
λᵀt cancel) while ∇g is still accurate: a step that keeps g within that round-off is then
accepted when it reduces the certificate.  A Levenberg–Marquardt damping, vanishing with
the certificate, handles singular Hessians (m > r(r+1)/2, flat regularizers); on a flat
piece of f* (X̂ = 0 under Frobenius) a scaled gradient step is expanded while it improves.

Stopping rule = the certificate.  By Fenchel–Young at every box-feasible dual point

    gap(λ) = f(X̂) + Σ_c φ_c(ρ_c) − g(λ) = Σ_c [φ_c(ρ_c) + ½q_cλ_c² − λ_cρ_c] >= 0,

with the hard sides measured as violations instead; the solve stops when
gap <= tol·max(1, |f + Σφ|) and every hard violation <= tol·max(1, |t_c|).  The gap reported
(and returned, with its X̂ and its λ) is that of the best pair seen (:class:`_Record`): the
primal point of one iterate against the dual bound g of another, P_a − g_b =
gap_a + g_a − g_b; Armijo's rule raises g but not P, so an iterate's own gap can rise, the
reported one never does.  One r × r eigendecomposition per iteration; the time goes to
LAPACK and BLAS-3, so there is no Numba here.

The regularizer's own pair slack (``slack=``; ITML's γ, Jain et al. eq. 7: min f(X̂) +
γ·D(diag ξ, diag ξ0) s.t. δ_c(p_c − ξ_c) <= 0): minimizing over ξ turns the pairs' terms
−λ_c t_c of g into the smooth separable S(δλ) = −(γD)*(δλ) (the regularizer's
``slack_conj``; LogDet γ Σ log(1 − δλξ0/γ), finite for δλ < γ/ξ0).  Its gradient puts the
slack ξ(λ) = −S'(δλ) in the residual, ∇g_c = δ_c(p_c − ξ_c(λ)); its curvature −S'' >= 0 joins
the diagonal of the Newton system (like q_c); the first trial step also stays inside its
domain (``slack_conj_domain``).  The certificate prices the primal point (X̂(λ), ξ_b), ξ_b
the best slack for X̂ (max(p, ξ0) on similar pairs, min(p, ξ0) on dissimilar ones), its
part of the gap γ[D(ξ_b) − D(ξ(λ))] − Σ λ_cρ_c >= 0 (Fenchel–Young, written without the
large cancelling terms λ_c p_c), and ξ_b is returned as ``xi``.

The regularizer is any object with ``conj_s``, ``conj_grad_s``, ``conj_hess_s`` (vectorized
over eigenvalues) and ``conj_shift(r)``: :data:`REQUIRED_METHODS` (and with ``slack=``,
:data:`SLACK_METHODS`).  No CVXPY, no ``cvxkml.declare`` import.
"""

from __future__ import annotations

import time

import numpy as np

from .._config import blas_limit
from .._validation import missing_methods as _missing
from ..formulas.penalties import hard_violation, penalty
from ._dual_newton_active import WorkingSet
from ._dual_newton_arc import Arc, max_step
from ._dual_newton_hessian import FreeHessian, divided_differences, gamma_factors, hessian_diagonal
from ._dual_newton_parts import _NoSpan, _Slack, _Span
from ._farkas import growth_ray, hard_part
from ._newton import G_ROUNDOFF, cg
from ._terms import RankOneTerms
from .result import NONFINITE, NOT_CONVERGED, OK, FastResult

__all__ = ["dual_newton", "missing_methods", "REQUIRED_METHODS", "SLACK_METHODS"]

_TINY = np.finfo(np.float64).tiny
_DENSE_MAX = 8000  # free terms up to which the Newton system is formed (two |F|² buffers)
REQUIRED_METHODS = ("conj_s", "conj_grad_s", "conj_hess_s", "conj_shift")
#: what the regularizer's own pair slack (``gamma``) needs besides (``slack_conj_domain`` optional)
SLACK_METHODS = ("slack_value", "slack_conj", "slack_conj_grad", "slack_conj_hess")


def missing_methods(conjugate) -> list[str]:
    """The methods of :data:`REQUIRED_METHODS` that ``conjugate`` does not implement (a base
    class method raising NotImplementedError counts as missing)."""
    return _missing(conjugate, REQUIRED_METHODS)


class _State:
    """Everything known at one dual point λ; ``g_err`` bounds the round-off of ``g``."""

    __slots__ = ("lam", "g", "grad", "rho", "mu", "V", "x", "Z", "f", "g_err", "M", "trA", "S")

    def __init__(self, lam, g, grad, rho, mu, V, x, Z, f, g_err, M, trA, S):
        self.lam, self.g, self.grad, self.rho, self.mu, self.V = lam, g, grad, rho, mu, V
        self.x, self.Z, self.f, self.g_err, self.M = x, Z, f, g_err, M
        self.trA, self.S = trA, S  # tr(X̂Â_c); the slack conjugate S(δλ) (0 without slack)


def _linear(ops, lam) -> float:
    """The part of −g(λ) that is not f*: λᵀt, with the slack constraints' terms replaced by
    −S(δλ) (+inf outside S's domain)."""
    sl = ops.slack
    if sl is None:
        return float(lam @ ops.t)
    return float(lam[sl.rest] @ ops.t[sl.rest]) - sl.conj(lam)


def _targets(ops, lam):
    """t with the slack constraints' targets δ_c ξ_c(λ)."""
    sl = ops.slack
    if sl is None:
        return ops.t
    t = ops.t.copy()
    t[sl.idx] = sl.sign * sl.xi(lam)
    return t


def _dual_objective(ops, conj, shift, quad, lam, values_only, M=None, basis=None):
    """(g, μ, V, f*_s(μ), M) at λ (M = S − A(λ), given or formed), V None with
    ``values_only``; None outside the conjugate's domain or on overflow.  With ``basis`` (an
    orthogonal r × r V₀), ``M`` is S − A(λ) written in it, V₀ᵀ(S − A(λ))V₀: the eigenvectors
    returned are V₀ times M's (and M is returned as None)."""
    if M is None:
        A = ops.A(lam)
        if not np.all(np.isfinite(A)):
            return None
        M = shift - A
        M = 0.5 * (M + M.T)
    if values_only:
        mu, V = np.linalg.eigvalsh(M), None
    else:
        mu, V = np.linalg.eigh(M)
        if basis is not None:
            V, M = basis @ V, None
    with np.errstate(all="ignore"):
        fs = np.asarray(conj.conj_s(mu), dtype=float)
    if not np.all(np.isfinite(fs)):
        return None
    g = -float(np.sum(fs)) - ops.span.conj - _linear(ops, lam) - 0.5 * float(quad @ (lam * lam))
    return (g, mu, V, fs, M) if np.isfinite(g) else None


def _evaluate(ops, conj, shift, quad, lam, M=None, basis=None):
    """The full state at λ (eigenvectors, residuals, Z = U V), or None outside the domain;
    ``M`` = S − A(λ) when the caller has it, in the orthogonal ``basis`` when given (the line
    search builds it in the previous iterate's eigenbasis)."""
    out = _dual_objective(ops, conj, shift, quad, lam, values_only=False, M=M, basis=basis)
    if out is None:
        return None
    g, mu, V, fs, M = out
    with np.errstate(all="ignore"):
        x = np.asarray(conj.conj_grad_s(mu), dtype=float)
    if not np.all(np.isfinite(x)):
        return None
    Z = ops.U @ V  # the terms in the eigenbasis
    trA = ops.per_constraint(ops.w * ((Z * Z) @ x))
    t = _targets(ops, lam)
    rho = trA - t  # tr(X̂Â_c) − t_c (slack: δ(p − ξ(λ)))
    grad = rho - quad * lam
    f = float(x @ mu) - float(np.sum(fs)) + ops.span.f  # f(X̂) = ⟨X̂, M⟩ − f*(M)  (Fenchel–Young)
    S = 0.0 if ops.slack is None else ops.slack.conj(lam)
    if not (np.all(np.isfinite(grad)) and np.isfinite(f) and np.isfinite(S)):
        return None
    # round-off of g: the sums Σ f*_s(μ_k) and λᵀt (and the slack conjugate), and the
    # eigenvalues' backward error ε‖M‖ carried through f*_s' = x (the cancellation in
    # g = −f* − λᵀt is not seen by ∇g)
    g_err = G_ROUNDOFF * (
        float(np.sum(np.abs(fs)))
        + float(np.abs(lam) @ np.abs(t))
        + abs(S)
        + ops.span.err
        + float(np.max(np.abs(mu), initial=0.0)) * float(np.sum(np.abs(x)))
    )
    return _State(lam, g, grad, rho, mu, V, x, Z, f, g_err, M, trA, S)


def _certificate(st, lower, upper, quad, scale_t, slack=None):
    """(relative gap, relative hard violation, primal objective, gap) at a box-feasible state:
    gap = Σ_c φ_c(ρ_c) + ½q_cλ_c² − λ_cρ_c (>= 0 term by term, Fenchel–Young).

    With the regularizer's slack on constraints ``slack.idx`` the primal point is (X̂(λ), ξ_b),
    ξ_b the best slack for X̂ (feasible), and their part of the gap is
    γD(ξ_b) + (γD)*(δλ) − δλp = γ[D(ξ_b) − D(ξ(λ))] − Σ λ_cρ_c (ρ_c = δ(p − ξ(λ)); the
    second form has no large cancelling terms when the multipliers are large)."""
    if slack is None:
        pen = penalty(st.rho, lower, upper, quad)
        gap = float(np.sum(pen + 0.5 * quad * st.lam * st.lam - st.lam * st.rho))
        f_total = st.f + float(np.sum(pen))
        hard = hard_violation(st.rho, lower, upper, quad)
    else:
        k = slack.rest
        pen = penalty(st.rho[k], lower[k], upper[k], quad[k])
        lam, rho = st.lam, st.rho
        gap = float(np.sum(pen + 0.5 * quad[k] * lam[k] * lam[k] - lam[k] * rho[k]))
        sv = slack.value(slack.best(st.trA))
        gap += sv - slack.value(slack.xi(lam)) - float(lam[slack.idx] @ rho[slack.idx])
        f_total = st.f + float(np.sum(pen)) + sv
        hard = np.zeros_like(rho)
        hard[k] = hard_violation(rho[k], lower[k], upper[k], quad[k])
    rel_gap = abs(gap) / max(1.0, abs(f_total)) if np.isfinite(gap) and np.isfinite(f_total) else np.inf
    rel_viol = float(np.max(hard / scale_t, initial=0.0))
    return rel_gap, rel_viol, f_total, gap


class _Record:
    """The reported certificate: a primal point and a dual bound, from the iterates seen so far.

    Every box-feasible multiplier λ_b gives a lower bound g(λ_b) on the optimum, and every
    iterate's X̂(λ_a) (with its slack) a primal value P_a; the gap of the pair is
    P_a − g_b = gap_a + g_a − g_b (``gap_a`` the Fenchel–Young gap at a, free of the large
    cancelling terms, the difference of two dual values a small correction).  The iterates'
    own gaps are not monotone (Armijo's rule raises g, not P), so the pair is updated only
    when the certificate max(relative gap, relative hard violation of a) gets smaller: the
    reported certificate never increases, and with hinge slack only (every X̂ feasible) it
    uses the best dual bound and the best primal value seen.  The answer returns X̂ of
    ``primal`` and λ of ``dual``, whose recomputed gap is the reported one."""

    def __init__(self, st, parts):
        self.primal = self.dual = st
        self.parts = parts  # _certificate(primal)
        self.rel_gap, self.rel_viol, self.f_total = parts[0], parts[1], parts[2]

    @property
    def cert(self) -> float:
        return max(self.rel_gap, self.rel_viol)

    def offer(self, st, parts) -> None:
        """Take the iterate ``st`` (its :func:`_certificate` ``parts``) as the primal point,
        the dual bound or both, when a pair with it certifies better."""
        best = None
        for a, pa, b in ((st, parts, st), (st, parts, self.dual), (self.primal, self.parts, st)):
            gap, f = pa[3] + (a.g - b.g), pa[2]
            rel = abs(gap) / max(1.0, abs(f)) if np.isfinite(gap) and np.isfinite(f) else np.inf
            c = max(rel, pa[1])
            if c < (self.cert if best is None else best[0]) or (c == self.cert and best is None and b.g > self.dual.g):
                best = (c, a, pa, b, rel)
        if best is not None:
            _, self.primal, self.parts, self.dual, self.rel_gap = best
            self.rel_viol, self.f_total = self.parts[1], self.parts[2]


def _expand(ops, conj, shift, quad, lam, d, lower, upper, best):
    """The accepted point ``best`` = λ + d (clipped) moved on to λ + 2^k d while the dual keeps
    increasing (k ≤ 30); the doublings are judged by eigenvalues only, the full state is
    formed once, at the point kept."""
    step, g_best, kept = 1.0, best.g, None
    while step < 2.0**30:
        step *= 2.0
        cand = np.clip(lam + step * d, lower, upper)
        if np.array_equal(cand, best.lam if kept is None else kept[0]):
            break  # clipped on every coordinate
        light = _dual_objective(ops, conj, shift, quad, cand, values_only=True)
        if light is None or light[0] <= g_best:
            break
        g_best, kept = light[0], (cand, light[4])
    if kept is not None:
        full = _evaluate(ops, conj, shift, quad, kept[0], M=kept[1])
        best = full if full is not None else best
    return best


def _domain_upper(conj, limit=1e12):
    """sup{μ : f*_s(μ) < ∞} to about 1e-12 relative (LogDet 1, the symmetrized LogDet 1 + c),
    +inf when f*_s is finite up to ``limit`` (von Neumann, Frobenius), None when f*_s(0) is
    not finite (no probe point)."""

    def finite(v):
        with np.errstate(all="ignore"):
            return bool(np.isfinite(np.asarray(conj.conj_s(np.array([v])), dtype=float)).all())

    if not finite(0.0):
        return None
    lo, hi = 0.0, 1.0
    while finite(hi):
        lo, hi = hi, 2.0 * hi
        if hi > limit:
            return np.inf
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if finite(mid) else (lo, mid)
    return hi


def _arc_search(ops, conj, shift, quad, st, d, lower, upper, dom, cert, certificate):
    """Armijo's rule on g along the projection arc λ(s) = P(λ + s·d) (Bertsekas 1982),
    s = s0, s0/2, …, with s0 = min(1, 0.7·s_max) the fraction to the domain's boundary along
    the segment to λ(1) (:func:`._dual_newton_arc.max_step`); the trial points need only the
    eigenvalues of diag(μ) − Vᵀ A(λ(s) − λ) V (:class:`._dual_newton_arc.Arc`), the accepted
    one its eigenvectors W too (its eigenbasis is V W).  Returns (state at the accepted point
    or None, s, trials)."""
    lam = st.lam
    if not np.any(np.clip(lam + d, lower, upper) != lam):
        return None, 1.0, 0
    arc = Arc(ops, st, d, lower, upper)
    s_max = max_step(st, arc.segment(), dom, enough=1.0 / 0.7)
    sl = ops.slack
    if sl is not None:  # the slack conjugate's domain, λ_c < upper_c, along the same segment
        ds = (np.clip(lam + d, lower, upper) - lam)[sl.idx]
        out = (ds > 0) & np.isfinite(sl.upper)
        if np.any(out):
            s_max = min(s_max, float(np.min((sl.upper[out] - lam[sl.idx][out]) / ds[out])))
    step = min(1.0, 0.7 * s_max)
    trials = 0
    for _ in range(60):
        cand = np.clip(lam + step * d, lower, upper)
        delta = cand - lam
        if not np.any(delta):
            break
        trials += 1
        Ms = np.diag(st.mu) - arc.at(step)  # S − A(λ(s)) in the iterate's eigenbasis
        with np.errstate(all="ignore"):
            mu = np.linalg.eigvalsh(Ms) if np.all(np.isfinite(Ms)) else None
            fs = None if mu is None else np.asarray(conj.conj_s(mu), dtype=float)
        if fs is not None and np.all(np.isfinite(fs)):
            gc = -float(np.sum(fs)) - ops.span.conj - _linear(ops, cand) - 0.5 * float(quad @ (cand * cand))
            if gc >= st.g + 1e-4 * float(st.grad @ delta) and gc >= st.g:
                new = _evaluate(ops, conj, shift, quad, cand, M=Ms, basis=st.V)
                if new is not None:
                    return new, step, trials
            elif gc >= st.g - 2.0 * st.g_err:
                # the ascent is below the round-off of g (its terms ~ λᵀt cancel) while ∇g,
                # hence the certificate, is still accurate: the step is accepted when it
                # reduces the certificate
                c = _evaluate(ops, conj, shift, quad, cand, M=Ms, basis=st.V)
                if c is not None and certificate(c) <= (1.0 - 1e-4 * step) * cert:
                    return c, step, trials
        step *= 0.5
    return None, step, trials


def _no_finite_start(r, lam, t0) -> FastResult:
    """The answer when f* is not finite at the start (nor at λ = 0): NONFINITE, no iterate."""
    return FastResult(
        matrix=np.full((r, r), np.nan),
        lam=lam,
        xi=np.zeros(0),
        sweeps=0,
        stop_value=np.inf,
        code=NONFINITE,
        bad_index=-1,
        time=time.perf_counter() - t0,
        extra={"solver": "dual-newton", "reason": "f* is not finite at λ = 0"},
    )


def _setup(U, w, ptr, t, conj, lower, upper, quad, slack):
    """The terms, the dual box, the separable curvature ``quad``, the hard multipliers (those a
    Farkas ray can run in), the conjugate's shift, the targets' scale and its domain bound."""
    U = np.asarray(U, dtype=np.float64)
    shift = np.asarray(conj.conj_shift(U.shape[1]), dtype=float)
    found = _Span.find(U, shift, conj)
    if found is not None:  # the k × k problem on the terms' span
        U, shift = found[1], found[0].c * np.eye(found[1].shape[1])
    ops = RankOneTerms(U, w, ptr, t)
    ops.span = _NoSpan() if found is None else found[0]
    m = ops.m
    lower = np.zeros(m) if lower is None else np.asarray(lower, dtype=np.float64)
    upper = np.full(m, np.inf) if upper is None else np.asarray(upper, dtype=np.float64)
    quad = np.zeros(m) if quad is None else np.asarray(quad, dtype=np.float64)
    if slack is not None:
        ops.slack = sl = _Slack(conj, *slack, m)
        lower = lower.copy()
        lower[sl.idx] = np.maximum(lower[sl.idx], 0.0)  # δ_c(p_c − ξ_c) <= 0: λ_c >= 0
    hard = np.isinf(upper) & (quad == 0)  # the multipliers a Farkas ray can run in
    if ops.slack is not None:
        hard &= ~ops.slack.mask  # (the slack constraints are soft)
    return ops, lower, upper, quad, hard, shift, np.maximum(np.abs(ops.t), 1.0), _domain_upper(conj)


def _direction(ops, conj, st, lower, upper, quad, cert, boost, damping, newton_budget):
    """One projected-Newton direction (Bertsekas 1982): Newton on the free multipliers (dense,
    or truncated CG above ``newton_budget``), the scaled gradient on the ε-active ones, the
    scaled gradient everywhere when no Newton direction ascends.  Returns (d, active, diag,
    curv, newton, "dense" | "cg" | None)."""
    sl, m, r = ops.slack, ops.m, ops.r
    lam, grad = st.lam, st.grad
    # Bertsekas' ε-active set on the box
    eps = min(1e-3, float(np.max(np.abs(lam - np.clip(lam + grad, lower, upper)), initial=0.0)))
    active = ((lam <= lower + eps) & (grad < 0)) | ((lam >= upper - eps) & (grad > 0))
    free = ~active
    x_p = np.asarray(conj.conj_hess_s(st.mu), dtype=float)
    Gam = divided_differences(st.mu, st.x, x_p)
    # the constraints that can move: free, or ε-active strictly inside the box (those on
    # a bound with the gradient pointing out stay where they are)
    moving = free | (active & (lam > lower) & (lam < upper))
    qeff = quad  # the separable part of −∇²g: squared penalties, the slack conjugate
    if sl is not None:
        qeff = quad.copy()
        qeff[sl.idx] += sl.curvature(lam)
    diag = hessian_diagonal(ops, st, Gam, moving) + qeff
    dmax = float(np.max(diag, initial=0.0))
    # where the curvature vanishes (a flat piece of f*: X̂ = 0 under Frobenius) the
    # scale of ‖Â_c‖²·max(1, max Γ) bounds it from above; the expansion grows the step
    floor = ops.norms**2 * max(1.0, float(np.max(np.abs(Gam), initial=0.0)))
    # (an ε-active multiplier scaled by a vanishing curvature would jump to its bound at
    # any step of the arc: the step then could not shrink)
    floor = np.maximum(floor, _TINY)
    curv = np.where((diag > 1e-12 * dmax) & (diag > 1e-3 * floor), diag, floor)
    dscale = np.maximum(diag, max(1e-12 * dmax, _TINY))  # Marquardt's scaling, Jacobi
    d = np.zeros(m)
    with np.errstate(over="ignore"):  # ±inf: straight to the bound (clipped)
        d[active] = grad[active] / dscale[active]  # scaled gradient on the active set
    kind = None
    if np.any(free):
        # Levenberg–Marquardt damping (Marquardt's scaling μ·diag H): the dual Hessian is
        # singular whenever m exceeds r(r+1)/2 or the regularizer is flat (Frobenius,
        # trace); the damping vanishes with the certificate
        mu_lm = min(1e8, boost * min(1e-2, max(1e-12, damping * np.sqrt(cert))))
        H = FreeHessian(ops, st, Gam, free, qeff, mu_lm * dscale[free])
        kt = H.ZF.shape[0]
        small = kt * r * r <= newton_budget and kt <= _DENSE_MAX
        factors = None
        if not small and kt <= _DENSE_MAX:
            # far from the optimum an inexact Newton system is as good (the Armijo search
            # judges the step): Γ to 1e-2·certificate (1e-3 … 1e-8), fewer factors early on
            factors = gamma_factors(Gam, rtol=min(1e-3, max(1e-8, 1e-2 * cert)))
            # formed in s·|F|²·r (+ |F|³/3 to solve) against ~40 products of 4·|F|·r²
            if factors is not None and len(factors[0]) * kt * r + kt * kt / 3.0 > 160.0 * r * r:
                factors = None
        if small or factors is not None:
            d[free] = H.solve(grad[free], factors)
            kind = "dense"
        else:
            eta = min(0.1, max(1e-10, np.sqrt(cert)))
            d[free] = cg(
                H.matvec,
                grad[free],
                eta,
                maxiter=min(2 * H.k + 10, 250),
                precond=1.0 / (dscale[free] * (1.0 + mu_lm)),
            )[0]
            kind = "cg"
    newton = np.any(free) and np.all(np.isfinite(d[free])) and float(d[free] @ grad[free]) > 0.0
    if not newton or not float(grad @ (np.clip(lam + d, lower, upper) - lam)) > 0.0:
        # no usable Newton direction (a zero Hessian on a flat piece of f*): the scaled
        # gradient everywhere, expanded when taken in full
        newton = False
        d = grad / curv
    return d, active, diag, curv, newton, kind


def _gradient_step(ops, conj, shift, quad, base_st, curv, lower, upper):
    """After a failed or crawling Newton step (a singular Hessian: kinks of f*, flat
    regularizers): a scaled gradient step from ``base_st``, halved until it ascends, then
    expanded while it keeps improving.  Returns (state or None, trial points)."""
    d_g = base_st.grad / curv
    best, step, evaluations = None, 1.0, 0
    for _ in range(60):
        cand = np.clip(base_st.lam + step * d_g, lower, upper)
        light = _dual_objective(ops, conj, shift, quad, cand, values_only=True)
        evaluations += 1
        if light is not None and light[0] > base_st.g:
            best = _evaluate(ops, conj, shift, quad, cand, M=light[4])
            if best is not None:
                break
        step *= 0.5
    if best is not None:
        best = _expand(ops, conj, shift, quad, base_st.lam, step * d_g, lower, upper, best)
    return best, evaluations


def _dual_newton_impl(
    U,
    w,
    ptr,
    t,
    conj,
    lower,
    upper,
    quad,
    tol,
    max_iter,
    lam0,
    newton_budget,
    callback=None,
    damping=1e-2,
    slack=None,
    active_set=True,
):
    t0 = time.perf_counter()
    ops, lower, upper, quad, hard, shift, scale_t, dom = _setup(U, w, ptr, t, conj, lower, upper, quad, slack)
    m, r, sl = ops.m, ops.r, ops.slack
    start = np.zeros(m) if lam0 is None else np.asarray(lam0, dtype=np.float64)
    lam = np.clip(start, lower, upper)
    st = _evaluate(ops, conj, shift, quad, lam)
    if st is None and lam0 is not None:  # a warm start outside the domain: cold start
        lam = np.clip(np.zeros(m), lower, upper)
        st = _evaluate(ops, conj, shift, quad, lam)
    if st is None:
        return _no_finite_start(np.shape(U)[1], lam, t0)
    boost = 1.0  # Levenberg–Marquardt: ×10 after a failed / short Newton step, ÷10 after a full one
    count = dict(gradient_steps=0, cg_solves=0, dense_solves=0, trial_points=0)
    it = 0
    converged = infeasible = stopped = False
    ray, snap = None, lam.copy()
    signed = np.isinf(lower)  # hard equalities: multipliers (and rays) of either sign
    lo, up = lower, upper  # the box the Newton iteration sees (the working set's)
    certify = lambda c: max(_certificate(c, lo, up, quad, scale_t, sl)[:2])  # noqa: E731
    # the working set holds multipliers of finite boxes only (hinge: [0, C], [−C, C]); hard
    # multipliers stay free, so a Farkas ray grows in all of them at once
    movable = np.isfinite(lower) & np.isfinite(upper) & (sl is None or ~sl.mask)
    ws = None
    if active_set and np.any(movable):
        ws = WorkingSet(lower, upper, movable, **(active_set if isinstance(active_set, dict) else {}))
    rec = None
    while True:
        parts = _certificate(st, lower, upper, quad, scale_t, sl)
        cert = max(parts[:2])  # the iterate's own certificate steers the damping
        if rec is None:
            rec = _Record(st, parts)
        else:
            rec.offer(st, parts)
        if rec.rel_gap <= tol and rec.rel_viol <= tol:
            converged = True
            break
        if it >= max_iter:
            break
        if callback is not None and callback(
            {
                "iteration": it,
                "objective": rec.f_total,
                "gap": rec.rel_gap,
                "violation": rec.rel_viol,
                "dual": rec.dual.lam.copy(),
                "dual_bound": rec.dual.g,
                "iterate_gap": parts[0],
            }
        ):
            stopped = True
            break
        if it and hard.any() and (it % 25 == 0 or it & (it - 1) == 0):
            # at iterations 1, 2, 4, 8, … and every 25th: the multipliers, then their growth
            # since the last check, tested as a Farkas ray over the hard multipliers only (soft
            # constraints can always be met with slack)
            ray = growth_ray(ops, st.lam, snap, hard, signed)
            snap = st.lam.copy()
            if ray is not None:
                infeasible = True
                break
        lam, grad = st.lam, st.grad
        if ws is not None:
            lo, up = ws.box(ops, conj, st, quad, cert, certify(st))
            cert = certify(st)
        d, active, diag, curv, newton, kind = _direction(
            ops, conj, st, lo, up, quad, cert, boost, damping, newton_budget
        )
        if kind is not None:
            count["dense_solves" if kind == "dense" else "cg_solves"] += 1
        new, step, trials = _arc_search(ops, conj, shift, quad, st, d, lo, up, dom, cert, certify)
        count["trial_points"] += trials
        if new is None and np.any(active & (diag < curv)):
            # an ε-active multiplier scaled by a vanishing curvature jumps to its bound at any
            # step of the arc, which then cannot shrink: again with the safe curvature bound
            d[active] = grad[active] / curv[active]
            new, step, trials = _arc_search(ops, conj, shift, quad, st, d, lo, up, dom, cert, certify)
            count["trial_points"] += trials
        if new is not None and step == 1.0 and not newton:
            # a pure scaled-gradient step taken in full: where g is flat in places (X̂ = 0
            # under Frobenius) its curvature scale may be far too small: expand it
            new = _expand(ops, conj, shift, quad, lam, d, lo, up, new)
        it += 1
        boost = max(1.0, boost / 10.0) if (new is not None and step == 1.0) else min(boost * 10.0, 1e12)
        if new is None or step < 1e-2:
            best, trials = _gradient_step(ops, conj, shift, quad, new if new is not None else st, curv, lo, up)
            count["trial_points"] += trials
            count["gradient_steps"] += 1
            if best is not None:
                new = best
            if new is None and ws is not None and ws.stalled():
                continue  # no ascent on the subproblem: W is updated first
            if new is None:
                break  # no ascent possible at round-off
        st = new
    a, b = rec.primal, rec.dual
    X = (a.V * a.x) @ a.V.T
    farkas = ops.farkas_test(hard_part(b.lam, hard, signed))
    if isinstance(ops.span, _Span):  # back to r × r; A(d) has r − k more zero eigenvalues
        X, farkas = ops.span.lift(X), (min(farkas[0], 0.0), farkas[1])
    return FastResult(
        matrix=0.5 * (X + X.T),
        lam=b.lam,
        xi=np.zeros(0) if sl is None else sl.best(a.trA),
        sweeps=int(it),
        stop_value=float(rec.cert),
        code=OK if converged else NOT_CONVERGED,
        bad_index=-1,
        time=time.perf_counter() - t0,
        extra={
            "solver": "dual-newton",
            "rel_gap": float(rec.rel_gap),
            "rel_violation": float(rec.rel_viol),
            "dual_bound": float(b.g),
            "best_pair": a is not b,
            "newton_iterations": int(it),
            **count,
            "farkas": farkas,
            "span": int(r) if isinstance(ops.span, _Span) else None,
            "infeasible": bool(infeasible),
            **({} if ray is None else {"farkas_ray": ray}),
            "stopped": bool(stopped),
            **({} if ws is None else {"outer": ws.updates, "released": ws.released, "stalls": ws.stalls}),
            "residuals": a.rho.copy(),
            "objective_fy": float(rec.f_total),
        },
    )


def dual_newton(
    U,
    w,
    ptr,
    t,
    conjugate,
    upper=None,
    tol: float = 1e-9,
    max_iter: int = 500,
    lam0=None,
    newton_budget: float = 4e6,
    callback=None,
    *,
    lower=None,
    quad=None,
    slack=None,
    active_set=True,
) -> FastResult:
    """Solve min f(X̂) + Σ_c φ_c(tr(X̂Â_c) − t_c) over X̂ ⪰ 0 on its dual (module doc).

    Parameters
    ----------
    U, w, ptr, t : ndarray
        The constraints as signed rank-one terms (:mod:`cvxkml.declare.terms`).
    conjugate : object
        The regularizer (an object with :data:`REQUIRED_METHODS`).
    upper, lower : (m,) arrays or None
        The dual box lower_c <= λ_c <= upper_c.  None: upper = +inf, lower = 0 (hard
        inequalities).  Hinge: [0, C]; a hard equality: (−inf, +inf); a hinge equality
        (penalty C|ρ|): [−C, C].
    quad : (m,) array or None
        q_c >= 0 of the squared penalties: φ_c(ρ) = sup_{λ in the box} λρ − ½q_cλ², i.e.
        ρ₊²/(2q_c) on [0, ∞) (squared hinge with C = 1/q_c), ρ²/(2q_c) on the whole line.
    tol : float
        The certificate: relative gap (over max(1, |f|)) and relative hard violation (over
        max(1, |t_c|)) at most ``tol``.
    max_iter : int
        Newton iterations.
    lam0 : (m,) array or None
        Warm start (clipped to the box; a point outside the conjugate's domain falls back
        to λ = 0).
    newton_budget : float
        The Newton system on the free constraints F is formed densely (O(|F|² r²)) while
        (terms of F)·r² is at most this; above, truncated conjugate gradients with products
        in the eigenbasis (O(|F| r²) each) and a Jacobi preconditioner.
    callback : callable or None
        Called before each Newton iteration with a dict (``iteration``, ``objective`` the
        primal value f + penalties, ``gap`` and ``violation`` relative, ``dual`` λ); a truthy
        return stops the solve (``extra["stopped"]``).
    slack : tuple (idx, sign, xi0, gamma) or None
        The regularizer's own slack (Jain et al. eq. 7, ``gamma``) on the constraints ``idx``
        (pairs: one term each, w = sign = δ, t = δ·ξ0): min f(X̂) + γ·D(diag ξ, diag ξ0) s.t.
        δ_c(p_c − ξ_c) <= 0.  Their dual terms −λ_c t_c become the regularizer's
        ``slack_conj(δλ, ξ0, γ)`` (its gradient and curvature from ``slack_conj_grad``,
        ``slack_conj_hess``, its domain from ``slack_conj_domain`` when defined: :data:`SLACK_METHODS`);
        the certificate prices ξ at the best slack for X̂ (``slack_value``), returned as ``xi``.
    active_set : bool or dict
        The active-set outer loop (:class:`._dual_newton_active.WorkingSet`, a dict: its
        parameters): multipliers on a bound are held there while the others are solved for,
        then released a few at a time.  False: projected Newton on the whole box throughout.

    Returns
    -------
    FastResult
        ``matrix`` = X̂(λ) (r × r, whitened), ``lam`` = λ, ``sweeps`` = Newton iterations,
        ``stop_value`` = max(relative gap, relative violation), ``code`` OK (certified) /
        NOT_CONVERGED / NONFINITE (f* infinite at λ = 0), ``extra`` with the certificate's
        parts, the Farkas test of :meth:`cvxkml.solvers._terms.RankOneTerms.farkas_test` over the hard
        multipliers and the residuals ρ.
    """
    # far out on a diverging or expanded step, A(λ) and its products overflow: every such
    # point is refused by the explicit finiteness checks, so the overflow is not warned about
    with blas_limit(), np.errstate(over="ignore", invalid="ignore"):
        return _dual_newton_impl(
            U,
            w,
            ptr,
            t,
            conjugate,
            lower,
            upper,
            quad,
            tol,
            max_iter,
            lam0,
            newton_budget,
            callback,
            slack=slack,
            active_set=active_set,
        )
