"""``python -m cvxkml`` runs the ``cvxkml`` command (:mod:`cvxkml._cli`).

Ctrl-C while the command loads ends it with one line and exit status 130, as it does once
the command runs (a Ctrl-C during ``import cvxkml`` itself, before this module runs, is
Python's own)."""

import sys

try:
    from ._cli import main
except KeyboardInterrupt:
    if "--debug" in sys.argv:
        raise
    print("cvxkml: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
