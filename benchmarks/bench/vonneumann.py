"""``python -m benchmarks bench vonneumann``: seconds per projection of the von Neumann Algorithm 3 (Kulis et
al. 2009) as r grows, against dense NumPy, and its MNIST-shape workload (the one of
:mod:`.lowrank`).  The rows functions measure and never print.
"""

from __future__ import annotations

import time

import numpy as np

from cvxkml._config import blas_limit

from .._report import columns, finish, start
from .._runner import best_of as _best_of
from .._runner import default as _default
from .._runner import timed as _timed
from .lowrank import (
    _ONE_CORE,
    _WORKLOAD_HEAD,
    _WORKLOAD_TAIL,
    _lowrank_pairs,
    _paper_min,
    _run_row,
    _target_line,
    _workload_pairs,
    mnist_shape_factor,
)

__all__ = [
    "vonneumann_pairs_problem",
    "numpy_vonneumann_sweep",
    "warm_up_vonneumann",
    "dgemm_gflops",
    "vonneumann_projection_rows",
    "vonneumann_workload_rows",
    "command",
]

_VN_SIZES = (10, 50, 100, 200)
_VN_PAPER_MIN = {10_000: 7.7, 100_000: 71.4}  # Kulis et al. §7.2, von Neumann, MATLAB
#: the ``violated`` rows' passes over the violated constraints after a full sweep (``violated_passes``)
_VIOLATED_PASSES = 5


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
    from cvxkml.solvers.vonneumann import narrow_bracket, safeguarded_newton_step

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
    """One sweep of Algorithm 3 in dense NumPy (the baseline of ``python -m benchmarks bench vonneumann``):
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
    from cvxkml.solvers.vonneumann import vonneumann_pairs

    vonneumann_pairs(*vonneumann_pairs_problem(3, 4, 0), 1.0, 1e-6, 5)


def _zerofinder_alone(W, q, F, I, J, bound, m):
    """ZEROFINDER alone for the first (at most 20) constraints from the state (W, q), second of
    two passes (the first compiles): (seconds, evaluations, constraints)."""
    from cvxkml.solvers.vonneumann import BENCH_KERNELS

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
    from cvxkml.solvers.vonneumann import BENCH_KERNELS, vonneumann_pairs

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
    from cvxkml.solvers.vonneumann import vonneumann_pairs

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
    evals_per_proj, gflops (× 2r³, an upper bound), cpu_gflops (the same per CPU second:
    on a shared machine wall time counts the other jobs too), objective, rel_gap,
    max_rel_violation, paper_min; rows per count also in ``violated``: the same solve stopped on
    the certificate alone with ``violated_passes`` (passes over the constraints the certificate
    finds violated after a full sweep; ``violated_passes``, ``violated_visits`` in the row, its
    visits those of the full sweeps).  Also ``dgemm_gflops`` (:func:`dgemm_gflops`, the better
    of a measurement before and one after the solves, in the same process), the flop-count
    limit.
    """
    from cvxkml.solvers.bregman import NONFINITE, OK
    from cvxkml.solvers.vonneumann import certificate, vonneumann_pairs

    n, r = (3000, 10) if quick else (60_000, 100)
    counts = ((500, 2000) if quick else (10_000, 100_000)) if counts is None else tuple(counts)
    max_iter = _default(max_iter, quick, 2000, 100_000, int)
    time_budget = _default(time_budget, quick, 30.0, 600.0)
    n_dense = _default(baseline_projections, quick, 50, 200, int)
    warm_up_vonneumann()
    cert_tol = max(tol, 1e-6)
    dgemm_before = dgemm_gflops(r)
    with blas_limit(1):
        G0, y, src = mnist_shape_factor(n, r, data_dir=data_dir, seed=seed)
        rows, dense, violated = [], [], []
        for m in counts:
            t0 = time.perf_counter()
            pc = _workload_pairs(G0, y, m, seed)
            F, q0 = _orthonormal_factor(G0)
            build = time.perf_counter() - t0
            I, J = np.ascontiguousarray(pc.i, dtype=np.int64), np.ascontiguousarray(pc.j, dtype=np.int64)
            delta, bound = np.ascontiguousarray(pc.y, dtype=np.float64), np.array(pc.bound, dtype=np.float64)
            paper = [("paper rule", "dual_change", rows)] if baseline and (quick or m <= 10_000) else []
            for name, stop, out in [("certified", "both", rows)] + paper + [("violated", "certificate", violated)]:
                c0 = time.process_time()
                budget = lambda info: info["time"] > time_budget
                kw = {"violated_passes": _VIOLATED_PASSES} if name == "violated" else {}
                res = vonneumann_pairs(
                    F, q0, I, J, delta, bound, gamma, tol, max_iter, stop=stop, callback=budget, **kw
                )
                cpu = time.process_time() - c0
                if res.code == NONFINITE:
                    raise RuntimeError(f"von Neumann workload: non-finite iterate at constraint {res.bad}")
                ex = res.extra
                c = certificate(F, q0, I, J, delta, bound, res.xi, res.lam, ex["W"], ex["q"], gamma)
                proj, secs = int(ex["projections"]), float(res.time)
                reached = "dual change" if stop == "dual_change" else "certificate"
                rate = _run_row(proj, secs, 2.0 * r**3, max_iter, res.sweeps, res.code == OK, reached)
                ok = np.isfinite(c["rel_gap"]) and abs(c["rel_gap"]) <= cert_tol and c["rel_violation"] <= cert_tol
                out.append(
                    {
                        "constraints": int(m),
                        "pairs": len(pc),
                        "solver": name,
                        "sweeps": int(res.sweeps),
                        **rate,
                        "certified": bool(ok),
                        "cpu_s": cpu,
                        "cpu_gflops": proj * 2.0 * r**3 / max(cpu, 1e-12) / 1e9,
                        "build_s": build,
                        "visits": int(ex["full_sweeps"]) * len(pc) + int(ex["visited_active"]),
                        "violated_visits": int(ex["visited_violated"]),
                        "violated_passes": int(ex["violated_passes"]),
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
        "violated": violated,
        "dense": dense,
        "dgemm_gflops": max(dgemm_before, dgemm_gflops(r)),
        "paper_min_100k": _VN_PAPER_MIN[100_000],
    }


def _rate_line(r, dgemm) -> str:
    """One workload row's seconds and GFLOP/s as fractions of the dgemm rate ``dgemm``."""
    return (
        f"{r['constraints']} constraints: {r['solver_s']:.3g} s, {r['gflops']:.3g} GFLOP/s = "
        f"{r['gflops'] / dgemm:.2f} of the dgemm rate ({r['cpu_s']:.3g} s CPU, "
        f"{r['cpu_gflops']:.3g} GFLOP/s = {r['cpu_gflops'] / dgemm:.2f} per CPU second)"
    )


def command(args) -> int:
    """``python -m benchmarks bench vonneumann``: seconds per projection of the von Neumann Algorithm 3 (Kulis et al.
    2009) as r grows, against dense NumPy, and its MNIST-shape workload.

    Returns the exit status, 0."""
    t_start = start("python -m benchmarks bench vonneumann", args.quick, _ONE_CORE)
    print()
    print(
        "(a) Seconds per projection, von Neumann (Kulis et al. 2009, Algorithm 3: secular-equation "
        "eigen update of Q + theta w w^T, W <- W U) vs dense NumPy (eigh per root-finder evaluation)"
    )
    rows = vonneumann_projection_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
    print(
        columns(
            rows,
            [
                ("r", "{r}"),
                ("projections", "{projections}"),
                ("updates", "{updates}"),
                ("evals/proj", "{evals_per_proj:.2f}"),
                ("alg3 [s/proj]", "{s_per_proj:.3e}"),
                ("zerofinder [s/proj]", "{zerofinder_s:.3e}"),
                ("zerofinder/proj", "{rootfinder_share:.3g}"),
                ("numpy proj", "{numpy_projections}"),
                ("numpy evals/proj", "{numpy_evals_per_proj:.2f}"),
                ("numpy [s/proj]", "{numpy_s_per_proj:.3e}"),
                ("numpy/alg3", "{speedup:.3g}"),
                ("max rel diff", "{max_rel_diff:.1e}"),
            ],
        )
    )
    print(
        "(K0 = G0 G0^T of rank r, slack gamma = 1, pairs constrained to d <= 0.75b then d >= 1.25b so "
        "every projection updates; evals/proj: evaluations of h(theta) per projection (paper: 'rarely "
        "more than six');"
    )
    print(
        " zerofinder: the root finder alone for 20 constraints from the final state, its share of a "
        "whole projection in the next column; numpy: the same projections, eigh of diag(q) + theta w w^T "
        "per evaluation then W @ U,"
    )
    print(
        " on the first 'numpy proj' constraints; max rel diff: max |X_alg3 - X_numpy| / max |X_numpy| "
        "after those projections)"
    )
    print()
    res = vonneumann_workload_rows(
        quick=args.quick,
        data_dir=args.data_dir,
        seed=args.seed,
        counts=args.constraints,
        time_budget=args.budget,
        baseline=not args.no_baseline,
    )
    print(
        f"(b) MNIST-shape workload (Kulis et al. 2009, §7.2), von Neumann min D_vN(K, K0), "
        f"K0 = G0 G0^T: n = {res['n']}, r = {res['r']}, random label pairs with 5th/95th-percentile "
        f"bounds, slack gamma = {res['gamma']:g}, tol {res['tol']:g}, each solve stopped after "
        f"{res['time_budget']:g} s at most"
    )
    print(f"    data: {res['source']}")
    print(
        columns(
            res["rows"],
            _WORKLOAD_HEAD
            + [
                ("visits", "{visits}"),
                ("projections", "{projections}"),
                ("projections/s", "{proj_per_s:.3e}"),
                ("evals/proj", "{evals_per_proj:.2f}"),
            ]
            + _WORKLOAD_TAIL
            + [("paper (MATLAB)", _paper_min)],
        )
    )
    print(
        "(certified: vonneumann_pairs(..., callback=budget), stops on the dual change and the dual "
        "certificate; paper rule: the same driver with stop='dual_change', the previous solver's rule;"
    )
    print(
        " certified column: certificate() of the end point, |rel gap| and max rel viol <= max(tol, 1e-6); "
        "visits: constraint visits; projections: those that ran ZEROFINDER (the rest skipped exactly);"
    )
    print(
        f" time: wall, CPU: process CPU time of the solve; projections/s = projections / time; "
        f"GFLOP/s = projections x 2r^3 / time (W <- W U at k = r, "
        f"an upper bound); the r x r dgemm alone runs at {res['dgemm_gflops']:.3g} GFLOP/s here, the "
        "flop-count limit; build: constraints + F = U, q0 = log eig(K0))"
    )
    for r in res["rows"]:
        if r["solver"] == "certified":
            print(_rate_line(r, res["dgemm_gflops"]))
    print(
        f"stopped on the certificate alone, with up to {_VIOLATED_PASSES} passes over the constraints it finds "
        "violated (relative violation > tol/2) after each full sweep (vonneumann_pairs(..., "
        "stop='certificate', violated_passes)):"
    )
    for r in res["violated"]:
        print(
            f"  {_rate_line(r, res['dgemm_gflops'])}; {r['sweeps']} full sweeps + {r['violated_passes']} "
            f"violated passes ({r['violated_visits']} visits), {r['projections']} projections, "
            f"certified {r['certified']} (rel gap {r['rel_gap']:.2g}, max rel viol {r['max_rel_violation']:.2g})"
        )
    if res["dense"]:
        print()
        print(
            "(c) Same run, same workload: the first constraints of each count from the start, one sweep, "
            "Algorithm 3 (vonneumann_pairs, tol 0) vs dense NumPy (eigh per root-finder evaluation, W @ U)"
        )
        print(
            columns(
                res["dense"],
                [
                    ("constraints", "{constraints}"),
                    ("prefix", "{prefix}"),
                    ("alg3 projections", "{projections}"),
                    ("numpy projections", "{numpy_projections}"),
                    ("alg3 [s/visit]", "{alg3_s_per_visit:.3e}"),
                    ("numpy [s/visit]", "{numpy_s_per_visit:.3e}"),
                    ("numpy/alg3", "{speedup:.3g}"),
                    ("max rel diff", "{max_rel_diff:.1e}"),
                ],
            )
        )
        print("(max rel diff: max |X_alg3 - X_numpy| / max |X_numpy| after the prefix)")
    if not args.quick:
        big = [r for r in res["rows"] if r["solver"] == "certified" and r["constraints"] == 100_000]
        if big:
            _target_line(
                "100 000 constraints run to the end in <= 5 min",
                big[0]["certified"],
                big[0]["solver_s"],
                300.0,
                f"; paper {res['paper_min_100k']:g} min",
            )
        fast = [r for r in res["violated"] if r["constraints"] == 100_000]
        if fast:
            f = fast[0]
            _target_line(
                "100 000 constraints certified in <= 30 s (certificate rule, violated passes)",
                f["certified"],
                f["solver_s"],
                30.0,
                f"; {f['cpu_s']:.3g} s CPU; {f['cpu_gflops'] / res['dgemm_gflops']:.2f} of the dgemm rate per CPU s",
            )
    print()
    return finish("bench", t_start)
