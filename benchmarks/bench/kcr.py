"""Measurements behind the KCR reference sheet (``reference/sriperumbudur2008-kcr.md``).

Every function returns plain rows (dicts); nothing prints.  Times are CPU seconds of this
process (``time.process_time``) and wall seconds; speed is compared only as ratios
measured in the same run.

* :func:`exact_vs_fast_rows` — the exact CVXPY model (Clarabel / SCS, a chosen
  parameterization) against the certified PDHG solver on the same random instances.
* :func:`algorithm1_rows` — the paper's Algorithm 1 (:func:`kcr_subgradient`: subgradient
  step + projection onto N, exact or by the paper's :func:`alternating_projections`) against
  PDHG with the same CPU budget: the objective gap each reaches, relative to PDHG's certified
  lower bound.  Algorithm 1 lives here, not in the package: it is a baseline to compare
  against, with no certificate and no stopping rule.
* :func:`large_n_row` — one solve at n = 500 (Balance): CPU time to certified gaps of
  1e-2, 3e-3, 1e-3 and the gap reached within 60 CPU seconds, for the default solver
  and, as the same-run baseline, the previous configuration (LAPACK PSD step every
  iteration, Halpern iterations, certificate every 10 iterations).
* :func:`variant_rows` — iterations and CPU time to a certified 1e-3 for the solver's
  variants (plain / Halpern PDHG, tracked / LAPACK PSD step) on Iris, Wine, Ionosphere
  and Balance subsets over a ν × λ grid.
* :func:`gap_sweep_rows` — fast (tol 1e-4) vs exact (Clarabel) on many random instances
  drawn like the property tests (n <= 30, 2–3 classes): relative objective gaps and the
  feasibility of both returned Σ.

* :func:`scale_rows` — certified 1e-3 at n = 500, 1 000, 2 000 Gaussian-blob points,
  default vs :data:`BEFORE` (the default before dual polishing and the working set) and
  :data:`PREVIOUS` in the same run (``scale``, not in ``all``).
* :func:`family_rows` — certified 1e-3 over an instance family (generators × seeds × n,
  :mod:`benchmarks._family`): the target holds when the worst instance meets it
  (``family``, not in ``all``).

``python -m benchmarks bench kcr [sweep|exact|alg1|large|variants|scale|all]`` (:func:`command`; also
``python -m benchmarks.bench.kcr``) runs them and prints the rows.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from cvxkml._config import blas_limit
from cvxkml.datasets import load_dataset
from cvxkml.declare.kcr import KCR
from cvxkml.errors import InvalidInputError, SolverError
from cvxkml.formulas.kcr import kcr_objective, project_onto_N, sq_distances_from_gram
from cvxkml.kernels import gaussian_kernel

from .._commands import CommandError, opt, script, use
from .._family import DEFAULT_KCR_FAMILY, family_verdict, parse_spec, points, summarize
from .._report import row_line
from .._runner import growth_exponent, median_sq_distance

__all__ = [
    "random_problem",
    "random_instance",
    "blobs_problem",
    "scale_rows",
    "family_problem",
    "family_rows",
    "PREVIOUS",
    "BEFORE",
    "growth_exponent",
    "exact_vs_fast_rows",
    "kcr_subgradient",
    "alternating_projections",
    "algorithm1_rows",
    "large_n_row",
    "variant_rows",
    "BASELINE",
    "gap_sweep_rows",
    "summarize_sweep",
    "command",
    "data_sets",
    "main",
]


def random_problem(
    n_per_class: int, n_classes: int = 3, lam: float = 1.0, nu_factor: float = 1.0, seed: int = 0
) -> KCR:
    """Gaussian blobs in 3-D (unit noise, centres N(0, 1.5²)), Gaussian kernel with
    ν = nu_factor / median squared distance."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    X = rng.normal(size=(y.size, 3)) + 1.5 * rng.normal(size=(n_classes, 3))[y]
    return KCR(gaussian_kernel(X, gamma=nu_factor / median_sq_distance(X)), y, lam)


def _timed(fn):
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - t0


