"""The benchmark and reproduction command, run from a source checkout: ``python -m benchmarks
--help`` lists the commands, ``python -m benchmarks <group> <command> --help`` their options.

The commands are the rows of :data:`benchmarks._table.TABLE`; the parser and its help
are generated from it (:func:`build_parser`).  A command that reads data sets declares them
in its row; they are loaded before it starts, so a missing or damaged data file ends it at
once with one line on standard error and exit status 2.  Every option value is checked while
the command line is parsed (numbers in range, paths expanded and checked), and every error is
one line with the exit status documented in ``--help`` (:data:`cvxkml._cli.EXIT_STATUS_HELP`).
No benchmark or reproduction module imports this one.
"""

from __future__ import annotations

import sys

from cvxkml._cli import interruptible

from ._commands import run_command
from ._report import format_table
from ._table import PROG, TABLE, build_parser

__all__ = ["TABLE", "build_parser", "main", "format_table"]


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m benchmarks argv`` (default ``sys.argv[1:]``); returns the exit status.

    0 on success; 2 without a command (the help is printed) and when the command cannot run
    as given: a bad option value (argparse's SystemExit), options that do not go together, a
    missing or damaged data file (checked before the command starts), an invalid input; 1 when
    the run fails once started (a solver error, a file or memory error); 130 when interrupted,
    also while the parser is being built.  Every error is one line on standard error
    (``--debug`` shows the traceback).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    return interruptible(PROG, argv, lambda: _main(argv))


def _main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    return run_command(
        args,
        f"{PROG} "
        + " ".join(v for v in (args.command, getattr(args, "benchmark", None), getattr(args, "experiment", None)) if v),
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
