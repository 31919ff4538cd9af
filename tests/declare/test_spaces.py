"""Spaces: a spectral problem is space × regularizer × atoms, and the span space of wide data
(Jain et al. 2012, Theorems 1 and 4) answers the feature-space problem.

The span answer is checked without trusting it: its W (formed here, small d) is evaluated
by the *feature-space* problem's own formulas — objective, violations, and the Lagrange
dual of the span's multipliers, which is a lower bound for the feature problem too (the
two problems have the same Lagrangian) — and compared with an independent feature-space
solve.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cvxkml
from cvxkml.declare import (
    FactoredSpace,
    Frobenius,
    KernelSpace,
    LogDet,
    MetricSpace,
    SpanSpace,
    SpectralMetric,
    SpectralProblem,
    TraceNorm,
    VonNeumann,
)
from cvxkml.declare.spaces import Space
from cvxkml.errors import InvalidInputError
from cvxkml.learned import FactoredMetric, LearnedMetric
from cvxkml.sideinfo import Hinge, LinearConstraints, RelativeConstraints
from cvxkml.testing import metric_instance, reference_or_discard

REGS = {"LogDet": LogDet, "VonNeumann": VonNeumann, "Frobenius": Frobenius, "TraceNorm+hinge": lambda: TraceNorm(0.5)}


def _solve(problem):
    with np.errstate(all="ignore"):
        return problem.solve(tol=1e-10, max_iter=20_000)


@settings(max_examples=examples(40), deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(3, 9),
    extra=st.integers(1, 8),
    m=st.integers(1, 14),
    reg=st.sampled_from(sorted(REGS)),
    soft=st.booleans(),
)
def test_span_answers_the_feature_problem(seed, n, extra, m, reg, soft):
    d = n + extra
    X, pc = metric_instance(seed, n, d, m, hard=not soft)
    cons = Hinge(pc, 1.0) if soft or reg == "TraceNorm+hinge" else pc
    span = SpectralMetric(X, cons, REGS[reg]())
    feat = SpectralMetric(X, cons, REGS[reg](), space="features")
    assert span.space.name == "span" and feat.space.name == "metric"
    assert span.exact_size() == np.linalg.matrix_rank(X) <= n < d
    s = _solve(span)
    f = _solve(feat)
    assume(s.converged and f.converged)
    W = span.learned_metric(s).get_mahalanobis_matrix()
    scale = max(1.0, abs(f.objective))
    # the span's W, judged by the feature problem's own formulas
    assert abs(feat.objective(W) - s.objective) <= 1e-8 * scale
    assert feat._max_relative_violation(feat.violations(W)) <= 1e-6
    lower = feat.dual_value(s.dual)  # a bound for the feature problem
    assert lower <= f.objective + 1e-7 * scale  # weak duality
    assert abs(lower - s.dual_value) <= 1e-8 * scale  # the same certificate
    assert abs(s.objective - f.objective) <= 2e-6 * scale
    if reg != "TraceNorm+hinge":  # strictly convex: one optimum
        np.testing.assert_allclose(W, f.matrix, atol=1e-4 * max(1.0, np.abs(f.matrix).max()))
    # the learned distances on the data, without forming W
    metric = span.learned_metric(s)
    np.testing.assert_allclose(
        metric.pair_sq_distances(X[pc.i], X[pc.j]), feat.pair_values(f.matrix, pc.i, pc.j), rtol=1e-4, atol=1e-6
    )


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(4, 8), extra=st.integers(1, 6))
def test_span_relative_constraints_and_prior(seed, n, extra):
    """LogDet with pairs + relative constraints and a non-identity prior W0: the span space
    (Bregman on k × k) answers the feature problem, which has no fast solver for that mix
    (its exact model is the reference)."""
    d = n + extra
    rng = np.random.default_rng(seed)
    X, pc = metric_instance(seed, n, d, 2 * n, hard=False)
    A = rng.normal(size=(d, d))
    W0 = A @ A.T / d + np.eye(d)
    i, j, k = rng.permutation(n)[:3]
    rel = RelativeConstraints(np.array([i]), np.array([j]), np.array([k]), np.array([0.1]))
    span = cvxkml.ITML(X, [pc, rel], W0=W0, gamma=1.0)
    feat = cvxkml.ITML(X, [pc, rel], W0=W0, gamma=1.0, space="features")
    assert span.space.name == "span"
    s = _solve(span)
    assume(s.converged)
    f = reference_or_discard(feat)
    metric = span.learned_metric(s)
    assert isinstance(metric, LearnedMetric)  # a dense prior stays dense
    scale = max(1.0, abs(f.objective))
    assert abs(feat.objective(metric.W) - s.objective) <= 1e-8 * scale
    assert abs(s.objective - f.objective) <= 1e-6 * scale
    np.testing.assert_allclose(metric.W, f.matrix, atol=1e-3 * np.abs(f.matrix).max())
    assert abs(feat.dual_value(s.dual) - s.dual_value) <= 1e-8 * scale


def test_span_exact_model_is_small_and_agrees():
    X, pc = metric_instance(3, 6, 40, 8, hard=False)
    span = cvxkml.ITML(X, pc, gamma=1.0)
    assert span.exact_size() == 6  # a 6 × 6 SDP instead of 40 × 40
    ref = span.solve_reference()
    fast = span.solve(tol=1e-10)
    assert ref.converged and fast.converged
    assert abs(ref.objective - fast.objective) <= 1e-6 * max(1.0, abs(ref.objective))


def test_composition_equals_the_named_problems():
    X, pc = metric_instance(5, 12, 4, 10, hard=False)
    named = cvxkml.ITML(X, pc, gamma=1.0)
    composed = SpectralProblem(MetricSpace(X), pc, LogDet(), gamma=1.0)
    assert named.fast_solver().name == composed.fast_solver().name == "bregman-metric"
    a, b = named.solve(tol=1e-10), composed.solve(tol=1e-10)
    np.testing.assert_allclose(a.matrix, b.matrix, atol=1e-10)
    K0 = X @ X.T + np.eye(12)
    k1 = cvxkml.LogDetKernel(K0, pc, gamma=1.0)
    k2 = SpectralProblem(KernelSpace(K0), pc, gamma=1.0)
    assert k1.fast_solver().name == k2.fast_solver().name == "bregman-kernel"
    G = np.linalg.cholesky(K0)[:, :6]
    f = SpectralProblem(FactoredSpace(G), pc, LogDet(), gamma=1.0)
    assert f.fast_solver().name == "lowrank-logdet"


def test_a_user_space_dispatches_by_what_solvers_declare():
    """The built-in Bregman solvers declare their spaces; a space of a user's goes to the
    solvers that take any space (the generic dual solver), certified."""

    class Scaled(Space):
        name = "scaled-features"

        def __init__(self, X, s):
            self.X = X
            self.F = s * X
            d = X.shape[1]
            self.T, self.M0 = np.eye(d), np.eye(d)
            self.n_points, self.dim = X.shape

    X, pc = metric_instance(7, 10, 3, 6, hard=False)
    prob = SpectralProblem(Scaled(X, 2.0), Hinge(pc, 1.0), LogDet())
    spec = prob.fast_solver()
    assert spec.name == "dual-newton"
    from cvxkml.declare import registry

    bregman = next(s for s in registry.registered() if s.name == "bregman-metric")
    assert "scaled-features space" in bregman.refusal(prob)
    sol = prob.solve(tol=1e-9)
    assert sol.converged
    # distances of the user space: F = 2X, so W on X is 4× the learned matrix
    np.testing.assert_allclose(
        prob.pair_values(sol.matrix, pc.i, pc.j),
        4 * np.einsum("ij,jk,ik->i", X[pc.i] - X[pc.j], sol.matrix, X[pc.i] - X[pc.j]),
    )


def test_space_errors_are_typed():
    X, pc = metric_instance(1, 5, 12, 4, hard=False)
    lin = LinearConstraints(b=np.array([20.0]), C=np.eye(12)[None])
    with pytest.raises(InvalidInputError, match="space='features'"):
        cvxkml.ITML(X, [pc, lin], gamma=1.0, space="span")
    assert cvxkml.ITML(X, [pc, lin], gamma=1.0).space.name == "metric"  # auto: features
    with pytest.raises(InvalidInputError, match="space must be one of|space"):
        cvxkml.ITML(X, pc, space="wide")
    with pytest.raises(InvalidInputError, match="space='features' to extend"):
        cvxkml.ITML(X, pc, gamma=1.0).extend(term=lambda W: 0)
    with pytest.raises(InvalidInputError, match="learned_kernel"):
        cvxkml.LogDetKernel(X @ X.T + np.eye(5), pc).learned_metric(np.eye(5))
    with pytest.raises(InvalidInputError, match="must be a cvxkml.declare.spaces.Space"):
        SpectralProblem(X, pc)
    with pytest.raises(InvalidInputError, match="rank 0"):
        SpanSpace(np.zeros((3, 8)))


def test_factored_metric_round_trip_without_forming_w():
    X, pc = metric_instance(2, 8, 30, 10, hard=False)
    prob = cvxkml.ITML(X, pc, gamma=1.0)
    sol = prob.solve()
    m = prob.learned_metric(sol)
    assert isinstance(m, FactoredMetric) and m.rank == 8 and m.n_features == 30
    m2 = FactoredMetric.from_arrays(m.to_arrays())
    Z = np.random.default_rng(0).normal(size=(5, 30))
    np.testing.assert_allclose(m2.sq_distances(Z), m.sq_distances(Z))
    W = m.get_mahalanobis_matrix()
    np.testing.assert_allclose(
        m.sq_distances(Z[:2], Z[2:]), LearnedMetric(W).sq_distances(Z[:2], Z[2:]), rtol=1e-9, atol=1e-9
    )


def test_wide_itml_never_forms_d_by_d():
    """d = 20 000, n = 60: problem, solve, certificate and learned distances stay O(n d);
    tracemalloc's peak is far below one d × d matrix (3.2 GB)."""
    code = textwrap.dedent("""
        import tracemalloc
        import numpy as np
        import cvxkml
        from cvxkml.sideinfo import PairConstraints, baseline_metric
        rng = np.random.default_rng(0)
        n, d = 60, 20_000
        X = rng.normal(size=(n, d)) / np.sqrt(d)
        y = np.repeat([0, 1, 2], n // 3)
        pc = PairConstraints.from_labels(y, baseline_metric(X), n_similar=40, n_dissimilar=40,
                                         random_state=0)
        tracemalloc.start()
        prob = cvxkml.ITML(X, pc, gamma=1.0)
        sol = prob.solve()
        m = prob.learned_metric(sol)
        D = m.sq_distances(X[:10])
        T = m.transform(X)
        peak = tracemalloc.get_traced_memory()[1]
        assert sol.converged and prob.space.name == "span", sol
        print(peak)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    peak = int(out.stdout.split()[-1])
    assert peak < 200 * 2**20, f"peak {peak / 2**20:.0f} MB"


def test_size_guard_knows_mixed_families_and_composed_problems():
    """The von Neumann exact model with every constraint family at n = 30 ran 357 s; the guard
    (2× the measured limit) now refuses it, and a hand-composed SpectralProblem too."""
    from cvxkml.errors import SolverError
    from cvxkml.testing import feasible_instance

    mixed = feasible_instance(
        0, 30, 10, ("pairs", "triplets", "similarity"), VonNeumann(), kernel=True, hard=False, d=5
    )
    assert mixed.exact_limit() == 12
    with pytest.raises(SolverError, match="PSD block of side 30"):
        mixed.solve_reference()
    X, pc = metric_instance(0, 60, 3, 20, hard=False)
    composed = SpectralProblem(
        KernelSpace(np.exp(-np.square(X[:, None] - X[None]).sum(-1))), pc, VonNeumann(), gamma=1.0
    )
    assert composed.exact_limit() == 18
    with pytest.raises(SolverError, match="allow_large=True"):
        composed.solve_reference()
    pairs_only = cvxkml.ITML(*metric_instance(0, 40, 30, 20, hard=False), gamma=1.0)
    assert pairs_only.exact_limit() == 210


def test_each_space_gives_the_pseudo_inverse_of_its_T():
    """T_pinv() (the map M -> X̂ = T⁺ M T⁺ᵀ) equals the SVD pseudo-inverse for every space,
    including a rank-deficient K0 and a Cholesky prior, and X̂ of M = T X̂ Tᵀ comes back."""
    from cvxkml.declare.spaces import EigenbasisKernelSpace

    rng = np.random.default_rng(3)
    X = rng.normal(size=(9, 4))
    B = rng.normal(size=(4, 4))
    Kd = X @ X.T  # rank 4 of 9
    spaces = [
        MetricSpace(X),
        MetricSpace(X, W0=B @ B.T + 0.5 * np.eye(4)),
        KernelSpace(Kd + 1e-3 * np.eye(9)),
        KernelSpace(Kd),
        EigenbasisKernelSpace(Kd),
        SpanSpace(rng.normal(size=(5, 12))),
    ]
    for sp in spaces:
        P = sp.T_pinv()
        np.testing.assert_allclose(P, np.linalg.pinv(sp.T), rtol=1e-8, atol=1e-10 * np.abs(P).max())
        Xh = rng.normal(size=(sp.T.shape[1],) * 2)
        Xh = Xh @ Xh.T
        np.testing.assert_allclose(P @ (sp.T @ Xh @ sp.T.T) @ P.T, Xh, rtol=1e-7, atol=1e-8 * np.abs(Xh).max())
