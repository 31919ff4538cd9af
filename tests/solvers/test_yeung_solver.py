"""cvxkml.solvers.yeung's landmark machinery (Yeung et al. 2007 §3) on an explicit linear
feature map: neighbours are the nearest landmarks by brute force, the kernel-LLE weights
minimize the reconstruction error ‖x − Σ_j w_j l_j‖² over 1ᵀw = 1 (compared with a direct
least-squares solve in feature space), a point on a landmark gets that landmark's unit
vector, and the landmarks contain every similarity point."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml.errors import InvalidInputError
from cvxkml.solvers.yeung import choose_landmarks, embedding_weights, nearest_landmarks


def test_nearest_landmarks_by_brute_force():
    rng = np.random.default_rng(0)
    sq = rng.integers(0, 6, (30, 9)).astype(float)  # many ties
    for K in (1, 4, 9):
        idx = nearest_landmarks(sq, K)
        for a in range(sq.shape[0]):
            ref = sorted(range(9), key=lambda j: (sq[a, j], j))[:K]
            assert list(idx[a]) == ref


@pytest.mark.parametrize("seed", range(4))
def test_embedding_weights_are_the_constrained_least_squares_reconstruction(seed):
    rng = np.random.default_rng(seed)
    d, m, n, K = 6, 10, 8, 4  # K <= d: G_i regular
    L = rng.standard_normal((m, d))
    X = rng.standard_normal((n, d))
    idx, w, singular, coincide = embedding_weights(np.einsum("ad,ad->a", X, X), X @ L.T, L @ L.T, K, 1e-12)
    assert not np.any(singular) and np.all(coincide == -1)
    sq = ((X[:, None, :] - L[None]) ** 2).sum(-1)
    for a in range(n):
        np.testing.assert_array_equal(np.sort(idx[a]), np.sort(np.argsort(sq[a])[:K]))
        N = L[idx[a]]
        # min ‖x − Nᵀw‖² s.t. 1ᵀw = 1: w = w0 + Z c with w0 = e_1, Z a basis of 1ᵀz = 0
        Z = np.vstack([-np.ones(K - 1), np.eye(K - 1)])
        e1 = np.eye(K)[0]
        c = np.linalg.lstsq(N.T @ Z, X[a] - N.T @ e1, rcond=None)[0]
        np.testing.assert_allclose(w[a], e1 + Z @ c, rtol=1e-7, atol=1e-9)


def test_a_point_on_a_landmark_gets_its_unit_vector():
    rng = np.random.default_rng(1)
    L = rng.standard_normal((7, 3))
    X = np.vstack([L[4], rng.standard_normal(3)])
    idx, w, _, coincide = embedding_weights(np.einsum("ad,ad->a", X, X), X @ L.T, L @ L.T, 3, 1e-3)
    assert coincide[0] == 4 and idx[0, 0] == 4
    np.testing.assert_array_equal(w[0], [1.0, 0.0, 0.0])
    assert coincide[1] == -1 and w[1].sum() == pytest.approx(1.0)
    with pytest.raises(InvalidInputError, match="n_neighbors"):
        embedding_weights(np.ones(2), np.ones((2, 7)), np.eye(7), 8, 1e-3)


def test_landmarks_hold_every_similarity_point():
    rng = np.random.default_rng(2)
    S = np.array([3, 17, 17, 40])
    lm = choose_landmarks(50, S, 12, rng)
    assert lm.size == 12 and np.all(np.diff(lm) > 0) and set(S) <= set(lm)
    np.testing.assert_array_equal(choose_landmarks(50, S, None, rng), np.arange(50))
    with pytest.raises(InvalidInputError, match="n_landmarks"):
        choose_landmarks(50, S, 2, rng)
