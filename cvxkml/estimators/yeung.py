"""scikit-learn estimator for the scalable semi-supervised kernel metric of Yeung, Chang &
Dai (IJCAI 2007), plus the random similarity sets their experiments use.

:class:`SemiSupervisedKernelMetric` learns, from similarity pairs only, a re-weighting
β of the kernel PCA components of a base kernel on m landmarks (eq. 1–7), embeds every
other point by kernel-LLE weights over its K nearest landmarks in feature space
(eq. 8–12, with the iterative extension of §3.3), and maps new points to learned KPCA
coordinates ỹ_β = D_β^½ V_αᵀ w (eq. 13–14): Euclidean distances between these
coordinates are the learned distances of eq. 16.
"""
from __future__ import annotations

import numbers
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import (as_generator, check_positive, estimator_data, estimator_fit_data,
                          estimator_labels, estimator_pairs)
from ..declare.yeung import SpectralReweighting, similarity_pairs
from ..errors import InvalidInputError
from ..kernels import Kernel
from ..sideinfo import MAX_SAMPLED_PAIRS
from ..solvers.yeung import DEFAULT_EPSILON, fit_landmark_kernel
from ..formulas.yeung import check_epsilon

__all__ = ["SemiSupervisedKernelMetric", "random_similar_pairs"]

#: the largest ``n_iter`` accepted (each iteration is an eigendecomposition of the landmarks'
#: kernel; the paper uses 3 and the learned space settles within a few)
MAX_EXTENSION_ITER = 1000

_KERNEL_PARAMS = {
    "linear": set(), "gaussian": {"sigma", "gamma"}, "rbf": {"sigma", "gamma"},
    "polynomial": {"degree", "coef0", "scale"}, "poly": {"degree", "coef0", "scale"},
}


