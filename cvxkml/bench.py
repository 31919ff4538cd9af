"""Benchmarks and the demo behind the ``cvxkml`` command.

Every function returns plain rows (lists of dicts) so the CLI, tests and notebooks can
print or check them; nothing here prints.

* :func:`projection_rows` — seconds per Bregman projection of the Numba solver
  (:mod:`cvxkml.solvers.bregman`) against a plain-NumPy loop of the same update
  (:func:`numpy_sweeps_metric`, :func:`numpy_sweeps_kernel`), on identical inputs in
  the same run.
* :func:`tolerance_rows` — time to tolerance of the fast solver against the exact
  CVXPY model (SCS at eps 1e-8; Clarabel where its memory allows) on the slack LogDet
  kernel problem with 2n pairs, with the objective gap between the two.
* :func:`demo_knn_rows`, :func:`demo_fast_vs_exact` — the ``cvxkml demo`` content.

Timings use :func:`time.perf_counter`, the best of ``repeats`` runs, after a Numba
warm-up so that compilation is never timed.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from .datasets import load_wine_standardized, make_random_instance

__all__ = [
    "numpy_sweeps_metric", "numpy_sweeps_kernel", "warm_up", "projection_rows",
    "tolerance_rows", "demo_knn_rows", "demo_fast_vs_exact",
]


# --------------------------------------------------------------------------- plain NumPy
def _numpy_project(p, d, xi_c, lam_c, gamma):
    """Algorithm 1 projection parameters (same formulas as the Numba ``_project``)."""
    hard = np.isinf(gamma)
    factor = 1.0 if hard else gamma / (gamma + 1.0)
    alpha = min(lam_c, d * factor * (1.0 / p - 1.0 / xi_c))
    beta = d * alpha / (1.0 - d * alpha * p)
    if not hard:
        xi_c = gamma * xi_c / (gamma + d * alpha * xi_c)
    return alpha, beta, xi_c


def numpy_sweeps_metric(W, V, delta, xi, lam, gamma, n_sweeps):
    """``n_sweeps`` cyclic Bregman sweeps on a d × d Mahalanobis matrix, in plain NumPy.

    Per projection (constraint c, v = V[c]): Wv = W v, p = vᵀWv,
    α = min(λ_c, δγ/(γ+1)(1/p − 1/ξ_c)), β = δα/(1 − δαp), ξ_c ← γξ_c/(γ + δαξ_c),
    λ_c ← λ_c − α, W ← W + β (Wv)(Wv)ᵀ (skipped when β = 0, as in the Numba loop).
    Updates ``W``, ``xi``, ``lam`` in place; ``gamma = inf`` means hard constraints.
    Returns the number of rank-one updates performed.
    """
    updates = 0
    for _ in range(n_sweeps):
        for c in range(V.shape[0]):
            v = V[c]
            Wv = W @ v
            p = float(v @ Wv)
            if not p > 0.0:
                raise FloatingPointError(f"non-positive distance at constraint {c}")
            alpha, beta, xi[c] = _numpy_project(p, delta[c], xi[c], lam[c], gamma)
            lam[c] -= alpha
            if beta != 0.0:
                W += beta * np.outer(Wv, Wv)
                updates += 1
    return updates


def numpy_sweeps_kernel(K, I, J, delta, xi, lam, gamma, n_sweeps):
    """``n_sweeps`` cyclic Bregman sweeps on an n × n kernel matrix, in plain NumPy.

    Same update as :func:`numpy_sweeps_metric` with Kz = K[i] − K[j] (z = e_i − e_j),
    p = Kz_i − Kz_j and K ← K + β (Kz)(Kz)ᵀ.  Updates ``K``, ``xi``, ``lam`` in place and
    returns the number of rank-one updates performed.
    """
    updates = 0
    for _ in range(n_sweeps):
        for c in range(I.shape[0]):
            i, j = I[c], J[c]
            Kz = K[i] - K[j]
            p = float(Kz[i] - Kz[j])
            if not p > 0.0:
                raise FloatingPointError(f"non-positive distance at constraint {c}")
            alpha, beta, xi[c] = _numpy_project(p, delta[c], xi[c], lam[c], gamma)
            lam[c] -= alpha
            if beta != 0.0:
                K += beta * np.outer(Kz, Kz)
                updates += 1
    return updates


# --------------------------------------------------------------------------- helpers
def warm_up() -> None:
    """Compile (or load from cache) the Numba Bregman loops on a tiny problem."""
    for kind in ("metric", "kernel"):
        make_random_instance(6, 3, 6, 1.0, kind=kind, random_state=0).solve(tol=1e-6, max_sweeps=50)


def _best_of(fn, repeats: int) -> float:
    best = np.inf
    for _ in range(max(1, int(repeats))):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _rel_gap(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


# --------------------------------------------------------------------------- (a) per projection
def _projection_case(kind: str, size: int, n_proj: int, repeats: int, seed: int) -> dict:
    from .solvers.bregman import _sweeps_kernel, _sweeps_metric

    if kind == "metric":
        n_points = max(2 * size, 60)
        m = min(n_proj, n_points * (n_points - 1) // 2, 2000)
        prob = make_random_instance(n_points, size, m, 1.0, kind="metric", random_state=seed)
        V0 = np.ascontiguousarray(prob.X[prob.pairs.i] - prob.X[prob.pairs.j])
    else:
        m = min(n_proj, 2 * size)
        prob = make_random_instance(size, 5, m, 1.0, kind="kernel", random_state=seed)
    P = prob.pairs
    sweeps = max(1, int(np.ceil(n_proj / len(P))))
    total = sweeps * len(P)
    delta = np.ascontiguousarray(P.y, dtype=float)
    gamma = float(prob.gamma)

    def fresh():
        return (np.array(prob.M0, dtype=float, order="C"), np.array(P.bound, dtype=float),
                np.zeros(len(P)))

    out = {}

    def run_numba():
        M, xi, lam = fresh()
        if kind == "metric":
            res = _sweeps_metric(M, V0, delta, xi, lam, gamma, 0.0, sweeps)
        else:
            res = _sweeps_kernel(M, P.i, P.j, delta, xi, lam, gamma, 0.0, sweeps)
        out["numba"] = (M, res)

    def run_numpy():
        M, xi, lam = fresh()
        if kind == "metric":
            out["updates"] = numpy_sweeps_metric(M, V0, delta, xi, lam, gamma, sweeps)
        else:
            out["updates"] = numpy_sweeps_kernel(M, P.i, P.j, delta, xi, lam, gamma, sweeps)
        out["numpy"] = M

    run_numba()                                             # compile / load, untimed
    t_numba = _best_of(run_numba, repeats)
    t_numpy = _best_of(run_numpy, repeats)
    M_nb, (done, _change, code, _bad) = out["numba"]
    if done != sweeps:
        raise RuntimeError(f"Numba loop stopped early (code {code}) in the {kind} benchmark.")
    diff = float(np.max(np.abs(M_nb - out["numpy"])) / max(1.0, np.max(np.abs(out["numpy"]))))
    return {
        "form": kind, "size": int(size), "pairs": len(P), "projections": int(total),
        "updates": int(out["updates"]),
        "numba_s_per_proj": t_numba / total, "numpy_s_per_proj": t_numpy / total,
        "speedup": t_numpy / t_numba, "max_rel_diff": diff,
    }


def projection_rows(quick: bool = False, repeats: int | None = None, seed: int = 0) -> list[dict]:
    """Seconds per Bregman projection, Numba vs plain NumPy, for the metric form at
    d = 4, 13, 64 and the kernel form at n = 100, 1000 (``quick``: d = 4, 13 and n = 100,
    fewer projections and repeats).

    Both implementations run the same number of projections (whole sweeps over the same
    pairs, slack γ = 1, from the same start), so they do identical arithmetic;
    ``max_rel_diff`` is the largest relative difference of the resulting matrices.
    Projections whose step is zero (β = 0: a satisfied constraint with λ_c = 0) skip the
    rank-one update in both; ``updates`` counts the rank-one updates actually done.
    Columns: form, size (d or n), pairs, projections, updates, numba_s_per_proj,
    numpy_s_per_proj, speedup (= numpy / numba), max_rel_diff.
    """
    warm_up()
    if quick:
        cases = [("metric", 4, 400), ("metric", 13, 400), ("kernel", 100, 200)]
        repeats = 2 if repeats is None else repeats
    else:
        cases = [("metric", 4, 20_000), ("metric", 13, 20_000), ("metric", 64, 10_000),
                 ("kernel", 100, 4_000), ("kernel", 1000, 400)]
        repeats = 5 if repeats is None else repeats
    return [_projection_case(kind, size, n_proj, repeats, seed) for kind, size, n_proj in cases]


# --------------------------------------------------------------------------- (b) to tolerance
def tolerance_rows(quick: bool = False, repeats: int | None = None, seed: int = 0,
                   tol: float = 1e-10, eps: float = 1e-8, gamma: float = 1.0) -> list[dict]:
    """Time to tolerance: the fast Bregman solver (``solve(tol)``) against the exact CVXPY
    model, on the slack (γ = ``gamma``) LogDet kernel problem with 2n random pairs at
    n = 20, 40, 80 (``quick``: n = 10, 20).

    The exact model is solved with SCS (eps_abs = eps_rel = ``eps``) at every n and with
    Clarabel (tolerances ``eps``) where its memory allows (matrix ≤ 40 × 40, see
    ``LogDetProblem.default_solver``).  Times are the best of ``repeats`` wall-clock runs of
    ``solve`` resp. ``solve_reference`` (model build and canonicalization included).
    Columns: n, pairs, solver, fast_s, exact_s, ratio (= fast / exact), fast_objective,
    exact_objective, rel_gap (= |f_fast − f_exact| / max(1, |f_exact|)), fast_max_violation,
    exact_max_violation, exact_status, fast_sweeps.
    """
    from .declare.base import _CLARABEL_MAX_DIM

    warm_up()
    sizes = (10, 20) if quick else (20, 40, 80)
    repeats = (1 if quick else 3) if repeats is None else repeats
    rows = []
    for n in sizes:
        prob = make_random_instance(n, 5, 2 * n, gamma, kind="kernel", random_state=seed + n)
        fast = {}

        def run_fast():
            fast["sol"] = prob.solve(tol=tol, max_sweeps=1_000_000)

        t_fast = _best_of(run_fast, repeats)
        sf = fast["sol"]
        solvers = ["SCS"] + (["CLARABEL"] if prob.T.shape[1] <= _CLARABEL_MAX_DIM else [])
        for solver in solvers:
            exact = {}
            opts = {"eps": eps, "accept_inaccurate": True}

            def run_exact():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exact["sol"] = prob.solve_reference(solver=solver, **opts)

            t_exact = _best_of(run_exact, repeats)
            se = exact["sol"]
            rows.append({
                "n": n, "pairs": len(prob.pairs), "solver": solver.lower(),
                "fast_s": t_fast, "exact_s": t_exact, "ratio": t_fast / t_exact,
                "fast_objective": sf.objective, "exact_objective": se.objective,
                "rel_gap": _rel_gap(sf.objective, se.objective),
                "fast_max_violation": sf.max_violation, "exact_max_violation": se.max_violation,
                "exact_status": se.status, "fast_sweeps": sf.n_iter,
            })
    return rows


# --------------------------------------------------------------------------- demo
def demo_knn_rows(n_neighbors: int = 10, n_folds: int = 2, random_state: int = 0) -> list[dict]:
    """k-NN accuracy on standardized Wine with stratified ``n_folds``-fold cross-validation
    (shuffled, fixed seed) for the Euclidean distance, ITML and KernelITML (Gaussian
    base kernel, σ = the median pairwise distance of the training fold).

    Rows: method, fold accuracies (``scores``), mean, spread (population std over the
    folds; with two folds, half the difference), fit_s (total fit time).
    """
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier

    from .estimators import ITML, KernelITML

    warm_up()                                   # keep Numba compile time out of fit_s
    X, y = load_wine_standardized()
    folds = list(StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state).split(X, y))

    def euclid(Xtr, ytr):
        return None

    def itml(Xtr, ytr):
        return ITML(gamma=1.0, random_state=random_state).fit(Xtr, ytr)

    def kitml(Xtr, ytr):
        D = np.sum((Xtr[:, None, :] - Xtr[None, :, :]) ** 2, axis=-1)
        sigma = float(np.sqrt(np.median(D[np.triu_indices(len(Xtr), 1)])))
        return KernelITML(kernel="gaussian", kernel_params={"sigma": sigma}, gamma=1.0,
                          random_state=random_state).fit(Xtr, ytr)

    rows = []
    for name, make in (("Euclidean", euclid), ("ITML", itml), ("KernelITML (Gaussian)", kitml)):
        scores, fit_s = [], 0.0
        for tr, te in folds:
            t0 = time.perf_counter()
            est = make(X[tr], y[tr])
            fit_s += time.perf_counter() - t0
            Ztr, Zte = (X[tr], X[te]) if est is None else (est.transform(X[tr]), est.transform(X[te]))
            knn = KNeighborsClassifier(n_neighbors=n_neighbors).fit(Ztr, y[tr])
            scores.append(float(knn.score(Zte, y[te])))
        rows.append({"method": name, "scores": scores, "mean": float(np.mean(scores)),
                     "spread": float(np.std(scores)), "fit_s": fit_s})
    return rows


def demo_fast_vs_exact(n: int = 30, gamma: float = 1.0, random_state: int = 0,
                       tol: float = 1e-10) -> dict:
    """One random slack LogDet kernel problem (n points, 2n pairs, Gaussian K0) solved by
    the fast Bregman solver and by the exact CVXPY model (default solver: Clarabel up to
    40 × 40).  The Numba loops are warmed up first, so compile time is excluded.

    Returns n, pairs, gamma, both objectives, rel_gap, both max violations, both times,
    time_ratio (= fast / exact), exact_solver, fast_sweeps.
    """
    warm_up()
    prob = make_random_instance(n, 5, 2 * n, gamma, kind="kernel", random_state=random_state)
    t0 = time.perf_counter()
    sf = prob.solve(tol=tol, max_sweeps=1_000_000)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    se = prob.solve_reference()
    t_exact = time.perf_counter() - t0
    return {
        "n": n, "pairs": len(prob.pairs), "gamma": gamma,
        "fast_objective": sf.objective, "exact_objective": se.objective,
        "rel_gap": _rel_gap(sf.objective, se.objective),
        "fast_max_violation": sf.max_violation, "exact_max_violation": se.max_violation,
        "fast_s": t_fast, "exact_s": t_exact, "time_ratio": t_fast / t_exact,
        "exact_solver": se.solver, "fast_sweeps": sf.n_iter,
    }
