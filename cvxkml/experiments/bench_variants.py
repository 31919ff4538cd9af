"""``cvxkml bench variants``: the generic certified dual solver
(:mod:`cvxkml.solvers.dual_newton`) against the exact conic model on declared variants.

Each row is one spectral kernel-learning problem on n points (Gaussian K0, so the whitened
matrix is n × n): hard forest pairs plus hinge-slack triplets (:class:`~cvxkml.sideinfo.Hinge`),
or a von Neumann problem with a trace budget.  Timed in the same run with one BLAS thread:
Clarabel (eps 1e-8, the default exact solver up to n = 40, forced here at every n), SciPy's
L-BFGS-B dual (:func:`cvxkml.declare.solve_dual`) and ``problem.solve(method="dual")``
(best of ``repeats`` after a warm-up).  Reported next to each time: the objective's relative
difference from Clarabel's and each solution's relative certificate (gap / max(1, |f|)).
"""
from __future__ import annotations

import time

import numpy as np

from ._commands import add_command, add_run_options
from ._report import finish, format_table, start

__all__ = ["variant_problem", "variant_rows", "register"]

EXACT_VN_MAX_N = 20     # the exact von Neumann model (von_neumann_entr cone) takes minutes beyond

VARIANTS = ("logdet+hinge-triplets", "vonneumann+hinge-triplets", "frobenius+hinge-triplets",
            "tracenorm+hinge-triplets", "vonneumann+trace-budget")


def variant_problem(name: str, n: int, seed: int = 0):
    """One benchmark problem (see the module doc)."""
    from ..declare import Frobenius, LogDet, SpectralKernel, TraceNorm, VonNeumann
    from ..sideinfo import Hinge, LinearConstraints
    from ..testing import variant_instance
    regs = {"logdet": LogDet(), "vonneumann": VonNeumann(), "frobenius": Frobenius(),
            "tracenorm": TraceNorm(0.5)}
    reg_name, kind = name.split("+", 1)
    m = n // 2
    prob = variant_instance(seed, n, m, regs[reg_name], kernel=True, hard_pairs=True, C=1.0)
    if kind == "trace-budget":
        cons = [prob.pairs, Hinge(prob.relative, prob.upper[len(prob.pairs):]),
                LinearConstraints(b=[0.9 * n], C=np.eye(n)[None])]
        prob = SpectralKernel(prob.M0, cons, regs[reg_name])
    return prob


def _rel(sol):
    return abs(sol.gap) / max(1.0, abs(sol.objective)) if sol.gap is not None else float("nan")


def variant_rows(quick: bool = False, repeats: int | None = None, seed: int = 0,
                 sizes=None, progress=None) -> list[dict]:
    """Rows of (variant, n, m, times, accuracies, ratios); see the module doc."""
    import warnings

    from ..declare import solve_dual
    repeats = (1 if quick else 3) if repeats is None else int(repeats)
    sizes = sizes or ((12,) if quick else (20, 60))
    rows = []
    for n in sizes:
        for name in VARIANTS:
            prob = variant_problem(name, n, seed)
            prob.solve(tol=1e-9, method="dual")                          # warm-up
            fast_t = np.inf
            for _ in range(repeats):
                t0 = time.perf_counter()
                fast = prob.solve(tol=1e-9, method="dual")
                fast_t = min(fast_t, time.perf_counter() - t0)
            if name.startswith("vonneumann") and n > EXACT_VN_MAX_N:
                exact, exact_t = None, np.nan
            else:
                t0 = time.perf_counter()
                exact = prob.solve_reference(solver="CLARABEL", accept_inaccurate=True)
                exact_t = time.perf_counter() - t0
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scipy_sol = solve_dual(prob, tol=1e-10)
            scipy_t = time.perf_counter() - t0
            ref = exact if exact is not None else fast
            scale = max(1.0, abs(ref.objective))
            row = dict(variant=name, n=n, m=prob.n_constraints, clarabel_s=exact_t,
                       clarabel_status="skipped" if exact is None else exact.status,
                       clarabel_cert=np.nan if exact is None else _rel(exact),
                       scipy_s=scipy_t, scipy_diff=abs(scipy_sol.objective - ref.objective) / scale,
                       fast_s=fast_t, fast_iters=fast.n_iter, fast_converged=fast.converged,
                       fast_cert=_rel(fast), fast_diff=abs(fast.objective - ref.objective) / scale,
                       ratio=exact_t / fast_t, scipy_ratio=scipy_t / fast_t)
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows


def _cmd(args) -> int:
    from .._config import blas_limit

    t_start = start("cvxkml bench variants", args.quick, "generic dual solver vs Clarabel and SciPy "
                    "L-BFGS-B (one BLAS thread, warmed up, best of repeats for the fast solver)")
    with blas_limit(1):
        rows = variant_rows(quick=args.quick, repeats=args.repeats, seed=args.seed,
                            progress=lambda r: print(f"  {r['variant']} n={r['n']}: done", flush=True))
    print(format_table(
        ["variant", "n", "m", "clarabel [s]", "status", "cert", "scipy dual [s]", "|Δf|",
         "dual-newton [s]", "iters", "cert", "|Δf|", "clarabel/fast", "scipy/fast"],
        [[r["variant"], str(r["n"]), str(r["m"]), f"{r['clarabel_s']:.3g}", r["clarabel_status"],
          f"{r['clarabel_cert']:.1e}", f"{r['scipy_s']:.3g}", f"{r['scipy_diff']:.1e}",
          f"{r['fast_s']:.3g}", str(r["fast_iters"]) + ("" if r["fast_converged"] else "*"),
          f"{r['fast_cert']:.1e}", f"{r['fast_diff']:.1e}", f"{r['ratio']:.3g}",
          f"{r['scipy_ratio']:.3g}"] for r in rows]))
    print("cert = relative certificate |f − g| / max(1, |f|); |Δf| = relative objective difference "
          f"from Clarabel's (from the fast solver's where Clarabel is skipped: von Neumann beyond "
          f"n = {EXACT_VN_MAX_N}); * = not certified")
    return finish("bench", t_start)


def register(commands) -> None:
    """Add ``cvxkml bench variants`` (see :mod:`._commands`)."""
    p = add_command(commands, "bench", "variants", _cmd,
                    help="generic certified dual solver vs Clarabel and SciPy on declared variants "
                         "(hinge triplets, trace budget)")
    if p is None:
        return
    add_run_options(p, "n = 12, one repeat (for tests)",
                    "fast-solver timing repeats, best of (default 3, quick 1)")
