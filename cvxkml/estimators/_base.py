"""What every cvxkml estimator shares, written once (metric-learn's ``MahalanobisMixin`` is
the model): parameter validation, the base kernel, the training data and labels, the pair
side information, and the metric vocabulary ``transform``, ``pair_distance``,
``pair_score``, ``get_metric``, ``get_mahalanobis_matrix`` and ``learned_kernel``.

A family module (``logdet``, ``spectral``, ``trace``, ``pola``, ``kcr``, ``mkl``,
``yeung``) then holds only what its paper specifies: the problem it solves in ``fit`` and
the map of new points it learns.

Parameters are validated in one place (:meth:`CvxkmlEstimator._validate_params`, at the
start of ``fit``), from the class-level dict ``_parameter_constraints`` that declares one
constraint per parameter (scikit-learn's declarative style; the constraints raise
:class:`cvxkml.errors.InvalidInputError` with the library's messages).  The constraints
shared by several families are declared here once: :data:`KERNEL_CONSTRAINTS`,
:data:`PAIR_CONSTRAINTS`, :data:`BREGMAN_CONSTRAINTS`.

The learned map of new points is :meth:`CvxkmlEstimator._embedding`, a picklable callable
(features → learned coordinates, with ``from_cross`` for a precomputed kernel); the learned
squared distances of paired rows are :meth:`CvxkmlEstimator._distance` (by default the
Euclidean distances of the embedding).  ``transform``, ``pair_distance`` and ``get_metric``
are built on these two and nothing else.
"""
from __future__ import annotations

import copy
import numbers
import re
import textwrap
import warnings
from functools import partial
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import (as_float_array, as_generator, check_index_array, check_number,
                           estimator_data, estimator_fit_data, estimator_pairs)
from .._progress import LOGGER, ProgressMonitor as FitMonitor, fmt as _fmt, verbose_logging as _verbose_logging
from ..errors import InvalidInputError
from ..kernels import Kernel
from ..learned import LearnedKernel, kernel_S
from ..sideinfo import PairConstraints, baseline_kernel, percentile_bounds
from ._persist import load as _persist_load, save as _persist_save

__all__ = ["CvxkmlEstimator", "PairLearnerMixin", "ComponentsMixin", "LearnedKernelMixin",
           "KernelExtensionMixin", "KERNEL_PARAMS", "KERNEL_CONSTRAINTS", "PAIR_CONSTRAINTS",
           "SLACK_CONSTRAINTS", "BREGMAN_CONSTRAINTS", "POSITIVE", "NON_NEGATIVE", "Real",
           "Integer", "Options", "Check", "LinearMap", "KernelMap", "FactorCross",
           "EmbeddingDistance", "point_distance", "training_kernel", "given_pairs", "DOCS",
           "fill_doc", "StandardizedKernel", "FitMonitor", "LOGGER", "CONTROL_CONSTRAINTS",
           "median_heuristic_gamma", "MEDIAN_SAMPLE"]

#: base kernel name -> the ``kernel_params`` it takes
KERNEL_PARAMS = {
    "linear": frozenset(), "precomputed": frozenset(),
    "gaussian": frozenset({"sigma", "gamma"}), "rbf": frozenset({"sigma", "gamma"}),
    "polynomial": frozenset({"degree", "coef0", "scale"}), "poly": frozenset({"degree", "coef0", "scale"}),
}


# =========================================================================== constraints
class Real:
    """A finite real number in [low, high] (``low_open``: (low, high]); None passes when
    ``none``.  ``what`` words the valid values in the message."""

    def __init__(self, low=None, high=None, *, low_open=False, none=False, what=None):
        self.low, self.high, self.low_open, self.none, self.what = low, high, low_open, none, what

    def __call__(self, value, name):
        return check_number(value, name, low=self.low, high=self.high, low_open=self.low_open,
                            allow_none=self.none, what=self.what)


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
        if not ok and self.whole_floats and isinstance(value, numbers.Real) \
                and not isinstance(value, (bool, np.bool_)):
            ok = bool(np.isfinite(float(value)) and float(value).is_integer())
        if ok and int(value) >= self.low:
            if self.high is not None and int(value) > self.high:
                raise InvalidInputError(f"{name} must be at most {self.high}; got {value!r}.")
            return int(value)
        kind = {0: "a non-negative integer", 1: "a positive integer"}.get(
            self.low, f"an integer >= {self.low}")
        raise InvalidInputError(f"{name} must be {'None or ' if self.none else ''}{kind}; got {value!r}.")


class Options:
    """One of the given strings; ``what`` words them in the message (default "one of …"),
    ``hint`` is appended."""

    def __init__(self, *choices, what=None, hint=""):
        self.choices, self.hint = choices, hint
        self.what = what or "one of " + ", ".join(repr(c) for c in choices)

    def __call__(self, value, name):
        if isinstance(value, str) and value in self.choices:
            return value
        raise InvalidInputError(f"{name} must be {self.what}; got {value!r}.{self.hint}")


