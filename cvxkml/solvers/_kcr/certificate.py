"""The certificate of the KCR solver: the objective at the primal point, the Lagrangian lower
bound of the dual iterate, its balanced and polished variants (Sriperumbudur et al. 2008,
eq. 9)."""

from __future__ import annotations

import numpy as np

from ...formulas.kcr import dual_lower_bound, dual_objective, h_upper_bound, kcr_objective, sq_distances_from_gram
from .kernels import _adjoint, _pair_laplacian_apply
from .psd import _eigh, _lambda_min
from .state import _Setup


def balance_dual(s, tau, F, Zsq=None):
    """Dual weights s' ∈ [0, 1]^{n×n} with Σ tau∘s' = 0 where s can be cheaply moved there,
    and the change of Aᵀ(tau∘s): returns (s', ΔG) with Aᵀ(tau∘s') = Aᵀ(tau∘s) − ΔG.

    The certificate (:func:`cvxkml.formulas.kcr.dual_lower_bound`) charges a positive
    S = Σ tau∘s at the bandwidth bound h_max (a large number) and rewards a negative one
    at h_min only, while an optimal dual has S = 0 (h̃* > h_min).  PDHG's dual iterate
    has S ≈ ±1e-3 … 1e-1 late in a solve, which at h_max ~ 1e4 costs far more than the
    target gap.  The repair, in order:

    * S < 0: raise the self weights s_ii (z_ii = 0, so Aᵀ is unchanged) up to their row
      maximum (so Σ_i c_i max_j s_ij is unchanged) until S = 0 — a gains what S loses;
    * S > 0: lower the self weights (Aᵀ unchanged), then the similar off-diagonal weights
      in the order of increasing ‖z_ij‖² (the smallest change of Aᵀ per unit of S),
      until S = 0; ΔG = Σ δ_ij z_ij z_ijᵀ over the lowered pairs (exact).

    Any s' in the box gives a valid lower bound (weak duality); the caller recomputes
    (a, S) and λ_min for s' and keeps the better of the two bounds.  ``Zsq`` is the
    n × n matrix of ‖z_ij‖² = ‖f_i − f_j‖² (computed from F when None).
    """
    s2 = np.array(s, dtype=np.float64)
    n = s2.shape[0]
    r = F.shape[1]
    S = float(np.sum(tau * s2))
    diag = np.arange(n)
    dG = np.zeros((r, r))
    if S < 0.0:
        room = s2.max(axis=1) - s2[diag, diag]
        tot = float(room.sum())
        if tot > 0.0:
            s2[diag, diag] += room * min(1.0, -S / tot)
        return s2, dG
    if S == 0.0:
        return s2, dG
    d = s2[diag, diag].copy()
    take = min(float(d.sum()), S)
    if take > 0.0:
        s2[diag, diag] = d * (1.0 - take / float(d.sum()))
        S -= take
    if S <= 0.0:
        return s2, dG
    I, J = np.nonzero((tau > 0) & (s2 > 0.0) & ~np.eye(n, dtype=bool))
    if I.size == 0:
        return s2, dG
    if Zsq is None:
        Zsq = sq_distances_from_gram(F @ F.T)
    q = Zsq[I, J]  # ‖z_ij‖², no pair vectors formed
    order = np.argsort(q, kind="stable")
    w = s2[I[order], J[order]]
    cum = np.cumsum(w)
    m = int(np.searchsorted(cum, S)) + 1  # pairs lowered (the last partly)
    m = min(m, order.size)
    delta = w[:m].copy()
    if cum[m - 1] > S:
        delta[m - 1] -= cum[m - 1] - S
    sel = order[:m]
    s2[I[sel], J[sel]] = w[:m] - delta
    Zs = F[I[sel]] - F[J[sel]]
    dG = Zs.T @ (delta[:, None] * Zs)
    return np.clip(s2, 0.0, 1.0), 0.5 * (dG + dG.T)


