"""The ``cvxkml`` command validates before it works, edge values included: every bad option
value ends at parse time with a one-line message and exit status 2, before any computation;
a command that cannot run as given prints one line and exits 2, one that fails once running
exits 1, an interrupted one 130 (a traceback only with ``--debug``).  Run in-process through
:func:`cli.main` (and :func:`cvxkml._cli.main` for ``cvxkml demo``)."""

import argparse
import io
import os
from contextlib import redirect_stderr

import numpy as np
import pytest

from benchmarks import cli
from benchmarks._commands import CommandError, run_command
from benchmarks._parallel import StoreFileError
from cvxkml.errors import InvalidInputError, SolverError

LONG = "a" * 5000  # longer than any file name the system takes
BAD = {
    "int": ["-1", "0", "abc", "1.5", "", "nan", "1e3", "2147483648"],
    "nonneg": ["-1", "abc", "1.5", "", "nan", "-0.5", "99999999999999999999"],
    "nonneg_float": ["-1", "nan", "inf", "abc", "1e400"],
    "float": ["-1", "0", "nan", "inf", "-inf", "abc", "1e400"],
    "n_jobs": ["0", "-2", "x", "1e11", "100000000000"],
    "seed": ["-1", "abc", "1.5", "4294967296", "99999999999999999999"],
    "data_dir": ["/nonexistent/folder", __file__, "", "~nosuchuser/data", LONG],
    "file": ["/proc/nope/x.json", "/", "", "~nosuchuser/x.json", LONG, "/dev/zero", "out/"],
    "folder": [__file__, "", "~nosuchuser/out", LONG],
    "store": [__file__, "", "~nosuchuser/store", LONG],
}
N_VECTORS = 120


def _typed_options():
    """(command words, option string, kind) of every typed option of every command."""
    from benchmarks import _commands as C
    from benchmarks import _parallel

    kinds = {
        C.positive_int: "int",
        C.size_int: "int",
        C.non_negative_int: "nonneg",
        C.n_jobs_int: "n_jobs",
        C.positive_float: "float",
        C.non_negative_float: "nonneg_float",
        C.data_folder: "data_dir",
        C.seed_int: "seed",
        C.writable_file: "file",
        C.writable_folder: "folder",
        _parallel.store_folder: "store",
    }
    return [
        (words, a.option_strings[-1], kinds[a.type])
        for words, parser in _parsers()
        for a in parser._actions
        if a.option_strings and a.type in kinds
    ]


def _parsers(parser=None, words=()):
    """(command words, parser) of ``cvxkml`` and of every command and group under it."""
    parser = parser or cli.build_parser()
    yield list(words), parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _parsers(sub, (*words, name))


def _run(argv):
    err = io.StringIO()
    with redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


def test_every_number_and_path_option_is_typed():
    opts = _typed_options()
    assert len(opts) > 90
    untyped = [
        (" ".join(words), a.option_strings[-1])
        for words, parser in _parsers()
        for a in parser._actions
        if a.option_strings
        and (a.type in (int, float) or (a.dest in ("data_dir", "out", "json", "resume") and a.type is None))
    ]
    assert untyped == []


def test_command_line_vectors():
    """≥ 100 bad vectors (deterministic draw over every typed option of every command):
    exit status 2, one error line naming the option, before any work."""
    rng = np.random.default_rng(32)
    opts = _typed_options()
    seen = 0
    for _ in range(N_VECTORS):
        words, flag, kind = opts[int(rng.integers(len(opts)))]
        value = BAD[kind][int(rng.integers(len(BAD[kind])))]
        code, err = _run(words + [f"{flag}={value}"])
        assert code == 2, (words, flag, value, err)
        last = err.strip().splitlines()[-1]
        assert flag in last and "error" in last and "Traceback" not in err, (words, flag, value, err)
        seen += 1
    assert seen >= 100


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "kcr", "--quick", "--splits", "-1"],
        ["reproduce", "kcr", "--quick", "--splits", "0"],
        ["reproduce", "kcr", "--quick", "--seed", "-1"],
        ["reproduce", "kcr", "--quick", "--n-jobs", "0"],
        ["bench", "lmnn", "--quick", "--tol", "-1"],
        ["bench", "lmnn", "--quick", "--tol", "nan"],
        ["bench", "lmnn", "--quick", "--tol", "inf"],
        ["reproduce", "mkl", "--quick", "--max-iter", "0"],
        ["reproduce", "mkl", "--quick", "--out", "/proc/nope/x.json"],
        ["reproduce", "mkl", "--quick", "--out", "/"],
        ["reproduce", "yeung", "--quick", "--data-dir", "/nonexistent/empty"],
    ],
)
def test_issue_reproductions(argv):
    code, err = _run(argv)
    assert code == 2 and "Traceback" not in err and argv[-2] in err.strip().splitlines()[-1]


