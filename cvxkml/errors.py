"""Typed errors and warnings of cvxkml.

Every error says what went wrong and what to do about it.  All errors derive from
:class:`CvxkmlError`, which is a :class:`ValueError`, so code written for the usual
scikit-learn conventions keeps working.
"""

from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning


class CvxkmlError(ValueError):
    """Base class of all cvxkml errors."""


class InvalidInputError(CvxkmlError):
    """An input array or parameter is malformed (shape, NaN/inf, range, sign)."""


class NotPSDError(InvalidInputError):
    """A matrix that must be positive (semi)definite is not."""


class EstimatorFileError(InvalidInputError):
    """A file given to load an estimator is not a saved cvxkml estimator, is damaged, or
    holds a model that fails validation (class, parameters, fitted attributes, arrays); the
    message names the file and the reason.  Loading runs no code from the file."""


class InfeasibleError(CvxkmlError):
    """The hard-constraint problem has no feasible point (or the solver could not find one)."""


class UnboundedError(CvxkmlError):
    """The problem is unbounded below (no dual-feasible point), e.g. the LogDet-barrier SDP
    with a C0 that is not positive definite on the feasible directions."""


class SolverError(CvxkmlError):
    """A numerical solver failed or returned a non-optimal status."""


class ConvergenceWarning(_SklearnConvergenceWarning):
    """A fast solver stopped before meeting its tolerance (a scikit-learn
    ``ConvergenceWarning``, so the usual scikit-learn warning filters apply)."""
