"""scikit-learn estimators for LogDet metric and kernel learning (Jain et al. 2012).

:class:`ITML` learns a Mahalanobis matrix W on the features (eq. 2 / 4, with LogDet
slack eq. 7); :class:`KernelITML` learns a kernel matrix K on the training points
(eq. 3 / 7) and extends it to new points with eq. 6.  Both build pair constraints from
class labels (:meth:`cvxkml.sideinfo.PairConstraints.from_labels`), solve with the fast
Bregman solver and follow the metric-learn vocabulary: ``transform``,
``pair_distance``, ``pair_score`` and ``get_metric`` (a callable usable as
``KNeighborsClassifier(metric=est.get_metric())``).
"""
from __future__ import annotations

import numbers
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import (as_generator, check_kernel_matrix, check_positive, estimator_data,
                          estimator_fit_data, estimator_pairs)
from ..declare import ITML as _ITMLProblem
from ..declare import LogDetKernel as _LogDetKernelProblem
from ..errors import InvalidInputError
from ..kernels import Kernel
from ..learned import LearnedKernel, components_from_metric, kernel_S
from ..sideinfo import PairConstraints, baseline_kernel, baseline_metric

__all__ = ["ITML", "KernelITML"]

_COV_RIDGE = 1e-6          # relative ridge of prior="covariance"
_KERNEL_PARAMS = {
    "linear": set(), "precomputed": set(),
    "gaussian": {"sigma", "gamma"}, "rbf": {"sigma", "gamma"},
    "polynomial": {"degree", "coef0", "scale"}, "poly": {"degree", "coef0", "scale"},
}


def _metric_distance(u, v, L):
    """sqrt((u − v)ᵀ LᵀL (u − v)) for two feature vectors (ITML.get_metric)."""
    diff = L @ (np.asarray(u, dtype=float).ravel() - np.asarray(v, dtype=float).ravel())
    return float(np.sqrt(diff @ diff))


def _kernel_distance(u, v, learned):
    """Learned kernel distance between two feature vectors (KernelITML.get_metric)."""
    a = np.asarray(u, dtype=float).reshape(1, -1)
    b = np.asarray(v, dtype=float).reshape(1, -1)
    return float(np.sqrt(learned.pair_sq_distances(a, b)[0]))


def check_pair_sampling(est) -> None:
    """Validate the pair-sampling parameters shared by the estimators that draw pair
    constraints from labels: ``scheme`` ('jain' | 'itml'), ``n_similar``,
    ``n_dissimilar`` (non-negative integers, not both 0 for 'jain') and
    ``n_constraints`` (None or a positive integer)."""
    if est.scheme not in ("jain", "itml"):
        raise InvalidInputError(f"scheme must be 'jain' or 'itml'; got {est.scheme!r}.")
    for name in ("n_similar", "n_dissimilar"):
        v = getattr(est, name)
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 0:
            raise InvalidInputError(f"{name} must be a non-negative integer; got {v!r}.")
    if est.scheme == "jain" and est.n_similar + est.n_dissimilar == 0:
        raise InvalidInputError("n_similar and n_dissimilar are both 0: no pairs to learn from.")
    nc = est.n_constraints
    if nc is not None and (not isinstance(nc, numbers.Integral) or isinstance(nc, bool) or nc < 1):
        raise InvalidInputError(f"n_constraints must be None or a positive integer; got {nc!r}.")


def training_kernel(kern: Kernel, X) -> np.ndarray:
    """The symmetrized training kernel matrix κ0(X, X); with ``kern`` precomputed, X must
    be that square matrix (a clear error otherwise)."""
    if kern.precomputed and X.shape[0] != X.shape[1]:
        raise InvalidInputError(
            "With kernel='precomputed', X must be the square training kernel matrix "
            f"κ0(X_train, X_train); got shape {X.shape}.")
    K0 = kern(X, X)
    return 0.5 * (K0 + K0.T)

