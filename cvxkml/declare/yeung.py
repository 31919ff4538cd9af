"""Yeung, Chang & Dai (IJCAI 2007): the two convex problems of the scalable
semi-supervised kernel metric, as exact CVXPY models beside their closed forms.

* :class:`SpectralReweighting` — the β problem (eq. 1–4; eq. 7 for landmarks):

      min_β  J_S(β) = βᵀ D_S β    s.t.  1ᵀβ = c,

  D_S = diag(d), d_r = (1/|S|) Σ_{(i,j)∈S} (U[i, r] − U[j, r])², c = Σ_r √λ_r, over the
  columns u_r of U (eigenvectors of the centred kernel K = H K̂ H, or of the landmark
  kernel L).  Closed form β = c D⁻¹1 / (1ᵀD⁻¹1) (eq. 4).  The learned kernel is
  K_β = U diag(β²) Uᵀ.
* :class:`EmbeddingWeightProblem` — the weights of one point over its K nearest
  landmarks (eq. 9–12):

      min_w  E(w) = wᵀ G w    s.t.  1ᵀw = 1,

  with G the local Gram matrix (eq. 11).  Closed form: solve G ŵ = 1, w = ŵ / 1ᵀŵ.

Both use D + εsI / G + εsI when D / G is singular (footnotes 3–4; the rule is
:func:`cvxkml.formulas.yeung.regularize`), and every formula (D_S, J_S, G, the rule) comes
from :mod:`cvxkml.formulas.yeung` (NumPy only), so the model, the closed form, the landmark
solver and the tests evaluate the same expressions.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np

from .._validation import (
    as_float_array,
    check_conic_options,
    check_index_array,
    check_kernel_matrix,
    check_magnitude,
    check_number,
    check_positive,
)
from ..errors import InvalidInputError
from ..formulas.yeung import (
    DEFAULT_EPSILON,
    check_epsilon,
    criterion,
    local_gram,
    positive_spectrum,
    regularize,
    similarity_diag,
)
from ..kernels import center_kernel, centering_roundoff
from ..sideinfo import PairConstraints
from ..solution import OK, Solution
from ._conic import solve_conic
from .extend import Extendable
from .problem import CALLBACK_STOP, Problem

__all__ = ["SpectralReweighting", "EmbeddingWeightProblem", "similarity_pairs"]


def similarity_pairs(pairs, n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """The similarity set S as index arrays (i, j), validated against ``n_points``.

    Parameters
    ----------
    pairs : PairConstraints or array-like of shape (|S|, 2)
        Similar pairs.  From a :class:`~cvxkml.sideinfo.PairConstraints` only the similar
        pairs (y = +1) are used — the method has no dissimilarity term — and the others
        are dropped with a warning.
    n_points : int
        Number of points the indices refer to.

    Returns
    -------
    i, j : int64 arrays of shape (|S|,)

    Raises
    ------
    InvalidInputError
        S is empty, malformed, has a pair (i, i), or an index outside 0 … n_points − 1.
    """
    if isinstance(pairs, PairConstraints):
        sim = pairs.y > 0
        if not np.all(sim):
            warnings.warn(
                f"Yeung et al. learn from similarity pairs only; {int(np.sum(~sim))} dissimilar pair(s) were ignored.",
                UserWarning,
                stacklevel=3,
            )
        i, j = pairs.i[sim], pairs.j[sim]
    else:
        if pairs is None or isinstance(pairs, (str, bytes)):
            raise InvalidInputError(
                f"pairs must be a PairConstraints object or an array of shape (|S|, 2) of point indices; got {pairs!r}."
            )
        try:
            empty = np.size(pairs) == 0
        except (TypeError, ValueError):  # ragged: check_index_array reports it
            empty = False
        arr = np.zeros((0, 2), np.int64) if empty else check_index_array(pairs, "pairs", ndim=2)
        if arr.shape[1] != 2:
            raise InvalidInputError(
                f"pairs must be a PairConstraints object or an array of shape (|S|, 2) of point "
                f"indices; got shape {arr.shape}."
            )
        i, j = arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64)
    if i.size == 0:
        raise InvalidInputError("The similarity set S is empty; give at least one pair of points of the same class.")
    check_index_array(i, "similarity pair indices", n_points)
    check_index_array(j, "similarity pair indices", n_points)
    same = np.flatnonzero(i == j)
    if same.size:
        raise InvalidInputError(f"Similarity pair {same[0]} joins point {i[same[0]]} with itself; remove such pairs.")
    return np.ascontiguousarray(i), np.ascontiguousarray(j)


class _OneEqualityQP(Extendable, Problem):
    """What the two problems of Yeung et al. share: min xᵀ D x s.t. 1ᵀx = const, with one
    scalar multiplier, an exact QP model and a closed form run through the certified-solve
    pipeline.  A subclass provides ``_n_weights``, ``_names`` (the weights' and the
    multiplier's names in messages), ``_answer_matrix(x)`` (K_β, or w itself),
    ``_answer_info(x)`` (the answer's ``info``, with its ``max_relative_violation``) and
    ``_read_model(problem)`` (the solved model's weights, multiplier and extra info)."""

    clarabel_max_size = 10**9  # a QP with one equality: Clarabel at every size

    def exact_size(self) -> int:
        """The number of weights (the exact model is a QP: no PSD block)."""
        return self._n_weights

    def _solution(self, x, multiplier, *, n_iter, time_, status, solver, info=None) -> Solution:
        """The answer at weights x and multiplier: ``matrix`` = :meth:`_answer_matrix`, the
        objective, violations and dual value recomputed, ``info`` = :meth:`_answer_info`."""
        return Solution(
            matrix=self._answer_matrix(x),
            objective=self.objective(x),
            dual=np.array([multiplier]),
            slack=None,
            violations=self.violations(x),
            n_iter=n_iter,
            converged=True,
            time=time_,
            status=status,
            solver=solver,
            dual_value=self.dual_value(multiplier),
            info={**self._answer_info(x), **(info or {})},
        )

    def _extension_point(self, x):
        """The point of a solved extended model at weights x (:meth:`extension_model`)."""
        from .extend import ExtensionPoint

        info = self._answer_info(x)
        return ExtensionPoint(
            primal=np.asarray(x, dtype=float),
            objective=self.objective(x),
            violations=self.violations(x),
            relative_violation=info.pop("max_relative_violation"),
            matrix=self._answer_matrix(x),
            info=info,
        )

    def answer_dual_value(self, sol, objective: float) -> float | None:
        """g of the answer's scalar multiplier."""
        return None if sol.dual is None else float(self.dual_value(float(np.ravel(sol.dual)[0])))

    def solve_reference(
        self, solver: str | None = None, eps: float | None = None, accept_inaccurate: bool = False, **opts
    ) -> Solution:
        """Solve the exact model with a conic solver (default Clarabel, tolerances ``eps`` =
        1e-10).  The dual of the equality constraint is mapped back to the multiplier of the
        closed form (ρ of eq. 3, a of eq. 12), so ``dual_value`` is the Lagrange bound and
        ``gap`` the certificate.

        Raises
        ------
        SolverError
            The solver failed, or did not report optimality and the certificate does not
            vouch for its answer (:meth:`~cvxkml.declare.Problem._accept_reference`).
        """
        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.default_solver()
        if eps is None and solver == "CLARABEL":
            eps = 1e-10
        prob = self.to_cvxpy()
        elapsed, status, iters = solve_conic(prob, solver, eps, True, **opts)
        x, multiplier, info = self._read_model(prob)
        sol = self._solution(
            x, multiplier, n_iter=iters, time_=elapsed, status=status, solver=f"cvxpy-{solver.lower()}", info=info
        )
        sol = self._accept_reference(sol, status, accept_inaccurate)
        sol.converged = status == cp.OPTIMAL or bool(sol.info.get("accepted_by_certificate"))
        return sol

    def _closed_form_arguments(self, tol, max_iter, callback):
        """``solve``'s arguments checked; the certificate's ``gap_tol`` and ``viol_tol`` are
        both ``tol``."""
        return check_positive(tol, "tol"), self._iteration_limit(max_iter), self._check_callback(callback)

    # ------------------------------------------------------------------ the pipeline's hooks
    def solution_from_fast(self, res, spec, gap_tol: float) -> Solution:
        """The :class:`Solution` of a fast result (the weights = ``matrix``, the multiplier =
        ``lam[0]``; the protocol of :mod:`cvxkml.adapters.yeung`), objective, violation and
        dual value recomputed here."""
        from .._answer import check_primal_vector

        weights, multiplier = self._names
        x = check_primal_vector(np.asarray(res.matrix, dtype=float), self._n_weights, what=f"weights {weights}")
        lam = check_primal_vector(np.asarray(res.lam, dtype=float).ravel(), 1, what=f"dual {multiplier}")[0]
        default = "converged" if res.code == OK else "max_iter reached"
        status = str(res.extra.get("status", default))
        solver = str(res.extra.get("solver", spec.name))
        return self._solution(x, lam, n_iter=int(res.sweeps), time_=float(res.time), status=status, solver=solver)

    def _relative_gap(self, sol) -> float:
        """|f − g| / max(1, |f|) of an answer (inf without a finite bound)."""
        gap = sol.gap
        rel = np.inf if gap is None else abs(gap) / max(1.0, abs(sol.objective))
        return float(rel) if np.isfinite(rel) else np.inf

    def certify(self, sol, res, gap_tol: float, viol_tol: float) -> bool:
        """The closed form's rule: relative gap |f − g| / max(1, |f|) <= ``gap_tol`` and
        relative violation of the equality <= ``viol_tol`` (|1ᵀβ − c| / max(1, c), |1ᵀw − 1|)."""
        return bool(self._relative_gap(sol) <= gap_tol and sol.info["max_relative_violation"] <= viol_tol)

    def unconverged_status(self, sol, res) -> str:
        """The callback's stop (``"stopped by callback"``) when it asked, else the solver's status."""
        return CALLBACK_STOP if res.extra.get("stopped") else sol.status

    def unconverged_message(self, sol, res, spec, gap_tol: float, viol_tol: float) -> str:
        """The closed form lost its certificate to round-off (an ill-conditioned D or G)."""
        return (
            f"The closed form of {type(self).__name__} lost its certificate "
            f"to round-off: relative gap {self._relative_gap(sol):.3g}, relative violation "
            f"{sol.info['max_relative_violation']:.3g} > tol {gap_tol:.3g} (an ill-conditioned system; raise "
            "epsilon or use solve_reference())."
        )


class SpectralReweighting(_OneEqualityQP):
    """The β problem of Yeung et al. (eq. 1–4; eq. 7 with landmarks).

        min_β  J_S(β) = βᵀ D β    s.t.  1ᵀβ = c,

    D = D_S, or D_S + ε s I when D_S is singular (footnote 3,
    :func:`cvxkml.formulas.yeung.regularize`); c = Σ_r √λ_r.

    Parameters
    ----------
    U : array-like of shape (N, q)
        Components u_r as columns (orthonormal eigenvectors of the centred kernel K, or
        of the landmark kernel L; rows index points).
    eigenvalues : array-like of shape (q,)
        Their positive eigenvalues λ_r (only c = Σ √λ_r and the √λ start point use them).
    pairs : PairConstraints or array-like of shape (|S|, 2)
        Similarity pairs S, indices into the rows of U (see :func:`similarity_pairs`).
    epsilon : float, default=1e-3
        Relative ε of the singularity rule.

    Attributes
    ----------
    d_S : (q,) the diagonal of D_S (eq. 2 / 7).  d : (q,) the diagonal actually used.
    regularized : whether D_S was singular and ε s was added.  c : the constant of 1ᵀβ = c.
    i, j : the pairs.
    """

    _names = ("β", "ρ")

    def __init__(self, U, eigenvalues, pairs, epsilon: float = DEFAULT_EPSILON):
        self.U = check_magnitude(as_float_array(U, "U", ndim=2), "U")
        self.eigenvalues = check_magnitude(as_float_array(eigenvalues, "eigenvalues", ndim=1), "eigenvalues")
        if self.eigenvalues.size != self.U.shape[1] or self.U.shape[1] == 0:
            raise InvalidInputError(
                f"eigenvalues must have one entry per column of U ({self.U.shape[1]} >= 1); got "
                f"{self.eigenvalues.size}."
            )
        if np.any(self.eigenvalues <= 0):
            raise InvalidInputError(
                "eigenvalues must be positive (keep only the positive eigenpairs of the centred "
                "kernel, as positive_spectrum does)."
            )
        self.epsilon = check_epsilon(epsilon)
        self.i, self.j = similarity_pairs(pairs, self.U.shape[0])
        self.d_S = similarity_diag(self.U, self.i, self.j)
        self.d, self.regularized = regularize(self.d_S, self.epsilon)
        self.c = float(np.sum(np.sqrt(self.eigenvalues)))

    @classmethod
    def from_kernel(
        cls, K_hat, pairs, epsilon: float = DEFAULT_EPSILON, center: bool = True, rank_rtol: float = 1e-10
    ) -> "SpectralReweighting":
        """The full method of §2: K = H K̂ H (``center=True``), its p positive eigenpairs
        (eigenvalues above ``rank_rtol`` times the largest), and S on the n points."""
        K = check_kernel_matrix(K_hat, "K_hat")
        rank_rtol = check_number(rank_rtol, "rank_rtol", low=0.0, high=1.0, low_open=True)
        atol = 0.0
        if center:
            atol = centering_roundoff(K)
            K = center_kernel(K)
        lam, V = positive_spectrum(K, rank_rtol, name="the centred kernel K", atol=atol)
        return cls(V, lam, pairs, epsilon)

    # ------------------------------------------------------------------ numpy side
    @property
    def n_components(self) -> int:
        return int(self.U.shape[1])

    _n_weights = n_components

    def objective(self, beta) -> float:
        """J_S(β) = βᵀ D β (with the D actually used, see ``regularized``)."""
        return criterion(beta, self.d)

    def violations(self, beta) -> np.ndarray:
        """|1ᵀβ − c| (one equality constraint)."""
        return np.array([abs(float(np.sum(beta)) - self.c)])

    # ------------------------------------------------------------------ the certificate of an answer
    def answer_primal(self, sol) -> tuple:
        """(β,) = (``info["beta"]``,): the answer's matrix is the learned kernel."""
        return (sol.info.get("beta"),)

    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """β = info["beta"] (q finite entries) and the scalar multiplier ρ."""
        from .._answer import check_primal_vector

        check_primal_vector(sol.info.get("beta"), self.n_components, what="weights β (info['beta'])")
        if sol.dual is not None:
            check_primal_vector(sol.dual, 1, what="dual ρ")

    def dual_value(self, rho: float) -> float:
        """Lagrange dual g(ρ) = min_β βᵀDβ + ρ(c − 1ᵀβ) = ρc − (ρ²/4) Σ 1/d_r (a lower
        bound on the optimum, equal to it at ρ* = 2c / Σ 1/d_r)."""
        # factored: ρ² overflows for huge components (|U| ~ 1e100 gives ρ ~ 1e200) while
        # ρ·Σ1/d stays O(c) near ρ*
        return float(rho * (self.c - 0.25 * rho * float(np.sum(1.0 / self.d))))

    def uniform_beta(self) -> np.ndarray:
        """The feasible point c/q · 1 (uniform weights)."""
        return np.full(self.n_components, self.c / self.n_components)

    def spectrum_beta(self) -> np.ndarray:
        """The feasible point β = √λ (the kernel before learning: K_β = K)."""
        return np.sqrt(self.eigenvalues)

    def learned_kernel(self, beta) -> np.ndarray:
        """K_β = U diag(β²) Uᵀ (N × N)."""
        beta = np.asarray(beta, dtype=float)
        M = (self.U * (beta**2)[None, :]) @ self.U.T
        return 0.5 * (M + M.T)

    def _answer_matrix(self, beta) -> np.ndarray:
        return self.learned_kernel(beta)

    def _answer_info(self, beta) -> dict:
        beta = np.asarray(beta, dtype=float)
        return {
            "beta": beta,
            "c": self.c,
            "regularized": self.regularized,
            "J_S_unregularized": criterion(beta, self.d_S),
            "max_relative_violation": float(self.violations(beta)[0]) / max(1.0, self.c),
        }

    # ------------------------------------------------------------------ CVXPY side
    def to_cvxpy(self) -> cp.Problem:
        """The exact model, written in the normalized variable b = β / c with the weights
        d̃ = d / min(d):

            min_b  Σ_r d̃_r b_r²    s.t.  Σ_r b_r = 1,

        which is the β problem divided by c²·min(d) (same minimizer, β = c·b; see
        :meth:`beta_expression`).  The normalization keeps the QP well scaled when d spans
        many orders of magnitude (Clarabel then stops at 'optimal_inaccurate' on the
        unscaled form).  Variable: ``problem.var_dict["b"]``; the equality constraint is
        ``problem.constraints[0]``.
        """
        b = cp.Variable(self.n_components, name="b")
        w = self.d / float(np.min(self.d))
        return cp.Problem(cp.Minimize(cp.sum(cp.multiply(w, cp.square(b)))), [cp.sum(b) == 1.0])

    def beta_expression(self, problem: cp.Problem):
        """β = c·b as a CVXPY expression of ``problem``'s variable."""
        return self.c * problem.var_dict["b"]

    # ------------------------------------------------------------------ extension
    def extension_probe(self):
        """(a CVXPY variable of length q, "beta"): the primal the extension's term sees."""
        return cp.Variable(self.n_components, name="beta"), "beta"

    def extension_model(self):
        """The exact model for :meth:`extend`: :meth:`to_cvxpy` (normalized, objective
        J_S / (c² min d)), β = :meth:`beta_expression`; the answer's ``matrix`` is K_β,
        ``info["beta"]`` β."""
        from .extend import ExtensionModel

        prob = self.to_cvxpy()

        def read():
            return self._extension_point(self.c * np.asarray(prob.var_dict["b"].value, dtype=float))

        return ExtensionModel(
            problem=prob,
            primal=self.beta_expression(prob),
            read=read,
            scale=self.c**2 * float(np.min(self.d)),
            eps={"CLARABEL": 1e-10},
        )

    def _read_model(self, prob):
        """(β, ρ, info) of the solved :meth:`to_cvxpy`."""
        beta = self.c * np.asarray(prob.var_dict["b"].value, dtype=float)
        # scaled Lagrangian Σ d̃ b² + ρ̃ (1 − Σ b) times c² min(d) is eq. 3 with ρ = c min(d) ρ̃;
        # CVXPY's dual of "sum(b) == 1" is −ρ̃.
        rho = -float(np.ravel(prob.constraints[0].dual_value)[0]) * self.c * float(np.min(self.d))
        return beta, rho, {"solver_objective": float(prob.value) * self.c**2 * float(np.min(self.d))}

    # ------------------------------------------------------------------ fast side
    # ------------------------------------------------------------------ fast side
    def solve(self, tol: float = 1e-8, max_iter: int = 10_000, callback=None) -> Solution:
        """The closed form β = c D⁻¹1 / (1ᵀD⁻¹1) (eq. 4) and ρ = 2c / (1ᵀD⁻¹1), through the
        one certified-solve pipeline (:meth:`~cvxkml.declare.Problem.run_pipeline`): the
        closed form is the registered solver ``yeung-reweighting``
        (:mod:`cvxkml.adapters.yeung`), and a solver registered with
        ``register_fast_solver(SpectralReweighting, solver)`` is used first, its answer
        certified by the same rule.

        Parameters
        ----------
        tol : float
            The certificate asked of the closed form (round-off only): ``converged`` when
            the relative gap J_S(β) − g(ρ) and the relative violation |1ᵀβ − c| / max(1, c)
            are at most ``tol``; otherwise a ConvergenceWarning (an ill-conditioned D).
        max_iter : int
            Ignored by the closed form (it takes no iteration: ``n_iter`` = 0); checked
            (1 … 1e15) and handed to a user's registered solver, so that every family's
            ``solve`` takes it.
        callback : callable or None
            Called once with the certificate (``iteration`` 0, ``objective``, ``gap``,
            ``violation``); a truthy return marks the solve stopped.
        """
        tol, max_iter, callback = self._closed_form_arguments(tol, max_iter, callback)
        return self.run_pipeline(tol, max_iter, tol, tol, callback=callback)


class EmbeddingWeightProblem(_OneEqualityQP):
    """The embedding weights of one point over its K neighbours (Yeung et al. eq. 9–12):

        min_w  E(w) = wᵀ G w = ‖φ(x) − Σ_j w_j φ(x_j)‖²    s.t.  1ᵀw = 1,

    G the local Gram matrix of eq. 11, or G + ε s I when G is singular (footnote 4).

    Parameters
    ----------
    G : array-like of shape (K, K)
        Symmetric PSD local Gram matrix (see :meth:`from_kernel`, :meth:`from_points`).
    epsilon : float, default=1e-3
        Relative ε of the singularity rule.

    Attributes
    ----------
    G : the given matrix.  G_eff : the one used.  regularized : whether ε s was added.
    """

    _names = ("w", "a")

    def __init__(self, G, epsilon: float = DEFAULT_EPSILON):
        self.G = check_kernel_matrix(G, "G")
        self.epsilon = check_epsilon(epsilon)
        self.G_eff, self.regularized = regularize(self.G, self.epsilon)

    @classmethod
    def from_kernel(cls, kxx, kxN, KNN, epsilon: float = DEFAULT_EPSILON) -> "EmbeddingWeightProblem":
        """From kernel values: k(x, x) (scalar), k(x, x_j) (K,), k(x_j, x_k) (K, K) (eq. 11)."""
        kxN = as_float_array(kxN, "kxN", ndim=1)
        KNN = as_float_array(KNN, "KNN", ndim=2)
        if KNN.shape != (kxN.size, kxN.size):
            raise InvalidInputError(f"KNN must be {kxN.size} × {kxN.size}; got {KNN.shape}.")
        kxx = check_number(kxx, "kxx")
        G = local_gram(np.array([kxx]), kxN[None], KNN[None])[0]
        return cls(G, epsilon)

    @classmethod
    def from_points(cls, kernel, x, neighbors, epsilon: float = DEFAULT_EPSILON) -> "EmbeddingWeightProblem":
        """From a base kernel (a :class:`cvxkml.kernels.Kernel`), the point x (d,) and its
        neighbours (K, d)."""
        if not callable(kernel):
            raise InvalidInputError(
                f"kernel must be a callable base kernel such as cvxkml.kernels.Kernel('gaussian', "
                f"{{'gamma': 1.0}}); got {kernel!r}."
            )
        x = as_float_array(x, "x").reshape(1, -1)
        N = as_float_array(neighbors, "neighbors", ndim=2)
        if N.shape[0] < 1 or N.shape[1] != x.shape[1]:
            raise InvalidInputError(
                f"neighbors must be (K, {x.shape[1]}) with K >= 1 to match x ({x.shape[1]} features); got {N.shape}."
            )
        return cls.from_kernel(kernel(x, x)[0, 0], kernel(x, N)[0], kernel(N, N), epsilon)

    @property
    def n_neighbors(self) -> int:
        return int(self.G.shape[0])

    _n_weights = n_neighbors

    def objective(self, w) -> float:
        """wᵀ G w with the G actually used (``G_eff``)."""
        w = np.asarray(w, dtype=float)
        return float(w @ self.G_eff @ w)

    def violations(self, w) -> np.ndarray:
        """|1ᵀw − 1|."""
        return np.array([abs(float(np.sum(w)) - 1.0)])

    # ------------------------------------------------------------------ the certificate of an answer
    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """The weights w (K finite entries) and the scalar multiplier a."""
        from .._answer import check_primal_vector

        check_primal_vector(sol.matrix, self.n_neighbors, what="weights w")
        if sol.dual is not None:
            check_primal_vector(sol.dual, 1, what="dual a")

    def dual_value(self, a: float) -> float:
        """Lagrange dual g(a) = min_w wᵀGw + a(1 − 1ᵀw) = a − (a²/4) 1ᵀG⁻¹1."""
        s = float(np.sum(np.linalg.solve(self.G_eff, np.ones(self.n_neighbors))))
        return float(a * (1.0 - 0.25 * a * s))  # a − a²s/4 without overflowing a²

    def _answer_matrix(self, w) -> np.ndarray:
        return np.asarray(w, dtype=float)

    def _answer_info(self, w) -> dict:
        w = np.asarray(w, dtype=float)
        return {
            "regularized": self.regularized,
            "E_unregularized": float(w @ self.G @ w),
            "max_relative_violation": float(self.violations(w)[0]),
        }

    def to_cvxpy(self) -> cp.Problem:
        """The exact model in whitened coordinates: with G_eff / s = V Λ Vᵀ (s = mean
        diagonal of G_eff, which is positive definite) and w = T t, T = V Λ^-½,

            min_t  ‖t‖²    s.t.  (1ᵀT) t = 1,

        which is E(w) / s over the same feasible set (see :meth:`weights_expression`).
        Written in w directly, the objective is nearly flat along the eigenvectors of small
        eigenvalues, where the minimizer lives, and the conic solver's w is accurate only
        to ≈ 1e-6 on regularized G; whitened, to ≈ 1e-15.  Variable:
        ``problem.var_dict["t"]``; the equality constraint is ``problem.constraints[0]``.
        """
        s = float(np.trace(self.G_eff)) / self.n_neighbors
        lam, V = np.linalg.eigh(self.G_eff / s)
        self._scale = s
        self._T = V / np.sqrt(lam)[None, :]
        t = cp.Variable(self.n_neighbors, name="t")
        return cp.Problem(cp.Minimize(cp.sum_squares(t)), [(np.ones(self.n_neighbors) @ self._T) @ t == 1.0])

    def weights_expression(self, problem: cp.Problem):
        """w = T t as a CVXPY expression of ``problem``'s variable (after :meth:`to_cvxpy`)."""
        return self._T @ problem.var_dict["t"]

    # ------------------------------------------------------------------ extension
    def extension_probe(self):
        """(a CVXPY variable of length K, "w"): the primal the extension's term sees."""
        return cp.Variable(self.n_neighbors, name="w"), "w"

    def extension_model(self):
        """The exact model for :meth:`extend`: :meth:`to_cvxpy` (whitened, objective
        E / s), w = :meth:`weights_expression`."""
        from .extend import ExtensionModel

        prob = self.to_cvxpy()
        T = self._T

        def read():
            return self._extension_point(T @ np.asarray(prob.var_dict["t"].value, dtype=float))

        return ExtensionModel(
            problem=prob, primal=T @ prob.var_dict["t"], read=read, scale=self._scale, eps={"CLARABEL": 1e-10}
        )

    def _read_model(self, prob):
        """(w, a, info) of the solved :meth:`to_cvxpy` (a = 2 E(w*), eq. 12)."""
        w = self._T @ np.asarray(prob.var_dict["t"].value, dtype=float)
        return w, -float(np.ravel(prob.constraints[0].dual_value)[0]) * self._scale, None

    def solve(self, tol: float = 1e-8, max_iter: int = 10_000, callback=None) -> Solution:
        """The closed form of eq. 12: solve G ŵ = 1, w = ŵ / 1ᵀŵ; a = 2 / 1ᵀG⁻¹1 (the
        registered solver ``yeung-embedding-weights``, through the certified-solve pipeline).

        ``tol``, ``max_iter`` (ignored by the closed form) and ``callback`` as in
        :meth:`SpectralReweighting.solve` (the certificate of a closed form: round-off
        only; the relative violation is |1ᵀw − 1|)."""
        tol, max_iter, callback = self._closed_form_arguments(tol, max_iter, callback)
        return self.run_pipeline(tol, max_iter, tol, tol, callback=callback)
