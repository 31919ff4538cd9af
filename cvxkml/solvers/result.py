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

from ..solution import NONFINITE, NONPOSITIVE_DISTANCE, NOT_CONVERGED, OK, UNBOUNDED, FastResult, Status

__all__ = ["Status", "FastResult", "OK", "NOT_CONVERGED", "NONPOSITIVE_DISTANCE", "NONFINITE", "UNBOUNDED"]
