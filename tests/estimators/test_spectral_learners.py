"""SpectralKernelLearner and SpectralMetricLearner: any Regularizer (a
user subclass included), constraints from labels or given pairs / triplets, slack, hinge or
hard; save / load without pickle, a user regularizer resolved only when registered."""

import io
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine

from cvxkml.declare.regularizers import Frobenius, LogDet, Regularizer, TraceNorm, VonNeumann
from cvxkml.errors import EstimatorFileError, InvalidInputError
from cvxkml.estimators import ITML, KernelITML, SpectralKernelLearner, SpectralMetricLearner, register_regularizer

FEW = dict(n_similar=15, n_dissimilar=15, random_state=0)


class SymmetricLogDet(Regularizer):
    """A user regularizer that is not a built-in: f_s(x) = x − log x − 1 + c(x + 1/x − 2), α = 1."""

    implies_psd = True
    alpha = 1.0

    def __init__(self, c=0.5):
        self.c, self.name = c, "SymmetricLogDet"

    def f_s(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(
                x > 0, x - np.log(np.where(x > 0, x, 1)) - 1 + self.c * (x + 1 / np.where(x > 0, x, 1) - 2), np.inf
            )

    def _x(self, mu):  # root x > 0 of f_s'(x) = 1 − 1/x + c(1 − 1/x²) = μ
        mu = np.asarray(mu, dtype=float)
        a = 1 + self.c - mu  # a x² − x − c = 0 (μ < 1 + c)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, (1 + np.sqrt(1 + 4 * a * self.c)) / (2 * np.where(a > 0, a, 1)), np.inf)

    def conj_s(self, mu):
        x = self._x(mu)
        return x * mu - self.f_s(x)

    def conj_grad_s(self, mu):
        return self._x(mu)

    def conj_hess_s(self, mu):
        x = self._x(mu)
        return 1.0 / (1 / x**2 + 2 * self.c / x**3)

    def cvx(self, X):
        import cvxpy as cp

        n = X.shape[0]
        return (1 + self.c) * cp.trace(X) - cp.log_det(X) - n + self.c * (cp.tr_inv(X) - 2 * n)


class Unregistered(SymmetricLogDet):
    pass


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))
    return X[idx][:60], y[idx][:60], X[idx][60:100]


def _fit(est, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args, **kw)


