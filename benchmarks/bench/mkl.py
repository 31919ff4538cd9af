"""``python -m benchmarks bench mkl``: the MKL_P weight step
(Wang et al. eq. 15–17), the interior-point solver of :mod:`cvxkml.solvers.mkl` against the
CVXPY path beside it, same instances, same run (:func:`weight_step_rows`), and the MKL_μ step
(``MuWeightStep`` / ``lmnn_mu_step``, a CVXPY model; :func:`mu_step_rows`).
"""

from __future__ import annotations

import numpy as np

from .._report import columns, finish, start, yes_no
from .._runner import best_of, labelled_points, quiet, timed


# --------------------------------------------------------------------------- weight steps
def weight_objective(
    name: str = "sonar", n: int = 30, seed: int = 0, A: str = "I", k: int = 5, gamma: float = 0.5, data_dir=None
):
    """LMNN's weight-step objective h(P) (Wang et al. eq. 15, 18) as Algorithm 1 meets it first:
    the 20 paper kernels (:func:`~cvxkml.mkl_kernels.paper_kernels`) on a stratified sample of
    ``n`` standardized points of ``name`` (a UCI set of the data folder, or ``"synthetic"``: two
    shifted Gaussian classes in 5-D), k target neighbours from the uniform combination,
    A = I (``A="I"``) or a random PSD A (``"rand"``: B Bᵀ/n + 0.5 I, B ~ 0.3·N(0, 1))."""
    from cvxkml.datasets import load_csv_dataset
    from cvxkml.declare.mkl import LMNNWeightObjective
    from cvxkml.formulas.lmnn import LMNNTriplets
    from cvxkml.kernels import kernel_sq_distances
    from cvxkml.mkl_kernels import paper_kernels

    rng = np.random.default_rng(seed)
    if name == "synthetic":
        X, y = labelled_points(max(n, 4), 5, 2, seed, shift=0.8)
    else:
        X, y = load_csv_dataset(name, data_dir=data_dir)
        X = np.asarray(X, dtype=float)
    X = X[:, X.std(0) > 0]
    idx = np.sort(
        np.concatenate(
            [
                rng.choice(np.flatnonzero(y == c), max(2, int(round(n * np.mean(y == c)))), replace=False)
                for c in np.unique(y)
            ]
        )
    )[: max(n, 4)]
    Xs = (X[idx] - X[idx].mean(0)) / np.where(X[idx].std(0) > 0, X[idx].std(0), 1.0)
    Ks = np.array(paper_kernels().fit_matrices(Xs))
    tr = LMNNTriplets.from_labels(y[idx], k, sq_dist=kernel_sq_distances(Ks.mean(0)), small_classes="shrink")
    nn = len(idx)
    if A == "I":
        Am = np.eye(nn)
    else:
        B = rng.normal(size=(nn, nn)) * 0.3
        Am = B @ B.T / nn + 0.5 * np.eye(nn)
    return LMNNWeightObjective.from_kernels(Ks, Am, tr, gamma)


def previous_method(h) -> str:
    """The CVXPY path the interior point is compared with: the model of every hinge up to 2000
    triplets, else the CVXPY working set."""
    return "full" if h.triplets.n_triplets <= 2000 else "active-set"


def _rel_gap(sol):
    return (float(sol.gap) / max(1.0, abs(sol.objective))) if sol.gap is not None else None


def cholesky_gflops(N: int, repeats: int = 5) -> float:
    """GFLOP/s of a dense N × N Cholesky (N³/3 flops, one BLAS thread, best of ``repeats``
    batches): the flop-count limit of one interior-point iteration's Newton system."""
    from cvxkml._config import blas_limit

    rng = np.random.default_rng(0)
    M = rng.standard_normal((N, N))
    S = M @ M.T + N * np.eye(N)
    reps = max(5, int(2e8 / max(N**3 / 3.0, 1.0)))
    with blas_limit(1):
        np.linalg.cholesky(S)
        best = best_of(lambda: [np.linalg.cholesky(S) for _ in range(reps)], repeats)
    return N**3 / 3.0 * reps / best / 1e9


