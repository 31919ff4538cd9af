"""scikit-learn estimators for spectral kernel and metric learning:
:class:`VonNeumannKernelLearner` (Kulis et al. 2009 §5.2, or Jain et al. 2012 eq. 22), and
:class:`SpectralKernelLearner` / :class:`SpectralMetricLearner`, which take any spectral
regularizer (Jain et al. 2012 eq. 12–13, Theorem 4).
"""

from __future__ import annotations

import numpy as np

from .._progress import verbose_logging as _verbose_logging
from .._validation import as_generator, check_index_array, estimator_fit_data
from ..errors import InvalidInputError
from ..factor import Factorization
from ..sideinfo import percentile_bounds
from ._base import CvxkmlEstimator, KernelExtensionMixin, MetricMixin
from ._docs import fill_doc
from ._maps import EmbeddingDistance, EmbeddingKernel, FactorCross, KernelMap
from ._pairs import PairLearnerMixin
from ._params import (
    BREGMAN_CONSTRAINTS,
    CONTROL_CONSTRAINTS,
    KERNEL_CONSTRAINTS,
    PAIR_CONSTRAINTS,
    POSITIVE,
    SLACK_CONSTRAINTS,
    STANDARDIZE_CONSTRAINTS,
    Integer,
    Options,
    Real,
)
from ._persist import register_regularizer

__all__ = ["VonNeumannKernelLearner", "SpectralKernelLearner", "SpectralMetricLearner", "register_regularizer"]


