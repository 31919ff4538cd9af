"""
Declare a variant, solve it both ways, validate it
==================================================

Four variants of the spectral framework (Jain et al. 2012, eq. 12–13), each solved by the
exact CVXPY model (``solve_reference``) and by the fast certified dual solver
(``solve``), and compared through their Lagrange certificates:

(a) a new regularizer, α·LogDet + (1 − α)·Frobenius (a ``Regularizer`` subclass);
(b) LogDet kernel learning with hinge-slack triplets (``Hinge(RelativeConstraints, C)``);
(c) von Neumann kernel learning with a trace budget (``LinearConstraints``: tr K ≤ B);
(d) ITML with an ℓ1 penalty on the off-diagonal of W (``problem.extend(term=...)``, exact
    model only, certified by the conic solver's dual objective);

and (v) a user's own solver validated with ``cvxkml.testing.cross_check``.

Run it yourself::

    python examples/declare_a_variant.py
"""

import cvxpy as cp
import numpy as np

from cvxkml.declare import ITML, LogDetKernel, Regularizer, SpectralKernel, SpectralMetric, VonNeumann
from cvxkml.kernels import gaussian_kernel
from cvxkml.sideinfo import (
    Hinge,
    LinearConstraints,
    PairConstraints,
    RelativeConstraints,
    baseline_kernel,
    baseline_metric,
)
from cvxkml.testing import check_regularizer, cross_check, triplets, variant_instance


# ------------------------------------------------------------------ (a) a new regularizer
class LogDetFrobenius(Regularizer):
    """f_s(x) = a(x − log x − 1) + (1 − a)x²/2: LogDet's barrier with a Frobenius pull to 0."""

    implies_psd = True  # log_det in the CVXPY form keeps X ⪰ 0

    def __init__(self, a=0.5):
        self.a, self.name = a, f"LogDetFrobenius({a:g})"
        self.alpha = float(self._x(np.array([0.0]))[0])  # argmin f_s = x(μ = 0)

    def f_s(self, x):
        return np.where(x > 0, self.a * (x - np.log(np.where(x > 0, x, 1)) - 1) + (1 - self.a) * x * x / 2, np.inf)

    def cvx(self, X):
        return self.a * (cp.trace(X) - cp.log_det(X) - X.shape[0]) + (1 - self.a) / 2 * cp.sum_squares(X)

    def _x(self, mu):  # the root x > 0 of f_s'(x) = μ
        a, q = self.a, self.a - mu
        root = np.sqrt(q * q + 4 * a * (1 - a))
        return np.where(q > 0, 2 * a / (q + root), (root - q) / (2 * (1 - a)))

    def conj_s(self, mu):  # f*_s(μ) = x μ − f_s(x)
        return self._x(mu) * mu - self.f_s(self._x(mu))

    def conj_grad_s(self, mu):
        return self._x(mu)

    def conj_hess_s(self, mu):  # dx/dμ = 1 / f_s''(x)
        return 1.0 / (self.a / self._x(mu) ** 2 + 1 - self.a)


def variant_a(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 4))
    y = rng.integers(0, 3, 40)
    X[:, 0] += y
    pairs = PairConstraints.from_labels(y, baseline_metric(X), n_similar=20, n_dissimilar=20, random_state=seed)
    reg = LogDetFrobenius(0.5)
    check_regularizer(reg)  # f_s vs CVXPY form, Fenchel–Young, derivatives
    problem = SpectralMetric(X, Hinge(pairs, C=1.0), reg)
    return problem, problem.solve_reference(), problem.solve(tol=1e-10)


