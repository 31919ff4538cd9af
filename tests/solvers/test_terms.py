"""cvxkml.solvers._terms.RankOneTerms: A(λ) = Σ_c λ_c Â_c with Â_c = Σ_{a in c} w_a u_a u_aᵀ,
‖Â_c‖_F and per-constraint sums, against dense matrices built term by term."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml.solvers._terms import RankOneTerms


@pytest.mark.parametrize("single", [True, False])
def test_rank_one_terms_against_dense_matrices(single):
    rng = np.random.default_rng(int(single))
    r, m = 5, 7
    sizes = np.ones(m, dtype=int) if single else rng.integers(1, 4, m)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    U = rng.standard_normal((ptr[-1], r))
    w = rng.choice([-1.0, 0.5, 2.0], ptr[-1])
    T = RankOneTerms(U, w, ptr, rng.standard_normal(m))
    Ahat = [sum(w[a] * np.outer(U[a], U[a]) for a in range(ptr[c], ptr[c + 1])) for c in range(m)]
    np.testing.assert_allclose(T.norms, [np.linalg.norm(A, "fro") for A in Ahat], rtol=1e-12)
    for lam in (rng.uniform(0, 1, m), np.where(rng.random(m) < 0.7, 0.0, 1.0)):  # dense, sparse λ
        np.testing.assert_allclose(T.A(lam), sum(l * A for l, A in zip(lam, Ahat)), atol=1e-12)
    q = rng.standard_normal(ptr[-1])
    np.testing.assert_allclose(T.per_constraint(q), [q[ptr[c] : ptr[c + 1]].sum() for c in range(m)], rtol=1e-12)
    assert T.single == single


def test_farkas_test_recognises_a_certificate_of_infeasibility():
    """tr(X̂ vvᵀ) <= −1 has no X̂ ⪰ 0: d = e_c gives A(d) = vvᵀ ⪰ 0 and dᵀt < 0 (min eigenvalue
    0, relative dᵀt −1); a direction mixing opposite signs is no certificate (μ_min < 0)."""
    rng = np.random.default_rng(5)
    r = 4
    U = rng.standard_normal((2, r))
    T = RankOneTerms(U, np.array([1.0, -1.0]), np.arange(3), np.array([-1.0, 2.0]))
    eig, lin = T.farkas_test(np.array([3.0, 0.0]))
    assert eig == pytest.approx(0.0, abs=1e-12) and lin == pytest.approx(-1.0)
    eig, lin = T.farkas_test(np.array([1.0, 1.0]))
    assert eig < -1e-3
    assert T.farkas_test(np.zeros(2)) == (0.0, 0.0)
