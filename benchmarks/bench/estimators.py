"""``python -m benchmarks bench estimators``: every estimator of :data:`cvxkml.estimators.ESTIMATORS` with its
defaults, as a scikit-learn user runs it, beside the Euclidean baseline.

Wine, breast cancer and 500 stratified digits (scikit-learn loaders), raw and standardized
(``StandardScaler`` in the pipeline); 3-fold stratified shuffled CV (seed :data:`SEED`);
accuracy of ``Pipeline([scaler, estimator, KNeighborsClassifier(1)])`` (a classifier predicts
itself); defaults except ``random_state = SEED``; baseline Euclidean 1-NN in the same run;
fit time: mean ``Pipeline.fit`` seconds, one BLAS and one Numba thread, after an untimed
warm-up fit; the fitted ``solution_``'s certificate; peer rows of metric-learn (never a
dependency) when it runs here or in ``--peer-python``.  The cells are independent tasks
(``--n-jobs``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from cvxkml.errors import InvalidInputError

from .._commands import CommandError
from .._parallel import describe, run_tasks
from .._peer_metric_learn import warm_subset
from .._report import finish, format_table, pm, start, write_numbers
from .._runner import timed

__all__ = [
    "SEED",
    "DATASETS",
    "FEATURES",
    "BASELINE",
    "load_bench_dataset",
    "check_folds",
    "cv_folds",
    "make_pipeline",
    "run_cell",
    "run_bench",
    "format_report",
    "command",
]

#: Seed of the folds, the digits subset and the estimators' random_state.
SEED = 0
#: The data sets of the full run (``--quick``: a 60-point stratified subset of Wine).
DATASETS = ("wine", "breast_cancer", "digits500")
#: How the features are given to the pipeline.
FEATURES = ("raw", "standardized")
#: The name of the baseline row.
BASELINE = "Euclidean 1-NN"
N_FOLDS = 3
QUICK_SIZE = 60


# --------------------------------------------------------------------------- data
def load_bench_dataset(name: str, quick: bool = False) -> tuple[np.ndarray, np.ndarray, str]:
    """(X, y, description) of ``name`` (of :data:`DATASETS`); ``quick``: a stratified subset of
    :data:`QUICK_SIZE` points."""
    from sklearn.datasets import load_breast_cancer, load_digits, load_wine
    from sklearn.model_selection import train_test_split

    loaders = {"wine": load_wine, "breast_cancer": load_breast_cancer, "digits500": load_digits}
    if name not in loaders:
        raise CommandError(f"unknown data set {name!r}; choose from {', '.join(DATASETS)}.")
    X, y = loaders[name](return_X_y=True)
    X = np.asarray(X, dtype=float)
    size = QUICK_SIZE if quick else (500 if name == "digits500" else None)
    what = ""
    if size is not None and size < y.size:
        X, _, y, _ = train_test_split(X, y, train_size=size, stratify=y, random_state=SEED)
        what = f", stratified subset (seed {SEED})"
    return X, y, f"{X.shape[0]} x {X.shape[1]}, {np.unique(y).size} classes{what}"


def check_folds(y, n_folds: int, name: str = "the data", flag: str = "--folds") -> None:
    """InvalidInputError (naming ``name`` and ``flag``) unless 2 <= ``n_folds`` <= the smallest class of ``y``."""
    smallest = int(np.unique(y, return_counts=True)[1].min())
    if not 2 <= n_folds <= smallest:
        raise InvalidInputError(
            f"{n_folds}-fold stratified cross-validation of {name} needs 2 to {smallest} folds "
            f"(its smallest class has {smallest} points); use {flag} between 2 and {smallest}."
        )


def cv_folds(y, n_folds: int = N_FOLDS, seed: int = SEED) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) indices of the shuffled stratified ``n_folds``-fold split (:func:`check_folds` first)."""
    from sklearn.model_selection import StratifiedKFold

    check_folds(y, n_folds)
    return list(StratifiedKFold(n_folds, shuffle=True, random_state=seed).split(np.zeros((len(y), 1)), y))


# --------------------------------------------------------------------------- estimators
def _estimator_classes() -> dict:
    from cvxkml.estimators import ESTIMATORS

    return {cls.__name__: cls for cls in ESTIMATORS}


