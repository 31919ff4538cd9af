"""The exact model of a user part with auxiliary variables against a hand-written CVXPY model.

A user regularizer, the alpha-power divergence f_s(x) = (x^p − p x + p − 1)/(p(p − 1)) with
p = 3/2, whose CVXPY form needs two auxiliary matrices and two LMIs (tr X^{3/2} <= tr Z
with [[Z, X], [X, W]] ⪰ 0 and [[X, W], [W, I]] ⪰ 0), on LogDet-style kernel learning with
hinge pairs.  Each model is built and solved in a fresh process (same solver, same eps, one
BLAS thread); the script prints the wall time and the peak resident memory of each, and
their ratios (cvxkml / hand-written), over several generated instances.

Run from a checkout::

    python benchmarks/aux_exact_model.py --n 20 30 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    import numpy as np, cvxpy as cp
    from cvxkml.declare import Regularizer, SpectralKernel
    from cvxkml.sideinfo import Hinge
    from cvxkml.testing import kernel_instance

    class AlphaPower(Regularizer):
        name, alpha, p = "alpha-power(1.5)", 1.0, 1.5
        def f_s(self, x):
            with np.errstate(invalid="ignore"):
                return np.where(x >= 0, (np.abs(x) ** 1.5 - 1.5 * x + 0.5) / 0.75, np.inf)
        def cvx(self, X):
            r = X.shape[0]
            Z = cp.Variable((r, r), symmetric=True)
            W = cp.Variable((r, r), symmetric=True)
            lmis = [cp.bmat([[Z, X], [X, W]]) >> 0, cp.bmat([[X, W], [W, np.eye(r)]]) >> 0]
            return (cp.trace(Z) - 1.5 * cp.trace(X) + 0.5 * r) / 0.75, lmis

    which, n, seed, solver, eps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])

    SIZE = []

    def conic_size(prob):  # rows, cols and non-zeros of the conic problem handed to the solver
        A = prob.get_problem_data(solver)[0]["A"]
        return [int(A.shape[0]), int(A.shape[1]), int(A.nnz)]

    def run(n, seed):
        K0, pc = kernel_instance(seed, n, 2 * n, hard=False)
        t0 = time.perf_counter()
        value, model = build_and_solve(K0, pc)
        seconds = time.perf_counter() - t0
        SIZE[:] = conic_size(model)  # after the clock: a second canonicalization
        return seconds, value

    def build_and_solve(K0, pc):
        if which == "cvxkml":
            problem = SpectralKernel(K0, Hinge(pc, 1.0), AlphaPower())
            sol = problem.solve_reference(solver=solver, eps=eps, allow_large=True)
            return sol.objective, problem.to_cvxpy()
        else:  # the same problem written by hand in the whitened coordinates
            w, V = np.linalg.eigh(K0)
            keep = w > 1e-10 * w.max()
            G = V[:, keep] * np.sqrt(w[keep])
            r = G.shape[1]
            X = cp.Variable((r, r), symmetric=True)
            Z = cp.Variable((r, r), symmetric=True)
            W = cp.Variable((r, r), symmetric=True)
            U = G[pc.i] - G[pc.j]
            d = cp.sum(cp.multiply(U @ X, U), axis=1)
            xi = cp.Variable(len(pc), nonneg=True)
            obj = (cp.trace(Z) - 1.5 * cp.trace(X) + 0.5 * r) / 0.75 + cp.sum(xi)
            cons = [cp.bmat([[Z, X], [X, W]]) >> 0, cp.bmat([[X, W], [W, np.eye(r)]]) >> 0, X >> 0,
                    cp.multiply(pc.y, d - pc.bound) <= xi]
            prob = cp.Problem(cp.Minimize(obj), cons)
            opts = dict(tol_gap_abs=eps, tol_gap_rel=eps, tol_feas=eps) if solver == "CLARABEL" else dict(
                eps_abs=eps, eps_rel=eps, max_iters=200000)
            prob.solve(solver=solver, **opts)
            return prob.value, prob

    run(6, 0)  # warm-up (imports, compiled kernels, CVXPY's canonicalization caches): not timed
    seconds, value = run(n, seed)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"seconds": seconds, "rss_mb": rss, "objective": float(value), "size": SIZE}))
    """
)


def fmt(size):
    """rows × cols (nnz) of a conic problem's constraint matrix."""
    return "?" if not size else f"{size[0]} × {size[1]} ({size[2]})"


def run(which, n, seed, solver, eps):
    """One build-and-solve in a fresh process: {seconds, rss_mb, objective}."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, which, str(n), str(seed), solver, str(eps)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    """Print one row per (n, seed) and the worst ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[20, 30])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--solver", default="CLARABEL")
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--repeat", type=int, default=3, help="runs per model, interleaved; the minimum is kept")
    args = ap.parse_args(argv)
    print(
        "| n | seed | cvxkml s | hand s | time ratio | cvxkml MB | hand MB | memory ratio | objective rel. diff "
        "| conic rows × cols (nnz), cvxkml / hand |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst_t = worst_m = 0.0
    for n in args.n:
        for seed in args.seeds:
            runs = {"cvxkml": [], "hand": []}
            for _ in range(args.repeat):
                for which in runs:
                    runs[which].append(run(which, n, seed, args.solver, args.eps))
            a, b = (dict(min(runs[w], key=lambda r: r["seconds"])) for w in ("cvxkml", "hand"))
            a["rss_mb"] = min(r["rss_mb"] for r in runs["cvxkml"])
            b["rss_mb"] = min(r["rss_mb"] for r in runs["hand"])
            rt, rm = a["seconds"] / b["seconds"], a["rss_mb"] / b["rss_mb"]
            worst_t, worst_m = max(worst_t, rt), max(worst_m, rm)
            diff = abs(a["objective"] - b["objective"]) / max(1.0, abs(b["objective"]))
            print(
                f"| {n} | {seed} | {a['seconds']:.2f} | {b['seconds']:.2f} | {rt:.2f} | {a['rss_mb']:.0f} | "
                f"{b['rss_mb']:.0f} | {rm:.2f} | {diff:.1e} | {fmt(a['size'])} / {fmt(b['size'])} |"
            )
    print(f"\nworst time ratio {worst_t:.2f}, worst memory ratio {worst_m:.2f} (target <= 1.2)")


if __name__ == "__main__":
    main()
