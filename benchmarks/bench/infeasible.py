"""``python -m benchmarks bench infeasible``: time to an infeasibility verdict on the generic
dual solver's path.

Three generators of infeasible hard constraints, each at m = 1 000 and 10 000 constraints
over several seeds: relative comparisons in cycles of three (each cycle sums to 0 <= −3),
rank-one equalities of which two ask one quadratic form for two values, and pairs among
which one pair is asked to be both near and far.  Each problem is solved with
``method="dual"``; the row reports the worst and median wall time to the
:class:`~cvxkml.errors.InfeasibleError` (and how many draws got it), BLAS on one thread,
after one warm-up solve.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from cvxkml.declare import SpectralMetric
from cvxkml.declare.regularizers import LogDet
from cvxkml.errors import InfeasibleError
from cvxkml.sideinfo import LinearEqualities, PairConstraints, RelativeConstraints


def relative_cycles(m, seed, n=200, d=10):
    """Relative comparisons in cycles of three: d(p,a)+1 <= d(p,b) <= … <= d(p,a) − 1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    i, j, k = [], [], []
    while len(i) < m:
        p, a, b, c = rng.choice(n, 4, replace=False)
        i += [p, p, p]
        j += [a, b, c]
        k += [b, c, a]
    i, j, k = (np.array(v[:m]) for v in (i, j, k))
    return X, RelativeConstraints(i, j, k, np.ones(m))


def contradictory_equalities(m, seed, n=200, d=10):
    """Rank-one equalities z_cᵀWz_c = b_c met by W = I, but for the last, a twin of the first
    with another value."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Z = rng.standard_normal((m, d))
    b = np.einsum("ij,ij->i", Z, Z)  # met by W = I ...
    Z[-1], b[-1] = Z[0], b[0] + 1.0  # ... but for the last, which asks z_0ᵀWz_0 two values
    return X, LinearEqualities(b, Z=Z)


def contradictory_pairs(m, seed, n=200, d=10):
    """Pairs met by W = I (10 % of room), and d(0, 1) <= 0.5 with d(0, 1) >= 2."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    i = rng.integers(0, n, m - 2)
    j = (i + 1 + rng.integers(0, n - 1, m - 2)) % n
    dist = ((X[i] - X[j]) ** 2).sum(1)
    y = np.where(rng.random(m - 2) < 0.5, 1.0, -1.0)
    b = np.where(y > 0, 1.1 * dist, dist / 1.1)  # met by W = I ...
    i, j = np.r_[i, 0, 0], np.r_[j, 1, 1]  # ... but d(0, 1) <= 0.5 and >= 2
    return X, PairConstraints(i, j, np.r_[y, 1.0, -1.0], np.r_[b, 0.5, 2.0])


GENERATORS = {"relative cycles": relative_cycles, "equalities": contradictory_equalities, "pairs": contradictory_pairs}


def time_to_verdict(make, m, seed):
    """(seconds, whether InfeasibleError was raised) of ``solve(method="dual")``."""
    X, cons = make(m, seed)
    problem = SpectralMetric(X, cons, LogDet())
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem.solve(method="dual")
    except InfeasibleError:
        return time.perf_counter() - t0, True
    return time.perf_counter() - t0, False


def verdict_rows(sizes=(1000, 10000), seeds=3, first_seed=0, progress=None):
    """One row per generator and size: verdicts, median and max seconds over the seeds
    ``first_seed`` … ``first_seed + seeds − 1``."""
    time_to_verdict(relative_cycles, 30, 99)  # warm-up (imports, compiled kernels)
    rows = []
    for name, make in GENERATORS.items():
        for m in sizes:
            runs = [time_to_verdict(make, m, seed) for seed in range(first_seed, first_seed + seeds)]
            secs = [t for t, _ in runs]
            rows.append(
                {
                    "generator": name,
                    "m": m,
                    "verdicts": f"{sum(ok for _, ok in runs)}/{len(runs)}",
                    "median_s": float(np.median(secs)),
                    "max_s": float(max(secs)),
                }
            )
            if progress is not None:
                progress(rows[-1])
    return rows


def command(args) -> int:
    """``python -m benchmarks bench infeasible``: the rows of :func:`verdict_rows` as a table
    (``--quick``: m = 100 and 1 000, one seed; ``--seed``: the first seed).  Returns the exit
    status, 0."""
    from cvxkml._config import blas_limit

    from .._report import columns, finish, start

    t_start = start(
        "python -m benchmarks bench infeasible",
        args.quick,
        "time to InfeasibleError on the generic dual solver (method='dual'), one BLAS thread, after a warm-up",
    )
    sizes, seeds = ((100, 1000), 1) if args.quick else ((1000, 10000), args.repeats or 3)
    with blas_limit(1):
        rows = verdict_rows(sizes, seeds, first_seed=args.seed or 0)
    spec = [
        ("generator", "{generator}"),
        ("m", "{m}"),
        ("verdicts", "{verdicts}"),
        ("median [s]", "{median_s:.2f}"),
        ("max [s]", "{max_s:.2f}"),
    ]
    print(columns(rows, spec))
    print()
    return finish("bench infeasible", t_start)
