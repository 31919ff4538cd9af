"""The Wang et al. 2011 reproduction (reference.reproduce.mkl): statistics, protocol
pieces and a smoke run of ``--quick`` (tiny budgets; the numbers are not a reproduction)."""

import json
import warnings

import numpy as np
import pytest

from reference.reproduce import mkl as rm


def test_mcnemar_and_scores():
    a = np.array([True] * 50 + [False] * 0)
    b = np.array([True] * 30 + [False] * 20)
    # 20 discordant pairs, all in a's favour: χ² = (20 − 1)² / 20 = 18.05, p ≈ 2.1e-5
    assert rm.mcnemar_pvalue(a, b) == pytest.approx(2.15e-5, rel=0.02)
    assert rm.mcnemar_pvalue(a, a) == 1.0
    c = b.copy()
    scores, signs = rm.pairwise_scores({"A": a, "B": b, "C": c})
    assert scores == {"A": 2.0, "B": 0.5, "C": 0.5}
    assert signs[("A", "B")] == "+" and signs[("B", "A")] == "-" and signs[("B", "C")] == "="
    # the paper's scale: with five methods and no significant difference every score is 2.0
    same = {m: a for m in rm.TABLE1_METHODS}
    assert set(rm.pairwise_scores(same)[0].values()) == {2.0}


def test_folds_and_subsamples_are_stratified():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], [50, 30, 20])
    folds = rm._stratified_folds(y, 10, rng)
    assert sorted(np.concatenate(folds).tolist()) == list(range(100))
    assert all(np.bincount(y[f], minlength=3).tolist() == [5, 3, 2] for f in folds)
    sub = rm._stratified_subsample(y, 40, rng)
    assert sub.size == 40 and np.bincount(y[sub]).tolist() == [20, 12, 8]
    assert rm._stratified_subsample(y, None, rng).size == 100
    a, b = rm._two_folds(y, rng)
    assert np.intersect1d(a, b).size == 0 and a.size + b.size == 100


def test_paper_tables_are_complete():
    assert set(rm.PAPER_TABLE1) == set(rm.TABLE1_DATASETS)
    assert all(set(r) == set(rm.TABLE1_METHODS) for r in rm.PAPER_TABLE1.values())
    assert set(rm.PAPER_TABLE2) == set(rm.TABLE2_METHODS)
    # the paper's scores are pairwise McNemar sums over the other four methods
    assert all(sum(s for _, s in r.values()) == 10.0 for r in rm.PAPER_TABLE1.values())