class _LogDetLearner(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """What ITML and KernelITML share: parameter checks, label → pair constraints,
    the pair API and the tags.  Subclasses implement ``_pair_sq_distances(A, B)``."""

    def _check_params(self):
        gamma = check_positive(self.gamma, "gamma", allow_none=True)
        check_pair_sampling(self)
        try:
            lo, hi = (float(p) for p in self.percentiles)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"percentiles must be a pair (lower, upper); got {self.percentiles!r}.") from exc
        if not 0 <= lo < hi <= 100:
            raise InvalidInputError(
                f"percentiles must satisfy 0 <= lower < upper <= 100; got {self.percentiles!r}.")
        tol = check_positive(self.tol, "tol")
        ms = self.max_sweeps
        if not isinstance(ms, numbers.Integral) or isinstance(ms, bool) or ms < 1:
            raise InvalidInputError(f"max_sweeps must be a positive integer; got {ms!r}.")
        return gamma, (lo, hi), tol, int(ms)

    def _validate_fit_data(self, X, y):
        X, y = estimator_fit_data(self, X, y)
        classes = np.unique(y)
        if classes.size < 2:
            raise InvalidInputError(
                f"{type(self).__name__} needs labels from at least 2 classes to form dissimilar "
                f"pairs; y has 1 class ({classes[0]!r}).")
        return X, y

    def _constraints(self, y, baseline, percentiles):
        return PairConstraints.from_labels(
            y, baseline, scheme=self.scheme, n_similar=self.n_similar,
            n_dissimilar=self.n_dissimilar, n_constraints=self.n_constraints,
            percentiles=percentiles, random_state=as_generator(self.random_state))

    def _store_solution(self, sol):
        self.solution_ = sol
        self.n_iter_ = int(sol.n_iter)

    def pair_distance(self, pairs):
        """Learned (non-squared) distances of pairs of points.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)
            ``pairs[t, 0]`` and ``pairs[t, 1]`` are the two points of pair t.

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
        """
        check_is_fitted(self)
        self._check_not_precomputed("pair_distance")
        pairs = estimator_pairs(self, pairs)
        return np.sqrt(np.maximum(self._pair_sq_distances(pairs[:, 0], pairs[:, 1]), 0.0))

    def pair_score(self, pairs):
        """Similarity scores of pairs: ``-pair_distance(pairs)`` (higher = more similar).

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        return -self.pair_distance(pairs)

    def _check_not_precomputed(self, what):
        """Overridden by KernelITML (precomputed kernels cannot evaluate new pairs)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


