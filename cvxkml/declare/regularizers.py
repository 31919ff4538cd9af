"""Spectral regularizers f(A) = Σ_i f_s(λ_i(A)) (Jain et al. 2012, Definition 3) — each
declared in one place: scalar function f_s, its minimizer α on x >= 0, the CVXPY
expression, the numpy value, and the conjugate used by the Lagrange dual certificate,

    f*_+(M) = sup_{A ⪰ 0} tr(AM) − f(A) = Σ_i f*_s(μ_i(M)),  f*_s(μ) = sup_{x >= 0} xμ − f_s(x),

so that for constraints tr(Â_c X̂) <= t_c the dual is g(λ) = −f*_+(−Σ λ_c Â_c) − Σ λ_c t_c.
A new spectral regularizer is a subclass defining these few methods.

Slack (pairs only): ``slack_cvx``/``slack_value``/``slack_conj`` define γ·D(diag ξ, diag ξ0)
for the regularizers that have a paper-given slack (LogDet: Jain et al. eq. 7; von Neumann:
Kulis et al. §6.2.1).  ``s`` is the slack ratio ξ/ξ0.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from .._validation import as_float_array, check_positive
from ..errors import InvalidInputError
from ..sideinfo import ConstraintAtom
from .registry import SolverSpec, register, registered

__all__ = [
    "EDGE_RTOL",
    "domain_eigenvalues",
    "Regularizer",
    "LogDet",
    "VonNeumann",
    "Frobenius",
    "TraceNorm",
    "register_fast_solver",
]


def register_fast_solver(cls, solver, handles=None, problem=None) -> SolverSpec:
    """Register ``solver(problem, tol, max_iter) -> FastResult`` (the protocol:
    :mod:`cvxkml.solvers.result`) for a regularizer class or a problem class.

    * ``cls`` a :class:`~cvxkml.declare.regularizers.Regularizer` subclass: the fast solver
      of every spectral problem whose regularizer is an instance of it (subclasses
      included), every constraint family (a user's too), hard or soft;
    * ``cls`` a :class:`~cvxkml.declare.problem.Problem` subclass (a user's problem class
      too): the fast solver of its instances; a class without a ``solve()`` of its own
      inherits the certified pipeline (:meth:`Problem.solve <cvxkml.declare.problem.Problem.solve>`).

    It is dispatched exactly like a built-in solver, before them; the problem validates its
    answer and computes the objective, violations and certificate itself, so ``converged``
    stays honest.  A solver that takes the keywords ``warm_start=`` / ``callback=`` gets them.

    Parameters
    ----------
    cls : type
        A Regularizer subclass or a Problem subclass.
    solver : callable (problem, tol, max_iter) -> FastResult
        The fast solver.
    handles : callable problem -> bool, optional
        Which problems the solver takes (e.g. ``lambda p: p.pairs_only``); the others go on
        to the next solver that accepts them.  Default: all.
    problem : a problem class, optional
        With a regularizer class: restrict to instances of it (default: every problem with
        this regularizer).

    Returns the :class:`~cvxkml.declare.registry.SolverSpec` (``registry.unregister(spec.name)``
    removes it).
    """
    from .problem import Problem

    is_reg = isinstance(cls, type) and issubclass(cls, Regularizer)
    is_problem = isinstance(cls, type) and issubclass(cls, Problem)
    if not (is_reg or is_problem):
        raise InvalidInputError(
            "register_fast_solver needs a Regularizer subclass or a Problem subclass (the class, not an "
            f"instance); got {cls!r}."
        )
    if not callable(solver) or (handles is not None and not callable(handles)):
        raise InvalidInputError(
            "solver (and handles, if given) must be callable: "
            "solver(problem, tol, max_iter) -> FastResult, handles(problem) -> bool."
        )
    if problem is not None and not (is_reg and isinstance(problem, type)):
        raise InvalidInputError(
            f"problem= restricts a regularizer's solver to a problem class; got {problem!r} with {cls!r}."
        )
    problems = (cls,) if is_problem else (() if problem is None else (problem,))
    # one spec per class: registering a class again replaces its spec; another class of the
    # same name keeps its own (user:Name, user:Name#2, …)
    base, k = f"user:{cls.__qualname__}", 1
    name = base
    while True:
        held = next((s for s in registered() if s.name == name), None)
        if held is None or cls in ((held.regularizers or ()) + held.problems):
            break
        k += 1
        name = f"{base}#{k}"
    return register(
        SolverSpec(
            name=name,
            solve=solver,
            problems=problems,
            regularizers=(cls,) if is_reg else None,
            families=(ConstraintAtom,),
            hinge=True,
            slack=True,
            accepts=handles,
            user=True,
        )
    )


#: eigenvalues in [−τ, 0) are zero, τ = max(EDGE_RTOL, 8·r·eps)·max|λ| (r the matrix side,
#: eps the float64 machine epsilon): the round-off of an eigendecomposition of a PSD matrix
#: with a zero eigenvalue (a rank-deficient optimum whitened back shows −1e-15)
EDGE_RTOL = 1e-12


def domain_eigenvalues(lam) -> np.ndarray:
    """``lam`` (eigenvalues of a symmetric r × r matrix) with the round-off below zero removed:
    entries in [−τ, 0), τ = max(:data:`EDGE_RTOL`, 8·r·eps)·max|λ|, become 0; anything more
    negative is left for ``f_s`` to judge (a truly indefinite matrix stays outside the domain
    of every regularizer on x >= 0)."""
    lam = np.asarray(lam, dtype=float)
    if lam.size == 0:
        return lam
    tau = max(EDGE_RTOL, 8 * lam.size * np.finfo(float).eps) * float(np.max(np.abs(lam)))
    return np.where((lam < 0) & (lam >= -tau), 0.0, lam)


def _eigvalsh(A):
    return np.linalg.eigvalsh(0.5 * (A + A.T))


class Regularizer:
    """Base class of a spectral regularizer f(A) = Σ f_s(λ_i(A)).

    Subclasses set ``name``, ``alpha`` (the minimizer of f_s on x >= 0, Theorem 4's α) and
    ``implies_psd`` (whether ``cvx`` already forces X ⪰ 0; otherwise the model adds it), and
    implement:

    * ``f_s(x)`` (+inf outside the domain) and ``cvx(X)`` — enough for the exact model
      (solved without a Lagrange certificate of cvxkml's, said in ``info``); ``cvx`` returns a
      CVXPY expression, or ``(expression, [constraints])`` when it needs auxiliary variables;
    * ``conj_s``, ``conj_grad_s``, ``conj_hess_s`` (f*_s and two derivatives) — for the
      certificate and the generic certified dual solver;
    * ``slack_*`` — only for the regularizer's own pair slack (``gamma``).

    :func:`cvxkml.testing.check_regularizer` checks them against each other.  Eigenvalues
    within round-off of zero reach ``f_s`` as 0 (:func:`domain_eigenvalues`)."""

    name = "regularizer"
    alpha = 1.0
    has_slack = False
    implies_psd = False  # True when the CVXPY form already forces X ⪰ 0 (log_det, entropy)

    def f_s(self, x: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def conj_s(self, mu: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def cvx(self, X: cp.Expression):  # pragma: no cover - abstract
        raise NotImplementedError

    def conj_grad_s(self, mu: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """d f*_s / dμ (the primal eigenvalue x(μ) = argmax_x xμ − f_s(x))."""
        raise NotImplementedError

    def conj_grad(self, M) -> np.ndarray:
        """∇f*_+(M) = U diag(f*_s'(μ)) Uᵀ: the primal X̂ that attains the conjugate."""
        mu, U = np.linalg.eigh(0.5 * (M + M.T))
        return (U * self.conj_grad_s(mu)) @ U.T

    def slack_conj_grad(self, dl, xi0, gamma):  # pragma: no cover - abstract
        """d slack_conj / d(δλ) per pair."""
        raise NotImplementedError

    def conj_hess_s(self, mu):  # pragma: no cover - abstract
        """f*_s''(μ) (for the divided differences of the dual Hessian)."""
        raise NotImplementedError

    def slack_conj_hess(self, dl, xi0, gamma):  # pragma: no cover - abstract
        raise NotImplementedError

    def value(self, A) -> float:
        """f(A) = Σ f_s(λ_i(A)); +inf outside the domain.  The eigenvalues go through
        :func:`domain_eigenvalues` first: those within round-off of zero are zero, so an
        ``f_s`` defined on x >= 0 (and +inf below, as it should be) is never handed −1e-15."""
        lam = domain_eigenvalues(_eigvalsh(np.asarray(A, dtype=float)))
        with np.errstate(divide="ignore", invalid="ignore"):
            v = self.f_s(lam)
        return float(np.sum(v)) if np.all(np.isfinite(v)) else np.inf

    def conj_shift(self, r):
        """S with f*_+(M) = Σ f*_s(μ_i(M + S)) (zero for spectral regularizers)."""
        return np.zeros((r, r))

    def conj(self, M) -> float:
        """f*_+(M) = Σ f*_s(μ_i(M))."""
        return float(np.sum(self.conj_s(_eigvalsh(np.asarray(M, dtype=float)))))

    def check_theorem4(self):
        """Theorem 4 needs f_s to attain its minimum over x >= 0 at a finite α >= 0 (the
        learned W* = αI + ΦSΦᵀ, eq. 18).  Raises when the declared ``alpha`` is negative,
        not a finite number, outside the domain of f_s (f_s(α) = ±inf or NaN), or visibly
        not the minimizer (some probe x >= 0 has f_s(x) < f_s(α))."""
        try:
            a = float(self.alpha)
        except (TypeError, ValueError):
            a = np.nan
        if not np.isfinite(a):
            raise InvalidInputError(
                f"{self.name}: the minimizer α = {self.alpha!r} of f_s is not a finite number; "
                "Theorem 4 (kernel ↔ metric equivalence, W* = αI + ΦSΦᵀ) needs f_s to attain its "
                "minimum over x >= 0 at a finite α >= 0 (a barrier such as −log x has none)."
            )
        if a < 0:
            raise InvalidInputError(
                f"{self.name}: the minimizer α = {a:g} of f_s is negative; Theorem 4 "
                "(kernel ↔ metric equivalence) needs α >= 0."
            )
        try:
            with np.errstate(all="ignore"):
                fa = float(np.asarray(self.f_s(np.array([a])), dtype=float).ravel()[0])
                h = 1e-3 * (1.0 + a)
                probes = np.array([0.0, max(a - h, 0.0), a + h, 0.5 * a, 2.0 * a + 1.0, 10.0 * (a + 1.0)])
                fp = np.asarray(self.f_s(probes), dtype=float).ravel()
        except NotImplementedError:
            return
        if not np.isfinite(fa):
            raise InvalidInputError(
                f"{self.name}: f_s(α) = {fa} at the declared minimizer α = {a:g}, outside the "
                "domain of f_s; Theorem 4 needs f_s to attain its minimum at α (for a barrier "
                "domain x > 0, α must be > 0)."
            )
        tol = 1e-12 * (1.0 + abs(fa))
        bad = np.flatnonzero(np.isfinite(fp) & (fp < fa - tol))
        if bad.size:
            x = float(probes[bad[0]])
            raise InvalidInputError(
                f"{self.name}: the declared α = {a:g} is not the minimizer of f_s over x >= 0 "
                f"(f_s({x:g}) = {fp[bad[0]]:.6g} < f_s(α) = {fa:.6g}); Theorem 4's W* = αI + ΦSΦᵀ "
                "and the learned kernel of eq. 18 need the true minimizer."
            )

    # slack (only where has_slack)
    def slack_value(self, xi, xi0) -> float:  # pragma: no cover - abstract
        raise InvalidInputError(f"{self.name} has no slack formulation; use hard constraints (gamma=None).")

    def slack_cvx(self, s, xi0):  # pragma: no cover - abstract
        raise InvalidInputError(f"{self.name} has no slack formulation; use hard constraints (gamma=None).")

    def slack_conj(self, dl, xi0, gamma) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def slack_conj_domain(self, xi0, gamma):
        """Per pair, the sup of δλ where ``slack_conj`` is finite (+inf: everywhere; the
        generic dual solver keeps its first trial step inside it)."""
        return np.full(np.shape(xi0), np.inf)

    def __repr__(self):
        return f"{type(self).__name__}()"


class LogDet(Regularizer):
    """f_s(x) = x − log x − 1 (f(A) = D_ld(A, I)), α = 1.  Slack: D_ld(diag ξ, diag ξ0)."""

    name = "LogDet"
    alpha = 1.0
    has_slack = True
    implies_psd = True

    def f_s(self, x):
        return np.where(x > 0, x - np.log(np.where(x > 0, x, 1.0)) - 1.0, np.inf)

    def conj_s(self, mu):
        return np.where(mu < 1, -np.log(np.where(mu < 1, 1.0 - mu, 1.0)), np.inf)

    def cvx(self, X):
        return cp.trace(X) - cp.log_det(X) - X.shape[0]

    def conj_grad_s(self, mu):
        return np.where(mu < 1, 1.0 / np.where(mu < 1, 1.0 - mu, 1.0), np.inf)

    def slack_conj_grad(self, dl, xi0, gamma):
        return -xi0 / (1.0 - dl * xi0 / gamma)

    def conj_hess_s(self, mu):
        # (1/(1 − μ))², not 1/(1 − μ)²: a diverging dual (μ ~ −1e157) must
        # give a tiny curvature, not an overflow
        r = 1.0 / (1.0 - mu)
        return r * r

    def slack_conj_hess(self, dl, xi0, gamma):
        r = xi0 / (1.0 - dl * xi0 / gamma)
        return -(r * r) / gamma

    def slack_value(self, xi, xi0):
        r = np.asarray(xi, dtype=float) / np.asarray(xi0, dtype=float)
        return float(np.sum(r - np.log(r) - 1.0)) if np.all(r > 0) else np.inf

    def slack_cvx(self, s, xi0):
        return cp.sum(s) - cp.sum(cp.log(s)) - s.shape[0]

    def slack_conj(self, dl, xi0, gamma):
        arg = 1.0 - dl * xi0 / gamma
        return float(gamma * np.sum(np.log(arg))) if np.all(arg > 0) else -np.inf

    def slack_conj_domain(self, xi0, gamma):
        """slack_conj(δλ) is finite for δλ < γ/ξ0 (ξ = ξ0/(1 − δλξ0/γ) > 0)."""
        return gamma / np.asarray(xi0, dtype=float)


class VonNeumann(Regularizer):
    """f_s(x) = x log x − x + 1 (f(A) = D_vN(A, I), Jain et al. §5.1), α = 1.
    Slack: D_vN(diag ξ, diag ξ0) = Σ ξ log(ξ/ξ0) − ξ + ξ0 (Kulis et al. §6.2.1).

    With ``prior=p`` (positive vector) the regularizer is D_vN(A, diag p) instead — Kulis et
    al.'s D_vN(K, K0) written in the eigenbasis of K0 (not spectral in A alone, so not for
    Theorem 4; used by :class:`~cvxkml.declare.vonneumann.VonNeumannKernel`).  Its
    conjugate is f*_+(M) = tr exp(M + diag log p) − Σ p.
    """

    name = "VonNeumann"
    alpha = 1.0
    has_slack = True
    implies_psd = True

    def __init__(self, prior=None):
        if prior is None:
            self.logp = None
        else:
            p = as_float_array(prior, "The von Neumann prior", finite=False)
            if p.ndim > 1 or p.size == 0 or not np.all(np.isfinite(p)) or np.any(p <= 0):
                raise InvalidInputError(
                    "The von Neumann prior must be a finite positive vector (the positive eigenvalues of K0)."
                )
            self.logp = np.log(p.ravel())
            self.alpha = np.nan  # not a spectral function of A

    def check_theorem4(self):
        if self.logp is not None:
            raise InvalidInputError(
                "VonNeumann(prior=…) is D_vN(K, K0) (Kulis et al.), not a spectral function of "
                "K0^-½ K K0^-½; use VonNeumannKernel for it, or VonNeumann() in the framework."
            )

    def conj_shift(self, r):
        return np.zeros((r, r)) if self.logp is None else np.diag(self.logp)

    def f_s(self, x):
        x = np.maximum(x, 0.0)
        return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0) - x + 1.0

    def value(self, A) -> float:
        v = super().value(A)
        if self.logp is None:
            return v
        A = np.asarray(A, dtype=float)
        # Σ f_s(λ) = tr(A log A − A + I); subtract tr(A log P) and turn the +I into +P
        return float(v - np.sum(np.diag(A) * self.logp) + np.sum(np.exp(self.logp)) - A.shape[0])

    # exp overflows to +inf far from the optimum (e.g. an L-BFGS-B trial step in
    # declare.dual, which treats a non-finite value as "outside": it backtracks); no warning
    def conj_s(self, mu):
        with np.errstate(over="ignore"):
            return np.exp(mu) - 1.0

    def conj(self, M) -> float:
        r = M.shape[0]
        mu = np.linalg.eigvalsh(0.5 * (M + M.T) + self.conj_shift(r))
        base = 0.0 if self.logp is None else float(np.sum(np.exp(self.logp))) - r
        return float(np.sum(self.conj_s(mu))) - base

    def conj_grad(self, M):
        mu, U = np.linalg.eigh(0.5 * (M + M.T) + self.conj_shift(M.shape[0]))
        with np.errstate(over="ignore", invalid="ignore"):
            return (U * np.exp(mu)) @ U.T

    def cvx(self, X):
        expr = -cp.von_neumann_entr(X) - cp.trace(X) + X.shape[0]
        if self.logp is not None:
            expr = expr - cp.sum(cp.multiply(self.logp, cp.diag(X))) + float(np.sum(np.exp(self.logp))) - X.shape[0]
        return expr

    def conj_grad_s(self, mu):
        return np.exp(mu)

    def conj_hess_s(self, mu):
        return np.exp(mu)

    def slack_value(self, xi, xi0):
        xi = np.asarray(xi, dtype=float)
        xi0 = np.asarray(xi0, dtype=float)
        if np.any(xi < 0):
            return np.inf
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(xi > 0, xi * np.log(xi / xi0), 0.0)
        return float(np.sum(t - xi + xi0))

    def slack_cvx(self, s, xi0):
        return cp.sum(cp.multiply(xi0, -cp.entr(s) - s + 1.0))

    def slack_conj(self, dl, xi0, gamma):
        with np.errstate(over="ignore"):
            return float(gamma * np.sum(xi0 * (1.0 - np.exp(dl / gamma))))

    def slack_conj_grad(self, dl, xi0, gamma):
        with np.errstate(over="ignore"):
            return -xi0 * np.exp(dl / gamma)

    def slack_conj_hess(self, dl, xi0, gamma):
        return -xi0 / gamma * np.exp(dl / gamma)

    def __repr__(self):
        return "VonNeumann()" if self.logp is None else f"VonNeumann(prior=<{self.logp.size} values>)"


class Frobenius(Regularizer):
    """f_s(x) = x²/2 (f(A) = ½‖A‖²_F, POLA, Jain et al. §5.2), α = 0."""

    name = "Frobenius"
    alpha = 0.0

    def f_s(self, x):
        return 0.5 * x * x

    def conj_s(self, mu):
        return 0.5 * np.maximum(mu, 0.0) ** 2

    def cvx(self, X):
        return 0.5 * cp.sum_squares(X)

    def conj_grad_s(self, mu):
        return np.maximum(mu, 0.0)

    def conj_hess_s(self, mu):
        return (mu > 0).astype(float)


class TraceNorm(Regularizer):
    """f_s(x) = τx + x² (τ tr A + ‖A‖²_F on A ⪰ 0, Jain et al. eq. 26), α = 0."""

    name = "TraceNorm"
    alpha = 0.0

    def __init__(self, tau: float = 1.0):
        self.tau = check_positive(tau, "tau")

    def f_s(self, x):
        return self.tau * x + x * x

    def conj_s(self, mu):
        return 0.25 * np.maximum(mu - self.tau, 0.0) ** 2

    def cvx(self, X):
        return self.tau * cp.trace(X) + cp.sum_squares(X)

    def conj_grad_s(self, mu):
        return 0.5 * np.maximum(mu - self.tau, 0.0)

    def conj_hess_s(self, mu):
        return 0.5 * (mu > self.tau).astype(float)

    def __repr__(self):
        return f"TraceNorm(tau={self.tau:g})"
