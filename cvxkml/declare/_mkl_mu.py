"""The MKL_μ weight step (Wang et al. eq. 6, Lemma 2), :class:`MuWeightStep` (h convex in
μ over the simplex, certified by the conic dual), and LMNN's μ step by the convex–concave
procedure (:class:`LMNNMuMajorizer`, :func:`lmnn_mu_step`: LMNN is not convex in μ, §5).
Re-exported by :mod:`cvxkml.declare.mkl`."""

from __future__ import annotations

import time
import warnings

import cvxpy as cp
import numpy as np

from .._validation import (
    as_float_array,
    check_conic_options,
    check_int,
    check_positive,
)
from ..errors import ConvergenceWarning, InvalidInputError
from ._conic import solve_conic, solve_conic_bound
from ._mkl_objectives import LMNNWeightObjective, _check_mu
from ._mkl_rank_one import WeightStepSolution
from .extend import Extendable
from .problem import Problem


# --------------------------------------------------------------------------- MKL_μ step
def _simplex(mu) -> list:
    """The constraint of eq. 6 on μ besides μ >= 0 (a nonneg variable): Σ_l μ_l = 1.  The
    model states it through this function; :func:`_simplex_violations` is its NumPy side."""
    return [cp.sum(mu) == 1.0]


def _simplex_violations(mu) -> np.ndarray:
    """[max(0, −min μ), |Σ μ − 1|]: the simplex constraints of eq. 6 at μ."""
    mu = np.asarray(mu, dtype=float)
    return np.array([max(0.0, -float(mu.min(initial=0.0))), abs(float(mu.sum()) - 1.0)])


