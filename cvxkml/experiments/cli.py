"""The ``cvxkml`` command.

    cvxkml demo                 k-NN on Wine (Euclidean, ITML, KernelITML) and one
                                random problem solved fast (Numba) and exactly (CVXPY)
    cvxkml bench itml [--quick] Bregman projection cost (Numba vs plain NumPy) and time to
                                tolerance (Numba vs CVXPY/SCS/Clarabel)
    cvxkml bench lowrank [--quick]  low-rank LogDet: projections per second (Numba vs
                                dense NumPy) and the MNIST-shape workload
    cvxkml reproduce lowrank [--quick]  Kulis et al. 2009 §7.1 (Digits, Spambase, Nursery)
    cvxkml reproduce yeung [--quick] [--part …] [--out DIR]
                                Yeung et al. (2007) Tables 1–2 and Figure 1 (J values
                                beside the paper's; PNG + JSON in DIR)
    cvxkml bench vonneumann [--quick]  von Neumann Algorithm 3: seconds per projection vs r
                                (vs dense NumPy eigh) and the MNIST-shape workload
    cvxkml reproduce spectral [--quick]  Kulis et al. 2009 Figure 5 (4-NN error, UCI)
    cvxkml reproduce trace [--quick] [--out DIR]  Jain et al. 2012 Figure 2 c–d
                                (Trace-SSIKDR vs kernel PCA on unseen digits; PNG + JSON)
    cvxkml bench pola [--quick]        POLA and LogDet-barrier SDP fast solvers vs CVXPY
                                (Clarabel/SCS): time to the same accuracy, as ratios
    cvxkml bench variants [--quick]    the generic dual solver vs Clarabel / SciPy on declared variants
    cvxkml bench kcr [sweep|exact|alg1|large|all]  KCR fast vs exact, SCS sizes, n = 500
    cvxkml reproduce kcr [--quick] [--splits N] [--grid full|reduced]
                                Sriperumbudur et al. 2008 Table 1 (k-NN vs KCR, UCI)
    cvxkml reproduce mkl [--quick] [--datasets …] [--no-table2]
                                Wang et al. 2011 Tables 1–2 (LMNN with multiple kernels)
    cvxkml --version

The numbers come from :mod:`cvxkml.experiments.bench`; this module only parses and prints.
"""
from __future__ import annotations

import argparse
import sys
import time

__all__ = ["main", "format_table"]


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """Left-aligned text table; columns separated by at least two spaces."""
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h)
              for k, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def _sec(t: float) -> str:
    return f"{t:.3g}"


# --------------------------------------------------------------------------- demo
def _cmd_demo(args) -> int:
    from . import bench

    t_start = time.perf_counter()
    rows = bench.demo_knn_rows(n_neighbors=10, n_folds=2, random_state=args.seed)
    n_folds = len(rows[0]["scores"])
    print(f"Wine (178 x 13, standardized): {n_folds}-fold stratified cross-validation "
          f"(shuffled, seed {args.seed}), 10-NN test accuracy")
    print()
    headers = ["method"] + [f"fold {k + 1}" for k in range(n_folds)] + ["mean ± spread", "fit time [s]"]
    body = [[r["method"]] + [f"{s:.3f}" for s in r["scores"]]
            + [f"{r['mean']:.3f} ± {r['spread']:.3f}", f"{r['fit_s']:.2f}"] for r in rows]
    print(format_table(headers, body))
    print("(spread = standard deviation over the folds; ITML and KernelITML: slack gamma = 1, "
          "Jain et al. pair scheme; Gaussian sigma = median training distance)")
    print()

    r = bench.demo_fast_vs_exact(n=args.n, gamma=1.0, random_state=args.seed)
    print(f"Fast vs exact: random slack LogDet kernel problem, n = {r['n']}, {r['pairs']} pairs, "
          f"gamma = {r['gamma']:g} (Numba warmed up; compile time excluded)")
    print()
    print(format_table(
        ["solver", "objective", "max violation", "time [s]"],
        [[f"fast (Bregman, {r['fast_sweeps']} sweeps)", f"{r['fast_objective']:.12g}",
          f"{r['fast_max_violation']:.2e}", _sec(r["fast_s"])],
         [f"exact ({r['exact_solver']})", f"{r['exact_objective']:.12g}",
          f"{r['exact_max_violation']:.2e}", _sec(r["exact_s"])]]))
    print()
    print(f"relative objective gap: {r['rel_gap']:.3e}")
    print(f"time ratio fast/exact: {r['time_ratio']:.3g}")
    print()
    print(f"demo finished in {time.perf_counter() - t_start:.1f} s")
    return 0


