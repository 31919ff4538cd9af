"""scikit-learn estimators ITML and KernelITML (cvxkml.estimators.logdet); their scikit-learn
compatibility is checked with every estimator in test_sklearn_compat.py."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.neighbors import KNeighborsClassifier

from cvxkml.errors import ConvergenceWarning, CvxkmlError
from cvxkml.estimators.logdet import ITML, KernelITML

SMALL = dict(n_similar=20, n_dissimilar=20)


# --------------------------------------------------------------------------- Wine
@pytest.fixture(scope="module")
def fitted(wine):
    Xtr, _, ytr, _ = wine
    return {"itml": ITML(random_state=0).fit(Xtr, ytr), "kernel": KernelITML(random_state=0).fit(Xtr, ytr)}


def _knn_acc(Atr, ytr, Ate, yte):
    return KNeighborsClassifier(n_neighbors=5).fit(Atr, ytr).score(Ate, yte)


def test_wine_knn_accuracy(wine, fitted):
    # Measured on this split (72 test points): Euclidean 0.9444 (68/72),
    # ITML 0.9722 (70/72), KernelITML (Gaussian, gamma = 1/13) 0.9861 (71/72).
    Xtr, Xte, ytr, yte = wine
    base = _knn_acc(Xtr, ytr, Xte, yte)
    itml, kern = fitted["itml"], fitted["kernel"]
    acc_itml = _knn_acc(itml.transform(Xtr), ytr, itml.transform(Xte), yte)
    acc_kern = _knn_acc(kern.transform(Xtr), ytr, kern.transform(Xte), yte)
    assert base == pytest.approx(68 / 72)
    assert acc_itml >= 70 / 72 - 1e-12 and acc_itml > base
    assert acc_kern >= 71 / 72 - 1e-12 and acc_kern > base
    assert itml.solution_.converged and kern.solution_.converged


def test_itml_get_metric_matches_transform_knn(wine, fitted):
    Xtr, Xte, ytr, _ = wine
    est = fitted["itml"]
    knn_metric = KNeighborsClassifier(n_neighbors=5, metric=est.get_metric()).fit(Xtr, ytr)
    knn_trans = KNeighborsClassifier(n_neighbors=5).fit(est.transform(Xtr), ytr)
    np.testing.assert_array_equal(knn_metric.predict(Xte), knn_trans.predict(est.transform(Xte)))
    f = pickle.loads(pickle.dumps(est.get_metric()))
    d = Xte[0] - Xte[1]
    assert f(Xte[0], Xte[1]) == pytest.approx(np.sqrt(d @ est.get_mahalanobis_matrix() @ d))


def test_kernel_transform_knn_equals_exact_learned_distances(wine, fitted):
    # transform drops the part of a new point orthogonal to the training span; that adds
    # a per-test-point constant to its squared distances, so neighbour rankings are exact.
    Xtr, Xte, ytr, _ = wine
    est = fitted["kernel"]
    D = np.sqrt(
        np.maximum(
            np.diag(est.learned_kernel(Xte))[:, None]
            + np.diag(est.learned_kernel(Xtr))[None, :]
            - 2 * est.learned_kernel(Xte, Xtr),
            0,
        )
    )
    exact = (
        KNeighborsClassifier(n_neighbors=5, metric="precomputed").fit(np.zeros((len(ytr), len(ytr))), ytr).predict(D)
    )
    trans = KNeighborsClassifier(n_neighbors=5).fit(est.transform(Xtr), ytr).predict(est.transform(Xte))
    np.testing.assert_array_equal(exact, trans)
    f = est.get_metric()
    assert f(Xte[0], Xtr[3]) == pytest.approx(D[0, 3], rel=1e-8)


def _pairs(A, B):
    return np.stack([A, B], axis=1)


def test_pair_distance_agrees_with_transform(wine, fitted):
    Xtr, Xte, _, _ = wine
    A, B = Xte[:30], Xte[30:60]
    itml = fitted["itml"]
    expect = np.linalg.norm(itml.transform(A) - itml.transform(B), axis=1)
    np.testing.assert_allclose(itml.pair_distance(_pairs(A, B)), expect, rtol=1e-10)
    np.testing.assert_allclose(itml.pair_score(_pairs(A, B)), -expect, rtol=1e-10)
    # Gaussian: training points lie in the training span, so transform is exact there.
    kern = fitted["kernel"]
    A, B = Xtr[:40], Xtr[40:80]
    expect = np.linalg.norm(kern.transform(A) - kern.transform(B), axis=1)
    np.testing.assert_allclose(kern.pair_distance(_pairs(A, B)), expect, rtol=1e-6, atol=1e-8)
    # ... and the embedding reproduces the learned training kernel (eq. 6, Theorem 1).
    np.testing.assert_allclose(kern.embedding_ @ kern.embedding_.T, kern.solution_.matrix, atol=1e-8)
    np.testing.assert_allclose(kern.learned_kernel(Xtr), kern.solution_.matrix, atol=1e-6)


def test_linear_equals_precomputed_and_itml(wine):
    Xtr, Xte, ytr, _ = wine
    Xtr, ytr = Xtr[:60], ytr[:60]
    lin = KernelITML(kernel="linear", standardize=False, random_state=0, tol=1e-6, **SMALL).fit(Xtr, ytr)
    pre = KernelITML(kernel="precomputed", random_state=0, tol=1e-6, **SMALL).fit(Xtr @ Xtr.T, ytr)
    Tl, Tp = lin.transform(Xte), pre.transform(Xte @ Xtr.T)
    assert pre.n_features_in_ == 60
    np.testing.assert_allclose(Tl @ Tl.T, Tp @ Tp.T, atol=1e-8)  # same Gram (coordinates
    A, B = Xte[:30], Xte[30:60]  # are up to a rotation)
    dl = np.linalg.norm(lin.transform(A) - lin.transform(B), axis=1)
    dp = np.linalg.norm(pre.transform(A @ Xtr.T) - pre.transform(B @ Xtr.T), axis=1)
    np.testing.assert_allclose(dl, dp, atol=1e-8)
    # 60 > 13 points span R^13, so transform is exact and equals pair_distance; and the
    # linear-kernel problem is ITML with W0 = I on the same constraints (Jain et al. §4).
    np.testing.assert_allclose(lin.pair_distance(_pairs(A, B)), dl, atol=1e-8)
    itml = ITML(random_state=0, standardize=False, tol=1e-6, **SMALL).fit(Xtr, ytr)
    np.testing.assert_allclose(itml.pair_distance(_pairs(A, B)), dl, rtol=1e-5)


def test_prior_covariance_equals_explicit_prior(wine):
    Xtr, Xte, ytr, _ = wine
    cov = np.cov(Xtr, rowvar=False)
    W0 = np.linalg.inv(cov + 1e-6 * np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0]))
    a = ITML(prior="covariance", random_state=1, **SMALL).fit(Xtr, ytr)
    b = ITML(prior=0.5 * (W0 + W0.T), random_state=1, **SMALL).fit(Xtr, ytr)
    np.testing.assert_allclose(a.get_mahalanobis_matrix(), b.get_mahalanobis_matrix(), rtol=1e-8, atol=1e-10)


def test_get_set_params_round_trip():
    for est in (
        ITML(gamma=None, scheme="itml", n_constraints=50, prior="covariance"),
        KernelITML(kernel="poly", kernel_params={"degree": 3}, ridge=0.1),
    ):
        params = est.get_params()
        other = type(est)().set_params(**params)
        assert other.get_params() == params
        assert clone(est).get_params() == params
    est = KernelITML().set_params(kernel="rbf", kernel_params={"sigma": 2.0}, tol=1e-4)
    assert (est.kernel, est.kernel_params, est.tol) == ("rbf", {"sigma": 2.0}, 1e-4)


def test_convergence_warning_propagates(wine):
    Xtr, _, ytr, _ = wine
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        est = ITML(max_sweeps=1, random_state=0).fit(Xtr, ytr)
    assert not est.solution_.converged and est.n_iter_ == 1


# --------------------------------------------------------------------------- errors
X8 = np.random.default_rng(0).normal(size=(8, 3))
Y8 = np.array([0, 0, 0, 0, 1, 1, 1, 1])


@pytest.mark.parametrize("make", [ITML, KernelITML, lambda: KernelITML(kernel="precomputed")])
def test_fit_input_errors(make):
    K = X8 @ X8.T if getattr(make(), "kernel", None) == "precomputed" else X8
    with pytest.raises(CvxkmlError, match="at least 2 classes.*1 class"):
        make().fit(K, np.zeros(8))
    bad = K.copy()
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        make().fit(bad, Y8)
    bad[1, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        make().fit(bad, Y8)
    with pytest.raises(ValueError, match="requires y to be passed"):
        make().fit(K, None)
    with pytest.raises(ValueError, match="1 sample"):
        make().fit(K[:1], Y8[:1])


@pytest.mark.parametrize(
    "est, match",
    [
        (ITML(scheme="foo"), "scheme must be 'jain' or 'itml'"),
        (ITML(gamma=-1.0), "gamma must be a finite positive number"),
        (ITML(percentiles=(95, 5)), "percentiles must satisfy"),
        (ITML(max_sweeps=0), "max_sweeps must be None or a positive integer"),
        (ITML(n_similar=0, n_dissimilar=0), "both 0"),
        (ITML(prior="whiten"), "prior must be 'identity', 'covariance'"),
        (ITML(prior=np.eye(2)), "prior must be 3 × 3"),
        (KernelITML(kernel="laplace"), "kernel must be one of"),
        (KernelITML(kernel="linear", kernel_params={"gamma": 1.0}), "Unknown kernel_params"),
        (KernelITML(ridge=-1.0), "ridge must be a finite non-negative number"),
    ],
)
def test_parameter_errors(est, match):
    with pytest.raises(CvxkmlError, match=match):
        est.fit(X8, Y8)


def test_pair_distance_shape_error():
    est = ITML(**SMALL).fit(X8, Y8)
    with pytest.raises(CvxkmlError, match=r"pairs must have shape \(n_pairs, 2, 3\)"):
        est.pair_distance(np.zeros((4, 3, 3)))


def test_random_state_kinds_and_determinism():
    a = ITML(random_state=np.random.RandomState(3), **SMALL).fit(X8, Y8)
    b = ITML(random_state=np.random.RandomState(3), **SMALL).fit(X8, Y8)
    c = ITML(random_state=np.random.default_rng(3), **SMALL).fit(X8, Y8)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert c.components_.shape == (3, 3)
