"""``python -m benchmarks bench estimators --quick`` on a tiny subset of the estimators: the table's
columns, the Euclidean baseline rows, the certificates, the JSON, the metric-learn line.
No timed assertions."""

import json

import pytest
from cli_output import output_tables, run_cli

from benchmarks import _peer_metric_learn
from benchmarks.bench import estimators as be
from cvxkml._cli import EXIT_USAGE


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "estimators.json"
    rc, out = run_cli(
        ["bench", "estimators", "--quick", "--estimators", "KernelITML", "KCRClassifier", "--json", str(path)]
    )
    assert rc == 0
    return out, json.loads(path.read_text())


def test_table_columns_and_baseline_row(quick):
    out, _ = quick
    assert out.startswith("python -m benchmarks bench estimators (quick): 3-fold stratified CV (seed 0)")
    assert "\nnumbers written to " in out and "estimators.json\n\nbench finished in " in out
    tables = output_tables(out)
    assert len(tables) == 1  # quick: Wine only
    headers, rows = tables[0]
    assert headers == be.HEADERS
    cells = {(r[0], r[1]): r for r in rows}
    assert set(cells) == {(name, f) for name in (be.BASELINE, "KernelITML", "KCRClassifier") for f in be.FEATURES}
    assert [r[0] for r in rows[:2]] == [be.BASELINE, be.BASELINE]  # the baseline comes first
    assert cells[(be.BASELINE, "standardized")][3] == "-"  # the reference of 'vs baseline'
    for (name, _), r in cells.items():
        mean = float(r[2].split(" ± ")[0])
        assert 0.0 <= mean <= 1.0 and float(r[4]) >= 0.0
        if name != be.BASELINE:
            assert r[5] in {"0/3", "1/3", "2/3", "3/3"} and r[7] != "-"  # a solution_ on every fold
    assert "wine (60 x 13, 3 classes" in out and "bench finished in" in out


def test_metric_learn_is_one_line_or_rows(quick):
    out, data = quick
    peer_rows = [r for r in data["rows"] if r["estimator"].startswith("metric-learn")]
    notes = [ln for ln in out.splitlines() if ln.startswith("metric-learn peer rows skipped")]
    assert (len(notes) == 1 and not peer_rows and "scikit-learn < 1.8" in notes[0]) or (
        not notes and {r["estimator"] for r in peer_rows} == set(_peer_metric_learn.PEERS)
    )


def test_json_holds_every_fold(quick):
    _, data = quick
    assert data["settings"]["quick"] and data["settings"]["estimators"] == ["KernelITML", "KCRClassifier"]
    ours = [r for r in data["rows"] if not r["estimator"].startswith("metric-learn")]
    assert len(ours) == 6 and all(r["error"] is None for r in ours)
    assert all(len(r["fold_accuracy"]) == 3 for r in ours)
    for r in ours:
        if r["estimator"] == be.BASELINE:
            assert r["certificates"] is None
        else:
            assert len(r["certificates"]) == 3
            assert {"converged", "rel_gap", "max_violation"} <= set(r["certificates"][0])


def test_a_failing_estimator_is_a_row(monkeypatch):
    """An estimator that raises with its defaults gives an error row, not a crash."""
    X, y, _ = be.load_bench_dataset("wine", quick=True)

    def broken(name, features, seed=be.SEED):
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr(be, "make_pipeline", broken)
    row = be.run_cell(("KernelITML", "wine", "raw", X, y, be.cv_folds(y), be.SEED))
    assert row["error"] == "RuntimeError: broken on purpose" and row["fit_s"] is None
    text = be.format_report({"datasets": {"wine": "x"}, "rows": [row], "settings": {"seed": 0}})
    assert "error (see below)" in text and "wine / raw / KernelITML: RuntimeError: broken on purpose" in text


def test_unknown_names_are_one_line(capsys):
    rc, out = run_cli(["bench", "estimators", "--quick", "--estimators", "NoSuchLearner"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == EXIT_USAGE and out == "" and len(err) == 1 and "NoSuchLearner" in err[0] and "KernelITML" in err[0]
    rc, _ = run_cli(["bench", "estimators", "--quick", "--datasets", "iris"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == EXIT_USAGE and len(err) == 1 and "digits500" in err[0]
