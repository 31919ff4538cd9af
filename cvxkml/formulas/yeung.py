"""The formulas of Yeung, Chang & Dai (IJCAI 2007), NumPy only — the one place each is
written.  The exact CVXPY models (:mod:`cvxkml.declare.yeung`), the landmark machinery
(:mod:`cvxkml.solvers.yeung`) and the tests all evaluate them from here (this module
imports neither CVXPY nor Numba).

* :func:`similarity_diag` — (D_S)_rr = (1/|S|) Σ_{(i,j)∈S} ((e_i − e_j)ᵀ u_r)², eq. 2 / 7,
  for the columns u_r of a component matrix U (eigenvectors v_r of K, or W α_r).
* :func:`criterion` — J_S(β) = βᵀ D_S β = Σ_r d_r β_r², eq. 1.
* :func:`regularize` — the ε rule of footnotes 3 and 4: a symmetric PSD matrix A (D_S or a
  local Gram matrix G_i) is *singular* when λ_min(A) <= ε·s, s = the mean diagonal of A;
  then A + ε·s·I is used instead (ε is relative, so the rule does not depend on the scale
  of the kernel).
* :func:`beta_closed_form` — β = c D⁻¹1 / (1ᵀ D⁻¹ 1), eq. 4; :func:`equality_multiplier`
  — the Lagrange multiplier ρ = 2c / (1ᵀ D⁻¹ 1) of 1ᵀβ = c in eq. 3.
* :func:`local_gram` — G_i = [k(x_i, x_i) + k(x_j, x_k) − k(x_i, x_j) − k(x_i, x_k)]_{j,k ∈ N_i},
  eq. 11; :func:`lle_weights` — solve G_i ŵ = 1, w = ŵ / 1ᵀŵ, eq. 12.
* :func:`positive_spectrum` — the positive eigenpairs of a centred kernel (§2, eq. 6).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_number, psd_rank
from ..errors import InvalidInputError

__all__ = [
    "DEFAULT_EPSILON",
    "check_epsilon",
    "positive_spectrum",
    "similarity_diag",
    "criterion",
    "regularize",
    "beta_closed_form",
    "equality_multiplier",
    "local_gram",
    "lle_weights",
]

#: default relative ε of :func:`regularize` (footnotes 3–4).  The local Gram matrices of a
#: Gaussian kernel over K close landmarks are often numerically singular, and nearly
#: unregularized weights grow large; 1e-3 is the usual LLE regularization (Roweis & Saul
#: 2000; scikit-learn's ``reg``).
DEFAULT_EPSILON = 1e-3
MAX_EPSILON = 1e3
MIN_EPSILON = 1e-14


def check_epsilon(epsilon) -> float:
    """The relative ε of :func:`regularize`, in [1e-14, 1e3]: below ~100 machine epsilons
    the ridge ε s is lost in the round-off of G (G stays exactly singular); from
    ε = 1 on the ridge is at least the mean diagonal, so every matrix counts as singular,
    and far beyond it the ridge swamps the data and the certificates overflow."""
    return check_number(
        epsilon,
        "epsilon",
        low=MIN_EPSILON,
        high=MAX_EPSILON,
        what="a relative regularization in [1e-14, 1e3] (the default is 1e-3)",
    )


# --------------------------------------------------------------------------- spectra
def fix_signs(V: np.ndarray) -> np.ndarray:
    """Make every column's largest-magnitude entry positive (deterministic eigenvectors)."""
    if V.size == 0:
        return V
    rows = np.argmax(np.abs(V), axis=0)
    s = np.sign(V[rows, np.arange(V.shape[1])])
    s[s == 0] = 1.0
    return V * s