class VonNeumannKernelLearner(KernelExtensionMixin, PairLearnerMixin, CvxkmlEstimator):
    """von Neumann kernel learning from labels (Kulis et al. 2009, Algorithm 3; or Jain et
    al. 2012, eq. 22), with the learned kernel extended to new points.

    Pair constraints K_ii + K_jj − 2K_ij <= ξ_ij for similar and >= ξ_ij for dissimilar
    pairs, slack penalized by γ D_vN(diag ξ, diag ξ0) (Kulis et al. §6.2.1); the baseline
    of ``percentiles`` is κ0.

    %(pairs_side_information)s

    ``divergence="kulis"`` (default) solves min D_vN(K, K0) (Kulis et al. §5.2) on its
    Lagrange dual by projected Newton-CG, certified by the duality gap
    (:func:`cvxkml.solvers.vonneumann.vonneumann_slack_newton`; their Algorithm 3 of
    rank-one eigen-updates runs for hard constraints and when Newton does not certify).
    K keeps the range of K0, so the learned kernel on new points is eq. 18 with α = 0,
    κ(z1, z2) = k1ᵀ K0⁺ K K0⁺ k2, evaluated in the equivalent factor form g1ᵀ B Bᵀ g2
    (g the factor coordinates from κ0(z, X_train), §6.1): S = K0⁺ K K0⁺ has entries of
    order 1/p_min (p_min the smallest kept eigenvalue of K0), so the products k1ᵀ S k2
    lose digits for a nearly singular K0, and the factor form does not.  ``transform``
    is ψ(z) = Bᵀ g(z), exact everywhere.

    ``divergence="jain"`` solves min f_vN(K0^-½ K K0^-½) (Jain et al. eq. 22), equivalent
    by Theorem 4 to min_W D_vN(W, I) in feature space, so W* = I + ΦSΦᵀ (α = 1, the
    minimizer of f_s(x) = x log x − x + 1) and the extension is eq. 18 with α = 1, as for
    :class:`~cvxkml.estimators.KernelITML` (whose ``transform`` drops the component of a
    point orthogonal to the training span; distances to training points are exact up to a
    constant per point).

    Parameters
    ----------
    divergence : {"kulis", "jain"}, default="kulis"
        The problem (see above).  For a linear kernel and training points spanning the
        feature space the two extensions coincide for a given K; the two problems have
        different optima (D_vN is not invariant under congruence).  On labelled data
        ``"jain"`` needs many more sweeps.
    %(kernel_parameters)s
    %(standardize)s
    gamma : float or None, default=1.0
        von Neumann slack weight γ > 0 (larger = constraints enforced more strictly); ``None``
        imposes hard constraints (which random label pairs may make infeasible).
    %(pair_sampling)s
    %(percentiles)s
    %(random_state)s
    tol : float, default=1e-6
        The certificate: the solve stops when the Lagrange duality gap is at most
        ``tol``·max(1, |objective|) (with slack, the primal point is the learned K with its
        best slack, so the gap alone certifies).  Hard constraints (``gamma=None``) are
        solved by Algorithm 3, stopped on its relative dual change below ``tol`` and the
        same certificate.
    max_iter : int, default=10000
        Maximum number of Newton iterations (at most 200 in the slack solver) or, on the
        fallback, of Algorithm 3's sweeps (then a :class:`cvxkml.errors.ConvergenceWarning`).
    %(max_sweeps)s
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
        α κ0(z1, z2) + k1ᵀ S k2 with S = K0⁺(K − αK0)K0⁺ (``"kulis"``: the estimator's own
        methods use the factor form, see above).
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
        "divergence": Options("kulis", "jain", what="one of ('kulis', 'jain')"),
        **KERNEL_CONSTRAINTS,
        **STANDARDIZE_CONSTRAINTS,
        **SLACK_CONSTRAINTS,
        **BREGMAN_CONSTRAINTS,
        **CONTROL_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        divergence="kulis",
        kernel="gaussian",
        kernel_params=None,
        standardize="auto",
        gamma=1.0,
        scheme="jain",
        n_similar=100,
        n_dissimilar=100,
        n_constraints=None,
        percentiles=(5.0, 95.0),
        tol=1e-6,
        max_iter=10000,
        max_sweeps=None,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.divergence = divergence
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.standardize = standardize
        self.gamma = gamma
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.tol = tol
        self.max_iter = max_iter
        self.max_sweeps = max_sweeps
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _fit(self, X, y, pairs, p):
        from ..declare import SpectralKernel, VonNeumann, VonNeumannKernel

        kern, K0, _, pc = self._kernel_pairs(X, y, pairs, p)
        if p.divergence == "kulis":
            prob, alpha = VonNeumannKernel(K0, pc, gamma=p.gamma), 0.0
        else:
            prob, alpha = SpectralKernel(K0, pc, VonNeumann(), gamma=p.gamma), VonNeumann.alpha
        sol = self._solve(prob, p)
        self._extend(kern, X, K0, sol.matrix, float(alpha), K_train=None if p.divergence == "kulis" else K0)
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
        self.pairs_ = pc
        self._set_solution(sol, p=p)

    # "kulis": the factor form g1ᵀ B Bᵀ g2 (class description); "jain": KernelExtensionMixin
    def _embedding(self):
        if self.divergence_ == "kulis":
            return KernelMap(self.kernel_, self.X_fit_, FactorCross(self.factorization_, self.B_))
        return super()._embedding()

    def _distance(self):
        return EmbeddingDistance(self._embedding()) if self.divergence_ == "kulis" else super()._distance()

    def _kernel_function(self):
        return EmbeddingKernel(self._embedding()) if self.divergence_ == "kulis" else super()._kernel_function()


# =========================================================================== declared variants
def _check_regularizer(value, name):
    from ..declare.regularizers import LogDet, Regularizer
    from ..errors import InvalidInputError

    if value is None:
        return LogDet()
    if isinstance(value, type) and issubclass(value, Regularizer):
        raise InvalidInputError(
            f"{name} must be a Regularizer instance, e.g. {value.__name__}(); got the class itself."
        )
    if not isinstance(value, Regularizer):
        raise InvalidInputError(
            f"{name} must be None (LogDet) or a cvxkml.declare.regularizers.Regularizer instance "
            f"(LogDet(), VonNeumann(), Frobenius(), TraceNorm(tau), or your subclass); got {type(value).__name__}."
        )
    value.check_theorem4()
    return value


#: what both declared-variant learners take beyond the kernel
SPECTRAL_CONSTRAINTS = {
    "regularizer": _check_regularizer,
    "constraints": Options("auto", "slack", "hinge", "hard", what="'auto', 'slack', 'hinge' or 'hard'"),
    "C": POSITIVE,
    "gamma": POSITIVE,
    "margin": Real(0.0, none=True, what="None or a finite non-negative number"),
    **PAIR_CONSTRAINTS,
    "percentiles": BREGMAN_CONSTRAINTS["percentiles"],
    "tol": POSITIVE,
    "max_iter": Integer(1),
    **CONTROL_CONSTRAINTS,
}


def _given_triplets(triplets, n):
    arr = np.asarray(triplets) if not isinstance(triplets, (str, bytes, dict)) else np.zeros((0, 0))
    if arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] == 0:
        raise InvalidInputError(
            "triplets must be an integer array of shape (m, 3), m >= 1: rows (i, j, k) "
            f"meaning point i is closer to j than to k; got shape {arr.shape}."
        )
    return check_index_array(arr, "triplets", n, ndim=2)


class _SpectralLearner(PairLearnerMixin, CvxkmlEstimator):
    """fit from labels (pairs drawn from them), or from given pairs and/or triplets."""

    @fill_doc
    def fit(self, X, y=None, *, pairs=None, triplets=None):
        """Learn from class labels y, or from given pairs and/or triplets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) for \
