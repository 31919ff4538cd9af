"""cvxkml.solvers.pola (min ½‖X̂‖²_F s.t. X̂ ⪰ 0, tr(X̂Â_c) <= t_c on its dual): the answer is
the primal map X̂ = P₊(−A(λ)) of its multipliers (computed densely here), the gap identity
f − g = Σ λ_c (t_c − tr(X̂Â_c)) closes, and FISTA alone reaches the Newton-polished optimum."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml.solvers.pola import OK, pola_dual, psd_part


def _instance(seed, r=5, m=12):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((r, 2))
    Xs = B @ B.T
    U = rng.standard_normal((m, r))
    w = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    p = w * np.einsum("cr,rs,cs->c", U, Xs, U)
    t = np.where(w > 0, 1.3 * p, 0.7 * p)  # X* satisfies all: feasible
    return U, w, np.arange(m + 1, dtype=np.int64), t


def test_psd_part_is_the_projection_on_the_psd_cone():
    """P₊(M) (first of psd_part's (P₊(M), eigenvalues, eigenvectors)): idempotent, M − P₊(M) ⟂ P₊(M)."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    M = A + A.T
    mu, Q = np.linalg.eigh(M)
    P = (Q * np.maximum(mu, 0.0)) @ Q.T
    np.testing.assert_allclose(psd_part(M)[0], P, atol=1e-12)
    np.testing.assert_allclose(psd_part(P)[0], P, atol=1e-12)  # idempotent
    assert np.sum((M - psd_part(M)[0]) * psd_part(M)[0]) == pytest.approx(0.0, abs=1e-10)  # M − P ⟂ P


@pytest.mark.parametrize("seed", range(3))
def test_answer_is_the_primal_map_and_fista_meets_newton(seed):
    U, w, ptr, t = _instance(seed)
    polished = pola_dual(U, w, ptr, t, tol=1e-10)
    plain = pola_dual(U, w, ptr, t, tol=1e-7, newton=False, max_iter=200_000)
    assert polished.code == OK
    for res in (polished, plain):
        lam = res.lam
        assert np.all(lam >= 0)
        X = psd_part(-(U.T * (w * lam)) @ U)[0]
        np.testing.assert_allclose(res.matrix, X, atol=1e-9)
        vals = w * np.einsum("cr,rs,cs->c", U, X, U)
        f = 0.5 * np.sum(X * X)
        g = -0.5 * np.sum(X * X) - lam @ t
        assert f - g == pytest.approx(float(lam @ (t - vals)), abs=1e-9 * max(1.0, f))
    f_opt = 0.5 * np.sum(polished.matrix**2)
    assert 0.5 * np.sum(plain.matrix**2) == pytest.approx(f_opt, rel=1e-5)
    assert f_opt > 0  # the constraints bind
