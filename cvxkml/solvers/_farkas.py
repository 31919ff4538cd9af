"""Farkas certificates of infeasible hard constraints, found from diverging multipliers
(shared by the Bregman, low-rank, von Neumann and generic dual solvers).

The constraints tr(Â_c X̂) <= t_c (equalities: = t_c), X̂ ⪰ 0 have no solution when some
d (>= 0 on inequalities, of either sign on equalities) gives Σ d_c Â_c ⪰ 0 and Σ d_c t_c < 0:
every feasible X̂ would give 0 <= tr(X̂ Σ d_c Â_c) <= Σ d_c t_c < 0.  When they are
infeasible the Lagrange dual is unbounded and a solver's multipliers grow along such a d;
:class:`FarkasWatch` (the projection solvers, over sweeps 8, 16, 32, …) and
:func:`growth_ray` (the dual solver, over iterations 1, 2, 4, …) recognise it from the
growth of the multipliers, restricted to the constraints that carry it, and hand it to the
declared problem, whose own test (``SpectralProblem.farkas_direction``) judges it.
"""

from __future__ import annotations

import numpy as np

from .._answer import FARKAS_EIG_TOL, FARKAS_LIN_TOL

__all__ = ["FARKAS_EIG_TOL", "FARKAS_LIN_TOL", "farkas_test", "FarkasWatch", "growth_ray", "hard_part"]


def farkas_test(G, sign, owner, d, lin):
    """Test d >= 0 (one entry per candidate constraint) as a Farkas certificate of the hard
    constraints tr(Â_c X) <= t_c, X ⪰ 0, with Â_c = Σ_k sign_k w_k w_kᵀ over the rows k
    of constraint c (``owner[k] = c``; a pair is one row, δ_c v vᵀ; a rank-two row
    u uᵀ − v vᵀ is two) and G the Gram matrix of all rows w_k (in the whitened
    coordinates, where the prior is I).  Returns (relative min eigenvalue of Σ d_c Â_c,
    relative Σ d_c t_c), normalised as ``SpectralProblem.farkas_direction``: by Σ d_c‖Â_c‖₂
    and Σ d_c|t_c|.

    The eigenvalues come from G^½ diag(sign·d) G^½ (k × k), which has the nonzero
    eigenvalues of Σ d_c Â_c = Wᵀ diag(sign·d) W and otherwise zeros.
    """
    G = 0.5 * (G + G.T)
    g, Q = np.linalg.eigh(G)
    Rh = (Q * np.sqrt(np.maximum(g, 0.0))) @ Q.T
    s = sign * d[owner]
    eig = float(np.linalg.eigvalsh(Rh @ (s[:, None] * Rh))[0])
    norms = np.zeros(d.size)
    diag = np.diag(G)
    for c in range(d.size):
        rows = np.flatnonzero(owner == c)
        if rows.size == 1:
            norms[c] = abs(diag[rows[0]])
        else:  # ‖u uᵀ − v vᵀ‖₂ from the 2 × 2 Gram block
            a, cc, b = diag[rows[0]], diag[rows[1]], G[rows[0], rows[1]]
            norms[c] = 0.5 * (abs(a - cc) + np.sqrt(max((a + cc) ** 2 - 4.0 * b * b, 0.0)))
    norm = float(d @ norms)
    lin_abs = float(d @ np.abs(lin))
    if not (norm > 0.0 and lin_abs > 0.0):
        return -np.inf, 0.0
    return min(eig, 0.0) / norm if eig < 0 else 0.0, float(d @ lin) / lin_abs


class FarkasWatch:
    """Recognise a diverging dual (infeasible hard constraints) from the multipliers at
    sweeps 8, 16, 32, … (see the module doc).

    Parameters
    ----------
    gram : callable
        ``gram(S)`` for candidate constraint indices S returns (G, sign, owner) for
        :func:`farkas_test`.
    lin : ndarray (m,)
        The right-hand sides t_c of the constraints written tr(Â_c X) <= t_c (a pair: δ_c·bound).
    hard : ndarray of bool (m,) or None
        Constraints that may carry a certificate (the hard ones); None: all.
    first : int
        The first check point (then doubling).
    max_candidates : int
        Larger supports are not tested (the k × k eigenproblems would cost more than the
        sweeps they save).

    ``check(sweeps, lam)`` is called at ``next`` sweeps; it returns None or the ray
    (dict: ``farkas_ray`` (m,), ``farkas_candidates``, ``farkas_test`` (eig, lin),
    ``farkas_sweeps``).
    """

    def __init__(self, gram, lin, hard=None, first=8, max_candidates=500):
        self.gram, self.lin = gram, np.asarray(lin, dtype=np.float64)
        self.hard = hard
        self.next = int(first)
        self.max_candidates = int(max_candidates)
        self.snaps = []  # λ at the last two check points (and 0 before)
        self.tested = 0

    def check(self, sweeps, lam):
        snap = np.array(lam, dtype=np.float64)
        self.next = 2 * max(int(sweeps), 1)
        self.snaps.append(snap)
        if len(self.snaps) < 3:
            return None
        prev, mid = self.snaps[-3], self.snaps[-2]
        self.snaps = self.snaps[-2:]
        grow, grow_prev = snap - mid, mid - prev
        if self.hard is not None:
            grow = np.where(self.hard, grow, 0.0)
        top = float(np.max(grow, initial=0.0))
        if not (top > 0.0 and np.isfinite(top)):
            return None
        tried = None
        for level in (1e-1, 1e-2, 1e-3):
            S = np.flatnonzero(grow >= level * top)
            if tried is not None and S.size == tried:
                continue
            tried = S.size
            if S.size > self.max_candidates:
                break
            d, dp = grow[S], np.maximum(grow_prev[S], 0.0)
            # growing at least as fast as in the window before, along the same direction
            if not (d.sum() >= 0.9 * dp.sum() and float(d @ dp) >= 0.9 * np.linalg.norm(d) * np.linalg.norm(dp)):
                continue
            if not np.all(np.isfinite(self.lin[S])):
                continue
            G, sign, owner = self.gram(S)
            for cand in (d, _null_part(G, sign, owner, d)):
                if cand is None:
                    continue
                self.tested += 1
                eig, lin = farkas_test(G, sign, owner, cand, self.lin[S])
                if eig >= -FARKAS_EIG_TOL and lin <= -FARKAS_LIN_TOL:
                    ray = np.zeros(snap.size)
                    ray[S] = cand / cand.sum()
                    return {
                        "farkas_ray": ray,
                        "farkas_candidates": S,
                        "farkas_test": (eig, lin),
                        "farkas_sweeps": int(sweeps),
                    }
        return None


