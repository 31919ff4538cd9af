"""
Add a constraint family: quadruplets
====================================

A constraint family is one class outside the package: a subclass of
``cvxkml.sideinfo.ConstraintAtom`` with five methods. Here, quadruplet comparisons
(Law et al. 2013),

    d(i, j) + margin <= d(k, l),

"the pair (i, j) is closer than the pair (k, l) by at least ``margin``" — a family cvxkml
does not ship. Once declared, it works wherever a built-in family does: in every space
(kernel, metric, factored), in the exact CVXPY model, in the generic certified dual solver,
hard or soft under ``Hinge`` / ``Squared``, several objects of it in one problem.

The protocol (``help(cvxkml.sideinfo.ConstraintAtom)``): every constraint reads
g_c(M) − t_c <= 0 on the learned matrix M = T X̂ Tᵀ, and

* ``targets()`` is t (here −margin);
* ``values(space, M)`` is g(M) in NumPy (here d(i, j) − d(k, l), through the problem's
  ``pair_values``): the objective, the violations and the certificate use it;
* ``terms(F, T)`` is g in the whitened space as signed rank-one terms
  Â_c = Σ w u uᵀ (here u = F_i − F_j with w = +1 and u = F_k − F_l with w = −1): the fast
  dual solver and the Lagrange dual read only this;
* ``cvx_values(F, T, X)`` is g as a vectorized CVXPY expression of X̂ (the exact model);
* ``validate_space(n_points, dim)`` checks the indices (a typed cvxkml error, one line).

Run it yourself::

    python examples/add_a_constraint_family.py
"""

from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from cvxkml.declare import LogDet, LogDetKernel, SpectralMetric
from cvxkml.errors import InvalidInputError
from cvxkml.kernels import gaussian_kernel
from cvxkml.sideinfo import ConstraintAtom, Hinge, PairConstraints, Squared, baseline_kernel, baseline_metric


@dataclass(frozen=True)
class Quadruplets(ConstraintAtom):
    """d(i, j) + margin <= d(k, l) for each quadruplet (i, j, k, l)."""

    i: np.ndarray
    j: np.ndarray
    k: np.ndarray
    l: np.ndarray
    margin: np.ndarray

    def __post_init__(self):
        for name in ("i", "j", "k", "l", "margin"):
            object.__setattr__(self, name, np.atleast_1d(np.asarray(getattr(self, name))))

    def __len__(self):
        return self.i.size

    def targets(self):
        return -np.asarray(self.margin, dtype=float)

    def values(self, space, M):
        return space.pair_values(M, self.i, self.j) - space.pair_values(M, self.k, self.l)

    def terms(self, F, T):
        U = np.empty((2 * len(self), F.shape[1]))
        U[0::2], U[1::2] = F[self.i] - F[self.j], F[self.k] - F[self.l]
        w = np.tile([1.0, -1.0], len(self))
        return U, w, np.full(len(self), 2, dtype=np.int64)

    def cvx_values(self, F, T, X):
        def quad(V):  # the rows' quadratic forms vᵀ X v, vectorized
            return cp.sum(cp.multiply(V @ X, V), axis=1)

        return quad(F[self.i] - F[self.j]) - quad(F[self.k] - F[self.l])

    def validate_space(self, n_points, dim):
        idx = np.concatenate([self.i, self.j, self.k, self.l])
        if idx.min() < 0 or idx.max() >= n_points:
            raise InvalidInputError(f"quadruplet indices must lie in [0, {n_points})")


def random_quadruplets(rng, n, m, margin=0.5):
    """m quadruplets of distinct points."""
    q = np.array([rng.choice(n, 4, replace=False) for _ in range(m)])
    return Quadruplets(q[:, 0], q[:, 1], q[:, 2], q[:, 3], np.full(m, margin))


def report(label, problem):
    """Solve both ways; print each answer's own certificate and their agreement."""
    exact = problem.solve_reference()
    fast = problem.solve(tol=1e-9)
    rel = abs(fast.objective - exact.objective) / max(1.0, abs(exact.objective))
    print(
        f"{label:<34} exact {exact.objective:11.6f} (gap {exact.gap:8.1e}) | fast {fast.objective:11.6f} "
        f"(gap {fast.gap:8.1e}, viol {fast.max_violation:7.1e}, {fast.solver}, converged {fast.converged}) "
        f"| rel. diff {rel:.1e}"
    )
    return exact, fast


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    n = 12
    X = rng.normal(size=(n, 3))
    K0 = gaussian_kernel(X, sigma=1.5)
    pairs = PairConstraints.from_labels(
        np.arange(n) % 3, baseline_kernel(K0), n_similar=6, n_dissimilar=6, random_state=0
    )
    quads = random_quadruplets(rng, n, 8)

    # %%
    # LogDet kernel learning with quadruplets: hard, hinge (ℓ1) and squared-hinge (ℓ2) slack,
    # and two quadruplet objects in one problem.
    print("LogDet kernel learning, n = 12, pairs (slack) + 8 quadruplets")
    soft_pairs = Hinge(pairs, C=1.0)
    report("hard quadruplets", LogDetKernel(K0, [soft_pairs, quads]))
    report("Hinge(quadruplets, C=0.5)", LogDetKernel(K0, [soft_pairs, Hinge(quads, C=0.5)]))
    report("Squared(quadruplets, C=2)", LogDetKernel(K0, [soft_pairs, Squared(quads, C=2.0)]))
    more = random_quadruplets(rng, n, 4, margin=0.2)
    report("two quadruplet objects", LogDetKernel(K0, [soft_pairs, quads, Hinge(more, C=1.0)]))

    # %%
    # The same family in the metric space: the whitened coordinates F are the features, so
    # nothing in the class changes.
    metric_pairs = PairConstraints.from_labels(
        np.arange(n) % 3, baseline_metric(X), n_similar=6, n_dissimilar=6, random_state=0
    )
    exact, fast = report(
        "metric, Hinge(quadruplets)", SpectralMetric(X, [Hinge(metric_pairs), Hinge(quads, 0.5)], LogDet())
    )
    problem = SpectralMetric(X, [Hinge(metric_pairs), Hinge(quads, 0.5)], LogDet())
    print("which fast solver:", problem.fast_solver().name)
    print("residuals of the quadruplets at the fast answer:", np.round(quads.values(problem, fast.matrix) + 0.5, 3))
