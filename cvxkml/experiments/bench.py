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

from ..datasets import load_wine_standardized
from ..solvers.bregman import BENCH_KERNELS as BREGMAN_KERNELS
from ..testing import make_random_instance

__all__ = [
    "numpy_sweeps_metric", "numpy_sweeps_kernel", "warm_up", "projection_rows",
    "tolerance_rows", "demo_knn_rows", "demo_fast_vs_exact",
]


# --------------------------------------------------------------------------- plain NumPy
#: Algorithm 1 projection parameters (alpha, beta, new xi): the solver's own formula run as
#: plain Python, so the NumPy loops below differ from the Numba ones only in how they run
_numpy_project = BREGMAN_KERNELS["project"].py_func


def _numpy_update(M, u, p, c, delta, xi, lam, gamma) -> int:
    """One projection onto constraint ``c`` given u = M z and p = zᵀ M z: updates ``xi[c]``,
    ``lam[c]`` and, unless β = 0, ``M ← M + β u uᵀ`` in place.  Returns 1 when M was
    updated, else 0."""
    if not p > 0.0:
        raise FloatingPointError(f"non-positive distance at constraint {c}")
    alpha, beta, xi[c] = _numpy_project(p, delta[c], xi[c], lam[c], gamma)
    lam[c] -= alpha
    if beta == 0.0:
        return 0
    M += beta * np.outer(u, u)
    return 1


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
            Wv = W @ V[c]
            updates += _numpy_update(W, Wv, float(V[c] @ Wv), c, delta, xi, lam, gamma)
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
            updates += _numpy_update(K, Kz, float(Kz[i] - Kz[j]), c, delta, xi, lam, gamma)
    return updates


# --------------------------------------------------------------------------- helpers
def warm_up() -> None:
    """Compile (or load from cache) the Numba Bregman loops on a tiny problem."""
    for kind in ("metric", "kernel"):
        make_random_instance(6, 3, 6, 1.0, kind=kind, random_state=0).solve(tol=1e-6, max_iter=50)


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
    _sweeps_metric, _sweeps_kernel = BREGMAN_KERNELS["sweeps_metric"], BREGMAN_KERNELS["sweeps_kernel"]

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
    from ..declare.problem import Problem

    warm_up()
    sizes = (10, 20) if quick else (20, 40, 80)
    repeats = (1 if quick else 3) if repeats is None else repeats
    rows = []
    for n in sizes:
        prob = make_random_instance(n, 5, 2 * n, gamma, kind="kernel", random_state=seed + n)
        fast = {}

        def run_fast():
            fast["sol"] = prob.solve(tol=tol, max_iter=1_000_000)

        t_fast = _best_of(run_fast, repeats)
        sf = fast["sol"]
        solvers = ["SCS"] + (["CLARABEL"] if prob.T.shape[1] <= Problem.clarabel_max_size else [])
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

    from ..estimators.logdet import ITML, KernelITML

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
    sf = prob.solve(tol=tol, max_iter=1_000_000)
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


# =========================================================================== low rank
# ``cvxkml bench lowrank``: Kulis, Sustik & Dhillon (2009) Algorithm 2 with CHOLUPDATEMULT.
import numba as nb  # noqa: E402

from ..solvers.lowrank import cholupdatemult, cholupdatemult_t  # noqa: E402

_LOWRANK_SIZES = (10, 50, 100, 200)


@nb.njit(cache=True)
def _drive_cholupdatemult(B, B0, X, betas, reset):
    """Times CHOLUPDATEMULT alone: B ← B L_t, L_t L_tᵀ = I + β_t x_t x_tᵀ for a stream of
    (β_t, x_t), B reset to B0 every ``reset`` updates (keeps B bounded; the r² copy per
    ``reset`` updates is included in the time)."""
    for t in range(X.shape[0]):
        if t % reset == 0:
            B[:, :] = B0
        cholupdatemult(betas[t], X[t], B)


@nb.njit(cache=True)
def _drive_cholupdatemult_t(R, R0, X, betas, reset):
    """Times the solver's kernel :func:`~cvxkml.solvers.lowrank.cholupdatemult_t` alone:
    R ← Lᵀ R (R = Bᵀ, i.e. B ← B L) for the same stream as :func:`_drive_cholupdatemult`,
    R reset to R0 every ``reset`` updates (the copy included in the time)."""
    r = R.shape[0]
    h = np.empty(r)
    s = np.empty(r)
    acoef = np.empty(r + 1)
    for t in range(X.shape[0]):
        if t % reset == 0:
            R[:, :] = R0
        cholupdatemult_t(betas[t], X[t], R, h, acoef, s)


def numpy_lowrank_sweep(B, G0, I, J, delta, xi, lam, gamma):
    """One sweep of the low-rank projection in dense NumPy: w = Bᵀ(G0[i] − G0[j]), p = ‖w‖²,
    α, β and the slack update as in :func:`numpy_sweeps_metric`, then
    L = cholesky(I + β w wᵀ) and B ← B @ L (skipped when β = 0).  Updates ``xi``, ``lam`` in
    place; returns (B, number of rank-one updates)."""
    r = B.shape[0]
    eye = np.eye(r)
    updates = 0
    for c in range(I.shape[0]):
        w = B.T @ (G0[I[c]] - G0[J[c]])
        p = float(w @ w)
        if not p > 0.0:
            raise FloatingPointError(f"non-positive distance at constraint {c}")
        alpha, beta, xi[c] = _numpy_project(p, delta[c], xi[c], lam[c], gamma)
        lam[c] -= alpha
        if beta != 0.0:
            B = B @ np.linalg.cholesky(eye + beta * np.outer(w, w))
            updates += 1
    return B, updates