def weight_step_rows(
    cases=(("sonar", 30, "I", True), ("ionosphere", 30, "I", True), ("sonar", 60, "I", False)),
    data_dir=None,
    seed: int = 0,
    w: float = 10.0,
) -> list[dict]:
    """The MKL_P weight step, interior point against the CVXPY path
    (:func:`previous_method`), same h, same run, one BLAS thread, both warmed up first.

    ``cases``: (data set, n, A, run the CVXPY path too).  Per case and path: ``relax_s`` ((15)
    with W = 0, cold), ``wsolve_s`` ((15) with weight ``w``, W = UUᵀ from the interior point's
    relaxation), ``solve_s`` (the whole ``RankOneWeightStep(h).solve()``), ``n_solves``,
    ``s_per_solve``, ``objective``, ``rel_gap``, ``converged``, ``rank_one``, ``w``, ``mu``,
    ``relax_value``, ``wsolve_value``, ``max_violation``; interior point only:
    ``ipm_iterations``, ``gflops`` (iterations × N³/3 / seconds, N = m(m+1)/2 + 1, a lower bound)
    and ``cholesky_gflops`` (:func:`cholesky_gflops`).
    """
    from cvxkml._config import blas_limit
    from cvxkml.declare.mkl import RankOneWeightStep

    rows = []
    with blas_limit(1):
        h0 = weight_objective("synthetic", 8, seed)  # warm-up, untimed
        for method in ("interior-point", "full", "active-set"):
            quiet(RankOneWeightStep(h0, method=method).solve_relaxation)
        for name, n, A, old in cases:
            h = weight_objective(name, n, seed, A, data_dir=data_dir)
            N = h.m * (h.m + 1) // 2 + 1
            W = None
            for method in ("interior-point",) + ((previous_method(h),) if old else ()):
                step = RankOneWeightStep(h, method=method)
                (P, v_rel), t_rel = quiet(timed, step.solve_relaxation)
                if W is None:
                    W = RankOneWeightStep.direction(P)
                (_, v_w), t_w = quiet(timed, step.solve_relaxation, W, w)
                sol, t_s = quiet(timed, RankOneWeightStep(h, method=method).solve)
                row = dict(
                    data=name,
                    n=n,
                    A=A,
                    kernels=h.m,
                    triplets=int(h.triplets.n_triplets),
                    method=method,
                    path="interior point" if method == "interior-point" else f"CVXPY {method}",
                    relax_s=t_rel,
                    relax_value=float(v_rel),
                    wsolve_s=t_w,
                    wsolve_value=float(v_w),
                    solve_s=t_s,
                    n_solves=int(sol.n_solves),
                    s_per_solve=t_s / max(sol.n_solves, 1),
                    objective=float(sol.objective),
                    rel_gap=_rel_gap(sol),
                    converged=bool(sol.converged),
                    rank_one=bool(sol.rank_one),
                    w=sol.w,
                    mu=np.asarray(sol.mu, dtype=float),
                    max_violation=float(sol.max_violation),
                )
                ipm = sol.info.get("interior_point")
                if ipm:
                    row["ipm_iterations"] = int(ipm["iterations"])
                    row["gflops"] = ipm["iterations"] * N**3 / 3.0 / max(ipm["seconds"], 1e-12) / 1e9
                    row["cholesky_gflops"] = cholesky_gflops(N)
                rows.append(row)
    return rows


def mu_step_rows(cases=(("sonar", 30),), data_dir=None, seed: int = 0, ccp_iter: int = 3) -> list[dict]:
    """The MKL_μ step (eq. 6), a CVXPY model: one ``MuWeightStep`` solve of LMNN's convex
    majorizer at μ = 1/m (``mu_solve_s``, ``rel_gap``) and ``ccp_iter`` steps of
    ``lmnn_mu_step`` (``ccp_s``, ``ccp_s_per_solve``, h before and after); instances of
    :func:`weight_step_rows` (A = I), one BLAS thread."""
    from cvxkml._config import blas_limit
    from cvxkml.declare.mkl import LMNNMuMajorizer, MuWeightStep, lmnn_mu_step

    rows = []
    with blas_limit(1):
        h0 = weight_objective("synthetic", 8, seed)  # warm-up, untimed
        quiet(MuWeightStep(LMNNMuMajorizer(h0, np.full(h0.m, 1.0 / h0.m))).solve_reference, accept_inaccurate=True)
        for name, n in cases:
            h = weight_objective(name, n, seed, data_dir=data_dir)
            mu0 = np.full(h.m, 1.0 / h.m)
            sol, t_one = quiet(timed, MuWeightStep(LMNNMuMajorizer(h, mu0)).solve_reference, accept_inaccurate=True)
            ccp, t_ccp = quiet(timed, lmnn_mu_step, h, mu0, max_iter=ccp_iter)
            rows.append(
                dict(
                    data=name,
                    n=n,
                    kernels=h.m,
                    triplets=int(h.triplets.n_triplets),
                    mu_solve_s=t_one,
                    objective=float(sol.objective),
                    rel_gap=_rel_gap(sol),
                    ccp_steps=int(ccp.n_solves),
                    ccp_s=t_ccp,
                    ccp_s_per_solve=t_ccp / max(ccp.n_solves, 1),
                    h_start=float(h.value_mu(mu0)),
                    h_end=float(ccp.objective),
                    ccp_converged=bool(ccp.converged),
                )
            )
    return rows


def _or_dash(key: str, fmt: str):
    """A cell: ``row[key]`` in format ``fmt``, ``-`` when it is None or missing."""
    return lambda r: "-" if r.get(key) is None else f"{r[key]:{fmt}}"


def command(args) -> int:
    """``python -m benchmarks bench mkl``: the MKL_P weight step (Wang et al. 2011), interior point against the CVXPY
    path on the same instances, and the MKL_μ step.

    Returns the exit status, 0."""
    import numpy as np

    t_start = start(
        "python -m benchmarks bench mkl",
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
        rows = weight_step_rows(cases, data_dir=args.data_dir, seed=args.seed)
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
                f"target, <= 0.3 s per solve of (15) with 20 kernels: warm solves "
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
        mrows = mu_step_rows(mu_cases, data_dir=args.data_dir, seed=args.seed, ccp_iter=ccp_iter)
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
