"""LMNN as a declarative problem: the exact CVXPY model (ground truth) and the fast
primal–dual solver (Weinberger & Saul 2009; Wang, Do, Woznica & Kalousis 2011, eq. 18).

    min_{A ⪰ 0, ξ ≥ 0}  Σ_ij S_ij { (1 − γ) d_A(i, j) + γ Σ_l (1 − Y_il) ξ_ijl }
    s.t.                d_A(i, l) − d_A(i, j) >= 1 − ξ_ijl,

with d_A(i, j) = (z_i − z_j)ᵀ A (z_i − z_j) on a feature matrix Z (n × D):

* :meth:`LMNNProblem.linear` — z_i = x_i, A is d × d (Weinberger & Saul);
* :meth:`LMNNProblem.kernel` — z_i = K^i, the i-th column of a kernel matrix, A is n × n
  (Wang et al. eq. 2, 18; the optimal form M = Φᵀ A Φ of Jain et al. 2010);
* :meth:`LMNNProblem.multiple_kernels` — NR-ML-MKL (Wang et al. eq. 12–14):
  z_i = Φ_Z(x_i) = (K_1^i, …, K_m^i), A″ is mn × mn.

Both solvers work in the orthonormal coordinates of Z (Z = U S Vᵀ, numerical rank r):
d depends on A only through X̂ = S Vᵀ A V S (r × r), so the model over X̂ ⪰ 0 with
features U is an exact reparameterization on the row space of Z, far better
conditioned than the literal model when Z is a kernel matrix (``to_cvxpy(whiten=False)``
builds the literal D × D model for checking).  The returned A = V S⁻¹ X̂ S⁻¹ Vᵀ + the
start matrix's block on the orthogonal complement of the row space (which no training
distance sees; with the default start A0 = I it is the identity there, as a projected
gradient path from I leaves it).

A caveat the model makes visible: for a *full-rank* kernel matrix (e.g. Gaussian) the
kernel parameterization can collapse every class to a point on the training set, so the
optimum is F* = 0 (take A = K⁻¹ w wᵀ K⁻¹ with w constant on each class); the minimizers
then grow like K⁻¹, and what a solver returns depends on where it stops.  With a
rank-deficient K (linear, low-degree polynomial kernels, or fewer features than
points) the optimum is non-trivial.

Exact model size: one hinge slack per triplet, n·k·(n − n_c) ≈ n²k/2 of them, and an r × r
PSD block, so the exact model is practical up to a few tens of points for kernel / NR LMNN
(r = n) and a few hundred for low-dimensional linear LMNN; beyond that use
:meth:`LMNNProblem.solve`.  A full-rank kernel (degenerate optimum F* = 0) is much harder
for the conic solvers, which often end ``optimal_inaccurate``.  Measured times:
``reference/lmnn-speed.md`` and ``reference/exact-limits.md``.

The problem class is composed of parts of one responsibility each: the exact CVXPY model and
its extension (``_lmnn_model.LMNNExactModel``), the start and the pipeline's hooks of the
fast side (``_lmnn_fast.LMNNFastSide``); the fast algorithm itself is the registered solver
``pdhg-lmnn`` (:mod:`cvxkml.adapters.lmnn`).
"""

from __future__ import annotations

import numpy as np

from .._validation import (
    as_float_array,
    check_choice,
    check_int,
    check_kernel_matrix,
    check_labels,
    check_number,
    check_positive,
)
from ..errors import InvalidInputError, SolverError
from ..formulas.lmnn import (
    STALL_ITER,
    LMNNTriplets,
    check_targets,
    count_triplets,
    feature_target_neighbors,
    lmnn_objective,
    lmnn_slack,
    orthonormal_factor,
    pair_quadratic,
    psd_pair_distances,
    target_neighbors,
    whitened_dual_value,
)
from ..kernels import kernel_sq_distances
from ..solution import Solution
from ._lmnn_fast import LMNNFastSide
from ._lmnn_model import LMNNExactModel
from .extend import Extendable
from .problem import Problem

__all__ = ["LMNNProblem", "check_kernel_list", "ACTIVE_MIN_TRIPLETS"]

#: ``LMNNProblem.solve(impostors="auto")`` uses the active impostor set beyond this many triplets
ACTIVE_MIN_TRIPLETS = 2_000_000


def _check_gamma(gamma) -> float:
    return check_number(
        gamma,
        "gamma",
        low=0.0,
        high=1.0,
        low_open=True,
        what="a number in (0, 1] (weight of the hinge terms; the paper uses 0.5)",
    )


