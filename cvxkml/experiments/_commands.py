"""How a command is added to ``cvxkml``, its options typed, its data checked, and run.

The commands are the rows of :data:`._table.TABLE`; a module kept outside the table adds its
own with ``register(commands)``::

    def register(commands) -> None:
        p = add_command(commands, "reproduce", "kcr", _cmd, help="...",
                        datasets=lambda args: args.datasets)   # the data sets it reads
        if p is None:                # already registered
            return
        p.add_argument(...)          # _cmd(args) prints and returns the exit status

``commands`` is the subparsers action of the ``cvxkml`` parser; the ``bench`` and
``reproduce`` groups are made on first use.  A command that reads data files declares them
(``datasets=`` of :func:`add_command`, or :func:`needs_data`); :func:`run_command` checks
that each one is there and loads cleanly before the command starts, so a missing or
damaged file ends it at once with one line and exit status 2.  This module imports
nothing of :mod:`cvxkml.experiments`.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

from ..datasets import DataNotFoundError, check_available
from ..errors import CvxkmlError

__all__ = ["GROUPS", "CommandError", "add_parser", "add_command", "subcommands", "add_run_options",
           "number_in", "needs_data", "data_needed", "check_data", "run_command", "positive_int",
           "non_negative_int", "n_jobs_int", "seed_int", "positive_float", "non_negative_float", "data_folder",
           "writable_file", "writable_folder", "type_options"]

#: group -> (help, metavar of its commands)
GROUPS = {"bench": ("benchmarks", "BENCHMARK"), "reproduce": ("paper reproductions", "EXPERIMENT")}

_DEST = {"bench": "benchmark", "reproduce": "experiment"}


class CommandError(Exception):
    """A command cannot run as asked (an option needs an optional extra that is not
    installed, or options that do not go together): :func:`run_command` prints the
    message as one line and returns 1."""


def _subparsers(parser: argparse.ArgumentParser):
    """The subparsers action of ``parser``, or None."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def subcommands(commands, group: str):
    """The subparsers action of the ``cvxkml <group>`` command, made on first use.

    Parameters
    ----------
    commands : argparse._SubParsersAction
        The subparsers action of the ``cvxkml`` parser.
    group : {"bench", "reproduce"}

    Returns
    -------
    argparse._SubParsersAction
        Where the group's commands are added.  ``cvxkml <group>`` alone prints the
        group's help and exits with status 2.
    """
    parser = commands.choices.get(group)
    if parser is None:
        help_, metavar = GROUPS[group]
        parser = commands.add_parser(group, help=help_)
        parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])
    return _subparsers(parser) or parser.add_subparsers(dest=_DEST[group], metavar=GROUPS[group][1])


def add_parser(sub, name: str, func, help: str):
    """A new parser ``name`` in the subparsers action ``sub`` running ``func``, or None when
    ``sub`` has one of that name already.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        Where the command goes (``cvxkml``'s subparsers, or a group's).
    name : str
        The command's name.
    func : callable
        ``func(args) -> int``: runs the command, prints, returns the exit status.
    help : str
        The command's line in the ``--help`` of ``sub``'s parser.

    Returns
    -------
    argparse.ArgumentParser or None
        The parser, for the command's options; None when ``name`` is registered already
        (so ``register`` may be called twice).
    """
    if name in sub.choices:
        return None
    parser = sub.add_parser(name, help=help)
    parser.set_defaults(func=func)
    return parser


def add_command(commands, group: str | None, name: str, func, help: str, datasets=None, optional_datasets=None):
    """A new parser for ``cvxkml [group] name`` running ``func``, or None when it exists.

    Parameters
    ----------
    commands : argparse._SubParsersAction
        The subparsers action of the ``cvxkml`` parser.
    group : {"bench", "reproduce"} or None
        The group the command belongs to; None for a top-level command.
    name : str
        The command's name.
    func : callable
        ``func(args) -> int``: runs the command, prints, returns the exit status.
    help : str
        Its line in the group's ``--help``.
    datasets, optional_datasets : tuple of str or callable, optional
        The data sets the command reads (see :func:`needs_data`).

    Returns
    -------
    argparse.ArgumentParser or None
        See :func:`add_parser`.
    """
    parser = add_parser(commands if group is None else subcommands(commands, group), name, func, help)
    if parser is not None and (datasets is not None or optional_datasets is not None):
        needs_data(parser, datasets, optional_datasets)
    return parser


