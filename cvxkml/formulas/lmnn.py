"""LMNN's triplet structure and the numpy values of its objective and Lagrange dual —
the one place these formulas are written (Weinberger & Saul, JMLR 2009; Wang, Do,
Woznica & Kalousis, NIPS 2011, eq. 18).

Every LMNN flavour in cvxkml (linear, kernel, multiple kernels) is the same problem on
a feature matrix Z (n × D): the squared learned distance is

    d_A(i, j) = (z_i − z_j)ᵀ A (z_i − z_j),      A ⪰ 0 (D × D),

with z_i = x_i (linear), z_i = K^i, the i-th kernel column (kernel, A is n × n), or
z_i = (K_1^i, …, K_m^i) (NR-ML-MKL, eq. 13).  With the slack eliminated, eq. 18 reads

    F(A) = (1 − γ) Σ_{(i,j) ∈ S} d_A(i, j)  +  γ Σ_{(i,j) ∈ S} Σ_{l: y_l ≠ y_i} [1 + d_A(i, j) − d_A(i, l)]_+ ,

S the target-neighbour entries (j among the k nearest same-class points of i).  The
structure is stored once as *pairs* (distinct unordered point pairs whose distance
enters F), the target entries as pair indices, and the *triplets* (i, j, l) as the pair
indices of (i, j) and (i, l), so every value is a function of the vector p of pair
distances: :func:`lmnn_objective`.  The exact CVXPY model, the fast solver's stopping
rule, the MKL weight steps and the tests all evaluate F through it.

Lagrange dual (the optimality certificate).  With α_t ∈ [0, γ] the multipliers of the
margin constraints d(i, l) − d(i, j) >= 1 − ξ_t,

    g(α) = Σ_t α_t    if  G(α) = Σ_p w_p(α) (z_i − z_j)(z_i − z_j)ᵀ ⪰ 0,   else −∞,
    w_p(α) = (1 − γ)·S_p + Σ_{t: (i,j)=p} α_t − Σ_{t: (i,l)=p} α_t,

S_p the number of target entries on pair p.  Weak duality makes g(α) <= F(A) for every
feasible A; :func:`lmnn_dual_value` evaluates g at the largest feasible scaling sα,
s ∈ [0, 1] (G(0) ⪰ 0 always, so the bound is finite).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError
from ._lmnn_triplets import (
    LMNNTriplets,
    check_targets,
    count_triplets,
    feature_target_neighbors,
    full_triplet_index,
    sorted_unique,
    target_neighbors,
)

__all__ = [
    "LMNNTriplets",
    "target_neighbors",
    "feature_target_neighbors",
    "lmnn_objective",
    "lmnn_slack",
    "pair_weights",
    "laplacian_quadratic",
    "lmnn_dual_value",
    "pull_whitening",
    "pull_spectrum",
    "PullBasis",
    "pull_basis",
    "pull_null_space",
    "pairs_reach_null",
    "reaches_null",
    "free_triplets",
    "whitened_dual_value",
    "rows_reach",
    "NULL_RTOL",
    "NULL_MARGIN",
    "to_pull_coordinates",
    "from_pull_coordinates",
    "pull_factor",
    "pair_quadratic",
    "psd_factor",
    "psd_pair_distances",
    "ordered_pair_distances",
    "orthonormal_factor",
    "count_triplets",
    "check_targets",
    "full_triplet_index",
    "sorted_unique",
    "CONTRADICTED",
]

#: Default of the stall rule of the LMNN PDHG solver (iterations without progress)
STALL_ITER = 2000
#: the status (solver result ``extra["status"]``, ``Solution.status``) of a stall-rule stop
STALLED = "stalled"
#: the status of a solve whose two runs (off G(0)'s null space, and whole) gave a bound above
#: the other's objective: weak duality fails, so one of the numbers is wrong and nothing is certified
CONTRADICTED = "bounds contradict"


# --------------------------------------------------------------------------- values
def pair_quadratic(Z, A, pi, pj) -> np.ndarray:
    """(z_i − z_j)ᵀ A (z_i − z_j) for the index pairs (pi, pj): the squared learned distances.
    A may be any symmetric matrix (indefinite A gives the linear map, not a distance)."""
    Z = np.asarray(Z, dtype=np.float64)
    Y = Z @ np.asarray(A, dtype=np.float64)
    pi = np.asarray(pi, dtype=np.int64)
    pj = np.asarray(pj, dtype=np.int64)
    return np.einsum("ij,ij->i", Z[pi] - Z[pj], Y[pi] - Y[pj])


#: eigenvalues of a PSD matrix at most this times r·λ_max are round-off of its eigendecomposition
PSD_ROUNDOFF = float(np.finfo(float).eps)


def psd_factor(X) -> np.ndarray:
    """L (r × r) with L Lᵀ = X for a PSD X, from its eigendecomposition; eigenvalues at most
    r·ε·λ_max (``PSD_ROUNDOFF``) count as 0: round-off of a PSD matrix, on either side of 0.

    Why not only the negative ones: the computed eigenvalues of X carry an error of about
    ε‖X‖ in both directions, so below r·ε·λ_max a computed eigenvalue cannot be told from 0.
    Keeping the positive ones put spurious distance ε‖X‖·‖u‖² into every pair: on the Wang et
    al. inner-CV fits whose optimal metric is X* = c v vᵀ with c ≈ 10⁹ – 10¹² (a degree-10
    polynomial kernel, v the direction that separates two classes, F* = 0), the noise
    eigenvalues ±1e-3 alone made F = 0.024 where F(c v vᵀ) = 1e-14."""
    X = np.asarray(X, dtype=np.float64)
    lam, V = np.linalg.eigh(0.5 * (X + X.T))
    top = float(lam[-1]) if lam.size else 0.0
    floor = PSD_ROUNDOFF * lam.size * top if top > 0.0 else 0.0
    return V * np.sqrt(np.where(lam > floor, lam, 0.0))


def psd_pair_distances(Z, X, pi, pj, factor=None) -> np.ndarray:
    """‖Lᵀ(z_i − z_j)‖² (L = :func:`psd_factor` of X, or ``factor`` when X = L Lᵀ is given by
    it: X is then not read): the squared learned distances of a PSD X, computed through its
    factor.

    Why not :func:`pair_quadratic`: the quadratic form (z_i − z_j)ᵀ X (z_i − z_j) loses
    about ε‖X‖‖z_i − z_j‖² to cancellation, which for the huge optimal metrics of nearly
    singular kernels (‖X̂‖ ≈ 10⁹ in whitened coordinates) is 10⁻⁷ per pair — enough to make
    F negative and a certified gap false.  Through the factor every distance d is a sum of
    squares (never negative) with an error of about ε·√‖X‖·‖z_i − z_j‖·√d."""
    W = np.asarray(Z, dtype=np.float64) @ (psd_factor(X) if factor is None else np.asarray(factor, dtype=np.float64))
    pi = np.asarray(pi, dtype=np.int64)
    pj = np.asarray(pj, dtype=np.int64)
    D = W[pi] - W[pj]
    return np.einsum("ij,ij->i", D, D)


def ordered_pair_distances(F, M, pi, pj, psd: bool = False, factor=None) -> np.ndarray:
    """(f_i − f_j)ᵀ M (f_i − f_j) for the index pairs (pi, pj) of the rows of F (n × r), summed
    column by column in the order of the LMNN solvers' Numba kernel
    (:func:`cvxkml.solvers.lmnn.pair_distances`), so the value is bitwise the solvers' own: the
    declared problem recomputes a solver's objective from its X̂ and gets the number the solver
    stopped on.  ``psd=False``: the value of :func:`pair_quadratic`; ``psd=True``: M is PSD and
    the distances are ‖Lᵀ(f_i − f_j)‖² through :func:`psd_factor`, the value of
    :func:`psd_pair_distances`; ``factor`` = L (r × q) given: M = L Lᵀ is the matrix of that factor (M
    itself is not read) and the distances are ‖Lᵀ(f_i − f_j)‖², each a sum of squares with
    relative error about ε·‖L‖·‖f_i − f_j‖/√d: the evaluation of an answer X̂ = W X̃ Wᵀ of the
    whitened solve (:func:`pull_whitening`), which spans up to 1e16 between its directions, so
    that neither the quadratic form nor an eigendecomposition of the formed matrix keeps its O(1)
    part beside the huge one, while the factor W L̃ (X̃ = L̃ L̃ᵀ) does.  Memory O(n·r + P), no
    P × r temporary (for kernel LMNN r = n)."""
    F = np.ascontiguousarray(F, dtype=np.float64)
    if factor is not None:
        F = np.ascontiguousarray(F @ np.asarray(factor, dtype=np.float64))
        Y = F
    elif psd:
        F = np.ascontiguousarray(F @ psd_factor(M))
        Y = F
    else:
        Y = np.ascontiguousarray(F @ np.asarray(M, dtype=np.float64))
    pi = np.asarray(pi, dtype=np.int64)
    pj = np.asarray(pj, dtype=np.int64)
    Ft = np.ascontiguousarray(F.T)
    Yt = Ft if Y is F else np.ascontiguousarray(Y.T)
    out = np.zeros(pi.size)
    for c in range(Ft.shape[0]):
        a = Ft[c]
        d = a[pi] - a[pj]
        if Yt is Ft:
            out += d * d
        else:
            b = Yt[c]
            out += d * (b[pi] - b[pj])
    return out


def lmnn_objective(p, trip: LMNNTriplets, gamma: float) -> float:
    """F = (1 − γ) Σ_S d(i, j) + γ Σ_t [1 + d(i, j) − d(i, l)]_+ from the pair distances p
    (one entry per pair of ``trip``; eq. 18 with the optimal slack)."""
    p = np.asarray(p, dtype=np.float64)
    pull = float(p[trip.target_pair].sum())
    push = float(np.maximum(0.0, 1.0 + p[trip.tt] - p[trip.ti]).sum())
    return (1.0 - gamma) * pull + gamma * push


def lmnn_slack(p, trip: LMNNTriplets) -> np.ndarray:
    """The optimal slack ξ_t = [1 + d(i, j) − d(i, l)]_+ for the pair distances p."""
    p = np.asarray(p, dtype=np.float64)
    return np.maximum(0.0, 1.0 + p[trip.tt] - p[trip.ti])


def pair_weights(trip: LMNNTriplets, alpha, gamma: float) -> np.ndarray:
    """w_p(α) = (1 − γ) S_p + Σ_{t:(i,j)=p} α_t − Σ_{t:(i,l)=p} α_t: the Lagrangian is
    Σ α_t + Σ_p w_p d(p), so G(α) = Σ_p w_p (z_i − z_j)(z_i − z_j)ᵀ."""
    alpha = np.asarray(alpha, dtype=np.float64)
    P = trip.n_pairs
    return (
        (1.0 - gamma) * trip.target_weight
        + np.bincount(trip.tt, alpha, minlength=P)
        - np.bincount(trip.ti, alpha, minlength=P)
    )


def _laplacian(U, pi, pj, w) -> np.ndarray:
    """Uᵀ Ω U, Ω = Σ_p w_p (e_i − e_j)(e_i − e_j)ᵀ (sparse, O(P + n·r²))."""
    n = U.shape[0]
    rows = np.concatenate([pi, pj, pi, pj])
    cols = np.concatenate([pi, pj, pj, pi])
    vals = np.concatenate([w, w, -w, -w])
    Om = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    return U.T @ (Om @ U)


#: a pair whose centred end points are longer (squared, summed) than this times its own
#: difference is summed directly in :func:`laplacian_quadratic`, not through the Laplacian
_LAPLACIAN_SPREAD = 1e4
#: pairs per block of the direct sums (a block × r temporary)
_PAIR_BLOCK = 8192


def _pair_blocks(U, pi, pj):
    """(block slice, U[i] − U[j] of its pairs) over the index pairs, ``_PAIR_BLOCK`` at a time
    (no P × r temporary)."""
    for s in range(0, pi.size, _PAIR_BLOCK):
        b = slice(s, s + _PAIR_BLOCK)
        yield b, U[pi[b]] - U[pj[b]]


def _pair_sq_lengths(U, pi, pj) -> np.ndarray:
    """‖U[i] − U[j]‖² of the index pairs."""
    out = np.empty(pi.size)
    for b, D in _pair_blocks(U, pi, pj):
        out[b] = np.einsum("ij,ij->i", D, D)
    return out


def _direct_quadratic(U, pi, pj, w) -> np.ndarray:
    """Σ_p w_p u_p u_pᵀ over the differences u_p = U[i] − U[j] themselves (O(P·r²))."""
    G = np.zeros((U.shape[1], U.shape[1]))
    for b, D in _pair_blocks(U, pi, pj):
        G += (D.T * w[b]) @ D
    return G


def laplacian_quadratic(U, trip: LMNNTriplets, w) -> np.ndarray:
    """Σ_p w_p u_p u_pᵀ with u_p = U[i] − U[j] (the pairs with w_p ≠ 0): Uᵀ Ω U with Ω the
    weighted graph Laplacian of the pairs (sparse, O(P·r + n·r²)), the same-class pairs on U
    centred per class and the others on U centred overall (the differences, and so the sum,
    are unchanged); a pair whose centred end points are much longer than its difference
    (``_LAPLACIAN_SPREAD``) is summed over its difference directly instead.

    Why centred: the Laplacian form adds and cancels the points' own outer products, an error
    of about ε Σ_p |w_p| (‖c_i‖² + ‖c_j‖²) (c the centred rows) in every direction, which swamps
    the directions where the pair differences are small next to the points — G(0)'s near-null
    space, where a certificate on a nearly singular kernel is decided (typically a direction
    separating the classes, nearly constant within each), so that ⟨G(0), X̂⟩ and the pull of
    the same X̂ from its distances would disagree and no bound could meet F.  Why some pairs
    directly: centring cannot help a pair whose points lie far from their means while close
    to each other, e.g. two images of different classes that coincide (a 6 and a 9 under
    rotation-invariant features) in coordinates that scale up a direction separating their
    classes — there the Laplacian's error in G(α) reached 0.3 of ‖G(α)‖ while the direct sum
    over those pairs, O(r²) each, is exact to round-off of the differences."""
    U = np.asarray(U, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    nz = np.flatnonzero(w)
    pi, pj, wn = trip.pi[nz], trip.pj[nz], w[nz]
    codes = np.asarray(trip.codes)
    same = codes[pi] == codes[pj]
    n_cls = int(codes.max()) + 1 if codes.size else 0
    member = sp.csr_matrix((np.ones(codes.size), (codes, np.arange(codes.size))), shape=(n_cls, codes.size))
    means = (member @ U) / np.maximum(np.bincount(codes, minlength=n_cls), 1)[:, None]
    Uc = U - means[codes]
    Uo = U - U.mean(axis=0)
    rc = np.einsum("ij,ij->i", Uc, Uc)
    ro = np.einsum("ij,ij->i", Uo, Uo)
    spread = np.where(same, rc[pi] + rc[pj], ro[pi] + ro[pj])
    direct = spread > _LAPLACIAN_SPREAD * _pair_sq_lengths(U, pi, pj)
    G = np.zeros((U.shape[1], U.shape[1]))
    lap_same = same & ~direct
    lap_cross = ~same & ~direct
    if np.any(lap_same):
        G += _laplacian(Uc, pi[lap_same], pj[lap_same], wn[lap_same])
    if np.any(lap_cross):
        G += _laplacian(Uo, pi[lap_cross], pj[lap_cross], wn[lap_cross])
    if np.any(direct):
        G += _direct_quadratic(U, pi[direct], pj[direct], wn[direct])
    return 0.5 * (G + G.T)


#: λ_min(G(0)) above this times ‖G‖ counts as positive definite in :func:`lmnn_dual_value`.
_PD_RTOL = 1e3 * np.finfo(float).eps


#: eigenvalues of G(0) at most this times the largest are recomputed from the data in
#: :func:`pull_spectrum`.  The first eigendecomposition mixes a direction of eigenvalue λ into
#: the recomputed block by about ε·μ_max/λ, which leaves an exact null direction a pull of up
#: to ε²·μ_max²/λ: 5e-26·μ_max for λ above this bound, well below ``NULL_RTOL`` (with a bound
#: of 2e-13 it was 2e-19, and one null direction of a Multiple Features kernel kept a pull of
#: 5e-21·μ_max and counted as range).
_REFINE_RTOL = 1e-6


def _min_eig(M) -> float:
    return float(np.linalg.eigvalsh(M)[0]) if M.size else 0.0


#: a squared length below this fraction of the largest is round-off: G(0)'s null space holds
#: directions whose pull, recomputed from the pair differences, is at most this times
#: λ_max(G(0)) (and within ``NULL_MARGIN`` of its round-off, :func:`pull_spectrum`), and a pair
#: reaches that space when more than this fraction of its squared length lies in it
#: (see reference/lmnn-speed.md)
NULL_RTOL = 1e-20

#: a direction of G(0) is null when its recomputed pull is at most this many times the
#: round-off such a pull can carry (:func:`pull_spectrum`), and at most ``NULL_RTOL``·μ_max
NULL_MARGIN = 100.0

#: a pull at most this fraction of μ_max is null whatever its round-off: as range it would be
#: whitened more than 1e10-fold (:func:`pull_whitening`), past what the solve keeps accurate (a
#: 24-point polynomial kernel's direction at 4e-28 of μ_max, whitened 5e13-fold, left the solve
#: at F = 37.2 where the null treatment certifies 24.78)
_WHITEN_FLOOR = 1e-24


@dataclass(frozen=True)
class PullBasis:
    """The coordinates U·W in which the target pull G(0) is the identity off its null space.

    Attributes
    ----------
    W : ndarray of shape (r, r)
        Invertible; its ``null`` columns are orthonormal (in U's coordinates) and span G(0)'s
        null space N; the others are the remaining eigenvectors of G(0) scaled by λ^-½.
    null : ndarray of shape (r,), bool
        Which columns of W span N.
    """

    W: np.ndarray
    null: np.ndarray

    @property
    def VN(self) -> np.ndarray:
        """An orthonormal basis of N (r × dim N)."""
        return self.W[:, self.null]


def pull_spectrum(U, target_i, target_j, gamma: float):
    """The target pull G(0) = (1 − γ) Σ_S u_ij u_ijᵀ = (1 − γ) DᵀD (D the target differences) as
    (V, μ, μ_max, null): orthonormal eigenvectors V (r × r), eigenvalues μ, and which
    directions are null (G(0)'s null space N); None when G(0) = 0.

    Two stages.  The eigenvalues of G(0) above ``_REFINE_RTOL``·μ_max are those of its
    eigendecomposition (error about ε·μ_max, relative 2e-10 at most); the others carry that
    error too, so their block is recomputed from the data, (1 − γ) (D V_s)ᵀ(D V_s): each entry
    a sum of products of the pair components along those directions, accurate relative to
    its own size.  Its eigenvalues are accurate to about ε times the block's largest (at most
    2e-22·μ_max, below ``NULL_RTOL`` with a margin of 45; on the Multiple Features kernels
    the null ones come out within 4e-28·μ_max of 0), so a real pull of 1e-20
    of μ_max stands apart from the round-off of an exactly singular one, without the
    |S| × r decomposition.  One spectrum for
    :func:`pull_basis`, :func:`pull_whitening` and the null space the solvers split off: they
    agree on which directions are null.

    A direction is null when its recomputed pull is at most ``NULL_RTOL``·μ_max and either at
    most ``NULL_MARGIN`` times the round-off it can carry — ε times the block's largest
    eigenvalue, ε²·μ_max²/λ_out mixed in by the first stage (λ_out the smallest eigenvalue
    outside the block), and (1 − γ) ε² Σ_S (‖u_i‖² + ‖u_j‖²) from forming the differences — or
    at most ``_WHITEN_FLOOR``·μ_max (1e-24, beyond which the whitening would pass 1e10).  Why not ``NULL_RTOL`` alone:
    on a Multiple Features kernel a direction with a pull of 8.9e-24·μ_max (2e4 times that
    round-off; extended precision gives the same) was called null, its pairs' parts there
    (up to 9e-23, data, not round-off) were then taken for round-off by the bound, and the
    solve settled 18 % above the optimum with a bound that was no bound."""
    U = np.asarray(U, dtype=np.float64)
    target_i, target_j = np.asarray(target_i), np.asarray(target_j)
    D = U[target_i] - U[target_j]
    G0 = (1.0 - gamma) * (D.T @ D)
    lam, V = np.linalg.eigh(0.5 * (G0 + G0.T))
    if not lam.size or not lam[-1] > 0.0:
        return None
    top = float(lam[-1])
    small = lam <= _REFINE_RTOL * top
    null = np.zeros(lam.shape, dtype=bool)
    if np.any(small):
        DN = D @ V[:, small]
        mu, Q = np.linalg.eigh((1.0 - gamma) * (DN.T @ DN))
        V[:, small] = V[:, small] @ Q
        lam[small] = mu
        eps = np.finfo(float).eps
        sq = np.einsum("ij,ij->i", U, U)
        noise = max(
            eps * float(np.max(np.abs(mu))),  # the refined block's eigenvalue error
            eps**2 * top**2 / float(np.min(lam[~small])),  # what the first stage mixed into it
            (1.0 - gamma) * eps**2 * float(np.sum(sq[target_i] + sq[target_j])),  # forming D
        )
        null = small & (lam <= min(NULL_RTOL * top, max(_WHITEN_FLOOR * top, NULL_MARGIN * noise)))
    return V, lam, top, null


def pull_basis(U, trip: LMNNTriplets, gamma: float) -> PullBasis | None:
    """The change of coordinates U ↦ U·W with G(0) = diag(1, …, 1, 0, …, 0) to round-off, and
    G(0)'s null space N; None when G(0) = 0.

    From :func:`pull_spectrum`: the eigenvectors of a real pull (however small) are scaled by
    μ^-½; the null ones span N and stay orthonormal.  U·W is
    an exact change of coordinates (the same pair distances for X̂ ↦ W⁻¹X̂W⁻ᵀ, the same
    multipliers, the same optimum), and G(0) is positive definite there when N is empty, so
    that :func:`lmnn_dual_value` can bound tr X* by F*/λ_min(G(0)) instead of accepting a
    round-off allowance (why that matters: reference/lmnn-speed.md)."""
    spec = pull_spectrum(U, trip.target_i, trip.target_j, gamma)
    if spec is None:
        return None
    V, mu, top, null = spec
    f = np.ones_like(mu)
    f[~null] = 1.0 / np.sqrt(mu[~null])
    return PullBasis(np.ascontiguousarray(V * f), null)


def pull_null_space(U, trip: LMNNTriplets, gamma: float):
    """(V_R, V_N): orthonormal bases of the range and of the null space N of G(0) (the null
    directions of :func:`pull_spectrum`, the N of :func:`pull_basis` and of
    :func:`lmnn_dual_value`); None when G(0) = 0 or N is empty."""
    return _null_split_of(pull_spectrum(U, trip.target_i, trip.target_j, gamma))


def _null_split_of(spec):
    """:func:`pull_null_space` from G(0)'s spectrum (:func:`pull_spectrum`, or None)."""
    if spec is None:
        return None
    V, mu, top, null = spec
    if not np.any(null):
        return None
    return np.ascontiguousarray(V[:, ~null]), np.ascontiguousarray(V[:, null])


def rows_reach(D, VN, ends=None) -> np.ndarray:
    """Per row d of D: whether more than ``NULL_RTOL`` of ‖d‖² lies in span(VN) (VN
    orthonormal), computed directly as ‖VNᵀd‖² (as ‖d‖² − ‖V_Rᵀd‖² its round-off would be
    1e-16).

    ``ends`` (optional, per row): ‖u_i‖² + ‖u_j‖² of the end points of d = u_i − u_j.  With
    it, a part on span(VN) within the round-off of forming d, (r·ε)²·``ends`` (r = number of
    columns), does not reach either: two coincident points have d = 0 in one basis and
    noise of about ε·‖u_i‖ in another (the rows of U·W come out of a product that rounds
    rows differently), and that noise points anywhere, N included."""
    D = np.asarray(D, dtype=np.float64)
    Wp = D @ np.asarray(VN, dtype=np.float64)
    on_null = np.einsum("ij,ij->i", Wp, Wp)
    full = np.einsum("ij,ij->i", D, D)
    return reach_test(on_null, full, ends, D.shape[1])


def reach_test(on_null, full, ends, r: int) -> np.ndarray:
    """The test of :func:`rows_reach` from the squared lengths on span(VN) (``on_null``), in
    all (``full``) and of the end points (``ends``, or None) of rows with r coordinates."""
    reach = on_null > NULL_RTOL * np.maximum(full, np.finfo(float).tiny)
    if ends is not None:
        reach &= on_null > (r * np.finfo(float).eps) ** 2 * np.asarray(ends, dtype=np.float64)
    return reach


def pairs_reach_null(U, trip: LMNNTriplets, VN) -> np.ndarray:
    """Per pair p = (i, j): whether u_i − u_j reaches span(VN) (VN orthonormal), i.e. has more
    than ``NULL_RTOL`` of its squared length there, and more than the round-off of forming
    it from its end points (both in U's coordinates, :func:`rows_reach`).  A pair that does
    not reach has a squared length on span(VN) of 0 up to round-off: a scale c on VN VNᵀ
    changes its distance by round-off times c, never by a real amount."""
    U = np.asarray(U, dtype=np.float64)
    sq = np.einsum("ij,ij->i", U, U)
    return rows_reach(U[trip.pi] - U[trip.pj], VN, ends=sq[trip.pi] + sq[trip.pj])


def reaches_null(U, trip: LMNNTriplets, VN) -> np.ndarray:
    """Per triplet: whether its impostor pair reaches span(VN) (:func:`pairs_reach_null`).
    When span(VN) is G(0)'s null space, such a triplet is satisfied for free: adding
    c·VN VNᵀ to any metric leaves the pull and every target distance unchanged and raises
    d(i, l)."""
    return pairs_reach_null(U, trip, VN)[trip.ti]


def free_triplets(U, trip: LMNNTriplets, gamma: float) -> np.ndarray | None:
    """Per triplet: whether it is satisfied for free in U's coordinates — its impostor pair
    reaches the null space N of the target pull G(0) (:func:`pull_null_space`,
    :func:`reaches_null`); None when N is empty.  Computed in the problem's own coordinates
    and passed as ``free`` to :func:`lmnn_dual_value` when the bound is evaluated in others
    (e.g. those of :func:`pull_whitening`), where the test of reaching can miss a pair."""
    return _free_in(U, trip, pull_null_space(U, trip, gamma))


def _free_in(U, trip: LMNNTriplets, split) -> np.ndarray | None:
    """:func:`free_triplets` given G(0)'s (V_R, V_N) split in U's coordinates (or None)."""
    return None if split is None else reaches_null(U, trip, split[1])


def whitened_dual_value(U, trip: LMNNTriplets, alpha, gamma: float, objective_bound: float | None = None) -> float:
    """:func:`lmnn_dual_value` in the coordinates of :func:`pull_whitening` (the solver's: the
    same problem, a better conditioned bound), with the triplets satisfied for free decided in
    U's own (:func:`free_triplets`, which the whitened coordinates can hide); G(0)'s spectrum
    in U's coordinates is computed once for both."""
    spec = pull_spectrum(U, trip.target_i, trip.target_j, gamma)
    white = _whitening_of(spec)
    if white is None:
        return lmnn_dual_value(U, trip, alpha, gamma, objective_bound=objective_bound)
    Uw = np.asarray(U, dtype=np.float64) @ white[0]
    free = _free_in(U, trip, _null_split_of(spec))
    return lmnn_dual_value(Uw, trip, alpha, gamma, objective_bound=objective_bound, free=free)


def lmnn_dual_value(
    U,
    trip: LMNNTriplets,
    alpha,
    gamma: float,
    rtol: float = 1e-11,
    objective_bound: float | None = None,
    restrict_null: bool = True,
    free=None,
) -> float:
    """A lower bound on the optimum of eq. 18 from multipliers α (weak duality).

    ``U`` (n × r) spans the row features: the columns of Z (n × D) lie in range(U)
    (Z = U S Vᵀ; any basis with the same range works; orthonormal is best conditioned).
    α is clipped to [0, γ]; then g(sα) = s Σ α_t with s the largest value in [0, 1]
    such that G(sα) ⪰ 0 (G(0) = (1 − γ) Σ_S u uᵀ ⪰ 0, so s = 0 is always feasible),
    eigenvalues down to −rtol·scale accepted as round-off when choosing s.

    The bound stays valid when the accepted G(sα) has a negative eigenvalue λ < 0: for
    every X ⪰ 0, F(X) ≥ s Σ α_t + λ tr X, and at the optimum tr X* ≤ F*/λ_min(G(0))
    (F ≥ ⟨X, G(0)⟩, the pull term), so s Σ α_t + λ·F_up/λ_min(G(0)) is returned, F_up ≥ F*
    any primal value (``objective_bound``; default F(0) = γ·T).  That correction is
    negligible for well-conditioned problems; when tr X* is huge (an ill-conditioned
    kernel, where the optimal metric amplifies tiny directions) it is what keeps
    g ≤ F*: without it g exceeded F(X̂) by 4.4e-5 on a degree-8 polynomial kernel of
    Iris.  The bound is evaluated in the coordinates of :func:`pull_basis`, where G(0) is the
    identity unless it has a null space N to round-off (``NULL_RTOL``), so λ_min(G(0)) ≈ 1
    there whenever G(0) is positive definite, however small its smallest eigenvalue.  When N
    is not empty the multipliers of the triplets whose impostor pair reaches N
    (:func:`reaches_null`) are set to 0 first (``restrict_null``): those triplets are
    satisfied for free — adding c·P_N to any metric leaves the pull and every target distance
    unchanged and raises their d(i, l) — so 0 is their optimal multiplier, and what the others
    leave on N is at most ``NULL_RTOL`` of their squared lengths.  The pull term bounds no
    trace on N, so s Σ α_t is returned with the −rtol·scale allowance (its error is |λ|·tr X*
    with |λ| at that round-off level), except that a value above ``objective_bound`` by more
    than rtol·max(1, |objective_bound|) — proof that the allowance was not round-off — gives
    the trivial bound 0.  Where G(0) is positive
    definite the computed λ_min(G(sα)) is lowered by the eigensolver's error r·ε·‖G(sα)‖
    before the trace correction: in these coordinates ‖G(sα)‖ can be many orders above
    ‖G(0)‖ = 1 (impostor pairs long along a scaled-up direction of tiny pull), and there a
    computed λ ≥ 0 proves nothing.  Without the zeroing a
    small positive α on a free triplet either collapses s or, inside the allowance,
    counted a multiplier whose error term is unbounded (X* is huge along N).

    Parameters
    ----------
    U : ndarray of shape (n, r)
        Feature factor (any basis of the features' span: the bound is evaluated after the
        change of coordinates :func:`pull_basis`, in which G(0) is the identity off its null
        space).
    trip : LMNNTriplets
        Targets, pairs and triplets.
    alpha : array-like of shape (T,)
        Multipliers; clipped to [0, γ].
    gamma : float
        Weight of the hinge terms.
    rtol : float, default 1e-11
        Relative round-off allowance of the eigenvalue test that chooses s.
    objective_bound : float, optional
        An upper bound on F* (any primal value F(X), X ⪰ 0); default γ·T.
    restrict_null : bool, default True
        When G(0) has a null space N (:func:`pull_basis`), set the multipliers of the triplets
        whose impostor pair reaches N to 0 first (see above).  False evaluates α as given, for
        comparisons only: its allowance on N is not round-off.
    free : array-like of bool, shape (T,), optional
        Triplets known to be satisfied for free, whose multipliers are set to 0 as well: those
        whose impostor pair reaches N in the problem's own coordinates
        (:func:`reaches_null`), for a ``U`` that is a change of those coordinates.  The test
        of reaching is relative to a pair's length, and a rescaling such as
        :func:`pull_whitening` lengthens a pair up to 1e16-fold while its part on N stays: a
        pair that reaches N in the problem's coordinates can fail the test in the new ones,
        and a multiplier counted on it is no bound (the optimum satisfies its triplet along N
        at no cost).  Zeroing more multipliers keeps a bound valid.

    Returns
    -------
    float
        g ≤ F*.
    """
    alpha = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, gamma)
    if not np.any(alpha):
        return 0.0
    U0 = np.asarray(U, dtype=np.float64)
    basis = pull_basis(U0, trip, gamma)
    if restrict_null and basis is not None and np.any(basis.null):
        alpha = np.where(reaches_null(U0, trip, basis.VN), 0.0, alpha)
    if free is not None:
        alpha = np.where(np.asarray(free, dtype=bool), 0.0, alpha)
    total = float(alpha.sum())
    if total == 0.0:
        return 0.0
    zero = np.zeros_like(alpha)
    U = U0 if basis is None else np.ascontiguousarray(U0 @ basis.W)
    OT = laplacian_quadratic(U, trip, pair_weights(trip, zero, gamma))
    OH = laplacian_quadratic(U, trip, pair_weights(trip, alpha, gamma)) - OT
    norm_T = np.linalg.norm(OT, 2) if OT.size else 0.0
    scale = max(norm_T, np.linalg.norm(OH, 2) if OH.size else 0.0, np.finfo(float).tiny)
    eps = rtol * scale
    # the eigensolver's error on λ_min(G(sα)): about r·ε·‖G(sα)‖ (backward stable)
    eig_err = OT.shape[0] * np.finfo(float).eps * scale

    min_eig = {}  # λ_min(G(sα)) by s: each eigenvalue problem solved once

    def lam_at(s):
        if s not in min_eig:
            min_eig[s] = _min_eig(OT + s * OH)
        return min_eig[s]

    def feasible(s):
        return lam_at(s) >= -eps

    def bound(s):
        lam = lam_at(s)
        lam_T = lam_at(0.0)
        if not lam_T > _PD_RTOL * max(norm_T, np.finfo(float).tiny):
            # G(0) singular to round-off: the pull term does not bound tr X*; the
            # −rtol·scale allowance stands as round-off unless a known primal value shows
            # it is not (then only the trivial bound F ≥ 0 is left)
            g = s * total
            if lam >= 0.0 or objective_bound is None:
                return g
            # above a primal value by more than round-off: the allowance was not round-off
            return 0.0 if g > objective_bound + rtol * max(1.0, abs(objective_bound)) else g
        # G(0) positive definite (tested against its own norm: G(sα)'s may be far larger in
        # these coordinates): F ≥ s Σα + λ tr X* with λ no larger than the computed value
        # less the eigensolver's error, and tr X* ≤ F*/λ_min(G(0))
        lam = min(0.0, lam - eig_err)
        if lam == 0.0:
            return s * total
        f_up = gamma * trip.n_triplets if objective_bound is None else float(objective_bound)
        return max(0.0, s * total + lam * max(f_up, 0.0) / lam_T)

    if feasible(1.0):
        return bound(1.0)
    return _scaled_bound(OT, OH, eps, scale, total, lam_at, bound)