class MuWeightStep(Extendable, Problem):
    """The kernel-weight step ML_h-MKL_μ (Wang et al. eq. 6, Lemma 2):

        min_μ  h(μ)   s.t.  μ >= 0,  Σ_l μ_l = 1                                   (6)

    for an h convex in μ, as a CVXPY model (DCP-checked).  The problem is convex, so the
    conic solve is certified: ``dual_value`` is the conic solver's dual objective (the
    Lagrange dual value of the canonicalized model at the solver's multipliers; there is
    no closed-form dual for an arbitrary h) and ``gap`` closes to the solver's tolerance.

    Parameters
    ----------
    h : object with ``cvx_mu(mu) -> expression or (expression, constraints)``, or a
        callable with the same signature; ``mu`` is a CVXPY variable of length m.
        Squared distances are convex quadratics of μ (d = ‖R_p μ‖², R_pᵀR_p = Q_p), so
        objectives that only *increase* with distances (compactness, hinge losses on
        similar pairs) are convex; anything decreasing in a distance is not (CVXPY's DCP
        check then raises a clear error).  An optional ``value_mu(mu) -> float`` gives
        the NumPy value (:meth:`objective`; otherwise the CVXPY form is evaluated).
    m : number of kernels (taken from ``h.m`` when present).
    solver : str, default="CLARABEL"
        The conic solver (Clarabel or SCS for a certificate).
    """

    clarabel_max_size = 10**9  # no PSD block: Clarabel at every size

    def __init__(self, h, m: int | None = None, solver: str = "CLARABEL"):
        if not callable(getattr(h, "cvx_mu", h)):
            raise InvalidInputError(
                "h must have a method cvx_mu(mu) or be a callable mu -> CVXPY expression (convex in "
                f"mu); got {type(h).__name__}."
            )
        self.h = h
        m = m if m is not None else getattr(h, "m", None)
        if m is None:
            raise InvalidInputError("Give m, the number of kernels (or an h with an attribute m).")
        self.m = check_int(m, "m (the number of kernels)", minimum=1)
        self.solver = check_conic_options(solver, None)[0] or self.default_solver()

    def exact_size(self) -> int:
        """m, the number of weights (the model has no PSD block; its cones are h's)."""
        return self.m

    def _h_form(self, mu):
        """(expression, constraints) of h at the CVXPY variable ``mu``."""
        fn = self.h.cvx_mu if hasattr(self.h, "cvx_mu") else self.h
        out = fn(mu)
        expr, cons = out if isinstance(out, tuple) else (out, [])
        return expr, list(cons)

    # ------------------------------------------------------------------ numpy side
    def _weights(self, mu) -> np.ndarray:
        mu = as_float_array(mu, "mu", ndim=1)
        if mu.size != self.m:
            raise InvalidInputError(f"mu must have one weight per kernel ({self.m}); got {mu.size}.")
        return mu

    def objective(self, mu) -> float:
        """h(μ): ``h.value_mu`` when h has it, else h's CVXPY form evaluated at μ (minimized
        over its auxiliary variables, if any, by a conic solve with μ fixed)."""
        mu = self._weights(mu)
        if hasattr(self.h, "value_mu"):
            return float(self.h.value_mu(mu))
        var = cp.Variable(self.m, name="mu")
        var.value = mu
        expr, cons = self._h_form(var)
        aux = {v.id for c in [expr, *cons] for v in c.variables()} - {var.id}
        if not aux:
            return float(expr.value)
        prob = cp.Problem(cp.Minimize(expr), cons + [var == mu])
        solve_conic(prob, "CLARABEL", None, True, "evaluation of h(μ)")
        return float(prob.value)

    def violations(self, mu) -> np.ndarray:
        """The constraints of (6) at μ: [max(0, −min μ), |Σ μ − 1|] (:func:`_simplex_violations`)."""
        return _simplex_violations(self._weights(mu))

    # ------------------------------------------------------------------ the certificate of an answer
    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """The weights μ: a finite vector of m entries."""
        from .._answer import check_primal_vector

        check_primal_vector(sol.matrix, self.m, what="weights μ")

    def dual_value_unverified(self) -> str | None:
        """The weight step's bound is its solver's (kept as reported, flagged)."""
        return "the weight step's bound is not a function of returned duals"

    # ------------------------------------------------------------------ extension
    #: model methods besides to_cvxpy / objective / violations (see
    #: :func:`cvxkml.declare.extend.check_fast_solver_applies`)
    _model_methods = ("_h_form",)

    def extension_probe(self):
        """(a CVXPY variable of length m, "mu"): the primal the extension's term sees."""
        return cp.Variable(self.m, name="mu"), "mu"

    def extension_model(self):
        """The exact model for :meth:`extend`: :meth:`to_cvxpy`; μ is read back as
        :meth:`solve_reference` does (round-off negatives clipped, Σ μ = 1 restored)."""
        from .extend import ExtensionModel, ExtensionPoint

        prob = self.to_cvxpy()
        var = prob.var_dict["mu"]

        def read():
            raw = np.asarray(var.value, dtype=float)
            mu = np.maximum(raw, 0.0)
            mu = mu / mu.sum()
            viol = self.violations(mu)
            return ExtensionPoint(
                primal=mu,
                objective=self.objective(mu),
                violations=viol,
                relative_violation=float(np.max(viol)),
                matrix=mu,
                info={
                    "mu": mu,
                    "P": np.outer(mu, mu),
                    "n_solves": 1,
                    "solver_violation": float(np.max(_simplex_violations(raw))),
                },
            )

        return ExtensionModel(problem=prob, primal=var, read=read, solution_type=WeightStepSolution)

    # ------------------------------------------------------------------ CVXPY side
    def to_cvxpy(self) -> cp.Problem:
        """Model (6): variable ``"mu"`` (nonneg), min h(μ) s.t. Σ μ = 1 (+ h's constraints)."""
        mu = cp.Variable(self.m, nonneg=True, name="mu")
        expr, cons = self._h_form(mu)
        prob = cp.Problem(cp.Minimize(expr), _simplex(mu) + cons)
        if not prob.is_dcp():
            raise InvalidInputError(
                "The MKL_μ weight step needs an h convex in μ (Lemma 2); this h is not (CVXPY's "
                "DCP check failed). Objectives that decrease with a distance, like LMNN's "
                "impostor terms, are not convex in μ: use the P variant (RankOneWeightStep) or "
                "the majorizer LMNNMuMajorizer / lmnn_mu_step."
            )
        return prob

    def solve_reference(
        self, solver: str | None = None, eps: float | None = None, accept_inaccurate: bool = False, **opts
    ) -> WeightStepSolution:
        """Solve (6) by a conic solver at high accuracy, certified by its dual objective.

        Parameters
        ----------
        solver : str or None
            A CVXPY solver (default: the constructor's, Clarabel); only Clarabel and SCS
            report the dual objective the certificate needs (others: ``dual_value`` None,
            ``info["no_certificate"]``).
        eps : float or None
            Its tolerance (Clarabel 1e-8, SCS 1e-9 by default).
        accept_inaccurate : bool
            Accept ``optimal_inaccurate`` without the certificate vouching for it.
        **opts
            Passed to the solver.

        Returns
        -------
        WeightStepSolution
            ``matrix`` = μ (the solver's μ with round-off negatives clipped and Σ μ = 1
            restored), ``objective`` = h(μ), ``dual_value`` the solver's dual objective,
            ``info["mu"]``, ``info["P"]`` = μμᵀ, ``info["solver_violation"]`` (the largest
            violation of (6) at the solver's own μ).
        """
        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.solver
        prob = self.to_cvxpy()
        elapsed, status, iters, bound = solve_conic_bound(
            prob, solver, eps, True, what="MKL_μ weight step (eq. 6)", **opts
        )
        raw = np.asarray(prob.var_dict["mu"].value, dtype=float)
        mu = np.maximum(raw, 0.0)
        mu = mu / mu.sum()
        viol = self.violations(mu)
        info = {
            "mu": mu,
            "P": np.outer(mu, mu),
            "n_solves": 1,
            "solver_objective": float(prob.value),
            "solver_violation": float(np.max(_simplex_violations(raw))),
            "max_relative_violation": float(np.max(viol)),
        }
        if np.isfinite(bound):
            info["certificate"] = (
                f"{solver} dual objective of (6) (the Lagrange dual value of the "
                "conic model at the solver's multipliers)"
            )
        else:
            info["no_certificate"] = (
                f"{solver} reports no dual objective; use solver='CLARABEL' or 'SCS' for a certificate"
            )
        sol = WeightStepSolution.from_conic(
            status,
            solver,
            elapsed,
            iters,
            matrix=mu,
            objective=self.objective(mu),
            dual=None,
            slack=None,
            violations=viol,
            dual_value=float(bound) if np.isfinite(bound) else None,
            info=info,
        )
        sol = self._accept_reference(sol, status, accept_inaccurate, what="MKL_μ weight step (eq. 6)")
        sol.converged = status == cp.OPTIMAL or bool(sol.info.get("accepted_by_certificate"))
        return sol

    def solve(
        self, tol: float = 1e-6, max_iter: int | None = None, callback=None, warm_start=None
    ) -> WeightStepSolution:
        """Solve (6) and check its certificate against ``tol``.  The μ step has no fast
        algorithm of its own: this is the conic model of :meth:`solve_reference` (the
        constructor's solver, ``optimal_inaccurate`` accepted and judged by the certificate).

        Parameters
        ----------
        tol : float, default=1e-6
            ``converged`` when the relative gap (h(μ) − dual_value) / max(1, |h(μ)|) lies in
            [−tol, tol] and the relative violation is at most tol.
        max_iter : int or None
            The conic solver's iteration cap (Clarabel ``max_iter``, SCS ``max_iters``;
            default: Clarabel's 200, SCS 200 000).  Clarabel stopped by it returns no point:
            a :class:`SolverError` that says to raise it.
        callback : callable or None
            Called once with the certificate (``iteration`` = solver iterations,
            ``objective``, ``lower_bound``, ``gap`` (relative), ``violation``); a truthy
            return marks an uncertified solve ``"stopped by callback"``.
        warm_start : None
            Not supported (an interior-point solve from scratch); anything else raises.

        Returns
        -------
        WeightStepSolution
            As :meth:`solve_reference`; unconverged solves warn (:class:`ConvergenceWarning`).
        """
        tol = check_positive(tol, "tol")
        callback = self._check_callback(callback)
        if warm_start is not None:
            raise InvalidInputError(
                "The MKL_μ step is one interior-point conic solve from scratch and takes no "
                "warm_start; pass warm_start=None."
            )
        if max_iter is not None:
            max_iter = self._iteration_limit(max_iter)
        return self.run_pipeline(
            tol, 10_000 if max_iter is None else max_iter, tol, tol, callback=callback, options={"max_iter": max_iter}
        )

    # ------------------------------------------------------------------ the pipeline's hooks
    def solution_from_fast(self, res, spec, gap_tol: float):
        """The answer μ (checked: m finite weights), h(μ) and the violations of (6)
        recomputed; the lower bound is the conic solver's dual objective (no closed form for
        an arbitrary h: :meth:`dual_value_unverified`) — for a user's solver the step's own
        exact model's (:meth:`solve_reference`), never a bound the solver claims."""
        from .._answer import check_primal_vector

        mu = np.asarray(res.matrix, dtype=float)
        check_primal_vector(mu, self.m, what=f"weights μ of {spec.name}")
        extra = dict(res.extra)
        info = dict(extra.get("info", {}))
        bound = extra.get("lower_bound")
        if spec.user:
            ref = self.solve_reference(accept_inaccurate=True)
            bound = ref.dual_value
            info = {k: v for k, v in ref.info.items() if k in ("certificate", "no_certificate")}
        viol = self.violations(mu)
        info.update(mu=mu, P=np.outer(mu, mu), max_relative_violation=float(np.max(viol)), gap_tol=gap_tol)
        info.setdefault("n_solves", 1)
        return WeightStepSolution.from_fast(res, spec, mu, self.objective(mu), viol, bound, info)

    def certify(self, sol, res, gap_tol: float, viol_tol: float) -> bool:
        """Certified when (h(μ) − bound) / max(1, |h(μ)|) lies in ±``gap_tol`` and the
        relative violation is at most ``viol_tol``."""
        gap = sol.gap
        rel_gap = None if gap is None else gap / max(1.0, abs(sol.objective))
        return bool(rel_gap is not None and abs(rel_gap) <= gap_tol and sol.info["max_relative_violation"] <= viol_tol)

    def unconverged_message(self, sol, res, spec, gap_tol: float, viol_tol: float) -> str:
        gap = sol.gap
        rel_gap = None if gap is None else gap / max(1.0, abs(sol.objective))
        gap_txt = "n/a (" + sol.info.get("no_certificate", "") + ")" if rel_gap is None else f"{rel_gap:.3g}"
        return (
            f"The MKL_μ step (6) is not certified: relative gap {gap_txt}, "
            f"relative violation {sol.info['max_relative_violation']:.3g} (tol {gap_tol:.3g}). Use solver='CLARABEL', "
            "a smaller eps through solve_reference(), or loosen tol."
        )


