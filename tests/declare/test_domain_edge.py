"""Round-off at the domain's edge is the library's job: an eigenvalue within round-off of zero
is zero for every regularizer (a user's f_s that is +inf below 0, as it should be, never
sees −1e-15), a genuinely negative one stays outside the domain, and the error of a fast
solve that ends outside the domain names the eigenvalue and the regularizer."""

import numpy as np
import pytest

from cvxkml.declare import LogDet, Regularizer, SpectralKernel
from cvxkml.declare.regularizers import EDGE_RTOL, domain_eigenvalues
from cvxkml.sideinfo import Hinge
from cvxkml.testing import factor_instance, kernel_instance


class PowerOnly(Regularizer):
    """f_s(x) = x^{3/2} on x >= 0, +inf below: the domain is exactly the PSD cone."""

    name = "power-3/2"
    alpha = 0.0

    def f_s(self, x):
        with np.errstate(invalid="ignore"):
            return np.where(x >= 0, np.abs(x) ** 1.5, np.inf)


def _rank_deficient(seed, r=6, scale=1.0):
    """Q diag(0, 0, λ…) Qᵀ: PSD of rank r − 2 whose computed eigenvalues straddle 0 by round-off."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(r, r)))
    lam = np.concatenate([[0.0, 0.0], rng.uniform(0.5, 2.0, r - 2)]) * scale
    return (Q * lam) @ Q.T, lam


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("scale", [1e-8, 1.0, 1e8])
def test_round_off_below_zero_is_zero_for_a_user_regularizer(seed, scale):
    A, lam = _rank_deficient(seed, scale=scale)
    v = PowerOnly().value(A)
    assert np.isfinite(v)
    assert v == pytest.approx(np.sum(lam**1.5), rel=1e-9)


def test_a_genuinely_negative_eigenvalue_stays_outside_the_domain():
    A, _ = _rank_deficient(0)
    w, V = np.linalg.eigh(A)
    w[0] = -1e-6 * np.max(np.abs(w))  # a million times beyond round-off
    assert PowerOnly().value((V * w) @ V.T) == np.inf


def test_domain_eigenvalues_rule():
    lam = np.array([-3e-13, -1e-9, 0.0, 1.0])
    out = domain_eigenvalues(lam)
    assert out[0] == 0.0  # within max(EDGE_RTOL, 8·r·eps)·max|λ| = 1e-12
    assert out[1] == -1e-9  # beyond: left for f_s to judge
    assert np.array_equal(out[2:], lam[2:])
    tau = max(EDGE_RTOL, 8 * 4 * np.finfo(float).eps)
    assert domain_eigenvalues(np.array([-1.01 * tau, 0.0, 0.5, 1.0]))[0] < 0
    assert domain_eigenvalues(np.zeros(0)).size == 0


def test_the_domain_error_names_the_eigenvalue_and_the_regularizer():
    K0, pc = kernel_instance(0, 8, 6, hard=False)
    problem = SpectralKernel(K0, Hinge(pc, 1.0), LogDet())
    w, V = np.linalg.eigh(K0)
    w[np.argmax(w)] = -0.25 * w.max()  # an indefinite "answer" on the range of K0
    msg = problem._domain_diagnosis((V * w) @ V.T)
    assert "LogDet.f_s is inf at the eigenvalue" in msg and "of the whitened matrix" in msg
    G0, pf = factor_instance(0, 9, 3, 6, hard=False)
    low_rank = SpectralKernel(G0 @ G0.T, Hinge(pf, 1.0), LogDet())
    assert "leaves the range of M0" in low_rank._domain_diagnosis(np.eye(9))  # rank 9 on a rank-3 K0
