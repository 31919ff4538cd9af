"""Shared helpers for tests that run the ``cvxkml`` command and read its printed tables."""

import contextlib
import io
import math
import re

from benchmarks.cli import main


def run_cli(argv) -> tuple[int, str]:
    """Run ``cvxkml argv`` in-process: (exit code, standard output)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    return rc, buf.getvalue()


def run_cli_ok(argv) -> str:
    """Standard output of ``cvxkml argv``, which must exit with 0."""
    rc, out = run_cli(argv)
    assert rc == 0
    return out


def output_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every table of the output (header line followed by a dashes line): (headers, rows)."""
    lines = text.splitlines()
    out = []
    for k in range(1, len(lines)):
        if lines[k].strip() and set(lines[k].replace(" ", "")) == {"-"}:
            headers = re.split(r"\s{2,}", lines[k - 1].strip())
            rows = []
            for ln in lines[k + 1 :]:
                if not ln.strip() or ln.startswith(("(", "paper", " ")):
                    break
                rows.append(re.split(r"\s{2,}", ln.strip()))
            assert rows and all(len(r) == len(headers) for r in rows), (headers, rows)
            out.append((headers, rows))
    return out


def positive_finite(cell: str) -> bool:
    v = float(cell)
    return math.isfinite(v) and v > 0
