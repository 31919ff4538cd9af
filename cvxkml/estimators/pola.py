"""scikit-learn estimator for kernel-space POLA (Jain et al. 2012 §5.2; Shalev-Shwartz,
Singer & Ng 2004).

:class:`KernelPOLA` learns the kernel matrix on the training points,

    min_{K ⪰ 0} ½‖K0^-½ K K0^-½‖²_F   s.t.  y_ij (b − d_K(i, j)) >= 1,

(d_K(i, j) = K_ii + K_jj − 2K_ij; similar pairs d <= b − 1, dissimilar d >= b + 1; pairs
drawn from class labels), with the fast dual solver of :mod:`cvxkml.solvers.pola`, and
extends it to new points with the linear-transformation kernel of Theorem 4 / eq. 18 for
the Frobenius regularizer (α = 0):  κ(z1, z2) = k1ᵀ S k2,  S = K0⁺ K* K0⁺.  With α = 0
the learned W* = Φ S Φᵀ lives in the span of the training points, so ``transform`` is
exact for every point (not only those in the span).
"""
from __future__ import annotations

import numbers
import warnings
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import (as_generator, check_positive, estimator_data, estimator_fit_data,
                          estimator_pairs)
from ..declare.pola import POLAKernel, pola_constraints
from ..errors import InvalidInputError
from .logdet import check_pair_sampling, training_kernel
from ..kernels import Kernel
from ..learned import LearnedKernel, kernel_S
from ..sideinfo import baseline_kernel, pairs_from_labels, random_pairs_from_labels

__all__ = ["KernelPOLA"]

_KERNEL_PARAMS = {
    "linear": set(), "precomputed": set(),
    "gaussian": {"sigma", "gamma"}, "rbf": {"sigma", "gamma"},
    "polynomial": {"degree", "coef0", "scale"}, "poly": {"degree", "coef0", "scale"},
}


def _kernel_distance(u, v, learned):
    a = np.asarray(u, dtype=float).reshape(1, -1)
    b = np.asarray(v, dtype=float).reshape(1, -1)
    return float(np.sqrt(learned.pair_sq_distances(a, b)[0]))