def test_quick_iris_run_and_cli(tmp_path, capsys):
    """One fold of the quick protocol on Iris (scikit-learn data, always available),
    through the command line."""
    path = tmp_path / "r.json"
    args = _parser_with_mkl().parse_args(
        ["reproduce", "mkl", "--quick", "--no-table2", "--max-folds", "1", "--tol", "1e-4", "--out", str(path)]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "Table 1" in out and "iris fold 1/1" in out
    assert f"\nnumbers written to {path}\nreproduce mkl finished in " in out
    data = json.loads(path.read_text())
    assert data["protocol"]["n_folds"] == 3 and data["table2"] is None
    assert data["protocol"]["tol"] == 1e-4
    r = data["table1"]["iris"]
    assert set(r["accuracy"]) == set(rm.TABLE1_METHODS)
    assert r["folds_run"] == 1 and r["n_test"] == 51  # 17 of each class
    assert all(0.0 <= a <= 100.0 for a in r["accuracy"].values())
    assert r["accuracy"]["1-NN"] > 80.0
    assert sum(r["score"].values()) == pytest.approx(10.0)  # 10 unordered pairs
    f0 = r["per_fold"][0]
    assert f0["n_learn"] == 21 and f0["n_train"] == 99
    assert len(f0["mu"]) == 20 and sum(f0["mu"]) == pytest.approx(1.0)
    assert f0["cv_kernel"] in rm.paper_kernels().labels()


def test_resumed_run_loads_finished_folds_and_records_every_fit(tmp_path, capsys):
    """``--resume DIR``: a run stopped after its first fold resumes with the second; the
    numbers equal those of an uninterrupted run.  Every LMNN fit has a record (method,
    kernel, order of the learned matrix, iterations, gap, seconds)."""

    def run(*extra, path):
        args = _parser_with_mkl().parse_args(
            ["reproduce", "mkl", "--quick", "--no-table2", "--tol", "1e-3", "--out", str(path), *extra]
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert args.func(args) == 0
        return json.loads(path.read_text()), capsys.readouterr().out

    store = tmp_path / "store"
    run("--max-folds", "1", "--resume", str(store), path=tmp_path / "a.json")
    assert len(list(store.glob("*.npz"))) == 1
    resumed, out = run("--max-folds", "2", "--resume", str(store), path=tmp_path / "b.json")
    assert "iris fold 1/2 (stored, " in out and "iris fold 2/2 (stored" not in out
    assert len(list(store.glob("*.npz"))) == 2
    plain, out = run("--max-folds", "2", path=tmp_path / "c.json")
    assert "stored" not in out
    r, p = resumed["table1"]["iris"], plain["table1"]["iris"]
    assert r["accuracy"] == p["accuracy"] and r["mcnemar"] == p["mcnemar"]
    assert [f["cv_kernel"] for f in r["per_fold"]] == [f["cv_kernel"] for f in p["per_fold"]]
    # one record per fit: 1 NR + 1 P + 1 H + 40 inner + 1 final LMNN-MKL_CV per fold
    labels = rm.paper_kernels().labels()
    for fold, ref in zip(r["per_fold"], p["per_fold"]):
        fits = fold["lmnn_fits"]
        assert len(fits) == 44
        assert [f["method"] for f in fits].count("LMNN-MKL_CV inner") == 40
        assert [f["kernel"] for f in fits if f["method"] == "LMNN-MKL_CV inner"] == [k for k in labels for _ in (0, 1)]
        assert [f["kernel"] for f in fits if f["method"] == "LMNN-MKL_CV"] == [fold["cv_kernel"]]
        assert all(f["n_iter"] >= 1 and f["seconds"] >= 0 for f in fits)
        # the learned matrix: 3 kernels x 21 points (NR), 21 points (P, H, CV), the two halves (inner)
        order = {f["method"]: f["order"] for f in fits}
        assert order == {"NR-LMNN-MKL": 63, "LMNN-MKL_P": 21, "LMNN_H": 21, "LMNN-MKL_CV": 21, "LMNN-MKL_CV inner": 12}
        assert all(f["order"] + g["order"] == 21 for f, g in zip(fits[3:43:2], fits[4:44:2]))
        assert all(f["gap"] is None or f["gap"] >= -1e-8 * max(1.0, abs(f["objective"])) for f in fits)
        key = [(f["objective"], f["n_iter"]) for f in fits]
        assert key == [(f["objective"], f["n_iter"]) for f in ref["lmnn_fits"]]
    assert sum(len(f["lmnn_fits"]) for f in r["per_fold"]) == r["fits"]
    assert sum(not g["converged"] for f in r["per_fold"] for g in f["lmnn_fits"]) == r["unconverged_fits"]


class _Stop(Exception):
    pass


def test_split_stopped_part_way_resumes_after_its_last_finished_fit(tmp_path, monkeypatch):
    """With a store, every LMNN fit of a split is kept as it ends: a run killed in the
    middle of a fold's inner CV leaves that fold unsaved but its finished fits in
    ``DIR/fits``; the next run computes only the remaining fits, marks the loaded ones'
    records ``stored``, drops the fits once the fold is saved, and its numbers equal an
    uninterrupted run's."""
    from benchmarks._parallel import TaskStore

    proto = rm.quick_protocol()
    proto.tol = 1e-3
    calls = []
    real = rm._lmnn_precomputed

    def counting(*args, **kw):
        calls.append(1)
        if stop_after is not None and len(calls) > stop_after:
            raise _Stop
        return real(*args, **kw)

    monkeypatch.setattr(rm, "_lmnn_precomputed", counting)

    def run(store):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return rm.run_table1_dataset("iris", proto, max_folds=1, store=store)

    store = TaskStore(tmp_path / "store")
    stop_after = 6  # LMNN_H and 5 inner-CV fits, then the "kill"
    with pytest.raises(_Stop):
        run(store)
    assert not list(store.directory.glob("*.npz"))  # the fold did not finish ...
    assert len(list((store.directory / "fits").rglob("*.npz"))) == 8  # ... NR, P, H and 5 inner fits did
    stop_after, calls[:] = None, []
    resumed = run(store)
    assert len(calls) == 42 - 6  # LMNN_H, 40 inner, LMNN-MKL_CV: only the unfinished
    assert len(list(store.directory.glob("*.npz"))) == 1
    assert not list((store.directory / "fits").rglob("*.npz"))  # the saved fold's fits are gone
    fits = resumed["per_fold"][0]["lmnn_fits"]
    assert [f.get("stored", False) for f in fits] == [True] * 8 + [False] * 36
    calls[:] = []
    plain = run(None)
    assert len(calls) == 42 and not (tmp_path / "fits").exists()
    assert resumed["accuracy"] == plain["accuracy"] and resumed["mcnemar"] == plain["mcnemar"]
    p0, r0 = plain["per_fold"][0], resumed["per_fold"][0]
    assert r0["cv_kernel"] == p0["cv_kernel"] and r0["mu"] == p0["mu"]
    strip = [{k: v for k, v in f.items() if k not in ("seconds", "stored")} for f in fits]
    assert strip == [{k: v for k, v in f.items() if k != "seconds"} for f in p0["lmnn_fits"]]


def test_stall_iter_option_reaches_every_lmnn_fit_and_is_validated(tmp_path, capsys, monkeypatch):
    """``--stall-iter`` is a protocol knob (recorded in the JSON) handed to every LMNN
    estimator of the protocol; a negative value is a one-line usage error (exit 2) before any
    fit.  Both runs read Iris alone (``--quick --no-table2``: scikit-learn's copy), so the test
    needs no data folder: without ``--no-table2`` the command's data check would ask for
    mfeat.npz and stop at 'No data folder configured' before the option is validated."""
    from benchmarks._commands import run_command
    from cvxkml._cli import EXIT_USAGE

    seen = []
    real_solve = rm.LMNN._solve

    def spy(self, prob, p):
        seen.append(p.stall_iter)
        return real_solve(self, prob, p)

    monkeypatch.setattr(rm.LMNN, "_solve", spy)
    path = tmp_path / "r.json"
    args = _parser_with_mkl().parse_args(
        ["reproduce", "mkl", "--quick", "--no-table2", "--max-folds", "1", "--stall-iter", "300", "--out", str(path)]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run_command(args) == 0
    assert json.loads(path.read_text())["protocol"]["stall_iter"] == 300
    assert len(seen) == 42 and set(seen) == {300}  # LMNN_H, 40 inner-CV fits, LMNN-MKL_CV
    capsys.readouterr()
    seen.clear()
    args = _parser_with_mkl().parse_args(["reproduce", "mkl", "--quick", "--no-table2", "--stall-iter", "-1"])
    assert run_command(args, "python -m benchmarks reproduce mkl") == EXIT_USAGE
    assert seen == []  # refused before any fit
    err = capsys.readouterr().err
    assert err.strip() == (
        "python -m benchmarks reproduce mkl: --stall-iter must be 0 (off) or a positive number of iterations; got -1"
    )


@pytest.mark.parametrize("bad", ["0", "1", "-1e-3", "2", "nan", "abc"])
def test_tol_option_is_validated(bad, capsys):
    with pytest.raises(SystemExit):
        _parser_with_mkl().parse_args(["reproduce", "mkl", "--tol", bad])
    assert "--tol" in capsys.readouterr().err


def _parser_with_mkl():
    """``reproduce mkl`` alone (its row of the table), its options not typed by the CLI: the
    command's own checks run."""
    import argparse

    from benchmarks._table import TABLE

    p = argparse.ArgumentParser()
    next(r for r in TABLE if (r.group, r.name) == ("reproduce", "mkl")).register(p.add_subparsers(dest="command"))
    return p


def test_quick_mfeat_table2(data_dir):
    if not (data_dir / "mfeat.npz").is_file():
        pytest.skip(f"mfeat.npz not found in {data_dir} (Table 2 needs the Multiple Features data)")
    proto = rm.quick_protocol()
    proto.n_learn_mfeat = 40  # 4 per class: inner-CV halves keep 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = rm.run_table2(proto, data_dir=data_dir, n_splits=1)
    assert set(r["accuracy"]) == set(rm.TABLE2_METHODS) and r["n_test"] == 1000
    s0 = r["per_split"][0]
    assert len(s0["mu"]) == 6 and len(s0["kernels"]) == 6
    assert r["accuracy"]["1-NN"] > 80.0


def test_sonar_loader(data_dir):
    if not (data_dir / "sonar.csv").is_file():
        pytest.skip(f"sonar.csv not found in {data_dir}")
    X, y = rm.load_dataset("sonar", data_dir)
    assert X.shape == (208, 60) and np.unique(y).size == 2
    X, y = rm.load_dataset("wdbc")
    assert X.shape == (569, 30)
    with pytest.raises(rm.InvalidInputError):
        rm.load_dataset("colon")


def test_nr_rows_do_not_depend_on_the_solver_path(tmp_path, capsys):
    """NR-LMNN-MKL alone (``--methods``; 1-NN always runs) along the three solver paths of
    ``--nr-path``: with the least-norm tie-break (the default) every test prediction is the
    same, every fit certified with the selection applied and of the same norm; without it
    (``--nr-tie-break none``) the fits carry no selection record."""

    def run(path, tie="min-norm"):
        out = tmp_path / f"{path}-{tie}.json"
        args = _parser_with_mkl().parse_args(
            ["reproduce", "mkl", "--quick", "--no-table2", "--max-folds", "2", "--methods", "NR-LMNN-MKL"]
            + ["--nr-path", path, "--nr-tie-break", tie, "--out", str(out)]
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert args.func(args) == 0
        capsys.readouterr()
        return json.loads(out.read_text())

    runs = [run(p) for p in rm.NR_PATHS]
    for data in runs:
        r = data["table1"]["iris"]
        assert set(r["accuracy"]) == {"NR-LMNN-MKL", "1-NN"} and data["protocol"]["nr_tie_break"] == "min-norm"
        for f in r["per_fold"]:
            (fit,) = f["lmnn_fits"]
            assert fit["converged"] and fit["tie_break"]["applied"] and fit["tie_break"]["certified"]
            assert (
                f["correct"]["NR-LMNN-MKL"]
                == runs[0]["table1"]["iris"]["per_fold"][f["fold"]]["correct"]["NR-LMNN-MKL"]
            )
    norms = {
        p: [f["lmnn_fits"][0]["tie_break"]["norm"] for f in d["table1"]["iris"]["per_fold"]]
        for p, d in zip(rm.NR_PATHS, runs)
    }
    assert np.allclose(norms["warm-3x"], norms["default"], rtol=1e-6, atol=0)
    plain = run("default", "none")["table1"]["iris"]["per_fold"]
    assert all("tie_break" not in f["lmnn_fits"][0] for f in plain)


def test_recorded_cv_kernels_skip_the_inner_cv_and_give_the_same_numbers(tmp_path, capsys):
    """``--cv-kernels-from`` an earlier run's JSON: LMNN-MKL_CV refits its recorded kernel of
    every fold without the 40 inner-CV fits, and every accuracy, p-value and score is the
    earlier run's; a JSON without the data set is a one-line usage error."""
    from benchmarks._commands import run_command

    def run(*extra, name="r"):
        out = tmp_path / f"{name}.json"
        args = _parser_with_mkl().parse_args(
            ["reproduce", "mkl", "--quick", "--no-table2", "--max-folds", "1", "--out", str(out), *extra]
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = run_command(args)
        capsys.readouterr()
        return code, (json.loads(out.read_text()) if out.exists() else None)

    _, full = run(name="full")
    _, again = run("--cv-kernels-from", str(tmp_path / "full.json"), name="again")
    a, b = full["table1"]["iris"], again["table1"]["iris"]
    for key in ("accuracy", "pvalues", "score", "mcnemar"):
        assert a[key] == b[key]
    assert len(a["per_fold"][0]["lmnn_fits"]) == 44 and len(b["per_fold"][0]["lmnn_fits"]) == 4
    assert b["per_fold"][0]["cv_kernel"] == a["per_fold"][0]["cv_kernel"] and b["per_fold"][0]["cv_kernel_recorded"]
    (tmp_path / "bad.json").write_text(json.dumps({"table1": {}}))
    code, _ = run("--cv-kernels-from", str(tmp_path / "bad.json"), name="bad")
    assert code == 2
