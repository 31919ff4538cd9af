"""``python -m benchmarks bench lmnn``: the linear LMNN solver (Weinberger & Saul eq. 18 as in Wang et al.
2011) with its smoothed quasi-Newton phase against the PDHG path it replaced, on the same
problems in the same run (reference/lmnn-speed.md).

For every data set, fold and tolerance, :meth:`cvxkml.declare.lmnn.LMNNProblem.solve` runs
twice on the problem of the standardized training fold: ``smooth=True`` (the default: L-BFGS
on a factor for a decreasing smoothing of the hinge, certified on the unsmoothed problem,
PDHG only if that does not certify) and ``smooth=False`` (the PDHG alone, stopped by a time
budget through the solver's callback). Both stop on the same certificate, so a row's
``converged`` is a proof of ``tol``-optimality and the objectives of two certified rows agree
within their certified gaps. The learned metric's 1-NN accuracy on the test fold is printed
beside the time.

``--scale NAME …``: one certified solve per whole data set (k = 3), with metric-learn and
pylmnn in the same run (``--peer-python``, each stopped after ``--peer-timeout`` seconds); the
names include MNIST-shaped rows of 15 000 – 60 000 points
(:data:`benchmarks.bench._lmnn_family.LARGE`).  ``--scale family``: the instance family of
:mod:`benchmarks.bench._lmnn_family` (generators × seeds × sizes and real data sets; median and
max CPU seconds, growth in n, the verdict of the worst instance against the target).

Nothing here is used by the library itself.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import numpy as np

from cvxkml._config import blas_limit

from .._commands import CommandError
from .._report import finish, format_table, row_line, start, write_numbers
from ._lmnn_family import LARGE, family_points, family_report, family_rows
from .estimators import DATASETS, cv_folds, load_bench_dataset

__all__ = ["lmnn_rows", "command"]

#: LMNN's parameters here (Wang et al.'s k and γ, the workloads of reference/lmnn-speed.md).
K, GAMMA = 5, 0.5
#: The speed target: a certified 1e-4 optimum in at most this many seconds.
TARGET_SECONDS = 10.0


def _problem(X, y, train):
    """LMNN of eq. 18 on the standardized training fold, and the fitted scaler."""
    from sklearn.preprocessing import StandardScaler

    from cvxkml.declare.lmnn import LMNNProblem

    scaler = StandardScaler().fit(X[train])
    return LMNNProblem.linear(scaler.transform(X[train]), y[train], k=K, gamma=GAMMA), scaler


def _nn_accuracy(prob, sol, scaler, X, y, train, test) -> float:
    """1-NN test accuracy of the learned metric on standardized features, mapped by the
    problem's own factor (:meth:`~cvxkml.declare.lmnn.LMNNProblem.factor`, Lᵀ L = A)."""
    from sklearn.neighbors import KNeighborsClassifier

    L = prob.factor(sol.info["X"], sol.info["complement"])
    Ztr, Zte = scaler.transform(X[train]) @ L.T, scaler.transform(X[test]) @ L.T
    return float(KNeighborsClassifier(1).fit(Ztr, y[train]).score(Zte, y[test]))


def _solve(prob, tol: float, smooth: bool, budget: float | None):
    """One timed solve; the PDHG path stops at the first check after ``budget`` seconds."""
    t0 = time.perf_counter()
    stop = None if budget is None else (lambda info: time.perf_counter() - t0 > budget)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unconverged row says so in its status
        sol = prob.solve(tol=tol, max_iter=10**6, callback=stop, smooth=smooth)
    return sol, time.perf_counter() - t0


