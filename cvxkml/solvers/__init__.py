"""Fast hand-written solvers (Numba / NumPy).  No CVXPY import in this package.

Every solver returns a :class:`~cvxkml.solvers.result.FastResult` (the public fast-solver
protocol: :mod:`cvxkml.solvers.result`)."""

from .bregman import bregman_kernel, bregman_metric
from .result import FastResult, Status

__all__ = ["bregman_kernel", "bregman_metric", "FastResult", "Status"]