def _null_part(G, sign, owner, d):
    """The part of d in the null space of d ↦ Σ d_c Â_c (least-squares projection), or None
    when it is not a non-negative direction.  The growth of conflicting constraints is such
    a direction up to a bounded error (their multipliers differ by the bounded part of
    M⁻¹); when the error is larger than the test's round-off tolerance — λ_c grow at the
    same rate but visited in a shuffled order — this removes it.  The Gram matrix of the
    Â_c in the Frobenius inner product is ⟨Â_c, Â_e⟩ = Σ_{k∈c, l∈e} s_k s_l G_kl²."""
    k = d.size
    P = np.zeros((owner.size, k))
    P[np.arange(owner.size), owner] = sign
    H = P.T @ (G * G) @ P
    w, Q = np.linalg.eigh(0.5 * (H + H.T))
    keep = w > 1e-12 * max(float(w[-1]), 0.0)
    if not np.any(keep):
        return None
    Qr = Q[:, keep]
    x = d - Qr @ (Qr.T @ d)
    if not np.all(np.isfinite(x)) or x.sum() <= 0:
        return None
    if np.min(x) < -1e-9 * np.max(x):
        return None
    return np.maximum(x, 0.0)


def hard_part(lam, hard, signed):
    """The hard multipliers of ``lam`` as a candidate ray: >= 0 on inequalities, signed on
    equalities, 0 elsewhere."""
    return np.where(hard, np.where(signed, lam, np.maximum(lam, 0.0)), 0.0)


def growth_ray(ops, lam, snap, hard, signed):
    """The multipliers λ, or their growth λ − ``snap`` since the last check (which points
    along the ray much sooner: λ = transient + s·ray), when either is a Farkas certificate of
    infeasibility of the hard constraints (:meth:`RankOneTerms.farkas_test`); else None."""
    now, grow = hard_part(lam, hard, signed), hard_part(lam - snap, hard, signed)
    # relative to Σ|d_c|‖Â_c‖_F: at most √k times the declared problem's Σ|d_c|‖Â_c‖₂ (k the
    # most terms of one constraint), so a ray this accepts, the declared problem accepts too
    eig_tol = FARKAS_EIG_TOL / np.sqrt(max(int(np.max(np.diff(ops.ptr), initial=1)), 1))
    for cand in (now, grow):
        if np.any(cand):
            mmin, lin = ops.farkas_test(cand)
            if mmin >= -eig_tol and lin <= -FARKAS_LIN_TOL:
                return cand / np.abs(cand).sum()
    # the ray's support: the fastest-growing multipliers, or the largest (twins of a
    # contradiction may grow at different rates, the damped Newton step splitting their sum)
    for v in (grow, now):
        top, tried = float(np.max(np.abs(v), initial=0.0)), -1
        for level in (0.5, 1e-1, 1e-2, 1e-3):
            S = np.flatnonzero(np.abs(v) >= level * top) if top > 0 else np.zeros(0, dtype=np.int64)
            if S.size == tried or S.size == 0:
                continue
            if S.size > _FARKAS_SUPPORT_MAX:
                break
            tried = S.size
            ray = _support_ray(ops, v, S)
            if ray is not None:
                return ray
    return None


#: supports larger than this are not tested by :func:`_support_ray` (its Gram eigenproblems)
_FARKAS_SUPPORT_MAX = 500


def _support_ray(ops, grow, S):
    """A Farkas ray supported on the constraints S: the growth there, or its part in the null
    space of d ↦ Σ d_c Â_c (the growth of conflicting constraints up to the bounded
    transient of the others; :func:`_null_part`), tested on the Gram
    matrix of their terms (:func:`farkas_test`).  An equality's
    negative growth is folded into the signs of its terms.  Returns the ray (m,) or None."""
    counts = np.diff(ops.ptr)[S]
    rows = np.concatenate([np.arange(ops.ptr[c], ops.ptr[c + 1]) for c in S])
    owner = np.repeat(np.arange(S.size), counts)
    flip = np.where(grow[S] < 0, -1.0, 1.0)
    Wr = np.sqrt(np.abs(ops.w[rows]))[:, None] * ops.U[rows]
    G = Wr @ Wr.T
    sign = np.sign(ops.w[rows]) * flip[owner]
    d = np.abs(grow[S])
    for cand in (d, _null_part(G, sign, owner, d)):
        if cand is None or not cand.sum() > 0:
            continue
        eig, lin = farkas_test(G, sign, owner, cand, ops.t[S] * flip)
        if eig >= -FARKAS_EIG_TOL and lin <= -FARKAS_LIN_TOL:
            ray = np.zeros(ops.m)
            ray[S] = flip * cand / cand.sum()
            return ray
    return None
