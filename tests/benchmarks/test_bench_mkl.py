"""``python -m benchmarks bench mkl``: the MKL_P weight step (interior point vs the CVXPY path it replaced)
and the MKL_μ step (Wang et al. 2011).  Smoke-sized; no timing assertions (times are only
checked to be finite and positive)."""

from __future__ import annotations

import numpy as np
import pytest
from cli_output import output_tables, positive_finite, run_cli_ok

from benchmarks.bench import mkl as bench_mkl


def test_bench_mkl_quick_structure():
    text = run_cli_ok(["bench", "mkl", "--quick"])
    (h1, steps), (h2, mu) = output_tables(text)
    assert h1[:4] == ["data", "n", "triplets", "path"]
    assert h1[9:13] == ["objective", "max viol", "rel gap", "certified"]
    assert [r[3] for r in steps] == ["interior point", "CVXPY full"]
    for r in steps:
        assert all(positive_finite(c) for c in r[4:7] + [r[8]]) and int(r[7]) >= 1
    assert positive_finite(steps[0][14]) and positive_finite(steps[0][15]) and steps[1][14] == "-"
    # the same optimum of the same step by both paths
    assert float(steps[0][9]) == pytest.approx(float(steps[1][9]), rel=1e-5)
    assert h2[:4] == ["data", "n", "triplets", "one solve [s]"] and len(mu) == 1
    assert positive_finite(mu[0][3]) and int(mu[0][5]) == 1 and float(mu[0][9]) <= float(mu[0][8])
    assert "CVXPY / interior point" in text and "bench finished" in text


def test_weight_step_rows_same_optimum_both_paths():
    rows = bench_mkl.weight_step_rows([("synthetic", 10, "rand", True)])
    new, old = rows
    assert (new["method"], old["method"]) == ("interior-point", "full")
    assert new["triplets"] == old["triplets"] and new["kernels"] == 20
    for key in ("relax_value", "wsolve_value", "objective"):
        assert new[key] == pytest.approx(old[key], rel=1e-6)
    assert new["n_solves"] >= 1 and new["s_per_solve"] == pytest.approx(new["solve_s"] / new["n_solves"])
    assert new["gflops"] > 0 and new["cholesky_gflops"] > 0 and "gflops" not in old
    assert np.abs(new["mu"] - old["mu"]).sum() < 1e-2


def test_previous_method_picks_the_cvxpy_path_by_size():
    """The CVXPY baseline is the whole model up to 2000 triplets, else the working set."""
    small = bench_mkl.weight_objective("synthetic", 8)
    large = bench_mkl.weight_objective("synthetic", 60)
    assert small.triplets.n_triplets <= 2000 < large.triplets.n_triplets
    assert (bench_mkl.previous_method(small), bench_mkl.previous_method(large)) == ("full", "active-set")
