"""The result shapes: :class:`Solution`, what every solve (fast or exact) returns, and the
fast-solver protocol :class:`FastResult` / :class:`Status`, what a fast solver hands to the
problem that certifies it (documented in :mod:`cvxkml.solvers.result`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from enum import IntEnum

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
    converged : True only when the answer is certified: its Lagrange certificate (gap between
        the objective and the dual value, recomputed from the returned primal and dual) and
        its violations are within tolerance; an exact solve's conic status alone does not
        certify where the problem has a dual value to check it with.
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

    @classmethod
    def from_conic(cls, status: str, solver: str, elapsed: float, iters: int, **fields):
        """The Solution of an exact (CVXPY) model's solve: ``converged`` when the conic status is
        ``"optimal"``, ``solver`` = ``"cvxpy-<name>"``, ``time`` and ``n_iter`` from the conic
        run; every other field (``matrix``, ``objective``, ``violations``, ``dual_value``, …)
        is what the problem's own formulas computed, passed by keyword."""
        return cls(
            converged=status == "optimal",
            status=status,
            solver=f"cvxpy-{solver.lower()}",
            time=elapsed,
            n_iter=iters,
            **fields,
        )

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
        return (
            f"Solution(solver={self.solver!r}, status={self.status!r}, objective={self.objective:.10g}, "
            f"max_violation={self.max_violation:.3g}, n_iter={self.n_iter}, converged={self.converged}, "
            f"gap={'n/a' if gap is None else format(gap, '.3g')}, time={self.time:.3g}s)"
        )


class Status(IntEnum):
    """How a fast run ended (``FastResult.code``)."""

    OK = 0  #: the solver's own stopping rule was met
    NOT_CONVERGED = 1  #: the iteration limit came first (or a stall)
    NONPOSITIVE_DISTANCE = 2  #: a constraint no positive definite matrix satisfies (``bad_index``)
    NONFINITE = 3  #: the iterates overflowed / left the domain (``bad_index`` or −1)
    UNBOUNDED = 4  #: no dual-feasible start: the problem is unbounded below


OK, NOT_CONVERGED, NONPOSITIVE_DISTANCE, NONFINITE, UNBOUNDED = (int(s) for s in Status)

#: the status (``Solution.status``, a fast run's ``extra["status"]``) of a solve its callback stopped
CALLBACK_STOP = "stopped by callback"


@dataclass(init=False)
class FastResult:
    """What a fast solver returns (see the module doc).

    Attributes
    ----------
    matrix : ndarray (N, N)
        The learned matrix in the problem's space (K or W; a whitened solver maps back
        with ``problem.matrix_from_whitened``).
    lam : ndarray (m,)
        Multipliers λ >= 0, one per constraint in ``problem.violations`` order (<= C for
        :class:`~cvxkml.sideinfo.Hinge` constraints).  A family's own solver returns its
        family's dual vector here, documented by the solver (KCR: the certified dual weights
        θs, n × n flattened row-major; LMNN: the triplet multipliers α), which the declaring
        problem re-validates through its own formulas.
    xi : ndarray
        Pair slacks ξ first when the problem has ``gamma`` slack, else empty.
    sweeps : int
        Iterations used (sweeps, Newton steps, …).
    stop_value : float
        The value the solver's own stopping rule compared with ``tol`` (the Bregman
        solvers: the relative change of the duals; KCR: its certified relative gap; POLA:
        the larger of its relative gap and violation); NaN when the solver has no such
        rule.  The problem's certificate is recomputed whatever it says.
    code : int
        A :class:`Status`.
    bad_index : int
        The constraint behind NONPOSITIVE_DISTANCE / NONFINITE, or −1.
    time : float
        Seconds spent.
    extra : dict
        Solver-specific outputs; ``extra["solver"]`` names the algorithm in
        ``Solution.solver``.

    ``dual_change`` is the former name of ``stop_value`` (as a keyword and an attribute;
    deprecated, removed in 0.3).
    """

    matrix: np.ndarray
    lam: np.ndarray
    xi: np.ndarray
    sweeps: int
    stop_value: float
    code: int
    bad_index: int
    time: float
    extra: dict = field(default_factory=dict)

    def __init__(
        self, matrix, lam, xi, sweeps, stop_value=None, code=None, bad_index=None, time=None, extra=None, **old
    ):
        if "dual_change" in old:
            _renamed("dual_change", "stop_value")
            if stop_value is not None:
                raise TypeError("FastResult() got both stop_value and its former name dual_change")
            stop_value = old.pop("dual_change")
        if old:
            raise TypeError(f"FastResult() got an unexpected keyword argument {next(iter(old))!r}")
        given = dict(stop_value=stop_value, code=code, bad_index=bad_index, time=time)
        missing = [name for name, value in given.items() if value is None]
        if missing:
            raise TypeError(f"FastResult() missing required argument(s): {', '.join(missing)}")
        self.matrix, self.lam, self.xi, self.sweeps = matrix, lam, xi, sweeps
        self.stop_value, self.code, self.bad_index, self.time = stop_value, code, bad_index, time
        self.extra = {} if extra is None else extra

    @property
    def dual_change(self) -> float:
        """Deprecated name of :attr:`stop_value`."""
        _renamed("dual_change", "stop_value")
        return self.stop_value

    @dual_change.setter
    def dual_change(self, value: float) -> None:
        _renamed("dual_change", "stop_value")
        self.stop_value = value


def _renamed(old: str, new: str) -> None:
    warnings.warn(
        f"FastResult.{old} is now FastResult.{new} ({old} is removed in 0.3).", DeprecationWarning, stacklevel=3
    )
