"""Numpy formulas of the kernel classification rule (Sriperumbudur, Lang & Lanckriet,
ICML 2008) — the one place they are written for evaluation.

The exact CVXPY model (:mod:`cvxkml.declare.kcr`), the fast solver's stopping rule
(:mod:`cvxkml.solvers.kcr`), the estimator (:mod:`cvxkml.estimators.kcr`) and the tests
all evaluate through these functions.  Pure numpy (no CVXPY, no Numba).

Notation (paper eq. 9).  ``tau[i, j] = +1`` when y_i = y_j, else −1 (so ``tau[i, i] = 1``);
n_i⁺ = #{j : tau_ij = +1} counts i itself; ``c_i = 2 − n_i⁺``.  With D the n × n matrix
of learned squared distances D_ij = (k_i − k_j)ᵀ Σ (k_i − k_j) and h̃ the squared
bandwidth, the objective is

    Σ_i [ c_i + Σ_j [ 1 + tau_ij (D_ij − h̃) ]₊ ]₊  +  λ tr(KΣ),

where j runs over all n points *including j = i*, as printed (that term is [1 − h̃]₊).

Feasible set and coordinates.  N = {Σ ⪰ 0, 1ᵀΣ1 = 0} = {V M Vᵀ : M ⪰ 0} for V an
orthonormal basis of 1⊥ (see :func:`project_onto_N`).  The fast solver works in
*whitened* coordinates: with K̃ = VᵀKV = Q diag(μ) Qᵀ and the r eigenvalues μ above
``rank_rtol · max μ`` kept, Σ = T X Tᵀ with T = V Q_r diag(μ_r)^{-1/2}, X ⪰ 0 (r × r).
Then tr(KΣ) = tr X and D_ij = (f_i − f_j)ᵀ X (f_i − f_j) with F = K T (rows f_i); the
equality constraint disappears (:func:`whitening`).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError

__all__ = [
    "label_structure",
    "sq_distances_from_gram",
    "cross_sq_distances",
    "kcr_loss",
    "kcr_objective",
    "dual_objective",
    "dual_lower_bound",
    "h_upper_bound",
    "dual_weights_from_epigraph",
    "basis_orthogonal_to_ones",
    "project_onto_N",
    "whitening",
    "class_counts",
    "rule_predict",
]


# --------------------------------------------------------------------------- labels
def label_structure(y) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Labels → (classes, codes, tau, c).

    ``classes`` are the sorted unique labels, ``codes`` the integer class of each point,
    ``tau`` the n × n ±1 matrix (+1 for equal labels), ``c = 2 − n⁺`` with n⁺_i the size
    of i's class (i included).
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise InvalidInputError(f"y must be one-dimensional; got shape {y.shape}.")
    classes, codes = np.unique(y, return_inverse=True)
    codes = codes.ravel()
    tau = np.where(codes[:, None] == codes[None, :], 1.0, -1.0)
    n_plus = np.bincount(codes)[codes].astype(np.float64)
    return classes, codes, tau, 2.0 - n_plus


# --------------------------------------------------------------------------- distances
def sq_distances_from_gram(B) -> np.ndarray:
    """D = diag(B) 1ᵀ + 1 diag(B)ᵀ − 2B for a Gram matrix B (here B = KΣK = F X Fᵀ)."""
    B = np.asarray(B, dtype=np.float64)
    b = np.diag(B)
    return b[:, None] + b[None, :] - 2.0 * B


def cross_sq_distances(K_cross, K_train, Sigma) -> np.ndarray:
    """ρ²(x, X_i) = (k_x − k_i)ᵀ Σ (k_x − k_i) (paper §4.1) for the rows k_x of
    ``K_cross`` (m × n: kernel between m new points and the n training points) and the
    columns k_i of ``K_train`` (n × n).  Returns an m × n matrix."""
    Kx = np.asarray(K_cross, dtype=np.float64)
    Kt = np.asarray(K_train, dtype=np.float64)
    S = np.asarray(Sigma, dtype=np.float64)
    KxS = Kx @ S
    KtS = Kt @ S
    qx = np.einsum("ij,ij->i", KxS, Kx)
    qt = np.einsum("ij,ij->i", KtS, Kt)
    return qx[:, None] + qt[None, :] - 2.0 * (KxS @ Kt.T)


# --------------------------------------------------------------------------- objective
def kcr_loss(D, h, tau, c) -> float:
    """Σ_i [ c_i + Σ_j [1 + tau_ij (D_ij − h)]₊ ]₊ (the data term of eq. 9)."""
    inner = np.maximum(1.0 + tau * (np.asarray(D, dtype=np.float64) - float(h)), 0.0).sum(axis=1)
    return float(np.maximum(c + inner, 0.0).sum())


def kcr_objective(D, h, tau, c, trace_term, lam) -> float:
    """Objective of eq. 9: ``kcr_loss(D, h, tau, c) + lam * trace_term`` with
    ``trace_term = tr(KΣ)``."""
    return kcr_loss(D, h, tau, c) + float(lam) * float(trace_term)


# --------------------------------------------------------------------------- duality
def dual_objective(s, tau, c) -> tuple[float, float]:
    """The parts of the Lagrangian that do not involve Σ and h̃, for dual weights s.

    The nested hinge is φ_i(u) = [c_i + Σ_j [u_j]₊]₊ = max {t c_i + Σ_j s_j u_j :
    0 <= s_j <= t <= 1}, and with c_i <= 0 (every class has >= 2 members) the best t is
    max_j s_j.  With u_ij = 1 + tau_ij (D_ij − h̃) the Lagrangian is
    a + ⟨λI + Aᵀ(tau∘s), X⟩ − h̃ S, and this returns
    ``(a, S) = (Σ_ij s_ij + Σ_i c_i max_j s_ij, Σ_ij tau_ij s_ij)``.
    """
    s = np.asarray(s, dtype=np.float64)
    return (float(s.sum() + np.dot(c, s.max(axis=1))), float(np.sum(tau * s)))


def dual_weights_from_epigraph(n, I, J, theta, w, omega) -> np.ndarray:
    """Dual weights s ∈ [0, 1]^{n×n} of :func:`dual_objective` from the multipliers of the
    epigraph model (:meth:`cvxkml.declare.KCR.to_cvxpy`).

    That model writes each row as r_i >= c_i + Σ_{p ∋ i} t_p + v, r >= 0 (multiplier
    θ_i ∈ [0, 1]), each pair p = (i, j), i < j, once as t_p >= 1 + τ_p (D_p − h̃), t >= 0
    (multiplier w_p ∈ [0, θ_i + θ_j], as t_p enters rows i and j), and the self term as
    v >= 1 − h̃, v >= 0 (multiplier ω ∈ [0, Σθ]).  The pair's share of each row is
    σ_p = w_p / (θ_i + θ_j), so s_ij = θ_i σ_p, s_ji = θ_j σ_p and s_ii = θ_i ω / Σθ:
    the Lagrangian of the epigraph model at these multipliers is the one of
    :func:`dual_objective` at s.  Multipliers a conic solver returns slightly outside
    their box are clipped; any s in the box gives a valid bound (weak duality), so
    clipping costs tightness only.
    """
    theta = np.clip(np.asarray(theta, dtype=np.float64).ravel(), 0.0, 1.0)
    w = np.maximum(np.asarray(w, dtype=np.float64).ravel(), 0.0)
    I = np.asarray(I, dtype=np.int64)
    J = np.asarray(J, dtype=np.int64)
    den = theta[I] + theta[J]
    sigma = np.divide(w, den, out=np.zeros_like(w), where=den > 0)
    sigma = np.clip(sigma, 0.0, 1.0)
    s = np.zeros((int(n), int(n)))
    s[I, J] = theta[I] * sigma
    s[J, I] = theta[J] * sigma
    tot = float(theta.sum())
    share = min(1.0, max(0.0, float(omega)) / tot) if tot > 0 else 0.0
    s[np.arange(n), np.arange(n)] = theta * share
    return s


def h_upper_bound(trace_bound, max_similar_sq_norm) -> float:
    """A bound h_max with an optimal h̃* <= h_max.

    For a fixed Σ the objective is non-decreasing in h̃ once h̃ >= 1 + max over similar
    pairs of D_ij (every similar hinge, and the self term [1 − h̃]₊, is then 0 and the
    dissimilar hinges only grow).  With D_ij <= ‖z_ij‖² λ_max(X) <= ‖z_ij‖² tr X in the
    whitened coordinates and tr X* <= ``trace_bound``:
    h_max = max(1, 1 + trace_bound · max_similar ‖z_ij‖²).
    """
    return max(1.0, 1.0 + float(trace_bound) * float(max_similar_sq_norm))


def dual_lower_bound(a, S, lmin, lam, trace_bound, h_min, h_max) -> tuple[float, float]:
    """A certified lower bound on the optimum of eq. 9 from dual weights s ∈ [0, 1]^{n×n}.

    With ``(a, S) = dual_objective(s, tau, c)`` and ``lmin`` = λ_min(Aᵀ(tau∘s)) in the
    whitened coordinates (Aᵀ(W) = Σ_ij W_ij z_ij z_ijᵀ, z_ij = f_i − f_j), the Lagrange
    dual function of θs, θ ∈ [0, 1], minimized over {X ⪰ 0, tr X <= R,
    h_min <= h̃ <= h_max} — a set that contains an optimal point when R >= tr X* (e.g.
    R = f(any feasible point)/λ) and h_max >= h̃* (:func:`h_upper_bound`) — is

        g(θ) = θ a + R · min(0, λ + θ · lmin) − θ S · (h_min if S <= 0 else h_max).

    g is piecewise linear in θ; the maximum over θ ∈ {0, 1, λ/(−lmin)} is returned with
    the maximizing θ.  For θ = λ/(−lmin) the matrix λI + θAᵀ(tau∘s) is PSD, so that value
    does not depend on R.  Weak duality makes g a lower bound for every s in the box.
    """
    cands = [0.0, 1.0]
    if lmin < 0.0:
        cands.append(min(1.0, lam / (-lmin)))
    h_edge = h_min if S <= 0.0 else h_max
    best, best_theta = -np.inf, 0.0
    for th in cands:
        val = th * a + trace_bound * min(0.0, lam + th * lmin) - th * S * h_edge
        if val > best:
            best, best_theta = val, th
    return float(best), float(best_theta)


# --------------------------------------------------------------------------- the set N
def basis_orthogonal_to_ones(n: int) -> np.ndarray:
    """An orthonormal basis V (n × (n−1)) of 1⊥: the first n − 1 columns of the
    Householder reflection that maps 1/√n to the last unit vector."""
    n = int(n)
    if n < 2:
        raise InvalidInputError(f"Need n >= 2 points; got {n}.")
    v = np.full(n, 1.0 / np.sqrt(n))
    v[-1] -= 1.0
    Q = np.eye(n) - 2.0 * np.outer(v, v) / float(v @ v)
    return np.ascontiguousarray(Q[:, : n - 1])


def project_onto_N(X) -> np.ndarray:
    """Exact Frobenius projection onto N = {Σ ⪰ 0, 1ᵀΣ1 = 0}: P_N(X) = P_PSD(HXH),
    H = I − 11ᵀ/n, for a symmetric X (a non-symmetric X is first replaced by its
    symmetric part, its projection onto the symmetric matrices, which contain N).

    Proof.  (i) For Σ ⪰ 0, 1ᵀΣ1 = ‖Σ^{1/2}1‖², so 1ᵀΣ1 = 0 ⟺ Σ^{1/2}1 = 0 ⟺ Σ1 = 0.
    Hence N = {Σ ⪰ 0 : Σ = HΣH} = {V M Vᵀ : M ⪰ 0} with V an orthonormal basis of 1⊥
    (Σ = VVᵀΣVVᵀ = V(VᵀΣV)Vᵀ and VᵀΣV ⪰ 0; conversely V M Vᵀ ⪰ 0 and (VMVᵀ)1 = 0).
    (ii) Write X in the orthonormal basis [V, u], u = 1/√n:
    X = [V u] [[A, b], [bᵀ, γ]] [V u]ᵀ with A = VᵀXV.  The Frobenius norm is invariant
    under this orthogonal change of basis, so for Σ = VMVᵀ
    ‖X − Σ‖² = ‖A − M‖² + 2‖b‖² + γ², minimized over M ⪰ 0 by M = P_PSD(A) (the
    eigenvalue clipping of A).  (iii) V P_PSD(A) Vᵀ = P_PSD(V A Vᵀ): if A = QΛQᵀ then
    V A Vᵀ = (VQ) Λ (VQ)ᵀ plus the eigenvalue 0 on u, and clipping commutes with this
    orthonormal change of basis.  Finally V A Vᵀ = VVᵀ X VVᵀ = HXH.  ∎

    (The paper's Algorithm 1 instead alternates between the PSD cone and
    {1ᵀΣ1 = 0}; that converges to *a* point of N, in general not the nearest one, and
    slowly, because N has no strictly feasible point.)
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != X.shape[1]:
        raise InvalidInputError(f"X must be a square matrix; got shape {X.shape}.")
    X = 0.5 * (X + X.T)
    row = X.mean(axis=0)
    HXH = X - row[None, :] - X.mean(axis=1)[:, None] + row.mean()
    w, U = np.linalg.eigh(0.5 * (HXH + HXH.T))
    keep = w > 0
    Up = U[:, keep] * np.sqrt(w[keep])
    Up -= Up.mean(axis=0)[None, :]  # exact 1ᵀ(columns) = 0 after round-off
    return Up @ Up.T


