"""scikit-learn estimator for von Neumann kernel learning.

:class:`VonNeumannKernelLearner` learns a kernel matrix on the training points under pair
constraints built from labels, with one of the two von Neumann problems of the package:

* ``divergence="kulis"`` (default): Kulis, Sustik & Dhillon (JMLR 2009) §5.2,

      min_K  D_vN(K, K0) + γ D_vN(diag ξ, diag ξ0)     (:class:`cvxkml.declare.VonNeumannKernel`)

  solved by their Algorithm 3.  K keeps the range of K0 (K = V0 X̂ V0ᵀ), so the learned
  kernel between arbitrary points is the range-space extension
  κ(z1, z2) = k1ᵀ K0⁺ K K0⁺ k2, i.e. :class:`~cvxkml.learned.LearnedKernel` with α = 0
  (Kulis et al. §6.1: the factor K = G0 B Bᵀ G0ᵀ applied to new points' factor coordinates).
* ``divergence="jain"``: Jain, Kulis, Davis & Dhillon (JMLR 2012) eq. 22,
  min_K f_vN(K0^-½ K K0^-½) (+ the same slack)  (``SpectralKernel(K0, …, VonNeumann())``),
  equivalent by their Theorem 4 to the metric problem min_W D_vN(W, I) in feature space, so
  W* = αI + ΦSΦᵀ with α = 1 (the minimizer of f_s(x) = x log x − x + 1) and the learned
  kernel on new points is eq. 18, κ(z1, z2) = κ0(z1, z2) + k1ᵀ S k2, S = K0⁺(K − K0)K0⁺.

Both follow the conventions of :class:`cvxkml.estimators.KernelITML`: ``transform``
(embedding of the learned kernel), ``learned_kernel``, ``get_metric``, ``pair_distance``,
``pair_score``.  ``"jain"`` evaluates them through :class:`~cvxkml.learned.LearnedKernel`
with α = 1, like KernelITML.  ``"kulis"`` keeps a LearnedKernel with α = 0
(``learned_kernel_``) but evaluates through the equivalent factor form
κ(z1, z2) = g1ᵀ B Bᵀ g2 (g the Nyström coordinates of K0's eigen factorization, B from the
solver's W and Q), because S = K0⁺ K K0⁺ has entries of order 1/p_min and the products
k1ᵀ S k2 can lose most of their digits when K0 is nearly singular (Gaussian kernel on 30
points: transforms differed by 5 % between two evaluations that differ only in round-off).
"""
from __future__ import annotations

from functools import partial

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import estimator_data
from ..errors import InvalidInputError
from .logdet import (KernelITML, _factor_map_distance, _FactorMap, _LogDetLearner,
                         training_kernel)
from ..factor import Factorization
from ..learned import LearnedKernel, kernel_S
from ..sideinfo import baseline_kernel

__all__ = ["VonNeumannKernelLearner"]

_DIVERGENCES = ("kulis", "jain")


