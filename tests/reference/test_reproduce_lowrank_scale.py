"""The ``scale`` option of the UCI rows of ``python -m benchmarks reproduce lowrank`` (Kulis et al. 2009,
Figure 3: Spambase and Nursery) and the ``--parts`` / ``--scale`` command-line options."""

from __future__ import annotations

import numpy as np
import pytest
from cli_output import output_tables, run_cli_ok

from cvxkml.errors import InvalidInputError
from reference.reproduce.lowrank import (
    SCALES,
    kernel_kmeans,
    load_spambase,
    nmi,
    reproduce_lowrank,
    scale_features,
    uci_rows,
)


def test_scale_features_standardizes_columns_and_keeps_raw():
    rng = np.random.default_rng(0)
    X = rng.normal(3.0, [1.0, 50.0, 0.01], (40, 3))
    X = np.column_stack([X, np.full(40, 7.0)])  # a constant column
    np.testing.assert_array_equal(scale_features(X, "none"), X)
    Z = scale_features(X, "standardize")
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z[:, :3].std(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(Z[:, 3], 0.0)  # centred only, no division by 0
    np.testing.assert_allclose(Z[:, 1], (X[:, 1] - X[:, 1].mean()) / X[:, 1].std(), rtol=1e-12)
    assert SCALES == ("none", "standardize")


@pytest.mark.parametrize("bad", ["minmax", "", None])
def test_unknown_scale_is_rejected(bad):
    with pytest.raises(InvalidInputError, match="scale must be one of"):
        scale_features(np.ones((3, 2)), bad)
    with pytest.raises(InvalidInputError, match="scale must be one of"):
        uci_rows("spambase", counts=(0,), n_draws=1, scale=bad)
    with pytest.raises(InvalidInputError, match="scale must be one of"):
        reproduce_lowrank(quick=True, parts=("spambase",), scale=bad)


def test_unknown_part_is_rejected():
    with pytest.raises(InvalidInputError, match="parts must be"):
        reproduce_lowrank(quick=True, parts=("spambase", "soybean"))


def test_uci_rows_standardized_spambase_is_the_kmeans_of_standardized_features(data_dir):
    """No constraints: the row's NMI is kernel k-means on the scaled features with the row's
    own seed; standardizing changes the clustering (raw: the three run-length columns
    dominate)."""
    kw = dict(counts=(0,), n_draws=1, n_init=2, data_dir=data_dir)
    raw = uci_rows("spambase", **kw)[0]
    std = uci_rows("spambase", scale="standardize", **kw)[0]
    X, y = load_spambase(data_dir)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    rng = np.random.default_rng([0, 0, 0, 7])  # the task's seed (seed, draw, m, 7)
    expected = nmi(y, kernel_kmeans(factor=Z, n_clusters=2, n_init=2, random_state=rng).labels)
    assert std["nmi_mean"] == pytest.approx(expected, abs=1e-12)
    assert abs(std["nmi_mean"] - raw["nmi_mean"]) > 1e-3
    assert std["converged"] == raw["converged"] == 1


def test_cli_parts_and_scale(data_dir):
    text = run_cli_ok(
        [
            "reproduce",
            "lowrank",
            "--quick",
            "--parts",
            "spambase",
            "--scale",
            "standardize",
            "--data-dir",
            str(data_dir),
        ]
    )
    tables = output_tables(text)
    assert len(tables) == 1  # Spambase only
    head, rows = tables[0]
    assert head[0] == "constraints" and [r[0] for r in rows] == ["0", "50"]
    assert "Spambase: 4601 x 57, features standardized" in text
    assert "Digits" not in text and "Nursery" not in text
    raw = run_cli_ok(["reproduce", "lowrank", "--quick", "--parts", "spambase", "--data-dir", str(data_dir)])
    assert "raw features" in raw and output_tables(raw)[0][1][0][1] != rows[0][1]
