"""scikit-learn estimators for LogDet metric and kernel learning (Davis et al. 2007; Jain et
al. 2012; Kulis, Sustik & Dhillon 2009): :class:`ITML` (a metric on the features),
:class:`KernelITML` (a kernel on the training points, extended by eq. 6) and
:class:`LowRankKernelITML` (in the range of a factor of the base kernel).
"""

from __future__ import annotations

import numpy as np

from .._validation import as_generator, check_kernel_matrix
from ..declare import ITML as _ITMLProblem
from ..declare import LogDetKernel as _LogDetKernelProblem
from ..errors import InvalidInputError
from ..sideinfo import baseline_metric
from ._base import CvxkmlEstimator, KernelExtensionMixin, MetricMixin
from ._maps import FactorCross, KernelMap
from ._pairs import PairLearnerMixin
from ._params import (
    BREGMAN_CONSTRAINTS,
    CONTROL_CONSTRAINTS,
    KERNEL_CONSTRAINTS,
    NON_NEGATIVE,
    POSITIVE,
    SLACK_CONSTRAINTS,
    STANDARDIZE_CONSTRAINTS,
    Integer,
    Options,
)

__all__ = ["ITML", "KernelITML", "LowRankKernelITML"]

_COV_RIDGE = 1e-6  # relative ridge of prior="covariance"


def _check_prior(value, name):
    if isinstance(value, str) and value not in ("identity", "covariance"):
        raise InvalidInputError(f"{name} must be 'identity', 'covariance' or a PD matrix; got {value!r}.")
    return value


