"""cvxkml.formulas.yeung against the definitions of Yeung et al. (2007), computed
independently: eq. 2 by an explicit loop over the pairs, eq. 3–4 by the KKT system of the
equality-constrained quadratic program, eq. 11–12 from the feature-space differences of an
explicit (linear) feature map and the LLE program min ‖φ(x_i) − Σ_j w_j φ(x_j)‖² s.t. 1ᵀw = 1."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml.errors import InvalidInputError, NotPSDError
from cvxkml.formulas.yeung import (
    beta_closed_form,
    criterion,
    equality_multiplier,
    lle_weights,
    local_gram,
    positive_spectrum,
    regularize,
    similarity_diag,
)

SEEDS = range(6)


@pytest.mark.parametrize("seed", SEEDS)
def test_similarity_diag_is_the_mean_squared_component_difference(seed):
    rng = np.random.default_rng(seed)
    n, q, s = 12, int(rng.integers(1, 6)), int(rng.integers(1, 20))
    U = rng.standard_normal((n, q))
    i, j = rng.integers(0, n, s), rng.integers(0, n, s)
    expected = np.zeros(q)
    for a, b in zip(i, j):
        expected += (U[a] - U[b]) ** 2
    np.testing.assert_allclose(similarity_diag(U, i, j), expected / s, rtol=1e-12)
    with pytest.raises(InvalidInputError, match="empty"):
        similarity_diag(U, [], [])


@pytest.mark.parametrize("seed", SEEDS)
def test_beta_solves_the_kkt_system_of_eq3(seed):
    """min βᵀDβ s.t. 1ᵀβ = c: [2D −1; 1ᵀ 0][β; ρ] = [0; c] (stationarity 2Dβ = ρ1);
    the closed form, its multiplier ρ = 2J/c, and optimality against feasible perturbations."""
    rng = np.random.default_rng(seed)
    q, c = int(rng.integers(1, 8)), float(rng.uniform(0.5, 5.0))
    d = rng.uniform(0.05, 3.0, q)
    KKT = np.zeros((q + 1, q + 1))
    KKT[:q, :q] = 2 * np.diag(d)
    KKT[:q, q] = -1.0
    KKT[q, :q] = 1.0
    sol = np.linalg.solve(KKT, np.r_[np.zeros(q), c])
    beta = beta_closed_form(d, c)
    np.testing.assert_allclose(beta, sol[:q], rtol=1e-10)
    assert equality_multiplier(d, c) == pytest.approx(sol[q], rel=1e-10)
    assert equality_multiplier(d, c) == pytest.approx(2 * criterion(beta, d) / c, rel=1e-10)
    assert criterion(beta, d) == pytest.approx(float(beta @ np.diag(d) @ beta), rel=1e-12)
    for _ in range(20):
        e = rng.standard_normal(q)
        e -= e.mean()  # keeps 1ᵀβ = c
        assert criterion(beta + 0.1 * e, d) >= criterion(beta, d) - 1e-12
    with pytest.raises(InvalidInputError, match="positive diagonal"):
        beta_closed_form(np.r_[d, 0.0], c)


@pytest.mark.parametrize("seed", SEEDS)
def test_local_gram_is_the_gram_matrix_of_the_differences(seed):
    """G_i[j, k] = ⟨φ(x_i) − φ(x_j), φ(x_i) − φ(x_k)⟩ with φ the identity (linear kernel)."""
    rng = np.random.default_rng(seed)
    n, d, K = 5, 4, int(rng.integers(1, 5))
    X = rng.standard_normal((n, d))
    N = np.array([rng.choice(np.delete(np.arange(n), a), K, replace=False) for a in range(n)])
    kxx = np.einsum("ad,ad->a", X, X)
    kxN = np.einsum("ad,akd->ak", X, X[N])
    KNN = np.einsum("ajd,akd->ajk", X[N], X[N])
    G = local_gram(kxx, kxN, KNN)
    for a in range(n):
        Dif = X[a] - X[N[a]]
        np.testing.assert_allclose(G[a], Dif @ Dif.T, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_lle_weights_minimize_the_reconstruction_error(seed):
    """Regular G_i: w_i = argmin ‖Σ_j w_j (φ(x_i) − φ(x_j))‖² = wᵀG_i w s.t. 1ᵀw = 1, by its
    KKT system; rows sum to one; no row regularized."""
    rng = np.random.default_rng(seed)
    n, K, d = 4, 3, 6
    X = rng.standard_normal((n, d))
    N = rng.standard_normal((n, K, d))
    Dif = X[:, None, :] - N
    G = np.einsum("ajd,akd->ajk", Dif, Dif)
    w, singular = lle_weights(G, 1e-10)
    assert not np.any(singular)
    np.testing.assert_allclose(w.sum(1), 1.0, rtol=1e-12)
    for a in range(n):
        KKT = np.block([[2 * G[a], -np.ones((K, 1))], [np.ones((1, K)), np.zeros((1, 1))]])
        np.testing.assert_allclose(w[a], np.linalg.solve(KKT, np.r_[np.zeros(K), 1.0])[:K], rtol=1e-8, atol=1e-10)


def test_regularize_applies_the_epsilon_rule_where_singular_only():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((3, 5))
    singular_G = A.T @ A  # rank 3 of 5
    regular_G = singular_G + np.eye(5)
    out, sing = regularize(np.stack([singular_G, regular_G]), 1e-3)
    np.testing.assert_array_equal(sing, [True, False])
    s = np.trace(singular_G) / 5
    np.testing.assert_allclose(out[0], singular_G + 1e-3 * s * np.eye(5), rtol=1e-14)
    np.testing.assert_array_equal(out[1], regular_G)
    d, flag = regularize(np.array([2.0, 0.0, 1.0]), 0.01)
    assert flag and np.allclose(d, np.array([2.0, 0.0, 1.0]) + 0.01 * 1.0)  # s = mean diagonal = 1


@pytest.mark.parametrize("seed", SEEDS)
def test_positive_spectrum_reconstructs_a_psd_matrix(seed):
    rng = np.random.default_rng(seed)
    n, r = 8, int(rng.integers(1, 8))
    B = rng.standard_normal((n, r))
    K = B @ B.T
    lam, V = positive_spectrum(K)
    assert lam.size == r and np.all(np.diff(lam) <= 0) and np.all(lam > 0)
    np.testing.assert_allclose((V * lam) @ V.T, K, atol=1e-9 * np.abs(K).max())
    np.testing.assert_allclose(lam, np.sort(np.linalg.eigvalsh(K))[::-1][:r], rtol=1e-9)
    assert np.all(V[np.argmax(np.abs(V), axis=0), np.arange(r)] > 0)  # deterministic signs
    with pytest.raises(NotPSDError):
        positive_spectrum(K - 2 * lam[0] * np.outer(V[:, 0], V[:, 0]))