def random_similar_pairs(labels, n_pairs: int = 50, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` distinct similarity pairs drawn uniformly at random, without
    replacement, from all unordered pairs of points that share a label (the random S of
    Yeung et al. §5; all such pairs when there are fewer).

    Parameters
    ----------
    labels : array-like of shape (n,)
    n_pairs : int, default=50
    random_state : int, numpy Generator / RandomState or None

    Returns
    -------
    i, j : int64 arrays of shape (min(n_pairs, #within-class pairs),), with i < j, in
        the order drawn.

    Raises
    ------
    InvalidInputError
        No two points share a label, or ``n_pairs`` < 1.
    """
    labels = np.asarray(labels).ravel()
    if not isinstance(n_pairs, numbers.Integral) or isinstance(n_pairs, bool) or n_pairs < 1:
        raise InvalidInputError(f"n_pairs must be a positive integer; got {n_pairs!r}.")
    rng = as_generator(random_state)
    n = labels.size
    _, inv, counts = np.unique(labels, return_inverse=True, return_counts=True)
    total = int(np.sum(counts * (counts - 1) // 2))
    if total == 0:
        raise InvalidInputError(
            "No two points share a label, so there is no similarity pair to learn from; "
            "give labels with at least one repeated class (or pass pairs directly).")
    k = min(int(n_pairs), total)
    if total <= max(4 * k, 10_000):                     # enumerate and choose
        I, J = [], []
        for c in range(counts.size):
            members = np.flatnonzero(inv == c)
            a, b = np.triu_indices(members.size, 1)
            I.append(members[a]); J.append(members[b])
        I = np.concatenate(I); J = np.concatenate(J)
        pick = rng.choice(total, size=k, replace=False)
        return I[pick].astype(np.int64), J[pick].astype(np.int64)
    keys: dict[int, None] = {}                          # rejection sampling, insertion-ordered
    while len(keys) < k:
        a = rng.integers(0, n, 4 * k)
        b = rng.integers(0, n, 4 * k)
        ok = (a != b) & (inv[a] == inv[b])
        for lo, hi in zip(np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok])):
            keys.setdefault(int(lo) * n + int(hi))
            if len(keys) == k:
                break
    arr = np.fromiter(keys, dtype=np.int64, count=k)
    return arr // n, arr % n


def _embedding_distance(u, v, model):
    """Learned distance between two feature vectors (SemiSupervisedKernelMetric.get_metric)."""
    Z = model.embed(np.vstack([np.asarray(u, dtype=float).ravel(), np.asarray(v, dtype=float).ravel()]))
    d = Z[0] - Z[1]
    return float(np.sqrt(d @ d))


class SemiSupervisedKernelMetric(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Scalable kernel-based semi-supervised metric learning (Yeung, Chang & Dai, IJCAI 2007).

    From similarity pairs S only, learn the kernel K̃_β = W V_α D_β V_αᵀ Wᵀ:

    1. m landmarks — every point of S plus random others; L = H L̂ H on the landmarks and
       its q positive eigenpairs (μ_r, α_r) (eq. 6);
    2. β = argmin βᵀ D_S β s.t. 1ᵀβ = c, with (D_S)_rr = (1/|S|) Σ_S (α_r[i] − α_r[j])²
       and c = Σ √μ_r, in closed form β = c D_S⁻¹1 / (1ᵀ D_S⁻¹ 1) (eq. 4, 7);
    3. every other point x gets weights w over its K nearest landmarks in feature space,
       minimizing ‖φ(x) − Σ w_j φ(l_j)‖² s.t. 1ᵀw = 1 (eq. 9–12); with ``n_iter > 1`` steps
       1–3 are repeated with the learned kernel (§3.3);
    4. learned coordinates ỹ_β = D_β^½ V_αᵀ w (eq. 14 with D_β), whose squared Euclidean
       distances are the learned distances of eq. 16.

    With ``n_landmarks=None`` (or at least the number of training points) every point is
    a landmark and this is the full method of §2 (K_β = Σ β_r² v_r v_rᵀ).

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "linear", "polynomial", "poly"}, default="gaussian"
        The base kernel k̂.
    kernel_params : dict or None, default=None
        ``sigma`` or ``gamma`` for the Gaussian kernel exp(−gamma‖x − y‖²)
        (gamma = 1 / (2 sigma²)); ``degree``, ``coef0``, ``scale`` for the polynomial
        kernel.  None: defaults; for the Gaussian kernel gamma = 1 / n_features (as
        scikit-learn's ``gamma="auto"``; standardise the features first, or give sigma).
    n_landmarks : int or None, default=100
        m.  It must be at least the number of distinct points in S.  None: all points.
    n_neighbors : int, default=10
        K, the number of nearest landmarks a point is reconstructed from (K <= m).
    n_iter : int, default=3
        Iterations of the extension of §3.3 (1 = the basic algorithm; the paper uses 3);
        at most 1000.
    epsilon : float, default=1e-3
        Relative ε: D_S or a local Gram matrix G_i whose smallest eigenvalue is at most
        ε times its mean diagonal s is replaced by itself + ε s I (footnotes 3–4).
    n_similar : int, default=50
        |S| when S is drawn from labels in ``fit`` (uniformly among same-label pairs).
    rank_rtol : float, default=1e-10
        Eigenvalues of L at most ``rank_rtol`` times the largest count as zero.
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, \
default=None
        Seed of the pair sampling and of the random landmarks.

    Attributes
    ----------
    pairs_ : ndarray of shape (|S|, 2)
        The similarity pairs used (indices into the training set).
    landmark_indices_ : ndarray of shape (m,)
        The landmarks (indices into the training set, sorted).
    eigenvalues_ : ndarray of shape (q,)
        μ, the positive eigenvalues of the centred landmark kernel (last iteration).
    eigenvectors_ : ndarray of shape (m, q)
        V_α.
    beta_ : ndarray of shape (q,)
        The learned weights β (learned landmark kernel V_α diag(β²) V_αᵀ).
    embedding_weights_ : scipy.sparse.csr_matrix of shape (n_train, m)
        W; landmark rows are unit vectors, every row sums to one.
    embedding_ : ndarray of shape (n_train, q)
        Learned coordinates of the training points, W V_α D_β^½ (= ``transform(X_train)``).
    model_ : cvxkml.solvers.yeung.LandmarkKernel
        The fitted model (embeds new points).
    solution_ : cvxkml.solution.Solution
        The β problem's closed-form solution (``matrix`` is the learned landmark kernel,
        ``info["beta"]`` β, ``dual`` the multiplier ρ of eq. 3).
    n_regularized_ : list of int
        Training points whose G_i needed ε, per iteration.
    n_iter_ : int
        Iterations run.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when X has string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxkml.estimators.yeung import SemiSupervisedKernelMetric
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(c, 0.3, (50, 2)) for c in ([1, 1], [-1, -1], [1, -1], [-1, 1])])
    >>> y = np.repeat([0, 0, 1, 1], 50)
    >>> est = SemiSupervisedKernelMetric(kernel_params={"sigma": 1.0}, n_landmarks=60,
    ...                                  random_state=0).fit(X, y)
    >>> est.transform(X[:3]).shape[0]
    3
    """

    def __init__(self, *, kernel="gaussian", kernel_params=None, n_landmarks=100, n_neighbors=10,
                 n_iter=3, epsilon=DEFAULT_EPSILON, n_similar=50, rank_rtol=1e-10,
                 random_state=None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_landmarks = n_landmarks
        self.n_neighbors = n_neighbors
        self.n_iter = n_iter
        self.epsilon = epsilon
        self.n_similar = n_similar
        self.rank_rtol = rank_rtol
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        def pos_int(name, allow_none=False, maximum=None):
            v = getattr(self, name)
            if v is None and allow_none:
                return None
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
                raise InvalidInputError(f"{name} must be a positive integer; got {v!r}.")
            if maximum is not None and v > maximum:
                raise InvalidInputError(f"{name} must be at most {maximum}; got {v!r}.")
            return int(v)
        m = pos_int("n_landmarks", allow_none=True)
        K = pos_int("n_neighbors")
        if m is not None and K > m:
            raise InvalidInputError(
                f"n_neighbors = {K} exceeds n_landmarks = {m}: a point is reconstructed from its "
                "K nearest landmarks, so use n_neighbors <= n_landmarks.")
        # n_iter: each iteration is an eigendecomposition (the paper uses 3); fuzz seed 9604
        # set n_iter = 10**20, and the fit ran until its history filled the memory
        return (m, K, pos_int("n_iter", maximum=MAX_EXTENSION_ITER), check_epsilon(self.epsilon),
                pos_int("n_similar", maximum=MAX_SAMPLED_PAIRS), check_positive(self.rank_rtol, "rank_rtol"))

    def _base_kernel(self, n_features) -> Kernel:
        if not isinstance(self.kernel, str) or self.kernel not in _KERNEL_PARAMS:
            raise InvalidInputError(
                f"kernel must be one of {sorted(_KERNEL_PARAMS)}; got {self.kernel!r}. (A "
                "precomputed kernel is not supported: the landmark weights need k(x, x).)")
        params = {} if self.kernel_params is None else self.kernel_params
        if not isinstance(params, dict):
            raise InvalidInputError(f"kernel_params must be a dict or None; got {params!r}.")
        unknown = set(params) - _KERNEL_PARAMS[self.kernel]
        if unknown:
            raise InvalidInputError(
                f"Unknown kernel_params {sorted(unknown)} for kernel={self.kernel!r}; allowed: "
                f"{sorted(_KERNEL_PARAMS[self.kernel]) or 'none'}.")
        params = dict(params)
        if self.kernel in ("gaussian", "rbf") and not params:
            params["gamma"] = 1.0 / n_features
        return Kernel(self.kernel, params)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None, *, pairs=None):
        """Learn the kernel metric from labels (a random S of ``n_similar`` same-label pairs)
        or from given similarity pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points; all of them are embedded (with ``pairs``, most of them are
            typically unlabelled).
        y : array-like of shape (n_samples,) or None
            Class labels of every point; S is drawn from them.  Give ``y`` or ``pairs``,
            not both (for partially labelled data, build the pairs and pass ``pairs``).
        pairs : PairConstraints or array-like of shape (|S|, 2) or None
            Similarity pairs (indices into X).  Dissimilar pairs of a PairConstraints are
            ignored with a warning (the method uses similarities only).

        Returns
        -------
        self : SemiSupervisedKernelMetric
        """
        m, K, n_iter, eps, n_similar, rtol = self._check_params()
        X = estimator_fit_data(self, X)
        rng = as_generator(self.random_state)
        if pairs is None:
            if y is None:
                raise InvalidInputError(
                    f"{type(self).__name__} requires y to be passed, but the target y is None; "
                    "give class labels y, or similarity pairs with fit(X, pairs=...).")
            y = estimator_labels(y, X.shape[0])
            i, j = random_similar_pairs(y, n_similar, rng)
        else:
            if y is not None:
                raise InvalidInputError("Give either labels y or similarity pairs, not both.")
            i, j = similarity_pairs(pairs, X.shape[0])
        kern = self._base_kernel(X.shape[1])
        model = fit_landmark_kernel(X, kern, i, j, n_landmarks=m, n_neighbors=K, n_iter=n_iter,
                                    epsilon=eps, rank_rtol=rtol, random_state=rng)
        pos = np.full(X.shape[0], -1, dtype=np.int64)
        pos[model.landmarks] = np.arange(model.landmarks.size)
        self.solution_ = SpectralReweighting(model.alpha, model.mu, np.column_stack([pos[i], pos[j]]),
                                             eps).solve()
        self.kernel_ = kern
        self.model_ = model
        self.pairs_ = np.column_stack([i, j])
        self.landmark_indices_ = model.landmarks
        self.eigenvalues_ = model.mu
        self.eigenvectors_ = model.alpha
        self.beta_ = model.beta
        self.embedding_weights_ = model.W
        self.embedding_ = model.coordinates(model.W)
        self.n_regularized_ = list(model.n_regularized)
        self.n_iter_ = n_iter
        return self

    # ------------------------------------------------------------------ use
    def transform(self, X):
        """Learned KPCA coordinates ỹ_β = D_β^½ V_αᵀ w of X (eq. 14 with D_β): w are the
        points' embedding weights over their nearest landmarks, computed as for the
        training points of the last iteration.  Squared Euclidean distances between rows
        are the learned distances of eq. 16.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, q)
        """
        check_is_fitted(self)
        X = estimator_data(self, X)
        return self.model_.embed(X)

    def learned_kernel(self, X, Y=None):
        """The learned kernel ỹ_β(X) ỹ_β(Y)ᵀ between arbitrary points (Y = X when None)."""
        A = self.transform(X)
        B = A if Y is None else self.transform(Y)
        return A @ B.T

    def pair_distance(self, pairs):
        """Learned (non-squared) distances of pairs of points, shape (n_pairs, 2, n_features)."""
        check_is_fitted(self)
        pairs = estimator_pairs(self, pairs)
        D = self.model_.embed(pairs[:, 0]) - self.model_.embed(pairs[:, 1])
        return np.sqrt(np.einsum("ij,ij->i", D, D))

    def get_metric(self):
        """A callable ``f(u, v) -> float``, the learned distance ‖ỹ_β(u) − ỹ_β(v)‖ between
        two feature vectors (eq. 16; a snapshot of the fitted model, picklable).  Usable as
        ``KNeighborsClassifier(metric=est.get_metric())``."""
        check_is_fitted(self)
        return partial(_embedding_distance, model=self.model_)

    @property
    def _n_features_out(self):
        return self.beta_.size

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
