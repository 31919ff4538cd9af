"""The one result shape every solver (fast or exact) returns."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Solution:
    """Result of a solve.

    Attributes
    ----------
    matrix : the learned matrix (kernel matrix K or Mahalanobis matrix W).
    objective : the problem's objective at ``matrix`` (``problem.objective``; with slack,
        the slack variables are the best ones for ``matrix``).
    dual : dual variables, one per constraint (λ ≥ 0), or None.
    slack : the solver's slack variables ξ (slack problems), or None.
    violations : per-constraint violation max(0, g(M) − b) ≥ 0 (against ξ when slack).
    n_iter : sweeps (Bregman), or the conic solver's iterations.
    converged : True only when the solver met its tolerance / reported optimality.
    time : wall time of the solve in seconds (excludes Numba compilation after warm-up).
    status : a short human-readable status.
    solver : name of the algorithm that produced it.
    dual_value : Lagrange dual value at ``dual`` (a lower bound on the optimum), or None.
    info : extra diagnostics (final dual change, …).
    """

    matrix: np.ndarray
    objective: float
    dual: np.ndarray | None
    slack: np.ndarray | None
    violations: np.ndarray
    n_iter: int
    converged: bool
    time: float
    status: str
    solver: str
    dual_value: float | None = None
    info: dict = field(default_factory=dict)

    @property
    def max_violation(self) -> float:
        """The absolute maximum violation: the largest entry of ``violations``, in the units
        of the constraints, not scaled by their targets or by the objective.

        Certificates and tolerances (e.g. ``viol_tol`` of the spectral solves, the acceptance
        of an ``optimal_inaccurate`` reference) compare the *relative* violation,
        ``info["max_relative_violation"]``, which the declared problems' ``solve`` and
        ``solve_reference`` set; where a solution lacks it, the reference acceptance uses
        ``max_violation / max(1, |objective|)``.

        Returns
        -------
        float
            ``max(violations)``, 0.0 when there are no constraints.
        """
        return float(np.max(self.violations)) if self.violations.size else 0.0

    @property
    def gap(self) -> float | None:
        """objective − dual_value (a duality gap when the solution is feasible)."""
        if self.dual_value is None or not np.isfinite(self.dual_value):
            return None
        return float(self.objective - self.dual_value)

    def __repr__(self) -> str:
        gap = self.gap
        return (f"Solution(solver={self.solver!r}, status={self.status!r}, objective={self.objective:.10g}, "
                f"max_violation={self.max_violation:.3g}, n_iter={self.n_iter}, converged={self.converged}, "
                f"gap={'n/a' if gap is None else format(gap, '.3g')}, time={self.time:.3g}s)")
