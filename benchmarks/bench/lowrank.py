"""``python -m benchmarks bench lowrank``: projections per second of the low-rank LogDet solver (Kulis et al.
2009, Algorithm 2 with CHOLUPDATEMULT) against dense NumPy, and the MNIST-shape workload of §7.2
(shared with :mod:`.vonneumann`).  The rows functions measure and never print.
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np

from cvxkml._config import blas_limit
from cvxkml.solvers.lowrank import cholupdatemult, cholupdatemult_t

from .._report import columns, finish, start, yes_no
from .._runner import best_of as _best_of
from .._runner import default as _default
from .._runner import quiet
from .._runner import timed as _timed
from .itml import _numpy_step

__all__ = [
    "numpy_lowrank_sweep",
    "lowrank_projection_rows",
    "mnist_shape_factor",
    "lowrank_workload_rows",
    "warm_up_lowrank",
    "command",
]

_LOWRANK_SIZES = (10, 50, 100, 200)
#: Kulis et al. §7.2's minutes per constraint count (LogDet, MATLAB + MEX)
PAPER_MINUTES = {10_000: 4.8, 100_000: 11.3}
_ONE_CORE = (
    "one core (serial Numba loops; NumPy with BLAS limited to 1 thread), Numba warmed up, "
    "best of repeats, time.perf_counter"
)
#: the columns the low-rank and von Neumann workload tables share (before and after their own)
_WORKLOAD_HEAD = [
    ("constraints", "{constraints}"),
    ("pairs", "{pairs}"),
    ("solver", "{solver}"),
    ("sweeps", "{sweeps}"),
    ("stopped by", "{stop}"),
    ("certified", lambda r: yes_no(r["certified"])),
    ("time [s]", "{solver_s:.3g}"),
    ("CPU [s]", "{cpu_s:.3g}"),
    ("build [s]", "{build_s:.3g}"),
]
_WORKLOAD_TAIL = [
    ("GFLOP/s", "{gflops:.3g}"),
    ("objective", "{objective:.10g}"),
    ("max rel viol", "{max_rel_violation:.1e}"),
    ("rel gap", "{rel_gap:.1e}"),
]


def _paper_min(r) -> str:
    return "-" if r["paper_min"] is None else f"{r['paper_min']:g} min"


MNIST_HELP = (
    "folder holding mnist5000.npz (default: $CVXKML_DATA or ../shared/data; "
    "without it a synthetic of the same shape is used)"
)


def _max_rel_diff(A, B) -> float:
    """max |A − B| / max |B|."""
    return float(np.max(np.abs(A - B)) / max(1e-300, np.max(np.abs(B))))


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
    from cvxkml.solvers.lowrank import BENCH_KERNELS, PAIR

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
    from cvxkml.datasets import load_npz

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
    from cvxkml.sideinfo import PairConstraints, baseline_metric

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
    from cvxkml.solvers.bregman import NOT_CONVERGED, OK
    from cvxkml.solvers.lowrank import PAIR, lowrank_logdet

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
    from cvxkml.declare import LowRankLogDet

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
                "paper_min": PAPER_MINUTES.get(int(m)) if not quick else None,
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
    from cvxkml.declare import LowRankLogDet
    from cvxkml.sideinfo import PairConstraints

    G0 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    LowRankLogDet(G0, PairConstraints([0, 1], [1, 2], [1.0, -1.0], [1.0, 2.0]), gamma=1.0).solve(tol=1e-6, max_iter=50)


def command(args) -> int:
    """``python -m benchmarks bench lowrank``: projections per second of the low-rank LogDet solver (Kulis et al.
    2009, Algorithm 2 with CHOLUPDATEMULT) and its MNIST-shape workload.

    Returns the exit status, 0."""
    t_start = start("python -m benchmarks bench lowrank", args.quick, _ONE_CORE)
    print()
    print(
        "(a) Projections per second, low-rank LogDet (Kulis et al. 2009, Algorithm 2 with "
        "CHOLUPDATEMULT, 3r^2 + 2r flops per update)"
    )
    rows = lowrank_projection_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
    print(
        columns(
            rows,
            [
                ("r", "{r}"),
                ("flops/update", "{flops_per_update}"),
                ("cholupdatemult [1/s]", "{update_per_s:.3e}"),
                ("GFLOP/s", "{update_gflops:.2f}"),
                ("cholupdatemult_t [1/s]", "{update_t_per_s:.3e}"),
                ("t GFLOP/s", "{update_t_gflops:.2f}"),
                ("t/previous", "{update_t_speedup:.3g}"),
                ("bit-identical", lambda r: yes_no(r["update_t_identical"])),
                ("solver proj [1/s]", "{proj_per_s:.3e}"),
                ("proj GFLOP/s", "{proj_gflops:.2f}"),
                ("numpy dense [1/s]", "{numpy_proj_per_s:.3e}"),
                ("solver/numpy", "{speedup:.3g}"),
                ("max rel diff", "{max_rel_diff:.1e}"),
            ],
        )
    )
    print(
        "(cholupdatemult: Algorithm 1 on B, the previous kernel; cholupdatemult_t: the solver's "
        "kernel on R = B^T, same stream of unit vectors, beta = +1 / -0.5, reset every 100 updates;"
    )
    print(
        " solver proj: whole projections in the cyclic solver loop, w = B^T v, alpha, beta, update, "
        "one sweep over " + ", ".join(f"{r['projections']}" for r in rows) + " constraints, every one "
        "updating; proj GFLOP/s counts the update's 3r^2 + 2r flops only;"
    )
    print(
        " numpy dense: w = B^T v, L = cholesky(I + beta w w^T), B @ L on the first "
        + ", ".join(f"{r['numpy_projections']}" for r in rows)
        + " of the same constraints; "
        "max rel diff of the two B)"
    )
    print()
    res = lowrank_workload_rows(
        quick=args.quick,
        data_dir=args.data_dir,
        seed=args.seed,
        counts=args.constraints,
        baseline=not args.no_baseline,
        baseline_budget=args.baseline_budget,
    )
    print(
        f"(b) MNIST-shape workload (Kulis et al. 2009, §7.2): n = {res['n']}, r = {res['r']}, "
        f"random label pairs with 5th/95th-percentile bounds, slack gamma = {res['gamma']:g}, "
        f"tol {res['tol']:g}"
    )
    print(f"    data: {res['source']}")
    print(
        columns(
            res["rows"],
            _WORKLOAD_HEAD
            + [("projections", "{projections}"), ("projections/s", "{proj_per_s:.3e}")]
            + _WORKLOAD_TAIL
            + [("paper (MATLAB+MEX)", _paper_min)],
        )
    )
    print(
        "(certified: LowRankLogDet.solve(tol), reshuffled order + active set, stops on the dual change "
        "and the Lagrange certificate;"
    )
    print(
        " paper rule: the previous solver's schedule, lowrank_logdet(order='cyclic', active_set=False): "
        f"fixed cyclic order, dual change < tol only, stopped after {res['baseline_budget']:g} s at most;"
    )
    print(" certified: |rel gap| and max rel viol <= max(tol, 1e-6), the rule of Problem.solve;")
    print(
        " time: wall, CPU: process CPU time of the solve (the box is shared); "
        "projections/s = projections done / solver time; GFLOP/s = projections/s x (3r^2 + 2r) / 1e9 "
        "(the update's flops); objective, rel gap = (f - g(lambda)) / max(1, |f|) and max rel viol from "
        "the problem's formulas; build: constraints with percentile bounds + problem object)"
    )
    limit = [r for r in rows if r["r"] == res["r"]]
    cert = {r["constraints"]: r for r in res["rows"] if r["solver"] == "certified"}
    base = {r["constraints"]: r for r in res["rows"] if r["solver"] == "paper rule"}
    for m_, r in cert.items():
        line = f"{m_} constraints: certified {r['solver_s']:.3g} s"
        if m_ in base:
            ratio = base[m_]["solver_s"] / max(r["solver_s"], 1e-12)
            line += (
                f"; paper rule {base[m_]['solver_s']:.3g} s ({ratio:.3g}x "
                f"the time, {'certified' if base[m_]['certified'] else 'not certified'}, max rel viol "
                f"{base[m_]['max_rel_violation']:.1e})"
            )
        if limit:
            line += (
                f"; update-flop rate {r['gflops']:.3g} GFLOP/s = {r['gflops'] / limit[0]['update_t_gflops']:.2f} "
                f"of the kernel alone at r = {res['r']} ({limit[0]['update_t_gflops']:.2f} GFLOP/s)"
            )
        print(line)
    if not args.quick:
        targets = {10_000: 6.0, 100_000: 60.0}
        for m_, r in cert.items():
            if m_ in targets:
                _target_line(
                    f"{m_} constraints certified in <= {targets[m_]:g} s", r["certified"], r["solver_s"], targets[m_]
                )
    print()
    return finish("bench", t_start)


def _target_line(what: str, certified: bool, seconds: float, limit: float, extra: str = "") -> None:
    """One line: whether a speed target (certified within ``limit`` seconds) is met."""
    met = "met" if certified and seconds <= limit else "not met"
    print(f"target, {what}: {met} ({seconds:.3g} s{extra})")
