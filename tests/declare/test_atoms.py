"""Constraint atoms (cvxkml.sideinfo.ConstraintAtom): linear equalities tr(C_t M) = b_t, hard
or under Hinge (C·|ρ|) or Squared ((C/2)·ρ²), and squared-hinge slack, through the one
extension point — every regularizer of a registry × metric / kernel / factored space,
against the exact model through both certificates."""

import cvxpy as cp
import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from cvxkml.declare import (
    FactoredSpectralKernel,
    Frobenius,
    LogDet,
    Regularizer,
    SpectralKernel,
    SpectralMetric,
    TraceNorm,
    VonNeumann,
)
from cvxkml.sideinfo import Hinge, LinearConstraints, LinearEqualities, Squared
from cvxkml.testing import (
    assert_matches_reference,
    factor_instance,
    kernel_instance,
    metric_instance,
    reference_or_discard,
    solve_fast_honestly,
)


class HalfLogDetHalfFrobenius(Regularizer):
    """A user-style mixed regularizer: f_s(x) = ½(x − log x − 1) + ¼x², closed-form conjugate
    (x(μ) solves ½(1 − 1/x) + ½x = μ)."""

    name = "half-logdet-half-frobenius"
    alpha = (np.sqrt(5.0) - 1.0) / 2.0
    implies_psd = True

    def f_s(self, x):
        with np.errstate(all="ignore"):
            return np.where(x > 0, 0.5 * (x - np.log(np.where(x > 0, x, 1.0)) - 1.0) + 0.25 * x * x, np.inf)

    def _x(self, mu):
        a = mu - 0.5
        return a + np.sqrt(a * a + 1.0)

    def conj_grad_s(self, mu):
        return self._x(mu)

    def conj_s(self, mu):
        x = self._x(mu)
        return x * mu - self.f_s(x)

    def conj_hess_s(self, mu):
        x = self._x(mu)
        return 1.0 / (0.5 / (x * x) + 0.5)

    def cvx(self, X):
        n = X.shape[0]
        return 0.5 * (cp.trace(X) - cp.log_det(X) - n) + 0.25 * cp.sum_squares(X)


REGULARIZERS = [LogDet(), VonNeumann(), Frobenius(), TraceNorm(0.5), HalfLogDetHalfFrobenius()]
PENALTIES = {"hard": None, "hinge": Hinge, "squared": Squared}


def _problem(seed, reg, space, eq_penalty, pair_penalty, scale):
    """Soft pairs (so any trace is reachable) and one trace equality tr(M) = scale·tr(M0)."""
    wrap = PENALTIES[pair_penalty]
    if space == "metric":
        X, pc = metric_instance(seed, 9, 3, 6, hard=False)
        dim, cls, args = 3, SpectralMetric, (X,)
    elif space == "kernel":
        K0, pc = kernel_instance(seed, 8, 6, hard=False)
        dim, cls, args = 8, SpectralKernel, (K0,)
    else:
        G0, pc = factor_instance(seed, 9, 3, 6, hard=False)
        dim, cls, args = 3, FactoredSpectralKernel, (G0,)
    eq = LinearEqualities(b=[scale * dim], C=np.eye(dim)[None])
    cons = [wrap(pc, 0.7), eq if PENALTIES[eq_penalty] is None else PENALTIES[eq_penalty](eq, 2.0)]
    return cls(*args, cons, reg)


@pytest.mark.parametrize("reg", REGULARIZERS, ids=lambda r: r.name)
@settings(max_examples=examples(4), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    space=st.sampled_from(["metric", "kernel", "factored"]),
    eq_penalty=st.sampled_from(["hard", "hinge", "squared"]),
    pair_penalty=st.sampled_from(["hinge", "squared"]),
    scale=st.floats(0.7, 1.4),
)
def test_equalities_and_squared_hinge_match_the_exact_model(reg, seed, space, eq_penalty, pair_penalty, scale):
    """The generic dual solver (free multipliers for equalities, boxes for hinge, −λ²/(2C) for
    squared) certifies and agrees with the exact model (== / |ρ| / squares) to 1e-6, both
    certificates; a hard equality holds to the solver tolerance."""
    problem = _problem(seed, reg, space, eq_penalty, pair_penalty, scale)
    assert problem.fast_solver().name == "dual-newton"
    fast = solve_fast_honestly(problem, tol=1e-10)
    assert fast.converged
    exact = reference_or_discard(problem, feasible=fast)
    assert_matches_reference(problem, fast, exact, rtol=1e-6)
    lower, upper, quad = problem.dual_box()
    assert np.all(fast.dual >= lower) and np.all(fast.dual <= upper)
    if eq_penalty == "hard":
        trace = np.trace(problem.whiten(fast.matrix) if space == "factored" else fast.matrix)
        assert abs(trace - problem.equalities.b[0]) <= 1e-6 * problem.equalities.b[0]
        assert np.isinf(lower[-1])  # a free multiplier


