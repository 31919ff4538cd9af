"""The fast side of :class:`~cvxkml.declare.lmnn.LMNNProblem`, what the pipeline asks of the
family: reading a start (a Solution, a dict, or A0 / α0) into the whitened X̂0, and the
hooks that turn a fast solver's X̂ and multipliers into a recomputed, certified
:class:`~cvxkml.solution.Solution` — a mixin of the problem class."""

from __future__ import annotations

import time
import warnings

import numpy as np

from .._validation import (
    as_float_array,
)
from ..errors import ConvergenceWarning, InvalidInputError, SolverError
from ..formulas._lmnn_face import min_norm_on_zero_face
from ..formulas.lmnn import (
    CONTRADICTED,
    STALLED,
    lmnn_objective,
    lmnn_slack,
    ordered_pair_distances,
)
from ..solution import Solution
from .problem import CALLBACK_STOP

#: the values of ``LMNNProblem.solve(tie_break=...)``
TIE_BREAKS = (None, "min-norm")
#: the status of a solve whose least-norm selection was asked for and not certified
TIE_BREAK_UNCERTIFIED = "tie-break not certified"


class LMNNFastSide:
    """The start and the pipeline's hooks of :class:`~cvxkml.declare.lmnn.LMNNProblem` (a mixin)."""

    # ------------------------------------------------------------------ fast side
    def _start(self, warm_start, A0, alpha0):
        """(X̂0, complement, α0) from ``warm_start`` (a Solution or a dict) or the
        ``A0`` / ``alpha0`` pair; defaults X̂0 = S² (A0 = I), complement None, α0 None."""
        if warm_start is not None and (A0 is not None or alpha0 is not None):
            raise InvalidInputError(
                "Pass the start either as warm_start (a Solution, or a dict with 'A' and/or "
                "'alpha') or as A0 / alpha0, not both."
            )
        X_given = None
        a_name, al_name = "A0", "alpha0"
        if isinstance(warm_start, Solution):
            A0, alpha0 = warm_start.matrix, warm_start.dual
            X_given = warm_start.info.get("X") if isinstance(warm_start.info, dict) else None
            a_name, al_name = "warm_start.matrix", "warm_start.dual"
        elif isinstance(warm_start, dict):
            unknown = sorted(map(str, set(warm_start) - {"A", "alpha"}))
            if unknown:
                raise InvalidInputError(
                    f"warm_start dict keys must be 'A' (D × D start matrix) and/or 'alpha' (one "
                    f"multiplier per triplet); got unknown key(s) {unknown}."
                )
            A0, alpha0 = warm_start.get("A"), warm_start.get("alpha")
            a_name, al_name = "warm_start['A']", "warm_start['alpha']"
        elif warm_start is not None:
            raise InvalidInputError(
                "warm_start must be None, a Solution of an earlier solve (its matrix A and "
                "multipliers α are used) or a dict {'A': D × D matrix, 'alpha': multipliers}; "
                f"got {type(warm_start).__name__}."
            )
        if A0 is None:
            X0, complement = np.diag(self.s**2), None
        elif self.space == "span":
            A0 = as_float_array(A0, a_name, ndim=2)
            if A0.shape != (self.rank, self.rank):
                raise InvalidInputError(
                    f"{a_name} must be {self.rank} × {self.rank} (space='span': the metric Â on the row-space "
                    f"basis, identity off it); got {A0.shape}."
                )
            X0, complement = A0 * np.outer(self.s, self.s), None
            if X_given is not None and np.shape(X_given) == (self.rank, self.rank):
                X0 = np.asarray(X_given, dtype=float)
            X0 = 0.5 * (X0 + X0.T)
        else:
            A0 = as_float_array(A0, a_name, ndim=2)
            if A0.shape != (self.dim, self.dim):
                raise InvalidInputError(f"{a_name} must be {self.dim} × {self.dim} (D × D); got {A0.shape}.")
            X0, complement = self.whiten(A0), A0
            if X_given is not None and np.shape(X_given) == (self.rank, self.rank):
                # a Solution of this problem: its own X̂ (A = V S⁻¹ X̂ S⁻¹ Vᵀ + complement)
                # is exact, while whitening A back loses up to cond(S)² (kernel problems)
                X_given = np.asarray(X_given, dtype=float)
                back = self.matrix_from_whitened(X_given, A0)
                if np.all(np.isfinite(back)) and np.linalg.norm(back - A0) <= 1e-8 * max(
                    1.0, float(np.linalg.norm(A0))
                ):
                    X0 = 0.5 * (X_given + X_given.T)
        if alpha0 is not None:
            alpha0 = as_float_array(alpha0, al_name).ravel()
            if alpha0.shape != (self.triplets.n_triplets,) or np.any(alpha0 < 0):
                raise InvalidInputError(
                    f"{al_name} must hold one non-negative multiplier per triplet "
                    f"({self.triplets.n_triplets}), e.g. Solution.dual of an earlier solve of a "
                    "problem with the same triplets (pass {'A': solution.matrix} to start from "
                    "the matrix only)."
                )
        return X0, complement, alpha0

    # ------------------------------------------------------------------ the pipeline's hooks
    # The fast solver (cvxkml.adapters.lmnn) returns the whitened X̂ as its matrix and one
    # multiplier per triplet; every number of the Solution is recomputed here from them.
    def solution_from_fast(self, res, spec, gap_tol: float) -> Solution:
        """The :class:`Solution` of a fast result: X̂ = ``res.matrix`` (r × r, kept in
        ``info["X"]``), α = ``res.lam`` (one per triplet); F, the slack ξ and the violations
        recomputed from X̂ (:func:`cvxkml.formulas.lmnn.ordered_pair_distances`: the solver's
        own arithmetic, so F is the number it stopped on) and g = :meth:`dual_value` (α) with
        F as its ``objective_bound`` — a bound the solver reports is kept only where it is not
        above the recomputed one.  On the active impostor set of a problem too large for the
        full triplet list (``extra["impostor_triplets"]``) F and g are the solver's (its scan
        of every triplet), ``dual`` and ``slack`` are None and ``violations`` holds only the
        PSD violation (:meth:`solve`, ``impostors``)."""
        extra = dict(res.extra)
        name = str(extra.pop("solver", spec.name))
        F_claim, g_claim = extra.pop("objective", None), extra.pop("dual_value", None)
        extra.pop("status", None)
        history = extra.pop("history", [])
        factor = extra.pop("factor", None)
        X = np.asarray(res.matrix, dtype=float)
        if X.shape != (self.rank, self.rank) or not np.all(np.isfinite(X)):
            raise SolverError(
                f"The fast solver {spec.name} of LMNNProblem returned a matrix of shape {X.shape} (or with "
                f"NaN/inf); it must return the whitened X̂ ({self.rank} × {self.rank}, finite)."
            )
        if factor is not None:
            factor = np.asarray(factor, dtype=float)
            if factor.ndim != 2 or factor.shape[0] != self.rank or not np.all(np.isfinite(factor)):
                raise SolverError(
                    f"The fast solver {spec.name} of LMNNProblem returned a factor of shape {factor.shape} (or "
                    f"with NaN/inf); it must be L ({self.rank} × q, finite) with X̂ = L Lᵀ."
                )
            X = factor @ factor.T  # the answer is the factor's: X̂ formed from it, never the other way
            X = 0.5 * (X + X.T)
        if "impostor_triplets" in extra:  # no full triplet list: the solver's scan is the evaluation
            lam = float(np.linalg.eigvalsh(0.5 * (X + X.T))[0]) if X.size else 0.0
            dual = xi = None
            viol = np.array([max(0.0, -lam)])
            F, g = float(F_claim), float(g_claim)
        else:
            tr = self.triplets
            dual = np.asarray(res.lam, dtype=float).ravel()
            if dual.shape != (tr.n_triplets,) or not np.all(np.isfinite(dual)):
                raise SolverError(
                    f"The fast solver {spec.name} of LMNNProblem returned {dual.size} multipliers (or NaN/inf); "
                    f"it must return one finite multiplier per triplet ({tr.n_triplets})."
                )
            F, xi, viol, dual, g = self._evaluate(X, [dual], factor)
            if g_claim is not None and np.isfinite(g_claim):
                g = min(g, float(g_claim))
        info = {"X": X, "rank": self.rank, "history": history, "complement": None, **extra}
        if factor is not None:
            info["X_factor"] = factor
        return self._checked_solution(X, F, dual, xi, viol, g, info, int(res.sweeps), float(res.time), name)

    def _evaluate(self, X, duals, factor=None):
        """``(F, ξ, violations, α, g)`` at X̂ on the full triplet list, every number recomputed
        (:func:`cvxkml.formulas.lmnn.ordered_pair_distances`: the solver's own arithmetic; the
        distances through ``factor`` L when the answer is X̂ = L Lᵀ given by it); α is the
        candidate of ``duals`` whose Lagrange bound g (:meth:`dual_value`, F as its
        ``objective_bound``) is the largest (the first on a tie)."""
        tr = self.triplets
        p = ordered_pair_distances(self.U, X, tr.pi, tr.pj, psd=True, factor=factor)
        xi = lmnn_slack(p, tr)
        viol = self._violations(p, X if factor is None else None, xi)  # L Lᵀ: PSD by construction
        F = lmnn_objective(p, tr, self.gamma)
        bounds = [self.dual_value(a, objective_bound=F) for a in duals]
        best = int(np.argmax(bounds))
        return F, xi, viol, duals[best], float(bounds[best])

    def _checked_solution(self, X, F, dual, xi, viol, g, info, n_iter, seconds, solver) -> Solution:
        """The :class:`Solution` of X̂ and its recomputed numbers (``converged`` until
        :meth:`certify` says otherwise), checked symmetric and PSD (:meth:`check_answer`)."""
        from .._answer import PSD_TOL, SYMMETRIC_TOL

        info["max_relative_violation"] = self._relative_violation(viol, X)
        sol = Solution(
            matrix=self._answer(X),
            objective=F,
            dual=dual,
            slack=xi,
            violations=viol,
            n_iter=n_iter,
            converged=True,
            time=seconds,
            status="converged",
            solver=solver,
            dual_value=g,
            info=info,
        )
        self.check_answer(sol, symmetric_tol=SYMMETRIC_TOL, psd_tol=PSD_TOL)
        return sol

    def certify(self, sol, res, gap_tol: float, viol_tol: float) -> bool:
        """The LMNN solvers' rule on the recomputed numbers: |F − g| <= ``gap_tol`` ·
        max(1, |F|) with g the Lagrange bound of the returned multipliers, and the PSD
        violation of X̂ at most ``viol_tol`` relative to max(1, λ_max(X̂)) (the margin rows
        hold the optimal slack of X̂: zero by construction)."""
        F, g = sol.objective, sol.dual_value
        if g is None or not (np.isfinite(F) and np.isfinite(g)):
            return False
        X = np.asarray(sol.info["X"], dtype=float)
        top = float(np.linalg.eigvalsh(0.5 * (X + X.T))[-1]) if X.size else 0.0
        psd = float(sol.violations[-1]) / max(1.0, abs(top))
        return abs(F - g) <= gap_tol * max(1.0, abs(F)) and psd <= viol_tol

    def unconverged_status(self, sol, res) -> str:
        """The solver's own reason ("max_iter reached", "stalled", "stopped by callback"), else
        the pipeline's ("not certified" when it claimed convergence the certificate refutes)."""
        status = res.extra.get("status")
        if status in ("max_iter reached", STALLED, CALLBACK_STOP, CONTRADICTED):
            return status
        return super().unconverged_status(sol, res)

    def unconverged_message(self, sol, res, spec, gap_tol: float, viol_tol: float) -> str:
        """Why the solve stopped uncertified, its certified relative gap and the advice; with
        the reason of a singular target pull when there is one (:meth:`_singular_pull_note`)."""
        F, g = sol.objective, sol.dual_value
        rel_gap = float("nan") if g is None else (F - g) / max(1.0, abs(F))
        note = self._singular_pull_note(sol)
        if sol.info.get("impostors") == "active":
            return (
                f"LMNN solver (active impostor set) stopped after {sol.n_iter} iterations ({sol.status}) "
                f"with certified relative gap {rel_gap:.3g} > tol {gap_tol:.3g}; the best iterate is returned. "
                "Raise max_iter or tol." + note
            )
        why, advice = {
            CALLBACK_STOP: ("the callback stopped it", ""),
            CONTRADICTED: (
                "its run off G(0)'s null space and its whole run gave a bound above the other's "
                "objective, so one of those numbers is wrong and neither certifies",
                " Report it with the data: it is a solver error.",
            ),
            STALLED: (
                f"stalled: the certified gap did not shrink by 0.1 % in {sol.info.get('stall_iter')} iterations",
                " Raise tol, or stall_iter (0: run to max_iter).",
            ),
            "not certified": (
                f"{spec.name} claimed convergence, but the certificate recomputed from its X̂ and "
                f"multipliers does not hold (relative PSD violation allowed {viol_tol:.3g})",
                " Check the solver with cvxkml.testing.validate_answer.",
            ),
        }.get(sol.status, ("the iteration budget max_iter ran out", " Raise max_iter or tol."))
        return (
            f"LMNN solver stopped after {sol.n_iter} iterations ({why}) with certified "
            f"relative gap {rel_gap:.3g} > tol {gap_tol:.3g}; the best iterate is returned." + advice + note
        )

    def _singular_pull_note(self, sol) -> str:
        """The stated reason of an uncertified solve whose target pull G(0) is singular (written
        into ``sol.info["pull_null_dim"]`` too): '' when G(0) is positive definite."""
        t_i, t_j = self.targets
        D = self.U[t_i] - self.U[t_j]
        G0 = (1.0 - self.gamma) * (D.T @ D)
        lam = np.linalg.eigvalsh(0.5 * (G0 + G0.T)) if G0.size else np.zeros(0)
        null = int(np.sum(lam <= 1e-9 * max(float(lam[-1]) if lam.size else 0.0, np.finfo(float).tiny)))
        sol.info["pull_null_dim"] = null
        if null == 0:
            return ""
        return (
            f" The target pull G(0) is singular ({null} of {self.rank} directions, eigenvalues <= 1e-9 of "
            "the largest: no target distance sees them), so the Lagrange bound holds only through "
            "multipliers that vanish on the triplets reaching that null space. For a nearly singular "
            "kernel, raise rank_rtol (drops Z's near-null directions) or add a ridge to the kernel."
        )

    # ------------------------------------------------------------------ the tie-break stage
    def _solve_with_tie_break(self, tie_break, tol: float, run):
        """``run()`` (the pipeline's solve) and then, for ``tie_break="min-norm"``, the
        least-norm member of the zero face (:meth:`_tie_break`).  The pipeline's
        ConvergenceWarnings are held back and re-issued only when the final answer is
        uncertified (the stage can certify a point the path did not reach)."""
        if tie_break is None:
            return run()
        with warnings.catch_warnings(record=True) as held:
            warnings.simplefilter("always", ConvergenceWarning)
            sol = run()
        sol = self._tie_break(sol, tol)
        for w in held:
            if not (issubclass(w.category, ConvergenceWarning) and sol.converged):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if sol.status == TIE_BREAK_UNCERTIFIED:
            warnings.warn(
                "LMNN least-norm tie-break (tie_break='min-norm'): the selection on the zero face was "
                f"not certified ({sol.info['tie_break'].get('reason') or 'gap above its tolerance'}); the "
                "solver's own optimum is returned, converged=False.",
                ConvergenceWarning,
                stacklevel=4,
            )
        return sol

    @staticmethod
    def _check_tie_break(tie_break, impostors: str):
        """``tie_break`` checked: one of :data:`TIE_BREAKS`, and only with every triplet listed."""
        if tie_break not in TIE_BREAKS:
            raise InvalidInputError(f"tie_break must be None or 'min-norm'; got {tie_break!r}.")
        if tie_break is not None and impostors == "active":
            raise InvalidInputError(
                "tie_break='min-norm' needs every triplet (impostors='all'); the active impostor set never lists them."
            )
        return tie_break

    def _tie_break(self, sol, tol: float):
        """The second stage of ``solve(tie_break="min-norm")``: when the optimum is F* = 0 and
        attained by many metrics (the zero face (TB1) of :mod:`cvxkml.formulas._lmnn_face` is
        non-empty), replace the solver's X̂ by the face's least-norm member X̂* (TB2), and
        recompute and certify it like any answer: F and the violations from X̂*, the Lagrange
        bound g at the solver's multipliers or at α = 0 (g(0) = 0 is a valid bound whenever
        G(0) ⪰ 0, i.e. always) — the larger — and converged = the LMNN certificate at ``tol``
        and the selection's own (TB5).  When the face is empty (F* > 0) the answer is
        unchanged.  ``info["tie_break"]`` records what happened (rule, applied, reason, the
        (TB5) gap and distance bound, the face's dimension, pairs, working pairs, rounds) and
        ``info["path_objective"]`` / ``info["path_norm"]`` the solver's point."""
        t0 = time.perf_counter()
        sel = min_norm_on_zero_face(self.U, self.triplets, self.gamma)
        record = sel.summary()
        X_path = sol.info.get("X")
        if not sel.applies:
            sol.info["tie_break"] = record
            return sol
        if not sel.certified:
            record["reason"] = record["reason"] or "gap above its tolerance"
            sol.info["tie_break"] = record
            sol.converged, sol.status = False, TIE_BREAK_UNCERTIFIED
            return sol
        X = sel.X
        candidates = [np.zeros(self.triplets.n_triplets)]
        if sol.dual is not None:
            candidates.append(np.asarray(sol.dual, dtype=float))
        F, xi, viol, dual, g = self._evaluate(X, candidates)
        info = dict(sol.info)
        info.pop("X_factor", None)  # the path's answer's factor: the selection is X̂* itself
        info.update(
            X=X,
            tie_break={**record, "applied": True},
            path_objective=float(sol.objective),
            path_norm=float(np.linalg.norm(X_path)) if X_path is not None else None,
        )
        seconds = float(sol.time) + time.perf_counter() - t0
        out = self._checked_solution(X, F, dual, xi, viol, g, info, sol.n_iter, seconds, sol.solver)
        if not self.certify(out, None, tol, max(tol, 1e-6)):
            info["tie_break"].update(applied=False, reason="the selected metric is not certified optimal for eq. 18")
            sol.info["tie_break"] = info["tie_break"]
            sol.converged, sol.status = False, TIE_BREAK_UNCERTIFIED
            return sol
        return out