# ------------------------------------------------------------------ (b) hinge-slack triplets
def variant_b(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    y = rng.integers(0, 2, 40)
    X[:, 0] += 1.5 * y
    K0 = gaussian_kernel(X, sigma=2.0)
    i, j, k = triplets(rng, y, 30)  # j in i's class, k not
    margin = np.full(i.size, 0.5)
    problem = LogDetKernel(K0, Hinge(RelativeConstraints(i, j, k, margin), C=0.5))
    return problem, problem.solve_reference(), problem.solve(tol=1e-10)


# ------------------------------------------------------------------ (c) a trace budget
def variant_c(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(12, 3))
    y = rng.integers(0, 2, 12)
    K0 = gaussian_kernel(X, sigma=1.5)
    pairs = PairConstraints.from_labels(
        y, baseline_kernel(K0), n_similar=6, n_dissimilar=6, random_state=seed, percentiles=(20, 80)
    )
    n = K0.shape[0]
    budget = LinearConstraints(b=[0.9 * n], C=np.eye(n)[None])  # tr K <= 0.9·tr K0
    problem = SpectralKernel(K0, [Hinge(pairs, C=2.0), budget], VonNeumann())
    return problem, problem.solve_reference(), problem.solve(tol=1e-10)


# ------------------------------------------------------------------ (d) an ℓ1 off-diagonal term
def variant_d(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 5))
    y = rng.integers(0, 2, 40)
    X[:, 0] += y
    pairs = PairConstraints.from_labels(y, baseline_metric(X), n_similar=15, n_dissimilar=15, random_state=seed)
    itml = ITML(X, pairs, gamma=1.0)
    problem = itml.extend(term=lambda W: 0.5 * cp.sum(cp.abs(W - cp.diag(cp.diag(W)))))
    return problem, problem.solve_reference()  # exact only; certified by the conic dual


# ------------------------------------------------------------------ (v) validate your solver
def validate_my_solver(n_draws=10):
    from cvxkml.declare.dual import solve_dual  # stands in for "your" solver

    return cross_check(
        lambda s: variant_instance(s, n=10, m=8, regularizer=VonNeumann(), hard_pairs=False),
        n_draws=n_draws,
        rtol=1e-6,
        solver=solve_dual,
    )


def main():
    rows = []
    for name, run in (
        ("(a) 0.5·LogDet + 0.5·Frobenius", variant_a),
        ("(b) LogDet kernel, hinge triplets", variant_b),
        ("(c) von Neumann, trace budget", variant_c),
    ):
        problem, exact, fast = run()
        rel = abs(fast.objective - exact.objective) / max(1.0, abs(exact.objective))
        print(f"{name}:\n  exact {exact}\n  fast  {fast}\n  |fast − exact| / |f| = {rel:.1e}")
        rows.append((name[:3], rel, abs(exact.gap), abs(fast.gap)))
    problem, exact = variant_d()
    print(
        f"(d) ITML + 0.5·Σ|W_ij| (i ≠ j):\n  exact {exact}\n  term {exact.info['term']:.6g}, "
        f"certificate: {exact.info['certificate']}"
    )
    tally = validate_my_solver()
    print(
        f"(v) solve_dual cross-checked on {tally['draws']} draws: {tally['checked']} agree, "
        f"{tally['discarded']} discarded, {len(tally['failures'])} failures, "
        f"max relative gap {tally['max_gap']:.1e}"
    )
    plot(rows, problem.base.solve_reference().matrix, exact.matrix)


def plot(rows, W_itml, W_l1):
    """Left: agreement and certificates of (a)-(c); right: W of ITML and of ITML + ℓ1 (d)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    x = np.arange(len(rows))
    for k, (label, off) in enumerate((("|fast − exact| / |f|", -0.27), ("|gap| exact", 0.0), ("|gap| fast", 0.27))):
        axes[0].bar(x + off, [max(r[k + 1], 1e-16) for r in rows], width=0.27, label=label)
    axes[0].set(xticks=x, xticklabels=[r[0] for r in rows], yscale="log", title="exact vs fast, and their certificates")
    axes[0].legend(fontsize=8)
    vmax = max(np.abs(W_itml).max(), np.abs(W_l1).max())
    for ax, W, title in ((axes[1], W_itml, "ITML: W"), (axes[2], W_l1, "(d) ITML + 0.5·Σ|W_ij|: W")):
        im = ax.imshow(W, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        ax.set_title(title)
    fig.colorbar(im, ax=axes[1:], shrink=0.8)
    return fig


if __name__ == "__main__":
    import matplotlib.pyplot as plt

    main()
    plt.show()