class Check:
    """Any other check: ``func(value, name)`` returns the value to use or raises."""

    def __init__(self, func):
        self.func = func

    def __call__(self, value, name):
        return self.func(value, name)


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
KERNEL_CONSTRAINTS = {"kernel": Options(*sorted(KERNEL_PARAMS)),
                      "kernel_params": Check(_check_kernel_params)}
#: pair constraints drawn from labels (Jain et al. 2012 §6; the ITML code)
PAIR_CONSTRAINTS = {"scheme": Options("jain", "itml", what="'jain' or 'itml'"),
                    "n_similar": Integer(0), "n_dissimilar": Integer(0),
                    "n_constraints": Integer(1, none=True),
                    "random_state": Check(_check_random_state)}
#: the slack weight γ of the LogDet and von Neumann problems (None: hard constraints)
SLACK_CONSTRAINTS = {"gamma": Real(0.0, low_open=True, none=True, what="a finite positive number")}
#: the Bregman / Uzawa families: pair bounds from percentiles, stopping rule
#: (``max_sweeps`` is the deprecated former name of ``max_iter``)
BREGMAN_CONSTRAINTS = {**PAIR_CONSTRAINTS, "percentiles": Check(_check_percentiles),
                       "tol": POSITIVE, "max_iter": Integer(1), "max_sweeps": Integer(1, none=True)}


def _check_verbose(value, name):
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    return Integer(0)(value, name)


def _check_callback(value, name):
    if value is not None and not callable(value):
        raise InvalidInputError(
            f"{name} must be None or a callable taking one dict; got {type(value).__name__}.")
    return value


def _check_standardize(value, name):
    if isinstance(value, str) and value == "auto":
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidInputError(f"{name} must be 'auto', True or False; got {value!r}.")


#: progress and control, shared by every estimator
CONTROL_CONSTRAINTS = {"verbose": Check(_check_verbose), "callback": Check(_check_callback)}
#: standardization of the features before the base kernel
STANDARDIZE_CONSTRAINTS = {"standardize": Check(_check_standardize)}


# =========================================================================== picklable maps
class LinearMap:
    """x ↦ L x (rows: X Lᵀ)."""

    def __init__(self, L):
        self.L = L

    def __call__(self, X):
        return X @ self.L.T


class KernelMap:
    """x ↦ g(κ0(x, X_fit)): ``cross`` is a matrix P (g(k) = k P) or a callable g.
    ``from_cross`` takes κ0(X, X_fit) itself (a precomputed kernel)."""

    def __init__(self, kernel, X_fit, cross):
        self.kernel, self.X_fit, self.cross = kernel, X_fit, cross

    def from_cross(self, K_cross):
        return K_cross @ self.cross if isinstance(self.cross, np.ndarray) else self.cross(K_cross)

    def __call__(self, X):
        return self.from_cross(self.kernel(X, self.X_fit))


class FactorCross:
    """κ0(x, X_fit) ↦ Bᵀ g(x), g the factor coordinates of a factorization K0 ≈ G0 G0ᵀ
    (Kulis et al. 2009 §6.1)."""

    def __init__(self, factorization, B):
        self.factorization, self.B = factorization, B

    def __call__(self, K_cross):
        return self.factorization.transform_cross(K_cross) @ self.B


class EmbeddingDistance:
    """Squared Euclidean distances between the embeddings of paired rows of A and B."""

    def __init__(self, embed):
        self.embed = embed

    def __call__(self, A, B):
        # a linear map takes the difference first (one product, no cancellation)
        D = self.embed(A - B) if isinstance(self.embed, LinearMap) else self.embed(A) - self.embed(B)
        return np.einsum("ij,ij->i", D, D)


class _EmbeddingKernel:
    """The learned kernel as inner products of embeddings."""

    def __init__(self, embed):
        self.embed = embed

    def __call__(self, X, Y):
        return self.embed(X) @ self.embed(Y).T


def point_distance(u, v, sq_distances):
    """The learned distance between two feature vectors (what ``get_metric`` returns)."""
    a = np.asarray(u, dtype=float).reshape(1, -1)
    b = np.asarray(v, dtype=float).reshape(1, -1)
    return float(np.sqrt(max(float(sq_distances(a, b)[0]), 0.0)))


def training_kernel(kern: Kernel, X) -> np.ndarray:
    """The symmetrized training kernel matrix κ0(X, X); with ``kern`` precomputed, X must
    be that square matrix (a clear error otherwise)."""
    if kern.precomputed and X.shape[0] != X.shape[1]:
        raise InvalidInputError(
            "With kernel='precomputed', X must be the square training kernel matrix "
            f"κ0(X_train, X_train); got shape {X.shape}.")
    K0 = kern(X, X)
    return 0.5 * (K0 + K0.T)


# =========================================================================== data-driven defaults
#: the median heuristic uses at most this many training points (a fixed-seed sample above)
MEDIAN_SAMPLE = 1000


