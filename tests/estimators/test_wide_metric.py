"""Wide data (d > n): the metric estimators solve in the span of the data by themselves, keep
the learned metric factored (W = αI + U diag(λ) Uᵀ) and never form a d × d matrix unless
``components_`` or ``get_mahalanobis_matrix()`` is asked for; save / load keep the factors."""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from cvxkml.declare import ITML as ITMLProblem
from cvxkml.declare.regularizers import Frobenius
from cvxkml.errors import EstimatorFileError
from cvxkml.estimators import IPLR, ITML, LMNN, SpectralMetricLearner, load
from cvxkml.learned import FactoredMetric, LearnedMetric

FEW = dict(n_similar=15, n_dissimilar=15, random_state=0)
METRIC_ESTIMATORS = [
    ITML(tol=1e-6, **FEW),
    SpectralMetricLearner(**FEW),
    SpectralMetricLearner(Frobenius(), constraints="hinge", tol=1e-6, **FEW),
    LMNN(k=3),
    IPLR(tol=1e-6, **FEW),
    IPLR(basis="class-means", tol=1e-6, **FEW),
]


def _wide(n=30, d=120, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3.0, d)
    X[:, :4] += 2.0 * y[:, None]
    return X, y


@pytest.mark.parametrize("est", METRIC_ESTIMATORS, ids=lambda e: repr(e))
def test_wide_data_is_learned_factored_and_consistent(est, tmp_path):
    X, y = _wide()
    est.fit(X, y)
    assert est.converged_
    assert isinstance(est.metric_, FactoredMetric) and est.metric_.rank <= X.shape[0]
    assert "components_" not in vars(est)
    pairs = np.stack([X[:10], X[10:20]], axis=1)
    dist = est.pair_distance(pairs)
    Z = est.transform(X)
    np.testing.assert_allclose(np.linalg.norm(Z[:10] - Z[10:20], axis=1), dist, rtol=1e-9)
    assert est.get_metric()(X[0], X[10]) == pytest.approx(dist[0], rel=1e-9)
    # asked for: the d × d matrices, consistent with the factored distances
    A = est.get_mahalanobis_matrix()
    D = X[:10] - X[10:20]
    np.testing.assert_allclose(np.sqrt(np.einsum("ij,jk,ik->i", D, A, D)), dist, rtol=1e-8)
    np.testing.assert_allclose(est.components_.T @ est.components_, A, rtol=1e-8, atol=1e-12)
    assert est.get_feature_names_out().shape == (Z.shape[1],)
    est.save(tmp_path / "wide.npz")
    back = load(tmp_path / "wide.npz")
    assert isinstance(back.metric_, FactoredMetric) and "components_" not in vars(back)
    assert np.array_equal(back.transform(X), Z)
    assert np.array_equal(back.pair_distance(pairs), dist)
    # a wide model without its factors is refused with the typed error
    with np.load(tmp_path / "wide.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays["__cvxkml__"].tobytes())
    del header["state"]["metric_"]
    arrays["__cvxkml__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez_compressed(tmp_path / "broken.npz", **arrays)
    with pytest.raises(EstimatorFileError, match="components_ is missing"):
        load(tmp_path / "broken.npz")


def test_narrow_data_keeps_the_dense_metric():
    X, y = _wide(n=60, d=5)
    est = ITML(**FEW).fit(X, y)
    assert isinstance(est.metric_, LearnedMetric) and est.components_.shape == (5, 5)


def test_span_answer_is_the_feature_space_answer():
    """The estimator's wide-data metric equals the feature-space solve of the same problem
    (same pairs, same standardized features) to the solver tolerance."""
    X, y = _wide(n=24, d=40, seed=1)
    est = ITML(tol=1e-9, max_iter=200000, **FEW).fit(X, y)
    assert isinstance(est.metric_, FactoredMetric)
    Z = (X - est.feature_mean_) / est.feature_scale_
    prob = ITMLProblem(Z, est.pairs_, gamma=est.gamma, space="features")
    sol = prob.solve(tol=1e-9, max_iter=200000)
    W = sol.matrix
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 40 × 40: no size warning
        W_span = est.metric_.get_mahalanobis_matrix()
    np.testing.assert_allclose(W_span, W, atol=1e-5 * np.abs(W).max())
    assert est.solution_.objective == pytest.approx(sol.objective, rel=1e-6, abs=1e-8)


_MEMORY_SCRIPT = textwrap.dedent("""
    import io, resource, tracemalloc
    import numpy as np
    from cvxkml.declare.regularizers import Frobenius
    from cvxkml.estimators import IPLR, ITML, LMNN, SpectralMetricLearner, load
    from cvxkml.learned import FactoredMetric

    n, d = 60, 20000
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 20)
    X = rng.normal(size=(n, d))
    X[:, :5] += 3.0 * y[:, None]
    # a hard cap: one d × d float64 matrix (3.2 GB) cannot even be allocated
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + 2 * 8 * d * d // 3, hard))
    few = dict(n_similar=20, n_dissimilar=20, random_state=0)
    for est in (ITML(**few), SpectralMetricLearner(Frobenius(), constraints="hinge", **few), LMNN(k=3)):
        tracemalloc.start()
        est.fit(X, y)
        est.transform(X)
        est.pair_score(np.stack([X[:10], X[10:20]], axis=1))
        est.get_metric()(X[0], X[1])
        buf = io.BytesIO()
        est.save(buf)
        buf.seek(0)
        back = load(buf)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert isinstance(back.metric_, FactoredMetric) and est.converged_, est
        print(type(est).__name__, peak)
    try:                              # the cap holds: one d × d matrix cannot be allocated
        np.empty((d, d))
    except MemoryError:
        print("capped")
""")


def test_no_d_by_d_matrix_on_wide_data_under_a_memory_cap():
    """d = 20 000, n = 60, ITML (α = 1), a Frobenius hinge learner (α = 0) and linear LMNN: fit,
    transform, pair_score, get_metric, save and load in a
    subprocess whose address space cannot hold two thirds of one d × d matrix, each with a
    traced peak below 1/8 of one d × d matrix (8 d² bytes)."""
    env_threads = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_SCRIPT],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env_threads},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    d = 20000
    lines = out.stdout.split()
    assert lines[-1] == "capped", out.stdout
    peaks = [int(v) for v in lines[1:-1:2]]
    assert len(peaks) == 3
    assert max(peaks) < 8 * d * d / 8, peaks
