"""Comparison curves: several solvers on one problem, suboptimality and violation against
iterations and time, measured the way benchopt does (re-run each solver at growing budgets)
and every point recomputed from what the solver returned (:func:`validate_answer`)."""

from __future__ import annotations

import time
import warnings

import numpy as np

from ..errors import InvalidInputError

__all__ = ["compare", "plot_comparison", "default_budgets"]


def default_budgets(max_iter: int = 1000, n: int = 12) -> list:
    """About ``n`` iteration budgets from 1 to ``max_iter``, geometrically spaced (unique ints)."""
    return sorted({int(round(b)) for b in np.geomspace(1, max_iter, n)})


def compare(problem, solvers: dict, budgets=None, optimum: float | None = None) -> list:
    """Run each solver at growing budgets and record its suboptimality and violation.

    Parameters
    ----------
    problem : problem
        A declared problem.
    solvers : dict name -> callable ``(problem, budget) -> answer``
        ``budget`` is an iteration count; the answer is a :class:`~cvxkml.solution.Solution`,
        a bare matrix or ``(matrix, duals)``.  E.g. cvxkml's own fast solver:
        ``{"fast": lambda p, k: p.solve(max_iter=k)}``; a conic solve ignores the budget.
    budgets : list of int, optional
        Default :func:`default_budgets` (1 … 1000).
    optimum : float, optional
        The certified optimum f*; default the objective of :func:`trusted_reference`.

    Returns
    -------
    list of dict
        One row per (solver, budget), a tidy table: ``solver``, ``budget``, ``n_iter``,
        ``time`` (s, measured here), ``objective`` (recomputed), ``suboptimality``
        (objective − f*) / S, ``violation`` (recomputed relative), ``gap`` (the answer's own
        recomputed certificate relative to max(|f|, |g|, ``objective_scale()``), or None),
        ``converged`` (the solver's claim **and** its recomputed certificate within the
        answer's ``info["gap_tol"]``, else 1e-6: a claim the certificate refutes is recorded
        False, with ``refuted`` True), ``scale_rule`` (which scale judged it), ``error`` (None,
        or why the answer failed validation; then the numbers are NaN).  S =
        max(|f*|, ``problem.objective_scale()``), floored at the smallest positive float.
        ``ConvergenceWarning`` of unconverged budgets is silenced (the rows say it).
    """
    from ._reference import relative_violation, trusted_reference
    from ._validate import validate_answer

    if not isinstance(solvers, dict) or not solvers or not all(callable(f) for f in solvers.values()):
        raise InvalidInputError("solvers must be a non-empty dict {name: callable (problem, budget) -> answer}.")
    budgets = default_budgets() if budgets is None else [int(b) for b in budgets]
    if optimum is None:
        optimum = float(trusted_reference(problem).objective)
    from ._validate import _hook

    scale = max(abs(optimum), float(_hook(problem, "objective_scale")()), 1e-300)
    rows = []
    for name, solve in solvers.items():
        for budget in budgets:
            row = {
                "solver": name,
                "budget": budget,
                "n_iter": None,
                "time": np.nan,
                "objective": np.nan,
                "suboptimality": np.nan,
                "violation": np.nan,
                "gap": None,
                "converged": False,
                "refuted": False,
                "scale_rule": None,
                "error": None,
            }
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    answer = solve(problem, budget)
                row["time"] = time.perf_counter() - t0
                # intermediate iterates may be infeasible: a negative gap is recorded, not refused
                sol = validate_answer(problem, answer, gap_rtol=np.inf)
            except Exception as exc:  # noqa: BLE001 - a broken answer is a row, not a crash
                row["time"] = time.perf_counter() - t0
                row["error"] = f"{type(exc).__name__}: {exc}"
                rows.append(row)
                continue
            cert = _hook(problem, "certificate")(
                sol.objective, sol.dual_value, sol.violations, rtol=float(sol.info.get("gap_tol", 1e-6))
            )
            row.update(
                n_iter=sol.n_iter,
                objective=sol.objective,
                converged=bool(sol.converged) and cert["certified"],
                refuted=bool(sol.converged) and not cert["certified"],
                scale_rule=cert["scale_rule"],
                suboptimality=(sol.objective - optimum) / scale,
                violation=relative_violation(problem, sol),
                gap=cert["relative_gap"],
            )
            rows.append(row)
    return rows


def plot_comparison(rows, x: str = "time", ax=None, floor: float = 1e-12):
    """Suboptimality (solid) and relative violation (dashed) of each solver against ``x``
    (``"time"`` or ``"budget"``), log scales; needs matplotlib (``pip install cvxkml[plots]``).
    Returns the matplotlib axes."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise InvalidInputError("plot_comparison needs matplotlib: pip install 'cvxkml[plots]'.") from exc
    if x not in ("time", "budget"):
        raise InvalidInputError(f"x must be 'time' or 'budget'; got {x!r}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for name in dict.fromkeys(r["solver"] for r in rows):
        pts = [r for r in rows if r["solver"] == name and r["error"] is None]
        if not pts:
            continue
        xs = [r[x] for r in pts]
        (line,) = ax.plot(xs, [max(abs(r["suboptimality"]), floor) for r in pts], "-o", ms=3, label=f"{name}")
        ax.plot(xs, [max(r["violation"], floor) for r in pts], "--", color=line.get_color(), lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time (s)" if x == "time" else "iteration budget")
    ax.set_ylabel("|f − f*| / |f*|  (dashed: violation)")
    ax.legend()
    return ax
