"""The installed ``cvxkml`` command (:mod:`cvxkml._cli`): ``--version``, ``demo`` (:mod:`cvxkml._demo`),
and ``bench`` / ``reproduce``, which now run from a checkout (one line, status 2).

The printed tables are parsed back (cells are separated by two or more spaces).  No timing
assertions: only that times and ratios are finite and positive.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from cli_output import table_after

from cvxkml import __version__
from cvxkml._cli import main


def run_cli(argv) -> tuple[int, str]:
    """Run ``cvxkml argv`` in-process: (exit code, standard output)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    return rc, buf.getvalue()


def test_version_console_entry_point():
    out = subprocess.run([sys.executable, "-m", "cvxkml", "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"cvxkml {__version__}"


def test_no_command_prints_help():
    rc, out = run_cli([])
    assert rc == 2 and "demo" in out and "python -m benchmarks" in out


@pytest.mark.parametrize("argv", [["bench", "itml", "--quick"], ["reproduce", "lowrank"], ["--debug", "bench"]])
def test_checkout_commands_say_where_they_live(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    group = next(a for a in argv if not a.startswith("-"))
    assert f"python -m benchmarks {group}" in err


@pytest.mark.parametrize("argv", [["demo", "--seed", "-1"], ["demo", "--n", "0"], ["demo", "--n", "x"]])
def test_demo_options_are_typed(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and "must be" in capsys.readouterr().err


# ---------------------------------------------------------------- demo
@pytest.fixture(scope="module")
def demo_output():
    rc, out = run_cli(["demo"])
    assert rc == 0
    return out


def test_demo_knn_table(demo_output):
    headers, rows = table_after(demo_output, "method")
    assert headers == ["method", "fold 1", "fold 2", "mean ± spread", "fit time [s]"]
    assert [r[0] for r in rows] == ["Euclidean", "ITML", "KernelITML (Gaussian)"]
    for r in rows:
        folds = [float(c) for c in r[1:3]]
        mean, spread = (float(c) for c in r[3].split("±"))
        assert all(0.0 <= a <= 1.0 for a in folds)
        assert mean == pytest.approx(np.mean(folds), abs=1e-3)
        assert spread >= 0
    assert min(float(r[3].split("±")[0]) for r in rows) > 0.8  # Wine is easy


def test_demo_fast_vs_exact(demo_output):
    headers, rows = table_after(demo_output, "solver")
    assert headers == ["solver", "objective", "max violation", "time [s]"]
    assert rows[0][0].startswith("fast (Bregman") and rows[1][0].startswith("exact (cvxpy-")
    f_fast, f_exact = float(rows[0][1]), float(rows[1][1])
    assert abs(f_fast - f_exact) <= 1e-5 * abs(f_exact)
    assert all(float(r[2]) < 1e-6 for r in rows)
    gap = float(re.search(r"relative objective gap: (\S+)", demo_output).group(1))
    ratio = float(re.search(r"time ratio fast/exact: (\S+)", demo_output).group(1))
    assert 0 <= gap < 1e-5
    assert math.isfinite(ratio) and ratio > 0
