"""Fast path of Yeung, Chang & Dai (IJCAI 2007), "A scalable kernel-based algorithm for
semi-supervised metric learning": spectral re-weighting of a centred kernel from
similarity pairs, its landmark (low-rank) version, kernel-LLE embedding weights and the
KPCA out-of-sample map.  NumPy only (batched LAPACK calls); no CVXPY import here.

The formulas themselves (D_S, J_S, the ε rule, the closed forms of eq. 4 and 12, the
local Gram matrices) live in :mod:`cvxkml.formulas.yeung` (still importable from here, but
listed in that module's ``__all__`` only); this module adds the landmark machinery:

* :func:`nearest_landmarks`, :func:`embedding_weights` — the K nearest landmarks of many
  points in feature space and their kernel-LLE weights, batched (§3.3).
* :func:`fit_landmark_kernel` — §3: landmarks (every point of S plus random others),
  L = H L̂ H, L = V_α D_μ V_αᵀ (eq. 6), β over the q components with c = Σ √μ_r (eq. 7),
  W from kernel LLE (eq. 8–12), with the iterative extension of §3.3.
* :class:`LandmarkKernel` — the fitted model: embedding weights of any point and its
  learned KPCA coordinates ỹ_β = D_β^½ V_αᵀ w (eq. 13–14, 16).

All points of S are landmarks and the landmark rows of W are unit vectors (eq. 8), so
D_S of eq. 7 only needs the landmark rows of V_α.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._config import blas_limit
from ..errors import InvalidInputError
from ..formulas.yeung import (  # noqa: F401
    DEFAULT_EPSILON,
    beta_closed_form,
    criterion,
    equality_multiplier,
    fix_signs,
    lle_weights,
    local_gram,
    positive_spectrum,
    regularize,
    similarity_diag,
)
from ..kernels import center_kernel, centering_roundoff

__all__ = [
    "COINCIDE_RTOL",
    "nearest_landmarks",
    "embedding_weights",
    "choose_landmarks",
    "BaseSpace",
    "LearnedSpace",
    "LandmarkKernel",
    "fit_landmark_kernel",
]

#: a point whose squared feature-space distance to a landmark is at most this times the
#: mean squared norm of the landmarks coincides with it: its weights are that landmark's
#: unit vector (eq. 8), not an LLE fit (G_i would have a zero row).
COINCIDE_RTOL = 1e-12


# --------------------------------------------------------------------------- neighbours / weights
def nearest_landmarks(sq, n_neighbors: int) -> np.ndarray:
    """Indices of the ``n_neighbors`` smallest entries of each row of ``sq`` (squared
    feature-space distances to the landmarks), nearest first (ties: lower index first)."""
    sq = np.asarray(sq, dtype=float)
    n, m = sq.shape
    if n_neighbors < m:
        # everything below the K-th smallest value, then the lowest indices at that value
        # (argpartition alone keeps an arbitrary one of equally distant landmarks)
        kth = np.partition(sq, n_neighbors - 1, axis=1)[:, n_neighbors - 1 : n_neighbors]
        below = sq < kth
        at = sq == kth
        need = n_neighbors - below.sum(axis=1, keepdims=True)
        keep = below | (at & (np.cumsum(at, axis=1) <= need))
        idx = np.nonzero(keep)[1].reshape(n, n_neighbors)
    else:
        idx = np.broadcast_to(np.arange(m), sq.shape).copy()
    d = np.take_along_axis(sq, idx, axis=1)
    order = np.lexsort((idx, d), axis=1)
    return np.take_along_axis(idx, order, axis=1)


@blas_limit()
def embedding_weights(kxx, kxL, kLL, n_neighbors: int, epsilon: float, coincide=None):
    """Kernel-LLE embedding weights of points over their K nearest landmarks (§3.3).

    Neighbours are the landmarks nearest in feature space (squared distance
    k(x, x) + k(l, l) − 2 k(x, l)); the weights minimize ‖φ(x) − Σ_j w_j φ(l_j)‖² subject
    to 1ᵀw = 1 (eq. 9–12).  A point that coincides with a landmark gets that landmark's
    unit vector (eq. 8).

    Parameters
    ----------
    kxx : ndarray of shape (n,)
        Kernel values k(x, x) of the points.
    kxL : ndarray of shape (n, m)
        Kernel values between the points and the m landmarks.
    kLL : ndarray of shape (m, m)
        Kernel matrix of the landmarks.
    n_neighbors : int
        K <= m.
    epsilon : float
        Relative regularization of singular G_i.
    coincide : ndarray of int, shape (n,), or None
        Landmark index each point coincides with (−1: none); computed here when None.

    Returns
    -------
    idx : ndarray of shape (n, K)
        Neighbour (landmark) indices, nearest first.
    w : ndarray of shape (n, K)
        Weights, rows summing to one.
    singular : ndarray of bool, shape (n,)
        Rows whose G_i was regularized.
    coincide : ndarray of int, shape (n,)
    """
    kxx = np.asarray(kxx, dtype=float)
    kxL = np.asarray(kxL, dtype=float)
    kLL = np.asarray(kLL, dtype=float)
    m = kLL.shape[0]
    K = int(n_neighbors)
    if K > m:
        raise InvalidInputError(
            f"n_neighbors = {K} exceeds the number of landmarks ({m}); use at most {m} neighbours or more landmarks."
        )
    dL = np.diag(kLL)
    sq = np.maximum(kxx[:, None] + dL[None, :] - 2.0 * kxL, 0.0)
    idx = nearest_landmarks(sq, K)
    if coincide is None:
        scale = max(float(np.mean(np.abs(dL))), np.finfo(float).tiny)
        first = idx[:, 0]
        coincide = np.where(sq[np.arange(len(first)), first] <= COINCIDE_RTOL * scale, first, -1)
    n = kxx.shape[0]
    w = np.zeros((n, K))
    singular = np.zeros(n, dtype=bool)
    fit = coincide < 0
    if np.any(fit):
        I = idx[fit]
        G = local_gram(kxx[fit], np.take_along_axis(kxL[fit], I, axis=1), kLL[I[:, :, None], I[:, None, :]])
        w[fit], singular[fit] = lle_weights(G, epsilon)
    if np.any(~fit):
        # put the coincident landmark first with weight one
        rows = np.flatnonzero(~fit)
        sub = idx[rows]
        hit = sub == coincide[rows, None]
        keep_order = np.argsort(~hit, axis=1, kind="stable")
        sub = np.take_along_axis(sub, keep_order, axis=1)
        sub[:, 0] = coincide[rows]
        idx[rows] = sub
        w[rows, 0] = 1.0
    return idx, w, singular, coincide


def choose_landmarks(n: int, s_points, n_landmarks, rng) -> np.ndarray:
    """Landmark indices (sorted): every point of S plus random others, m in total
    (§3.1).  ``n_landmarks=None`` or >= n: all points (the full method of §2)."""
    s_points = np.unique(np.asarray(s_points, dtype=np.int64))
    if n_landmarks is None or n_landmarks >= n:
        return np.arange(n)
    m = int(n_landmarks)
    if m < s_points.size:
        raise InvalidInputError(
            f"n_landmarks = {m} is smaller than the number of distinct points in the similarity "
            f"pairs ({s_points.size}); every point of S must be a landmark (Yeung et al. §3.1). "
            f"Use n_landmarks >= {s_points.size} or fewer pairs."
        )
    rest = np.setdiff1d(np.arange(n), s_points)
    extra = rng.choice(rest, size=m - s_points.size, replace=False)
    return np.sort(np.concatenate([s_points, extra]))


# --------------------------------------------------------------------------- feature spaces
class BaseSpace:
    """The base kernel's feature space seen from the landmarks: k̂(x, x), k̂(x, landmarks)."""

    learned = False

    def __init__(self, kernel, XL):
        self.kernel = kernel
        self.XL = XL
        K = kernel(XL, XL)
        self.kLL = 0.5 * (K + K.T)

    def cross(self, X, coincide=None):
        """(k(x, x) for each row of X, k(X, landmarks)); ``coincide`` is not needed here."""
        return self.kernel.diag(X), self.kernel(X, self.XL)


