"""The regularizer's own pair slack and the reduction to the span of the terms, two parts of
the generic dual solver (:mod:`cvxkml.solvers.dual_newton`, whose module docstring states the
problem and its dual)."""

from __future__ import annotations

import numpy as np

__all__ = ["_Slack", "_Span", "_NoSpan"]


class _Slack:
    """The regularizer's own slack on the constraints ``idx`` (Jain et al. eq. 7: γ·D(diag ξ,
    diag ξ0) in the objective, δ_c(p_c − ξ_c) <= 0): the constraint's term −λ_c t_c of the
    dual becomes the smooth separable S(δλ) = ``slack_conj(δλ, ξ0, γ)`` = −(γD)*(δλ), whose
    gradient −ξ(λ) (ξ(λ) = −``slack_conj_grad``) makes ∇g_c = δ_c(p_c − ξ_c(λ)) and whose
    curvature −``slack_conj_hess`` >= 0 joins the diagonal of −∇²g.  ``upper``: the open
    bound λ_c < upper_c of S's domain (``slack_conj_domain``, LogDet γ/ξ0 on similar pairs;
    +inf when the regularizer does not say: points outside are then refused by the
    line search, S = −inf there)."""

    def __init__(self, reg, idx, sign, xi0, gamma, m):
        self.reg = reg
        self.idx = np.asarray(idx, dtype=np.int64)
        self.sign = np.asarray(sign, dtype=np.float64)
        self.xi0 = np.asarray(xi0, dtype=np.float64)
        self.gamma = float(gamma)
        mask = np.zeros(m, dtype=bool)
        mask[self.idx] = True
        self.mask = mask
        self.rest = np.flatnonzero(~mask)
        dom = getattr(reg, "slack_conj_domain", None)
        up = np.full(self.idx.size, np.inf)
        if callable(dom):
            u = np.broadcast_to(np.asarray(dom(self.xi0, self.gamma), dtype=float), up.shape)
            up = np.where(self.sign > 0, u / np.where(self.sign > 0, self.sign, 1.0), np.inf)
        self.upper = up

    def conj(self, lam) -> float:
        """S(δλ) = Σ_c slack_conj_c, −inf outside its domain."""
        with np.errstate(all="ignore"):
            v = float(self.reg.slack_conj(self.sign * lam[self.idx], self.xi0, self.gamma))
        return v if np.isfinite(v) else -np.inf

    def xi(self, lam):
        """ξ(λ) = −S'(δλ), the slack the multipliers price."""
        with np.errstate(all="ignore"):
            return -np.asarray(self.reg.slack_conj_grad(self.sign * lam[self.idx], self.xi0, self.gamma), dtype=float)

    def curvature(self, lam):
        """−S''(δλ) >= 0, the slack's share of the diagonal of −∇²g."""
        with np.errstate(all="ignore"):
            c = -np.asarray(self.reg.slack_conj_hess(self.sign * lam[self.idx], self.xi0, self.gamma), dtype=float)
        return np.where(np.isfinite(c), np.maximum(c, 0.0), 0.0)

    def best(self, trA):
        """The best slack for the primal point: p = δ·tr(X̂Â_c); ξ = max(p, ξ0) on similar
        pairs (δ > 0), min(p, ξ0) on dissimilar ones (D(·, ξ0) is least at ξ0)."""
        p = self.sign * trA[self.idx]
        return np.where(self.sign > 0, np.maximum(p, self.xi0), np.minimum(p, self.xi0))

    def value(self, xi) -> float:
        """γ·D(diag ξ, diag ξ0) (+inf outside its domain)."""
        with np.errstate(all="ignore"):
            v = self.gamma * float(self.reg.slack_value(xi, self.xi0))
        return v if not np.isnan(v) else np.inf


class _Span:
    """The reduction to the span of the terms (as W* = αI + ΦSΦᵀ in Jain et al. 2012,
    Theorem 4, the optimum is x_c·I off that span).  With S = c·I and the rows of U in the
    range of an orthonormal Q (r × k, k < r: U = R̃ Qᵀ), S − A(λ) = Q(c·I − Ã(λ))Qᵀ + c(I − QQᵀ): its
    eigenvalues are those of the k × k matrix c·I − Ã(λ) (Ã from the terms R̃) and c,
    r − k times, whatever λ.  So the dual g(λ) loses only the constant −(r − k)·f*_s(c), the
    primal value gains (r − k)·f_s(x_c), x_c = f*_s'(c), and gradient, Hessian (the terms
    have no component on the complement, Z's columns there are zero), line search and
    certificate are the k × k ones; X̂ = x_c·I + Q(X̃ − x_c·I)Qᵀ.  One QR of Uᵀ (O(r k²))
    against eigendecompositions of k × k instead of r × r at every trial point."""

    def __init__(self, conj, c, Q, r):
        with np.errstate(all="ignore"):
            fs = float(np.asarray(conj.conj_s(np.array([c])), dtype=float)[0])
            x = float(np.asarray(conj.conj_grad_s(np.array([c])), dtype=float)[0])
        n = r - Q.shape[1]
        self.Q, self.c, self.x, self.count = Q, c, x, n
        self.ok = bool(np.isfinite(fs) and np.isfinite(x))
        self.conj = n * fs  # its share of f*_+(S − A(λ))
        self.f = n * (x * c - fs)  # and of f(X̂) (Fenchel–Young on the eigenvalue c)
        self.err = n * (abs(fs) + abs(c) * abs(x))  # and of the sums in g_err

    @staticmethod
    def find(U, shift, conj, most=0.9):
        """The reduction when S is a multiple of I and the terms are fewer than ``most``·r,
        else None."""
        r = shift.shape[0]
        c = float(shift[0, 0]) if r else 0.0
        if not 0 < U.shape[0] <= most * r or np.any(shift != c * np.eye(r)):
            return None
        Q, R = np.linalg.qr(U.T)  # Uᵀ = Q R, Q r × k orthonormal: U = Rᵀ Qᵀ
        span = _Span(conj, c, Q, r)
        return (span, np.ascontiguousarray(R.T)) if span.ok else None

    def lift(self, X):
        """X̂ = x_c·I + Q(X̃ − x_c·I)Qᵀ (r × r) from the k × k answer X̃."""
        Y = self.Q @ (X - self.x * np.eye(X.shape[0])) @ self.Q.T
        Y[np.diag_indices_from(Y)] += self.x
        return Y


class _NoSpan:
    """No reduction: the eigenvalues of S − A(λ) are all computed."""

    conj = f = err = 0.0
