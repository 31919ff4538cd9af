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


# --------------------------------------------------------------------------- instance family
def test_family_generators_are_standardized_balanced_and_seeded():
    from benchmarks.bench import _lmnn_family as fam

    X, y = fam.family_points("digitlike:d=12:c=4", 203, seed=5)
    assert X.shape == (203, 12) and np.bincount(y).tolist() == [51, 51, 51, 50]
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1.0, rtol=1e-12)
    X2, y2 = fam.family_points("digitlike:d=12:c=4", 203, seed=5)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)  # a seed is an instance
    assert not np.allclose(X, fam.family_points("digitlike:d=12:c=4", 203, seed=6)[0])
    # the members of benchmarks._family pass through unchanged
    Xc, yc = fam.family_points("classification:d=5:c=3:sep=1", 90, seed=0)
    assert Xc.shape == (90, 5) and set(yc.tolist()) == {0, 1, 2}
    assert fam._parse("digitlike") == ("digitlike", {"d": 50, "c": 10})


def test_digitlike_trailing_axes_are_mostly_noise():
    """Before standardization the class centres' spread decays faster along the axes than the
    noise's: the leading axes carry the classes (a between / within variance ratio that falls)."""
    from benchmarks.bench import _lmnn_family as fam

    X, y = fam._digitlike(20000, 30, 40, np.random.default_rng(0))
    means = np.array([X[y == c].mean(axis=0) for c in range(40)])
    within = np.array([X[y == c].var(axis=0) for c in range(40)]).mean(axis=0)
    ratio = means.var(axis=0) / within  # expected ∝ (1 + axis)^(2 (NOISE_DECAY − SIGNAL_DECAY))
    assert ratio[:5].mean() > 2 * ratio[-10:].mean()


def test_bad_family_specs_are_one_line_errors():
    from benchmarks.bench import _lmnn_family as fam

    for bad in ("digitlike:x=3", "digitlike:d=two", "digitlike:c=1", "mnist5000-pca50:d=3", "blobs:sep=1"):
        with pytest.raises(CommandError, match="family spec"):
            fam.check_specs([bad])
    fam.check_specs(fam.LMNN_FAMILY)


def test_upsampled_mnist_keeps_the_real_images_and_labels(data_dir):
    from benchmarks.bench import _lmnn_family as fam

    X, y = fam._mnist_pca50(5600, seed=0, data_dir=data_dir)
    Xr, yr = fam._mnist_pca50(5000, seed=0, data_dir=data_dir)  # all 5 000: a permutation
    assert X.shape == (5600, 50) and np.bincount(y).sum() == 5600
    assert np.array_equal(np.sort(yr), np.sort(y[:5000]))
    new = X[5000:]
    # every new point lies near (between, plus a little noise) images of its own class, not on one
    nearest = ((new[:, None, :] - X[None, :5000, :]) ** 2).sum(-1)
    assert np.all(nearest.min(axis=1) > 0.0)
    same = y[:5000][nearest.argmin(axis=1)] == y[5000:]
    assert same.mean() > 0.8
    sub, ysub = fam._mnist_pca50(1000, seed=1, data_dir=data_dir)
    assert sub.shape == (1000, 50) and np.bincount(ysub).min() >= 90  # stratified


def test_family_rows_are_certified_and_summarized():
    from benchmarks._family import summarize
    from benchmarks.bench import _lmnn_family as fam

    specs = ("classification:d=4:c=3:sep=2", "digitlike:d=6:c=3")
    rows = fam.family_rows(specs, sizes=(40, 60), seeds=(0, 1), tol=1e-4, cpu_cap=60.0)
    assert [(r["spec"], r["n"], r["seed"]) for r in rows] == [
        (s, n, seed) for s in specs for n in (40, 60) for seed in (0, 1)
    ]
    for r in rows:
        assert r["converged"] and 0.0 <= r["gap"] <= 1e-4 and r["cpu"] > 0
        # every triplet: k targets per point times the points of the other classes
        counts = np.bincount(fam.family_points(r["spec"], r["n"], r["seed"])[1])
        assert r["triplets"] == int(np.sum(counts * fam.K * (counts.sum() - counts)))
    summary = summarize(rows, by="spec", worst=("gap",))
    assert [(s["spec"], s["n"], s["certified"]) for s in summary] == [(s, n, 2) for s in specs for n in (40, 60)]
    lines = fam.family_report(rows, 60, target=1e9)
    assert all(s in lines[0] for s in specs) and lines[-1].startswith("n = 60: 4/4 certified")
    assert lines[-1].endswith(": met")
    assert fam.family_report(rows, 60, target=0.0)[-1].endswith("NOT met")
    assert not fam.family_report(rows, 999)[-1]  # no instance of that size: no verdict line


def test_a_real_member_runs_at_its_own_sizes_and_never_beyond_the_data(data_dir, monkeypatch):
    from benchmarks.bench import _lmnn_family as fam

    monkeypatch.setattr(fam, "_warm_up", lambda: None)
    rows = fam.family_rows(
        ("balance",), sizes=(10,), seeds=(0,), real_sizes={"balance": (100, 5000)}, data_dir=data_dir
    )
    assert [r["n"] for r in rows] == [100]  # 5 000 > the 625 Balance points: skipped, not upsampled


def test_large_scale_names_are_mnist_shaped():
    from benchmarks.bench import _lmnn_family as fam

    assert {"digitlike60k", "mnist-pca50-up60k", "family"} <= set(bench_lmnn.SCALE_CHOICES)
    assert fam.LARGE["digitlike15k"] == ("digitlike:d=50:c=10", 15000)
    Z, y, what = bench_lmnn.load_scale_dataset("digitlike15k")
    assert Z.shape == (15000, 50) and np.unique(y).size == 10 and "digitlike" in what


def test_bench_lmnn_scale_family_quick_cli(tmp_path):
    import json

    out = tmp_path / "f.json"
    text = run_cli_ok(["bench", "lmnn", "--scale", "family", "--quick", "--json", str(out)])
    ((head, rows),) = output_tables(text)
    assert head[:3] == ["member", "n", "certified"] and len(rows) == 4
    assert all(r[2] == "2/2" for r in rows)
    got = json.loads(out.read_text())["family"]
    assert len(got["rows"]) == 8 and all(r["converged"] for r in got["rows"])


def test_peer_runs_report_their_cpu_and_a_cap(tmp_path, monkeypatch):
    """A peer script that answers gets its children's CPU seconds; one that outlives the cap
    is 'did not finish in T s' (scripts stand in for the peers: no peer venv is needed)."""
    import sys

    fast = tmp_path / "fast.py"
    fast.write_text(
        "import json, sys\nimport numpy as np\nd = np.load(sys.argv[2])\n"
        "json.dump({'L': np.eye(d['Z'].shape[1]).tolist(), 'seconds': 0.01, 'n_iter': 1}, open(sys.argv[3], 'w'))\n"
    )
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(30)\n")
    Z, y = np.eye(4), np.arange(4) % 2
    monkeypatch.setitem(bench_lmnn.PEER_SCRIPTS, "metric-learn", fast)
    ans = bench_lmnn._peer_lmnn(sys.executable, Z, y, 60.0, "metric-learn")
    assert ans["L"] == np.eye(4).tolist() and ans["cpu"] >= 0.0
    monkeypatch.setitem(bench_lmnn.PEER_SCRIPTS, "metric-learn", slow)
    assert bench_lmnn._peer_lmnn(sys.executable, Z, y, 0.5, "metric-learn") == {"error": "did not finish in 0.5 s"}