def median_heuristic_gamma(Z) -> float:
    """The median heuristic of the Gaussian width: gamma = 1 / median_{i<j} ‖z_i − z_j‖²
    over the rows of Z (the squared distances from :func:`sklearn.metrics.pairwise_distances`;
    above :data:`MEDIAN_SAMPLE` rows, over a fixed-seed sample of that many rows, so the
    rule does not depend on ``random_state``).  Zero distances (repeated points) are left
    out; with no positive distance at all gamma = 1.  Equivalently σ² = median / 2 in
    exp(−‖x − y‖² / (2σ²)): the kernel value at the median distance is e^{-1}."""
    from sklearn.metrics import pairwise_distances
    Z = np.asarray(Z, dtype=float)
    if Z.shape[0] > MEDIAN_SAMPLE:
        Z = Z[np.sort(np.random.default_rng(0).choice(Z.shape[0], MEDIAN_SAMPLE, replace=False))]
    D = pairwise_distances(Z, metric="sqeuclidean")
    d = D[np.triu_indices(Z.shape[0], 1)]
    d = d[d > 0]
    if d.size == 0:
        return 1.0
    med = float(np.median(d))
    return 1.0 / med if np.isfinite(med) and med > 0 else 1.0


def standardization(X):
    """(mean, scale) of the columns of X: the training mean and standard deviation, a
    standard deviation of 0 (a constant feature) replaced by 1 (as
    :class:`sklearn.preprocessing.StandardScaler`)."""
    X = np.asarray(X, dtype=float)
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(np.isfinite(scale) & (scale > 10 * np.finfo(float).eps * np.maximum(np.abs(mean), 1.0)),
                     scale, 1.0)
    return mean, scale


class StandardizedKernel:
    """A base kernel evaluated on standardized features, κ(x, y) = κ0((x − m) / s, (y − m) / s)
    with the training mean m and standard deviation s (one per feature).  It has the
    interface of :class:`cvxkml.kernels.Kernel` (called on two point sets, ``paired``,
    ``diag``, ``name``, ``params``, ``precomputed``), so every learned map built on κ0 applies
    it to new points unchanged."""

    def __init__(self, kernel: Kernel, mean, scale):
        self.kernel = kernel
        self.mean = np.asarray(mean, dtype=float)
        self.scale = np.asarray(scale, dtype=float)

    name = property(lambda self: self.kernel.name)
    params = property(lambda self: self.kernel.params)
    precomputed = property(lambda self: False)

    def standardize(self, X) -> np.ndarray:
        """(X − m) / s."""
        return (np.asarray(X, dtype=float) - self.mean) / self.scale

    def __call__(self, X, Y=None):
        Z = self.standardize(X)
        return self.kernel(Z, None if Y is None or Y is X else self.standardize(Y))

    def paired(self, A, B):
        Za = self.standardize(A)
        return self.kernel.paired(Za, Za if B is A else self.standardize(B))

    def diag(self, X):
        Z = self.standardize(X)
        return self.kernel.paired(Z, Z)

    def __repr__(self):
        return f"StandardizedKernel({self.kernel!r})"


# =========================================================================== progress
# the progress record, the cvxkml logger and the temporary stderr handler are shared with
# every Problem.solve (verbose=): they live in cvxkml._progress

