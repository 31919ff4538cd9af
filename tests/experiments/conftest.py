"""Tests of :mod:`cvxkml.experiments`.  This folder goes on ``sys.path`` for the shared
helpers of ``cli_output.py`` (``tests/conftest.py`` puts ``tests/`` there for ``budget.py``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
