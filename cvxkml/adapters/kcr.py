"""The fast solver of the kcr family as a registered :class:`~cvxkml.declare.registry.SolverSpec`
(array-in, array-out algorithm wrapped into the fast-solver protocol).

:func:`solve` hands :class:`~cvxkml.declare.kcr.KCR`'s whitened data to
:func:`cvxkml.solvers.kcr.kcr_pdhg` (Sriperumbudur et al. 2008, eq. 9: restarted PDHG with a
certified duality gap).  Its :class:`~cvxkml.solvers.result.FastResult` is the family's
protocol, which a user's solver for ``KCR`` (``register_fast_solver(KCR, solver)``) returns
too: ``matrix`` X (r × r, whitened coordinates, Σ = T X Tᵀ), ``lam`` the n × n dual weights
θs flattened row-major, ``extra["h"]`` the bandwidth h̃ (required), ``extra["factor"]``
(r × k, X = factor factorᵀ; optional), ``code`` ``OK`` when the solver's own rule was met.
:meth:`KCR.solution_from_fast <cvxkml.declare.kcr.KCR.solution_from_fast>` recomputes every
number from them.
"""

from __future__ import annotations

from ..declare import registry
from ..declare.kcr import KCR
from ..solvers.kcr import kcr_pdhg

__all__ = ["solve", "SPEC"]


def solve(problem, tol, max_iter, request=None):
    """:func:`~cvxkml.solvers.kcr.kcr_pdhg` on ``problem``'s whitened features F, labels and λ,
    to the certified relative gap ``tol``.  ``request.options`` carries ``time_limit``,
    ``check_every`` and the solver's own options (``scaling``, ``halpern``, ``eig``, …, as
    validated by :meth:`KCR.solve <cvxkml.declare.kcr.KCR.solve>`); ``request.warm_start`` is a
    ``Solution.info["warm_start"]`` dict and ``request.callback`` is called at each
    certificate check."""
    opts = dict(request.options) if request is not None else {}
    time_limit = opts.pop("time_limit", None)
    check_every = opts.pop("check_every", None)
    return kcr_pdhg(
        problem.F,
        problem.tau,
        problem.c,
        problem.lam,
        h_min=problem.h_min,
        tol=tol,
        max_iter=max_iter,
        time_limit=time_limit,
        check_every=check_every,
        warm_start=None if request is None else request.warm_start,
        callback=None if request is None else request.callback,
        **opts,
    )


#: the registered spec (``Solution.info["spec"]``)
SPEC = registry.register(registry.SolverSpec(name="kcr-pdhg", solve=solve, problems=(KCR,), warm_start=True))
