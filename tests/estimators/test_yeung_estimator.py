"""The scikit-learn estimator SemiSupervisedKernelMetric (Yeung et al. 2007) and the
random similarity sets."""

import pickle

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from cvxkml.baselines.separability import separability
from cvxkml.errors import InvalidInputError
from cvxkml.estimators.yeung import SemiSupervisedKernelMetric, random_similar_pairs
from cvxkml.kernels import Kernel
from cvxkml.sideinfo import PairConstraints
from reference.reproduce.yeung import make_xor


@pytest.fixture(scope="module")
def xor():
    Xtr, ytr = make_xor(400, random_state=0)
    Xte, yte = make_xor(200, random_state=1)
    return Xtr, ytr, Xte, yte


@pytest.fixture(scope="module")
def fitted(xor):
    Xtr, ytr, _, _ = xor
    return SemiSupervisedKernelMetric(kernel_params={"sigma": 2.0}, n_landmarks=100, n_similar=50, random_state=0).fit(
        Xtr, ytr
    )


def test_xor_separability(xor, fitted):
    """On XOR the learned metric separates the classes far better than the input space
    and the RBF feature space, on training and on new points.  Measured (this seed,
    train / new): input 1.207 / 1.207, RBF (sigma 2) 1.293 / 1.294, learned 2.033 / 2.052;
    5-NN accuracy on the new points 1.0 (as in the input space: XOR is easy for k-NN)."""
    Xtr, ytr, Xte, yte = xor
    k = Kernel("gaussian", {"sigma": 2.0})
    J_in, J_rbf = separability(Xtr, ytr), separability(Xtr, ytr, k)
    J_tr, J_te = separability(fitted.embedding_, ytr), separability(fitted.transform(Xte), yte)
    assert J_in < 1.25 and J_rbf < 1.35
    assert J_tr > 1.9 and J_te > 1.9
    acc = KNeighborsClassifier(5).fit(fitted.embedding_, ytr).score(fitted.transform(Xte), yte)
    assert acc >= 0.95


def test_attributes_and_transform(xor, fitted):
    Xtr, ytr, Xte, _ = xor
    est = fitted
    m, q = est.landmark_indices_.size, est.beta_.size
    assert m == 100 and est.pairs_.shape == (50, 2)
    assert set(np.unique(est.pairs_)) <= set(est.landmark_indices_)
    assert np.all(ytr[est.pairs_[:, 0]] == ytr[est.pairs_[:, 1]])
    assert est.eigenvectors_.shape == (m, q) and est.eigenvalues_.shape == (q,)
    np.testing.assert_allclose(est.transform(Xtr), est.embedding_, atol=1e-10)
    np.testing.assert_allclose(np.asarray(est.embedding_weights_.sum(axis=1)).ravel(), 1.0, atol=1e-12)
    assert est.solution_.info["beta"] == pytest.approx(est.beta_, rel=1e-12)
    assert est.n_iter_ == 3 and len(est.n_regularized_) == 3
    assert est.get_feature_names_out().shape == (q,)
    # get_metric / pair_distance / learned_kernel agree with transform
    f = est.get_metric()
    Z = est.transform(Xte[:6])
    assert f(Xte[0], Xte[1]) == pytest.approx(np.linalg.norm(Z[0] - Z[1]), rel=1e-10)
    pd = est.pair_distance(np.stack([Xte[:3], Xte[3:6]], axis=1))
    np.testing.assert_allclose(pd, np.linalg.norm(Z[:3] - Z[3:6], axis=1), rtol=1e-10)
    np.testing.assert_allclose(est.learned_kernel(Xte[:6]), Z @ Z.T, atol=1e-12)
    knn = KNeighborsClassifier(3, metric=f, algorithm="brute").fit(Xtr[:60], ytr[:60])
    knn2 = KNeighborsClassifier(3).fit(est.transform(Xtr[:60]), ytr[:60])
    np.testing.assert_array_equal(knn.predict(Xte[:20]), knn2.predict(est.transform(Xte[:20])))
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_allclose(est2.transform(Xte[:10]), est.transform(Xte[:10]), atol=0)
    f2 = pickle.loads(pickle.dumps(f))
    assert f2(Xte[0], Xte[1]) == f(Xte[0], Xte[1])