class ITML(_LogDetLearner):
    """Information-theoretic (LogDet) metric learning on features (Jain et al. 2012,
    eq. 2 / 4; eq. 7 with slack):

        min_W  D_ld(W, W0) + γ D_ld(diag ξ, diag ξ0)
        s.t.   (x_i − x_j)ᵀ W (x_i − x_j) <= ξ_ij  (similar),  >= ξ_ij  (dissimilar),

    with ξ0 = u for similar and l for dissimilar pairs, u and l the ``percentiles`` of
    the squared baseline (prior) distances.  Solved by cyclic Bregman projections.

    Parameters
    ----------
    gamma : float or None, default=1.0
        LogDet slack weight γ > 0 (larger = constraints enforced more strictly).  With
        slack every label set is feasible.  ``None`` imposes hard constraints.
    scheme : {"jain", "itml"}, default="jain"
        How pairs are drawn from the labels: ``"jain"`` takes, for every class,
        ``n_similar`` random within-class pairs and ``n_dissimilar`` pairs of a member
        with a point of another class (Jain et al. §6); ``"itml"`` draws
        ``n_constraints`` random pairs (default 40·c·(c−1), c classes), similar when the
        labels agree (the original ITML code).  Duplicate pairs are removed.
    n_similar : int, default=100
        Similar pairs per class (``scheme="jain"``).
    n_dissimilar : int, default=100
        Dissimilar pairs per class (``scheme="jain"``).
    n_constraints : int or None, default=None
        Number of random pairs for ``scheme="itml"`` (None: 40·c·(c−1)).
    percentiles : tuple of two floats, default=(5.0, 95.0)
        Percentiles (lower, upper) of the squared baseline distances over all pairs of
        training points giving the bounds u (similar) and l (dissimilar).
    prior : {"identity", "covariance"} or array-like of shape (n_features, n_features), \
default="identity"
        The prior Mahalanobis matrix W0: the identity (Euclidean), the inverse
        covariance of X regularised to be positive definite,
        W0 = (Σ + 1e-6·(tr Σ / d)·I)⁻¹, or a given symmetric positive definite matrix.
    tol : float, default=1e-6
        Stopping tolerance of the Bregman solver (relative change of the dual variables
        over a sweep).
    max_sweeps : int, default=50000
        Maximum number of sweeps over the constraints; when reached, the solver emits a
        :class:`cvxkml.errors.ConvergenceWarning` and the last iterate is kept.
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, \
default=None
        Seed of the pair sampling (and of the percentile sample for large n).

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
        L with W = LᵀL; ``transform(X) = X @ components_.T``.
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is W, plus duals, slack, convergence info).
    n_iter_ : int
        Number of Bregman sweeps.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when X has string column names.
    """

    def __init__(self, *, gamma=1.0, scheme="jain", n_similar=100, n_dissimilar=100,
                 n_constraints=None, percentiles=(5.0, 95.0), prior="identity", tol=1e-6,
                 max_sweeps=50000, random_state=None):
        self.gamma = gamma
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.prior = prior
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.random_state = random_state

    def _prior_matrix(self, X):
        d = X.shape[1]
        prior = self.prior
        if isinstance(prior, str):
            if prior == "identity":
                return None
            if prior == "covariance":
                C = np.atleast_2d(np.cov(X, rowvar=False))
                scale = float(np.trace(C)) / d
                if not scale > 0:
                    raise InvalidInputError(
                        "prior='covariance' needs X with non-constant features (the covariance is 0).")
                W0 = np.linalg.inv(C + _COV_RIDGE * scale * np.eye(d))
                return 0.5 * (W0 + W0.T)
            raise InvalidInputError(
                f"prior must be 'identity', 'covariance' or a PD matrix; got {prior!r}.")
        W0 = check_kernel_matrix(prior, "prior", require_pd=True)
        if W0.shape != (d, d):
            raise InvalidInputError(f"prior must be {d} × {d} to match X; got {W0.shape}.")
        return W0

    def fit(self, X, y):
        """Learn the Mahalanobis matrix from labelled data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (at least 2 samples, finite).
        y : array-like of shape (n_samples,)
            Class labels (at least 2 classes).

        Returns
        -------
        self : ITML
        """
        gamma, percentiles, tol, max_sweeps = self._check_params()
        X, y = self._validate_fit_data(X, y)
        W0 = self._prior_matrix(X)
        pc = self._constraints(y, baseline_metric(X, W0), percentiles)
        sol = _ITMLProblem(X, pc, W0=W0, gamma=gamma).solve(tol=tol, max_iter=max_sweeps)
        self.components_ = components_from_metric(sol.matrix)
        self._store_solution(sol)
        return self

    def transform(self, X):
        """Map X to the learned space, ``X @ components_.T``; Euclidean distances there
        are the learned Mahalanobis distances.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = estimator_data(self, X)
        return X @ self.components_.T

    def get_mahalanobis_matrix(self):
        """The learned Mahalanobis matrix W = LᵀL, shape (n_features, n_features)."""
        check_is_fitted(self)
        return self.components_.T @ self.components_

    def get_metric(self):
        """A callable ``f(u, v) -> float``, the learned distance sqrt((u − v)ᵀW(u − v))
        between two feature vectors (a snapshot: refitting does not change it).  Usable as
        ``KNeighborsClassifier(metric=est.get_metric())``; picklable."""
        check_is_fitted(self)
        return partial(_metric_distance, L=self.components_.copy())

    def _pair_sq_distances(self, A, B):
        D = (A - B) @ self.components_.T
        return np.einsum("ij,ij->i", D, D)

    @property
    def _n_features_out(self):
        return self.components_.shape[0]


class KernelITML(_LogDetLearner):
    """LogDet kernel learning (Jain et al. 2012, eq. 3; eq. 7 with slack) with the
    inductive extension to new points (eq. 6):

        min_K  D_ld(K, K0) + γ D_ld(diag ξ, diag ξ0)
        s.t.   K_ii + K_jj − 2K_ij <= ξ_ij  (similar),  >= ξ_ij  (dissimilar),

    with K0 = κ0(X, X) the base kernel on the training points.  The learned kernel on
    arbitrary points is κ(z1, z2) = κ0(z1, z2) + k1ᵀ S k2 with S = K0⁺(K − K0)K0⁺ and
    k_i = κ0(z_i, X_train) (Theorem 1).

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "linear", "polynomial", "poly", "precomputed"}, \
default="gaussian"
        The base kernel κ0.  With ``"precomputed"``, ``fit`` takes the square training
        kernel matrix κ0(X_train, X_train) and ``transform`` takes κ0(X_new, X_train) of
        shape (n_new, n_train).
    kernel_params : dict or None, default=None
        Parameters of the base kernel: ``sigma`` or ``gamma`` for the Gaussian kernel
        κ0(x, y) = exp(−gamma·‖x − y‖²) (gamma = 1 / (2 sigma²)); ``degree``, ``coef0``,
        ``scale`` for the polynomial kernel (scale·xᵀy + coef0)^degree (defaults 2, 1, 1);
        none for the linear and precomputed kernels.  ``None`` uses the defaults; for the
        Gaussian kernel the default is gamma = 1 / n_features, computed at fit time (as
        scikit-learn's ``gamma="auto"``; no rescaling by the data variance, so
        standardise the features first).
    gamma : float or None, default=1.0
        LogDet slack weight γ > 0; ``None`` imposes hard constraints.
    scheme : {"jain", "itml"}, default="jain"
        Pair sampling scheme, as in :class:`ITML`.
    n_similar : int, default=100
        Similar pairs per class (``scheme="jain"``).
    n_dissimilar : int, default=100
        Dissimilar pairs per class (``scheme="jain"``).
    n_constraints : int or None, default=None
        Number of random pairs for ``scheme="itml"`` (None: 40·c·(c−1)).
    percentiles : tuple of two floats, default=(5.0, 95.0)
        Percentiles of the squared base-kernel distances giving the bounds u and l.
    ridge : float, default=0.0
        Non-negative value added to the diagonal of the training matrix K0 before
        learning (a white-noise term of the base kernel: it does not change κ0 between
        distinct points, so new points are extended with the plain κ0).
    tol : float, default=1e-6
        Stopping tolerance of the Bregman solver.
    max_sweeps : int, default=50000
        Maximum number of sweeps (then a :class:`cvxkml.errors.ConvergenceWarning`).
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, \
default=None
        Seed of the pair sampling.

    Attributes
    ----------
    X_fit_ : ndarray of shape (n_train, n_features)
        The training points (with ``"precomputed"``: the training kernel matrix).
    kernel_ : cvxkml.kernels.Kernel
        The base kernel with its resolved parameters.
    learned_kernel_ : cvxkml.learned.LearnedKernel
        The learned kernel as a function of new points (eq. 6).
    embedding_ : ndarray of shape (n_train, n_components)
        ``transform`` of the training points: ``embedding_ @ embedding_.T`` is the
        learned training kernel matrix (for ``ridge=0``).
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is the learned n_train × n_train kernel K).
    n_iter_ : int
        Number of Bregman sweeps.
    n_features_in_ : int
        Number of features seen in ``fit`` (n_train for ``"precomputed"``).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when X has string column names.
    """

    def __init__(self, *, kernel="gaussian", kernel_params=None, gamma=1.0, scheme="jain",
                 n_similar=100, n_dissimilar=100, n_constraints=None, percentiles=(5.0, 95.0),
                 ridge=0.0, tol=1e-6, max_sweeps=50000, random_state=None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.gamma = gamma
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.ridge = ridge
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.random_state = random_state

    @property
    def _precomputed(self):
        return self.kernel == "precomputed"

    def _base_kernel(self, n_features):
        if not isinstance(self.kernel, str) or self.kernel not in _KERNEL_PARAMS:
            raise InvalidInputError(
                f"kernel must be one of {sorted(_KERNEL_PARAMS)}; got {self.kernel!r}.")
        params = {} if self.kernel_params is None else self.kernel_params
        if not isinstance(params, dict):
            raise InvalidInputError(f"kernel_params must be a dict or None; got {params!r}.")
        allowed = _KERNEL_PARAMS[self.kernel]
        unknown = set(params) - allowed
        if unknown:
            raise InvalidInputError(
                f"Unknown kernel_params {sorted(unknown)} for kernel={self.kernel!r}; "
                f"allowed: {sorted(allowed) or 'none'}.")
        params = dict(params)
        if self.kernel in ("gaussian", "rbf") and not params:
            params["gamma"] = 1.0 / n_features
        return Kernel(self.kernel, params)

    def fit(self, X, y):
        """Learn the kernel on the training points from labelled data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) \