def needs_data(parser, datasets=None, optional=None) -> None:
    """Declare the data sets a command reads, checked by :func:`run_command` before it starts.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    datasets : tuple of str or callable, optional
        Names of :mod:`cvxkml.datasets` the command needs, or ``datasets(args)`` returning
        them from the parsed options (e.g. ``--datasets``, ``--part``, ``--quick``).  Each
        one must be in the data folder (``args.data_dir``, else ``$CVXKML_DATA``, else
        ``../shared/data``) and load cleanly.
    optional : tuple of str or callable, optional
        Data sets used when present (the command falls back to something else without
        them): checked only when the file is there.
    """
    parser.set_defaults(data_sets=(datasets or (), optional or ()))


def data_needed(args) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(required, optional)`` data set names of the command chosen in ``args`` (both empty
    when it declares none).

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    (tuple of str, tuple of str)
    """
    spec = getattr(args, "data_sets", None) or ((), ())
    names = [tuple(dict.fromkeys(s(args) if callable(s) else s)) for s in spec]
    return names[0], tuple(n for n in names[1] if n not in names[0])


def check_data(args) -> None:
    """Check, before anything runs, every data set the chosen command declares: each
    required one must be in the data folder and load cleanly (every row read,
    :func:`cvxkml.datasets.check_available` with ``load=True``; 0.4 s for all the offline
    sets), each optional one only when its file is there.

    Raises
    ------
    DataNotFoundError
        A required file is missing (the message names it and the folder searched), or no
        data folder is configured.
    InvalidInputError
        A file is there but damaged (the message names it and what is wrong).
    """
    required, optional = data_needed(args)
    folder = getattr(args, "data_dir", None)
    check_available(required, folder, load=True)
    for name in optional:
        try:
            check_available((name,), folder, load=True)
        except DataNotFoundError:
            pass


def add_run_options(parser, quick: str, repeats: str | None = None, seed: str = "random seed (default 0)") -> None:
    """The options ``--quick``, ``--repeats`` (when ``repeats`` is given) and ``--seed``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    quick : str
        Help of ``--quick`` (a flag).
    repeats : str, optional
        Help of ``--repeats`` (an int, default None); the option is left out when None.
    seed : str, default "random seed (default 0)"
        Help of ``--seed`` (an int, default 0).
    """
    parser.add_argument("--quick", action="store_true", help=quick)
    if repeats is not None:
        parser.add_argument("--repeats", type=int, default=None, help=repeats)
    parser.add_argument("--seed", type=int, default=0, help=seed)


def number_in(flag: str, low: float = 0.0, high: float = float("inf"), example: str = "1e-3"):
    """An argparse ``type`` accepting a float in the open interval (``low``, ``high``).

    Parameters
    ----------
    flag : str
        The option as typed (``"--tol"``), named in the error message.
    low, high : float, default 0 and inf
        The open interval; NaN and values outside it are rejected.
    example : str, default "1e-3"
        A valid value shown in the message.

    Returns
    -------
    callable
        ``str -> float``; raises :class:`argparse.ArgumentTypeError` with a message saying
        what the option accepts.
    """
    where = f"in ({low:g}, {high:g})" if high < float("inf") else f"greater than {low:g}"

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = float("nan")
        if not low < v < high:
            raise argparse.ArgumentTypeError(f"{flag} must be a number {where} (e.g. {example}); got {text!r}")
        return v

    return parse


# --------------------------------------------------------------------------- typed options
def _typed(what: str, convert):
    def parse(text: str):
        try:
            return convert(text)
        except (ValueError, TypeError, OverflowError) as exc:
            raise argparse.ArgumentTypeError(f"must be {what}; got {text!r}" + (f" ({exc})" if str(exc) else ""))
    parse.__name__ = what.replace(" ", "_")
    return parse


def _int_at_least(low: int):
    def conv(text):
        v = int(text, 10)
        if v < low:
            raise ValueError("")
        return v
    return conv


def _float_check(allow_zero: bool):
    def conv(text):
        v = float(text)
        if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
            raise ValueError("")
        return v
    return conv


def _seed(text):
    v = int(text, 10)
    if not 0 <= v < 2 ** 32:                  # NumPy's legacy seeding (and scikit-learn) take 32 bits
        raise ValueError("between 0 and 4294967295")
    return v


def _n_jobs(text):
    v = int(text, 10)
    if v == 0 or v < -1:
        raise ValueError("")
    return v


def _data_folder(text):
    path = Path(text).expanduser()
    if not path.is_dir():
        raise ValueError("no such folder")
    if not os.access(path, os.R_OK | os.X_OK):
        raise ValueError("not readable")
    return str(path)


def _writable(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=folder):
        pass


def _writable_folder(text):
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError("it is a file, not a folder")
    try:
        _writable(path)
    except OSError as exc:
        raise ValueError(f"cannot write there: {exc.strerror or exc}") from None
    return str(path)


def _writable_file(text):
    path = Path(text).expanduser()
    if path.is_dir():
        raise ValueError("it is a folder; give a file name")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError("the file is not writable")
    try:
        _writable(path.parent)
    except OSError as exc:
        raise ValueError(f"cannot write to its folder: {exc.strerror or exc}") from None
    return str(path)


#: argparse ``type`` functions of the commands' options
positive_int = _typed("a positive integer", _int_at_least(1))
non_negative_int = _typed("a non-negative integer", _int_at_least(0))
n_jobs_int = _typed("a positive integer or -1 (every core)", _n_jobs)
seed_int = _typed("a non-negative integer below 2**32", _seed)
positive_float = _typed("a finite positive number", _float_check(False))
non_negative_float = _typed("a finite non-negative number", _float_check(True))
data_folder = _typed("an existing readable folder", _data_folder)
writable_folder = _typed("a folder that can be written", _writable_folder)
writable_file = _typed("a file path that can be written", _writable_file)

#: options whose integers may be 0 (the rest of the int options must be positive); 0 means
#: "off" or "all" for --stall-iter, --n-learn, --n-learn-mfeat (see their help)
_NON_NEGATIVE_INTS = frozenset({"start", "max_errors", "stall_iter", "n_learn", "n_learn_mfeat"})
_NON_NEGATIVE_FLOATS = frozenset({"xor_std"})
#: options naming folders written to (the other --out / --json are files)
_OUT_FOLDERS = frozenset({"resume"})


def type_options(parser: argparse.ArgumentParser) -> None:
    """Give every option of ``parser`` and its subcommands a typed argparse ``type`` (one
    place for all commands): ``int`` options become positive (or non-negative: ``--start``,
    ``--max-errors``, ``--stall-iter``, ``--n-learn``, ``--n-learn-mfeat``, where 0 means
    off or all) integers, ``--seed`` an integer in [0, 2**32), ``--n-jobs`` a positive integer or -1,
    ``float`` options finite positive numbers, ``--data-dir`` an existing readable folder,
    ``--out`` / ``--json`` / ``--resume`` paths checked writable before the command starts
    (an output folder is created).  A bad value ends with argparse's one-line message and
    exit status 2."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                type_options(sub)
            continue
        if not action.option_strings or action.nargs == 0:
            continue
        dest, t = action.dest, action.type
        if dest == "n_jobs":
            action.type = n_jobs_int
        elif dest == "seed" and t is int:
            action.type = seed_int
        elif t is int:
            action.type = non_negative_int if dest in _NON_NEGATIVE_INTS else positive_int
        elif t is float:
            action.type = non_negative_float if dest in _NON_NEGATIVE_FLOATS else positive_float
        elif dest == "data_dir" and t is None:
            action.type = data_folder
        elif dest in ("out", "json", "resume") and t is None:
            folder = dest in _OUT_FOLDERS or "folder" in (action.help or "") or action.metavar == "DIR"
            action.type = writable_folder if folder else writable_file


