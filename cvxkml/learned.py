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
from .formulas.divergences import range_basis
from .errors import InvalidInputError

__all__ = ["kernel_S", "LearnedKernel", "LearnedMetric", "components_from_metric"]


@blas_limit()
def kernel_S(K0, K, rtol: float = 1e-10, alpha: float = 1.0) -> np.ndarray:
    """S = K0⁺ (K − αK0) K0⁺ (Theorem 1 with α = 1, Theorem 4 / eq. 18 in general; K0⁺ the
    pseudo-inverse on range(K0))."""
    K0 = check_symmetric(K0, "K0")
    K = check_symmetric(K, "K")
    V, w = range_basis(K0, rtol)
    P = V / w                                         # K0⁺ = V diag(1/w) Vᵀ
    S = P @ (V.T @ (K - alpha * K0) @ V) @ P.T
    return 0.5 * (S + S.T)                            # exact symmetry (round-off grows with cond K0)


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
        return self.alpha * np.asarray(k11, dtype=float) + np.einsum("ij,jk,ik->i", K1, self.S, K1)

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
        return np.maximum(self.alpha * base + np.einsum("ij,jk,ik->i", D, self.S, D), 0.0)

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
    """A learned Mahalanobis metric d_W(x, y) = (x − y)ᵀ W (x − y)."""

    def __init__(self, W):
        self.W = check_symmetric(W, "W")
        self.L = components_from_metric(self.W)

    @blas_limit()
    def transform(self, X) -> np.ndarray:
        X = check_data(X)
        if X.shape[1] != self.W.shape[0]:
            raise InvalidInputError(f"X must have {self.W.shape[0]} features; got {X.shape[1]}.")
        return X @ self.L.T

    @blas_limit()
    def pair_sq_distances(self, A, B) -> np.ndarray:
        D = as_float_array(A, "A", 2) - as_float_array(B, "B", 2)
        return np.einsum("ij,jk,ik->i", D, self.W, D)

    @blas_limit()
    def sq_distances(self, Z1, Z2=None) -> np.ndarray:
        from .kernels import _sq_euclidean
        T1 = self.transform(Z1)
        T2 = T1 if Z2 is None else self.transform(Z2)
        return _sq_euclidean(T1, T2)