def exact_vs_fast_rows(
    sizes=(4, 7, 10, 14), solvers=(("CLARABEL", "whitened"),), seed=0, lam=1.0, eps=None, **solver_opts
) -> list[dict]:
    """n = 3 × size points; for each exact (solver, parameterization): status, times,
    objective difference to the fast solver (tol 1e-4) and the CPU-time ratio.
    ``eps`` and ``solver_opts`` go to :meth:`KCR.solve_reference`."""
    rows = []
    for size in sizes:
        p = random_problem(size, lam=lam, seed=seed)
        fast, f_cpu, f_wall = _timed(lambda: p.solve(tol=1e-4, warn=False))
        for solver, par in solvers:

            def run():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return p.solve_reference(
                        solver=solver, parameterization=par, accept_inaccurate=True, eps=eps, **solver_opts
                    )

            try:
                ex, e_cpu, e_wall = _timed(run)
                status, obj = ex.status, ex.objective
            except SolverError as exc:
                status, obj, e_cpu, e_wall = f"error ({str(exc)[:40]})", np.nan, np.nan, np.nan
            rows.append(
                dict(
                    n=p.n,
                    solver=solver,
                    parameterization=par,
                    status=status,
                    exact_cpu=e_cpu,
                    exact_wall=e_wall,
                    fast_cpu=f_cpu,
                    fast_wall=f_wall,
                    fast_iter=fast.n_iter,
                    fast_gap=fast.info["gap"],
                    rel_diff=(obj - fast.objective) / max(1.0, abs(fast.objective)),
                    cpu_ratio=e_cpu / f_cpu if f_cpu > 0 else np.nan,
                )
            )
    return rows


# --------------------------------------------------------------------------- the paper's Algorithm 1
@blas_limit()
def alternating_projections(X, n_iter: int = 1000) -> np.ndarray:
    """The paper's projection onto N (§4.1): B_m = A_m − (1ᵀA_m1/n²)11ᵀ,
    A_{m+1} = P_PSD(B_m), starting from A_0 = P_PSD(X).  Converges to *a* point of N —
    in general not the nearest one — and only sublinearly (N has no interior)."""
    A = np.asarray(X, dtype=np.float64)
    A = 0.5 * (A + A.T)
    n = A.shape[0]
    A = _psd(A)
    for _ in range(int(n_iter)):
        Bm = A - A.sum() / n**2
        A = _psd(Bm)
    return A


def _psd(M):
    w, U = np.linalg.eigh(0.5 * (M + M.T))
    keep = w > 0
    return (U[:, keep] * w[keep]) @ U[:, keep].T


@blas_limit()
def kcr_subgradient(
    K,
    tau,
    c,
    lam,
    h_min=1e-6,
    step=None,
    max_iter=1000,
    projection="exact",
    n_proj=20,
    time_limit=None,
    h0=1.0,
    cpu_limit=None,
) -> dict:
    """The paper's Algorithm 1 on Σ (n × n): subgradient step, then projection onto N.

    Σ_{t+1} = P_N(Σ_t − α_t(Σ_{(i,j)∈N_t} tau_ij M_ij + λK)),
    h̃_{t+1} = max(h_min, h̃_t + α_t Σ_{(i,j)∈N_t} tau_ij), with N_t the (i, j) whose
    inner hinge is active in a row whose outer hinge is active (steps 3–5) and
    M_ij = (k_i − k_j)(k_i − k_j)ᵀ.  The paper leaves {α_t} open; here
    α_t = step / √(t + 1) (``step`` default: 1 / (‖K‖² · n)).  ``projection="exact"``
    uses :func:`cvxkml.formulas.kcr.project_onto_N`; ``"alternating"`` runs ``n_proj``
    sweeps of :func:`alternating_projections` (the paper).  Returns the best iterate as
    a dict (Sigma, h, objective, n_iter, time, history).  ``time_limit`` / ``cpu_limit``
    bound wall / CPU seconds.  The baseline :func:`algorithm1_rows` times: it has no
    certificate and no reliable stopping rule, so the library solves KCR with
    :func:`cvxkml.solvers.kcr.kcr_pdhg` instead.
    """
    t0 = time.perf_counter()
    c0 = time.process_time()
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    if step is None:
        step = 1.0 / (np.linalg.norm(K, 2) ** 2 * n)
    Sigma = np.zeros((n, n))
    h = max(h_min, float(h0))
    best = dict(objective=np.inf, Sigma=Sigma.copy(), h=h)
    history = []
    for t in range(int(max_iter)):
        Bm = K @ Sigma @ K
        D = sq_distances_from_gram(Bm)
        f = kcr_objective(D, h, tau, c, float(np.sum(K * Sigma)), lam)
        if f < best["objective"]:
            best.update(objective=f, Sigma=Sigma.copy(), h=h)
        history.append((t, f, time.perf_counter() - t0))
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        if cpu_limit is not None and time.process_time() - c0 > cpu_limit:
            break
        U = 1.0 + tau * (D - h)
        rows = (c + np.maximum(U, 0.0).sum(axis=1)) > 0.0  # outer hinge active
        act = (U > 0.0) & rows[:, None]  # N_t = B_t \ A_t
        Wt = np.where(act, tau, 0.0)
        Ws = Wt + Wt.T
        Lap = np.diag(Ws.sum(axis=1)) - Ws
        grad = K @ Lap @ K + lam * K  # Σ_{N_t} tau M_ij + λK
        alpha = step / np.sqrt(t + 1.0)
        Y = Sigma - alpha * grad
        Sigma = project_onto_N(Y) if projection == "exact" else alternating_projections(Y, n_proj)
        h = max(h_min, h + alpha * float(Wt.sum()))
    best.update(n_iter=len(history), time=time.perf_counter() - t0, history=history)
    return best


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
        res = kcr_subgradient(
            p.K, p.tau, p.c, p.lam, h_min=p.h_min, max_iter=10**7, time_limit=None, projection="exact", cpu_limit=budget
        )
        a_cpu = time.process_time() - c0
        rows.append(
            dict(
                n=p.n,
                lam=lam,
                pdhg_cpu=f_cpu,
                pdhg_gap=fast.info["gap"],
                alg1_cpu=a_cpu,
                alg1_iter=res["n_iter"],
                alg1_gap=(res["objective"] - g) / max(1.0, abs(g)),
            )
        )
    return rows


