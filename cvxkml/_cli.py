"""The ``cvxkml`` command of an installed cvxkml (``cvxkml demo``, ``--version``) and what every
command line of the project shares: the parser class, the option types, the exit statuses.

The benchmarks and the papers' reproductions are not part of the installed package: they run
from a source checkout, ``python -m benchmarks bench …`` and ``python -m benchmarks reproduce …``
(``benchmarks/README.md``); ``cvxkml bench`` and ``cvxkml reproduce`` say so in one line and
exit with status 2.  Those commands parse their options with the same :class:`Parser` and the
same option types (:func:`integer`, :func:`number`, :func:`existing_folder`,
:func:`output_file`, :func:`output_folder`) and run through :func:`run`, so a value is checked
in one place whichever command takes it, and every error is one line with a documented exit
status (:data:`EXIT_STATUS_HELP`).
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys
import tempfile
from pathlib import Path

__all__ = [
    "CHECKOUT_COMMANDS",
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "EXIT_INTERRUPTED",
    "EXIT_STATUS_HELP",
    "INT_MAX",
    "DEMO_MIN_N",
    "DEMO_MAX_N",
    "Parser",
    "one_line",
    "BadValue",
    "typed",
    "integer",
    "number",
    "expand_path",
    "existing_folder",
    "output_file",
    "output_folder",
    "exit_status",
    "run",
    "interruptible",
    "build_parser",
    "main",
]

#: the command groups that run from a source checkout, not from the installed package
CHECKOUT_COMMANDS = ("bench", "reproduce")

# ------------------------------------------------------------------------------ exit statuses
#: the command finished
EXIT_OK = 0
#: the command started and could not finish: a solver failure, a file that could not be read or
#: written while it ran, out of memory
EXIT_FAILURE = 1
#: the command cannot run as given: a bad option value, options that do not go together, a
#: missing or damaged input file, a missing optional extra (argparse's own status for usage)
EXIT_USAGE = 2
#: stopped by Ctrl-C (SIGINT), the shell's convention 128 + 2
EXIT_INTERRUPTED = 130

#: the exit statuses as the commands' ``--help`` shows them (the epilog)
EXIT_STATUS_HELP = (
    f"Exit status: {EXIT_OK} done; {EXIT_USAGE} the command cannot run as given (a bad option "
    "value, options that do not go together, a missing or damaged input file, a missing optional "
    f"extra), found before any work where it can be; {EXIT_FAILURE} the run started and failed (a "
    "solver failure, a file that could not be read or written, out of memory); "
    f"{EXIT_INTERRUPTED} interrupted (Ctrl-C).  Every error is one line on standard error "
    "(--debug shows the traceback)."
)

#: the largest integer an option takes: counts, sizes and iteration budgets stay within a C
#: int, which the compiled solvers and the libraries they call index with
INT_MAX = 2**31 - 1


def one_line(text) -> str:
    """``text`` with every run of white space (newlines included) made one blank: messages stay
    one line on standard error."""
    return " ".join(str(text).split())


def _shown(text: str, limit: int = 80) -> str:
    """``repr(text)`` cut to about ``limit`` characters, so that a huge value does not flood the
    error line."""
    r = repr(text)
    return r if len(r) <= limit else r[: limit - 5] + "…" + r[-4:]


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors are one line on standard error.

    argparse prints the usage block before its error; a script reading standard error then sees
    several lines for one mistake.  Here the error is ``PROG: error: MESSAGE (see PROG --help)``
    and the exit status :data:`EXIT_USAGE`.  Subcommand parsers inherit the class
    (``add_subparsers`` makes parsers of the parent's class).
    """

    def error(self, message):
        """Print one line and exit with :data:`EXIT_USAGE` (argparse calls this for any bad
        command line)."""
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


# ------------------------------------------------------------------------------ option types
class BadValue(ValueError):
    """A value refused by a check, with a short reason that :func:`typed` shows (a
    conversion's own ValueError, e.g. ``int('x')``, is not shown: its wording is Python's)."""


