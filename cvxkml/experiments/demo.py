"""``cvxkml demo``: k-NN on Wine (Euclidean, ITML, KernelITML) and one random problem
solved fast (Numba) and exactly (CVXPY).  The numbers come from :mod:`.bench`."""
from __future__ import annotations

import time

from ._report import finish, format_table

__all__ = ["command"]


def command(args) -> int:
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
          f"{r['fast_max_violation']:.2e}", f"{r['fast_s']:.3g}"],
         [f"exact ({r['exact_solver']})", f"{r['exact_objective']:.12g}",
          f"{r['exact_max_violation']:.2e}", f"{r['exact_s']:.3g}"]]))
    print()
    print(f"relative objective gap: {r['rel_gap']:.3e}")
    print(f"time ratio fast/exact: {r['time_ratio']:.3g}")
    print()
    return finish("demo", t_start)
