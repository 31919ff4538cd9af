"""The fast solver of the mkl family as a registered :class:`~cvxkml.declare.registry.SolverSpec`
(array-in, array-out algorithm wrapped into the fast-solver protocol)."""

from __future__ import annotations
