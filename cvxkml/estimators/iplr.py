"""The scikit-learn estimator of identity-plus-low-rank (IPLR) LogDet metric learning (Jain et
al. 2012, §3.6, eq. 8–11), the paper's answer to high-dimensional metric learning:
:class:`IPLR`.
"""

from __future__ import annotations

from .._validation import as_generator, check_data
from ..declare import IPLR as _IPLRProblem
from ..declare.iplr import basis_span, feature_basis
from ..errors import InvalidInputError
from ..sideinfo import baseline_metric
from ._base import CvxkmlEstimator, MetricMixin
from ._pairs import PairLearnerMixin
from ._params import (
    BREGMAN_CONSTRAINTS,
    CONTROL_CONSTRAINTS,
    SLACK_CONSTRAINTS,
    STANDARDIZE_CONSTRAINTS,
    Integer,
)

__all__ = ["IPLR"]

#: the bases named by the paper (§3.6) for explicit features
BASES = ("svd", "kmeans", "class-means")


def _check_basis(value, name):
    if isinstance(value, str):
        if value not in BASES:
            raise InvalidInputError(f"{name} must be 'svd', 'kmeans', 'class-means' or an array R; got {value!r}.")
        return value
    return check_data(value, name)


class IPLR(MetricMixin, PairLearnerMixin, CvxkmlEstimator):
    """Identity-plus-low-rank LogDet metric learning on features, W = I + U L Uᵀ.

    Solves (Jain et al. 2012, eq. 8; LogDet slack eq. 7)

        min_{W = I + U L Uᵀ}  D_ld(W, I) + γ D_ld(diag ξ, diag ξ0)
        s.t.   (x_i − x_j)ᵀ W (x_i − x_j) <= ξ_ij  (similar),  >= ξ_ij  (dissimilar),

    with U (d × k) an orthonormal basis of the span of a basis R (d × k) chosen by
    ``basis``.  With F = I + L and the reduced points φ'_i = Uᵀx_i, D_ld(W, I) = D_ld(F, I)
    (eq. 9) and a learned distance is the distance outside span(U), unchanged, plus
    d_F(φ'_i, φ'_j) (eq. 10), so (8) is the k × k problem (11): ITML on the reduced points
    with the bounds shifted by the outside part r_ij.  It is solved by cyclic Bregman
    projections at O(k²) each (:class:`cvxkml.declare.IPLR`); W* = I + U (F* − I) Uᵀ is kept
    factored, W* = I + V diag(λ) Vᵀ (V = UQ, F* = Q diag(1 + λ) Qᵀ), and nothing d × d is
    formed.  ``transform(X)`` is X Lᵀ with W = LᵀL, L = I + V diag(√(1 + λ) − 1) Vᵀ: new
    points are mapped by the learned W itself (inductive), at O(d k) per point.

    Pairs whose shifted bound is <= 0 are decided without the solver: a dissimilar pair whose
    distance outside the basis already exceeds its bound holds whatever L is; a similar one
    cannot hold in this basis (hard constraints, ``gamma=None``: an
    :class:`~cvxkml.errors.InfeasibleError`; with slack it is dropped with a UserWarning).
    Both are listed in ``solution_.info["dropped_pairs"]``.  With ``basis="svd"`` and
    ``k=None`` the basis is the whole row space of the data, no pair is decided so, and the
    answer is ITML's (Theorem 1: W* − I lies in that row space) — which :class:`ITML`'s
    span path reaches at less cost; IPLR is for a basis much smaller than the data.

    %(pairs_side_information)s
    The baseline of ``percentiles`` is the Euclidean metric of the (standardized) training
    features.

    Parameters
    ----------
    k : int or None, default=None
        The basis size (1 <= k <= min(n_samples, n_features)).  None: for ``"svd"`` the
        numerical rank of the (standardized) training features — the whole row space, where
        IPLR is ITML —, for ``"class-means"`` the number of classes c; ``"kmeans"`` needs
        k.  Must be None for a given basis R (its columns are the basis).
    basis : {"svd", "kmeans", "class-means"} or array-like of shape (n_features, k), \
default="svd"
        The basis R (§3.6, :func:`cvxkml.declare.iplr.feature_basis`): the top-k right
        singular vectors of the training features; the centres of k k-means clusters of the
        training points (scikit-learn's KMeans, seeded by ``random_state``); the class means
        (needs labels: ``fit(X, y)``) for k = c, the centres of k clusters of the class
        means for k < c, of about k / c clusters of each class for k > c; or a given R on
        the features as given.  U is an orthonormal basis of span(R)
        (:func:`cvxkml.declare.iplr.basis_span`): dependent columns are dropped — the class
        means of centred (standardized) features sum to zero, so c of them span c − 1
        dimensions.
    gamma : float or None, default=1.0
        LogDet slack weight γ > 0 (larger = constraints enforced more strictly); the slack
        lives on the shifted bounds of (11).  ``None`` imposes hard constraints.
    %(pair_sampling)s
    %(percentiles)s
    standardize : "auto" or bool, default="auto"
        Learn on standardized features z = (x − m) / s (``feature_mean_``,
        ``feature_scale_``), i.e. with the prior diag(1/s²) on the raw features.
        ``"auto"``: for a named basis (the identity prior of (8) on raw features of
        different units is dominated by the largest ones); a given R is used on the features
        as given.
    tol : float, default=1e-3
        %(bregman_tol)s
    max_iter : int, default=50000
        %(bregman_max_iter)s
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, \
default=None
        Seed of the pair sampling (and the percentile sample for large n) and of the
        k-means of the bases.
    %(control)s

    Attributes
    ----------
    metric_ : cvxkml.learned.FactoredMetric
        W* = I + V diag(λ) Vᵀ on the learning features (standardized when
        ``feature_scale_`` is set): V (n_features × k) orthonormal spans the basis,
        ``metric_.alpha`` is 1.
    components_ : ndarray of shape (n_features, n_features)
        L with W = LᵀL on the raw features, formed on access (d × d; a UserWarning when
        large), never stored.
    %(pairs_fitted)s
    solution_ : cvxkml.solution.Solution
        The solver's result for the reduced problem (11): ``matrix`` is F* (k × k), duals,
        slack and violations of the pairs it holds (``info["kept"]``, indices into
        ``pairs_``); ``info["dropped_pairs"]`` indexes the pairs decided without it.
    n_iter_ : int
        Number of Bregman sweeps.
    %(converged)s
    %(standardize_fitted)s
    %(features_in)s

    Notes
    -----
    Cost: the basis (``"svd"``: one Gram matrix of the data, O(min(n, d)² max(n, d)),
    as :class:`ITML`'s span path; ``"kmeans"``: scikit-learn's k-means, O(n d k) per
    iteration; ``"class-means"`` with k = c: O(n d)), then O(n d k) for the reduced points
    and O(k²) per projection; memory O((n + d) k) beyond the data.  Progress is reported
    once per attempt of the Bregman solver (as in :class:`ITML`).

    References
    ----------
    %(jain2012)s: §3.6, eq. 8–11.
    """

    _parameter_constraints = {
        "k": Integer(1, none=True),
        "basis": _check_basis,
        **SLACK_CONSTRAINTS,
        **{name: rule for name, rule in BREGMAN_CONSTRAINTS.items() if name != "max_sweeps"},
        **STANDARDIZE_CONSTRAINTS,
        **CONTROL_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        k=None,
        basis="svd",
        gamma=1.0,
        scheme="jain",
        n_similar=100,
        n_dissimilar=100,
        n_constraints=None,
        percentiles=(5.0, 95.0),
        standardize="auto",
        tol=1e-3,
        max_iter=50000,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.k = k
        self.basis = basis
        self.gamma = gamma
        self.scheme = scheme
        self.n_similar = n_similar
        self.n_dissimilar = n_dissimilar
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _check_param_relations(self, p) -> None:
        super()._check_param_relations(p)
        if not isinstance(p.basis, str) and p.k is not None:
            raise InvalidInputError(f"k must be None for a given basis R (its {p.basis.shape[1]} columns); got {p.k}.")

    def _auto_standardize(self, p) -> bool:
        return isinstance(p.basis, str)

    def _basis(self, Z, y, p):
        """R (d × k) on the learning features Z: the named basis of §3.6, or the given R."""
        if not isinstance(p.basis, str):
            return p.basis
        n, d = Z.shape
        if p.k is not None and p.k > min(n, d):
            raise InvalidInputError(
                f"k = {p.k} exceeds min(n_samples, n_features) = {min(n, d)} (n_samples = {n}, n_features = {d}): "
                "a basis of the feature space spanned by the data has at most that many vectors."
            )
        return feature_basis(Z, p.k, p.basis, y=y, random_state=as_generator(p.random_state))

    def _fit(self, X, y, pairs, p):
        Z = self._feature_standardization(X, p)
        pc = self._pair_constraints(y, pairs, p, baseline_metric(Z), X.shape[0])
        R = self._basis(Z, y, p)
        if R.shape[0] != Z.shape[1]:
            raise InvalidInputError(f"basis must have one row per feature ({Z.shape[1]}); got shape {R.shape}.")
        U = R if isinstance(p.basis, str) and p.basis == "svd" else basis_span(R)  # singular vectors: orthonormal
        prob = _IPLRProblem.from_features(Z, pc, U, gamma=p.gamma)
        sol = self._solve(prob, p)
        self._keep_metric(prob.learned_metric(sol))
        self.pairs_ = pc
        self._set_solution(sol, p=p)
