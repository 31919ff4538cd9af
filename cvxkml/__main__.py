"""``python -m cvxkml`` runs the ``cvxkml`` command (:mod:`cvxkml._cli`)."""

import sys

from ._cli import main

sys.exit(main())