def _warm_up() -> None:
    """Compile the Numba kernels the smoothed, PDHG and active-set paths use (excluded from
    every timing; a cold cache otherwise puts seconds of compilation into the first large row)."""
    from cvxkml.declare.lmnn import LMNNProblem

    rng = np.random.default_rng(0)
    y = np.arange(24) % 2
    prob = LMNNProblem.linear(rng.normal(size=(24, 3)) + y[:, None], y, k=2, gamma=GAMMA)
    for smooth in (True, False):
        _solve(prob, 1e-3, smooth, 5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(tol=1e-3, impostors="active")


def lmnn_rows(
    datasets=DATASETS,
    tols=(1e-3, 1e-4),
    n_folds: int = 3,
    old: bool = True,
    old_budget: float = 60.0,
    quick: bool = False,
    log=None,
) -> list[dict]:
    """Measure both LMNN paths on every (data set, fold, tol).

    Parameters
    ----------
    datasets : sequence of str, default DATASETS
        Names of :func:`benchmarks.bench.estimators.load_bench_dataset`.
    tols : sequence of float, default (1e-3, 1e-4)
        Certified relative gaps asked of both paths.
    n_folds : int, default 3
        Stratified folds (seed 0, the folds of ``python -m benchmarks bench estimators``); quick: the first
        fold only.
    old : bool, default True
        Also run the PDHG path (``smooth=False``), the baseline.
    old_budget : float, default 60
        Seconds after which the PDHG path stops at its next certificate check (its row then
        says ``stopped by callback`` and ``converged`` is False unless that check certified).
    quick : bool, default False
        The 60-point subsets of :func:`load_bench_dataset`.
    log : callable, optional
        ``log(str)`` receives a line per solve.

    Returns
    -------
    list of dict
        One row per solve: data, fold, tol, path ("smoothed" or "pdhg"), seconds,
        iterations, objective F, dual bound, certified relative gap, converged, status,
        1-NN test accuracy, n, d, triplets.
    """
    if n_folds < 2:
        raise CommandError(f"--folds must be at least 2 (a stratified split); got {n_folds}.")
    _warm_up()
    rows = []
    for name in datasets:
        X, y, _ = load_bench_dataset(name, quick=quick)
        folds = cv_folds(y, n_folds)[: 1 if quick else n_folds]
        for f, (train, test) in enumerate(folds):
            prob, scaler = _problem(X, y, train)
            for tol in tols:
                for path in ("smoothed", "pdhg") if old else ("smoothed",):
                    sol, secs = _solve(prob, tol, path == "smoothed", None if path == "smoothed" else old_budget)
                    F, g = float(sol.objective), float(sol.dual_value)
                    row = dict(
                        data=name,
                        fold=f + 1,
                        tol=tol,
                        path=path,
                        seconds=secs,
                        iterations=int(sol.n_iter),
                        objective=F,
                        dual_value=g,
                        gap=(F - g) / max(1.0, abs(F)),
                        converged=bool(sol.converged),
                        status=sol.status,
                        accuracy=_nn_accuracy(prob, sol, scaler, X, y, train, test),
                        n=int(train.size),
                        d=int(X.shape[1]),
                        triplets=prob.triplets.n_triplets,
                    )
                    rows.append(row)
                    if log is not None:
                        log(f"{name} fold {f + 1} tol {tol:g} {path}: {secs:.3g} s, {row['status']}")
    return rows


# --------------------------------------------------------------------------- at scale
#: the at-scale protocol: k = 3, equal pull / push weights
SCALE_K, SCALE_GAMMA = 3, 0.5
SCALE_DATASETS = ("digits", "mnist5000", "pendigits5000", "wide")
#: also accepted by ``--scale``: the small rows (the whole data set, standardized), the
#: MNIST-shaped rows of tens of thousands of points (:data:`benchmarks.bench._lmnn_family.LARGE`)
#: and ``family`` (the instance family of :mod:`benchmarks.bench._lmnn_family`)
SCALE_CHOICES = ("wine", "breast_cancer") + SCALE_DATASETS + tuple(LARGE) + ("family",)


def load_scale_dataset(name: str, seed: int = 0):
    """(Z, y, description) of a ``bench lmnn --scale`` problem, features as solved.

    ``digits``: scikit-learn's 1 797 × 64 digits, standardized; ``mnist5000``: the offline
    5 000-image MNIST subset (CVXKML_DATA), pixels / 255, PCA to 50 components, standardized;
    ``pendigits5000``: a stratified 5 000-point subset (seed) of UCI pendigits (16 features),
    standardized; ``wide``: synthetic d > n (1 000 × 5 000, 5 classes, class means in a
    10-dimensional subspace plus isotropic noise, seed), standardized.
    """
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if name in ("wine", "breast_cancer"):
        from sklearn import datasets

        X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
        what = f"sklearn load_{name}, standardized"
    elif name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        what = "sklearn load_digits, standardized"
    elif name == "mnist5000":
        from cvxkml.datasets import load_npz

        X, y = load_npz("mnist5000")
        X, y = np.asarray(X, dtype=float) / 255.0, np.asarray(y)
        X = PCA(50, random_state=seed).fit_transform(X)
        what = "MNIST 5000-image subset, PCA-50, standardized"
    elif name == "pendigits5000":
        from cvxkml.datasets import load_dataset

        X, y = load_dataset("pendigits")
        X, _, y, _ = train_test_split(
            np.asarray(X, dtype=float), np.asarray(y), train_size=5000, stratify=y, random_state=seed
        )
        what = f"UCI pendigits, stratified 5000-point subset (seed {seed}), standardized"
    elif name in LARGE:
        spec, n = LARGE[name]
        X, y = family_points(spec, n, seed)
        what = f"{spec} of benchmarks.bench._lmnn_family, {n} points (seed {seed})"
    elif name == "wide":
        rng = np.random.default_rng(seed)
        n, d, c = 1000, 5000, 5
        y = np.arange(n) % c
        B = np.linalg.qr(rng.standard_normal((d, 10)))[0]
        means = rng.standard_normal((c, 10)) * 3.0
        X = means[y] @ B.T + rng.standard_normal((n, d))
        what = f"synthetic d > n ({n} x {d}, {c} classes, seed {seed}), standardized"
    else:
        raise CommandError(f"unknown data set {name!r}; choose from {', '.join(SCALE_CHOICES)}.")
    Z = StandardScaler().fit_transform(np.asarray(X, dtype=float))
    return Z, np.asarray(y), f"{Z.shape[0]} x {Z.shape[1]}, {what}"


def _full_objective(prob, W) -> float:
    """F of eq. 18 over every triplet at the metric whose learned coordinates are the rows of
    W (n × q, d(i, j) = ‖W_i − W_j‖²), by the impostor scan (no triplet list)."""
    from cvxkml.solvers.lmnn import impostor_scan

    t_i, t_j = prob.targets
    perm = np.argsort(t_i, kind="stable")
    hinge = impostor_scan(W, prob.codes, t_i[perm], t_j[perm], 0.0, cap=0)[3]
    D = W[t_i] - W[t_j]
    return (1.0 - prob.gamma) * float(np.einsum("ij,ij->", D, D)) + prob.gamma * hinge


#: peer name -> its script (run by another interpreter, ``--lmnn IN.npz OUT.json``)
#: the script that runs each peer in its own interpreter (in :mod:`benchmarks`)
PEER_SCRIPTS = {
    peer: Path(__file__).resolve().parents[1] / name
    for peer, name in (("metric-learn", "_peer_metric_learn.py"), ("pylmnn", "_peer_pylmnn.py"))
}


def _peer_lmnn(peer_python, Z, y, timeout: float, peer: str = "metric-learn") -> dict:
    """A peer's LMNN (k = 3, regularization / weight_push_loss 0.5, max_iter 1 000) in another
    interpreter, by its script in :data:`PEER_SCRIPTS`; ``{"L", "seconds", "n_iter"}``, or
    ``{"unavailable" | "error": why}``."""
    import json
    import subprocess
    import tempfile

    script = PEER_SCRIPTS[peer]
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.json")
        np.savez(inp, Z=Z, y=y, k=SCALE_K, regularization=SCALE_GAMMA, max_iter=1000)
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        c0 = _children_cpu()
        try:
            proc = subprocess.run(
                [str(peer_python), str(script), "--lmnn", inp, out],
                timeout=timeout,
                capture_output=True,
                text=True,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"did not finish in {timeout:g} s"}
        except OSError as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
        if proc.returncode != 0 or not os.path.exists(out):
            return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]}
        with open(out) as fh:
            return dict(json.load(fh), cpu=_children_cpu() - c0)


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _peer_fields(prefix, prob, Z, peer, g, trace) -> dict:
    """The row fields of one peer's answer: seconds, F of L Lᵀ by :func:`_full_objective`, its
    excess over cvxkml's certified bound g, and the cvxkml seconds at its first check whose
    objective was at or below the peer's (``trace``: (seconds, F) of every check)."""
    if "L" not in peer:
        return {f"{prefix}_error": peer.get("error") or peer.get("unavailable")}
    L = np.asarray(peer["L"], dtype=float)
    Fp = _full_objective(prob, np.ascontiguousarray(Z @ L.T))
    reach = next((t for t, F in trace if F <= Fp), None)
    return {
        f"{prefix}_seconds": float(peer["seconds"]),
        f"{prefix}_cpu": peer.get("cpu"),
        f"{prefix}_objective": Fp,
        f"{prefix}_excess": (Fp - g) / max(1.0, abs(g)),
        f"{prefix}_iterations": peer.get("n_iter"),
        f"{prefix}_reached_s": reach,
    }