def check_kernel_list(Ks, name: str = "kernels") -> list[np.ndarray]:
    """A non-empty list of symmetric PSD kernel matrices of one common size n × n.

    Raises
    ------
    InvalidInputError
        Empty list, non-square matrix, or matrices of different sizes.
    NotPSDError
        A matrix with a clearly negative eigenvalue.
    """
    if isinstance(Ks, np.ndarray) and Ks.ndim == 2:
        Ks = [Ks]
    try:
        Ks = list(Ks)
    except TypeError as exc:
        raise InvalidInputError(f"{name} must be a list of kernel matrices; got {type(Ks).__name__}.") from exc
    if not Ks:
        raise InvalidInputError(f"{name} must contain at least one kernel matrix.")
    out = []
    for l, K in enumerate(Ks):
        K = check_kernel_matrix(K, f"{name}[{l}]")
        if out and K.shape != out[0].shape:
            raise InvalidInputError(
                f"All kernel matrices must have the same size (one row/column per training "
                f"point); {name}[0] is {out[0].shape[0]} × {out[0].shape[0]} but {name}[{l}] is "
                f"{K.shape[0]} × {K.shape[0]}. Compute every kernel on the same points."
            )
        out.append(K)
    return out


class LMNNProblem(LMNNFastSide, LMNNExactModel, Extendable, Problem):
    """LMNN (eq. 18) on a feature matrix Z: exact model and fast solver, under the
    :class:`~cvxkml.declare.problem.Problem` contract.

    Use the constructors :meth:`linear`, :meth:`kernel` and :meth:`multiple_kernels`;
    the plain constructor takes any feature matrix.

    Parameters
    ----------
    Z : array-like of shape (n, D)
        Features z_i (rows); d_A(i, j) = (z_i − z_j)ᵀ A (z_i − z_j).
    y : array-like of shape (n,)
        Class labels (at least 2 classes; every class needs k + 1 members).
    k : int, default=5
        Target neighbours per point (the paper's setting).
    gamma : float in (0, 1], default=0.5
        Weight γ of the hinge terms (the paper's setting).
    neighbor_sq_dist : array-like of shape (n, n), optional
        Squared distances that define the target neighbours (default: Euclidean
        distances between the rows of Z).
    targets : tuple (i, j) of index arrays, optional
        Explicit target entries instead of nearest neighbours.
    triplets : LMNNTriplets, optional
        A ready structure (shared by several problems on the same points, e.g. the
        metric steps of the MKL alternation).
    small_classes : {"raise", "shrink"}, default="raise"
        What to do with classes of fewer than k + 1 members
        (:func:`cvxkml.formulas.lmnn.target_neighbors`).
    rank_rtol : float, default=1e-8
        Singular values of Z below ``rank_rtol`` × the largest are dropped (row space).
        A = V S⁻¹ X̂ S⁻¹ Vᵀ has condition up to 1/rank_rtol², so evaluating distances
        through A (rather than through X̂ or the factor) loses up to that much accuracy
        for ill-conditioned kernels; the solvers and ``Solution.objective`` /
        ``violations`` work with X̂.
    space : {"auto", "features", "span"}, default="auto"
        Both solve in the span of the data (the optimal A lies in the row space of Z: every
        training distance sees only X̂ = S Vᵀ A V S, r × r with r = rank Z <= n; Z = U S Vᵀ
        by a thin SVD), so the two give the same optimum, multipliers and certificate.  They
        differ in the matrix a Solution carries: "features" the D × D A (with the start's
        block off the row space, the identity by default); "span" Â = S⁻¹ X̂ S⁻¹ (r × r, A =
        Vᵀ-basis Â plus the identity off the row space, never formed: :meth:`learned_metric`
        gives it factored).  "auto": "span" for linear LMNN (:meth:`linear`) when D > n
        (wide data), else "features".

    Attributes
    ----------
    triplets : LMNNTriplets
        Pairs, targets and triplets.
    U, s, Vt : the factor Z ≈ U diag(s) Vt on the numerical row space (rank r).
    """

    kind = "features"
    #: :meth:`default_solver` uses Clarabel up to an r × r PSD block with r = 60
    clarabel_max_size = 60

    def __init__(
        self,
        Z,
        y,
        k: int = 5,
        gamma: float = 0.5,
        *,
        neighbor_sq_dist=None,
        targets=None,
        triplets: LMNNTriplets | None = None,
        rank_rtol: float = 1e-8,
        small_classes: str = "raise",
        space: str = "auto",
    ):
        self.Z = as_float_array(Z, "Z", ndim=2)
        n = self.Z.shape[0]
        if n < 2 or self.Z.shape[1] < 1:
            raise InvalidInputError(f"Z must have at least two rows and one column; got {self.Z.shape}.")
        if np.all(self.Z == self.Z[0]):
            raise InvalidInputError(
                "All rows of Z are identical, so every distance is 0 and nothing can be learned; "
                "give features (or a kernel matrix) that tell the points apart."
            )
        self.y = y = check_labels(y, "y", n)
        self.gamma = _check_gamma(gamma)
        k = check_int(k, "k", minimum=1)
        check_choice(small_classes, "small_classes", ("raise", "shrink"))
        rank_rtol = check_number(rank_rtol, "rank_rtol", low=0.0, high=1.0, low_open=True)
        self._triplets = None
        if triplets is not None:
            if not isinstance(triplets, LMNNTriplets) or triplets.n != n:
                raise InvalidInputError(f"triplets must be an LMNNTriplets built for {n} points.")
            self._triplets = triplets
            self.codes, self.targets, self.k = triplets.codes, (triplets.target_i, triplets.target_j), triplets.k
        else:
            # the targets now; the full triplet list (n·k·(n − n_c) of them) only when something
            # asks for it (:attr:`triplets`): the active-set solve never does
            self.codes = np.unique(y, return_inverse=True)[1].astype(np.int64)
            if targets is not None:
                t_i, t_j = check_targets(targets, y)
                self.k = int(np.max(np.bincount(t_i, minlength=n)))
            else:
                if neighbor_sq_dist is None:  # Euclidean, class by class (no n × n matrix)
                    t_i, t_j = feature_target_neighbors(self.Z, y, k, small_classes)
                else:
                    t_i, t_j = target_neighbors(neighbor_sq_dist, y, k, small_classes)
                self.k = k
            self.targets = (t_i, t_j)
        self.U, self.s, self.Vt = orthonormal_factor(self.Z, rank_rtol)
        self._space = check_choice(space, "space", ("auto", "features", "span"))

    @property
    def space(self) -> str:
        """ "features" or "span" (the ``space`` option resolved: "auto" is "span" for linear LMNN
        on wide data, D > n, and "features" otherwise — the kernel and multiple-kernel
        problems' A is the problem itself)."""
        if self._space != "auto":
            return self._space
        return "span" if self.kind == "linear" and self.Z.shape[1] > self.Z.shape[0] else "features"

    @property
    def matrix_dim(self) -> int:
        """The size of the matrix a Solution carries: D (features) or r (span)."""
        return self.rank if self.space == "span" else self.dim

    def answer_matrix(self, X, complement=None) -> np.ndarray:
        """The learned matrix a Solution carries for the whitened X̂ (see :meth:`_answer`)."""
        return self._answer(X, complement)

    def _answer(self, X, complement=None) -> np.ndarray:
        """The learned matrix a Solution carries: A (D × D, :meth:`matrix_from_whitened`) in the
        feature space; in the span space Â = S⁻¹ X̂ S⁻¹ (r × r), the metric on the row-space
        basis Vt (A = Vtᵀ Â Vt + the identity off the row space, never formed:
        :meth:`learned_metric`)."""
        if self.space == "features":
            return self.matrix_from_whitened(X, complement)
        X = np.asarray(X, dtype=float)
        M = X / np.outer(self.s, self.s)
        return 0.5 * (M + M.T)

    def learned_metric(self, solution):
        """The learned metric A of a solution as a :class:`~cvxkml.learned.FactoredMetric`
        (A = I + Vtᵀ Q diag(λ) Qᵀ Vt with Q diag(λ) Qᵀ = Â − I; never D × D), for solutions
        whose start had the identity off the row space (the default start)."""
        from ..learned import FactoredMetric

        if isinstance(solution, Solution):
            X = solution.info.get("X") if isinstance(solution.info, dict) else None
            if X is None or solution.info.get("complement") is not None:
                raise InvalidInputError(
                    "learned_metric needs a solution of this problem from the default start "
                    "(its info['X'], identity off the row space)."
                )
        else:
            X = as_float_array(solution, "X", ndim=2)
        M = np.asarray(X, dtype=float) / np.outer(self.s, self.s)
        lam, Q = np.linalg.eigh(0.5 * (M + M.T))
        return FactoredMetric(self.Vt.T @ Q, lam - 1.0, alpha=1.0)

    @property
    def triplets(self) -> LMNNTriplets:
        """Every triplet (built on first use: n·k·(n − n_c) of them)."""
        if self._triplets is None:
            self._triplets = LMNNTriplets.from_targets(self.codes, self.k, *self.targets)
        return self._triplets

    @property
    def n_triplets(self) -> int:
        """The number of triplets, without building them."""
        return count_triplets(self.codes, self.targets[0])

    @property
    def lists_all_triplets(self) -> bool:
        """Whether a solve's answer carries one multiplier, slack and violation per triplet: the
        full list is built already, or has at most ``ACTIVE_MIN_TRIPLETS`` triplets (beyond,
        the active impostor set's answer holds the set only)."""
        return self._triplets is not None or self.n_triplets <= ACTIVE_MIN_TRIPLETS

    # ------------------------------------------------------------------ constructors
    @classmethod
    def linear(cls, X, y, k: int = 5, gamma: float = 0.5, **kw) -> "LMNNProblem":
        """Linear LMNN: d_A(i, j) = (x_i − x_j)ᵀ A (x_i − x_j), A d × d; target neighbours
        by Euclidean distance."""
        prob = cls(X, y, k, gamma, **kw)
        prob.kind = "linear"
        return prob

    @classmethod
    def kernel(cls, K, y, k: int = 5, gamma: float = 0.5, **kw) -> "LMNNProblem":
        """Kernel LMNN (eq. 2, 18): d_A(i, j) = (K^i − K^j)ᵀ A (K^i − K^j), A n × n; target
        neighbours by the kernel's feature-space distance K_ii + K_jj − 2K_ij (unless
        ``neighbor_sq_dist`` / ``targets`` / ``triplets`` are given)."""
        K = check_kernel_matrix(K, "K")
        if not any(key in kw for key in ("neighbor_sq_dist", "targets", "triplets")):
            kw["neighbor_sq_dist"] = kernel_sq_distances(K)
        prob = cls(K, y, k, gamma, **kw)
        prob.kind = "kernel"
        return prob

    @classmethod
    def multiple_kernels(cls, Ks, y, k: int = 5, gamma: float = 0.5, **kw) -> "LMNNProblem":
        """NR-ML-MKL (eq. 12–14): LMNN on the concatenated empirical kernel maps
        Φ_Z(x_i) = (K_1^i, …, K_m^i), A″ mn × mn.  Target neighbours by the feature-space
        distance of the unweighted sum Σ_l K_l (the space H of the paper)."""
        Ks = check_kernel_list(Ks)
        if not any(key in kw for key in ("neighbor_sq_dist", "targets", "triplets")):
            kw["neighbor_sq_dist"] = kernel_sq_distances(sum(Ks))
        prob = cls(np.hstack(Ks), y, k, gamma, **kw)
        prob.kind = "nr-mkl"
        prob.n_kernels = len(Ks)
        return prob

    # ------------------------------------------------------------------ numpy side
    @property
    def dim(self) -> int:
        """D, the size of A."""
        return self.Z.shape[1]

    @property
    def rank(self) -> int:
        """r, the numerical rank of Z (size of the whitened variable X̂)."""
        return self.U.shape[1]

    def pair_distances(self, A) -> np.ndarray:
        """Squared learned distances of all pairs of the structure under A (D × D)."""
        A = as_float_array(A, "A", ndim=2)
        if A.shape != (self.dim, self.dim):
            raise InvalidInputError(f"A must be {self.dim} × {self.dim}; got {A.shape}.")
        return pair_quadratic(self.Z, A, self.triplets.pi, self.triplets.pj)

    def objective(self, A) -> float:
        """F(A), eq. 18 with the optimal slack (:func:`cvxkml.formulas.lmnn.lmnn_objective`)."""
        return lmnn_objective(self.pair_distances(A), self.triplets, self.gamma)

    def objective_scale(self) -> float:
        """The unit a certificate of this problem is judged in (:meth:`Problem.certificate
        <cvxkml.declare.problem.Problem.certificate>`): F at the identity start A = I (the
        data's own scale: every triplet's pull and hinge at the Euclidean metric), and at
        least 1 — the LMNN solvers stop on a gap relative to max(1, |F|), so a smaller unit
        would refuse the answers they certify."""
        if "_objective_unit" not in self.__dict__:
            start = float(self.objective(np.eye(self.dim)))
            self.__dict__["_objective_unit"] = max(1.0, start if np.isfinite(start) else 1.0)
        return self.__dict__["_objective_unit"]

    def objective_whitened(self, X, factor=None) -> float:
        """F at A = V S⁻¹ X̂ S⁻¹ Vᵀ, from the whitened X̂ (r × r) ⪰ 0, its distances through
        its factor (:func:`cvxkml.formulas.lmnn.psd_pair_distances`: accurate for a huge
        X̂; eigenvalues below 0 count as 0 — the PSD violation is :meth:`violations_whitened`'s),
        or through ``factor`` L (r × q) when X̂ = L Lᵀ is given by it (an answer spanning more
        scales than the formed X̂ keeps, ``info["X_factor"]``)."""
        p = psd_pair_distances(self.U, X, self.triplets.pi, self.triplets.pj, factor)
        return lmnn_objective(p, self.triplets, self.gamma)

    def slack(self, A) -> np.ndarray:
        """The optimal slack ξ_t = [1 + d(i, j) − d(i, l)]_+ of every triplet."""
        return lmnn_slack(self.pair_distances(A), self.triplets)

    def violations(self, A, xi=None) -> np.ndarray:
        """Per triplet max(0, 1 − ξ_t − (d(i, l) − d(i, j)), −ξ_t) (0 for the optimal slack),
        followed by the PSD violation max(0, −λ_min(A))."""
        return self._violations(self.pair_distances(A), A, xi)

    def violations_whitened(self, X, xi=None, factor=None) -> np.ndarray:
        """:meth:`violations` evaluated through the whitened X̂ (well conditioned; distances
        through its factor, or ``factor``, as in :meth:`objective_whitened`, the PSD violation of
        X̂ itself; none for X̂ = L Lᵀ given by its factor: PSD by construction)."""
        p = psd_pair_distances(self.U, X, self.triplets.pi, self.triplets.pj, factor)
        return self._violations(p, X if factor is None else None, xi)

    def _violations(self, p, M, xi) -> np.ndarray:
        xi = lmnn_slack(p, self.triplets) if xi is None else np.asarray(xi, dtype=float)
        tr = self.triplets
        margin = np.maximum(np.maximum(0.0, 1.0 - xi - (p[tr.ti] - p[tr.tt])), -xi)
        lam = float(np.linalg.eigvalsh(0.5 * (M + M.T))[0]) if M is not None and M.size else 0.0
        return np.append(margin, max(0.0, -lam))

    # ------------------------------------------------------------------ the certificate of an answer
    # The family's own primal variable is the whitened X̂ (info["X"]): A = V S⁻¹ X̂ S⁻¹ Vᵀ is
    # evaluated through it (its condition reaches 1/rank_rtol², objective_whitened); an answer
    # without it (a bare A) is evaluated at A.
    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """A (D × D, or r × r in the span space), the slack ξ and the multipliers α (one per
        triplet), X̂ = info["X"] (r × r) and A = the map of X̂ when the answer carries X̂."""
        from .._answer import SYMMETRIC_TOL, check_primal_matrix, check_primal_vector

        kw = {"symmetric_tol": symmetric_tol, "psd_tol": psd_tol}
        check_primal_matrix(sol.matrix, self.matrix_dim, what="matrix A", **kw)
        if sol.slack is not None:
            check_primal_vector(sol.slack, self.triplets.n_triplets, what="slack ξ")
        Xh = sol.info.get("X")
        if Xh is not None:
            check_primal_matrix(Xh, self.rank, what="whitened matrix X̂ (info['X'])", **kw)
            A = self.answer_matrix(Xh, sol.info.get("complement"))
            ref = max(float(np.linalg.norm(A)), 1e-300)
            err = float(np.linalg.norm(np.asarray(sol.matrix, dtype=float) - A))
            if err > SYMMETRIC_TOL * ref:
                raise SolverError(
                    f"The returned matrix A is not the map of the returned X̂ (info['X']): "
                    f"‖A − A(X̂)‖_F / ‖A(X̂)‖_F = {err / ref:.3g}."
                )
        if sol.dual is not None:
            check_primal_vector(sol.dual, self.triplets.n_triplets, what="dual α")

    def answer_objective(self, sol) -> float:
        """F through X̂ = info["X"] (:meth:`objective_whitened`), else at A."""
        Xh, L = sol.info.get("X"), sol.info.get("X_factor")
        return float(self.objective(sol.matrix) if Xh is None else self.objective_whitened(Xh, L))

    def answer_violations(self, sol) -> np.ndarray:
        """The violations through X̂ = info["X"] (:meth:`violations_whitened`), else at A;
        against the answer's slack ξ when it carries one."""
        Xh = sol.info.get("X")
        xi = () if sol.slack is None else (sol.slack,)
        factor = sol.info.get("X_factor")
        v = self.violations(sol.matrix, *xi) if Xh is None else self.violations_whitened(Xh, *xi, factor=factor)
        return np.asarray(v, dtype=float)

    def answer_dual_value(self, sol, objective: float) -> float | None:
        """g(α) with the recomputed objective as ``objective_bound`` (:meth:`dual_value`)."""
        if sol.dual is None:
            return None
        return float(self.dual_value(sol.dual, objective_bound=objective))

    def dual_value(self, alpha, objective_bound: float | None = None) -> float:
        """Certified lower bound g(α) on the optimum (:func:`cvxkml.formulas.lmnn.lmnn_dual_value`,
        evaluated as :func:`cvxkml.formulas.lmnn.whitened_dual_value`).

        ``objective_bound``: a known primal value F(X) ≥ F* (e.g. a solution's
        ``objective``), which tightens the bound's round-off correction; the fast solver
        reports ``lmnn_dual_value(α, objective_bound=objective)``.
        """
        alpha = np.asarray(alpha, dtype=float)
        if alpha.shape != (self.triplets.n_triplets,):
            raise InvalidInputError(f"alpha must have one entry per triplet ({self.triplets.n_triplets}).")
        if objective_bound is not None:
            objective_bound = check_number(objective_bound, "objective_bound")
        return whitened_dual_value(self.U, self.triplets, alpha, self.gamma, objective_bound=objective_bound)

    def whiten(self, A) -> np.ndarray:
        """X̂ = S Vᵀ A V S, the part of A that the training distances see."""
        A = as_float_array(A, "A", ndim=2)
        if A.shape != (self.dim, self.dim):
            raise InvalidInputError(f"A must be {self.dim} × {self.dim}; got {A.shape}.")
        B = self.Vt * self.s[:, None]
        X = B @ A @ B.T
        return 0.5 * (X + X.T)

    def matrix_from_whitened(self, X, complement=None) -> np.ndarray:
        """A = V S⁻¹ X̂ S⁻¹ Vᵀ + P⊥ C P⊥, C = ``complement`` (default I) and P⊥ the projector
        onto the orthogonal complement of the row space of Z."""
        C = (self.Vt / self.s[:, None]).T  # V S⁻¹ (D × r)
        A = C @ np.asarray(X, dtype=float) @ C.T
        if self.rank < self.dim:
            Pp = np.eye(self.dim) - self.Vt.T @ self.Vt
            Cc = np.eye(self.dim) if complement is None else np.asarray(complement, dtype=float)
            A = A + Pp @ Cc @ Pp
        return 0.5 * (A + A.T)

    def factor(self, X, complement=None, rtol: float = 1e-12, X_factor=None) -> np.ndarray:
        """L (q × D) with Lᵀ L = :meth:`matrix_from_whitened` (X̂, complement), built from
        X̂'s eigendecomposition without forming A: rows √λ_k w_kᵀ S⁻¹ Vᵀ, then a square
        root of the complement block; from ``X_factor`` = F (X̂ = F Fᵀ, a solution's
        ``info["X_factor"]``) when given: rows Fᵀ S⁻¹ Vᵀ, every scale of the answer kept.
        ``Z_new @ L.T`` maps new feature rows to the learned space (Euclidean distances there
        are the learned distances)."""
        if X_factor is None:
            lam, W = np.linalg.eigh(0.5 * (np.asarray(X, dtype=float) + np.asarray(X, dtype=float).T))
            keep = lam > rtol * max(float(lam[-1]) if lam.size else 0.0, np.finfo(float).tiny)
            X_factor = W[:, keep] * np.sqrt(lam[keep])
        L = np.asarray(X_factor, dtype=float).T @ (self.Vt / self.s[:, None])
        if self.rank < self.dim:
            N = np.linalg.svd(self.Vt, full_matrices=True)[2][self.rank :]  # complement basis (rows)
            if complement is None:
                Lc = N
            else:
                C = N @ np.asarray(complement, dtype=float) @ N.T
                lc, Wc = np.linalg.eigh(0.5 * (C + C.T))
                kc = lc > rtol * max(float(np.abs(lc).max()) if lc.size else 0.0, np.finfo(float).tiny)
                Lc = (Wc[:, kc] * np.sqrt(lc[kc])).T @ N
            L = np.vstack([L, Lc])
        return L

    def solve(
        self,
        tol: float = 1e-5,
        max_iter: int = 20_000,
        callback=None,
        warm_start=None,
        *,
        A0=None,
        alpha0=None,
        check_every: int = 200,
        buffer: float = 1.0,
        polish: bool = True,
        smooth: bool = True,
        stall_iter: int | None = STALL_ITER,
        impostors: str = "auto",
        exact_finish: bool = True,
        tie_break: str | None = None,
    ) -> Solution:
        """The fast solver (:func:`cvxkml.solvers.lmnn.lmnn_pdhg`) of eq. 18: a smoothed
        quasi-Newton phase (L-BFGS on a factor of X̂ for a decreasing smoothing of the
        hinge), then primal–dual projected sub-gradient with Weinberger & Saul's active
        set, in the whitened coordinates, stopped on a certified duality gap of the
        unsmoothed problem.

        Parameters
        ----------
        tol : float, default=1e-5
            Stop when the certified relative gap (F − g) / max(1, |F|) <= tol, g a Lagrange
            dual bound (:func:`cvxkml.formulas.lmnn.lmnn_dual_value`), so ``converged=True``
            is a proof of tol-optimality.
        max_iter : int, default=20000
            Iteration budget, 1 … 1e15; when exhausted ``converged=False``,
            ``status="max_iter reached"``, one :class:`~cvxkml.errors.ConvergenceWarning`, and the best
            iterate is returned.
        callback : callable or None
            Called with a dict at every certificate check of the solver (iteration 0, the
            end of every smoothing width, then every ``check_every`` PDHG iterations):
            ``iteration``, ``objective`` (F at the best iterate), ``dual_value`` (the best
            bound g), ``gap`` ((F − g) / max(1, |F|)),
            ``current_objective``, ``working_triplets``.  A truthy return stops the solve:
            ``status="stopped by callback"``, ``converged=False`` (unless that check
            certified ``tol``) and a :class:`~cvxkml.errors.ConvergenceWarning`.
        warm_start : Solution or dict or None
            Where to start: a :class:`~cvxkml.solution.Solution` of an earlier solve (of
            this problem, or of one with the same points and triplets, e.g. another γ or
            kernel weighting): its ``matrix`` A and ``dual`` α are used (for a Solution of
            this very problem its whitened ``info["X"]``, exact where A is ill
            conditioned); or a dict ``{"A": D × D matrix, "alpha": (T,) multipliers}``
            (either key may be left out).  Default: A = I, the paper's initialization,
            and α = 0.
        A0, alpha0 : array-like of shape (D, D) and (T,), optional
            The same as ``warm_start={"A": A0, "alpha": alpha0}`` (prefer ``warm_start``).
            Only the whitened part S Vᵀ A0 V S enters the iteration; the rest is kept on
            the complement of the row space.
        check_every, buffer, polish
            See :func:`cvxkml.solvers.lmnn.lmnn_pdhg`.
        smooth : bool, default=True
            Start with the smoothed quasi-Newton phase (its L-BFGS iterations count in
            ``n_iter`` and ``max_iter``; ``info["smooth_iterations"]``); False: the PDHG
            alone, as before.  Either way ``converged`` is the same certificate.
        stall_iter : int or None, default=2000
            Stop (``status="stalled"``, ``converged=False``, a
            :class:`~cvxkml.errors.ConvergenceWarning`) when the PDHG phase has run this
            many iterations without shrinking the certified gap by more than 0.1 % (see
            :func:`cvxkml.solvers.lmnn.lmnn_pdhg`); 0 or None: run to ``max_iter``.
        impostors : {"auto", "all", "active"}, default="auto"
            ``"all"``: the solver works on every triplet (:attr:`triplets`, n·k·(n − n_c) of
            them).  ``"active"``: on an active set of impostors refreshed by a full scan
            between solves (:func:`cvxkml.solvers.lmnn.lmnn_active_set`): the triplet list is
            never built, the objective is the full F (every triplet, by the scan) and the
            certificate the full problem's (``buffer`` is capped at 0.5 there: it is also the
            scan's margin, and a wider one only grows the set).  ``"auto"``: active beyond
            ``ACTIVE_MIN_TRIPLETS`` triplets.  When the full list was not built the
            Solution's ``dual``, ``slack`` are None and ``violations`` holds only the PSD
            violation; ``info["impostor_triplets"]`` = (i, j, l) and
            ``info["impostor_alpha"]`` hold the set and its multipliers.
        exact_finish : bool, default=True
            Solve eq. 18 on the triplets near the margin with a primal-dual interior-point
            method — when the stall rule stops the PDHG, or earlier once the gap is below 1e-2
            with few triplets near the margin — and keep what it certifies on the whole problem
            (:mod:`cvxkml.solvers._lmnn_exact`; ``info["exact_finish"]``: what ran).  False: never.
        tie_break : {None, "min-norm"}, default=None
            Which optimum to return when F* = 0 is attained by a whole set of metrics (a
            full-rank kernel, NR-MKL: the zero face (TB1) of :mod:`cvxkml.formulas._lmnn_face`),
            where the solver's point depends on its path.  ``"min-norm"``: a second, certified
            stage replaces it by the face's unique member of least ‖X̂‖_F = ‖Z A Zᵀ‖_F (TB2), a
            function of the data alone; ``info["tie_break"]`` records it (and why it did not
            apply: F* > 0 leaves the answer unchanged; a selection that does not certify gives
            ``converged=False``, ``status="tie-break not certified"``).  None: the solver's point.

        Returns
        -------
        Solution
            ``matrix`` = A, ``slack`` = the optimal ξ of A, ``dual`` = α, ``dual_value`` =
            g(α), ``n_iter`` = iterations; ``info`` holds X̂, the history of checks
            (iteration, F, g, working triplets), ``max_relative_violation`` and solver
            diagnostics.

        Raises
        ------
        InvalidInputError
            Bad options (a non-callable ``callback``, a start of the wrong shape, …).
        SolverError
            The iterates diverged (badly scaled features).

        Notes
        -----
        The solve is :meth:`~cvxkml.declare.problem.Problem.run_pipeline`: the first registered
        solver that takes this problem runs — a user's ``register_fast_solver(LMNNProblem,
        solver)`` first, else ``pdhg-lmnn`` (:func:`cvxkml.adapters.lmnn.solve`) — with the
        options above in ``request.options`` and, when a start is given, ``request.warm_start``
        = ``{"X": X̂0 (r × r, whitened), "alpha": α0 or None}``; it returns X̂ and one multiplier
        per triplet, from which :meth:`solution_from_fast` recomputes every number and
        :meth:`certify` decides ``converged``.
        """
        tol, max_iter, callback, started, X0, complement, alpha0, options = self._solve_options(
            tol,
            max_iter,
            callback,
            warm_start,
            A0,
            alpha0,
            check_every,
            buffer,
            polish,
            smooth,
            stall_iter,
            impostors,
            exact_finish,
        )
        tie_break = self._check_tie_break(tie_break, options["impostors"])
        sol = self._solve_with_tie_break(
            tie_break,
            tol,
            lambda: self.run_pipeline(
                tol,
                max_iter,
                tol,
                max(tol, 1e-6),
                warm_start={"X": X0, "alpha": alpha0} if started else None,
                callback=callback,
                options=options,
            ),
        )
        if complement is not None and sol.info.get("X") is not None:
            # the start's block off the row space, which no distance sees, is kept there
            sol.matrix = self._answer(sol.info["X"], complement)
            sol.info["complement"] = complement
        return sol

    def _solve_options(
        self,
        tol,
        max_iter,
        callback,
        warm_start,
        A0,
        alpha0,
        check_every,
        buffer,
        polish,
        smooth,
        stall_iter,
        impostors,
        exact_finish,
    ):
        """The checked arguments of :meth:`solve`: (tol, max_iter, callback, whether a start
        was given, X̂0, the start's complement block, α0, the solver's options)."""
        tol = check_positive(tol, "tol")
        # capped at 1e15: 10**20 was accepted and ran for ever on a stalled draw
        max_iter = self._iteration_limit(max_iter)
        callback = self._check_callback(callback)
        check_every = check_int(check_every, "check_every", minimum=1)
        stall_iter = 0 if stall_iter is None else check_int(stall_iter, "stall_iter", minimum=0)
        buffer = check_number(buffer, "buffer", low=0.0)
        for name, flag in (("polish", polish), ("smooth", smooth), ("exact_finish", exact_finish)):
            if not isinstance(flag, (bool, np.bool_)):
                raise InvalidInputError(f"{name} must be True or False; got {flag!r}.")
        check_choice(impostors, "impostors", ("auto", "all", "active"))
        if impostors == "auto":
            impostors = "active" if (self._triplets is None and self.n_triplets > ACTIVE_MIN_TRIPLETS) else "all"
        started = warm_start is not None or A0 is not None or alpha0 is not None
        if impostors == "active":
            if alpha0 is not None or (isinstance(warm_start, dict) and warm_start.get("alpha") is not None):
                raise InvalidInputError(
                    "impostors='active' takes no start multipliers; pass only the matrix "
                    "(warm_start={'A': ...}) or use impostors='all'."
                )
            if isinstance(warm_start, Solution):
                warm_start = {"A": warm_start.matrix}
        X0, complement, alpha0 = self._start(warm_start, A0, alpha0)
        options = {
            "check_every": check_every,
            "buffer": buffer,
            "polish": bool(polish),
            "smooth": bool(smooth),
            "stall_iter": stall_iter,
            "impostors": impostors,
            "exact_finish": bool(exact_finish),
        }
        return tol, max_iter, callback, started, X0, complement, alpha0, options
