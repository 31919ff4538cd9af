"""cvxkml configuration (cvxkml._config): set_config / get_config / config_context, the PSD
tolerance of input kernels (psd_tol) and the one BLAS thread policy (blas_threads)."""

import threading
import warnings

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics.pairwise import linear_kernel as sk_linear_kernel
from threadpoolctl import threadpool_info, threadpool_limits

import cvxkml
from cvxkml import _config
from cvxkml._config import blas_limit, psd_tolerance
from cvxkml._validation import check_kernel_matrix, check_symmetric
from cvxkml.errors import ConvergenceWarning, NotPSDError
from cvxkml.testing import kernel_instance

EPS32 = float(np.finfo(np.float32).eps)


@pytest.fixture(autouse=True)
def _restore_config():
    saved = cvxkml.get_config()
    yield
    cvxkml.set_config(**saved)


def _sklearn_float32_kernel():
    """The kernel of scikit-learn's check_estimators_dtypes: float32 X32 @ X32.T (n = 20)."""
    X32 = 3 * np.random.RandomState(0).uniform(size=(20, 5)).astype(np.float32)
    return sk_linear_kernel(X32, X32)


# --------------------------------------------------------------------------- set / get / context
def test_defaults_set_get_and_context_restore():
    assert cvxkml.get_config() == {"psd_tol": None, "blas_threads": 1}
    cvxkml.set_config(psd_tol=1e-6)
    assert cvxkml.get_config() == {"psd_tol": 1e-6, "blas_threads": 1}
    cvxkml.set_config(blas_threads=None)  # the other option is kept
    assert cvxkml.get_config() == {"psd_tol": 1e-6, "blas_threads": None}
    with cvxkml.config_context(psd_tol=1e-3):
        assert cvxkml.get_config() == {"psd_tol": 1e-3, "blas_threads": None}
        cvxkml.set_config(blas_threads=2)  # undone with the context
        with cvxkml.config_context(blas_threads=3):
            assert cvxkml.get_config() == {"psd_tol": 1e-3, "blas_threads": 3}
        assert cvxkml.get_config() == {"psd_tol": 1e-3, "blas_threads": 2}
    assert cvxkml.get_config() == {"psd_tol": 1e-6, "blas_threads": None}
    with pytest.raises(RuntimeError):
        with cvxkml.config_context(psd_tol=0.5, blas_threads=4):
            raise RuntimeError("boom")
    assert cvxkml.get_config() == {"psd_tol": 1e-6, "blas_threads": None}
    cvxkml.get_config()["psd_tol"] = 7.0  # a copy
    assert cvxkml.get_config()["psd_tol"] == 1e-6


@pytest.mark.parametrize(
    "kw",
    [
        {"psd_tol": -1e-3},
        {"psd_tol": np.nan},
        {"psd_tol": "1e-6"},
        {"psd_tol": True},
        {"blas_threads": 0},
        {"blas_threads": 1.5},
        {"blas_threads": True},
        {"blas_threads": "2"},
    ],
)
def test_invalid_values_are_rejected(kw):
    before = cvxkml.get_config()
    with pytest.raises(ValueError, match=next(iter(kw))):
        cvxkml.set_config(**kw)
    with pytest.raises(ValueError, match=next(iter(kw))):
        with cvxkml.config_context(**kw):
            pass
    assert cvxkml.get_config() == before


def test_context_is_per_thread_set_config_is_process_wide():
    seen = {}

    def read(key):
        seen[key] = cvxkml.get_config()["psd_tol"]

    with cvxkml.config_context(psd_tol=1e-4):
        t = threading.Thread(target=read, args=("in_context",))
        t.start()
        t.join()
    cvxkml.set_config(psd_tol=1e-5)
    t = threading.Thread(target=read, args=("after_set",))
    t.start()
    t.join()
    assert seen == {"in_context": None, "after_set": 1e-5}


# --------------------------------------------------------------------------- psd_tol
def test_automatic_tolerance_by_dtype():
    assert psd_tolerance(20, np.float64) == 1e-9
    assert psd_tolerance(20, np.int64) == 1e-9  # integers are exact values
    assert psd_tolerance(20, np.float32) == pytest.approx(20 * EPS32)
    assert psd_tolerance(1, np.float32) == pytest.approx(EPS32)
    with cvxkml.config_context(psd_tol=1e-4):  # an explicit value wins
        assert psd_tolerance(20, np.float32) == psd_tolerance(20, np.float64) == 1e-4