def test_time_limit_option_rejects_negative():
    opts = [o for o in _typed_options() if o[1] == "--time-limit"]
    assert opts
    for words, flag, _ in opts:
        code, err = _run(words + [flag, "-5"])
        assert code == 2 and flag in err


def test_a_cvxkml_error_is_one_line_and_exit_2(capsys):
    def boom(args):
        raise InvalidInputError("tol must be positive;\n got -1.")

    args = argparse.Namespace(func=boom, debug=False)
    assert run_command(args, "cvxkml x") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "InvalidInputError: tol must be positive; got -1." in err
    args.debug = True
    with pytest.raises(InvalidInputError):
        run_command(args, "cvxkml x")


def test_debug_flag_exists():
    assert cli.build_parser().parse_args(["--debug", "bench", "itml"]).debug is True


# ---------------------------------------------------------------- data sets checked before the first fit
def _data_commands():
    """(command words, required data sets with every option at its default, whether it has
    --data-dir) of every command that declares data sets."""
    from benchmarks._commands import data_needed

    return [
        (
            words,
            data_needed(cli.build_parser().parse_args(words))[0],
            any(a.dest == "data_dir" for a in parser._actions),
        )
        for words, parser in _parsers()
        if parser.get_default("data_sets") is not None
    ]


def test_issue_yeung_empty_data_dir_exits_2_at_once(tmp_path, capsys):
    """The issue's reproduction: ``reproduce yeung --data-dir <empty folder>`` computed for
    over a minute before it found mnist5000.npz missing; now one line and exit 2 before
    anything runs."""
    import time

    empty = tmp_path / "empty"
    empty.mkdir()
    t0 = time.perf_counter()
    code, err = _run(["reproduce", "yeung", "--data-dir", str(empty), "--out", str(tmp_path / "out")])
    elapsed = time.perf_counter() - t0
    assert code == 2 and elapsed < 5.0, (code, elapsed, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("python -m benchmarks reproduce yeung: Data file 'mnist5000.npz' not found")
    assert str(empty / "mnist5000.npz") in lines[0] and "--data-dir" in lines[0]
    assert capsys.readouterr().out == ""  # no table printed: nothing computed
    assert not (tmp_path / "out" / "yeung2007_results.json").exists()


def test_every_data_command_declares_its_files():
    cmds = {" ".join(w): (need, d) for w, need, d in _data_commands()}
    assert {
        "reproduce yeung",
        "reproduce kcr",
        "reproduce mkl",
        "reproduce lowrank",
        "reproduce spectral",
        "reproduce trace",
        "reproduce logdet",
        "reproduce all",
        "bench mkl",
        "bench kcr",
        "bench lowrank",
        "bench vonneumann",
    } <= set(cmds)
    assert cmds["reproduce yeung"][0] == ("mnist5000",)
    assert cmds["reproduce mkl"][0] == ("sonar", "wine", "iris", "ionosphere", "wdbc", "mfeat")
    assert cmds["reproduce all"][0] == ()  # recorded results: no data
    assert cmds["bench lowrank"][0] == ()  # mnist5000 optional (synthetic fallback)


def test_reproduce_all_group_data_matches_the_reproductions():
    from reference.reproduce import all as ra
    from reference.reproduce import kcr as rk
    from reference.reproduce import mkl as rm
    from reference.reproduce import spectral as rs

    assert set(ra.GROUP_DATA) == set(ra.GROUPS)
    assert set(ra.GROUP_DATA["uci"]) == set(rs.DATASETS) and set(ra.GROUP_DATA["kcr"]) == set(rk.DATASETS)
    assert set(ra.GROUP_DATA["mkl"]) == set(rm.TABLE1_DATASETS) | {"mfeat"}


#: option variants that change which data sets a command reads
DATA_VARIANTS = [
    ["reproduce", "yeung", "--part", "table2"],
    ["reproduce", "trace", "--dataset", "pendigits"],
    ["reproduce", "mkl", "--quick"],
    ["reproduce", "mkl", "--no-table1"],
    ["reproduce", "lowrank", "--parts", "nursery"],
    ["reproduce", "kcr", "--datasets", "balance"],
    ["reproduce", "all", "--quick"],
    ["reproduce", "all", "--full", "--sections", "yeung"],
    ["bench", "kcr", "large"],
    ["bench", "mkl", "--datasets", "balance"],
]
DAMAGE = ("missing", "empty", "garbage", "folder", "header", "row")


def _damage(folder, name, kind):
    """Put a damaged (or no) ``name`` file in ``folder``; the expected message part."""
    from cvxkml import datasets as ds

    csv = name in ds.CSV_DATASETS
    path = folder / f"{name}.{'csv' if csv else 'npz'}"
    if kind == "missing":
        return f"'{path.name}' not found"
    if kind == "empty":
        path.write_bytes(b"")
        return "the file is empty"
    if kind == "garbage":
        path.write_bytes(bytes(range(256)) * 4)
        return "not a UTF-8 text file" if csv else "not a NumPy .npz archive"
    if kind == "folder":
        path.mkdir()
        return "is not a regular file"
    n_cols = (len(ds.CATEGORY_ORDER[name]) if name in ds.CATEGORY_ORDER else ds.CSV_DATASETS[name][1]) + 1 if csv else 0
    if kind == "header":
        if csv:
            path.write_text("a,b\n1,x\n")
            return "the header line has 2 columns"
        np.savez(path, other=np.zeros(3))
        return "has no array"
    if csv:  # a good row, then a short one
        cells = ["1"] * (n_cols - 1) + ["A"]
        path.write_text(",".join(f"c{k}" for k in range(n_cols)) + "\n" + ",".join(cells) + "\n1,A\n")
        return f"line 3 has 2 columns, expected {n_cols}"
    np.savez(path, **{k: np.zeros((3, 2)) for k in ("X", "fou", "fac", "kar", "pix", "zer", "mor")}, y=np.arange(3))
    return "has shape (3, 2), expected"


def _data_vectors():
    from benchmarks._commands import data_needed

    argvs = [w for w, need, _ in _data_commands() if need] + DATA_VARIANTS
    out = []
    for argv in argvs:
        need = data_needed(cli.build_parser().parse_args(argv))[0]
        first = next(n for n in need if n not in ("iris", "wine", "wdbc"))
        out += [(argv, first, kind) for kind in DAMAGE]
    return out


def test_data_vectors(tmp_path, monkeypatch):
    """Every command that reads data sets, each with a missing, empty, garbage, folder-in-place,
    wrong-header and bad-row file in place of the first one it needs: exit status 2 and one
    line naming the file (and the folder searched), before any computation."""
    import io as _io
    from contextlib import redirect_stdout

    vectors = _data_vectors()
    assert len(vectors) >= 90
    for t, (argv, name, kind) in enumerate(vectors):
        folder = tmp_path / f"v{t}"
        folder.mkdir()
        want = _damage(folder, name, kind)
        monkeypatch.setenv("CVXKML_DATA", str(folder))
        out = _io.StringIO()
        with redirect_stdout(out):
            code, err = _run(argv)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and "Traceback" not in err, (argv, kind, err)
        prefix = "python -m benchmarks " + " ".join(argv[:2]) + ": "
        assert lines[0].startswith(prefix) and want in lines[0], (argv, kind, err)
        assert str(folder) in lines[0] and out.getvalue() == "", (argv, kind, err)
    # --data-dir is searched (not $CVXKML_DATA) when given
    monkeypatch.setenv("CVXKML_DATA", str(tmp_path / "v0"))
    empty = tmp_path / "empty"
    empty.mkdir()
    code, err = _run(["reproduce", "kcr", "--data-dir", str(empty)])
    assert code == 2 and str(empty / "balance.csv") in err


# ---------------------------------------------------------------- user-caused failures found by probing
def test_bad_recorded_results_are_one_line(tmp_path):
    (tmp_path / "recorded-results.json").write_text("{not json")
    code, err = _run(["reproduce", "all", "--reference", str(tmp_path), "--out", str(tmp_path / "o")])
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "recorded-results.json cannot be read (JSONDecodeError" in err
    (tmp_path / "recorded-results.json").write_text("[1, 2]")
    code, err = _run(["reproduce", "all", "--reference", str(tmp_path), "--out", str(tmp_path / "o")])
    assert code == 2 and "is not a JSON object" in err


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["bench", "kcr", "large", "--n", "100000"], 2, "n = 100000 Balance points asked for; the file has 625"),
        (
            ["bench", "estimators", "--quick", "--peer-python", "/nonexistent/python"],
            2,
            "--peer-python /nonexistent/python: no such executable",
        ),
        (["reproduce", "mkl", "--quick", "--no-table1", "--no-table2"], 2, "leave nothing to run"),
        (["bench", "mkl", "--datasets", "wine"], 2, "argument --datasets: invalid choice: 'wine'"),
        (
            ["bench", "exact-limits", "--families", ",", "--max-n", "8"],
            2,
            "--families names no family; choose from ITML",
        ),
        (["bench", "lmnn", "--quick", "--folds", "100"], 2, "its smallest class has 16 points); use --folds between 2"),
        (
            ["reproduce", "mkl", "--quick", "--no-table2", "--n-folds", "1"],
            2,
            "1-fold stratified cross-validation of iris needs 2",
        ),
        (["reproduce", "mkl", "--quick", "--no-table2", "--n-folds", "1000"], 2, "use --n-folds between 2 and 50"),
    ],
)
def test_bad_option_values_and_combinations(argv, code, message, data_dir, monkeypatch, capsys):
    """Each ends before any fit with one line (these reached NumPy / subprocess errors or ran
    nothing and exited 0)."""
    monkeypatch.setenv("CVXKML_DATA", str(data_dir))
    got, err = _run(argv)
    assert got == code and message in err.strip().splitlines()[-1] and "Traceback" not in err, err
    assert "finished" not in capsys.readouterr().out