class LearnedSpace:
    """The learned kernel of one iteration as the feature space of the next one
    (the iterative extension of §3.3).

    The learned kernel on all points is K̃_β = W V_α D_β V_αᵀ Wᵀ (eq. 5 with D_β): landmark
    l has the learned coordinates z(l) = D_β^½ V_αᵀ b_l = β ⊙ α[l], and any other point x
    the coordinates of its reconstruction φ̃(x) = Σ_j w_j φ(l_j), z(x) = Σ_j w_j z(l_j),
    with its weights w computed in the ``parent`` space (the one the β step was computed
    in).  Repeating the procedure with this kernel (its landmark block L_β, its
    neighbourhoods and local Gram matrices) is the paper's "repeat the above procedure
    iteratively using the learned kernel"; it applies to new points in the same way.
    """

    learned = True

    def __init__(self, parent, alpha, beta, n_neighbors: int, epsilon: float):
        self.parent = parent
        self.alpha = alpha
        self.beta = beta
        self.ZL = alpha * beta[None, :]
        self.kLL = self.ZL @ self.ZL.T
        self.n_neighbors = int(n_neighbors)
        self.epsilon = float(epsilon)

    def spectrum(self, rank_rtol: float = 1e-10):
        """Positive eigenpairs of the centred landmark block L_β = V_α D_β V_αᵀ, exactly:
        the columns of V_α are orthonormal and orthogonal to 1 (eigenvectors of a centred
        matrix with nonzero eigenvalues), so H L_β H = L_β and its eigenpairs are
        (β_r², α_r), sorted by decreasing β_r² (no eigendecomposition needed)."""
        s = self.beta**2
        order = np.argsort(-s, kind="stable")
        keep = s[order] > rank_rtol * float(np.max(s))
        return s[order][keep], fix_signs(np.ascontiguousarray(self.alpha[:, order][:, keep]))

    @blas_limit()
    def coords(self, X, coincide):
        """Learned coordinates z(x) = Σ_j w_j z(l_j) of the rows of X."""
        kxx, kxL = self.parent.cross(X, coincide)
        idx, w, _, _ = embedding_weights(kxx, kxL, self.parent.kLL, self.n_neighbors, self.epsilon, coincide)
        return np.einsum("nk,nkq->nq", w, self.ZL[idx])

    def cross(self, X, coincide):
        Z = self.coords(X, coincide)
        return np.einsum("ij,ij->i", Z, Z), Z @ self.ZL.T


