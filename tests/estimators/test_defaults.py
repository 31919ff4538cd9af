"""The defaults work: every estimator with its default parameters, fitted on the *raw* Wine
features, is at least as accurate as the Euclidean k-NN baseline on standardized features
(scikit-learn's ``KNeighborsClassifier()``, k = 5), on one stratified 60/40 split.

The learned metrics are scored by 1-NN on ``transform`` (KCRClassifier by its own
``predict``).  The full table (Wine, breast cancer, 500 digits; raw and standardized;
3-fold CV) is ``python -m benchmarks bench estimators`` (reference/estimators-bench.md); these tests keep
one small case of it in the default run.
"""

import numpy as np
import pytest
from estimator_cases import DEFAULTS
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from cvxkml.estimators import KCRClassifier, KernelITML
from cvxkml.estimators._maps import median_heuristic_gamma, standardization


def _split():
    X, y = load_wine(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)
    sc = StandardScaler().fit(Xtr)
    base = KNeighborsClassifier().fit(sc.transform(Xtr), ytr).score(sc.transform(Xte), yte)
    return Xtr, Xte, ytr, yte, base


@pytest.fixture(scope="module")
def split():
    out = _split()
    assert out[-1] == pytest.approx(68 / 72)
    return out


def _accuracy(est, Xtr, Xte, ytr, yte):
    if isinstance(est, KCRClassifier):
        return est.score(Xte, yte)
    return KNeighborsClassifier(1).fit(est.transform(Xtr), ytr).score(est.transform(Xte), yte)


@pytest.mark.parametrize("cls", list(DEFAULTS), ids=lambda c: c.__name__)
def test_default_beats_the_euclidean_knn_baseline_on_raw_wine(cls, split):
    Xtr, Xte, ytr, yte, base = split
    est = cls(**DEFAULTS[cls]).fit(Xtr, ytr)
    assert est.converged_, est.solution_
    assert _accuracy(est, Xtr, Xte, ytr, yte) >= base


def test_raw_and_standardized_features_give_the_same_metric(split):
    """standardize="auto" with the median heuristic: the fit only sees the standardized
    features, so raw and (already) standardized input give the same learned distances."""
    Xtr, Xte, ytr, _, _ = split
    sc = StandardScaler().fit(Xtr)
    a = KernelITML(random_state=0).fit(Xtr, ytr)
    b = KernelITML(random_state=0).fit(sc.transform(Xtr), ytr)
    pairs_a = np.stack([Xte[:20], Xte[20:40]], axis=1)
    pairs_b = np.stack([sc.transform(Xte[:20]), sc.transform(Xte[20:40])], axis=1)
    np.testing.assert_allclose(a.pair_distance(pairs_a), b.pair_distance(pairs_b), rtol=1e-6)
    assert a.kernel_.params["gamma"] == pytest.approx(b.kernel_.params["gamma"], rel=1e-12)


def test_median_heuristic_and_standardization_rules():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((40, 3))
    d = ((Z[:, None] - Z[None]) ** 2).sum(-1)[np.triu_indices(40, 1)]
    assert median_heuristic_gamma(Z) == pytest.approx(1.0 / np.median(d), rel=1e-12)
    assert median_heuristic_gamma(np.ones((5, 2))) == 1.0  # no positive distance
    big = rng.standard_normal((1500, 2))  # a fixed-seed sample
    assert median_heuristic_gamma(big) == median_heuristic_gamma(big.copy())
    X = np.column_stack([rng.normal(5, 3, 50), np.full(50, 7.0)])
    mean, scale = standardization(X)
    np.testing.assert_allclose(mean, X.mean(0))
    assert scale[0] == pytest.approx(X[:, 0].std()) and scale[1] == 1.0  # a constant feature: 1
    # the rule is used only when the kernel's scale is not given
    est = KernelITML(kernel_params={"gamma": 0.5}, n_similar=5, n_dissimilar=5, random_state=0)
    est.fit(X[:, :1] * [[1.0]], np.arange(50) % 2)
    assert est.feature_scale_ is None and est.kernel_.params == {"gamma": 0.5}
    est = KCRClassifier(nu=0.5, tol=1e-2).fit(X, np.arange(50) % 2)
    assert est.feature_scale_ is None and est.kernel_.params == {"gamma": 0.5}
    est = KCRClassifier(tol=1e-2).fit(X, np.arange(50) % 2)
    assert est.feature_scale_ is not None and est.kernel_.kernel.params["gamma"] == pytest.approx(
        median_heuristic_gamma((X - mean) / scale)
    )