# the baseline the speed-ups are measured against (reference/sriperumbudur2008-kcr.md): LAPACK PSD
# steps, Halpern iterations, a certificate every 10 iterations, no preconditioning
BASELINE = dict(eig="exact", halpern=True, check_every=10, scaling=0.0, restart_params=(0.2, 0.8, 0.36), balance=False)


def _balance_problem(n, nu, lam, data_dir=None, seed=0) -> KCR:
    X, y = load_dataset("balance", data_dir)
    _check_n(n, len(y))
    idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
    X, y = X[idx], y[idx]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return KCR(gaussian_kernel(X, gamma=nu), y, lam)


def _check_n(n: int, available: int) -> None:
    if not 2 <= n <= available:
        raise InvalidInputError(
            f"n = {n} Balance points asked for; the file has {available}: use --n between 2 and {available}."
        )


def large_n_row(
    n: int = 500,
    nu: float = 1.0,
    lam: float = 1.0,
    max_iter: int = 20_000,
    data_dir=None,
    seed: int = 0,
    baseline: bool = True,
) -> dict:
    """Certified PDHG solves on n Balance points (standardized, Gaussian kernel ν), one
    BLAS thread: CPU seconds to certified relative gaps 1e-2 / 3e-3 / 1e-3 and the gap
    after 60 CPU seconds — for the default solver and (``baseline``) for
    :data:`BASELINE`, with the CPU-time ratio to 1e-3."""
    p = _balance_problem(n, nu, lam, data_dir, seed)
    p.solve(tol=1e-3, max_iter=5, warn=False)  # compile / warm up outside the timing

    def one(opts):
        sol, cpu, wall = _timed(lambda: p.solve(tol=1e-3, max_iter=max_iter, warn=False, **opts))
        hist = sol.info["history"]

        def first(target):
            row = next((r for r in hist if r[3] <= target), None)
            return None if row is None else dict(iteration=row[0], wall=row[4], cpu=row[5])

        within = [r[3] for r in hist if r[5] <= 60.0]
        return dict(
            converged=sol.converged,
            iterations=sol.n_iter,
            gap=sol.info["gap"],
            cpu=cpu,
            wall=wall,
            to_1e2=first(1e-2),
            to_3e3=first(3e-3),
            to_1e3=first(1e-3),
            gap_after_60_cpu_s=within[-1] if within else None,
            eig_exact=sol.info["eig_exact"],
            eig_tracked=sol.info["eig_tracked"],
            objective=sol.objective,
            rank_sigma=sol.info["factor"].shape[1],
            h=sol.info["h"],
        )

    row = dict(n=n, nu=nu, lam=lam, rank=p.rank, default=one({}))
    if baseline:
        row["baseline"] = one(BASELINE)
        a, b = row["default"]["to_1e3"], row["baseline"]["to_1e3"]
        row["speedup_to_1e3"] = (b["cpu"] / a["cpu"]) if a and b else None
    return row


# the earlier solver options (the fused per-iteration kernel is shared): restarts at
# (0.2, 0.8, 0.36) and the certificate at the PDHG dual iterate only
PREVIOUS = dict(restart_params=(0.2, 0.8, 0.36), balance=False)
# the default before dual polishing and the working set of pairs
BEFORE = dict(polish=0.0, working_set=False)


