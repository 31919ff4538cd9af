"""The ``cvxkml demo``, ``bench itml``, ``bench lowrank``, ``bench vonneumann`` and ``bench mkl``
commands: the rows of :mod:`.bench` and :mod:`.bench_mkl` (which measure and never print) as
tables.
"""

from __future__ import annotations

import time

from ._report import columns, finish, format_table, start, yes_no

__all__ = ["demo_command", "itml_command", "lowrank_command", "vonneumann_command", "mkl_command"]

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


def _or_dash(key: str, fmt: str):
    """A cell: ``row[key]`` in format ``fmt``, ``-`` when it is None or missing."""
    return lambda r: "-" if r.get(key) is None else f"{r[key]:{fmt}}"


MNIST_HELP = (
    "folder holding mnist5000.npz (default: $CVXKML_DATA or ../shared/data; "
    "without it a synthetic of the same shape is used)"
)


def demo_command(args) -> int:
    """``cvxkml demo``: k-NN on Wine (Euclidean, ITML, KernelITML) and one random problem solved
    fast (Numba) and exactly (CVXPY)."""
    from . import bench

    t_start = time.perf_counter()
    rows = bench.demo_knn_rows(n_neighbors=10, n_folds=2, random_state=args.seed)
    n_folds = len(rows[0]["scores"])
    print(
        f"Wine (178 x 13, standardized): {n_folds}-fold stratified cross-validation "
        f"(shuffled, seed {args.seed}), 10-NN test accuracy"
    )
    print()
    headers = ["method"] + [f"fold {k + 1}" for k in range(n_folds)] + ["mean ± spread", "fit time [s]"]
    body = [
        [r["method"]]
        + [f"{s:.3f}" for s in r["scores"]]
        + [f"{r['mean']:.3f} ± {r['spread']:.3f}", f"{r['fit_s']:.2f}"]
        for r in rows
    ]
    print(format_table(headers, body))
    print(
        "(spread = standard deviation over the folds; ITML and KernelITML: slack gamma = 1, "
        "Jain et al. pair scheme; Gaussian sigma = median training distance)"
    )
    print()

    r = bench.demo_fast_vs_exact(n=args.n, gamma=1.0, random_state=args.seed)
    print(
        f"Fast vs exact: random slack LogDet kernel problem, n = {r['n']}, {r['pairs']} pairs, "
        f"gamma = {r['gamma']:g} (Numba warmed up; compile time excluded)"
    )
    print()

    def row(name, who):
        return [name, f"{r[who + '_objective']:.12g}", f"{r[who + '_max_violation']:.2e}", f"{r[who + '_s']:.3g}"]

    body = [row(f"fast (Bregman, {r['fast_sweeps']} sweeps)", "fast"), row(f"exact ({r['exact_solver']})", "exact")]
    print(format_table(["solver", "objective", "max violation", "time [s]"], body))
    print()
    print(f"relative objective gap: {r['rel_gap']:.3e}")
    print(f"time ratio fast/exact: {r['time_ratio']:.3g}")
    print()
    return finish("demo", t_start)


def itml_command(args) -> int:
    """``cvxkml bench itml``: seconds per Bregman projection of the LogDet / ITML solvers against a
    plain-NumPy loop of the same update, and their time to tolerance.

    Returns the exit status, 0."""
    from . import bench

    t_start = start("cvxkml bench itml", args.quick, "best of repeats, time.perf_counter, Numba warmed up")
    print()
    print("(a) Seconds per Bregman projection: Numba solver vs plain-NumPy loop of the same update (slack gamma = 1)")
    rows = bench.projection_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
    print(
        columns(
            rows,
            [
                ("form", "{form}"),
                ("size", lambda r: ("d=" if r["form"] == "metric" else "n=") + str(r["size"])),
                ("pairs", "{pairs}"),
                ("projections", "{projections}"),
                ("rank-1 updates", "{updates}"),
                ("numba [s/proj]", "{numba_s_per_proj:.3e}"),
                ("numpy [s/proj]", "{numpy_s_per_proj:.3e}"),
                ("numpy/numba", "{speedup:.3g}"),
                ("max rel diff", "{max_rel_diff:.1e}"),
            ],
        )
    )
    print(
        "(projections with a zero step, a satisfied constraint with zero dual, skip the "
        "rank-1 update in both implementations)"
    )
    print()
    print(
        "(b) Time to tolerance, slack (gamma = 1) LogDet kernel problem with 2n pairs: "
        "fast solver (tol 1e-10) vs exact CVXPY model (eps 1e-8)"
    )
    rows = bench.tolerance_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
    print(
        columns(
            rows,
            [
                ("n", "{n}"),
                ("pairs", "{pairs}"),
                ("exact solver", "{solver}"),
                ("fast sweeps", "{fast_sweeps}"),
                ("fast [s]", "{fast_s:.3e}"),
                ("exact [s]", "{exact_s:.3e}"),
                ("fast/exact", "{ratio:.3g}"),
                ("rel obj gap", "{rel_gap:.1e}"),
                ("fast max viol", "{fast_max_violation:.1e}"),
                ("exact max viol", "{exact_max_violation:.1e}"),
                ("exact status", "{exact_status}"),
            ],
        )
    )
    print(
        "(exact times include building and canonicalizing the CVXPY model; Clarabel only "
        "where the matrix is at most 40 x 40: its memory grows with the square of the PSD block)"
    )
    print()
    return finish("bench", t_start)


