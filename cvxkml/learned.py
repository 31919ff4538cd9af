"""Learned kernels and metrics as functions of new points (Jain et al. 2012, eq. 6,
Theorem 1, Corollary 2).

A kernel solution K* on training points x_1 … x_n gives W* = I + Φ S Φᵀ with
S = K0⁻¹ (K* − K0) K0⁻¹, so the learned kernel between arbitrary points is

    κ(z1, z2) = κ0(z1, z2) + k1ᵀ S k2,   k_i = [κ0(z_i, x_1), …, κ0(z_i, x_n)]ᵀ.

For a rank-deficient K0 the inverse is the pseudo-inverse on range(K0); K* − K0 lies in
that range (LogDet keeps it), so the identity is exact and no singular matrix is inverted.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._config import blas_limit
from ._validation import as_float_array, check_data, check_symmetric
from .errors import InvalidInputError
from .formulas.divergences import range_basis

__all__ = ["kernel_S", "LearnedKernel", "LearnedMetric", "FactoredMetric", "components_from_metric"]

#: a Mahalanobis matrix larger than this (bytes) is formed only with a warning saying its size
LARGE_MATRIX_BYTES = 256 * 2**20


@blas_limit()
def kernel_S(K0, K, rtol: float = 1e-10, alpha: float = 1.0) -> np.ndarray:
    """S = K0⁺ (K − αK0) K0⁺ (Theorem 1 with α = 1, Theorem 4 / eq. 18 in general; K0⁺ the
    pseudo-inverse on range(K0))."""
    K0 = check_symmetric(K0, "K0")
    K = check_symmetric(K, "K")
    V, w = range_basis(K0, rtol)
    P = V / w  # K0⁺ = V diag(1/w) Vᵀ
    S = P @ (V.T @ (K - alpha * K0) @ V) @ P.T
    return 0.5 * (S + S.T)  # exact symmetry (round-off grows with cond K0)


class LearnedKernel:
    """κ(z1, z2) = α κ0(z1, z2) + k1ᵀ S k2 (Jain et al. eq. 6 and 18).

    Parameters
    ----------
    base : callable (Z1, Z2) -> κ0 matrix, e.g. a :class:`cvxkml.kernels.Kernel`.
    X_train : the n training points the solution was learned on.
    S : (n, n) symmetric matrix (see :func:`kernel_S`).
    alpha : weight of the base kernel (1 for LogDet).
    """

    def __init__(self, base: Callable, X_train, S, alpha: float = 1.0):
        self.base = base
        self.X_train = check_data(X_train, "X_train")
        self.S = check_symmetric(S, "S")
        if self.S.shape[0] != self.X_train.shape[0]:
            raise InvalidInputError("S must be n × n for the n training points.")
        self.alpha = float(alpha)
        self._embed = None

    @classmethod
    def from_solution(cls, base, X_train, K0, K, alpha: float = 1.0) -> "LearnedKernel":
        """From a kernel solution K* of (12) with a regularizer whose f_s is minimized at α."""
        return cls(base, X_train, kernel_S(K0, K, alpha=alpha), alpha)

    # cross-kernel forms (also usable with precomputed kernels)
    @blas_limit()
    def from_cross(self, K1, K2, K12) -> np.ndarray:
        """α K12 + K1 S K2ᵀ given K1 = κ0(Z1, X_train), K2 = κ0(Z2, X_train), K12 = κ0(Z1, Z2)."""
        return self.alpha * np.asarray(K12, dtype=float) + (np.asarray(K1) @ self.S) @ np.asarray(K2).T

    @blas_limit()
    def diag_from_cross(self, K1, k11) -> np.ndarray:
        K1 = np.asarray(K1, dtype=float)
        return self.alpha * np.asarray(k11, dtype=float) + np.einsum("ij,ij->i", K1 @ self.S, K1)

    @blas_limit()
    def __call__(self, Z1, Z2=None) -> np.ndarray:
        Z2 = Z1 if Z2 is None else Z2
        return self.from_cross(self.base(Z1, self.X_train), self.base(Z2, self.X_train), self.base(Z1, Z2))

    def _base_paired(self, A, B) -> np.ndarray:
        if hasattr(self.base, "paired"):
            return self.base.paired(A, B)
        return np.array([self.base(a[None], b[None])[0, 0] for a, b in zip(A, B)])

    @blas_limit()
    def diag(self, Z) -> np.ndarray:
        """κ(z, z) for each row of Z."""
        Z = check_data(Z, "Z")
        return self.diag_from_cross(self.base(Z, self.X_train), self._base_paired(Z, Z))

    @blas_limit()
    def sq_distances(self, Z1, Z2=None) -> np.ndarray:
        """All learned squared distances κ(a, a) + κ(b, b) − 2κ(a, b), a ∈ Z1, b ∈ Z2."""
        Z2 = Z1 if Z2 is None else Z2
        D = self.diag(Z1)[:, None] + self.diag(Z2)[None, :] - 2.0 * self(Z1, Z2)
        return np.maximum(D, 0.0)

    @blas_limit()
    def pair_sq_distances(self, A, B) -> np.ndarray:
        """Learned squared distances between row a_t of A and row b_t of B:
        α κ0-distance + (k_a − k_b)ᵀ S (k_a − k_b)."""
        A = check_data(A, "A")
        B = check_data(B, "B")
        if A.shape != B.shape:
            raise InvalidInputError("A and B must have the same shape.")
        D = self.base(A, self.X_train) - self.base(B, self.X_train)
        base = self._base_paired(A, A) + self._base_paired(B, B) - 2.0 * self._base_paired(A, B)
        return np.maximum(self.alpha * base + np.einsum("ij,ij->i", D @ self.S, D), 0.0)

    # finite-dimensional embedding exact on span{φ(x_i)}
    @blas_limit()
    def _embedding(self, rtol: float = 1e-10):
        if self._embed is None:
            K0 = self.base(self.X_train, self.X_train)
            # (for α = 0 the learned kernel is K0 S K0 on the training points)
            K = self.alpha * K0 + K0 @ self.S @ K0
            V, w = range_basis(K, rtol)
            self._embed = (K0, V / np.sqrt(w))
        return self._embed

    @blas_limit()
    def embed_cross(self, K_cross) -> np.ndarray:
        """Coordinates ψ(z) with ψ(z)ᵀψ(z') = κ(z, z') for z, z' in the span of the training
        points (the component orthogonal to it, which W* leaves unchanged, is dropped).
        ``K_cross`` = κ0(Z, X_train)."""
        K0, P = self._embedding()
        Kc = np.asarray(K_cross, dtype=float)
        learned_cross = self.alpha * Kc + Kc @ self.S @ K0
        return learned_cross @ P

    @blas_limit()
    def embed(self, Z) -> np.ndarray:
        return self.embed_cross(self.base(Z, self.X_train))


@blas_limit()
def components_from_metric(W, rtol: float = 1e-12) -> np.ndarray:
    """A factor L (d × d) with W = Lᵀ L, from the eigendecomposition of the PSD W."""
    W = check_symmetric(W, "W")
    w, V = np.linalg.eigh(W)
    w = np.where(w > rtol * max(float(np.max(np.abs(w))), np.finfo(float).tiny), w, 0.0)
    return (V * np.sqrt(w)).T


class LearnedMetric:
    """A learned Mahalanobis metric d_W(x, y) = (x − y)ᵀ W (x − y), W dense (d × d).

    Parameters
    ----------
    W : (d, d) PSD array.

    See Also
    --------
    FactoredMetric : the same interface for W = αI + U diag(λ) Uᵀ, never forming d × d.
    """

    def __init__(self, W):
        self.W = check_symmetric(W, "W")
        self.L = components_from_metric(self.W)

    @property
    def n_features(self) -> int:
        return int(self.W.shape[0])

    def _check(self, X, name="X") -> np.ndarray:
        X = check_data(X, name)
        if X.shape[1] != self.n_features:
            raise InvalidInputError(f"{name} must have {self.n_features} features; got {X.shape[1]}.")
        return X

    @blas_limit()
    def transform(self, X) -> np.ndarray:
        """x ↦ L x with W = Lᵀ L: Euclidean distances of the output are the learned ones."""
        return self._check(X) @ self.L.T

    def components(self) -> np.ndarray:
        """L (d × d) with W = Lᵀ L."""
        return self.L

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """W (d × d)."""
        return self.W

    @blas_limit()
    def pair_sq_distances(self, A, B) -> np.ndarray:
        D = as_float_array(A, "A", 2) - as_float_array(B, "B", 2)
        return np.einsum("ij,ij->i", D @ self.W, D)

    @blas_limit()
    def sq_distances(self, Z1, Z2=None) -> np.ndarray:
        from .kernels import _sq_euclidean

        T1 = self.transform(Z1)
        T2 = T1 if Z2 is None else self.transform(Z2)
        return _sq_euclidean(T1, T2)

    def to_arrays(self) -> dict:
        """The arrays that define the metric (for files without pickle)."""
        return {"W": self.W}

    @classmethod
    def from_arrays(cls, arrays) -> "LearnedMetric":
        return cls(arrays["W"])


class FactoredMetric:
    """A learned Mahalanobis metric W = α I + U diag(λ) Uᵀ that is never formed (d × d) unless
    asked for: the span solution of wide data (Jain et al. 2012, Theorems 1 and 4:
    W* = αI + ΦSΦᵀ; :class:`~cvxkml.declare.spaces.SpanSpace`).

    Parameters
    ----------
    U : (d, k) array with orthonormal columns (a basis of the data's row space).
    lam : (k,) array, λ >= −α (W ⪰ 0): W's eigenvalues on span(U) are α + λ.
    alpha : float >= 0, W's eigenvalue off span(U).

    Every method costs O(d k) per point; :meth:`get_mahalanobis_matrix` and, for α > 0,
    :meth:`components` form d × d matrices (8 d² bytes) and warn when that exceeds
    :data:`LARGE_MATRIX_BYTES`.
    """

    def __init__(self, U, lam, alpha: float = 1.0):
        self.U = as_float_array(U, "U", 2)
        self.lam = as_float_array(lam, "lam", 1)
        self.alpha = float(alpha)
        d, k = self.U.shape
        if self.lam.shape != (k,):
            raise InvalidInputError(f"lam must have one entry per column of U ({k}); got {self.lam.shape}.")
        if not (np.isfinite(self.alpha) and self.alpha >= 0):
            raise InvalidInputError(f"alpha must be a finite number >= 0; got {alpha!r}.")
        tol = 1e-8 * max(1.0, self.alpha, float(np.max(np.abs(self.lam), initial=0.0)))
        if np.any(self.alpha + self.lam < -tol):
            raise InvalidInputError(
                f"W = αI + U diag(λ) Uᵀ is not PSD: α + min λ = {self.alpha + self.lam.min():.3g} < 0."
            )
        gram = self.U.T @ self.U
        if not np.allclose(gram, np.eye(k), atol=1e-6):
            raise InvalidInputError("U must have orthonormal columns (Uᵀ U = I).")
        self._root = np.sqrt(np.maximum(self.alpha + self.lam, 0.0))

    @property
    def n_features(self) -> int:
        return int(self.U.shape[0])

    @property
    def rank(self) -> int:
        return int(self.U.shape[1])

    _check = LearnedMetric._check

    @blas_limit()
    def transform(self, X) -> np.ndarray:
        """x ↦ L x with W = Lᵀ L, L = √α (I − UUᵀ) + U diag(√(α + λ)) Uᵀ: (n, d) for α > 0,
        the (n, k) coordinates diag(√λ) Uᵀ x for α = 0 (same Euclidean distances)."""
        X = self._check(X)
        C = X @ self.U
        if self.alpha == 0.0:
            return C * self._root
        a = np.sqrt(self.alpha)
        return a * X + (C * (self._root - a)) @ self.U.T

    def _warn_size(self, what: str) -> None:
        d = self.n_features
        nbytes = 8 * d * d
        if nbytes > LARGE_MATRIX_BYTES:
            import warnings

            warnings.warn(
                f"Forming the {d} × {d} {what} ({nbytes / 2**20:.0f} MB); the factored "
                "metric's transform / pair_sq_distances never do.",
                UserWarning,
                stacklevel=3,
            )

    def components(self) -> np.ndarray:
        """L with W = Lᵀ L: (k, d) for α = 0, else (d, d) (formed; warns when large)."""
        if self.alpha == 0.0:
            return (self.U * self._root).T
        self._warn_size("components matrix L")
        a = np.sqrt(self.alpha)
        L = (self.U * (self._root - a)) @ self.U.T
        L[np.diag_indices_from(L)] += a
        return L

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """W (d × d), formed on request (warns when large)."""
        self._warn_size("Mahalanobis matrix W")
        W = (self.U * self.lam) @ self.U.T
        W[np.diag_indices_from(W)] += self.alpha
        return 0.5 * (W + W.T)

    @blas_limit()
    def pair_sq_distances(self, A, B) -> np.ndarray:
        """(a − b)ᵀ W (a − b) row by row: α‖a − b‖² + Σ λ_k (u_kᵀ(a − b))²."""
        D = self._check(as_float_array(A, "A", 2), "A") - self._check(as_float_array(B, "B", 2), "B")
        C = D @ self.U
        return np.maximum(self.alpha * np.einsum("ij,ij->i", D, D) + (C * C) @ self.lam, 0.0)

    sq_distances = LearnedMetric.sq_distances  # Euclidean distances of the transforms

    def to_arrays(self) -> dict:
        return {"U": self.U, "lam": self.lam, "alpha": np.array(self.alpha)}

    @classmethod
    def from_arrays(cls, arrays) -> "FactoredMetric":
        return cls(arrays["U"], arrays["lam"], float(np.asarray(arrays["alpha"])))
