"""How an experiment module adds its commands to ``cvxkml``.

Every module of :mod:`cvxkml.experiments` that has commands defines::

    def register(commands) -> None:
        p = add_command(commands, "reproduce", "kcr", _cmd, help="...")
        if p is None:                # already registered
            return
        p.add_argument(...)          # _cmd(args) prints and returns the exit status

``commands`` is the subparsers action of the ``cvxkml`` parser.  The ``bench`` and
``reproduce`` groups are made by the first module that asks for them, so no module
depends on another; :mod:`cvxkml.experiments.cli` calls the ``register`` of every module
listed in its ``COMMANDS``, in that order (which is the order of ``--help``), and runs the
chosen one with :func:`run_command`.  This module imports nothing of
:mod:`cvxkml.experiments`.
"""
from __future__ import annotations

import argparse
import sys

from ..datasets import DataNotFoundError

__all__ = ["GROUPS", "CommandError", "add_parser", "add_command", "subcommands", "add_run_options",
           "number_in", "run_command"]

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


def add_command(commands, group: str | None, name: str, func, help: str):
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

    Returns
    -------
    argparse.ArgumentParser or None
        See :func:`add_parser`.
    """
    return add_parser(commands if group is None else subcommands(commands, group), name, func, help)


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
        The command's exit status (None counts as 0); 1 when it stopped on a missing
        data file, after one line on standard error naming the file and where it was
        looked for (no traceback), or on a :class:`CommandError` (its message as one
        line).
    """
    try:
        return int(args.func(args) or 0)
    except DataNotFoundError as exc:
        hint = " (command line: --data-dir FOLDER)" if hasattr(args, "data_dir") else ""
        print(f"{name}: {exc}{hint}", file=sys.stderr)
        return 1
    except CommandError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 1