def _run_peers(peer_pythons, Z, y, timeout: float) -> dict:
    """Each peer of :data:`PEER_SCRIPTS` from the first interpreter of ``peer_pythons`` where it
    runs: {peer: answer}; a peer that runs in none keeps the last reason."""
    found = {}
    for peer in PEER_SCRIPTS:
        for py in peer_pythons:
            ans = _peer_lmnn(py, Z, y, timeout, peer)
            found[peer] = ans
            if "L" in ans or "error" in ans:
                break
    return found


def scale_rows(
    datasets=SCALE_DATASETS, tol: float = 1e-4, peer_python=None, peer_timeout: float = 1800.0, log=None
) -> list[dict]:
    """cvxkml's linear LMNN (``LMNNProblem.solve``, impostors="auto") and, with ``peer_python``,
    metric-learn's LMNN on the same standardized features, one row per data set.

    Each row: data, n, d, triplets, seconds, certified (converged), objective F (every triplet),
    dual bound, certified relative gap, iterations, rounds / set size / scan, smoothed-phase and
    dual-recovery seconds of the active-set solve; the peer's seconds, its objective F
    (evaluated here by the same formula) and its excess over cvxkml's certified bound.
    """
    from cvxkml.declare.lmnn import LMNNProblem

    if isinstance(peer_python, (str, bytes)) or hasattr(peer_python, "__fspath__"):
        peer_python = [peer_python]
    _warm_up()
    rows = []
    for name in datasets:
        Z, y, what = load_scale_dataset(name)
        trace = []
        t0 = time.perf_counter()
        prob = LMNNProblem.linear(Z, y, k=SCALE_K, gamma=SCALE_GAMMA)

        def note(d, t0=t0, trace=trace):
            trace.append((time.perf_counter() - t0, float(d["objective"])))

        c0, load = time.process_time(), os.getloadavg()[0]
        with blas_limit(1), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sol = prob.solve(tol=tol, max_iter=10**6, callback=note)
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        if "round_trace" in sol.info:  # active set: the checks' F is the set's; the full F after each scan
            lag = secs - sol.time
            trace[:] = [(t + lag, F) for t, F, _ in sol.info["round_trace"]]
        trace.append((secs, float(sol.objective)))
        F, g = float(sol.objective), float(sol.dual_value)
        info = sol.info
        row = dict(
            data=name,
            what=what,
            n=int(Z.shape[0]),
            d=int(Z.shape[1]),
            triplets=prob.n_triplets,
            seconds=secs,
            cpu=cpu,
            load=load,
            converged=bool(sol.converged),
            status=sol.status,
            objective=F,
            dual_value=g,
            gap=(F - g) / max(1.0, abs(F)),
            iterations=int(sol.n_iter),
            rank=prob.rank,
            rounds=info.get("rounds"),
            set_sizes=info.get("set_sizes"),
            scan_s=info.get("scan_time"),
            smooth_s=info.get("smooth_time"),
            recovery_s=info.get("polish_time"),
        )
        if peer_python:
            found = _run_peers(peer_python, Z, y, peer_timeout)
            row.update(_peer_fields("peer", prob, Z, found["metric-learn"], g, trace))
            row.update(_peer_fields("pylmnn", prob, Z, found["pylmnn"], g, trace))
        rows.append(row)
        if log is not None:
            log(
                f"{name}: "
                + ", ".join(
                    f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items() if k != "what"
                )
            )
    return rows