def test_float32_psd_kernel_is_accepted_and_clipped():
    K32 = _sklearn_float32_kernel()
    w32 = np.linalg.eigvalsh(K32.astype(np.float64))
    assert -w32[0] / w32[-1] > 1e-9  # not PSD to float64 precision
    K = check_kernel_matrix(K32, "K")
    assert K.dtype == np.float64 and np.array_equal(K, K.T)
    w = np.linalg.eigvalsh(K)
    assert w[0] >= -1e-13 * w[-1]  # clipped: PSD to round-off
    assert np.max(np.abs(K - K32)) <= -w32[0] * 1.01  # moved by the clipped eigenvalues only
    # the same float32-rounded values as float64 claim float64 precision: rejected …
    with pytest.raises(NotPSDError, match="not positive semidefinite"):
        check_kernel_matrix(K32.astype(np.float64), "K")
    # … unless the tolerance is raised
    with cvxkml.config_context(psd_tol=1e-6):
        np.testing.assert_allclose(check_kernel_matrix(K32.astype(np.float64), "K"), K, atol=1e-12)


def test_within_float64_round_off_is_returned_unchanged():
    X = np.random.default_rng(3).normal(size=(30, 4))
    K0 = X @ X.T  # rank 4: round-off eigenvalues
    assert np.linalg.eigvalsh(K0)[0] < 0
    for tol in (None, 1e-3):
        with cvxkml.config_context(psd_tol=tol):
            assert np.array_equal(check_kernel_matrix(K0, "K0"), check_symmetric(K0, "K0"))


