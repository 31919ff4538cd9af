"""The declarative layer: problem objects that build CVXPY models (ground truth)
and dispatch to the fast solvers."""
from .problem import Problem
from .logdet import ITML, LogDetKernel, LogDetProblem

__all__ = ["Problem", "ITML", "LogDetKernel", "LogDetProblem"]
from .lowrank import LowRankLogDet

__all__ += ["LowRankLogDet"]
from .iplr import IPLR

__all__ += ["IPLR"]
from .dual import solve_dual
from .regularizers import (Frobenius, LogDet, Regularizer, TraceNorm, VonNeumann,
                           register_fast_solver)
from .spectral import FactoredSpectralKernel, SpectralKernel, SpectralMetric

__all__ += ["FactoredSpectralKernel", "SpectralKernel", "SpectralMetric", "Regularizer", "LogDet", "VonNeumann", "Frobenius",
            "TraceNorm", "solve_dual", "register_fast_solver"]
from .vonneumann import VonNeumannKernel

__all__ += ["VonNeumannKernel"]
from .trace import TraceSSIKDR

__all__ += ["TraceSSIKDR"]
from .pola import POLAKernel, POLAMetric, pola_constraints
from .sdp import LinearLogDet, SDPLogDetKernel, SDPLogDetMetric, barrier_path

__all__ += ["POLAKernel", "POLAMetric", "pola_constraints", "LinearLogDet", "SDPLogDetKernel",
            "SDPLogDetMetric", "barrier_path"]
from .kcr import KCR

__all__ += ["KCR"]
from .lmnn import LMNNProblem
from .mkl import (CallablePObjective, LinearPObjective, LMNNWeightObjective, MuWeightStep,
                  RankOneWeightStep, WeightStepSolution, alternate)

__all__ += ["LMNNProblem", "LinearPObjective", "CallablePObjective", "LMNNWeightObjective",
            "RankOneWeightStep", "MuWeightStep", "WeightStepSolution", "alternate"]
from .yeung import EmbeddingWeightProblem, SpectralReweighting

__all__ += ["SpectralReweighting", "EmbeddingWeightProblem"]
from .extend import ExtendedProblem

__all__ += ["ExtendedProblem"]
