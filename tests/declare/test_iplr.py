"""IPLR / reduced-basis LogDet learning (Jain et al. §3.6, eq. 8–11, Theorems 7–8)."""

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cvxkml
from cvxkml.declare import IPLR
from cvxkml.declare.iplr import basis_span, feature_basis, kernel_basis, kernel_kmeans
from cvxkml.errors import InfeasibleError, InvalidInputError
from cvxkml.kernels import Kernel, gaussian_kernel
from cvxkml.sideinfo import PairConstraints, baseline_metric, percentile_bounds
from cvxkml.testing import random_pairs as _random_pairs
from cvxkml.testing import reference_or_discard


def _instance(seed, n, d, m, percentiles):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    i, j = _random_pairs(rng, n, m)
    yv = rng.choice([-1.0, 1.0], size=i.size)
    u, l = percentile_bounds(baseline_metric(X), n, percentiles, rng)
    return rng, X, PairConstraints(i, j, yv, np.where(yv > 0, u, l))


@settings(max_examples=examples(40))
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(4, 10),
    d=st.integers(2, 6),
    k=st.integers(1, 6),
    m=st.integers(1, 12),
    gamma=st.sampled_from([None, 0.1, 1.0, 10.0]),
)
def test_reduced_problem_equals_eq8_model(seed, n, d, k, m, gamma):
    """The k × k problem (11) and the d × d model (8) with W = I + ULUᵀ have the same
    optimum (eq. 9–10); the fast solver of (11) reaches it; W* = I + U(F* − I)Uᵀ
    satisfies the original constraints (hard case)."""
    k = min(k, d)
    rng, X, pc = _instance(seed, n, d, m if gamma else min(m, 3), (30, 70) if gamma is None else (5, 95))
    R = rng.normal(size=(d, k))
    try:
        prob = IPLR.from_features(X, pc, R, gamma=gamma)
        ref = reference_or_discard(prob)
    except (InfeasibleError, InvalidInputError):
        assume(False)
    fast = prob.solve(tol=1e-12, max_iter=20_000)
    assume(fast.converged)
    m8 = prob.eq8_model()
    m8.solve(solver="CLARABEL")
    assume(m8.status == "optimal")
    scale = max(1.0, abs(ref.objective))
    assert abs(m8.value - ref.objective) <= 1e-5 * scale
    assert abs(fast.objective - ref.objective) <= 1e-6 * scale
    W = prob.metric(fast.matrix)
    if gamma is None:
        P = pc
        kept = prob.kept
        dist = baseline_metric(X, W)(P.i[kept], P.j[kept])
        assert np.all(P.y[kept] * (dist - P.bound[kept]) <= 1e-6 * np.abs(P.bound[kept]).max())
        # D_ld(W, I) = D_ld(F, I) (eq. 9)
        from cvxkml.formulas.divergences import logdet_divergence

        assert abs(logdet_divergence(W, np.eye(d)) - fast.objective) <= 1e-8 * scale


@pytest.mark.parametrize("gamma", [None, 1.0])
def test_full_bases_reduce_to_itml_and_kernel(gamma):
    """R = I (k = d) gives ITML; J = I (k = n) gives the full kernel solution."""
    rng, X, pc = _instance(1, 12, 5, 5 if gamma is None else 20, (40, 60))
    if gamma is None:
        pc = PairConstraints(pc.i[:3], pc.j[:3], pc.y[:3], pc.bound[:3])
    f = IPLR.from_features(X, pc, np.eye(5), gamma=gamma).solve(tol=1e-13)
    itml = cvxkml.ITML(X, pc, gamma=gamma, space="features").solve(tol=1e-13)
    np.testing.assert_allclose(
        IPLR.from_features(X, pc, np.eye(5), gamma=gamma).metric(f.matrix), itml.matrix, atol=1e-9
    )
    K0 = gaussian_kernel(X, sigma=2.0)
    pk = IPLR.from_kernel(K0, pc, np.eye(12), gamma=gamma)
    fk = pk.solve(tol=1e-13)
    full = cvxkml.LogDetKernel(K0, pc, gamma=gamma).solve(tol=1e-13)
    np.testing.assert_allclose(pk.kernel(fk.matrix), full.matrix, atol=1e-8 * np.abs(full.matrix).max())


