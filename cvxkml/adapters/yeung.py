"""The fast solvers of the yeung family as registered :class:`~cvxkml.declare.registry.SolverSpec`
(array-in, array-out algorithm wrapped into the fast-solver protocol).

Both problems of Yeung, Chang & Dai (2007) are QPs with one equality and a closed form, so
their "solvers" take no iteration (``max_iter`` is accepted and ignored, ``sweeps`` = 0):

* :func:`solve_reweighting` — :class:`~cvxkml.declare.yeung.SpectralReweighting`, eq. 4:
  β = c D⁻¹1 / (1ᵀD⁻¹1) and ρ = 2c / (1ᵀD⁻¹1);
* :func:`solve_embedding_weights` — :class:`~cvxkml.declare.yeung.EmbeddingWeightProblem`,
  eq. 12: G ŵ = 1, w = ŵ / 1ᵀŵ and a = 2 / 1ᵀG⁻¹1.

The :class:`~cvxkml.solvers.result.FastResult` (the family's protocol, which a user's solver
registered with ``register_fast_solver`` returns too): ``matrix`` the primal vector (β of
length q, or w of length K), ``lam`` the scalar multiplier of the equality as a vector of one
(ρ, or a); ``extra["stopped"]`` when the callback asked to stop.  The problem recomputes the
objective, the violation and the Lagrange bound from them
(:meth:`SpectralReweighting.solution_from_fast
<cvxkml.declare.yeung.SpectralReweighting.solution_from_fast>`).
"""

from __future__ import annotations

import time

import numpy as np

from ..declare import registry
from ..declare.yeung import EmbeddingWeightProblem, SpectralReweighting
from ..formulas.yeung import beta_closed_form, equality_multiplier, lle_weights
from ..solution import OK, FastResult

__all__ = ["solve_reweighting", "solve_embedding_weights", "SPECS"]


def _closed_form_result(problem, x, mult, elapsed, scale, request) -> FastResult:
    """The FastResult of a closed form; the callback (if any) is told its certificate once
    (``iteration`` 0, ``objective``, relative ``gap``, relative ``violation``, by the
    problem's own formulas) and a truthy return marks it stopped."""
    stopped = False
    callback = None if request is None else request.callback
    if callback is not None:
        obj = float(problem.objective(x))
        gap = obj - float(problem.dual_value(mult))
        rel_gap = abs(gap) / max(1.0, abs(obj)) if np.isfinite(gap) else np.inf
        rel_viol = float(problem.violations(x)[0]) / scale
        stopped = bool(callback({"iteration": 0, "objective": obj, "gap": rel_gap, "violation": rel_viol}))
    return FastResult(
        matrix=np.asarray(x, dtype=float),
        lam=np.array([float(mult)]),
        xi=np.zeros(0),
        sweeps=0,
        stop_value=0.0,
        code=OK,
        bad_index=-1,
        time=elapsed,
        extra={"solver": "closed-form", "status": "closed form", "stopped": stopped},
    )


def solve_reweighting(problem, tol, max_iter, request=None) -> FastResult:
    """Eq. 4 on ``problem.d`` (D_S, regularized when singular) and ``problem.c``; ``tol`` and
    ``max_iter`` are not needed by a closed form."""
    t0 = time.perf_counter()
    beta = beta_closed_form(problem.d, problem.c)
    rho = equality_multiplier(problem.d, problem.c)
    return _closed_form_result(problem, beta, rho, time.perf_counter() - t0, max(1.0, problem.c), request)


def solve_embedding_weights(problem, tol, max_iter, request=None) -> FastResult:
    """Eq. 12 on ``problem.G`` (the ε rule of :func:`~cvxkml.formulas.yeung.lle_weights`) and
    the multiplier from ``problem.G_eff``; ``tol`` and ``max_iter`` are not needed."""
    t0 = time.perf_counter()
    w, _ = lle_weights(problem.G[None], problem.epsilon)
    w = w[0]
    a = 2.0 / float(np.sum(np.linalg.solve(problem.G_eff, np.ones(problem.n_neighbors))))
    return _closed_form_result(problem, w, a, time.perf_counter() - t0, 1.0, request)


#: the registered specs (``Solution.info["spec"]``)
SPECS = tuple(
    registry.register(spec)
    for spec in (
        registry.SolverSpec(name="yeung-reweighting", solve=solve_reweighting, problems=(SpectralReweighting,)),
        registry.SolverSpec(
            name="yeung-embedding-weights", solve=solve_embedding_weights, problems=(EmbeddingWeightProblem,)
        ),
    )
)