def typed(what: str, convert):
    """An argparse ``type``: ``convert(text)``; a ValueError (or TypeError, OverflowError) becomes
    argparse's one-line error ``must be WHAT; got TEXT`` (with the reason when it gives one).

    Parameters
    ----------
    what : str
        The valid values, for the message (``"a positive integer"``).
    convert : callable
        ``convert(text) -> value``; raises ValueError with a short reason (or none).
    """

    def parse(text: str):
        try:
            return convert(text)
        except (ValueError, TypeError, OverflowError) as exc:
            reason = one_line(exc) if isinstance(exc, BadValue) else ""
            raise argparse.ArgumentTypeError(
                f"must be {what}; got {_shown(text)}" + (f" ({reason})" if reason else "")
            ) from None

    parse.__name__ = what.replace(" ", "_")
    parse.__doc__ = f"An argparse type: {what}."
    return parse


def _int10(text: str) -> int:
    """A base-10 integer in ASCII digits with an optional sign (``int`` alone also takes other
    scripts' digits and underscores, which a command line should not silently read)."""
    digits = text.strip().lstrip("+-")
    if not (digits.isascii() and digits.isdigit()) or len(text.strip()) - len(digits) > 1:
        raise ValueError(text)
    return int(text.strip(), 10)


def integer(low: int, high: int = INT_MAX, what: str | None = None, also=()):
    """An argparse ``type``: a base-10 integer in [``low``, ``high``] (or one of ``also``).

    Parameters
    ----------
    low, high : int
        The range, both ends included (``high`` at most :data:`INT_MAX` by default).
    what : str, optional
        The valid values for the message (default: worded from the range).
    also : tuple of int
        Values outside the range that are valid too (``-1``: every core).
    """
    what = what or (
        {0: "a non-negative integer", 1: "a positive integer"}.get(low, f"an integer of at least {low}")
        + (f" (at most {high})" if high != INT_MAX else "")
    )

    def convert(text):
        v = _int10(text)
        if v in also:
            return v
        if v < low:
            raise BadValue(f"below {low}")
        if v > high:
            raise BadValue(f"above {high}")
        return v

    return typed(what, convert)


def number(low: float = 0.0, high: float = math.inf, *, low_open: bool = True, high_open: bool = False, what=None):
    """An argparse ``type``: a finite float in the interval from ``low`` to ``high``.

    Parameters
    ----------
    low, high : float
        The ends; ``high`` infinite means no upper end (the value must still be finite).
    low_open, high_open : bool
        Whether the value may not equal ``low`` (default: it may not, the interval is
        (low, …)) or ``high`` (default: it may).
    what : str, optional
        The valid values for the message (default: worded from the interval).
    """
    if what is None:
        lo, hi = ("(" if low_open else "[") + f"{low:g}", f"{high:g}" + (")" if high_open else "]")
        what = (
            f"a finite number in {lo}, {hi}"
            if math.isfinite(high)
            else f"a finite number {'greater than' if low_open else 'at least'} {low:g}"
        )

    def convert(text):
        v = float(text)
        if not math.isfinite(v):
            raise BadValue("not finite")
        if v < low or (low_open and v == low) or v > high or (high_open and v == high):
            raise BadValue("out of range")
        return v

    return typed(what, convert)