# =========================================================================== docstrings
#: docstring pieces several estimators share, written once: a line ``%(name)s`` (alone on its
#: line, any indentation) or an inline ``%(name)s`` in a docstring is replaced by the piece
DOCS = {
    "features_in": """\
n_features_in_ : int
    Number of features seen in ``fit`` (n_train for ``kernel="precomputed"``).
feature_names_in_ : ndarray of shape (n_features_in_,)
    Feature names, when X has string column names.""",
    "kernel_fitted": """\
X_fit_ : ndarray of shape (n_train, n_features)
    The training points (with ``kernel="precomputed"``: the training kernel matrix).
kernel_ : cvxkml.kernels.Kernel
    The base kernel with its resolved parameters.""",
    "kernel_parameters": """\
kernel : {"gaussian", "rbf", "linear", "polynomial", "poly", "precomputed"}, \
default="gaussian"
    The base kernel κ0.  With ``"precomputed"``, ``fit`` takes the square training kernel
    matrix κ0(X_train, X_train) and ``transform`` takes κ0(X_new, X_train) of shape
    (n_new, n_train).
kernel_params : dict or None, default=None
    Parameters of the base kernel: ``sigma`` or ``gamma`` for the Gaussian kernel
    κ0(x, y) = exp(−gamma·‖x − y‖²) (gamma = 1 / (2 sigma²)); ``degree``, ``coef0``,
    ``scale`` for the polynomial kernel (scale·xᵀy + coef0)^degree (defaults 2, 1, 1);
    none for the linear and precomputed kernels.  ``None`` uses the defaults; for the
    Gaussian kernel the width comes from the data at fit time by the median heuristic,
    gamma = 1 / median_{i<j} ‖z_i − z_j‖² over the training points z (standardized, see
    ``standardize``; a fixed-seed sample of 1000 points for larger sets), i.e.
    σ² = median / 2: the kernel value at the median distance is e^{-1}.""",
    "standardize": """\
standardize : "auto" or bool, default="auto"
    Standardize the features before the base kernel: z = (x − m) / s with the training
    mean m and standard deviation s of each feature (a constant feature keeps s = 1), kept
    as ``feature_mean_`` / ``feature_scale_`` and applied to every new point.  ``"auto"``
    standardizes for the Gaussian kernel when its width is left to the median heuristic
    (``kernel_params=None``): the defaults then give the same results on raw and on
    standardized features.  A given width, the linear and polynomial kernels (whose
    values depend on the features' origin and scale by design) and a precomputed kernel
    see the features as given.""",
    "control": """\
verbose : int, default=0
    Progress on the ``cvxkml`` logger (:mod:`logging`, INFO level): with verbose = k > 0 a
    line at every k-th certificate check of the solver (iteration, objective, certified
    relative gap, relative violation) and a summary at the end of ``fit``.  When no
    logging handler is configured the lines go to stderr for the duration of ``fit``.
callback : callable or None, default=None
    Called at every certificate check of the solver with one dict (``estimator``,
    ``stage``, ``iteration``, ``objective``, ``gap``, ``violation`` and the solver's own
    entries).  A truthy return stops the fit early: the estimator keeps the solver's last
    (best) iterate and is usable, the solver emits a
    :class:`cvxkml.errors.ConvergenceWarning` and ``converged_`` is False.""",
    "standardize_fitted": """\
feature_mean_, feature_scale_ : ndarray of shape (n_features,) or None
    The standardization applied before the base kernel (None: features used as given).""",
    "converged": """\
converged_ : bool
    Whether the solver certified its tolerance (False when it ran out of iterations or the
    ``callback`` stopped it).""",
    "pairs_fitted": """\
pairs_ : cvxkml.sideinfo.PairConstraints
    The pair constraints learned from (pass them back as ``pairs`` to refit on them).""",
    "X_new": """\
Parameters
----------
X : array-like of shape (n_samples, n_features), or (n_samples, n_train) for \
``kernel="precomputed"``
    New points (with ``"precomputed"``: the kernel values κ0(X, X_train)).""",
    "fitted_self": """\
Returns
-------
self : object
    The fitted estimator.""",
    "jain2012": 'Jain, Kulis, Davis & Dhillon, "Metric and kernel learning using a linear '
                'transformation", JMLR 13, 2012',
    "kulis2009": 'Kulis, Sustik & Dhillon, "Low-rank kernel learning with Bregman matrix '
                 'divergences", JMLR 10, 2009',
}
_PIECE_LINE = re.compile(r"^( *)%\((\w+)\)s$", re.MULTILINE)


def fill_doc(obj):
    """Put the :data:`DOCS` pieces into the docstring of ``obj`` (a class or a function)."""
    doc = obj.__doc__
    if doc and "%(" in doc:
        doc = _PIECE_LINE.sub(lambda m: textwrap.indent(DOCS[m.group(2)], m.group(1)), doc)
        for key, text in DOCS.items():
            doc = doc.replace(f"%({key})s", text)
        obj.__doc__ = doc
    return obj


# =========================================================================== the base
#: the library's estimator classes, registered by CvxkmlEstimator.__init_subclass__ (the
#: public tuple is cvxkml.estimators.ESTIMATORS; a test checks that both agree)
_REGISTRY: list = []


def save(estimator, path) -> None:
    """Write a fitted cvxkml estimator to an ``.npz`` file without pickle (format:
    :mod:`cvxkml.estimators._persist`).

    Parameters
    ----------
    estimator : a fitted estimator of :data:`cvxkml.estimators.ESTIMATORS`
    path : str, path-like or a writable binary file object
        ``.npz`` is appended to a file name without it (NumPy's rule).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        The estimator is not fitted.
    InvalidInputError
        Not a cvxkml estimator (a user's subclass included), or a fitted attribute that
        is not plain data.
    """
    _persist_save(estimator, path, tuple(_REGISTRY))


def load(path, cls=None, *, max_bytes=None):
    """Read an estimator written by :func:`save`, validating everything in the file
    (nothing in it is trusted or run; the checks are listed in
    :mod:`cvxkml.estimators._persist`).

    Parameters
    ----------
    path : str, path-like or a readable binary file object
    cls : estimator class or None
        When given, the file must hold an estimator of exactly this class (or of a
        subclass, when ``cls`` is a base such as ``CvxkmlEstimator``).
    max_bytes : int or None, default=None
        The most bytes decompressed from the file (None:
        :data:`cvxkml.estimators._persist.MAX_BYTES`, 2 GiB); a file declaring more is refused
        before anything is decompressed.

    Returns
    -------
    estimator : the fitted estimator, with the parameters it was saved with (``callback``
        and a RandomState/Generator ``random_state`` as None).

    Raises
    ------
    cvxkml.errors.EstimatorFileError
        Not a saved cvxkml estimator, damaged, too large, or a model that fails validation
        (the message names the file and the reason).
    cvxkml.estimators.FormatVersionError
        Written in another format version.
    cvxkml.estimators.EstimatorClassError
        It holds another class than ``cls``, or a class this cvxkml does not have.
    """
    return _persist_load(path, tuple(_REGISTRY), cls, max_bytes)


