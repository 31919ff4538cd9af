"""Kernel classification rule with a learned metric embedding (Sriperumbudur, Lang &
Lanckriet, ICML 2008, eq. 2 and 9).

Learn Σ ⪰ 0 with 1ᵀΣ1 = 0 and a squared bandwidth h̃ >= ε:

    min  Σ_i [ 2 − n_i⁺ + Σ_j [ 1 + τ_ij tr(M_ij Σ) − τ_ij h̃ ]₊ ]₊ + λ tr(KΣ),

τ_ij = ±1 for equal / different labels, n_i⁺ = #{j : τ_ij = 1} (i included),
M_ij = (k_i − k_j)(k_i − k_j)ᵀ with k_i the i-th column of K, so
tr(M_ij Σ) = D_ij is the learned squared distance.  j runs over all n points, j = i
included (as printed; that term is [1 − h̃]₊).  Numpy values: :mod:`cvxkml.formulas.kcr`.

:class:`KCR` holds the data, writes the exact CVXPY model (:meth:`KCR.to_cvxpy`,
:meth:`KCR.solve_reference`) and runs the fast solver (:meth:`KCR.solve`,
:func:`cvxkml.solvers.kcr.kcr_pdhg`).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from .._validation import (
    as_float_array,
    check_choice,
    check_conic_options,
    check_int,
    check_kernel_matrix,
    check_labels,
    check_number,
    check_positive,
)
from ..errors import InvalidInputError
from ..formulas.kcr import (
    basis_orthogonal_to_ones,
    dual_lower_bound,
    dual_objective,
    dual_weights_from_epigraph,
    h_upper_bound,
    kcr_objective,
    label_structure,
    project_onto_N,
    sq_distances_from_gram,
    whitening,
)
from ..solution import OK, Solution
from ._conic import solve_conic
from .extend import Extendable
from .problem import Problem

__all__ = ["KCR"]


def _check_pdhg_options(opts: dict) -> None:
    """The documented options of :func:`cvxkml.solvers.kcr.kcr_pdhg` that ``KCR.solve``
    passes through (unknown names are left to Python's own keyword check)."""
    if "scaling" in opts:
        check_number(opts["scaling"], "scaling", low=0.0, high=1.0)
    for key in ("eig_tol", "eig_step_factor", "omega0"):
        if key in opts:
            check_positive(opts[key], key, allow_none=key == "omega0")
    for key, low in (("eig_guard", 0), ("eig_min_size", 0), ("restart_every", 1)):
        if key in opts:  # eig_min_size=0: track at every size
            check_int(opts[key], key, minimum=low)
    if "eig" in opts:
        check_choice(opts["eig"], "eig", ("track", "exact"))
    if "polish" in opts:
        check_number(opts["polish"], "polish", low=0.0)
    ws = opts.get("working_set", None)
    if isinstance(ws, dict):
        unknown = sorted(set(ws) - {"start", "margin", "row_margin", "shrink_every"})
        if unknown:
            raise InvalidInputError(
                f"unknown working_set options {unknown}; known: margin, row_margin, shrink_every, start."
            )
        for key in ("start", "margin", "row_margin"):
            if key in ws:
                check_positive(ws[key], f"working_set[{key!r}]")
        if "shrink_every" in ws:
            check_int(ws["shrink_every"], "working_set['shrink_every']", minimum=1)
    elif ws not in (True, False, None):
        raise InvalidInputError(f"working_set must be True, False or a dict of options; got {ws!r}.")
    if ws not in (False, None) and bool(opts.get("halpern", False)):
        raise InvalidInputError("working_set needs plain PDHG: pass halpern=False (the default).")
    if "precision" in opts:
        check_choice(opts["precision"], "precision", ("mixed", "double"))
    if "restart_params" in opts:
        try:
            params = tuple(opts["restart_params"])
        except TypeError:
            params = ()
        if len(params) != 3:
            raise InvalidInputError(
                "restart_params must be three numbers (sufficient, necessary, "
                f"artificial); got {opts['restart_params']!r}."
            )
        for v in params:
            check_number(v, "each restart parameter", low=0.0, low_open=True)


_PARAMETERIZATIONS = ("whitened", "reduced", "full")


class KCR(Extendable, Problem):
    """The KCR semidefinite program (eq. 9) on a training kernel matrix.

    A :class:`~cvxkml.declare.Problem`: exact and fast solves both return a
    :class:`~cvxkml.solution.Solution` certified by the Lagrange dual of
    :func:`cvxkml.formulas.kcr.dual_lower_bound` (dual weights s ∈ [0, 1]^{n×n}).

    Parameters
    ----------
    K : array-like of shape (n, n)
        Training kernel matrix (symmetric positive semidefinite, finite).
    y : array-like of shape (n,)
        Class labels: at least 2 classes, each with at least 2 members (a singleton
        class has n_i⁺ = 1, so its point could only be classified by itself; the
        relaxation then changes character and the rule is undefined for it).
    lam : float
        Regularization weight λ > 0 of tr(KΣ).
    h_min : float, default=1e-6
        The lower bound ε in h̃ >= ε (the paper's h̃ > 0).
    rank_rtol : float, default=1e-12
        Eigenvalues of VᵀKV below ``rank_rtol`` · max are dropped in the whitened
        coordinates of the fast solver and of ``parameterization="whitened"``
        (:func:`cvxkml.formulas.kcr.whitening`).

    Attributes
    ----------
    K, y, lam, h_min : the data.
    classes, codes, tau, c : label structure (:func:`cvxkml.formulas.kcr.label_structure`).
    T, F : whitened coordinates, Σ = T X Tᵀ, F = K T (n × r).
    rank : r.
    """

    #: Clarabel's interior point stops with "insufficient progress" (``optimal_inaccurate``)
    #: on most KCR models with n >= 24 whatever ``eps`` (1e-7 … 1e-10 end at the same
    #: iterate), with certified relative gaps 1e-6 … 2e-5 and feasible Σ; such answers are
    #: accepted when the certificate is within 1e-4 (``gap`` says how good they are).
    inaccurate_rtol = 1e-4

    def __init__(self, K, y, lam, h_min: float = 1e-6, rank_rtol: float = 1e-12):
        self.K = check_kernel_matrix(K, "K")
        n = self.K.shape[0]
        self.y = y = check_labels(y, "y", n)
        self.classes, self.codes, self.tau, self.c = label_structure(y)
        if self.classes.size < 2:
            raise InvalidInputError(
                f"KCR needs at least 2 classes; y has 1 ({self.classes[0]!r}). With one class every "
                "point is classified correctly and there is nothing to learn."
            )
        sizes = np.bincount(self.codes)
        if np.any(sizes < 2):
            small = [self.classes[k] for k in np.flatnonzero(sizes < 2)]
            raise InvalidInputError(
                f"Every class needs at least 2 members (the rule classifies a point by the other "
                f"points of its class); class(es) {small!r} have 1. Remove them or merge classes."
            )
        self.lam = check_positive(lam, "lam")
        self.h_min = check_positive(h_min, "h_min")
        self.rank_rtol = check_number(rank_rtol, "rank_rtol", low=0.0, high=1.0, low_open=True)
        self.T, self.F = whitening(self.K, self.rank_rtol)
        self.rank = self.T.shape[1]

    @property
    def n(self) -> int:
        return self.K.shape[0]

    def exact_size(self) -> int:
        """n: the side of the exact model's PSD block is at most n (r in the default
        whitened parameterization, n − 1 reduced, n full)."""
        return self.n

    def with_lam(self, lam) -> "KCR":
        """The same problem with another λ (shares K, labels and whitened coordinates, so
        a solution of one is a warm start for the other)."""
        other = object.__new__(KCR)
        other.__dict__.update(self.__dict__)
        other.lam = check_positive(lam, "lam")
        return other

    # ------------------------------------------------------------------ numpy side
    def distances(self, Sigma) -> np.ndarray:
        """All learned squared distances D = diag(KΣK)1ᵀ + 1diag(KΣK)ᵀ − 2KΣK."""
        S = as_float_array(Sigma, "Sigma", ndim=2)
        return sq_distances_from_gram(self.K @ S @ self.K)

    def objective(self, Sigma, h) -> float:
        """Eq. 9 at (Σ, h̃) (:func:`cvxkml.formulas.kcr.kcr_objective`)."""
        S = as_float_array(Sigma, "Sigma", ndim=2)
        return kcr_objective(
            sq_distances_from_gram(self.K @ S @ self.K), h, self.tau, self.c, float(np.sum(self.K * S)), self.lam
        )

    def objective_factor(self, G, h) -> float:
        """Eq. 9 at Σ = G Gᵀ (n × k factor; KΣK = (KG)(KG)ᵀ, tr(KΣ) = ‖K^{1/2}G‖²)."""
        G = as_float_array(G, "G", ndim=2)
        KG = self.K @ G
        return kcr_objective(sq_distances_from_gram(KG @ KG.T), h, self.tau, self.c, float(np.sum(G * KG)), self.lam)

    def violations(self, Sigma, h) -> np.ndarray:
        """[max(0, −λ_min(Σ)), |1ᵀΣ1|, max(0, h_min − h̃)] (absolute values)."""
        S = as_float_array(Sigma, "Sigma", ndim=2)
        S = 0.5 * (S + S.T)
        lmin = float(np.linalg.eigvalsh(S)[0])
        return np.array([max(0.0, -lmin), abs(float(S.sum())), max(0.0, self.h_min - float(h))])

    # ------------------------------------------------------------------ the certificate of an answer
    def answer_primal(self, sol) -> tuple:
        """(Σ, h): the matrix and the bandwidth ``info["h"]``."""
        return (sol.matrix, sol.info.get("h"))

    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """Σ (n × n, finite, symmetric, PSD), a finite bandwidth h = info["h"], and the dual
        weights s as a finite n × n matrix."""
        from .._answer import check_primal_matrix, check_scalar

        check_primal_matrix(sol.matrix, self.n, what="matrix Σ", symmetric_tol=symmetric_tol, psd_tol=psd_tol)
        check_scalar(sol.info.get("h"), "bandwidth h (info['h'])")
        if sol.dual is not None:
            check_primal_matrix(sol.dual, self.n, what="dual weights s", psd=False, symmetric_tol=np.inf)

    def trace_bound(self) -> float:
        """R >= tr(KΣ*) for every optimal Σ*: λ tr(KΣ*) <= f* <= f(0, h̃) for h̃ ∈ {ε, 1}."""
        D0 = np.zeros((self.n, self.n))
        f0 = min(kcr_objective(D0, h, self.tau, self.c, 0.0, self.lam) for h in (self.h_min, 1.0))
        return f0 / self.lam

    def dual_value(self, s, trace_bound: float | None = None) -> float:
        """Certified lower bound on the optimum from dual weights s ∈ [0, 1]^{n×n}
        (:func:`cvxkml.formulas.kcr.dual_lower_bound`; R = :meth:`trace_bound` unless
        a smaller valid ``trace_bound`` is given)."""
        s = as_float_array(s, "s", ndim=2)
        if s.shape != (self.n, self.n):
            raise InvalidInputError(f"s must be {self.n} × {self.n}; got {s.shape}.")
        s = np.clip(s, 0.0, 1.0)
        R = self.trace_bound() if trace_bound is None else float(trace_bound)
        a, S = dual_objective(s, self.tau, self.c)
        W = self.tau * (s + s.T)
        Gm = self.F.T @ ((np.diag(W.sum(axis=1)) - W) @ self.F)
        lmin = float(np.linalg.eigvalsh(0.5 * (Gm + Gm.T))[0])
        return dual_lower_bound(a, S, lmin, self.lam, R, self.h_min, h_upper_bound(R, self._max_similar_sq_norm()))[0]

    def _max_similar_sq_norm(self) -> float:
        """max ‖z_ij‖² over the similar pairs (the h̃ bound of the certificate; cached)."""
        if getattr(self, "_zmax", None) is None:
            Z = sq_distances_from_gram(self.F @ self.F.T)
            np.fill_diagonal(Z, 0.0)
            self._zmax = float(np.max(Z[self.tau > 0]))
        return self._zmax

    # ------------------------------------------------------------------ CVXPY side
    def _pairs(self):
        n = self.n
        I, J = np.triu_indices(n, 1)
        P = I.size
        E = sp.csr_matrix((np.ones(2 * P), (np.concatenate([I, J]), np.tile(np.arange(P), 2))), shape=(n, P))
        return I, J, self.tau[I, J], E

    def to_cvxpy(self, parameterization: str = "whitened") -> cp.Problem:
        """The exact model as a ``cvxpy.Problem`` (vectorized, DCP).

        The matrix variable (``problem.var_dict["S"]``) depends on ``parameterization``:

        * ``"full"``: Σ (n × n, PSD) with the constraint 1ᵀΣ1 = 0, as printed; it has no
          strictly feasible point (Σ1 = 0 is forced), which conic solvers handle poorly.
        * ``"reduced"``: Σ = V M Vᵀ with M ⪰ 0 ((n−1) × (n−1)) and V an orthonormal
          basis of 1⊥ — the same feasible set (see
          :func:`cvxkml.formulas.kcr.project_onto_N`) without the equality.
        * ``"whitened"`` (default): Σ = T X Tᵀ with X ⪰ 0 (r × r), TᵀKT = I
          (:func:`cvxkml.formulas.kcr.whitening`) — the reduced model in the eigenbasis
          of VᵀKV, identical to it when no eigenvalue is dropped, and the best
          conditioned of the three.

        With G the matrix mapping the variable to KΣK = G S Gᵀ, the distances of all
        pairs are one affine expression, B = G S Gᵀ, D = diag(B)1ᵀ + 1diag(B)ᵀ − 2B,
        taken on the index arrays (I, J) of the pairs i < j (D is symmetric and so is
        each inner hinge); each row sum adds the pair hinges through a sparse incidence
        matrix, plus the self term [1 − h̃]₊.  ``problem.var_dict["h"]`` is h̃ >= ε.
        The hinges are written as epigraphs — ``problem.constraints[:3]`` are
        t >= 1 + τ(D − h̃), v >= 1 − h̃ and r >= c + E t + v with t, v, r >= 0, the
        objective Σ r + λ·reg — so their multipliers give the certificate's dual weights.
        """
        if parameterization not in _PARAMETERIZATIONS:
            raise InvalidInputError(f"parameterization must be one of {_PARAMETERIZATIONS}; got {parameterization!r}.")
        n = self.n
        cons = []
        if parameterization == "full":
            S = cp.Variable((n, n), PSD=True, name="S")
            G = self.K
            reg = cp.sum(cp.multiply(self.K, S))
            cons.append(cp.sum(S) == 0)
        elif parameterization == "reduced":
            V = basis_orthogonal_to_ones(n)
            S = cp.Variable((n - 1, n - 1), PSD=True, name="S")
            G = self.K @ V
            Kt = V.T @ self.K @ V
            reg = cp.sum(cp.multiply(0.5 * (Kt + Kt.T), S))
        else:
            S = cp.Variable((self.rank, self.rank), PSD=True, name="S")
            G = self.F
            reg = cp.trace(S)
        h = cp.Variable(name="h")
        I, J, tp, E = self._pairs()
        B = G @ S @ G.T
        dB = cp.diag(B)
        d = dB[I] + dB[J] - 2 * B[I, J]
        # the hinges in epigraph form, so that the conic solver's multipliers are the dual
        # weights of the certificate (kcr_formulas.dual_weights_from_epigraph)
        t = cp.Variable(I.size, nonneg=True, name="t")
        v = cp.Variable(nonneg=True, name="v")
        r = cp.Variable(n, nonneg=True, name="r")
        epi = [t >= 1 + cp.multiply(tp, d - h), v >= 1 - h, r >= self.c + E @ t + v]
        objective = cp.sum(r) + self.lam * reg
        cons.append(h >= self.h_min)
        return cp.Problem(cp.Minimize(objective), epi + cons)

    # ------------------------------------------------------------------ extension
    #: model methods besides to_cvxpy / objective / violations (see
    #: :func:`cvxkml.declare.extend.check_fast_solver_applies`)
    _model_methods = ("objective_factor", "distances")

    def extension_probe(self):
        """(a symmetric n × n CVXPY variable, "Sigma"): the primal the extension's term sees."""
        return cp.Variable((self.n, self.n), symmetric=True, name="Sigma"), "Sigma"

    def extension_size(self) -> int:
        """n − 1: the reduced parameterization's PSD block."""
        return self.n - 1

    def extension_model(self):
        """The exact model for :meth:`extend`: :meth:`to_cvxpy` ("reduced"), Σ = V M Vᵀ (all
        of N, so a term that sees directions the kernel does not is modelled exactly); the
        point is read back as :meth:`solve_reference` does (Σ projected onto N).  The
        bandwidth h̃ is not seen by the term."""
        from .extend import ExtensionModel, ExtensionPoint

        prob = self.to_cvxpy("reduced")
        V = basis_orthogonal_to_ones(self.n)
        S = prob.var_dict["S"]

        def read():
            Sigma = self.sigma_from_variable(S.value, "reduced")
            h = max(self.h_min, float(prob.var_dict["h"].value))
            viol = self.violations(Sigma, h)
            return ExtensionPoint(
                primal=Sigma,
                objective=self.objective(Sigma, h),
                violations=viol,
                relative_violation=self._relative_violation(Sigma, viol),
                matrix=Sigma,
                info={"h": h},
            )

        return ExtensionModel(
            problem=prob, primal=V @ S @ V.T, read=read, conic_options={"scs_eps": 1e-8, "scs_max_iters": 100_000}
        )

    def sigma_from_variable(self, value, parameterization: str) -> np.ndarray:
        """Σ ∈ N from the model's matrix variable, projected back onto N (exact
        projection: PSD clipping of the reduced/whitened variable, P_N for "full")."""
        M = np.asarray(value, dtype=np.float64)
        M = 0.5 * (M + M.T)
        if parameterization == "full":
            return project_onto_N(M)
        w, U = np.linalg.eigh(M)
        keep = w > 0
        Tm = basis_orthogonal_to_ones(self.n) if parameterization == "reduced" else self.T
        Gf = Tm @ (U[:, keep] * np.sqrt(w[keep]))
        Gf -= Gf.mean(axis=0)[None, :]
        return Gf @ Gf.T

    def solve_reference(
        self,
        solver: str | None = None,
        parameterization: str = "whitened",
        eps: float | None = None,
        accept_inaccurate: bool = False,
        **opts,
    ) -> Solution:
        """Solve the exact model with a conic solver.

        Default solver (:meth:`~cvxkml.declare.Problem.default_solver`): Clarabel
        (tolerances ``eps`` = 1e-8) for n <= 40, SCS (eps_abs = eps_rel = ``eps`` = 1e-8,
        up to 100 000 iterations) above.  The returned Σ is the solver's variable projected
        back onto N and its objective is evaluated by :meth:`objective` at that feasible
        point (``info["solver_objective"]`` keeps the solver's own value).

        The certificate: the multipliers of the epigraph constraints give dual weights
        s ∈ [0, 1]^{n×n} (:func:`cvxkml.formulas.kcr.dual_weights_from_epigraph`,
        returned as ``dual``), and ``dual_value`` = :meth:`dual_value` (s) is a rigorous
        lower bound on the optimum, so ``gap`` = objective − dual_value >= 0 up to
        rounding.  ``optimal_inaccurate`` is returned when that certificate vouches for it
        (relative gap and violation <= 1e-6, ``info["accepted_by_certificate"]``) or with
        ``accept_inaccurate=True``; otherwise, and for any other non-optimal status,
        :class:`~cvxkml.errors.SolverError`.
        """
        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.default_solver()
        prob = self.to_cvxpy(parameterization)
        elapsed, status, iters = solve_conic(
            prob,
            solver,
            eps,
            True,
            what=f"exact KCR model (n = {self.n}, parameterization {parameterization!r})",
            scs_eps=1e-8,
            scs_max_iters=100_000,
            **opts,
        )
        Sigma = self.sigma_from_variable(prob.var_dict["S"].value, parameterization)
        h = max(self.h_min, float(prob.var_dict["h"].value))
        I, J, _, _ = self._pairs()
        c_t, c_v, c_r = prob.constraints[:3]
        s = dual_weights_from_epigraph(self.n, I, J, c_r.dual_value, c_t.dual_value, float(np.ravel(c_v.dual_value)[0]))
        objective = self.objective(Sigma, h)
        violations = self.violations(Sigma, h)
        sol = Solution(
            matrix=Sigma,
            objective=objective,
            dual=s,
            slack=None,
            violations=violations,
            n_iter=int(iters),
            converged=status == cp.OPTIMAL,
            time=elapsed,
            status=status,
            solver=f"cvxpy-{solver.lower()}-{parameterization}",
            dual_value=self.dual_value(s),
            info={
                "h": h,
                "solver_objective": float(prob.solution.opt_val),
                "max_relative_violation": self._relative_violation(Sigma, violations),
            },
        )
        sol = self._accept_reference(sol, status, accept_inaccurate, what="exact KCR model")
        sol.converged = status == cp.OPTIMAL or bool(sol.info.get("accepted_by_certificate"))
        return sol

    @staticmethod
    def _relative_violation(Sigma, violations) -> float:
        """Violations of Σ ∈ N (λ_min, 1ᵀΣ1) relative to n·max|Σ|, of h̃ >= ε absolute."""
        scale = max(1.0, Sigma.shape[0] * float(np.abs(Sigma).max(initial=0.0)))
        return float(max(violations[0] / scale, violations[1] / scale, violations[2]))

    # ------------------------------------------------------------------ fast side
    def _check_warm_start(self, warm):
        """An earlier fast :class:`Solution` on the same points, its ``info["warm_start"]``,
        or None."""
        if warm is None:
            return None
        if isinstance(warm, Solution):
            if not isinstance(warm.info.get("warm_start"), dict):
                raise InvalidInputError(
                    "warm_start: this Solution carries no info['warm_start'] (only the fast "
                    "solve's does); pass the Solution of an earlier KCR.solve()."
                )
            warm = warm.info["warm_start"]
        if not isinstance(warm, dict) or not {"X", "h", "s"} <= set(warm):
            raise InvalidInputError(
                "warm_start must be the dict Solution.info['warm_start'] of an earlier KCR solve "
                "(keys 'X', 'h', 's', …); got "
                + (f"keys {sorted(map(str, warm))}" if isinstance(warm, dict) else type(warm).__name__)
                + "."
            )
        out = dict(warm)
        out["X"] = as_float_array(warm["X"], "warm_start['X']", ndim=2)
        out["s"] = as_float_array(warm["s"], "warm_start['s']", ndim=2)
        out["h"] = check_number(warm["h"], "warm_start['h']")
        for key in ("omega", "eta"):
            if key in warm:
                out[key] = check_positive(warm[key], f"warm_start[{key!r}]")
        return out

    def solve(
        self,
        tol: float = 1e-3,
        max_iter: int = 20_000,
        time_limit: float | None = None,
        check_every: int | None = None,
        warm_start=None,
        warn: bool = True,
        callback=None,
        **solver_opts,
    ) -> Solution:
        """The fast solver: restarted PDHG with a certified duality gap and tracked PSD
        steps (:func:`cvxkml.solvers.kcr.kcr_pdhg`, in the whitened coordinates; its
        options — ``scaling`` (diagonal preconditioning), ``halpern``, ``eig``,
        ``blas_threads``, … — pass through ``solver_opts``; ``check_every=None`` is its
        size-dependent default).  Dispatched by the one solver registry
        (:meth:`~cvxkml.declare.Problem.run_pipeline`): a solver registered with
        ``register_fast_solver(KCR, solver)`` is used first, and its answer is recomputed and
        certified by the same rule (:meth:`solution_from_fast`, :meth:`certify`).

        Stops with ``converged=True`` once the certified relative gap
        (f − g)/max(1, |f|) <= ``tol``; otherwise after ``max_iter`` iterations,
        ``time_limit`` seconds or a truthy return of ``callback`` (called at each
        certificate check with ``iteration``, ``objective``, ``lower_bound``, ``gap``, ``h``,
        ``n_restarts``) with ``converged=False`` and a :class:`ConvergenceWarning` (unless
        ``warn=False``), returning the best point found and its still-valid gap bound.
        ``warm_start`` is an earlier fast :class:`Solution` on the same points (e.g. at a
        neighbouring λ, :meth:`with_lam`) or its ``info["warm_start"]``.

        Returns
        -------
        Solution
            ``matrix`` Σ (n × n, in N), ``objective`` (eq. 9), ``dual`` the n × n dual
            weights s of the certificate, ``dual_value`` its lower bound,
            ``info``: ``h`` (h̃), ``factor`` G (n × k, Σ = GGᵀ, Gᵀ1 = 0), ``gap`` (relative),
            ``warm_start`` (pass to a related solve), ``n_restarts``, ``history``,
            ``eig_exact`` / ``eig_tracked`` (PSD steps by LAPACK / by the tracker),
            ``solver_gap`` / ``solver_objective`` (the solver's own certificate; ``gap``,
            ``objective`` and ``dual_value`` are recomputed here from Σ, h̃ and the dual
            weights, and ``converged`` requires the recomputed gap <= ``tol``),
            ``working_set`` (its sizes when the working-set phase ran, else None), and the
            pipeline's ``spec``, ``gap_tol`` (= ``tol``) and ``viol_tol``.
        """
        tol = check_positive(tol, "tol")
        max_iter = check_int(max_iter, "max_iter", minimum=1)
        time_limit = check_positive(time_limit, "time_limit", allow_none=True)
        check_every = check_int(check_every, "check_every", minimum=1, allow_none=True)
        warm_start = self._check_warm_start(warm_start)
        callback = self._check_callback(callback)
        _check_pdhg_options(solver_opts)
        return self.run_pipeline(
            tol,
            max_iter,
            tol,
            max(tol, 1e-6),
            warm_start=warm_start,
            callback=callback,
            options=dict(solver_opts, time_limit=time_limit, check_every=check_every),
            warn=warn,
        )

    # ------------------------------------------------------------------ the pipeline's hooks
    def solution_from_fast(self, res, spec, gap_tol: float) -> Solution:
        """The :class:`Solution` of a fast result (the protocol of
        :mod:`cvxkml.adapters.kcr`), every number recomputed here: Σ = G Gᵀ with
        G = T · ``extra["factor"]`` centred (or Σ = T X Tᵀ from ``matrix`` X when there is
        no factor), h̃ = ``extra["h"]``, the objective (eq. 9) at (Σ, h̃), the violations, and
        the lower bound of the dual weights ``lam`` (n × n) with R = f/λ (a feasible point's
        objective bounds λ tr(KΣ*)).  ``info["gap"]`` is the recomputed relative gap
        (f − g)/max(1, |f|)."""
        from .._answer import check_primal_matrix, check_primal_vector, check_scalar

        ex = dict(res.extra)
        h = check_scalar(ex.get("h"), "bandwidth h (extra['h'])")
        dual = check_primal_vector(np.asarray(res.lam, dtype=float).ravel(), self.n * self.n, what="dual weights θs")
        dual = dual.reshape(self.n, self.n)
        if ex.get("factor") is not None:
            factor = np.asarray(ex["factor"], dtype=float)
            if factor.ndim != 2 or factor.shape[0] != self.rank or not np.all(np.isfinite(factor)):
                from ..errors import SolverError

                raise SolverError(
                    f"The solver's factor (extra['factor']) must be a finite {self.rank} × k array (X = "
                    f"factor factorᵀ in the whitened coordinates); got shape {factor.shape}."
                )
            G = self.T @ factor
            G -= G.mean(axis=0)[None, :]
            Sigma = G @ G.T
            # validate, never trust: objective and bound recomputed here from Σ, h̃ and θs
            objective = self.objective_factor(G, h)
        else:
            X = check_primal_matrix(res.matrix, self.rank, what="whitened matrix X", psd=False, symmetric_tol=np.inf)
            Sigma = self.T @ (0.5 * (X + X.T)) @ self.T.T
            Sigma -= Sigma.mean(axis=0)[None, :]
            Sigma -= Sigma.mean(axis=1)[:, None]
            G = None
            objective = self.objective(Sigma, h)
        violations = self.violations(Sigma, h)
        # R = f/λ bounds tr(KΣ*) only when (Σ, h̃) is feasible (f >= f*)
        feasible = self._relative_violation(Sigma, violations) <= 1e-9
        dual_value = self.dual_value(dual, trace_bound=objective / self.lam if feasible else None)
        gap = (objective - dual_value) / max(1.0, abs(objective))
        if not np.isfinite(gap):
            gap = np.inf
        return Solution(
            matrix=Sigma,
            objective=objective,
            dual=dual,
            slack=None,
            violations=violations,
            n_iter=int(res.sweeps),
            converged=False,
            time=float(res.time),
            status=str(ex.get("status", "converged" if res.code == OK else "max_iter reached")),
            solver=str(ex.get("solver", spec.name)),
            dual_value=dual_value,
            info={
                "h": h,
                "factor": G,
                "gap": gap,
                "solver_gap": res.stop_value,
                "warm_start": ex.get("warm"),
                "n_restarts": ex.get("n_restarts"),
                "history": ex.get("history"),
                "eig_exact": ex.get("eig_exact"),
                "eig_tracked": ex.get("eig_tracked"),
                "solver_objective": ex.get("objective"),
                "working_set": ex.get("working_set"),
            },
        )

    def certify(self, sol, res, gap_tol: float, viol_tol: float) -> bool:
        """KCR's rule: the solver's own rule met (``code`` OK), the recomputed relative gap
        (f − g)/max(1, |f|) <= ``gap_tol`` (the solve's ``tol``, up to a relative 1e-6 of
        round-off) and the relative violation (:meth:`_relative_violation`: Σ ∈ N, h̃ >= ε)
        within ``viol_tol``."""
        viol = self._relative_violation(sol.matrix, sol.violations)
        return bool(res.code == OK and sol.info["gap"] <= gap_tol * (1.0 + 1e-6) and viol <= viol_tol)

    def unconverged_status(self, sol, res) -> str:
        """The solver's own status, or — when it claimed its rule met — that the certificate
        was not reproduced (the solver's gap beside the recomputed one)."""
        if res.code == OK:
            return f"certificate not reproduced (solver gap {res.stop_value:.3g}, recomputed {sol.info['gap']:.3g})"
        return sol.status

    def unconverged_message(self, sol, res, spec, gap_tol: float, viol_tol: float) -> str:
        """The ConvergenceWarning's line: where PDHG stopped and what to try."""
        return (
            f"KCR PDHG stopped ({sol.status}) after {res.sweeps} iterations with a certified "
            f"relative gap {sol.info['gap']:.3g} > tol {gap_tol:.3g}. Raise max_iter / time_limit, loosen "
            "tol, or rescale the kernel (a very wide Gaussian kernel with a small lam is "
            "ill-conditioned)."
        )
