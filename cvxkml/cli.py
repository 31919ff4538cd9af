"""The ``cvxkml`` command.

    cvxkml demo                 k-NN on Wine (Euclidean, ITML, KernelITML) and one
                                random problem solved fast (Numba) and exactly (CVXPY)
    cvxkml bench itml [--quick] Bregman projection cost (Numba vs plain NumPy) and time to
                                tolerance (Numba vs CVXPY/SCS/Clarabel)
    cvxkml --version

The numbers come from :mod:`cvxkml.bench`; this module only parses and prints.
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


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    from . import __version__

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
    bench.set_defaults(func=lambda a: (bench.print_help(), 2)[1])
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