def blobs_problem(n: int, n_classes: int = 3, lam: float = 1.0, seed: int = 0) -> KCR:
    """:func:`random_problem` with exactly n points (class sizes differ by at most one)."""
    rng = np.random.default_rng(seed)
    y = np.arange(int(n)) % n_classes
    X = rng.normal(size=(y.size, 3)) + 1.5 * rng.normal(size=(n_classes, 3))[y]
    return KCR(gaussian_kernel(X, gamma=1.0 / median_sq_distance(X)), y, lam)


def scale_rows(
    sizes=(500, 1000, 2000),
    tol: float = 1e-3,
    baseline_cpu: float = 300.0,
    seed: int = 0,
    max_iter: int = 100_000,
    before_cpu: float | None = None,
) -> list[dict]:
    """Certified solves (tol 1e-3) on n Gaussian-blob points (3 classes, 3-D, Gaussian
    kernel ν = 1/median squared distance, λ = 1, one BLAS thread) for each n: CPU seconds of
    the setup (whitening: an n × n eigendecomposition) and of the solve, iterations, gap —
    for the default solver and, in the same run, :data:`BEFORE` (stopped after
    ``before_cpu`` CPU seconds when given) and :data:`PREVIOUS` (the earlier restarts and
    certificate, stopped after ``baseline_cpu`` CPU seconds; 0 skips it).  A stopped solve has
    ``finished`` False.  A warm-up solve compiles first (every code path of the default)."""
    rows = []
    for n in sizes:
        (p, setup_cpu, _) = _timed(lambda: blobs_problem(n, seed=seed))
        p.solve(tol=tol, max_iter=3, warn=False)
        p.solve(tol=tol, max_iter=3 * max(1, round(n / 25)), warn=False, polish=1.0, working_set=dict(start=10.0))
        row = dict(n=p.n, r=p.rank, setup_cpu=setup_cpu)
        variants = (("default", {}, None), ("before", BEFORE, before_cpu), ("previous", PREVIOUS, baseline_cpu))
        for name, opts, cap in variants:
            if cap is not None and cap <= 0:
                continue
            c0 = time.process_time()

            def stop(info, c0=c0, cap=cap):
                return cap is not None and time.process_time() - c0 > cap

            sol, cpu, wall = _timed(lambda: p.solve(tol=tol, max_iter=max_iter, warn=False, callback=stop, **opts))
            row[name] = dict(
                cpu=cpu,
                wall=wall,
                iterations=sol.n_iter,
                gap=sol.info["gap"],
                converged=sol.converged,
                finished=sol.status != "stopped by callback",
                objective=sol.objective,
                lower_bound=sol.dual_value,
                rank_sigma=sol.info["factor"].shape[1],
                h=sol.info["h"],
                eig_exact=sol.info["eig_exact"],
                eig_tracked=sol.info["eig_tracked"],
                working_set=sol.info.get("working_set"),
            )
        rows.append(row)
    return rows


def family_problem(spec: str, n: int, seed: int, lam: float = 1.0, data_dir=None) -> KCR:
    """KCR on the family member ``spec`` (:func:`benchmarks._family.points`): Gaussian kernel
    with ν = 1 / the median squared distance, regularization ``lam``."""
    X, y = points(spec, n, seed, data_dir)
    return KCR(gaussian_kernel(X, gamma=1.0 / median_sq_distance(X)), y, lam)


def family_rows(
    specs=DEFAULT_KCR_FAMILY,
    sizes=(1000,),
    seeds=(0, 1, 2, 3, 4),
    lam: float = 1.0,
    tol: float = 1e-3,
    cpu_cap: float = 300.0,
    data_dir=None,
    report=None,
) -> list[dict]:
    """One certified solve (``tol``, default options, one BLAS thread) per family member,
    size and seed, stopped after ``cpu_cap`` CPU seconds (then ``finished`` is False and the
    row is not certified).  A row: spec, n, seed, the kernel's rank r, CPU and wall seconds,
    iterations, the certified relative gap, converged, exact / tracked PSD steps.  A warm-up
    solve compiles first.  ``report(row)`` is called as each row is measured."""
    warm = family_problem("blobs:d=3:c=3", 60, 0, lam)
    warm.solve(tol=tol, max_iter=50, warn=False)
    rows = []
    for n in sizes:
        for spec in specs:
            for seed in seeds:
                p = family_problem(spec, n, seed, lam, data_dir)
                c0 = time.process_time()

                def stop(info, c0=c0):
                    return time.process_time() - c0 > cpu_cap

                with blas_limit(1):
                    sol, cpu, wall = _timed(lambda: p.solve(tol=tol, max_iter=1_000_000, warn=False, callback=stop))
                row = dict(
                    spec=spec,
                    n=p.n,
                    seed=seed,
                    r=p.rank,
                    cpu=cpu,
                    wall=wall,
                    iterations=sol.n_iter,
                    gap=float(sol.info["gap"]),
                    converged=bool(sol.converged),
                    finished=sol.status != "stopped by callback",
                    eig_exact=sol.info["eig_exact"],
                    eig_tracked=sol.info["eig_tracked"],
                )
                rows.append(row)
                if report is not None:
                    report(row)
    return rows