def test_kernel_basis_matches_feature_basis_and_extends_to_new_points():
    """Theorem 8 with a linear kernel: J on K0 = XXᵀ is the feature basis R = XᵀJ; the
    learned kernel function equals zᵀ W* z' on new points."""
    rng, X, pc = _instance(2, 25, 7, 30, (5, 95))
    J = kernel_basis(X @ X.T, 4, "random", random_state=0)
    pk = IPLR.from_kernel(X @ X.T, pc, J, gamma=1.0)
    pf = IPLR.from_features(X, pc, X.T @ J, gamma=1.0)
    Fk, Ff = pk.solve(tol=1e-12), pf.solve(tol=1e-12)
    assert abs(Fk.objective - Ff.objective) <= 1e-8 * max(1, Ff.objective)
    W = pf.metric(Ff.matrix)
    np.testing.assert_allclose(pk.kernel(Fk.matrix), X @ W @ X.T, atol=1e-8)
    lk = pk.learned_kernel(Fk.matrix, Kernel("linear"), X)
    Z = rng.normal(size=(6, 7))
    np.testing.assert_allclose(lk(Z), Z @ W @ Z.T, atol=1e-8)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_basis_choices(k):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    y = np.repeat([0, 1, 2], [14, 13, 13])
    for method in ("svd", "kmeans", "class-means"):
        R = feature_basis(X, k, method, y=y, random_state=0)
        assert R.shape == (6, k) and np.linalg.matrix_rank(R) == k
    R = feature_basis(X, 3, "class-means", y=y)
    np.testing.assert_allclose(R[:, 0], X[y == 0].mean(0))  # k = c: class means
    K0 = gaussian_kernel(X, sigma=2.0)
    for method in ("random", "subset", "kernel-kmeans", "class-means"):
        J = kernel_basis(K0, k, method, y=y, random_state=0)
        assert J.shape[0] == 40 and 1 <= J.shape[1] <= k
        assert np.linalg.matrix_rank(J.T @ K0 @ J) == J.shape[1]
    sub = kernel_basis(K0, k, "subset", random_state=1)
    assert np.all(sub.sum(0) == 1) and set(np.unique(sub)) == {0.0, 1.0}


def test_iplr_errors():
    rng, X, pc = _instance(3, 10, 4, 6, (5, 95))
    with pytest.raises(InvalidInputError, match="singular"):
        IPLR.from_features(X, pc, np.ones((4, 2)), gamma=1.0)
    with pytest.raises(InvalidInputError, match="d × k with d = 4"):
        IPLR.from_features(X, pc, np.eye(3), gamma=1.0)
    with pytest.raises(InvalidInputError, match="needs the labels"):
        feature_basis(X, 2, "class-means")
    with pytest.raises(InvalidInputError, match="kernel basis J must be one of"):
        kernel_basis(X @ X.T, 2, "nope")
    tight = PairConstraints([0], [1], [1], [1e-6])  # similar, bound below residual
    with pytest.raises(InfeasibleError, match="Enlarge or change the basis"):
        IPLR.from_features(X, tight, np.eye(4)[:, :1])


