"""How a command is added to ``python -m benchmarks``, its options typed, its data checked, and run.

The commands are the rows of :data:`._table.TABLE` (:func:`add_command` adds one).
:func:`type_options` gives every option its type from the shared ones of :mod:`cvxkml._cli`
(the ``cvxkml`` command uses the same), so numbers are range-checked and paths expanded and
checked while the command line is parsed, before any work.  :func:`run_command` loads every
declared data set before the command starts, so a missing or damaged file ends it at once with
one line and exit status 2.  The exit statuses are those of :data:`cvxkml._cli.EXIT_STATUS_HELP`
(shown by every command's ``--help``).  This module imports nothing of :mod:`benchmarks`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from cvxkml._cli import (
    EXIT_STATUS_HELP,
    Parser,
    existing_folder,
    integer,
    number,
    one_line,
    output_file,
    output_folder,
)
from cvxkml._cli import run as run_guarded
from cvxkml.datasets import DataNotFoundError, check_available

__all__ = [
    "GROUPS",
    "SHARED",
    "Option",
    "Group",
    "opt",
    "use",
    "data_dir",
    "script",
    "CommandError",
    "add_parser",
    "add_command",
    "subcommands",
    "number_in",
    "needs_data",
    "data_needed",
    "check_data",
    "run_command",
    "positive_int",
    "non_negative_int",
    "n_jobs_int",
    "seed_int",
    "positive_float",
    "non_negative_float",
    "data_folder",
    "writable_file",
    "writable_folder",
    "MAX_JOBS",
    "SIZE_MAX",
    "size_int",
    "type_options",
]

#: group -> (help, metavar of its commands)
GROUPS = {"bench": ("benchmarks", "BENCHMARK"), "reproduce": ("paper reproductions", "EXPERIMENT")}

_DEST = {"bench": "benchmark", "reproduce": "experiment"}


class CommandError(Exception):
    """A command cannot run as asked (a missing optional extra, options that do not go
    together, a name it does not know): :func:`run_command` prints the message as one line
    and returns 2, the status of every usage error."""


def _subparsers(parser: argparse.ArgumentParser):
    """The subparsers action of ``parser``, or None."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def subcommands(commands, group: str):
    """The subparsers action of ``python -m benchmarks <group>`` (``group`` "bench" or "reproduce")
    in ``commands`` (the parser's), made on first use; the group alone prints its help
    and exits with status 2."""
    parser = commands.choices.get(group)
    if parser is None:
        help_, metavar = GROUPS[group]
        parser = commands.add_parser(group, help=help_, epilog=EXIT_STATUS_HELP)
        parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])
    return _subparsers(parser) or parser.add_subparsers(dest=_DEST[group], metavar=GROUPS[group][1])


def add_parser(sub, name: str, func, help: str):
    """A new parser ``name`` in the subparsers action ``sub`` that runs ``func(args) -> int``
    (``help``: its line in the group's help), or None when ``sub`` has that name already (so
    ``register`` may be called twice)."""
    if name in sub.choices:
        return None
    parser = sub.add_parser(name, help=help, epilog=EXIT_STATUS_HELP)
    parser.set_defaults(func=func)
    return parser


def add_command(commands, group: str | None, name: str, func, help: str, datasets=None, optional_datasets=None):
    """:func:`add_parser` for ``python -m benchmarks [group] name`` (``group`` None: a top-level
    command) in ``commands``, the parser's subparsers; ``datasets``, ``optional_datasets``:
    the data sets it reads (:func:`needs_data`)."""
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
        Names of :mod:`cvxkml.datasets` it needs, or ``datasets(args)`` giving them from the
        options; each must be in the data folder and load cleanly.
    optional : tuple of str or callable, optional
        Data sets used when present: checked only when the file is there.
    """
    parser.set_defaults(data_sets=(datasets or (), optional or ()))


def data_needed(args) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(required, optional)`` data set names of the command chosen in ``args``."""
    spec = getattr(args, "data_sets", None) or ((), ())
    names = [tuple(dict.fromkeys(s(args) if callable(s) else s)) for s in spec]
    return names[0], tuple(n for n in names[1] if n not in names[0])


