"""Trace-SSIKDR (Jain et al. 2012, §5.4, eq. 26–28, Algorithm 2, Lemma 10), derived for
exactly (26):  min_{K̃ ⪰ 0} τ tr K̃ + ‖K̃‖²_F  s.t. tr(C_i K) <= b_i,  K = K0^½ K̃ K0^½.

With a factor K0 = G Gᵀ (G n × r) the problem lives on r × r matrices K̂ (K = G K̂ Gᵀ, the
spectrum of K̂ is that of K0^-½KK0^-½); this replaces Lemma 10's eigenvectors of C K0: the
eigenpairs of C K0 with non-zero eigenvalue are those of GᵀCG (v = G u up to scaling).
For multipliers z >= 0 of the constraints tr(Â_c K̂) <= t_c (whitened), the Lagrangian is
minimized by

    K̂(z) = ½ U (μ − τ)₊ Uᵀ,   U diag(μ) Uᵀ = −Σ_c z_c Â_c,

(the factor ½ comes from the ‖·‖²_F term; the printed update (27) omits it), and the dual
g(z) = −Σ_k (μ_k − τ)₊²/4 − zᵀt is concave with ∇g_c = tr(Â_c K̂(z)) − t_c, Lipschitz with
L = ½ λ_max(Gram), Gram_cd = tr(Â_c Â_d).  The Uzawa / SVT iteration is projected gradient
ascent z ← max(z + δ ∇g(z), 0) — which, unlike the printed one-sided update
z ← z − δ max(viol, 0), can release a multiplier whose constraint is slack at the optimum —
here accelerated (FISTA with gradient restart) with δ = 1/L.  Only the eigenpairs with
μ_k > τ are needed: dense `eigh` for r <= ``dense_max``, else Lanczos (`eigsh`) on the
operator u ↦ −Σ z_c Â_c u with k grown until the k-th eigenvalue falls below τ.

Stopping: primal violation max_c (tr(Â_c K̂) − t_c)₊ <= tol_feas·scale, relative dual change
<= tol, and the duality gap (primal at K̂(z) minus g(z), meaningful when feasible) reported.
"""
from __future__ import annotations

import time

import numpy as np
from scipy.sparse.linalg import ArpackError, LinearOperator, eigsh

from .._config import blas_limit
from .bregman import BregmanResult, NOT_CONVERGED, OK

__all__ = ["trace_uzawa", "top_eigs_above"]


@blas_limit()
def top_eigs_above(matvec, dense, r, tau, dense_max=1024, k0=6):
    """Eigenpairs (μ, U) of a symmetric r × r operator with μ > τ.

    Dense ``eigh`` for r <= ``dense_max``; above, Lanczos (``eigsh``) from a fixed start
    vector, widening k until the smallest returned eigenvalue is <= τ, and dense ``eigh``
    once k passes r/4 (Lanczos for a quarter of the spectrum costs more than all of it).  Lanczos cannot start
    on an operator that maps everything to zero (ARPACK error -9, 'Starting vector is zero':
    Trace-SSIKDR at z = 0 on n >= 257 points); that operator has no eigenvalue above τ >= 0.
    When ARPACK fails otherwise, the dense matrix is used if ``dense`` is given."""
    if dense is not None and r <= dense_max:
        mu, U = np.linalg.eigh(dense())
        keep = mu > tau
        return mu[keep], U[:, keep]
    v0 = np.random.default_rng(0).standard_normal(r)
    if not np.any(matvec(v0)):                       # the zero operator (z = 0)
        return np.zeros(0), np.zeros((r, 0))
    op = LinearOperator((r, r), matvec=matvec, dtype=float)
    k = min(k0, r - 1)
    while True:
        try:
            mu, U = eigsh(op, k=k, which="LA", tol=1e-12, v0=v0)
        except ArpackError:
            if dense is None:
                raise
            mu, U = np.linalg.eigh(dense())
            keep = mu > tau
            return mu[keep], U[:, keep]
        if mu.min() <= tau or k >= r - 1:
            keep = mu > tau
            return mu[keep], U[:, keep]
        k = min(2 * k, r - 1)
        if dense is not None and 4 * k > r:          # many eigenvalues above τ: Lanczos with
            mu, U = np.linalg.eigh(dense())          # k ~ r is far slower than one dense eigh
            keep = mu > tau
            return mu[keep], U[:, keep]


