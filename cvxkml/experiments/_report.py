"""What every experiment's report shares: text tables, ``mean ± std`` cells, numbers as
JSON and the optional matplotlib import.

The experiment modules import from here; this module imports nothing of
:mod:`cvxkml.experiments`.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

__all__ = ["PLOTS_EXTRA", "format_table", "pm", "jsonable", "write_json", "write_numbers", "pyplot", "start",
           "finish"]

#: How to install what the figures need (the ``plots`` extra of pyproject.toml).
PLOTS_EXTRA = "pip install 'cvxkml[plots]'"


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """Left-aligned text table; columns separated by at least two spaces.

    Parameters
    ----------
    headers : list of str
        Column titles.
    rows : list of list of str
        The cells, one list per row, as many cells as ``headers``.

    Returns
    -------
    str
        The header line, a line of dashes under each title, then one line per row
        (trailing blanks removed).
    """
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h)
              for k, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def pm(mean: float, std: float, fmt: str = ".3f") -> str:
    """A ``mean ± std`` cell.

    Parameters
    ----------
    mean, std : float
    fmt : str, default ".3f"
        Format specification of both numbers.

    Returns
    -------
    str
    """
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
        The same structure with string keys, lists for tuples and arrays, and Python
        scalars, ready for :func:`json.dumps`.
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
    """Write ``jsonable(obj, drop)`` as indented JSON, creating the parent folder.

    Parameters
    ----------
    path : str or Path
    obj : object
        See :func:`jsonable`.
    drop : collection of str, default ()
        See :func:`jsonable`.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jsonable(obj, drop), indent=1))
    return path


def write_numbers(path, obj, drop=()) -> Path | None:
    """The closing step of a command with an output option: write the numbers, say where.

    Writes ``obj`` with :func:`write_json` and prints ``numbers written to <path>``, the
    path as given; does nothing when ``path`` is None or empty (the option not given).

    Parameters
    ----------
    path : str, Path or None
        The value of the command's output option.
    obj, drop
        As for :func:`write_json`.

    Returns
    -------
    Path or None
        The file written, or None when nothing was written.
    """
    if not path:
        return None
    written = write_json(path, obj, drop)
    print(f"numbers written to {path}")
    return written


def pyplot(what: str):
    """``matplotlib.pyplot`` with the non-interactive Agg backend.

    Parameters
    ----------
    what : str
        What the figure is, for the error message (e.g. ``"Figure 1"``).

    Returns
    -------
    module
        ``matplotlib.pyplot``.

    Raises
    ------
    ImportError
        One line saying that ``what`` needs matplotlib, the ``plots`` extra, and how to
        install it.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(f"{what} needs matplotlib, the 'plots' extra: {PLOTS_EXTRA}") from exc
    return plt


def start(command: str, quick: bool, conditions: str) -> float:
    """Print the first line of a benchmark, ``<command> (quick|full): <conditions>``.

    Parameters
    ----------
    command : str
        The command as typed, e.g. ``"cvxkml bench pola"``.
    quick : bool
        Whether the run is the quick one.
    conditions : str
        How it measures (threads, repeats, warm-up).

    Returns
    -------
    float
        The start time (:func:`time.perf_counter`), for :func:`finish`.
    """
    t_start = time.perf_counter()
    print(f"{command} ({'quick' if quick else 'full'}): {conditions}", flush=True)
    return t_start


def finish(what: str, t_start: float) -> int:
    """Print the last line of a report, ``<what> finished in <seconds> s``.

    Parameters
    ----------
    what : str
        E.g. ``"bench"`` or ``"reproduce kcr"``.
    t_start : float
        :func:`time.perf_counter` at the start.

    Returns
    -------
    int
        0, the command's exit status.
    """
    print(f"{what} finished in {time.perf_counter() - t_start:.1f} s")
    return 0
