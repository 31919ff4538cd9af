"""The MKL_P weight step (Wang et al. eq. 8, 15–17), :class:`RankOneWeightStep`: its exact
models (the convex relaxation and the penalized problems (15)), its Lagrange certificate and
its pipeline hooks; and :class:`WeightStepSolution`, the answer of both weight steps.  The
convex iteration itself is the registered solver ``mkl-convex-iteration``
(:mod:`cvxkml.adapters.mkl`).  Re-exported by :mod:`cvxkml.declare.mkl`."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np

from .._validation import (
    as_float_array,
    check_choice,
    check_conic_options,
    check_int,
    check_number,
    check_positive,
)
from ..errors import ConvergenceWarning, InvalidInputError, SolverError
from ..solution import Solution
from ._conic import solve_conic, solve_conic_bound
from ._mkl_objectives import LinearPObjective, mu_from_P
from .extend import Extendable
from .problem import CALLBACK_STOP, Problem

#: The paper's grid for w in (15): {10^i, i = 0 … 8}.
W_GRID = tuple(10.0**i for i in range(9))


# --------------------------------------------------------------------------- results
class WeightStepSolution(Solution):
    """The :class:`~cvxkml.solution.Solution` of a kernel-weight step, with read-only views
    of what the step learned (all of them are in ``info`` too).

    ``matrix`` is the step's primal point: P (m × m) for the MKL_P step — μμᵀ from
    :meth:`RankOneWeightStep.solve`, the relaxation's P from
    :meth:`RankOneWeightStep.solve_reference` — and μ (m,) for the MKL_μ step.
    """

    @property
    def mu(self) -> np.ndarray:
        """The kernel weights μ (on the simplex)."""
        return self.info["mu"]

    @property
    def P(self) -> np.ndarray:
        """The P step's P*: of the last convex iteration (numerically rank one when
        ``rank_one``), or the relaxation's from ``solve_reference``; μμᵀ for the μ step."""
        return self.info["P"]

    @property
    def relaxed(self) -> float | None:
        """h at the relaxation's P (eq. 15 with W = 0), or None."""
        return self.info.get("relaxed")

    @property
    def w(self) -> float | None:
        """The weight w of (15) that reached the rank-one point (P step), or None."""
        return self.info.get("w")

    @property
    def rank_one(self) -> bool:
        """Whether (17) was reached (always True for the μ step)."""
        return bool(self.info.get("rank_one", True))

    @property
    def history(self) -> list:
        """Per convex iteration (w, iteration, h(P*), tr(P*W), Σ_{i>=2} λ_i) (P step), or
        per CCP iteration (iteration, h) (:func:`lmnn_mu_step`)."""
        return self.info.get("history", [])

    @property
    def n_solves(self) -> int:
        """Solves of (15) made (conic or interior-point)."""
        return int(self.info.get("n_solves", 0))

    @classmethod
    def from_fast(cls, res, spec, matrix, objective, violations, bound, info) -> "WeightStepSolution":
        """The answer of a weight step's fast result ``res`` of ``spec``: ``matrix`` with its
        recomputed ``objective`` and ``violations``, the lower bound ``bound`` (None: no
        certificate), the solver's iterations, time and name (the pipeline certifies it)."""
        return cls(
            matrix=matrix,
            objective=objective,
            dual=None,
            slack=None,
            violations=violations,
            n_iter=int(res.sweeps),
            converged=True,
            time=float(res.time),
            status="converged",
            solver=str(res.extra.get("solver", spec.name)),
            dual_value=None if bound is None else float(bound),
            info=info,
        )


# --------------------------------------------------------------------------- MKL_P step
def _feasible_set(P) -> list:
    """The constraints of eq. 8 / 15 on P besides P ⪰ 0 (a PSD variable): Σ_ij P_ij = 1 and
    P >= 0, in this order.  Every model of the P step states them through this function
    (:func:`_set_bound` reads their multipliers by position); :func:`_set_violations` is
    their NumPy side."""
    return [cp.sum(P) == 1.0, P >= 0.0]


def _set_violations(P) -> np.ndarray:
    """Violations of the convex constraints of eq. 8 / 15 at P: [max(0, −λ_min(P)),
    |Σ_ij P_ij − 1|, max(0, −min_ij P_ij)] (all relative to Σ P = 1)."""
    P = np.asarray(P, dtype=float)
    lam_min = float(np.linalg.eigvalsh(0.5 * (P + P.T))[0])
    return np.array([max(0.0, -lam_min), abs(float(P.sum()) - 1.0), max(0.0, -float(P.min()))])


