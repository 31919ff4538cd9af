"""Measurements for reference/wang2011-mkl.md: the fast LMNN solver against the exact
CVXPY model on property-test-like instances (relative gap, times), the exact model's
cost as n grows, and Algorithm 1's outer-iteration counts.

``python -m cvxkml.experiments.bench_mkl [--draws N] [--json FILE]``; nothing here is used by the
library itself.
"""
from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

from ..declare.lmnn import LMNNProblem
from ..declare.mkl import alternate
from ..errors import ConvergenceWarning, SolverError
from ..kernels import Kernel, gaussian_kernel, polynomial_kernel
from ..mkl_kernels import KernelSet

KINDS = ("linear", "kernel-lowrank", "kernel-fullrank", "nr-mkl")


def _points(seed, n, n_classes, d, shift=0.8):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    return rng.normal(size=(n, d)) + shift * y[:, None], y


def make_problem(kind, seed, n, n_classes=2, k=2, gamma=0.5) -> LMNNProblem:
    """The instance families of tests/declare/test_lmnn.py::test_fast_matches_exact."""
    X, y = _points(seed, n, n_classes, 3 if kind == "linear" else 2)
    if kind == "linear":
        return LMNNProblem.linear(X, y, k, gamma)
    if kind == "kernel-lowrank":
        K = polynomial_kernel(X, degree=2)
        return LMNNProblem.kernel(K / np.mean(np.diag(K)), y, k, gamma)
    if kind == "kernel-fullrank":
        return LMNNProblem.kernel(gaussian_kernel(X, sigma=1.0), y, k, gamma)
    Ks = [X @ X.T, polynomial_kernel(X, degree=2)]
    return LMNNProblem.multiple_kernels([K / np.mean(np.diag(K)) for K in Ks], y, k, gamma)


def gap_sweep(draws: int = 10, tol: float = 1e-5, seed0: int = 0) -> list[dict]:
    rows = []
    for kind in KINDS:
        for s in range(draws):
            rng = np.random.default_rng(seed0 + s)
            n = int(rng.integers(8, 15))
            c = int(rng.integers(2, 4))
            k = 1 if n < 3 * c else 2
            prob = make_problem(kind, seed0 + s, n, c, k, float(rng.choice([0.25, 0.5, 0.75])))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                fast = prob.solve(tol=tol)
            try:
                exact = prob.solve_reference(accept_inaccurate=True)
            except SolverError:
                exact = prob.solve_reference(solver="SCS", eps=1e-8, accept_inaccurate=True)
            scale = max(1.0, abs(exact.objective))
            rows.append(dict(kind=kind, n=n, classes=c, k=k, triplets=prob.triplets.n_triplets,
                             converged=bool(fast.converged), iterations=int(fast.n_iter),
                             rel_gap=float(abs(fast.objective - exact.objective) / scale),
                             certified_gap=float((fast.objective - fast.dual_value) / max(1.0, abs(fast.objective))),
                             fast_s=float(fast.time), exact_s=float(exact.time), exact_status=exact.status))
    return rows


def exact_sizes(sizes=((("kernel", 20), ("kernel", 30), ("kernel", 40), ("linear", 40), ("linear", 100)))):
    rows = []
    for kind, n in sizes:
        X, y = _points(1, n, 2, 5 if kind == "linear" else 2)
        if kind == "linear":
            prob = LMNNProblem.linear(X, y, 5)
        else:
            K = polynomial_kernel(X, degree=2)
            prob = LMNNProblem.kernel(K / np.mean(np.diag(K)) + 1e-3 * np.eye(n), y, 5)
        t0 = time.perf_counter()
        try:
            ex = prob.solve_reference(accept_inaccurate=True)
            status = ex.status
        except SolverError as exc:
            status = f"failed: {exc}"[:60]
        t_exact = time.perf_counter() - t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fast = prob.solve(tol=1e-5)
        rows.append(dict(kind=kind, n=n, rank=prob.rank, triplets=prob.triplets.n_triplets,
                         exact_s=t_exact, exact_status=status, fast_s=float(fast.time),
                         fast_converged=bool(fast.converged), fast_iterations=int(fast.n_iter)))
    return rows


def alternation_counts(draws: int = 5) -> list[dict]:
    base = [Kernel("linear"), Kernel("polynomial", {"degree": 2}), Kernel("gaussian", {"sigma": 1.5})]
    rows = []
    for s in range(draws):
        X, y = _points(100 + s, 16, 2, 3, shift=0.6)
        Ks = KernelSet(base).fit_matrices(X)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            res = alternate(Ks, y, "P", k=2, max_outer=20, tol=1e-5, lmnn_options={"max_iter": 20_000})
        F = [h["objective"] for h in res.history]
        rows.append(dict(seed=100 + s, n_outer=int(res.n_outer), converged=bool(res.converged),
                         objective_first=float(F[0]), objective_last=float(F[-1]),
                         monotone=bool(all(b <= a * (1 + 1e-5) + 1e-9 for a, b in zip(F, F[1:]))),
                         mu=[round(float(v), 4) for v in res.mu], seconds=time.perf_counter() - t0))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m cvxkml.experiments.bench_mkl")
    p.add_argument("--draws", type=int, default=10)
    p.add_argument("--json", default=None)
    p.add_argument("--parts", nargs="+", default=["gap", "sizes", "alternation"])
    a = p.parse_args(argv)
    out = {}
    if "gap" in a.parts:
        rows = gap_sweep(a.draws)
        out["gap_sweep"] = rows
        for kind in KINDS:
            r = [x for x in rows if x["kind"] == kind]
            conv = [x for x in r if x["converged"]]
            ratio = [x["exact_s"] / max(x["fast_s"], 1e-9) for x in r]
            print(f"{kind:16s} draws {len(r)} converged {len(conv)} max rel gap "
                  f"{max((x['rel_gap'] for x in conv), default=float('nan')):.2e} "
                  f"median exact/fast time {np.median(ratio):.2f}", flush=True)
    if "sizes" in a.parts:
        out["exact_sizes"] = exact_sizes()
        for x in out["exact_sizes"]:
            print(x, flush=True)
    if "alternation" in a.parts:
        out["alternation"] = alternation_counts(max(1, a.draws // 2))
        for x in out["alternation"]:
            print(x, flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