# --------------------------------------------------------------------------- dual polishing
def polish_dual(F, tau, s, G, P, U, lam, eps=0.3, max_pairs=None, n_neg=5, rounds=5):
    """Dual points for the certificate that make the dual slack Z = λI + Aᵀ(τ∘s) vanish on
    the range of the primal iterate (complementary slackness Z X = 0) and Σ τ∘s = 0,
    by least-norm changes of the weights of pairs at their hinge's kink.

    PDHG's dual iterate lags its primal one: late in a solve λ_min(Z) is a little below 0
    in the directions of range(X), and the bound pays for it in full
    (:func:`cvxkml.formulas.kcr.dual_lower_bound`).  At an optimum Z* ⪰ 0 with
    Z* X* = 0, and the pairs whose inner hinge is at its kink (u_ij = 0) carry the free
    part of s*.  Each round takes Q = an orthonormal basis of [P, the eigenvectors of the
    (at most ``n_neg``) negative eigenvalues of Z] and solves for a change δ of the weights
    of the ``max_pairs`` pairs with the smallest |u_ij| among the rows whose outer hinge
    is active (t_i = max_j s_ij = 1), of least norm, with
    QᵀZ(s + δ)Q = its positive part (0 on range(P) in the first round) and Σ τ∘(s + δ) = 0,
    clipped to the box [0, 1] (a few active-set passes).  The equations are linear in δ:
    Aᵀ(τ∘δ) = Σ_q δ_q τ_q z_q z_qᵀ.  Yields (s', λ_min(Aᵀ(τ∘s'))) for each round; every
    s' is in the box, so every bound computed from it is valid whatever the rounds did.

    Parameters
    ----------
    F : (n, r) array
        Whitened features (the X coordinates).
    tau, s : (n, n) arrays
        Pair labels and the dual point to start from.
    G : (r, r) array
        Aᵀ(τ∘s) in the X coordinates.
    P : (r, k) array
        Factor of the primal iterate (X = P Pᵀ).
    U : (n, n) array
        u = 1 + τ∘(D − h̃) at that primal point.
    lam : float
        λ.
    eps, max_pairs, n_neg, rounds :
        Kink band |u| < ``eps``; pairs used (default max(4 000, 4n)); negative directions
        added per round; rounds.
    """
    n, r = F.shape
    max_pairs = max(4000, 4 * n) if max_pairs is None else int(max_pairs)
    on = s.max(axis=1) >= 1.0
    cand = np.flatnonzero((on[:, None] & (np.abs(U) < eps)).ravel())
    if cand.size == 0 or P.shape[1] == 0:
        return
    if cand.size > max_pairs:
        cand = cand[np.argpartition(np.abs(U.ravel()[cand]), max_pairs - 1)[:max_pairs]]
    I, J = np.divmod(cand, n)
    tq = tau[I, J]
    Zq = F[I] - F[J]
    s = s.copy()
    G = G.copy()
    Y = np.empty((n, r))
    for rnd in range(int(rounds)):
        Zm = G + lam * np.eye(r)
        if rnd > 0:  # the first round needs no eigenpairs of Z (Q = range(P))
            w, V = _eigh(0.5 * (Zm + Zm.T), np.float64, subset_by_index=(0, min(n_neg, r) - 1))
            yield s.copy(), float(w[0]) - lam  # λ_min(Aᵀ(τ∘s)) of the previous round's point
        B = np.hstack([P, V[:, w < 0.0]]) if rnd > 0 else P
        Q = np.linalg.qr(B)[0]
        QZQ = Q.T @ Zm @ Q
        QZQ = 0.5 * (QZQ + QZQ.T)
        if rnd > 0:
            wq, Vq = np.linalg.eigh(QZQ)
            target = (Vq * np.maximum(wq, 0.0)) @ Vq.T
        else:
            target = np.zeros_like(QZQ)
        iu = np.triu_indices(Q.shape[1])
        g = Zq @ Q
        A = np.vstack([(tq[:, None] * (g[:, iu[0]] * g[:, iu[1]])).T, tq[None, :]])
        b = np.concatenate([(target - QZQ)[iu], [-float(np.sum(tau * s))]])
        d = _box_least_norm(A, b, -s[I, J], 1.0 - s[I, J])
        s[I, J] += d
        np.clip(s, 0.0, 1.0, out=s)
        Y[:] = 0.0
        _pair_laplacian_apply(I, J, d * tq, F, Y)
        dG = F.T @ Y
        G += 0.5 * (dG + dG.T)
    Zm = G + lam * np.eye(r)
    yield s, _lambda_min(0.5 * (Zm + Zm.T)) - lam


def _box_least_norm(A, b, lo, hi, passes=4):
    """δ of least norm with A δ = b (least squares when inconsistent), lo <= δ <= hi, by
    a few passes of: solve on the entries not at a bound, clip."""
    d = np.zeros(A.shape[1])
    free = np.ones(A.shape[1], bool)
    res = b.copy()
    for _ in range(passes):
        Af = A[:, free]
        M = Af @ Af.T
        y = np.linalg.lstsq(M + 1e-12 * np.trace(M) / max(1, M.shape[0]) * np.eye(M.shape[0]), res, rcond=None)[0]
        d[free] += Af.T @ y
        np.clip(d, lo, hi, out=d)
        res = b - A @ d
        free = (d > lo) & (d < hi)
        if not free.any():
            break
    return d


