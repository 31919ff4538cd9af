"""
Add a regularizer: the alpha-power divergence, an exact model with auxiliary variables
======================================================================================

A spectral regularizer is one class outside the package: a subclass of
``cvxkml.declare.Regularizer``. Here the alpha-power matrix divergence (p = 3/2), which
cvxkml does not ship,

    f(X) = Σ_i f_s(λ_i(X)),   f_s(x) = (x^p − p x + p − 1) / (p (p − 1)),   x >= 0,

minimized at x = 1 (so ``alpha = 1``: Theorem 4's W* = I + ΦSΦᵀ). The class gives

* ``f_s``: the scalar function (+inf below 0: the domain is X ⪰ 0);
* ``conj_s``, ``conj_grad_s``, ``conj_hess_s``: its conjugate over x >= 0 and two
  derivatives. f_s'(x) = (x^{p−1} − 1)/(p − 1) = μ gives the maximizer
  x(μ) = max(1 + (p − 1)μ, 0)^{1/(p−1)} = max(1 + μ/2, 0)², so f*_s(μ) = x(μ)μ − f_s(x(μ)),
  f*_s' = x(μ) and f*_s'' = max(1 + μ/2, 0). They are all the generic certified dual solver
  and the Lagrange certificate need;
* ``cvx(X)``: the exact CVXPY form. tr X^{3/2} is not a CVXPY atom, but its epigraph is two
  linear matrix inequalities with auxiliary symmetric Z, W:

      [[Z, X], [X, W]] ⪰ 0  and  [[X, W], [W, I]] ⪰ 0   ⟹   tr Z >= tr X^{3/2}

  (the second says W² ⪯ X, so W ⪯ X^{1/2}; the first says Z ⪰ X W⁻¹ X ⪰ X^{3/2}; equality
  at W = X^{1/2}, Z = X^{3/2}). ``cvx`` returns ``(expression, [constraints])``: the
  expression (tr Z − 1.5 tr X + 0.5 r)/0.75 and the two LMIs, which join the exact model once.

``cvxkml.testing.check_regularizer`` checks the four against each other before anything is
trusted: the CVXPY form (minimized over Z, W) against ``f_s`` on random matrices,
Fenchel–Young, and the derivatives by finite differences.

Run it yourself::

    python examples/add_a_regularizer.py
"""

import time

import cvxpy as cp
import numpy as np

from cvxkml.declare import Regularizer, SpectralKernel
from cvxkml.kernels import gaussian_kernel
from cvxkml.sideinfo import Hinge, PairConstraints, baseline_kernel
from cvxkml.testing import check_regularizer


class AlphaPower(Regularizer):
    """f_s(x) = (x^p − p x + p − 1)/(p(p − 1)), p = 3/2: the alpha-power divergence to I."""

    name = "alpha-power(1.5)"
    alpha = 1.0  # argmin of f_s over x >= 0
    p = 1.5

    def f_s(self, x):
        p = self.p
        with np.errstate(invalid="ignore"):
            return np.where(x >= 0, (np.abs(x) ** p - p * x + p - 1) / (p * (p - 1)), np.inf)

    def _x(self, mu):  # the maximizer x(μ) of xμ − f_s(x) over x >= 0
        return np.maximum(1 + (self.p - 1) * mu, 0.0) ** (1 / (self.p - 1))

    def conj_s(self, mu):
        x = self._x(mu)
        return x * mu - self.f_s(x)

    def conj_grad_s(self, mu):
        return self._x(mu)

    def conj_hess_s(self, mu):
        p = self.p  # d/dμ of x(μ) = (1 + (p − 1)μ)^{1/(p−1)}: (1 + (p − 1)μ)^{1/(p−1) − 1}
        return np.maximum(1 + (p - 1) * mu, 0.0) ** (1 / (p - 1) - 1)

    def cvx(self, X):
        r = X.shape[0]
        Z = cp.Variable((r, r), symmetric=True)
        W = cp.Variable((r, r), symmetric=True)
        lmis = [cp.bmat([[Z, X], [X, W]]) >> 0, cp.bmat([[X, W], [W, np.eye(r)]]) >> 0]
        return (cp.trace(Z) - 1.5 * cp.trace(X) + 0.5 * r) / 0.75, lmis


class AlphaPowerNoClip(AlphaPower):
    """A planted mistake: the maximizer without its clip at x = 0, so for μ < −2 the
    "conjugate" is evaluated at a point x > 0 that does not maximize xμ − f_s(x)."""

    def _x(self, mu):
        return (1 + (self.p - 1) * mu) ** (1 / (self.p - 1))


def alpha_instance(seed=0, n=20):
    """A Gaussian kernel on n points of three classes, hinge-slack pair constraints (C = 1)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 3)) + 1.5 * np.eye(3)[y]
    K0 = gaussian_kernel(X, sigma=1.5)
    pairs = PairConstraints.from_labels(y, baseline_kernel(K0), n_similar=15, n_dissimilar=15, random_state=seed)
    return SpectralKernel(K0, Hinge(pairs, C=1.0), AlphaPower())


def planted_mistake():
    """check_regularizer's one-line verdict on AlphaPowerNoClip (None if it were to pass)."""
    try:
        check_regularizer(AlphaPowerNoClip())
    except AssertionError as exc:
        return str(exc)
    return None


if __name__ == "__main__":
    # %%
    # 1. Check the declaration: the largest relative error of each check.
    report = check_regularizer(AlphaPower())
    print("check_regularizer(AlphaPower()):")
    for check, err in report.items():
        print(f"  {check:<14} {err:.1e}")

    # %%
    # 2. A planted mistake — the conjugate's maximizer without its clip at 0 — is caught:
    # check_regularizer raises an AssertionError naming the check, the point and the values.
    print("planted mistake (no clip at x = 0):", planted_mistake())

    # %%
    # 3. Solve a kernel-learning problem both ways: the exact model (with the two auxiliary
    # matrices of the epigraph) and the fast solver. No solver was written for AlphaPower:
    # the generic certified dual solver takes any regularizer with a conjugate.
    problem = alpha_instance(0, n=20)
    t0 = time.perf_counter()
    exact = problem.solve_reference()
    t_exact = time.perf_counter() - t0
    fast = problem.solve(tol=1e-10)
    rel = abs(fast.objective - exact.objective) / max(1.0, abs(exact.objective))
    print(f"n = 20, {problem.n_constraints} hinge pairs, fast solver: {problem.fast_solver().name}")
    print(f"  exact {exact.objective:.10f}  gap {exact.gap:8.1e}  {exact.solver}, {t_exact:.2f} s")
    print(
        f"  fast  {fast.objective:.10f}  gap {fast.gap:8.1e}  {fast.solver}, {fast.n_iter} iterations, "
        f"{fast.time:.3f} s, converged {fast.converged}"
    )
    print(f"  |fast − exact| / max(1, |exact|) = {rel:.1e}")
    print(
        "  ‖K_fast − K_exact‖_F / ‖K_exact‖_F =",
        f"{np.linalg.norm(fast.matrix - exact.matrix) / np.linalg.norm(exact.matrix):.1e}",
    )

    # %%
    # 4. How large may the exact model be? cvxkml measured its own families
    # (``reference/exact-limits.md``); a user part's cost is unknown, so nothing is promised.
    print("exact_limit():", problem.exact_limit(), "| user parts:", problem.user_parts())
