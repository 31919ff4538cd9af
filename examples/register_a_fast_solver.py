"""
Add a fast solver and register it
=================================

The alpha-power regularizer of "Add a regularizer" (f_s(x) = (x^{3/2} − 1.5x + 0.5)/0.75)
is solved out of the box by cvxkml's generic certified dual solver. Here it gets a solver of
its own — plain projected gradient ascent on the Lagrange dual, in thirty lines — registered
with ``cvxkml.declare.register_fast_solver(AlphaPower, solver)``.

**The protocol** (``cvxkml.solvers.result``): ``solver(problem, tol, max_iter)`` returns a
``cvxkml.solvers.FastResult`` — the learned matrix in the problem's space, one multiplier
per constraint (in ``problem.violations()`` order) and a ``Status`` saying whether its own
stopping rule was met. It returns no objective and no gap: ``problem.solve()`` validates the
answer and recomputes objective, violations, dual value and gap with the problem's own
formulas, and says ``converged=True`` only when that certificate holds.

**The algorithm.** ``cvxkml.declare.terms.constraint_terms(problem)`` gives every
constraint, whatever its family, in the whitened space as tr(X̂ Â_c) <= t_c with
Â_c = Σ_a w_a u_a u_aᵀ (signed rank-one terms), and its dual box [lower, upper] (upper = C
under ``Hinge``). The Lagrange dual is

    g(λ) = −Σ_i f*_s(μ_i(−Σ_c λ_c Â_c)) − λᵀt,    ∂g/∂λ_c = tr(X̂(λ) Â_c) − t_c,

with X̂(λ) = V diag(f*_s'(μ)) Vᵀ the primal point of λ: the gradient is the constraint
residual at X̂(λ). Projected gradient ascent on the box with a backtracking step, stopped
when the projected step is below ``tol``; then K = T X̂ Tᵀ (``problem.matrix_from_whitened``).

Run it yourself::

    python examples/register_a_fast_solver.py
"""

import time
import warnings

import cvxpy as cp
import numpy as np

from cvxkml.declare import Regularizer, SpectralKernel, register_fast_solver, registry
from cvxkml.declare.terms import constraint_terms
from cvxkml.errors import ConvergenceWarning
from cvxkml.kernels import gaussian_kernel
from cvxkml.sideinfo import Hinge, PairConstraints, baseline_kernel
from cvxkml.solvers import FastResult, Status


class AlphaPower(Regularizer):
    """f_s(x) = (x^{3/2} − 1.5x + 0.5)/0.75 (the tutorial "Add a regularizer")."""

    name, alpha = "alpha-power(1.5)", 1.0

    def f_s(self, x):
        with np.errstate(invalid="ignore"):
            return np.where(x >= 0, (np.abs(x) ** 1.5 - 1.5 * x + 0.5) / 0.75, np.inf)

    def conj_grad_s(self, mu):  # x(μ) = argmax_x xμ − f_s(x) = max(1 + μ/2, 0)²
        return np.maximum(1 + 0.5 * mu, 0.0) ** 2

    def conj_s(self, mu):
        x = self.conj_grad_s(mu)
        return x * mu - self.f_s(x)

    def conj_hess_s(self, mu):
        return np.maximum(1 + 0.5 * mu, 0.0)

    def cvx(self, X):  # tr X^{3/2} <= tr Z through two LMIs with auxiliary Z, W
        r = X.shape[0]
        Z, W = cp.Variable((r, r), symmetric=True), cp.Variable((r, r), symmetric=True)
        lmis = [cp.bmat([[Z, X], [X, W]]) >> 0, cp.bmat([[X, W], [W, np.eye(r)]]) >> 0]
        return (cp.trace(Z) - 1.5 * cp.trace(X) + 0.5 * r) / 0.75, lmis