# --------------------------------------------------------------------------- PDHG: certificate
class _Certificate:
    """The best primal point and the best lower bound seen so far, both in the X
    coordinates, in float64 (objective by :func:`cvxkml.formulas.kcr.kcr_objective`,
    bound by :func:`cvxkml.formulas.kcr.dual_lower_bound`)."""

    def __init__(self, su: _Setup, h0: float):
        self.su = su
        self.f = np.inf
        self.P = np.zeros((su.r, 0))
        self.h = h0
        self.g = -np.inf
        self.s = np.zeros((su.n, su.n))
        self.theta = 0.0
        self._W = np.empty((su.n, su.n))
        self._deg = np.empty(su.n)
        self.polish_start = 0.0  # polishing off
        self.polish_wait, self.polish_spacing = 1, 1

    @property
    def gap(self) -> float:
        return (self.f - self.g) / max(1.0, abs(self.f))

    def polish_due(self, gap: float) -> bool:
        """Polish below the ``polish`` gap at the 1st, 2nd, 4th, 8th, then every 8th
        certificate after the previous polish (a rule of iteration counts, not of clock
        time, so a solve is reproducible)."""
        if gap > self.polish_start:
            return False
        self.polish_wait -= 1
        if self.polish_wait > 0:
            return False
        self.polish_spacing = min(2 * self.polish_spacing, 8)
        self.polish_wait = self.polish_spacing
        return True

    def adjoint(self, s) -> np.ndarray:
        """Aᵀ(τ∘s) in the iteration's coordinates (F D), float64."""
        return _adjoint(self.su.Fs, s, self.su.tau, self._W, self._deg)

    def check(self, P, Bn, hn, sn, Gn) -> float:
        """Evaluate the primal point Y = P Pᵀ (B its Gram matrix) and the dual point s (Gn
        its Aᵀ(τ∘s) in the iteration's coordinates); returns the certified relative gap."""
        su = self.su
        Px = su.d[:, None] * P  # X = Px Pxᵀ
        f = kcr_objective(sq_distances_from_gram(Bn), hn, su.tau, su.c, float(np.sum(Px * Px)), su.lam)
        if f < self.f:
            self.f, self.P, self.h = f, Px, hn
        if su.scaling > 0.0:
            Gn = Gn / np.outer(su.d, su.d)  # Aᵀ(τ∘s) in the X coordinates
        self._last = (Px, Bn, hn, sn, Gn)  # what :meth:`polish` starts from
        R = self.f / su.lam
        h_max = h_upper_bound(R, su.zmax)
        a, S = dual_objective(sn, su.tau, su.c)
        lmin = None
        if self._may_improve(a, S, h_max):
            lmin = _lambda_min(Gn)
            self._offer(sn.copy(), *dual_lower_bound(a, S, lmin, su.lam, R, su.h_min, h_max))
        if su.balance and S != 0.0:  # the same s with Σ τ∘s moved to 0
            s2, dG = balance_dual(sn, su.tau, su.F, su.Zsq)
            a2, S2 = dual_objective(s2, su.tau, su.c)
            if self._may_improve(a2, S2, h_max):
                lmin2 = _lambda_min(Gn - dG) if dG.any() or lmin is None else lmin
                self._offer(s2, *dual_lower_bound(a2, S2, lmin2, su.lam, R, su.h_min, h_max))
        return self.gap

    def _may_improve(self, a: float, S: float, h_max: float) -> bool:
        """Whether the bound of a dual point with (a, S) can beat the best one: for θ ∈ [0, 1]
        g(θ) <= θ (a − S h_edge) <= max(0, a − S h_edge) whatever λ_min is, so below the best
        bound (by more than rounding) its λ_min — an r³ eigenvalue problem — is not needed."""
        h_edge = self.su.h_min if S <= 0.0 else h_max
        best = max(0.0, a - S * h_edge)
        return best >= self.g - 1e-9 * max(1.0, abs(self.g), abs(a))

    def _offer(self, s, g, theta):
        if g > self.g:
            self.g, self.s, self.theta = g, s, theta

    def polish(self, tol: float) -> float:
        """Improve the bound from the dual point of the last :meth:`check` by
        :func:`polish_dual` (each round's point is offered; stops once a round gains less
        than 5 % of the gap); returns the certified gap."""
        su = self.su
        Px, Bn, hn, sn, Gn = self._last
        U = 1.0 + su.tau * (sq_distances_from_gram(Bn) - hn)
        R = self.f / su.lam
        h_max = h_upper_bound(R, su.zmax)
        prev = self.gap
        for s2, lmin in polish_dual(su.F, su.tau, sn, Gn, Px, U, su.lam):
            a, S = dual_objective(s2, su.tau, su.c)
            self._offer(s2, *dual_lower_bound(a, S, lmin, su.lam, R, su.h_min, h_max))
            if self.gap <= tol or self.gap > 0.95 * prev:
                break
            prev = self.gap
        return self.gap