def _sqrt_psd_rows(Q) -> np.ndarray:
    """R_p with R_pᵀ R_p = Q_p for a stack of PSD m × m matrices (eigen square roots)."""
    lam, V = np.linalg.eigh(Q)
    lam = np.maximum(lam, 0.0)
    return (V * np.sqrt(lam)[:, None, :]).transpose(0, 2, 1)  # (P, m, m): rows √λ_k v_kᵀ


class LMNNMuMajorizer:
    """A convex majorizer of LMNN's h(μμᵀ) at a reference μ_k (for the MKL_μ step).

    h(μ) = (1 − γ) Σ_S μᵀQ_ijμ + γ Σ_t [1 + μᵀQ_ijμ − μᵀQ_ilμ]_+ is not convex in μ; the
    concave part −μᵀQ_ilμ is replaced by its tangent −(2 μ_kᵀQ_il μ − μ_kᵀQ_il μ_k) >=
    −μᵀQ_ilμ, which gives a convex upper bound, exact at μ_k.

    Parameters
    ----------
    weights : LMNNWeightObjective (the Q_p, triplets and γ).
    mu_ref : the reference weights μ_k.
    """

    def __init__(self, weights: LMNNWeightObjective, mu_ref):
        self.weights = weights
        self.m = weights.m
        self.mu_ref = _check_mu(mu_ref, self.m, "mu_ref")
        tr = weights.triplets
        self._tpairs = np.flatnonzero(tr.target_weight > 0)
        pos = np.full(tr.n_pairs, -1, dtype=np.int64)
        pos[self._tpairs] = np.arange(self._tpairs.size)
        self._tt_pos = pos[tr.tt]
        self._R = _sqrt_psd_rows(weights.Q[self._tpairs])
        Qmu = weights.Q @ self.mu_ref  # (P, m)
        self._grad = 2.0 * Qmu  # tangent slope per pair
        self._const = np.einsum("pm,m->p", Qmu, self.mu_ref)  # μ_kᵀ Q_p μ_k

    def value_mu(self, mu) -> float:
        """The majorizer's value (>= h(μμᵀ), equal at μ_k)."""
        mu = np.asarray(mu, dtype=float)
        tr, g = self.weights.triplets, self.weights.gamma
        d_t = np.einsum("pm,m->p", self.weights.Q[self._tpairs] @ mu, mu)
        lin = self._grad @ mu - self._const
        hinge = np.maximum(0.0, 1.0 + d_t[self._tt_pos] - lin[tr.ti])
        return float((1.0 - g) * (tr.target_weight[self._tpairs] @ d_t) + g * hinge.sum())

    def cvx_mu(self, mu):
        tr, g = self.weights.triplets, self.weights.gamma
        npair = self._tpairs.size
        Rbig = self._R.reshape(npair * self.m, self.m)
        d_t = cp.sum(cp.square(cp.reshape(Rbig @ mu, (npair, self.m), order="C")), axis=1)
        lin = self._grad @ mu - self._const
        hinge = cp.pos(1.0 + d_t[self._tt_pos] - lin[tr.ti])
        return (1.0 - g) * (tr.target_weight[self._tpairs] @ d_t) + g * cp.sum(hinge)


