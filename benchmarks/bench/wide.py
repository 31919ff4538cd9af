"""``python -m benchmarks bench wide``: metric learning on wide data (d ≫ n) in the span of the data.

Jain et al. 2012 (Theorems 1 and 4): the optimal W* = αI + ΦSΦᵀ differs from αI only on the
row space of the data, so ITML on n points in d dimensions is the k × k problem (k = rank X
<= n) on the data's coordinates (:class:`~cvxkml.declare.spaces.SpanSpace`), at O(k²) per
projection instead of O(d²), and W is never formed.

Rows, each in a fresh process (its peak resident memory is the row's), one BLAS thread, a
small warm-up solve of the same kind first (Numba compilation not timed):

* ``span``: ``ITML(X, pairs, gamma=1).solve()`` in the span space (the default on wide data);
* ``features``: the same problem with ``space="features"`` (a dense d × d W, what a
  non-span solve stores), the same-run baseline, up to ``--features-max-d``;
* ``estimator``: ``cvxkml.estimators.ITML()`` with its defaults, ``fit(X, y)`` (pairs built
  from the labels, standardization, certificate), what a user runs;
* ``metric-learn``: metric-learn's ``ITML_Supervised`` with its defaults, through
  ``--peer-python`` (its own environment), stopped after ``--peer-timeout`` seconds.

Data: three classes, the class signal in 20 of the d standardized Gaussian features.
The growth exponent of the span time in d is the least-squares slope of log t on log d.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from .._report import columns, finish, start

__all__ = ["wide_data", "wide_rows", "command"]

DIMS = (1024, 2048, 4096, 10_000)
QUICK_DIMS = (64, 256)
N_POINTS = 500
QUICK_N = 60
FEATURES_MAX_D = 2048


def wide_data(n: int, d: int, seed: int = 0):
    """(X, y): n points in d standardized features, three classes whose means differ in
    20 features (the rest is noise)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, d))
    signal = min(20, d)
    X[:, :signal] += 1.5 * rng.normal(size=(3, signal))[y]
    X -= X.mean(axis=0)
    X /= X.std(axis=0)
    return X, y


def _pairs(X, y, seed):
    from cvxkml.sideinfo import PairConstraints, baseline_metric

    return PairConstraints.from_labels(y, baseline_metric(X), n_similar=100, n_dissimilar=100, random_state=seed)


def _run(kind: str, n: int, d: int, seed: int) -> dict:
    """One timed row in this process (called in a fresh child by :func:`wide_rows`)."""
    import resource
    import time

    from cvxkml._config import blas_limit
    from cvxkml.declare import ITML
    from cvxkml.estimators import ITML as ITMLEstimator

    def once(X, y):
        if kind == "estimator":
            est = ITMLEstimator(random_state=seed).fit(X, y)
            return est.solution_
        pc = _pairs(X, y, seed)
        return ITML(X, pc, gamma=1.0, space="span" if kind == "span" else "features").solve(tol=1e-3)

    with blas_limit(1):
        once(*wide_data(30, 40, seed + 1))  # warm-up: compilation, imports
        X, y = wide_data(n, d, seed)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0, c0 = time.perf_counter(), time.process_time()
        sol = once(X, y)
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dict(
        kind=kind,
        n=n,
        d=d,
        seconds=secs,
        cpu_seconds=cpu,
        converged=bool(sol.converged),
        rel_gap=float(sol.gap) / max(1.0, abs(sol.objective)),
        iterations=int(sol.n_iter),
        peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        start_mb=rss0,
    )


_PEER = """
import json, resource, sys, time, warnings
import numpy as np
z = np.load(sys.argv[1]); X, y = z["X"], z["y"]
from metric_learn import ITML_Supervised
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ITML_Supervised(random_state=0).fit(X[:30, :40], y[:30])
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0, c0 = time.perf_counter(), time.process_time()
    ITML_Supervised(random_state=0).fit(X, y)
print(json.dumps(dict(seconds=time.perf_counter() - t0, cpu_seconds=time.process_time() - c0,
                      peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, start_mb=rss0)))
"""

_ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def _child(argv, timeout):
    env = {**os.environ, **_ONE_THREAD}
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout:.0f} s"}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1][:160]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def wide_rows(
    dims=DIMS,
    n: int = N_POINTS,
    seed: int = 0,
    features_max_d: int = FEATURES_MAX_D,
    peer_python: str | None = None,
    peer_timeout: float = 600.0,
    timeout: float = 1800.0,
    progress=None,
) -> list[dict]:
    """One row per (d, kind); see the module docstring."""
    rows = []
    for d in dims:
        kinds = ["span", "estimator"] + (["features"] if d <= features_max_d else [])
        for kind in kinds:
            code = (
                f"import json; from benchmarks.bench.wide import _run; "
                f"print(json.dumps(_run({kind!r}, {n}, {d}, {seed})))"
            )
            row = {"kind": kind, "n": n, "d": d, **_child([sys.executable, "-c", code], timeout)}
            rows.append(row)
            if progress is not None:
                progress(row)
        if peer_python:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "data.npz")
                X, y = wide_data(n, d, seed)
                np.savez(path, X=X, y=y)
                row = {"kind": "metric-learn", "n": n, "d": d, **_child([peer_python, "-c", _PEER, path], peer_timeout)}
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows


def _exponent(rows, kind):
    from .variants import growth_exponent

    r = [x for x in rows if x["kind"] == kind and "seconds" in x]
    return growth_exponent([x["d"] for x in r], [x["seconds"] for x in r]), len(r)


def command(args) -> int:
    """``python -m benchmarks bench wide``: the rows of :func:`wide_rows` as a table, growth exponents in d and the
    load; returns the exit status, 0."""
    t_start = start(
        "python -m benchmarks bench wide",
        args.quick,
        "ITML on wide data: the span space vs the dense "
        "feature space and metric-learn (fresh process per row, one BLAS thread, warmed up)",
    )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at start (2 shared cores)", flush=True)
    dims = tuple(args.dims) if args.dims else (QUICK_DIMS if args.quick else DIMS)
    n = args.n or (QUICK_N if args.quick else N_POINTS)
    rows = wide_rows(
        dims,
        n,
        args.seed,
        args.features_max_d,
        args.peer_python,
        args.peer_timeout,
        progress=lambda r: print(f"  {r['kind']} d={r['d']}: {r.get('seconds', r.get('error'))}", flush=True),
    )
    base = {r["d"]: r["seconds"] for r in rows if r["kind"] == "features" and "seconds" in r}
    span = {r["d"]: r["seconds"] for r in rows if r["kind"] == "span" and "seconds" in r}

    def cell(key, fmt):
        return lambda r: fmt.format(r[key]) if key in r else "–"

    ratio = lambda r: f"{base[r['d']] / span[r['d']]:.3g}" if r["kind"] == "features" and r["d"] in span else ""
    spec = [("path", "{kind}"), ("n", "{n}"), ("d", "{d}")]
    spec += [("time [s]", lambda r: cell("seconds", "{:.3g}")(r) if "error" not in r else r["error"])]
    spec += [
        ("cpu [s]", cell("cpu_seconds", "{:.3g}")),
        ("features / span", ratio),
        ("peak RSS [MB]", cell("peak_mb", "{:.0f}")),
    ]
    spec += [("iters", cell("iterations", "{}")), ("rel. gap", cell("rel_gap", "{:.1e}"))]
    print(columns(rows, spec + [("certified", lambda r: str(r["converged"]) if "converged" in r else "–")]))
    for kind in ("span", "estimator", "features"):
        e, k = _exponent(rows, kind)
        if k >= 2:
            print(f"growth exponent of time in d, {kind}: {e:.2f} (d = {min(dims)}..{max(dims)}, {k} sizes)")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return finish("bench", t_start)