def _scaled_bound(OT, OH, eps, scale, total, lam_at, bound) -> float:
    """The bound at the largest s in [0, 1] with G(sα) ⪰ −eps (see :func:`lmnn_dual_value`)."""

    def feasible(s):
        return lam_at(s) >= -eps

    # generalized eigenvalue when OT is positive definite: s* = 1 / λ_max(−T^-½ H T^-½)
    wT, VT = np.linalg.eigh(OT)
    s = 0.0
    if wT[0] > 1e3 * eps:
        Tm = VT / np.sqrt(wT)
        lam = float(np.linalg.eigvalsh(-(Tm.T @ OH @ Tm))[-1])
        s = min(1.0, 1.0 / lam) * (1.0 - 1e-12) if lam > 0 else 1.0
        if not feasible(s):
            s = 0.0
    if s == 0.0:
        lo, hi = 0.0, 1.0
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if feasible(mid):
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-10:
                break
        s = lo
    return bound(s)


#: directions of G(0) with eigenvalues below this times the largest are rescaled to it
_PULL_RANGE = 1e-4


def pull_whitening(U, target_i, target_j, gamma: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The change of coordinates the solver works in: (W, W⁻¹) (r × r, W symmetric and
    invertible), or None when it is the identity.

    G(0) = (1 − γ) Σ_S u_ij u_ijᵀ is the target pull (the part of the objective linear in
    X̂), G(0) = V diag(μ) Vᵀ (:func:`pull_spectrum`).  W = V diag(f) Vᵀ with
    f = √(ρ μ_max / μ) on the eigenvalues below ρ μ_max (ρ = ``_PULL_RANGE``) that are not null
    (:func:`pull_spectrum`) and f = 1 elsewhere, so Wᵀ G(0) W has no eigenvalue in that interval below ρ μ_max:
    its conditioning is capped at 1/ρ, and the rest of the space is untouched (None when G(0)
    has no such eigenvalue: the well-conditioned problems, e.g. linear LMNN on standardized
    features, run as before).

    Why: on a nearly singular kernel G(0) has eigenvalues far below its largest (a direction v
    that separates the classes at almost no pull cost), the optimal X̂ is huge along v, and
    its top eigenvector must match v to within about the square root of that ratio, which no
    quasi-Newton or first-order step achieves at that conditioning (reference/lmnn-speed.md).
    In the coordinates X̃ = W⁻¹ X̂ W⁻ᵀ (features U W) the problem is the same — d_p = u_pᵀ X̂
    u_p = (W u_p)ᵀ X̃ (W u_p) for every pair, X̂ ⪰ 0 ⇔ X̃ ⪰ 0, the same triplets and
    multipliers α, so every bound of the problem in the new coordinates bounds the original's
    optimum.  f reaches √(ρ μ_max / μ) for the smallest real pull μ, at most 1e10
    (``_WHITEN_FLOOR``; 3.4e9 on a Multiple Features kernel whose pull reaches 8.9e-24·μ_max), so
    X̂ = W X̃ W spans up to 20 orders of magnitude more than X̃: the solvers keep such an answer
    as the factor W L̃ (X̃ = L̃ L̃ᵀ, :func:`ordered_pair_distances` with ``factor``), never as the
    matrix.  The null space N itself (round-off of an exactly singular G(0), e.g. the constant
    direction of a kernel with an offset) is not
    amplified: there W = I, and
    :func:`cvxkml.formulas.lmnn.lmnn_dual_value` and the solvers work on the range of G(0)."""
    return _whitening_of(pull_spectrum(U, target_i, target_j, gamma))


def _whitening_of(spec):
    """:func:`pull_whitening` from G(0)'s spectrum (:func:`pull_spectrum`, or None)."""
    if spec is None:
        return None
    V, mu, top, null = spec
    low = ~null & (mu < _PULL_RANGE * top)
    if not np.any(low):
        return None
    f = np.ones_like(mu)
    f[low] = np.sqrt(_PULL_RANGE * top / mu[low])
    return np.ascontiguousarray((V * f) @ V.T), np.ascontiguousarray((V / f) @ V.T)


def to_pull_coordinates(X, whitening):
    """X̃ = W⁻¹ X W⁻ᵀ (X itself when ``whitening`` is None; None stays None)."""
    if whitening is None or X is None:
        return X
    W_inv = whitening[1]
    Y = W_inv @ np.asarray(X, dtype=np.float64) @ W_inv.T
    return 0.5 * (Y + Y.T)


def pull_factor(Xt, whitening) -> np.ndarray:
    """L (r × r) with L Lᵀ = W X̃ Wᵀ, the answer X̃ of the solver's coordinates mapped back
    (:func:`from_pull_coordinates`) as a factor: W·:func:`psd_factor` (X̃).  Distances through
    it (:func:`ordered_pair_distances` with ``factor``) keep every scale of the answer, where
    the formed matrix W X̃ Wᵀ does not (see :func:`pull_whitening`)."""
    L = psd_factor(Xt)
    return L if whitening is None else whitening[0] @ L


def from_pull_coordinates(Xt, whitening):
    """X = W X̃ Wᵀ (X̃ itself when ``whitening`` is None)."""
    if whitening is None:
        return Xt
    W = whitening[0]
    Y = W @ Xt @ W.T
    return 0.5 * (Y + Y.T)


def orthonormal_factor(Z, rtol: float = 1e-10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Z = U diag(s) Vt with the singular values below rtol·s_max dropped.

    The learned distances depend on A only through X̂ = diag(s) Vt A Vtᵀ diag(s) (r × r),
    because (z_i − z_j) = Vtᵀ diag(s) (u_i − u_j); optimizing over X̂ ⪰ 0 with features U
    is an exact reparameterization of eq. 18 on the row space of Z, A = Vtᵀ diag(1/s) X̂
    diag(1/s) Vt.  Equal rows of Z get equal rows of U (u_i = z_i Vtᵀ diag(1/s) exactly; the
    SVD's rows differ by round-off, which a huge optimal metric along a direction no target
    pair sees would amplify into a separation of two copies of one point).  Returns
    (U (n × r), s (r,), Vt (r × D)).
    """
    Z = np.asarray(Z, dtype=np.float64)
    U, s, Vt = np.linalg.svd(Z, full_matrices=False)
    if s.size == 0 or s[0] == 0.0:
        raise InvalidInputError("The feature matrix is zero: every distance is 0 and nothing can be learned.")
    r = int(np.sum(s > rtol * s[0]))
    _, first, copy_of = np.unique(Z, axis=0, return_index=True, return_inverse=True)
    U = U[first[copy_of.ravel()], :r]  # every row is its first copy's row (itself when unique)
    return U, s[:r].copy(), np.ascontiguousarray(Vt[:r])