class VonNeumannKernelLearner(_LogDetLearner):
    """von Neumann kernel learning from labels (Kulis et al. 2009, Algorithm 3; or Jain et
    al. 2012, eq. 22), with the learned kernel extended to new points.

    Pair constraints come from the labels as in :class:`cvxkml.estimators.KernelITML`:
    K_ii + K_jj − 2K_ij <= ξ_ij for similar and >= ξ_ij for dissimilar pairs, ξ0 = the
    ``percentiles`` of the squared base-kernel distances, slack penalized by
    γ D_vN(diag ξ, diag ξ0) (Kulis et al. §6.2.1).

    Parameters
    ----------
    divergence : {"kulis", "jain"}, default="kulis"
        ``"kulis"``: min D_vN(K, K0) (Kulis et al. §5.2), extension to new points
        κ(z1, z2) = k1ᵀ S k2 with S = K0⁺ K K0⁺ (α = 0: the learned kernel lives on the span of
        the training points).  ``"jain"``: min f_vN(K0^-½ K K0^-½) (Jain et al. eq. 22), extension
        κ0(z1, z2) + k1ᵀ S k2 with S = K0⁺(K − K0)K0⁺ (Theorem 4, α = 1).  For a linear kernel
        and training points spanning the feature space the two extensions coincide for a given
        K; the two problems have different optima (D_vN is not invariant under congruence).
        On labelled data ``"jain"`` needs many more sweeps.
    kernel : {"gaussian", "rbf", "linear", "polynomial", "poly", "precomputed"}, \
default="gaussian"
        The base kernel κ0, as in :class:`~cvxkml.estimators.KernelITML` (with
        ``"precomputed"``, ``fit`` takes κ0(X_train, X_train) and ``transform`` κ0(X_new, X_train)).
    kernel_params : dict or None, default=None
        Base kernel parameters (Gaussian default: gamma = 1 / n_features).
    gamma : float or None, default=1.0
        von Neumann slack weight γ > 0 (larger = constraints enforced more strictly); ``None``
        imposes hard constraints (which random label pairs may make infeasible).
    scheme : {"jain", "itml"}, default="jain"
        Pair sampling scheme, as in :class:`~cvxkml.estimators.ITML`.
    n_similar : int, default=100
        Similar pairs per class (``scheme="jain"``).
    n_dissimilar : int, default=100
        Dissimilar pairs per class (``scheme="jain"``).
    n_constraints : int or None, default=None
        Number of random pairs for ``scheme="itml"`` (None: 40·c·(c−1)).
    percentiles : tuple of two floats, default=(5.0, 95.0)
        Percentiles of the squared base-kernel distances giving the bounds u and l.
    tol : float, default=1e-6
        Stopping tolerance of Algorithm 3 (relative dual change over a sweep).
    max_sweeps : int, default=10000
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
    divergence_ : str
        The divergence the model was fitted with.
    alpha_ : float
        Weight of κ0 in the extension to new points (0 for ``"kulis"``, 1 for ``"jain"``).
    learned_kernel_ : cvxkml.learned.LearnedKernel
        The learned kernel as a function of new points in the form of eq. 18,
        α κ0(z1, z2) + k1ᵀ S k2 with S = K0⁺(K − αK0)K0⁺.  For ``"kulis"`` the estimator's own
        methods use the equivalent factor form instead (S has entries of order 1/p_min, p_min
        the smallest kept eigenvalue of K0, so k1ᵀ S k2 loses digits for nearly singular K0).
    factorization_ : cvxkml.factor.Factorization or None
        ``"kulis"``: K0 = V0 diag(p) V0ᵀ as the eigen factorization G0 = V0 P^½ with the map of
        new points to factor coordinates g(z) = P^-½ V0ᵀ κ0(X_train, z).  None for ``"jain"``.
    B_ : ndarray of shape (rank, rank) or None
        ``"kulis"``: B = P^-½ W e^{Q/2} with the solver's X̂ = W e^Q Wᵀ, so that
        K = G0 B Bᵀ G0ᵀ and ψ(z) = Bᵀ g(z) (Kulis et al. §6.1).  None for ``"jain"``.
    embedding_ : ndarray of shape (n_train, n_components)
        ``transform`` of the training points: ``embedding_ @ embedding_.T`` is the learned
        training kernel matrix.
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is the learned n_train × n_train kernel K;
        ``info["evals_per_projection"]``: root-finder evaluations per projection).
    n_iter_ : int
        Number of sweeps.
    n_features_in_ : int
        Number of features seen in ``fit`` (n_train for ``"precomputed"``).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when X has string column names.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxkml.estimators.spectral import VonNeumannKernelLearner
    >>> X, y = load_iris(return_X_y=True)
    >>> est = VonNeumannKernelLearner(kernel="linear", n_similar=20, n_dissimilar=20,
    ...                               random_state=0).fit(X, y)
    >>> est.transform(X[:2]).shape[0]
    2
    """

    def __init__(self, *, divergence="kulis", kernel="gaussian", kernel_params=None, gamma=1.0,
                 scheme="jain", n_similar=100, n_dissimilar=100, n_constraints=None,
                 percentiles=(5.0, 95.0), tol=1e-6, max_sweeps=10000, random_state=None):
        self.divergence = divergence
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.gamma = gamma
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.random_state = random_state

    @property
    def _precomputed(self):
        return self.kernel == "precomputed"

    # Kernel resolution and the precomputed guard are KernelITML's (they read only kernel and
    # kernel_params).
    _base_kernel = KernelITML._base_kernel
    _check_not_precomputed = KernelITML._check_not_precomputed

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
        self : VonNeumannKernelLearner
        """
        from ..declare import SpectralKernel, VonNeumann, VonNeumannKernel

        gamma, percentiles, tol, max_sweeps = self._check_params()
        if not isinstance(self.divergence, str) or self.divergence not in _DIVERGENCES:
            raise InvalidInputError(f"divergence must be one of {_DIVERGENCES}; got {self.divergence!r}.")
        X, y = self._validate_fit_data(X, y)
        kern = self._base_kernel(X.shape[1])
        K0 = training_kernel(kern, X)
        pc = self._constraints(y, baseline_kernel(K0), percentiles)
        if self.divergence == "kulis":
            prob, alpha = VonNeumannKernel(K0, pc, gamma=gamma), 0.0
        else:
            prob, alpha = SpectralKernel(K0, pc, VonNeumann(), gamma=gamma), VonNeumann.alpha
        sol = prob.solve(tol=tol, max_iter=max_sweeps)
        self.X_fit_ = X
        self.kernel_ = kern
        self.alpha_ = float(alpha)
        self.divergence_ = self.divergence
        self.learned_kernel_ = LearnedKernel(kern, X, kernel_S(K0, sol.matrix, alpha=alpha), alpha)
        if self.divergence == "kulis":
            # K = V0 X̂ V0ᵀ, X̂ = W diag(e^q) Wᵀ, K0 = V0 diag(p) V0ᵀ.  Factor coordinates
            # g(z) = P^-½ V0ᵀ k(z) (Nyström map) and B = P^-½ W e^{q/2}: κ(z1, z2) = g1ᵀ B Bᵀ g2
            # = k1ᵀ K0⁺ K K0⁺ k2 (α = 0) without forming S, whose entries grow like 1/p_min.
            V0, p = prob.T, np.exp(prob.regularizer.logp)
            W, q = np.asarray(sol.info["W"]), np.asarray(sol.info["q"])
            self.factorization_ = Factorization(V0 * np.sqrt(p), "eigen", None, V0 / np.sqrt(p))
            self.B_ = (W * np.exp(0.5 * q)) / np.sqrt(p)[:, None]
            self.embedding_ = (V0 @ W) * np.exp(0.5 * q)
        else:
            self.factorization_ = self.B_ = None
            self.embedding_ = self.learned_kernel_.embed_cross(K0)
        self._store_solution(sol)
        return self

    def _map(self):
        return _FactorMap(self.kernel_, self.X_fit_, self.factorization_, self.B_)

    def transform(self, X):
        """Embedding coordinates ψ(X) of the learned kernel (ψ(z)ᵀψ(z') = κ(z, z')).

        ``divergence="kulis"``: ψ(z) = Bᵀ g(z) with g the factor coordinates of z (from
        κ0(z, X_train)); exact, since with α = 0 the learned kernel lives on the span of the
        training points.  ``"jain"``: as :meth:`cvxkml.estimators.KernelITML.transform`
        (the component of z orthogonal to the training span, on which the learned kernel is
        κ0, is dropped; distances to training points are exact up to a per-point constant).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_train) for \
