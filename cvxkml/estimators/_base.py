"""The base class every cvxkml estimator derives from, and the mixins of what several share
(metric-learn's ``MahalanobisMixin`` is the model): parameter validation, the base kernel,
the training data and labels, and the metric vocabulary ``transform``, ``pair_distance``,
``pair_score``, ``get_metric``, ``get_mahalanobis_matrix`` and ``learned_kernel``.

The other parts of the shared base are private modules beside this one:

=============================================  =============================================
:mod:`~cvxkml.estimators._params`              parameter rules (one constraint per parameter)
:mod:`~cvxkml.estimators._docs`                documentation templates (``DOCS``, ``fill_doc``)
:mod:`~cvxkml.estimators._maps`                kernel and feature maps, standardization, the
                                               median-heuristic width
:mod:`~cvxkml.estimators._pairs`               pair side information (``PairLearnerMixin``)
:mod:`~cvxkml.estimators._persist`             ``save`` / ``load`` without pickle, the registry
=============================================  =============================================

A family module (``logdet``, ``iplr``, ``spectral``, ``trace``, ``pola``, ``kcr``, ``mkl``,
``yeung``) then holds only what its paper specifies: the problem it solves in ``fit`` and
the map of new points it learns.

The learned map of new points is :meth:`CvxkmlEstimator._embedding`, a picklable callable
(features → learned coordinates, with ``from_cross`` for a precomputed kernel); the learned
squared distances of paired rows are :meth:`CvxkmlEstimator._distance` (by default the
Euclidean distances of the embedding).  ``transform``, ``pair_distance`` and ``get_metric``
are built on these two and nothing else.
"""

from __future__ import annotations

import copy
from functools import partial
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._progress import LOGGER
from .._progress import ProgressMonitor as FitMonitor
from .._progress import fmt as _fmt
from .._validation import estimator_data, estimator_fit_data, estimator_pairs
from ..errors import InvalidInputError
from ..kernels import Kernel
from ..learned import LearnedKernel
from ..solvers._vocabulary import iteration_limit
from ._docs import fill_doc
from ._maps import (
    EmbeddingDistance,
    EmbeddingKernel,
    KernelMap,
    LinearMap,
    MetricDistance,
    MetricMap,
    StandardizedKernel,
    median_heuristic_gamma,
    point_distance,
    standardization,
    training_kernel,
)
from ._params import KERNEL_PARAMS
from ._persist import REGISTRY, load, save

__all__ = ["CvxkmlEstimator", "ComponentsMixin", "MetricMixin", "LearnedKernelMixin", "KernelExtensionMixin"]