def dual_ascent(problem, tol, max_iter):
    """Projected gradient ascent on the Lagrange dual of any spectral problem whose
    regularizer gives conj_s and conj_grad_s (hard or hinge constraints of any family)."""
    t0 = time.perf_counter()
    terms = constraint_terms(problem)
    U, w, t, owner = terms.U, terms.w, terms.t, terms.owner()
    lower = np.zeros(terms.m) if terms.lower is None else terms.lower
    upper = np.full(terms.m, np.inf) if terms.upper is None else terms.upper
    reg = problem.regularizer

    def dual(lam):  # g(λ), ∇g(λ), X̂(λ) from one eigendecomposition
        mu, V = np.linalg.eigh(-(U.T * (w * lam[owner])) @ U)
        Xh = (V * reg.conj_grad_s(mu)) @ V.T
        resid = np.bincount(owner, w * np.einsum("ij,jk,ik->i", U, Xh, U), terms.m) - t
        return -np.sum(reg.conj_s(mu)) - lam @ t, resid, Xh

    lam, step, code = np.clip(np.zeros(terms.m), lower, upper), 1.0, Status.NOT_CONVERGED
    g, grad, Xh = dual(lam)
    it, d = 0, np.zeros(terms.m)
    while it < max_iter:
        it += 1
        while True:  # backtracking: accept when g rises at least as its quadratic model says
            new = np.clip(lam + step * grad, lower, upper)
            d = new - lam
            g_new, grad_new, Xh_new = dual(new)
            if g_new >= g + grad @ d - (d @ d) / (2 * step):
                break
            step *= 0.5
        lam, g, grad, Xh, step = new, g_new, grad_new, Xh_new, 1.5 * step
        if np.max(np.abs(d)) <= tol * max(1.0, np.max(np.abs(lam))):
            code = Status.OK
            break
    return FastResult(
        matrix=problem.matrix_from_whitened(Xh),
        lam=lam,
        xi=np.zeros(0),  # no regularizer slack (gamma): hinge slack is priced by the problem
        sweeps=it,
        stop_value=float(np.max(np.abs(d))),
        code=int(code),
        bad_index=-1,
        time=time.perf_counter() - t0,
        extra={"solver": "dual-ascent"},
    )


def lazy_solver(problem, tol, max_iter):
    """A planted bug: five iterations, then a claim that the stopping rule was met."""
    res = dual_ascent(problem, tol, 5)
    res.code = int(Status.OK)
    return res


def alpha_instance(seed=0, n=20):
    """A Gaussian kernel on n points of three classes, hinge-slack pair constraints (C = 1)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 3)) + 1.5 * np.eye(3)[y]
    K0 = gaussian_kernel(X, sigma=1.5)
    pairs = PairConstraints.from_labels(y, baseline_kernel(K0), n_similar=15, n_dissimilar=15, random_state=seed)
    return SpectralKernel(K0, Hinge(pairs, C=1.0), AlphaPower())


if __name__ == "__main__":
    # %%
    # 1. Before registration, solve() uses the generic certified dual solver; after it, the
    # user's solver comes first (it is the same registry as cvxkml's own solvers).
    problem = alpha_instance(0)
    print("before:", problem.fast_solver().name)
    spec = register_fast_solver(AlphaPower, dual_ascent)
    print("after: ", problem.fast_solver().name)

    # %%
    # 2. Solve. The solver returned a matrix, multipliers and a Status; the objective, the
    # dual value and the gap below are the problem's own, recomputed from them.
    mine = problem.solve(tol=1e-9, max_iter=20_000)
    newton = problem.solve(tol=1e-10, method="dual")
    print(
        f"{mine.solver}: objective {mine.objective:.10f}, dual value {mine.dual_value:.10f}, gap {mine.gap:.1e}, "
        f"{mine.n_iter} iterations, {mine.time:.3f} s, converged {mine.converged}"
    )
    print(
        f"{newton.solver}: objective {newton.objective:.10f}, gap {newton.gap:.1e}, {newton.n_iter} "
        f"iterations, {newton.time:.3f} s | relative difference "
        f"{abs(mine.objective - newton.objective) / abs(newton.objective):.1e}"
    )
    print(
        "recomputed by the problem:",
        mine.objective == problem.objective(mine.matrix),
        mine.dual_value == problem.dual_value(mine.dual),
    )

    # %%
    # 3. A solver that claims its rule was met after five iterations is not believed: the
    # certificate fails, solve() retries with a tighter tol, then warns and says
    # converged=False. (Registering again for the same class replaces the solver.)
    register_fast_solver(AlphaPower, lazy_solver)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lazy = problem.solve(tol=1e-9)
    warned = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    print(
        f"lazy solver: objective {lazy.objective:.6f}, relative gap {lazy.gap / abs(lazy.objective):.1e}, "
        f"converged {lazy.converged}, status {lazy.status!r}"
    )
    print("ConvergenceWarning:", warned[0].message if warned else None)

    # %%
    # 4. Unregister: the generic dual solver takes the problem again.
    registry.unregister(spec.name)
    print("unregistered:", problem.fast_solver().name)
