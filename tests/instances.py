"""Random LogDet instances for the property tests (shared by several test files).

Hard-constraint draws are feasible by construction:
- metric: at most d pairs forming a forest, so the difference vectors x_i − x_j are
  (generically) independent and any positive distances are attainable;
- kernel: the pairs form a forest (a tree's edge lengths can be set independently in
  a space of full dimension), and with a rank-r K0 at most r pairs.
Bounds are percentiles of the squared baseline distances, as in the papers.
"""
from __future__ import annotations

import numpy as np

from cvxkml.kernels import gaussian_kernel
from cvxkml.sideinfo import PairConstraints, baseline_kernel, baseline_metric, percentile_bounds


def _bounded_pairs(rng, i, j, baseline, n, percentiles):
    y = rng.choice([-1.0, 1.0], size=i.size)
    u, l = percentile_bounds(baseline, n, percentiles, rng)
    return PairConstraints(i, j, y, np.where(y > 0, u, l))


def _random_pairs(rng, n, m):
    all_i, all_j = np.triu_indices(n, 1)
    pick = rng.choice(all_i.size, size=min(m, all_i.size), replace=False)
    return all_i[pick], all_j[pick]


def _forest_pairs(rng, n, m):
    order = rng.permutation(n)
    i, j = [], []
    for t in range(1, n):                        # random tree: attach order[t] to an earlier node
        i.append(order[t]); j.append(order[rng.integers(0, t)])
    keep = rng.choice(n - 1, size=min(m, n - 1), replace=False)
    return np.array(i)[keep], np.array(j)[keep]


def metric_instance(seed, n, d, m, hard, percentiles=(5.0, 95.0)):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    i, j = _forest_pairs(rng, n, min(m, d)) if hard else _random_pairs(rng, n, m)
    return X, _bounded_pairs(rng, i, j, baseline_metric(X), n, percentiles)


def kernel_instance(seed, n, m, hard, kind="gaussian", percentiles=(5.0, 95.0)):
    """kind: 'gaussian' (PD), 'linear-ridge' (PD) or 'lowrank' (rank d < n: range-space path)."""
    rng = np.random.default_rng(seed)
    if kind == "lowrank":
        d = int(rng.integers(2, max(3, n - 1)))
        X = rng.normal(size=(n, d))
        K0 = X @ X.T
        rank = d
    else:
        X = rng.normal(size=(n, 3))
        if kind == "gaussian":
            sq = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
            K0 = gaussian_kernel(X, sigma=float(np.sqrt(np.median(sq[sq > 0]))))
        else:
            K0 = X @ X.T + 0.5 * np.eye(n)
        rank = n
    if hard:
        i, j = _forest_pairs(rng, n, min(m, rank))
    else:
        i, j = _random_pairs(rng, n, m)
    return K0, _bounded_pairs(rng, i, j, baseline_kernel(K0), n, percentiles)
