"""cvxkml.solvers.trace (Trace-SSIKDR, Jain et al. 2012 eq. 26: min τ tr K̂ + ‖K̂‖²_F s.t.
tr(Â_c K̂) <= t_c, K̂ ⪰ 0): both dual solvers return K̂ = ½(M(z) − τI)₊ with M(z) = −Σ z_c Â_c
(the Lagrangian's minimizer, computed densely here), certify the same optimum, and the
eigen-solver keeps exactly the eigenpairs above τ on its Lanczos path."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml.solvers.trace import OK, top_eigs_above, trace_pair_newton, trace_uzawa


def _instance(seed, r=6, m=14):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((r, 2))
    Ks = B @ B.T  # a feasible low-rank K̂*
    V = rng.standard_normal((m, r))
    delta = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    p = np.einsum("cr,rs,cs->c", V, Ks, V)
    t = np.where(delta > 0, 1.2 * p, -0.8 * p)
    return V, delta, t


def _primal_of(V, delta, z, tau):
    M = -(V.T * (delta * z)) @ V
    mu, U = np.linalg.eigh(M)
    return 0.5 * (U * np.maximum(mu - tau, 0.0)) @ U.T


def _objective(K, tau):
    return tau * np.trace(K) + np.sum(K * K)


@pytest.mark.parametrize("seed", range(3))
def test_both_dual_solvers_return_the_lagrangian_minimizer_and_the_same_optimum(seed):
    V, delta, t = _instance(seed)
    tau = 0.5
    newton = trace_pair_newton(V, delta, t, tau, tol=1e-9)
    uzawa = trace_uzawa(V, delta, t, tau, tol=1e-10, tol_feas=1e-9, max_iter=200_000)
    assert newton.code == OK
    for res in (newton, uzawa):
        assert np.all(res.lam >= 0)
        np.testing.assert_allclose(res.matrix, _primal_of(V, delta, res.lam, tau), atol=1e-8)
        assert np.linalg.eigvalsh(res.matrix).min() >= -1e-10
        vals = delta * np.einsum("cr,rs,cs->c", V, res.matrix, V)
        assert np.max((vals - t) / np.maximum(np.abs(t), 1.0)) <= 1e-6
    f_n, f_u = _objective(newton.matrix, tau), _objective(uzawa.matrix, tau)
    assert f_n == pytest.approx(f_u, rel=1e-5, abs=1e-8)


def test_top_eigs_above_lanczos_path_matches_dense():
    rng = np.random.default_rng(3)
    r = 60
    Q, _ = np.linalg.qr(rng.standard_normal((r, r)))
    mu = np.concatenate([np.linspace(5.0, 2.0, 7), rng.uniform(-3.0, 0.5, r - 7)])
    M = (Q * mu) @ Q.T
    tau = 1.0
    got_mu, got_U = top_eigs_above(lambda v: M @ v, lambda: M, r, tau, dense_max=10)  # Lanczos
    np.testing.assert_allclose(np.sort(got_mu), np.sort(mu[mu > tau]), rtol=1e-9)
    np.testing.assert_allclose(M @ got_U, got_U * got_mu, atol=1e-8)
    z_mu, z_U = top_eigs_above(lambda v: 0.0 * v, None, r, 0.0, dense_max=10)  # zero operator
    assert z_mu.size == 0 and z_U.shape == (r, 0)
