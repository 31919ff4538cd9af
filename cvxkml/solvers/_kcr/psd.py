"""The PSD step of the KCR solver and its spectral helpers: LAPACK eigendecompositions with
the float64 fallback, the positive part, the block-Krylov tracker of the positive
eigenpairs, the operator norm and the smallest eigenvalues the certificate needs."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ..._config import blas_limit
from ...formulas.kcr import sq_distances_from_gram
from .kernels import _adjoint


def _normal_operator(F, dtype):
    """X ↦ AᵀA(X) for A(X)_ij = z_ijᵀXz_ij (z_ij = f_i − f_j), products in ``dtype``, with its
    n × n scratch allocated once: D = A(X) is symmetric, so AᵀA(X) is the adjoint of D/2,
    doubled.  O(n²r) per call."""
    n = F.shape[0]
    F = np.asarray(F, dtype=dtype)
    W = np.empty((n, n), dtype)
    deg = np.empty(n, dtype)
    ones = np.ones((n, n), dtype)

    def apply(X):
        D = sq_distances_from_gram(F @ X @ F.T)
        return (_adjoint(F, np.ascontiguousarray(0.5 * D), ones, W, deg) * 2.0).astype(dtype)

    return apply


def _symmetric_start(r: int, seed: int, dtype):
    """The seeded random symmetric r × r start of the operator-norm estimates."""
    X = np.random.default_rng(seed).standard_normal((r, r))
    return (X + X.T).astype(dtype, copy=False)


@blas_limit()
def operator_norm(F, n_iter: int = 30, seed: int = 0, rtol: float = 1e-4, dtype=np.float64) -> float:
    """Power-iteration estimate of ‖A‖ (A(X)_ij = z_ijᵀXz_ij over all ordered pairs),
    stopped after ``n_iter`` iterations or once two consecutive estimates agree to
    ``rtol`` (from the fifth iteration; each costs O(n²r), and the estimate only sets the
    first step size and the scale of h̃).

    ``dtype``: the precision of the products (float32 halves their cost; from the same
    random start the estimate is the same to the float32 rounding of a norm)."""
    apply, X = _normal_operator(F, dtype), _symmetric_start(F.shape[1], seed, dtype)
    est = 1.0
    prev = np.inf
    for k in range(n_iter):
        X /= np.linalg.norm(X)
        X2 = apply(X)
        est = float(np.sqrt(np.linalg.norm(X2)))
        if not np.isfinite(est) or est == 0.0:
            est = max(est, 1.0) if np.isfinite(est) else 1.0
            break
        if k >= 4 and abs(est - prev) <= rtol * est:
            break
        prev = est
        X = X2
    return est


@blas_limit()
def operator_norm_lanczos(F, n_iter: int = 30, seed: int = 0, rtol: float = 1e-2, dtype=np.float64) -> float:
    """Lanczos estimate of ‖A‖ = √λ_max(AᵀA) over symmetric r × r matrices (A as in
    :func:`operator_norm`; AᵀA maps the PSD cone into itself, and its top eigenvalue is
    clustered, which the power iteration resolves slowly: 30 of its products reach 2e-3 of
    ‖A‖ where Lanczos needs about 12 for 2e-4).  Full reorthogonalization; stops once the
    largest Ritz value θ has residual β|s_m| <= ``rtol`` · θ, after ``n_iter`` products, or
    when the Krylov space is invariant.  Returns √θ, a lower bound of ‖A‖ (θ <= λ_max).

    ``dtype``: the precision of the products and of the basis (the tridiagonal problem is
    float64)."""
    apply, X = _normal_operator(F, dtype), _symmetric_start(F.shape[1], seed, dtype)
    nx = float(np.linalg.norm(X))
    if nx == 0.0:
        return 1.0
    basis, alpha, beta = [X / dtype(nx)], [], []
    theta = 0.0
    for _ in range(max(1, int(n_iter))):
        w = apply(basis[-1])
        alpha.append(float(np.vdot(basis[-1], w)))
        for v in basis:  # full reorthogonalization (twice is enough)
            w -= dtype(np.vdot(v, w)) * v
        for v in basis:
            w -= dtype(np.vdot(v, w)) * v
        b = float(np.linalg.norm(w))
        T = np.diag(alpha) + np.diag(beta, 1) + np.diag(beta, -1)
        ritz, S = np.linalg.eigh(T)
        theta = float(ritz[-1])
        if not np.isfinite(theta) or theta <= 0.0:
            return 1.0
        if b * abs(S[-1, -1]) <= rtol * theta or b <= 1e-12 * theta:
            break
        beta.append(b)
        basis.append(w / dtype(b))
    return float(np.sqrt(theta))


def _eigh(M, dtype, subset_by_value=None, subset_by_index=None):
    """Eigenpairs (ascending) of a symmetric M computed in ``dtype``: LAPACK ``?syevr``
    for a subset (``subset_by_value`` / ``subset_by_index`` as in scipy), ``?syevd``
    otherwise.  LAPACK's MRRR driver can report an internal error on rare matrices: then
    divide and conquer in float64, same subset."""
    Mx = M.astype(dtype, copy=False)
    subset = subset_by_value is not None or subset_by_index is not None
    try:
        if subset:
            return sla.eigh(
                Mx, driver="evr", subset_by_value=subset_by_value, subset_by_index=subset_by_index, check_finite=False
            )
        return np.linalg.eigh(Mx)
    except np.linalg.LinAlgError:
        if not np.all(np.isfinite(M)):
            raise
        w, U = np.linalg.eigh(np.asarray(M, dtype=np.float64))
        if subset_by_value is not None:
            sel = (w > subset_by_value[0]) & (w <= subset_by_value[1])
        elif subset_by_index is not None:
            sel = np.zeros(w.size, bool)
            sel[subset_by_index[0] : subset_by_index[1] + 1] = True
        else:
            sel = np.ones(w.size, bool)
        return w[sel], U[:, sel]


def _psd_part(M, rank_hint, dtype=np.float64):
    """Positive eigen-part of a symmetric matrix as a float64 factor P (X⁺ = P Pᵀ) and
    its eigenvalues; only the positive eigenpairs are computed when few are expected.
    The eigendecomposition runs in ``dtype`` (float32: LAPACK ssyevr/ssyevd)."""
    r = M.shape[0]
    if rank_hint * 8 < r:
        w, U = _eigh(M, dtype, subset_by_value=(0.0, np.inf))
    else:
        w, U = _eigh(M, dtype)
    keep = w > 0.0
    w = w[keep].astype(np.float64)
    return U[:, keep].astype(np.float64) * np.sqrt(w), w


class PositivePartTracker:
    """Positive eigen-part of a sequence of slowly changing symmetric r × r matrices M_k,
    by a warm-started block-Krylov Rayleigh–Ritz step instead of a full eigendecomposition.

    The basis U (r × p, orthonormal) holds the previous step's Ritz vectors of the k
    positive eigenvalues plus ``guard`` Ritz vectors just below zero.  One step builds
    the block Krylov space span[U, M U], computes the Rayleigh–Ritz
    pairs (θ_i, v_i) of M on it and keeps those with θ_i > 0; the cost is a few r × r × p
    products plus a (2p)² eigenproblem — a fraction of a full LAPACK eigendecomposition
    when k << r.  The step is accepted when the Ritz residuals of the kept pairs satisfy
    ‖[M v_i − θ_i v_i]_i‖_F <= ``tol`` · ‖θ₊‖ (this residual bound tracks the relative
    Frobenius error of the projection within a factor ~2 on the KCR iterations), and at least
    ``guard // 2`` Ritz values are <= 0 (so the block reaches below the positive part).  Otherwise
    — and on every call with ``exact=True`` (the solver asks for it at each certificate, so a positive eigenvalue
    that appeared outside the tracked block is picked up) — it falls back to the LAPACK
    eigendecomposition and re-seeds U from it; a step that misses only the residual
    tolerance is first refined by up to ``refine`` more Rayleigh–Ritz steps from its own
    Ritz block, each on a block Krylov space of ``refine_blocks`` blocks (a deeper Krylov
    space than the first step's one block: see :meth:`_krylov_basis`).  ``n_exact`` /
    ``n_tracked`` count the two, ``n_rejected`` the tracked steps that fell back,
    ``n_refined`` the refinement steps of accepted ones.  Below ``min_size`` (``enabled``
    is False) every step is LAPACK's positive part (:func:`_psd_part`, with the last rank as
    the hint): :func:`kcr_pdhg` uses it that way below ``eig_min_size`` and for
    ``eig="exact"``.
    """

    def __init__(
        self,
        r: int,
        dtype=np.float64,
        guard: int = 10,
        tol: float = 1e-3,
        min_size: int = 200,
        refine: int = 2,
        refine_blocks: int = 8,
    ):
        self.r = int(r)
        self.refine = int(refine)
        self.refine_blocks = int(refine_blocks)
        self.dtype = dtype
        self.guard = int(guard)
        self.tol = float(tol)
        self.abs_tol = np.inf
        # below this size (or when the positive part is not small) LAPACK is as fast
        self.enabled = self.r >= int(min_size)
        self.U = None
        self.k = 0
        self.n_exact = 0
        self.n_tracked = 0
        self.n_rejected = 0
        self.n_refined = 0

    def _exact(self, M):
        self.n_exact += 1
        if not self.enabled:  # LAPACK only: the positive part, as _psd_part does
            P, w = _psd_part(M, self.k, self.dtype)
            self.k = w.size
            return P, w
        r = self.r
        p = self.k + self.guard
        w = None
        if 0 < p and 2 * p < r:  # (p = 0: no guard and no positive part yet)
            w, U = _eigh(M, self.dtype, subset_by_index=(r - p, r - 1))
            if w[0] > 0.0:  # the positive part may be larger than p
                w = None
        if w is None:
            w, U = _eigh(M, self.dtype)
        keep = w > 0.0
        self.k = int(keep.sum())
        self.U = np.ascontiguousarray(self._block(w, U), dtype=self.dtype) if self._trackable(self.k) else None
        wk = w[keep].astype(np.float64)
        return U[:, keep].astype(np.float64) * np.sqrt(wk), wk

    def _trackable(self, k):
        """A positive part of k pairs is small enough to track (else LAPACK is as fast)."""
        return k + self.guard < self.r // 3

    def _block(self, w, V):
        """The next basis: the Ritz / eigenvectors of the k positive values and ``guard``
        more below them (``w`` ascending)."""
        return V[:, w.size - min(w.size, self.k + self.guard) :]

    def _krylov_step(self, apply, blocks: int = 1):
        """Rayleigh–Ritz on the block Krylov space span[U, MU, …, M^blocks U] (each new
        block orthogonalized against all earlier ones by classical Gram–Schmidt twice)."""
        Q, MQ = self._krylov_basis(apply, blocks)
        H = (Q.T @ MQ).astype(np.float64)
        theta, Z = np.linalg.eigh(0.5 * (H + H.T))
        keep = theta > 0.0
        k = int(keep.sum())
        n_guard = theta.size - k
        Zd = Z.astype(self.dtype)
        V = Q @ Zd
        Zk = Zd[:, keep]
        R = MQ @ Zk - V[:, keep] * theta[keep].astype(self.dtype)
        res = float(np.linalg.norm(R))
        if k and np.max(np.abs(np.linalg.norm(V[:, keep], axis=0) - 1.0)) > 1e-2:
            res = np.inf  # Q lost orthonormality (an exhausted Krylov space): not a Ritz basis
        scale = float(np.linalg.norm(theta[keep]))
        return theta, V, keep, k, n_guard, res, scale

    def _krylov_basis(self, apply, blocks: int):
        """(Q, M Q) for the orthonormal basis Q of span[U, MU, …, M^blocks U]; blocks + 1
        products with M.  Why more than one block: M = Y − α(Aᵀ(τ∘s) + λD²) has a few
        small positive eigenvalues against a negative part up to a hundred times larger,
        so a one-block step (block subspace iteration with a Krylov extension) converges on
        the positive pairs at a rate near 1; a deeper Krylov space converges like Lanczos,
        on the square root of that relative gap."""
        U = self.U
        Qs, MQs = [U], []
        cur = U
        for _ in range(max(1, int(blocks))):
            Mc = apply(cur)
            MQs.append(Mc)
            Qc = Qs[0] if len(Qs) == 1 else np.hstack(Qs)
            B = Mc - Qc @ (Qc.T @ Mc)  # Qc is orthonormal: orthogonalize M·(last block) against it
            B, _ = np.linalg.qr(B)
            B -= Qc @ (Qc.T @ B)  # second pass (classical Gram–Schmidt twice)
            B, _ = np.linalg.qr(B)
            Qs.append(B)
            cur = B
        MQs.append(apply(cur))
        return np.hstack(Qs), np.hstack(MQs)

    def __call__(self, apply, build, exact: bool = False):
        """(P, w): float64 factor with P Pᵀ = P_PSD(M) and the positive eigenvalues w of
        M, given ``apply(V)`` = M V (r × p blocks in ``dtype``) and ``build()`` = M (for
        the LAPACK path).

        A step whose Ritz residual misses the tolerance is refined (up to ``refine``
        more Rayleigh–Ritz steps, each from the last Ritz block on a Krylov space of
        ``refine_blocks`` blocks: thick-restarted block Lanczos) before it falls back to
        LAPACK: a refinement costs ``refine_blocks`` + 1 products of M with r × p blocks,
        the fallback forms M and decomposes it (O(n²r + r³)).
        A block that no longer reaches below the positive part, or a positive part too
        large to track, falls back at once."""
        if exact or self.U is None:
            return self._exact(build())
        # a deeper space only while it stays well inside the r dimensions (at most r / 2 columns)
        deeper = max(1, min(self.refine_blocks, self.r // (2 * max(1, self.U.shape[1])) - 1))
        for attempt in range(1 + self.refine):
            blocks = 1 if attempt == 0 else deeper
            theta, V, keep, k, n_guard, res, scale = self._krylov_step(apply, blocks)
            deep = n_guard >= max(1, self.guard // 2)
            if not deep or not self._trackable(k):
                break
            self.k = k
            self.U = np.ascontiguousarray(self._block(theta, V))
            if k == 0 or res <= min(self.tol * scale, self.abs_tol):
                self.n_tracked += 1
                self.n_refined += attempt
                wk = theta[keep]
                return V[:, keep].astype(np.float64) * np.sqrt(wk), wk
        self.n_rejected += 1
        return self._exact(build())


def _max_similar_sq_norm(F, tau, return_matrix=False):
    G = F @ F.T
    Z = sq_distances_from_gram(G)
    np.fill_diagonal(Z, 0.0)
    sim = tau > 0
    zmax = float(np.max(Z[sim])) if np.any(sim) else 0.0
    return (zmax, Z) if return_matrix else zmax


def _lambda_min(G) -> float:
    """λ_min of a symmetric matrix (LAPACK ``?syevr`` for the one eigenvalue, divide and
    conquer when MRRR reports an internal error)."""
    try:
        return float(sla.eigh(G, eigvals_only=True, subset_by_index=(0, 0), check_finite=False, driver="evr")[0])
    except np.linalg.LinAlgError:
        return float(np.linalg.eigvalsh(G)[0])
