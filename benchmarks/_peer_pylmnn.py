"""The pylmnn peer row of ``python -m benchmarks bench lmnn``: pylmnn's LMNN (L-BFGS on the linear map L)
on the bench's standardized features, for comparison only.

pylmnn is never a dependency of cvxkml.  Its release 1.6 needs SciPy < 1.11 and
scikit-learn < 1.3, so it runs in another environment; this file imports nothing of cvxkml
and is run as a script of that interpreter (``--peer-python PATH`` of the bench)::

    PATH _peer_pylmnn.py --lmnn IN.npz OUT.json

``IN.npz`` holds ``Z``, ``y``, ``k``, ``regularization`` (pylmnn's ``weight_push_loss``: the
γ of eq. 18) and ``max_iter``; ``OUT.json`` receives ``{"L", "seconds", "n_iter",
"version"}`` or ``{"unavailable": why}`` when pylmnn cannot run in that interpreter.  The
caller evaluates the objective of L Lᵀ itself, by its own formula.
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np

__all__ = ["available", "fit_lmnn", "main"]


def available() -> str | None:
    """None when pylmnn imports and fits here; otherwise why not (one phrase)."""
    try:
        from pylmnn import LargeMarginNearestNeighbor
    except Exception as exc:  # noqa: BLE001 - any import failure means "cannot run here"
        return f"pylmnn does not import here ({type(exc).__name__}: {str(exc)[:90]})"
    X = np.array([[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [1.1, 1.0], [0.0, 0.1], [1.0, 1.1]])
    y = np.array([0, 0, 1, 1, 0, 1])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            LargeMarginNearestNeighbor(n_neighbors=1, max_iter=2, random_state=0).fit(X, y)
    except Exception as exc:  # noqa: BLE001 - any failure means "cannot run here"
        return f"pylmnn cannot fit here ({type(exc).__name__}: {str(exc)[:90]})"
    return None


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("pylmnn")
    except Exception:  # noqa: BLE001 - informative only
        return "?"


def fit_lmnn(Z, y, k: int, regularization: float, max_iter: int = 1000, seed: int = 0) -> dict:
    """pylmnn's LMNN on the given (already standardized) features, one BLAS thread:
    ``{"L": components_ (list of rows), "seconds": fit time, "n_iter": its iterations,
    "version"}``.  ``weight_push_loss`` = ``regularization`` (the objective (1 − γ) pull +
    γ push of eq. 18), full-rank L, pylmnn's default PCA start and tolerance."""
    from pylmnn import LargeMarginNearestNeighbor
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LargeMarginNearestNeighbor(
            n_neighbors=k, weight_push_loss=regularization, max_iter=max_iter, random_state=seed
        )
        t0 = time.perf_counter()
        est.fit(np.asarray(Z, dtype=float), np.asarray(y))
        secs = time.perf_counter() - t0
    return {
        "L": np.asarray(est.components_).tolist(),
        "seconds": secs,
        "n_iter": int(getattr(est, "n_iter_", -1)),
        "version": _version(),
    }


def main(argv=None) -> int:
    """``python _peer_pylmnn.py --lmnn IN.npz OUT.json``: :func:`fit_lmnn` on the arrays of
    IN.npz, written to OUT.json (``{"unavailable": reason}`` when pylmnn cannot run here)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3 or argv[0] != "--lmnn":
        print("usage: python _peer_pylmnn.py --lmnn IN.npz OUT.json", file=sys.stderr)
        return 2
    reason = available()
    if reason is not None:
        out = {"unavailable": reason}
    else:
        with np.load(argv[1], allow_pickle=False) as d:
            out = fit_lmnn(d["Z"], d["y"], int(d["k"]), float(d["regularization"]), int(d["max_iter"]))
    with open(argv[2], "w") as fh:
        json.dump(out, fh)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
