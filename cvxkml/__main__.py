"""``python -m cvxkml`` runs the ``cvxkml`` command."""

import sys

from .cli import main

sys.exit(main())
