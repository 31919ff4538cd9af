"""The ``GridSearchCV`` row of ``python -m benchmarks bench variants --scale``: a user
regularizer (:class:`~benchmarks.bench.variants.AlphaPower` or
:class:`~benchmarks.bench.variants.Jeffreys`, declared as a user would) in its scikit-learn
estimator (:class:`~cvxkml.estimators.SpectralMetricLearner`, pairs drawn from the labels,
hinge slack of cost C) followed by 5-NN, inside a standard
:class:`~sklearn.model_selection.GridSearchCV` over C = 10^-2 … 10^2 (5 values), 5-fold
stratified, on the digits data shipped with scikit-learn (offline).

Every fit of the search (5 values × 5 folds, then the refit at the best C) is timed in CPU
seconds (:func:`time.process_time`, one BLAS thread) and its certificate read from the
fitted estimator (``converged_``: relative gap and violation within ``tol``).  A fit that
passes ``cap`` CPU seconds is stopped by its progress callback and counts as not
certified.  The target: every fit within ``target`` seconds and certified.
"""

from __future__ import annotations

import time

import numpy as np

from cvxkml.estimators import SpectralMetricLearner

__all__ = ["TimedMetricLearner", "grid_rows", "grid_summary", "GRID_CS"]

#: the grid of hinge costs C
GRID_CS = tuple(float(c) for c in np.logspace(-2, 2, 5))


class _CpuCap:
    """A progress callback that stops a fit once it has used ``cap`` CPU seconds since
    :meth:`start` (picklable, so the estimator clones)."""

    def __init__(self, cap):
        self.cap = float(cap)
        self.t0 = time.process_time()

    def start(self):
        self.t0 = time.process_time()

    def __call__(self, info) -> bool:
        return time.process_time() - self.t0 > self.cap


class TimedMetricLearner(SpectralMetricLearner):
    """:class:`~cvxkml.estimators.SpectralMetricLearner` whose ``fit`` also records its CPU
    time (``fit_cpu_``) and restarts the CPU cap of its callback (same parameters, so
    ``GridSearchCV`` clones it like the original)."""

    def fit(self, X, y=None, **kwargs):
        if isinstance(self.callback, _CpuCap):
            self.callback.start()
        c0 = time.process_time()
        super().fit(X, y, **kwargs)
        self.fit_cpu_ = time.process_time() - c0
        return self


def grid_rows(
    regularizer,
    name: str,
    quick: bool = False,
    cap: float = 60.0,
    folds: int = 5,
    seed: int = 0,
    progress=None,
) -> list[dict]:
    """One row per fit of ``GridSearchCV`` (the refit last, ``fold`` = -1) with the
    Regularizer instance ``regularizer``, labelled ``name``: C, fold, CPU seconds, Newton
    iterations, certified, relative gap.  ``quick``: 300 digits, C in {0.01, 1}, 3 folds."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import Pipeline

    X, y = load_digits(return_X_y=True)
    Cs = GRID_CS
    if quick:
        X, y, Cs, folds = X[:300], y[:300], (GRID_CS[0], GRID_CS[2]), 3
    rows: list[dict] = []
    fold_of: dict[int, int] = {}

    def record(pipe, X_test, y_test):
        est = pipe.named_steps["learn"]
        key = est.C
        fold_of[key] = fold_of.get(key, -1) + 1
        note(est, fold_of[key])
        return pipe.score(X_test, y_test)

    def note(est, fold):
        """One row per fit: its C, fold (-1: the refit), CPU seconds, iterations, certificate."""
        sol = est.solution_
        row = dict(
            regularizer=name,
            C=float(est.C),
            fold=fold,
            cpu_seconds=float(est.fit_cpu_),
            iterations=int(est.n_iter_),
            certified=bool(est.converged_),
            rel_gap=float(sol.gap) / max(1.0, abs(sol.objective)) if sol.gap is not None else float("nan"),
        )
        rows.append(row)
        if progress is not None:
            progress(row)

    learner = TimedMetricLearner(regularizer, random_state=seed, callback=_CpuCap(cap))
    pipe = Pipeline([("learn", learner), ("knn", KNeighborsClassifier(5))])
    search = GridSearchCV(
        pipe,
        {"learn__C": list(Cs)},
        cv=StratifiedKFold(folds, shuffle=True, random_state=seed),
        scoring=record,
    )
    search.fit(X, y)
    best = search.best_estimator_.named_steps["learn"]
    note(best, -1)
    for r in rows:
        r["best_C"] = float(best.C)
        r["best_score"] = float(search.best_score_)
    return rows


def grid_summary(rows, target: float = 10.0) -> list[dict]:
    """Per C (the refit as ``C = "refit"``): fits, certified, median and max CPU seconds and
    iterations; the last row is the whole search with the verdict (every fit within
    ``target`` CPU seconds and certified)."""
    out = []
    groups = {}
    for r in rows:
        groups.setdefault("refit" if r["fold"] < 0 else f"{r['C']:g}", []).append(r)
    for key, rs in list(groups.items()) + [("all", rows)]:
        cpu = np.array([r["cpu_seconds"] for r in rs])
        its = np.array([r["iterations"] for r in rs])
        cert = sum(r["certified"] for r in rs)
        out.append(
            dict(
                C=key,
                fits=len(rs),
                certified=cert,
                median_cpu=float(np.median(cpu)),
                max_cpu=float(np.max(cpu)),
                median_iterations=float(np.median(its)),
                max_iterations=int(np.max(its)),
                met="yes" if (cert == len(rs) and float(np.max(cpu)) <= target) else "no",
            )
        )
    return out


def print_grid(args, columns, regularizers) -> None:
    """Run and print the row (``bench variants --scale``) for each of ``regularizers``
    (name -> Regularizer class): every fit, then the summary."""
    import os

    from cvxkml._config import blas_limit

    print(
        "GridSearchCV row: SpectralMetricLearner(user regularizer) + 5-NN on digits, C = "
        f"{', '.join(f'{c:g}' for c in GRID_CS)}, 5-fold; CPU seconds per fit (cap 60 s); load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at start",
        flush=True,
    )
    for reg, cls in regularizers.items():
        with blas_limit(1):
            rows = grid_rows(
                cls(),
                reg,
                quick=args.quick,
                seed=args.seed,
                progress=lambda r: print(
                    f"  {r['regularizer']} C={r['C']:g} fold {r['fold']}: {r['cpu_seconds']:.3g} s, "
                    f"{r['iterations']} it., certified {r['certified']}",
                    flush=True,
                ),
            )
        spec = [("C", "{C}"), ("fits", "{fits}"), ("certified", "{certified}"), ("median cpu [s]", "{median_cpu:.3g}")]
        spec += [("max cpu [s]", "{max_cpu:.3g}"), ("median iters", "{median_iterations:.0f}")]
        spec += [("max iters", "{max_iterations}"), ("<= 10 s and certified", "{met}")]
        print(f"{reg}: best C {rows[-1]['best_C']:g}, CV accuracy {rows[-1]['best_score']:.3f}")
        print(columns(grid_summary(rows), spec))
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end (2 shared cores)")