def _variant_instances(data_dir=None, n_max=200, datasets=("iris", "wine", "ionosphere", "balance")):
    for name in datasets:
        X, y = load_dataset(name, data_dir)
        idx = np.random.default_rng(0).choice(len(y), min(n_max, len(y)), replace=False)
        X, y = X[idx], y[idx]
        X = (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-12)
        d = X.shape[1]
        for nu in (0.25 / d, 4.0 / d, 64.0 / d):
            for lam in (1e-2, 1.0, 1e2):
                yield dict(data=name, n=len(y), nu=nu, lam=lam), KCR(gaussian_kernel(X, gamma=nu), y, lam)


VARIANTS = {
    "plain+track": {},
    "halpern+track": dict(halpern=True),
    "plain+lapack": dict(eig="exact"),
    "halpern+lapack": dict(eig="exact", halpern=True),
    # the default without diagonal preconditioning (reference/sriperumbudur2008-kcr.md)
    "unscaled": dict(scaling=0.0, eig_step_factor=0.1),
}


def variant_rows(
    variants=("plain+track", "halpern+track", "plain+lapack"),
    n_max: int = 200,
    max_iter: int = 20_000,
    tol: float = 1e-3,
    data_dir=None,
    datasets=("iris", "wine", "ionosphere", "balance"),
) -> list[dict]:
    """For each instance (Iris, Wine, Ionosphere, Balance; at most ``n_max`` points;
    ν ∈ {¼, 4, 64}/d, λ ∈ {0.01, 1, 100}) and each solver variant of :data:`VARIANTS`:
    iterations and CPU seconds to a certified relative gap ``tol`` (one BLAS thread)."""
    rows = []
    for meta, p in _variant_instances(data_dir, n_max, datasets):
        p.solve(tol=tol, max_iter=5, warn=False)
        row = dict(meta, r=p.rank)
        for v in variants:
            sol, cpu, _ = _timed(lambda: p.solve(tol=tol, max_iter=max_iter, warn=False, **VARIANTS[v]))
            row[v] = dict(iterations=sol.n_iter, cpu=cpu, converged=sol.converged, objective=sol.objective)
        rows.append(row)
    return rows


def summarize_variants(rows) -> dict:
    """Per variant: instances converged, total iterations and CPU over the instances that
    every variant solved, and against the first variant the count with fewer / more
    iterations."""
    names = [k for k in rows[0] if isinstance(rows[0][k], dict)] if rows else []
    both = [r for r in rows if all(r[v]["converged"] for v in names)]
    out = dict(instances=len(rows), solved_by_all=len(both))
    for v in names:
        out[v] = dict(
            converged=sum(r[v]["converged"] for r in rows),
            iterations=sum(r[v]["iterations"] for r in both),
            cpu=round(sum(r[v]["cpu"] for r in both), 2),
        )
        if v != names[0]:
            out[v]["fewer_iterations_than_" + names[0]] = sum(
                r[v]["iterations"] < r[names[0]]["iterations"] for r in rows
            )
            out[v]["more_iterations_than_" + names[0]] = sum(
                r[v]["iterations"] > r[names[0]]["iterations"] for r in rows
            )
    return out