def whitening(K, rank_rtol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Whitened coordinates of eq. 9: returns (T, F) with Σ = T X Tᵀ, F = K T.

    V spans 1⊥ (:func:`basis_orthogonal_to_ones`); K̃ = VᵀKV = Q diag(μ) Qᵀ; the r
    eigen-directions with μ > ``rank_rtol`` · max μ are kept and T = V Q_r diag(μ_r)^{-1/2}
    (n × r), so Tᵀ1 = 0, TᵀKT = I_r (tr(KΣ) = tr X) and D_ij = (f_i − f_j)ᵀ X (f_i − f_j).
    The dropped directions change no learned distance by more than their tiny share of
    the kernel; with a positive definite K and the default tolerance none are dropped
    unless K is numerically singular.
    """
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    if n < 2:
        raise InvalidInputError(f"Need n >= 2 points; got {n}.")
    # V = H[:, :n−1] for the Householder reflection H = I − 2vvᵀ/(vᵀv) of
    # basis_orthogonal_to_ones, applied as rank-one updates: VᵀKV is the leading block of
    # HKH (O(n²) instead of two n³ products)
    v = np.full(n, 1.0 / np.sqrt(n))
    v[-1] -= 1.0
    beta = 2.0 / float(v @ v)
    Kv = K @ v
    HKH = K - beta * (np.outer(v, Kv) + np.outer(Kv, v)) + beta * beta * float(v @ Kv) * np.outer(v, v)
    Kt = HKH[: n - 1, : n - 1]
    mu, Q = np.linalg.eigh(0.5 * (Kt + Kt.T))
    top = float(mu[-1]) if mu.size else 0.0
    if not top > 1e-12 * n * max(float(np.max(np.abs(K))), np.finfo(float).tiny):
        raise InvalidInputError(
            "The kernel matrix is constant on the training points (VᵀKV = 0): every learned "
            "distance is 0. Use a non-degenerate kernel (e.g. a different bandwidth)."
        )
    keep = mu > rank_rtol * top
    M = Q[:, keep] / np.sqrt(mu[keep])  # T = V M = H[:, :n−1] M
    T = np.vstack([M, np.zeros((1, M.shape[1]))]) - beta * np.outer(v, v[: n - 1] @ M)
    F = K @ T
    return np.ascontiguousarray(T), np.ascontiguousarray(F)


# --------------------------------------------------------------------------- the rule
def class_counts(D_cross, codes, n_classes, h) -> np.ndarray:
    """Number of training points of each class within learned squared distance h̃ of
    each query (the naïve-kernel sums of eq. 2): an m × L integer matrix."""
    inside = np.asarray(D_cross) <= float(h)
    counts = np.zeros((inside.shape[0], int(n_classes)), dtype=np.int64)
    for l in range(int(n_classes)):
        counts[:, l] = inside[:, codes == l].sum(axis=1)
    return counts


def rule_predict(D_cross, codes, n_classes, h, tie_break: str = "nearest") -> np.ndarray:
    """The kernel classification rule of eq. 2 with the naïve kernel.

    A query gets the class with the most training points within learned squared
    distance h̃ (``D_cross[q, i] <= h``).  Ties — including the empty ball, where every
    count is 0 — are broken by ``tie_break``:

    * ``"nearest"``: the class of the nearest training point (smallest learned distance)
      among the tied classes (for an empty ball: the 1-NN label; for equal distances the
      first such point);
    * ``"first"``: the first tied class in sorted label order, the convention of eq. 1
      (class 0 wins a tie).

    Returns integer class codes (indices into the sorted classes).
    """
    D_cross = np.asarray(D_cross, dtype=np.float64)
    counts = class_counts(D_cross, codes, n_classes, h)
    tied = counts == counts.max(axis=1, keepdims=True)
    if tie_break == "first":
        return np.argmax(tied, axis=1)
    if tie_break != "nearest":
        raise InvalidInputError(f"tie_break must be 'nearest' or 'first'; got {tie_break!r}.")
    pred = np.argmax(counts, axis=1)
    for q in np.flatnonzero(tied.sum(axis=1) > 1):
        d = np.where(tied[q][codes], D_cross[q], np.inf)
        pred[q] = codes[int(np.argmin(d))]
    return pred
