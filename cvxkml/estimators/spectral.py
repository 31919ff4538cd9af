"""scikit-learn estimator for von Neumann kernel learning.

:class:`VonNeumannKernelLearner` learns a kernel matrix on the training points under pair
constraints built from labels, with one of the two von Neumann problems of the package:

* ``divergence="kulis"`` (default): Kulis, Sustik & Dhillon (JMLR 2009) §5.2,

      min_K  D_vN(K, K0) + γ D_vN(diag ξ, diag ξ0)     (:class:`cvxkml.declare.VonNeumannKernel`)

  solved on its Lagrange dual by projected Newton-CG
  (:func:`cvxkml.solvers.vonneumann.vonneumann_slack_newton`: the optimum of their
  Algorithm 3, certified by the duality gap, in a few Newton steps instead of sweeps of
  rank-one eigen-updates; Algorithm 3 runs for hard constraints and when Newton does not
  certify).  K keeps the range of K0 (K = V0 X̂ V0ᵀ), so the learned
  kernel between arbitrary points is the range-space extension
  κ(z1, z2) = k1ᵀ K0⁺ K K0⁺ k2, i.e. :class:`~cvxkml.learned.LearnedKernel` with α = 0
  (Kulis et al. §6.1: the factor K = G0 B Bᵀ G0ᵀ applied to new points' factor coordinates).
* ``divergence="jain"``: Jain, Kulis, Davis & Dhillon (JMLR 2012) eq. 22,
  min_K f_vN(K0^-½ K K0^-½) (+ the same slack)  (``SpectralKernel(K0, …, VonNeumann())``),
  equivalent by their Theorem 4 to the metric problem min_W D_vN(W, I) in feature space, so
  W* = αI + ΦSΦᵀ with α = 1 (the minimizer of f_s(x) = x log x − x + 1) and the learned
  kernel on new points is eq. 18, κ(z1, z2) = κ0(z1, z2) + k1ᵀ S k2, S = K0⁺(K − K0)K0⁺.

Both follow the conventions of :mod:`cvxkml.estimators._base`: ``transform``
(embedding of the learned kernel), ``learned_kernel``, ``get_metric``, ``pair_distance``,
``pair_score``, and learn from labels or given ``pairs``.  ``"jain"`` evaluates them through :class:`~cvxkml.learned.LearnedKernel`
with α = 1, like KernelITML.  ``"kulis"`` keeps a LearnedKernel with α = 0
(``learned_kernel_``) but evaluates through the equivalent factor form
κ(z1, z2) = g1ᵀ B Bᵀ g2 (g the Nyström coordinates of K0's eigen factorization, B from the
solver's W and Q), because S = K0⁺ K K0⁺ has entries of order 1/p_min and the products
k1ᵀ S k2 can lose most of their digits when K0 is nearly singular (Gaussian kernel on 30
points: transforms differed by 5 % between two evaluations that differ only in round-off).
"""
from __future__ import annotations

import numpy as np

from ..factor import Factorization
from ._base import (BREGMAN_CONSTRAINTS, CONTROL_CONSTRAINTS, KERNEL_CONSTRAINTS, SLACK_CONSTRAINTS,
                    STANDARDIZE_CONSTRAINTS, CvxkmlEstimator, EmbeddingDistance, FactorCross,
                    KernelExtensionMixin, KernelMap, Options, PairLearnerMixin, _EmbeddingKernel)

__all__ = ["VonNeumannKernelLearner"]