# --------------------------------------------------------------------------- property sweep
def random_instance(seed, sizes, kind="gaussian", nu_factor=1.0, lam=1.0) -> KCR:
    """The instance family of ``tests/declare/test_kcr_properties.py``: classes of the given
    ``sizes``, features N(class offset, I) in 3-D with offsets N(0, 1.5²); a Gaussian
    kernel with ν = nu_factor / median squared distance, or (``kind="linear"``)
    XXᵀ + 0.1 I."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.normal(size=(y.size, 3)) + 1.5 * rng.normal(size=(len(sizes), 3))[y]
    if kind == "gaussian":
        K = gaussian_kernel(X, gamma=nu_factor / median_sq_distance(X))
    else:
        K = X @ X.T + 0.1 * np.eye(y.size)
    return KCR(K, y, lam)


def _feasibility(S) -> tuple[float, float, float]:
    scale = max(1.0, float(np.linalg.norm(S, 2)))
    return float(np.linalg.eigvalsh(0.5 * (S + S.T))[0]), float(abs(S.sum())), scale


def gap_sweep_rows(
    n_draws: int = 100, seed: int = 0, max_n: int = 30, fast_tol: float = 1e-4, max_iter: int = 100_000
) -> list[dict]:
    """``n_draws`` random instances (2–3 classes of 2–10 points, n <= ``max_n``, kernel
    Gaussian (ν factor ½, 1, 2) with prob. 2/3 else ridged linear, λ ∈ {0.01, 0.1, 1, 10}):
    fast solve (certified tol ``fast_tol``) vs the exact model (Clarabel, whitened,
    projected back onto N).  rel_gap = |f_fast − f_exact| / max(1, |f_exact|); signed > 0
    means the fast solver is worse.  Feasibility of both Σ: λ_min, |1ᵀΣ1| and the scale
    max(1, ‖Σ‖₂)."""
    rng = np.random.default_rng(seed)
    rows = []
    for draw in range(n_draws):
        L = int(rng.integers(2, 4))
        while True:
            sizes = [int(v) for v in rng.integers(2, 11, size=L)]
            if sum(sizes) <= max_n:
                break
        kind = "gaussian" if rng.uniform() < 2 / 3 else "linear"
        nu_factor = float(rng.choice([0.5, 1.0, 2.0]))
        lam = float(rng.choice([0.01, 0.1, 1.0, 10.0]))
        p = random_instance(int(rng.integers(2**31 - 1)), sizes, kind, nu_factor, lam)
        fast, f_cpu, _ = _timed(lambda: p.solve(tol=fast_tol, max_iter=max_iter, warn=False))

        def run():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return p.solve_reference(accept_inaccurate=True)

        try:
            exact, e_cpu, _ = _timed(run)
            e_status, e_obj = exact.status, exact.objective
            e_min, e_sum, e_scale = _feasibility(exact.matrix)
        except SolverError as exc:
            e_status, e_obj, e_cpu = f"error ({str(exc)[:40]})", np.nan, np.nan
            e_min = e_sum = e_scale = np.nan
        f_min, f_sum, f_scale = _feasibility(fast.matrix)
        scale = max(1.0, abs(e_obj))
        rows.append(
            dict(
                draw=draw,
                n=p.n,
                sizes=sizes,
                kind=kind,
                nu_factor=nu_factor,
                lam=lam,
                fast_converged=fast.converged,
                fast_iter=fast.n_iter,
                fast_cert_gap=fast.info["gap"],
                fast_cpu=f_cpu,
                exact_status=e_status,
                exact_cpu=e_cpu,
                f_fast=fast.objective,
                f_exact=e_obj,
                rel_gap=abs(fast.objective - e_obj) / scale,
                signed=(fast.objective - e_obj) / scale,
                cert_below_exact=bool(fast.dual_value <= e_obj + 1e-7 * scale),
                fast_lmin_rel=f_min / f_scale,
                fast_sum_rel=f_sum / f_scale,
                exact_lmin_rel=e_min / e_scale,
                exact_sum_rel=e_sum / e_scale,
            )
        )
    return rows


def summarize_sweep(rows) -> dict:
    """Max / median / 95th percentile of the relative gaps and the worst feasibility."""
    g = np.array([r["rel_gap"] for r in rows], dtype=float)
    ok = np.isfinite(g)
    return dict(
        draws=len(rows),
        exact_ok=int(ok.sum()),
        exact_inaccurate=sum(r["exact_status"] == "optimal_inaccurate" for r in rows),
        fast_converged=sum(bool(r["fast_converged"]) for r in rows),
        max_gap=float(g[ok].max()),
        median_gap=float(np.median(g[ok])),
        p95_gap=float(np.percentile(g[ok], 95)),
        over_1e3=int(np.sum(g[ok] > 1e-3)),
        fast_worse=int(sum(r["signed"] > 0 for r in rows if np.isfinite(r["signed"]))),
        max_n=max(r["n"] for r in rows),
        cert_valid=sum(r["cert_below_exact"] for r in rows),
        worst_fast_lmin_rel=float(min(r["fast_lmin_rel"] for r in rows)),
        worst_fast_sum_rel=float(max(r["fast_sum_rel"] for r in rows)),
        worst_exact_lmin_rel=float(np.nanmin([r["exact_lmin_rel"] for r in rows])),
        worst_exact_sum_rel=float(np.nanmax([r["exact_sum_rel"] for r in rows])),
        median_fast_cpu=float(np.median([r["fast_cpu"] for r in rows])),
        median_exact_cpu=float(np.nanmedian([r["exact_cpu"] for r in rows])),
        max_fast_iter=int(max(r["fast_iter"] for r in rows)),
    )


# --------------------------------------------------------------------------- entry point
def _print_rows(rows):
    for r in rows:
        print(row_line(r), flush=True)


def data_sets(args) -> tuple:
    """The data sets the parts selected by ``args.what`` read (checked before they run)."""
    family = tuple(s for s in args.family if ":" not in s and s not in ("blobs", "classification"))
    return (
        (("balance",) if args.what in ("large", "all") else ())
        + (tuple(args.variant_data) if args.what in ("variants", "all") else ())
        + (family if args.what == "family" else ())
    )


def command(args) -> int:
    """``python -m benchmarks bench kcr``: run the parts selected by ``args.what`` and print their rows."""
    import json

    if args.what in ("large", "all"):  # before the other parts run
        _check_n(args.n, len(load_dataset("balance")[1]))
    out = {}
    if args.what in ("sweep", "all"):
        rows = gap_sweep_rows(args.draws)
        out["sweep"] = dict(rows=rows, summary=summarize_sweep(rows))
        print("fast vs exact sweep:", flush=True)
        _print_rows([out["sweep"]["summary"]])
    if args.what in ("exact", "all"):
        print("exact model with SCS vs fast:", flush=True)
        out["exact"] = []
        for size in args.exact_sizes:  # one size at a time, printed as it finishes
            rows = exact_vs_fast_rows(
                sizes=(size,), solvers=(("SCS", "whitened"),), eps=args.scs_eps, time_limit_secs=args.scs_time_limit
            )
            out["exact"] += rows
            _print_rows(rows)
    if args.what in ("alg1", "all"):
        rows = algorithm1_rows()
        out["alg1"] = rows
        print("paper's Algorithm 1 vs PDHG (same CPU budget):", flush=True)
        _print_rows(rows)
    if args.what in ("large", "all"):
        row = large_n_row(n=args.n, baseline=not args.no_baseline)
        out["large"] = row
        print(f"n = {args.n} fast solve (default solver, then the baseline {BASELINE}):", flush=True)
        _print_rows([{k: v for k, v in row.items() if not isinstance(v, dict)}])
        for part in ("default", "baseline"):
            if part in row:
                flat = {k: v for k, v in row[part].items() if not isinstance(v, dict)}
                flat.update({k: v["cpu"] for k, v in row[part].items() if isinstance(v, dict)})
                print(f" {part}:", flush=True)
                _print_rows([flat])
    if args.what in ("variants", "all"):
        rows = variant_rows(tuple(args.variants), n_max=args.variant_n, datasets=tuple(args.variant_data))
        out["variants"] = dict(rows=rows, summary=summarize_variants(rows))
        print("solver variants (iterations / CPU s to a certified 1e-3):", flush=True)
        _print_rows(
            [
                {
                    "instance": f"{r['data']} n={r['n']} nu={r['nu']:.3g} lam={r['lam']:g}",
                    **{
                        v: f"{r[v]['iterations']}/{r[v]['cpu']:.2f}{'' if r[v]['converged'] else '(nc)'}"
                        for v in r
                        if isinstance(r[v], dict)
                    },
                }
                for r in rows
            ]
        )
        print(" summary:", out["variants"]["summary"], flush=True)
    if args.what == "scale":  # not part of "all" (minutes)
        rows = scale_rows(tuple(args.sizes), baseline_cpu=args.baseline_cpu, before_cpu=args.before_cpu)
        out["scale"] = rows
        print(
            f"certified 1e-3, Gaussian blobs, 3 classes, lam = 1 (CPU s; before = {BEFORE}; previous = {PREVIOUS}):",
            flush=True,
        )
        for r in rows:
            flat = dict(n=r["n"], r=r["r"], setup_cpu=r["setup_cpu"])
            if "before" in r:
                flat["cpu_ratio_before_default"] = r["before"]["cpu"] / r["default"]["cpu"]
            for part in ("default", "before", "previous"):
                if part in r:
                    flat.update(
                        {
                            f"{part}_{k}": v
                            for k, v in r[part].items()
                            if k in ("cpu", "iterations", "gap", "converged", "finished")
                        }
                    )
            _print_rows([flat])
        done = [r for r in rows if r["default"]["converged"]]
        if len(done) >= 2:
            print(
                " growth exponent of the default solve CPU in n:",
                round(growth_exponent([r["n"] for r in done], [r["default"]["cpu"] for r in done]), 2),
            )
    if args.what == "family":  # not part of "all" (minutes to hours)
        if min(args.sizes) < 20:
            raise CommandError(f"family: --sizes must be at least 20 points; got {min(args.sizes)}")
        for spec in args.family:
            try:
                parse_spec(spec)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        print(
            f"certified 1e-3 over a family (lam = {args.family_lam:g}, CPU cap {args.cpu_cap:g} s per solve, "
            f"seeds {args.seeds}):",
            flush=True,
        )
        rows = family_rows(
            tuple(args.family),
            tuple(args.sizes),
            tuple(range(args.seed, args.seed + args.seeds)),
            lam=args.family_lam,
            cpu_cap=args.cpu_cap,
            data_dir=getattr(args, "data_dir", None),
            report=lambda r: _print_rows([r]),
        )
        summary = summarize(rows)
        verdicts = [family_verdict(rows, n, args.target) for n in sorted({r["n"] for r in rows})]
        out["family"] = dict(rows=rows, summary=summary, verdicts=verdicts)
        print(" per member (CPU s):", flush=True)
        _print_rows(summary)
        print(f" worst instance against the target of {args.target:g} CPU s:", flush=True)
        _print_rows(verdicts)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, default=lambda v: v.item() if hasattr(v, "item") else str(v))
    return 0


#: the options of ``python -m benchmarks bench kcr`` (its row of the command table) and of :func:`main`
OPTIONS = (
    opt(
        "what",
        nargs="?",
        default="all",
        choices=("sweep", "exact", "alg1", "large", "variants", "scale", "family", "all"),
    ),
    opt("--draws", type=int, default=100, help="sweep: random instances (default 100)"),
    opt(
        "--exact-sizes",
        type=int,
        nargs="+",
        default=[10, 20, 30, 40],
        help="exact: points per class (3 classes) for the SCS runs",
    ),
    opt("--scs-eps", type=float, default=1e-6, help="exact: SCS eps_abs = eps_rel"),
    opt("--scs-time-limit", type=float, default=600.0, help="exact: SCS seconds per solve"),
    opt("--n", type=int, default=500, help="large: number of Balance points"),
    opt(
        "--no-baseline",
        action="store_true",
        help="large: skip the same-run baseline solve (the previous configuration)",
    ),
    opt("--variant-n", type=int, default=200, help="variants: points per data set (max)"),
    opt(
        "--variants",
        nargs="+",
        choices=sorted(VARIANTS),
        default=["plain+track", "halpern+track", "plain+lapack"],
        help="variants: solver variants to compare (the first is the reference)",
    ),
    opt(
        "--variant-data",
        nargs="+",
        default=["iris", "wine", "ionosphere", "balance"],
        choices=["iris", "wine", "ionosphere", "balance"],
        help="variants: data sets",
    ),
    opt(
        "--sizes",
        type=int,
        nargs="+",
        default=[500, 1000, 2000],
        help="scale, family: numbers of points (default 500 1000 2000)",
    ),
    opt(
        "--family",
        nargs="+",
        default=list(DEFAULT_KCR_FAMILY),
        help="family: generator specifications (blobs:d=3:c=3, classification:d=6:c=3:sep=1, or a data set "
        "of the data folder such as pendigits; default: the KCR family of benchmarks._family)",
    ),
    opt("--seeds", type=int, default=5, help="family: seeds per member, from --seed (default 5)"),
    opt("--family-lam", type=float, default=1.0, help="family: the regularization λ (default 1)"),
    opt(
        "--cpu-cap", type=float, default=300.0, help="family: CPU seconds after which a solve is stopped (default 300)"
    ),
    opt("--target", type=float, default=60.0, help="family: CPU seconds the worst instance must meet (default 60)"),
    use("seed", "family: first seed (default 0)"),
    opt(
        "--baseline-cpu",
        type=float,
        default=300.0,
        help="scale: CPU seconds after which the previous options' solve is stopped "
        "(its time is then extrapolated; 0 skips it)",
    ),
    opt(
        "--before-cpu",
        type=float,
        default=None,
        help="scale: CPU seconds after which the solve with the options before dual polishing and the "
        "working set is stopped (default: no limit; 0 skips it)",
    ),
    use("json", "write all rows as JSON"),
)


def main(argv=None) -> int:
    """``python -m benchmarks.bench.kcr [sweep|exact|alg1|large|all] [options]``."""
    return script("python -m benchmarks.bench.kcr", command, OPTIONS, data_sets, argv)


if __name__ == "__main__":
    raise SystemExit(main())
