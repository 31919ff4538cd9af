"""The declarative layer: problem objects that build CVXPY models (ground truth)
and dispatch to the fast solvers."""
from .logdet import ITML, LogDetKernel, LogDetProblem

__all__ = ["ITML", "LogDetKernel", "LogDetProblem"]
from .lowrank import LowRankLogDet

__all__ += ["LowRankLogDet"]
from .iplr import IPLR

__all__ += ["IPLR"]