def test_peer_python_that_cannot_start_is_a_note():
    from benchmarks.bench import estimators as be

    X = np.random.default_rng(0).random((12, 3))
    y = np.arange(12) % 2
    data = {"toy": (X, y, [(np.arange(6), np.arange(6, 12))], "toy")}
    rows, note = be._peer_rows(data, be.FEATURES[:1], 0, "/nonexistent/python")
    assert rows == [] and "could not be started" in note


def test_a_huge_n_jobs_starts_no_more_workers_than_tasks(monkeypatch):
    """--n-jobs 100000 spawned 200+ loky processes for a 2-task run (and timed out)."""
    import joblib

    from benchmarks._parallel import run_tasks

    seen = []

    class Recording(joblib.Parallel):
        def __init__(self, n_jobs=None, **kw):
            seen.append(n_jobs)
            super().__init__(n_jobs=1, **kw)

    monkeypatch.setattr(joblib, "Parallel", Recording)
    assert run_tasks(abs, [-1, -2], n_jobs=100_000) == [1, 2]
    assert run_tasks(abs, [-1, -2, -3], n_jobs=2) == [1, 2, 3]
    assert seen == [2, 2]


def test_unreachable_dask_scheduler_is_a_command_error(monkeypatch):
    pytest.importorskip("distributed")
    import distributed

    from benchmarks._parallel import parallel_context

    def refuse(address, *a, **k):
        raise OSError(f"Timed out trying to connect to {address} after 30 s")

    monkeypatch.setattr(distributed, "Client", refuse)
    with pytest.raises(CommandError, match=r"cannot connect to the Dask scheduler tcp://127\.0\.0\.1:1 .*--scheduler"):
        with parallel_context("dask", "tcp://127.0.0.1:1"):
            pass


def test_documented_commands_parse():
    """Every ``python -m benchmarks bench|reproduce …`` command recorded in reproduce_all (the commands that
    made the reference results) and quoted in README.md / reference/*.md parses: a typed
    option must not refuse a documented value (``--n-learn 0`` = all, ``--stall-iter 0`` = off)."""
    import re
    import shlex
    from pathlib import Path

    from reference.reproduce import all as ra

    root = Path(__file__).resolve().parents[2]
    cmds = set(ra.MKL_FULL_RUNS.values()) | {ra.SPAMBASE_STANDARDIZED_COMMAND}
    cmds |= {re.sub(r"\s*\(.*\)", "", c).strip() for v in ra.SECTIONS.values() for c in v[-1].split(";")}
    for f in [root / "README.md", *sorted((root / "reference").glob("*.md"))]:
        if f.is_file():
            quoted = r"`(python -m benchmarks (?:bench|reproduce) [^`|\[(\n]*)`"
            cmds |= {m.group(1) for m in re.finditer(quoted, f.read_text())}
    assert len(cmds) > 30
    for c in sorted(cmds):
        err = io.StringIO()
        with redirect_stderr(err):
            try:
                args = cli.build_parser().parse_args(shlex.split(c)[3:])
            except SystemExit:
                args = None
        assert args is not None and args.func is not None, (c, err.getvalue())