``kernel="precomputed"`` (κ0(X, X_train))

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        X = estimator_data(self, X)
        K_cross = X if self._precomputed else self.kernel_(X, self.X_fit_)
        if self.divergence_ == "kulis":
            return self._map().from_cross(K_cross)
        return self.learned_kernel_.embed_cross(K_cross)

    def learned_kernel(self, X, Y=None):
        """The learned kernel matrix κ(X, Y) between arbitrary points (eq. 18 with α = ``alpha_``).

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
        if self.divergence_ == "kulis":
            fmap = self._map()
            return fmap(X) @ fmap(Y).T
        return self.learned_kernel_(X, Y)

    def get_metric(self):
        """A callable ``f(u, v) -> float``, the learned kernel distance
        sqrt(κ(u, u) + κ(v, v) − 2κ(u, v)) between two feature vectors (a snapshot;
        picklable).  Not available for ``kernel="precomputed"``."""
        check_is_fitted(self)
        self._check_not_precomputed("get_metric")
        if self.divergence_ == "kulis":
            return partial(_factor_map_distance, fmap=self._map())
        return KernelITML.get_metric(self)

    def _pair_sq_distances(self, A, B):
        if self.divergence_ == "kulis":
            fmap = self._map()
            D = fmap(A) - fmap(B)
            return np.einsum("ij,ij->i", D, D)
        return self.learned_kernel_.pair_sq_distances(A, B)

    @property
    def _n_features_out(self):
        return self.embedding_.shape[1]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags
