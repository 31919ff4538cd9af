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

from ..errors import InvalidInputError
from ..sideinfo import LinearConstraints, PairConstraints, RelativeConstraints, SimilarityConstraints
from .logdet import ITML, LogDetKernel
from .regularizers import LogDet, Regularizer, fast_solver_for

__all__ = ["SpectralMetric", "SpectralKernel"]


def _check_regularizer(reg):
    if not isinstance(reg, Regularizer):
        raise InvalidInputError(
            f"regularizer must be a cvxkml.declare.regularizers.Regularizer (LogDet(), VonNeumann(), "
            f"Frobenius(), TraceNorm(tau), …); got {type(reg).__name__}.")
    reg.check_theorem4()
    return reg


class _FastDispatch:
    @property
    def fast_families(self):
        """LogDet: the Bregman solvers' families; any other regularizer: every family, its
        ``fast_solver`` rejects what it does not handle (von Neumann and TraceNorm: pairs;
        Frobenius/POLA: all)."""
        if isinstance(self.regularizer, LogDet):
            return super().fast_families
        return (PairConstraints, RelativeConstraints, SimilarityConstraints, LinearConstraints)

    def _native_fast_ok(self) -> bool:
        """LogDet: the Bregman solvers' families; another regularizer: its ``fast_solver``
        (if any) and its ``fast_handles(problem)`` (if declared); never with hinge slack."""
        reg = self.regularizer
        if isinstance(reg, LogDet):
            return super()._native_fast_ok()
        solver, handles = fast_solver_for(reg)
        if self._hinge or solver is None:
            return False
        return True if handles is None else bool(handles(self))

    def _run_fast(self, tol, max_sweeps):
        reg = self.regularizer
        if isinstance(reg, LogDet):
            return super()._run_fast(tol, max_sweeps)
        runner, _ = fast_solver_for(reg)
        if runner is None:
            raise InvalidInputError(
                f"No fast solver for the {reg.name} regularizer yet; use solve_reference() (the "
                "exact CVXPY model).")
        return runner(self, tol, max_sweeps)


class SpectralMetric(_FastDispatch, ITML):
    """min_W f(W) s.t. constraints on the learned distances (eq. 13), prior I.

    Parameters
    ----------
    X : (n, d) data.  constraints : as for :class:`~cvxkml.declare.ITML`.
    regularizer : a spectral regularizer object.  gamma : slack weight (regularizers with
        a slack formulation: LogDet, VonNeumann) or None.
    """

    def __init__(self, X, constraints, regularizer: Regularizer, gamma=None):
        self.regularizer = _check_regularizer(regularizer)
        super().__init__(X, constraints, W0=None, gamma=gamma)
        self.kind = f"metric-{self.regularizer.name.lower()}"


class SpectralKernel(_FastDispatch, LogDetKernel):
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
        self.kind = f"kernel-{self.regularizer.name.lower()}"
