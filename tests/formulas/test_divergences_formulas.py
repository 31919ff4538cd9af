"""cvxkml.formulas.divergences against their definitions, computed independently: the Bregman
divergence of the generating function (φ(X) = −log det X for LogDet, tr(X log X − X) for von
Neumann) with SciPy's matrix logarithm and NumPy's slogdet, and the range-space reduction
(Kulis et al. 2009, Theorem 7)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import logm

from cvxkml.errors import InvalidInputError
from cvxkml.formulas.divergences import (
    frobenius_divergence,
    logdet_divergence,
    logdet_divergence_diag,
    range_basis,
    von_neumann_divergence,
)

SEEDS = range(8)


def _spd(rng, n, cond=1e3):
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (Q * np.geomspace(1.0, cond, n) ** rng.uniform(0.2, 1.0)) @ Q.T


def _sym(A):
    return 0.5 * (A + A.T)


@pytest.mark.parametrize("seed", SEEDS)
def test_logdet_is_the_bregman_divergence_of_minus_logdet(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    X, Y = _spd(rng, n), _spd(rng, n)
    phi = lambda A: -np.linalg.slogdet(A)[1]  # noqa: E731
    grad_Y = -np.linalg.inv(Y)
    bregman = phi(X) - phi(Y) - np.sum(grad_Y * (X - Y))
    assert logdet_divergence(X, Y) == pytest.approx(bregman, rel=1e-8, abs=1e-9)
    assert logdet_divergence(X, Y) >= -1e-12
    assert abs(logdet_divergence(X, X)) <= 1e-10


@pytest.mark.parametrize("seed", SEEDS)
def test_logdet_is_invariant_under_congruence(seed):
    """D_ld(A X Aᵀ, A Y Aᵀ) = D_ld(X, Y) for any invertible A (the LogDet divergence is
    invariant under the general linear group: why a metric and its kernel learn alike)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    X, Y = _spd(rng, n), _spd(rng, n)
    A = rng.standard_normal((n, n)) + 3 * np.eye(n)
    assert logdet_divergence(_sym(A @ X @ A.T), _sym(A @ Y @ A.T)) == pytest.approx(
        logdet_divergence(X, Y), rel=1e-7, abs=1e-9
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_logdet_on_a_shared_range_is_the_reduced_divergence(seed):
    """Rank-deficient X, Y with the same range V: D_ld(X, Y) = D_ld(VᵀXV, VᵀYV); an X that
    leaves range(Y) is at +inf."""
    rng = np.random.default_rng(seed)
    n, r = 6, int(rng.integers(1, 5))
    V, _ = np.linalg.qr(rng.standard_normal((n, r)))
    Xh, Yh = _spd(rng, r, 50.0), _spd(rng, r, 50.0)
    X, Y = _sym(V @ Xh @ V.T), _sym(V @ Yh @ V.T)
    assert logdet_divergence(X, Y) == pytest.approx(logdet_divergence(Xh, Yh), rel=1e-7, abs=1e-9)
    w = rng.standard_normal(n)
    w -= V @ (V.T @ w)  # a direction outside range(Y)
    assert logdet_divergence(X + np.outer(w, w), Y) == np.inf


def test_logdet_diag_is_logdet_of_the_diagonal_matrices():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.1, 5.0, 7), rng.uniform(0.1, 5.0, 7)
    assert logdet_divergence_diag(x, y) == pytest.approx(logdet_divergence(np.diag(x), np.diag(y)), rel=1e-10)
    assert logdet_divergence_diag(np.r_[x[:-1], 0.0], y) == np.inf


@pytest.mark.parametrize("seed", SEEDS)
def test_von_neumann_is_the_bregman_divergence_of_the_entropy(seed):
    """D_vN(X, Y) = φ(X) − φ(Y) − ⟨∇φ(Y), X − Y⟩, φ(A) = tr(A log A − A), ∇φ(Y) = log Y
    (log by scipy.linalg.logm, not by an eigen-decomposition)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    X, Y = _spd(rng, n, 30.0), _spd(rng, n, 30.0)
    logX, logY = np.real(logm(X)), np.real(logm(Y))
    phi = lambda A, logA: np.trace(A @ logA) - np.trace(A)  # noqa: E731
    bregman = phi(X, logX) - phi(Y, logY) - np.sum(logY * (X - Y))
    assert von_neumann_divergence(X, Y) == pytest.approx(bregman, rel=1e-7, abs=1e-9)
    assert von_neumann_divergence(X, Y) >= -1e-12
    assert abs(von_neumann_divergence(Y, Y)) <= 1e-9


@pytest.mark.parametrize("seed", SEEDS)
def test_von_neumann_psd_with_nested_ranges(seed):
    """range(X) ⊆ range(Y): the divergence is finite and equals the one of the compressions
    to range(Y) (0 log 0 = 0); range(X) ⊄ range(Y): +inf."""
    rng = np.random.default_rng(seed)
    n, r = 6, int(rng.integers(2, 5))
    V, _ = np.linalg.qr(rng.standard_normal((n, r)))
    Yh = _spd(rng, r, 20.0)
    U = V @ np.linalg.qr(rng.standard_normal((r, r - 1)))[0]  # range(X) inside range(Y)
    Xs = _spd(rng, r - 1, 20.0)
    X, Y = _sym(U @ Xs @ U.T), _sym(V @ Yh @ V.T)
    Xh = _sym(V.T @ X @ V)
    w, Q = np.linalg.eigh(Xh)
    w = np.maximum(w, 0.0)
    xlogx = float(np.sum(np.where(w > 1e-12, w * np.log(np.where(w > 1e-12, w, 1.0)), 0.0)))
    expected = xlogx - np.trace(Xh @ np.real(logm(Yh))) - np.trace(Xh) + np.trace(Yh)
    assert von_neumann_divergence(X, Y) == pytest.approx(expected, rel=1e-6, abs=1e-8)
    w_out = rng.standard_normal(n)
    w_out -= V @ (V.T @ w_out)
    assert von_neumann_divergence(X + np.outer(w_out, w_out), Y) == np.inf


def test_von_neumann_refuses_an_indefinite_argument():
    with pytest.raises(InvalidInputError, match="PSD"):
        von_neumann_divergence(np.diag([1.0, -1.0]), np.eye(2))


@pytest.mark.parametrize("seed", SEEDS)
def test_frobenius_and_range_basis(seed):
    rng = np.random.default_rng(seed)
    n, r = 7, int(rng.integers(1, 7))
    G = rng.standard_normal((n, r))
    Y = G @ G.T
    V, w = range_basis(Y)
    assert V.shape == (n, r) and np.all(w > 0)
    np.testing.assert_allclose(V.T @ V, np.eye(r), atol=1e-10)
    np.testing.assert_allclose((V * w) @ V.T, Y, atol=1e-9 * np.abs(Y).max())
    X = rng.standard_normal((n, n))
    assert frobenius_divergence(X, Y) == pytest.approx(np.linalg.norm(X - Y, "fro") ** 2, rel=1e-12)
