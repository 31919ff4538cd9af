"""Side information, kernels and divergences."""

import numpy as np
import pytest
from scipy.linalg import logm

from cvxkml import kernels as K
from cvxkml.errors import InvalidInputError
from cvxkml.formulas.divergences import (
    frobenius_divergence,
    logdet_divergence,
    logdet_divergence_diag,
    von_neumann_divergence,
)
from cvxkml.sideinfo import (
    PairConstraints,
    baseline_kernel,
    baseline_metric,
    pairs_from_labels,
    percentile_bounds,
    random_pairs_from_labels,
)


def test_pairs_from_labels_jain_scheme():
    y = np.repeat([0, 1, 2], 30)
    i, j, s = pairs_from_labels(y, 20, 15, random_state=0)
    assert np.all((y[i] == y[j]) == (s > 0))
    for c in range(3):
        assert np.sum((y[i] == c) & (s > 0)) <= 20
    keys = {(min(a, b), max(a, b)) for a, b in zip(i, j)}
    assert len(keys) == i.size  # duplicates removed
    i2, j2, s2 = pairs_from_labels(y, 20, 15, random_state=0)
    assert np.array_equal(i, i2) and np.array_equal(j, j2)  # seeded


def test_random_pairs_itml_scheme():
    y = np.repeat([0, 1, 2, 3], 50)
    i, j, s = random_pairs_from_labels(y, random_state=1)
    assert i.size <= 40 * 4 * 3 and i.size > 0.9 * 40 * 4 * 3
    assert np.all((y[i] == y[j]) == (s > 0)) and np.all(i != j)
    with pytest.raises(InvalidInputError, match="single class"):
        random_pairs_from_labels(np.zeros(5), random_state=0)


def test_percentile_bounds_and_from_labels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = rng.integers(0, 2, 40)
    base = baseline_metric(X)
    u, l = percentile_bounds(base, 40, (5, 95))
    i, j = np.triu_indices(40, 1)
    d = np.sum((X[i] - X[j]) ** 2, axis=1)
    assert np.isclose(u, np.percentile(d, 5)) and np.isclose(l, np.percentile(d, 95))
    pc = PairConstraints.from_labels(y, base, percentiles=(1, 99), random_state=0)
    assert set(np.unique(pc.bound)) == set(np.percentile(d, [1, 99]))
    assert pc.bound[pc.y > 0].max() < pc.bound[pc.y < 0].min()
    # kernel baseline = feature-space distances
    Kl = X @ X.T
    np.testing.assert_allclose(baseline_kernel(Kl)(i, j), d)
    with pytest.raises(InvalidInputError, match="percentiles"):
        percentile_bounds(base, 40, (95, 5))


def test_kernels():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    G1 = K.gaussian_kernel(X, Y, sigma=2.0)
    G2 = K.gaussian_kernel(X, Y, gamma=1 / 8)
    np.testing.assert_allclose(G1, G2)
    np.testing.assert_allclose(G1[1, 2], np.exp(-np.sum((X[1] - Y[2]) ** 2) / 8))
    np.testing.assert_allclose(K.polynomial_kernel(X, Y, degree=3, coef0=1.0), (X @ Y.T + 1) ** 3)
    for name, params in [("linear", {}), ("rbf", {"gamma": 0.3}), ("poly", {"degree": 2})]:
        k = K.Kernel(name, params)
        np.testing.assert_allclose(k.diag(X), np.diag(k(X)))
        np.testing.assert_allclose(k.paired(X[:4], Y), np.diag(k(X[:4], Y)))
    Kx = K.linear_kernel(X)
    H = np.eye(5) - 1 / 5
    np.testing.assert_allclose(K.center_kernel(Kx), H @ Kx @ H, atol=1e-12)
    assert np.isclose(np.mean(np.diag(K.normalize_mean_diagonal(Kx))), 1.0)
    D = K.kernel_sq_distances(Kx)
    np.testing.assert_allclose(D[1, 3], np.sum((X[1] - X[3]) ** 2))
    np.testing.assert_allclose(K.pair_sq_distances(Kx, [1], [3]), [D[1, 3]])
    with pytest.raises(InvalidInputError, match="exactly one of sigma or gamma"):
        K.gaussian_kernel(X, sigma=1.0, gamma=1.0)
    with pytest.raises(InvalidInputError, match="Unknown kernel"):
        K.Kernel("cosine")
    with pytest.raises(InvalidInputError, match="same number of features"):
        K.linear_kernel(X, np.ones((2, 4)))


def test_divergences_known_values():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(4, 4))
    X = A @ A.T + np.eye(4)
    B = rng.normal(size=(4, 4))
    Y = B @ B.T + np.eye(4)
    M = np.linalg.solve(Y, X)
    expected = np.trace(M) - np.log(np.linalg.det(M)) - 4
    assert np.isclose(logdet_divergence(X, Y), expected)
    assert abs(logdet_divergence(X, X)) < 1e-12
    vn = np.trace(X @ logm(X) - X @ logm(Y) - X + Y).real
    assert np.isclose(von_neumann_divergence(X, Y), vn)
    assert abs(von_neumann_divergence(X, X)) < 1e-10
    assert np.isclose(frobenius_divergence(X, Y), np.sum((X - Y) ** 2))
    assert np.isclose(logdet_divergence_diag([2.0, 1.0], [1.0, 1.0]), 2 - np.log(2) - 1)
    # rank-deficient: finite on equal ranges, +inf otherwise; never NaN
    v = rng.normal(size=(4, 2))
    P = v @ v.T
    assert np.isfinite(logdet_divergence(2 * P, P)) and np.isclose(logdet_divergence(2 * P, P), 2 * (2 - np.log(2) - 1))
    assert logdet_divergence(X, P) == np.inf
    assert von_neumann_divergence(X, P) == np.inf
    assert np.isclose(von_neumann_divergence(2 * P, P), 2 * np.log(2) * np.trace(P) - np.trace(P))


def test_pairs_from_labels_one_class_all_self_draws():
    """Fuzz seed 9806: one class of 4 points whose 4 within-class draws were all i = j gave
    no pairs, reported as 'all sampled pairs have zero baseline distance'.  The error now
    says what happened."""
    from cvxkml.errors import InvalidInputError
    from cvxkml.sideinfo import pairs_from_labels

    with pytest.raises(InvalidInputError, match="paired a point with itself"):
        pairs_from_labels(np.zeros(4, dtype=int), 4, 4, np.random.default_rng(42183))
