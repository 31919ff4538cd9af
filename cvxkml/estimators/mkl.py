"""scikit-learn estimators for LMNN and metric learning with multiple kernels (Wang, Do,
Woznica & Kalousis, NIPS 2011; Weinberger & Saul 2009).

* :class:`LMNN` — linear LMNN on the features, or kernel LMNN on the empirical kernel
  map k(x) = [κ(x, x_1), …, κ(x, x_n)] (eq. 2, 18; ``kernel="precomputed"`` accepted).
* :class:`LMNNMKL` — LMNN with multiple kernels: ``variant="P"`` (LMNN-MKL_P, the
  rank-one kernel weights of eq. 15–17, Algorithm 1), ``"mu"`` (the MKL_μ variant with
  LMNN's convex majorizer), ``"NR"`` (NR-LMNN-MKL, eq. 12–14).

Both learn A = LᵀL on a feature map z(x) (x itself, k(x), k_μ(x) = Σ μ_l k_l(x), or
(k_1(x), …, k_m(x))) and follow the metric-learn vocabulary: ``transform(X) = z(X) Lᵀ``
(Euclidean distances there are the learned distances), ``components_`` = L,
``get_metric()`` (a picklable callable usable as ``KNeighborsClassifier(metric=...)``),
``pair_distance``.
"""
from __future__ import annotations

import numbers
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import check_int, check_positive, estimator_data, estimator_fit_data, estimator_pairs
from ..declare.lmnn import LMNNProblem
from ..declare.mkl import W_GRID, alternate, combine_kernels
from ..errors import InvalidInputError
from .logdet import training_kernel
from ..kernels import Kernel
from ..mkl_kernels import KernelSet, SourceKernel, nr_kernels, paper_kernels

__all__ = ["LMNN", "LMNNMKL"]

_KERNEL_PARAMS = {
    "linear": set(), "precomputed": set(),
    "gaussian": {"sigma", "gamma"}, "rbf": {"sigma", "gamma"},
    "polynomial": {"degree", "coef0", "scale"}, "poly": {"degree", "coef0", "scale"},
}


def _map_distance(u, v, est):
    """Learned distance between two feature vectors through ``est.transform``."""
    Z = est.transform(np.vstack([np.asarray(u, dtype=float).ravel(), np.asarray(v, dtype=float).ravel()]))
    d = Z[0] - Z[1]
    return float(np.sqrt(d @ d))


def _pos_int(value, name, minimum=1):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise InvalidInputError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)




