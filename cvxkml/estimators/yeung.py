"""scikit-learn estimator for the scalable semi-supervised kernel metric of Yeung, Chang &
Dai (IJCAI 2007), :class:`SemiSupervisedKernelMetric`, plus the random similarity sets
their experiments use (:func:`random_similar_pairs`).
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import as_generator
from ..declare.yeung import SpectralReweighting, similarity_pairs
from ..errors import InvalidInputError
from ..formulas.yeung import DEFAULT_EPSILON, check_epsilon
from ..sideinfo import MAX_SAMPLED_PAIRS
from ..solvers.yeung import fit_landmark_kernel
from ._base import CvxkmlEstimator, LearnedKernelMixin
from ._pairs import PairLearnerMixin, given_pairs
from ._params import (
    CONTROL_CONSTRAINTS,
    KERNEL_CONSTRAINTS,
    KERNEL_PARAMS,
    PAIR_CONSTRAINTS,
    POSITIVE,
    STANDARDIZE_CONSTRAINTS,
    Integer,
    Options,
)

__all__ = ["SemiSupervisedKernelMetric", "random_similar_pairs"]

#: the largest ``n_iter`` accepted (each iteration is an eigendecomposition of the landmarks'
#: kernel; the paper uses 3 and the learned space settles within a few; without a cap an
#: n_iter of 10**20 runs until the fit's history fills the memory)
MAX_EXTENSION_ITER = 1000


def random_similar_pairs(labels, n_pairs: int = 50, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` distinct similarity pairs drawn uniformly at random, without
    replacement, from all unordered pairs of points that share a label (the random S of
    Yeung et al. §5; all such pairs when there are fewer).

    Parameters
    ----------
    labels : array-like of shape (n,)
        Class label of each point.
    n_pairs : int, default=50
        Number of pairs to draw.
    random_state : int, numpy Generator / RandomState or None
        Seed of the draw.

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
            "give labels with at least one repeated class (or pass pairs directly)."
        )
    k = min(int(n_pairs), total)
    if total <= max(4 * k, 10_000):  # enumerate and choose
        I, J = [], []
        for c in range(counts.size):
            members = np.flatnonzero(inv == c)
            a, b = np.triu_indices(members.size, 1)
            I.append(members[a])
            J.append(members[b])
        I = np.concatenate(I)
        J = np.concatenate(J)
        pick = rng.choice(total, size=k, replace=False)
        return I[pick].astype(np.int64), J[pick].astype(np.int64)
    keys: dict[int, None] = {}  # rejection sampling, insertion-ordered
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


class SemiSupervisedKernelMetric(LearnedKernelMixin, PairLearnerMixin, CvxkmlEstimator):
    """Scalable kernel-based semi-supervised metric learning (Yeung, Chang & Dai, IJCAI 2007).

    From similarity pairs S only, learn the kernel K̃_β = W V_α D_β V_αᵀ Wᵀ:

    1. m landmarks — every point of S plus random others; L = H L̂ H on the landmarks and
       its q leading eigenpairs (μ_r, α_r), μ_r > ``rank_rtol``·μ_1 (eq. 6);
    2. β = argmin βᵀ D_S β s.t. 1ᵀβ = c, with (D_S)_rr = (1/|S|) Σ_S (α_r[i] − α_r[j])²
       and c = Σ √μ_r, in closed form β = c D_S⁻¹1 / (1ᵀ D_S⁻¹ 1) (eq. 4, 7);
    3. every other point x gets weights w over its K nearest landmarks in feature space,
       minimizing ‖φ(x) − Σ w_j φ(l_j)‖² s.t. 1ᵀw = 1 (eq. 9–12); with ``n_iter > 1`` steps
       1–3 are repeated with the learned kernel (§3.3);
    4. learned coordinates ỹ_β = D_β^½ V_αᵀ w (eq. 14 with D_β), whose squared Euclidean
       distances are the learned distances of eq. 16.

    With ``n_landmarks=None`` (or at least the number of training points) every point is
    a landmark and this is the full method of §2 (K_β = Σ β_r² v_r v_rᵀ).

    Side information: similarity pairs S — drawn from class labels (``fit(X, y)``:
    ``n_similar`` pairs uniformly among the same-label pairs) or given
    (``fit(X, pairs=...)``: an (|S|, 2) index array, or rows (i, j, ±1) / a
    :class:`~cvxkml.sideinfo.PairConstraints` of which only the similar pairs are used,
    with a warning: the method has no dissimilarity term).  ``pairs_`` holds S.  The
    random landmarks are drawn from ``random_state`` after the pairs, so a refit on
    ``pairs_`` reproduces a fit on labels exactly when no landmark is random
    (``n_landmarks=None`` or at least the number of points).

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "linear", "polynomial", "poly"}, default="gaussian"
        The base kernel k̂.
    kernel_params : dict or None, default=None
        Parameters of the base kernel, as for :class:`~cvxkml.estimators.KernelITML`
        (None: defaults; for the Gaussian kernel the median heuristic).
    %(standardize)s
    n_landmarks : int or None, default=2000
        m.  It must be at least the number of distinct points in S (at most 2 |S|, so the
        default 2000 always holds the default 1000 pairs).  None, or at least the number of
        training points: all points (the full method of §2).
    n_neighbors : int, default=10
        K, the number of nearest landmarks a point is reconstructed from (K <= m).
    n_iter : int, default=3
        Iterations of the extension of §3.3 (1 = the basic algorithm; the paper uses 3);
        at most 1000.
    epsilon : float, default=1e-3
        Relative ε: D_S or a local Gram matrix G_i whose smallest eigenvalue is at most
        ε times its mean diagonal s is replaced by itself + ε s I (footnotes 3–4).
    n_similar : int, default=1000
        |S| when S is drawn from labels in ``fit`` (uniformly among same-label pairs).
    rank_rtol : float, default=3e-2
        The dimension q of the spectral embedding (eq. 6): eigenvalues of L at most
        ``rank_rtol`` times the largest count as zero, so q is the number of KPCA
        components with μ_r > ``rank_rtol``·μ_1 (in later iterations of the extension:
        β_r² > ``rank_rtol``·max β²).  The paper keeps every positive eigenvalue
        (``rank_rtol=1e-10`` reproduces that); β ∝ D_S⁻¹1 then gives the trailing,
        noise-dominated components weights of the order of the leading ones, which can
        lower the paper's own separation measure J (eq. 17) on held-out points below the
        base kernel's; 3e-2 keeps the leading components.
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, \
default=None
        Seed of the pair sampling and of the random landmarks.
    verbose : int, default=0
        With verbose > 0, the closed-form β step's certificate check and a summary are
        logged on the ``cvxkml`` logger (INFO).
    callback : callable or None, default=None
        Called once, with the certificate of the closed-form β step (there is no
        iteration to stop; a truthy return marks the fit ``converged_ = False``).

    Attributes
    ----------
    kernel_ : cvxkml.kernels.Kernel
        The base kernel with its resolved parameters (wrapped in the standardization).
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
    %(converged)s
    %(standardize_fitted)s
    %(features_in)s

    References
    ----------
    Yeung, Chang & Dai, "A scalable kernel-based semi-supervised metric learning algorithm
    with out-of-sample generalization ability", IJCAI 2007: eq. 1–7 (β), eq. 8–12 (the
    embedding weights), §3.3 (iterations), eq. 13–16 (coordinates and distances).

    Examples
    --------
    >>> import numpy as np
    >>> from cvxkml.estimators.yeung import SemiSupervisedKernelMetric
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(c, 0.3, (50, 2)) for c in ([1, 1], [-1, -1], [1, -1], [-1, 1])])
    >>> y = np.repeat([0, 0, 1, 1], 50)
    >>> est = SemiSupervisedKernelMetric(kernel_params={"sigma": 1.0}, n_landmarks=100,
    ...                                  n_similar=40, random_state=0).fit(X, y)
    >>> est.transform(X[:3]).shape[0]
    3
    """

    _parameter_constraints = {
        "kernel": Options(
            *sorted(set(KERNEL_PARAMS) - {"precomputed"}),
            hint=" (A precomputed kernel is not supported: the landmark weights need k(x, x).)",
        ),
        "kernel_params": KERNEL_CONSTRAINTS["kernel_params"],
        "n_landmarks": Integer(1, none=True),
        "n_neighbors": Integer(1),
        "n_iter": Integer(1, MAX_EXTENSION_ITER),
        "epsilon": lambda value, name: check_epsilon(value),
        "n_similar": Integer(1, MAX_SAMPLED_PAIRS),
        "rank_rtol": POSITIVE,
        "random_state": PAIR_CONSTRAINTS["random_state"],
        **STANDARDIZE_CONSTRAINTS,
        **CONTROL_CONSTRAINTS,
    }
    _min_classes = 1  # S needs a repeated label, not two classes

    def __init__(
        self,
        *,
        kernel="gaussian",
        kernel_params=None,
        standardize="auto",
        n_landmarks=2000,
        n_neighbors=10,
        n_iter=3,
        epsilon=DEFAULT_EPSILON,
        n_similar=1000,
        rank_rtol=3e-2,
        random_state=None,
        verbose=0,
        callback=None,
    ):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.standardize = standardize
        self.n_landmarks = n_landmarks
        self.n_neighbors = n_neighbors
        self.n_iter = n_iter
        self.epsilon = epsilon
        self.n_similar = n_similar
        self.rank_rtol = rank_rtol
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _check_param_relations(self, p):
        super()._check_param_relations(p)
        if p.n_landmarks is not None and p.n_neighbors > p.n_landmarks:
            raise InvalidInputError(
                f"n_neighbors = {p.n_neighbors} exceeds n_landmarks = {p.n_landmarks}: a point is "
                "reconstructed from its K nearest landmarks, so use n_neighbors <= n_landmarks."
            )

    def _fit(self, X, y, pairs, p):
        rng = as_generator(p.random_state)
        n = X.shape[0]
        if pairs is None:
            i, j = random_similar_pairs(y, p.n_similar, rng)
        else:
            i, j = similarity_pairs(given_pairs(pairs, n, np.ones_like), n)
        kern = self._base_kernel(X, p)
        model = fit_landmark_kernel(
            X,
            kern,
            i,
            j,
            n_landmarks=p.n_landmarks,
            n_neighbors=p.n_neighbors,
            n_iter=p.n_iter,
            epsilon=p.epsilon,
            rank_rtol=p.rank_rtol,
            random_state=rng,
        )
        pos = np.full(n, -1, dtype=np.int64)
        pos[model.landmarks] = np.arange(model.landmarks.size)
        sol = SpectralReweighting(model.alpha, model.mu, np.column_stack([pos[i], pos[j]]), p.epsilon).solve(
            callback=p.monitor.for_solver()
        )
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
        self._set_solution(sol, p.n_iter, p=p)

    def _embedding(self):
        """ỹ_β = D_β^½ V_αᵀ w of a point, w its weights over its nearest landmarks."""
        return self.model_.embed
