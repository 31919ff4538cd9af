"""How the ``cvxkml`` command is put together: the command names and options (pinned), one
way of registering, a missing data folder as one line on standard error, and
``reproduce yeung --quick`` without matplotlib."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys

import pytest

from benchmarks import _report, _table, cli

PARALLEL = object()
PARALLEL_OPTIONS = ("--n-jobs", "--backend", "--scheduler")

#: every command and its options, in the order of ``--help`` (``<what>``: a positional choice;
#: PARALLEL: the options of ``_parallel.add_parallel_options``)
COMMANDS = {
    "bench itml": ("--quick", "--repeats", "--seed"),
    "bench lowrank": (
        "--quick",
        "--repeats",
        "--seed",
        "--constraints",
        "--no-baseline",
        "--baseline-budget",
        "--data-dir",
        "<what>",
        "--family",
        "--sizes",
        "--seeds",
        "--rank",
        "--target",
        "--cpu-cap",
        "--json",
    ),
    "bench vonneumann": (
        "--quick",
        "--repeats",
        "--seed",
        "--constraints",
        "--budget",
        "--no-baseline",
        "--data-dir",
        "<what>",
        "--family",
        "--sizes",
        "--seeds",
        "--rank",
        "--target",
        "--cpu-cap",
        "--json",
    ),
    "bench mkl": ("--quick", "--parts", "--datasets", "--n", "--old-max-n", "--no-old", "--seed", "--data-dir"),
    "bench pola": ("--quick", "--repeats", "--seed"),
    "bench kcr": (
        "<what>",
        "--draws",
        "--exact-sizes",
        "--scs-eps",
        "--scs-time-limit",
        "--n",
        "--no-baseline",
        "--variant-n",
        "--variants",
        "--variant-data",
        "--sizes",
        "--family",
        "--seeds",
        "--family-lam",
        "--cpu-cap",
        "--target",
        "--seed",
        "--baseline-cpu",
        "--before-cpu",
        "--json",
    ),
    "bench infeasible": ("--quick", "--repeats", "--seed"),
    "bench variants": ("--quick", "--repeats", "--seed", "--scale"),
    "bench exact-limits": (
        "--families",
        "--time-limit",
        "--mem-limit-gib",
        "--start",
        "--max-n",
        "--kill-factor",
        "--jobs",
        "--max-errors",
        "--no-fast",
        "--update",
        "--note",
        "--out",
        "--json",
    ),
    "bench estimators": ("--quick", "--estimators", "--datasets", "--json", "--n-jobs", "--peer-python"),
    "bench lmnn": (
        "--quick",
        "--datasets",
        "--tol",
        "--folds",
        "--no-old",
        "--old-budget",
        "--json",
        "--scale",
        "--peer-python",
        "--peer-timeout",
    ),
    "bench wide": (
        "--quick",
        "--dims",
        "--n",
        "--features-max-d",
        "--seed",
        "--peer-python",
        "--peer-timeout",
        "--json",
    ),
    "reproduce lowrank": ("--quick", "--seed", "--data-dir", "--parts", "--scale", PARALLEL),
    "reproduce yeung": (
        "--quick",
        "--part",
        "--out",
        "--runs",
        "--seed",
        "--data-dir",
        "--implied",
        "--sigma",
        "--xor-std",
        "--neighbors",
        "--rank-rtol",
        "--landmarks",
        PARALLEL,
    ),
    "reproduce spectral": ("--quick", "--repeats", "--seed", "--data-dir", PARALLEL),
    "reproduce trace": (
        "--quick",
        "--dataset",
        "--draws",
        "--tau",
        "--seed",
        "--out",
        "--no-png",
        "--data-dir",
        PARALLEL,
    ),
    "reproduce kcr": (
        "--quick",
        "--splits",
        "--datasets",
        "--grid",
        "--tol",
        "--max-iter",
        "--time-limit",
        "--seed",
        "--out",
        "--data-dir",
        PARALLEL,
    ),
    "reproduce mkl": (
        "--quick",
        "--datasets",
        "--no-table2",
        "--n-folds",
        "--max-folds",
        "--n-splits",
        "--max-iter",
        "--cv-max-iter",
        "--max-outer",
        "--max-convex-iter",
        "--tol",
        "--stall-iter",
        "--no-table1",
        "--methods",
        "--cv-kernels-from",
        "--nr-tie-break",
        "--nr-path",
        "--n-learn",
        "--n-learn-mfeat",
        "--seed",
        "--out",
        "--resume",
        "--data-dir",
        PARALLEL,
    ),
    "reproduce logdet": ("--quick", "--repeats", "--seed", "--data-dir", "--json", PARALLEL),
    "reproduce all": (
        "--quick",
        "--full",
        "--recorded",
        "--sections",
        "--out",
        "--reference",
        "--data-dir",
        "--seed",
        PARALLEL,
    ),
}
#: every reproduction runs its independent fits through joblib (benchmarks._parallel)
COMMANDS = {
    k: tuple(o for opt in v for o in (PARALLEL_OPTIONS if opt is PARALLEL else (opt,))) for k, v in COMMANDS.items()
}


def _subparsers(parser):
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _commands(parser, prefix=""):
    """{"group name": options} of every leaf command, in the parser's order."""
    out = {}
    for name, sub in _subparsers(parser).choices.items():
        if _subparsers(sub) is not None:
            out.update(_commands(sub, prefix + name + " "))
            continue
        opts = []
        for a in sub._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            opts.append(a.option_strings[0] if a.option_strings else "<what>")
        out[prefix + name] = tuple(opts)
    return out


def test_command_names_and_options_are_pinned():
    found = _commands(cli.build_parser())
    assert list(found) == list(COMMANDS)
    assert found == COMMANDS


def test_every_row_registers_the_same_way():
    """Each row of the table adds its commands; a second call adds nothing, and a row's
    commands do not depend on another row's (reversed order: the same commands)."""
    for row in _table.TABLE:
        parser = argparse.ArgumentParser()
        commands = parser.add_subparsers(dest="command")
        row.register(commands)
        first = _commands(parser)
        row.register(commands)
        assert first and _commands(parser) == first, row
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command")
    _table.register(commands, tuple(reversed(_table.TABLE)))
    assert set(_commands(parser)) == set(COMMANDS)


def test_shared_options_are_one_spec():
    """An option named in SHARED has one flag spelling, type and default everywhere it is
    used (only the help and a few keywords change; a command may narrow its range with
    ``number_in``)."""
    seen = {}
    for row in _table.TABLE:
        for o in getattr(row, "options", ()):
            for leaf in getattr(o, "options", (o,)):
                kind = leaf.kw.get("type") if isinstance(leaf, _table.Option) else None
                if isinstance(leaf, _table.Option) and not getattr(kind, "__qualname__", "").startswith("number_in"):
                    seen.setdefault(leaf.flags, set()).add(kind)
    for name, spec in _table.SHARED.items():
        if spec.flags in seen:
            assert seen[spec.flags] == {spec.kw.get("type")}, name
    assert _table.use("seed", "x").kw == {**_table.SHARED["seed"].kw, "help": "x"}


def _run(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "argv, fname",
    [
        (["reproduce", "kcr"], "balance.csv"),
        (["reproduce", "spectral"], "ionosphere.csv"),
        (["reproduce", "spectral", "--quick"], "ionosphere.csv"),
        (["reproduce", "lowrank", "--quick"], "pendigits.csv"),
        (["reproduce", "mkl"], "sonar.csv"),
        (["reproduce", "mkl", "--quick"], "mfeat.npz"),
        (["reproduce", "trace", "--quick", "--no-png"], "mnist5000.npz"),
        (["reproduce", "kcr", "--quick", "--datasets", "balance", "--n-jobs", "2"], "balance.csv"),
        (["reproduce", "lowrank", "--backend", "dask"], "pendigits.csv"),
        (["reproduce", "logdet", "--quick"], "ionosphere.csv"),
    ],
)
def test_missing_data_is_one_line_on_stderr(argv, fname, tmp_path, monkeypatch):
    """Without the data folder's files: exit status 2, one line on standard error naming
    the file, before any experiment runs."""
    monkeypatch.setenv("CVXKML_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run(argv)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("python -m benchmarks " + " ".join(argv[:2]) + ": ")
    assert f"'{fname}' not found" in lines[0] and str(tmp_path) in lines[0] and "--data-dir" in lines[0]
    assert "CVXKML_DATA environment variable" in lines[0]
    assert "finished" not in out and "paper:" not in out


def test_no_data_folder_configured(tmp_path, monkeypatch):
    monkeypatch.delenv("CVXKML_DATA", raising=False)
    monkeypatch.chdir(tmp_path)  # no ../shared/data from here
    rc, _, err = _run(["reproduce", "lowrank"])
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "No data folder configured" in err


def test_reproduce_yeung_quick_without_matplotlib(tmp_path, monkeypatch):
    """The tables are printed, the figure's absence is one line naming the ``plots`` extra,
    and the numbers are still saved."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    monkeypatch.setenv("CVXKML_DATA", str(tmp_path / "no-data"))
    rc, out, err = _run(["reproduce", "yeung", "--quick", "--out", str(tmp_path)])
    assert rc == 0, err
    assert "Table 1 — XOR" in out and "Figure 1 — XOR" in out and "Table 2 skipped" in out
    notes = [ln for ln in out.splitlines() if "matplotlib" in ln]
    assert len(notes) == 1 and "cvxkml[plots]" in notes[0] and "PNG not saved" in notes[0]
    assert not (tmp_path / "yeung2007_figure1.png").exists()
    saved = json.loads((tmp_path / "yeung2007_results.json").read_text())
    assert set(saved) == {"table1", "figure1"} and saved["figure1"]["path"] is None


def test_pyplot_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"The figure needs matplotlib, the 'plots' extra: .*cvxkml\[plots\]"):
        _report.pyplot("The figure")


def test_jsonable():
    import numpy as np

    obj = {1: (np.float64(0.5), np.arange(2)), "skip": np.zeros(3), "b": [np.int64(3), np.bool_(True)]}
    out = _report.jsonable(obj, drop=("skip",))
    assert out == {"1": [0.5, [0, 1]], "b": [3, True]}
    assert json.loads(json.dumps(out)) == out


def test_write_numbers_writes_and_says_where(tmp_path, capsys):
    import numpy as np

    path = tmp_path / "sub" / "numbers.json"
    written = _report.write_numbers(str(path), {"a": np.float64(0.25), "skip": 1}, drop=("skip",))
    assert written == path and json.loads(path.read_text()) == {"a": 0.25}
    assert capsys.readouterr().out == f"numbers written to {path}\n"
    for missing in (None, ""):
        assert _report.write_numbers(missing, {"a": 1}) is None
    assert capsys.readouterr().out == ""
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["numbers.json", "sub"]
