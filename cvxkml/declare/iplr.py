"""Identity-plus-low-rank (IPLR) metric learning / reduced-basis kernel learning
(Jain et al. 2012, §3.6 eq. 8–11; §4.3 eq. 19–21, Theorems 7–8, LogDet case).

W = I + U L Uᵀ with U (d × k) an orthonormal basis U = R (RᵀR)^-½ of span(R), R = ΦJ.
With F = I + L and Φ' = UᵀΦ (k × n):  D_ld(W, I) = D_ld(F, I_k) (eq. 9) and
d_W(i, j) = r_ij + d_F(φ'_i, φ'_j), where r_ij = d_I(φ_i, φ_j) − d_I(φ'_i, φ'_j) ≥ 0 is the
part of the distance outside span(U) (eq. 10).  Problem (8) is therefore problem (11):
LogDet metric learning of the k × k matrix F on the reduced points φ'_i with bounds
shifted by r_ij — an :class:`~cvxkml.declare.logdet.ITML` problem, solved by the same
O(k²)-per-projection Bregman method after O(min(n, d)·k) preparation.  With slack, the
slack lives on the shifted bounds (ξ0 = b − r_ij), the literal reading of "(11) is an
instance of (2)".

Pairs whose shifted bound is <= 0 are decided analytically: a dissimilar one always
holds (dropped), a similar one cannot hold in this basis (InfeasibleError for hard
constraints; dropped with a warning under slack).  Both are listed in ``dropped_pairs``.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np

from .._validation import (
    as_generator,
    check_choice,
    check_constraints,
    check_data,
    check_int,
    check_kernel_matrix,
    check_labels,
    check_positive,
    input_rank_rtol,
)
from ..errors import InfeasibleError, InvalidInputError
from ..learned import FactoredMetric, LearnedKernel
from ..sideinfo import PairConstraints
from ..solution import Solution
from .logdet import ITML
from .problem import Problem

__all__ = ["IPLR", "feature_basis", "kernel_basis", "kernel_kmeans", "basis_span"]


# ----------------------------------------------------------------------------- bases
#: restarts of the k-means of the bases (the best of them is kept)
KMEANS_RESTARTS = 4


def _kmeans_labels_and_centres(X, k, rng):
    """scikit-learn's :class:`~sklearn.cluster.KMeans` (k-means++ seeding, the best of
    :data:`KMEANS_RESTARTS`) on the rows of X; returns (centres k × d, labels)."""
    from sklearn.cluster import KMeans

    km = KMeans(n_clusters=k, n_init=KMEANS_RESTARTS, random_state=int(rng.integers(2**31))).fit(X)
    return km.cluster_centers_, km.labels_


def kernel_kmeans(K, k, random_state=None) -> np.ndarray:
    """Kernel k-means in feature space; returns the cluster labels.

    Kernel k-means on K is k-means on the rows of any G with G Gᵀ = K: the feature-space
    distances ‖φ(x_i) − φ(x_j)‖² = K_ii + K_jj − 2K_ij are the rows' Euclidean distances, and
    a cluster mean in feature space is the mean of its rows.  G is the pivoted incomplete
    Cholesky factor of K (:func:`cvxkml.factor.incomplete_cholesky`, residual trace
    <= 1e-10·tr K, O(n r²) for rank r), clustered by scikit-learn's KMeans — no library
    clusters a kernel matrix itself, and the factor makes one unnecessary.
    """
    from ..factor import incomplete_cholesky

    G, _ = incomplete_cholesky(check_kernel_matrix(K, "K"))
    if G.shape[1] == 0:
        raise InvalidInputError("Kernel k-means needs a non-zero kernel matrix K.")
    return _kmeans_labels_and_centres(G, k, as_generator(random_state))[1]


def _class_groups(y, k, rng):
    """Index groups for the class bases (Jain et al. 2012 §3.6 and §6.2): k = c the c
    classes; k > c the classes, to be split into (about) k / c clusters each (``per``);
    k < c a random subset of k classes (the kernel basis; the feature basis clusters the
    class means instead, :func:`feature_basis`)."""
    classes = np.unique(y)
    c = classes.size
    if k <= c:
        chosen = classes if k == c else rng.choice(classes, k, replace=False)
        return [np.flatnonzero(y == cl) for cl in chosen], None
    per = np.full(c, k // c)
    per[: k % c] += 1
    return [np.flatnonzero(y == cl) for cl in classes], per


def _svd_basis(X, k, rank_rtol):
    """The top-k right singular vectors of X (d × k), from the eigendecomposition of the
    smaller Gram matrix (X Xᵀ when n <= d: O(n²d), the cost of one span-space Gram).
    The basis stops at the numerical rank of X, the singular vectors whose squared
    singular value exceeds ``rank_rtol`` times the largest (the row space, as
    :class:`~cvxkml.declare.spaces.SpanSpace` counts it; k = None takes all of them):
    further vectors span no direction of the data and leave W* unchanged (F* is 1 on them)."""
    n, d = X.shape
    wide = n <= d
    w, V = np.linalg.eigh(X @ X.T if wide else X.T @ X)
    w, V = w[::-1], V[:, ::-1]
    top = max(float(w[0]), np.finfo(float).tiny)
    rank = int(np.count_nonzero(w > rank_rtol * top))
    if rank == 0:
        raise InvalidInputError("X is zero (rank 0): it has no singular vectors to form a basis from.")
    k = rank if k is None else min(k, rank)
    if not wide:
        return V[:, :k]
    return (X.T @ V[:, :k]) / np.sqrt(w[:k])


def feature_basis(X, k, method="svd", y=None, random_state=None, rank_rtol: float = 1e-10) -> np.ndarray:
    """A basis R (d × k) of the low-rank part of W = I + U L Uᵀ (Jain et al. 2012 §3.6).

    Parameters
    ----------
    X : (n, d) array
        The data (rows are points: Φ = Xᵀ).
    k : int or None
        The basis size, at most min(n, d) (``"svd"`` stops at the numerical rank of X).
        None: that rank for ``"svd"`` (the whole row space: problem (8) is then ITML's,
        Theorem 1), the number of classes for ``"class-means"``; ``"kmeans"`` needs k.
    method : {"svd", "kmeans", "class-means"}
        ``"svd"``: the top-k singular vectors of Φ (the right singular vectors of X,
        :func:`_svd_basis`); ``"kmeans"``: the k-means centres of the points;
        ``"class-means"`` (needs ``y``, c classes): the class means for k = c, the means of
        k clusters of the class means for k < c, the centres of about k / c clusters of each
        class for k > c (§3.6's three cases; clusters by scikit-learn's KMeans).
    y : array-like of shape (n,) or None
        Class labels (``"class-means"``).
    random_state : int, Generator or None
        Seed of the k-means restarts.
    rank_rtol : float
        The relative cut of the squared singular values counted in the rank (``"svd"``).

    Raises
    ------
    InvalidInputError
        An unknown method, k out of range, or ``"class-means"`` without labels.
    """
    X = check_data(X)
    rng = as_generator(random_state)
    check_choice(method, "the feature basis", ("svd", "kmeans", "class-means"))
    if k is not None:
        k = check_int(k, "k (the basis size)", minimum=1, maximum=min(X.shape))
    if method == "svd":
        return _svd_basis(X, k, rank_rtol)
    if method == "kmeans":
        if k is None:
            raise InvalidInputError("basis 'kmeans' needs k, the number of clusters (an integer >= 1).")
        return _kmeans_labels_and_centres(X, k, rng)[0].T
    if y is None:
        raise InvalidInputError("basis 'class-means' needs the labels y (or choose 'svd' or 'kmeans').")
    y = check_labels(y, "y", X.shape[0])
    classes = np.unique(y)
    means = np.array([X[y == cl].mean(0) for cl in classes])
    if k is None or k == classes.size:
        return means.T
    if k < classes.size:
        return _kmeans_labels_and_centres(means, k, rng)[0].T
    groups, per = _class_groups(y, k, rng)
    cols = [_kmeans_labels_and_centres(X[g], min(p, len(g)), rng)[0] for g, p in zip(groups, per)]
    return np.vstack(cols).T


def kernel_basis(K0, k, method="random", y=None, random_state=None) -> np.ndarray:
    """J (n × k) with R = ΦJ: "random" (Gaussian J), "subset" (indicator columns of k random
    points), "kernel-kmeans" (normalized cluster indicators: R holds the cluster means in
    feature space), "class-means" (normalized class indicators, as for features)."""
    K0 = check_kernel_matrix(K0, "K0")
    n = K0.shape[0]
    rng = as_generator(random_state)
    check_choice(method, "the kernel basis J", ("random", "subset", "kernel-kmeans", "class-means"))
    k = check_int(k, "k (the basis size)", minimum=1, maximum=n)
    if method == "random":
        return rng.normal(size=(n, k))
    if method == "subset":
        J = np.zeros((n, k))
        J[rng.choice(n, k, replace=False), np.arange(k)] = 1.0
        return J
    if method in ("kernel-kmeans", "class-means"):
        if method == "kernel-kmeans":
            lab = kernel_kmeans(K0, k, rng.integers(2**31))
            groups = [np.flatnonzero(lab == c) for c in range(k)]
        else:
            if y is None:
                raise InvalidInputError("basis 'class-means' needs the labels y.")
            groups, per = _class_groups(check_labels(y, "y", n), k, rng)
            if per is not None:
                sub = []
                for g, p in zip(groups, per):
                    lab = kernel_kmeans(K0[np.ix_(g, g)], min(p, len(g)), rng.integers(2**31))
                    sub += [g[lab == c] for c in range(min(p, len(g)))]
                groups = sub
        groups = [g for g in groups if g.size]
        J = np.zeros((n, len(groups)))
        for c, g in enumerate(groups):
            J[g, c] = 1.0 / g.size
        return J
    raise AssertionError(method)  # unreachable: check_choice above


def basis_span(R, rank_rtol: float = 1e-10) -> np.ndarray:
    """An orthonormal basis U (d × r) of span(R), r = the numerical rank of R: with
    RᵀR = V diag(w) Vᵀ, U = R V₊ diag(w₊)^-½ over the eigenvalues w₊ > ``rank_rtol``·max w.
    For R of full column rank U spans what R (RᵀR)^-½ spans, and problem (8) depends on
    the subspace only (L is any k × k matrix), so W* is the same; dependent columns (the
    class means of centred data, which sum to zero) are dropped instead of refused."""
    R = check_data(R, "R")
    w, V = np.linalg.eigh(R.T @ R)
    keep = w > rank_rtol * max(float(w[-1]), np.finfo(float).tiny)
    if not np.any(keep):
        raise InvalidInputError("The basis R is zero: it spans no subspace to learn the low-rank part in.")
    return (R @ V[:, keep]) / np.sqrt(w[keep])


def _inv_sqrt_psd(A, name, rtol: float = 1e-10):
    w, V = np.linalg.eigh(0.5 * (A + A.T))
    if w[0] <= rtol * max(w[-1], np.finfo(float).tiny):
        raise InvalidInputError(
            f"{name} is singular (smallest eigenvalue {w[0]:.3g}): the basis columns are dependent "
            "in feature space; use fewer or different basis vectors."
        )
    return (V / np.sqrt(w)) @ V.T


# ----------------------------------------------------------------------------- problem
class IPLR(Problem):
    """Identity-plus-low-rank LogDet metric learning, W = I + U L Uᵀ (eq. 8 / 11).

    Build with :meth:`from_features` (explicit X, basis R) or :meth:`from_kernel`
    (K0 and J with R = ΦJ).  ``reduced`` is the k × k problem (11) as an
    :class:`~cvxkml.declare.logdet.ITML` object: its ``solve()`` (fast Bregman, O(k²) per
    projection) and ``solve_reference()`` (CVXPY) return F*.  :meth:`metric` and
    :meth:`kernel` map F* back; :meth:`learned_kernel` evaluates on new points.
    """

    def __init__(self, Phi_red, base_dist, constraints, gamma=None):
        self.Phi_red = check_data(Phi_red, "Phi_red")  # n × k rows φ'_i
        (P,) = check_constraints(constraints, (PairConstraints,), "IPLR (problem (8) has distance constraints)")
        gamma = check_positive(gamma, "gamma", allow_none=True)
        n = self.Phi_red.shape[0]
        P = P.validate(n)
        V = self.Phi_red[P.i] - self.Phi_red[P.j]
        red = np.einsum("ij,ij->i", V, V)
        resid = np.maximum(base_dist(P.i, P.j) - red, 0.0)  # r_ij >= 0
        shifted = P.bound - resid
        scale = float(np.max(P.bound))  # relative: any scale
        always = (P.y < 0) & (shifted <= 1e-12 * scale)  # dissimilar, holds already
        never = (P.y > 0) & (shifted <= 1e-12 * scale)  # similar, impossible
        zero_red = red <= 1e-12 * scale  # no component in span(U)
        never |= zero_red & ~always & (P.y < 0)
        always |= zero_red & ~never & (P.y > 0)
        if np.any(never) and gamma is None:
            c = int(np.flatnonzero(never)[0])
            raise InfeasibleError(
                f"Pair {c} ({P.i[c]}, {P.j[c]}) cannot satisfy its bound in this basis: its distance "
                f"outside span(U) is {resid[c]:.4g} (bound {P.bound[c]:.4g}). Enlarge or change the "
                "basis (k), or use slack (gamma)."
            )
        if np.any(never):
            warnings.warn(
                f"Dropped {int(never.sum())} similar pair(s) whose distance outside the basis "
                "already exceeds the bound (not satisfiable in this basis).",
                UserWarning,
                stacklevel=3,
            )
        keep = ~(always | never)
        self.constraints = P
        self.residual = resid
        self.dropped_pairs = np.flatnonzero(~keep)
        if not np.any(keep):
            raise InvalidInputError(
                "No constraint is active in this basis (every pair already holds, or cannot hold, "
                "whatever the k × k matrix); nothing to learn. Enlarge or change the basis (k), "
                "or give other pairs."
            )
        self.kept = np.flatnonzero(keep)
        self.gamma = gamma
        self.reduced = ITML(
            self.Phi_red, PairConstraints(P.i[keep], P.j[keep], P.y[keep], shifted[keep]), gamma=gamma, space="features"
        )  # F* is k × k, whatever n

    # -------------------------------------------------------------- constructors
    @classmethod
    def from_features(cls, X, constraints, basis="svd", k=None, y=None, gamma=None, random_state=None):
        """Explicit features X (n × d); ``basis`` is a name for :func:`feature_basis` (with
        k, y) or a d × k array R.  U = R (RᵀR)^-½."""
        X = check_data(X)
        R = feature_basis(X, k, basis, y, random_state) if isinstance(basis, str) else check_data(basis, "R")
        if R.shape[0] != X.shape[1]:
            raise InvalidInputError(f"The basis R must be d × k with d = {X.shape[1]}; got {R.shape}.")
        U = R @ _inv_sqrt_psd(R.T @ R, "RᵀR")

        def base_dist(i, j):
            D = X[i] - X[j]
            return np.einsum("ij,ij->i", D, D)

        self = cls(X @ U, base_dist, constraints, gamma)
        self.X, self.U, self.K0, self.J = X, U, None, None
        return self

    @classmethod
    def from_kernel(cls, K0, constraints, J="random", k=None, y=None, gamma=None, random_state=None):
        """Kernel K0 (n × n); ``J`` a name for :func:`kernel_basis` (with k, y) or an n × k
        array.  Φ' = (JᵀK0J)^-½ JᵀK0, so only a k × k matrix is inverted."""
        rtol = input_rank_rtol(K0, 1e-10)  # float32 K0: its round-off is not a direction
        K0 = check_kernel_matrix(K0, "K0")
        J = kernel_basis(K0, k, J, y, random_state) if isinstance(J, str) else check_data(J, "J")
        if J.shape[0] != K0.shape[0]:
            raise InvalidInputError(f"J must be n × k with n = {K0.shape[0]}; got {J.shape}.")
        KJ_is = _inv_sqrt_psd(J.T @ K0 @ J, "JᵀK0J", rtol)
        Phi_red = (KJ_is @ J.T @ K0).T
        d0 = np.diag(K0)
        self = cls(Phi_red, lambda i, j: d0[i] + d0[j] - 2 * K0[i, j], constraints, gamma)
        self.X, self.U, self.K0, self.J, self._KJ_is = None, None, K0, J, KJ_is
        return self

    # -------------------------------------------------------------- solving and maps
    def exact_size(self) -> int:
        """k, the side of the reduced k × k matrix F (problem (11))."""
        return self.reduced.exact_size()

    def to_cvxpy(self):
        """The exact model of the reduced problem (11) (:meth:`ITML.to_cvxpy`): F is k × k."""
        return self.reduced.to_cvxpy()

    def objective(self, F, xi=None) -> float:
        """The LogDet divergence D_ld(F, I) of (11) (plus the slack term with ``gamma``)."""
        return self.reduced.objective(F, xi)

    def violations(self, F, xi=None) -> np.ndarray:
        """The kept constraints' violations under F (``kept`` indexes them in ``constraints``)."""
        return self.reduced.violations(F, xi)

    # ------------------------------------------------------------------ the certificate of an answer
    # An answer is the reduced problem's (F, k × k): every answer hook is the reduced ITML's.
    def answer_primal(self, sol) -> tuple:
        """The reduced problem's :meth:`~cvxkml.declare.Problem.answer_primal`."""
        return self.reduced.answer_primal(sol)

    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """The reduced problem's checks (F is k × k)."""
        self.reduced.check_answer(sol, symmetric_tol=symmetric_tol, psd_tol=psd_tol)

    def answer_objective(self, sol) -> float:
        """The reduced problem's objective at the answer."""
        return self.reduced.answer_objective(sol)

    def answer_violations(self, sol) -> np.ndarray:
        """The reduced problem's violations at the answer."""
        return self.reduced.answer_violations(sol)

    def answer_dual_value(self, sol, objective: float) -> float | None:
        """The reduced problem's Lagrange dual value of the answer's multipliers."""
        return self.reduced.answer_dual_value(sol, objective)

    def dual_value_unverified(self) -> str | None:
        """The reduced problem's (None: its dual value is recomputed)."""
        return self.reduced.dual_value_unverified()

    def relative_violation_of(self, violations) -> float:
        """The reduced problem's relative violation (max(1, |target|) per constraint)."""
        return self.reduced.relative_violation_of(violations)

    def _max_relative_violation(self, viol) -> float:
        return self.reduced._max_relative_violation(viol)

    def objective_scale(self) -> float:
        """The reduced problem's unit."""
        return self.reduced.objective_scale()

    def whitened_geometry(self):
        """The reduced problem's whitened geometry (F = X̂ on the reduced points)."""
        return self.reduced.whitened_geometry()

    def certificate(self, objective: float, dual_value, violations, *, rtol: float = 1e-6, atol=None) -> dict:
        """The reduced problem's certificate."""
        return self.reduced.certificate(objective, dual_value, violations, rtol=rtol, atol=atol)

    def solve(self, tol: float = 1e-9, max_iter: int = 20_000, callback=None, warm_start=None, **kw):
        """F* by the fast solver of the reduced problem (11) (:meth:`SpectralProblem.solve`:
        Bregman projections at O(k²) each, or the dual solver; the same certificate).
        ``info["kept"]`` and ``info["dropped_pairs"]`` index ``constraints``: the pairs
        the reduced problem holds, and those decided analytically (see the module)."""
        sol = self.reduced.solve(tol=tol, max_iter=max_iter, callback=callback, warm_start=warm_start, **kw)
        sol.info["kept"], sol.info["dropped_pairs"] = self.kept, self.dropped_pairs
        return sol

    def solve_reference(self, solver=None, eps=None, accept_inaccurate: bool = False, **opts):
        """F* by the exact model of the reduced problem (11), with its Lagrange certificate."""
        return self.reduced.solve_reference(solver=solver, eps=eps, accept_inaccurate=accept_inaccurate, **opts)

    def metric(self, F) -> np.ndarray:
        """W* = I + U (F* − I) Uᵀ (explicit features)."""
        if self.U is None:
            raise InvalidInputError("metric() needs explicit features; use kernel() for a kernel basis.")
        return np.eye(self.U.shape[0]) + self.U @ (F - np.eye(F.shape[0])) @ self.U.T

    def learned_metric(self, solution) -> FactoredMetric:
        """W* = I + U (F* − I) Uᵀ as a :class:`~cvxkml.learned.FactoredMetric` (never d × d):
        with F* = Q diag(μ) Qᵀ, W* = I + (UQ) diag(μ − 1) (UQ)ᵀ, UQ orthonormal (explicit
        features; a :class:`~cvxkml.solution.Solution` or F itself)."""
        if self.U is None:
            raise InvalidInputError(
                "learned_metric() needs explicit features; use learned_kernel() for a kernel basis."
            )
        F = solution.matrix if isinstance(solution, Solution) else check_data(solution, "F")
        if F.shape != (self.U.shape[1],) * 2:
            raise InvalidInputError(f"F must be {self.U.shape[1]} × {self.U.shape[1]} (the basis size); got {F.shape}.")
        mu, Q = np.linalg.eigh(0.5 * (F + F.T))
        return FactoredMetric(self.U @ Q, mu - 1.0, alpha=1.0)

    def kernel(self, F) -> np.ndarray:
        """K* = K0 + Φ'ᵀ (F* − I) Φ' = K0 + K0 J (JᵀK0J)^-½ (F* − I) (JᵀK0J)^-½ JᵀK0."""
        K0 = self.K0 if self.K0 is not None else self.X @ self.X.T
        return K0 + self.Phi_red @ (F - np.eye(F.shape[0])) @ self.Phi_red.T

    def pair_sq_distances(self, F, i, j) -> np.ndarray:
        """d_W(i, j) = r_ij + d_F(φ'_i, φ'_j) for training pairs (eq. 10)."""
        K = self.kernel(F)
        i, j = np.asarray(i), np.asarray(j)
        return K[i, i] + K[j, j] - 2 * K[i, j]

    def learned_kernel(self, F, base, X_train) -> LearnedKernel:
        """κ(z1, z2) = κ0(z1, z2) + k1ᵀ S k2 with S = J (JᵀK0J)^-½ (F* − I) (JᵀK0J)^-½ Jᵀ
        (Theorem 8 / eq. 18 with α = 1); ``base`` = κ0, ``X_train`` the n training points."""
        if self.J is None:
            raise InvalidInputError("learned_kernel() is for the kernel basis; use metric() for features.")
        M = self.J @ self._KJ_is
        return LearnedKernel(base, X_train, M @ (F - np.eye(F.shape[0])) @ M.T)

    # -------------------------------------------------------------- eq. 8 model (verification)
    def eq8_model(self) -> cp.Problem:
        """Problem (8) written directly over the d × d W = I + U L Uᵀ (explicit features,
        small d), with the same slack convention as (11): variables "L" (and "xi").
        Its optimum equals the reduced problem's (Jain et al. eq. 9–10)."""
        if self.U is None:
            raise InvalidInputError("eq8_model() needs explicit features.")
        d, k = self.U.shape
        L = cp.Variable((k, k), symmetric=True, name="L")
        W = np.eye(d) + self.U @ L @ self.U.T
        W = 0.5 * (W + W.T)
        P = self.constraints
        keep = self.kept
        V = self.X[P.i[keep]] - self.X[P.j[keep]]
        dist = cp.sum(cp.multiply(V @ W, V), axis=1)
        obj = cp.trace(W) - cp.log_det(W) - d
        b = P.bound[keep]
        y = P.y[keep]
        r = self.residual[keep]
        if self.gamma is None:
            cons = [cp.multiply(y, dist - b) <= 0]
        else:
            xi0 = b - r
            s = cp.Variable(keep.size, name="xi_ratio")
            obj = obj + self.gamma * (cp.sum(s) - cp.sum(cp.log(s)) - keep.size)
            cons = [cp.multiply(y, dist - r - cp.multiply(xi0, s)) <= 0]
        return cp.Problem(cp.Minimize(obj), cons)
