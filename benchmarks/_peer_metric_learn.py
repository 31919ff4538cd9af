"""The peer rows of ``python -m benchmarks bench estimators``: metric-learn's ITML and LMNN under the
bench's protocol (the same data, folds and 1-NN), for comparison only.

metric-learn is never a dependency of cvxkml.  Its release 0.7 calls scikit-learn's
``check_X_y(force_all_finite=...)``, which scikit-learn 1.8 removed, so it runs only
beside scikit-learn < 1.8 — often in another environment.  This file therefore imports
nothing of cvxkml and runs in two ways:

* in-process, :func:`evaluate` (when metric-learn imports and fits here);
* as a script of another interpreter (``--peer-python PATH`` of the bench)::

      PATH _peer_metric_learn.py IN.npz OUT.json

  ``IN.npz`` holds the cells (:func:`write_cells`), ``OUT.json`` receives the rows.

A row is ``{"estimator", "dataset", "features", "fold_accuracy", "fit_s", "error"}`` with
``fit_s`` the mean ``Pipeline.fit`` seconds over the folds after an untimed warm-up fit.
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np

__all__ = ["PEERS", "available", "warm_subset", "evaluate", "fit_lmnn", "write_cells", "read_cells", "main"]

#: peer name -> (metric-learn class, constructor keywords besides random_state)
PEERS = {"metric-learn ITML": ("ITML_Supervised", {}), "metric-learn LMNN": ("LMNN", {})}


def available() -> str | None:
    """None when metric-learn imports and fits here; otherwise why not (one phrase)."""
    try:
        import metric_learn
        import sklearn
    except ImportError:
        return "metric-learn is not installed here"
    X = np.array([[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [1.1, 1.0], [0.0, 0.1], [1.0, 1.1]])
    y = np.array([0, 0, 1, 1, 0, 1])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            metric_learn.LMNN(n_neighbors=1, max_iter=2, random_state=0).fit(X, y)
    except Exception as exc:  # noqa: BLE001 - any failure means "cannot run here"
        return (
            f"metric-learn {getattr(metric_learn, '__version__', '?')} cannot run beside scikit-learn "
            f"{sklearn.__version__} ({type(exc).__name__}: {str(exc)[:90]})"
        )
    return None


def _pipeline(name, standardize, seed):
    import metric_learn
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    cls, kw = PEERS[name]
    est = getattr(metric_learn, cls)(random_state=seed, **kw)
    return make_pipeline(*([StandardScaler()] if standardize else []), est, KNeighborsClassifier(1))


def warm_subset(y, train, seed: int = 0, per_class: int = 8, at_least: int = 60) -> np.ndarray:
    """Indices of a stratified random subsample of the training fold ``train`` for the
    untimed warm-up fit: about max(``at_least``, ``per_class`` × classes) points, at least
    2 per class (all of ``train`` when it is not larger)."""
    rng = np.random.default_rng(seed)
    n = max(at_least, per_class * np.unique(y[train]).size)
    if train.size <= n:
        return train
    take = []
    for c in np.unique(y[train]):
        members = train[y[train] == c]
        take.append(
            rng.choice(members, min(members.size, max(2, int(round(n * members.size / train.size)))), replace=False)
        )
    return np.sort(np.concatenate(take))


def evaluate(cells, seed: int = 0) -> list[dict]:
    """The peer rows of ``cells``.

    Parameters
    ----------
    cells : list of dict
        ``{"estimator": a key of PEERS, "dataset", "features": "raw" or "standardized",
        "X", "y", "folds": [(train, test)]}``.
    seed : int, default 0
        ``random_state`` of the metric-learn estimators.

    Returns
    -------
    list of dict
        One row per cell (see the module docstring); ``error`` is None or
        ``"ExceptionName: message"``.
    """
    from threadpoolctl import threadpool_limits

    rows = []
    for cell in cells:
        X, y = np.asarray(cell["X"], dtype=float), np.asarray(cell["y"])
        standardize = cell["features"] == "standardized"
        row = {k: cell[k] for k in ("estimator", "dataset", "features")}
        row.update(fold_accuracy=[], fit_s=None, error=None)
        times = []
        try:
            with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tr0 = np.asarray(cell["folds"][0][0])
                warm = warm_subset(y, tr0, seed)
                _pipeline(cell["estimator"], standardize, seed).fit(X[warm], y[warm])
                for train, test in cell["folds"]:
                    train, test = np.asarray(train), np.asarray(test)
                    pipe = _pipeline(cell["estimator"], standardize, seed)
                    t0 = time.perf_counter()
                    pipe.fit(X[train], y[train])
                    times.append(time.perf_counter() - t0)
                    row["fold_accuracy"].append(float(pipe.score(X[test], y[test])))
            row["fit_s"] = float(np.mean(times))
        except Exception as exc:  # noqa: BLE001 - reported in the row
            row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        rows.append(row)
    return rows


def write_cells(path, cells, seed: int = 0) -> None:
    """Save ``cells`` (see :func:`evaluate`) and ``seed`` as an ``.npz`` for :func:`main`."""
    arrays = {
        "meta": np.array(
            json.dumps(
                {
                    "seed": seed,
                    "cells": [
                        {k: c[k] for k in ("estimator", "dataset", "features")} | {"n_folds": len(c["folds"])}
                        for c in cells
                    ],
                }
            )
        )
    }
    for k, c in enumerate(cells):
        arrays[f"X{k}"], arrays[f"y{k}"] = c["X"], c["y"]
        for f, (train, test) in enumerate(c["folds"]):
            arrays[f"tr{k}_{f}"], arrays[f"te{k}_{f}"] = train, test
    np.savez(path, **arrays)


def read_cells(path) -> tuple[list[dict], int]:
    """The cells and seed saved by :func:`write_cells`."""
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        cells = []
        for k, c in enumerate(meta["cells"]):
            folds = [(data[f"tr{k}_{f}"], data[f"te{k}_{f}"]) for f in range(c["n_folds"])]
            cells.append(
                {
                    "estimator": c["estimator"],
                    "dataset": c["dataset"],
                    "features": c["features"],
                    "X": data[f"X{k}"],
                    "y": data[f"y{k}"],
                    "folds": folds,
                }
            )
    return cells, int(meta["seed"])


def fit_lmnn(Z, y, k: int, regularization: float, max_iter: int = 1000, seed: int = 0) -> dict:
    """metric-learn's LMNN on the given (already standardized) features, one BLAS thread:
    ``{"L": components_ (list of rows), "seconds": fit time, "n_iter": its iterations}``
    (``bench lmnn``'s peer row; the caller evaluates the objective of L Lᵀ itself)."""
    import metric_learn
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = metric_learn.LMNN(n_neighbors=k, regularization=regularization, max_iter=max_iter, random_state=seed)
        t0 = time.perf_counter()
        est.fit(np.asarray(Z, dtype=float), np.asarray(y))
        secs = time.perf_counter() - t0
    return {"L": np.asarray(est.components_).tolist(), "seconds": secs, "n_iter": int(getattr(est, "n_iter_", -1))}


def main(argv=None) -> int:
    """``python _peer_metric_learn.py IN.npz OUT.json``: rows of the saved cells as JSON
    (``{"unavailable": reason}`` when metric-learn cannot run in this interpreter).
    ``python _peer_metric_learn.py --lmnn IN.npz OUT.json``: :func:`fit_lmnn` on the arrays
    ``Z``, ``y``, ``k``, ``regularization``, ``max_iter`` of IN.npz."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 3 and argv[0] == "--lmnn":
        reason = available()
        if reason is not None:
            out = {"unavailable": reason}
        else:
            with np.load(argv[1], allow_pickle=False) as d:
                out = fit_lmnn(d["Z"], d["y"], int(d["k"]), float(d["regularization"]), int(d["max_iter"]))
        with open(argv[2], "w") as fh:
            json.dump(out, fh)
        return 0
    if len(argv) != 2:
        print("usage: python _peer_metric_learn.py IN.npz OUT.json", file=sys.stderr)
        return 2
    reason = available()
    if reason is not None:
        out = {"unavailable": reason}
    else:
        import metric_learn
        import sklearn

        cells, seed = read_cells(argv[0])
        out = {
            "rows": evaluate(cells, seed),
            "versions": {
                "metric-learn": getattr(metric_learn, "__version__", "?"),
                "scikit-learn": sklearn.__version__,
            },
        }
    with open(argv[1], "w") as fh:
        json.dump(out, fh)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
