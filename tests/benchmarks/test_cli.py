"""The ``python -m benchmarks`` command: --version, ``bench itml --quick``, ``bench variants --quick``.

The printed tables are parsed back (cells are separated by two or more spaces).  No
timing assertions: only that times and ratios are finite and positive.
"""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from cli_output import positive_finite, run_cli, table_after

from benchmarks.bench import itml
from benchmarks.cli import format_table, main
from cvxkml import __version__


# ---------------------------------------------------------------- version / usage
def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"cvxkml {__version__}"


def test_version_console_entry_point():
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.cli", "--version"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and out.stdout.strip() == f"cvxkml {__version__}"


def test_no_command_prints_help():
    rc, out = run_cli([])
    assert rc == 2 and "bench" in out and "reproduce" in out
    rc, out = run_cli(["bench"])
    assert rc == 2 and "itml" in out


def test_format_table():
    t = format_table(["a", "bb"], [["x y", "1"], ["long cell", "22"]])
    lines = t.splitlines()
    assert lines[0].split() == ["a", "bb"] and set(lines[1].replace(" ", "")) == {"-"}
    assert re.split(r"\s{2,}", lines[3]) == ["long cell", "22"]


# ---------------------------------------------------------------- bench itml --quick
@pytest.fixture(scope="module")
def bench_output():
    rc, out = run_cli(["bench", "itml", "--quick"])
    assert rc == 0
    return out


def test_bench_projection_table(bench_output):
    headers, rows = table_after(bench_output, "form")
    assert headers == [
        "form",
        "size",
        "pairs",
        "projections",
        "rank-1 updates",
        "numba [s/proj]",
        "numpy [s/proj]",
        "numpy/numba",
        "max rel diff",
    ]
    assert [(r[0], r[1]) for r in rows] == [("metric", "d=4"), ("metric", "d=13"), ("kernel", "n=100")]
    for r in rows:
        assert 0 < int(r[4]) <= int(r[3])
        assert all(positive_finite(c) for c in r[5:8])
        assert float(r[8]) < 1e-10  # same update, same arithmetic


def test_bench_tolerance_table(bench_output):
    headers, rows = table_after(bench_output, "n")
    assert headers == [
        "n",
        "pairs",
        "exact solver",
        "fast sweeps",
        "fast [s]",
        "exact [s]",
        "fast/exact",
        "rel obj gap",
        "fast max viol",
        "exact max viol",
        "exact status",
    ]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("10", "20", "scs"),
        ("10", "20", "clarabel"),
        ("20", "40", "scs"),
        ("20", "40", "clarabel"),
    ]
    for r in rows:
        assert int(r[3]) >= 1
        assert all(positive_finite(c) for c in r[4:7])
        assert float(r[7]) < 1e-5
        assert r[10] == "optimal"


def test_numpy_loops_match_numba():
    """The plain-NumPy reference loops reproduce the Numba solver's iterates."""
    from cvxkml.solvers.bregman import bregman_kernel, bregman_metric
    from cvxkml.testing import make_random_instance

    pm = make_random_instance(20, 4, 30, 1.0, kind="metric", random_state=2)
    P = pm.pairs
    res = bregman_metric(pm.M0, pm.X, P.i, P.j, P.y, P.bound, 1.0, tol=0.0, max_iter=7)
    W, xi, lam = np.eye(4), P.bound.copy(), np.zeros(len(P))
    V = pm.X[P.i] - pm.X[P.j]
    itml.numpy_sweeps_metric(W, V, P.y, xi, lam, 1.0, 7)
    np.testing.assert_allclose(W, res.matrix, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lam, res.lam, rtol=1e-10, atol=1e-12)

    pk = make_random_instance(15, 3, 25, 2.0, kind="kernel", random_state=2)
    P = pk.pairs
    res = bregman_kernel(pk.M0, P.i, P.j, P.y, P.bound, 2.0, tol=0.0, max_iter=7)
    K, xi, lam = pk.M0.copy(), P.bound.copy(), np.zeros(len(P))
    itml.numpy_sweeps_kernel(K, P.i, P.j, P.y, xi, lam, 2.0, 7)
    np.testing.assert_allclose(K, res.matrix, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(xi, res.xi, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- bench variants --quick
def test_bench_variants_quick():
    """The generic dual solver's bench: every variant certified and equal to Clarabel's
    optimum (the table's accuracy columns), whatever the times."""
    from benchmarks.bench.variants import VARIANTS, variant_rows

    rows = variant_rows(quick=True)
    assert [r["variant"] for r in rows] == list(VARIANTS)
    for r in rows:
        assert r["fast_converged"] and r["fast_cert"] <= 1e-6, r  # the default gap_tol
        assert r["clarabel_status"] == "optimal" and r["fast_diff"] <= 1e-6, r
    rc, out = run_cli(["bench", "variants", "--quick"])
    assert rc == 0 and "clarabel/fast" in out and "bench finished" in out
