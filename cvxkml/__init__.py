"""cvxkml — convex metric and kernel learning.

Every problem has an exact CVXPY model (``solve_reference``) and a fast Numba solver
(``solve``) that return the same :class:`Solution`.
"""

from . import (
    _deprecated,
    adapters,  # noqa: F401  (registers the built-in fast solvers: cvxkml.declare.registry)
)
from ._config import config_context, get_config, set_config
from .declare import ITML, LogDetKernel
from .errors import (
    ConvergenceWarning,
    CvxkmlError,
    EstimatorFileError,
    InfeasibleError,
    InvalidInputError,
    NotPSDError,
    SolverError,
    UnboundedError,
)
from .kernels import Kernel
from .sideinfo import LinearConstraints, PairConstraints, RelativeConstraints
from .solution import Solution

__version__ = "0.1.0"

_deprecated.install()

__all__ = [
    "ITML",
    "LogDetKernel",
    "Kernel",
    "PairConstraints",
    "RelativeConstraints",
    "LinearConstraints",
    "Solution",
    "CvxkmlError",
    "InvalidInputError",
    "NotPSDError",
    "InfeasibleError",
    "SolverError",
    "UnboundedError",
    "ConvergenceWarning",
    "EstimatorFileError",
    "set_config",
    "get_config",
    "config_context",
]