``kernel="precomputed"``
            Training points (at least 2, finite), or their kernel matrix κ0(X_train, X_train).
        y : array-like of shape (n_samples,) or None, default=None
            Class labels; pairs are drawn from them (``scheme``, ``n_similar``,
            ``n_dissimilar``).  Give y, or ``pairs`` / ``triplets``, not both.
        pairs : PairConstraints or array-like of shape (m, 2) or (m, 3), default=None
            As for :class:`~cvxkml.estimators.ITML` (bounds from the ``percentiles``).
        triplets : array-like of shape (t, 3), default=None
            Rows (i, j, k): d(i, j) + margin <= d(i, k) in the learned squared distances.

        %(fitted_self)s

        Raises
        ------
        InvalidInputError
            A parameter out of its range; y together with pairs/triplets, or none of them;
            an index out of range.
        InfeasibleError
            ``constraints="hard"`` and no matrix satisfies them (use ``"hinge"``).
        """
        p = self._validate_params()
        if y is not None and (pairs is not None or triplets is not None):
            raise InvalidInputError(f"Give either labels y or pairs/triplets to {type(self).__name__}.fit, not both.")
        if triplets is None:
            X, y = self._fit_inputs(X, y, pairs)
        else:
            X = estimator_fit_data(self, X)
        with _verbose_logging(p.verbose):
            self._fit_variant(X, y, pairs, triplets, p)
        return self

    def _side_information(self, y, pairs, triplets, p, baseline, n):
        """The constraint list: pairs (from y or given), triplets, each wrapped in Hinge(C)
        for ``constraints="hinge"``."""
        from ..sideinfo import Hinge, RelativeConstraints

        out = []
        self.pairs_ = None if (y is None and pairs is None) else self._pair_constraints(y, pairs, p, baseline, n)
        if self.pairs_ is not None:
            out.append(self.pairs_)
        self.triplets_ = None
        if triplets is not None:
            t = _given_triplets(triplets, n)
            margin = p.margin
            if margin is None:
                margin = percentile_bounds(baseline, n, p.percentiles, as_generator(p.random_state))[0]
            self.triplets_ = RelativeConstraints(t[:, 0], t[:, 1], t[:, 2], np.full(t.shape[0], float(margin)))
            out.append(self.triplets_)
        mode = self._constraint_mode(p)
        if mode == "hinge":
            out = [Hinge(c, C=p.C) for c in out]
        return out, (p.gamma if mode == "slack" else None)

    def _constraint_mode(self, p) -> str:
        """``"auto"``: the regularizer's own slack when it has one (LogDet, von Neumann),
        hinge otherwise."""
        if p.constraints == "auto":
            return "slack" if p.regularizer.has_slack else "hinge"
        if p.constraints == "slack" and not p.regularizer.has_slack:
            raise InvalidInputError(
                f"The {p.regularizer.name} regularizer has no slack formulation; use constraints='hinge' or 'hard'."
            )
        return p.constraints


@fill_doc
class SpectralKernelLearner(KernelExtensionMixin, _SpectralLearner):
    """Kernel learning with any spectral regularizer (Jain et al. 2012, eq. 12, Theorem 4):

        min_K  f(K0^-½ K K0^-½)  s.t. pair / triplet constraints on K

    (``constraints="hinge"``: each constraint may be violated at cost C per unit; ``"hard"``:
    exactly), solved by ``SpectralKernel(K0, constraints, regularizer).solve()`` (whatever
    fast solver the problem dispatches to; every answer carries its Lagrange certificate).
    The learned kernel is extended to new points by eq. 18,
    κ(z1, z2) = α κ0(z1, z2) + k1ᵀ S k2 with S = K0⁺(K − αK0)K0⁺ and α the minimizer of
    the regularizer's f_s (Theorem 4).  The baseline of ``percentiles`` is κ0.

    Parameters
    ----------
    regularizer : Regularizer or None, default=None
        Any :class:`cvxkml.declare.regularizers.Regularizer` instance (LogDet(), VonNeumann(),
        Frobenius(), TraceNorm(tau), or a user subclass); None is LogDet().  To save and load
        an estimator with a user subclass, register it (:func:`register_regularizer`).
    %(kernel_parameters)s
    %(standardize)s
    constraints : {"auto", "slack", "hinge", "hard"}, default="auto"
        ``"slack"``: the regularizer's own slack divergence weighted by ``gamma`` (Jain et al.
        eq. 7: γ D(diag ξ, diag ξ0); LogDet and von Neumann only); ``"hinge"``: hinge (ℓ1)
        slack with cost ``C`` (any regularizer); ``"hard"``: hard constraints; ``"auto"``:
        ``"slack"`` when the regularizer has one, else ``"hinge"``.
    C : float, default=1.0
        The hinge cost per unit of violation.
    gamma : float, default=1.0
        The slack weight γ of ``"slack"``.
    margin : float or None, default=None
        The triplet margin (None: the lower ``percentiles`` value of the squared baseline
        distances, the similar-pair bound).
    %(pair_sampling)s
    %(percentiles)s
    %(random_state)s
    tol : float, default=1e-6
        Relative duality gap of the certificate.
    max_iter : int, default=10000
        The solver's iteration limit.
    %(control)s

    Attributes
    ----------
    %(kernel_fitted)s
    learned_kernel_ : cvxkml.learned.LearnedKernel
        The learned kernel on arbitrary points (eq. 18).
    alpha_ : float
        α of the regularizer (the weight of κ0 in the extension).
    embedding_ : ndarray of shape (n_train, n_components)
        ``transform`` of the training points.
    pairs_ : cvxkml.sideinfo.PairConstraints or None
        The pair constraints used.
    triplets_ : cvxkml.sideinfo.RelativeConstraints or None
        The triplet constraints used.
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is the learned n_train × n_train kernel).
    n_iter_ : int
        The solver's iterations.
    %(converged)s
    %(standardize_fitted)s
    %(features_in)s

    References
    ----------
    %(jain2012)s: eq. 12 and 18, Theorem 4.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxkml.declare.regularizers import Frobenius
    >>> from cvxkml.estimators import SpectralKernelLearner
    >>> X, y = load_iris(return_X_y=True)
    >>> est = SpectralKernelLearner(Frobenius(), n_similar=20, n_dissimilar=20, random_state=0).fit(X, y)
    >>> est.transform(X[:2]).shape[0]
    2
    """

    _parameter_constraints = {**KERNEL_CONSTRAINTS, **STANDARDIZE_CONSTRAINTS, **SPECTRAL_CONSTRAINTS}

    def __init__(
        self,
        regularizer=None,
        *,
        kernel="gaussian",
        kernel_params=None,
        standardize="auto",
        constraints="auto",
        C=1.0,
        gamma=1.0,
        margin=None,
        scheme="jain",
        n_similar=100,
        n_dissimilar=100,
        n_constraints=None,
        percentiles=(5.0, 95.0),
        tol=1e-6,
        max_iter=10000,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.regularizer = regularizer
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.standardize = standardize
        self.constraints = constraints
        self.C = C
        self.gamma = gamma
        self.margin = margin
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _fit_variant(self, X, y, pairs, triplets, p):
        from ..declare import SpectralKernel
        from ..sideinfo import baseline_kernel

        kern, K0 = self._kernel_matrix(X, p)
        cons, gamma = self._side_information(y, pairs, triplets, p, baseline_kernel(K0), X.shape[0])
        reg = p.regularizer
        sol = self._solve(SpectralKernel(K0, cons, reg, gamma=gamma), p)
        self.alpha_ = float(reg.alpha)
        self._extend(kern, X, K0, sol.matrix, self.alpha_, K_train=K0)
        self._set_solution(sol, p=p)


@fill_doc
class SpectralMetricLearner(MetricMixin, _SpectralLearner):
    """Mahalanobis metric learning with any spectral regularizer (Jain et al. 2012, eq. 13):

        min_W  f(W)  s.t. pair / triplet constraints on the distances (x_i − x_j)ᵀW(x_i − x_j)

    (hinge or hard), solved by ``SpectralMetric(X, constraints, regularizer).solve()``;
    ``components_`` is L with W = LᵀL, ``transform(X) = X @ components_.T``.  Features are
    standardized first by default (``standardize="auto"``).

    %(wide_data)s
    The span path needs a regularizer with Theorem 4's minimizer α (every built-in one).

    Parameters
    ----------
    regularizer : Regularizer or None, default=None
        As for :class:`SpectralKernelLearner` (None is LogDet(): ITML's regularizer with the
        identity prior).
    standardize : "auto" or bool, default="auto"
        Standardize the features before learning (``"auto"`` and True: yes; the map of raw
        features is ``components_``, up to a translation).
    constraints, C, gamma, margin, scheme, n_similar, n_dissimilar, n_constraints, percentiles, \