@blas_limit()
def trace_uzawa(V, delta, t, tau, tol=1e-8, tol_feas=1e-7, max_iter=20_000, dense_max=1024,
                z0=None):
    """Solve the whitened Trace-SSIKDR dual for rank-one constraints Â_c = δ_c v_c v_cᵀ
    (rows v_c of V, targets t_c); returns a BregmanResult with matrix = K̂, lam = z and
    extra = {eigenvalues, eigenvectors (kept part), gap, iterations}."""
    V0 = np.ascontiguousarray(V, dtype=float)
    m, r = V0.shape
    delta = np.asarray(delta, dtype=float)
    # Jacobi scaling: constraint c divided by ‖v_c‖² (same feasible set; z_c scales by ‖v_c‖²)
    nrm2 = np.maximum(np.einsum("ij,ij->i", V0, V0), np.finfo(float).tiny)
    V = V0 / np.sqrt(nrm2)[:, None]
    t = np.asarray(t, dtype=float) / nrm2
    Gram = (V @ V.T) ** 2
    L = 0.5 * float(np.linalg.eigvalsh(Gram)[-1]) if m else 1.0
    step = 1.0 / max(L, np.finfo(float).tiny)
    z = np.zeros(m) if z0 is None else np.maximum(np.asarray(z0, dtype=float), 0.0) * nrm2
    y = z.copy()
    theta = 1.0
    scale = max(1.0, float(np.max(np.abs(t * nrm2)))) if m else 1.0

    # with m < r constraints, −Σ z_c Â_c = −Vᵀ diag(w) V = Q (−R diag(w) Rᵀ) Qᵀ (Vᵀ = QR, Q r × m
    # orthonormal): its eigenpairs are those of the m × m middle matrix, mapped by Q — exact
    QR = np.linalg.qr(V.T) if 0 < m < r else None

    def eigs_above(w):
        if QR is not None:
            Q, R = QR
            mu, u = np.linalg.eigh(-(R * w) @ R.T)
            keep = mu > tau
            return mu[keep], Q @ u[:, keep]
        return top_eigs_above(lambda u: -(V.T @ (w * (V @ u))), lambda: -(V.T * w) @ V, r, tau,
                              dense_max)

    def primal(zz):
        w = delta * zz
        mu, U = eigs_above(w)
        s = 0.5 * (mu - tau)
        P = V @ U                                                # m × k
        vals = delta * ((P * P) @ s)                             # tr(Â_c K̂)
        g = -float(np.sum((mu - tau) ** 2)) / 4.0 - float(zz @ t)
        return vals - t, g, mu, U, s

    t0 = time.perf_counter()
    grad, g_y, *_ = primal(y)
    code = NOT_CONVERGED
    change = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        z_new = np.maximum(y + step * grad, 0.0)
        theta_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta * theta))
        mom = (theta - 1.0) / theta_new
        y_new = z_new + mom * (z_new - z)
        # gradient restart (O'Donoghue & Candès): drop momentum when it points downhill
        if (z_new - z) @ (y - z_new) > 0:
            y_new = z_new.copy()
            theta_new = 1.0
        den = float(np.sum(np.abs(z_new)) + np.sum(np.abs(z)))
        change = float(np.sum(np.abs(z_new - z))) / den if den > 0 else 0.0
        z, y, theta = z_new, y_new, theta_new
        grad, _, *_ = primal(y)
        if change <= tol or it % 25 == 0:
            res_z, g_z, mu, U, s = primal(z)
            viol = float(np.max(np.maximum(res_z * nrm2, 0.0), initial=0.0))   # unscaled units
            if viol <= tol_feas * scale and change <= tol:
                code = OK
                break
    elapsed = time.perf_counter() - t0
    res_z, g_z, mu, U, s = primal(z)
    Kh = (U * s) @ U.T
    return BregmanResult(0.5 * (Kh + Kh.T), z / nrm2, np.zeros(0), it, change, code, -1, elapsed,
                         extra={"eigenvalues": mu, "rank": int(mu.size), "dual_value_whitened": g_z,
                                "step": step, "solver": "uzawa-fista"})