def test_seed_range():
    assert cli.build_parser().parse_args(["reproduce", "kcr", "--seed", "4294967295"]).seed == 2**32 - 1
    for words in (["reproduce", "spectral"], ["reproduce", "logdet"]):
        code, err = _run(words + ["--seed", "4294967296"])
        assert code == 2 and "below 2**32" in err


# ---------------------------------------------------------------- paths, ranges, exit statuses
def _store_with(tmp_path, make) -> str:
    """A --resume folder whose one stored-result name is made by ``make(path)``."""
    store = tmp_path / "store"
    store.mkdir(exist_ok=True)
    make(store / ("0" * 64 + ".npz"))
    return str(store)


#: {placeholder} in a case -> a path built in tmp_path by the test
PLACES = {
    "zero_store": lambda t: _store_with(t, lambda p: p.symlink_to("/dev/zero")),
    "fifo_store": lambda t: _store_with(t, os.mkfifo),
    "dangling_store": lambda t: _store_with(t, lambda p: p.symlink_to(t / "gone")),
    "folder_store": lambda t: _store_with(t, lambda p: p.mkdir()),
    "fits_file_store": lambda t: _store_with(t, lambda p: (p.parent / "fits").write_text("x")),
    "fifo_file": lambda t: (os.mkfifo(t / "pipe.json"), str(t / "pipe.json"))[1],
    "file_as_parent": lambda t: ((t / "f").write_text("x"), str(t / "f" / "x.json"))[1],
}

#: (command, argv, exit status, part of the one error line): the command-line findings
#: (home folders that cannot be found, names too long, an empty --resume, a huge --n-jobs,
#: store members that are not regular files, usage errors that exited 1) and their kin
CASES = [
    ("bench", ["reproduce", "kcr", "--out", "~nosuchuser/x.json"], 2, "~nosuchuser names no home folder"),
    ("bench", ["reproduce", "kcr", "--out", "~/x.json", "HOME="], 2, "HOME, which is set but empty"),
    ("bench", ["reproduce", "kcr", "--data-dir", "~nosuchuser/data"], 2, "~nosuchuser names no home folder"),
    ("bench", ["reproduce", "mkl", "--resume", "~nosuchuser/store"], 2, "~nosuchuser names no home folder"),
    ("bench", ["reproduce", "all", "--reference", "~nosuchuser"], 2, "~nosuchuser names no home folder"),
    ("bench", ["reproduce", "kcr", "--out", LONG], 2, "File name too long"),
    ("bench", ["reproduce", "mkl", "--resume", LONG], 2, "File name too long"),
    ("bench", ["reproduce", "spectral", "--data-dir", LONG], 2, "File name too long"),
    ("bench", ["reproduce", "yeung", "--out", f"{LONG}/{LONG}"], 2, "File name too long"),
    ("bench", ["reproduce", "mkl", "--resume", ""], 2, "an empty path"),
    ("bench", ["reproduce", "mkl", "--resume", "   "], 2, "an empty path"),
    ("bench", ["reproduce", "kcr", "--out", ""], 2, "an empty path"),
    ("bench", ["reproduce", "kcr", "--data-dir", ""], 2, "an empty path"),
    ("bench", ["reproduce", "kcr", "--out", "a\0b.json"], 2, "NUL character"),
    ("bench", ["reproduce", "kcr", "--out", "x\udcff.json"], 2, "not UTF-8"),
    ("bench", ["reproduce", "kcr", "--out", "results/"], 2, "names a folder"),
    ("bench", ["bench", "exact-limits", "--out", "/dev/zero"], 2, "not a regular file"),
    ("bench", ["bench", "exact-limits", "--out", "{fifo_file}"], 2, "not a regular file"),
    ("bench", ["reproduce", "kcr", "--out", "{file_as_parent}"], 2, "cannot write to its folder"),
    ("bench", ["reproduce", "kcr", "--n-jobs", "1e11"], 2, "--n-jobs"),
    ("bench", ["reproduce", "kcr", "--n-jobs", "100000000000"], 2, "above 1024"),
    ("bench", ["bench", "estimators", "--n-jobs", "1025"], 2, "above 1024"),
    ("bench", ["reproduce", "kcr", "--max-iter", "99999999999999999999"], 2, "above 2147483647"),
    ("bench", ["bench", "wide", "--n", "2147483647"], 2, "above 10000000"),
    ("bench", ["reproduce", "kcr", "--splits", "\u0663"], 2, "must be a positive integer"),
    ("bench", ["reproduce", "kcr", "--scheduler", "notanaddress"], 2, "HOST:PORT"),
    ("bench", ["reproduce", "mkl", "--resume", "{zero_store}"], 2, "is not a regular file"),
    ("bench", ["reproduce", "mkl", "--resume", "{fifo_store}"], 2, "is not a regular file"),
    ("bench", ["reproduce", "mkl", "--resume", "{dangling_store}"], 2, "cannot be read"),
    ("bench", ["reproduce", "mkl", "--resume", "{folder_store}"], 2, "is not a regular file"),
    ("bench", ["reproduce", "mkl", "--resume", "{fits_file_store}"], 2, "fits is not a folder"),
    ("bench", ["reproduce", "mkl", "--no-table1", "--no-table2"], 2, "leave nothing to run"),
    ("bench", ["reproduce", "all", "--sections", "yeung"], 2, "--sections goes with --quick or --full"),
    ("bench", ["bench", "itml", "--no-such-option"], 2, "unrecognized arguments"),
    ("bench", ["reproduce", "nope"], 2, "invalid choice"),
    ("demo", ["demo", "--n", "100000"], 2, "from 5 to 200"),
    ("demo", ["demo", "--n", "2"], 2, "from 5 to 200"),
    ("demo", ["demo", "--seed", "1e11"], 2, "below 2**32"),
    ("demo", ["demo", "--bogus"], 2, "unrecognized arguments"),
]


