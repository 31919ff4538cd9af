"""The declarative layer: problem objects that build CVXPY models (ground truth) and
dispatch to the fast solvers registered in :mod:`cvxkml.declare.registry`.

A spectral problem is composed of a space (:mod:`cvxkml.declare.spaces`), a regularizer
(:mod:`cvxkml.declare.regularizers`) and constraint atoms (:mod:`cvxkml.sideinfo`):
``SpectralProblem(space, constraints, regularizer)``; the named problems below fill in the
papers' choices.
"""

from .base import SpectralProblem
from .dual import solve_dual
from .extend import ExtendedProblem
from .iplr import IPLR
from .kcr import KCR
from .lmnn import LMNNProblem
from .logdet import ITML, LogDetKernel
from .lowrank import LowRankLogDet
from .mkl import (
    CallablePObjective,
    LinearPObjective,
    LMNNWeightObjective,
    MuWeightStep,
    RankOneWeightStep,
    WeightStepSolution,
    alternate,
)
from .pola import POLAKernel, POLAMetric, pola_constraints
from .problem import Problem
from .regularizers import Frobenius, LogDet, Regularizer, TraceNorm, VonNeumann, register_fast_solver
from .sdp import LinearLogDet, SDPLogDetKernel, SDPLogDetMetric, barrier_path
from .spaces import FactoredSpace, KernelSpace, MetricSpace, Space, SpanSpace
from .spectral import FactoredSpectralKernel, SpectralKernel, SpectralMetric
from .trace import TraceSSIKDR
from .vonneumann import VonNeumannKernel
from .yeung import EmbeddingWeightProblem, SpectralReweighting

__all__ = [
    # the composition and its parts
    "Problem",
    "SpectralProblem",
    "Space",
    "MetricSpace",
    "KernelSpace",
    "FactoredSpace",
    "SpanSpace",
    "Regularizer",
    "LogDet",
    "VonNeumann",
    "Frobenius",
    "TraceNorm",
    "register_fast_solver",
    "solve_dual",
    "ExtendedProblem",
    # the papers' problems
    "ITML",
    "LogDetKernel",
    "LowRankLogDet",
    "IPLR",
    "SpectralMetric",
    "SpectralKernel",
    "FactoredSpectralKernel",
    "VonNeumannKernel",
    "TraceSSIKDR",
    "POLAKernel",
    "POLAMetric",
    "pola_constraints",
    "LinearLogDet",
    "SDPLogDetKernel",
    "SDPLogDetMetric",
    "barrier_path",
    "KCR",
    "LMNNProblem",
    "LinearPObjective",
    "CallablePObjective",
    "LMNNWeightObjective",
    "RankOneWeightStep",
    "MuWeightStep",
    "WeightStepSolution",
    "alternate",
    "SpectralReweighting",
    "EmbeddingWeightProblem",
]

from .._deprecated import moved_attribute as _moved_attribute

__getattr__ = _moved_attribute(__name__)  # LogDetProblem is SpectralProblem (until 0.3)
