"""``cvxkml demo``: k-NN on Wine with ITML / KernelITML, and one random problem solved fast
(Numba) and exactly (CVXPY).  The rows functions measure and never print.

The one command an installed cvxkml ships (:mod:`cvxkml._cli`); the benchmarks and the papers'
reproductions run from a source checkout (``python -m benchmarks``) and reuse
:func:`format_table` and :func:`warm_up` from here.
"""

from __future__ import annotations

import time

import numpy as np

from .datasets import load_wine_standardized
from .testing import make_random_instance

__all__ = ["demo_knn_rows", "demo_fast_vs_exact", "command", "format_table", "warm_up"]


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """Left-aligned text table, columns at least two spaces apart.

    Parameters
    ----------
    headers : list of str
        The column titles.
    rows : list of list of str
        One list of cells per row, as many as ``headers``.

    Returns
    -------
    str
        The header line, a line of dashes under each title, one line per row (no trailing blanks).
    """
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def warm_up() -> None:
    """Compile (or load from cache) the Numba Bregman loops on a tiny problem."""
    for kind in ("metric", "kernel"):
        make_random_instance(6, 3, 6, 1.0, kind=kind, random_state=0).solve(tol=1e-6, max_iter=50)


def _timed(fn, *args, **kw):
    """``(fn(*args, **kw), seconds)``."""
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def _rel_gap(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


def demo_knn_rows(n_neighbors: int = 10, n_folds: int = 2, random_state: int = 0) -> list[dict]:
    """k-NN accuracy on standardized Wine, stratified shuffled ``n_folds``-fold CV, for the
    Euclidean distance, ITML and KernelITML (Gaussian, σ = median training distance).

    Rows: method, scores (per fold), mean, spread (std over the folds), fit_s (total fit time).
    """
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier

    from .estimators.logdet import ITML, KernelITML

    warm_up()  # keep Numba compile time out of fit_s
    X, y = load_wine_standardized()
    folds = list(StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state).split(X, y))

    def kitml(Xtr, ytr):
        D = np.sum((Xtr[:, None, :] - Xtr[None, :, :]) ** 2, axis=-1)
        sigma = float(np.sqrt(np.median(D[np.triu_indices(len(Xtr), 1)])))
        return KernelITML(kernel="gaussian", kernel_params={"sigma": sigma}, gamma=1.0, random_state=random_state).fit(
            Xtr, ytr
        )

    rows = []
    for name, make in (
        ("Euclidean", lambda Xtr, ytr: None),
        ("ITML", lambda Xtr, ytr: ITML(gamma=1.0, random_state=random_state).fit(Xtr, ytr)),
        ("KernelITML (Gaussian)", kitml),
    ):
        scores, fit_s = [], 0.0
        for tr, te in folds:
            est, dt = _timed(make, X[tr], y[tr])
            fit_s += dt
            Ztr, Zte = (X[tr], X[te]) if est is None else (est.transform(X[tr]), est.transform(X[te]))
            scores.append(float(KNeighborsClassifier(n_neighbors=n_neighbors).fit(Ztr, y[tr]).score(Zte, y[te])))
        rows.append(
            {
                "method": name,
                "scores": scores,
                "mean": float(np.mean(scores)),
                "spread": float(np.std(scores)),
                "fit_s": fit_s,
            }
        )
    return rows


def demo_fast_vs_exact(n: int = 30, gamma: float = 1.0, random_state: int = 0, tol: float = 1e-10) -> dict:
    """One random slack LogDet kernel problem (n points, 2n pairs) solved by the fast Bregman
    solver (warmed up) and by the exact CVXPY model (default solver).  Returns n, pairs, gamma,
    both objectives, rel_gap, both max violations, both times, time_ratio, exact_solver, fast_sweeps.
    """
    warm_up()
    prob = make_random_instance(n, 5, 2 * n, gamma, kind="kernel", random_state=random_state)
    sf, t_fast = _timed(prob.solve, tol=tol, max_iter=1_000_000)
    se, t_exact = _timed(prob.solve_reference)
    return {
        "n": n,
        "pairs": len(prob.pairs),
        "gamma": gamma,
        "fast_objective": sf.objective,
        "exact_objective": se.objective,
        "rel_gap": _rel_gap(sf.objective, se.objective),
        "fast_max_violation": sf.max_violation,
        "exact_max_violation": se.max_violation,
        "fast_s": t_fast,
        "exact_s": t_exact,
        "time_ratio": t_fast / t_exact,
        "exact_solver": se.solver,
        "fast_sweeps": sf.n_iter,
    }


def command(args) -> int:
    """``cvxkml demo``: k-NN on Wine (Euclidean, ITML, KernelITML) and one random problem solved
    fast (Numba) and exactly (CVXPY)."""
    t_start = time.perf_counter()
    rows = demo_knn_rows(n_neighbors=10, n_folds=2, random_state=args.seed)
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

    r = demo_fast_vs_exact(n=args.n, gamma=1.0, random_state=args.seed)
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
    print(f"demo finished in {time.perf_counter() - t_start:.1f} s")
    return 0