# --------------------------------------------------------------------------- fitted model
@dataclass
class LandmarkKernel:
    """A fitted scalable kernel metric (Yeung et al. §3–4).

    Attributes
    ----------
    kernel : the base kernel k̂ (a :class:`cvxkml.kernels.Kernel`).
    XL : (m, d) the landmark points.  landmarks : (m,) their indices in the training set.
    mu, alpha : eigenvalues μ (q,) and eigenvectors V_α (m, q) of the centred landmark
        kernel of the last iteration (eq. 6).  With more than one iteration that kernel
        is the learned L_β of the previous one, so μ = β² (β is a fixed point of the β
        step) and ``coordinates(W, learned=False)`` equals the learned coordinates.
    beta : (q,) learned weights; the learned landmark kernel is V_α diag(β²) V_αᵀ.
    c : Σ √μ_r.  d_S : (q,) diagonal of D_S (eq. 7); d_eff : the one actually used
        (D_S + εs I when singular).  regularized_D : whether it was.
    space : the feature space in which the embedding weights are computed (base kernel
        for one iteration, the learned space of the previous β step after that).
    n_neighbors, epsilon : K and ε.
    W : (n_train, m) sparse embedding weights of the training points (eq. 5, 8, 12).
    n_regularized : number of training points whose G_i was regularized, per iteration.
    history : per-iteration β, μ (diagnostics of the iterative extension).
    """

    kernel: object
    XL: np.ndarray
    landmarks: np.ndarray
    mu: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    c: float
    d_S: np.ndarray
    d_eff: np.ndarray
    regularized_D: bool
    space: object
    n_neighbors: int
    epsilon: float
    W: sp.csr_matrix = None
    n_regularized: list = field(default_factory=list)
    history: list = field(default_factory=list)
    time: float = 0.0

    @property
    def n_components(self) -> int:
        return int(self.beta.size)

    @blas_limit()
    def weights(self, X) -> sp.csr_matrix:
        """Embedding weights (rows of W, eq. 12) of arbitrary points, (n, m) sparse."""
        X = np.asarray(X, dtype=float)
        kxx0, kxL0 = self.kernel.diag(X), self.kernel(X, self.XL)
        coincide = _coincidence(kxx0, kxL0, self.kernel.diag(self.XL))
        kxx, kxL = (kxx0, kxL0) if not self.space.learned else self.space.cross(X, coincide)
        idx, w, _, _ = embedding_weights(kxx, kxL, self.space.kLL, self.n_neighbors, self.epsilon, coincide)
        return _to_csr(idx, w, self.XL.shape[0])

    @blas_limit()
    def coordinates(self, W, learned: bool = True) -> np.ndarray:
        """KPCA coordinates from embedding weights: W V_α D_β^½ (learned, eq. 14 with
        D_β, so squared distances are eq. 16) or W V_α D_μ^½ (``learned=False``, eq. 14)."""
        scale = self.beta if learned else np.sqrt(self.mu)
        return np.asarray(W @ (self.alpha * scale[None, :]))

    @blas_limit()
    def embed(self, X, learned: bool = True) -> np.ndarray:
        """Learned KPCA coordinates ỹ_β = D_β^½ V_αᵀ w of arbitrary points (eq. 14, 16)."""
        return self.coordinates(self.weights(X), learned)

    @blas_limit()
    def landmark_kernel(self, learned: bool = True) -> np.ndarray:
        """V_α D_β V_αᵀ (learned) or V_α D_μ V_αᵀ = L (m × m)."""
        s = self.beta**2 if learned else self.mu
        return (self.alpha * s[None, :]) @ self.alpha.T