@settings(max_examples=examples(40), deadline=None)
@given(
    n=st.integers(2, 60),
    d=st.integers(1, 20),
    log_scale=st.floats(-3.0, 3.0),
    rounded=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_float32_psd_kernels_are_accepted_automatically(n, d, log_scale, rounded, seed):
    """A PSD kernel computed (X32 @ X32.T in float32) or only stored in float32 passes the
    automatic tolerance n·eps32 and comes back PSD float64, within that tolerance of it."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 10.0**log_scale
    if rounded:
        K32 = (X @ X.T).astype(np.float32)
    else:
        X32 = X.astype(np.float32)
        K32 = X32 @ X32.T
        K32 = np.triu(K32) + np.triu(K32, 1).T  # a kernel routine returns it symmetric
    K = check_kernel_matrix(K32, "K")
    assert K.dtype == np.float64
    w = np.linalg.eigvalsh(K)
    scale = np.max(np.abs(w))
    assert w[0] >= -1e-9 * scale
    assert np.max(np.abs(K - K32.astype(np.float64))) <= n * EPS32 * scale


def test_truly_non_psd_kernel_raises_naming_the_option():
    K32 = _sklearn_float32_kernel()
    w = np.linalg.eigvalsh(K32.astype(np.float64))
    bad = (K32 - np.float32(0.01 * w[-1]) * np.eye(20, dtype=np.float32)).astype(np.float32)
    with pytest.raises(NotPSDError) as info:
        check_kernel_matrix(bad, "K")
    msg = str(info.value)
    assert "not positive semidefinite" in msg
    assert "cvxkml.set_config(psd_tol=" in msg and "cvxkml.config_context(psd_tol=" in msg
    assert "automatic for float32 input" in msg
    with cvxkml.config_context(psd_tol=0.0):  # explicit: exactly PSD only
        with pytest.raises(NotPSDError, match="psd_tol"):
            check_kernel_matrix(K32, "K")
    with cvxkml.config_context(psd_tol=0.05):  # a loose tolerance clips it
        K = check_kernel_matrix(bad, "K")
    assert np.linalg.eigvalsh(K)[0] >= -1e-12 * w[-1]
    with pytest.raises(NotPSDError, match="positive definite"):  # require_pd still applies
        with cvxkml.config_context(psd_tol=0.05):
            check_kernel_matrix(bad, "K", require_pd=True)


def _precomputed_estimators():
    from cvxkml.estimators.logdet import KernelITML
    from cvxkml.estimators.mkl import LMNN
    from cvxkml.estimators.spectral import VonNeumannKernelLearner
    from cvxkml.estimators.trace import TraceSSIKDR

    return [
        KernelITML(kernel="precomputed", n_similar=20, n_dissimilar=20),
        VonNeumannKernelLearner(kernel="precomputed", n_similar=10, n_dissimilar=10, tol=1e-5),
        TraceSSIKDR(kernel="precomputed", n_similar=10, n_dissimilar=10, tol=1e-3, max_iter=50),
        LMNN(k=2, kernel="precomputed", max_iter=30, small_classes="shrink"),
    ]


@pytest.mark.parametrize("est", _precomputed_estimators(), ids=lambda e: type(e).__name__)
def test_psd_tol_takes_effect_in_precomputed_estimator_fits(est):
    from sklearn.base import clone
    from sklearn.utils.estimator_checks import check_estimators_dtypes

    K = _sklearn_float32_kernel().astype(np.float64)  # float32-rounded, float64 dtype
    y = np.array([0, 1] * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.raises(NotPSDError, match="psd_tol"):
            clone(est).fit(K, y)
        with cvxkml.config_context(psd_tol=1e-6):
            clone(est).fit(K, y).transform(K)
        # scikit-learn's dtype check also truncates that kernel to int (an eigenvalue of
        # -0.9 % of the largest): it passes only with a tolerance the user chose
        with cvxkml.config_context(psd_tol=2e-2):
            check_estimators_dtypes(type(est).__name__, est)


# --------------------------------------------------------------------------- blas_threads
def _blas_threads():
    """The thread count of every loaded BLAS (library path -> threads)."""
    return {info["filepath"]: info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def _limited(n):
    """What threadpoolctl itself makes of a limit of n BLAS threads (a single-threaded
    build, like SCS's bundled OpenBLAS, stays at 1)."""
    with threadpool_limits(limits=n, user_api="blas"):
        return _blas_threads()


def _record(monkeypatch, owner, name, log):
    """Wrap owner.name so that its first calls log the BLAS thread counts in force."""
    real = getattr(owner, name)

    def recording(*args, **kwargs):
        if len(log) < 3:
            log.append(_blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)


def _quiet(f):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            f()

    return run


def _paths():
    """name -> (owner, attribute called inside the limited region, library call)."""
    import scipy.linalg  # noqa: F401

    import cvxkml.factor as factor
    import cvxkml.kernels as kernels
    import cvxkml.learned as learned
    import cvxkml.solvers.kcr as kcr
    import cvxkml.solvers.lmnn as lmnn
    import cvxkml.solvers.pola as pola
    import cvxkml.solvers.sdp_logdet as sdp
    import cvxkml.solvers.trace as trace
    import cvxkml.solvers.yeung as yeung
    from cvxkml.declare.kcr import KCR
    from cvxkml.declare.lmnn import LMNNProblem
    from cvxkml.declare.pola import POLAKernel, pola_constraints
    from cvxkml.declare.sdp import LinearLogDet, SDPLogDetKernel  # noqa: F401
    from cvxkml.kernels import Kernel

    rng = np.random.default_rng(0)
    K0, pc = kernel_instance(0, 8, 5, False)
    X = rng.normal(size=(12, 3))
    y = np.arange(12) % 3
    V = rng.normal(size=(6, 4))
    return {
        "check_kernel_matrix": (np.linalg, "eigh", lambda: check_kernel_matrix(K0)),
        "factor.factorize": (factor, "check_kernel_matrix", lambda: factor.factorize(K0, "nystroem", rank=3)),
        "factor.incomplete_cholesky": (np, "argmax", lambda: factor.incomplete_cholesky(K0, 3)),
        "kernels": (kernels, "_pair", lambda: kernels.gaussian_kernel(X, sigma=1.0)),
        "learned.LearnedMetric": (np.linalg, "eigh", lambda: learned.LearnedMetric(K0)),
        "learned.kernel_S": (learned, "range_basis", lambda: learned.kernel_S(K0, K0 + np.eye(8))),
        "solvers.kcr": (
            kcr,
            "_max_similar_sq_norm",
            _quiet(lambda: KCR(kernels.gaussian_kernel(X, gamma=0.5), y, 0.5).solve(tol=1e-2, max_iter=50, warn=False)),
        ),
        "solvers.lmnn": (
            lmnn,
            "_lmnn_pdhg",
            _quiet(lambda: LMNNProblem.linear(X, y, k=2).solve(tol=1e-3, max_iter=200)),
        ),
        "solvers.pola": (
            pola,
            "_Ops",
            _quiet(lambda: POLAKernel(K0, pola_constraints([0, 1, 2], [3, 4, 5], [1, -1, 1], 2.0)).solve()),
        ),
        "solvers.sdp_logdet": (
            sdp,
            "_barrier_bregman_impl",
            _quiet(lambda: SDPLogDetKernel(K0 + np.eye(8), pc, np.eye(8), 1.0).solve()),
        ),
        "solvers.trace": (
            trace,
            "top_eigs_above",
            lambda: trace.trace_uzawa(V, np.where(np.arange(6) % 2, 1.0, -1.0), np.ones(6), 0.1, max_iter=50),
        ),
        "solvers.yeung": (
            yeung,
            "positive_spectrum",
            lambda: yeung.fit_landmark_kernel(
                X, Kernel("gaussian", {"sigma": 1.0}), [0, 1], [3, 4], n_landmarks=8, n_neighbors=3, random_state=0
            ),
        ),
    }


PATHS = list(_paths())


@pytest.mark.parametrize("path", PATHS)
def test_library_calls_run_under_the_configured_blas_limit(path, monkeypatch):
    owner, name, call = _paths()[path]
    one, two = _limited(1), _limited(2)
    log = []
    _record(monkeypatch, owner, name, log)
    with threadpool_limits(limits=2, user_api="blas"):
        outside = _blas_threads()
        call()  # default: one thread
        assert log and all(s == one for s in log), log
        assert _blas_threads() == outside  # restored after the call
        log.clear()
        with cvxkml.config_context(blas_threads=None):  # None: left alone
            call()
        assert log and all(s == outside for s in log), log
    with threadpool_limits(limits=1, user_api="blas"):
        log.clear()
        with cvxkml.config_context(blas_threads=2):
            call()
        assert log and all(s == two for s in log), log
        assert _blas_threads() == one


def test_per_call_blas_threads_wins_and_defaults_to_the_config(monkeypatch):
    import cvxkml.solvers.lmnn as lmnn
    from cvxkml.declare.lmnn import LMNNProblem

    X = np.random.default_rng(1).normal(size=(12, 3))
    prob = LMNNProblem.linear(X, np.arange(12) % 3, k=2)
    log = []
    _record(monkeypatch, lmnn, "_lmnn_pdhg", log)

    def run(**kw):
        log.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            lmnn.lmnn_pdhg(prob.U, prob.triplets, prob.gamma, tol=1e-3, max_iter=50, **kw)
        return log[0]

    one, two = _limited(1), _limited(2)
    with threadpool_limits(limits=1, user_api="blas"):
        assert run(blas_threads=2) == two
        with cvxkml.config_context(blas_threads=2):
            assert run() == two
            assert run(blas_threads=1) == one
            assert run(blas_threads=None) == one  # the process setting
        assert _blas_threads() == one


def test_nested_calls_enter_threadpoolctl_once(monkeypatch):
    from cvxkml.factor import factorize

    K0, _ = kernel_instance(1, 10, 5, False)
    calls = []
    real = _config._threadpool_controller
    monkeypatch.setattr(_config, "_threadpool_controller", lambda: calls.append(1) or real())
    one, two = _limited(1), _limited(2)
    with threadpool_limits(limits=2, user_api="blas"):
        outside = _blas_threads()
        with blas_limit():
            for _ in range(3):
                factorize(K0, "eigen")  # nested: check_kernel_matrix, eigh
            assert _blas_threads() == one
            with blas_limit(2):  # a different limit: entered again
                assert _blas_threads() == two
                factorize(K0, "eigen")  # config (1) inside 2: entered again
                assert _blas_threads() == two
            assert _blas_threads() == one
        assert len(calls) == 3
        assert _blas_threads() == outside
        assert _config._frames == []


def test_blas_limit_as_decorator_and_invalid_threads():
    @blas_limit(1)
    def inside():
        return _blas_threads()

    one = _limited(1)
    with threadpool_limits(limits=2, user_api="blas"):
        assert inside() == one
    with pytest.raises(ValueError, match="blas_threads"):
        blas_limit(0)
    with pytest.raises(ValueError, match="blas_threads"):
        blas_limit("2")