def lmnn_mu_step(
    weights: LMNNWeightObjective, mu0, max_iter: int = 30, tol: float = 1e-7, solver: str = "CLARABEL"
) -> WeightStepSolution:
    """LMNN's MKL_μ weight step by the convex–concave procedure: repeatedly minimize the
    convex majorizer :class:`LMNNMuMajorizer` at the current μ over the simplex (each the
    conic model (6) of a :class:`MuWeightStep`), until h(μμᵀ) decreases by less than
    ``tol`` (relative).  h never increases; the limit is a stationary point (not
    necessarily global).

    Returns
    -------
    WeightStepSolution
        ``matrix`` = μ, ``objective`` = h(μμᵀ); no certificate (``dual_value`` None,
        ``info["no_certificate"]``: LMNN is not convex in μ, §5).  ``converged`` means the
        decrease rule was met within ``max_iter`` (a stationary point, not a certified
        optimum); otherwise a :class:`ConvergenceWarning`.  ``info``: ``mu``, ``P`` = μμᵀ,
        ``history`` ((iteration, h) per step), ``n_solves``, ``method`` = "ccp".
    """
    t0 = time.perf_counter()
    mu = _check_mu(mu0, weights.m, "mu0")
    f = weights.value_mu(mu)
    history = [(0, f)]
    done = False
    for it in range(1, int(max_iter) + 1):
        res = MuWeightStep(LMNNMuMajorizer(weights, mu), solver=solver).solve_reference(accept_inaccurate=True)
        f_new = weights.value_mu(res.mu)
        if f_new <= f:
            mu_new = res.mu
        else:  # round-off of the conic solve: keep the better point
            mu_new, f_new = mu, f
        history.append((it, f_new))
        done = f - f_new <= tol * max(1.0, abs(f))
        mu, f = mu_new, f_new
        if done:
            break
    sol = WeightStepSolution(
        matrix=mu,
        objective=f,
        dual=None,
        slack=None,
        violations=_simplex_violations(mu),
        n_iter=len(history) - 1,
        converged=bool(done),
        time=time.perf_counter() - t0,
        status="stationary" if done else "max_iter reached",
        solver="ccp-lmnn-mu",
        dual_value=None,
        info={
            "mu": mu,
            "P": np.outer(mu, mu),
            "history": history,
            "n_solves": len(history) - 1,
            "method": "ccp",
            "no_certificate": "LMNN's h(μμᵀ) is not convex in μ (§5): the convex–concave "
            "procedure reaches a stationary point and carries no optimality "
            "certificate",
        },
    )
    if not done:
        warnings.warn(
            f"The convex–concave procedure of the MKL_μ step did not settle in max_iter="
            f"{int(max_iter)} steps (last decrease above tol {tol:g}, relative); raise "
            "max_iter.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return sol
