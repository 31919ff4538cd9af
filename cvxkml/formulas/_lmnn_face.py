"""The tie-break of LMNN's zero face: the least-norm metric among those with F = 0 — the one
place the selection rule is defined and computed (Wang, Do, Woznica & Kalousis 2011, eq. 18).

Why a rule is needed.  When the target pull G(0) = (1 − γ) Σ_S u_ij u_ijᵀ (whitened
coordinates, u_ij = u_i − u_j) is singular on a space N that every impostor pair of a
triplet reaches — e.g. kernel or NR-MKL LMNN with a full-rank kernel, where N holds the
class-constant directions — the optimum is F* = 0 and it is attained by a whole set of
metrics, the *zero face*

    (TB1)   𝓕₀ = {X̂ ⪰ 0 :  u_ijᵀ X̂ u_ij = 0 for every target entry (i, j) ∈ S,
                              u_ilᵀ X̂ u_il ≥ 1 for every triplet (i, j, l)},

(with the slack of eq. 18 eliminated, F(X̂) = 0 exactly when the pull is 0 and every hinge
[1 + d(i, j) − d(i, l)]₊ is 0).  Which member a solver returns depends on its path (start,
iteration order, round-off), and so does the 1-NN accuracy of the learned map.  The rule
selects the member of least Frobenius norm,

    (TB2)   X̂* = argmin { ½‖X̂‖_F² : X̂ ∈ 𝓕₀ }.

‖X̂‖_F = ‖Z A Zᵀ‖_F is the norm of the Gram matrix of the training points in the learned
metric (Z A Zᵀ = U X̂ Uᵀ, U orthonormal), a quantity of the data, not of a parameterization.
The objective is strictly convex and 𝓕₀ convex and closed, so X̂* is unique: a function of
the data, the targets and γ alone.

Reduction.  X̂ ⪰ 0 with u_ijᵀX̂u_ij = 0 means X̂u_ij = 0, so range X̂ ⊆ N; with V_N an
orthonormal basis of N (:func:`cvxkml.formulas.lmnn.pull_basis`), X̂ = V_N Y V_Nᵀ,
‖X̂‖_F = ‖Y‖_F, and with b_p = V_Nᵀ u_p for the distinct impostor pairs p = (i, l),

    (TB3)   Y* = argmin { ½‖Y‖_F² :  b_pᵀ Y b_p ≥ 1  for every impostor pair p },  Y ⪰ 0.

Dual.  With multipliers λ_p ≥ 0 the Lagrangian ½‖Y‖² − Σ λ_p (b_pᵀYb_p − 1) is minimized
over all symmetric Y by Y(λ) = Σ_p λ_p b_p b_pᵀ, which is PSD: the PSD constraint of (TB3)
is inactive, (TB3) is a least-distance quadratic program, and its dual is

    (TB4)   g(λ) = Σ_p λ_p − ½‖Y(λ)‖_F²,   max over λ ≥ 0;   Y* = Y(λ*).

It is solved on a working set of pairs by Lawson & Hanson's least-distance programming
through non-negative least squares (:func:`scipy.optimize.nnls`, a finite active-set
method), pairs violated by the working set's solution joining it until none is.

Certificate (recomputed from λ alone).  Y = Y(λ), m = min_p b_pᵀYb_p over *every* impostor
pair; Y/m is feasible for (TB3), so with f = ½‖Y‖²/m² and g = g(λ)

    (TB5)   g ≤ ½‖Y*‖² ≤ f,    and    ‖Y/m − Y*‖_F ≤ √(2 (f − g))

(strong convexity: f(Y) − f(Y*) ≥ ½‖Y − Y*‖² for feasible Y).  The selection is certified
when (f − g)/f ≤ :data:`FACE_RTOL`, i.e. Y/m is within √(2 FACE_RTOL)·‖Y/m‖_F of the unique
Y*: two solves that reach the zero face by different paths return the same metric to that
relative distance.  The face is empty (F* > 0, no tie to break) when G(0) is positive
definite or some impostor pair does not reach N (:func:`cvxkml.formulas.lmnn.rows_reach`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import nnls

from ._lmnn_triplets import LMNNTriplets
from .lmnn import pull_basis, reach_test

__all__ = ["FACE_RTOL", "FACE_MAX_DIM", "FaceSelection", "min_norm_on_zero_face"]

#: relative gap (f − g)/f of (TB5) at which the least-norm selection counts as certified: the
#: returned Y is then within √(2·FACE_RTOL) ≈ 1.4e-5 of Y* relative to its norm
FACE_RTOL = 1e-10
#: the largest dim N (Y is dim N × dim N, one unknown per entry of its upper triangle) the
#: working-set solve takes
FACE_MAX_DIM = 120
#: pairs per chunk when b_pᵀYb_p and ‖u_p‖² are evaluated over every impostor pair
_CHUNK = 20_000


@dataclass
class FaceSelection:
    """The least-norm member of the zero face (TB2) and its certificate (TB5).

    Attributes
    ----------
    applies : bool
        Whether the zero face is non-empty (F* = 0 is attained); False: ``reason`` says why
        and the other fields are empty.
    certified : bool
        (f − g)/f <= ``rtol``.
    X : ndarray (r × r) or None
        X̂ = V_N (Y/m) V_Nᵀ, feasible for (TB1) (to round-off in the target distances).
    gap : float
        (f − g)/f of (TB5).
    distance_bound : float
        √(2 (f − g)) / ‖Y/m‖_F: certified relative distance of X̂ to the unique X̂*.
    """

    applies: bool
    reason: str = ""
    certified: bool = False
    X: np.ndarray | None = None
    gap: float = float("inf")
    distance_bound: float = float("inf")
    norm: float = float("nan")
    face_dim: int = 0
    pairs: int = 0
    working_pairs: int = 0
    rounds: int = 0
    info: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """The plain-data record of the selection (``Solution.info["tie_break"]``)."""
        out = {"rule": "min-norm", "applied": False, "reason": self.reason}
        if self.applies:
            out.update(
                certified=bool(self.certified),
                gap=float(self.gap),
                distance_bound=float(self.distance_bound),
                norm=float(self.norm),
                face_dim=int(self.face_dim),
                pairs=int(self.pairs),
                working_pairs=int(self.working_pairs),
                rounds=int(self.rounds),
            )
        return out


def _svec(B) -> np.ndarray:
    """Rows svec(b bᵀ) of the rows b of B, with ⟨svec(b bᵀ), svec(Y)⟩ = bᵀYb and
    ‖svec(Y)‖ = ‖Y‖_F (off-diagonal entries times √2)."""
    q = B.shape[1]
    iu, ju = np.triu_indices(q)
    w = np.where(iu == ju, 1.0, np.sqrt(2.0))
    return B[:, iu] * B[:, ju] * w


def _unsvec(y, q) -> np.ndarray:
    iu, ju = np.triu_indices(q)
    w = np.where(iu == ju, 1.0, 1.0 / np.sqrt(2.0))
    Y = np.zeros((q, q))
    Y[iu, ju] = y * w
    Y[ju, iu] = y * w
    return Y


def _quad(B, Y) -> np.ndarray:
    """b_pᵀ Y b_p of every row of B, in chunks."""
    out = np.empty(B.shape[0])
    for s in range(0, B.shape[0], _CHUNK):
        Bc = B[s : s + _CHUNK]
        out[s : s + _CHUNK] = np.einsum("ij,ij->i", Bc @ Y, Bc)
    return out


def _impostor_pairs(U, trip: LMNNTriplets, VN):
    """(b_p = V_Nᵀ u_p for every distinct impostor pair p in ascending pair order, whether each
    reaches N): reach as in :func:`cvxkml.formulas.lmnn.rows_reach` with its end points, ‖u_p‖²
    in chunks."""
    pairs = np.unique(trip.ti)
    UN = U @ VN
    i, l = trip.pi[pairs], trip.pj[pairs]
    B = UN[i] - UN[l]
    full = np.empty(pairs.size)
    for s in range(0, pairs.size, _CHUNK):
        Dc = U[i[s : s + _CHUNK]] - U[l[s : s + _CHUNK]]
        full[s : s + _CHUNK] = np.einsum("ij,ij->i", Dc, Dc)
    on_null = np.einsum("ij,ij->i", B, B)
    sq = np.einsum("ij,ij->i", U, U)
    return B, reach_test(on_null, full, sq[i] + sq[l], U.shape[1])


def _ldp(G) -> np.ndarray | None:
    """Multipliers λ ≥ 0 of min ½‖y‖² s.t. G y ≥ 1 (rows of G), y = Gᵀλ, by Lawson & Hanson's
    least-distance programming: u = argmin_{u ≥ 0} ‖E u − e‖, E = [Gᵀ; 1ᵀ], e = (0, …, 0, 1);
    y = −r_{1:m}/r_{m+1} with r = E u − e, i.e. λ = u / (1 − 1ᵀu).  None if infeasible."""
    m = G.shape[1]
    E = np.vstack([G.T, np.ones((1, G.shape[0]))])
    e = np.zeros(m + 1)
    e[-1] = 1.0
    u, _ = nnls(E, e, maxiter=50 * (m + 1 + G.shape[0]))
    denom = 1.0 - float(u.sum())
    if not denom > 0.0:
        return None
    return u / denom


def min_norm_on_zero_face(
    U, trip: LMNNTriplets, gamma: float, rtol: float = FACE_RTOL, max_rounds: int = 60
) -> FaceSelection:
    """The least-norm member X̂* of the zero face (TB1–TB2), with its certificate (TB5).

    Parameters
    ----------
    U : ndarray of shape (n, r)
        Orthonormal features (the whitened coordinates of the problem).
    trip : LMNNTriplets
        Every triplet (the impostor pairs are read from ``trip.ti``; the triplet order does
        not matter).
    gamma : float
        γ of eq. 18 (scales the pull, not the face).
    rtol : float, default FACE_RTOL
        The certified relative gap (f − g)/f of (TB5).
    max_rounds : int, default 60
        Working-set rounds of (TB4).

    Returns
    -------
    FaceSelection
        ``applies`` False when the face is empty (F* > 0); else X̂, the certificate and the
        working-set counts.
    """
    U = np.ascontiguousarray(U, dtype=np.float64)
    basis = pull_basis(U, trip, gamma)
    if basis is None:
        return FaceSelection(False, "no target pull: every metric has pull 0")
    VN = basis.VN
    q = int(VN.shape[1])
    if q == 0:
        return FaceSelection(False, "F* > 0: the target pull G(0) is positive definite, no metric has F = 0")
    if q > FACE_MAX_DIM:
        return FaceSelection(True, f"the zero face has dimension {q} > {FACE_MAX_DIM}", face_dim=q)
    B, reach = _impostor_pairs(U, trip, VN)
    if B.shape[0] == 0:
        return FaceSelection(False, "no triplets")
    if not np.all(reach):
        return FaceSelection(
            False,
            f"F* > 0: {int(np.sum(~reach))} impostor pairs do not reach the null space of G(0), so no metric has F = 0",
        )
    beta = np.einsum("ij,ij->i", B, B)
    s = 1.0 / float(beta.min())  # ‖Y*‖_F ∈ [s, √q·s]: the scaled problem has ‖Ỹ*‖ ∈ [1, √q]
    A = _svec(B)
    m = A.shape[1]
    order = np.lexsort((np.arange(beta.size), beta))  # most binding first, ties by pair order
    W = order[: min(order.size, max(2 * m, 20))]
    sel = FaceSelection(True, face_dim=q, pairs=int(B.shape[0]))
    best = None
    for rnd in range(1, max_rounds + 1):
        lam_t = _ldp(s * A[W])
        if lam_t is None:
            sel.reason = "the working-set least-distance program was found infeasible"
            break
        lam = (s * s) * lam_t
        Y = _unsvec(A[W].T @ lam, q)
        d = _quad(B, Y)
        mmin = float(d.min())
        if mmin > 0.0:  # else a pair outside the working set sees none of Y: it joins below
            f = 0.5 * float(np.sum(Y * Y)) / mmin**2
            g = float(lam.sum()) - 0.5 * float(np.sum(Y * Y))
            gap = max(0.0, f - g) / f
            if best is None or gap < best[0]:
                best = (gap, Y / mmin, f, g, rnd, W.size)
            if gap <= rtol:
                break
        viol = np.flatnonzero(d < 1.0)
        viol = viol[~np.isin(viol, W)]
        if viol.size == 0:
            sel.reason = "no pair left to add, gap above tolerance (round-off)"
            break
        add = viol[np.lexsort((viol, d[viol]))][: max(m, 20)]
        W = np.concatenate([W, add])
    if best is None:
        sel.reason = sel.reason or "every working set left an impostor pair at distance 0"
        return sel
    gap, Yf, f, g, rnd, nW = best
    sel.X = VN @ Yf @ VN.T
    sel.X = 0.5 * (sel.X + sel.X.T)
    sel.gap, sel.norm = gap, float(np.linalg.norm(Yf))
    sel.distance_bound = float(np.sqrt(2.0 * max(0.0, f - g))) / max(sel.norm, np.finfo(float).tiny)
    sel.certified = gap <= rtol
    sel.rounds, sel.working_pairs = rnd, int(nW)
    if sel.certified:
        sel.reason = ""
    return sel
