"""Validation of a solver's answer: check what it returns, never trust what it reports.

NumPy only, so both :mod:`cvxkml.declare` (``SpectralProblem.solve`` validating a registered
solver's answer) and :mod:`cvxkml.testing` (``cross_check``, ``assert_matches_reference``)
use the same checks.  Every failure raises :class:`~cvxkml.errors.SolverError` (the
answer is wrong) with one line naming what is wrong, the numbers, and what to do.

Stable API: :func:`check_primal_matrix`, :func:`check_primal_vector`, :func:`check_scalar`,
:func:`check_reported`, :func:`check_certificate` and :func:`relative_distance`.

Tolerances are relative and stated by the module constants :data:`SYMMETRIC_TOL`,
:data:`PSD_TOL` and :data:`REPORT_RTOL`.
"""

from __future__ import annotations

import numpy as np

from .errors import SolverError

__all__ = [
    "SYMMETRIC_TOL",
    "PSD_TOL",
    "REPORT_RTOL",
    "FARKAS_EIG_TOL",
    "FARKAS_LIN_TOL",
    "check_primal_matrix",
    "check_primal_vector",
    "check_scalar",
    "check_reported",
    "check_certificate",
    "relative_distance",
]

#: largest accepted ‖M − Mᵀ‖_F / ‖M‖_F of a returned matrix
SYMMETRIC_TOL = 1e-8
#: largest accepted −λ_min / max|λ| of a returned matrix that must be PSD
PSD_TOL = 1e-7
#: largest accepted |reported − recomputed| / max(1, |recomputed|): round-off, not accuracy
REPORT_RTOL = 1e-8
#: a direction d of multipliers is a Farkas certificate of infeasible hard constraints when the
#: min eigenvalue of Σ d_c Â_c, relative to Σ|d_c|‖Â_c‖, is at least −FARKAS_EIG_TOL and
#: Σ d_c t_c, relative to Σ|d_c t_c|, at most −FARKAS_LIN_TOL (the solvers' watches and the
#: declared problem's own test, ``SpectralProblem.farkas_direction``, judge by these)
FARKAS_EIG_TOL = 1e-6
FARKAS_LIN_TOL = 1e-3


def _shape(n) -> tuple:
    return tuple(int(k) for k in n) if isinstance(n, (tuple, list)) else (int(n), int(n))


def _as_array(a, what: str) -> np.ndarray:
    if a is None:
        raise SolverError(f"The solver returned no {what} (None); return the primal point as an array.")
    try:
        arr = np.asarray(a, dtype=float)
    except (TypeError, ValueError) as exc:
        raise SolverError(f"The solver's {what} is not a numeric array ({type(a).__name__}: {exc}).") from exc
    return arr


def check_primal_matrix(
    M, n, *, symmetric_tol: float = SYMMETRIC_TOL, psd_tol: float = PSD_TOL, psd: bool = True, what: str = "matrix"
) -> np.ndarray:
    """Check a returned primal matrix; returns it as a float array.

    ``n`` is an int (an n × n matrix) or a shape tuple.  Symmetric means
    ‖M − Mᵀ‖_F <= ``symmetric_tol`` · ‖M‖_F; PSD (with ``psd``) means
    λ_min(sym M) >= −``psd_tol`` · max(1e-300, max|λ|).

    Raises
    ------
    SolverError
        None, wrong shape, NaN/inf, asymmetric or (``psd``) not PSD.
    """
    A = _as_array(M, what)
    want = _shape(n)
    if A.shape != want:
        raise SolverError(
            f"The solver's {what} has shape {A.shape}, but this problem's is {want}; "
            "return the full symmetric matrix of the problem's space."
        )
    if not np.all(np.isfinite(A)):
        bad = int(np.sum(~np.isfinite(A)))
        raise SolverError(
            f"The solver's {what} has {bad} NaN/inf entr{'y' if bad == 1 else 'ies'}; "
            "the solve broke down (check its status and inputs)."
        )
    norm = float(np.linalg.norm(A))
    skew = float(np.linalg.norm(A - A.T))
    if skew > symmetric_tol * norm:
        raise SolverError(
            f"The solver's {what} is not symmetric: ‖M − Mᵀ‖_F / ‖M‖_F = "
            f"{skew / max(norm, 1e-300):.3g} > {symmetric_tol:g}; a quadratic form only "
            "sees (M + Mᵀ)/2, so return that."
        )
    if psd and A.size:
        eig = np.linalg.eigvalsh(0.5 * (A + A.T))
        top = max(float(np.max(np.abs(eig))), 1e-300)
        if eig[0] < -psd_tol * top:
            raise SolverError(
                f"The solver's {what} is not positive semidefinite: smallest eigenvalue "
                f"{eig[0]:.3g} (relative {eig[0] / top:.3g} < −{psd_tol:g}); project it "
                "onto the PSD cone or check the solver."
            )
    return A