@pytest.mark.parametrize("shape", [(30, 8), (8, 30)])
def test_svd_basis_is_the_top_singular_subspace_and_stops_at_the_rank(shape):
    """The "svd" basis (from the smaller Gram matrix) spans the top-k right singular vectors of X, has
    orthonormal columns, and stops at the numerical rank (further vectors span no data)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=shape) * np.linspace(3.0, 1.0, shape[1])
    Vt = np.linalg.svd(X, full_matrices=False)[2]
    R = feature_basis(X, 3, "svd")
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(R @ R.T, Vt[:3].T @ Vt[:3], atol=1e-8)  # the same projector
    low = rng.normal(size=(shape[0], 2)) @ rng.normal(size=(2, shape[1]))  # rank 2
    assert feature_basis(low, None, "svd").shape[1] == 2
    assert feature_basis(low, min(shape), "svd").shape[1] == 2


def test_kmeans_bases_find_planted_clusters():
    """The k-means bases are scikit-learn's KMeans: on the features, and (kernel k-means) on
    the rows of a factor of K, which has the same feature-space distances."""
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(5)
    centres = 10.0 * rng.normal(size=(3, 6))
    lab = np.repeat([0, 1, 2], 15)
    X = centres[lab] + 0.1 * rng.normal(size=(45, 6))
    R = feature_basis(X, 3, "kmeans", random_state=0)
    for c in range(3):  # every planted centre is a basis column
        assert np.min(np.linalg.norm(R.T - X[lab == c].mean(0), axis=1)) <= 1e-12 * np.abs(X).max() * 45
    assert adjusted_rand_score(lab, kernel_kmeans(X @ X.T, 3, random_state=0)) == 1.0
    J = kernel_basis(gaussian_kernel(X, sigma=5.0), 3, "kernel-kmeans", random_state=0)
    assert adjusted_rand_score(lab, np.argmax(J, axis=1)) == 1.0


def test_class_mean_basis_with_fewer_vectors_than_classes_clusters_the_class_means():
    """§3.6: for k < c the basis is the k cluster centres of the c class means."""
    rng = np.random.default_rng(6)
    means = np.array([[10.0, 0, 0], [10.2, 0, 0], [0, 10.0, 0], [0, 10.3, 0]])
    y = np.repeat(np.arange(4), 10)
    X = means[y] + 0.01 * rng.normal(size=(40, 3))
    R = feature_basis(X, 2, "class-means", y=y, random_state=0)
    class_means = np.array([X[y == c].mean(0) for c in range(4)])
    expected = [class_means[:2].mean(0), class_means[2:].mean(0)]
    for e in expected:
        assert np.min(np.linalg.norm(R.T - e, axis=1)) <= 1e-12 * 40


def test_basis_span_is_orthonormal_and_drops_dependent_columns():
    rng = np.random.default_rng(7)
    R = rng.normal(size=(9, 3))
    U = basis_span(np.column_stack([R, R[:, 0] - 2 * R[:, 2]]))  # four columns, rank three
    assert U.shape == (9, 3)
    np.testing.assert_allclose(U.T @ U, np.eye(3), atol=1e-12)
    P = R @ np.linalg.solve(R.T @ R, R.T)
    np.testing.assert_allclose(U @ U.T, P, atol=1e-10)
    with pytest.raises(InvalidInputError, match="R is zero"):
        basis_span(np.zeros((4, 2)))


def test_learned_metric_is_the_factored_identity_plus_low_rank_metric():
    """learned_metric(F) is W* = I + U(F* − I)Uᵀ, factored: its distances and the dense
    metric() agree, its factor is orthonormal inside span(U)."""
    rng, X, pc = _instance(8, 20, 6, 25, (5, 95))
    R = rng.normal(size=(6, 3))
    prob = IPLR.from_features(X, pc, R, gamma=1.0)
    sol = prob.solve(tol=1e-10)
    metric = prob.learned_metric(sol)
    np.testing.assert_allclose(metric.get_mahalanobis_matrix(), prob.metric(sol.matrix), atol=1e-10)
    assert metric.alpha == 1.0 and metric.rank == 3
    np.testing.assert_allclose(metric.U.T @ metric.U, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(prob.U @ prob.U.T @ metric.U, metric.U, atol=1e-10)
    assert set(sol.info["kept"]) | set(sol.info["dropped_pairs"]) == set(range(pc.i.size))
    with pytest.raises(InvalidInputError, match="3 × 3"):
        prob.learned_metric(np.eye(4))
