"""The Table 1 reproduction of Sriperumbudur et al. 2008 (reference.reproduce.kcr) and
``python -m benchmarks reproduce kcr``: protocol pieces and a smoke run (no timing assertions)."""

import contextlib
import io
import json
import re

import numpy as np
import pytest

from benchmarks.cli import main
from reference.reproduce import kcr as rk


def test_stratified_split_sizes_and_disjointness():
    y = np.repeat([0, 1, 2], [50, 30, 20])
    tr, va, te = rk.stratified_split(y, np.random.default_rng(0))
    assert len(set(tr) | set(va) | set(te)) == 100
    assert not (set(tr) & set(va)) and not (set(tr) & set(te)) and not (set(va) & set(te))
    for cls, n in ((0, 50), (1, 30), (2, 20)):
        assert np.sum(y[tr] == cls) == round(0.5 * n) and np.sum(y[va] == cls) == round(0.2 * n)


def test_knn_errors_on_separated_data():
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 20)
    X = rng.normal(size=(40, 2)) * 0.1 + 5 * y[:, None]
    r = rk.knn_errors(X[::2], y[::2], X[1::2], y[1::2], X[1::2], y[1::2])
    assert r["train"] == 0 and r["test"] == 0 and r["k"] == 1


def test_load_dataset_shapes(data_dir):
    for name, shape in (("iris", (150, 4)), ("wine", (178, 13)), ("balance", (625, 4)), ("ionosphere", (351, 34))):
        X, y = rk.load_dataset(name, data_dir)
        assert X.shape == shape and y.shape == (shape[0],)


def test_cli_quick_run(tmp_path):
    path = tmp_path / "kcr.json"
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        rc = main(["reproduce", "kcr", "--quick", "--out", str(path)])
    out = buf.getvalue()
    assert rc == 0, out
    assert f"\nnumbers written to {path}\n\nreproduce kcr finished in " in out
    saved = json.loads(path.read_text())
    assert set(saved) == {"protocol", "results"} and all("splits" not in r and r["fits"] for r in saved["results"])
    row = next(ln for ln in out.splitlines() if ln.startswith("iris (150, 4, 3)"))
    cells = re.split(r"\s{2,}", row.strip())
    assert cells[1] == "75/30/45"
    for cell in cells[2:6]:  # mean ± std of error in %
        mean, std = (float(v) for v in cell.split(" ± "))
        assert 0.0 <= mean <= 100.0 and std == 0.0
    done, total = (int(v) for v in cells[6].split("/"))
    assert total == 4 and 0 <= done <= 4
    assert "(ν, λ) chosen" in out and "train error = resubstitution" in out


def test_unknown_dataset():
    with pytest.raises(ValueError, match="Unknown data set"):
        rk.load_dataset("mnist")


def test_bench_sweep_smoke():
    """The fast-vs-exact sweep behind the reference sheet runs and summarizes (2 draws)."""
    from benchmarks.bench.kcr import gap_sweep_rows, summarize_sweep

    rows = gap_sweep_rows(n_draws=2, seed=1, max_n=12)
    summary = summarize_sweep(rows)
    assert summary["draws"] == 2 and summary["max_n"] <= 12
    assert summary["max_gap"] <= 1e-3 and summary["cert_valid"] == 2


def test_bench_scale_smoke():
    """The scale rows (n = 500 … 2 000) run: exactly n points, the default, the options before dual
    polishing and the working set, and the previous options reach the same certified
    optimum; a CPU cap stops the baseline as unfinished, 0 skips it."""
    from benchmarks.bench.kcr import blobs_problem, growth_exponent, scale_rows

    p = blobs_problem(31)
    assert p.n == 31 and sorted(np.bincount(p.codes)) == [10, 10, 11]
    (row,) = scale_rows(sizes=(45,), baseline_cpu=60.0)
    d, e, b = row["default"], row["before"], row["previous"]
    assert row["n"] == 45 and d["converged"] and b["converged"] and b["finished"] and e["converged"]
    for r in (d, e, b):
        assert r["gap"] <= 1e-3 and r["lower_bound"] <= r["objective"]
        # all certified within 1e-3 of the optimum, so within 2e-3 of each other
        assert abs(d["objective"] - r["objective"]) <= 2e-3 * max(1.0, abs(d["objective"]))
    (capped,) = scale_rows(sizes=(45,), baseline_cpu=1e-9, before_cpu=0)
    assert not capped["previous"]["finished"] and not capped["previous"]["converged"]
    assert "before" not in capped
    assert abs(growth_exponent([100, 200, 400], [1.0, 8.0, 64.0]) - 3.0) < 1e-9


def test_bench_variants_smoke():
    """The solver-variant comparison runs on Iris subsets and summarizes; every variant
    reaches the same certified optimum where it converges."""
    from benchmarks.bench.kcr import summarize_variants, variant_rows

    rows = variant_rows(n_max=30, datasets=("iris",), max_iter=3000)
    assert len(rows) == 9
    summary = summarize_variants(rows)
    assert summary["instances"] == 9 and 0 <= summary["solved_by_all"] <= 9
    for r in rows:
        done = [r[v]["objective"] for v in ("plain+track", "halpern+track", "plain+lapack") if r[v]["converged"]]
        if len(done) > 1:
            assert max(done) - min(done) <= 2e-3 * max(1.0, abs(min(done)))


def test_bench_large_row_smoke(data_dir):
    """The n = 500 benchmark's row at a small n: default and baseline both solve to the
    certified tolerance and agree; the ratio is reported."""
    from benchmarks.bench.kcr import large_n_row

    row = large_n_row(n=60, data_dir=data_dir, max_iter=20_000)
    for part in ("default", "baseline"):
        assert row[part]["converged"] and row[part]["gap"] <= 1e-3
    assert abs(row["default"]["objective"] - row["baseline"]["objective"]) <= 2e-3 * max(
        1.0, abs(row["baseline"]["objective"])
    )
    assert row["speedup_to_1e3"] is not None and row["speedup_to_1e3"] > 0
