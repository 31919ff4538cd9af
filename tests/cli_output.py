"""Shared helpers for tests that run the ``cvxkml`` command and read its printed tables."""

import contextlib
import io
import math
import re


def run_cli(argv) -> tuple[int, str]:
    """Run the checkout's command (``python -m benchmarks argv``) in-process: (exit code,
    standard output)."""
    from benchmarks.cli import main  # the checkout's command; the installed demo needs none of it

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    return rc, buf.getvalue()


def run_cli_ok(argv) -> str:
    """Standard output of ``cvxkml argv``, which must exit with 0."""
    rc, out = run_cli(argv)
    assert rc == 0
    return out


def table_after(text: str, first_header: str) -> tuple[list[str], list[list[str]]]:
    """The table whose header row starts with ``first_header``: (headers, rows)."""
    lines = text.splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith(first_header + "  "))
    headers = re.split(r"\s{2,}", lines[start].strip())
    assert set(lines[start + 1].replace(" ", "")) == {"-"}
    rows = []
    for ln in lines[start + 2 :]:
        if not ln.strip() or ln.startswith("("):
            break
        rows.append(re.split(r"\s{2,}", ln.strip()))
    assert rows and all(len(r) == len(headers) for r in rows)
    return headers, rows


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
