"""The shared estimator base (cvxkml/estimators/_base.py): one declared constraint per
parameter, the precomputed-kernel guard, and the side information every estimator learns
from — labels, user-given pairs (``fit(X, pairs=...)``, ``pairs_``) or LMNN's target
neighbours (``targets``, ``targets_``)."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from cvxkml.errors import ConvergenceWarning, CvxkmlError, InvalidInputError, NotPSDError
from cvxkml.estimators import (
    ESTIMATORS,
    ITML,
    LMNN,
    LMNNMKL,
    KCRClassifier,
    KernelITML,
    KernelPOLA,
    LowRankKernelITML,
    SemiSupervisedKernelMetric,
    TraceSSIKDR,
    VonNeumannKernelLearner,
)
from cvxkml.kernels import Kernel
from cvxkml.sideinfo import PairConstraints

rng = np.random.default_rng(0)
Y = np.repeat([0, 1, 2], 10)
X = np.array([[2.0, 0, 0, 0], [0, 2.0, 0, 0], [0, 0, 2.0, 0]])[Y] + rng.normal(scale=0.7, size=(30, 4))
FEW = dict(n_similar=6, n_dissimilar=6, random_state=0)

#: the estimators that learn from pair constraints, each in a small configuration
PAIR_LEARNERS = [
    ITML(**FEW),
    ITML(prior="covariance", scheme="itml", n_constraints=40, random_state=1),
    KernelITML(**FEW),
    KernelITML(kernel="poly", ridge=0.1, **FEW),
    LowRankKernelITML(rank=8, **FEW),
    LowRankKernelITML(rank=6, method="nystroem", **FEW),
    VonNeumannKernelLearner(**FEW),
    VonNeumannKernelLearner(divergence="jain", tol=1e-4, **FEW),
    TraceSSIKDR(tol=1e-5, **FEW),
    KernelPOLA(**FEW),
    KernelPOLA(kernel="linear", ridge=1.0, **FEW),
]


def _ids(est):
    return type(est).__name__


def _fit(est, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return clone(est).fit(*args, **kw)


# --------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_parameter_has_one_declared_constraint(cls):
    assert set(cls._parameter_constraints) == set(cls().get_params())


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_init_assigns_each_parameter_to_its_attribute_and_nothing_else(cls):
    """scikit-learn's rule: ``__init__`` keeps every argument unchanged (the same object) as
    the attribute of the same name, and sets no other attribute."""
    names = cls._get_param_names()
    values = {name: object() for name in names}
    est = cls(**values)
    assert set(vars(est)) == set(names)
    assert all(getattr(est, name) is values[name] for name in names)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_parameter_is_validated_at_fit(cls):
    """A value no parameter accepts raises the typed error naming the parameter, before
    any data is looked at."""
    for name in cls().get_params():
        with pytest.raises(InvalidInputError, match=name):
            cls().set_params(**{name: "bogus"}).fit(X, Y)


# --------------------------------------------------------------------------- precomputed
PRECOMPUTED = [c for c in ESTIMATORS if "precomputed" in getattr(c._parameter_constraints.get("kernel"), "choices", ())]


@pytest.mark.parametrize("cls", PRECOMPUTED, ids=lambda c: c.__name__)
def test_precomputed_kernel(cls):
    """fit takes the square PSD training kernel matrix; the methods that need the kernel
    between new points say so."""
    X8, Y8 = X[::4][:8], np.array([0, 0, 0, 0, 1, 1, 1, 1])
    K = X8 @ X8.T
    pre = cls(kernel="precomputed")
    with pytest.raises(CvxkmlError, match="square training kernel matrix"):
        clone(pre).fit(X8, Y8)
    with pytest.raises(NotPSDError, match="positive semidefinite"):
        clone(pre).fit(K - 5.0, Y8)
    small = {**FEW, "k": 2}
    est = _fit(pre.set_params(**{k: v for k, v in small.items() if k in pre.get_params()}), K, Y8)
    assert est.__sklearn_tags__().input_tags.pairwise and not cls().__sklearn_tags__().input_tags.pairwise
    assert est.transform(K).shape[0] == 8
    calls = [est.get_metric, lambda: est.pair_distance(np.zeros((2, 2, 8)))]
    if hasattr(est, "learned_kernel"):
        calls.append(lambda: est.learned_kernel(K))
    for call in calls:
        with pytest.raises(CvxkmlError, match="precomputed"):
            call()
    with pytest.raises(ValueError, match=f"X has 4 features, but {cls.__name__} is expecting 8"):
        est.transform(X8)


# --------------------------------------------------------------------------- pairs
@pytest.mark.parametrize("est", PAIR_LEARNERS, ids=_ids)
def test_fit_on_pairs_equals_fit_on_the_labels_pairs(est):
    """pairs_ of a fit on labels, passed back as pairs (as PairConstraints, or as rows
    (i, j, ±1) with the bounds recomputed), gives the same model."""
    a = _fit(est, X, Y)
    pc = a.pairs_
    assert isinstance(pc, PairConstraints) and len(pc) > 0
    assert np.all((Y[pc.i] == Y[pc.j]) == (pc.y > 0))
    b = _fit(est, X, pairs=pc)
    c = _fit(est, X, pairs=np.column_stack([pc.i, pc.j, pc.y.astype(int)]))
    for other in (b, c):
        for f in ("i", "j", "y", "bound"):
            np.testing.assert_array_equal(getattr(other.pairs_, f), getattr(pc, f))
        np.testing.assert_allclose(other.transform(X), a.transform(X), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(other.solution_.matrix, a.solution_.matrix, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("est", [ITML(**FEW), KernelPOLA(**FEW)], ids=_ids)
def test_similar_pairs_only(est):
    """An (m, 2) index array: similar pairs, with the estimator's bounds."""
    sim = np.array([[0, 1], [2, 3], [10, 11], [20, 25]])
    fitted = _fit(est, X, pairs=sim)
    np.testing.assert_array_equal(fitted.pairs_.y, 1.0)
    np.testing.assert_array_equal(np.column_stack([fitted.pairs_.i, fitted.pairs_.j]), sim)