class CvxkmlEstimator(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """The behaviour every cvxkml estimator shares.

    A subclass declares ``_parameter_constraints`` (one entry per ``__init__`` parameter,
    :mod:`cvxkml.estimators._params`), assigns every ``__init__`` parameter unchanged to the
    attribute of the same name and nothing else (scikit-learn's rule), validates them with
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
            REGISTRY.append(cls)
        fill_doc(cls)
        for value in vars(cls).values():
            if callable(value):
                fill_doc(value)

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
        p = SimpleNamespace(**{name: check(params[name], name) for name, check in self._parameter_constraints.items()})
        if getattr(p, "max_sweeps", None) is not None:
            p.max_iter = iteration_limit(type(self).__name__, p.max_iter, p.max_sweeps, stacklevel=5)
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
            The file written by :meth:`save`.
        max_bytes : int or None, default=None
            The most bytes decompressed from the file (None: 64 MiB or 4 times the arrays'
            compressed size, whichever is larger, at most 2 GiB); see
            :func:`cvxkml.estimators.load`.

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
                f"{self._classes_reason}; y has 1 class ({classes[0]!r})."
            )
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
                f"allowed: {sorted(allowed) or 'none'}.{self._kernel_params_hint}"
            )
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
                "or fit with a named kernel."
            )

    def _solve(self, problem, p, **options):
        """``problem.solve`` with the validated stopping rule (``tol``, ``max_iter``) and the
        fit's progress monitor."""
        return problem.solve(tol=p.tol, max_iter=p.max_iter, callback=p.monitor.for_solver(), **options)

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
            LOGGER.info(
                "%s fitted: %s after %d iteration(s), objective %s, certified gap %s, "
                "converged %s, %.3g s in the solver",
                type(self).__name__,
                sol.status,
                self.n_iter_,
                _fmt(sol.objective),
                _fmt(None if gap is None else gap / max(1.0, abs(sol.objective))),
                self.converged_,
                sol.time,
            )

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
            The two points of each pair.

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


class MetricMixin(ComponentsMixin):
    """A Mahalanobis metric learned on the features (divided by ``feature_scale_`` when they
    are standardized), kept as ``metric_``: what the problem's ``learned_metric`` returns,
    a :class:`~cvxkml.learned.LearnedMetric` (dense W, d × d) when the problem solves in
    the feature space, a :class:`~cvxkml.learned.FactoredMetric` (W = αI + U diag(λ) Uᵀ,
    U d × k) when it solves in the span of the data (wide data, d > n).

    With a dense metric ``components_`` is stored at fit time.  With a factored one nothing
    d × d is formed by ``fit``, ``transform``, ``pair_distance``, ``pair_score`` or
    ``get_metric`` (O(d k) per point); ``components_`` and :meth:`get_mahalanobis_matrix`
    form their d × d matrix when they are asked for (a UserWarning above
    :data:`cvxkml.learned.LARGE_MATRIX_BYTES`).
    """

    def _keep_metric(self, metric) -> None:
        """Set ``metric_`` (and ``components_`` for a dense metric, on the raw features)."""
        from ..learned import LearnedMetric

        self.metric_ = metric
        if isinstance(metric, LearnedMetric):
            L = metric.components()
            self.components_ = L if self.feature_scale_ is None else L / self.feature_scale_

    def _factored(self) -> bool:
        from ..learned import FactoredMetric

        return "components_" not in self.__dict__ and isinstance(self.__dict__.get("metric_"), FactoredMetric)

    def _check_loaded(self) -> None:
        """A loaded model is whole: ``components_`` (dense metric) or a factored ``metric_``
        on ``n_features_in_`` features."""
        if self._factored():
            if self.metric_.n_features != self.n_features_in_:
                raise InvalidInputError(
                    f"metric_ has {self.metric_.n_features} features, not n_features_in_ = {self.n_features_in_}"
                )
        elif "components_" not in self.__dict__:
            raise InvalidInputError("components_ is missing")

    def __getattr__(self, name):
        # components_ of a factored metric: formed on access only (never stored)
        if name == "components_" and self._factored():
            L = self.metric_.components()
            scale = self.__dict__.get("feature_scale_")
            return L if scale is None else L / scale
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _embedding(self):
        if self._factored():
            return MetricMap(self.metric_, self.feature_scale_)
        return LinearMap(self.components_)

    def _distance(self):
        if self._factored():
            return MetricDistance(self.metric_, self.feature_scale_)
        return super()._distance()

    def get_mahalanobis_matrix(self):
        """The learned Mahalanobis matrix on the raw features, A = LᵀL with L =
        ``components_`` (for a factored metric formed now: 8 d² bytes, a UserWarning when
        large).

        Returns
        -------
        A : ndarray of shape (n_features, n_features)
        """
        check_is_fitted(self)
        if not self._factored():
            return super().get_mahalanobis_matrix()
        W = self.metric_.get_mahalanobis_matrix()
        s = self.feature_scale_
        if s is not None:
            W /= s[:, None]
            W /= s[None, :]
        return W

    @property
    def _n_features_out(self):
        if self._factored():
            return self.metric_.n_features if self.metric_.alpha > 0 else self.metric_.rank
        return self.components_.shape[0]


class LearnedKernelMixin:
    """A learned kernel κ between arbitrary points: :meth:`learned_kernel`."""

    def _kernel_function(self):
        """A callable (X, Y) -> κ(X, Y); by default the embeddings' inner products."""
        return EmbeddingKernel(self._embedding())

    def learned_kernel(self, X, Y=None):
        """The learned kernel matrix κ(X, Y) between arbitrary points.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
            The rows of the kernel matrix.
        Y : array-like of shape (n_samples_Y, n_features) or None, default=None
            The columns; None means Y = X.

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

    def _extend(self, kern, X, K0, K, alpha=1.0, K_train=None):
        """Keep ``X_fit_``, ``kernel_`` and ``learned_kernel_`` (K learned from K0), and with
        ``K_train`` (κ0 on the training points) their transform as ``embedding_``."""
        self.X_fit_ = X
        self.kernel_ = kern
        self.learned_kernel_ = LearnedKernel.from_solution(kern, X, K0, K, alpha)
        if K_train is not None:
            self.embedding_ = self.learned_kernel_.embed_cross(K_train)

    def _embedding(self):
        return KernelMap(self.kernel_, self.X_fit_, self.learned_kernel_.embed_cross)

    def _distance(self):
        return self.learned_kernel_.pair_sq_distances

    def _kernel_function(self):
        return self.learned_kernel_