for ``kernel="precomputed"``
            Training data, or the training kernel matrix κ0(X_train, X_train).
        y : array-like of shape (n_samples,)
            Class labels (at least 2 classes).

        Returns
        -------
        self : KernelITML
        """
        gamma, percentiles, tol, max_sweeps = self._check_params()
        ridge = float(self.ridge) if isinstance(self.ridge, numbers.Real) else np.nan
        if not (np.isfinite(ridge) and ridge >= 0):
            raise InvalidInputError(f"ridge must be a finite non-negative number; got {self.ridge!r}.")
        X, y = self._validate_fit_data(X, y)
        kern = self._base_kernel(X.shape[1])
        K0 = training_kernel(kern, X)
        K0_fit = K0 + ridge * np.eye(K0.shape[0]) if ridge > 0 else K0
        pc = self._constraints(y, baseline_kernel(K0_fit), percentiles)
        sol = _LogDetKernelProblem(K0_fit, pc, gamma=gamma).solve(tol=tol, max_iter=max_sweeps)
        self.X_fit_ = X
        self.kernel_ = kern
        self.learned_kernel_ = LearnedKernel(kern, X, kernel_S(K0_fit, sol.matrix))
        self.embedding_ = self.learned_kernel_.embed_cross(K0)
        self._store_solution(sol)
        return self

    def transform(self, X):
        """Embedding coordinates ψ(X) of the learned kernel.

        ψ(z)ᵀψ(z') equals the learned kernel κ(z, z') exactly when z and z' lie in the
        span of the training points in feature space (Theorem 1 / eq. 6); otherwise the
        component orthogonal to that span, which the learned W* = I + ΦSΦᵀ leaves
        unchanged, is dropped.  Inner products with training points stay exact, so
        distances from a new point to the training points are the learned ones up to a
        constant per new point (nearest-neighbour rankings are exact).  For exact
        values use :meth:`learned_kernel`, :meth:`pair_distance` or :meth:`get_metric`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_train) for \