# --------------------------------------------------------------------------- bench
def _cmd_bench_itml(args) -> int:
    from . import bench

    t_start = time.perf_counter()
    mode = "quick" if args.quick else "full"
    print(f"cvxkml bench itml ({mode}): best of repeats, time.perf_counter, Numba warmed up")
    print()
    print("(a) Seconds per Bregman projection: Numba solver vs plain-NumPy loop of the same "
          "update (slack gamma = 1)")
    rows = bench.projection_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
    print(format_table(
        ["form", "size", "pairs", "projections", "rank-1 updates", "numba [s/proj]", "numpy [s/proj]",
         "numpy/numba", "max rel diff"],
        [[r["form"], ("d=" if r["form"] == "metric" else "n=") + str(r["size"]), str(r["pairs"]),
          str(r["projections"]), str(r["updates"]), f"{r['numba_s_per_proj']:.3e}", f"{r['numpy_s_per_proj']:.3e}",
          f"{r['speedup']:.3g}", f"{r['max_rel_diff']:.1e}"] for r in rows]))
    print("(projections with a zero step, a satisfied constraint with zero dual, skip the "
          "rank-1 update in both implementations)")
    print()
    print("(b) Time to tolerance, slack (gamma = 1) LogDet kernel problem with 2n pairs: "
          "fast solver (tol 1e-10) vs exact CVXPY model (eps 1e-8)")
    rows = bench.tolerance_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
    print(format_table(
        ["n", "pairs", "exact solver", "fast sweeps", "fast [s]", "exact [s]", "fast/exact", "rel obj gap",
         "fast max viol", "exact max viol", "exact status"],
        [[str(r["n"]), str(r["pairs"]), r["solver"], str(r["fast_sweeps"]), f"{r['fast_s']:.3e}", f"{r['exact_s']:.3e}",
          f"{r['ratio']:.3g}", f"{r['rel_gap']:.1e}", f"{r['fast_max_violation']:.1e}",
          f"{r['exact_max_violation']:.1e}", r["exact_status"]] for r in rows]))
    print("(exact times include building and canonicalizing the CVXPY model; Clarabel only "
          "where the matrix is at most 40 x 40: its memory grows with the square of the PSD block)")
    print()
    print(f"bench finished in {time.perf_counter() - t_start:.1f} s")
    return 0