def check_data(args) -> None:
    """Load every data set the chosen command declares (:func:`cvxkml.datasets.check_available`,
    ``load=True``), an optional one only when its file is there.

    Raises
    ------
    DataNotFoundError
        A required file is missing, or no data folder is configured.
    InvalidInputError
        A file is there but damaged.
    """
    required, optional = data_needed(args)
    folder = getattr(args, "data_dir", None)
    check_available(required, folder, load=True)
    for name in optional:
        try:
            check_available((name,), folder, load=True)
        except DataNotFoundError:
            pass


def number_in(flag: str, low: float = 0.0, high: float = float("inf"), example: str = "1e-3"):
    """An argparse ``type``: a float in the open interval (``low``, ``high``), else the one-line
    error of the option ``flag`` (argparse names it) with a valid ``example`` (the check is
    :func:`cvxkml._cli.number`'s; a command narrows a shared option's range with it)."""
    where = f"in ({low:g}, {high:g})" if high < float("inf") else f"greater than {low:g}"
    check = number(low, high, high_open=True, what=f"a number {where} (e.g. {example})")

    def parse(text: str) -> float:
        return check(text)

    return parse


# --------------------------------------------------------------------------- typed options
#: the most worker processes ``--n-jobs`` starts (beyond it a run would spend its time
#: starting processes, or fail to: each loads NumPy and the solvers)
MAX_JOBS = 1024

#: argparse ``type`` functions of the commands' options (:mod:`cvxkml._cli`, shared with the
#: ``cvxkml`` command)
positive_int = integer(1)
non_negative_int = integer(0)
#: the largest size option (points, features, constraints, landmarks): beyond it the arrays of
#: even the linear-memory solvers exceed any machine's memory, and a size that does fit in
#: memory at first (labels, one vector) would be filled for minutes before the run fails
SIZE_MAX = 10_000_000
size_int = integer(1, SIZE_MAX)
n_jobs_int = integer(1, MAX_JOBS, f"a positive integer of at most {MAX_JOBS} or -1 (every core)", also=(-1,))
# NumPy's legacy seeding (and scikit-learn) take 32 bits
seed_int = integer(0, 2**32 - 1, "a non-negative integer below 2**32")
positive_float = number(0.0, what="a finite positive number")
non_negative_float = number(0.0, low_open=False, what="a finite non-negative number")
data_folder = existing_folder
writable_folder = output_folder
writable_file = output_file


#: options whose integers may be 0 (the rest of the int options must be positive); 0 means
#: "off" or "all" for --stall-iter, --n-learn, --n-learn-mfeat (see their help)
_NON_NEGATIVE_INTS = frozenset({"start", "max_errors", "stall_iter", "n_learn", "n_learn_mfeat"})
#: options that are sizes of the problem (what memory grows with): at most :data:`SIZE_MAX`
_SIZES = frozenset({"n", "dims", "constraints", "sizes", "exact_sizes", "landmarks", "variant_n", "max_n"})
_NON_NEGATIVE_FLOATS = frozenset({"xor_std", "baseline_cpu", "before_cpu"})  # 0 skips that baseline
#: options naming folders written to (the other --out / --json are files); ``--resume`` of a
#: command with a task store takes :data:`._parallel.store_folder`, which checks the files too
_OUT_FOLDERS = frozenset({"resume"})
#: options naming an existing folder that is read
_IN_FOLDERS = frozenset({"data_dir", "reference"})


def type_options(parser: argparse.ArgumentParser) -> None:
    """Type every option of ``parser`` and its subcommands with the shared types of
    :mod:`cvxkml._cli`: ``int`` options positive integers of at most
    :data:`cvxkml._cli.INT_MAX` (non-negative: :data:`_NON_NEGATIVE_INTS`, where 0 means off or
    all; sizes, :data:`_SIZES`: at most :data:`SIZE_MAX`), ``--seed`` in [0, 2**32),
    ``--n-jobs`` from 1 to :data:`MAX_JOBS` or -1, ``float`` options finite positive,
    ``--data-dir`` and ``--reference`` existing readable folders, ``--out`` / ``--json`` /
    ``--resume`` writable (a folder is created).  An option typed already keeps its type (a
    command's narrower range, ``--resume`` with :data:`._parallel.store_folder`).  Every path is
    expanded (``~``, ``~user``) and checked first.  A bad value ends with one line and exit
    status 2, before any work."""
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
        elif t is int and dest in _SIZES:
            action.type = size_int
        elif t is int:
            action.type = non_negative_int if dest in _NON_NEGATIVE_INTS else positive_int
        elif t is float:
            action.type = non_negative_float if dest in _NON_NEGATIVE_FLOATS else positive_float
        elif dest in _IN_FOLDERS and t is None:
            action.type = data_folder
        elif dest in ("out", "json", "resume") and t is None:
            folder = dest in _OUT_FOLDERS or "folder" in (action.help or "") or action.metavar == "DIR"
            action.type = writable_folder if folder else writable_file


