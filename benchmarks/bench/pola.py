"""``python -m benchmarks bench pola``: the POLA and LogDet-barrier SDP fast solvers (Jain et al. 2012 §5.2,
eq. 23–25) against the exact CVXPY models, time to the same accuracy, same-run ratios.

Per instance: a reference optimum f_ref from the fast solver at tol 1e-11; each CVXPY solver
(Clarabel where the whitened matrix is at most 40 × 40, SCS at ``scs_eps``) and its accuracy
acc = max(|f − f_ref| / max(1, |f_ref|), max relative violation); then the fast solver at
tol = max(acc, 1e-12), its accuracy measured the same way (column ``fast acc``).  Times:
fast solver best of ``repeats`` after an untimed warm-up; CVXPY one run (``solve_reference``:
build, canonicalization, solve; ``solve() [s]`` the part inside ``cvxpy.Problem.solve``).
Ratio = CVXPY / fast.  One BLAS thread.
"""

from __future__ import annotations

import numpy as np

from cvxkml.errors import ConvergenceWarning

from .._report import columns, finish, start
from .._runner import median_sq_distance, quiet, timed

__all__ = ["pola_instance", "sdp_instance", "compare_rows", "command"]


def pola_instance(n: int, seed: int = 0, pairs_per_point: float = 2.0):
    """Kernel POLA on a Gaussian K0 (n points in 5-D, 3 classes), about 2n random label-
    consistent pairs (feasible: K0 has full rank), b = 1 + median squared distance."""
    from cvxkml.declare.pola import POLAKernel, pola_constraints
    from cvxkml.kernels import gaussian_kernel
    from cvxkml.sideinfo import baseline_kernel

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    labels = rng.integers(0, 3, n)
    K0 = gaussian_kernel(X, sigma=float(np.sqrt(median_sq_distance(X))))
    all_i, all_j = np.triu_indices(n, 1)
    pick = rng.choice(all_i.size, size=min(int(pairs_per_point * n), all_i.size), replace=False)
    i, j = all_i[pick], all_j[pick]
    y = np.where(labels[i] == labels[j], 1.0, -1.0)
    b = 1.0 + float(np.median(baseline_kernel(K0)(i, j)))
    return POLAKernel(K0, pola_constraints(i, j, y, b))


def sdp_instance(n: int, kind: str = "mvu", gamma: float = 0.1, seed: int = 0):
    """Barrier SDP (24) in kernel form on a Gaussian K0 (n points in 5-D, median bandwidth).

    ``"mvu"``: C0 = −I ('maximize the variance', indefinite Ĉ0: phase I runs), squared
    distances on a connected 2-NN graph bounded by their values in a random 2-D layout, and
    1ᵀK1 <= 1.  ``"pd"``: C0 = BBᵀ/n + 0.1 I (no phase I), n/2 forest pairs with bounds
    0.5× (similar) / 2× (dissimilar) their baseline distance."""
    from cvxkml.declare.sdp import SDPLogDetKernel
    from cvxkml.kernels import gaussian_kernel
    from cvxkml.sideinfo import LinearConstraints, PairConstraints

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    D = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
    # K0 from separate 5-D points with the median bandwidth (a Gaussian K0 on the 2-D layout
    # with σ = 1 has condition number 4e6 at n = 20; Clarabel / SCS reached only 3e-2 / 1e-1
    # relative accuracy on the "pd" instance there)
    Y = rng.normal(size=(n, 5))
    K0 = gaussian_kernel(Y, sigma=float(np.sqrt(median_sq_distance(Y))))
    if kind == "mvu":
        E = {(a, a + 1) for a in range(n - 1)}
        for a in range(n):
            for b in np.argsort(D[a])[1:3]:
                E.add((min(a, b), max(a, b)))
        E = sorted(E)
        i = np.array([e[0] for e in E])
        j = np.array([e[1] for e in E])
        cons = [PairConstraints(i, j, np.ones(i.size), D[i, j]), LinearConstraints(b=[1.0], Z=np.ones((1, n)))]
        return SDPLogDetKernel(K0, cons, -np.eye(n), gamma)
    order = rng.permutation(n)
    i = np.array([order[t] for t in range(1, n)])
    j = np.array([order[rng.integers(0, t)] for t in range(1, n)])
    keep = rng.choice(n - 1, size=max(1, n // 2), replace=False)
    i, j = i[keep], j[keep]
    y = rng.choice([-1.0, 1.0], size=i.size)
    d0 = K0[i, i] + K0[j, j] - 2 * K0[i, j]
    B = rng.normal(size=(n, n))
    C0 = B @ B.T / n + 0.1 * np.eye(n)
    return SDPLogDetKernel(K0, PairConstraints(i, j, y, np.where(y > 0, 0.5, 2.0) * d0), C0, gamma)


def _accuracy(problem, sol, f_ref):
    err = abs(sol.objective - f_ref) / max(1.0, abs(f_ref))
    viol = problem._max_relative_violation(problem.violations(sol.matrix))
    return float(max(err, viol)), float(err), float(viol)


def _fast(problem, tol, max_iter):
    return quiet(timed, problem.solve, tol=tol, max_iter=max_iter, category=ConvergenceWarning)


def warm_up() -> None:
    """Compile the Numba kernels and load the conic solvers (never timed)."""
    for prob in (pola_instance(6, seed=1), sdp_instance(5, "mvu", 1.0, seed=1), sdp_instance(5, "pd", 1.0, seed=1)):
        _fast(prob, 1e-6, 20_000)
        prob.solve_reference(accept_inaccurate=True)
        prob.solve_reference(solver="SCS", eps=1e-4)


def compare_rows(problem, label: str, repeats: int = 3, scs_eps: float = 1e-6, max_iter: int = 200_000) -> list[dict]:
    """One row per CVXPY solver for ``problem`` (see the module doc)."""
    ref, _ = _fast(problem, 1e-11, max_iter)
    f_ref = ref.objective
    rows = []
    r = problem.T.shape[1]
    for solver in (["CLARABEL"] if r <= 40 else []) + ["SCS"]:
        head = dict(problem=label, r=r, m=problem.n_constraints, solver=solver)
        tail = dict(ref_converged=ref.converged, ref_cert=abs(ref.gap) / max(1.0, abs(f_ref)))
        kw = dict(solver=solver, accept_inaccurate=True, **({"eps": scs_eps} if solver == "SCS" else {}))
        try:
            ex, t_cvx = timed(problem.solve_reference, **kw)
        except Exception as exc:  # a failed baseline is a result, not a crash
            rows.append(dict(**head, status=f"failed: {type(exc).__name__}", **tail))
            continue
        acc, err, viol = _accuracy(problem, ex, f_ref)
        if not np.isfinite(acc):  # e.g. the returned point leaves the domain of log det
            status = f"{ex.status}, objective {ex.objective:g} at the returned point ({t_cvx:.3g} s)"
            rows.append(dict(**head, status=status, **tail))
            continue
        tol = max(acc, 1e-12)
        best, sol = np.inf, None
        for _ in range(repeats):
            s, dt = _fast(problem, tol, max_iter)
            if dt < best:
                best, sol = dt, s
        facc, ferr, fviol = _accuracy(problem, sol, f_ref)
        cvx = dict(cvx_s=t_cvx, cvx_solver_s=ex.time, cvx_iters=ex.n_iter, cvx_acc=acc, cvx_obj_err=err, cvx_viol=viol)
        fast = dict(fast_s=best, fast_iters=sol.n_iter, fast_converged=sol.converged, fast_acc=facc)
        fast.update(fast_obj_err=ferr, fast_viol=fviol, ratio=t_cvx / best)
        rows.append(
            dict(**head, status=ex.status, **cvx, tol=tol, **fast, **tail, phase1=sol.info.get("phase1_sweeps", 0))
        )
    return rows


def bench_rows(quick: bool = False, repeats: int | None = None, seed: int = 0, progress=None) -> list[dict]:
    """All rows: POLA (n = 20, 40, 80; quick 10, 20) and the barrier SDP (MVU with γ = 0.1 and
    PD C0 with γ = 1; n = 10, 20, 40; quick 8).  ``progress(row)`` is called for each row."""
    repeats = (1 if quick else 3) if repeats is None else int(repeats)
    warm_up()
    cases = [(lambda n=n: pola_instance(n, seed=seed), f"POLA n={n}") for n in ((10, 20) if quick else (20, 40, 80))]
    for n in (8,) if quick else (10, 20, 40):
        cases.append((lambda n=n: sdp_instance(n, "pd", 1.0, seed=seed), f"SDP pd γ=1 n={n}"))
        cases.append((lambda n=n: sdp_instance(n, "mvu", 0.1, seed=seed), f"SDP mvu γ=0.1 n={n}"))
    rows = []
    for make, label in cases:
        for row in compare_rows(make(), label, repeats):
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows


def _progress(row):
    if "ratio" in row:
        print(
            f"  {row['problem']}, {row['solver']}: cvxpy {row['cvx_s']:.3g} s (acc {row['cvx_acc']:.1e}), "
            f"fast {row['fast_s']:.3g} s (acc {row['fast_acc']:.1e}), ratio {row['ratio']:.3g}",
            flush=True,
        )
    else:
        print(f"  {row['problem']}, {row['solver']}: {row['status']}", flush=True)


def command(args) -> int:
    """``python -m benchmarks bench pola``: POLA (Jain et al. §5.2) and the LogDet-barrier SDP (eq. 24), fast solvers
    against CVXPY (Clarabel / SCS), time to the same accuracy.

    Returns the exit status, 0."""
    from cvxkml._config import blas_limit

    t_start = start(
        "python -m benchmarks bench pola",
        args.quick,
        "POLA and barrier-SDP fast solvers vs CVXPY, time to "
        "the same accuracy (one BLAS thread, Numba and solvers warmed up)",
    )
    with blas_limit(1):
        rows = bench_rows(quick=args.quick, repeats=args.repeats, seed=args.seed, progress=_progress)
    ok = [r for r in rows if "ratio" in r]
    print(
        columns(
            ok,
            [
                ("problem", "{problem}"),
                ("r", "{r}"),
                ("m", "{m}"),
                ("cvxpy", "{solver}"),
                ("status", "{status}"),
                ("cvxpy [s]", "{cvx_s:.3g}"),
                ("solve() [s]", "{cvx_solver_s:.3g}"),
                ("cvxpy acc", "{cvx_acc:.1e}"),
                ("fast tol", "{tol:.1e}"),
                ("fast [s]", "{fast_s:.3g}"),
                ("iters", lambda r: str(r["fast_iters"]) + ("" if r["fast_converged"] else "*")),
                ("fast acc", "{fast_acc:.1e}"),
                ("cvxpy/fast", "{ratio:.3g}"),
            ],
        )
    )
    for r in rows:
        if "ratio" not in r:
            print(f"{r['problem']}: {r['solver']} {r['status']}")
    print(
        "acc = max(relative objective error vs the fast solver at tol 1e-11, relative violation); "
        "* = fast solver not converged; reference certificates (relative |f − g|): "
        + ", ".join(f"{r['problem']} {r['ref_cert']:.1e}" for r in rows if r["solver"] == "SCS")
    )
    return finish("bench", t_start)
