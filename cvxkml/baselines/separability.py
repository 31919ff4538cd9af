"""The class-separability measure of Yeung, Chang & Dai (IJCAI 2007, eq. 17):

    J = d̄_b / d̄_w,

d̄_b the mean distance over all pairs of points with different labels, d̄_w the mean over
all pairs with the same label (distances, not squared distances; each unordered pair
once).  For kernel methods the distances are feature-space distances
‖φ(x_i) − φ(x_j)‖ = sqrt(k_ii + k_jj − 2k_ij) (the kernel trick).  A larger J means a
better separated metric.

All pairs are visited in row blocks, so memory is O(block · n).  :func:`mean_distances` is the one place the formula is
written; every other function hands it a way to produce rows of the Gram matrix.
"""

from __future__ import annotations

from typing import Callable

import numba as nb
import numpy as np

from .._validation import as_float_array, check_data
from ..errors import InvalidInputError

__all__ = ["mean_distances", "separability", "separability_from_kernel", "separability_lowrank"]


def _pair_counts(y):
    """Label codes and the numbers of ordered between-class and within-class pairs."""
    _, inv, counts = np.unique(np.asarray(y).ravel(), return_inverse=True, return_counts=True)
    n = inv.size
    n_w = float(np.sum(counts * (counts - 1.0)))
    n_b = float(n) * n - float(np.sum(counts * counts))
    if n_w == 0 or n_b == 0:
        raise InvalidInputError(
            "J needs at least one pair with equal labels and one with different labels; "
            f"got {counts.size} class(es) with sizes {counts.tolist()}."
        )
    return np.ascontiguousarray(inv, dtype=np.int64), n_b, n_w


@nb.njit(cache=True, parallel=True)
def _block_sums(G, da, d, inv, start):
    """Σ of distances sqrt(max(da_r + d_c − 2G_rc, 0)) over the block, and over its
    same-label entries; the diagonal entries (c = start + r) are skipped."""
    b, n = G.shape
    tot = np.zeros(b)
    win = np.zeros(b)
    for r in nb.prange(b):
        lr = inv[start + r]
        t = 0.0
        w = 0.0
        for c in range(n):
            if c == start + r:
                continue
            v = da[r] + d[c] - 2.0 * G[r, c]
            v = np.sqrt(v) if v > 0.0 else 0.0
            t += v
            if inv[c] == lr:
                w += v
        tot[r] = t
        win[r] = w
    return np.sum(tot), np.sum(win)


@nb.njit(cache=True, parallel=True)
def _coordinate_sums(Z, inv):
    """Σ of Euclidean distances between the rows of Z over all pairs i < j, and over the
    same-label pairs (direct loop; used for few coordinates)."""
    n, q = Z.shape
    tot = np.zeros(n)
    win = np.zeros(n)
    for i in nb.prange(n):
        t = 0.0
        w = 0.0
        for j in range(i + 1, n):
            s = 0.0
            for k in range(q):
                diff = Z[i, k] - Z[j, k]
                s += diff * diff
            v = np.sqrt(s)
            t += v
            if inv[i] == inv[j]:
                w += v
        tot[i] = t
        win[i] = w
    return 2.0 * np.sum(tot), 2.0 * np.sum(win)  # ordered pairs, as mean_distances


_DIRECT_MAX_DIM = 8  # up to this many coordinates, loop over pairs instead of Gram blocks


def mean_distances(y, diag, gram_rows: Callable[[int, int], np.ndarray], block_size: int = 1024) -> tuple[float, float]:
    """(d̄_b, d̄_w): mean between-class and within-class distances over all pairs.

    Parameters
    ----------
    y : array-like of shape (n,)
        Class labels.
    diag : ndarray of shape (n,)
        Squared norms k(x_i, x_i).
    gram_rows : callable (start, stop) -> ndarray of shape (stop − start, n)
        Rows ``start:stop`` of the Gram (kernel) matrix.
    block_size : int
        Rows per block.

    Raises
    ------
    InvalidInputError
        No pair has equal labels or none has different labels.
    """
    diag = np.asarray(diag, dtype=float)
    inv, n_b, n_w = _pair_counts(y)
    n = inv.size
    if diag.shape != (n,):
        raise InvalidInputError(f"diag must have one entry per label ({n}); got {diag.shape}.")
    s_w = s_b = 0.0
    for a in range(0, n, int(block_size)):
        b = min(n, a + int(block_size))
        G = np.ascontiguousarray(gram_rows(a, b), dtype=np.float64)
        if G.shape != (b - a, n):
            raise InvalidInputError(f"gram_rows({a}, {b}) must have shape {(b - a, n)}; got {G.shape}.")
        tot, win = _block_sums(G, np.ascontiguousarray(diag[a:b]), diag, inv, a)
        s_w += win
        s_b += tot - win
    return s_b / n_b, s_w / n_w