class _LMNNBase(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Shared pieces: data checks, the pair API, tags."""

    def _validate_fit(self, X, y):
        X, y = estimator_fit_data(self, X, y)
        if np.unique(y).size < 2:
            raise InvalidInputError(
                f"{type(self).__name__} needs labels from at least 2 classes (impostors are "
                "points of another class); y has 1 class.")
        _pos_int(self.k, "k")
        gamma = self.gamma
        if not isinstance(gamma, numbers.Real) or isinstance(gamma, bool) or not (0 < gamma <= 1):
            raise InvalidInputError(f"gamma must lie in (0, 1]; got {gamma!r}.")
        return X, y

    def _lmnn_options(self):
        return {"tol": check_positive(self.tol, "tol"), "max_iter": check_int(self.max_iter, "max_iter", maximum=10**15)}

    def pair_distance(self, pairs):
        """Learned (non-squared) distances of pairs of points.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
        """
        check_is_fitted(self)
        pairs = estimator_pairs(self, pairs)
        D = self.transform(pairs[:, 0]) - self.transform(pairs[:, 1])
        return np.sqrt(np.einsum("ij,ij->i", D, D))

    def get_metric(self):
        """A callable ``f(u, v) -> float``, the learned distance between two feature
        vectors (a snapshot of this fitted estimator; picklable).  Usable as
        ``KNeighborsClassifier(metric=est.get_metric())``."""
        check_is_fitted(self)
        self._check_metric_available()
        from copy import deepcopy
        return partial(_map_distance, est=deepcopy(self))

    def _check_metric_available(self):
        """Overridden where the metric needs more than ``transform``."""

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


class LMNN(_LMNNBase):
    """Large margin nearest neighbour metric learning, linear or on a kernel's empirical
    map (Weinberger & Saul 2009; Wang et al. 2011, eq. 18):

        min_{A ⪰ 0}  (1 − γ) Σ_{(i,j) ∈ S} d_A(i, j) + γ Σ_{(i,j) ∈ S, y_l ≠ y_i} [1 + d_A(i, j) − d_A(i, l)]_+

    with S the k nearest same-class points of each point (target neighbours) and
    d_A(i, j) = (z_i − z_j)ᵀ A (z_i − z_j); z = x (``kernel="linear"``, A is
    n_features × n_features) or z = k(x) = [κ(x, x_1), …, κ(x, x_n)] (any other kernel,
    A is n_train × n_train).  Solved by the certified primal–dual projected sub-gradient
    method (:meth:`cvxkml.declare.lmnn.LMNNProblem.solve`) from A = I.

    With a full-rank kernel matrix the training classes can be collapsed exactly, so the
    optimum is 0 and what is learned depends on ``max_iter`` (see
    :mod:`cvxkml.declare.lmnn`); with the linear kernel it does not.

    Parameters
    ----------
    k : int, default=5
        Target neighbours per point; every class needs k + 1 members.
    gamma : float in (0, 1], default=0.5
        Weight of the hinge (impostor) terms.
    kernel : {"linear", "gaussian", "rbf", "polynomial", "poly", "precomputed"}, default="linear"
        ``"linear"``: linear LMNN on the features.  Others: kernel LMNN on the empirical
        kernel map.  ``"precomputed"``: ``fit`` takes the training kernel matrix
        κ(X_train, X_train), ``transform`` takes κ(X_new, X_train).
    kernel_params : dict or None, default=None
        ``sigma`` or ``gamma`` (Gaussian; default gamma = 1 / n_features), ``degree``,
        ``coef0``, ``scale`` (polynomial).
    tol : float, default=1e-5
        Certified relative optimality gap at which the solver stops.
    max_iter : int, default=20000
        Iteration budget of the solver (then a :class:`ConvergenceWarning`).
    small_classes : {"raise", "shrink"}, default="raise"
        A class with fewer than k + 1 members: raise an error, or give its points
        min(k, class size − 1) target neighbours (a singleton class only supplies impostors).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_map)
        L with A = LᵀL (n_map = n_features for the linear kernel, n_train otherwise).
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` = A, objective, certified ``dual_value``, …).
    n_iter_ : int
        Solver iterations.
    X_fit_ : ndarray
        Training data (kernel LMNN only; for ``"precomputed"`` the training kernel).
    kernel_ : Kernel or None
        The resolved base kernel (None for linear LMNN).
    n_features_in_ : int
    feature_names_in_ : ndarray, when X has string column names.
    """

    def __init__(self, *, k=5, gamma=0.5, kernel="linear", kernel_params=None, tol=1e-5,
                 max_iter=20000, small_classes="raise"):
        self.k = k
        self.gamma = gamma
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.tol = tol
        self.max_iter = max_iter
        self.small_classes = small_classes

    def _base_kernel(self, n_features):
        if not isinstance(self.kernel, str) or self.kernel not in _KERNEL_PARAMS:
            raise InvalidInputError(f"kernel must be one of {sorted(_KERNEL_PARAMS)}; got {self.kernel!r}.")
        params = {} if self.kernel_params is None else self.kernel_params
        if not isinstance(params, dict):
            raise InvalidInputError(f"kernel_params must be a dict or None; got {params!r}.")
        unknown = set(params) - _KERNEL_PARAMS[self.kernel]
        if unknown:
            raise InvalidInputError(f"Unknown kernel_params {sorted(unknown)} for kernel={self.kernel!r}; "
                                    f"allowed: {sorted(_KERNEL_PARAMS[self.kernel]) or 'none'}.")
        params = dict(params)
        if self.kernel in ("gaussian", "rbf") and not params:
            params["gamma"] = 1.0 / n_features
        return Kernel(self.kernel, params)

    def fit(self, X, y):
        """Learn the metric from labelled data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) for
            ``kernel="precomputed"``
        y : array-like of shape (n_samples,)
            Class labels (at least 2 classes, each with at least k + 1 members).

        Returns
        -------
        self : LMNN
        """
        X, y = self._validate_fit(X, y)
        opts = self._lmnn_options()
        kern = self._base_kernel(X.shape[1])
        if self.kernel == "linear":
            prob = LMNNProblem.linear(X, y, self.k, self.gamma, small_classes=self.small_classes)
            self.kernel_ = None
            self.X_fit_ = None
        else:
            prob = LMNNProblem.kernel(training_kernel(kern, X), y, self.k, self.gamma,
                                      small_classes=self.small_classes)
            self.kernel_ = kern
            self.X_fit_ = X
        sol = prob.solve(**opts)
        self.components_ = prob.factor(sol.info["X"])
        self.solution_ = sol
        self.n_iter_ = int(sol.n_iter)
        return self

    def _map(self, X):
        if self.kernel == "linear":
            return X
        return X if self.kernel_.precomputed else self.kernel_(X, self.X_fit_)

    def transform(self, X):
        """Map X to the learned space, z(X) Lᵀ.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_train) for
            ``kernel="precomputed"`` (κ(X, X_train))

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        X = estimator_data(self, X)
        return self._map(X) @ self.components_.T

    def get_mahalanobis_matrix(self):
        """A = LᵀL, the learned matrix on the map z (n_map × n_map)."""
        check_is_fitted(self)
        return self.components_.T @ self.components_

    def _check_metric_available(self):
        if self.kernel == "precomputed":
            raise InvalidInputError(
                "get_metric needs the kernel between arbitrary points, which kernel='precomputed' "
                "does not provide; use transform with κ(X, X_train), or fit with a named kernel.")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags


class LMNNMKL(_LMNNBase):
    """LMNN with multiple kernels (Wang et al. 2011): learns kernel weights μ (simplex) and
    a metric A on the empirical map of k_μ = Σ_l μ_l k_l, or (``variant="NR"``) a full
    metric on the concatenated maps.

    Parameters
    ----------
    variant : {"P", "mu", "NR"}, default="P"
        ``"P"``: LMNN-MKL_P — Algorithm 1 with the rank-one weight step (eq. 15–17, w the
        smallest of ``w_grid`` reaching rank one; A initialized to I, μ uniform, W to 0).
        ``"mu"``: Algorithm 1 with the MKL_μ step on LMNN's convex majorizer (each step a
        convex CVXPY model; a local method).  ``"NR"``: NR-LMNN-MKL, LMNN on
        (k_1(x), …, k_m(x)), A″ of size m·n_train (``weights_`` is None).
    kernels : "paper", "nr", KernelSet or list, default="paper"
        ``"paper"``: the 20 kernels of §6.1 (:func:`cvxkml.mkl_kernels.paper_kernels`);
        ``"nr"``: linear, polynomial of degree 2, Gaussian σ = 0.5; or a list of
        :class:`~cvxkml.kernels.Kernel`, ``(Kernel, columns)`` pairs or
        :class:`~cvxkml.mkl_kernels.SourceKernel` (multiple sources).  Every kernel is
        normalized by its mean diagonal on the training points.  Standardize the
        features first (the paper does).
    k : int, default=5
    gamma : float in (0, 1], default=0.5
    max_outer : int, default=10
        Outer iterations of Algorithm 1.
    outer_tol : float, default=1e-4
        Algorithm 1 stops when F changes by less than outer_tol (relative) and μ by less
        than 10·outer_tol (L1).
    tol : float, default=1e-5
        Certified relative gap of each LMNN metric step.
    max_iter : int, default=20000
        Iteration budget of each LMNN metric step.
    w_grid : sequence of float, default=(1, 10, …, 1e8)
        The values of w tried in the rank-one weight step.
    small_classes : {"raise", "shrink"}, default="raise"
        As in :class:`LMNN`.
    max_convex_iter : int, default=50
        Iterations (15)–(16) per value of w in the rank-one weight step (``"P"``).

    Attributes
    ----------
    weights_ : ndarray of shape (n_kernels,) or None
        The kernel weights μ (None for ``"NR"``).
    components_ : ndarray of shape (n_components, n_map)
        L with A = LᵀL on the map (n_map = n_train, or n_kernels·n_train for ``"NR"``).
    kernel_set_ : KernelSet
        The kernels with their fitted normalization.
    kernel_labels_ : list of str
    result_ : cvxkml.declare.mkl.MKLResult or None
        Algorithm 1's record (objective history, outer iterations), None for ``"NR"``.
    solution_ : Solution
        The last LMNN metric step.
    n_iter_ : int
        Outer iterations (``"P"``, ``"mu"``) or LMNN iterations (``"NR"``).
    X_fit_ : ndarray of shape (n_train, n_features)
    n_features_in_ : int
    """

    def __init__(self, *, variant="P", kernels="paper", k=5, gamma=0.5, max_outer=10,
                 outer_tol=1e-4, tol=1e-5, max_iter=20000, w_grid=W_GRID, small_classes="raise",
                 max_convex_iter=50):
        self.variant = variant
        self.kernels = kernels
        self.k = k
        self.gamma = gamma
        self.max_outer = max_outer
        self.outer_tol = outer_tol
        self.tol = tol
        self.max_iter = max_iter
        self.w_grid = w_grid
        self.small_classes = small_classes
        self.max_convex_iter = max_convex_iter

    def _kernel_set(self) -> KernelSet:
        spec = self.kernels
        if isinstance(spec, str):
            if spec == "paper":
                return paper_kernels()
            if spec == "nr":
                return nr_kernels()
            raise InvalidInputError(f"kernels must be 'paper', 'nr', a KernelSet or a list; got {spec!r}.")
        if isinstance(spec, KernelSet):
            return KernelSet(spec.kernels, spec.normalize)       # a fresh copy (fit stores scales)
        if isinstance(spec, (Kernel, SourceKernel)):
            spec = [spec]
        return KernelSet(spec)

    def fit(self, X, y):
        """Learn the kernel weights and the metric from labelled data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : LMNNMKL
        """
        if self.variant not in ("P", "mu", "NR"):
            raise InvalidInputError(f"variant must be 'P', 'mu' or 'NR'; got {self.variant!r}.")
        X, y = self._validate_fit(X, y)
        opts = self._lmnn_options()
        ks = self._kernel_set()
        Ks = ks.fit_matrices(X)
        if self.variant == "NR":
            prob = LMNNProblem.multiple_kernels(Ks, y, self.k, self.gamma, small_classes=self.small_classes)
            sol = prob.solve(**opts)
            self.weights_ = None
            self.result_ = None
            self.n_iter_ = int(sol.n_iter)
        else:
            outer_tol = check_positive(self.outer_tol, "outer_tol")
            res = alternate(Ks, y, variant=self.variant, k=self.k, gamma=self.gamma,
                            max_outer=_pos_int(self.max_outer, "max_outer"), tol=outer_tol,
                            mu_tol=10 * outer_tol, lmnn_options=opts,
                            weight_options=({"w_grid": tuple(self.w_grid),
                                             "max_convex_iter": _pos_int(self.max_convex_iter, "max_convex_iter")}
                                            if self.variant == "P" else None),
                            small_classes=self.small_classes)
            prob, sol = res.metric_problem, res.metric_solution
            self.weights_ = res.mu
            self.result_ = res
            self.n_iter_ = int(res.n_outer)
        self.components_ = prob.factor(sol.info["X"], sol.info.get("complement"))
        self.solution_ = sol
        self.kernel_set_ = ks
        self.kernel_labels_ = ks.labels()
        self.X_fit_ = X
        return self

    def _map(self, X):
        cross = self.kernel_set_.cross_matrices(X, self.X_fit_)
        if self.variant == "NR":
            return np.hstack(cross)
        return combine_kernels(cross, self.weights_)

    def transform(self, X):
        """Map X to the learned space, z(X) Lᵀ with z = k_μ(x) (or the concatenated maps
        for ``"NR"``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        X = estimator_data(self, X)
        return self._map(X) @ self.components_.T
