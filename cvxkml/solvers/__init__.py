"""Fast hand-written solvers (Numba).  No CVXPY import in this package."""
from .bregman import bregman_kernel, bregman_metric, BregmanResult

__all__ = ["bregman_kernel", "bregman_metric", "BregmanResult"]
