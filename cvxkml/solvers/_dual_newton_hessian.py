"""The Newton system of the generic dual solver (:mod:`cvxkml.solvers.dual_newton`): the
Daleckii–Krein divided differences Γ of the primal map x(μ) = f*_s'(μ), the Hessian on the
free constraints in the eigenbasis (products and the dense matrix, from a low-rank
factorization of Γ when it has one) and its diagonal."""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.linalg.blas import dsyrk

__all__ = ["divided_differences", "FreeHessian", "gamma_factors", "hessian_diagonal"]


def divided_differences(mu, x, xp):
    """Γ_kl = (x_k − x_l) / (μ_k − μ_l), the mean of f*_s'' on (near) ties."""
    dm = mu[:, None] - mu[None, :]
    tie = np.abs(dm) <= 1e-9 * np.maximum(1.0, np.maximum(np.abs(mu)[:, None], np.abs(mu)[None, :]))
    with np.errstate(all="ignore"):
        G = np.where(tie, 0.5 * (xp[:, None] + xp[None, :]), (x[:, None] - x[None, :]) / np.where(tie, 1.0, dm))
    return np.where(np.isfinite(G), G, 0.0)


class FreeHessian:
    """H_FF = [−∇²g]_FF restricted to the free constraints F, in the eigenbasis: with
    Z = U V, Vᵀ A(v) V = Z_Fᵀ diag(w v) Z_F and the adjoint of a term is w z_aᵀ(Γ ∘ ·)z_a,
    so a product costs O(|F| r²) — the terms of the other constraints are never touched."""

    def __init__(self, ops, st, Gam, free, quad, damp):
        self.k = int(np.count_nonzero(free))
        terms = np.flatnonzero(free[ops.owner])
        local = np.full(ops.m, -1, dtype=np.int64)
        local[free] = np.arange(self.k)
        self.own = local[ops.owner[terms]]
        self.ZF = np.ascontiguousarray(st.Z[terms])
        self.wF = ops.w[terms]
        self.Gam = Gam
        self.single = ops.single
        self.shift = quad[free] + damp

    def _sum(self, q):
        return q if self.single else np.bincount(self.own, weights=q, minlength=self.k)

    def matvec(self, v):
        coef = self.wF * v[self.own]
        B = (self.ZF.T * coef) @ self.ZF
        q = self.wF * np.einsum("ij,ij->i", self.ZF @ (self.Gam * B), self.ZF)
        return self._sum(q) + self.shift * v

    def dense(self, factors=None):
        """H_FF explicitly, upper triangle (the lower one is not referenced: :meth:`solve`).
        With ``factors`` = (σ, G), Γ ≈ G diag(σ) Gᵀ (see :func:`gamma_factors`),
        H_cd = Σ_s σ_s w_c w_d (z_cᵀ diag(g_s) z_d)²: O(s |F|² r), each Z diag(g_s) Zᵀ one or
        two symmetric rank-k updates (half a GEMM) into one |F| × |F| buffer, squared and
        summed in place (two |F| × |F| matrices live); without, O(|F|² r²/2) (small problems)."""
        Z = self.ZF
        if factors is None:
            # H_cd = Σ_{k<=l} c_kl Γ_kl (z_ck z_cl)(z_dk z_dl), c_kl = 2 off the diagonal: the
            # r(r + 1)/2 distinct products, and a symmetric rank-k update (a quarter of the
            # flops of the r² products in a GEMM)
            Ht = _product_gram(Z, self.Gam)
        else:
            Ht = None
            for sig, g in zip(*factors):
                # Z diag(g) Zᵀ = Y₊Y₊ᵀ − Y₋Y₋ᵀ over the columns of each sign of g
                P = _signed_gram(Z, g)
                np.multiply(P, P, out=P)
                if Ht is None:
                    Ht = P
                    Ht *= sig
                else:
                    P *= sig
                    Ht += P
                del P
            if Ht is None:
                Ht = np.zeros((Z.shape[0], Z.shape[0]), order="F")
        Ht *= self.wF[:, None]
        Ht *= self.wF[None, :]
        if not self.single:  # Σ over each constraint's terms, rows then columns (O(|F|²))
            Ht = np.triu(Ht)
            Ht += np.triu(Ht, 1).T
            order = np.argsort(self.own, kind="stable")
            starts = np.flatnonzero(np.r_[True, np.diff(self.own[order]) != 0])
            Ht = np.add.reduceat(np.add.reduceat(Ht[order][:, order], starts, axis=0), starts, axis=1)
        Ht[np.diag_indices_from(Ht)] += self.shift
        return Ht

    def solve(self, b, factors=None):
        """H_FF⁻¹ b with H_FF from :meth:`dense`: Cholesky on its upper triangle (H_FF is
        positive definite: a Gram part plus the positive damping), LU then least squares on
        the symmetrized matrix when round-off broke definiteness."""
        try:
            c = cho_factor(self.dense(factors), lower=False, overwrite_a=True, check_finite=False)
            return cho_solve(c, b, check_finite=False)
        except LinAlgError:
            pass
        Ht = np.triu(self.dense(factors))  # (formed again: the factorization overwrote it)
        Ht += np.triu(Ht, 1).T
        try:
            return np.linalg.solve(Ht, b)
        except np.linalg.LinAlgError:
            return np.linalg.lstsq(Ht, b, rcond=1e-13)[0]


