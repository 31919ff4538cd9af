"""Relevant component analysis, RCA (Bar-Hillel, Hertz, Shental & Weinshall, ICML 2003;
JMLR 6, 2005) — the linear baseline of Yeung et al. (2007).

RCA learns a Mahalanobis metric from similarity pairs only:

1. chunklets = connected components of the graph whose edges are the similar pairs
   (the transitive closure of "same class");
2. Ĉ = (1/p) Σ_chunklets Σ_{x ∈ chunklet} (x − m_chunklet)(x − m_chunklet)ᵀ, the
   within-chunklet covariance over the p points in chunklets;
3. the whitening transformation A = Ĉ^-½, applied as x ↦ A x (equivalently the
   Mahalanobis matrix Ĉ⁻¹).

When Ĉ is singular (fewer chunklet points than dimensions, e.g. 50 pairs of MNIST
images in 784 dimensions) step 3 is undefined.  Bar-Hillel et al. then reduce the
dimension first; here the data are projected onto their r leading principal axes
(PCA of all points given to ``fit``, centred), r = rank(Ĉ), and Ĉ is whitened in that
subspace (eigenvalues of the projected Ĉ below ``rank_rtol`` of the largest are
dropped).  The reduction is recorded in ``n_components_``.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from cvxkml._validation import check_data, check_positive
from cvxkml.declare.yeung import similarity_pairs
from cvxkml.errors import InvalidInputError

__all__ = ["chunklets", "within_chunklet_covariance", "rca_components", "RCA"]


def chunklets(n_points: int, i, j) -> np.ndarray:
    """Chunklet label of every point (−1 for points in no pair): the connected
    components of the graph with the similar pairs (i_t, j_t) as edges."""
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    A = coo_matrix((np.ones(i.size), (i, j)), shape=(n_points, n_points))
    _, comp = connected_components(A, directed=False)
    involved = np.zeros(n_points, dtype=bool)
    involved[i] = involved[j] = True
    _, labels = np.unique(comp[involved], return_inverse=True)
    out = np.full(n_points, -1, dtype=np.int64)
    out[involved] = labels
    return out


def within_chunklet_covariance(X, chunk) -> np.ndarray:
    """Ĉ = (1/p) Σ_c Σ_{x ∈ c} (x − m_c)(x − m_c)ᵀ over the p points with chunk >= 0."""
    X = np.asarray(X, dtype=float)
    chunk = np.asarray(chunk)
    inside = chunk >= 0
    Xc = X[inside]
    lab = chunk[inside]
    means = np.zeros((lab.max() + 1, X.shape[1]))
    np.add.at(means, lab, Xc)
    means /= np.bincount(lab)[:, None]
    R = Xc - means[lab]
    return R.T @ R / Xc.shape[0]


def _inv_sqrt(C, rank_rtol):
    w, V = np.linalg.eigh(0.5 * (C + C.T))
    keep = w > rank_rtol * max(float(np.max(w)), np.finfo(float).tiny)
    return (V[:, keep] / np.sqrt(w[keep])[None, :]).T  # rows: whitened axes


def rca_components(X, i, j, rank_rtol: float = 1e-10) -> np.ndarray:
    """The RCA transformation A (k × d), x ↦ A x, from the similar pairs (i, j).

    k = d when the within-chunklet covariance Ĉ has full rank (A = Ĉ^-½ up to an
    orthogonal factor: AᵀA = Ĉ⁻¹); otherwise k <= rank(Ĉ) after the PCA reduction
    described in the module docstring.
    """
    X = check_data(X, "X")
    chunk = chunklets(X.shape[0], i, j)
    C = within_chunklet_covariance(X, chunk)
    w = np.linalg.eigvalsh(C)
    scale = float(np.max(w)) if w.size else 0.0
    if not scale > 0:
        raise InvalidInputError(
            "The within-chunklet covariance is zero: every similar pair joins identical points. "
            "RCA needs pairs of distinct points."
        )
    r = int(np.sum(w > rank_rtol * scale))
    d = X.shape[1]
    if r == d:
        return _inv_sqrt(C, rank_rtol)
    Xc = X - X.mean(axis=0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    P = Vt[:r].T  # d × r leading principal axes
    return _inv_sqrt(P.T @ C @ P, rank_rtol) @ P.T


class RCA:
    """Relevant component analysis from similarity pairs (see the module docstring).

    Parameters
    ----------
    rank_rtol : float, default=1e-10
        Eigenvalues of Ĉ at most ``rank_rtol`` times the largest count as zero.

    Attributes
    ----------
    components_ : ndarray of shape (n_components_, n_features)
        A; ``transform(X) = X @ components_.T``.
    n_components_ : int
        n_features, or rank(Ĉ) after the dimension reduction.
    chunklets_ : ndarray of shape (n_samples,)
        Chunklet label of every training point (−1: in no pair).
    """

    def __init__(self, rank_rtol: float = 1e-10):
        self.rank_rtol = rank_rtol

    def fit(self, X, pairs) -> "RCA":
        """Learn A from the points X (n, d) and similar pairs ((|S|, 2) indices or a
        :class:`~cvxkml.sideinfo.PairConstraints`, whose dissimilar pairs are ignored)."""
        X = check_data(X, "X")
        rtol = check_positive(self.rank_rtol, "rank_rtol")
        i, j = similarity_pairs(pairs, X.shape[0])
        self.components_ = rca_components(X, i, j, rtol)
        self.n_components_ = self.components_.shape[0]
        self.chunklets_ = chunklets(X.shape[0], i, j)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X) -> np.ndarray:
        """x ↦ A x for every row of X."""
        if not hasattr(self, "components_"):
            raise InvalidInputError("This RCA instance is not fitted yet; call fit(X, pairs) first.")
        X = check_data(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise InvalidInputError(f"X must have {self.n_features_in_} features; got {X.shape[1]}.")
        return X @ self.components_.T

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """AᵀA (= Ĉ⁻¹ when Ĉ has full rank)."""
        return self.components_.T @ self.components_
