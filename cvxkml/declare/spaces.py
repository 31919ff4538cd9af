"""The spaces a spectral problem learns in (Jain et al. 2012, §4, Theorems 1 and 4; Kulis et
al. 2009, eq. 14).

A spectral problem is *space* × *regularizer* × *constraint atoms*
(:class:`~cvxkml.declare.base.SpectralProblem`).  The space says what the learned matrix M is
and how the side information reads it: every space provides

* ``M0`` (the prior, N × N), ``T`` (N × r with M0 = T Tᵀ) and ``F`` (points × r): the
  whitened core learns X̂ (r × r) with M = T X̂ Tᵀ, and a pair distance is
  d(i, j) = v̂ᵀ X̂ v̂ with v̂ = F[i] − F[j];
* :meth:`Space.pair_values` / :meth:`Space.pair_inner`: squared learned distances and learned
  inner products of index pairs under a matrix M of the space;
* :meth:`Space.offset`: the constant the space adds to the objective (non-zero only in
  :class:`SpanSpace` for a regularizer with f_s(α) ≠ 0).

=================  =============================================  ======================
space              learned matrix M                               cost per constraint
=================  =============================================  ======================
``MetricSpace``    W (d × d), prior W0                            O(d²)
``KernelSpace``    K (n × n) on the range of a PSD K0             O(n²) (or O(r²))
``FactoredSpace``  X̂ (r × r), K = G0 X̂ G0ᵀ for K0 = G0 G0ᵀ       O(r²)
``SpanSpace``      X̂ (k × k), W = αW0 + TQ(X̂ − αI)(TQ)ᵀ          O(k²), k = rank X <= n
=================  =============================================  ======================

:class:`SpanSpace` is the metric problem of wide data (d ≫ n) by the papers' own theorem: the
optimal W* = αI + Φ S Φᵀ (Theorem 4, eq. 18) differs from αI only on the row space of the
data, so the d × d problem is the k × k problem on the coordinates of the data in an
orthonormal basis Q of that row space; W is never formed unless asked for
(:meth:`SpanSpace.metric`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .._validation import check_data, check_kernel_matrix, range_space
from ..errors import InvalidInputError

__all__ = ["Space", "MetricSpace", "KernelSpace", "EigenbasisKernelSpace", "FactoredSpace", "SpanSpace"]


class Space:
    """Base class of the spaces.  Subclasses set ``name``, ``M0``, ``T``, ``F``, ``n_points``
    (the points constraints index) and ``dim`` (the side of the learned matrix M, what a
    :class:`~cvxkml.sideinfo.LinearConstraints` matrix must match)."""

    name = "space"
    M0: np.ndarray
    T: np.ndarray
    F: np.ndarray
    n_points: int
    dim: int

    def pair_values(self, M, i, j) -> np.ndarray:
        """Squared learned distances v̂ᵀ M v̂ with v̂ = F[i] − F[j] (M acts on F's columns)."""
        V = self.F[np.asarray(i)] - self.F[np.asarray(j)]
        return np.einsum("ij,ij->i", V @ np.asarray(M, dtype=float), V)

    def pair_inner(self, M, j, l) -> np.ndarray:
        """Learned inner products F[j]ᵀ M F[l]."""
        return np.einsum("ij,ij->i", self.F[np.asarray(j)] @ np.asarray(M, dtype=float), self.F[np.asarray(l)])

    def offset(self, regularizer) -> float:
        """The constant this space adds to the objective (and the dual): 0."""
        return 0.0

    def T_pinv(self) -> np.ndarray:
        """T⁺, the map of a learned M to the whitened X̂ = T⁺ M T⁺ᵀ (the identity when T is;
        a subclass that knows T's structure gives it without an SVD)."""
        r = self.T.shape[1]
        if self.T.shape[0] == r and np.allclose(self.T, np.eye(r)):
            return np.eye(r)
        return np.linalg.pinv(self.T)

    def __repr__(self):
        return f"{type(self).__name__}(points={self.n_points}, dim={self.dim}, rank={self.T.shape[1]})"


class MetricSpace(Space):
    """A Mahalanobis matrix W (d × d) on the features of X (n × d), prior W0 (PD, default I):
    T = chol(W0), F = X T; the distances read W directly."""

    name = "metric"

    def __init__(self, X, W0=None):
        self.X = check_data(X, "X")
        n, d = self.X.shape
        if W0 is None:
            self.M0 = np.eye(d)
            self.T = np.eye(d)
            self.F = self.X
        else:
            self.M0 = check_kernel_matrix(W0, "W0", require_pd=True)
            if self.M0.shape != (d, d):
                raise InvalidInputError(f"W0 must be {d} × {d} to match X; got {self.M0.shape}.")
            self.T = np.linalg.cholesky(self.M0)
            self.F = self.X @ self.T
        self.n_points, self.dim = n, d

    def T_pinv(self) -> np.ndarray:
        """T⁻¹ of the Cholesky factor T of W0, I without one (a triangular solve, exact for I)."""
        return sla.solve_triangular(self.T, np.eye(self.T.shape[0]), lower=True)

    def pair_values(self, M, i, j):
        V = self.X[np.asarray(i)] - self.X[np.asarray(j)]
        return np.einsum("ij,ij->i", V @ np.asarray(M, dtype=float), V)

    def pair_inner(self, M, j, l):
        return np.einsum("ij,ij->i", self.X[np.asarray(j)] @ np.asarray(M, dtype=float), self.X[np.asarray(l)])


class KernelSpace(Space):
    """A kernel matrix K (n × n) on the range space of a PSD K0 (a rank-deficient K0 is
    handled on its range, Kulis et al. 2009: K = T X̂ Tᵀ and no solver inverts K0).

    Parameters
    ----------
    K0 : (n, n) PSD matrix.
    rank_rtol : float
        Eigenvalues below ``rank_rtol`` times the largest are the null space.

    T = V √w (X̂ = K0^-½ K K0^-½ on the range), so M0 = T Tᵀ: the prior is the whitening,
    as in every space whose name a solver can declare.
    """

    name = "kernel"
    _orthonormal = False

    def __init__(self, K0, rank_rtol: float = 1e-10):
        self.M0, w, V, keep = range_space(K0, "K0", rank_rtol)
        self.rank = int(np.sum(keep))
        self.range = (w, V, keep)
        self.T = V[:, keep] if self._orthonormal else V[:, keep] * np.sqrt(w[keep])
        self.F = self.T
        self.n_points = self.dim = self.M0.shape[0]

    def T_pinv(self) -> np.ndarray:
        """T⁺ = diag(w)^-½ Vᵀ on the range (Vᵀ when T = V is orthonormal): T's columns are
        orthogonal, so no SVD is needed."""
        w, V, keep = self.range
        Vk = V[:, keep]
        return np.ascontiguousarray(Vk.T if self._orthonormal else Vk.T / np.sqrt(w[keep])[:, None])

    def pair_values(self, M, i, j):
        M = np.asarray(M, dtype=float)
        i = np.asarray(i)
        j = np.asarray(j)
        return M[i, i] + M[j, j] - 2.0 * M[i, j]

    def pair_inner(self, M, j, l):
        return np.asarray(M, dtype=float)[np.asarray(j), np.asarray(l)]


class EigenbasisKernelSpace(KernelSpace):
    """K on the range of K0 in its orthonormal eigenbasis V (X̂ = Vᵀ K V, so T Tᵀ is the
    range projector, not K0): the space of Kulis et al.'s von Neumann kernel problem, whose
    divergence D_vN(K, K0) is not a function of the whitened K.  Its own name keeps the
    solvers written for the whitened "kernel" space away from it."""

    name = "kernel-eigenbasis"
    _orthonormal = True


class FactoredSpace(Space):
    """The factored kernel space: K0 = G0 G0ᵀ given by G0 (n × r, full column rank) and the
    learned matrix is X̂ (r × r), K = G0 X̂ G0ᵀ (Kulis et al. 2009, eq. 14); no n × n matrix.

    Parameters
    ----------
    G0 : (n, r) array of full column rank, or a :class:`~cvxkml.factor.Factorization`.
    """

    name = "factored"

    def __init__(self, G0):
        from ..factor import Factorization

        self.factorization = G0 if isinstance(G0, Factorization) else None
        G0 = check_data(G0.G0 if self.factorization is not None else G0, "G0")
        n, r = G0.shape
        if r > n:
            raise InvalidInputError(f"The factor G0 must have at most n = {n} columns; got {r}.")
        sv = np.linalg.svd(G0, compute_uv=False)
        if sv[-1] <= 1e-10 * sv[0]:
            raise InvalidInputError(
                f"G0 must have full column rank (smallest singular value {sv[-1]:.3g}, largest "
                f"{sv[0]:.3g}): drop dependent columns, or build it with LowRankLogDet.from_kernel."
            )
        self.G0 = self.F = G0
        self.T = np.eye(r)
        self.M0 = np.eye(r)
        self.n_points, self.dim = n, r

    @property
    def rank(self) -> int:
        return int(self.G0.shape[1])


class SpanSpace(Space):
    """A Mahalanobis matrix on wide data, learned in the span of the data (Jain et al. 2012,
    Theorems 1 and 4).

    With F = X T (T = chol(W0), T = I for the default prior) and Q (d × k) an orthonormal
    basis of the row space of F (k = rank X <= n), every learned distance and inner product
    of the data reads only QᵀŴQ, Ŵ = T⁻¹WT⁻ᵀ.  A spectral regularizer is minimized off that
    span by the eigenvalue α = argmin f_s (1 for LogDet and von Neumann, 0 for Frobenius and
    the trace norm), so the optimum is

        W* = T (α I + Q (X̂* − α I) Qᵀ) Tᵀ = α W0 + U (X̂* − α I) Uᵀ,   U = T Q,

    with X̂* the optimum of the same spectral problem on the k × k whitened matrix over the
    coordinates G = F Q (n × k).  The objective differs from the d × d one by the constant
    (d − k)·f_s(α) (:meth:`offset`; 0 for every built-in regularizer), so the answer, its
    Lagrange dual and its certificate are the feature-space ones.  Cost: one n × n Gram
    eigendecomposition, O(n²d + n³); O(k²) per constraint after it, independent of d.

    Parameters
    ----------
    X : (n, d) data.
    W0 : (d, d) PD prior or None (identity; the only prior that keeps W factored).
    rank_rtol : float
        Gram eigenvalues below ``rank_rtol`` times the largest are the null space.
    """

    name = "span"

    def __init__(self, X, W0=None, rank_rtol: float = 1e-10):
        self.X = check_data(X, "X")
        n, d = self.X.shape
        if W0 is None:
            self.W0_factor = None
            Fx = self.X
        else:
            W0 = check_kernel_matrix(W0, "W0", require_pd=True)
            if W0.shape != (d, d):
                raise InvalidInputError(f"W0 must be {d} × {d} to match X; got {W0.shape}.")
            self.W0_factor = np.linalg.cholesky(W0)
            Fx = self.X @ self.W0_factor
        w, V = np.linalg.eigh(Fx @ Fx.T)  # Gram of the whitened rows
        top = float(w[-1]) if w.size else 0.0
        keep = w > rank_rtol * top if top > 0 else np.zeros(n, dtype=bool)
        if not np.any(keep):
            raise InvalidInputError("X is zero (rank 0): there is no span to learn a metric in.")
        s = np.sqrt(w[keep])
        self.F = V[:, keep] * s  # coordinates G = Fx Q (n × k)
        self.Q = (Fx.T @ V[:, keep]) / s  # orthonormal basis (d × k)
        k = self.F.shape[1]
        self.T = np.eye(k)
        self.M0 = np.eye(k)
        self.n_points, self.dim = n, k
        self.n_features = d

    @property
    def rank(self) -> int:
        return int(self.F.shape[1])

    def offset(self, regularizer) -> float:
        """(d − k)·f_s(α): the regularizer on the d − k eigenvalues α off the span."""
        extra = self.n_features - self.rank
        if extra == 0:
            return 0.0
        val = float(np.asarray(regularizer.f_s(np.array([float(regularizer.alpha)])))[0])
        return extra * val

    def basis(self) -> np.ndarray:
        """U = T Q (d × k): the learned metric is W = α W0 + U (X̂ − α I) Uᵀ."""
        return self.Q if self.W0_factor is None else self.W0_factor @ self.Q

    def metric(self, Xh, alpha: float):
        """The learned metric of the whitened span matrix X̂ (k × k): a factored
        :class:`~cvxkml.learned.FactoredMetric` for the identity prior (never d × d), a dense
        :class:`~cvxkml.learned.LearnedMetric` for a given W0 (already d × d)."""
        from ..learned import FactoredMetric, LearnedMetric

        Xh = np.asarray(Xh, dtype=float)
        lam, V = np.linalg.eigh(0.5 * (Xh + Xh.T))
        if self.W0_factor is None:
            return FactoredMetric(self.Q @ V, lam - alpha, alpha)
        U = self.basis() @ V
        W = alpha * (self.W0_factor @ self.W0_factor.T) + (U * (lam - alpha)) @ U.T
        return LearnedMetric(0.5 * (W + W.T))

    def __repr__(self):
        return f"SpanSpace(points={self.n_points}, features={self.n_features}, rank={self.rank})"
