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
  ``--peer-python`` (its own environment), stopped after ``--peer-timeout`` seconds;
* ``iplr``: ``cvxkml.estimators.IPLR`` (Jain et al. 2012 §3.6: W = I + U L Uᵀ on a k-vector
  basis) for each basis of :data:`IPLR_BASES`, ``fit(X, y)``;
* ``euclidean``: no learning, the accuracy baseline.

The estimator rows (``estimator``, ``iplr``, ``euclidean``) also give the 1-NN accuracy on
:data:`N_TEST` held-out points of the same distribution (the peak memory is read before
they are drawn).  Without ``--quick``, the same estimator rows run on a real
high-dimensional set when the offline data folder (``CVXKML_DATA=<folder>``) holds it: the
MNIST 5 000-image subset, pixels / 255, a stratified :data:`N_POINTS`-image training set and
:data:`N_TEST` test images (seeded), features as given (``standardize=False`` for both: pixels
share one unit, and scaling the near-constant border pixels to unit variance buries the
digits in their noise), bases of :data:`MNIST_BASES`.

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
#: held-out points of the accuracy column
N_TEST = 1000
QUICK_N_TEST = 60
#: the IPLR rows on the synthetic data: (basis, k); k = None is the basis's default (svd:
#: the whole row space, where IPLR is ITML; class-means: the c = 3 classes, whose centred
#: means span 2 dimensions)
IPLR_BASES = (("svd", None), ("svd", 20), ("kmeans", 20), ("class-means", None), ("class-means", 30))
#: and on MNIST (10 classes)
MNIST_BASES = (("svd", None), ("svd", 50), ("kmeans", 50), ("class-means", None), ("class-means", 50))


