"""The result every fast solver returns: the public fast-solver protocol.

A fast solver for a declared spectral problem is any function

    solver(problem, tol, max_iter) -> FastResult

registered for a regularizer class with :func:`cvxkml.declare.register_fast_solver` (or
written as the regularizer's ``fast_solver`` method).  It works on the problem's NumPy
attributes only (``problem.F``, ``problem.T``, ``problem.pairs``, …, or the signed rank-one
terms of :func:`cvxkml.declare.terms.constraint_terms`) — never on CVXPY — and returns the
learned matrix in the problem's own space with one multiplier per constraint in
``problem.violations`` order.  The problem then computes the objective, the violations and
the Lagrange-dual certificate itself: a solver cannot certify its own answer.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

__all__ = ["Status", "FastResult", "OK", "NOT_CONVERGED", "NONPOSITIVE_DISTANCE", "NONFINITE",
           "UNBOUNDED"]


class Status(IntEnum):
    """How a fast run ended (``FastResult.code``)."""

    OK = 0                    #: the solver's own stopping rule was met
    NOT_CONVERGED = 1         #: the iteration limit came first (or a stall)
    NONPOSITIVE_DISTANCE = 2  #: a constraint no positive definite matrix satisfies (``bad_index``)
    NONFINITE = 3             #: the iterates overflowed / left the domain (``bad_index`` or −1)
    UNBOUNDED = 4             #: no dual-feasible start: the problem is unbounded below


OK, NOT_CONVERGED, NONPOSITIVE_DISTANCE, NONFINITE, UNBOUNDED = (int(s) for s in Status)


@dataclass
class FastResult:
    """What a fast solver returns (see the module doc).

    Attributes
    ----------
    matrix : ndarray (N, N)
        The learned matrix in the problem's space (K or W; a whitened solver maps back
        with ``problem.matrix_from_whitened``).
    lam : ndarray (m,)
        Multipliers λ >= 0, one per constraint in ``problem.violations`` order (<= C for
        :class:`~cvxkml.sideinfo.Hinge` constraints).
    xi : ndarray
        Pair slacks ξ first when the problem has ``gamma`` slack, else empty.
    sweeps : int
        Iterations used (sweeps, Newton steps, …).
    dual_change : float
        The quantity the solver's own stopping rule compared with ``tol``.
    code : int
        A :class:`Status`.
    bad_index : int
        The constraint behind NONPOSITIVE_DISTANCE / NONFINITE, or −1.
    time : float
        Seconds spent.
    extra : dict
        Solver-specific outputs; ``extra["solver"]`` names the algorithm in
        ``Solution.solver``.
    """

    matrix: np.ndarray
    lam: np.ndarray
    xi: np.ndarray
    sweeps: int
    dual_change: float
    code: int
    bad_index: int
    time: float
    extra: dict = field(default_factory=dict)
