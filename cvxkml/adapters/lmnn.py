"""The fast solver of the lmnn family as a registered :class:`~cvxkml.declare.registry.SolverSpec`
(array-in, array-out algorithm wrapped into the fast-solver protocol).

:func:`solve` is the whole LMNN driver (Wang et al. 2011, eq. 18): the smoothed quasi-Newton
phase, the PDHG with Weinberger & Saul's active set, the dual recovery and the exact finish of
:func:`cvxkml.solvers.lmnn.lmnn_pdhg` on every triplet, or the active impostor set of
:func:`cvxkml.solvers.lmnn.lmnn_active_set` (``impostors="active"``), in the whitened
coordinates of the problem.  :meth:`LMNNProblem.solve <cvxkml.declare.lmnn.LMNNProblem.solve>`
validates its arguments and runs it through the certified-solve pipeline, which recomputes
every number of the answer by the problem's formulas.
"""

from __future__ import annotations

import numpy as np

from ..declare import registry
from ..declare.lmnn import LMNNProblem
from ..errors import SolverError
from ..formulas.lmnn import STALL_ITER, full_triplet_index
from ..solution import FastResult
from ..solvers.lmnn import lmnn_active_set, lmnn_pdhg

__all__ = ["solve", "OPTIONS", "SPEC"]

#: the solver options (``SolveRequest.options``) and their defaults: those of
#: :meth:`LMNNProblem.solve <cvxkml.declare.lmnn.LMNNProblem.solve>`, which validates them
#: (``impostors`` resolved there to "all" or "active")
OPTIONS = {
    "check_every": 200,
    "buffer": 1.0,
    "polish": True,
    "smooth": True,
    "stall_iter": STALL_ITER,
    "impostors": "all",
    "exact_finish": True,
}


def solve(problem, tol: float, max_iter: int, request=None) -> FastResult:
    """Eq. 18 on ``problem`` (an :class:`~cvxkml.declare.lmnn.LMNNProblem`) to a certified
    relative gap ``tol`` within ``max_iter`` iterations.

    ``request`` (:class:`~cvxkml.declare.registry.SolveRequest`): ``warm_start`` None (the
    paper's start A = I, X̂ = S², α = 0) or ``{"X": X̂0 (r × r, whitened), "alpha": α0 (one per
    triplet) or None}``; ``callback``; ``options`` (:data:`OPTIONS`).

    Returns the solver's :class:`~cvxkml.solvers.result.FastResult`: ``matrix`` = X̂ (r × r),
    ``lam`` = α (one per triplet, in the order of ``problem.triplets``; on the active impostor
    set of a problem too large for that list, the set's multipliers, with
    ``extra["impostor_triplets"]`` = (i, j, l) and ``extra["impostor_alpha"]``),
    ``extra["solver"]`` ``"pdhg-lmnn"`` or ``"pdhg-lmnn-active"``, ``extra["stall_iter"]`` the
    stall rule it ran with, and the solver's details.

    Raises
    ------
    SolverError
        The iterates diverged (badly scaled features).
    """
    opts = {**OPTIONS, **(request.options if request is not None else {})}
    start = request.warm_start if request is not None else None
    callback = request.callback if request is not None else None
    X0 = np.diag(problem.s**2) if start is None or start.get("X") is None else start["X"]
    alpha0 = None if start is None else start.get("alpha")
    kw = dict(
        X0=X0,
        tol=tol,
        max_iter=max_iter,
        check_every=opts["check_every"],
        polish=bool(opts["polish"]),
        callback=callback,
        smooth=bool(opts["smooth"]),
        stall_iter=opts["stall_iter"],
        exact_finish=bool(opts["exact_finish"]),
    )
    try:
        if opts["impostors"] == "active":
            res = _active_set(problem, min(max(opts["buffer"], 0.1), 0.5), kw)
        else:
            res = lmnn_pdhg(problem.U, problem.triplets, problem.gamma, alpha0=alpha0, buffer=opts["buffer"], **kw)
            res.extra["solver"] = "pdhg-lmnn"
    except FloatingPointError as exc:
        raise SolverError(
            f"The LMNN solver diverged ({exc}); rescale the features (standardize X, or "
            "normalize the kernel by its mean diagonal)."
        ) from exc
    res.extra["stall_iter"] = opts["stall_iter"]
    return res


def _active_set(problem, buffer: float, kw: dict) -> FastResult:
    """:func:`lmnn_active_set` (its ``buffer`` is also the scan's margin: capped at 0.5), the
    set's multipliers mapped into the full triplet order when the problem lists every triplet
    (:attr:`~cvxkml.declare.lmnn.LMNNProblem.lists_all_triplets`), else kept on the set."""
    t_i, t_j = problem.targets
    perm = np.argsort(t_i, kind="stable")  # the scan wants the entries grouped by point
    res = lmnn_active_set(problem.U, problem.codes, problem.k, t_i[perm], t_j[perm], problem.gamma, buffer=buffer, **kw)
    extra = res.extra
    entries = perm[extra.pop("set_entries")]
    imps = extra.pop("set_impostors")
    extra.pop("triplets")  # the final working set (LMNNTriplets): kept out of the reported info
    extra["solver"] = "pdhg-lmnn-active"
    extra["impostors"] = "active"
    alpha = np.asarray(res.lam, dtype=float)
    if problem.lists_all_triplets:
        full = np.zeros(problem.triplets.n_triplets)
        full[full_triplet_index(problem.codes, t_i, entries, imps)] = alpha
        res.lam = full
    else:
        extra["impostor_triplets"] = (t_i[entries], t_j[entries], imps)
        extra["impostor_alpha"] = alpha
    return res


SPEC = registry.register(
    registry.SolverSpec(
        name="pdhg-lmnn",
        solve=solve,
        problems=(LMNNProblem,),
        # LMNN's hinge weight is its attribute ``gamma``, which the registry reads as a slack
        slack=True,
        warm_start=True,
    )
)
