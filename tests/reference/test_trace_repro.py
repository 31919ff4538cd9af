"""Reproduction machinery of Jain et al. (2012) §6.4 / Figure 2 c–d (Trace-SSIKDR vs kernel
PCA on unseen digits): the protocol helpers, a quick smoke run on the offline MNIST subset
(skipped without the data folder) and ``python -m benchmarks reproduce trace --quick``.

The full reproduction (``python -m benchmarks reproduce trace``, about 10–15 minutes) and its measured
numbers are in reference/jain2012-trace.md; here only tiny instances run.
"""

import contextlib
import io
import json

import numpy as np
import pytest

from benchmarks.cli import main
from cvxkml.errors import InvalidInputError
from cvxkml.estimators.trace import TraceSSIKDR
from reference.reproduce.trace import (
    PAPER,
    QUICK,
    draw_split,
    embedding_scores,
    load_digits_data,
    median_gamma,
    reproduce_trace,
)


def test_draw_split_is_stratified_and_disjoint():
    y = np.repeat(np.arange(10), 50)
    tr, te = draw_split(y, 100, 300, random_state=3)
    assert tr.size == 100 and te.size == 300 and np.intersect1d(tr, te).size == 0
    assert np.all(np.bincount(y[tr], minlength=10) == 10)
    tr2, te2 = draw_split(y, 100, 300, random_state=3)
    np.testing.assert_array_equal(tr, tr2)
    np.testing.assert_array_equal(te, te2)
    with pytest.raises(InvalidInputError, match="left for"):
        draw_split(y, 100, 401, random_state=0)


def test_median_gamma():
    X = np.array([[0.0], [1.0], [3.0]])  # squared distances 1, 9, 4 -> median 4
    assert median_gamma(X) == pytest.approx(0.25)


def test_embedding_scores_distance_path_matches_embedding_path():
    rng = np.random.default_rng(0)
    ytr, yte = np.repeat(np.arange(3), 10), np.repeat(np.arange(3), 40)
    Ztr = rng.normal(size=(30, 2)) + 2.0 * ytr[:, None]
    Zte = rng.normal(size=(120, 2)) + 2.0 * yte[:, None]
    a = embedding_scores(Ztr, ytr, Zte, yte, k=5)
    D = lambda A, B: np.linalg.norm(A[:, None] - B[None], axis=2)
    b = embedding_scores(None, ytr, None, yte, k=5, D_te=D(Zte, Zte), D_cross=D(Zte, Ztr))
    for key in ("knn", "knn_cv", "silhouette"):
        assert a[key] == pytest.approx(b[key], abs=1e-12)
    assert 0.5 < a["knn"] <= 1.0 and a["silhouette"] > 0


@pytest.fixture(scope="module")
def quick(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("trace")
    return reproduce_trace("mnist5000", quick=True, data_dir=data_dir, out_dir=out), out


def test_quick_run_shapes_and_scores(quick):
    res, _ = quick
    st = res["settings"]
    assert st["n_draws"] == 1 and st["n_train"] == QUICK["n_train"] and st["n_test"] == QUICK["n_test"]
    d = res["draws"][0]
    emb = d["embeddings"]
    for key in ("trace", "tracepca", "kpca"):
        assert emb[key].shape == (QUICK["n_test"], 2) and np.all(np.isfinite(emb[key]))
    assert emb["y"].shape == (QUICK["n_test"],)
    for m, sc in d["scores"].items():
        assert 0.0 <= sc["knn"] <= 1.0 and 0.0 <= sc["knn_cv"] <= 1.0 and -1.0 <= sc["silhouette"] <= 1.0, m
    s = d["solver"][10.0]
    assert s["converged"] and s["rank"] > 2 and s["max_rel_violation"] <= 1e-5
    assert 0 < s["top2_trace_fraction"] < 1
    assert "no numbers" in PAPER


def test_quick_embedding_consistent_with_estimator(quick, data_dir):
    """The reproduction's 2-D Trace-SSIKDR embedding is the estimator's transform with
    n_components=2, i.e. the first two of its k coordinates."""
    res, _ = quick
    st = res["settings"]
    X, y = load_digits_data("mnist5000", data_dir)
    tr, te = draw_split(y, st["n_train"], st["n_test"], st["seed"])
    est = TraceSSIKDR(
        kernel_params={"gamma": st["gamma"][0]},
        tau=10.0,
        n_components=2,
        n_similar=st["n_similar"],
        n_dissimilar=st["n_dissimilar"],
        percentiles=st["percentiles"],
        tol=st["tol"],
        max_iter=st["max_sweeps"],
        random_state=st["seed"],
    ).fit(X[tr], y[tr])
    np.testing.assert_allclose(est.transform(X[te]), res["draws"][0]["embeddings"]["trace"], atol=1e-10)
    assert est.rank_ == res["draws"][0]["solver"][10.0]["rank"] and est.n_components_ == 2


def test_quick_png(quick):
    pytest.importorskip("matplotlib")
    res, out = quick
    assert res["png"] is not None and (out / "jain2012_trace_mnist5000.png").stat().st_size > 20_000


def test_cli_reproduce_trace_quick(data_dir, tmp_path):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["reproduce", "trace", "--quick", "--no-png", "--out", str(tmp_path), "--data-dir", str(data_dir)])
    out = buf.getvalue()
    assert rc == 0, out
    assert "QUICK smoke run" in out and "kernel PCA (fit on the training digits)" in out
    assert "Trace-SSIKDR top-2, tau = 10" in out
    saved = json.loads((tmp_path / "jain2012_trace_mnist5000_results.json").read_text())
    assert set(saved["summary"]) >= {"trace2:10", "tracepca2:10", "kpca_train", "kpca_test", "base"}
    assert saved["settings"]["quick"] is True and saved["png"] is None
