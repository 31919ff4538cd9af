"""The penalties of soft constraints and their conjugates, written once for the declared
problem (objective, violations, dual value), the dual solver's certificate
(:mod:`cvxkml.solvers.dual_newton`) and the tests.

A constraint with residual ρ = g(M) − t carries the penalty

    φ(ρ) = sup_{lower <= λ <= upper} λρ − ½ quad·λ²,

whose conjugate ½ quad·λ² on the box enters the Lagrange dual: hard inequality [0, ∞),
quad 0 (φ = 0 for ρ <= 0, a violation above); hard equality (−∞, ∞), quad 0; hinge
C·ρ₊: [0, C]; hinge equality C·|ρ|: [−C, C]; squared hinge (C/2)·ρ₊²: [0, ∞), quad 1/C;
squared equality (C/2)·ρ²: (−∞, ∞), quad 1/C.
"""

from __future__ import annotations

import numpy as np

__all__ = ["penalty", "hard_violation", "dual_penalty"]


def penalty(rho, lower, upper, quad):
    """φ_c(ρ_c) = sup_{lower_c <= λ <= upper_c} λρ_c − ½ quad_c λ² per constraint, with the
    hard sides (an infinite bound and no quadratic term) left out (0): they are measured as
    violations instead.  Hinge: C·ρ₊ (box [0, C]); squared hinge: ρ₊²/(2q) (box [0, ∞),
    q = 1/C); two-sided versions for equalities."""
    with np.errstate(all="ignore"):
        lam = np.where(
            quad > 0,
            np.clip(rho / np.where(quad > 0, quad, 1.0), lower, upper),
            np.where(rho > 0, upper, np.where(rho < 0, lower, 0.0)),
        )
        val = lam * rho - 0.5 * quad * lam * lam
    return np.where(np.isfinite(val), val, 0.0)


def hard_violation(rho, lower, upper, quad):
    """Violation of the hard sides: ρ₊ where the upper bound is +inf, (−ρ)₊ where the lower
    bound is −inf (no quadratic term)."""
    hard_up = np.isinf(upper) & (quad == 0)
    hard_lo = np.isinf(lower) & (quad == 0)
    return np.where(hard_up, np.maximum(rho, 0.0), 0.0) + np.where(hard_lo, np.maximum(-rho, 0.0), 0.0)


def dual_penalty(lam, lower, upper, quad) -> float:
    """Σ_c ½ quad_c λ_c² (the conjugate of the penalties on their box), +inf outside the box."""
    lam = np.asarray(lam, dtype=float)
    if np.any(lam < lower) or np.any(lam > upper):
        return np.inf
    return 0.5 * float(np.sum(quad * lam * lam))