def make_pipeline(name: str, features: str, seed: int = SEED):
    """Optional ``StandardScaler``, the estimator ``name`` with its defaults (``random_state=seed``)
    and 1-NN (a classifier ends the pipeline itself; :data:`BASELINE`: no estimator)."""
    from sklearn.base import is_classifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline as _make
    from sklearn.preprocessing import StandardScaler

    steps = [StandardScaler()] if features == "standardized" else []
    if name == BASELINE:
        return _make(*steps, KNeighborsClassifier(1))
    est = _estimator_classes()[name]()
    if "random_state" in est.get_params():
        est.set_params(random_state=seed)
    if is_classifier(est):
        return _make(*steps, est)
    return _make(*steps, est, KNeighborsClassifier(1))


def _fitted_estimator(pipe, name):
    return next(step for _, step in pipe.steps if type(step).__name__ == name)


def _certificate(est) -> dict | None:
    sol = getattr(est, "solution_", None)
    if sol is None:
        return None
    gap = sol.gap
    rel = None if gap is None else float(gap / max(1.0, abs(float(sol.objective))))
    return {
        "converged": bool(sol.converged),
        "rel_gap": rel,
        "max_violation": float(sol.max_violation),
        "status": str(sol.status),
        "solver": str(sol.solver),
        "n_iter": int(sol.n_iter),
    }


_WARMED: set = set()  # estimators warmed up in this process


def _try(fn, *args):
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - the timed fits report errors
        pass


