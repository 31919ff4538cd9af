"""The general spectral kernel-learning framework (Jain et al. 2012, §4, eq. 12–13,
Definition 3, Theorem 4).

    SpectralKernel:  min_K f(K0^-½ K K0^-½)  s.t. constraints on K        (12)
    SpectralMetric:  min_W f(W)              s.t. constraints on ΦᵀWΦ      (13)

for any spectral regularizer f (:mod:`~cvxkml.declare.regularizers`).  By Theorem 4 the
two are equivalent: W* = αI + Φ S Φᵀ with S = K0⁻¹(K* − αK0)K0⁻¹ (:func:`theory` helpers
in :mod:`cvxkml.learned`), and K* = ΦᵀW*Φ.  The exact models are the whitened core of
:class:`~cvxkml.declare.base.SpectralProblem`; the fast solver is chosen by regularizer
(LogDet: Bregman projections; von Neumann: Kulis et al. Algorithm 3; others: see
``fast_solvers``), and a regularizer without one raises a clear error.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from .logdet import ITML, LogDetKernel
from .lowrank import LowRankLogDet
from .regularizers import Regularizer

__all__ = ["SpectralMetric", "SpectralKernel", "FactoredSpectralKernel"]


def _check_regularizer(reg):
    if not isinstance(reg, Regularizer):
        raise InvalidInputError(
            f"regularizer must be a cvxkml.declare.regularizers.Regularizer (LogDet(), VonNeumann(), "
            f"Frobenius(), TraceNorm(tau), …); got {type(reg).__name__}."
        )
    reg.check_theorem4()
    return reg


class SpectralMetric(ITML):
    """min_W f(W) s.t. constraints on the learned distances (eq. 13), prior I.

    Parameters
    ----------
    X : (n, d) data.  constraints : as for :class:`~cvxkml.declare.ITML`.
    regularizer : a spectral regularizer object.  gamma : slack weight (regularizers with
        a slack formulation: LogDet, VonNeumann) or None.
    space : {"auto", "features", "span"} or a :class:`~cvxkml.declare.spaces.Space`
        as for :class:`~cvxkml.declare.ITML`: wide data (d > n) is solved in the data's
        span by default (Theorem 4), with the same optimum and certificate.
    """

    def __init__(self, X, constraints, regularizer: Regularizer, gamma=None, space="auto"):
        self.regularizer = _check_regularizer(regularizer)
        super().__init__(X, constraints, W0=None, gamma=gamma, space=space)
        self.solver_tag = f"metric-{self.regularizer.name.lower()}"


class SpectralKernel(LogDetKernel):
    """min_K f(K0^-½ K K0^-½) s.t. constraints on K (eq. 12); K0 PSD (a rank-deficient K0 is
    handled on its range space, the whitened matrix being r × r).

    Parameters
    ----------
    K0 : (n, n) PSD kernel matrix.  constraints : as for :class:`~cvxkml.declare.LogDetKernel`.
    regularizer : a spectral regularizer object.  gamma : slack weight or None.
    """

    def __init__(self, K0, constraints, regularizer: Regularizer, gamma=None):
        self.regularizer = _check_regularizer(regularizer)
        super().__init__(K0, constraints, gamma=gamma)
        self.solver_tag = f"kernel-{self.regularizer.name.lower()}"


class FactoredSpectralKernel(LowRankLogDet):
    """min_K f(K0^+½ K K0^+½) s.t. constraints on K, with K0 = G0 G0ᵀ given by its factor G0
    (n × r, full column rank): the factored space of eq. 12 (Kulis et al. 2009, eq. 14 for
    any spectral f).  The learned kernel keeps range(K0), K = G0 X̂ G0ᵀ, and the problem is
    solved on the r × r matrix X̂, never forming an n × n matrix: n = 60 000 points of rank
    100 cost what 100 points cost, per constraint.

    Parameters
    ----------
    G0 : (n, r) factor of full column rank, or a :class:`~cvxkml.factor.Factorization`
        (e.g. from :func:`cvxkml.factor.factorize`, Nyström landmarks for large n).
    constraints : as for :class:`SpectralKernel` (pairs, relative, similarity, linear on
        X̂; hard or under :class:`~cvxkml.sideinfo.Hinge`).
    regularizer : a spectral regularizer object (a user subclass included).
    gamma : slack weight (regularizers with a slack formulation) or None.

    The learned matrix of a :class:`~cvxkml.solution.Solution` is X̂ (r × r); the kernel is
    K = G0 X̂ G0ᵀ (:meth:`kernel_factor` gives G with K = G Gᵀ).
    """

    def __init__(self, G0, constraints, regularizer: Regularizer, gamma=None):
        self.regularizer = _check_regularizer(regularizer)
        super().__init__(G0, constraints, gamma=gamma)
        self.solver_tag = f"factored-{self.regularizer.name.lower()}"

    def kernel_factor(self, solution) -> np.ndarray:
        """G = G0 X̂^½ with K = G Gᵀ (X̂ ⪰ 0 through its eigendecomposition; O(n r²))."""
        Xh = np.asarray(getattr(solution, "matrix", solution), dtype=float)
        w, V = np.linalg.eigh(0.5 * (Xh + Xh.T))
        return self.G0 @ (V * np.sqrt(np.maximum(w, 0.0)))

    def transform_factor(self, solution, g) -> np.ndarray:
        """x ↦ X̂^½ g(x) for factor coordinates g (rows): the learned feature map."""
        Xh = np.asarray(getattr(solution, "matrix", solution), dtype=float)
        w, V = np.linalg.eigh(0.5 * (Xh + Xh.T))
        return np.asarray(g, dtype=float) @ (V * np.sqrt(np.maximum(w, 0.0)))