@pytest.mark.parametrize("est", PAIR_LEARNERS[::2] + [SemiSupervisedKernelMetric(n_landmarks=None)], ids=_ids)
@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(y=Y, pairs=[[0, 1, 1]]), "not both"),
        (dict(), "requires y to be passed"),
        (dict(pairs=[[0, 30, 1]]), "out of range"),
        (dict(pairs=[[-1, 3, 1]]), "out of range"),
        (dict(pairs=[[4, 4, 1]]), "itself|i = j"),
        (dict(pairs=[[0, 1, 0]]), r"\+1 \(similar\) or -1"),
        (dict(pairs=[[0.5, 1, 1]]), "integer"),
        (dict(pairs=np.zeros((3, 4), dtype=int)), r"shape \(3, 4\)"),
        (dict(pairs=np.zeros((0, 3), dtype=int)), "empty"),
        (dict(pairs="0 1"), "pairs must be"),
        (dict(pairs=PairConstraints([0], [31], [1], 1.0)), "out of range"),
    ],
)
def test_bad_pairs_raise_typed_errors(est, kw, match):
    with pytest.raises(InvalidInputError, match=match):
        clone(est).fit(X, **kw)


def test_yeung_pairs():
    """Yeung et al. learn from similarity pairs only: rows (i, j, -1) are dropped with a
    warning; with every point a landmark, a refit on pairs_ equals the fit on labels."""
    est = SemiSupervisedKernelMetric(n_landmarks=None, n_neighbors=3, n_similar=15, random_state=0)
    a = clone(est).fit(X, Y)
    assert a.pairs_.shape == (15, 2) and np.all(Y[a.pairs_[:, 0]] == Y[a.pairs_[:, 1]])
    b = clone(est).fit(X, pairs=a.pairs_)
    np.testing.assert_allclose(b.transform(X), a.transform(X), rtol=1e-12, atol=1e-12)
    rows = np.column_stack([a.pairs_, np.ones(15, dtype=int)])
    with pytest.warns(UserWarning, match="1 dissimilar"):
        c = clone(est).fit(X, pairs=np.vstack([rows, [0, 10, -1]]))
    np.testing.assert_array_equal(c.pairs_, a.pairs_)


# --------------------------------------------------------------------------- LMNN targets
@pytest.mark.parametrize(
    "est",
    [
        LMNN(k=2, max_iter=200),
        LMNN(k=2, kernel="gaussian", max_iter=50),
        LMNNMKL(k=2, kernels=[Kernel("linear"), Kernel("gaussian", {"sigma": 1.0})], max_outer=2, max_iter=50),
        LMNNMKL(variant="NR", k=2, kernels="nr", max_iter=50),
    ],
    ids=_ids,
)
def test_lmnn_targets_round_trip(est):
    a = _fit(est, X, Y)
    t = a.targets_
    assert t.shape == (60, 2) and np.all(Y[t[:, 0]] == Y[t[:, 1]]) and np.all(t[:, 0] != t[:, 1])
    b = _fit(est, X, Y, targets=t)
    np.testing.assert_array_equal(b.targets_, t)
    np.testing.assert_allclose(b.components_, a.components_, rtol=1e-12, atol=1e-12)
    # fewer targets: one per point, the first of each
    c = _fit(est, X, Y, targets=t[::2])
    assert c.targets_.shape == (30, 2)


@pytest.mark.parametrize(
    "targets, match",
    [
        ([[0, 15]], "y_i = y_j"),
        ([[0, 0]], "i ≠ j"),
        ([[0, 30]], "out of range"),
        (np.zeros((0, 2), dtype=int), "non-empty"),
        ([[0, 1, 2]], r"shape \(m, 2\)"),
    ],
)
def test_lmnn_bad_targets(targets, match):
    with pytest.raises(InvalidInputError, match=match):
        LMNN(k=2).fit(X, Y, targets=targets)


def test_kcr_learns_from_labels_only():
    """KCR's rule votes with the labels of the training points (eq. 2): no pairs."""
    with pytest.raises(TypeError):
        KCRClassifier().fit(X, pairs=[[0, 1, 1]])