``kernel="precomputed"`` (κ0(X, X_train))

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            n_components = the rank of the learned training kernel matrix.
        """
        check_is_fitted(self)
        X = estimator_data(self, X)
        K_cross = X if self._precomputed else self.kernel_(X, self.X_fit_)
        return self.learned_kernel_.embed_cross(K_cross)

    def learned_kernel(self, X, Y=None):
        """The learned kernel matrix κ(X, Y) between arbitrary points (eq. 6).

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
        Y : array-like of shape (n_samples_Y, n_features) or None, default=None
            None means Y = X.

        Returns
        -------
        K : ndarray of shape (n_samples_X, n_samples_Y)
        """
        check_is_fitted(self)
        self._check_not_precomputed("learned_kernel")
        X = estimator_data(self, X)
        Y = X if Y is None else estimator_data(self, Y)
        return self.learned_kernel_(X, Y)

    def get_metric(self):
        """A callable ``f(u, v) -> float``, the learned kernel distance
        sqrt(κ(u, u) + κ(v, v) − 2κ(u, v)) between two feature vectors (a snapshot;
        picklable).  Not available for ``kernel="precomputed"``."""
        check_is_fitted(self)
        self._check_not_precomputed("get_metric")
        return partial(_kernel_distance, learned=self.learned_kernel_)

    def _check_not_precomputed(self, what):
        if self._precomputed:
            raise InvalidInputError(
                f"{what} needs the base kernel between arbitrary points, which "
                "kernel='precomputed' does not provide; use transform with κ0(X, X_train), "
                "or fit with a named kernel.")

    def _pair_sq_distances(self, A, B):
        return self.learned_kernel_.pair_sq_distances(A, B)

    @property
    def _n_features_out(self):
        return self.embedding_.shape[1]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags


# =========================================================================== low rank
class _FactorMap:
    """x ↦ Bᵀ g(x): the learned low-rank embedding of new points (picklable snapshot).
    g(x) = k_P(x)ᵀ · map are the factor coordinates of the factorization (eigen / Nyström map
    on all training points, or on the pivot / landmark columns)."""

    def __init__(self, kernel, X_fit, factorization, B):
        self.kernel = kernel
        self.X_fit = X_fit
        self.factorization = factorization
        self.B = B

    def from_cross(self, K_cross):
        return self.factorization.transform_cross(K_cross) @ self.B

    def __call__(self, X):
        return self.from_cross(self.kernel(X, self.X_fit))


def _factor_map_distance(u, v, fmap):
    """Learned low-rank distance ‖Bᵀg(u) − Bᵀg(v)‖ (LowRankKernelITML.get_metric)."""
    Z = fmap(np.vstack([np.asarray(u, dtype=float).ravel(), np.asarray(v, dtype=float).ravel()]))
    d = Z[0] - Z[1]
    return float(np.sqrt(d @ d))


class LowRankKernelITML(_LogDetLearner):
    """Low-rank LogDet kernel learning (Kulis, Sustik & Dhillon 2009, Algorithm 2; slack as
    in their §6.2.1) with out-of-sample extension through the factorization (§6.1).

    The base kernel matrix on the training points is factored, K0 ≈ G0 G0ᵀ (G0 n × r, see
    :func:`cvxkml.factor.factorize`), and the learned kernel keeps that range space:
    K = G0 B Bᵀ G0ᵀ with B r × r, found by cyclic Bregman projections at O(r²) each
    (:class:`cvxkml.declare.LowRankLogDet`):

        min_K  D_ld(K, K0) + γ D_ld(diag ξ, diag ξ0)
        s.t.   K_ii + K_jj − 2K_ij <= ξ_ij  (similar),  >= ξ_ij  (dissimilar).

    A new point x is mapped to its factor coordinates g(x) (computed from κ0(x, X_train)
    by the same factorization), then to Bᵀg(x); training points map to the rows of G0 B.

    Parameters
    ----------
    rank : int or None, default=None
        Rank r of the factor (1 <= r <= n_samples).  None: the numerical rank of K0
        (``method="eigen"``), or as many pivots as ``factor_tol`` needs
        (``"icholesky"``); ``"nystroem"`` needs a rank (its number of landmarks).
    method : {"eigen", "icholesky", "nystroem"}, default="eigen"
        Factorization of K0: top-r eigenvectors (G0 = V_r Λ_r^½), pivoted incomplete
        Cholesky, or Nyström on r random landmark points (seeded by ``random_state``).
    kernel : {"gaussian", "rbf", "linear", "polynomial", "poly", "precomputed"}, \