def expand_path(text: str) -> Path:
    """``text`` as a path, ``~`` and ``~user`` expanded; :class:`BadValue` (one short reason) when
    it is empty, holds a NUL or undecodable bytes, or names a home folder that cannot be found
    (an unknown user, or an empty HOME, which would make ``~/x`` the root's ``/x``).

    Called by every path option before anything is checked or created, so that a path is the
    same for the check and for the command.
    """
    if not text.strip():
        raise BadValue("an empty path")
    if "\0" in text:
        raise BadValue("the path holds a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadValue("the path holds bytes that are not UTF-8 text") from None
    if text.split(os.sep, 1)[0] == "~" and not os.environ.get("HOME", "x").strip():
        raise BadValue("~ stands for HOME, which is set but empty")
    expanded = os.path.expanduser(text)
    if expanded.startswith("~"):
        user = text.split(os.sep, 1)[0]
        raise BadValue(f"{user} names no home folder (no such user, or no HOME)")
    return Path(expanded)


def _os_reason(exc: OSError) -> str:
    return exc.strerror or one_line(exc)


def _checked_path(check):
    """``check(path, text)`` with ``path`` = :func:`expand_path` ``(text)``; an OSError of the
    check (a name too long, a loop of links, a permission) becomes a :class:`BadValue` with the
    system's reason."""

    def convert(text):
        path = expand_path(text)
        try:
            return check(path, text)
        except OSError as exc:
            raise BadValue(_os_reason(exc)) from None

    return convert


def _leads_nowhere(path: Path) -> bool:
    """Whether ``path`` is a link whose target is missing or a loop of links."""
    return os.path.islink(path) and not os.path.exists(path)


def _regular_or_devnull(path: Path) -> bool:
    return stat.S_ISREG(path.stat().st_mode) or os.path.realpath(path) == os.devnull


def _can_write_in(folder: Path) -> None:
    """Create ``folder`` (with its parents) and a temporary file in it; OSError when either fails."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=folder):
        pass


def _existing_folder(path: Path, text: str) -> str:
    if not path.exists():
        raise BadValue("no such folder")
    if not path.is_dir():
        raise BadValue("it is a file, not a folder")
    if not os.access(path, os.R_OK | os.X_OK):
        raise BadValue("not readable")
    return str(path)


def _output_folder(path: Path, text: str) -> str:
    if _leads_nowhere(path):
        raise BadValue("it is a link that leads nowhere (a missing target or a loop)")
    if path.exists() and not path.is_dir():
        raise BadValue("it is a file, not a folder")
    try:
        _can_write_in(path)
    except OSError as exc:
        raise BadValue(f"cannot write there: {_os_reason(exc)}") from None
    return str(path)


def _output_file(path: Path, text: str) -> str:
    if text.endswith(("/", os.sep)) or path.is_dir():
        raise BadValue("it names a folder; give a file name")
    if _leads_nowhere(path):
        raise BadValue("it is a link that leads nowhere (a missing target or a loop)")
    if path.exists():
        if not _regular_or_devnull(path):
            raise BadValue("it is not a regular file (a device, pipe or socket)")
        if not os.access(path, os.W_OK):
            raise BadValue("the file is not writable")
    try:
        _can_write_in(path.parent)
    except OSError as exc:
        raise BadValue(f"cannot write to its folder: {_os_reason(exc)}") from None
    return str(path)


#: an argparse ``type``: an existing folder that can be read (returned expanded, as str)
existing_folder = typed("an existing readable folder", _checked_path(_existing_folder))
#: an argparse ``type``: a folder that can be written (created when missing)
output_folder = typed("a folder that can be written", _checked_path(_output_folder))
#: an argparse ``type``: a file that can be written (a regular file or a new one; its folder is created)
output_file = typed("a file path that can be written", _checked_path(_output_file))


# ------------------------------------------------------------------------------ running
def exit_status(exc: BaseException, usage=()) -> int | None:
    """The exit status of a command that raised ``exc``, or None for an error that is a bug
    (it keeps its traceback).

    Parameters
    ----------
    exc : BaseException
        What the command raised.
    usage : tuple of exception classes
        The caller's errors that mean "cannot run as given" (beside
        :class:`cvxkml.errors.InvalidInputError`).

    Returns
    -------
    int or None
        :data:`EXIT_INTERRUPTED` for Ctrl-C; :data:`EXIT_USAGE` for an invalid input or one of
        ``usage``; :data:`EXIT_FAILURE` for another cvxkml error (a solver failure), an OSError
        or a MemoryError; None otherwise.
    """
    from .errors import CvxkmlError, InvalidInputError

    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, (InvalidInputError, *usage)):
        return EXIT_USAGE
    if isinstance(exc, (CvxkmlError, OSError, MemoryError)):
        return EXIT_FAILURE
    return None


def _error_line(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, MemoryError):
        return f"MemoryError: out of memory{': ' + one_line(exc) if str(exc) else ''} (try smaller sizes)"
    return f"{type(exc).__name__}: {one_line(exc)}"


def run(func, args, name: str, usage=(), describe=None) -> int:
    """``func(args)`` as a command: its exit status, or one line on standard error and the
    status of :func:`exit_status` when it raises.

    Parameters
    ----------
    func : callable
        ``func(args) -> int or None`` (None counts as :data:`EXIT_OK`).
    args : argparse.Namespace
        The parsed command line; ``args.debug`` true re-raises every error with its traceback.
    name : str
        The command as typed, the start of the error line.
    usage : tuple of exception classes
        Errors that mean the command cannot run as given (see :func:`exit_status`).
    describe : callable, optional
        ``describe(exc) -> str or None``: the caller's wording of an error (None: the default
        ``Type: message``).

    Returns
    -------
    int
    """
    try:
        return int(func(args) or 0)
    except (Exception, KeyboardInterrupt) as exc:
        status = exit_status(exc, usage)
        if status is None or getattr(args, "debug", False):
            raise
        line = (describe(exc) if describe is not None else None) or _error_line(exc)
        print(f"{name}: {one_line(line)}", file=sys.stderr)
        return status


#: the smallest ``cvxkml demo --n``: the random problem has 2n pairs of distinct points, and n
#: points have n(n-1)/2 of them
DEMO_MIN_N = 5
#: the largest ``cvxkml demo --n``: the exact model of the random problem has n² variables, so
#: its solve time grows fast with n
DEMO_MAX_N = 200


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``cvxkml``: ``--version``, ``--debug`` and ``demo``.

    Returns
    -------
    argparse.ArgumentParser
    """
    from . import __version__
    from ._demo import command

    parser = Parser(
        prog="cvxkml",
        description="Convex metric and kernel learning: the demo.",
        epilog="The benchmarks and the papers' reproductions run from a source checkout: "
        "python -m benchmarks bench|reproduce ... (see benchmarks/README.md).  " + EXIT_STATUS_HELP,
    )
    parser.add_argument("--version", action="version", version=f"cvxkml {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error (default: one line on standard error)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="k-NN on Wine with ITML / KernelITML, and fast vs exact on one random problem (well under a minute)",
        epilog=EXIT_STATUS_HELP,
    )
    demo.add_argument(
        "--seed",
        type=integer(0, 2**32 - 1, "a non-negative integer below 2**32"),
        default=0,
        help="random seed (default 0)",
    )
    demo.add_argument(
        "--n",
        type=integer(DEMO_MIN_N, DEMO_MAX_N, f"an integer from {DEMO_MIN_N} to {DEMO_MAX_N}"),
        default=30,
        help=f"size of the random kernel problem (default 30; from {DEMO_MIN_N}, for its 2n distinct pairs, "
        f"to {DEMO_MAX_N}: the exact solve grows fast with n)",
    )
    demo.set_defaults(func=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``cvxkml argv`` (default ``sys.argv[1:]``); returns the exit status.

    :data:`EXIT_OK` on success; :data:`EXIT_USAGE` without a command (the help is printed),
    for ``bench`` / ``reproduce`` (one line: where they run now), for a bad option (argparse's
    SystemExit, one line) and for an invalid input; :data:`EXIT_FAILURE` when the run fails
    (a solver error, a file or memory error); :data:`EXIT_INTERRUPTED` on Ctrl-C, also while
    the command is still loading.  Every error is one line on standard error (``--debug``
    shows the traceback).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    return interruptible("cvxkml", argv, lambda: _main(argv))


def interruptible(prog: str, argv: list[str], body) -> int:
    """``body()``, or :data:`EXIT_INTERRUPTED` after one line when Ctrl-C stops it (loading
    the libraries takes seconds, so an interrupt often arrives before the command runs; with
    ``--debug`` in ``argv`` the KeyboardInterrupt keeps its traceback)."""
    try:
        return body()
    except KeyboardInterrupt:
        if "--debug" in argv:
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv: list[str]) -> int:
    group = next((a for a in argv if not a.startswith("-")), None)
    if group in CHECKOUT_COMMANDS:
        print(
            f"cvxkml {group}: not part of the installed package; from a source checkout run "
            f"python -m benchmarks {group} ... (see benchmarks/README.md)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return EXIT_USAGE
    return run(args.func, args, f"cvxkml {args.command}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
