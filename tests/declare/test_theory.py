"""Theorems and invariances of the LogDet family (Jain et al. 2012; Kulis et al. 2009)."""

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import cvxkml
from cvxkml.formulas.divergences import logdet_divergence
from cvxkml.kernels import Kernel
from cvxkml.learned import LearnedKernel, LearnedMetric, kernel_S
from cvxkml.sideinfo import PairConstraints, baseline_metric
from cvxkml.testing import kernel_instance, metric_instance

TOL = dict(tol=1e-13, max_iter=50_000)


def _labelled(seed, n, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, 3, n)
    y[:2] = (0, 1)  # two classes, so dissimilar pairs exist (fuzz seed 9806 drew one
    return rng, X, y  # class of 4 points whose 4 within-class draws were all i = j)


@settings(max_examples=examples(25))
@given(
    seed=st.integers(0, 10**6), n=st.integers(4, 10), extra=st.integers(0, 4), gamma=st.sampled_from([None, 0.5, 10.0])
)
@example(seed=132, n=9, extra=0, gamma=None)  # CI's near-singular draw (skipped)
def test_theorem1_metric_equals_kernel(seed, n, extra, gamma):
    """Theorem 1: with a linear kernel on full-column-rank data (d >= n), the ITML metric
    and the LogDet kernel solutions give the same distances on training pairs and, via
    eq. 6, on new points."""
    rng, X, y = _labelled(seed, n, n + extra)
    # full column rank numerically (the theorem's hypothesis): CI drew a square X with
    # cond(XXᵀ) = 1.7e10, where K0⁻¹ in eq. 6 amplifies rounding past the 1e-6 below
    assume(np.linalg.cond(X @ X.T) < 1e8)
    pc = PairConstraints.from_labels(y, baseline_metric(X), n_similar=4, n_dissimilar=4, random_state=seed)
    if gamma is None:  # keep hard draws feasible: a forest
        pc = PairConstraints(*_forest(pc))
    W = cvxkml.ITML(X, pc, gamma=gamma, space="features").solve(**TOL)
    K = cvxkml.LogDetKernel(X @ X.T, pc, gamma=gamma).solve(**TOL)
    assert W.converged and K.converged
    # K* = Φᵀ W* Φ on the training points
    np.testing.assert_allclose(X @ W.matrix @ X.T, K.matrix, atol=1e-6 * np.abs(K.matrix).max())
    metric = LearnedMetric(W.matrix)
    kern = LearnedKernel.from_solution(Kernel("linear"), X, X @ X.T, K.matrix)
    Z1, Z2 = rng.normal(size=(6, X.shape[1])), rng.normal(size=(6, X.shape[1]))
    d_metric = metric.pair_sq_distances(Z1, Z2)
    np.testing.assert_allclose(kern.pair_sq_distances(Z1, Z2), d_metric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(kern.sq_distances(Z1, Z2), metric.sq_distances(Z1, Z2), rtol=1e-6, atol=1e-8)
    # W* = I + Φ S Φᵀ
    S = kernel_S(X @ X.T, K.matrix)
    np.testing.assert_allclose(np.eye(X.shape[1]) + X.T @ S @ X, W.matrix, atol=1e-6)


def _forest(pc):
    seen, keep = {}, []

    def root(a):
        while seen.get(a, a) != a:
            a = seen[a]
        return a

    for t, (a, b) in enumerate(zip(pc.i, pc.j)):
        ra, rb = root(a), root(b)
        if ra != rb:
            seen[ra] = rb
            keep.append(t)
    keep = np.array(keep)
    return pc.i[keep], pc.j[keep], pc.y[keep], pc.bound[keep]


def test_corollary2_prior_metric():
    """Corollary 2: with a prior W0, K0 = X W0 Xᵀ and W* = W0 + W0 Xᵀ S X W0."""
    rng, X, y = _labelled(3, 8, 11)
    A = rng.normal(size=(11, 11))
    W0 = A @ A.T / 11 + 0.5 * np.eye(11)
    pc = PairConstraints.from_labels(y, baseline_metric(X, W0), n_similar=5, n_dissimilar=5, random_state=0)
    W = cvxkml.ITML(X, pc, W0=W0, gamma=1.0, space="features").solve(**TOL).matrix
    K0 = X @ W0 @ X.T
    K = cvxkml.LogDetKernel(K0, pc, gamma=1.0).solve(**TOL).matrix
    S = kernel_S(K0, K)
    np.testing.assert_allclose(W0 + W0 @ X.T @ S @ X @ W0, W, atol=1e-7)
    base = lambda A_, B_: A_ @ W0 @ B_.T  # κ0(x, y) = xᵀ W0 y
    kern = LearnedKernel(base, X, S)
    Z = rng.normal(size=(5, 11))
    np.testing.assert_allclose(kern(Z, Z), Z @ W @ Z.T, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("kind", ["metric", "kernel"])
@pytest.mark.parametrize("gamma", [None, 1.0])
def test_scale_invariance(kind, gamma):
    """Scaling the data by c (bounds by c²) scales every learned distance by c² — for
    both the fast solver and the exact model (LogDet is scale invariant).  The conic
    solver's matrix is accurate to ~1e-4 only (objective tolerance 1e-8 on a flat
    optimum), hence the looser matrix tolerance for it."""
    c = 3.7
    if kind == "metric":
        X, pc = metric_instance(11, 9, 4, 12 if gamma else 4, hard=gamma is None)
        make = lambda s: cvxkml.ITML(s * X, PairConstraints(pc.i, pc.j, pc.y, s**2 * pc.bound), gamma=gamma)
    else:
        K0, pc = kernel_instance(11, 9, 12 if gamma else 8, hard=gamma is None, kind="gaussian")
        make = lambda s: cvxkml.LogDetKernel(s**2 * K0, PairConstraints(pc.i, pc.j, pc.y, s**2 * pc.bound), gamma=gamma)
    p1, pc_ = make(1.0), make(c)
    i, j = np.triu_indices(9, 1)
    for solve in ("solve", "solve_reference"):
        s1 = getattr(p1, solve)(**(TOL if solve == "solve" else {}))
        sc = getattr(pc_, solve)(**(TOL if solve == "solve" else {}))
        d1 = p1.pair_values(s1.matrix, i, j)
        dc = pc_.pair_values(sc.matrix, i, j)
        np.testing.assert_allclose(dc, c**2 * d1, rtol=1e-3 if solve != "solve" else 1e-9)
        assert abs(sc.objective - s1.objective) <= 1e-6 * max(1.0, abs(s1.objective))


@settings(max_examples=examples(50))
@given(seed=st.integers(0, 10**6), n=st.integers(1, 8), rank=st.integers(0, 8))
def test_logdet_congruence_invariance(seed, n, rank):
    """Kulis et al. Prop. 12: D_ld(PᵀXP, PᵀYP) = D_ld(X, Y) for invertible P, also on the
    range space of rank-deficient X, Y with equal ranges."""
    rng = np.random.default_rng(seed)
    r = max(1, min(rank, n))
    B = rng.normal(size=(n, r))
    X = B @ np.diag(rng.uniform(0.5, 2, r)) @ B.T
    Y = B @ np.diag(rng.uniform(0.5, 2, r)) @ B.T
    # a general invertible P with cond(P) <= 4, so PᵀYP stays well above the rank threshold
    # (eigenvalues below 1e-10·max count as zero)
    Q1, _ = np.linalg.qr(rng.normal(size=(n, n)))
    Q2, _ = np.linalg.qr(rng.normal(size=(n, n)))
    P = Q1 @ np.diag(rng.uniform(0.5, 2.0, n)) @ Q2
    d = logdet_divergence(X, Y)
    dP = logdet_divergence(P.T @ X @ P, P.T @ Y @ P)
    assert np.isfinite(d) and d >= -1e-9
    assert abs(dP - d) <= 1e-6 * max(1.0, d)


def test_logdet_range_space_matches_theorem7():
    """Theorem 7 (Kulis et al.): D_ld(X, Y) = Σ_ij (v_iᵀu_j)² (λ_i/θ_j − log(λ_i/θ_j) − 1) for
    rank-deficient X, Y with range(X) = range(Y); different ranges give +inf."""
    rng = np.random.default_rng(0)
    B = rng.normal(size=(6, 3))
    X = B @ np.diag([1.0, 2.0, 0.3]) @ B.T
    Y = B @ B.T
    lx, Vx = np.linalg.eigh(X)
    ly, Uy = np.linalg.eigh(Y)
    lx, Vx, ly, Uy = lx[3:], Vx[:, 3:], ly[3:], Uy[:, 3:]
    C = (Vx.T @ Uy) ** 2
    R = lx[:, None] / ly[None, :]
    expected = float(np.sum(C * (R - np.log(R))) - 3)  # Σ_j (v_iᵀu_j)² = 1 on the range
    assert abs(logdet_divergence(X, Y) - expected) < 1e-9
    assert logdet_divergence(X + np.outer(rng.normal(size=6), rng.normal(size=6)) * 0 + np.eye(6) * 1e-3, Y) == np.inf


def _algorithm1_numpy(W0, X, pc, gamma, sweeps):
    """Independent transcription of Jain et al. Algorithm 1 (metric form), plain numpy."""
    W = W0.copy()
    lam = np.zeros(len(pc))
    xi = pc.bound.copy()
    for _ in range(sweeps):
        for c in range(len(pc)):
            v = X[pc.i[c]] - X[pc.j[c]]
            p = v @ W @ v
            delta = pc.y[c]
            f = 1.0 if gamma is None else gamma / (gamma + 1.0)
            alpha = min(lam[c], delta * f * (1 / p - 1 / xi[c]))
            beta = delta * alpha / (1 - delta * alpha * p)
            if gamma is not None:
                xi[c] = gamma * xi[c] / (gamma + delta * alpha * xi[c])
            lam[c] -= alpha
            Wv = W @ v
            W = W + beta * np.outer(Wv, Wv)
    return W, lam, xi


@pytest.mark.parametrize("gamma", [None, 0.3, 5.0])
def test_numpy_transcription_same_iterates(gamma):
    """Cross-check against an independent implementation: same constraints, bounds, γ and
    order of projections give the same W (and duals, slacks) to 1e-8."""
    X, pc = metric_instance(5, 20, 5, 5 if gamma is None else 40, hard=gamma is None)
    fast = cvxkml.ITML(X, pc, gamma=gamma).solve(tol=1e-10)
    W, lam, xi = _algorithm1_numpy(np.eye(5), X, pc, gamma, fast.n_iter)
    np.testing.assert_allclose(fast.matrix, W, atol=1e-8 * np.abs(W).max())
    np.testing.assert_allclose(fast.dual, lam, atol=1e-8 * max(1.0, np.abs(lam).max()))
    if gamma is not None:
        np.testing.assert_allclose(fast.slack, xi, rtol=1e-8)


def test_duals_match_exact_model():
    """The Bregman λ are the Lagrange multipliers: they match the conic solver's duals."""
    K0, pc = kernel_instance(2, 10, 20, hard=False, kind="linear-ridge")
    prob = cvxkml.LogDetKernel(K0, pc, gamma=2.0)
    fast, exact = prob.solve(**TOL), prob.solve_reference()
    np.testing.assert_allclose(fast.dual, exact.dual, atol=1e-3 * max(1.0, fast.dual.max()))
    np.testing.assert_allclose(fast.slack, exact.slack, rtol=1e-3)


def test_rank_deficient_kernel_keeps_range_and_matches_model():
    """A rank-r K0 goes through the range-space model; K keeps range(K0)."""
    K0, pc = kernel_instance(8, 12, 20, hard=False, kind="lowrank")
    prob = cvxkml.LogDetKernel(K0, pc, gamma=1.0)
    assert prob.rank < 12 and prob.T.shape[1] == prob.rank
    fast, exact = prob.solve(**TOL), prob.solve_reference()
    assert abs(fast.objective - exact.objective) <= 1e-6 * max(1.0, exact.objective)
    V = np.linalg.eigh(K0)[1][:, : 12 - prob.rank]  # null space of K0
    assert np.abs(V.T @ fast.matrix @ V).max() < 1e-9 * np.abs(fast.matrix).max()
