"""What the measuring code shares: wall time of a call, best of repeats, quick / full defaults,
silenced warnings, standardized features, labelled test points, growth exponents.

Imports nothing of :mod:`benchmarks`.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = [
    "best_of",
    "timed",
    "default",
    "quiet",
    "standardize",
    "labelled_points",
    "growth_exponent",
    "median_sq_distance",
]


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


def standardize(Xtr, *others) -> list:
    """``[Xtr, *others]`` centred and scaled by the columns' mean and sd on ``Xtr`` (a constant
    column keeps sd 1)."""
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return [(A - mu) / sd for A in (Xtr, *others)]


def labelled_points(n, d=3, n_classes=2, seed=0, shift=1.0):
    """``(X, y)``: n points in ``d`` dimensions, classes in turn (shuffled), class c shifted by
    ``shift`` · c in every coordinate."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    return rng.normal(size=(n, d)) + shift * y[:, None], y


def median_sq_distance(X, block_bytes: int = 32 << 20) -> float:
    """The median of the positive squared distances ‖x_i − x_j‖² over ordered pairs (the
    median heuristic of the Gaussian width): the numbers of ``np.sum((X[:, None] − X[None])
    ** 2, axis=-1)``, formed a block of rows at a time so that the n × n × d differences
    never take more than about ``block_bytes``."""
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    rows = max(1, block_bytes // max(1, 8 * n * d))
    sq = np.concatenate([np.sum((X[i : i + rows, None] - X[None]) ** 2, axis=-1) for i in range(0, n, rows)])
    return float(np.median(sq[sq > 0]))


def growth_exponent(ns, secs) -> float:
    """Least-squares slope of log(time) against log(n) (NaN with fewer than two sizes)."""
    ns, secs = np.asarray(ns, dtype=float), np.asarray(secs, dtype=float)
    if ns.size < 2 or np.unique(ns).size < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns), np.log(secs), 1)[0])