class KernelPOLA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Kernel-space POLA (Jain et al. 2012 §5.2) with the inductive extension of eq. 18.

    Learns K on the training points by

        min_K ½‖K0^-½ K K0^-½‖²_F  s.t.  K_ii + K_jj − 2K_ij <= b − 1 (similar pairs),
                                          >= b + 1 (dissimilar pairs),  K ⪰ 0,

    the batch POLA problem min ½‖W‖²_F s.t. y_ij(b − d_W(x_i, x_j)) >= 1 in feature
    space (Theorem 4 with the Frobenius regularizer, α = 0).  Hard constraints: with a
    full-rank K0 (e.g. a Gaussian kernel on distinct points) label-consistent pairs are
    always feasible; a rank-deficient K0 (a linear kernel with more points than features)
    may make them infeasible — add ``ridge`` or use fewer pairs.

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "linear", "polynomial", "poly", "precomputed"}, \
default="gaussian"
        The base kernel κ0 (``"precomputed"``: ``fit`` takes κ0(X_train, X_train),
        ``transform`` takes κ0(X_new, X_train)).
    kernel_params : dict or None, default=None
        ``sigma`` or ``gamma`` (Gaussian; default gamma = 1 / n_features), ``degree``,
        ``coef0``, ``scale`` (polynomial).
    b : float, default=2.0
        POLA's distance threshold (> 1): similar pairs get squared learned distance
        <= b − 1, dissimilar pairs >= b + 1.
    scheme : {"jain", "itml"}, default="jain"
        Pair sampling from the labels (see :class:`cvxkml.estimators.ITML`).
    n_similar, n_dissimilar : int, default=100
        Pairs per class for ``scheme="jain"``.
    n_constraints : int or None, default=None
        Random pairs for ``scheme="itml"`` (None: 40·c·(c−1)).
    ridge : float, default=0.0
        Added to the diagonal of the training K0 before learning.
    tol : float, default=1e-6
        Tolerance of the dual solver (relative duality gap and relative violation).
    max_iter : int, default=20000
        Maximum solver iterations (then a :class:`cvxkml.errors.ConvergenceWarning`).
    random_state : int, RandomState, Generator or None, default=None
        Seed of the pair sampling.

    Attributes
    ----------
    X_fit_, kernel_, learned_kernel_ (α = 0), embedding_ (n_train × rank of K*),
    solution_ (``matrix`` = K*), n_iter_, n_features_in_, feature_names_in_.
    """

    def __init__(self, *, kernel="gaussian", kernel_params=None, b=2.0, scheme="jain",
                 n_similar=100, n_dissimilar=100, n_constraints=None, ridge=0.0, tol=1e-6,
                 max_iter=20000, random_state=None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.b = b
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.ridge = ridge
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    @property
    def _precomputed(self):
        return self.kernel == "precomputed"

    def _check_params(self):
        b = float(self.b) if isinstance(self.b, numbers.Real) and not isinstance(self.b, bool) else np.nan
        if not (np.isfinite(b) and b > 1):
            raise InvalidInputError(f"b must be a finite number > 1 (similar pairs need d <= b − 1 > 0); "
                                    f"got {self.b!r}.")
        check_pair_sampling(self)
        ridge = float(self.ridge) if isinstance(self.ridge, numbers.Real) else np.nan
        if not (np.isfinite(ridge) and ridge >= 0):
            raise InvalidInputError(f"ridge must be a finite non-negative number; got {self.ridge!r}.")
        tol = check_positive(self.tol, "tol")
        mi = self.max_iter
        if not isinstance(mi, numbers.Integral) or isinstance(mi, bool) or mi < 1:
            raise InvalidInputError(f"max_iter must be a positive integer; got {mi!r}.")
        return b, ridge, tol, int(mi)

    def _base_kernel(self, n_features):
        if not isinstance(self.kernel, str) or self.kernel not in _KERNEL_PARAMS:
            raise InvalidInputError(f"kernel must be one of {sorted(_KERNEL_PARAMS)}; got {self.kernel!r}.")
        params = {} if self.kernel_params is None else self.kernel_params
        if not isinstance(params, dict):
            raise InvalidInputError(f"kernel_params must be a dict or None; got {params!r}.")
        unknown = set(params) - _KERNEL_PARAMS[self.kernel]
        if unknown:
            raise InvalidInputError(
                f"Unknown kernel_params {sorted(unknown)} for kernel={self.kernel!r}; "
                f"allowed: {sorted(_KERNEL_PARAMS[self.kernel]) or 'none'}.")
        params = dict(params)
        if self.kernel in ("gaussian", "rbf") and not params:
            params["gamma"] = 1.0 / n_features
        return Kernel(self.kernel, params)

    def _pairs(self, y, K0):
        rng = as_generator(self.random_state)
        if self.scheme == "jain":
            i, j, yy = pairs_from_labels(y, self.n_similar, self.n_dissimilar, rng)
        else:
            i, j, yy = random_pairs_from_labels(y, self.n_constraints, rng)
        d0 = baseline_kernel(K0)(i, j)
        keep = d0 > 1e-12 * float(np.max(d0))           # relative: data of any scale
        if not np.all(keep):
            warnings.warn(
                f"Dropped {int(np.sum(~keep))} pair(s) with zero base-kernel distance (duplicate "
                "points): their learned distance is 0 whatever K.", UserWarning, stacklevel=3)
            i, j, yy = i[keep], j[keep], yy[keep]
        if i.size == 0:
            raise InvalidInputError(
                "No usable pairs: all sampled pairs have zero base-kernel distance. Give distinct "
                "points (check for constant or duplicated rows in X), or another base kernel.")
        return i, j, yy

    # ------------------------------------------------------------------ fit / transform
    def fit(self, X, y):
        """Learn the kernel on the training points from labelled data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) for
            ``kernel="precomputed"``.
        y : array-like of shape (n_samples,), at least 2 classes.

        Returns
        -------
        self : KernelPOLA
        """
        b, ridge, tol, max_iter = self._check_params()
        X, y = estimator_fit_data(self, X, y)
        classes = np.unique(y)
        if classes.size < 2:
            raise InvalidInputError(
                f"KernelPOLA needs labels from at least 2 classes to form dissimilar pairs; y has "
                f"1 class ({classes[0]!r}).")
        kern = self._base_kernel(X.shape[1])
        K0 = training_kernel(kern, X)
        K0_fit = K0 + ridge * np.eye(K0.shape[0]) if ridge > 0 else K0
        i, j, yy = self._pairs(y, K0_fit)
        sol = POLAKernel(K0_fit, pola_constraints(i, j, yy, b)).solve(tol=tol, max_iter=max_iter)
        self.X_fit_ = X
        self.kernel_ = kern
        self.learned_kernel_ = LearnedKernel(kern, X, kernel_S(K0_fit, sol.matrix, alpha=0.0), alpha=0.0)
        self.embedding_ = self.learned_kernel_.embed_cross(K0)
        self.solution_ = sol
        self.n_iter_ = int(sol.n_iter)
        return self

    def transform(self, X):
        """Embedding ψ(X) with ψ(z)ᵀψ(z') = κ(z, z') = k_zᵀ S k_z' (exact for all points:
        α = 0).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_train) for
            ``kernel="precomputed"`` (κ0(X, X_train)).

        Returns
        -------
        X_new : ndarray of shape (n_samples, rank of the learned training kernel)
        """
        check_is_fitted(self)
        X = estimator_data(self, X)
        K_cross = X if self._precomputed else self.kernel_(X, self.X_fit_)
        return self.learned_kernel_.embed_cross(K_cross)

    def learned_kernel(self, X, Y=None):
        """κ(X, Y) = K_X S K_Yᵀ between arbitrary points (eq. 18, α = 0)."""
        check_is_fitted(self)
        self._check_not_precomputed("learned_kernel")
        X = estimator_data(self, X)
        Y = X if Y is None else estimator_data(self, Y)
        return self.learned_kernel_(X, Y)

    def get_metric(self):
        """A picklable callable ``f(u, v)``: the learned distance sqrt(κ(u,u) + κ(v,v) − 2κ(u,v))."""
        check_is_fitted(self)
        self._check_not_precomputed("get_metric")
        return partial(_kernel_distance, learned=self.learned_kernel_)

    def pair_distance(self, pairs):
        """Learned distances of pairs, ``pairs`` of shape (n_pairs, 2, n_features)."""
        check_is_fitted(self)
        self._check_not_precomputed("pair_distance")
        pairs = estimator_pairs(self, pairs)
        return np.sqrt(self.learned_kernel_.pair_sq_distances(pairs[:, 0], pairs[:, 1]))

    def pair_score(self, pairs):
        """``-pair_distance(pairs)``."""
        return -self.pair_distance(pairs)

    def _check_not_precomputed(self, what):
        if self._precomputed:
            raise InvalidInputError(
                f"{what} needs the base kernel between arbitrary points, which "
                "kernel='precomputed' does not provide; use transform with κ0(X, X_train).")

    @property
    def _n_features_out(self):
        return self.embedding_.shape[1]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags
