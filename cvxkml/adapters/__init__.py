"""The room between the declared problems and the algorithms: each adapter turns a declared
problem into an array-in, array-out solver call (whitening, constraint terms, the matrix
mapped back) and registers itself in :mod:`cvxkml.declare.registry` with what it accepts —
the same path a user's :func:`~cvxkml.declare.register_fast_solver` takes.  The package's
face (``import cvxkml``) imports this package; ``cvxkml.declare`` never imports
``cvxkml.solvers``."""

from . import kcr, lmnn, mkl, spectral, yeung  # noqa: F401  (registration)

__all__ = ["spectral", "kcr", "lmnn", "mkl", "yeung"]
