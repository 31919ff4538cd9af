"""``python -m benchmarks bench lmnn``: the smoothed LMNN solver against the PDHG path on the same fold.
Smoke-sized; no timing assertions (times are only checked to be finite and positive)."""

from __future__ import annotations

import numpy as np
import pytest
from cli_output import output_tables, positive_finite, run_cli_ok

from benchmarks._commands import CommandError
from benchmarks.bench import lmnn as bench_lmnn
from benchmarks.bench.estimators import cv_folds, load_bench_dataset


def test_both_paths_certify_the_same_problem():
    rows = bench_lmnn.lmnn_rows(("wine",), (1e-3,), quick=True, old_budget=30.0)
    assert [r["path"] for r in rows] == ["smoothed", "pdhg"]
    new, old = rows
    assert new["triplets"] == old["triplets"] and (new["n"], new["d"]) == (40, 13)
    # the problem's triplets (i, target j, differently labelled l): k targets per point times
    # the points of other classes, here 40 points of three classes and k = 5
    _, y, _ = load_bench_dataset("wine", quick=True)
    counts = np.bincount(y[cv_folds(y, 3)[0][0]])
    assert new["triplets"] == int(np.sum(counts * bench_lmnn.K * (counts.sum() - counts)))
    for r in rows:
        assert r["converged"] and r["gap"] <= 1e-3 and r["seconds"] > 0
        assert 0.0 <= r["accuracy"] <= 1.0
    # weak duality across the two paths: each primal value is above the other's dual bound,
    # so the two certified objectives agree within the sum of their certified gaps
    scale = max(1.0, new["objective"])
    assert new["objective"] >= old["dual_value"] - 1e-9 * scale
    assert old["objective"] >= new["dual_value"] - 1e-9 * scale
    assert abs(new["objective"] - old["objective"]) <= (new["gap"] + old["gap"]) * scale


def test_bench_lmnn_quick_cli():
    text = run_cli_ok(["bench", "lmnn", "--quick", "--no-old"])
    ((head, rows),) = output_tables(text)
    assert head[:6] == ["data", "fold", "n x d", "triplets", "tol", "path"]
    assert [r[5] for r in rows] == ["smoothed"] and positive_finite(rows[0][6]) and rows[0][10] == "yes"
    assert "wine tol 0.001: smoothed" in text and "PDHG" not in text.split("1/1 certified")[1].split("\n")[0]
    assert "bench finished" in text


def test_bad_options():
    with pytest.raises(CommandError, match="at least 2"):
        bench_lmnn.lmnn_rows(("wine",), (1e-3,), n_folds=1, quick=True)
    from benchmarks.cli import build_parser

    for bad in (["--tol", "0"], ["--tol", "x"], ["--old-budget", "-1"], ["--datasets", "iris"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["bench", "lmnn", *bad])


def test_scale_objective_of_a_peer_metric_is_the_problems():
    """``bench lmnn --scale`` evaluates a peer's metric L by the impostor scan: the same F as
    the problem's all-triplet formula at A = LᵀL."""
    from cvxkml.declare.lmnn import LMNNProblem

    rng = np.random.default_rng(3)
    y = np.arange(40) % 3
    Z = rng.normal(size=(40, 4)) + 0.5 * y[:, None]
    prob = LMNNProblem.linear(Z, y, k=bench_lmnn.SCALE_K, gamma=bench_lmnn.SCALE_GAMMA)
    L = rng.normal(size=(3, 4))
    assert bench_lmnn._full_objective(prob, Z @ L.T) == pytest.approx(prob.objective(L.T @ L), rel=1e-10)


def test_scale_rows_table_says_when_the_peer_did_not_run():
    row = dict(
        data="digits",
        n=10,
        d=3,
        rank=3,
        triplets=5,
        seconds=1.0,
        gap=5e-5,
        converged=True,
        status="converged",
        objective=2.0,
        rounds=2,
        set_sizes=[3, 4],
        scan_s=0.1,
        smooth_s=0.5,
        peer_error="did not finish in 10 s",
    )
    text = bench_lmnn.format_scale([row], 1e-4)
    assert "did not finish in 10 s" in text and "5.0e-05" in text


def test_scale_targets_say_met_only_when_met():
    base = dict(data="bc", seconds=1.0, converged=True, peer_seconds=2.0, pylmnn_seconds=0.5)
    met = bench_lmnn._scale_targets([dict(base, pylmnn_reached_s=0.4)])[0]
    assert met.count(": met") == 2 and "NOT" not in met
    late = bench_lmnn._scale_targets([dict(base, pylmnn_reached_s=0.6, converged=False)])[0]
    assert late.count("NOT met") == 2  # uncertified never meets the metric-learn target
    never = bench_lmnn._scale_targets([dict(base, pylmnn_reached_s=None)])[0]
    assert "pylmnn's F at never" in never and never.endswith("NOT met")
    assert bench_lmnn._scale_targets([dict(data="x", seconds=1.0, converged=True)]) == []


def test_peer_scripts_are_where_the_benchmark_runs_them():
    assert set(bench_lmnn.PEER_SCRIPTS) == {"metric-learn", "pylmnn"}
    assert all(path.is_file() for path in bench_lmnn.PEER_SCRIPTS.values())