def _set_bound(a: float, G, cons, scale: float) -> float:
    """A Lagrange lower bound on min_{P ∈ S} a + ⟨G, P⟩, S = {P ⪰ 0, P >= 0, Σ P = 1}, from
    the multipliers of the :func:`_feasible_set` constraints ``cons`` of a model whose
    objective was multiplied by ``scale``:

        a + ν + min(0, λ_min(G − ν 11ᵀ − N)),   ν = −y / scale,  N = max(Z, 0) / scale,

    y and Z CVXPY's duals of Σ P = 1 and P >= 0.  Valid for any ν and N >= 0: on S,
    ⟨G, P⟩ = ν + ⟨N, P⟩ + ⟨R, P⟩ with ⟨N, P⟩ >= 0 and ⟨R, P⟩ >= min(0, λ_min(R))·tr P,
    0 <= tr P <= Σ_ij P_ij = 1; so round-off in the multipliers only loosens the bound.
    NaN when the solver returned no multipliers."""
    y, Z = cons[0].dual_value, cons[1].dual_value
    if y is None or Z is None:
        return float("nan")
    nu = -float(np.ravel(y)[0]) / scale
    R = np.asarray(G, dtype=float) - nu - np.maximum(np.asarray(Z, dtype=float), 0.0) / scale
    return float(a + nu + min(0.0, float(np.linalg.eigvalsh(0.5 * (R + R.T))[0])))