# --------------------------------------------------------------------------- bench lowrank
def _cmd_bench_lowrank(args) -> int:
    from . import bench

    t_start = time.perf_counter()
    mode = "quick" if args.quick else "full"
    print(f"cvxkml bench lowrank ({mode}): one core (serial Numba loops; NumPy with BLAS limited "
          "to 1 thread), Numba warmed up, best of repeats, time.perf_counter")
    print()
    print("(a) Projections per second, low-rank LogDet (Kulis et al. 2009, Algorithm 2 with "
          "CHOLUPDATEMULT, 3r^2 + 2r flops per update)")
    rows = bench.lowrank_projection_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
    print(format_table(
        ["r", "flops/update", "update only [1/s]", "update GFLOP/s", "solver proj [1/s]",
         "proj GFLOP/s", "numpy dense [1/s]", "solver/numpy", "max rel diff"],
        [[str(r["r"]), str(r["flops_per_update"]), f"{r['update_per_s']:.3e}", f"{r['update_gflops']:.2f}",
          f"{r['proj_per_s']:.3e}", f"{r['proj_gflops']:.2f}", f"{r['numpy_proj_per_s']:.3e}",
          f"{r['speedup']:.3g}", f"{r['max_rel_diff']:.1e}"] for r in rows]))
    print("(update only: CHOLUPDATEMULT alone on a stream of unit vectors; solver proj: whole "
          "projections in the solver loop, w = B^T v, alpha, beta, update, one sweep over "
          + ", ".join(f"{r['projections']}" for r in rows) + " constraints, every one updating;")
    print(" proj GFLOP/s counts the update's 3r^2 + 2r flops only; numpy dense: w = B^T v, "
          "L = cholesky(I + beta w w^T), B @ L on the first "
          + ", ".join(f"{r['numpy_projections']}" for r in rows) + " of the same constraints; "
          "max rel diff of the two B)")
    print()
    res = bench.lowrank_workload_rows(quick=args.quick, data_dir=args.data_dir, seed=args.seed)
    print(f"(b) MNIST-shape workload (Kulis et al. 2009, §7.2): n = {res['n']}, r = {res['r']}, "
          f"random label pairs with 5th/95th-percentile bounds, slack gamma = {res['gamma']:g}, "
          f"tol {res['tol']:g} on the relative dual change")
    print(f"    data: {res['source']}")
    print(format_table(
        ["constraints", "pairs", "sweeps", "converged", "solver [s]", "build [s]", "total [s]",
         "projections/s", "paper (MATLAB+MEX)"],
        [[str(r["constraints"]), str(r["pairs"]), str(r["sweeps"]), "yes" if r["converged"] else "no",
          f"{r['solver_s']:.3g}", f"{r['build_s']:.3g}", f"{r['total_s']:.3g}", f"{r['proj_per_s']:.3e}",
          "-" if r["paper_min"] is None else f"{r['paper_min']:g} min"] for r in res["rows"]]))
    print("(build: constraints with percentile bounds + problem object; total: build + solve + "
          "G = G0 B; the paper's times include its own setup and were measured on 2009 hardware)")
    if not args.quick:
        big = [r for r in res["rows"] if r["constraints"] == 100_000]
        if big:
            t = big[0]["total_s"]
            print(f"issue 3 target, under 60 s for 100 000 constraints: "
                  f"{'met' if t < 60 else 'not met'} ({t:.1f} s)")
    print()
    print(f"bench finished in {time.perf_counter() - t_start:.1f} s")
    return 0


# --------------------------------------------------------------------------- reproduce lowrank
def _pm(mean: float, std: float, fmt: str = ".3f") -> str:
    return f"{mean:{fmt}} ± {std:{fmt}}"


def _cmd_reproduce_lowrank(args) -> int:
    from . import reproduce_lowrank as rl

    res = rl.reproduce_lowrank(quick=args.quick, seed=args.seed, data_dir=args.data_dir)
    st = res["settings"]
    dig, uci = st["digits"], st["uci"]
    print("cvxkml reproduce lowrank: Kulis, Sustik & Dhillon (JMLR 2009) §7.1 with the low-rank "
          f"LogDet solver{' (QUICK smoke run, not a reproduction)' if args.quick else ''}")
    print(f"constraints d <= (1 - eps) b same class, d >= (1 + eps) b different class, b = distance "
          f"under K0, eps = {st['eps']:g}; random pairs; tol {st['tol']:g} on the relative dual change; "
          f"kernel k-means: k-means++ seeding, best of {dig['n_init']} restarts; NMI = I / mean entropy")
    print()
    print(f"Digits: pendigits {{3, 8, 9}}, 317-point random sample (seed {st['digits_sample_seed']}), "
          f"rank-16 linear kernel (raw features), hard constraints; {dig['n_draws']} draws per row "
          f"(seed {st['seed']})")
    print(format_table(
        ["constraints", "NMI (k-means, 3)", "5-NN accuracy", "cycles min/med/max", "converged",
         "feasible (exact)", "median max rel viol", "solve [s]"],
        [[str(r["constraints"]), _pm(r["nmi_mean"], r["nmi_std"]), _pm(r["knn_mean"], r["knn_std"]),
          f"{r['cycles_min']}/{r['cycles_median']:g}/{r['cycles_max']}", f"{r['converged']}/{r['draws']}",
          f"{r['feasible']}/{r['draws']}" if r["feasible"] >= 0 else "-",
          f"{r['viol_median']:.1e}", f"{r['solve_s']:.2g}"] for r in res["digits"]]))
    print("(mean ± standard deviation over the draws; 5-NN: random 50/50 split, two folds, "
          "constraints drawn among the training half, kernel learned on all 317 points;")
    print(" converged: met tol; feasible: the exact CVXPY model of the same hard constraints has "
          "a feasible point; max rel viol: largest violation / bound of a run)")
    print(f"paper: NMI  {rl.PAPER['digits_nmi']}")
    print(f"paper: k-NN {rl.PAPER['digits_knn']}")
    print(f"paper: cycles {rl.PAPER['digits_cycles']}")
    print()
    conv = res["digits_convergence"]
    verdict = {True: "feasible", False: "infeasible", None: "unknown"}[conv["feasible"]]
    print(f"Digits, constraints satisfied vs cycles (Figure 1 right): one draw of {conv['constraints']} "
          f"hard constraints (exact model: {verdict}), each row solved from scratch")
    print(format_table(
        ["cycles", "sweeps run", "% satisfied (1e-3 rel)", "max rel violation"],
        [[str(r["cycles"]), str(r["sweeps_run"]), f"{r['satisfied_pct']:.1f}", f"{r['max_rel_violation']:.2e}"]
         for r in conv["rows"]]))
    print(f"paper: {rl.PAPER['digits_satisfied']}")
    for name, k, desc in (("spambase", 2, "4601 x 57 raw features, rank-57 linear kernel"),
                          ("nursery", 5, "12960 x 8, attributes coded 0, 1, ... in UCI order "
                                         "(not the loader's one-hot), rank-8 linear kernel")):
        print()
        print(f"{name.capitalize()}: {desc}, LogDet slack gamma = {st['gamma_uci']:g} (not given in the "
              f"paper), kernel k-means with {k} clusters; {uci['n_draws']} draws per row")
        print(format_table(
            ["constraints", "NMI", "cycles min/med/max", "converged", "solve [s]"],
            [[str(r["constraints"]), _pm(r["nmi_mean"], r["nmi_std"]),
              f"{r['cycles_min']}/{r['cycles_median']:g}/{r['cycles_max']}", f"{r['converged']}/{r['draws']}",
              f"{r['solve_s']:.2g}"] for r in res[name]]))
        print(f"paper: NMI    {rl.PAPER[name + '_nmi']}")
        print(f"paper: cycles {rl.PAPER[name + '_cycles']}")
    print()
    print(f"reproduction finished in {res['elapsed_s']:.1f} s")
    return 0


