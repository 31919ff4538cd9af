"""cvxkml.solvers.sdp_logdet (Bregman projections under the LogDet barrier, Jain et al. 2012
eq. 24) against its dual: the returned X is X(λ) = γ(C + Σ λ_c Â_c)⁻¹ computed densely here,
the duality gap is Σ λ_c (t_c − tr(XÂ_c)) with g(λ) written out, KKT holds at an OK answer,
and one multi-term projection lands on its constraint."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml.solvers.sdp_logdet import OK, barrier_bregman, project_one


def _instance(seed, r=4, m=10):
    """Pairs (one term each) and two rank-two terms, all satisfied by a random X* ≻ 0."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((r, r))
    Xs = A @ A.T + 0.2 * np.eye(r)
    U1 = rng.standard_normal((m, r))
    w1 = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    v1 = np.einsum("cr,rs,cs->c", U1, Xs, U1)
    t1 = w1 * v1 * np.where(w1 > 0, 1.3, 0.7)
    U2 = rng.standard_normal((4, r))
    w2 = np.array([1.0, -1.0, 1.0, -1.0])
    v2 = np.einsum("cr,rs,cs->c", U2, Xs, U2) * w2
    t2 = np.array([v2[0] + v2[1], v2[2] + v2[3]]) + 0.1
    U = np.vstack([U1, U2])
    w = np.concatenate([w1, w2])
    ptr = np.concatenate([np.arange(m + 1), [m + 2, m + 4]]).astype(np.int64)
    t = np.concatenate([t1, t2])
    C = np.eye(r) + 0.1 * np.ones((r, r))
    return C, U, w, ptr, t


def _A(U, w, ptr, lam):
    owner = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    return (U.T * (w * lam[owner])) @ U


def _values(X, U, w, ptr):
    per_term = w * np.einsum("ar,rs,as->a", U, X, U)
    return np.add.reduceat(per_term, ptr[:-1])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma", [0.1, 1.0])
def test_answer_is_x_of_lambda_and_the_gap_is_complementary_slackness(seed, gamma):
    C, U, w, ptr, t = _instance(seed)
    res = barrier_bregman(C, gamma, U, w, ptr, t, tol=1e-10, max_iter=50_000)
    assert res.code == OK
    lam, X = res.lam, res.matrix
    Z = C + _A(U, w, ptr, lam)
    np.testing.assert_allclose(X, gamma * np.linalg.inv(Z), rtol=1e-8, atol=1e-10)
    r = C.shape[0]
    f = np.trace(X @ C) - gamma * np.linalg.slogdet(X)[1]
    g = gamma * np.linalg.slogdet(Z)[1] + gamma * r * (1 - np.log(gamma)) - lam @ t
    vals = _values(X, U, w, ptr)
    assert f - g == pytest.approx(float(lam @ (t - vals)), abs=1e-9 * max(1.0, abs(f)))
    assert np.all(lam >= 0)
    scale = np.maximum(np.abs(t), 1.0)
    assert np.max((vals - t) / scale) <= 1e-8  # primal feasible
    assert abs(f - g) <= 1e-7 * max(1.0, abs(f))  # gap closed


def test_one_multi_term_projection_lands_on_its_constraint():
    C, U, w, ptr, t = _instance(0)
    gamma = 0.5
    X = gamma * np.linalg.inv(C)
    a, b = ptr[-2], ptr[-1]
    Uc, wc = U[a:b], w[a:b]
    tc = float(_values(X, Uc, wc, np.array([0, b - a]))[0]) - 0.3  # violated by 0.3
    Xn, step, code = project_one(X, Uc, wc, tc, 0.0, gamma)
    assert code == OK and step > 0
    assert float(_values(Xn, Uc, wc, np.array([0, b - a]))[0]) == pytest.approx(tc, rel=1e-9, abs=1e-10)
    # Woodbury: X' = γ (C + step·Â_c)⁻¹
    np.testing.assert_allclose(Xn, gamma * np.linalg.inv(C + step * (Uc.T * wc) @ Uc), rtol=1e-9, atol=1e-11)