default="gaussian"
        The base kernel κ0, as in :class:`KernelITML` (with ``"precomputed"``, ``fit``
        takes κ0(X_train, X_train) and ``transform`` κ0(X_new, X_train)).
    kernel_params : dict or None, default=None
        Base kernel parameters, as in :class:`KernelITML` (Gaussian default:
        gamma = 1 / n_features).
    gamma : float or None, default=1.0
        LogDet slack weight γ > 0; ``None`` imposes hard constraints.
    scheme, n_similar, n_dissimilar, n_constraints, percentiles
        Pair constraints from the labels, as in :class:`ITML`; the bounds are percentiles
        of the squared distances under the factored K0 = G0 G0ᵀ.
    factor_tol : float, default=1e-10
        Relative tolerance of the factorization: eigenvalues below ``factor_tol`` × the
        largest are dropped (``"eigen"``); pivoting stops when the residual trace is at most
        ``factor_tol`` × tr(K0) (``"icholesky"``).
    tol : float, default=1e-6
        Stopping tolerance of the Bregman solver (relative dual change over a sweep).
    max_sweeps : int, default=50000
        Maximum number of sweeps (then a :class:`cvxkml.errors.ConvergenceWarning`).
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, \
default=None
        Seed of the pair sampling and of the Nyström landmarks.

    Attributes
    ----------
    X_fit_ : ndarray of shape (n_train, n_features)
        The training points (the training kernel matrix for ``"precomputed"``).
    kernel_ : cvxkml.kernels.Kernel
        The base kernel with its resolved parameters.
    factorization_ : cvxkml.factor.Factorization
        G0 (``factorization_.G0``) and the map of new points to factor coordinates.
    rank_ : int
        The rank r of the learned kernel.
    B_ : ndarray of shape (rank_, rank_)
        Lower-triangular B with K = G0 B Bᵀ G0ᵀ.
    embedding_ : ndarray of shape (n_train, rank_)
        G0 B, the transform of the training points (K = embedding_ @ embedding_.T).
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is X̂ = B Bᵀ, r × r; ``info["B"]`` is B).
    n_iter_ : int
        Number of Bregman sweeps.
    n_features_in_ : int
        Number of features seen in ``fit`` (n_train for ``"precomputed"``).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when X has string column names.
    """

    def __init__(self, *, rank=None, method="eigen", kernel="gaussian", kernel_params=None,
                 gamma=1.0, scheme="jain", n_similar=100, n_dissimilar=100, n_constraints=None,
                 percentiles=(5.0, 95.0), factor_tol=1e-10, tol=1e-6, max_sweeps=50000,
                 random_state=None):
        self.rank = rank
        self.method = method
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.gamma = gamma
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.factor_tol = factor_tol
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.random_state = random_state

    @property
    def _precomputed(self):
        return self.kernel == "precomputed"

    # KernelITML's kernel resolution reads only ``kernel`` and ``kernel_params``.
    _base_kernel = KernelITML._base_kernel

    def fit(self, X, y):
        """Factor the base kernel on the training points and learn B from labelled data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) \
