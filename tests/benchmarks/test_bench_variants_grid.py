"""The GridSearchCV row of ``bench variants --scale`` (benchmarks/bench/variants_grid.py):
one row per fit of the search plus the refit, each timed and read for its certificate."""

import numpy as np
import pytest
from sklearn.base import clone

from benchmarks.bench.variants_grid import TimedMetricLearner, _CpuCap, grid_rows, grid_summary


def test_timed_learner_clones_and_times():
    from benchmarks.bench.variants import AlphaPower

    est = TimedMetricLearner(AlphaPower(), C=0.5, n_similar=5, n_dissimilar=5, random_state=0, callback=_CpuCap(30))
    twin = clone(est)
    assert twin.get_params()["C"] == 0.5 and isinstance(twin, TimedMetricLearner)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), np.repeat([0, 1], 20)
    twin.fit(X, y)
    assert twin.fit_cpu_ >= 0.0 and twin.converged_


def test_cap_stops_a_fit():
    cap = _CpuCap(0.0)
    assert cap({"iteration": 0}) or cap({"iteration": 1})


@pytest.mark.slow
def test_grid_rows_quick():
    from benchmarks.bench.variants import AlphaPower

    rows = grid_rows(AlphaPower(), "alpha-power(1.5)", quick=True)
    assert len(rows) == 2 * 3 + 1 and rows[-1]["fold"] == -1
    assert all(r["certified"] for r in rows)
    summary = grid_summary(rows, target=1e9)
    assert summary[-1]["C"] == "all" and summary[-1]["fits"] == 7 and summary[-1]["met"] == "yes"
    assert grid_summary(rows, target=0.0)[-1]["met"] == "no"
