"""Measurements behind the KCR reference sheet (``reference/sriperumbudur2008-kcr.md``).

Every function returns plain rows (dicts); nothing prints.  Times are CPU seconds of this
process (``time.process_time``) and wall seconds; speed is compared only as ratios
measured in the same run.

* :func:`exact_vs_fast_rows` — the exact CVXPY model (Clarabel / SCS, a chosen
  parameterization) against the certified PDHG solver on the same random instances.
* :func:`algorithm1_rows` — the paper's Algorithm 1 (subgradient + projection onto N)
  against PDHG with the same CPU budget: the objective gap each reaches, relative to
  PDHG's certified lower bound.
* :func:`large_n_row` — one solve at n = 500 (Balance): CPU time to certified gaps of
  1e-2, 3e-3, 1e-3 and the gap reached within 60 CPU seconds.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from .datasets import load_csv_dataset
from .declare.kcr import KCR
from .errors import SolverError
from .kernels import gaussian_kernel
from .solvers.kcr import kcr_subgradient

__all__ = ["random_problem", "exact_vs_fast_rows", "algorithm1_rows", "large_n_row"]


def random_problem(n_per_class: int, n_classes: int = 3, lam: float = 1.0, nu_factor: float = 1.0,
                   seed: int = 0) -> KCR:
    """Gaussian blobs in 3-D (unit noise, centres N(0, 1.5²)), Gaussian kernel with
    ν = nu_factor / median squared distance."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    X = rng.normal(size=(y.size, 3)) + 1.5 * rng.normal(size=(n_classes, 3))[y]
    sq = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
    return KCR(gaussian_kernel(X, gamma=nu_factor / float(np.median(sq[sq > 0]))), y, lam)


def _timed(fn):
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - t0


def exact_vs_fast_rows(sizes=(4, 7, 10, 14), solvers=(("CLARABEL", "whitened"),), seed=0,
                       lam=1.0) -> list[dict]:
    """n = 3 × size points; for each exact (solver, parameterization): status, times,
    objective difference to the fast solver (tol 1e-4) and the CPU-time ratio."""
    rows = []
    for size in sizes:
        p = random_problem(size, lam=lam, seed=seed)
        fast, f_cpu, f_wall = _timed(lambda: p.solve(tol=1e-4, warn=False))
        for solver, par in solvers:
            def run():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return p.solve_reference(solver=solver, parameterization=par,
                                             accept_inaccurate=True)
            try:
                ex, e_cpu, e_wall = _timed(run)
                status, obj = ex.status, ex.objective
            except SolverError as exc:
                status, obj, e_cpu, e_wall = f"error ({str(exc)[:40]})", np.nan, np.nan, np.nan
            rows.append(dict(n=p.n, solver=solver, parameterization=par, status=status,
                             exact_cpu=e_cpu, exact_wall=e_wall, fast_cpu=f_cpu, fast_wall=f_wall,
                             fast_iter=fast.n_iter, fast_gap=fast.info["gap"],
                             rel_diff=(obj - fast.objective) / max(1.0, abs(fast.objective)),
                             cpu_ratio=e_cpu / f_cpu if f_cpu > 0 else np.nan))
    return rows


def algorithm1_rows(cases=((25, 1.0), (25, 0.1)), seed=0, budget_factor=1.0) -> list[dict]:
    """PDHG (tol 1e-3) vs the paper's Algorithm 1 run for ``budget_factor`` × PDHG's
    CPU time (exact projection onto N; step 1/(‖K‖² n √t)).  Gaps are relative to PDHG's
    certified lower bound g: (f − g) / max(1, |g|)."""
    rows = []
    for size, lam in cases:
        p = random_problem(size, lam=lam, seed=seed)
        fast, f_cpu, _ = _timed(lambda: p.solve(tol=1e-3, warn=False))
        g = fast.dual_value
        budget = budget_factor * f_cpu
        c0 = time.process_time()
        res = kcr_subgradient(p.K, p.tau, p.c, p.lam, h_min=p.h_min, max_iter=10 ** 7,
                              time_limit=None, projection="exact", cpu_limit=budget)
        a_cpu = time.process_time() - c0
        rows.append(dict(n=p.n, lam=lam, pdhg_cpu=f_cpu, pdhg_gap=fast.info["gap"],
                         alg1_cpu=a_cpu, alg1_iter=res["n_iter"],
                         alg1_gap=(res["objective"] - g) / max(1.0, abs(g))))
    return rows


def large_n_row(n: int = 500, nu: float = 1.0, lam: float = 1.0, max_iter: int = 20_000,
                data_dir=None, seed: int = 0) -> dict:
    """One certified PDHG solve on n Balance points (standardized, Gaussian kernel ν),
    single-threaded BLAS: CPU seconds to certified relative gaps 1e-2 / 3e-3 / 1e-3 and
    the gap after 60 CPU seconds."""
    from threadpoolctl import threadpool_limits

    X, y = load_csv_dataset("balance", data_dir)
    idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
    X, y = X[idx], y[idx]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    with threadpool_limits(1):
        p = KCR(gaussian_kernel(X, gamma=nu), y, lam)
        sol, cpu, wall = _timed(lambda: p.solve(tol=1e-3, max_iter=max_iter, warn=False))
    hist = sol.info["history"]

    def first(target):
        row = next((r for r in hist if r[3] <= target), None)
        return None if row is None else dict(iteration=row[0], wall=row[4], cpu=row[5])

    within = [r[3] for r in hist if r[5] <= 60.0]
    return dict(n=n, nu=nu, lam=lam, rank=p.rank, converged=sol.converged, iterations=sol.n_iter,
                gap=sol.info["gap"], cpu=cpu, wall=wall, to_1e2=first(1e-2), to_3e3=first(3e-3),
                to_1e3=first(1e-3), gap_after_60_cpu_s=within[-1] if within else None,
                rank_sigma=sol.info["factor"].shape[1], h=sol.info["h"])
