"""The measurements of ``cvxkml demo`` and ``cvxkml bench itml | lowrank | vonneumann``.

Every function returns plain rows (dicts) for the CLI, the tests and notebooks; nothing here
prints.  Times are :func:`time.perf_counter`, best of ``repeats``, after a Numba warm-up (no
compile time is timed).  The plain-NumPy baselines (``numpy_*``) run the solvers' own update
formulas, so that they differ from the Numba loops only in how they run.
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np

from .._config import blas_limit
from ..datasets import load_wine_standardized
from ..solvers.bregman import BENCH_KERNELS as BREGMAN_KERNELS
from ..solvers.lowrank import cholupdatemult, cholupdatemult_t
from ..testing import make_random_instance
from ._runner import best_of as _best_of
from ._runner import default as _default
from ._runner import quiet
from ._runner import timed as _timed

__all__ = [
    "numpy_sweeps_metric",
    "numpy_sweeps_kernel",
    "warm_up",
    "projection_rows",
    "tolerance_rows",
    "demo_knn_rows",
    "demo_fast_vs_exact",
    "numpy_lowrank_sweep",
    "lowrank_projection_rows",
    "mnist_shape_factor",
    "lowrank_workload_rows",
    "warm_up_lowrank",
    "vonneumann_pairs_problem",
    "numpy_vonneumann_sweep",
    "warm_up_vonneumann",
    "dgemm_gflops",
    "vonneumann_projection_rows",
    "vonneumann_workload_rows",
]

#: Algorithm 1's projection (alpha, beta, new xi): bregman's own formula run as plain Python
_numpy_project = BREGMAN_KERNELS["project"].py_func
_LOWRANK_SIZES = _VN_SIZES = (10, 50, 100, 200)
_LOWRANK_PAPER_MIN = {10_000: 4.8, 100_000: 11.3}  # Kulis et al. §7.2, LogDet, MATLAB + MEX
_VN_PAPER_MIN = {10_000: 7.7, 100_000: 71.4}  # Kulis et al. §7.2, von Neumann, MATLAB


# --------------------------------------------------------------------------- shared helpers
def _rel_gap(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


def _max_rel_diff(A, B) -> float:
    """max |A − B| / max |B|."""
    return float(np.max(np.abs(A - B)) / max(1e-300, np.max(np.abs(B))))


# --------------------------------------------------------------------------- Bregman (bench itml)
def _numpy_step(p, c, delta, xi, lam, gamma) -> float:
    """Algorithm 1 at constraint ``c`` with distance p: updates ``xi[c]``, ``lam[c]``; returns β."""
    if not p > 0.0:
        raise FloatingPointError(f"non-positive distance at constraint {c}")
    alpha, beta, xi[c] = _numpy_project(p, delta[c], xi[c], lam[c], gamma)
    lam[c] -= alpha
    return beta


def _numpy_update(M, u, p, c, delta, xi, lam, gamma) -> int:
    """One projection given u = M z and p = zᵀ M z: ``M ← M + β u uᵀ`` in place unless β = 0;
    1 when M was updated, else 0."""
    beta = _numpy_step(p, c, delta, xi, lam, gamma)
    if beta == 0.0:
        return 0
    M += beta * np.outer(u, u)
    return 1


def numpy_sweeps_metric(W, V, delta, xi, lam, gamma, n_sweeps):
    """``n_sweeps`` cyclic Bregman sweeps on a d × d Mahalanobis matrix, in plain NumPy.

    Per constraint c (v = V[c]): p = vᵀWv, (α, β, ξ_c) by Algorithm 1, λ_c ← λ_c − α,
    W ← W + β (Wv)(Wv)ᵀ (skipped when β = 0, as in the Numba loop).  Updates ``W``, ``xi``,
    ``lam`` in place (``gamma = inf``: hard constraints); returns the rank-one update count.
    """
    updates = 0
    for _ in range(n_sweeps):
        for c in range(V.shape[0]):
            Wv = W @ V[c]
            updates += _numpy_update(W, Wv, float(V[c] @ Wv), c, delta, xi, lam, gamma)
    return updates


def numpy_sweeps_kernel(K, I, J, delta, xi, lam, gamma, n_sweeps):
    """:func:`numpy_sweeps_metric` on an n × n kernel: Kz = K[i] − K[j], p = Kz_i − Kz_j,
    K ← K + β (Kz)(Kz)ᵀ.  Returns the rank-one update count."""
    updates = 0
    for _ in range(n_sweeps):
        for c in range(I.shape[0]):
            i, j = I[c], J[c]
            Kz = K[i] - K[j]
            updates += _numpy_update(K, Kz, float(Kz[i] - Kz[j]), c, delta, xi, lam, gamma)
    return updates


def warm_up() -> None:
    """Compile (or load from cache) the Numba Bregman loops on a tiny problem."""
    for kind in ("metric", "kernel"):
        make_random_instance(6, 3, 6, 1.0, kind=kind, random_state=0).solve(tol=1e-6, max_iter=50)


def _projection_case(kind: str, size: int, n_proj: int, repeats: int, seed: int) -> dict:
    if kind == "metric":
        n_points = max(2 * size, 60)
        m = min(n_proj, n_points * (n_points - 1) // 2, 2000)
        prob = make_random_instance(n_points, size, m, 1.0, kind="metric", random_state=seed)
        V0 = np.ascontiguousarray(prob.X[prob.pairs.i] - prob.X[prob.pairs.j])
    else:
        prob = make_random_instance(size, 5, min(n_proj, 2 * size), 1.0, kind="kernel", random_state=seed)
    P = prob.pairs
    sweeps = max(1, int(np.ceil(n_proj / len(P))))
    total = sweeps * len(P)
    delta, gamma = np.ascontiguousarray(P.y, dtype=float), float(prob.gamma)
    where = (V0,) if kind == "metric" else (P.i, P.j)
    out = {}

    def run(numba: bool):
        M, xi, lam = np.array(prob.M0, dtype=float, order="C"), np.array(P.bound, dtype=float), np.zeros(len(P))
        if numba:
            out["numba"] = M, BREGMAN_KERNELS[f"sweeps_{kind}"](M, *where, delta, xi, lam, gamma, 0.0, sweeps)
        else:
            fn = numpy_sweeps_metric if kind == "metric" else numpy_sweeps_kernel
            out["updates"], out["numpy"] = fn(M, *where, delta, xi, lam, gamma, sweeps), M

    run(True)  # compile / load, untimed
    t_numba = _best_of(lambda: run(True), repeats)
    t_numpy = _best_of(lambda: run(False), repeats)
    M_nb, (done, _change, code, _bad) = out["numba"]
    if done != sweeps:
        raise RuntimeError(f"Numba loop stopped early (code {code}) in the {kind} benchmark.")
    return {
        "form": kind,
        "size": int(size),
        "pairs": len(P),
        "projections": int(total),
        "updates": int(out["updates"]),
        "numba_s_per_proj": t_numba / total,
        "numpy_s_per_proj": t_numpy / total,
        "speedup": t_numpy / t_numba,
        "max_rel_diff": float(np.max(np.abs(M_nb - out["numpy"])) / max(1.0, np.max(np.abs(out["numpy"])))),
    }


def projection_rows(quick: bool = False, repeats: int | None = None, seed: int = 0) -> list[dict]:
    """Seconds per Bregman projection, Numba vs plain NumPy: metric form at d = 4, 13, 64, kernel
    form at n = 100, 1000 (``quick``: d = 4, 13, n = 100, fewer projections and repeats).

    Both run the same whole sweeps over the same pairs (slack γ = 1) from the same start;
    a projection with β = 0 skips the rank-one update in both (``updates`` counts those done).
    Columns: form, size, pairs, projections, updates, numba_s_per_proj, numpy_s_per_proj,
    speedup (numpy / numba), max_rel_diff (of the resulting matrices).
    """
    warm_up()
    cases = (
        [("metric", 4, 400), ("metric", 13, 400), ("kernel", 100, 200)]
        if quick
        else [
            ("metric", 4, 20_000),
            ("metric", 13, 20_000),
            ("metric", 64, 10_000),
            ("kernel", 100, 4_000),
            ("kernel", 1000, 400),
        ]
    )
    repeats = _default(repeats, quick, 2, 5, int)
    return [_projection_case(kind, size, n_proj, repeats, seed) for kind, size, n_proj in cases]


def tolerance_rows(
    quick: bool = False,
    repeats: int | None = None,
    seed: int = 0,
    tol: float = 1e-10,
    eps: float = 1e-8,
    gamma: float = 1.0,
) -> list[dict]:
    """Time to tolerance of the fast Bregman solver vs the exact CVXPY model on the slack LogDet
    kernel problem with 2n random pairs, n = 20, 40, 80 (``quick``: 10, 20).

    The exact model runs with SCS (eps ``eps``) and, where its memory allows
    (``Problem.clarabel_max_size``), Clarabel; times are the best of ``repeats`` calls of
    ``solve`` resp. ``solve_reference`` (model build included).  Columns: n, pairs, solver,
    fast_s, exact_s, ratio, fast_objective, exact_objective, rel_gap, fast_max_violation,
    exact_max_violation, exact_status, fast_sweeps.
    """
    from ..declare.problem import Problem

    warm_up()
    repeats = _default(repeats, quick, 1, 3, int)
    rows = []
    for n in (10, 20) if quick else (20, 40, 80):
        prob = make_random_instance(n, 5, 2 * n, gamma, kind="kernel", random_state=seed + n)
        out = {}
        t_fast = _best_of(lambda: out.update(fast=prob.solve(tol=tol, max_iter=1_000_000)), repeats)
        sf = out["fast"]
        for solver in ["SCS"] + (["CLARABEL"] if prob.T.shape[1] <= Problem.clarabel_max_size else []):
            t_exact = _best_of(
                lambda: out.update(exact=quiet(prob.solve_reference, solver=solver, eps=eps, accept_inaccurate=True)),
                repeats,
            )
            se = out["exact"]
            rows.append(
                {
                    "n": n,
                    "pairs": len(prob.pairs),
                    "solver": solver.lower(),
                    "fast_s": t_fast,
                    "exact_s": t_exact,
                    "ratio": t_fast / t_exact,
                    "fast_objective": sf.objective,
                    "exact_objective": se.objective,
                    "rel_gap": _rel_gap(sf.objective, se.objective),
                    "fast_max_violation": sf.max_violation,
                    "exact_max_violation": se.max_violation,
                    "exact_status": se.status,
                    "fast_sweeps": sf.n_iter,
                }
            )
    return rows


# --------------------------------------------------------------------------- demo
def demo_knn_rows(n_neighbors: int = 10, n_folds: int = 2, random_state: int = 0) -> list[dict]:
    """k-NN accuracy on standardized Wine, stratified shuffled ``n_folds``-fold CV, for the
    Euclidean distance, ITML and KernelITML (Gaussian, σ = median training distance).

    Rows: method, scores (per fold), mean, spread (std over the folds), fit_s (total fit time).
    """
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier

    from ..estimators.logdet import ITML, KernelITML

    warm_up()  # keep Numba compile time out of fit_s
    X, y = load_wine_standardized()
    folds = list(StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state).split(X, y))

    def kitml(Xtr, ytr):
        D = np.sum((Xtr[:, None, :] - Xtr[None, :, :]) ** 2, axis=-1)
        sigma = float(np.sqrt(np.median(D[np.triu_indices(len(Xtr), 1)])))
        return KernelITML(kernel="gaussian", kernel_params={"sigma": sigma}, gamma=1.0, random_state=random_state).fit(
            Xtr, ytr
        )

    rows = []
    for name, make in (
        ("Euclidean", lambda Xtr, ytr: None),
        ("ITML", lambda Xtr, ytr: ITML(gamma=1.0, random_state=random_state).fit(Xtr, ytr)),
        ("KernelITML (Gaussian)", kitml),
    ):
        scores, fit_s = [], 0.0
        for tr, te in folds:
            est, dt = _timed(make, X[tr], y[tr])
            fit_s += dt
            Ztr, Zte = (X[tr], X[te]) if est is None else (est.transform(X[tr]), est.transform(X[te]))
            scores.append(float(KNeighborsClassifier(n_neighbors=n_neighbors).fit(Ztr, y[tr]).score(Zte, y[te])))
        rows.append(
            {
                "method": name,
                "scores": scores,
                "mean": float(np.mean(scores)),
                "spread": float(np.std(scores)),
                "fit_s": fit_s,
            }
        )
    return rows


def demo_fast_vs_exact(n: int = 30, gamma: float = 1.0, random_state: int = 0, tol: float = 1e-10) -> dict:
    """One random slack LogDet kernel problem (n points, 2n pairs) solved by the fast Bregman
    solver (warmed up) and by the exact CVXPY model (default solver).  Returns n, pairs, gamma,
    both objectives, rel_gap, both max violations, both times, time_ratio, exact_solver, fast_sweeps.
    """
    warm_up()
    prob = make_random_instance(n, 5, 2 * n, gamma, kind="kernel", random_state=random_state)
    sf, t_fast = _timed(prob.solve, tol=tol, max_iter=1_000_000)
    se, t_exact = _timed(prob.solve_reference)
    return {
        "n": n,
        "pairs": len(prob.pairs),
        "gamma": gamma,
        "fast_objective": sf.objective,
        "exact_objective": se.objective,
        "rel_gap": _rel_gap(sf.objective, se.objective),
        "fast_max_violation": sf.max_violation,
        "exact_max_violation": se.max_violation,
        "fast_s": t_fast,
        "exact_s": t_exact,
        "time_ratio": t_fast / t_exact,
        "exact_solver": se.solver,
        "fast_sweeps": sf.n_iter,
    }


# --------------------------------------------------------------------------- low rank (bench lowrank)
@nb.njit(cache=True)
def _drive_cholupdatemult(B, B0, X, betas, reset):
    """CHOLUPDATEMULT alone: B ← B L_t (L_t L_tᵀ = I + β_t x_t x_tᵀ) for a stream, B reset to
    B0 every ``reset`` updates (the copy is timed too)."""
    for t in range(X.shape[0]):
        if t % reset == 0:
            B[:, :] = B0
        cholupdatemult(betas[t], X[t], B)


@nb.njit(cache=True)
def _drive_cholupdatemult_t(R, R0, X, betas, reset):
    """The solver's kernel ``cholupdatemult_t`` alone: R ← Lᵀ R (R = Bᵀ) for the same stream."""
    r = R.shape[0]
    h, s, acoef = np.empty(r), np.empty(r), np.empty(r + 1)
    for t in range(X.shape[0]):
        if t % reset == 0:
            R[:, :] = R0
        cholupdatemult_t(betas[t], X[t], R, h, acoef, s)