def run_cell(task) -> dict:
    """One cell ``task = (name, dataset, features, X, y, folds, seed)``.

    Returns
    -------
    dict
        ``estimator``, ``dataset``, ``features``, ``fold_accuracy``, ``fit_s`` (mean; None on
        error), ``certificates`` (per fold, or None), ``warmup_s`` (None: warm already),
        ``warnings`` (categories seen), ``error`` (None or ``"Name: message"``).
    """
    from cvxkml.errors import ConvergenceWarning

    name, dataset, features, X, y, folds, seed = task
    row = {
        "estimator": name,
        "dataset": dataset,
        "features": features,
        "fold_accuracy": [],
        "fit_s": None,
        "certificates": None,
        "warmup_s": None,
        "warnings": [],
        "error": None,
    }
    seen = set()
    times, certs = [], []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", ConvergenceWarning)  # recorded as converged = False
            if name not in _WARMED:
                warm = warm_subset(y, folds[0][0], seed)
                row["warmup_s"] = timed(_try, make_pipeline(name, features, seed).fit, X[warm], y[warm])[1]
                _WARMED.add(name)
            for train, test in folds:
                pipe = make_pipeline(name, features, seed)
                times.append(timed(pipe.fit, X[train], y[train])[1])
                row["fold_accuracy"].append(float(pipe.score(X[test], y[test])))
                if name != BASELINE:
                    certs.append(_certificate(_fitted_estimator(pipe, name)))
            seen = {w.category.__name__ for w in caught}
        row["fit_s"] = float(np.mean(times))
        row["certificates"] = None if not certs or all(c is None for c in certs) else certs
    except Exception as exc:  # noqa: BLE001 - one failing estimator is a row, not a crash
        row["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    row["warnings"] = sorted(seen)
    return row


# --------------------------------------------------------------------------- peers
def _peer_rows(datasets_data, features, seed, peer_python) -> tuple[list[dict], str | None]:
    """(rows, None) or ([], why the peer rows are missing)."""
    from benchmarks import _peer_metric_learn as peer

    cells = [
        {"estimator": p, "dataset": d, "features": f, "X": X, "y": y, "folds": folds}
        for d, (X, y, folds, _) in datasets_data.items()
        for p in peer.PEERS
        for f in features
    ]
    if peer_python is None:
        reason = peer.available()
        if reason is not None:
            return [], (
                f"{reason}; metric-learn 0.7 needs scikit-learn < 1.8: give --peer-python with an "
                "interpreter that has both (never a dependency of cvxkml)"
            )
        return peer.evaluate(cells, seed), None
    with tempfile.TemporaryDirectory(prefix="cvxkml-peer-") as tmp:
        src, dst = Path(tmp) / "cells.npz", Path(tmp) / "rows.json"
        peer.write_cells(src, cells, seed)
        try:
            proc = subprocess.run(
                [peer_python, peer.__file__, str(src), str(dst)],
                capture_output=True,
                text=True,
                env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
            )
        except OSError as exc:
            return [], f"{peer_python} could not be started ({exc.strerror or exc})"
        if proc.returncode != 0 or not dst.exists():
            tail = " ".join((proc.stderr or "").strip().splitlines()[-1:])[:200]
            return [], f"{peer_python} could not run the peer rows (exit {proc.returncode}: {tail})"
        out = json.loads(dst.read_text())
    if "unavailable" in out:
        return [], f"{out['unavailable']} (in {peer_python})"
    v = out.get("versions", {})
    for r in out["rows"]:
        r["versions"] = v
    return out["rows"], None


# --------------------------------------------------------------------------- run
def _check_names(estimators) -> list[str]:
    """The estimator names to run (all when None); a :class:`CommandError` names the
    unknown ones and the choices."""
    classes = _estimator_classes()
    names = list(classes) if not estimators else list(estimators)
    unknown = [n for n in names if n not in classes]
    if unknown:
        raise CommandError(f"unknown estimator(s) {', '.join(unknown)}; choose from {', '.join(classes)}.")
    return names


def run_bench(
    estimators=None,
    datasets=DATASETS,
    quick: bool = False,
    n_jobs: int | None = 1,
    peer_python=None,
    peers: bool = True,
    progress=None,
) -> dict:
    """The bench (see the module docstring).

    Parameters
    ----------
    estimators : list of str, optional
        Names of :data:`cvxkml.estimators.ESTIMATORS` (default all); the baseline always runs.
    datasets : tuple of str, default DATASETS
        Names of the data sets to run on.
    quick : bool, default False
        Subsets of :data:`QUICK_SIZE` points.
    n_jobs : int or None, default 1
        Parallel fits (joblib); None or -1: every core.
    peer_python : str, optional
        An interpreter with metric-learn for the peer rows (default this one).
    peers : bool, default True
        Also run the metric-learn peers.
    progress : callable, optional
        ``progress(row)`` after each cell, in order.

    Returns
    -------
    dict
        ``settings``, ``datasets`` (name -> description), ``rows`` (:func:`run_cell`, peers too),
        ``peer_note`` (None or why the peers are missing), ``elapsed_s``.
    """
    names = _check_names(estimators)
    t0 = time.perf_counter()
    data = {}
    for d in datasets:
        X, y, desc = load_bench_dataset(d, quick)
        data[d] = (X, y, cv_folds(y), desc)
    tasks = [
        (name, d, f, X, y, folds, SEED)
        for d, (X, y, folds, _) in data.items()
        for name in [BASELINE] + names
        for f in FEATURES
    ]
    rows = run_tasks(run_cell, tasks, n_jobs, callback=None if progress is None else (lambda k, r: progress(r)))
    peer_note = "not run"
    if peers:
        peer, peer_note = _peer_rows(data, FEATURES, SEED, peer_python)
        rows += peer
    return {
        "settings": {
            "quick": quick,
            "seed": SEED,
            "n_folds": N_FOLDS,
            "datasets": list(datasets),
            "estimators": names,
            "n_jobs": n_jobs,
            "features": list(FEATURES),
            "peer_python": peer_python,
        },
        "datasets": {d: v[3] for d, v in data.items()},
        "rows": rows,
        "peer_note": peer_note,
        "elapsed_s": time.perf_counter() - t0,
    }


# --------------------------------------------------------------------------- report
HEADERS = [
    "estimator",
    "features",
    "accuracy (mean ± std)",
    "vs baseline",
    "fit [s]",
    "converged",
    "max rel gap",
    "max violation",
]


def _cells(r: dict, base: float | None) -> list[str]:
    if r["error"] is not None:
        return [r["estimator"], r["features"], "error (see below)", "-", "-", "-", "-", "-"]
    acc = np.asarray(r["fold_accuracy"])
    is_base = r["estimator"] == BASELINE and r["features"] == "standardized"
    delta = "-" if base is None or is_base else f"{acc.mean() - base:+.3f}".replace("-0.000", "+0.000")
    certs = r.get("certificates")
    if certs:
        got = [c for c in certs if c is not None]
        conv = f"{sum(c['converged'] for c in got)}/{len(got)}"
        gaps = [c["rel_gap"] for c in got if c["rel_gap"] is not None]
        gap = f"{max(gaps):.1e}" if gaps else "-"
        viol = f"{max(c['max_violation'] for c in got):.1e}"
    else:
        conv = gap = viol = "-"
    return [r["estimator"], r["features"], pm(acc.mean(), acc.std()), delta, f"{r['fit_s']:.3g}", conv, gap, viol]


def format_report(res: dict) -> str:
    """One table per data set (the baseline first), then the errors and notes."""
    lines = []
    errors = []
    for d, desc in res["datasets"].items():
        rows = [r for r in res["rows"] if r["dataset"] == d]
        base = next(
            (
                np.mean(r["fold_accuracy"])
                for r in rows
                if r["estimator"] == BASELINE and r["features"] == "standardized" and r["error"] is None
            ),
            None,
        )
        lines.append(f"{d} ({desc})")
        lines.append(format_table(HEADERS, [_cells(r, base) for r in rows]))
        lines.append("")
        errors += [f"  {d} / {r['features']} / {r['estimator']}: {r['error']}" for r in rows if r["error"]]
    versions = next((r["versions"] for r in res["rows"] if r.get("versions")), None)
    if versions:
        lines.append(
            f"(peer rows: metric-learn {versions.get('metric-learn', '?')} beside scikit-learn "
            f"{versions.get('scikit-learn', '?')}, run by {res['settings']['peer_python']})"
        )
    if errors:
        lines.append("errors (the estimator raised while fitting with its defaults):")
        lines += errors
        lines.append("")
    lines.append(
        f"(accuracy: {N_FOLDS}-fold stratified CV, seed {res['settings']['seed']}, mean ± std over "
        f"the folds; vs baseline: minus the accuracy of {BASELINE} on the standardized features; fit: "
        "mean Pipeline.fit seconds over the folds, one BLAS and one Numba thread, after an untimed "
        "warm-up fit; converged / gap / violation: the fitted solution_ of each fold, '-' without one)"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- command
def _names(values):
    out = []
    for v in values or ():
        out += [s for s in str(v).replace(",", " ").split() if s]
    return out or None


def command(args) -> int:
    """``python -m benchmarks bench estimators``: every estimator with its defaults, 3-fold cross-validated 1-NN
    accuracy on the learned transform, fit time and certificate, beside Euclidean 1-NN and
    metric-learn.

    Returns the exit status, 0; raises :class:`CommandError` for an unknown estimator or data set
    name, or a ``--peer-python`` that is not an executable."""
    estimators = _names(args.estimators)
    datasets = tuple(_names(args.datasets) or (("wine",) if args.quick else DATASETS))
    bad = [d for d in datasets if d not in DATASETS]
    if bad:
        raise CommandError(f"unknown data set(s) {', '.join(bad)}; choose from {', '.join(DATASETS)}.")
    _check_names(estimators)  # before the header
    if args.peer_python is not None and shutil.which(args.peer_python) is None:
        raise CommandError(
            f"--peer-python {args.peer_python}: no such executable; give the path of a Python "
            "interpreter with metric-learn installed"
        )
    n_jobs = 1 if args.n_jobs is None else args.n_jobs
    t_start = start(
        "python -m benchmarks bench estimators",
        args.quick,
        f"{N_FOLDS}-fold stratified CV (seed {SEED}), 1-NN on the learned transform (KCRClassifier: "
        f"its own rule), estimator defaults with random_state = {SEED}; one BLAS and one Numba thread "
        "per fit, warm-up excluded, time.perf_counter; " + describe(n_jobs, "loky"),
    )

    def progress(r):
        state = "error" if r["error"] else f"{np.mean(r['fold_accuracy']):.3f}, {r['fit_s']:.3g} s"
        print(
            f"  {r['dataset']} / {r['features']} / {r['estimator']}: {state} ({time.perf_counter() - t_start:.0f} s)",
            file=sys.stderr,
            flush=True,
        )

    res = run_bench(
        estimators, datasets, quick=args.quick, n_jobs=n_jobs, peer_python=args.peer_python, progress=progress
    )
    if res["peer_note"] is not None:
        print(f"metric-learn peer rows skipped: {res['peer_note']}")
    print()
    print(format_report(res))
    write_numbers(args.json, res)
    print()
    return finish("bench", t_start)
