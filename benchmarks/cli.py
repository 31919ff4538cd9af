"""The benchmark and reproduction command, run from a source checkout: ``python -m benchmarks
--help`` lists the commands, ``python -m benchmarks <group> <command> --help`` their options.

The commands are the rows of :data:`benchmarks._table.TABLE`; the parser and its help
are generated from it (:func:`build_parser`).  A command that reads data sets declares them
in its row; they are loaded before it starts, so a missing or damaged data file ends it at
once with one line on standard error and exit status 2.  No benchmark or reproduction module imports this one.
"""

from __future__ import annotations

import sys

from ._commands import run_command
from ._report import format_table
from ._table import PROG, TABLE, build_parser

__all__ = ["TABLE", "build_parser", "main", "format_table"]


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m benchmarks argv`` (default ``sys.argv[1:]``); returns the exit status.

    0 on success; 2 without a command (the help is printed), for a missing or damaged data file
    (checked before the command starts) or a cvxkml error (one line; ``--debug`` shows the
    traceback); 1 when options do not go together.  A badly typed option exits with status 2
    (argparse's SystemExit).
    """
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
