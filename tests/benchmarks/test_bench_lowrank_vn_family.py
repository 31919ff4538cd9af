"""The instance families of ``bench lowrank`` and ``bench vonneumann``
(:mod:`benchmarks.bench.lowrank_family`): members are rank-r factors as declared, every row is a
certified solve whose numbers the problem's own formulas reproduce, the summary and the verdict
are the worst instance's, and the command prints and writes them.

No timing assertions: CPU seconds are only checked to be finite and non-negative.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from benchmarks.bench import lowrank, vonneumann
from benchmarks.bench import lowrank_family as fam

SMALL = ("blobs:d=6:c=3", "classification:d=6:c=3:sep=1")


# --------------------------------------------------------------------------- members
@pytest.mark.parametrize("spec", SMALL)
def test_generator_members_are_rank_r_factors_that_change_with_the_seed(spec):
    G0, y, desc = fam.family_factor(spec, 90, 6, seed=2)
    assert G0.shape == (90, 6) and G0.flags.c_contiguous and y.shape == (90,) and desc == spec
    assert np.linalg.matrix_rank(G0) == 6 and np.unique(y).size == 3
    again, _, _ = fam.family_factor(spec, 90, 6, seed=2)
    other, _, _ = fam.family_factor(spec, 90, 6, seed=3)
    np.testing.assert_array_equal(G0, again)  # deterministic per seed
    assert not np.allclose(G0, other)


def test_a_generator_with_d_other_than_r_is_refused():
    with pytest.raises(ValueError, match="d must equal"):
        fam.family_factor("blobs:d=5:c=3", 50, 6, seed=0)


def test_a_data_set_with_fewer_features_than_r_gets_random_fourier_features_stacked_with_noise():
    # iris: 150 points, 4 features < r = 8 -> 8 random Fourier features; n = 400 -> 3 copies
    G0, y, desc = fam.family_factor("iris", 400, 8, seed=1)
    assert G0.shape == (400, 8) and y.shape == (400,) and "Fourier" in desc and "3 copies" in desc
    assert np.linalg.matrix_rank(G0) == 8
    assert np.all(np.abs(G0[:150]) <= np.sqrt(2.0 / 8) + 1e-12)  # the first copy: sqrt(2/r) cos(.)
    np.testing.assert_array_equal(y[:150], y[150:300])  # copies keep the labels
    assert not np.allclose(G0[:150], G0[150:300])  # ... and carry noise
    assert not np.allclose(G0, fam.family_factor("iris", 400, 8, seed=2)[0])


def test_a_data_set_with_at_least_r_features_gets_its_principal_components():
    # wine: 178 points, 13 features >= r = 5 -> PCA-5 of the centred features, rows permuted
    from cvxkml.datasets import load_dataset

    G0, y, desc = fam.family_factor("wine", 100, 5, seed=0)
    assert G0.shape == (100, 5) and desc.startswith("wine: PCA-5") and "1 copy" in desc
    X, _ = load_dataset("wine")
    Xc = X - X.mean(axis=0)
    s = np.linalg.svd(Xc, compute_uv=False)[:5]
    full, _, _ = fam.family_factor("wine", 178, 5, seed=0)  # all rows: the singular values of Xc
    np.testing.assert_allclose(np.linalg.svd(full, compute_uv=False), s, rtol=1e-10)


def test_the_real_members_of_the_default_family_load(data_dir):
    # r = 20: MNIST's 784 pixels give PCA-20, pendigits' 16 features random Fourier features
    for spec, how in (("mnist5000", "PCA-20"), ("pendigits", "Fourier")):
        G0, y, desc = fam.family_factor(spec, 300, 20, seed=0, data_dir=data_dir)
        assert G0.shape == (300, 20) and how in desc and np.unique(y).size == 10


# --------------------------------------------------------------------------- rows
def test_lowrank_family_rows_are_certified_and_match_the_problem_formulas():
    from cvxkml.declare import LowRankLogDet

    rows = fam.lowrank_family_rows(SMALL, sizes=(60, 90), seeds=(0, 1), r=6, constraints=300)
    assert [(r["spec"], r["n"], r["seed"]) for r in rows] == [
        (s, n, seed) for n in (60, 90) for s in SMALL for seed in (0, 1)
    ]
    for row in rows:
        assert row["converged"] and row["abs_rel_gap"] <= 1e-3 and row["max_rel_violation"] <= 1e-3
        assert 0 < row["pairs"] <= 300 and row["iterations"] >= 1 and row["projections"] >= 1
        assert np.isfinite(row["cpu"]) and row["cpu"] >= 0.0
    # the row's objective is the problem's optimum: a much tighter solve agrees to the tolerance
    row = rows[0]
    G0, y, _ = fam.family_factor(row["spec"], row["n"], 6, row["seed"])
    prob = LowRankLogDet(G0, lowrank._workload_pairs(G0, y, 300, row["seed"]), gamma=1.0)
    tight = prob.solve(tol=1e-9, max_iter=100_000)
    assert tight.converged and len(prob.pairs) == row["pairs"]
    assert abs(row["objective"] - tight.objective) <= 1e-3 * max(1.0, abs(tight.objective))
    assert tight.dual_value <= row["objective"] + 1e-9 * max(1.0, abs(row["objective"]))


def test_vonneumann_family_rows_are_certified_end_points():
    from cvxkml.solvers.vonneumann import certificate, vonneumann_pairs

    rows = fam.vonneumann_family_rows(SMALL, sizes=(60,), seeds=(0, 1), r=6, constraints=200)
    assert len(rows) == 4
    for row in rows:
        assert row["finished"] and row["converged"]
        assert row["abs_rel_gap"] <= 1e-3 and row["max_rel_violation"] <= 1e-3
        assert row["projections"] >= 1 and row["cpu_gflops"] > 0
    # the same end point as the solver called directly (the family adds nothing but a CPU cap)
    row = rows[1]
    G0, y, _ = fam.family_factor(row["spec"], 60, 6, row["seed"])
    pc = lowrank._workload_pairs(G0, y, 200, row["seed"])
    F, q0 = vonneumann._orthonormal_factor(G0)
    res = vonneumann_pairs(F, q0, pc.i, pc.j, pc.y, pc.bound, 1.0, 1e-3, 100_000, stop="certificate", violated_passes=5)
    assert res.sweeps == row["iterations"] and res.extra["projections"] == row["projections"]
    assert row["stop"] == "certificate" and row["violated_passes"] == res.extra["violated_passes"]
    # the plain cyclic rule on request
    (plain,) = fam.vonneumann_family_rows(
        (row["spec"],), sizes=(60,), seeds=(row["seed"],), r=6, constraints=200, stop="both", violated_passes=0
    )
    res = vonneumann_pairs(F, q0, pc.i, pc.j, pc.y, pc.bound, 1.0, 1e-3, 100_000)
    assert plain["converged"] and res.extra["projections"] == plain["projections"] and plain["violated_passes"] == 0
    tight = vonneumann_pairs(F, q0, pc.i, pc.j, pc.y, pc.bound, 1.0, 1e-9, 100_000)
    c = certificate(F, q0, pc.i, pc.j, pc.y, pc.bound, tight.xi, tight.lam, tight.extra["W"], tight.extra["q"], 1.0)
    assert abs(c["rel_gap"]) <= 1e-8  # the tight end point is the optimum; the row's within its tolerance
    assert abs(row["objective"] - c["objective"]) <= 1e-3 * max(1.0, abs(c["objective"]))
    assert c["dual"] <= row["objective"] + 1e-9 * max(1.0, abs(row["objective"]))


def test_a_vonneumann_solve_past_the_cpu_cap_is_not_finished_and_not_certified():
    rows = fam.vonneumann_family_rows(SMALL[:1], sizes=(60,), seeds=(0,), r=6, constraints=200, cpu_cap=0.0)
    (row,) = rows
    assert not row["finished"] and not row["converged"] and row["iterations"] == 1


# --------------------------------------------------------------------------- command
def _args(**kw):
    base = dict(
        what="family",
        family=list(SMALL),
        sizes=[60, 80],
        seeds=2,
        seed=0,
        rank=6,
        target=None,
        cpu_cap=None,
        constraints=[200],
        data_dir=None,
        json=None,
    )
    return argparse.Namespace(**{**base, **kw})


COMMANDS = [(fam.lowrank_command, "lowrank"), (fam.vonneumann_command, "vonneumann")]


@pytest.mark.parametrize("command, solver", COMMANDS)
def test_the_bench_commands_run_the_family_and_report_the_worst_instance(command, solver, tmp_path, capsys):
    out = tmp_path / f"{solver}.json"
    assert command(_args(json=str(out))) == 0
    text = capsys.readouterr().out
    assert "load average" in text and "per member" in text and "worst instance at n = 80" in text
    res = json.loads(out.read_text())
    assert res["solver"] == solver and res["constraints"] == 200 and len(res["rows"]) == 2 * 2 * 2
    summary = {(s["spec"], s["n"]): s for s in res["summary"]}
    assert set(summary) == {(s, n) for s in SMALL for n in (60, 80)}
    for (spec, n), s in summary.items():
        sel = [r for r in res["rows"] if r["spec"] == spec and r["n"] == n]
        assert s["instances"] == 2 and s["certified"] == 2
        assert s["max_cpu"] == max(r["cpu"] for r in sel) and s["max_iterations"] == max(r["iterations"] for r in sel)
        assert s["max_abs_rel_gap"] <= 1e-3 and np.isfinite(s["growth_exponent"])
    v = res["verdict"]
    big = [r for r in res["rows"] if r["n"] == 80]
    worst = max(big, key=lambda r: r["cpu"])
    assert v["instances"] == 4 and v["certified"] == 4
    assert (v["worst_spec"], v["worst_seed"], v["worst"]) == (worst["spec"], worst["seed"], worst["cpu"])
    assert v["target"] == fam.DEFAULTS[solver]["target"] and v["met"] == (worst["cpu"] <= v["target"])


@pytest.mark.parametrize("command, solver", COMMANDS)
def test_without_family_the_commands_run_the_rates_and_workload(command, solver, monkeypatch):
    module = {"lowrank": lowrank, "vonneumann": vonneumann}[solver]
    seen = []
    monkeypatch.setattr(module, "command", lambda args: seen.append(getattr(args, "what", None)) or 0)
    assert command(argparse.Namespace(what="all")) == 0 and seen == ["all"]
    assert command(argparse.Namespace()) == 0 and seen == ["all", None]  # a row without the option


def test_a_target_the_worst_instance_misses_is_reported_missed(tmp_path):
    out = tmp_path / "v.json"
    assert fam.main(["lowrank", "--family", SMALL[0], "--sizes", "40", "--seeds", "2", "--rank", "6",
                     "--constraints", "100", "--target", "1e-9", "--json", str(out)]) == 0  # fmt: skip
    v = json.loads(out.read_text())["verdict"]
    assert v["certified"] == 2 and not v["met"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--family", "blobs:d=5:c=3"], "d must equal --rank"),
        (["--family", "blobs:x=1"], "unknown part"),
        (["--family", "blobs:d=6:c=3", "--sizes", "10"], "at least 2 x --rank"),
    ],
)
def test_family_options_that_cannot_run_end_with_one_line_and_status_2(argv, message, capsys):
    assert fam.main(["vonneumann", "--rank", "6", "--constraints", "50", *argv]) == 2
    assert message in capsys.readouterr().err


def test_the_data_sets_checked_are_the_family_members_that_are_data_sets():
    ns = argparse.Namespace(what="family", family=["blobs:d=6:c=3", "mnist5000", "pendigits", "blobs:x=1"])
    assert fam.data_sets(ns) == ("mnist5000", "pendigits")
    assert fam.data_sets(argparse.Namespace(what="all", family=["mnist5000"])) == ()
    assert fam.data_sets(argparse.Namespace(family=["iris"])) == ("iris",)  # the module's own command


def test_a_family_member_whose_data_set_is_missing_ends_with_status_2(tmp_path, capsys):
    argv = ["lowrank", "--family", "pendigits", "--data-dir", str(tmp_path), "--rank", "6", "--sizes", "40"]
    assert fam.main(argv) == 2
    assert "pendigits" in capsys.readouterr().err


def test_more_than_one_constraint_count_is_refused_in_family_mode():
    from benchmarks._commands import CommandError

    with pytest.raises(CommandError, match="one constraint count"):
        fam.family_command(_args(constraints=[100, 200]), "lowrank")


@pytest.mark.parametrize("solver", ["lowrank", "vonneumann"])
def test_python_m_benchmarks_bench_runs_the_family_through_the_command_table(solver, tmp_path, capsys):
    """``python -m benchmarks bench lowrank|vonneumann family …`` reaches the family (the table's
    rows carry FAMILY_OPTIONS and run lowrank_command / vonneumann_command)."""
    from benchmarks.cli import main

    out = tmp_path / "fam.json"
    argv = ["bench", solver, "family", "--family", SMALL[0], "--sizes", "60", "--seeds", "1", "--rank", "6"]
    assert main([*argv, "--constraints", "100", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["solver"] == solver and res["constraints"] == 100 and len(res["rows"]) == 1
    assert res["verdict"]["certified"] == 1 and "worst instance at n = 60" in capsys.readouterr().out
