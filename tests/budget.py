"""Hypothesis draw budgets, scaled by one switch.

Every property test asks for ``max_examples=examples(n)`` (or relies on the profile's
default, ``examples(DEFAULT)``), never for a fixed count, so ``CVXKML_FUZZ=N`` multiplies
every test's draws by N.  The profiles themselves are registered in ``conftest.py``:

* default, and always under ``CI=true`` (which ignores ``CVXKML_FUZZ``): derandomized, no
  example database — the draws depend only on the code, so a red run means the change
  broke something;
* ``CVXKML_FUZZ=N`` (N >= 1): fresh random draws (``--hypothesis-seed`` picks them),
  N × the examples, with the example database, for deliberate fuzz runs.
"""

from __future__ import annotations

import os

DEFAULT = 100


def fuzz_factor() -> int:
    """N from ``CVXKML_FUZZ=N`` (0 when unset, and always under ``CI=true``: the
    deterministic profile)."""
    raw = os.environ.get("CVXKML_FUZZ", "").strip()
    if not raw or os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        return 0
    try:
        n = int(raw)
    except ValueError as exc:
        raise ValueError(f"CVXKML_FUZZ must be a positive integer, got {raw!r}") from exc
    if n < 1:
        raise ValueError(f"CVXKML_FUZZ must be a positive integer, got {raw!r}")
    return n


def examples(n: int) -> int:
    """The draw count of a test whose deterministic budget is ``n``."""
    return max(1, int(n)) * max(1, fuzz_factor())