def _coincidence(kxx, kxL, dL):
    sq = np.maximum(kxx[:, None] + dL[None, :] - 2.0 * kxL, 0.0)
    first = np.argmin(sq, axis=1)
    scale = max(float(np.mean(np.abs(dL))), np.finfo(float).tiny)
    return np.where(sq[np.arange(len(first)), first] <= COINCIDE_RTOL * scale, first, -1)


def _to_csr(idx, w, m) -> sp.csr_matrix:
    n, K = idx.shape
    W = sp.csr_matrix((w.ravel(), idx.ravel(), np.arange(0, n * K + 1, K)), shape=(n, m))
    W.sum_duplicates()
    W.eliminate_zeros()
    return W


def _beta_step(space, iL, jL, epsilon, rank_rtol):
    """One β step on the landmarks of a feature space: the positive eigenpairs of
    L = H L̂ H (eq. 6), D_S (eq. 7), c = Σ √μ_r and the closed form (eq. 4)."""
    if space.learned:
        mu, alpha = space.spectrum(rank_rtol)
    else:
        mu, alpha = positive_spectrum(
            center_kernel(space.kLL),
            rank_rtol,
            name="the centred landmark kernel L",
            atol=centering_roundoff(space.kLL),
        )
    d_S = similarity_diag(alpha, iL, jL)
    d_eff, reg = regularize(d_S, epsilon)
    c = float(np.sum(np.sqrt(mu)))
    return mu, alpha, beta_closed_form(d_eff, c), c, d_S, d_eff, reg