def _lowrank_pairs(r: int, m: int, seed: int, eps: float = 0.25):
    """A random factor G0 (n × r, standard normal, n = max(1000, 4r)) and ``m`` constraints on
    m/2 random pairs, each pair constrained twice in a row: d ≤ (1−ε)b, then d ≥ (1+ε)b
    (b its distance under K0).  The two conflict, so with slack every projection is violated
    and performs a rank-one update (none is skipped), while B stays well conditioned."""
    rng = np.random.default_rng(seed)
    n = max(1000, 4 * r)
    G0 = rng.standard_normal((n, r))
    h = max(1, m // 2)
    I = rng.integers(0, n, h)
    J = (I + 1 + rng.integers(0, n - 1, h)) % n
    b = np.sum((G0[I] - G0[J]) ** 2, axis=1)
    I2, J2 = np.repeat(I, 2), np.repeat(J, 2)
    delta = np.tile([1.0, -1.0], h)
    bound = np.where(delta > 0, (1 - eps) * np.repeat(b, 2), (1 + eps) * np.repeat(b, 2))
    return np.ascontiguousarray(G0), I2.astype(np.int64), J2.astype(np.int64), delta, bound


def lowrank_projection_rows(quick: bool = False, repeats: int | None = None, seed: int = 0) -> list[dict]:
    """Projections per second of the low-rank LogDet solver at r = 10, 50, 100, 200
    (``quick``: r = 10, 50 with fewer projections), one core, Numba warmed up.

    * ``update_per_s``: CHOLUPDATEMULT alone (B ← B L, a stream of unit x with β = +1, −0.5
      alternating, B reset every 100 updates), and ``update_gflops`` = rate × (3r² + 2r)/1e9.
    * ``update_t_per_s``, ``update_t_gflops``: the solver's kernel ``cholupdatemult_t``
      (the same update on R = Bᵀ, swept by columns of B) on the same stream;
      ``update_t_speedup`` = its rate / CHOLUPDATEMULT's (the previous kernel, same run);
      ``update_t_identical``: the two final factors are bit for bit equal.
    * ``proj_per_s``: whole projections in the solver loop ``_sweeps_lowrank`` (w = Bᵀv,
      α, β, slack update, CHOLUPDATEMULT) over one sweep of m constraints (slack γ = 1;
      m/2 random pairs, each constrained to d ≤ 0.75b then d ≥ 1.25b, so that every
      projection updates: ``updates`` counts them, from the duals); ``proj_gflops`` counts
      only the update's 3r² + 2r flops per projection.
    * ``numpy_proj_per_s``: the same projections in dense NumPy (:func:`numpy_lowrank_sweep`:
      cholesky of I + β w wᵀ, then B @ L) on the first ``numpy_projections`` pairs, BLAS
      limited to one thread; ``speedup`` = proj_per_s / numpy_proj_per_s;
      ``max_rel_diff`` = max |B_numba − B_numpy| / max |B_numpy| after those projections.
    Times are the best of ``repeats`` (default 3 full, 1 quick) runs on fresh copies.
    """
    from .._config import blas_limit

    from ..solvers.lowrank import BENCH_KERNELS, PAIR

    _sweeps_lowrank = BENCH_KERNELS["sweeps"]

    repeats = (1 if quick else 3) if repeats is None else int(repeats)
    sizes = (10, 50) if quick else _LOWRANK_SIZES
    flop_budget = 1e7 if quick else 3e8
    np_budget = 0.05 if quick else 0.5          # rough seconds for the NumPy loop
    drive = _drive_cholupdatemult
    rows = []
    for r in sizes:
        flops = 3 * r * r + 2 * r
        # ---- update alone
        rng = np.random.default_rng(seed + r)
        n_upd = max(1000, int(flop_budget / flops))
        Xu = rng.standard_normal((n_upd, r))
        Xu /= np.linalg.norm(Xu, axis=1)[:, None]
        betas = np.where(np.arange(n_upd) % 2 == 0, 1.0, -0.5)
        B0 = np.eye(r)
        B = B0.copy()
        drive(B, B0, Xu[:2], betas[:2], 100)                  # compile / load, untimed
        t_upd = _best_of(lambda: drive(B, B0, Xu, betas, 100), repeats)
        if not np.all(np.isfinite(B)):
            raise RuntimeError(f"update benchmark diverged at r = {r}")
        # ---- the solver's kernel on R = Bᵀ, same stream (bit-identical result)
        R0 = np.eye(r)
        R = R0.copy()
        _drive_cholupdatemult_t(R, R0, Xu[:2], betas[:2], 100)   # compile / load, untimed
        t_upd_t = _best_of(lambda: _drive_cholupdatemult_t(R, R0, Xu, betas, 100), repeats)
        same = bool(np.array_equal(R.T, B))
        # ---- whole projections, Numba solver loop vs dense NumPy
        m = 2 * max(500, int(flop_budget / (8 * r * r)))
        G0, I, J, delta, bound = _lowrank_pairs(r, m, seed + r)
        kind = np.full(m, PAIR, dtype=np.int64)
        zeros2 = np.zeros((m, 2))
        gamma = 1.0

        def run_numba(mm):
            Bn, xi, lam = np.eye(r), bound[:mm].copy(), np.zeros(mm)
            t0 = time.perf_counter()
            res = _sweeps_lowrank(Bn, G0, kind[:mm], I[:mm], J[:mm], J[:mm], zeros2[:mm], zeros2[:mm],
                                  delta[:mm], xi, lam, gamma, 0.0, 1)
            dt = time.perf_counter() - t0
            if res[2] not in (0, 1) or res[0] != 1:          # OK / NOT_CONVERGED after one sweep
                raise RuntimeError(f"low-rank sweep stopped (code {res[2]}) at r = {r}")
            return Bn, dt, int(np.count_nonzero(lam))      # λ starts at 0: λ_c ≠ 0 iff updated

        run_numba(min(m, 10))                                # compile / load, untimed
        timed = [run_numba(m) for _ in range(repeats)]
        t_proj = min(t[1] for t in timed)
        nb_updates = timed[0][2]
        per_np = 3e-5 + 2.5e-10 * r ** 3                    # rough guess of the NumPy cost
        m_np = int(min(m, max(50, np_budget / per_np)))
        B_nb = run_numba(m_np)[0]
        t_np = np.inf
        with blas_limit(1):
            for _ in range(repeats):
                xi, lam = bound[:m_np].copy(), np.zeros(m_np)
                t0 = time.perf_counter()
                B_np, updates = numpy_lowrank_sweep(np.eye(r), G0, I[:m_np], J[:m_np], delta[:m_np],
                                                    xi, lam, gamma)
                t_np = min(t_np, time.perf_counter() - t0)
        upd_rate, proj_rate, np_rate = n_upd / t_upd, m / t_proj, m_np / t_np
        upd_t_rate = n_upd / t_upd_t
        rows.append({
            "r": int(r), "flops_per_update": int(flops),
            "updates": int(n_upd), "update_per_s": upd_rate, "update_gflops": upd_rate * flops / 1e9,
            "update_t_per_s": upd_t_rate, "update_t_gflops": upd_t_rate * flops / 1e9,
            "update_t_speedup": upd_t_rate / upd_rate, "update_t_identical": same,
            "projections": int(m), "proj_updates": nb_updates, "proj_per_s": proj_rate, "proj_gflops": proj_rate * flops / 1e9,
            "numpy_projections": int(m_np), "numpy_updates": int(updates),
            "numpy_proj_per_s": np_rate, "speedup": proj_rate / np_rate,
            "max_rel_diff": float(np.max(np.abs(B_nb - B_np)) / max(1e-300, np.max(np.abs(B_np)))),
        })
    return rows


def mnist_shape_factor(n: int = 60_000, r: int = 100, data_dir=None, noise: float = 0.1,
                       seed: int = 0):
    """The MNIST-shape workload's factor G0 (n × r) and labels.

    With ``mnist5000.npz`` in the data folder: the 5000 images (pixels 0–255, centred) are
    projected on their top ``r`` principal components and stacked ⌈n/5000⌉ times, every copy
    after the first with Gaussian noise of ``noise`` × the per-component standard deviation,
    then cut to n rows.  Without the file: a synthetic of the same shape (10 classes, Gaussian
    class centres, per-component scale 1/√(k+1)).  Returns (G0, y, source description).
    """
    from ..datasets import load_npz

    rng = np.random.default_rng(seed)
    try:
        X, y = load_npz("mnist5000", data_dir=data_dir)
    except FileNotFoundError:
        X = None
    if X is not None:
        from .._config import blas_limit

        Xc = X - X.mean(axis=0)
        with blas_limit(1):                   # multithreaded eigh stalls on a busy box
            _, V = np.linalg.eigh(Xc.T @ Xc)                # principal axes (d × d, d = 784)
        Z = Xc @ V[:, ::-1][:, :r]
        sd = Z.std(axis=0)
        copies = -(-n // Z.shape[0])
        G0 = np.concatenate([Z] + [Z + noise * sd * rng.standard_normal(Z.shape)
                                   for _ in range(copies - 1)])[:n]
        yy = np.tile(y, copies)[:n]
        src = (f"mnist5000.npz, PCA-{r}, {copies} copies (noise {noise:g} x component sd), "
               f"first {n} rows")
        return np.ascontiguousarray(G0), yy, src
    yy = rng.integers(0, 10, n)
    scale = 1.0 / np.sqrt(np.arange(1, r + 1))
    G0 = (rng.standard_normal((10, r))[yy] + rng.standard_normal((n, r))) * scale
    return np.ascontiguousarray(G0), yy, f"synthetic (no mnist5000.npz): 10 Gaussian classes, {n} x {r}"


def lowrank_workload_rows(quick: bool = False, data_dir=None, seed: int = 0, tol: float = 1e-3,
                          gamma: float = 1.0, max_sweeps: int | None = None,
                          counts=None, baseline: bool = True, baseline_budget: float | None = None) -> dict:
    """The MNIST-shape workload of Kulis et al. §7.2: n = 60 000, r = 100 (``quick``:
    n = 6000, r = 20), ``counts`` = 10 000 and 100 000 random pair constraints from the
    labels (the ITML scheme: similar when the labels agree) with bounds at the 5th / 95th
    percentiles of the squared distances under K0 = G0 G0ᵀ (``quick``: 1000 and 5000), LogDet
    slack γ = ``gamma``, tolerance ``tol``.

    Two solvers per count, in the same run:

    * ``"certified"``: ``LowRankLogDet.solve(tol)`` (reshuffled order, active set, stop on the
      dual change *and* the Lagrange certificate: Algorithm 2 as the package runs it);
    * ``"paper rule"`` (``baseline``): the previous solver's schedule, kept callable as
      ``lowrank_logdet(order="cyclic", active_set=False)`` without certificate tolerances —
      the paper's fixed cyclic order stopped by the relative dual change alone.  It runs in
      chunks of sweeps (the same iterates as one call) and stops after ``baseline_budget``
      seconds (default 300; ``quick`` 30), then ``converged`` is False.

    Returns {"source", "n", "r", "gamma", "tol", "flops_per_projection", "baseline_budget",
    "rows"}; a row:
    constraints (requested), pairs (after removing duplicates), solver, sweeps, converged
    (the solver's own rule met), stop (what ended the run), certified (|rel_gap| and
    max_rel_violation within max(tol, 1e-6), the rule of ``Problem.solve``), solver_s (wall),
    cpu_s (process CPU time of the solve: on a shared box wall time inflates with the load),
    build_s (constraints + problem), projections (Bregman projections done, ``Solution.info["projections"]`` /
    sweeps × pairs for the cyclic loop), proj_per_s = projections / solver_s, gflops =
    proj_per_s × (3r² + 2r) / 1e9 (the update's flops; an upper bound: a projection with
    β = 0 skips the update), objective, rel_gap = (f − g(λ)) / max(1, |f|) and
    max_rel_violation from the problem's own formulas, paper_min (MATLAB+MEX time of the
    paper, or None).  One core (BLAS / LAPACK limited to one thread).
    """
    n, r = (6000, 20) if quick else (60_000, 100)
    counts = ((1000, 5000) if quick else (10_000, 100_000)) if counts is None else counts
    max_sweeps = (2000 if quick else 100_000) if max_sweeps is None else int(max_sweeps)
    baseline_budget = (30.0 if quick else 300.0) if baseline_budget is None else float(baseline_budget)
    from .._config import blas_limit

    warm_up_lowrank()
    with blas_limit(1):
        return _lowrank_workload(n, r, counts, data_dir, seed, tol, gamma, max_sweeps, quick,
                                 baseline, baseline_budget)


def _workload_pairs(G0, y, m: int, seed: int):
    """The ``m`` random label pairs of the MNIST-shape workload (ITML scheme, seed + m),
    bounds at the 5th / 95th percentiles of the squared distances under G0."""
    from ..sideinfo import PairConstraints, baseline_metric

    return PairConstraints.from_labels(y, baseline_metric(G0), scheme="itml", n_constraints=int(m),
                                       percentiles=(5.0, 95.0), random_state=seed + int(m))


def _lowrank_certificate(prob, M, lam, xi) -> dict:
    """objective, relative gap and largest relative violation of (M, λ, ξ) by the problem's
    own formulas (``objective``, ``dual_value``, ``violations``)."""
    f = prob.objective(M)
    g = prob.dual_value(lam)
    viol = prob.violations(M, xi)
    rel_viol = float(np.max(viol / np.maximum(1.0, np.abs(prob.pairs.bound)), initial=0.0))
    gap = (f - g) / max(1.0, abs(f)) if np.isfinite(f) and np.isfinite(g) else np.inf
    return {"objective": float(f), "rel_gap": float(gap), "max_rel_violation": rel_viol}


def _lowrank_paper_rule(prob, tol, max_sweeps, budget):
    """The paper's loop (fixed cyclic order, dual-change stop, no certificate) in chunks of
    sweeps resumed from (B, λ, ξ) until it stops or ``budget`` seconds pass.  Returns
    (B, λ, ξ, sweeps, converged, seconds)."""
    from ..solvers.bregman import OK, NOT_CONVERGED
    from ..solvers.lowrank import PAIR, lowrank_logdet

    P = prob.pairs
    m = len(P)
    args = (prob.G0, np.full(m, PAIR), P.i, P.j, P.j, np.zeros((m, 2)), np.zeros((m, 2)), P.y, P.bound,
            prob.gamma, tol)
    B, lam, xi = None, None, None
    sweeps, seconds, chunk, converged = 0, 0.0, 4, False
    while sweeps < max_sweeps and seconds < budget:
        B, lam, xi, done, _change, code, bad, t = lowrank_logdet(
            *args, min(chunk, max_sweeps - sweeps), B0=B, lam0=lam, xi0=xi, order="cyclic",
            active_set=False)
        sweeps += done
        seconds += t
        if code not in (OK, NOT_CONVERGED):
            raise RuntimeError(f"low-rank paper-rule baseline broke down (code {code}) at constraint {bad}")
        if code == OK:
            converged = True
            break
        chunk = min(2 * chunk, 64)
    return B, lam, xi, sweeps, converged, seconds


def _lowrank_workload(n, r, counts, data_dir, seed, tol, gamma, max_sweeps, quick, baseline=True,
                      baseline_budget=300.0):
    from ..declare import LowRankLogDet

    paper = {10_000: 4.8, 100_000: 11.3}
    flops = 3 * r * r + 2 * r
    G0, y, src = mnist_shape_factor(n, r, data_dir=data_dir, seed=seed)
    rows = []
    for m in counts:
        t0 = time.perf_counter()
        pc = _workload_pairs(G0, y, m, seed)
        prob = LowRankLogDet(G0, pc, gamma=gamma)
        build = time.perf_counter() - t0
        c0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sol = prob.solve(tol=tol, max_iter=max_sweeps)
        cpu = time.process_time() - c0
        proj = int(sol.info["projections"])
        base = {"constraints": int(m), "pairs": len(prob.pairs), "build_s": build,
                "paper_min": paper.get(int(m)) if not quick else None}
        rel_gap = (sol.gap / max(1.0, abs(sol.objective))) if sol.gap is not None else np.inf
        rows.append({**base, "solver": "certified", "sweeps": int(sol.n_iter), "converged": bool(sol.converged),
                     "stop": "certificate" if sol.converged else "max sweeps",
                     "solver_s": float(sol.time), "cpu_s": cpu, "projections": proj,
                     "proj_per_s": proj / max(sol.time, 1e-12),
                     "gflops": proj / max(sol.time, 1e-12) * flops / 1e9,
                     "objective": float(sol.objective), "rel_gap": float(rel_gap),
                     "max_rel_violation": float(sol.info["max_relative_violation"])})
        if baseline:
            c0 = time.process_time()
            B, lam, xi, sweeps, conv, secs = _lowrank_paper_rule(prob, tol, max_sweeps, baseline_budget)
            cpu = time.process_time() - c0
            proj_b = sweeps * len(prob.pairs)
            cert = _lowrank_certificate(prob, B @ B.T, lam, xi[: len(prob.pairs)] if gamma is not None else None)
            rows.append({**base, "solver": "paper rule", "sweeps": int(sweeps), "converged": bool(conv),
                         "stop": "dual change" if conv else ("budget" if sweeps < max_sweeps else "max sweeps"),
                         "solver_s": float(secs), "cpu_s": cpu, "projections": int(proj_b),
                         "proj_per_s": proj_b / max(secs, 1e-12),
                         "gflops": proj_b / max(secs, 1e-12) * flops / 1e9, **cert})
    cert_tol = max(tol, 1e-6)
    for row in rows:                          # the certificate of Problem.solve, for every row
        row["certified"] = bool(abs(row["rel_gap"]) <= cert_tol and row["max_rel_violation"] <= cert_tol)
    return {"source": src, "n": n, "r": r, "gamma": gamma, "tol": tol, "flops_per_projection": flops,
            "baseline_budget": baseline_budget, "rows": rows}


def warm_up_lowrank() -> None:
    """Compile (or load from cache) the low-rank Numba loop on a tiny problem."""
    from ..declare import LowRankLogDet
    from ..sideinfo import PairConstraints

    G0 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    LowRankLogDet(G0, PairConstraints([0, 1], [1, 2], [1.0, -1.0], [1.0, 2.0]), gamma=1.0).solve(
        tol=1e-6, max_iter=50)


__all__ += ["numpy_lowrank_sweep", "lowrank_projection_rows", "mnist_shape_factor",
            "lowrank_workload_rows", "warm_up_lowrank"]


# =========================================================================== von Neumann
# ``cvxkml bench vonneumann``: Kulis, Sustik & Dhillon (2009) Algorithm 3 (factored von
# Neumann projections, secular-equation eigen updates) against a dense NumPy baseline.
_VN_SIZES = (10, 50, 100, 200)
_VN_PAPER_MIN = {10_000: 7.7, 100_000: 71.4}        # Kulis et al. §7.2, von Neumann, MATLAB


def vonneumann_pairs_problem(r: int, m: int, seed: int, eps: float = 0.25):
    """Kulis et al.'s factored problem min D_vN(K, K0) for K0 = G0 G0ᵀ on the pairs of
    :func:`_lowrank_pairs` (G0 standard normal n × r, each pair constrained to d <= (1−ε)b
    then d >= (1+ε)b, so that with slack every projection updates).  With G0 = U diag(s) Vᵀ
    the solver works on F = U (orthonormal) and q0 = log s² (X̂0 = diag(s²)), the start of
    Algorithm 3.  Returns (F, q0, I, J, delta, bound)."""
    G0, I, J, delta, bound = _lowrank_pairs(r, m, seed, eps)
    F, q0 = _orthonormal_factor(G0)
    return F, q0, I, J, delta, bound


def _orthonormal_factor(G0):
    """F (n × r, orthonormal columns) and q0 = log of the eigenvalues of K0 = G0 G0ᵀ, from the
    r × r Gram matrix (O(n r²); BLAS threads as set by the caller)."""
    s2, V = np.linalg.eigh(G0.T @ G0)
    s2 = np.maximum(s2, np.finfo(float).tiny)
    F = (G0 @ V) / np.sqrt(s2)
    return np.ascontiguousarray(F), np.log(s2)


def _dense_vn_eval(q, w, theta):
    """log h(θ), d log h/dθ, eigenvalues and eigenvectors of diag(q) + θwwᵀ by numpy.linalg.eigh
    (h(θ) = wᵀ exp(diag q + θwwᵀ) w, h' by the Daleckii–Krein divided differences)."""
    lam, U = np.linalg.eigh(np.diag(q) + theta * np.outer(w, w))
    c2 = (U.T @ w) ** 2
    m = float(lam.max())
    e = np.exp(lam - m)
    h = float(e @ c2)
    D = lam[:, None] - lam[None, :]
    close = np.abs(D) <= 1e-8 * np.maximum(1.0, np.abs(lam))[:, None]
    G = np.where(close, 0.5 * (e[:, None] + e[None, :]), (e[:, None] - e[None, :]) / np.where(close, 1.0, D))
    return m + np.log(h), float(c2 @ G @ c2) / h, lam, U


def _dense_vn_zerofinder(q, w, target_log, inv_gamma):
    """The safeguarded Newton iteration of the solver's ZEROFINDER (same steps, brackets and
    stopping rules), each evaluation a dense eigh.  Returns (θ, evaluations, λ, U at θ)."""
    from ..solvers.vonneumann import safeguarded_newton_step

    lh, dl, lam, U = _dense_vn_eval(q, w, 0.0)
    phi, dphi = lh - target_log, dl + inv_gamma
    lo, hi = (-np.inf, 0.0) if phi > 0 else (0.0, np.inf)
    theta, evals = 0.0, 1
    nz2 = float(w @ w)
    for _ in range(100):
        if abs(phi) <= 1e-14 * max(1.0, abs(target_log)):
            break
        theta = safeguarded_newton_step(theta, phi, dphi, lo, hi, nz2)
        lh, dl, lam, U = _dense_vn_eval(q, w, theta)
        evals += 1
        phi, dphi = lh + theta * inv_gamma - target_log, dl + inv_gamma
        if phi > 0:
            hi = theta
        else:
            lo = theta
        if np.isfinite(lo) and np.isfinite(hi) and hi - lo <= 1e-15 * max(1.0, abs(theta)):
            break
    return theta, evals, lam, U


def numpy_vonneumann_sweep(W, q, F, I, J, delta, xi, lam, gamma):
    """One sweep of the von Neumann projection (Kulis et al. Algorithm 3) in dense NumPy, the
    baseline of ``cvxkml bench vonneumann``: w = Wᵀ(F[i] − F[j]); the projection parameter θ*
    by the solver's safeguarded Newton iteration, every evaluation of
    log h(θ) = log wᵀexp(diag q + θwwᵀ)w an ``eigh`` of the r × r matrix diag q + θwwᵀ; the
    dual correction Δλ = max(−δθ*, −λ), θ = −δΔλ; then W ← W @ U, q ← eigenvalues (and the
    slack ξ ← ξ e^{−θ/γ}).  ``gamma`` = inf for hard constraints.  Updates ``xi`` and ``lam``
    in place; returns (W, q, evaluations, projections that ran the root finder)."""
    inv_g = 0.0 if np.isinf(gamma) else 1.0 / gamma
    evals = searched = 0
    for c in range(I.shape[0]):
        w = W.T @ (F[I[c]] - F[J[c]])
        if not np.any(w):
            continue
        theta_star, ne, lam_e, U = _dense_vn_zerofinder(q, w, np.log(xi[c]), inv_g)
        evals += ne
        searched += 1
        dlam = max(-delta[c] * theta_star, -lam[c])
        theta = -delta[c] * dlam
        lam[c] += dlam
        if theta == 0.0:
            continue
        if theta != theta_star:
            lam_e, U = np.linalg.eigh(np.diag(q) + theta * np.outer(w, w))
        W = W @ U
        q = lam_e
        if inv_g:
            xi[c] *= np.exp(-theta * inv_g)
    return W, q, evals, searched


def warm_up_vonneumann() -> None:
    """Compile (or load from cache) the von Neumann Numba loop on a tiny problem."""
    from ..solvers.vonneumann import vonneumann_pairs

    F, q0, I, J, delta, bound = vonneumann_pairs_problem(3, 4, 0)
    vonneumann_pairs(F, q0, I, J, delta, bound, 1.0, 1e-6, 5)


def vonneumann_projection_rows(quick: bool = False, repeats: int | None = None, seed: int = 0) -> list[dict]:
    """Seconds per von Neumann projection (Kulis et al. Algorithm 3) at r = 10, 50, 100, 200
    (``quick``: r = 10, 50 with fewer projections), one core, Numba warmed up.

    Workload (:func:`vonneumann_pairs_problem`): K0 = G0 G0ᵀ of rank r, F = U, q0 = log s²,
    m/2 random pairs each constrained to d <= 0.75b then d >= 1.25b, slack γ = 1: every
    projection is violated and updates (``updates`` counts them, from the duals).

    * ``s_per_proj``: one sweep of the solver loop ``_sweeps_vn`` over m constraints
      (w = Wᵀv, deflation, ZEROFINDER with secular-equation evaluations, Gu–Eisenstat
      eigenvectors, W ← WU), best of ``repeats``; ``evals_per_proj``: evaluations of h per
      projection (the paper: "rarely more than six").
    * ``zerofinder_s``: ZEROFINDER alone (the secular-equation evaluations of h that find θ*),
      per projection, for the first 20 constraints from the state after the sweep
      (``zerofinder_evals`` evaluations each); ``rootfinder_share`` = zerofinder_s /
      s_per_proj (timed on different states, so it can exceed 1 by noise).
    * ``numpy_s_per_proj``: the same projections in dense NumPy
      (:func:`numpy_vonneumann_sweep`: an ``eigh`` of diag q + θwwᵀ per evaluation, then
      W @ U) on the first ``numpy_projections`` constraints, BLAS limited to one thread;
      ``speedup`` = numpy / Numba seconds per projection; ``max_rel_diff`` = max |X̂_numba −
      X̂_numpy| / max |X̂_numpy| after those projections (X̂ = W diag(e^q) Wᵀ).
    """
    from .._config import blas_limit

    from ..solvers.vonneumann import BENCH_KERNELS, vonneumann_pairs

    _deflate, _sweeps_vn, _zerofinder = (BENCH_KERNELS[k] for k in ("deflate", "sweeps", "zerofinder"))

    repeats = (1 if quick else 3) if repeats is None else int(repeats)
    sizes = (10, 50) if quick else _VN_SIZES
    budget = 2e5 if quick else 2e7                     # ~ r³ units of work per timed sweep
    np_budget = 0.1 if quick else 1.0                  # rough seconds for the NumPy loop
    warm_up_vonneumann()
    rows = []
    with blas_limit(1):
        for r in sizes:
            m = 2 * max(25 if quick else 100, int(budget / r ** 3))
            F, q0, I, J, delta, bound = vonneumann_pairs_problem(r, m, seed + r)

            def run_numba(mm):
                W, q, lam, st = np.eye(r), q0.copy(), np.zeros(mm), np.zeros(2)
                t0 = time.perf_counter()
                res = _sweeps_vn(W, q, F, I[:mm], J[:mm], delta[:mm], bound[:mm].copy(), lam, 1.0, 0.0, 1, st)
                dt = time.perf_counter() - t0
                if res[2] not in (0, 1) or res[0] != 1:
                    raise RuntimeError(f"von Neumann sweep stopped (code {res[2]}) at r = {r}")
                return W, q, lam, st, dt

            timed = [run_numba(m) for _ in range(repeats)]
            t_nb = min(t[4] for t in timed)
            W, q, lam, st, _ = timed[0]
            # the root finder alone: ZEROFINDER for the first few constraints from the final state
            n_zf = min(m, 20)
            bufs = (np.empty(r, dtype=np.int64), np.empty(r), np.empty(r), np.empty(r))
            zf_s, zf_evals = 0.0, 0
            for rep in range(2):                               # first pass compiles / warms up
                zf_s, zf_evals = 0.0, 0
                for c in range(n_zf):
                    Wc, qc = W.copy(), q.copy()
                    wc = Wc.T @ (F[I[c]] - F[J[c]])
                    idx = _deflate(qc, wc, Wc, 1e-14, 1e-12)
                    d, z = np.ascontiguousarray(qc[idx]), np.ascontiguousarray(wc[idx])
                    t0 = time.perf_counter()
                    _theta, ne = _zerofinder(d, z, float(np.log(bound[c])), 1.0, *bufs)
                    zf_s += time.perf_counter() - t0
                    zf_evals += int(ne)
            # dense baseline on a prefix of the same constraints
            per_np = 1e-4 + 4 * 4e-9 * r ** 3                # rough guess of the NumPy cost
            m_np = int(min(m, max(10, np_budget / per_np)))
            ref = vonneumann_pairs(F, q0, I[:m_np], J[:m_np], delta[:m_np], bound[:m_np], 1.0, 0.0, 1)
            t_np = np.inf
            for _ in range(repeats):
                xi, lamn = bound[:m_np].copy(), np.zeros(m_np)
                t0 = time.perf_counter()
                Wn, qn, np_evals, searched = numpy_vonneumann_sweep(np.eye(r), q0.copy(), F, I[:m_np], J[:m_np],
                                                                    delta[:m_np], xi, lamn, 1.0)
                t_np = min(t_np, time.perf_counter() - t0)
            Xn = (Wn * np.exp(qn)) @ Wn.T
            diff = float(np.max(np.abs(ref.matrix - Xn)) / np.max(np.abs(Xn)))
            nb_s, np_s = t_nb / m, t_np / m_np
            rows.append({
                "r": int(r), "projections": int(m), "updates": int(np.count_nonzero(lam)),
                "evals_per_proj": float(st[0] / max(st[1], 1)), "s_per_proj": nb_s,
                "zerofinder_s": zf_s / n_zf, "zerofinder_evals": zf_evals / n_zf,
                "rootfinder_share": zf_s / n_zf / nb_s,
                "numpy_projections": int(m_np), "numpy_evals_per_proj": np_evals / max(searched, 1),
                "numpy_s_per_proj": np_s, "speedup": np_s / nb_s, "max_rel_diff": diff,
            })
    return rows


def dgemm_gflops(r: int, repeats: int = 5) -> float:
    """GFLOP/s of one r × r × r matrix product (``np.dot``, 2r³ flops) on one BLAS thread, best
    of ``repeats`` batches: the rate of Algorithm 3's W ← W U at k = r, its flop-count limit."""
    from .._config import blas_limit

    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((r, r)), rng.standard_normal((r, r))
    out = np.empty((r, r))
    reps = max(10, int(2e8 / (2.0 * r ** 3)))
    with blas_limit(1):
        np.dot(A, B, out=out)
        best = _best_of(lambda: [np.dot(A, B, out=out) for _ in range(reps)], repeats)
    return 2.0 * r ** 3 * reps / best / 1e9


def vonneumann_workload_rows(quick: bool = False, data_dir=None, seed: int = 0, tol: float = 1e-3,
                             gamma: float = 1.0, max_sweeps: int | None = None, counts=None,
                             time_budget: float | None = None, baseline: bool = True,
                             baseline_projections: int | None = None) -> dict:
    """The MNIST-shape workload of Kulis et al. §7.2 with von Neumann (Algorithm 3):
    G0 from :func:`mnist_shape_factor` (n = 60 000, r = 100; ``quick``: n = 3000, r = 10),
    K0 = G0 G0ᵀ, F = U and q0 = log eig K0, the same random label pairs and 5th /
    95th-percentile bounds as :func:`lowrank_workload_rows` (ITML scheme, seed + m), von Neumann
    slack γ = ``gamma``, min D_vN(K, K0) to ``tol``.  ``counts`` defaults to (10 000, 100 000)
    (``quick``: (500, 2000)).

    Per count, ``vonneumann_pairs(F, q0, I, J, delta, bound, gamma, tol, max_sweeps,
    callback=budget)`` — the package's driver: full sweeps, stop on the relative dual change
    *and* the dual certificate — stopped by its callback after ``time_budget`` seconds
    (default 600; ``quick`` 30), then ``certificate()`` of the end point.  With ``baseline``:

    * ``"paper rule"`` row (``quick`` or counts ≤ 10 000 only): the same driver with
      ``stop="dual_change"`` (the paper's rule alone, the previous solver's stop);
    * a dense-NumPy row per count: :func:`numpy_vonneumann_sweep` (an ``eigh`` per root-finder
      evaluation, then W @ U — the documented baseline of ``cvxkml bench vonneumann``) on the
      first ``baseline_projections`` constraints of the workload from the start (default 200;
      ``quick`` 50), against ``vonneumann_pairs`` on the same prefix (one sweep, tol 0), same run.

    Row: constraints, pairs, solver, sweeps, stop, certified, solver_s (wall), cpu_s (process CPU
    time of the solve), build_s (constraints +
    F, q0), visits (constraint visits: full sweeps × pairs + active-set visits), projections
    (``extra["projections"]``: projections that ran ZEROFINDER; the others were skipped exactly),
    proj_per_s = projections / solver_s, s_per_proj, evals_per_proj, gflops = projections ×
    2r³ / solver_s / 1e9 (W ← W U at k = r; an upper bound, deflation makes k ≤ r), objective,
    rel_gap, max_rel_violation (from ``certificate``), paper_min.  ``dense``: the prefix rows
    (seconds per constraint visit of both, ratio, max rel diff of X̂).  ``dgemm_gflops``: the r × r product's rate
    (:func:`dgemm_gflops`).  One core (BLAS limited to one thread).
    """
    n, r = (3000, 10) if quick else (60_000, 100)
    counts = ((500, 2000) if quick else (10_000, 100_000)) if counts is None else tuple(counts)
    max_sweeps = (2000 if quick else 100_000) if max_sweeps is None else int(max_sweeps)
    time_budget = (30.0 if quick else 600.0) if time_budget is None else float(time_budget)
    n_dense = (50 if quick else 200) if baseline_projections is None else int(baseline_projections)
    from .._config import blas_limit

    from ..solvers.bregman import NONFINITE, OK
    from ..solvers.vonneumann import certificate, vonneumann_pairs

    warm_up_vonneumann()
    cert_tol = max(tol, 1e-6)
    with blas_limit(1):
        G0, y, src = mnist_shape_factor(n, r, data_dir=data_dir, seed=seed)
        rows, dense = [], []
        for m in counts:
            t0 = time.perf_counter()
            pc = _workload_pairs(G0, y, m, seed)
            F, q0 = _orthonormal_factor(G0)
            build = time.perf_counter() - t0
            I = np.ascontiguousarray(pc.i, dtype=np.int64)
            J = np.ascontiguousarray(pc.j, dtype=np.int64)
            delta = np.ascontiguousarray(pc.y, dtype=np.float64)
            bound = np.array(pc.bound, dtype=np.float64)
            solvers = [("certified", "both")]
            if baseline and (quick or m <= 10_000):
                solvers.append(("paper rule", "dual_change"))
            for name, stop in solvers:
                c0 = time.process_time()
                res = vonneumann_pairs(F, q0, I, J, delta, bound, gamma, tol, max_sweeps, stop=stop,
                                       callback=lambda info: info["time"] > time_budget)
                cpu = time.process_time() - c0
                if res.code == NONFINITE:
                    raise RuntimeError(f"von Neumann workload: non-finite iterate at constraint {res.bad}")
                ex = res.extra
                c = certificate(F, q0, I, J, delta, bound, res.xi, res.lam, ex["W"], ex["q"], gamma)
                proj = int(ex["projections"])
                secs = float(res.time)
                rows.append({
                    "constraints": int(m), "pairs": len(pc), "solver": name, "sweeps": int(res.sweeps),
                    "stop": ("certificate" if stop == "both" else "dual change") if res.code == OK else
                            ("budget" if res.sweeps < max_sweeps else "max sweeps"),
                    "converged": res.code == OK,
                    "certified": bool(np.isfinite(c["rel_gap"]) and abs(c["rel_gap"]) <= cert_tol
                                      and c["rel_violation"] <= cert_tol),
                    "solver_s": secs, "cpu_s": cpu, "build_s": build,
                    "visits": int(ex["full_sweeps"]) * len(pc) + int(ex["visited_active"]),
                    "projections": proj, "proj_per_s": proj / max(secs, 1e-12),
                    "s_per_proj": secs / max(proj, 1), "evals_per_proj": float(ex["evals_per_projection"]),
                    "gflops": proj * 2.0 * r ** 3 / max(secs, 1e-12) / 1e9,
                    "objective": float(c["objective"]), "rel_gap": float(c["rel_gap"]),
                    "max_rel_violation": float(c["rel_violation"]),
                    "paper_min": None if quick else _VN_PAPER_MIN.get(int(m)),
                })
            if baseline:
                k = min(n_dense, len(pc))
                ref = {}

                def run_alg3():
                    ref["res"] = vonneumann_pairs(F, q0, I[:k], J[:k], delta[:k], bound[:k], gamma, 0.0, 1)

                t_alg3 = _best_of(run_alg3, 2)
                xi, lamn = bound[:k].copy(), np.zeros(k)
                t1 = time.perf_counter()
                Wn, qn, _evals, searched = numpy_vonneumann_sweep(np.eye(r), q0.copy(), F, I[:k], J[:k],
                                                                  delta[:k], xi, lamn, gamma)
                t_np = time.perf_counter() - t1
                Xn = (Wn * np.exp(qn)) @ Wn.T
                dense.append({"constraints": int(m), "prefix": k,
                              "projections": int(ref["res"].extra["projections"]),
                              "numpy_projections": int(searched),
                              "alg3_s_per_visit": t_alg3 / k, "numpy_s_per_visit": t_np / k,
                              "speedup": t_np / t_alg3,
                              "max_rel_diff": float(np.max(np.abs(ref["res"].matrix - Xn)) / np.max(np.abs(Xn)))})
    return {"source": src, "n": n, "r": r, "gamma": gamma, "tol": tol, "time_budget": time_budget,
            "rows": rows, "dense": dense, "dgemm_gflops": dgemm_gflops(r),
            "paper_min_100k": _VN_PAPER_MIN[100_000]}


__all__ += ["vonneumann_pairs_problem", "numpy_vonneumann_sweep", "warm_up_vonneumann", "dgemm_gflops",
            "vonneumann_projection_rows", "vonneumann_workload_rows"]
