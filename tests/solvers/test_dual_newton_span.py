"""The generic dual solver on the span of the constraint terms (cvxkml.solvers.dual_newton,
``_Span``): with S = c·I and fewer terms than the whitened dimension r, the dual is solved
on the k × k problem of the terms' span and the answer lifted back, x_c·I off the span."""

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import cvxkml.solvers.dual_newton as dn
from benchmarks.bench.variants import AlphaPower, Jeffreys
from cvxkml.declare import Frobenius, LogDet, SpectralKernel, VonNeumann
from cvxkml.declare.terms import constraint_terms
from cvxkml.sideinfo import Hinge, PairConstraints, RelativeConstraints, baseline_kernel
from cvxkml.testing import assert_matches_reference, reference_or_discard, solve_fast_honestly
from cvxkml.testing._instances import median_gaussian

REGULARIZERS = [LogDet(), Frobenius(), Jeffreys(), AlphaPower()]


def _few_terms(seed, n, n_pairs, n_triplets, reg, C, hinge_pairs=True):
    """A kernel problem on n points with n_pairs pairs and n_triplets triplets (terms
    n_pairs + 2·n_triplets, fewer than the rank of K0)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    K0 = median_gaussian(X)
    base = baseline_kernel(K0)
    i = rng.choice(n, n_pairs, replace=False)
    j = (i + 1 + rng.integers(0, n - 1, n_pairs)) % n
    d0 = base(i, j)
    y = np.where(rng.random(n_pairs) < 0.5, 1, -1)
    bound = np.where(y > 0, 0.5, 2.0) * d0
    pairs = PairConstraints(i, j, y, bound)
    cons = [Hinge(pairs, C) if hinge_pairs else pairs]
    if n_triplets:
        t = np.array([rng.choice(n, 3, replace=False) for _ in range(n_triplets)])
        margin = float(np.median(d0))
        cons.append(Hinge(RelativeConstraints(t[:, 0], t[:, 1], t[:, 2], np.full(n_triplets, margin)), C))
    return SpectralKernel(K0, cons, reg)


def _dual(problem, **kw):
    ct = constraint_terms(problem)
    return ct, dn.dual_newton(
        ct.U, ct.w, ct.ptr, ct.t, problem.regularizer, upper=ct.upper, lower=ct.lower, quad=ct.quad, **kw
    )


@pytest.mark.parametrize("reg", REGULARIZERS, ids=repr)
@settings(max_examples=examples(8), deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(8, 12),
    n_pairs=st.integers(1, 3),
    n_triplets=st.integers(0, 2),
    C=st.sampled_from([0.1, 1.0, 10.0]),
    hinge_pairs=st.booleans(),
)
def test_span_solve_matches_exact_model(reg, seed, n, n_pairs, n_triplets, C, hinge_pairs):
    """Few constraints against n points: the reduction applies, the answer is certified and
    agrees with the trusted exact optimum through both certificates."""
    problem = _few_terms(seed, n, n_pairs, n_triplets, reg, C, hinge_pairs)
    ct, res = _dual(problem, tol=1e-10)
    assert 0 < res.extra["span"] < ct.U.shape[1]  # the k × k problem was solved
    fast = solve_fast_honestly(problem, tol=1e-10, method="dual")
    assert fast.solver.startswith("dual-newton")
    assert fast.converged
    exact = reference_or_discard(problem, feasible=fast)
    assert_matches_reference(problem, fast, exact, rtol=1e-6)


@pytest.mark.parametrize("reg", REGULARIZERS, ids=repr)
def test_span_solve_equals_the_full_solve(reg, monkeypatch):
    """The lifted k × k answer is the r × r solver's answer (same optimum, strictly convex f)."""
    problem = _few_terms(3, 12, 3, 2, reg, 1.0)
    _, red = _dual(problem, tol=1e-11)
    monkeypatch.setattr(dn._Span, "find", staticmethod(lambda U, shift, conj, most=0.9: None))
    _, full = _dual(problem, tol=1e-11)
    assert red.extra["span"] is not None and full.extra["span"] is None
    assert red.code == full.code == 0
    np.testing.assert_allclose(red.matrix, full.matrix, atol=1e-6 * max(1.0, np.abs(full.matrix).max()))
    assert abs(red.extra["objective_fy"] - full.extra["objective_fy"]) <= 1e-8 * max(
        1.0, abs(full.extra["objective_fy"])
    )


def test_no_span_when_the_shift_is_not_a_multiple_of_identity():
    """von Neumann with a diagonal log-prior shift: the complement's eigenvalues would not be
    one constant, so no reduction."""

    class Shifted(VonNeumann):
        def conj_shift(self, r):
            return np.diag(np.linspace(0.0, 0.1, r))

    U = np.ones((1, 5))
    assert dn._Span.find(U, Shifted().conj_shift(5), Shifted()) is None
    assert dn._Span.find(U, np.zeros((5, 5)), VonNeumann()) is not None
    assert dn._Span.find(np.ones((5, 5)), np.zeros((5, 5)), VonNeumann()) is None  # terms >= 0.9 r
