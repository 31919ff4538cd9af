"""cvxkml.solvers.bregman: what the dense cyclic projections promise (Jain et al. 2012,
Algorithm 1; Davis et al. 2007) — the dual invariants M⁻¹ = M0⁻¹ + Σ δ_c λ_c z_c z_cᵀ and
1/ξ_c = 1/b_c − δ_c λ_c/γ, complementary slackness at convergence, and the kernel solver on
K0 = X W0 Xᵀ learning K = X W Xᵀ with the metric solver's multipliers."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml.solvers.bregman import OK, bregman_kernel, bregman_metric


def _instance(seed, n=20, d=4, m=30):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    i = rng.integers(0, n, m)
    j = (i + 1 + rng.integers(0, n - 1, m)) % n
    A = rng.standard_normal((d, d))
    Wstar = A @ A.T + 0.1 * np.eye(d)  # satisfies every constraint: feasible
    V = X[i] - X[j]
    D = np.einsum("cd,de,ce->c", V, Wstar, V)
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    return X, i, j, y, np.where(y > 0, 1.2 * D, 0.8 * D)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma", [None, 2.0])
def test_metric_dual_invariants_and_complementary_slackness(seed, gamma):
    X, i, j, y, b = _instance(seed)
    d = X.shape[1]
    W0 = np.eye(d) + 0.2 * np.ones((d, d))
    res = bregman_metric(W0, X, i, j, y, b, gamma, 1e-12, 50_000)
    assert res.code == OK
    V = X[i] - X[j]
    Winv = np.linalg.inv(W0) + (V.T * (y * res.lam)) @ V
    np.testing.assert_allclose(np.linalg.inv(res.matrix), Winv, rtol=1e-6, atol=1e-8)
    assert np.all(res.lam >= 0)
    if gamma is not None:
        np.testing.assert_allclose(1.0 / res.xi, 1.0 / b - y * res.lam / gamma, rtol=1e-8)
    p = np.einsum("cd,de,ce->c", V, res.matrix, V)
    viol = y * (p - res.xi) / res.xi
    assert viol.max() <= 1e-6  # feasible (with the slacks)
    assert np.max(res.lam * np.abs(viol)) <= 1e-5 * max(1.0, res.lam.max())  # complementary


@pytest.mark.parametrize("seed", range(3))
def test_kernel_solver_on_a_linear_kernel_is_the_metric_solver(seed):
    """K0 = X W0 Xᵀ (rank d < n): the kernel solver keeps range(K0) and learns K = X W Xᵀ with
    the same multipliers (Jain et al. 2012, Theorem 1 / eq. 6)."""
    X, i, j, y, b = _instance(seed)
    W0 = np.eye(X.shape[1])
    met = bregman_metric(W0, X, i, j, y, b, 1.0, 1e-12, 50_000)
    ker = bregman_kernel(X @ W0 @ X.T, i, j, y, b, 1.0, 1e-12, 50_000)
    assert met.code == OK and ker.code == OK
    np.testing.assert_allclose(ker.lam, met.lam, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ker.matrix, X @ met.matrix @ X.T, rtol=1e-6, atol=1e-8)
    assert np.linalg.matrix_rank(ker.matrix, tol=1e-8 * np.abs(ker.matrix).max()) == X.shape[1]


def test_a_pair_at_distance_zero_is_reported_not_divided_by():
    X, i, j, y, b = _instance(0)
    X[j[3]] = X[i[3]]  # constraint 3: p = 0
    res = bregman_metric(np.eye(X.shape[1]), X, i, j, y, b, 1.0, 1e-9, 100)
    assert res.code != OK and res.bad_index == 3
    assert np.all(np.isfinite(res.matrix))