def _signed_gram(Z, g):
    """The upper triangle of Z diag(g) Zᵀ = Y₊Y₊ᵀ − Y₋Y₋ᵀ (Y± the columns of Z with g ≷ 0,
    scaled by √|g|): one or two symmetric rank-k updates, half the flops of a GEMM."""
    P = np.zeros((Z.shape[0], Z.shape[0]), order="F")
    for sign, cols in ((1.0, g > 0), (-1.0, g < 0)):
        if np.any(cols):
            Y = Z[:, cols] * np.sqrt(np.abs(g[cols]))
            P = dsyrk(sign, Y.T, beta=1.0, c=P, trans=1, lower=0, overwrite_c=1)
    return P


def _product_gram(Z, Gam):
    """The upper triangle of Σ_{k<=l} c_kl Γ_kl (z_k ∘ z_l)(z_k ∘ z_l)ᵀ over the columns z of
    Z (c_kl = 2 off the diagonal, the r(r + 1)/2 distinct products): the products formed as
    rows of Zᵀ (contiguous copies), scaled by √|c Γ|, one symmetric rank-k update per sign."""
    iu, ju = np.triu_indices(Z.shape[1])
    g = Gam[iu, ju] * np.where(iu == ju, 1.0, 2.0)
    ZT = np.ascontiguousarray(Z.T)
    P = ZT[iu]
    P *= ZT[ju]
    P *= np.sqrt(np.abs(g))[:, None]
    H = np.zeros((Z.shape[0], Z.shape[0]), order="F")
    for sign, rows in ((1.0, g > 0), (-1.0, g < 0)):
        if np.any(rows):
            Y = P if rows.all() else P[rows]
            H = dsyrk(sign, Y.T, beta=1.0, c=H, trans=0, lower=0, overwrite_c=1)
    return H


def gamma_factors(Gam, rtol=1e-8, seed=0):
    """(σ, G) with Γ ≈ Σ_s σ_s g_s g_sᵀ to ``rtol``·‖Γ‖ (G's rows are the g_s), or None.

    Γ is the Loewner matrix of the smooth primal map x(μ) = f*_s'(μ) at the eigenvalues,
    numerically of low rank (5–14 terms at 1e-12 for LogDet — exactly one —, von Neumann and
    the symmetrized LogDet, whatever r): a randomized range finder with doubling rank,
    checked on fresh probes.  None when the rank exceeds r/4 (then the dense or matrix-free
    Hessian is as cheap)."""
    r = Gam.shape[0]
    scale = float(np.max(np.abs(Gam), initial=0.0))
    if scale == 0.0:
        return np.zeros(0), np.zeros((0, r))
    rng = np.random.default_rng(seed)
    k = 16
    while k <= max(r // 4, 1):
        Q = np.linalg.qr(Gam @ rng.standard_normal((r, min(k, r))))[0]
        B = Q.T @ Gam @ Q
        sig, W = np.linalg.eigh(0.5 * (B + B.T))
        # components below rtol are the round-off of the divided differences (LogDet's Γ is
        # x xᵀ exactly; computed, it carries 15–30 of them at 1e-12), each costing |F|² r
        keep = np.abs(sig) > 0.1 * rtol * np.max(np.abs(sig), initial=0.0)
        G = (Q @ W[:, keep]).T
        sig = sig[keep]
        probe = rng.standard_normal((r, 4))
        err = np.linalg.norm(Gam @ probe - G.T @ (sig[:, None] * (G @ probe)))
        if err <= rtol * scale * np.linalg.norm(probe) * np.sqrt(r):
            return sig, G
        k *= 2
    return None


def hessian_diagonal(ops, st, Gam, rows):
    """diag(−∇²g) of the constraints ``rows`` (bool, m), 0 elsewhere; exact for one-term
    constraints (Σ over the terms of each constraint otherwise, the cross terms left out: a
    preconditioner and a step scale)."""
    terms = np.flatnonzero(rows[ops.owner])
    Z2 = st.Z[terms] ** 2
    q = np.zeros(ops.U.shape[0])
    q[terms] = ops.w[terms] ** 2 * np.einsum("ij,ij->i", Z2 @ Gam, Z2)
    return ops.per_constraint(q)