def _coordinate_means(X, y) -> tuple[float, float]:
    """(d̄_b, d̄_w) for Euclidean distances between the rows of X, by the direct loop."""
    inv, n_b, n_w = _pair_counts(y)
    tot, win = _coordinate_sums(np.ascontiguousarray(X, dtype=np.float64), np.ascontiguousarray(inv, dtype=np.int64))
    return (tot - win) / n_b, win / n_w


def _ratio(db: float, dw: float) -> float:
    if dw == 0.0:
        return float("inf")
    return db / dw


def separability(X, y, kernel=None, block_size: int = 1024) -> float:
    """J = d̄_b / d̄_w (eq. 17) of the points X under the Euclidean distance
    (``kernel=None``) or the feature-space distance of a kernel (a
    :class:`cvxkml.kernels.Kernel` or any callable ``kernel(A, B)`` returning the kernel
    matrix; the kernel trick).

    Parameters
    ----------
    X : array-like of shape (n, d)
        The points.
    y : array-like of shape (n,)
        Their class labels.
    kernel : Kernel, callable or None
        The kernel whose feature-space distance is used; None: the Euclidean distance.
    block_size : int, default 1024
        Rows of the Gram matrix formed at a time.

    Returns
    -------
    J : float (inf when all within-class distances are zero)
    """
    X = check_data(X, "X")
    y = np.asarray(y).ravel()
    if y.size != X.shape[0]:
        raise InvalidInputError(f"X and y must have the same number of rows; got {X.shape[0]} and {y.size}.")
    if kernel is None and X.shape[1] <= _DIRECT_MAX_DIM:
        return _ratio(*_coordinate_means(X, y))
    if kernel is None:
        diag = np.einsum("ij,ij->i", X, X)
        rows = lambda a, b: X[a:b] @ X.T
    else:
        diag = kernel.diag(X) if hasattr(kernel, "diag") else np.array([kernel(x[None], x[None])[0, 0] for x in X])
        rows = lambda a, b: kernel(X[a:b], X)
    return _ratio(*mean_distances(y, diag, rows, block_size))


def separability_from_kernel(K, y, block_size: int = 1024) -> float:
    """J (eq. 17) from a kernel matrix K (n × n) by the kernel trick."""
    K = as_float_array(K, "K", ndim=2)
    if K.shape[0] != K.shape[1]:
        raise InvalidInputError(f"K must be square; got {K.shape}.")
    return _ratio(*mean_distances(y, np.diag(K).copy(), lambda a, b: K[a:b], block_size))


def separability_lowrank(W, M, y, block_size: int = 1024) -> float:
    """J (eq. 17) for a factored kernel K = W M Wᵀ, e.g. the learned K̃_β = W L_β Wᵀ of
    Yeung et al. (W sparse n × m, M = L_β m × m).  A block of rows costs
    O(block · (nnz(W) + K·m)) instead of O(block · n · q) for dense coordinates.

    Parameters
    ----------
    W : scipy sparse matrix or ndarray of shape (n, m)
        The left factor of K = W M Wᵀ.
    M : ndarray of shape (m, m), symmetric PSD
        The middle factor.
    y : array-like of shape (n,)
        The class labels of the n points.
    block_size : int, default 1024
        Rows of K formed at a time.
    """
    import scipy.sparse as sp

    Ws = sp.csr_matrix(W)
    M = as_float_array(M, "M", ndim=2)
    WM = np.asarray(Ws @ M)
    diag = np.asarray(Ws.multiply(WM).sum(axis=1)).ravel()

    def rows(a, b):  # (W M Wᵀ)[a:b] = (W (WM[a:b])ᵀ)ᵀ
        return np.asarray(Ws @ WM[a:b].T).T

    return _ratio(*mean_distances(y, diag, rows, block_size))