def test_defaults_are_the_logdet_problems(wine):
    """Default regularizer LogDet with its slack: the same problem as KernelITML / ITML, so
    the same learned maps (to the solvers' tolerance)."""
    X, y, Xte = wine
    a = _fit(SpectralKernelLearner(tol=1e-9, **FEW), X, y)
    b = _fit(KernelITML(tol=1e-9, **FEW), X, y)
    assert a.converged_ and a.alpha_ == 1.0
    np.testing.assert_allclose(a.learned_kernel(Xte), b.learned_kernel(Xte), rtol=1e-5, atol=1e-6)
    m = _fit(SpectralMetricLearner(tol=1e-9, **FEW), X, y)
    i = _fit(ITML(tol=1e-9, **FEW), X, y)
    np.testing.assert_allclose(m.get_mahalanobis_matrix(), i.get_mahalanobis_matrix(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "reg", [LogDet(), Frobenius(), TraceNorm(0.5), VonNeumann(), SymmetricLogDet(0.5)], ids=lambda r: type(r).__name__
)
@pytest.mark.parametrize("cls", [SpectralKernelLearner, SpectralMetricLearner])
def test_any_regularizer_with_hinge(wine, reg, cls):
    X, y, Xte = wine
    kw = {"kernel": "linear"} if cls is SpectralKernelLearner else {}
    est = _fit(cls(reg, constraints="hinge", tol=1e-6, **kw, **FEW), X, y)
    assert est.solution_.objective == pytest.approx(est.solution_.objective)  # a number
    T = est.transform(Xte)
    assert np.all(np.isfinite(T)) and T.shape[0] == Xte.shape[0]
    # the hinge constraints hold where they can: the learned distances separate the pairs
    # better than the base ones (similar pairs closer relative to dissimilar ones)
    pc = est.pairs_
    D = est.pair_distance(np.stack([X[pc.i], X[pc.j]], axis=1)) ** 2
    assert np.median(D[pc.y < 0]) > np.median(D[pc.y > 0])


def test_pairs_triplets_hard_and_errors(wine):
    X, y, _ = wine
    trip = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    est = _fit(SpectralMetricLearner(Frobenius(), constraints="hard", margin=0.1), X, triplets=trip)
    d = est.pair_distance(np.stack([X[trip[:, 0]], X[trip[:, 1]]], 1)) ** 2
    e = est.pair_distance(np.stack([X[trip[:, 0]], X[trip[:, 2]]], 1)) ** 2
    assert np.all(d + 0.1 <= e + 1e-5)  # hard triplets hold
    assert est.pairs_ is None and len(est.triplets_) == 3
    est = _fit(
        SpectralKernelLearner(kernel="linear", constraints="hinge"), X, pairs=[[0, 1, 1], [2, 3, -1]], triplets=trip
    )
    assert len(est.pairs_) == 2 and len(est.triplets_) == 3
    with pytest.raises(InvalidInputError, match="not both"):
        SpectralKernelLearner().fit(X, y, triplets=trip)
    with pytest.raises(InvalidInputError, match="shape"):
        SpectralKernelLearner().fit(X, triplets=[[0, 1]])
    with pytest.raises(InvalidInputError, match="no slack"):
        SpectralKernelLearner(Frobenius(), constraints="slack").fit(X, y)
    with pytest.raises(InvalidInputError, match="the class itself"):
        SpectralKernelLearner(Frobenius).fit(X, y)
    with pytest.raises(InvalidInputError, match="Regularizer instance"):
        SpectralMetricLearner("logdet").fit(X, y)


def test_save_load_with_builtin_and_user_regularizers(wine):
    X, y, Xte = wine
    register_regularizer(SymmetricLogDet)
    for reg in (None, TraceNorm(0.25), VonNeumann(), SymmetricLogDet(0.3)):
        est = _fit(SpectralMetricLearner(reg, constraints="hinge", **FEW), X, y)
        buf = io.BytesIO()
        est.save(buf)
        back = SpectralMetricLearner.load(io.BytesIO(buf.getvalue()))
        assert np.array_equal(back.transform(Xte), est.transform(Xte))
        if reg is not None:
            assert type(back.regularizer) is type(reg) and vars(back.regularizer) == vars(reg)
    # an unregistered user class is refused, with what to do
    est = _fit(SpectralMetricLearner(Unregistered(0.3), constraints="hinge", **FEW), X, y)
    buf = io.BytesIO()
    est.save(buf)
    with pytest.raises(EstimatorFileError, match="register_regularizer"):
        SpectralMetricLearner.load(io.BytesIO(buf.getvalue()))


def test_a_file_never_imports_a_module(wine, monkeypatch):
    """A regularizer naming a module that is not imported (or any non-Regularizer) is refused
    without importing it."""
    import json
    import sys
    import zipfile

    X, y, _ = wine
    est = _fit(SpectralMetricLearner(TraceNorm(0.5), constraints="hinge", **FEW), X, y)
    buf = io.BytesIO()
    est.save(buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        m = {n: zf.read(n) for n in zf.namelist()}
    header = json.loads(np.lib.format.read_array(io.BytesIO(m["__cvxkml__.npy"])).tobytes())
    for name, match in (
        ("antigravity:Fly", "not imported"),
        ("os:system", "not registered"),
        ("cvxkml.declare.regularizers:register_fast_solver", "not a Regularizer"),
        ("cvxkml.declare.regularizers:TraceNorm", "cannot be built"),
    ):
        h = json.loads(json.dumps(header))
        h["params"]["regularizer"]["__regularizer__"] = name
        if name.endswith("TraceNorm"):
            h["params"]["regularizer"]["params"] = {"__dict__": {"tau": -1.0}}
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zf:
            for n, b in m.items():
                blob = io.BytesIO()
                np.lib.format.write_array(blob, np.frombuffer(json.dumps(h).encode(), np.uint8))
                zf.writestr(n, blob.getvalue() if n == "__cvxkml__.npy" else b)
        with pytest.raises(EstimatorFileError, match=match):
            SpectralMetricLearner.load(io.BytesIO(out.getvalue()))
    assert "antigravity" not in sys.modules