def lowrank_command(args) -> int:
    """``cvxkml bench lowrank``: projections per second of the low-rank LogDet solver (Kulis et al.
    2009, Algorithm 2 with CHOLUPDATEMULT) and its MNIST-shape workload.

    Returns the exit status, 0."""
    from . import bench

    t_start = start("cvxkml bench lowrank", args.quick, _ONE_CORE)
    print()
    print(
        "(a) Projections per second, low-rank LogDet (Kulis et al. 2009, Algorithm 2 with "
        "CHOLUPDATEMULT, 3r^2 + 2r flops per update)"
    )
    rows = bench.lowrank_projection_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
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
    res = bench.lowrank_workload_rows(
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
    print(f"issue 17 target, {what}: {met} ({seconds:.3g} s{extra})")


def vonneumann_command(args) -> int:
    """``cvxkml bench vonneumann``: seconds per projection of the von Neumann Algorithm 3 (Kulis et al.
    2009) as r grows, against dense NumPy, and its MNIST-shape workload.

    Returns the exit status, 0."""
    from . import bench

    t_start = start("cvxkml bench vonneumann", args.quick, _ONE_CORE)
    print()
    print(
        "(a) Seconds per projection, von Neumann (Kulis et al. 2009, Algorithm 3: secular-equation "
        "eigen update of Q + theta w w^T, W <- W U) vs dense NumPy (eigh per root-finder evaluation)"
    )
    rows = bench.vonneumann_projection_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
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
    res = bench.vonneumann_workload_rows(
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
            print(
                f"{r['constraints']} constraints: {r['solver_s']:.3g} s, {r['gflops']:.3g} GFLOP/s = "
                f"{r['gflops'] / res['dgemm_gflops']:.2f} of the dgemm rate"
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
    print()
    return finish("bench", t_start)


def mkl_command(args) -> int:
    """``cvxkml bench mkl``: the MKL_P weight step (Wang et al. 2011), interior point against the CVXPY
    path on the same instances, and the MKL_μ step.

    Returns the exit status, 0."""
    import numpy as np

    from . import bench_mkl

    t_start = start(
        "cvxkml bench mkl",
        args.quick,
        "one BLAS thread, both paths warmed up on a small instance first, time.perf_counter",
    )
    if args.quick:
        cases = [("synthetic", 12, "I", not args.no_old)]
        mu_cases, ccp_iter = [("synthetic", 10)], 1
    else:
        cases = [(d, n, "I", (not args.no_old) and n <= args.old_max_n) for d in args.datasets for n in args.n]
        mu_cases, ccp_iter = [(args.datasets[0], n) for n in args.n], 3
    if "weight-step" in args.parts:
        print()
        print(
            "(a) MKL_P weight step (Wang et al. eq. 15-17): the interior-point solver "
            "(cvxkml.solvers.mkl.weight_step_ipm) vs the CVXPY path it replaced, the same h in the same run"
        )
        rows = bench_mkl.weight_step_rows(cases, data_dir=args.data_dir, seed=args.seed)
        print(
            columns(
                rows,
                [
                    ("data", "{data}"),
                    ("n", "{n}"),
                    ("triplets", "{triplets}"),
                    ("path", "{path}"),
                    ("relaxation [s]", "{relax_s:.3g}"),
                    ("w-solve [s]", "{wsolve_s:.3g}"),
                    ("step [s]", "{solve_s:.3g}"),
                    ("solves", "{n_solves}"),
                    ("s/solve", "{s_per_solve:.3g}"),
                    ("objective", "{objective:.10g}"),
                    ("max viol", "{max_violation:.1e}"),
                    ("rel gap", _or_dash("rel_gap", ".2e")),
                    ("certified", lambda r: yes_no(r["converged"])),
                    ("w", _or_dash("w", "g")),
                    ("GFLOP/s", _or_dash("gflops", ".3g")),
                    ("Cholesky GFLOP/s", _or_dash("cholesky_gflops", ".3g")),
                ],
            )
        )
        print(
            "(20 paper kernels on n stratified standardized points, k = 5, gamma = 0.5, A = I; relaxation: "
            "(15) with W = 0, cold; w-solve: (15) with w = 10, W = U U^T from the interior point's relaxation;"
        )
        print(
            " step: RankOneWeightStep(h).solve(), the convex iteration over the w grid; s/solve = step / solves; "
            "rel gap against the relaxation's Lagrange bound; certified = rank one and gap <= tol "
            "(an untight relaxation leaves it honestly uncertified);"
        )
        print(
            " GFLOP/s: interior-point iterations x N^3/3 / its seconds, N = m(m+1)/2 + 1 (the Newton "
            "system's Cholesky only, a lower bound); Cholesky GFLOP/s: that factorization alone, the "
            "flop-count limit)"
        )
        for key in dict.fromkeys((r["data"], r["n"]) for r in rows):
            new = [r for r in rows if (r["data"], r["n"]) == key and r["method"] == "interior-point"][0]
            old = [r for r in rows if (r["data"], r["n"]) == key and r["method"] != "interior-point"]
            line = f"{key[0]} n = {key[1]}: interior point {new['s_per_solve']:.3g} s per solve"
            if old:
                o = old[0]
                rel = lambda a, b: (a - b) / max(1.0, abs(b))
                line += (
                    f"; CVXPY / interior point: relaxation {o['relax_s'] / new['relax_s']:.3g}x, w-solve "
                    f"{o['wsolve_s'] / new['wsolve_s']:.3g}x, step {o['solve_s'] / new['solve_s']:.3g}x; "
                    f"values new - old (relative): relaxation {rel(new['relax_value'], o['relax_value']):.1e}, "
                    f"w-solve {rel(new['wsolve_value'], o['wsolve_value']):.1e}, step "
                    f"{rel(new['objective'], o['objective']):.1e}; |mu_new - mu_old|_1 = "
                    f"{float(np.abs(new['mu'] - o['mu']).sum()):.1e}; same w: "
                    f"{'yes' if new['w'] == o['w'] else 'no'}"
                )
            print(line)
        if not args.quick:
            warm = max(r["wsolve_s"] for r in rows if r["method"] == "interior-point")
            print(
                f"issue 17 target, <= 0.3 s per solve of (15) with 20 kernels: warm solves "
                f"{'met' if warm <= 0.3 else 'not met'} (slowest w-solve {warm:.3g} s); cold relaxations "
                + ", ".join(
                    f"{r['data']} n = {r['n']}: {r['relax_s']:.3g} s" for r in rows if r["method"] == "interior-point"
                )
            )
    if "mu-step" in args.parts:
        print()
        print(
            "(b) MKL_mu weight step (eq. 6): MuWeightStep (CVXPY + Clarabel, no fast solver yet) on "
            "LMNN's convex majorizer at mu = 1/m, and lmnn_mu_step (convex-concave procedure)"
        )
        mrows = bench_mkl.mu_step_rows(mu_cases, data_dir=args.data_dir, seed=args.seed, ccp_iter=ccp_iter)
        print(
            columns(
                mrows,
                [
                    ("data", "{data}"),
                    ("n", "{n}"),
                    ("triplets", "{triplets}"),
                    ("one solve [s]", "{mu_solve_s:.3g}"),
                    ("rel gap", _or_dash("rel_gap", ".1e")),
                    ("CCP steps", "{ccp_steps}"),
                    ("CCP [s]", "{ccp_s:.3g}"),
                    ("s/solve", "{ccp_s_per_solve:.3g}"),
                    ("h start", "{h_start:.6g}"),
                    ("h end", "{h_end:.6g}"),
                ],
            )
        )
        print(
            "(slow: every CCP step is a conic solve over all triplets; no baseline to compare, "
            "the CVXPY model is the only path)"
        )
    print()
    return finish("bench", t_start)