@blas_limit()
def fit_landmark_kernel(
    X,
    kernel,
    i,
    j,
    *,
    n_landmarks=None,
    n_neighbors: int = 10,
    n_iter: int = 1,
    epsilon: float = DEFAULT_EPSILON,
    rank_rtol: float = 1e-10,
    random_state=None,
) -> LandmarkKernel:
    """Scalable kernel metric learning with landmarks (Yeung et al. §3), with the
    iterative extension.

    Iteration t = 1 … ``n_iter``, in the current feature space (the base kernel k̂ at
    t = 1): (a) β step on the landmarks — L = H L̂ H, its q positive eigenpairs (μ, V_α),
    D_S from the landmark rows (eq. 7), c = Σ √μ_r, β by eq. 4; (b) embedding weights of
    every non-landmark point over its K nearest landmarks in the current space (eq. 9–12).
    The learned space of step (a) (:class:`LearnedSpace`) is the current space of
    iteration t + 1.  With one iteration this is the basic algorithm.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The points.
    kernel : cvxkml.kernels.Kernel
        Base kernel k̂ (not precomputed).
    i, j : int arrays
        Similarity pairs S (indices into X).
    n_landmarks : int or None
        m; None or >= n uses every point (the full method of §2).
    n_neighbors : int
        K, the number of nearest landmarks per point.
    n_iter : int
        Iterations of the extension (the paper uses 3).
    epsilon : float
        Relative ε of :func:`regularize` for D_S and the G_i.
    rank_rtol : float
        Eigenvalues of L at most ``rank_rtol`` times the largest count as zero.
    random_state : int, Generator or None
        Seed of the random landmarks.

    Returns
    -------
    LandmarkKernel
    """
    t0 = time.perf_counter()
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    rng = np.random.default_rng(random_state)
    landmarks = choose_landmarks(n, np.concatenate([i, j]), n_landmarks, rng)
    m = landmarks.size
    if n_neighbors > m:
        raise InvalidInputError(
            f"n_neighbors = {n_neighbors} exceeds the number of landmarks ({m}); use at most "
            f"{m} neighbours or more landmarks."
        )
    pos = np.full(n, -1, dtype=np.int64)
    pos[landmarks] = np.arange(m)
    iL, jL = pos[i], pos[j]
    others = np.flatnonzero(pos < 0)
    XL = X[landmarks]

    space = BaseSpace(kernel, XL)
    diagL = kernel.diag(XL)
    Xo = X[others]
    kxx0 = kernel.diag(Xo) if others.size else np.zeros(0)
    kxL0 = kernel(Xo, XL) if others.size else np.zeros((0, m))
    coincide = _coincidence(kxx0, kxL0, diagL)
    history, n_reg = [], []
    idx = np.zeros((0, n_neighbors), dtype=np.int64)
    w = np.zeros((0, n_neighbors))
    for t in range(int(n_iter)):
        mu, alpha, beta, c, d_S, d_eff, reg = _beta_step(space, iL, jL, epsilon, rank_rtol)
        history.append({"mu": mu, "beta": beta, "c": c})
        if others.size:
            kxx, kxL = (kxx0, kxL0) if not space.learned else space.cross(Xo, coincide)
            idx, w, sing, _ = embedding_weights(kxx, kxL, space.kLL, n_neighbors, epsilon, coincide)
            n_reg.append(int(np.sum(sing)))
        else:
            n_reg.append(0)
        weight_space = space
        if t < n_iter - 1:
            space = LearnedSpace(space, alpha, beta, n_neighbors, epsilon)
    # W: landmark rows are unit vectors (eq. 8), the others from the last iteration
    cols = np.concatenate([np.arange(m), idx.ravel()])
    vals = np.concatenate([np.ones(m), w.ravel()])
    row_ids = np.concatenate([landmarks, np.repeat(others, idx.shape[1])])
    W = sp.csr_matrix((vals, (row_ids, cols)), shape=(n, m))
    W.sum_duplicates()
    W.eliminate_zeros()
    model = LandmarkKernel(
        kernel=kernel,
        XL=XL,
        landmarks=landmarks,
        mu=mu,
        alpha=alpha,
        beta=beta,
        c=c,
        d_S=d_S,
        d_eff=d_eff,
        regularized_D=reg,
        space=weight_space,
        n_neighbors=int(n_neighbors),
        epsilon=float(epsilon),
        W=W,
        n_regularized=n_reg,
        history=history,
    )
    model.time = time.perf_counter() - t0
    return model
