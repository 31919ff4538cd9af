"""The ``cvxkml`` command validates before it works (issue 32, item 3) and its edge fuzz
(item 6): every bad option value ends at parse time with argparse's one-line message and
exit status 2, before any computation; a cvxkml error prints one line and exits 2 (a
traceback only with ``--debug``).  Run in-process through :func:`cli.main`."""
import argparse
import io
from contextlib import redirect_stderr

import numpy as np
import pytest

from cvxkml.errors import InvalidInputError
from cvxkml.experiments import cli
from cvxkml.experiments._commands import run_command

BAD = {"int": ["-1", "0", "abc", "1.5", "", "nan", "1e3"], "nonneg": ["-1", "abc", "1.5", "", "nan", "-0.5"],
       "nonneg_float": ["-1", "nan", "inf", "abc", "1e400"], "float": ["-1", "0", "nan", "inf", "-inf", "abc", "1e400"],
       "n_jobs": ["0", "-2", "x"], "data_dir": ["/nonexistent/folder", __file__],
       "file": ["/proc/nope/x.json", "/"], "folder": [__file__]}
N_VECTORS = 120


def _typed_options():
    """(command words, option string, kind) of every typed option of every command."""
    from cvxkml.experiments import _commands as C
    kinds = {C.positive_int: "int", C.non_negative_int: "nonneg", C.n_jobs_int: "n_jobs", C.positive_float: "float",
             C.non_negative_float: "nonneg_float", C.data_folder: "data_dir", C.writable_file: "file",
             C.writable_folder: "folder"}
    out = []

    def walk(parser, words):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, words + [name])
            elif a.option_strings and a.type in kinds:
                out.append((words, a.option_strings[-1], kinds[a.type]))

    walk(cli.build_parser(), [])
    return out


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
    untyped = []

    def walk(parser, words):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, words + [name])
            elif a.option_strings and (a.type in (int, float) or
                                       (a.dest in ("data_dir", "out", "json", "resume") and a.type is None)):
                untyped.append((" ".join(words), a.option_strings[-1]))

    walk(cli.build_parser(), [])
    assert untyped == []


def test_command_line_vectors():
    """≥ 100 bad vectors (deterministic draw over every typed option of every command):
    exit status 2, one error line naming the option, before any work."""
    rng = np.random.default_rng(32)
    opts = _typed_options()
    seen = 0
    for t in range(N_VECTORS):
        words, flag, kind = opts[int(rng.integers(len(opts)))]
        value = BAD[kind][int(rng.integers(len(BAD[kind])))]
        code, err = _run(words + [f"{flag}={value}"])
        assert code == 2, (words, flag, value, err)
        last = err.strip().splitlines()[-1]
        assert flag in last and "error" in last and "Traceback" not in err, (words, flag, value, err)
        seen += 1
    assert seen >= 100


@pytest.mark.parametrize("argv", [
    ["reproduce", "kcr", "--quick", "--splits", "-1"], ["reproduce", "kcr", "--quick", "--splits", "0"],
    ["reproduce", "kcr", "--quick", "--seed", "-1"], ["reproduce", "kcr", "--quick", "--n-jobs", "0"],
    ["bench", "lmnn", "--quick", "--tol", "-1"], ["bench", "lmnn", "--quick", "--tol", "nan"],
    ["bench", "lmnn", "--quick", "--tol", "inf"], ["reproduce", "mkl", "--quick", "--max-iter", "0"],
    ["reproduce", "mkl", "--quick", "--out", "/proc/nope/x.json"], ["reproduce", "mkl", "--quick", "--out", "/"],
    ["reproduce", "yeung", "--quick", "--data-dir", "/nonexistent/empty"],
])
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
    assert cli.build_parser().parse_args(["--debug", "demo"]).debug is True
