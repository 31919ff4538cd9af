"""``python -m benchmarks bench wide``: the held-out points do not change the training data, and an
IPLR row reports its basis, the pairs it decided, its certificate and an accuracy.  Smoke-sized;
no timing assertions."""

from __future__ import annotations

import numpy as np

from benchmarks.bench import wide


def test_held_out_points_leave_the_training_data_unchanged():
    X, y = wide.wide_data(40, 30, 3)
    X2, y2, X_test, y_test = wide.wide_data(40, 30, 3, n_test=12)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    assert X_test.shape == (12, 30) and set(y_test) == {0, 1, 2}
    # same classes: the test points' class means lie near the training ones in the signal features
    gap = [np.linalg.norm(X[y == c, :20].mean(0) - X_test[y_test == c, :20].mean(0)) for c in range(3)]
    spread = [np.linalg.norm(X[y == a, :20].mean(0) - X[y == b, :20].mean(0)) for a, b in ((0, 1), (1, 2), (0, 2))]
    assert max(gap) < min(spread)


def test_iplr_row():
    row = wide._run("iplr", 45, 60, 0, basis="class-means", k=None, n_test=30)
    assert row["kind"] == "iplr" and (row["n"], row["d"], row["rank"]) == (45, 60, 2)  # c - 1 centred means
    assert row["converged"] and 0 <= row["rel_gap"] <= 1e-3
    assert row["dropped"] >= 0 and 0.0 <= row["accuracy"] <= 1.0 and row["seconds"] > 0
    base = wide._run("euclidean", 45, 60, 0, n_test=30)
    assert "converged" not in base and 0.0 <= base["accuracy"] <= 1.0


def test_mnist_rows_when_the_offline_folder_has_it():
    from cvxkml.datasets import DataNotFoundError, check_available

    try:
        check_available(["mnist5000"])
    except DataNotFoundError:
        import pytest

        pytest.skip("no offline MNIST (set CVXKML_DATA)")
    row = wide._run("iplr", 100, 784, 0, basis="svd", k=5, data="mnist5000", n_test=50)
    assert (row["d"], row["rank"]) == (784, 5) and row["converged"] and 0.0 <= row["accuracy"] <= 1.0