def numpy_lowrank_sweep(B, G0, I, J, delta, xi, lam, gamma):
    """One low-rank projection sweep in dense NumPy: w = Bᵀ(G0[i] − G0[j]), p = ‖w‖², Algorithm
    1's α, β, ξ, then B ← B @ cholesky(I + β w wᵀ) (skipped when β = 0).  Updates ``xi``,
    ``lam`` in place; returns (B, rank-one update count)."""
    eye = np.eye(B.shape[0])
    updates = 0
    for c in range(I.shape[0]):
        w = B.T @ (G0[I[c]] - G0[J[c]])
        beta = _numpy_step(float(w @ w), c, delta, xi, lam, gamma)
        if beta != 0.0:
            B = B @ np.linalg.cholesky(eye + beta * np.outer(w, w))
            updates += 1
    return B, updates


def _lowrank_pairs(r: int, m: int, seed: int, eps: float = 0.25):
    """G0 (n × r standard normal, n = max(1000, 4r)) and m constraints on m/2 random pairs, each
    constrained to d ≤ (1−ε)b then d ≥ (1+ε)b (b: its distance under K0): with slack every
    projection is violated and updates, and B stays well conditioned."""
    rng = np.random.default_rng(seed)
    n = max(1000, 4 * r)
    G0 = rng.standard_normal((n, r))
    h = max(1, m // 2)
    I = rng.integers(0, n, h)
    J = (I + 1 + rng.integers(0, n - 1, h)) % n
    b = np.repeat(np.sum((G0[I] - G0[J]) ** 2, axis=1), 2)
    delta = np.tile([1.0, -1.0], h)
    bound = np.where(delta > 0, (1 - eps) * b, (1 + eps) * b)
    return (np.ascontiguousarray(G0), np.repeat(I, 2).astype(np.int64), np.repeat(J, 2).astype(np.int64), delta, bound)


def _update_rates(r, flops, flop_budget, repeats, seed):
    """(updates, seconds of CHOLUPDATEMULT, seconds of cholupdatemult_t, bit-identical) on one stream."""
    rng = np.random.default_rng(seed + r)
    n_upd = max(1000, int(flop_budget / flops))
    Xu = rng.standard_normal((n_upd, r))
    Xu /= np.linalg.norm(Xu, axis=1)[:, None]
    betas = np.where(np.arange(n_upd) % 2 == 0, 1.0, -0.5)
    seconds, final = [], []
    for drive in (_drive_cholupdatemult, _drive_cholupdatemult_t):
        M0 = np.eye(r)
        M = M0.copy()
        drive(M, M0, Xu[:2], betas[:2], 100)  # compile / load, untimed
        seconds.append(_best_of(lambda: drive(M, M0, Xu, betas, 100), repeats))
        final.append(M)
    if not np.all(np.isfinite(final[0])):
        raise RuntimeError(f"update benchmark diverged at r = {r}")
    return n_upd, seconds[0], seconds[1], bool(np.array_equal(final[1].T, final[0]))


def lowrank_projection_rows(quick: bool = False, repeats: int | None = None, seed: int = 0) -> list[dict]:
    """Projections per second of the low-rank LogDet solver at r = 10, 50, 100, 200 (``quick``:
    10, 50, fewer projections), one core, Numba warmed up; best of ``repeats`` (3 full, 1 quick).

    * ``update_per_s`` / ``update_gflops``: CHOLUPDATEMULT alone on a stream of unit x with
      β = +1, −0.5 alternating (B reset every 100 updates), flops 3r² + 2r per update;
      ``update_t_*``: the solver's ``cholupdatemult_t`` (on R = Bᵀ) on the same stream,
      ``update_t_speedup`` its rate over CHOLUPDATEMULT's, ``update_t_identical`` bit equality.
    * ``proj_per_s``: whole projections of the solver loop over one sweep of m constraints
      (:func:`_lowrank_pairs`: every one updates, ``proj_updates`` counts them).
    * ``numpy_proj_per_s``: :func:`numpy_lowrank_sweep` on the first ``numpy_projections``
      constraints (one BLAS thread); ``speedup`` = proj / numpy rate; ``max_rel_diff`` of the B's.
    """
    from ..solvers.lowrank import BENCH_KERNELS, PAIR

    repeats = _default(repeats, quick, 1, 3, int)
    flop_budget, np_budget = (1e7, 0.05) if quick else (3e8, 0.5)  # np_budget: rough NumPy seconds
    rows = []
    for r in (10, 50) if quick else _LOWRANK_SIZES:
        flops = 3 * r * r + 2 * r
        n_upd, t_upd, t_upd_t, same = _update_rates(r, flops, flop_budget, repeats, seed)
        m = 2 * max(500, int(flop_budget / (8 * r * r)))
        G0, I, J, delta, bound = _lowrank_pairs(r, m, seed + r)
        kind, zeros2 = np.full(m, PAIR, dtype=np.int64), np.zeros((m, 2))

        def run_numba(mm):
            Bn, xi, lam = np.eye(r), bound[:mm].copy(), np.zeros(mm)
            where = (kind[:mm], I[:mm], J[:mm], J[:mm], zeros2[:mm], zeros2[:mm], delta[:mm])
            res, dt = _timed(BENCH_KERNELS["sweeps"], Bn, G0, *where, xi, lam, 1.0, 0.0, 1)
            if res[2] not in (0, 1) or res[0] != 1:  # OK / NOT_CONVERGED after one sweep
                raise RuntimeError(f"low-rank sweep stopped (code {res[2]}) at r = {r}")
            return Bn, dt, int(np.count_nonzero(lam))  # λ starts at 0: λ_c ≠ 0 iff updated

        run_numba(min(m, 10))  # compile / load, untimed
        timed = [run_numba(m) for _ in range(repeats)]
        t_proj = min(t[1] for t in timed)
        m_np = int(min(m, max(50, np_budget / (3e-5 + 2.5e-10 * r**3))))
        B_nb = run_numba(m_np)[0]
        t_np = np.inf
        with blas_limit(1):
            for _ in range(repeats):
                where = (I[:m_np], J[:m_np], delta[:m_np], bound[:m_np].copy(), np.zeros(m_np))
                (B_np, updates), dt = _timed(numpy_lowrank_sweep, np.eye(r), G0, *where, 1.0)
                t_np = min(t_np, dt)
        upd_rate, upd_t_rate, proj_rate, np_rate = n_upd / t_upd, n_upd / t_upd_t, m / t_proj, m_np / t_np
        rows.append(
            {
                "r": int(r),
                "flops_per_update": int(flops),
                "updates": int(n_upd),
                "update_per_s": upd_rate,
                "update_gflops": upd_rate * flops / 1e9,
                "update_t_per_s": upd_t_rate,
                "update_t_gflops": upd_t_rate * flops / 1e9,
                "update_t_speedup": upd_t_rate / upd_rate,
                "update_t_identical": same,
                "projections": int(m),
                "proj_updates": timed[0][2],
                "proj_per_s": proj_rate,
                "proj_gflops": proj_rate * flops / 1e9,
                "numpy_projections": int(m_np),
                "numpy_updates": int(updates),
                "numpy_proj_per_s": np_rate,
                "speedup": proj_rate / np_rate,
                "max_rel_diff": _max_rel_diff(B_nb, B_np),
            }
        )
    return rows


def mnist_shape_factor(n: int = 60_000, r: int = 100, data_dir=None, noise: float = 0.1, seed: int = 0):
    """The MNIST-shape workload's factor G0 (n × r), labels and a description of the source.

    With ``mnist5000.npz``: the images (centred) on their top ``r`` principal components, stacked
    ⌈n/5000⌉ times (each copy after the first with Gaussian noise of ``noise`` × the component's
    sd), cut to n rows.  Without it: 10 Gaussian classes, per-component scale 1/√(k+1).
    """
    from ..datasets import load_npz

    rng = np.random.default_rng(seed)
    try:
        X, y = load_npz("mnist5000", data_dir=data_dir)
    except FileNotFoundError:
        yy = rng.integers(0, 10, n)
        G0 = (rng.standard_normal((10, r))[yy] + rng.standard_normal((n, r))) * (1.0 / np.sqrt(np.arange(1, r + 1)))
        return np.ascontiguousarray(G0), yy, f"synthetic (no mnist5000.npz): 10 Gaussian classes, {n} x {r}"
    Xc = X - X.mean(axis=0)
    with blas_limit(1):  # multithreaded eigh stalls on a busy box
        _, V = np.linalg.eigh(Xc.T @ Xc)
    Z = Xc @ V[:, ::-1][:, :r]
    sd = Z.std(axis=0)
    copies = -(-n // Z.shape[0])
    G0 = np.concatenate([Z] + [Z + noise * sd * rng.standard_normal(Z.shape) for _ in range(copies - 1)])[:n]
    src = f"mnist5000.npz, PCA-{r}, {copies} copies (noise {noise:g} x component sd), first {n} rows"
    return np.ascontiguousarray(G0), np.tile(y, copies)[:n], src


def _workload_pairs(G0, y, m: int, seed: int):
    """The m random label pairs of the workload (ITML scheme, seed + m), 5th / 95th-percentile bounds."""
    from ..sideinfo import PairConstraints, baseline_metric

    return PairConstraints.from_labels(
        y, baseline_metric(G0), scheme="itml", n_constraints=int(m), percentiles=(5.0, 95.0), random_state=seed + int(m)
    )


def _run_row(proj, secs, flops, max_iter, sweeps, converged, reached):
    """The columns every workload row shares: stop reason and rates."""
    return {
        "stop": reached if converged else ("budget" if sweeps < max_iter else "max sweeps"),
        "converged": bool(converged),
        "solver_s": float(secs),
        "projections": int(proj),
        "proj_per_s": proj / max(secs, 1e-12),
        "gflops": proj * flops / max(secs, 1e-12) / 1e9,
    }


def _lowrank_certificate(prob, M, lam, xi) -> dict:
    """objective, relative gap and largest relative violation of (M, λ, ξ) by the problem's formulas."""
    f, g = prob.objective(M), prob.dual_value(lam)
    viol = prob.violations(M, xi)
    gap = (f - g) / max(1.0, abs(f)) if np.isfinite(f) and np.isfinite(g) else np.inf
    return {
        "objective": float(f),
        "rel_gap": float(gap),
        "max_rel_violation": float(np.max(viol / np.maximum(1.0, np.abs(prob.pairs.bound)), initial=0.0)),
    }


def _lowrank_paper_rule(prob, tol, max_iter, budget):
    """The paper's loop (cyclic order, dual-change stop, no certificate) in chunks of sweeps resumed
    from (B, λ, ξ) until it stops or ``budget`` seconds pass: (B, λ, ξ, sweeps, converged, seconds)."""
    from ..solvers.bregman import NOT_CONVERGED, OK
    from ..solvers.lowrank import PAIR, lowrank_logdet

    P = prob.pairs
    m = len(P)
    args = (prob.G0, np.full(m, PAIR), P.i, P.j, P.j, np.zeros((m, 2)), np.zeros((m, 2)), P.y, P.bound, prob.gamma, tol)
    B = lam = xi = None
    sweeps, seconds, chunk = 0, 0.0, 4
    while sweeps < max_iter and seconds < budget:
        B, lam, xi, done, _change, code, bad, t = lowrank_logdet(
            *args, min(chunk, max_iter - sweeps), B0=B, lam0=lam, xi0=xi, order="cyclic", active_set=False
        )
        sweeps += done
        seconds += t
        if code not in (OK, NOT_CONVERGED):
            raise RuntimeError(f"low-rank paper-rule baseline broke down (code {code}) at constraint {bad}")
        if code == OK:
            return B, lam, xi, sweeps, True, seconds
        chunk = min(2 * chunk, 64)
    return B, lam, xi, sweeps, False, seconds


def lowrank_workload_rows(
    quick: bool = False,
    data_dir=None,
    seed: int = 0,
    tol: float = 1e-3,
    gamma: float = 1.0,
    max_iter: int | None = None,
    counts=None,
    baseline: bool = True,
    baseline_budget: float | None = None,
) -> dict:
    """The MNIST-shape workload of Kulis et al. §7.2 with low-rank LogDet, one core.

    G0 from :func:`mnist_shape_factor` (n = 60 000, r = 100; ``quick``: 6000, 20); per count of
    ``counts`` (10 000, 100 000; ``quick``: 1000, 5000) the label pairs of :func:`_workload_pairs`,
    slack γ = ``gamma``, tolerance ``tol``, two solvers in the same run:

    * ``"certified"``: ``LowRankLogDet.solve(tol)`` (reshuffled order, active set, stop on the dual
      change and the Lagrange certificate);
    * ``"paper rule"`` (``baseline``): ``lowrank_logdet(order="cyclic", active_set=False)``, the
      paper's cyclic order stopped by the dual change alone, at most ``baseline_budget`` s
      (300; ``quick`` 30).

    Returns {"source", "n", "r", "gamma", "tol", "flops_per_projection", "baseline_budget", "rows"};
    a row: constraints, pairs, solver, sweeps, converged, stop, certified (|rel_gap| and
    max_rel_violation ≤ max(tol, 1e-6)), solver_s, cpu_s, build_s, projections, proj_per_s,
    gflops (× (3r² + 2r), an upper bound), objective, rel_gap, max_rel_violation, paper_min.
    """
    from ..declare import LowRankLogDet

    n, r = (6000, 20) if quick else (60_000, 100)
    counts = ((1000, 5000) if quick else (10_000, 100_000)) if counts is None else counts
    max_iter = _default(max_iter, quick, 2000, 100_000, int)
    baseline_budget = _default(baseline_budget, quick, 30.0, 300.0)
    flops = 3 * r * r + 2 * r
    warm_up_lowrank()
    rows = []
    with blas_limit(1):
        G0, y, src = mnist_shape_factor(n, r, data_dir=data_dir, seed=seed)
        for m in counts:
            t0 = time.perf_counter()
            prob = LowRankLogDet(G0, _workload_pairs(G0, y, m, seed), gamma=gamma)
            build = time.perf_counter() - t0
            c0 = time.process_time()
            sol = quiet(prob.solve, tol=tol, max_iter=max_iter)
            cpu = time.process_time() - c0
            base = {
                "constraints": int(m),
                "pairs": len(prob.pairs),
                "build_s": build,
                "paper_min": _LOWRANK_PAPER_MIN.get(int(m)) if not quick else None,
            }
            rel_gap = (sol.gap / max(1.0, abs(sol.objective))) if sol.gap is not None else np.inf
            rate = _run_row(
                int(sol.info["projections"]), sol.time, flops, max_iter, max_iter, sol.converged, "certificate"
            )
            rows.append(
                {
                    **base,
                    "solver": "certified",
                    "sweeps": int(sol.n_iter),
                    **rate,
                    "cpu_s": cpu,
                    "objective": float(sol.objective),
                    "rel_gap": float(rel_gap),
                    "max_rel_violation": float(sol.info["max_relative_violation"]),
                }
            )
            if baseline:
                c0 = time.process_time()
                B, lam, xi, sweeps, conv, secs = _lowrank_paper_rule(prob, tol, max_iter, baseline_budget)
                cpu = time.process_time() - c0
                rate = _run_row(sweeps * len(prob.pairs), secs, flops, max_iter, sweeps, conv, "dual change")
                cert = _lowrank_certificate(prob, B @ B.T, lam, xi[: len(prob.pairs)] if gamma is not None else None)
                rows.append({**base, "solver": "paper rule", "sweeps": int(sweeps), **rate, "cpu_s": cpu, **cert})
    cert_tol = max(tol, 1e-6)
    for row in rows:  # the certificate of Problem.solve, for every row
        row["certified"] = bool(abs(row["rel_gap"]) <= cert_tol and row["max_rel_violation"] <= cert_tol)
    return {
        "source": src,
        "n": n,
        "r": r,
        "gamma": gamma,
        "tol": tol,
        "flops_per_projection": flops,
        "baseline_budget": baseline_budget,
        "rows": rows,
    }


def warm_up_lowrank() -> None:
    """Compile (or load from cache) the low-rank Numba loop on a tiny problem."""
    from ..declare import LowRankLogDet
    from ..sideinfo import PairConstraints

    G0 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    LowRankLogDet(G0, PairConstraints([0, 1], [1, 2], [1.0, -1.0], [1.0, 2.0]), gamma=1.0).solve(tol=1e-6, max_iter=50)


# --------------------------------------------------------------------------- von Neumann (bench vonneumann)
def vonneumann_pairs_problem(r: int, m: int, seed: int, eps: float = 0.25):
    """Kulis et al.'s factored problem min D_vN(K, K0), K0 = G0 G0ᵀ, on the pairs of
    :func:`_lowrank_pairs`, at Algorithm 3's start: F = U (G0 = U diag(s) Vᵀ), q0 = log s².
    Returns (F, q0, I, J, delta, bound)."""
    G0, I, J, delta, bound = _lowrank_pairs(r, m, seed, eps)
    F, q0 = _orthonormal_factor(G0)
    return F, q0, I, J, delta, bound


def _orthonormal_factor(G0):
    """F (orthonormal columns) and q0 = log eig(K0 = G0 G0ᵀ), from the r × r Gram matrix."""
    s2, V = np.linalg.eigh(G0.T @ G0)
    s2 = np.maximum(s2, np.finfo(float).tiny)
    return np.ascontiguousarray((G0 @ V) / np.sqrt(s2)), np.log(s2)


def _dense_vn_eval(q, w, theta):
    """log h(θ), d log h/dθ, eigenvalues and eigenvectors of diag(q) + θwwᵀ by ``eigh``
    (h(θ) = wᵀ exp(diag q + θwwᵀ) w, h' by Daleckii–Krein divided differences)."""
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
    """The solver's ZEROFINDER (same safeguarded Newton steps, brackets and stops), each evaluation
    a dense eigh.  Returns (θ, evaluations, λ, U at θ)."""
    from ..solvers.vonneumann import narrow_bracket, safeguarded_newton_step

    lh, dl, lam, U = _dense_vn_eval(q, w, 0.0)
    phi, dphi = lh - target_log, dl + inv_gamma
    lo, hi = (-np.inf, 0.0) if phi > 0 else (0.0, np.inf)
    theta, evals, nz2 = 0.0, 1, float(w @ w)
    for _ in range(100):
        if abs(phi) <= 1e-14 * max(1.0, abs(target_log)):
            break
        theta = safeguarded_newton_step(theta, phi, dphi, lo, hi, nz2)
        lh, dl, lam, U = _dense_vn_eval(q, w, theta)
        evals += 1
        phi, dphi = lh + theta * inv_gamma - target_log, dl + inv_gamma
        lo, hi, closed = narrow_bracket(theta, phi, lo, hi)
        if closed:
            break
    return theta, evals, lam, U


def numpy_vonneumann_sweep(W, q, F, I, J, delta, xi, lam, gamma):
    """One sweep of Algorithm 3 in dense NumPy (the baseline of ``cvxkml bench vonneumann``):
    w = Wᵀ(F[i] − F[j]), θ* by :func:`_dense_vn_zerofinder` (an ``eigh`` per evaluation), the dual
    correction Δλ = max(−δθ*, −λ), θ = −δΔλ, W ← W @ U, q ← eigenvalues, ξ ← ξ e^{−θ/γ}
    (``gamma`` = inf: hard).  Updates ``xi``, ``lam`` in place; returns (W, q, evaluations,
    projections that ran the root finder)."""
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
        W, q = W @ U, lam_e
        if inv_g:
            xi[c] *= np.exp(-theta * inv_g)
    return W, q, evals, searched


def _numpy_vn_prefix(F, q0, I, J, delta, bound, gamma, k):
    """:func:`numpy_vonneumann_sweep` on the first ``k`` constraints from the start:
    (X̂ = W diag(e^q) Wᵀ, evaluations, searched, seconds)."""
    r = F.shape[1]
    (W, q, evals, searched), dt = _timed(
        numpy_vonneumann_sweep, np.eye(r), q0.copy(), F, I[:k], J[:k], delta[:k], bound[:k].copy(), np.zeros(k), gamma
    )
    return (W * np.exp(q)) @ W.T, evals, searched, dt


def warm_up_vonneumann() -> None:
    """Compile (or load from cache) the von Neumann Numba loop on a tiny problem."""
    from ..solvers.vonneumann import vonneumann_pairs

    vonneumann_pairs(*vonneumann_pairs_problem(3, 4, 0), 1.0, 1e-6, 5)


def _zerofinder_alone(W, q, F, I, J, bound, m):
    """ZEROFINDER alone for the first (at most 20) constraints from the state (W, q), second of
    two passes (the first compiles): (seconds, evaluations, constraints)."""
    from ..solvers.vonneumann import BENCH_KERNELS

    r, n_zf = W.shape[0], min(m, 20)
    bufs = (np.empty(r, dtype=np.int64), np.empty(r), np.empty(r), np.empty(r))
    for _rep in range(2):
        zf_s, zf_evals = 0.0, 0
        for c in range(n_zf):
            Wc, qc = W.copy(), q.copy()
            wc = Wc.T @ (F[I[c]] - F[J[c]])
            idx = BENCH_KERNELS["deflate"](qc, wc, Wc, 1e-14, 1e-12)
            d, z = np.ascontiguousarray(qc[idx]), np.ascontiguousarray(wc[idx])
            (_theta, ne), dt = _timed(BENCH_KERNELS["zerofinder"], d, z, float(np.log(bound[c])), 1.0, *bufs)
            zf_s += dt
            zf_evals += int(ne)
    return zf_s, zf_evals, n_zf


def vonneumann_projection_rows(quick: bool = False, repeats: int | None = None, seed: int = 0) -> list[dict]:
    """Seconds per von Neumann projection (Kulis et al. Algorithm 3) at r = 10, 50, 100, 200
    (``quick``: 10, 50, fewer projections), one core, Numba warmed up, best of ``repeats``.

    Workload :func:`vonneumann_pairs_problem` (every projection updates; ``updates`` from the
    duals).  ``s_per_proj``: one sweep of the solver loop; ``evals_per_proj``: evaluations of h
    per projection (the paper: "rarely more than six"); ``zerofinder_s`` / ``zerofinder_evals``:
    ZEROFINDER alone for 20 constraints from the final state, ``rootfinder_share`` its share of a
    projection; ``numpy_*``: :func:`numpy_vonneumann_sweep` on the first ``numpy_projections``
    constraints, ``speedup`` = numpy / Numba, ``max_rel_diff`` of X̂ after those projections.
    """
    from ..solvers.vonneumann import BENCH_KERNELS, vonneumann_pairs

    repeats = _default(repeats, quick, 1, 3, int)
    budget, np_budget = (2e5, 0.1) if quick else (2e7, 1.0)  # ~ r³ units per sweep; rough NumPy seconds
    warm_up_vonneumann()
    rows = []
    with blas_limit(1):
        for r in (10, 50) if quick else _VN_SIZES:
            m = 2 * max(25 if quick else 100, int(budget / r**3))
            F, q0, I, J, delta, bound = vonneumann_pairs_problem(r, m, seed + r)

            def run_numba():
                W, q, lam, st = np.eye(r), q0.copy(), np.zeros(m), np.zeros(2)
                res, dt = _timed(BENCH_KERNELS["sweeps"], W, q, F, I, J, delta, bound.copy(), lam, 1.0, 0.0, 1, st)
                if res[2] not in (0, 1) or res[0] != 1:
                    raise RuntimeError(f"von Neumann sweep stopped (code {res[2]}) at r = {r}")
                return W, q, lam, st, dt

            timed = [run_numba() for _ in range(repeats)]
            W, q, lam, st, _ = timed[0]
            zf_s, zf_evals, n_zf = _zerofinder_alone(W, q, F, I, J, bound, m)
            m_np = int(min(m, max(10, np_budget / (1e-4 + 4 * 4e-9 * r**3))))  # rough NumPy cost
            ref = vonneumann_pairs(F, q0, I[:m_np], J[:m_np], delta[:m_np], bound[:m_np], 1.0, 0.0, 1)
            runs = [_numpy_vn_prefix(F, q0, I, J, delta, bound, 1.0, m_np) for _ in range(repeats)]
            Xn, np_evals, searched, _ = runs[-1]
            nb_s, np_s = min(t[4] for t in timed) / m, min(t[3] for t in runs) / m_np
            rows.append(
                {
                    "r": int(r),
                    "projections": int(m),
                    "updates": int(np.count_nonzero(lam)),
                    "evals_per_proj": float(st[0] / max(st[1], 1)),
                    "s_per_proj": nb_s,
                    "zerofinder_s": zf_s / n_zf,
                    "zerofinder_evals": zf_evals / n_zf,
                    "rootfinder_share": zf_s / n_zf / nb_s,
                    "numpy_projections": int(m_np),
                    "numpy_evals_per_proj": np_evals / max(searched, 1),
                    "numpy_s_per_proj": np_s,
                    "speedup": np_s / nb_s,
                    "max_rel_diff": float(np.max(np.abs(ref.matrix - Xn)) / np.max(np.abs(Xn))),
                }
            )
    return rows


def dgemm_gflops(r: int, repeats: int = 5) -> float:
    """GFLOP/s of one r × r × r product (``np.dot``, 2r³ flops) on one BLAS thread, best of
    ``repeats`` batches: Algorithm 3's W ← W U at k = r, its flop-count limit."""
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((r, r)), rng.standard_normal((r, r))
    out = np.empty((r, r))
    reps = max(10, int(2e8 / (2.0 * r**3)))
    with blas_limit(1):
        np.dot(A, B, out=out)
        best = _best_of(lambda: [np.dot(A, B, out=out) for _ in range(reps)], repeats)
    return 2.0 * r**3 * reps / best / 1e9


def _vn_dense_row(m, F, q0, I, J, delta, bound, gamma, k):
    """Same run, same workload: ``vonneumann_pairs`` (one sweep, tol 0) vs the dense NumPy sweep on
    the first ``k`` constraints from the start."""
    from ..solvers.vonneumann import vonneumann_pairs

    ref = {}
    t_alg3 = _best_of(
        lambda: ref.update(res=vonneumann_pairs(F, q0, I[:k], J[:k], delta[:k], bound[:k], gamma, 0.0, 1)), 2
    )
    Xn, _evals, searched, t_np = _numpy_vn_prefix(F, q0, I, J, delta, bound, gamma, k)
    return {
        "constraints": int(m),
        "prefix": k,
        "projections": int(ref["res"].extra["projections"]),
        "numpy_projections": int(searched),
        "alg3_s_per_visit": t_alg3 / k,
        "numpy_s_per_visit": t_np / k,
        "speedup": t_np / t_alg3,
        "max_rel_diff": float(np.max(np.abs(ref["res"].matrix - Xn)) / np.max(np.abs(Xn))),
    }


def vonneumann_workload_rows(
    quick: bool = False,
    data_dir=None,
    seed: int = 0,
    tol: float = 1e-3,
    gamma: float = 1.0,
    max_iter: int | None = None,
    counts=None,
    time_budget: float | None = None,
    baseline: bool = True,
    baseline_projections: int | None = None,
) -> dict:
    """The MNIST-shape workload of Kulis et al. §7.2 with von Neumann (Algorithm 3), one core.

    G0 from :func:`mnist_shape_factor` (n = 60 000, r = 100; ``quick``: 3000, 10), F = U,
    q0 = log eig K0, the label pairs of :func:`lowrank_workload_rows`, slack γ = ``gamma``, per
    count of ``counts`` (10 000, 100 000; ``quick``: 500, 2000): ``vonneumann_pairs`` (stop on
    the dual change and the certificate) stopped by its callback after ``time_budget`` s (600;
    ``quick`` 30), then ``certificate()`` of the end point.  With ``baseline``: a ``"paper
    rule"`` row (``stop="dual_change"``; ``quick`` or counts ≤ 10 000) and a ``dense`` row per
    count (:func:`_vn_dense_row` on ``baseline_projections`` constraints, 200; ``quick`` 50).

    A row: constraints, pairs, solver, sweeps, stop, converged, certified, solver_s, cpu_s,
    build_s, visits, projections (those that ran ZEROFINDER), proj_per_s, s_per_proj,
    evals_per_proj, gflops (× 2r³, an upper bound), objective, rel_gap, max_rel_violation,
    paper_min.  Also ``dgemm_gflops`` (:func:`dgemm_gflops`), the flop-count limit.
    """
    from ..solvers.bregman import NONFINITE, OK
    from ..solvers.vonneumann import certificate, vonneumann_pairs

    n, r = (3000, 10) if quick else (60_000, 100)
    counts = ((500, 2000) if quick else (10_000, 100_000)) if counts is None else tuple(counts)
    max_iter = _default(max_iter, quick, 2000, 100_000, int)
    time_budget = _default(time_budget, quick, 30.0, 600.0)
    n_dense = _default(baseline_projections, quick, 50, 200, int)
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
            I, J = np.ascontiguousarray(pc.i, dtype=np.int64), np.ascontiguousarray(pc.j, dtype=np.int64)
            delta, bound = np.ascontiguousarray(pc.y, dtype=np.float64), np.array(pc.bound, dtype=np.float64)
            for name, stop in [("certified", "both")] + (
                [("paper rule", "dual_change")] if baseline and (quick or m <= 10_000) else []
            ):
                c0 = time.process_time()
                budget = lambda info: info["time"] > time_budget
                res = vonneumann_pairs(F, q0, I, J, delta, bound, gamma, tol, max_iter, stop=stop, callback=budget)
                cpu = time.process_time() - c0
                if res.code == NONFINITE:
                    raise RuntimeError(f"von Neumann workload: non-finite iterate at constraint {res.bad}")
                ex = res.extra
                c = certificate(F, q0, I, J, delta, bound, res.xi, res.lam, ex["W"], ex["q"], gamma)
                proj, secs = int(ex["projections"]), float(res.time)
                reached = "certificate" if stop == "both" else "dual change"
                rate = _run_row(proj, secs, 2.0 * r**3, max_iter, res.sweeps, res.code == OK, reached)
                ok = np.isfinite(c["rel_gap"]) and abs(c["rel_gap"]) <= cert_tol and c["rel_violation"] <= cert_tol
                rows.append(
                    {
                        "constraints": int(m),
                        "pairs": len(pc),
                        "solver": name,
                        "sweeps": int(res.sweeps),
                        **rate,
                        "certified": bool(ok),
                        "cpu_s": cpu,
                        "build_s": build,
                        "visits": int(ex["full_sweeps"]) * len(pc) + int(ex["visited_active"]),
                        "s_per_proj": secs / max(proj, 1),
                        "evals_per_proj": float(ex["evals_per_projection"]),
                        "objective": float(c["objective"]),
                        "rel_gap": float(c["rel_gap"]),
                        "max_rel_violation": float(c["rel_violation"]),
                        "paper_min": None if quick else _VN_PAPER_MIN.get(int(m)),
                    }
                )
            if baseline:
                dense.append(_vn_dense_row(m, F, q0, I, J, delta, bound, gamma, min(n_dense, len(pc))))
    return {
        "source": src,
        "n": n,
        "r": r,
        "gamma": gamma,
        "tol": tol,
        "time_budget": time_budget,
        "rows": rows,
        "dense": dense,
        "dgemm_gflops": dgemm_gflops(r),
        "paper_min_100k": _VN_PAPER_MIN[100_000],
    }