def test_fit_from_pairs(xor):
    Xtr, ytr, _, _ = xor
    i, j = random_similar_pairs(ytr, 30, 0)
    kw = dict(kernel_params={"sigma": 2.0}, n_landmarks=80, random_state=0)
    a = SemiSupervisedKernelMetric(**kw).fit(Xtr, pairs=np.column_stack([i, j]))
    pc = PairConstraints(np.r_[i, 0], np.r_[j, 2], np.r_[np.ones(30), -1.0], 1.0)
    with pytest.warns(UserWarning, match="1 dissimilar"):
        b = SemiSupervisedKernelMetric(**kw).fit(Xtr, pairs=pc)
    np.testing.assert_allclose(a.embedding_, b.embedding_, atol=1e-12)
    # full method: every point a landmark
    full = SemiSupervisedKernelMetric(kernel_params={"sigma": 2.0}, n_landmarks=None).fit(
        Xtr, pairs=np.column_stack([i, j])
    )
    assert full.landmark_indices_.size == 400
    np.testing.assert_array_equal(full.embedding_weights_.toarray(), np.eye(400))


def test_estimator_errors(xor):
    X, y, _, _ = xor
    with pytest.raises(InvalidInputError, match="requires y to be passed"):
        SemiSupervisedKernelMetric().fit(X)
    with pytest.raises(InvalidInputError, match="not both"):
        SemiSupervisedKernelMetric().fit(X, y, pairs=[[0, 1]])
    with pytest.raises(InvalidInputError, match="n_neighbors = 20 exceeds n_landmarks = 10"):
        SemiSupervisedKernelMetric(n_landmarks=10, n_neighbors=20).fit(X, y)
    with pytest.raises(InvalidInputError, match="every point of S must be a landmark"):
        SemiSupervisedKernelMetric(n_landmarks=20, n_neighbors=5).fit(X, y)
    with pytest.raises(InvalidInputError, match="epsilon"):
        SemiSupervisedKernelMetric(epsilon=0).fit(X, y)
    with pytest.raises(InvalidInputError, match="n_iter"):
        SemiSupervisedKernelMetric(n_iter=0).fit(X, y)
    with pytest.raises(InvalidInputError, match="precomputed"):
        SemiSupervisedKernelMetric(kernel="precomputed").fit(X, y)
    with pytest.raises(InvalidInputError, match="Unknown kernel_params"):
        SemiSupervisedKernelMetric(kernel_params={"degree": 2}).fit(X, y)
    with pytest.raises(InvalidInputError, match="out of range"):
        SemiSupervisedKernelMetric().fit(X, pairs=[[0, 400]])
    with pytest.raises(InvalidInputError, match="empty"):
        SemiSupervisedKernelMetric().fit(X, pairs=np.zeros((0, 2), dtype=int))
    with pytest.raises(InvalidInputError, match="No two points share a label"):
        SemiSupervisedKernelMetric().fit(X[:5], np.arange(5))
    with pytest.raises(ValueError, match="NaN"):
        Xn = X.copy()
        Xn[0, 0] = np.nan
        SemiSupervisedKernelMetric().fit(Xn, y)


def test_random_similar_pairs():
    y = np.repeat([0, 1, 2], [3, 4, 1])
    i, j = random_similar_pairs(y, 100, 0)  # fewer pairs exist: all 3 + 6
    assert i.size == 9 and np.all(i < j) and np.all(y[i] == y[j])
    assert len(set(zip(i, j))) == 9
    y = np.random.default_rng(0).integers(0, 3, 5000)
    i, j = random_similar_pairs(y, 50, 1)  # rejection path
    assert i.size == 50 and np.all(i < j) and np.all(y[i] == y[j]) and len(set(zip(i, j))) == 50
    i2, j2 = random_similar_pairs(y, 50, 1)
    np.testing.assert_array_equal(i, i2)
    # uniform over the within-class pairs: each of the 6 pairs of a 4-point class, drawn
    # one at a time 6000 times, appears ≈ 1000 times
    y = np.array([0, 0, 0, 0, 1])
    counts = {}
    rng = np.random.default_rng(5)
    for _ in range(6000):
        a, b = random_similar_pairs(y, 1, rng)
        counts[(a[0], b[0])] = counts.get((a[0], b[0]), 0) + 1
    assert len(counts) == 6 and all(850 < c < 1150 for c in counts.values())
    with pytest.raises(InvalidInputError, match="positive integer"):
        random_similar_pairs(y, 0)


@pytest.mark.parametrize("param,value", [("n_iter", 10**20), ("n_iter", 1001), ("n_similar", 10**20)])
def test_huge_integer_parameters_are_refused(param, value):
    """Fuzz seed 9604: n_iter = 10**20 passed the check, and the fit iterated until its
    history filled the memory (the process was killed)."""
    from cvxkml.errors import InvalidInputError
    from cvxkml.estimators.yeung import SemiSupervisedKernelMetric

    X = np.random.default_rng(0).normal(size=(8, 3))
    with pytest.raises(InvalidInputError, match=f"{param} must be at most"):
        SemiSupervisedKernelMetric(n_neighbors=2, **{param: value}).fit(X, np.array([0, 1] * 4))
