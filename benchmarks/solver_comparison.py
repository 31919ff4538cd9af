"""Comparison curves of reference/solver-comparison.md (cvxkml.testing.compare), offline.

    CVXKML_DATA=<data folder> python benchmarks/solver_comparison.py [--out DIR]

ITML on ionosphere (a stratified sample of 60 points, 34 features, 40 label pairs, LogDet slack
γ = 1) and LMNN on ionosphere (30 points, 3 features after PCA, k = 2): cvxkml's fast solver
at growing iteration budgets and the exact model through Clarabel and SCS at growing
iteration caps; every point recomputed from the returned matrix and duals.
"""

import argparse
import json
from pathlib import Path

import numpy as np

from cvxkml.datasets import load_dataset
from cvxkml.declare import ITML, LMNNProblem
from cvxkml.sideinfo import PairConstraints, baseline_metric
from cvxkml.testing import compare, plot_comparison


def _sample(X, y, n, seed=0):
    rng = np.random.default_rng(seed)
    idx = np.concatenate([rng.choice(np.flatnonzero(y == c), n // 2, replace=False) for c in np.unique(y)])
    Xs = X[idx]
    return (Xs - Xs.mean(0)) / np.maximum(Xs.std(0), 1e-12), y[idx]


def _conic(name):
    def run(p, k):
        return (
            p.solve_reference(solver=name, accept_inaccurate=True, max_iter=k)
            if name == "CLARABEL"
            else p.solve_reference(solver=name, accept_inaccurate=True, max_iters=k)
        )

    return run


def problems():
    """{name: (problem, {solver label: solve(problem, budget)})}: ITML on 60 Ionosphere points
    and linear LMNN on 30 (3 principal components)."""
    X, y = load_dataset("ionosphere")
    Xi, yi = _sample(X, y, 60)
    pc = PairConstraints.from_labels(
        yi, baseline_metric(Xi), scheme="itml", n_constraints=40, percentiles=(5.0, 95.0), random_state=0
    )
    itml = ITML(Xi, pc, gamma=1.0)
    Xl, yl = _sample(X, y, 30, seed=1)
    U = np.linalg.svd(Xl - Xl.mean(0), full_matrices=False)[2][:3]
    lmnn = LMNNProblem.linear(Xl @ U.T, yl, 2, 0.5)
    return {
        "itml-ionosphere": (itml, {"fast (Bregman)": lambda p, k: p.solve(max_iter=k, tol=1e-12)}),
        "lmnn-ionosphere": (lmnn, {"fast (PDHG)": lambda p, k: p.solve(max_iter=k, tol=1e-9)}),
    }


def main():
    """Command line: run every solver of every problem over its budgets and write the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="reference/solver-comparison")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, (problem, fast) in problems().items():
        solvers = dict(fast, **{"CVXPY + Clarabel": _conic("CLARABEL"), "CVXPY + SCS": _conic("SCS")})
        budgets = {
            n: (
                [1, 3, 10, 30, 100, 300, 1000, 3000, 10000]
                if n.startswith("fast") or "SCS" in n
                else [1, 2, 4, 8, 16, 32, 64]
            )
            for n in solvers
        }
        rows = []
        for sname, f in solvers.items():
            rows += compare(problem, {sname: f}, budgets=budgets[sname])
        (out / f"{name}.json").write_text(json.dumps(rows, indent=1, default=float))
        try:
            import matplotlib

            matplotlib.use("Agg")
            ax = plot_comparison(rows, x="time")
            ax.set_title(name)
            ax.figure.savefig(out / f"{name}.png", dpi=110, bbox_inches="tight")
        except Exception as exc:  # noqa: BLE001 - the table is the result
            print("no plot:", exc)
        for r in rows:
            print(
                f"{name:16s} {r['solver']:18s} {r['budget']:6d} t={r['time']:.3g}s "
                f"subopt={r['suboptimality']:.3g} viol={r['violation']:.3g} gap={r['gap']} "
                f"{'' if r['error'] is None else r['error'][:90]}"
            )


if __name__ == "__main__":
    main()