random_state, tol, max_iter
        As for :class:`SpectralKernelLearner` (bounds from squared Euclidean distances of
        the standardized features).
    %(control)s

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
        L with W = LᵀL on the standardized features, divided by the feature scale (a map of
        raw features up to a translation).  For wide data (span path) it is formed on
        access, not stored (shape (k, n_features) when α = 0).
    metric_ : cvxkml.learned.LearnedMetric or cvxkml.learned.FactoredMetric
        The learned metric on the standardized features: dense W, or W = αI + U diag(λ) Uᵀ
        for wide data.
    pairs_ : cvxkml.sideinfo.PairConstraints or None
        The pair constraints used.
    triplets_ : cvxkml.sideinfo.RelativeConstraints or None
        The triplet constraints used.
    solution_ : cvxkml.solution.Solution
        The solver's result (``matrix`` is W, or the k × k matrix of the span for wide data).
    n_iter_ : int
        The solver's iterations.
    %(converged)s
    %(standardize_fitted)s
    %(features_in)s

    References
    ----------
    %(jain2012)s: eq. 13.
    """

    _parameter_constraints = {**STANDARDIZE_CONSTRAINTS, **SPECTRAL_CONSTRAINTS}

    def __init__(
        self,
        regularizer=None,
        *,
        standardize="auto",
        constraints="auto",
        C=1.0,
        gamma=1.0,
        margin=None,
        scheme="jain",
        n_similar=100,
        n_dissimilar=100,
        n_constraints=None,
        percentiles=(5.0, 95.0),
        tol=1e-6,
        max_iter=10000,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.regularizer = regularizer
        self.standardize = standardize
        self.constraints = constraints
        self.C = C
        self.gamma = gamma
        self.margin = margin
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _auto_standardize(self, p) -> bool:
        return True

    def _fit_variant(self, X, y, pairs, triplets, p):
        from ..declare import SpectralMetric
        from ..sideinfo import baseline_metric

        Z = self._feature_standardization(X, p)
        cons, gamma = self._side_information(y, pairs, triplets, p, baseline_metric(Z), X.shape[0])
        prob = SpectralMetric(Z, cons, p.regularizer, gamma=gamma)
        sol = self._solve(prob, p)
        self._keep_metric(prob.learned_metric(sol))
        self._set_solution(sol, p=p)