def _peer_cells(r, prefix) -> list[str]:
    """seconds, excess over the bound, cvxkml seconds to the peer's F, peer / cvxkml time."""
    if f"{prefix}_seconds" not in r:
        return [r.get(f"{prefix}_error", "not run"), "-", "-", "-"]
    reach = r.get(f"{prefix}_reached_s")
    cpu = r.get(f"{prefix}_cpu")
    return [
        f"{r[f'{prefix}_seconds']:.3g}" + ("" if cpu is None else f" ({cpu:.3g} CPU)"),
        f"{r[f'{prefix}_excess']:.2e}",
        "not reached" if reach is None else f"{reach:.3g}",
        f"{r[f'{prefix}_seconds'] / r['seconds']:.2f}",
    ]


def format_scale(rows, tol: float) -> str:
    """The ``--scale`` rows as a table, then the same-run ratios."""
    table = format_table(
        [
            "data",
            "n x d (rank)",
            "triplets",
            "cvxkml s (CPU s, load)",
            "certified gap",
            "F",
            "rounds / final set",
            "scan s",
            "smoothed s",
            "metric-learn s",
            "its F above the bound",
            "cvxkml s to its F",
            "ml / cvxkml",
            "pylmnn s",
            "its F above the bound",
            "cvxkml s to its F",
            "pylmnn / cvxkml",
        ],
        [
            [
                r["data"],
                f"{r['n']} x {r['d']} ({r['rank']})",
                str(r["triplets"]),
                f"{r['seconds']:.3g}" + (f" ({r['cpu']:.3g}, {r['load']:.1f})" if "cpu" in r else ""),
                f"{r['gap']:.1e}" + ("" if r["converged"] else f" ({r['status']})"),
                f"{r['objective']:.8g}",
                "-" if r["rounds"] is None else f"{r['rounds']} / {r['set_sizes'][-1]}",
                "-" if r["scan_s"] is None else f"{r['scan_s']:.3g}",
                "-" if r["smooth_s"] is None else f"{r['smooth_s']:.3g}",
                *_peer_cells(r, "peer"),
                *_peer_cells(r, "pylmnn"),
            ]
            for r in rows
        ],
    )
    return "\n".join(
        [
            table,
            f"(k = {SCALE_K}, gamma = {SCALE_GAMMA}, tol {tol:g}; F over every triplet; "
            "metric-learn LMNN k = 3, regularization 0.5, max_iter 1000; pylmnn k = 3, weight_push_loss 0.5, "
            "max_iter 1000; the peers' F by the same formula; 'cvxkml s to its F': cvxkml's seconds at its "
            "first check (active set: first scan) with F at or below the peer's; one BLAS thread, same run)",
            *_scale_targets(rows),
        ]
    )