class CvxkmlEstimator(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """The behaviour every cvxkml estimator shares.

    A subclass declares ``_parameter_constraints`` (one entry per ``__init__`` parameter),
    stores its parameters with :meth:`_store`, validates them with
    :meth:`_validate_params` at the start of ``fit`` and implements :meth:`_embedding`
    (and :meth:`_distance` when the learned distance is not the embedding's).
    """

    #: parameter name -> constraint (a callable (value, name) -> the value to use)
    _parameter_constraints: dict = {}
    #: the kernel parameters each base kernel takes (KCRClassifier narrows it)
    _kernel_params_allowed = KERNEL_PARAMS
    _kernel_params_hint = ""
    #: the fewest classes ``fit`` accepts, and why (for the message)
    _min_classes = 2
    _classes_reason = ""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__module__.startswith("cvxkml.estimators.") and not cls.__name__.startswith("_"):
            _REGISTRY.append(cls)
        fill_doc(cls)
        for value in vars(cls).values():
            if callable(value):
                fill_doc(value)

    def _store(self, params: dict) -> None:
        """Keep the ``__init__`` arguments unchanged as attributes (scikit-learn's rule);
        ``params`` is the ``__init__``'s ``locals()``."""
        for name, value in params.items():
            if name != "self":
                setattr(self, name, value)

    # ------------------------------------------------------------------ validation
    def _validate_params(self) -> SimpleNamespace:
        """Check every parameter against its declared constraint and the relations between
        them (:meth:`_check_param_relations`); returns the checked values.

        Raises
        ------
        InvalidInputError
            A parameter outside its constraint.
        """
        params = self.get_params(deep=False)
        p = SimpleNamespace(**{name: check(params[name], name)
                               for name, check in self._parameter_constraints.items()})
        if getattr(p, "max_sweeps", None) is not None:
            warnings.warn(f"{type(self).__name__}(max_sweeps=...) is deprecated and will be removed in "
                          "the next release; use max_iter=... (the one name of the iteration limit of "
                          "every estimator).", DeprecationWarning, stacklevel=3)
            p.max_iter = p.max_sweeps
        self._check_param_relations(p)
        p.monitor = FitMonitor(type(self).__name__, getattr(p, "verbose", 0), getattr(p, "callback", None))
        return p

    def _check_param_relations(self, p) -> None:
        """Constraints between parameters (subclasses extend it)."""

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> None:
        """Write the fitted estimator (its parameters and everything it learned) to an
        ``.npz`` file, without pickle (format: :mod:`cvxkml.estimators._persist`).
        ``transform``, ``pair_distance``, ``predict``… of the loaded estimator equal this
        one's bit for bit.

        Parameters
        ----------
        path : str, path-like or writable binary file object
            ``.npz`` is appended to a file name without it.
        """
        save(self, path)

    @classmethod
    def load(cls, path, *, max_bytes=None):
        """Read an estimator of this class written by :meth:`save`.

        Parameters
        ----------
        path : str, path-like or readable binary file object

        Returns
        -------
        estimator : the fitted estimator

        Raises
        ------
        cvxkml.estimators.EstimatorClassError
            The file holds another estimator class.
        cvxkml.estimators.FormatVersionError
            The file was written in another format version.
        cvxkml.errors.EstimatorFileError
            Not a saved cvxkml estimator, damaged, or a model that fails validation.
        """
        return load(path, cls, max_bytes=max_bytes)

    def _labelled_data(self, X, y):
        """X (float64, at least 2 samples) and class labels y of at least ``_min_classes``
        classes."""
        X, y = estimator_fit_data(self, X, y)
        classes = np.unique(y)
        if classes.size < self._min_classes:
            raise InvalidInputError(
                f"{type(self).__name__} needs labels from at least {self._min_classes} classes"
                f"{self._classes_reason}; y has 1 class ({classes[0]!r}).")
        return X, y

    # ------------------------------------------------------------------ base kernel
    @property
    def _precomputed(self) -> bool:
        return getattr(self, "kernel", None) == "precomputed"

    def _auto_standardize(self, p) -> bool:
        """What ``standardize="auto"`` does: standardize when the Gaussian kernel's width is
        left to the median heuristic (``kernel_params=None``); linear and polynomial
        kernels, and a given width, see the features as given."""
        return getattr(p, "kernel", None) in ("gaussian", "rbf") and not getattr(p, "kernel_params", None)

    def _standardizes(self, p) -> bool:
        """Whether ``fit`` standardizes the features (``standardize``, see
        :meth:`_auto_standardize`; never for a precomputed kernel)."""
        if getattr(p, "kernel", None) == "precomputed":
            return False
        mode = getattr(p, "standardize", False)
        return self._auto_standardize(p) if mode == "auto" else bool(mode)

    def _feature_standardization(self, X, p):
        """Set ``feature_mean_`` / ``feature_scale_`` (None when not standardizing) and
        return X standardized (or X)."""
        if self._standardizes(p):
            self.feature_mean_, self.feature_scale_ = standardization(X)
            return (X - self.feature_mean_) / self.feature_scale_
        self.feature_mean_ = self.feature_scale_ = None
        return X

    def _default_kernel_params(self, Z, p) -> dict:
        """Parameters of κ0 when ``kernel_params`` is empty: for the Gaussian kernel the
        median heuristic on the (standardized) training points Z
        (:func:`median_heuristic_gamma`)."""
        return {"gamma": median_heuristic_gamma(Z)} if p.kernel in ("gaussian", "rbf") else {}

    def _base_kernel(self, X, p):
        """κ0 from the validated ``kernel``, ``kernel_params`` and ``standardize`` on the
        training points X: a :class:`~cvxkml.kernels.Kernel`, wrapped in a
        :class:`StandardizedKernel` when the features are standardized.  Sets
        ``feature_mean_`` and ``feature_scale_``."""
        params = dict(p.kernel_params or {})
        allowed = self._kernel_params_allowed[p.kernel]
        unknown = set(params) - allowed
        if unknown:
            raise InvalidInputError(
                f"Unknown kernel_params {sorted(unknown)} for kernel={p.kernel!r}; "
                f"allowed: {sorted(allowed) or 'none'}.{self._kernel_params_hint}")
        if p.kernel == "precomputed":
            self.feature_mean_ = self.feature_scale_ = None
            return Kernel(p.kernel, params)
        Z = self._feature_standardization(X, p)
        kern = Kernel(p.kernel, params or self._default_kernel_params(Z, p))
        if self.feature_scale_ is None:
            return kern
        return StandardizedKernel(kern, self.feature_mean_, self.feature_scale_)

    def _kernel_matrix(self, X, p):
        """κ0 and the symmetrized training kernel matrix κ0(X, X)."""
        kern = self._base_kernel(X, p)
        return kern, training_kernel(kern, X)

    def _check_not_precomputed(self, what) -> None:
        if self._precomputed:
            raise InvalidInputError(
                f"{what} needs the base kernel between arbitrary points, which "
                "kernel='precomputed' does not provide; use transform with κ0(X, X_train), "
                "or fit with a named kernel.")

    def _set_solution(self, sol, n_iter=None, p=None, converged=None) -> None:
        """Keep the solver's result: ``solution_``, ``n_iter_`` and ``converged_`` (the
        solver's certificate, and False when the callback stopped the fit); log the
        summary when verbose."""
        self.solution_ = sol
        self.n_iter_ = int(sol.n_iter if n_iter is None else n_iter)
        monitor = getattr(p, "monitor", None)
        ok = bool(sol.converged if converged is None else converged)
        self.converged_ = ok and not (monitor is not None and monitor.stopped)
        if monitor is not None and monitor.verbose > 0:
            gap = sol.gap
            LOGGER.info("%s fitted: %s after %d iteration(s), objective %s, certified gap %s, "
                        "converged %s, %.3g s in the solver", type(self).__name__, sol.status,
                        self.n_iter_, _fmt(sol.objective),
                        _fmt(None if gap is None else gap / max(1.0, abs(sol.objective))),
                        self.converged_, sol.time)

    # ------------------------------------------------------------------ the learned map
    def _embedding(self):
        """The learned map of new points (picklable): called on features, or
        ``from_cross`` on κ0(X, X_train) for a precomputed kernel."""
        raise NotImplementedError

    def _distance(self):
        """A picklable callable (A, B) -> learned squared distances of the paired rows."""
        return EmbeddingDistance(self._embedding())

    def _embed(self, X):
        """The learned coordinates of validated input X (features, or κ0(X, X_train))."""
        emb = self._embedding()
        return emb.from_cross(X) if self._precomputed else emb(X)

    @fill_doc
    def transform(self, X):
        """Map X to the learned space: Euclidean distances there are the learned distances
        (see the class description for the map).

        %(X_new)s

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        InvalidInputError
            X malformed, or with another number of features than in ``fit``.
        """
        check_is_fitted(self)
        return self._embed(estimator_data(self, X))

    def pair_distance(self, pairs):
        """Learned (non-squared) distances of pairs of points.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)
            ``pairs[t, 0]`` and ``pairs[t, 1]`` are the two points of pair t.

        Returns
        -------
        distances : ndarray of shape (n_pairs,)

        Raises
        ------
        InvalidInputError
            ``pairs`` of another shape, or a precomputed base kernel (it gives no kernel
            values between new points).
        """
        check_is_fitted(self)
        self._check_not_precomputed("pair_distance")
        pairs = estimator_pairs(self, pairs)
        return np.sqrt(np.maximum(self._distance()(pairs[:, 0], pairs[:, 1]), 0.0))

    def pair_score(self, pairs):
        """Similarity scores of pairs, ``-pair_distance(pairs)`` (higher = more similar).

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        return -self.pair_distance(pairs)

    def get_metric(self):
        """The learned distance as a callable ``f(u, v) -> float`` between two feature
        vectors: a snapshot of this fit (refitting does not change it), picklable, usable as
        ``KNeighborsClassifier(metric=est.get_metric())``.

        Returns
        -------
        metric : callable

        Raises
        ------
        InvalidInputError
            For a precomputed base kernel.
        """
        check_is_fitted(self)
        self._check_not_precomputed("get_metric")
        return partial(point_distance, sq_distances=copy.deepcopy(self._distance()))

    @property
    def _n_features_out(self):
        return self.embedding_.shape[1]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.pairwise = self._precomputed
        return tags


class ComponentsMixin:
    """A linear map L on the (possibly kernel-mapped) features: ``components_``."""

    def get_mahalanobis_matrix(self):
        """The learned Mahalanobis matrix A = LᵀL on the map the estimator learns on.

        Returns
        -------
        A : ndarray of shape (n_map, n_map)
        """
        check_is_fitted(self)
        return self.components_.T @ self.components_

    @property
    def _n_features_out(self):
        return self.components_.shape[0]


class LearnedKernelMixin:
    """A learned kernel κ between arbitrary points: :meth:`learned_kernel`."""

    def _kernel_function(self):
        """A callable (X, Y) -> κ(X, Y); by default the embeddings' inner products."""
        return _EmbeddingKernel(self._embedding())

    def learned_kernel(self, X, Y=None):
        """The learned kernel matrix κ(X, Y) between arbitrary points.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
        Y : array-like of shape (n_samples_Y, n_features) or None, default=None
            None means Y = X.

        Returns
        -------
        K : ndarray of shape (n_samples_X, n_samples_Y)

        Raises
        ------
        InvalidInputError
            For a precomputed base kernel.
        """
        check_is_fitted(self)
        self._check_not_precomputed("learned_kernel")
        X = estimator_data(self, X)
        Y = X if Y is None else estimator_data(self, Y)
        return self._kernel_function()(X, Y)


class KernelExtensionMixin(LearnedKernelMixin):
    """A kernel learned on the training points, extended to new points by

        κ(z1, z2) = α κ0(z1, z2) + k1ᵀ S k2,   S = K0⁺ (K − α K0) K0⁺,  k_i = κ0(z_i, X_train)

    (Jain et al. 2012, eq. 6 / Theorem 1 for α = 1; eq. 18 / Theorem 4 in general).
    ``transform`` gives coordinates exact on the span of the training points; the learned
    distances and kernel values are exact everywhere."""

    def _extend(self, kern, X, K0, K, alpha=1.0):
        self.X_fit_ = X
        self.kernel_ = kern
        self.learned_kernel_ = LearnedKernel(kern, X, kernel_S(K0, K, alpha=alpha), alpha)

    def _embedding(self):
        return KernelMap(self.kernel_, self.X_fit_, self.learned_kernel_.embed_cross)

    def _distance(self):
        return self.learned_kernel_.pair_sq_distances

    def _kernel_function(self):
        return self.learned_kernel_


# =========================================================================== pairs
def given_pairs(pairs, n: int, bounds) -> PairConstraints:
    """User-given pairs as :class:`~cvxkml.sideinfo.PairConstraints` on n points.

    Parameters
    ----------
    pairs : PairConstraints or array-like of shape (m, 2) or (m, 3)
        A PairConstraints is used as given (its bounds too).  Rows (i, j) are similar
        pairs; rows (i, j, s) are similar (s = +1) or dissimilar (s = −1).
    n : int
        Number of training points the indices refer to.
    bounds : callable
        s -> the bound of each pair, for the array forms.

    Raises
    ------
    InvalidInputError
        Not one of these forms, empty, an index out of range, i = j, or s not ±1.
    """
    if isinstance(pairs, PairConstraints):
        return pairs.validate(n)
    hint = ("pairs must be a cvxkml.sideinfo.PairConstraints or an integer array of shape (m, 2) "
            "(similar pairs) or (m, 3) (rows i, j, +1 similar / -1 dissimilar)")
    if isinstance(pairs, (str, bytes, dict)):
        raise InvalidInputError(f"{hint}; got {pairs!r}.")
    try:
        arr = np.asarray(pairs)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{hint} ({exc}).") from exc
    if arr.ndim != 2 or arr.shape[1] not in (2, 3):
        raise InvalidInputError(f"{hint}; got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise InvalidInputError("pairs is empty; give at least one pair of point indices.")
    idx = check_index_array(arr[:, :2], "pairs", n, ndim=2)
    if arr.shape[1] == 3:
        s = as_float_array(arr[:, 2], "pairs[:, 2]", finite=False)
        if not np.all(np.isin(s, (-1.0, 1.0))):
            raise InvalidInputError("pairs[:, 2] must be +1 (similar) or -1 (dissimilar) in every row.")
    else:
        s = np.ones(arr.shape[0])
    return PairConstraints(idx[:, 0], idx[:, 1], s, bounds(s))


class PairLearnerMixin:
    """Learning from pair constraints: ``fit(X, y=None, *, pairs=None)`` with either class
    labels y (pairs drawn by ``scheme``) or user-given ``pairs``; ``pairs_`` holds the
    pairs used (a :class:`~cvxkml.sideinfo.PairConstraints`; passing it back as ``pairs``
    refits on exactly the same constraints)."""

    _classes_reason = " to form dissimilar pairs"

    @fill_doc
    def fit(self, X, y=None, *, pairs=None):
        """Learn from class labels y (pairs drawn from them) or from given pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) for \
``kernel="precomputed"``
            Training data (at least 2 samples, finite), or the training kernel matrix
            κ0(X_train, X_train).
        y : array-like of shape (n_samples,) or None, default=None
            Class labels; the pairs are drawn from them (see the class parameters).  Give
            y or ``pairs``, not both.
        pairs : PairConstraints or array-like of shape (m, 2) or (m, 3), default=None
            Pairs given by the user, indices into X (see the class description): a
            :class:`~cvxkml.sideinfo.PairConstraints` is used as given; rows (i, j) are
            similar pairs, rows (i, j, s) similar (s = +1) or dissimilar (s = −1) pairs.
            ``pairs_`` of a fitted estimator can be passed back.

        %(fitted_self)s

        Raises
        ------
        InvalidInputError
            A parameter out of its range; both or neither of y and ``pairs``; labels of
            too few classes; X malformed; a pair index out of range, a pair (i, i) or a
            sign other than ±1.
        NotPSDError
            A precomputed kernel matrix that is not positive semidefinite.
        """
        p = self._validate_params()
        X, y = self._fit_inputs(X, y, pairs)
        with _verbose_logging(p.verbose):
            self._fit(X, y, pairs, p)
        return self

    def _fit(self, X, y, pairs, p) -> None:
        """Solve the paper's problem (y is None when ``pairs`` are given)."""
        raise NotImplementedError

    def _check_param_relations(self, p) -> None:
        super()._check_param_relations(p)
        if getattr(p, "scheme", None) == "jain" and p.n_similar + p.n_dissimilar == 0:
            raise InvalidInputError("n_similar and n_dissimilar are both 0: no pairs to learn from.")

    def _fit_inputs(self, X, y, pairs):
        """X, and y (None when ``pairs`` are given)."""
        if pairs is not None:
            if y is not None:
                raise InvalidInputError(
                    f"Give either labels y or pairs to {type(self).__name__}.fit, not both (for "
                    "partially labelled data, build the pairs and pass pairs=...).")
            return estimator_fit_data(self, X), None
        if y is None:
            raise InvalidInputError(
                f"{type(self).__name__} requires y to be passed, but the target y is None; "
                "give class labels y, or pairs with fit(X, pairs=...).")
        return self._labelled_data(X, y)

    def _pair_bounds(self, s, p, baseline, n, rng):
        """Bounds of given pairs: the ``percentiles`` of the squared baseline distances,
        u for similar and l for dissimilar pairs (Davis et al. 2007 §2)."""
        u, l = percentile_bounds(baseline, n, p.percentiles, rng)
        return np.where(s > 0, u, l)

    def _labelled_pairs(self, y, p, baseline, rng) -> PairConstraints:
        """Pairs drawn from the labels (:meth:`PairConstraints.from_labels`)."""
        return PairConstraints.from_labels(
            y, baseline, scheme=p.scheme, n_similar=p.n_similar, n_dissimilar=p.n_dissimilar,
            n_constraints=p.n_constraints, percentiles=getattr(p, "percentiles", (5.0, 95.0)),
            random_state=rng)

    def _kernel_pairs(self, X, y, pairs, p, ridge=0.0):
        """The kernel families' start: κ0, the training kernel matrix K0, K0 + ridge·I (the
        matrix learned from) and the pairs, bounds from its squared distances."""
        kern, K0 = self._kernel_matrix(X, p)
        K0_fit = K0 + ridge * np.eye(K0.shape[0]) if ridge > 0 else K0
        return kern, K0, K0_fit, self._pair_constraints(y, pairs, p, baseline_kernel(K0_fit), X.shape[0])

    def _pair_constraints(self, y, pairs, p, baseline, n) -> PairConstraints:
        """The pairs to learn from: drawn from y, or the given ``pairs`` (then y is None)."""
        rng = as_generator(p.random_state)
        if pairs is None:
            return self._labelled_pairs(y, p, baseline, rng)
        return given_pairs(pairs, n, lambda s: self._pair_bounds(s, p, baseline, n, rng))