def check_primal_vector(v, m: int, *, what: str = "vector") -> np.ndarray:
    """Check a returned vector: not None, shape ``(m,)``, finite.  Returns it as floats."""
    a = _as_array(v, what)
    if a.shape != (int(m),):
        raise SolverError(f"The solver's {what} has shape {a.shape}, but this problem needs ({int(m)},).")
    if not np.all(np.isfinite(a)):
        raise SolverError(f"The solver's {what} has NaN/inf entries; the solve broke down.")
    return a


def check_scalar(x, what: str, *, allow_none: bool = False) -> float | None:
    """A reported number as a finite float (None passes with ``allow_none``)."""
    if x is None:
        if allow_none:
            return None
        raise SolverError(f"The solver reported no {what} (None).")
    try:
        val = float(x)
    except (TypeError, ValueError) as exc:
        raise SolverError(f"The solver's {what} is not a number ({type(x).__name__}).") from exc
    if not np.isfinite(val):
        raise SolverError(
            f"The solver reported a non-finite {what} ({val}); a certificate must be "
            "a finite number (report None when there is none)."
        )
    return val


def check_reported(
    reported,
    recomputed: float,
    *,
    rtol: float = REPORT_RTOL,
    what: str = "objective",
    source: str = "the returned point",
) -> None:
    """A reported value must equal its recomputation from the returned point:
    |reported − recomputed| <= ``rtol`` · max(1, |recomputed|); the message names both numbers."""
    rep = check_scalar(reported, f"reported {what}")
    rec = float(recomputed)
    if not np.isfinite(rec):
        raise SolverError(
            f"The reported {what} is {rep:.12g} but recomputed from {source} it is {rec} "
            "(the point is outside the problem's domain)."
        )
    if abs(rep - rec) > rtol * max(1.0, abs(rec)):
        raise SolverError(
            f"The reported {what} {rep:.12g} disagrees with {rec:.12g} recomputed from "
            f"{source} (relative {abs(rep - rec) / max(1.0, abs(rec)):.3g} > {rtol:g}); "
            "report the value of what you return."
        )


def check_certificate(
    objective: float,
    dual_value,
    *,
    converged: bool,
    gap_rtol: float,
    optimum: float | None = None,
    opt_rtol: float | None = None,
    feasible: bool = True,
    bought: float | None = None,
) -> float | None:
    """Check a (recomputed) certificate; returns the relative gap or None.

    ``converged=True`` needs a finite dual value; a dual value above a trusted ``optimum`` by
    more than ``opt_rtol`` · max(1, |optimum|) is refuted (weak duality).  A negative gap
    beyond ``gap_rtol`` fails an answer that claims ``converged``.  Otherwise weak duality
    bounds it: for any point M and multipliers λ in the dual box,
    g(λ) <= L(M, λ) <= f(M) + Σ_c |λ_c|·viol_c(M), so f − g >= −``bought`` (the
    multiplier-weighted violation, when the caller can compute it) — a gap below
    −(bought + gap_rtol·scale) means the duals or the objective are wrong.  Without
    ``bought``, a negative gap fails when the point is ``feasible``."""
    obj = check_scalar(objective, "objective")
    dv = check_scalar(dual_value, "dual value", allow_none=True)
    scale = max(1.0, abs(obj))
    if dv is None:
        if converged:
            raise SolverError(
                "The solver says converged=True but carries no certificate (no dual "
                "value); converged means certified: return the duals, or converged=False."
            )
        return None
    gap = (obj - dv) / scale
    if bought is not None and not converged:
        if obj - dv < -(float(bought) + gap_rtol * scale):
            raise SolverError(
                f"Negative certificate: dual value {dv:.12g} exceeds the objective {obj:.12g} by more "
                f"than the violations can buy (Σ|λ|·violation = {float(bought):.3g}); the duals or "
                "the objective are wrong (weak duality)."
            )
    elif gap < -gap_rtol and (converged or feasible):
        raise SolverError(
            f"Negative certificate: dual value {dv:.12g} exceeds the objective {obj:.12g} "
            f"(relative gap {gap:.3g} < −{gap_rtol:g}); the point is infeasible or the "
            "duals are wrong."
        )
    if optimum is not None:
        tol = gap_rtol if opt_rtol is None else opt_rtol
        if dv > optimum + tol * max(1.0, abs(optimum)):
            raise SolverError(
                f"The dual value {dv:.12g} is above the trusted optimum {optimum:.12g} "
                f"(relative {(dv - optimum) / max(1.0, abs(optimum)):.3g} > {tol:g}): it "
                "is not a lower bound (weak duality); the duals are wrong."
            )
    return gap


def relative_distance(M, M_star) -> float:
    """‖M − M*‖_F / ‖M*‖_F (the denominator floored at 1e-300)."""
    M, M_star = np.asarray(M, dtype=float), np.asarray(M_star, dtype=float)
    return float(np.linalg.norm(M - M_star) / max(float(np.linalg.norm(M_star)), 1e-300))
