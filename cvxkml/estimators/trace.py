"""scikit-learn transformer for Trace-SSIKDR, trace-norm inductive semi-supervised kernel
dimensionality reduction (Jain et al. 2012, §5.4, eq. 26–28, Algorithm 2, Lemma 10).

:class:`TraceSSIKDR` builds hard pair constraints from class labels
(:meth:`cvxkml.sideinfo.PairConstraints.from_labels`, bounds from percentiles of the
base-kernel distances), solves

    min_{K̃ ⪰ 0} τ tr K̃ + ‖K̃‖²_F   s.t.  d_K(i, j) <= u (similar),  >= l (dissimilar),
    K = K0^½ K̃ K0^½                                                          (26)

with the accelerated Uzawa solver of :mod:`cvxkml.solvers.trace`, and maps any point x to
the k-dimensional coordinates of the learned low-rank transformation,

    x ↦ K̃^½ K0^-½ κ0(X_train, x)   (written in the eigenbasis of K̃, largest first),

where k = rank K̃ is decided by the data and τ (see :attr:`TraceSSIKDR.rank_`).
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._config import blas_limit
from .._validation import check_positive, estimator_data
from ..declare.trace import TraceSSIKDR as _TraceProblem
from ..errors import InvalidInputError
from .logdet import KernelITML, _LogDetLearner, training_kernel
from ..sideinfo import baseline_kernel

__all__ = ["TraceSSIKDR"]


class TraceSSIKDR(_LogDetLearner):
    """Trace-norm inductive semi-supervised kernel dimensionality reduction (Jain et al.
    2012, §5.4): a low-rank linear transformation of the base kernel's feature space,
    learned from pair constraints derived from class labels, applied to new points.

    The learned kernel on the training points is K = K0^½ K̃ K0^½ with K̃ the solution
    of eq. 26 (hard constraints: there is no slack).  ``transform`` maps x to
    diag(√s) Uᵀ Λ^-½ Vᵀ κ0(X_train, x), where K0 = V Λ Vᵀ and K̃ = U diag(s) Uᵀ (s > 0,
    decreasing): the coordinates of K̃^½ K0^-½ k_x in the eigenbasis of K̃, so column c
    is the c-th most important learned direction.  Inner products of the training
    points' coordinates reproduce the learned training kernel K exactly.

    **The output dimension is data-dependent.**  The trace norm makes K̃ low rank, but
    its rank k (:attr:`rank_`) is decided by τ, the constraints and the data, not fixed in
    advance: raising τ never raises it, and as τ → ∞ it tends to the rank of the
    minimum-trace feasible K̃, which can be well above 2 (on 100 MNIST digits with
    1 300 label pairs it stays at about 12 even for τ = 1000).  For a fixed dimension give
    ``n_components``: ``transform`` then keeps the leading ``min(n_components, k)``
    coordinates (a truncation of the learned transformation to its top eigen-directions).
    :attr:`n_components_` always reports the number of columns ``transform`` returns.

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "linear", "polynomial", "poly", "precomputed"}, \
default="gaussian"
        The base kernel κ0.  With ``"precomputed"``, ``fit`` takes the square training
        kernel matrix κ0(X_train, X_train) and ``transform`` takes κ0(X_new, X_train) of
        shape (n_new, n_train).
    kernel_params : dict or None, default=None
        ``sigma`` or ``gamma`` for the Gaussian kernel exp(−gamma‖x − y‖²)
        (gamma = 1 / (2 sigma²)); ``degree``, ``coef0``, ``scale`` for the polynomial
        kernel.  None: defaults; for the Gaussian kernel gamma = 1 / n_features (as
        scikit-learn's ``gamma="auto"``; standardise the features first, or give gamma).
    tau : float, default=1.0
        The trace-norm weight τ > 0 of eq. 26 (larger = lower rank).
    n_components : int or None, default=None
        Number of output coordinates: None keeps all k = :attr:`rank_`; an integer keeps
        the leading ``min(n_components, rank_)`` (a UserWarning says so when the learned
        rank is smaller than asked).
    scheme : {"jain", "itml"}, default="jain"
        How pairs are drawn from the labels (as in :class:`cvxkml.estimators.ITML`):
        ``"jain"``: per class ``n_similar`` within-class and ``n_dissimilar``
        between-class pairs (Jain et al. §6); ``"itml"``: ``n_constraints`` random pairs.
    n_similar : int, default=100
        Similar pairs per class (``scheme="jain"``).
    n_dissimilar : int, default=100
        Dissimilar pairs per class (``scheme="jain"``).
    n_constraints : int or None, default=None
        Number of random pairs for ``scheme="itml"`` (None: 40·c·(c−1)).
    percentiles : tuple of two floats, default=(5.0, 95.0)
        Percentiles (lower, upper) of the squared base-kernel distances over all pairs of
        training points giving the bounds u (similar) and l (dissimilar).  Jain et al.
        §6 use (1, 99).
    tol : float, default=1e-6
        Stopping tolerance of the Uzawa solver (relative change of the multipliers;
        hard constraints are also required to hold to 1e-7 relative).
    max_sweeps : int, default=20000
        Maximum number of Uzawa iterations; when reached, the solver emits a
        :class:`cvxkml.errors.ConvergenceWarning` and the last iterate is kept (an
        infeasible constraint set — possible for a rank-deficient K0 — ends this way).
        An ill-conditioned K0 needs many iterations (a Gaussian kernel on 100 pendigits,
        cond(K0) ≈ 4e4: about 20 000; on 100 MNIST digits, cond ≈ 2e3: about 1 000).
        The solve follows the library's thread policy (``cvxkml.set_config(blas_threads=…)``,
        default one BLAS thread).
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, \
default=None
        Seed of the pair sampling (and of the percentile sample for large n).

    Attributes
    ----------
    X_fit_ : ndarray of shape (n_train, n_features)
        The training points (with ``"precomputed"``: the training kernel matrix).
    kernel_ : cvxkml.kernels.Kernel
        The base kernel with its resolved parameters.
    constraints_ : cvxkml.sideinfo.PairConstraints
        The pair constraints learned from.
    rank_ : int
        k, the rank of the learned transformation (number of eigenvalues of K̃ above
        1e-9 of the largest).
    n_components_ : int
        Number of columns of ``transform``'s output: ``rank_`` or
        ``min(n_components, rank_)``.
    eigenvalues_ : ndarray of shape (rank_,)
        s, the non-zero eigenvalues of K̃, decreasing (its spectrum is that of
        K0^-½ K K0^-½).
    projection_ : ndarray of shape (n_train, n_components_)
        P with ``transform(X) = κ0(X, X_train) @ P`` (P = V Λ^-½ U_k diag(√s_k), the
        Lemma 10 form Σ^½ D V of Algorithm 2's output).
    embedding_ : ndarray of shape (n_train, n_components_)
        ``transform`` of the training points; with n_components_ = rank_,
        ``embedding_ @ embedding_.T`` is the learned training kernel K.
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is the learned n_train × n_train kernel K).
    n_iter_ : int
        Number of Uzawa iterations.
    n_features_in_ : int
        Number of features seen in ``fit`` (n_train for ``"precomputed"``).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when X has string column names.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from cvxkml.estimators.trace import TraceSSIKDR
    >>> X, y = load_digits(return_X_y=True)
    >>> est = TraceSSIKDR(kernel_params={"gamma": 1e-3}, tau=10.0, n_components=2,
    ...                   n_similar=20, n_dissimilar=20, random_state=0).fit(X[:100], y[:100])
    >>> est.transform(X[100:110]).shape
    (10, 2)
    """

    def __init__(self, *, kernel="gaussian", kernel_params=None, tau=1.0, n_components=None,
                 scheme="jain", n_similar=100, n_dissimilar=100, n_constraints=None,
                 percentiles=(5.0, 95.0), tol=1e-6, max_sweeps=20000, random_state=None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.tau = tau
        self.n_components = n_components
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.random_state = random_state

    # the shared checks read ``gamma`` (LogDet slack); Trace-SSIKDR has hard constraints only
    gamma = None

    @property
    def _precomputed(self):
        return self.kernel == "precomputed"

    # KernelITML's kernel resolution reads only ``kernel`` and ``kernel_params``.
    _base_kernel = KernelITML._base_kernel

    def _check_trace_params(self):
        tau = check_positive(self.tau, "tau")
        nc = self.n_components
        if nc is not None and (not isinstance(nc, numbers.Integral) or isinstance(nc, bool) or nc < 1):
            raise InvalidInputError(f"n_components must be None or a positive integer; got {nc!r}.")
        return tau, (None if nc is None else int(nc))

    def fit(self, X, y):
        """Learn the low-rank transformation from labelled training points.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) \
for ``kernel="precomputed"``
            Training data, or the training kernel matrix κ0(X_train, X_train).
        y : array-like of shape (n_samples,)
            Class labels (at least 2 classes).

        Returns
        -------
        self : TraceSSIKDR
        """
        _, percentiles, tol, max_sweeps = self._check_params()
        tau, nc = self._check_trace_params()
        X, y = self._validate_fit_data(X, y)
        kern = self._base_kernel(X.shape[1])
        K0 = training_kernel(kern, X)
        pc = self._constraints(y, baseline_kernel(K0), percentiles)
        # the library's thread policy (blas_threads, default 1): the solver does thousands
        # of small (n × n) products and eigendecompositions, where threads only add
        # synchronisation cost (measured on a busy 2-core machine, n = 150: 2.3 s with one
        # thread, 166 s with two)
        with blas_limit():
            problem = _TraceProblem(K0, pc, tau=tau)
            sol = problem.solve(tol=tol, max_iter=max_sweeps)
            P, s = problem.embedding_basis(sol)
        k = int(s.size)
        if nc is not None and nc > k:
            warnings.warn(
                f"n_components={nc} but the learned transformation has rank {k}: transform "
                f"returns {k} coordinates (lower tau for a higher rank).", UserWarning, stacklevel=2)
        keep = k if nc is None else min(nc, k)
        self.X_fit_ = X
        self.kernel_ = kern
        self.constraints_ = pc
        self.rank_ = k
        self.n_components_ = keep
        self.eigenvalues_ = s
        self.projection_ = np.ascontiguousarray(P[:, :keep])
        self.embedding_ = K0 @ self.projection_
        self._store_solution(sol)
        return self

    def transform(self, X):
        """k-dimensional coordinates x ↦ diag(√s) Uᵀ Λ^-½ Vᵀ κ0(X_train, x) of the learned
        transformation (leading ``n_components_`` of them).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_train) for \
``kernel="precomputed"`` (κ0(X, X_train))

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components_)
        """
        check_is_fitted(self)
        X = estimator_data(self, X)
        K_cross = X if self._precomputed else self.kernel_(X, self.X_fit_)
        return K_cross @ self.projection_

    def _check_not_precomputed(self, what):
        KernelITML._check_not_precomputed(self, what)

    def _pair_sq_distances(self, A, B):
        D = self.transform(A) - self.transform(B)
        return np.einsum("ij,ij->i", D, D)

    @property
    def _n_features_out(self):
        return self.n_components_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags
