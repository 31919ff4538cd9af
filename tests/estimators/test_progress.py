"""verbose / callback / max_iter, the progress and control parameters every estimator shares."""

import logging
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine

from cvxkml.errors import ConvergenceWarning, InvalidInputError
from cvxkml.estimators import ESTIMATORS, ITML, LMNN, KCRClassifier, KernelITML, TraceSSIKDR, VonNeumannKernelLearner


@pytest.fixture(scope="module")
def data():
    X, y = load_wine(return_X_y=True)
    idx = np.random.default_rng(1).permutation(len(y))[:60]
    return X[idx], y[idx]


def test_every_estimator_has_the_control_parameters():
    for cls in ESTIMATORS:
        params = cls().get_params()
        assert params["verbose"] == 0 and params["callback"] is None, cls.__name__
        assert "max_sweeps" not in params or params["max_sweeps"] is None
        if cls.__name__ not in ("SemiSupervisedKernelMetric",):
            assert "max_iter" in params, cls.__name__


def test_verbose_logs_progress_on_the_cvxkml_logger(data, caplog):
    X, y = data
    with caplog.at_level(logging.INFO, logger="cvxkml"):
        est = LMNN(verbose=1, max_iter=2000).fit(X, y)
    msgs = [r.getMessage() for r in caplog.records if r.name == "cvxkml"]
    checks = [m for m in msgs if "iteration" in m and "objective" in m and "certified gap" in m]
    assert len(checks) >= 2 and msgs[-1].startswith("LMNN fitted:")
    assert f"converged {est.converged_}" in msgs[-1]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="cvxkml"):
        LMNN(verbose=0, max_iter=2000).fit(X, y)
    assert not [r for r in caplog.records if r.name == "cvxkml"]


def test_verbose_k_logs_every_kth_check(data, caplog):
    X, y = data
    seen = []
    with caplog.at_level(logging.INFO, logger="cvxkml"):
        LMNN(verbose=3, max_iter=2000, callback=lambda r: seen.append(r) and False).fit(X, y)
    lines = [
        r
        for r in caplog.records
        if r.name == "cvxkml" and "iteration" in r.getMessage() and "fitted" not in r.getMessage()
    ]
    assert len(lines) == (len(seen) + 2) // 3


def test_verbose_without_logging_configuration_prints_to_stderr(data, capsys):
    X, y = data
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = []  # as in a plain script: no handler anywhere
    try:
        KCRClassifier(verbose=1, tol=1e-2).fit(X, y)
    finally:
        root.handlers = saved
    err = capsys.readouterr().err
    assert "[cvxkml] KCRClassifier [solve 1] iteration" in err and "KCRClassifier fitted" in err
    assert not logging.getLogger("cvxkml").handlers  # the temporary handler is gone


def test_callback_sees_the_certificate_and_can_stop_the_fit(data):
    X, y = data
    records = []

    def stop_at_second(rec):
        records.append(rec)
        return len(records) >= 2

    with pytest.warns(ConvergenceWarning, match="callback"):
        est = LMNN(callback=stop_at_second, tol=1e-9).fit(X, y)
    assert len(records) == 2
    assert {"estimator", "stage", "iteration", "objective", "gap", "violation"} <= set(records[0])
    assert records[0]["estimator"] == "LMNN" and records[1]["iteration"] > records[0]["iteration"]
    assert est.converged_ is False and est.solution_.status == "stopped by callback"
    assert est.n_iter_ == records[1]["iteration"]
    assert np.all(np.isfinite(est.transform(X)))  # the last iterate is kept, usable


@pytest.mark.parametrize(
    "make",
    [
        lambda cb: KCRClassifier(callback=cb, tol=1e-9),
        lambda cb: ITML(callback=cb, max_iter=3, n_similar=20, n_dissimilar=20, random_state=0),
        lambda cb: KernelITML(callback=cb, max_iter=2, n_similar=20, n_dissimilar=20, random_state=0),
    ],
    ids=["KCR", "ITML", "KernelITML"],
)
def test_callback_stop_in_other_solvers(data, make):
    X, y = data
    calls = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est = make(lambda rec: calls.append(rec) or True).fit(X, y)
    assert calls and est.converged_ is False
    assert any(issubclass(x.category, ConvergenceWarning) for x in w)
    assert np.all(np.isfinite(est.transform(X)))


def test_max_sweeps_is_a_deprecated_name_of_max_iter(data):
    X, y = data
    for cls in (ITML, KernelITML, TraceSSIKDR, VonNeumannKernelLearner):
        est = cls(
            max_sweeps=2,
            n_similar=5,
            n_dissimilar=5,
            random_state=0,
            **({"kernel": "linear"} if cls is VonNeumannKernelLearner else {}),
        )
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            est.fit(X, y)
        assert any(issubclass(x.category, DeprecationWarning) and "max_iter" in str(x.message) for x in w)
        assert est.n_iter_ <= 2 * 4, cls.__name__  # the limit was used (attempts add up)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(verbose=-1), "verbose must be a non-negative integer"),
        (dict(verbose="yes"), "verbose"),
        (dict(callback=3), "callback must be None or a callable"),
    ],
)
def test_bad_control_parameters(data, bad, match):
    X, y = data
    with pytest.raises(InvalidInputError, match=match):
        ITML(**bad).fit(X, y)