def _subcommands(parser: argparse.ArgumentParser, dest: str, metavar: str):
    """The subparsers action of ``parser``, created when it has none yet."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest=dest, metavar=metavar)


def reproduce_subcommands(sub):
    """The experiment subparsers of the shared ``cvxkml reproduce`` command, creating the
    command on first use.  Every paper reproduction registers itself here, from this
    module or from its own ``register_cli(sub)``."""
    rep = sub.choices.get("reproduce")
    if rep is None:
        rep = sub.add_parser("reproduce", help="paper reproductions")
        rep.set_defaults(func=lambda a: (rep.print_help(), 2)[1])
    return _subcommands(rep, "experiment", "EXPERIMENT")


def _add_lowrank_commands(sub, bsub) -> None:
    """``bench lowrank`` and ``reproduce lowrank`` (a ``reproduce`` command is created
    when no other experiment has made one)."""
    lr = bsub.add_parser("lowrank", help="low-rank LogDet (Kulis et al. 2009): projections per "
                                         "second and the MNIST-shape workload")
    lr.add_argument("--quick", action="store_true", help="small sizes (for tests)")
    lr.add_argument("--repeats", type=int, default=None,
                    help="timing repeats, best of (default 3 full, 1 quick)")
    lr.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    lr.add_argument("--data-dir", default=None,
                    help="folder holding mnist5000.npz (default: $CVXKML_DATA or ../shared/data; "
                         "without it a synthetic of the same shape is used)")
    lr.set_defaults(func=_cmd_bench_lowrank)

    rsub = reproduce_subcommands(sub)
    rl = rsub.add_parser("lowrank", help="Kulis et al. 2009 §7.1: Digits, Spambase, Nursery "
                                         "(NMI, 5-NN, cycles); a few minutes")
    rl.add_argument("--quick", action="store_true", help="tiny grids (smoke run for tests)")
    rl.add_argument("--seed", type=int, default=0, help="seed of the constraint draws (default 0)")
    rl.add_argument("--data-dir", default=None,
                    help="folder holding pendigits.csv, spambase.csv, nursery.csv "
                         "(default: $CVXKML_DATA or ../shared/data)")
    rl.set_defaults(func=_cmd_reproduce_lowrank)


# --------------------------------------------------------------------------- reproduce yeung
def _cmd_reproduce_yeung(args) -> int:
    from . import reproduce_yeung

    t_start = time.perf_counter()
    parts = ("table1", "figure1", "table2") if args.part == "all" else (args.part,)
    reproduce_yeung.run(parts, quick=args.quick, out_dir=args.out, seed=args.seed,
                        n_runs=args.runs, data_dir=args.data_dir)
    print(f"reproduce yeung finished in {time.perf_counter() - t_start:.1f} s")
    return 0


def _add_reproduce_yeung(sub) -> None:
    """Register ``cvxkml reproduce yeung`` (under a shared ``reproduce`` command)."""
    rsub = reproduce_subcommands(sub)
    y = rsub.add_parser("yeung", help="Yeung, Chang & Dai (IJCAI 2007): Table 1 (XOR), Figure 1, "
                                      "Table 2 (MNIST subset)")
    y.add_argument("--quick", action="store_true", help="small sizes and 2 runs (for tests)")
    y.add_argument("--part", choices=["all", "table1", "figure1", "table2", "scaling"], default="all",
                   help="which experiment (default all: table1, figure1, table2)")
    y.add_argument("--out", default=".", help="folder for the PNG and the JSON of numbers (default .)")
    y.add_argument("--runs", type=int, default=None, help="random S per setting (default 10, quick 2)")
    y.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    y.add_argument("--data-dir", default=None, help="offline data folder (default: $CVXKML_DATA or "
                                                    "../shared/data)")
    y.set_defaults(func=_cmd_reproduce_yeung)


# --------------------------------------------------------------------------- von Neumann / spectral
def _cmd_bench_vonneumann(args) -> int:
    from . import bench

    t_start = time.perf_counter()
    mode = "quick" if args.quick else "full"
    print(f"cvxkml bench vonneumann ({mode}): one core (serial Numba loops; NumPy with BLAS limited "
          "to 1 thread), Numba warmed up, best of repeats, time.perf_counter")
    print()
    print("(a) Seconds per projection, von Neumann (Kulis et al. 2009, Algorithm 3: secular-equation "
          "eigen update of Q + theta w w^T, W <- W U) vs dense NumPy (eigh per root-finder evaluation)")
    rows = bench.vonneumann_projection_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
    print(format_table(
        ["r", "projections", "updates", "evals/proj", "alg3 [s/proj]", "zerofinder [s/proj]",
         "zerofinder/proj", "numpy proj", "numpy evals/proj", "numpy [s/proj]", "numpy/alg3",
         "max rel diff"],
        [[str(r["r"]), str(r["projections"]), str(r["updates"]), f"{r['evals_per_proj']:.2f}",
          f"{r['s_per_proj']:.3e}", f"{r['zerofinder_s']:.3e}", f"{r['rootfinder_share']:.2f}",
          str(r["numpy_projections"]), f"{r['numpy_evals_per_proj']:.2f}", f"{r['numpy_s_per_proj']:.3e}",
          f"{r['speedup']:.3g}", f"{r['max_rel_diff']:.1e}"] for r in rows]))
    print("(K0 = G0 G0^T of rank r, slack gamma = 1, pairs constrained to d <= 0.75b then d >= 1.25b so "
          "every projection updates; evals/proj: evaluations of h(theta) per projection (paper: 'rarely "
          "more than six');")
    print(" zerofinder: the root finder alone for 20 constraints from the final state, its share of a "
          "whole projection in the next column; numpy: the same projections, eigh of diag(q) + theta w w^T "
          "per evaluation then W @ U,")
    print(" on the first 'numpy proj' constraints; max rel diff: max |X_alg3 - X_numpy| / max |X_numpy| "
          "after those projections)")
    print()
    res = bench.vonneumann_workload_rows(quick=args.quick, data_dir=args.data_dir, seed=args.seed,
                                         counts=args.constraints, time_budget=args.budget)
    print(f"(b) MNIST-shape workload (Kulis et al. 2009, §7.2), von Neumann min D_vN(K, K0), "
          f"K0 = G0 G0^T: n = {res['n']}, r = {res['r']}, random label pairs with 5th/95th-percentile "
          f"bounds, slack gamma = {res['gamma']:g}, tol {res['tol']:g} on the relative dual change, "
          f"solver stopped after {res['time_budget']:g} s")
    print(f"    data: {res['source']}")
    print(format_table(
        ["constraints", "pairs", "sweeps", "converged", "dual change", "solver [s]", "build [s]",
         "s/proj", "evals/proj", "s/sweep", "paper (MATLAB)"],
        [[str(r["constraints"]), str(r["pairs"]), str(r["sweeps"]), "yes" if r["converged"] else "no",
          f"{r['dual_change']:.2e}", f"{r['solver_s']:.3g}", f"{r['build_s']:.3g}", f"{r['s_per_proj']:.3e}",
          f"{r['evals_per_proj']:.2f}", f"{r['sweep_s']:.3g}",
          "-" if r["paper_min"] is None else f"{r['paper_min']:g} min"] for r in res["rows"]]))
    ex = res["extrapolated"]
    print("(build: constraints with percentile bounds + F = U, q0 = log eig(K0) from the r x r Gram "
          "matrix; the paper's times were measured on 2009 hardware)")
    line = (f"extrapolated to {ex['constraints']} constraints at n = {res['n']}, r = {res['r']}: "
            f"{ex['sweep_s']:.3g} s per sweep (median s/proj above x {ex['constraints']})")
    if ex["total_s"] is not None:
        line += (f"; x {ex['assumed_sweeps']} sweeps (those of the largest converged run above, an "
                 f"assumption) = {ex['total_s']:.3g} s = {ex['total_s'] / 60:.3g} min")
    print(line + f"; paper {res['paper_min_100k']:g} min; issue target 5 min")
    print()
    print(f"bench finished in {time.perf_counter() - t_start:.1f} s")
    return 0


def _cmd_reproduce_spectral(args) -> int:
    import numpy as np

    from . import reproduce_spectral as rs

    res = rs.reproduce_spectral(quick=args.quick, seed=args.seed, data_dir=args.data_dir,
                                n_repeats=args.repeats)
    st = res["settings"]
    print("cvxkml reproduce spectral: Kulis, Sustik & Dhillon (JMLR 2009) §7.2, Figure 5 — k-NN (k = 4) "
          f"error with learned metrics{' (QUICK smoke run, not a reproduction)' if args.quick else ''}")
    print(f"{st['n_repeats']} x stratified two-fold CV (seed {st['seed']}); features standardized on the "
          "training fold; 40c^2 random label pairs, bounds at the 5th/95th percentiles of the squared "
          "training distances;")
    gsel = (f"gamma fixed to {st['grid'][0]:g} (no inner CV)" if len(st["grid"]) == 1 else
            f"gamma from {{{', '.join(f'{g:g}' for g in st['grid'])}}} by an inner stratified two-fold "
            "CV on each training fold")
    print(f"{gsel}; solver tol {st['tol']:g} (relative dual change), at most {st['max_sweeps']} sweeps")
    print("LogDet = ITML on the standardized features; von Neumann = VonNeumannKernel, D_vN(K, K0) on the "
          "linear kernel K0 = X X^T (Kulis et al.'s problem), mapped to new points by W^1/2, "
          "K = X W X^T")
    print()
    names = {"euclidean": "Euclidean", "logdet": "LogDet", "vonneumann": "von Neumann"}
    body = []
    for r in res["rows"]:
        g = r["gammas"]
        if g:
            vals, cnt = np.unique(g, return_counts=True)
            gtxt = ", ".join(f"{v:g}:{c}" for v, c in zip(vals, cnt))
        else:
            gtxt = "-"
        body.append([r["dataset"], f"{r['n']}x{r['d']}", str(r["classes"]), names[r["method"]],
                     _pm(r["mean"], r["std"]), gtxt,
                     f"{r['pairs']:.0f}" if r["fits"] else "-", f"{r['sweeps']:g}" if r["fits"] else "-",
                     f"{r['converged']}/{r['fits']}" if r["fits"] else "-", f"{r['fit_s']:.1f}"])
    print(format_table(["dataset", "n x d", "classes", "method", "4-NN error", "gamma chosen (value:folds)",
                        "pairs", "sweeps (median)", "converged", "time [s]"], body))
    print("(error: mean ± std over the repeats of each repeat's two-fold mean error; pairs: constraints "
          "after removing duplicates; sweeps and converged: the final fit of each fold; time includes "
          "the inner CV)")
    print(f"paper: {rs.PAPER['figure5']}")
    print(f"paper: {rs.PAPER['claim']}")
    print("paper: Soybean not available offline, so left out; MCML and LMNN not run")
    print()
    print(f"reproduction finished in {res['elapsed_s']:.1f} s")
    return 0


def _add_spectral_commands(sub, bsub) -> None:
    """``bench vonneumann`` and ``reproduce spectral`` (the ``reproduce`` command is reused
    when another experiment made it)."""
    vn = bsub.add_parser("vonneumann", help="von Neumann Algorithm 3 (Kulis et al. 2009): seconds per "
                                            "projection vs r, vs dense NumPy, and the MNIST-shape workload")
    vn.add_argument("--quick", action="store_true", help="small sizes (for tests)")
    vn.add_argument("--repeats", type=int, default=None,
                    help="timing repeats, best of (default 3 full, 1 quick)")
    vn.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    vn.add_argument("--constraints", type=int, nargs="+", default=None,
                    help="constraint counts of the MNIST-shape workload (default 10000; quick 500 2000)")
    vn.add_argument("--budget", type=float, default=None,
                    help="seconds after which a workload solve stops (default 1800, quick 30)")
    vn.add_argument("--data-dir", default=None,
                    help="folder holding mnist5000.npz (default: $CVXKML_DATA or ../shared/data; "
                         "without it a synthetic of the same shape is used)")
    vn.set_defaults(func=_cmd_bench_vonneumann)

    rsub = reproduce_subcommands(sub)
    sp = rsub.add_parser("spectral", help="Kulis et al. 2009 Figure 5: 4-NN error on Wine, Ionosphere, "
                                          "Iris, Balance (Euclidean, LogDet, von Neumann)")
    sp.add_argument("--quick", action="store_true", help="one repeat, gamma = 1 (smoke run for tests)")
    sp.add_argument("--repeats", type=int, default=None, help="two-fold CV repeats (default 5, quick 1)")
    sp.add_argument("--seed", type=int, default=0, help="seed of splits and constraints (default 0)")
    sp.add_argument("--data-dir", default=None,
                    help="folder holding ionosphere.csv and balance.csv (default: $CVXKML_DATA or "
                         "../shared/data)")
    sp.set_defaults(func=_cmd_reproduce_spectral)


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="cvxkml", description="Convex metric and kernel learning: demos and benchmarks.")
    parser.add_argument("--version", action="version", version=f"cvxkml {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="k-NN on Wine with ITML / KernelITML, and fast vs exact "
                                       "on one random problem (well under a minute)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--n", type=int, default=30,
                      help="size of the random kernel problem (default 30)")
    demo.set_defaults(func=_cmd_demo)

    bench = sub.add_parser("bench", help="benchmarks")
    bsub = bench.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    itml = bsub.add_parser("itml", help="LogDet / ITML solvers: per-projection cost and time "
                                        "to tolerance")
    itml.add_argument("--quick", action="store_true", help="small sizes and repeats (for tests)")
    itml.add_argument("--repeats", type=int, default=None,
                      help="timing repeats, best of (default 5 / 3 full, 2 / 1 quick)")
    itml.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    itml.set_defaults(func=_cmd_bench_itml)
    _add_lowrank_commands(sub, bsub)
    bench.set_defaults(func=lambda a: (bench.print_help(), 2)[1])
    _add_reproduce_yeung(sub)
    _add_spectral_commands(sub, bsub)
    from .reproduce_trace import register_cli as _add_reproduce_trace
    _add_reproduce_trace(sub)
    from .reproduce_kcr import register_cli as _add_reproduce_kcr
    _add_reproduce_kcr(sub)
    from .bench_pola import register_cli as _add_bench_pola
    _add_bench_pola(bsub)
    from .bench_kcr import register_cli as _add_bench_kcr
    _add_bench_kcr(bsub)
    from .bench_variants import register_cli as _add_bench_variants
    _add_bench_variants(bsub)
    from .bench_exact import register_cli as _add_bench_exact
    _add_bench_exact(bsub)
    from .reproduce_mkl import register_cli as _add_reproduce_mkl
    _add_reproduce_mkl(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
