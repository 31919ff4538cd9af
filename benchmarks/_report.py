"""What every experiment's report shares: text tables, ``mean ± std`` cells, JSON output, the
first and last lines of a report and the optional matplotlib import.

The benchmark and reproduction modules import from here; this module imports nothing else of
:mod:`benchmarks`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from cvxkml._demo import format_table  # the table format of every report, `cvxkml demo`'s too

__all__ = [
    "PLOTS_EXTRA",
    "format_table",
    "columns",
    "yes_no",
    "pm",
    "jsonable",
    "write_json",
    "write_numbers",
    "pyplot",
    "start",
    "finish",
]

#: How to install what the figures need (the ``plots`` extra of pyproject.toml).
PLOTS_EXTRA = "pip install 'cvxkml[plots]'"


def columns(rows, spec) -> str:
    """:func:`format_table` of dict rows by column: ``spec`` is a sequence of ``(header, cell)``,
    ``cell`` a template filled with the row (``"{speed:.3g}"``) or a function of the row."""
    return format_table([h for h, _ in spec], [[c(r) if callable(c) else c.format(**r) for _, c in spec] for r in rows])


def row_line(row) -> str:
    """One row as an indented ``key=value, …`` line (floats to 4 significant digits): how the
    family benchmarks report each solve as it finishes."""
    return "  " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())


def yes_no(flag) -> str:
    """``"yes"`` or ``"no"``."""
    return "yes" if flag else "no"


def pm(mean: float, std: float, fmt: str = ".3f") -> str:
    """A ``mean ± std`` cell, both numbers in format ``fmt``."""
    return f"{mean:{fmt}} ± {std:{fmt}}"


def jsonable(obj, drop=()):
    """``obj`` with NumPy scalars and arrays turned into Python numbers and lists.

    Parameters
    ----------
    obj : object
        Nested dicts, lists and tuples of numbers, strings, NumPy scalars and arrays.
    drop : collection of str, default ()
        Dictionary keys left out at any depth (bulky arrays such as embeddings).

    Returns
    -------
    object
        The same structure with string keys, lists for tuples and arrays, Python scalars.
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v, drop) for k, v in obj.items() if k not in drop}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, drop) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj


def write_json(path, obj, drop=()) -> Path:
    """Write ``jsonable(obj, drop)`` as indented JSON to ``path`` (parent folder created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jsonable(obj, drop), indent=1))
    return path


def write_numbers(path, obj, drop=()) -> Path | None:
    """The closing step of a command with an output option: :func:`write_json`, then print
    ``numbers written to <path>``; nothing when ``path`` is None or empty.  Returns the file or None."""
    if not path:
        return None
    written = write_json(path, obj, drop)
    print(f"numbers written to {path}")
    return written


def pyplot(what: str):
    """``matplotlib.pyplot`` with the Agg backend.

    Raises
    ------
    ImportError
        One line: ``what`` (e.g. ``"Figure 1"``) needs matplotlib, the ``plots`` extra, and how to install it.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(f"{what} needs matplotlib, the 'plots' extra: {PLOTS_EXTRA}") from exc
    return plt


def start(command: str, quick: bool, conditions: str) -> float:
    """Print a benchmark's first line, ``<command> (quick|full): <conditions>``; returns the
    start time (:func:`time.perf_counter`) for :func:`finish`."""
    t_start = time.perf_counter()
    print(f"{command} ({'quick' if quick else 'full'}): {conditions}", flush=True)
    return t_start


def finish(what: str, t_start: float) -> int:
    """Print a report's last line, ``<what> finished in <seconds> s``; returns 0, the exit status."""
    print(f"{what} finished in {time.perf_counter() - t_start:.1f} s")
    return 0
