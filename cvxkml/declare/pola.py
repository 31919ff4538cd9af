"""POLA in kernel space (Jain et al. 2012 §5.2; Shalev-Shwartz, Singer & Ng 2004).

Batch POLA learns a Mahalanobis matrix with margin constraints on pair distances,

    min_{W ⪰ 0} ½‖W‖²_F   s.t.   y_ij (b − d_W(x_i, x_j)) >= 1,   (i, j) ∈ P,

i.e. d_W <= b − 1 for similar pairs (y = +1) and d_W >= b + 1 for dissimilar pairs
(y = −1), d_W the squared learned distance.  (The paper writes ‖W‖²_F; the factor ½ does
not change the minimizer.)  It is the spectral problem (13) with f(A) = ½‖A‖²_F, whose
minimizer is α = 0, so by Theorem 4 it is solved in kernel space as

    min_{K ⪰ 0} ½‖K0^-½ K K0^-½‖²_F   s.t.  the same constraints on K,

with W* = Φ S Φᵀ, S = K0⁺ K* K0⁺ and the learned kernel κ(z1, z2) = k1ᵀ S k2 (eq. 18
with α = 0).  The classes below are :class:`SpectralKernel` / :class:`SpectralMetric`
with the :class:`Frobenius` regularizer and pair constraints built by
:func:`pola_constraints`; their fast solver is :func:`cvxkml.solvers.pola.pola_dual`.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._validation import as_float_array
from ..errors import InvalidInputError
from ..sideinfo import Hinge, LinearConstraints, PairConstraints, RelativeConstraints, SimilarityConstraints
from .regularizers import Frobenius
from .spectral import SpectralKernel, SpectralMetric

__all__ = ["pola_constraints", "POLAKernel", "POLAMetric"]


def pola_constraints(i, j, y, b=2.0) -> PairConstraints:
    """POLA's margin constraints y (b − d(i, j)) >= 1 as :class:`PairConstraints`:
    bound b − 1 for similar pairs (y = +1, d <= b − 1) and b + 1 for dissimilar pairs
    (y = −1, d >= b + 1).

    Parameters
    ----------
    i, j : array-like of int
        Index arrays of the pairs.
    y : array-like
        +1 (similar) / −1 (dissimilar) per pair.
    b : float or array-like
        The distance threshold, a scalar or one value per pair; every similar pair needs
        b > 1 (d <= b − 1 <= 0 would force a zero distance).
    """
    y = as_float_array(y, "y", finite=False).ravel()
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise InvalidInputError("y must be +1 (similar) or -1 (dissimilar) for every pair.")
    b = as_float_array(b, "b", finite=False).ravel()
    if b.size == 1:
        b = np.full(y.size, float(b[0]))
    if b.size != y.size:
        raise InvalidInputError(f"b must be a scalar or one value per pair ({y.size}); got {b.size}.")
    if not np.all(np.isfinite(b)):
        raise InvalidInputError("The POLA threshold b must be finite.")
    bound = b - y
    bad = np.flatnonzero(bound <= 0)
    if bad.size:
        raise InvalidInputError(
            f"POLA threshold b = {b[bad[0]]:g} gives a non-positive bound b − 1 for similar pair "
            f"{bad[0]}; choose b > 1 (similar pairs need d <= b − 1 > 0)."
        )
    return PairConstraints(i, j, y, bound)


_SIDE_INFO = (PairConstraints, RelativeConstraints, SimilarityConstraints, LinearConstraints, Hinge)


def _pola_side_info(constraints, rest, b, owner):
    """The constraint objects of a POLA problem: ``constraints`` as given (a constraint
    object or a list of them, e.g. :func:`pola_constraints`), or the deprecated
    positional form (i, j, y[, b]) turned into :func:`pola_constraints`."""
    first = "K0" if owner == "POLAKernel" else "X"
    items = constraints if isinstance(constraints, (list, tuple)) else [constraints]
    if len(items) and all(isinstance(c, _SIDE_INFO) for c in items):
        if rest or b is not None:
            raise InvalidInputError(
                f"{owner}({first}, constraints) takes constraint objects and no further i, j, y or "
                f"b; pass {owner}({first}, pola_constraints(i, j, y, b))."
            )
        return constraints
    if len(rest) not in (2, 3):
        raise InvalidInputError(
            f"{owner} takes constraint objects; got {type(constraints).__name__} and {len(rest)} more "
            f"positional argument(s). Pass e.g. {owner}({first}, pola_constraints(i, j, y, b))."
        )
    warnings.warn(
        f"{owner}({first}, i, j, y, b) is deprecated and will be removed in the next "
        f"release; use {owner}({first}, pola_constraints(i, j, y, b)).",
        DeprecationWarning,
        stacklevel=3,
    )
    j, y = rest[0], rest[1]
    bb = rest[2] if len(rest) == 3 else (2.0 if b is None else b)
    return pola_constraints(constraints, j, y, bb)


class POLAKernel(SpectralKernel):
    """Kernel-space POLA (Jain et al. §5.2): ``SpectralKernel(K0, constraints, Frobenius())``.

    Parameters
    ----------
    K0 : array-like (n, n), PSD (rank-deficient: solved on its range space).
    constraints : constraint object(s)
        POLA's own are :func:`pola_constraints` ``(i, j, y, b)`` (any family, and
        :class:`~cvxkml.sideinfo.Hinge` slack, go to the dual solver).  The former form
        ``POLAKernel(K0, i, j, y, b)`` still works, with a DeprecationWarning.
    """

    def __init__(self, K0, constraints, *rest, b=None):
        super().__init__(K0, _pola_side_info(constraints, rest, b, "POLAKernel"), Frobenius())
        self.solver_tag = "kernel-pola"


class POLAMetric(SpectralMetric):
    """Batch POLA on features: ``SpectralMetric(X, constraints, Frobenius())`` (W d × d, or
    the data's span for wide data: ``space`` as for :class:`~cvxkml.declare.ITML`);
    ``constraints`` as in :class:`POLAKernel`."""

    def __init__(self, X, constraints, *rest, b=None, space="auto"):
        super().__init__(X, _pola_side_info(constraints, rest, b, "POLAMetric"), Frobenius(), space=space)
        self.solver_tag = "metric-pola"
