"""The IPLR estimator (Jain et al. 2012 §3.6, eq. 8–11): the learned metric is I + U L Uᵀ on
an orthonormal basis of the chosen subspace, ``transform`` realizes its distances, the pairs
are met or decided as the paper's eq. 10 says, and on the whole row space of the data the
answer is ITML's (its span path), to a tolerance derived from both certificates."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine

from cvxkml.declare import IPLR as IPLRProblem
from cvxkml.errors import InfeasibleError, InvalidInputError
from cvxkml.estimators import IPLR, ITML, load
from cvxkml.learned import FactoredMetric
from cvxkml.sideinfo import PairConstraints

FEW = dict(n_similar=15, n_dissimilar=15, random_state=0)


def _wide(n=30, d=80, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3.0, d)
    X[:, :4] += 2.0 * y[:, None]
    return X, y


def _fit(est, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pairs decided in the basis
        return est.fit(*args, **kw)


def _standardized(est, X):
    return (X - est.feature_mean_) / est.feature_scale_


def _projector(A):
    Q = np.linalg.qr(A)[0]
    return Q @ Q.T


@pytest.mark.parametrize(
    "params",
    [dict(basis="svd", k=4), dict(basis="kmeans", k=5), dict(basis="class-means"), dict(basis="class-means", k=6)],
    ids=repr,
)
def test_metric_is_identity_plus_low_rank_on_the_basis_and_transform_realizes_it(params):
    X, y = _wide()
    est = _fit(IPLR(tol=1e-6, **params, **FEW), X, y)
    assert est.converged_
    m = est.metric_
    assert isinstance(m, FactoredMetric) and m.alpha == 1.0 and "components_" not in vars(est)
    k = m.rank
    assert k <= (params.get("k") or 3)
    np.testing.assert_allclose(m.U.T @ m.U, np.eye(k), atol=1e-10)  # U orthonormal
    Z = _standardized(est, X)
    if params["basis"] == "class-means" and "k" not in params:
        # the basis is the span of the class means (c − 1 = 2 of them: centred features)
        means = np.array([Z[y == c].mean(0) for c in range(3)]).T
        assert k == 2
        np.testing.assert_allclose(_projector(m.U), _projector(means[:, :2]), atol=1e-8)
    # W − I = U diag(λ) Uᵀ: identity off span(U)
    W = m.get_mahalanobis_matrix()
    P = m.U @ m.U.T
    np.testing.assert_allclose((np.eye(X.shape[1]) - P) @ (W - np.eye(X.shape[1])), 0.0, atol=1e-10)
    assert np.linalg.eigvalsh(W).min() > 0
    # transform, pair_distance, get_metric and the raw-feature Mahalanobis matrix agree
    T = est.transform(X)
    D = X[:10] - X[10:20]
    A = est.get_mahalanobis_matrix()
    dist = est.pair_distance(np.stack([X[:10], X[10:20]], axis=1))
    np.testing.assert_allclose(np.linalg.norm(T[:10] - T[10:20], axis=1), dist, rtol=1e-9)
    np.testing.assert_allclose(np.sqrt(np.einsum("ij,jk,ik->i", D, A, D)), dist, rtol=1e-8)
    assert est.get_metric()(X[0], X[10]) == pytest.approx(dist[0], rel=1e-9)
    # the declared problem's own W* on the same basis and pairs (eq. 8: W = I + U(F − I)Uᵀ)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        prob = IPLRProblem.from_features(Z, est.pairs_, m.U, gamma=1.0)
        F = prob.solve(tol=1e-6).matrix
    np.testing.assert_allclose(prob.metric(F), W, atol=1e-6 * np.abs(W).max())


def test_pairs_are_met_or_decided_by_eq10():
    """Hard constraints on the whole row space: every pair holds (relative 1e-6) and the fit
    is certified.  On a small basis with slack: a dropped dissimilar pair holds already, a
    dropped similar pair is violated whatever F (its distance outside span(U) exceeds u)."""
    X, y = _wide()
    est = IPLR(gamma=None, tol=1e-8, percentiles=(30, 70), **FEW).fit(X, y)
    pc = est.pairs_
    d = est.pair_distance(np.stack([X[pc.i], X[pc.j]], axis=1)) ** 2
    assert est.converged_ and est.solution_.info["dropped_pairs"].size == 0
    assert np.all(pc.y * (d - pc.bound) <= 1e-6 * pc.bound)
    gap = est.solution_.gap
    assert 0 <= gap <= 1e-6 * max(1.0, abs(est.solution_.objective))

    with pytest.warns(UserWarning, match="similar pair"):
        small = IPLR(k=2, tol=1e-8, **FEW).fit(X, y)
    pc = small.pairs_
    d = small.pair_distance(np.stack([X[pc.i], X[pc.j]], axis=1)) ** 2
    dropped = small.solution_.info["dropped_pairs"]
    assert dropped.size and set(dropped) | set(small.solution_.info["kept"]) == set(range(pc.i.size))
    dis, sim = dropped[pc.y[dropped] < 0], dropped[pc.y[dropped] > 0]
    assert sim.size and np.all(d[dis] >= pc.bound[dis]) and np.all(d[sim] > pc.bound[sim])
    Z = _standardized(small, X)
    V = Z[pc.i[sim]] - Z[pc.j[sim]]
    outside = np.einsum("ij,ij->i", V, V) - np.sum((V @ small.metric_.U) ** 2, axis=1)
    assert np.all(outside > pc.bound[sim])  # eq. 10: the part no F can shrink


def _certified_gap(sol, shift=0.0):
    """What a certificate allows between the answer's Lagrangian and the optimum: the gap
    f − g (at least the round-off of evaluating f and g), plus Σ λ·violation, plus the
    first-order effect Σ λ·δb of bounds moved by ``shift``."""
    floor = 100 * np.finfo(float).eps * max(1.0, abs(sol.objective))
    return max(sol.gap, floor) + float(np.dot(sol.dual, sol.violations)) + shift


def test_whole_row_space_basis_gives_itmls_span_solution():
    """Theorem 1: ITML's W* − I lies in the row space of the data, so IPLR on that basis
    (svd, k=None) solves the same problem as ITML's span path; on the same pairs the two
    answers agree within what their certificates allow.

    Tolerance: both objectives lie within their certified gaps of the one optimum; and with
    Λ >= λ_max(W) on the segment between the answers the Lagrangian is (1/Λ²)-strongly
    convex in W, so ‖W − W*‖_F² <= 2Λ² × (certified gap) for each answer."""
    X, y = _wide(n=24, d=60)
    itml = ITML(tol=1e-6, **FEW).fit(X, y)
    iplr = IPLR(tol=1e-6, random_state=0).fit(X, pairs=itml.pairs_)
    a, b = itml.solution_, iplr.solution_
    assert itml.converged_ and iplr.converged_ and isinstance(itml.metric_, FactoredMetric)
    assert iplr.metric_.rank == itml.metric_.rank == np.linalg.matrix_rank(_standardized(itml, X))
    # the bounds of (11) are shifted by the part r_ij of each pair outside span(U): round-off
    # here (every pair lies in the row space), weighted by the multipliers
    pc = iplr.pairs_
    Z = _standardized(iplr, X)
    V = Z[pc.i] - Z[pc.j]
    r = np.maximum(np.einsum("ij,ij->i", V, V) - np.sum((V @ iplr.metric_.U) ** 2, axis=1), 0.0)
    ga, gb = _certified_gap(a), _certified_gap(b, float(np.dot(b.dual, r[b.info["kept"]])))
    assert abs(a.objective - b.objective) <= ga + gb
    Wa, Wb = itml.metric_.get_mahalanobis_matrix(), iplr.metric_.get_mahalanobis_matrix()
    lam = max(np.linalg.eigvalsh(Wa).max(), np.linalg.eigvalsh(Wb).max())
    tol = lam * (np.sqrt(2 * ga) + np.sqrt(2 * gb))
    assert tol < 1e-4  # a meaningful bound
    assert np.linalg.norm(Wa - Wb) <= tol
    Xn = np.random.default_rng(1).normal(size=(6, X.shape[1]))
    D = Xn[:3] - Xn[3:]
    da, db = (
        itml.pair_distance(np.stack([Xn[:3], Xn[3:]], axis=1)),
        iplr.pair_distance(np.stack([Xn[:3], Xn[3:]], axis=1)),
    )
    # |d_a² − d_b²| = |vᵀ(W_a − W_b)v| <= ‖W_a − W_b‖ ‖v‖² on the standardized differences
    v2 = np.sum((D / iplr.feature_scale_) ** 2, axis=1)
    assert np.all(np.abs(da**2 - db**2) <= tol * v2)


def test_user_pairs_given_basis_and_save_load(tmp_path):
    X, y = _wide()
    rows = np.array([[0, 1, 1], [0, 10, -1], [11, 12, 1], [20, 2, -1], [21, 22, 1]])
    R = np.random.default_rng(2).normal(size=(X.shape[1], 3))
    est = _fit(IPLR(basis=R, tol=1e-8, random_state=0), X, pairs=rows)
    assert est.feature_scale_ is None  # a given basis is used on the features as given
    assert est.pairs_.i.size == 5 and np.array_equal(est.pairs_.y, rows[:, 2])
    np.testing.assert_allclose(_projector(est.metric_.U), _projector(R), atol=1e-8)
    path = tmp_path / "iplr.npz"
    est.save(path)
    back = load(path)
    assert type(back) is IPLR and isinstance(back.metric_, FactoredMetric) and "components_" not in vars(back)
    assert np.array_equal(back.transform(X), est.transform(X))


def test_defaults_on_wine_are_itml():
    X, y = load_wine(return_X_y=True)
    a, b = ITML(random_state=0).fit(X, y), IPLR(random_state=0).fit(X, y)
    assert a.converged_ and b.converged_
    A, B = a.get_mahalanobis_matrix(), b.get_mahalanobis_matrix()
    assert np.linalg.norm(A - B) <= 1e-6 * np.linalg.norm(A)


def test_errors():
    X, y = _wide()
    pairs = np.array([[0, 1], [2, 3]])
    with pytest.raises(InvalidInputError, match="'class-means' needs the labels y"):
        IPLR(basis="class-means").fit(X, pairs=pairs)
    with pytest.raises(InvalidInputError, match="'kmeans' needs k"):
        IPLR(basis="kmeans").fit(X, y)
    with pytest.raises(InvalidInputError, match=r"k = 31 exceeds min\(n_samples, n_features\) = 30"):
        IPLR(k=31).fit(X, y)
    with pytest.raises(InvalidInputError, match="basis must be 'svd', 'kmeans', 'class-means' or an array R"):
        IPLR(basis="pca").fit(X, y)
    with pytest.raises(InvalidInputError, match="one row per feature"):
        IPLR(basis=np.eye(5)).fit(X, y)
    with pytest.raises(InvalidInputError, match="k must be None for a given basis"):
        IPLR(basis=np.eye(X.shape[1])[:, :3], k=3).fit(X, y)
    tight = PairConstraints([0], [1], [1], [1e-6])  # similar, bound below the outside part
    with pytest.raises(InfeasibleError, match="Enlarge or change the basis"):
        IPLR(k=1, gamma=None).fit(X, pairs=tight)
