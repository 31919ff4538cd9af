"""What the measuring code shares: wall time of a call, best of repeats, quick / full defaults,
silenced warnings.

Imports nothing of :mod:`cvxkml.experiments`.
"""

from __future__ import annotations

import time
import warnings

__all__ = ["best_of", "timed", "default", "quiet"]


def best_of(fn, repeats: int) -> float:
    """The shortest wall time (:func:`time.perf_counter`) of ``repeats`` (at least one) calls of ``fn()``."""
    best = float("inf")
    for _ in range(max(1, int(repeats))):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def timed(fn, *args, **kw):
    """``(fn(*args, **kw), seconds)``."""
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def default(value, quick: bool, quick_value, full_value, kind=float):
    """``kind(value)``, or the quick / full default when ``value`` is None."""
    return (quick_value if quick else full_value) if value is None else kind(value)


def quiet(fn, *args, category=Warning, **kw):
    """``fn(*args, **kw)`` with warnings of ``category`` silenced (results record what they say)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category)
        return fn(*args, **kw)