def positive_spectrum(K, rank_rtol: float = 1e-10, name: str = "K", atol: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Positive eigenvalues (descending) and unit eigenvectors of a symmetric PSD matrix.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Symmetric positive semidefinite matrix (a centred kernel matrix).
    rank_rtol : float, default=1e-10
        Eigenvalues at most ``rank_rtol`` times the largest count as zero.
    name : str
        Name used in error messages.
    atol : float, default=0.0
        Absolute round-off level of ``K``'s computation: eigenvalues within it of zero count
        as zero, and only ones below ``-atol`` (or ``-10 · rank_rtol`` times the largest)
        make ``K`` non-PSD.  Centring a kernel of entries ~1 whose points nearly coincide
        leaves a centred matrix of norm ~1e-8 with round-off ~1e-16 (:func:`cvxkml.kernels.centering_roundoff`).

    Returns
    -------
    lam : ndarray of shape (p,)
        The p positive eigenvalues λ_1 >= … >= λ_p > 0.
    V : ndarray of shape (n, p)
        Their eigenvectors; each column's largest-magnitude entry is positive.

    Raises
    ------
    NotPSDError
        K has a clearly negative eigenvalue.
    InvalidInputError
        K has no positive eigenvalue (all points coincide in feature space).
    """
    K = np.asarray(K, dtype=float)
    _, w, V = psd_rank(0.5 * (K + K.T), name, rank_rtol, atol)
    scale = max(float(np.max(np.abs(w))), np.finfo(float).tiny) if w.size else 0.0
    keep = w > max(rank_rtol * scale, atol)
    if not np.any(keep):
        raise InvalidInputError(
            f"{name} has no positive eigenvalue: after centring, all points coincide in feature "
            "space. Use distinct points or a different kernel."
        )
    lam = w[keep][::-1].copy()
    V = fix_signs(np.ascontiguousarray(V[:, keep][:, ::-1]))
    return lam, V


# --------------------------------------------------------------------------- β step (eq. 1–4)
def similarity_diag(U, i, j) -> np.ndarray:
    """(D_S)_rr = (1/|S|) Σ_{(i,j)∈S} (U[i, r] − U[j, r])²  (eq. 2; eq. 7 with U = W V_α).

    Parameters
    ----------
    U : ndarray of shape (n, q)
        Component matrix: row a holds the components of point a.
    i, j : int arrays of shape (|S|,)
        The similarity pairs (rows of U).

    Returns
    -------
    d : ndarray of shape (q,)
        The diagonal of D_S (non-negative).
    """
    U = np.asarray(U, dtype=float)
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    if i.size == 0:
        raise InvalidInputError("The similarity set S is empty; give at least one similar pair.")
    Dif = U[i] - U[j]
    return np.einsum("sr,sr->r", Dif, Dif) / i.size


def criterion(beta, d) -> float:
    """J_S(β) = βᵀ D β = Σ_r d_r β_r² for a diagonal D = diag(d)  (eq. 1)."""
    beta = np.asarray(beta, dtype=float)
    return float(np.dot(np.asarray(d, dtype=float), beta * beta))


def regularize(A, epsilon: float):
    """The ε rule of the paper's footnotes 3 and 4.

    A symmetric PSD matrix A is treated as singular when its smallest eigenvalue is at
    most ``epsilon * s``, with s the mean diagonal of A (s = 1 when A is zero); then
    A + ``epsilon * s`` · I is used.

    Parameters
    ----------
    A : ndarray of shape (q,), (k, k) or (n, k, k)
        A diagonal matrix given by its diagonal (D_S), one matrix, or a stack (G_i).
    epsilon : float
        Relative regularization ε > 0.

    Returns
    -------
    A_eff : ndarray, same shape as A
        A, or A + ε s I where singular.
    singular : bool or ndarray of shape (n,)
        Where the rule applied.
    """
    A = np.asarray(A, dtype=float)
    if A.ndim == 1:
        s = float(np.mean(A)) if A.size else 1.0
        s = s if s > 0 else 1.0
        singular = bool(np.min(A) <= epsilon * s)
        return (A + epsilon * s if singular else A.copy()), singular
    batch = A if A.ndim == 3 else A[None]
    k = batch.shape[-1]
    s = np.trace(batch, axis1=1, axis2=2) / k
    s = np.where(s > 0, s, 1.0)
    lmin = np.linalg.eigvalsh(batch)[:, 0]
    singular = lmin <= epsilon * s
    out = batch.copy()
    if np.any(singular):
        diag = np.arange(k)
        out[np.flatnonzero(singular)[:, None], diag[None, :], diag[None, :]] += (epsilon * s[singular])[:, None]
    if A.ndim == 2:
        return out[0], bool(singular[0])
    return out, singular


def beta_closed_form(d, c: float) -> np.ndarray:
    """β = c D⁻¹1 / (1ᵀ D⁻¹ 1), the minimizer of βᵀ D β subject to 1ᵀβ = c  (eq. 4).

    ``d`` is the (regularized, positive) diagonal of D.
    """
    d = np.asarray(d, dtype=float)
    if np.any(d <= 0):
        raise InvalidInputError("D must have a positive diagonal; apply regularize() first.")
    inv = 1.0 / d
    return float(c) * inv / np.sum(inv)


def equality_multiplier(d, c: float) -> float:
    """ρ = 2c / (1ᵀ D⁻¹ 1): the multiplier of 1ᵀβ = c in the Lagrangian of eq. 3
    (stationarity 2Dβ = ρ1), equal to 2 J_S(β*) / c."""
    d = np.asarray(d, dtype=float)
    return 2.0 * float(c) / float(np.sum(1.0 / d))


# --------------------------------------------------------------------------- weights (eq. 9–12)
def local_gram(kxx, kxN, KNN) -> np.ndarray:
    """Local Gram matrices G_i = [k_ii + k_jk − k_ij − k_ik]_{j,k ∈ N_i}  (eq. 11), batched.

    Parameters
    ----------
    kxx : ndarray of shape (n,)
        k(x_i, x_i).
    kxN : ndarray of shape (n, K)
        k(x_i, x_j) for the K neighbours j of x_i.
    KNN : ndarray of shape (n, K, K)
        k(x_j, x_k) among the neighbours of x_i.

    Returns
    -------
    G : ndarray of shape (n, K, K)
        G_i = Gram matrix of the differences φ(x_i) − φ(x_j).
    """
    kxx = np.asarray(kxx, dtype=float)
    kxN = np.asarray(kxN, dtype=float)
    G = np.asarray(KNN, dtype=float) + kxx[:, None, None] - kxN[:, :, None] - kxN[:, None, :]
    return 0.5 * (G + np.swapaxes(G, 1, 2))


def lle_weights(G, epsilon: float):
    """Embedding weights w_i = G_i⁻¹1 / (1ᵀ G_i⁻¹ 1): solve G_i ŵ = 1 and normalize
    (eq. 12), with G_i + ε s I where G_i is singular (footnote 4, :func:`regularize`).

    Parameters
    ----------
    G : ndarray of shape (n, K, K)
        Local Gram matrices.
    epsilon : float
        Relative regularization ε > 0.

    Returns
    -------
    w : ndarray of shape (n, K)
        Weights; every row sums to one.
    singular : ndarray of bool, shape (n,)
        Rows where G_i was regularized.
    """
    G_eff, singular = regularize(np.asarray(G, dtype=float), epsilon)
    ones = np.ones(G_eff.shape[:-1] + (1,))
    w_hat = np.linalg.solve(G_eff, ones)[..., 0]
    return w_hat / np.sum(w_hat, axis=-1, keepdims=True), singular