def run_command(args, name: str = "python -m benchmarks") -> int:
    """Run ``args.func(args)`` after :func:`check_data` (:func:`cvxkml._cli.run`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line; ``args.func`` is the command to run.
    name : str, default "python -m benchmarks"
        The command as typed, for the error line.

    Returns
    -------
    int
        The command's exit status (None counts as 0); after one line on standard error, 2 for
        a missing or damaged data file, a :class:`CommandError` or an invalid input (the
        command cannot run as given), 1 for a failure once it runs (another
        :class:`cvxkml.errors.CvxkmlError`, an OSError, out of memory), 130 when interrupted.
        With ``args.debug`` these errors raise with their traceback.
    """

    def describe(exc):
        if isinstance(exc, DataNotFoundError):
            return f"{exc}{' (command line: --data-dir FOLDER)' if hasattr(args, 'data_dir') else ''}"
        if isinstance(exc, CommandError):
            return one_line(exc)
        return None

    def command(args):
        check_data(args)
        return args.func(args)

    return run_guarded(command, args, name, usage=(DataNotFoundError, CommandError), describe=describe)


# --------------------------------------------------------------------------- option specs
_DATA = "(default: $CVXKML_DATA or ../shared/data)"


@dataclass(frozen=True)
class Option:
    """One ``add_argument`` call: ``flags`` and its keywords (``help`` included)."""

    flags: tuple
    kw: dict

    def add(self, parser) -> None:
        parser.add_argument(*self.flags, **self.kw)


@dataclass(frozen=True)
class Group:
    """Options shown under a title in the command's help (``exclusive``: at most one given)."""

    title: str | None
    options: tuple
    exclusive: bool = False

    def add(self, parser) -> None:
        group = parser.add_mutually_exclusive_group() if self.exclusive else parser.add_argument_group(self.title)
        for o in self.options:
            o.add(group)


def opt(*flags, **kw) -> Option:
    """A command's own option: the arguments of ``argparse.ArgumentParser.add_argument``."""
    return Option(flags, kw)


#: options shared by name; ``use(name, help)`` puts one in a command
SHARED = {
    "quick": opt("--quick", action="store_true", help="small sizes (for tests)"),
    "repeats": opt("--repeats", type=int, help="timing repeats, best of"),
    "seed": opt("--seed", type=int, default=0, help="random seed (default 0)"),
    "data_dir": opt("--data-dir", help=f"data folder {_DATA}"),
    "json": opt("--json", help="write the results as JSON to this path"),
    "out": opt("--out", default=".", help="folder for the PNG and the JSON of numbers (default .)"),
    "n_jobs": opt("--n-jobs", dest="n_jobs", type=int, help="worker processes (default 1)"),
    "tol": opt("--tol", type=float, default=1e-3, help="certified relative gap (default 1e-3)"),
    "peer_python": opt(
        "--peer-python",
        dest="peer_python",
        default=None,
        metavar="PATH",
        help="a Python interpreter with metric-learn (default: this interpreter)",
    ),
}


def use(name: str, help: str | None = None, **kw) -> Option:
    """The shared option ``name`` of :data:`SHARED`, with its help (and any keyword) replaced."""
    base = SHARED[name]
    return Option(base.flags, {**base.kw, **({} if help is None else {"help": help}), **kw})


def data_dir(holding: str) -> Option:
    """``--data-dir`` naming the files the command reads from the folder."""
    return use("data_dir", f"folder holding {holding} {_DATA}")


def script(prog: str, run, options, datasets=None, argv=None, description: str | None = None) -> int:
    """``python -m <module> [options]``: one command (``run``, its ``options`` specs, the
    ``datasets`` it reads) on a parser of its own, typed and run as :func:`run_command` runs it."""
    parser = Parser(prog=prog, description=description, epilog=EXIT_STATUS_HELP)
    parser.set_defaults(func=run)
    needs_data(parser, datasets)
    for o in options:
        o.add(parser)
    type_options(parser)
    return run_command(parser.parse_args(argv), prog)