def test_squared_and_equality_objective_against_an_independent_model():
    """The declared objective prices the penalties as the hand-written model does: LogDet on a
    metric, squared-hinge triplet-free pairs written directly, tr W = 2.5 hard."""
    from cvxkml.sideinfo import PairConstraints

    X, pc = metric_instance(7, 10, 3, 6, hard=False)
    C = 0.8
    prob = SpectralMetric(X, [Squared(pc, C), LinearEqualities(b=[2.5], C=np.eye(3)[None])], LogDet())
    W = cp.Variable((3, 3), symmetric=True)
    V = X[pc.i] - X[pc.j]
    d = cp.sum(cp.multiply(V @ W, V), axis=1)
    obj = cp.trace(W) - cp.log_det(W) - 3 + 0.5 * C * cp.sum_squares(cp.pos(cp.multiply(pc.y, d - pc.bound)))
    ref = cp.Problem(cp.Minimize(obj), [cp.trace(W) == 2.5])
    ref.solve(solver="CLARABEL")
    assert ref.status == "optimal"
    fast = solve_fast_honestly(prob, tol=1e-10)
    assert fast.objective == pytest.approx(ref.value, rel=1e-6)
    assert prob.objective(W.value) == pytest.approx(ref.value, rel=1e-7)
    assert isinstance(pc, PairConstraints)


def test_the_native_solvers_refuse_what_they_do_not_handle():
    """LinearEqualities is its own family: the inequality solvers (POLA, Bregman) do not take
    it (their multipliers are non-negative); the generic dual solver does."""
    X, pc = metric_instance(2, 9, 3, 6, hard=True)
    eq = LinearEqualities(b=[3.0], C=np.eye(3)[None])
    assert (
        SpectralMetric(X, [pc, LinearConstraints(b=[3.0], C=np.eye(3)[None])], Frobenius()).fast_solver().name == "pola"
    )
    prob = SpectralMetric(X, [pc, eq], Frobenius())
    assert prob.fast_solver().name == "dual-newton"
    with pytest.raises(Exception, match="pola: does not handle LinearEqualities"):
        prob.fast_solver("native")


def test_a_regularizer_with_only_f_s_and_cvx_solves_exactly_without_a_certificate():
    """f_s + cvx is enough for the exact model: the answer is the conic solver's, with
    ``dual_value`` None and the reason in ``info["certificate"]``; the fast solve says what is
    missing."""
    from cvxkml.errors import InvalidInputError

    class OnlyPrimal(Regularizer):
        name = "only-primal"
        alpha = 1.0
        implies_psd = True

        def f_s(self, x):
            with np.errstate(all="ignore"):
                return np.where(x > 0, x - np.log(np.where(x > 0, x, 1.0)) - 1.0, np.inf)

        def cvx(self, X):
            return cp.trace(X) - cp.log_det(X) - X.shape[0]

    X, pc = metric_instance(3, 10, 3, 4, hard=True)
    prob = SpectralMetric(X, pc, OnlyPrimal())
    sol = prob.solve_reference()
    assert sol.converged and sol.dual_value is None and "declares no conj_s" in sol.info["certificate"]
    same = SpectralMetric(X, pc, LogDet()).solve_reference()
    assert sol.objective == pytest.approx(same.objective, rel=1e-6)
    with pytest.raises(InvalidInputError, match="needs the regularizer's conj_s, conj_grad_s, conj_hess_s"):
        prob.solve()


@settings(max_examples=examples(20), deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(2, 40),
    d=st.integers(1, 400),
    m=st.integers(1, 3000),
    dup=st.booleans(),
)
def test_baseline_metric_paths_agree(seed, n, d, m, dup):
    """baseline_metric's Gram path (many pairs of few wide points) and chunked path equal the
    definition ‖x_i − x_j‖² to round-off, near-duplicate points included."""
    from cvxkml.sideinfo import baseline_metric

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(1e-3, 1e3)
    if dup and n > 1:
        X[1] = X[0] * (1 + 1e-12)
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    V = X[i] - X[j]
    ref = np.einsum("ij,ij->i", V, V)
    out = baseline_metric(X)(i, j)
    assert np.all(np.abs(out - ref) <= 1e-9 * ref + 1e-300 * (ref == 0))
