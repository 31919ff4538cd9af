"""The ``cvxkml`` command of an installed cvxkml: ``cvxkml demo``, ``--version``.

The benchmarks and the papers' reproductions are not part of the installed package: they run
from a source checkout, ``python -m benchmarks bench …`` and ``python -m benchmarks reproduce …``
(``benchmarks/README.md``); ``cvxkml bench`` and ``cvxkml reproduce`` say so in one line and
exit with status 2.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["CHECKOUT_COMMANDS", "build_parser", "main"]

#: the command groups that run from a source checkout, not from the installed package
CHECKOUT_COMMANDS = ("bench", "reproduce")


def _int_in(what: str, low: int, high: float = float("inf")):
    """An argparse ``type``: a base-10 integer in [low, high), else argparse's one-line error."""

    def parse(text: str) -> int:
        try:
            v = int(text, 10)
        except ValueError:
            v = None
        if v is None or not low <= v < high:
            raise argparse.ArgumentTypeError(f"must be {what}; got {text!r}")
        return v

    return parse


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``cvxkml``: ``--version``, ``--debug`` and ``demo``.

    Returns
    -------
    argparse.ArgumentParser
    """
    from . import __version__
    from ._demo import command

    parser = argparse.ArgumentParser(
        prog="cvxkml",
        description="Convex metric and kernel learning: the demo.",
        epilog="The benchmarks and the papers' reproductions run from a source checkout: "
        "python -m benchmarks bench|reproduce ... (see benchmarks/README.md).",
    )
    parser.add_argument("--version", action="version", version=f"cvxkml {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error (default: one line on standard error)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="k-NN on Wine with ITML / KernelITML, and fast vs exact on one random problem (well under a minute)",
    )
    demo.add_argument(
        "--seed",
        type=_int_in("a non-negative integer below 2**32", 0, 2**32),
        default=0,
        help="random seed (default 0)",
    )
    demo.add_argument(
        "--n", type=_int_in("a positive integer", 1), default=30, help="size of the random kernel problem (default 30)"
    )
    demo.set_defaults(func=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``cvxkml argv`` (default ``sys.argv[1:]``); returns the exit status.

    0 on success; 2 without a command (the help is printed), for ``bench`` / ``reproduce``
    (one line: where they run now) and for a cvxkml error (one line; ``--debug`` shows the
    traceback).  A badly typed option exits with status 2 (argparse's SystemExit).
    """
    from .errors import CvxkmlError

    argv = sys.argv[1:] if argv is None else list(argv)
    group = next((a for a in argv if not a.startswith("-")), None)
    if group in CHECKOUT_COMMANDS:
        print(
            f"cvxkml {group}: not part of the installed package; from a source checkout run "
            f"python -m benchmarks {group} ... (see benchmarks/README.md)",
            file=sys.stderr,
        )
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CvxkmlError as exc:
        if args.debug:
            raise
        print(f"cvxkml {args.command}: {type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