@pytest.mark.parametrize("command, argv, code, message", CASES, ids=lambda v: str(v)[:40])
def test_command_line_findings(command, argv, code, message, tmp_path, monkeypatch, capsys):
    """Each ends before any work with the documented status and one line on standard error,
    no traceback (these raised RuntimeError / OSError, ran, or hung)."""
    from cvxkml import _cli

    monkeypatch.chdir(tmp_path)
    for a in [a for a in argv if a.startswith("HOME=")]:  # an environment variable, not an argument
        monkeypatch.setenv("HOME", a[5:])
        argv = [b for b in argv if b != a]
    argv = [a.format(**{k: make(tmp_path) for k, make in PLACES.items() if "{" + k + "}" in a}) for a in argv]
    err = io.StringIO()
    with redirect_stderr(err):
        try:
            got = (cli.main if command == "bench" else _cli.main)(argv)
        except SystemExit as exc:
            got = exc.code
    lines = err.getvalue().strip().splitlines()
    assert got == code and len(lines) == 1 and "Traceback" not in err.getvalue(), (argv, err.getvalue())
    assert message in lines[0], (argv, lines)
    assert capsys.readouterr().out == ""  # nothing ran


def _raising(exc):
    def func(args):
        raise exc

    return func


@pytest.mark.parametrize(
    "exc, code",
    [
        (StoreFileError("x.npz is damaged"), 2),
        (CommandError("--a goes with --b"), 2),
        (InvalidInputError("sigma must be positive"), 2),
        (SolverError("the solver failed"), 1),
        (OSError(28, "No space left on device"), 1),
        (MemoryError(), 1),
        (KeyboardInterrupt(), 130),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_exit_statuses(exc, code, capsys):
    """Usage errors exit 2 (a stored result that cannot be used and options that do not go
    together exited 1), failures once running 1, Ctrl-C 130: one line each."""
    args = argparse.Namespace(func=_raising(exc), debug=False)
    assert run_command(args, "python -m benchmarks x") == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m benchmarks x: ") and "Traceback" not in err


def test_exit_statuses_are_in_every_help():
    from cvxkml import _cli

    for words, parser in [*_parsers(), ([], _cli.build_parser())]:
        assert parser.epilog == _cli.EXIT_STATUS_HELP or _cli.EXIT_STATUS_HELP in parser.epilog, words


def test_a_store_member_that_is_not_a_regular_file_is_refused_when_read(tmp_path):
    """A member made a pipe or a link to /dev/zero after the options were checked: the load
    ends at once with StoreFileError (opened without blocking, checked on the open file)."""
    import time

    from benchmarks._parallel import TaskStore

    store = TaskStore(tmp_path)
    for k, make in enumerate((os.mkfifo, lambda p: p.symlink_to("/dev/zero"))):
        key = f"{k:064x}"
        make(tmp_path / f"{key}.npz")
        t0 = time.perf_counter()
        with pytest.raises(StoreFileError, match="not a regular file"):
            store.load(key)
        assert time.perf_counter() - t0 < 5.0