def wide_data(n: int, d: int, seed: int = 0, n_test: int = 0):
    """(X, y): n points in d standardized features, three classes whose means differ in
    20 features (the rest is noise).  With ``n_test`` > 0, (X, y, X_test, y_test): as many
    further points of the same classes, standardized with the training mean and scale (X and
    y are the same as without them)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, d))
    signal = min(20, d)
    means = 1.5 * rng.normal(size=(3, signal))
    X[:, :signal] += means[y]
    mean = X.mean(axis=0)
    X -= mean
    scale = X.std(axis=0)
    X /= scale
    if n_test <= 0:
        return X, y
    y_test = np.arange(n_test) % 3
    X_test = rng.normal(size=(n_test, d))
    X_test[:, :signal] += means[y_test]
    return X, y, (X_test - mean) / scale, y_test


def mnist_split(n: int, n_test: int, seed: int = 0):
    """(X, y, X_test, y_test): a stratified n-image training set and n_test test images of
    the offline MNIST 5 000-image subset (``CVXKML_DATA``), pixels / 255."""
    from sklearn.model_selection import train_test_split

    from cvxkml.datasets import load_npz

    X, y = load_npz("mnist5000")
    X = np.asarray(X, dtype=float) / 255.0
    X, X_test, y, y_test = train_test_split(X, y, train_size=n, test_size=n_test, stratify=y, random_state=seed)
    return X, y, X_test, y_test


def _pairs(X, y, seed):
    from cvxkml.sideinfo import PairConstraints, baseline_metric

    return PairConstraints.from_labels(y, baseline_metric(X), n_similar=100, n_dissimilar=100, random_state=seed)


def _estimator(kind: str, seed: int, basis=None, k=None, standardize="auto"):
    """The estimator of an estimator row (None for ``euclidean``)."""
    from cvxkml.estimators import IPLR
    from cvxkml.estimators import ITML as ITMLEstimator

    if kind == "estimator":
        return ITMLEstimator(random_state=seed, standardize=standardize)
    if kind == "iplr":
        return IPLR(basis=basis, k=k, random_state=seed, standardize=standardize)
    return None


def _accuracy(est, X, y, X_test, y_test) -> float:
    """1-NN accuracy on the test points in the learned space (Euclidean without ``est``)."""
    from sklearn.neighbors import KNeighborsClassifier

    if est is not None:
        X, X_test = est.transform(X), est.transform(X_test)
    return float(KNeighborsClassifier(1).fit(X, y).score(X_test, y_test))


def _run(kind: str, n: int, d: int, seed: int, basis=None, k=None, data="synthetic", n_test=N_TEST) -> dict:
    """One timed row in this process (called in a fresh child by :func:`wide_rows`):
    ``kind`` one of span, features, estimator, iplr (with ``basis`` and ``k``), euclidean;
    ``data`` "synthetic" (n × d, :func:`wide_data`) or "mnist5000" (:func:`mnist_split`,
    features as given)."""
    import resource
    import time
    import warnings

    from cvxkml._config import blas_limit
    from cvxkml.declare import ITML

    standardize = False if data == "mnist5000" else "auto"

    def draw(n_test_now):
        if data == "mnist5000":  # the same split for the fit and the score
            return mnist_split(n, n_test, seed)
        return wide_data(n, d, seed, n_test_now)

    def once(X, y, k=k):
        if kind in ("estimator", "iplr"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # IPLR: pairs decided in the basis
                est = _estimator(kind, seed, basis, k, standardize).fit(X, y)
            return est.solution_, est
        if kind == "euclidean":
            return None, None
        pc = _pairs(X, y, seed)
        return ITML(X, pc, gamma=1.0, space="span" if kind == "span" else "features").solve(tol=1e-3), None

    with blas_limit(1):
        once(*wide_data(30, 40, seed + 1), k=None if k is None else min(k, 5))  # warm-up: compilation, imports
        X, y = draw(0)[:2]
        d = X.shape[1]
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0, c0 = time.perf_counter(), time.process_time()
        sol, est = once(X, y)
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        row = dict(kind=kind, data=data, n=n, d=d, seconds=secs, cpu_seconds=cpu, peak_mb=peak, start_mb=rss0)
        if kind == "iplr":
            row.update(basis=basis, k=k, rank=int(est.metric_.rank), dropped=int(sol.info["dropped_pairs"].size))
        if sol is not None:
            row.update(
                converged=bool(sol.converged),
                rel_gap=float(sol.gap) / max(1.0, abs(sol.objective)),
                iterations=int(sol.n_iter),
            )
        if kind in ("estimator", "iplr", "euclidean"):
            X, y, X_test, y_test = draw(n_test)
            row["accuracy"] = _accuracy(est, X, y, X_test, y_test)
    return row


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


def _estimator_rows(n, d, seed, bases, data, n_test, timeout, emit) -> None:
    """The estimator rows of one data set: Euclidean, ITML, and IPLR per basis."""
    runs = [("euclidean", None, None), ("estimator", None, None)] + [("iplr", b, k) for b, k in bases]
    for kind, basis, k in runs:
        args = f"{kind!r}, {n}, {d}, {seed}, basis={basis!r}, k={k!r}, data={data!r}, n_test={n_test}"
        code = f"import json; from benchmarks.bench.wide import _run; print(json.dumps(_run({args})))"
        emit(
            {
                "kind": kind,
                "data": data,
                "n": n,
                "d": d,
                "basis": basis,
                "k": k,
                **_child([sys.executable, "-c", code], timeout),
            }
        )


def wide_rows(
    dims=DIMS,
    n: int = N_POINTS,
    seed: int = 0,
    features_max_d: int = FEATURES_MAX_D,
    peer_python: str | None = None,
    peer_timeout: float = 600.0,
    timeout: float = 1800.0,
    progress=None,
    iplr_bases=IPLR_BASES,
    n_test: int = N_TEST,
    mnist_bases=None,
) -> list[dict]:
    """One row per (d, kind); see the module docstring.  ``mnist_bases``: also the estimator
    rows on MNIST with these IPLR bases (None: not)."""
    rows = []

    def emit(row):
        rows.append(row)
        if progress is not None:
            progress(row)

    for d in dims:
        kinds = ["span"] + (["features"] if d <= features_max_d else [])
        for kind in kinds:
            code = (
                f"import json; from benchmarks.bench.wide import _run; "
                f"print(json.dumps(_run({kind!r}, {n}, {d}, {seed})))"
            )
            emit({"kind": kind, "data": "synthetic", "n": n, "d": d, **_child([sys.executable, "-c", code], timeout)})
        _estimator_rows(n, d, seed, iplr_bases, "synthetic", n_test, timeout, emit)
        if peer_python:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "data.npz")
                X, y = wide_data(n, d, seed)
                np.savez(path, X=X, y=y)
                row = {"kind": "metric-learn", "n": n, "d": d, **_child([peer_python, "-c", _PEER, path], peer_timeout)}
            emit(row)
    if mnist_bases is not None:
        _estimator_rows(n, 784, seed, mnist_bases, "mnist5000", n_test, timeout, emit)
    return rows


def _exponent(rows, kind):
    from .variants import growth_exponent

    r = [x for x in rows if x["kind"] == kind and x.get("data", "synthetic") == "synthetic" and "seconds" in x]
    return growth_exponent([x["d"] for x in r], [x["seconds"] for x in r]), len(r)


def _mnist_bases(quick: bool):
    """:data:`MNIST_BASES` when the offline folder holds MNIST and this is a full run, else
    None (and one line saying why)."""
    from cvxkml.datasets import DataNotFoundError, check_available

    if quick:
        return None
    try:
        check_available(["mnist5000"])
    except DataNotFoundError as exc:
        print(f"MNIST rows skipped: {str(exc).splitlines()[0]}", flush=True)
        return None
    return MNIST_BASES


def _label(r) -> str:
    name = {"estimator": "ITML estimator"}.get(r["kind"], r["kind"])
    if r["kind"] == "iplr":
        name = f"IPLR {r['basis']} k={r['k'] if r['k'] is not None else 'default'}"
    return name + (" (MNIST)" if r.get("data") == "mnist5000" else "")


def command(args) -> int:
    """``python -m benchmarks bench wide``: the rows of :func:`wide_rows` as a table, growth exponents in d and the
    load; returns the exit status, 0."""
    t_start = start(
        "python -m benchmarks bench wide",
        args.quick,
        "ITML on wide data: the span space vs the dense feature space and metric-learn, and IPLR's bases "
        "(fresh process per row, one BLAS thread, warmed up; 1-NN accuracy on held-out points)",
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
        progress=lambda r: print(f"  {_label(r)} d={r['d']}: {r.get('seconds', r.get('error'))}", flush=True),
        n_test=QUICK_N_TEST if args.quick else N_TEST,
        mnist_bases=_mnist_bases(args.quick),
    )
    base = {r["d"]: r["seconds"] for r in rows if r["kind"] == "features" and "seconds" in r}
    span = {r["d"]: r["seconds"] for r in rows if r["kind"] == "span" and "seconds" in r}

    def cell(key, fmt):
        return lambda r: fmt.format(r[key]) if r.get(key) is not None else "–"

    ratio = lambda r: f"{base[r['d']] / span[r['d']]:.3g}" if r["kind"] == "features" and r["d"] in span else ""
    spec = [("path", _label), ("n", "{n}"), ("d", "{d}")]
    spec += [("time [s]", lambda r: cell("seconds", "{:.3g}")(r) if "error" not in r else r["error"])]
    spec += [
        ("cpu [s]", cell("cpu_seconds", "{:.3g}")),
        ("features / span", ratio),
        ("peak RSS [MB]", cell("peak_mb", "{:.0f}")),
    ]
    spec += [("iters", cell("iterations", "{}")), ("rel. gap", cell("rel_gap", "{:.1e}"))]
    spec += [("certified", lambda r: str(r["converged"]) if "converged" in r else "–")]
    spec += [("basis rank", cell("rank", "{}")), ("pairs decided", cell("dropped", "{}"))]
    print(columns(rows, spec + [("1-NN acc.", cell("accuracy", "{:.3f}"))]))
    for kind in ("span", "estimator", "features"):
        e, k = _exponent(rows, kind)
        if k >= 2:
            print(f"growth exponent of time in d, {kind}: {e:.2f} (d = {min(dims)}..{max(dims)}, {k} sizes)")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return finish("bench", t_start)