for ``kernel="precomputed"``
        y : array-like of shape (n_samples,)
            Class labels (at least 2 classes).

        Returns
        -------
        self : LowRankKernelITML
        """
        from ..declare import LowRankLogDet
        from ..factor import factorize

        gamma, percentiles, tol, max_sweeps = self._check_params()
        if self.method not in ("eigen", "icholesky", "nystroem"):
            raise InvalidInputError(
                f"method must be 'eigen', 'icholesky' or 'nystroem'; got {self.method!r}.")
        rank = self.rank
        if rank is not None and (not isinstance(rank, numbers.Integral) or isinstance(rank, bool)
                                 or rank < 1):
            raise InvalidInputError(f"rank must be None or a positive integer; got {rank!r}.")
        factor_tol = check_positive(self.factor_tol, "factor_tol")
        X, y = self._validate_fit_data(X, y)
        if rank is not None and rank > X.shape[0]:
            raise InvalidInputError(
                f"rank = {rank} exceeds the number of training points n = {X.shape[0]}: the "
                "learned kernel has rank at most n.")
        kern = self._base_kernel(X.shape[1])
        K0 = training_kernel(kern, X)
        fact = factorize(K0, self.method, None if rank is None else int(rank), factor_tol,
                         None, as_generator(self.random_state))
        pc = self._constraints(y, baseline_metric(fact.G0), percentiles)
        prob = LowRankLogDet(fact, pc, gamma=gamma)
        sol = prob.solve(tol=tol, max_iter=max_sweeps)
        self.X_fit_ = X
        self.kernel_ = kern
        self.factorization_ = fact
        self.B_ = np.asarray(sol.info["B"])
        self.rank_ = int(self.B_.shape[0])
        self.embedding_ = prob.kernel_factor(sol)
        self._store_solution(sol)
        return self

    def _map(self):
        return _FactorMap(self.kernel_, self.X_fit_, self.factorization_, self.B_)

    def transform(self, X):
        """The learned low-rank embedding Bᵀg(x): factor coordinates g(x) of each point
        through the fitted factorization (from κ0(x, X_train)), then Bᵀ.  For training
        points it returns the rows of ``embedding_`` (exactly for ``"eigen"``); the
        learned kernel between two points is the inner product of their embeddings.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_train) for \
``kernel="precomputed"`` (κ0(X, X_train))

        Returns
        -------
        X_new : ndarray of shape (n_samples, rank_)
        """
        check_is_fitted(self)
        X = estimator_data(self, X)
        fmap = self._map()
        return fmap.from_cross(X) if self._precomputed else fmap(X)

    def get_metric(self):
        """A callable ``f(u, v) -> float``, the learned distance ‖Bᵀg(u) − Bᵀg(v)‖ between two
        feature vectors (a snapshot; picklable).  Not available for ``kernel="precomputed"``."""
        check_is_fitted(self)
        self._check_not_precomputed("get_metric")
        return partial(_factor_map_distance, fmap=self._map())

    def _check_not_precomputed(self, what):
        if self._precomputed:
            raise InvalidInputError(
                f"{what} needs the base kernel between arbitrary points, which "
                "kernel='precomputed' does not provide; use transform with κ0(X, X_train), "
                "or fit with a named kernel.")

    def _pair_sq_distances(self, A, B):
        fmap = self._map()
        D = fmap(A) - fmap(B)
        return np.einsum("ij,ij->i", D, D)

    @property
    def _n_features_out(self):
        return self.rank_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags


__all__ += ["LowRankKernelITML"]
