"""Jain et al. 2012 Table 1 (reference.reproduce.logdet)."""

import numpy as np
import pytest

from reference.reproduce.logdet import PAPER_TABLE1, clustering_error, digits389, table1


def test_clustering_error_is_matching_invariant():
    y = np.array([0, 0, 1, 1, 2, 2])
    assert clustering_error(y, np.array([2, 2, 0, 0, 1, 1])) == 0.0
    assert clustering_error(y, np.array([5, 5, 5, 7, 7, 7])) == pytest.approx(2 / 6)
    assert clustering_error(y, np.zeros(6, dtype=int)) == pytest.approx(4 / 6)


def test_quick_table1_runs_certified(data_dir):
    res = table1(repeats=1, data_dir=data_dir)
    assert set(res) == set(PAPER_TABLE1)
    for name, r in res.items():
        assert r["fits"] == 2 and r["itml_certified"] == 2
        assert all(0.0 <= e <= 1.0 for e in r["mean"])
        assert r["paper"] == list(PAPER_TABLE1[name][2:])
    assert res["ionosphere"]["n"] == 351 and res["ionosphere"]["d"] == 34


def test_digits389_is_a_stratified_subsample(data_dir):
    X, y = digits389(data_dir, random_state=0)
    assert X.shape[1] == 16 and abs(X.shape[0] - 317) <= 2
    assert set(np.unique(y).astype(int)) == {3, 8, 9}