def _scale_targets(rows) -> list[str]:
    """The two targets per row at scale: certified in no more time than metric-learn takes, and
    pylmnn's objective reached in no more time than pylmnn takes."""
    lines = []
    for r in rows:
        parts = []
        if "peer_seconds" in r:
            ok = r["converged"] and r["seconds"] <= r["peer_seconds"]
            parts.append(f"certified {r['seconds']:.3g} s vs metric-learn {r['peer_seconds']:.3g} s: {_met(ok)}")
        if "pylmnn_seconds" in r:
            reach = r.get("pylmnn_reached_s")
            ok = reach is not None and reach <= r["pylmnn_seconds"]
            got = "never" if reach is None else f"{reach:.3g} s"
            parts.append(f"pylmnn's F at {got} vs pylmnn {r['pylmnn_seconds']:.3g} s: {_met(ok)}")
        if parts:
            lines.append(f"{r['data']}: " + "; ".join(parts))
    return lines


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _speedups(rows) -> list[str]:
    """Per (data, tol): PDHG / smoothed time over the folds where both certified."""
    lines = []
    for key in dict.fromkeys((r["data"], r["tol"]) for r in rows):
        pairs = {}
        for r in rows:
            if (r["data"], r["tol"]) == key:
                pairs.setdefault(r["fold"], {})[r["path"]] = r
        both = [p for p in pairs.values() if len(p) == 2 and all(r["converged"] for r in p.values())]
        new = [p["smoothed"] for p in pairs.values()]
        line = (
            f"{key[0]} tol {key[1]:g}: smoothed {np.mean([r['seconds'] for r in new]):.3g} s mean, "
            f"{sum(r['converged'] for r in new)}/{len(new)} certified"
        )
        if any("pdhg" in p for p in pairs.values()):
            if both:
                ratio = [p["pdhg"]["seconds"] / p["smoothed"]["seconds"] for p in both]
                line += (
                    f"; PDHG / smoothed {min(ratio):.3g}-{max(ratio):.3g}x over the {len(both)} folds "
                    "where both certified"
                )
            else:
                line += "; the PDHG path certified no fold within its budget"
        lines.append(line)
    return lines


