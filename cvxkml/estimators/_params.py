"""Parameter rules of the estimators: one constraint per ``__init__`` parameter.

A constraint is a callable ``(value, name) -> the value to use`` that raises
:class:`cvxkml.errors.InvalidInputError` with the library's message; an estimator declares
one per parameter in its class-level dict ``_parameter_constraints`` (scikit-learn's
declarative style), checked at the start of ``fit`` by
:meth:`cvxkml.estimators._base.CvxkmlEstimator._validate_params`.  :class:`Real`,
:class:`Integer` and :class:`Options` are the common kinds; any other rule is a plain
function of the same signature.  The groups shared by several families are declared here
once: :data:`KERNEL_CONSTRAINTS`, :data:`PAIR_CONSTRAINTS`, :data:`SLACK_CONSTRAINTS`,
:data:`BREGMAN_CONSTRAINTS`, :data:`CONTROL_CONSTRAINTS`, :data:`STANDARDIZE_CONSTRAINTS`.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import as_generator, check_number
from ..errors import InvalidInputError
from ..kernels import KERNEL_PARAMS  # noqa: F401 (re-exported: the estimators' kernel_params)

__all__ = [
    "Real",
    "Integer",
    "Options",
    "POSITIVE",
    "NON_NEGATIVE",
    "KERNEL_PARAMS",
    "KERNEL_CONSTRAINTS",
    "PAIR_CONSTRAINTS",
    "SLACK_CONSTRAINTS",
    "BREGMAN_CONSTRAINTS",
    "CONTROL_CONSTRAINTS",
    "STANDARDIZE_CONSTRAINTS",
]


class Real:
    """A finite real number in [low, high] (``low_open``: (low, high]); None passes when
    ``none``.  ``what`` words the valid values in the message."""

    def __init__(self, low=None, high=None, *, low_open=False, none=False, what=None):
        self.low, self.high, self.low_open, self.none, self.what = low, high, low_open, none, what

    def __call__(self, value, name):
        return check_number(
            value, name, low=self.low, high=self.high, low_open=self.low_open, allow_none=self.none, what=self.what
        )


POSITIVE = Real(0.0, low_open=True, what="a finite positive number")
NON_NEGATIVE = Real(0.0, what="a finite non-negative number")


class Integer:
    """An integer (not a bool) >= ``low`` and <= ``high``; None passes when ``none``.
    ``whole_floats`` also accepts floats holding whole numbers (5.0)."""

    def __init__(self, low=1, high=None, *, none=False, whole_floats=False):
        self.low, self.high, self.none, self.whole_floats = low, high, none, whole_floats

    def __call__(self, value, name):
        if value is None and self.none:
            return None
        ok = isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
        if not ok and self.whole_floats and isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
            ok = bool(np.isfinite(float(value)) and float(value).is_integer())
        if ok and int(value) >= self.low:
            if self.high is not None and int(value) > self.high:
                raise InvalidInputError(f"{name} must be at most {self.high}; got {value!r}.")
            return int(value)
        kind = {0: "a non-negative integer", 1: "a positive integer"}.get(self.low, f"an integer >= {self.low}")
        raise InvalidInputError(f"{name} must be {'None or ' if self.none else ''}{kind}; got {value!r}.")


class Options:
    """One of the given strings; None passes when ``none``.  ``what`` words them in the
    message (default "one of …"), ``hint`` is appended."""

    def __init__(self, *choices, what=None, hint="", none=False):
        self.choices, self.hint, self.none = choices, hint, none
        self.what = what or "one of " + ", ".join(repr(c) for c in choices)

    def __call__(self, value, name):
        if (isinstance(value, str) and value in self.choices) or (value is None and self.none):
            return value
        raise InvalidInputError(
            f"{name} must be {'None or ' if self.none else ''}{self.what}; got {value!r}.{self.hint}"
        )


def _check_percentiles(value, name):
    try:
        lo, hi = (float(p) for p in value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a pair (lower, upper); got {value!r}.") from exc
    if not 0 <= lo < hi <= 100:
        raise InvalidInputError(f"{name} must satisfy 0 <= lower < upper <= 100; got {value!r}.")
    return lo, hi


def _check_random_state(value, name):
    # a RandomState is only drawn from at fit time (as_generator consumes one draw of it)
    if not isinstance(value, np.random.RandomState):
        as_generator(value)
    return value


def _check_kernel_params(value, name):
    if value is not None and not isinstance(value, dict):
        raise InvalidInputError(f"{name} must be a dict or None; got {value!r}.")
    return value


#: the base kernel κ0 (the allowed ``kernel_params`` are checked against the kernel in
#: :meth:`CvxkmlEstimator._base_kernel`)
KERNEL_CONSTRAINTS = {"kernel": Options(*sorted(KERNEL_PARAMS)), "kernel_params": _check_kernel_params}
#: pair constraints drawn from labels (Jain et al. 2012 §6; the ITML code)
PAIR_CONSTRAINTS = {
    "scheme": Options("jain", "itml", what="'jain' or 'itml'"),
    "n_similar": Integer(0),
    "n_dissimilar": Integer(0),
    "n_constraints": Integer(1, none=True),
    "random_state": _check_random_state,
}
#: the slack weight γ of the LogDet and von Neumann problems (None: hard constraints)
SLACK_CONSTRAINTS = {"gamma": Real(0.0, low_open=True, none=True, what="a finite positive number")}
#: the Bregman / Uzawa families: pair bounds from percentiles, stopping rule
#: (``max_sweeps`` is the deprecated former name of ``max_iter``)
BREGMAN_CONSTRAINTS = {
    **PAIR_CONSTRAINTS,
    "percentiles": _check_percentiles,
    "tol": POSITIVE,
    "max_iter": Integer(1),
    "max_sweeps": Integer(1, none=True),
}


def _check_verbose(value, name):
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    return Integer(0)(value, name)


def _check_callback(value, name):
    if value is not None and not callable(value):
        raise InvalidInputError(f"{name} must be None or a callable taking one dict; got {type(value).__name__}.")
    return value


def _check_standardize(value, name):
    if isinstance(value, str) and value == "auto":
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidInputError(f"{name} must be 'auto', True or False; got {value!r}.")


#: progress and control, shared by every estimator
CONTROL_CONSTRAINTS = {"verbose": _check_verbose, "callback": _check_callback}
#: standardization of the features before the base kernel
STANDARDIZE_CONSTRAINTS = {"standardize": _check_standardize}
