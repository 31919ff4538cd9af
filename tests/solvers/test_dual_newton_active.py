"""The active-set outer loop of the generic dual solver (cvxkml.solvers._dual_newton_active,
on by default in cvxkml.solvers.dual_newton): multipliers held on their bounds, the rest
solved for, released a few at a time; the full certificate stays the stopping rule.  Checked
against the exact model (CVXPY) and against the projected Newton iteration on the whole box."""

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import cvxkml.solvers.dual_newton as dn
from benchmarks.bench.variants import AlphaPower, Jeffreys
from cvxkml.declare import Frobenius, LogDet, SpectralKernel
from cvxkml.declare.terms import constraint_terms
from cvxkml.kernels import gaussian_kernel
from cvxkml.sideinfo import Hinge, PairConstraints, baseline_kernel
from cvxkml.testing import assert_matches_reference, reference_or_discard, solve_fast_honestly


def hinge_problem(n, seed, C, reg):
    """Gaussian K0 (σ = the median distance) on n standard-normal points in 4-d, 3 random
    labels, 2n hinge pairs of cost C (ITML scheme): most multipliers end on a bound."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = rng.integers(0, 3, n)
    sq = np.sum((X[:, None] - X[None]) ** 2, -1)
    K0 = gaussian_kernel(X, sigma=float(np.sqrt(np.median(sq[sq > 0]))))
    pairs = PairConstraints.from_labels(
        y, baseline_kernel(K0), scheme="itml", n_constraints=2 * n, percentiles=(5, 95), random_state=seed
    )
    return SpectralKernel(K0, [Hinge(pairs, C)], reg)


def _dual(problem, **kw):
    ct = constraint_terms(problem)
    return dn.dual_newton(
        ct.U, ct.w, ct.ptr, ct.t, problem.regularizer, upper=ct.upper, lower=ct.lower, quad=ct.quad, **kw
    )


@pytest.mark.parametrize("reg", [AlphaPower(), Jeffreys(), LogDet()], ids=repr)
@settings(max_examples=examples(6), deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(8, 14), C=st.sampled_from([0.1, 1.0, 10.0, 100.0]))
def test_active_set_solve_matches_exact_model(reg, seed, n, C):
    """Hinge pairs up to C = 100 (most multipliers on a bound): the solve with the working set
    is certified and agrees with the trusted exact optimum through both certificates; the
    multipliers stay in the box."""
    problem = hinge_problem(n, seed, C, reg)
    fast = solve_fast_honestly(problem, tol=1e-9, method="dual")
    assert fast.solver.startswith("dual-newton")
    assert fast.converged
    assert np.all(fast.dual >= 0) and np.all(fast.dual <= C)
    exact = reference_or_discard(problem, feasible=fast)
    assert_matches_reference(problem, fast, exact, rtol=1e-6)


@pytest.mark.parametrize("reg", [AlphaPower(), Jeffreys()], ids=repr)
@pytest.mark.parametrize("C", [1.0, 100.0])
def test_active_set_and_whole_box_reach_the_same_optimum(reg, C):
    """With and without the outer loop: both certified, the same objective and the same X̂
    (f strictly convex); the working set was updated and released multipliers."""
    problem = hinge_problem(40, 2, C, reg)
    on = _dual(problem, tol=1e-10, max_iter=5000)
    off = _dual(problem, tol=1e-10, max_iter=5000, active_set=False)
    assert on.code == off.code == 0
    assert on.extra["outer"] >= 2 and on.extra["released"] > 0
    assert "outer" not in off.extra
    f_on, f_off = on.extra["objective_fy"], off.extra["objective_fy"]
    assert abs(f_on - f_off) <= 1e-8 * max(1.0, abs(f_off))
    scale = max(1.0, np.abs(off.matrix).max())
    np.testing.assert_allclose(on.matrix, off.matrix, atol=1e-3 * scale)


def test_a_stalled_subproblem_updates_the_working_set():
    """Hinge pairs under Frobenius (a flat piece of f*: X̂ = 0 where the eigenvalues are
    negative): a subproblem admits no ascent at all; the working set is then updated instead
    of the solve stopping (it stopped there, uncertified, before), and the answer is certified
    and exact."""
    problem = hinge_problem(10, 268, 1.0, Frobenius())
    res = _dual(problem, tol=1e-10, max_iter=2000)
    assert res.extra["stalls"] >= 1 and res.code == 0
    fast = solve_fast_honestly(problem, tol=1e-10, method="dual")
    assert fast.converged
    exact = reference_or_discard(problem, feasible=fast)
    assert_matches_reference(problem, fast, exact, rtol=1e-6)
