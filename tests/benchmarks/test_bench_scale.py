"""``python -m benchmarks bench variants --scale`` rows: every row is a certified solve
of the declared variant, and the growth exponent is the least-squares slope."""

import numpy as np

from benchmarks.bench.variants import growth_exponent, scale_rows


def test_quick_scale_rows_are_certified():
    rows = scale_rows(quick=True, families=["logdet+hinge-pairs"])
    assert rows
    for r in rows:
        assert r["converged"] and r["rel_gap"] <= 1e-6, r


def test_growth_exponent_is_the_log_log_slope():
    ns = np.array([100, 200, 400])
    assert abs(growth_exponent(ns, 3.0 * ns**2.5) - 2.5) < 1e-12
    assert np.isnan(growth_exponent([100], [1.0]))