class RankOneWeightStep(Extendable, Problem):
    """The rank-one kernel-weight step ML_h-MKL_P (Wang et al. eq. 8, 15–17) for any h
    linear in P:

        min_P  h(P)   s.t.  P ⪰ 0,  Σ_ij P_ij = 1,  P >= 0,  rank P = 1        (8)

    (P = μμᵀ, μ on the simplex).  The rank constraint makes (8) nonconvex:
    :meth:`solve_reference` solves its convex relaxation ((15) with W = 0), whose Lagrange
    dual value is a certified lower bound on min_μ h(μμᵀ); :meth:`solve` runs the convex
    iteration (15)–(17) to a rank-one point μμᵀ and is certified only when its gap to that
    bound is within ``tol``.  When the relaxation is not tight the gap stays positive (the
    convex iteration is a local method, §4.1) and a good point is honestly reported
    uncertified (``converged=False``, a :class:`ConvergenceWarning`).

    Parameters
    ----------
    h : LinearPObjective
        The objective for fixed A (e.g. :class:`LMNNWeightObjective`,
        :class:`CallablePObjective`).
    w_grid : sequence of float, default=(1, 10, …, 1e8)
        Values of w tried in increasing order; the first that reaches the rank-one
        point (17) is used (the paper's rule).
    rank_tol : float, default=1e-6
        Rank one means Σ_{i>=2} λ_i(P*) <= rank_tol · λ_1(P*) (eq. 17).
    max_convex_iter : int, default=50
        Iterations (15)–(16) per value of w (the default of ``solve(max_iter=...)``).
    method : {"auto", "interior-point", "full", "cutting-plane", "active-set"}, default="auto"
        How (15) is solved: "interior-point" (no CVXPY) is
        :func:`cvxkml.solvers.mkl.weight_step_ipm`, a primal–dual interior-point method on
        the m × m doubly non-negative block with a working set of hinges (exact: the
        hinges outside it are linearized or dropped, both lower bounds of h, and any whose
        sign is wrong at the solution joins it), warm-started at the previous P* of the
        convex iteration; it needs ``h.hinge_terms()`` (LMNN has it).  "full" builds
        the whole CVXPY model of h (practical while h has a few thousand terms);
        "cutting-plane" keeps h's linear part exact and replaces its piecewise part by
        the maximum of sub-gradient cuts (Kelley's method), re-solving a small CVXPY
        master problem (m × m PSD block + one row per cut) until the true value and the
        master bound agree to ``tol``; cuts are valid for every W and w, so they are kept
        across the whole convex iteration.
        "active-set" solves (15) with the hinge terms of a working set only and adds the
        hinges active at the solution until none is left out (exact: the restricted h
        is a lower bound on h that agrees with it at the final point).  "auto":
        interior-point when h offers ``hinge_terms`` (LMNN does); otherwise full when h
        has at most 2000 triplets, else active-set when h offers ``hinge_arguments`` /
        ``cvx_subset``, else cutting planes.
    tol : float, default=1e-7
        Relative gap of the cutting-plane solves.
    solver : str or None, default="CLARABEL"
        The conic solver of (15) (None: :meth:`default_solver`, Clarabel up to m = 40
        kernels); the default of :meth:`solve_reference` too.
    max_cuts : int, default=2000
        Cutting-plane budget per solve.
    active_buffer : float, default=0.5
        "active-set": hinges with argument > −active_buffer join the working set.

    Notes
    -----
    The certificate's lower bound comes from :func:`_set_bound` applied to an affine
    minorant of h (for "interior-point": the same bound,
    :func:`cvxkml.solvers.mkl.lagrange_bound`, at the interior-point multipliers α_t of
    every hinge, ν and N): with :meth:`LinearPObjective.minorant` (LMNN: the hinge
    multipliers) or the cutting-plane master's cut multipliers it is a closed-form Lagrange dual value,
    valid for whatever multipliers the solver returns; for an h without one (a
    :class:`CallablePObjective`) it is the conic solver's dual objective (Clarabel / SCS;
    with another solver there is no certificate, ``info["no_certificate"]`` says so).
    """

    def __init__(
        self,
        h: LinearPObjective,
        w_grid=W_GRID,
        rank_tol: float = 1e-6,
        max_convex_iter: int = 50,
        method: str = "auto",
        tol: float = 1e-7,
        solver: str = "CLARABEL",
        max_cuts: int = 2000,
        active_buffer: float = 0.5,
    ):
        if not isinstance(h, LinearPObjective):
            raise InvalidInputError(
                "h must be a LinearPObjective (e.g. LMNNWeightObjective, or CallablePObjective "
                "wrapping a CVXPY expression linear in P)."
            )
        self.h = h
        self.m = check_int(h.m, "h.m (the number of kernels)", minimum=1)
        grid = as_float_array(w_grid, "w_grid", finite=False) if not isinstance(w_grid, (str, bytes)) else None
        if grid is None or grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
            raise InvalidInputError(f"w_grid must be a non-empty sequence of positive numbers; got {w_grid!r}.")
        self.w_grid = tuple(float(w) for w in grid)
        self.rank_tol = check_positive(rank_tol, "rank_tol")
        self.max_convex_iter = check_int(max_convex_iter, "max_convex_iter", minimum=1)
        check_choice(method, "method", ("auto", "interior-point", "full", "cutting-plane", "active-set"))
        if method == "cutting-plane" and not h.supports_cuts:
            raise InvalidInputError(
                "method='cutting-plane' needs h.linear_part(), h.cut() and h.initial_cuts(); use method='full'."
            )
        has_active = all(hasattr(h, a) for a in ("hinge_arguments", "cvx_subset"))
        if method == "active-set" and not has_active:
            raise InvalidInputError(
                "method='active-set' needs h.hinge_arguments() and h.cvx_subset(); use method='full'."
            )
        if method == "interior-point" and not h.supports_ipm:
            raise InvalidInputError(
                "method='interior-point' needs h.hinge_terms() (a HingeTerms form of h); use method='full'."
            )
        if method == "auto" and h.supports_ipm:
            method = "interior-point"
        elif method == "auto":
            n_terms = getattr(getattr(h, "triplets", None), "n_triplets", 0)
            if n_terms <= 2000:
                method = "full"
            elif has_active:
                method = "active-set"
            else:
                method = "cutting-plane" if h.supports_cuts else "full"
        self.method = method
        self.tol = check_positive(tol, "tol")
        self.solver = check_conic_options(solver, None)[0] or self.default_solver()
        self.max_cuts = check_int(max_cuts, "max_cuts", minimum=1)
        self._model = None  # (cvxpy.Problem, h's constraints) of "full" / "active-set"
        self._cuts = None
        self._active = None
        self._relaxation = None  # (P, h(P), (bound, how)) of (15) with W = 0
        self._unsettled = 0  # cutting-plane solves stopped at max_cuts
        self._last_solver = self.solver  # the solver of the last solve (SCS after a fallback)
        self.active_buffer = check_number(active_buffer, "active_buffer", low=0.0)
        self.n_solves = 0
        self._ipm_start = None  # the point the interior point classifies hinges at
        self._ipm_stats = []  # per interior-point solve: (seconds, rounds, iterations, kept)

    # ------------------------------------------------------------------ numpy side
    def exact_size(self) -> int:
        """m, the side of the PSD variable P (the number of kernels)."""
        return self.m

    def _matrix(self, P, name: str = "P") -> np.ndarray:
        P = as_float_array(P, name, ndim=2)
        if P.shape != (self.m, self.m):
            raise InvalidInputError(f"{name} must be {self.m} × {self.m} (one row per kernel); got {P.shape}.")
        return P

    def objective(self, P) -> float:
        """h(P), the objective of (8) and of (15) with W = 0 (for P = μμᵀ: h(μμᵀ))."""
        return float(self.h.value(self._matrix(P)))

    def violations(self, P) -> np.ndarray:
        """The convex constraints of (8) / (15) at P: [max(0, −λ_min(P)), |Σ P − 1|,
        max(0, −min P_ij)] (:func:`_set_violations`).  The rank constraint of (8) is measured
        by :meth:`rank_gap` (eq. 17)."""
        return _set_violations(self._matrix(P))

    # ------------------------------------------------------------------ the certificate of an answer
    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """P is a finite, symmetric, PSD m × m matrix."""
        from .._answer import check_primal_matrix

        check_primal_matrix(sol.matrix, self.m, what="matrix P", symmetric_tol=symmetric_tol, psd_tol=psd_tol)

    def dual_value_unverified(self) -> str | None:
        """The weight step's bound is its solver's (kept as reported, flagged)."""
        return "the weight step's bound is not a function of returned duals"

    def rank_gap(self, P) -> float:
        """Σ_{i>=2} λ_i(P) / λ_1(P), the rank-one measure of eq. 17 (0 for P = μμᵀ)."""
        return self._tail(self._matrix(P))[1]

    # ------------------------------------------------------------------ models
    def _full_model(self, active=None):
        """(the model of (15), h's own constraints): the full h, or with ``active`` the hinge
        terms of that working set only (``h.cvx_subset``, the "active-set" method)."""
        P = cp.Variable((self.m, self.m), PSD=True, name="P")
        wW = cp.Parameter((self.m, self.m), symmetric=True, name="wW", value=np.zeros((self.m, self.m)))
        scale = cp.Parameter(nonneg=True, name="s", value=1.0)
        expr, cons = self.h.cvx(P) if active is None else self.h.cvx_subset(P, active)
        prob = cp.Problem(cp.Minimize(scale * expr + cp.sum(cp.multiply(wW, P))), _feasible_set(P) + list(cons))
        return prob, list(cons)

    # ------------------------------------------------------------------ extension
    #: model methods besides to_cvxpy / objective / violations (see
    #: :func:`cvxkml.declare.extend.check_fast_solver_applies`)
    _model_methods = ("_full_model",)

    def extension_probe(self):
        """(a symmetric m × m CVXPY variable, "P"): the primal the extension's term sees."""
        return cp.Variable((self.m, self.m), symmetric=True, name="P"), "P"

    def extension_model(self):
        """The exact model for :meth:`extend`: :meth:`to_cvxpy` at wW = 0, s = 1 (the convex
        relaxation of (8), as :meth:`solve_reference`; ``info["mu"]``, ``info["rank_one"]``
        as there)."""
        from .extend import ExtensionModel, ExtensionPoint

        prob, _ = self._full_model()
        P = prob.var_dict["P"]

        def read():
            Pv = np.asarray(P.value, dtype=float)
            Pv = 0.5 * (Pv + Pv.T)
            viol = self.violations(Pv)
            mu = mu_from_P(Pv)
            rank_gap = self._tail(Pv)[1]
            return ExtensionPoint(
                primal=Pv,
                objective=self.objective(Pv),
                violations=viol,
                relative_violation=float(np.max(viol)),
                matrix=Pv,
                info={
                    "mu": mu,
                    "P": Pv,
                    "relaxation": True,
                    "n_solves": 1,
                    "rank_one": rank_gap <= self.rank_tol,
                    "rank_gap": rank_gap,
                },
            )

        return ExtensionModel(problem=prob, primal=P, read=read, solution_type=WeightStepSolution)

    def to_cvxpy(self) -> cp.Problem:
        """Problem (15) as a ``cvxpy.Problem`` with variable ``"P"`` and parameters ``"wW"``
        (= s·w·W) and ``"s"`` (a positive scale): min s·h(P) + tr(wW·P) s.t. P ⪰ 0,
        Σ_ij P_ij = 1, P >= 0.  With s = 1 it is (15) as printed, and with wW = 0 (the
        values it is built with) the convex relaxation of (8); the solver uses
        s = 1 / max(1, w) so that large w (up to 1e8) stay well scaled.  Parameters keep
        the model DPP, so re-solves skip the compilation."""
        return self._full_model()[0]

    def _solve(self, prob, what, want_bound: bool = False) -> float:
        """Solve with the chosen solver, falling back to SCS when it fails; returns the
        solver's dual objective (NaN unless ``want_bound``)."""
        run = solve_conic_bound if want_bound else solve_conic
        try:
            out = run(prob, self.solver, None, True, what)
            self._last_solver = self.solver
        except SolverError:
            if self.solver.upper() == "SCS":
                raise
            out = run(prob, "SCS", 1e-8, True, what)
            self._last_solver = "SCS"
        self.n_solves += 1
        return float(out[3]) if want_bound else float("nan")

    def _certificate(self, prob, cons, s, wW, raw, idx=None):
        """(lower bound on (15) for the solved model, how it was obtained); the bound is None
        when there is none.  ``prob`` starts with the :func:`_feasible_set` constraints."""
        mino = self.h.minorant(cons, s, idx) if cons is not None else None
        if mino is not None:
            a, G = mino
            bound = _set_bound(a, G + wW, prob.constraints[:2], s)
            if np.isfinite(bound):
                return bound, "Lagrange dual of (15) (multipliers of h's constraints and of the feasible set)"
        if np.isfinite(raw):
            return raw / s, f"{self._last_solver} dual objective of (15) (no closed-form dual for this h)"
        return None, (
            f"{self._last_solver} returned neither multipliers for a closed-form Lagrange "
            "dual of h (LinearPObjective.minorant) nor a dual objective; use "
            "solver='CLARABEL' or 'SCS'"
        )

    def _library_solver(self, task: str, **options):
        """Run ``task`` ("relaxation", "convex_iteration") of the library's own registered
        solver of this step (the first non-user spec that accepts it: a user's solver answers
        :meth:`solve`, not these sub-problems of the convex iteration)."""
        from .registry import SolveRequest, call, registered

        spec = next((s for s in registered() if not s.user and not s.generic and s.refusal(self) is None), None)
        if spec is None:
            raise InvalidInputError(
                f"No solver of the library takes {type(self).__name__}: import cvxkml (which registers the "
                "built-in solvers) before solving, or use solve_reference()."
            )
        return call(
            spec, self, self.tol, self.max_convex_iter, SolveRequest(1.0, 1.0, options=dict(task=task, **options))
        )

    def solve_relaxation(self, W=None, w: float = 1.0) -> tuple[np.ndarray, float]:
        """Solve (15) for a direction matrix W (default 0) and weight w; returns (P*, value)."""
        W = np.zeros((self.m, self.m)) if W is None else self._matrix(W, "W")
        res = self._library_solver("relaxation", W=W, w=float(w))
        if res.extra["unsettled"]:
            warnings.warn(
                f"Cutting planes stopped at max_cuts={self.max_cuts} before the gap closed "
                f"to tol={self.tol:g}; raise max_cuts.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return res.matrix, res.extra["value"]

    @staticmethod
    def direction(P) -> np.ndarray:
        """Eq. 16 in closed form: W = U Uᵀ, U the eigenvectors of P for its m − 1 smallest
        eigenvalues (the optimum of min tr(PᵀW) s.t. 0 ⪯ W ⪯ I, tr W = m − 1)."""
        lam, V = np.linalg.eigh(0.5 * (P + P.T))
        U = V[:, :-1]
        return U @ U.T

    @staticmethod
    def _tail(P) -> tuple[float, float]:
        """(Σ_{i>=2} λ_i(P), the same over λ_1(P)): eq. 17's tail, absolute and relative."""
        lam = np.linalg.eigvalsh(0.5 * (P + P.T))
        tail = float(np.sum(lam[:-1]))
        return tail, tail / max(float(lam[-1]), np.finfo(float).tiny)

    def convex_iteration(self, w: float, W0=None) -> tuple[np.ndarray, bool, list, np.ndarray]:
        """Alternate (15) and (16) for one w from W0 (default 0) until (17) holds
        (Σ_{i>=2} λ_i <= rank_tol·λ_1) or (15)'s value stops decreasing.

        Returns (P, reached, history rows (w, it, h(P), tr(PW), tail), W) with W the
        direction matrix of the last solve: P minimizes h(P') + w·tr(P'W) over all
        feasible P', which is what certifies the point (see :meth:`solve`)."""
        res = self._library_solver("convex_iteration", w=w, W0=W0)
        return res.matrix, res.extra["rank_one"], res.extra["history"], res.extra["W"]

    def _start_direction(self, warm_start, W0):
        """The start direction W of the convex iteration from ``warm_start`` (or the
        deprecated ``W0``), validated."""
        if W0 is not None:
            if warm_start is not None:
                raise InvalidInputError(
                    "Give the start direction once: pass warm_start=... (W0 is its deprecated former name), not both."
                )
            warnings.warn(
                "solve(W0=...) is deprecated and will be removed in the next release; use warm_start=...",
                DeprecationWarning,
                stacklevel=3,
            )
            warm_start = W0
        if warm_start is None:
            return None
        m = self.m
        arr = as_float_array(warm_start, "warm_start")
        if arr.shape == (m, m):
            return arr
        if arr.shape == (m,):
            if np.any(arr < 0) or not arr.sum() > 0:
                raise InvalidInputError(
                    f"warm_start as weights must be {m} non-negative numbers, not all zero (e.g. the "
                    f"previous μ); got {arr}."
                )
            u = arr / np.linalg.norm(arr)
            return np.eye(m) - np.outer(u, u)
        raise InvalidInputError(
            f"warm_start must be the start direction W of eq. 16, an {m} × {m} matrix (e.g. a "
            f"previous solution's info['W']), or previous weights μ, {m} non-negative numbers "
            f"(then W = I − uuᵀ, u = μ/‖μ‖); got shape {arr.shape}."
        )

    def solve_reference(
        self, solver: str | None = None, eps: float | None = None, accept_inaccurate: bool = False, **opts
    ) -> WeightStepSolution:
        """The convex relaxation of (8) — (15) with W = 0, no rank constraint — by a conic
        solver at high accuracy (the exact model the P step has; (8) itself is nonconvex).

        Parameters
        ----------
        solver : str or None
            A CVXPY solver (default: the constructor's, Clarabel).
        eps : float or None
            Its tolerance (Clarabel 1e-8, SCS 1e-9 by default).
        accept_inaccurate : bool
            Accept ``optimal_inaccurate`` without the certificate vouching for it.
        **opts
            Passed to the solver.

        Returns
        -------
        WeightStepSolution
            ``matrix`` = the relaxation's P, ``objective`` = h(P), ``dual_value`` its
            Lagrange dual value (a certified lower bound on min_μ h(μμᵀ); ``gap`` certifies
            the relaxation), ``info["rank_one"]`` whether P is rank one (eq. 17, then it is
            the global optimum of (8)), ``info["mu"]`` its top-eigenvector weights and
            ``info["rank_one_objective"]`` = h(μμᵀ) for them (an upper bound on the optimum
            of (8)), ``info["certificate"]`` how the bound was obtained.

        Raises
        ------
        SolverError
            The solver failed, or returned ``optimal_inaccurate`` that the certificate does
            not vouch for (:meth:`~cvxkml.declare.Problem._accept_reference`).
        """
        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.solver
        prob, cons = self._full_model()
        elapsed, status, iters, raw = solve_conic_bound(
            prob, solver, eps, True, what="relaxation (15) of the MKL_P weight step (W = 0)", **opts
        )
        self._last_solver = solver
        P = np.asarray(prob.var_dict["P"].value, dtype=float)
        P = 0.5 * (P + P.T)
        bound, how = self._certificate(prob, cons, 1.0, 0.0, raw)
        viol = self.violations(P)
        mu = mu_from_P(P)
        rank_gap = self._tail(P)[1]
        info = {
            "mu": mu,
            "P": P,
            "relaxed": self.objective(P),
            "relaxation": True,
            "rank_one": rank_gap <= self.rank_tol,
            "rank_gap": rank_gap,
            "rank_one_objective": self.objective(np.outer(mu, mu)),
            "n_solves": 1,
            "solver_objective": float(prob.value),
            "solver_dual_objective": raw,
            "max_relative_violation": float(np.max(viol)),
        }
        info["certificate" if bound is not None else "no_certificate"] = how
        sol = WeightStepSolution.from_conic(
            status,
            solver,
            elapsed,
            iters,
            matrix=P,
            objective=self.objective(P),
            dual=None,
            slack=None,
            violations=viol,
            dual_value=bound,
            info=info,
        )
        sol = self._accept_reference(sol, status, accept_inaccurate, what="relaxation (15) of the MKL_P weight step")
        sol.converged = status == cp.OPTIMAL or bool(sol.info.get("accepted_by_certificate"))
        return sol

    def solve(
        self, tol: float = 1e-6, max_iter: int | None = None, callback=None, warm_start=None, *, W0=None
    ) -> WeightStepSolution:
        """The weight step: the convex iteration (15)–(16) for w = w_grid[0], w_grid[1], …
        until one reaches the rank-one point (17); μ from that P, certified against the
        relaxation's Lagrange dual value.

        Parameters
        ----------
        tol : float, default=1e-6
            The certificate asked: ``converged`` when the rank-one point was reached and
            the relative gap (h(μμᵀ) − dual_value) / max(1, |h(μμᵀ)|) lies in [−tol, tol].
        max_iter : int or None
            Iterations (15)–(16) per value of w (default: ``max_convex_iter``).
        callback : callable or None
            Called after every solve of (15) in the convex iteration with a dict:
            ``iteration`` (solves so far), ``w``, ``convex_iteration`` (index for this w),
            ``objective`` (h(μμᵀ) for μ from the current P*), ``relaxed_objective``
            (h(P*)), ``rank_gap`` (Σ_{i>=2} λ_i / λ_1), ``rank_one`` (17 reached),
            ``lower_bound`` (the relaxation's Lagrange bound; None while unknown: with a
            warm start it is computed at the end) and ``gap`` (relative, or None).  A truthy
            return stops the solve (``status="stopped by callback"``, ``converged=False``)
            unless that solve reached the rank-one point, which ends it anyway.
        warm_start : array-like, optional
            The start direction W (m × m; default 0, the paper's choice), e.g. a previous
            ``info["W"]``, or previous weights μ (m,), which start at W = I − uuᵀ, u ∝ μ:
            then h(μμᵀ) cannot exceed h(μ_prev μ_prevᵀ) when the rank-one point is reached
            (the values of (15) never increase).
        W0 : array-like, optional
            Deprecated name of an m × m ``warm_start``.

        Returns
        -------
        WeightStepSolution
            ``matrix`` = μμᵀ, ``objective`` = h(μμᵀ), ``dual_value`` = the Lagrange dual value
            of the relaxation (15) with W = 0 (a lower bound on min_μ h(μμᵀ), so ``gap`` >= 0
            up to rounding bounds μ's suboptimality), ``info``: ``mu``, ``P`` (the last P*),
            ``relaxed`` (h at the relaxation's P), ``relaxation_rank_one`` (the relaxation is
            tight: its P is rank one), ``w``, ``rank_one``, ``history``, ``n_solves``,
            ``W`` (the last direction), ``certificate``.

        Notes
        -----
        Besides the global gap, the final P minimizes h(P') + w·tr(P'W) over every
        feasible P', so the rank-one point satisfies h(μμᵀ) <= h(μ'μ'ᵀ) + w·μ'ᵀWμ' for every
        μ' on the simplex (a local-optimality certificate; the convex iteration is a local
        method, §4.1).  When no w reaches rank one, μ comes from the top eigenvector of the
        last P (``rank_one=False``).  Every unconverged return warns once
        (:class:`ConvergenceWarning`).

        This is the certified-solve pipeline (:meth:`~cvxkml.declare.problem.Problem.run_pipeline`):
        the solver registered for the class runs (the library's ``mkl-convex-iteration``, or a
        user's :func:`~cvxkml.declare.register_fast_solver` first), and its P is read back
        and certified by this class's hooks (:meth:`solution_from_fast`, :meth:`certify`).
        """
        tol = check_positive(tol, "tol")
        max_iter = self.max_convex_iter if max_iter is None else self._iteration_limit(max_iter)
        callback = self._check_callback(callback)
        W0 = self._start_direction(warm_start, W0)
        return self.run_pipeline(tol, max_iter, tol, tol, warm_start=W0, callback=callback)

    # ------------------------------------------------------------------ the pipeline's hooks
    def _relaxation_bound(self):
        """(the relaxation's P, h there, Lagrange bound or None, how): (15) with W = 0 by the
        exact model (:meth:`solve_reference`), the step's own certificate of an answer that
        does not come from the library's convex iteration."""
        try:
            ref = self.solve_reference(accept_inaccurate=True)
        except SolverError as exc:
            return None, None, None, f"the relaxation (15) with W = 0 failed: {exc}"
        how = ref.info.get("certificate", ref.info.get("no_certificate"))
        return ref.matrix, ref.objective, ref.dual_value, f"the exact relaxation (15) with W = 0: {how}"

    def solution_from_fast(self, res, spec, gap_tol: float):
        """The answer μ = √λ_1 v_1 of the solver's P (:func:`mu_from_P`), and every number
        recomputed at μμᵀ: h, the violations, the rank-one measure (17).  The lower bound is
        the relaxation's Lagrange bound: the one the library's convex iteration computed by
        the step's formulas (its multipliers of (15) with W = 0), and for a user's solver
        the exact relaxation's (:meth:`solve_reference`), never a bound the solver claims."""
        P = self._matrix(res.matrix, f"the matrix P of {spec.name}")
        P = 0.5 * (P + P.T)
        extra = dict(res.extra)
        if spec.user:
            P_rel, relaxed, bound, how = self._relaxation_bound()
        else:
            P_rel, relaxed, bound, how = (
                extra.get(k) for k in ("relaxation_P", "relaxed", "lower_bound", "certificate_how")
            )
        mu = mu_from_P(P)
        Pmu = np.outer(mu, mu)
        obj = self.objective(Pmu)
        viol = self.violations(Pmu)
        history = list(extra.get("history", []))
        info = {
            "mu": mu,
            "P": P,
            "relaxed": relaxed,
            "w": extra.get("w"),
            "rank_one": bool(self.rank_gap(P) <= self.rank_tol),
            "relaxation_rank_one": bool(P_rel is not None and self.rank_gap(P_rel) <= self.rank_tol),
            "history": history,
            "n_solves": int(extra.get("n_solves", 0)),
            "method": extra.get("method", spec.name),
            "W": extra.get("W"),
            "rank_gap": self.rank_gap(P),
            "gap_tol": gap_tol,
            "max_relative_violation": float(np.max(viol)),
        }
        info["certificate" if bound is not None else "no_certificate"] = how
        if extra.get("unsettled"):
            info["unsettled_cutting_plane_solves"] = extra["unsettled"]
        if extra.get("interior_point"):
            info["interior_point"] = extra["interior_point"]
        return WeightStepSolution.from_fast(res, spec, Pmu, obj, viol, bound, info)

    def certify(self, sol, res, gap_tol: float, viol_tol: float) -> bool:
        """Certified when the rank-one point (17) was reached, not stopped by the callback,
        and h(μμᵀ) − bound lies in ±``gap_tol``·max(1, |h(μμᵀ)|) (and the violation within
        ``viol_tol``)."""
        gap = sol.gap
        scale = max(1.0, abs(sol.objective))
        within = gap is not None and -gap_tol * scale <= gap <= gap_tol * scale
        ok_viol = sol.info["max_relative_violation"] <= viol_tol
        return bool(sol.info["rank_one"] and within and ok_viol and not res.extra.get("stopped"))

    def unconverged_status(self, sol, res) -> str:
        if res.extra.get("stopped"):
            return CALLBACK_STOP
        return "rank one, not certified" if sol.info["rank_one"] else "rank one not reached"

    def unconverged_message(self, sol, res, spec, gap_tol: float, viol_tol: float) -> str:
        gap = sol.gap
        how = sol.info.get("certificate", sol.info.get("no_certificate"))
        scale = max(1.0, abs(sol.objective))
        gap_txt = f"n/a (no certificate: {how})" if gap is None else f"{gap / scale:.3g}"
        history = sol.info["history"]
        w_used = sol.info["w"]
        if res.extra.get("stopped"):
            return (
                f"The callback stopped the convex iteration after {sol.n_iter} solve(s) of (15), "
                f"before the rank-one point; relative gap {gap_txt}."
            )
        if not sol.info["rank_one"]:
            last = f"{history[-1][4]:.3g}" if history else f"{sol.info['rank_gap']:.3g} (relative)"
            return (
                f"The convex iteration (eq. 15–16) did not reach a rank-one P for any w in "
                f"{self.w_grid} (last tail Σλ_i≥2 = {last}); μ is taken from the top "
                "eigenvector. Extend w_grid or raise max_iter (max_convex_iter)."
            )
        where = "" if w_used is None else f" (w = {w_used:g})"
        if gap is None:
            return f"The rank-one point{where} carries no certificate: {how}."
        if sol.info["max_relative_violation"] > viol_tol:
            return (
                f"The rank-one point{where} is not certified: its relative violation "
                f"{sol.info['max_relative_violation']:.3g} exceeds {viol_tol:.3g}."
            )
        return (
            f"The rank-one point{where} is not certified optimal: its relative gap "
            f"{gap_txt} to the relaxation's lower bound lies outside ±tol = {gap_tol:.3g}. The "
            "relaxation (15) with W = 0 is not tight here or the convex iteration stopped at a "
            "local point (§4.1); the point may still be optimal. Compare solve_reference(), "
            "or loosen tol."
        )