def format_report(rows, old_budget: float) -> str:
    """The measured rows as the sheet's table, then the ratios and the target lines."""
    table = format_table(
        [
            "data",
            "fold",
            "n x d",
            "triplets",
            "tol",
            "path",
            "seconds",
            "iterations",
            "objective F",
            "certified gap",
            "converged",
            "1-NN acc",
        ],
        [
            [
                r["data"],
                str(r["fold"]),
                f"{r['n']} x {r['d']}",
                str(r["triplets"]),
                f"{r['tol']:g}",
                r["path"],
                f"{r['seconds']:.3g}",
                str(r["iterations"]),
                f"{r['objective']:.10g}",
                f"{r['gap']:.1e}",
                "yes" if r["converged"] else f"no ({r['status']})",
                f"{r['accuracy']:.3f}",
            ]
            for r in rows
        ],
    )
    lines = [
        table,
        f"(k = {K}, gamma = {GAMMA}, standardized training fold; smoothed = LMNNProblem.solve() default, "
        f"pdhg = solve(smooth=False) stopped at its first check after {old_budget:g} s; both certified by the "
        "same Lagrange bound: converged = certified relative gap <= tol)",
        "",
    ]
    lines += _speedups(rows)
    for name in ("breast_cancer", "digits500"):
        best = [r for r in rows if r["data"] == name and r["path"] == "smoothed" and r["tol"] <= 1e-4]
        if best:
            worst = max(r["seconds"] for r in best)
            ok = all(r["converged"] for r in best) and worst <= TARGET_SECONDS
            lines.append(
                f"target, {name}: a certified 1e-4 optimum in <= {TARGET_SECONDS:g} s: "
                f"{'met' if ok else 'not met'} (slowest fold {worst:.3g} s, "
                f"{sum(r['converged'] for r in best)}/{len(best)} certified)"
            )
    return "\n".join(lines)


def _scale_part(names, tol: float, args) -> list[dict]:
    """The ``--scale`` rows of the data sets ``names``, printed; returns them."""
    rows = scale_rows(names, tol, args.peer_python, args.peer_timeout, log=lambda line: print(line, flush=True))
    print()
    print(format_scale(rows, tol))
    return rows


#: the family part's quick run: two small sizes, two seeds, the generators only
QUICK_FAMILY = dict(specs=("classification:d=16:c=10:sep=1", "digitlike:d=50:c=10"), sizes=(100, 200), seeds=(0, 1))


def _family_part(tol: float, quick: bool) -> dict:
    """``--scale family``: :func:`benchmarks.bench._lmnn_family.family_rows` with its defaults
    (quick: :data:`QUICK_FAMILY`), printed row by row, then the summary and the pendigits
    verdict; returns the rows and the summary."""
    from .._family import summarize
    from ._lmnn_family import FAMILY_TARGET

    print(f"instance family, certified {tol:g}, load average {os.getloadavg()[0]:.2f}:", flush=True)
    rows = family_rows(
        **(QUICK_FAMILY if quick else {}),
        tol=tol,
        report=lambda r: print(row_line(r), flush=True),
    )
    print()
    print("\n".join(family_report(rows, *FAMILY_TARGET)))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return {"rows": rows, "summary": summarize(rows, by="spec", worst=("gap",))}


def command(args) -> int:
    """``python -m benchmarks bench lmnn``: the solver comparison (or, with ``--scale``, the whole-data-set rows)."""
    t_start = start(
        "python -m benchmarks bench lmnn",
        args.quick,
        "one BLAS thread, Numba warmed up on a small instance first, time.perf_counter "
        "(--scale: and CPU seconds, time.process_time)",
    )
    if args.scale is not None:
        tol = args.tol[0] if args.tol else 1e-4
        names = [name for name in args.scale or SCALE_DATASETS if name != "family"]
        out = {}
        if "family" in args.scale:
            out["family"] = _family_part(tol, args.quick)
        if names:
            out["rows"] = _scale_part(names, tol, args)
        write_numbers(args.json, out)
        print()
        return finish("bench", t_start)
    datasets = args.datasets or (("wine",) if args.quick else DATASETS)
    tols = tuple(args.tol) if args.tol else ((1e-3,) if args.quick else (1e-3, 1e-4))
    budget = args.old_budget if args.old_budget is not None else (5.0 if args.quick else 60.0)
    rows = lmnn_rows(datasets, tols, n_folds=args.folds, old=not args.no_old, old_budget=budget, quick=args.quick)
    print()
    print(format_report(rows, budget))
    write_numbers(args.json, {"rows": rows, "old_budget": budget})
    print()
    return finish("bench", t_start)
