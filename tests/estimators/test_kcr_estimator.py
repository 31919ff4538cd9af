"""KCRClassifier (cvxkml.estimators.kcr): scikit-learn conventions, the rule of eq. 2
with its tie rule, the embedding, and bad input."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from cvxkml.errors import CvxkmlError, InvalidInputError
from cvxkml.estimators.kcr import KCRClassifier
from cvxkml.kernels import gaussian_kernel


def _blobs(seed=0, per_class=8, n_classes=3, spread=0.3, sep=4.0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), per_class)
    centres = sep * np.eye(n_classes, 3)
    return centres[y] + spread * rng.normal(size=(y.size, 3)), y


@pytest.fixture(scope="module")
def fitted():
    X, y = _blobs()
    return KCRClassifier(nu=0.2, lam=1.0, tol=1e-3).fit(X, y), X, y


def test_planted_separable_problem_zero_training_error(fitted):
    est, X, y = fitted
    assert est.solution_.converged
    assert np.all(est.predict(X) == y)
    Xn, yn = _blobs(seed=1)
    assert est.score(Xn, yn) == 1.0
    S = est.Sigma_
    assert np.linalg.eigvalsh(S)[0] >= -1e-9 * np.linalg.norm(S, 2) and abs(S.sum()) <= 1e-9 * np.linalg.norm(S, 2)


def test_large_ball_is_majority_vote(fitted):
    """Σ = H (identity-like on 1⊥) and h̃ huge: every training point is inside every
    ball, so the rule is the majority vote of the training labels."""
    est, X, y = fitted
    X2 = np.vstack([X, X[:2] + 0.01])
    y2 = np.r_[y, y[:2]]  # class 0 now has the majority (10 vs 8 vs 8)
    big = clone(est).set_params(tie_break="first").fit(X2, y2)
    n = y2.size
    big.embedding_ = np.eye(n) - np.ones((n, n)) / n
    big.train_embedding_ = big._K_train @ big.embedding_
    big.h_ = 1e12
    Xq = np.random.default_rng(3).normal(size=(7, 3)) * 5
    assert np.all(big.predict(Xq) == 0)
    assert np.allclose(big.predict_proba(Xq), [10 / 26, 8 / 26, 8 / 26])


def test_tie_rules_and_proba_consistency(fitted):
    est, X, y = fitted
    e = clone(est).fit(X, y)
    # a 1-D hand-made embedding: training points at 0 (class 0), 1 (class 1), 10 (class 2)
    pos = np.array([0.0, 1.0, 10.0])[y]
    e.train_embedding_ = pos[:, None]
    e._sq_distances = lambda Xq: (Xq[:, :1] - pos[None, :]) ** 2
    e.h_ = 0.36  # radius 0.6
    Xq = np.array(
        [
            [0.5, 0, 0],  # both classes 0 and 1 inside → tie; nearest: class 0 (first index)
            [0.6, 0, 0],  # tie 8–8, nearest is class 1 at 0.4
            [5.0, 0, 0],  # empty ball → 1-NN: class 1 (distance 4)
            [9.9, 0, 0],
        ]
    )  # only class 2 inside
    e.tie_break = "nearest"
    assert list(e.predict(Xq)) == [0, 1, 1, 2]
    P = e.predict_proba(Xq)
    assert np.allclose(P.sum(axis=1), 1.0) and list(P.argmax(axis=1)) == [0, 1, 1, 2]
    assert np.allclose(P[2], [0, 1, 0]) and np.allclose(P[3], [0, 0, 1])
    e.tie_break = "first"
    assert list(e.predict(Xq)) == [0, 0, 0, 2]
    P = e.predict_proba(Xq)
    assert list(P.argmax(axis=1)) == [0, 0, 0, 2] and np.allclose(P[2], 1 / 3)


def test_transform_distances_are_the_learned_ones(fitted):
    est, X, y = fitted
    Xq = _blobs(seed=5)[0][:6]
    Z, T = est.transform(Xq), est.transform(X)
    D = ((Z[:, None] - T[None]) ** 2).sum(-1)
    assert np.allclose(D, est.learned_sq_distances(Xq), atol=1e-8 * D.max())
    # ρ²(x, X_i) = (k_x − k_i)ᵀ Σ (k_x − k_i) with the stored Σ
    Kx = gaussian_kernel(Xq, X, gamma=0.2)
    K = gaussian_kernel(X, gamma=0.2)
    diff = Kx[0][None, :] - K
    direct = np.einsum("ij,jk,ik->i", diff, est.Sigma_, diff)
    assert np.allclose(direct, D[0], atol=1e-8 * D.max())
    d1 = clone(est).set_params(n_components=1).fit(X, y)
    assert d1.transform(Xq).shape == (6, 1) and d1.get_feature_names_out().shape == (1,)


def test_precomputed_kernel_gives_the_same_rule(fitted):
    est, X, y = fitted
    K = gaussian_kernel(X, gamma=0.2)
    pre = KCRClassifier(kernel="precomputed", lam=1.0, tol=1e-3).fit(K, y)
    Xq = _blobs(seed=6)[0]
    assert np.array_equal(pre.predict(gaussian_kernel(Xq, X, gamma=0.2)), est.predict(Xq))
    assert pre.__sklearn_tags__().input_tags.pairwise


def test_pickle_roundtrip(fitted):
    est, X, _ = fitted
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.predict(X), est.predict(X))


@pytest.mark.parametrize(
    "make_xy, kwargs, match",
    [
        (lambda X, y: (X, np.zeros_like(y)), {}, "at least 2 classes"),
        (lambda X, y: (X, np.r_[y[:-1], 9]), {}, "at least 2 members"),
        (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 4, np.nan, X), y), {}, "NaN"),
        (lambda X, y: (X, y), {"lam": 0.0}, "lam must be a finite positive"),
        (lambda X, y: (X, y), {"lam": -2.0}, "lam must be a finite positive"),
        (lambda X, y: (X, y), {"nu": 0.0}, "nu must be a finite positive"),
        (lambda X, y: (X, y), {"kernel": "laplace"}, "kernel must be one of"),
        (lambda X, y: (X, y), {"tie_break": "random"}, "tie_break must be one of"),
        (lambda X, y: (X, y), {"max_iter": 0}, "max_iter must be a positive integer"),
        (lambda X, y: (X, y), {"n_components": 0}, "n_components must be None or a positive"),
    ],
)
def test_bad_input(make_xy, kwargs, match):
    X, y = _blobs()
    Xb, yb = make_xy(X, y)
    with pytest.raises(ValueError, match=match) as info:
        KCRClassifier(**kwargs).fit(Xb, yb)
    assert isinstance(info.value, (CvxkmlError, ValueError))


def test_errors_are_typed():
    X, y = _blobs()
    with pytest.raises(InvalidInputError):
        KCRClassifier().fit(X, np.zeros_like(y))