class ITML(MetricMixin, PairLearnerMixin, CvxkmlEstimator):
    """Information-theoretic (LogDet) metric learning on features.

    Solves (Jain et al. 2012, eq. 2 / 4; eq. 7 with slack)

        min_W  D_ld(W, W0) + γ D_ld(diag ξ, diag ξ0)
        s.t.   (x_i − x_j)ᵀ W (x_i − x_j) <= ξ_ij  (similar),  >= ξ_ij  (dissimilar),

    by cyclic Bregman projections, with ξ0 the pairs' bounds (the baseline of
    ``percentiles`` is the prior metric W0).  ``transform(X)`` is X Lᵀ with W = LᵀL.

    %(wide_data)s
    The span path needs the identity prior (α = 1).

    %(pairs_side_information)s

    Parameters
    ----------
    gamma : float or None, default=1.0
        LogDet slack weight γ > 0 (larger = constraints enforced more strictly).  With
        slack every label set is feasible.  ``None`` imposes hard constraints.
    %(pair_sampling)s
    %(percentiles)s
    prior : {"identity", "covariance"} or array-like of shape (n_features, n_features), \
default="identity"
        The prior Mahalanobis matrix W0 (on the standardized features when ``standardize``
        is on): the identity (Euclidean), the inverse covariance of X regularised to be
        positive definite, W0 = (Σ + 1e-6·(tr Σ / d)·I)⁻¹, or a given symmetric positive
        definite matrix.
    standardize : "auto" or bool, default="auto"
        Learn on standardized features z = (x − m) / s (training mean m and standard
        deviation s per feature; ``feature_mean_``, ``feature_scale_``), i.e. with the
        prior W0 = diag(1/s²) on the raw features.  ``"auto"``: when ``prior="identity"``
        (a Euclidean prior on raw features of different units is dominated by the largest
        ones); a given or covariance prior is used on the features as given.
        ``components_`` always acts on the raw features.
    tol : float, default=1e-3
        %(bregman_tol)s
    max_iter : int, default=50000
        %(bregman_max_iter)s
    %(max_sweeps)s
    %(random_state)s
    %(control)s

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
        L with W = LᵀL; ``transform(X) = X @ components_.T``.  For wide data (span path)
        it is formed on access (d × d), not stored.
    metric_ : cvxkml.learned.LearnedMetric or cvxkml.learned.FactoredMetric
        The learned metric on the learning features (standardized when
        ``feature_scale_`` is set): dense W, or W = I + U diag(λ) Uᵀ for wide data.
    %(pairs_fitted)s
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is W on the learning features, or the k × k matrix
        of the span for wide data; plus duals, slack, convergence info).
    n_iter_ : int
        Number of Bregman sweeps.
    %(converged)s
    %(standardize_fitted)s
    %(features_in)s

    Notes
    -----
    %(bregman_progress)s

    References
    ----------
    Davis, Kulis, Jain, Sra & Dhillon, "Information-theoretic metric learning", ICML 2007.
    %(jain2012)s: eq. 2, 4 and 7.
    """

    _parameter_constraints = {
        **SLACK_CONSTRAINTS,
        **BREGMAN_CONSTRAINTS,
        "prior": _check_prior,
        **STANDARDIZE_CONSTRAINTS,
        **CONTROL_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        gamma=1.0,
        scheme="jain",
        n_similar=100,
        n_dissimilar=100,
        n_constraints=None,
        percentiles=(5.0, 95.0),
        prior="identity",
        standardize="auto",
        tol=1e-3,
        max_iter=50000,
        max_sweeps=None,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.gamma = gamma
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.prior = prior
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.max_sweeps = max_sweeps
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _auto_standardize(self, p):
        return isinstance(p.prior, str) and p.prior == "identity"

    def _prior_matrix(self, X, prior):
        d = X.shape[1]
        if isinstance(prior, str):
            if prior == "identity":
                return None
            C = np.atleast_2d(np.cov(X, rowvar=False))
            scale = float(np.trace(C)) / d
            if not scale > 0:
                raise InvalidInputError("prior='covariance' needs X with non-constant features (the covariance is 0).")
            W0 = np.linalg.inv(C + _COV_RIDGE * scale * np.eye(d))
            return 0.5 * (W0 + W0.T)
        W0 = check_kernel_matrix(prior, "prior", require_pd=True)
        if W0.shape != (d, d):
            raise InvalidInputError(f"prior must be {d} × {d} to match X; got {W0.shape}.")
        return W0

    def _fit(self, X, y, pairs, p):
        Z = self._feature_standardization(X, p)
        W0 = self._prior_matrix(Z, p.prior)
        pc = self._pair_constraints(y, pairs, p, baseline_metric(Z, W0), X.shape[0])
        prob = _ITMLProblem(Z, pc, W0=W0, gamma=p.gamma)
        sol = self._solve(prob, p)
        self._keep_metric(prob.learned_metric(sol))
        self.pairs_ = pc
        self._set_solution(sol, p=p)


class KernelITML(KernelExtensionMixin, PairLearnerMixin, CvxkmlEstimator):
    """LogDet kernel learning with the inductive extension to new points.

    Solves (Jain et al. 2012, eq. 3; eq. 7 with slack)

        min_K  D_ld(K, K0) + γ D_ld(diag ξ, diag ξ0)
        s.t.   K_ii + K_jj − 2K_ij <= ξ_ij  (similar),  >= ξ_ij  (dissimilar),

    with K0 = κ0(X, X) the base kernel on the training points.  The learned kernel on
    arbitrary points is κ(z1, z2) = κ0(z1, z2) + k1ᵀ S k2 with S = K0⁺(K − K0)K0⁺ and
    k_i = κ0(z_i, X_train) (Theorem 1, eq. 6); the baseline of ``percentiles`` is κ0.

    %(pairs_side_information)s

    %(kernel_extension_transform)s

    Parameters
    ----------
    %(kernel_parameters)s
    %(standardize)s
    gamma : float or None, default=1.0
        LogDet slack weight γ > 0; ``None`` imposes hard constraints.
    %(pair_sampling)s
    %(percentiles)s
    tol : float, default=1e-3
        %(bregman_tol)s
    max_iter : int, default=50000
        %(bregman_max_iter)s
    %(max_sweeps)s
    %(random_state)s
    ridge : float, default=0.0
        Non-negative value added to the diagonal of the training matrix K0 before
        learning (a white-noise term of the base kernel: it does not change κ0 between
        distinct points, so new points are extended with the plain κ0).
    %(control)s

    Attributes
    ----------
    %(kernel_fitted)s
    learned_kernel_ : cvxkml.learned.LearnedKernel
        The learned kernel as a function of new points (eq. 6).
    embedding_ : ndarray of shape (n_train, n_components)
        ``transform`` of the training points: ``embedding_ @ embedding_.T`` is the
        learned training kernel matrix (for ``ridge=0``).
    %(pairs_fitted)s
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is the learned n_train × n_train kernel K).
    n_iter_ : int
        Number of Bregman sweeps.
    %(converged)s
    %(standardize_fitted)s
    %(features_in)s

    Notes
    -----
    %(bregman_progress)s

    References
    ----------
    %(jain2012)s: eq. 3, 6 and 7, Theorem 1.
    """

    _parameter_constraints = {
        **KERNEL_CONSTRAINTS,
        **STANDARDIZE_CONSTRAINTS,
        **SLACK_CONSTRAINTS,
        **BREGMAN_CONSTRAINTS,
        "ridge": NON_NEGATIVE,
        **CONTROL_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        kernel="gaussian",
        kernel_params=None,
        standardize="auto",
        gamma=1.0,
        scheme="jain",
        n_similar=100,
        n_dissimilar=100,
        n_constraints=None,
        percentiles=(5.0, 95.0),
        ridge=0.0,
        tol=1e-3,
        max_iter=50000,
        max_sweeps=None,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.standardize = standardize
        self.gamma = gamma
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.ridge = ridge
        self.tol = tol
        self.max_iter = max_iter
        self.max_sweeps = max_sweeps
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _fit(self, X, y, pairs, p):
        kern, K0, K0_fit, pc = self._kernel_pairs(X, y, pairs, p, p.ridge)
        sol = self._solve(_LogDetKernelProblem(K0_fit, pc, gamma=p.gamma), p)
        self._extend(kern, X, K0_fit, sol.matrix, K_train=K0)
        self.pairs_ = pc
        self._set_solution(sol, p=p)


class LowRankKernelITML(PairLearnerMixin, CvxkmlEstimator):
    """Low-rank LogDet kernel learning with out-of-sample extension through the
    factorization.

    The base kernel matrix on the training points is factored, K0 ≈ G0 G0ᵀ (G0 n × r, see
    :func:`cvxkml.factor.factorize`), and the learned kernel keeps that range space:
    K = G0 B Bᵀ G0ᵀ with B r × r, found by cyclic Bregman projections at O(r²) each
    (Kulis et al. 2009, Algorithm 2; slack as in their §6.2.1;
    :class:`cvxkml.declare.LowRankLogDet`):

        min_K  D_ld(K, K0) + γ D_ld(diag ξ, diag ξ0)
        s.t.   K_ii + K_jj − 2K_ij <= ξ_ij  (similar),  >= ξ_ij  (dissimilar).

    A new point x is mapped to its factor coordinates g(x) (computed from κ0(x, X_train)
    by the same factorization), then to Bᵀg(x) (§6.1); training points map to the rows of
    G0 B (exactly for ``"eigen"``).  The baseline of ``percentiles`` is the factored
    K0 = G0 G0ᵀ.

    %(pairs_side_information)s

    Parameters
    ----------
    rank : int or None, default=None
        Rank r of the factor (1 <= r <= n_samples).  None: the numerical rank of K0
        (``method="eigen"``), or as many pivots as ``factor_tol`` needs
        (``"icholesky"``); ``"nystroem"`` needs a rank (its number of landmarks).
    method : {"eigen", "icholesky", "nystroem"}, default="eigen"
        Factorization of K0: top-r eigenvectors (G0 = V_r Λ_r^½), pivoted incomplete
        Cholesky, or Nyström on r random landmark points (seeded by ``random_state``).
    %(kernel_parameters)s
    %(standardize)s
    gamma : float or None, default=1.0
        LogDet slack weight γ > 0; ``None`` imposes hard constraints.
    %(pair_sampling)s
    %(percentiles)s
    tol : float, default=1e-6
        %(bregman_tol)s
    max_iter : int, default=50000
        %(bregman_max_iter)s
    %(max_sweeps)s
    factor_tol : float, default=1e-10
        Relative tolerance of the factorization: eigenvalues below ``factor_tol`` × the
        largest are dropped (``"eigen"``); pivoting stops when the residual trace is at most
        ``factor_tol`` × tr(K0) (``"icholesky"``).
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, \
default=None
        Seed of the pair sampling and of the Nyström landmarks.
    %(control)s

    Attributes
    ----------
    %(kernel_fitted)s
    factorization_ : cvxkml.factor.Factorization
        G0 (``factorization_.G0``) and the map of new points to factor coordinates.
    rank_ : int
        The rank r of the learned kernel.
    B_ : ndarray of shape (rank_, rank_)
        Lower-triangular B with K = G0 B Bᵀ G0ᵀ.
    embedding_ : ndarray of shape (n_train, rank_)
        G0 B, the transform of the training points (K = embedding_ @ embedding_.T).
    %(pairs_fitted)s
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is X̂ = B Bᵀ, r × r; ``info["B"]`` is B).
    n_iter_ : int
        Number of Bregman sweeps.
    %(converged)s
    %(standardize_fitted)s
    %(features_in)s

    References
    ----------
    %(kulis2009)s: Algorithm 2, §6.1 (new points) and §6.2.1 (slack).
    """

    _parameter_constraints = {
        "rank": Integer(1, none=True),
        "method": Options("eigen", "icholesky", "nystroem", what="'eigen', 'icholesky' or 'nystroem'"),
        **KERNEL_CONSTRAINTS,
        **STANDARDIZE_CONSTRAINTS,
        **SLACK_CONSTRAINTS,
        **BREGMAN_CONSTRAINTS,
        "factor_tol": POSITIVE,
        **CONTROL_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        rank=None,
        method="eigen",
        kernel="gaussian",
        kernel_params=None,
        standardize="auto",
        gamma=1.0,
        scheme="jain",
        n_similar=100,
        n_dissimilar=100,
        n_constraints=None,
        percentiles=(5.0, 95.0),
        factor_tol=1e-10,
        tol=1e-6,
        max_iter=50000,
        max_sweeps=None,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.rank = rank
        self.method = method
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.standardize = standardize
        self.gamma = gamma
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.factor_tol = factor_tol
        self.tol = tol
        self.max_iter = max_iter
        self.max_sweeps = max_sweeps
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _fit(self, X, y, pairs, p):
        from ..declare import LowRankLogDet
        from ..factor import factorize

        if p.rank is not None and p.rank > X.shape[0]:
            raise InvalidInputError(
                f"rank = {p.rank} exceeds the number of training points n = {X.shape[0]}: the "
                "learned kernel has rank at most n."
            )
        kern, K0 = self._kernel_matrix(X, p)
        fact = factorize(K0, p.method, p.rank, p.factor_tol, None, as_generator(p.random_state))
        pc = self._pair_constraints(y, pairs, p, baseline_metric(fact.G0), X.shape[0])
        prob = LowRankLogDet(fact, pc, gamma=p.gamma)
        sol = self._solve(prob, p)
        self.X_fit_ = X
        self.kernel_ = kern
        self.factorization_ = fact
        self.B_ = prob.factor(sol)
        self.rank_ = int(self.B_.shape[0])
        self.embedding_ = prob.kernel_factor(sol)
        self.pairs_ = pc
        self._set_solution(sol, p=p)

    def _embedding(self):
        return KernelMap(self.kernel_, self.X_fit_, FactorCross(self.factorization_, self.B_))

    @property
    def _n_features_out(self):
        return self.rank_