class VonNeumannKernelLearner(KernelExtensionMixin, PairLearnerMixin, CvxkmlEstimator):
    """von Neumann kernel learning from labels (Kulis et al. 2009, Algorithm 3; or Jain et
    al. 2012, eq. 22), with the learned kernel extended to new points.

    Pair constraints K_ii + K_jj − 2K_ij <= ξ_ij for similar and >= ξ_ij for dissimilar
    pairs, slack penalized by γ D_vN(diag ξ, diag ξ0) (Kulis et al. §6.2.1).  Side
    information as in :class:`cvxkml.estimators.ITML`: class labels (pairs drawn by
    ``scheme``, ξ0 = the ``percentiles`` of the squared base-kernel distances) or
    user-given ``pairs``; ``pairs_`` holds the pairs used.

    ``transform`` gives embedding coordinates ψ(X) of the learned kernel
    (ψ(z)ᵀψ(z') = κ(z, z')).  ``divergence="kulis"``: ψ(z) = Bᵀ g(z) with g the factor
    coordinates of z (from κ0(z, X_train)); exact, since with α = 0 the learned kernel
    lives on the span of the training points.  ``"jain"``: as
    :class:`cvxkml.estimators.KernelITML` (the component of z orthogonal to the training
    span, on which the learned kernel is κ0, is dropped; distances to training points are
    exact up to a per-point constant).  :meth:`learned_kernel` is eq. 18 with
    α = ``alpha_``.

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
        Base kernel parameters (Gaussian default: the median heuristic, as in
        :class:`~cvxkml.estimators.KernelITML`).
    %(standardize)s
    gamma : float or None, default=1.0
        von Neumann slack weight γ > 0 (larger = constraints enforced more strictly); ``None``
        imposes hard constraints (which random label pairs may make infeasible).
    scheme, n_similar, n_dissimilar, n_constraints, percentiles, random_state
        Pair constraints from the labels, as in :class:`~cvxkml.estimators.ITML`
        (defaults "jain", 100, 100, None, (5.0, 95.0), None); the bounds are percentiles
        of the squared base-kernel distances.  The dual Newton solver's cost per step is
        one r × r eigendecomposition plus O(m r²) per conjugate-gradient product, so the
        number of pairs m matters little.
    tol : float, default=1e-6
        The certificate: the solve stops when the Lagrange duality gap is at most
        ``tol``·max(1, |objective|) (with slack, the primal point is the learned K with its
        best slack, so the gap alone certifies).  Hard constraints (``gamma=None``) are
        solved by Algorithm 3, stopped on its relative dual change below ``tol`` and the
        same certificate.
    max_iter : int, default=10000
        Maximum number of Newton iterations (at most 200 in the slack solver, where about 5
        are typical) or, on the fallback, of Algorithm 3's sweeps (then a
        :class:`cvxkml.errors.ConvergenceWarning`).
    max_sweeps : int or None, default=None
        Deprecated former name of ``max_iter``.
    %(control)s

    Attributes
    ----------
    %(kernel_fitted)s
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
    %(pairs_fitted)s
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is the learned n_train × n_train kernel K;
        ``info["solver"]`` names the algorithm that ran; with the Algorithm 3 fallback
        ``info["evals_per_projection"]``: root-finder evaluations per projection).
    n_iter_ : int
        Number of Newton iterations (or Algorithm 3's sweeps on the fallback).
    %(converged)s
    %(standardize_fitted)s
    %(features_in)s

    References
    ----------
    %(kulis2009)s: §5.2, Algorithm 3, §6.1, §6.2.1.
    %(jain2012)s: eq. 18 and 22, Theorem 4.

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

    _parameter_constraints = {
        "divergence": Options("kulis", "jain", what="one of ('kulis', 'jain')"), **KERNEL_CONSTRAINTS,
        **STANDARDIZE_CONSTRAINTS, **SLACK_CONSTRAINTS, **BREGMAN_CONSTRAINTS, **CONTROL_CONSTRAINTS}

    def __init__(self, *, divergence="kulis", kernel="gaussian", kernel_params=None,
                 standardize="auto", gamma=1.0, scheme="jain", n_similar=100, n_dissimilar=100,
                 n_constraints=None, percentiles=(5.0, 95.0), tol=1e-6, max_iter=10000,
                 max_sweeps=None, random_state=None, verbose=0, callback=None):
        self._store(locals())

    def _fit(self, X, y, pairs, p):
        from ..declare import SpectralKernel, VonNeumann, VonNeumannKernel

        kern, K0, _, pc = self._kernel_pairs(X, y, pairs, p)
        if p.divergence == "kulis":
            prob, alpha = VonNeumannKernel(K0, pc, gamma=p.gamma), 0.0
        else:
            prob, alpha = SpectralKernel(K0, pc, VonNeumann(), gamma=p.gamma), VonNeumann.alpha
        sol = prob.solve(tol=p.tol, max_iter=p.max_iter, callback=p.monitor.for_solver())
        self._extend(kern, X, K0, sol.matrix, float(alpha))
        self.alpha_ = float(alpha)
        self.divergence_ = p.divergence
        if p.divergence == "kulis":
            # K = V0 X̂ V0ᵀ, X̂ = W diag(e^q) Wᵀ, K0 = V0 diag(p) V0ᵀ.  Factor coordinates
            # g(z) = P^-½ V0ᵀ k(z) (Nyström map) and B = P^-½ W e^{q/2}: κ(z1, z2) = g1ᵀ B Bᵀ g2
            # = k1ᵀ K0⁺ K K0⁺ k2 (α = 0) without forming S, whose entries grow like 1/p_min.
            V0, w0 = prob.T, np.exp(prob.regularizer.logp)
            W, q = np.asarray(sol.info["W"]), np.asarray(sol.info["q"])
            self.factorization_ = Factorization(V0 * np.sqrt(w0), "eigen", None, V0 / np.sqrt(w0))
            self.B_ = (W * np.exp(0.5 * q)) / np.sqrt(w0)[:, None]
            self.embedding_ = (V0 @ W) * np.exp(0.5 * q)
        else:
            self.factorization_ = self.B_ = None
            self.embedding_ = self.learned_kernel_.embed_cross(K0)
        self.pairs_ = pc
        self._set_solution(sol, p=p)

    # "kulis" evaluates the learned kernel in the factor form g1ᵀ B Bᵀ g2 (see the module
    # description); "jain" through the learned kernel of eq. 18 (KernelExtensionMixin)
    def _embedding(self):
        if self.divergence_ == "kulis":
            return KernelMap(self.kernel_, self.X_fit_, FactorCross(self.factorization_, self.B_))
        return super()._embedding()

    def _distance(self):
        return EmbeddingDistance(self._embedding()) if self.divergence_ == "kulis" else super()._distance()

    def _kernel_function(self):
        return _EmbeddingKernel(self._embedding()) if self.divergence_ == "kulis" else \
            super()._kernel_function()
