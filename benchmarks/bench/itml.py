"""``python -m benchmarks bench itml``: seconds per Bregman projection of the LogDet / ITML solvers against a
plain-NumPy loop of the same update, and their time to tolerance against the exact CVXPY model.

The rows functions measure and never print; times are :func:`time.perf_counter`, best of
``repeats``, after a Numba warm-up.  The plain-NumPy baselines (``numpy_*``) run the solvers' own
update formulas, so that they differ from the Numba loops only in how they run.
"""

from __future__ import annotations

import numpy as np

from cvxkml._demo import warm_up
from cvxkml.solvers.bregman import BENCH_KERNELS as BREGMAN_KERNELS
from cvxkml.testing import make_random_instance

from .._report import columns, finish, start
from .._runner import best_of as _best_of
from .._runner import default as _default
from .._runner import quiet

__all__ = ["numpy_sweeps_metric", "numpy_sweeps_kernel", "warm_up", "projection_rows", "tolerance_rows", "command"]

#: Algorithm 1's projection (alpha, beta, new xi): bregman's own formula run as plain Python
_numpy_project = BREGMAN_KERNELS["project"].py_func


def _rel_gap(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


def _numpy_step(p, c, delta, xi, lam, gamma) -> float:
    """Algorithm 1 at constraint ``c`` with distance p: updates ``xi[c]``, ``lam[c]``; returns β."""
    if not p > 0.0:
        raise FloatingPointError(f"non-positive distance at constraint {c}")
    alpha, beta, xi[c] = _numpy_project(p, delta[c], xi[c], lam[c], gamma)
    lam[c] -= alpha
    return beta


def _numpy_update(M, u, p, c, delta, xi, lam, gamma) -> int:
    """One projection given u = M z and p = zᵀ M z: ``M ← M + β u uᵀ`` in place unless β = 0;
    1 when M was updated, else 0."""
    beta = _numpy_step(p, c, delta, xi, lam, gamma)
    if beta == 0.0:
        return 0
    M += beta * np.outer(u, u)
    return 1


def numpy_sweeps_metric(W, V, delta, xi, lam, gamma, n_sweeps):
    """``n_sweeps`` cyclic Bregman sweeps on a d × d Mahalanobis matrix, in plain NumPy.

    Per constraint c (v = V[c]): p = vᵀWv, (α, β, ξ_c) by Algorithm 1, λ_c ← λ_c − α,
    W ← W + β (Wv)(Wv)ᵀ (skipped when β = 0, as in the Numba loop).  Updates ``W``, ``xi``,
    ``lam`` in place (``gamma = inf``: hard constraints); returns the rank-one update count.
    """
    updates = 0
    for _ in range(n_sweeps):
        for c in range(V.shape[0]):
            Wv = W @ V[c]
            updates += _numpy_update(W, Wv, float(V[c] @ Wv), c, delta, xi, lam, gamma)
    return updates


def numpy_sweeps_kernel(K, I, J, delta, xi, lam, gamma, n_sweeps):
    """:func:`numpy_sweeps_metric` on an n × n kernel: Kz = K[i] − K[j], p = Kz_i − Kz_j,
    K ← K + β (Kz)(Kz)ᵀ.  Returns the rank-one update count."""
    updates = 0
    for _ in range(n_sweeps):
        for c in range(I.shape[0]):
            i, j = I[c], J[c]
            Kz = K[i] - K[j]
            updates += _numpy_update(K, Kz, float(Kz[i] - Kz[j]), c, delta, xi, lam, gamma)
    return updates


def _projection_case(kind: str, size: int, n_proj: int, repeats: int, seed: int) -> dict:
    if kind == "metric":
        n_points = max(2 * size, 60)
        m = min(n_proj, n_points * (n_points - 1) // 2, 2000)
        prob = make_random_instance(n_points, size, m, 1.0, kind="metric", random_state=seed)
        V0 = np.ascontiguousarray(prob.X[prob.pairs.i] - prob.X[prob.pairs.j])
    else:
        prob = make_random_instance(size, 5, min(n_proj, 2 * size), 1.0, kind="kernel", random_state=seed)
    P = prob.pairs
    sweeps = max(1, int(np.ceil(n_proj / len(P))))
    total = sweeps * len(P)
    delta, gamma = np.ascontiguousarray(P.y, dtype=float), float(prob.gamma)
    where = (V0,) if kind == "metric" else (P.i, P.j)
    out = {}

    def run(numba: bool):
        M, xi, lam = np.array(prob.M0, dtype=float, order="C"), np.array(P.bound, dtype=float), np.zeros(len(P))
        if numba:
            out["numba"] = M, BREGMAN_KERNELS[f"sweeps_{kind}"](M, *where, delta, xi, lam, gamma, 0.0, sweeps)
        else:
            fn = numpy_sweeps_metric if kind == "metric" else numpy_sweeps_kernel
            out["updates"], out["numpy"] = fn(M, *where, delta, xi, lam, gamma, sweeps), M

    run(True)  # compile / load, untimed
    t_numba = _best_of(lambda: run(True), repeats)
    t_numpy = _best_of(lambda: run(False), repeats)
    M_nb, (done, _change, code, _bad) = out["numba"]
    if done != sweeps:
        raise RuntimeError(f"Numba loop stopped early (code {code}) in the {kind} benchmark.")
    return {
        "form": kind,
        "size": int(size),
        "pairs": len(P),
        "projections": int(total),
        "updates": int(out["updates"]),
        "numba_s_per_proj": t_numba / total,
        "numpy_s_per_proj": t_numpy / total,
        "speedup": t_numpy / t_numba,
        "max_rel_diff": float(np.max(np.abs(M_nb - out["numpy"])) / max(1.0, np.max(np.abs(out["numpy"])))),
    }


def projection_rows(quick: bool = False, repeats: int | None = None, seed: int = 0) -> list[dict]:
    """Seconds per Bregman projection, Numba vs plain NumPy: metric form at d = 4, 13, 64, kernel
    form at n = 100, 1000 (``quick``: d = 4, 13, n = 100, fewer projections and repeats).

    Both run the same whole sweeps over the same pairs (slack γ = 1) from the same start;
    a projection with β = 0 skips the rank-one update in both (``updates`` counts those done).
    Columns: form, size, pairs, projections, updates, numba_s_per_proj, numpy_s_per_proj,
    speedup (numpy / numba), max_rel_diff (of the resulting matrices).
    """
    warm_up()
    cases = (
        [("metric", 4, 400), ("metric", 13, 400), ("kernel", 100, 200)]
        if quick
        else [
            ("metric", 4, 20_000),
            ("metric", 13, 20_000),
            ("metric", 64, 10_000),
            ("kernel", 100, 4_000),
            ("kernel", 1000, 400),
        ]
    )
    repeats = _default(repeats, quick, 2, 5, int)
    return [_projection_case(kind, size, n_proj, repeats, seed) for kind, size, n_proj in cases]


def tolerance_rows(
    quick: bool = False,
    repeats: int | None = None,
    seed: int = 0,
    tol: float = 1e-10,
    eps: float = 1e-8,
    gamma: float = 1.0,
) -> list[dict]:
    """Time to tolerance of the fast Bregman solver vs the exact CVXPY model on the slack LogDet
    kernel problem with 2n random pairs, n = 20, 40, 80 (``quick``: 10, 20).

    The exact model runs with SCS (eps ``eps``) and, where its memory allows
    (``Problem.clarabel_max_size``), Clarabel; times are the best of ``repeats`` calls of
    ``solve`` resp. ``solve_reference`` (model build included).  Columns: n, pairs, solver,
    fast_s, exact_s, ratio, fast_objective, exact_objective, rel_gap, fast_max_violation,
    exact_max_violation, exact_status, fast_sweeps.
    """
    from cvxkml.declare.problem import Problem

    warm_up()
    repeats = _default(repeats, quick, 1, 3, int)
    rows = []
    for n in (10, 20) if quick else (20, 40, 80):
        prob = make_random_instance(n, 5, 2 * n, gamma, kind="kernel", random_state=seed + n)
        out = {}
        t_fast = _best_of(lambda: out.update(fast=prob.solve(tol=tol, max_iter=1_000_000)), repeats)
        sf = out["fast"]
        for solver in ["SCS"] + (["CLARABEL"] if prob.T.shape[1] <= Problem.clarabel_max_size else []):
            t_exact = _best_of(
                lambda: out.update(exact=quiet(prob.solve_reference, solver=solver, eps=eps, accept_inaccurate=True)),
                repeats,
            )
            se = out["exact"]
            rows.append(
                {
                    "n": n,
                    "pairs": len(prob.pairs),
                    "solver": solver.lower(),
                    "fast_s": t_fast,
                    "exact_s": t_exact,
                    "ratio": t_fast / t_exact,
                    "fast_objective": sf.objective,
                    "exact_objective": se.objective,
                    "rel_gap": _rel_gap(sf.objective, se.objective),
                    "fast_max_violation": sf.max_violation,
                    "exact_max_violation": se.max_violation,
                    "exact_status": se.status,
                    "fast_sweeps": sf.n_iter,
                }
            )
    return rows


def command(args) -> int:
    """``python -m benchmarks bench itml``: seconds per Bregman projection of the LogDet / ITML solvers against a
    plain-NumPy loop of the same update, and their time to tolerance.

    Returns the exit status, 0."""
    t_start = start(
        "python -m benchmarks bench itml", args.quick, "best of repeats, time.perf_counter, Numba warmed up"
    )
    print()
    print("(a) Seconds per Bregman projection: Numba solver vs plain-NumPy loop of the same update (slack gamma = 1)")
    rows = projection_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
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
    rows = tolerance_rows(quick=args.quick, repeats=args.repeats, seed=args.seed)
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
