"""``python -m cvxkml`` runs the ``cvxkml`` command."""

import sys

from .experiments.cli import main

sys.exit(main())