def run_command(args, name: str = "cvxkml") -> int:
    """Run the command chosen on the command line, ``args.func(args)``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments; ``args.func`` is the command.
    name : str, default "cvxkml"
        The command as typed (e.g. ``"cvxkml reproduce kcr"``), for the error line.

    Returns
    -------
    int
        The command's exit status (None counts as 0); 2 when a data file is missing,
        after one line on standard error naming the file and where it was looked for (no
        traceback), or on a :class:`cvxkml.errors.CvxkmlError` (its type and message as one
        line, e.g. a damaged data file); 1 on a :class:`CommandError` (its message as one
        line).  The data sets the command declares (:func:`needs_data`) are checked first
        (:func:`check_data`), so these end it before any computation.  With ``args.debug``
        (``cvxkml --debug``) these errors raise with their traceback.
    """
    debug = bool(getattr(args, "debug", False))
    try:
        check_data(args)
        return int(args.func(args) or 0)
    except DataNotFoundError as exc:
        if debug:
            raise
        hint = " (command line: --data-dir FOLDER)" if hasattr(args, "data_dir") else ""
        print(f"{name}: {exc}{hint}", file=sys.stderr)
        return 2
    except CommandError as exc:
        if debug:
            raise
        print(f"{name}: {exc}", file=sys.stderr)
        return 1
    except CvxkmlError as exc:
        if debug:
            raise
        print(f"{name}: {type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
