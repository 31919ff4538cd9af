"""The fast side of a spectral problem: the registered solver chosen
(:mod:`cvxkml.declare.registry`), its answer checked against the fast-solver protocol,
recomputed and certified, the paper's dual-change rule tightened until the certificate
holds, the hand-off from Bregman to the certified dual solver on the regularizer's own
slack, and the Farkas certificate of infeasible hard constraints.  A part of
:class:`~cvxkml.declare.base.SpectralProblem`."""

from __future__ import annotations

import numpy as np

from .._answer import FARKAS_EIG_TOL, FARKAS_LIN_TOL
from .._validation import check_positive
from ..errors import InfeasibleError, InvalidInputError, SolverError
from ..sideinfo import (
    atom_family,
)
from ..solution import NONFINITE, NONPOSITIVE_DISTANCE, NOT_CONVERGED, FastResult, Solution, Status
from .problem import CALLBACK_STOP

__all__ = ["SpectralFastSolve"]


class SpectralFastSolve:
    """The fast-solve side of :class:`~cvxkml.declare.base.SpectralProblem`."""

    # ------------------------------------------------------------------ fast side
    def constraint_families(self) -> list:
        """The constraint classes of this problem (unwrapped from Hinge), what a registered
        solver's ``families`` must cover (:mod:`cvxkml.declare.registry`)."""
        return [atom_family(c) for c in self._constraint_atoms]

    def fast_solver(self, method: str = "auto"):
        """The :class:`~cvxkml.declare.registry.SolverSpec` ``solve(method=…)`` would use, or a
        typed error saying why none takes this problem and what to do."""
        from .registry import SolverSpec, select

        reg = self.regularizer
        own = getattr(reg, "fast_solver", None)
        if method != "dual" and callable(own):
            # a fast_solver method on a user's regularizer class comes first
            handles = getattr(reg, "fast_handles", None)
            if handles is None or handles(self):
                return SolverSpec(f"{type(reg).__name__}.fast_solver", own, user=True)
        spec, refused = select(self, method)
        if spec is not None:
            return spec
        # the refusals of the solvers written for this problem and regularizer say most
        near = {k: v for k, v in refused.items() if not v.startswith(("written for", "solves ", "registered for"))}
        reasons = "; ".join(f"{name}: {why}" for name, why in (near or refused).items()) or "none is registered"
        what = {
            "native": "No native fast solver takes",
            "dual": "The generic dual solver does not take",
            "auto": "No fast solver takes",
        }[method]
        hint = (
            "use method='dual' (or 'auto'), or solve_reference() (the exact model)"
            if method == "native"
            else "with gamma implement the regularizer's slack_value, slack_conj, slack_conj_grad and "
            "slack_conj_hess too (or use Hinge(pairs, C) instead of gamma), "
            if self.gamma is not None
            else ""
        )
        if method != "native":
            hint += (
                "implement the regularizer's conj_s, conj_grad_s, conj_hess_s (see "
                "cvxkml.declare.Regularizer; cvxkml.testing.check_regularizer checks them), "
                "register one (cvxkml.declare.register_fast_solver), or use solve_reference() "
                "(the exact model)"
            )
        raise InvalidInputError(
            f"{what} {type(self).__name__} with the {reg.name} regularizer and these constraints ({reasons}); {hint}."
        )

    def solve(
        self,
        tol: float = 1e-9,
        max_iter: int = 20_000,
        gap_tol: float | None = None,
        viol_tol: float | None = None,
        *,
        method: str = "auto",
        warm_start=None,
        callback=None,
        max_sweeps: int | None = None,
    ) -> Solution:
        """The fast solver: cyclic Bregman projections (Jain et al. Algorithm 1; Kulis et
        al. Algorithm 2 for the low-rank problem), the regularizer's own fast solver, or the
        generic certified dual solver (any regularizer, every constraint family, hinge
        slack: :mod:`cvxkml.solvers.dual_newton`).

        Parameters
        ----------
        tol : float
            The paper's stopping rule: the relative dual change of a sweep,
            Σ|λ − λ_old| / (Σ|λ| + Σ|λ_old|), below ``tol``.
        max_iter : int
            Total sweeps (Bregman, native solvers) or Newton iterations (dual solver) over all
            attempts (see below).  ``max_sweeps`` is its deprecated former name.
        gap_tol, viol_tol : float or None
            The certificate (:meth:`certificate`): a solve is ``converged`` only when the
            Lagrange-dual gap |f(M) − g(λ)| is at most gap_tol·max(|f|, |g|, 1) (a negative
            gap beyond that means an infeasible point) and the largest relative constraint
            violation is at most ``viol_tol``.  None: max(tol, 1e-6).
        method : {"auto", "native", "dual"}
            "native": the problem's own algorithm (raises when it does not handle these
            constraints); "dual": the generic dual solver (projected Newton on the box-
            constrained Lagrange dual, stopping on its certificate; ``max_iter`` caps its
            Newton iterations; ``tol`` is its relative gap); "auto" (default): native when it
            handles the constraints (no :class:`~cvxkml.sideinfo.Hinge`, families in
            the families of a registered solver for the regularizer), else dual; with the
            regularizer's own slack (``gamma``) native first, then dual from the native
            multipliers when the native run ends uncertified (Notes).
        warm_start : array-like of shape (m,) or None
            Multipliers λ (in :meth:`violations` order) to start the dual solver from, e.g.
            ``previous_solution.dual`` of a neighbouring problem (dual method only).
        callback : callable or None
            Called with a dict at each certificate check — every Newton iteration of the dual
            solver (``iteration``, ``objective``, ``gap``, ``violation``, ``dual``), every
            attempt of the native solver (``iteration`` = sweeps so far, ``objective``,
            ``gap``, ``violation``, ``stop_value``); a truthy return stops the solve
            (``status="stopped by callback"``, ``converged=False`` unless certified).
        max_sweeps : int or None
            Deprecated former name of ``max_iter``.

        Notes
        -----
        A small dual change does not imply a small violation: with large multipliers the
        cyclic projections creep (the change of a sweep is tiny while a small violation times
        a large multiplier leaves a visible gap).  The solve is the certified-solve pipeline
        (:meth:`~cvxkml.declare.problem.Problem.run_pipeline`) in attempts: when the dual-change rule is
        met but the certificate is not, the solve is repeated with tol divided by 100
        (down to 1e-16) within the same ``max_iter`` budget; if the certificate is still
        not met it warns (:class:`ConvergenceWarning`) and returns ``converged=False``.
        The solver is the first registered one that accepts the problem
        (:mod:`cvxkml.declare.registry`; :meth:`fast_solver` says which, or why none does);
        the others (and hinge slack) go to the dual solver with ``method="auto"``.

        The regularizer's own slack (``gamma``, e.g. ITML's) with ``method="auto"``: the
        paper's algorithm runs first (Bregman projections, with at most ``max_iter`` minus
        min(500, ``max_iter`` // 10) sweeps); when it ends without the certificate (the
        sweep cap, or the dual-change rule met at tol 1e-16 without it: the creep above),
        the generic dual solver continues from its multipliers (the Bregman λ >= 0 of
        δ(p − ξ) <= 0 are the dual solver's multipliers of the same constraints) with the
        Newton iterations left in ``max_iter``.  ``info["stages"]`` then describes both
        stages (solver, iterations, why it stopped, relative gap and violation, time, which
        one is returned: the second when it certifies or its certificate is smaller),
        ``n_iter`` is their sum and ``solver`` reads e.g. ``"bregman+dual-newton-logdet"``.
        Either way ``converged`` is the problem's own certificate, recomputed from the
        returned matrix and multipliers.  ``method="native"`` runs the paper's algorithm
        alone.
        """
        from .._validation import check_choice

        method = check_choice(method, "method", ("auto", "native", "dual"))
        lam0 = self._checked_warm_start(warm_start, self.fast_solver(method))
        tol = check_positive(tol, "tol")
        gap_tol = max(tol, 1e-6) if gap_tol is None else check_positive(gap_tol, "gap_tol")
        viol_tol = max(tol, 1e-6) if viol_tol is None else check_positive(viol_tol, "viol_tol")
        limit = self._iteration_limit(max_iter, max_sweeps)  # int64 in the kernels
        return self.run_pipeline(tol, limit, gap_tol, viol_tol, method=method, warm_start=lam0, callback=callback)

    def _checked_warm_start(self, warm_start, spec):
        """``warm_start`` as multipliers (one per constraint, >= 0) for a solver that resumes
        from them (the dual solver, or a spec with ``warm_start=True``); None when not given."""
        from .._validation import as_float_array

        if warm_start is None:
            return None
        if not (spec.generic or spec.warm_start):
            raise InvalidInputError(
                f"warm_start applies to the dual solver (and to solvers that resume from multipliers; "
                f"{spec.name} does not); pass method='dual'."
            )
        lam0 = as_float_array(warm_start, "warm_start").ravel()
        if lam0.size != self.n_constraints or np.any(lam0 < 0):
            raise InvalidInputError(
                f"warm_start must hold {self.n_constraints} non-negative multipliers (one per "
                "constraint, in violations() order), e.g. a previous Solution.dual."
            )
        return lam0

    def _slack_handoff(self, method, spec):
        """The generic dual solver's spec when "auto" runs a native solver on the regularizer's
        own slack (gamma) and the dual solver takes the problem too; else None."""
        if method != "auto" or spec.generic or spec.user or self.gamma is None:
            return None
        from .registry import select

        dual, _ = select(self, "dual")
        return dual

    def _domain_diagnosis(self, M) -> str:
        """Why f is not finite at M, in words: M outside the range of M0, or the eigenvalue of
        X̂ at which the regularizer's f_s is not finite (after
        :func:`~cvxkml.declare.regularizers.domain_eigenvalues`)."""
        from .regularizers import domain_eigenvalues

        Xh = self.whiten(M)
        if Xh is None:
            return "the matrix leaves the range of M0 (the whitened matrix X̂ does not represent it)"
        lam = domain_eigenvalues(np.linalg.eigvalsh(Xh))
        with np.errstate(all="ignore"):
            fs = np.asarray(self.regularizer.f_s(lam), dtype=float)
        bad = np.flatnonzero(~np.isfinite(fs))
        if bad.size:
            k = bad[np.argmin(lam[bad])]
            return (
                f"{type(self.regularizer).__name__}.f_s is {fs[k]} at the eigenvalue {lam[k]:.3g} of the "
                f"whitened matrix X̂ (range [{lam.min():.3g}, {lam.max():.3g}])"
            )
        return f"the objective is {self.objective(M)} with every f_s(λ) finite (a slack or penalty term)"

    # ------------------------------------------------------------------ the pipeline's hooks
    #: Newton iterations of ``max_iter`` (at most a tenth) that "auto" keeps for the dual
    #: solver after Bregman on a gamma problem
    _HANDOFF_RESERVE = 500

    def first_attempt(self, spec, method, tol, max_iter, request):
        """The registered solver at ``tol``; on the regularizer's own slack with "auto" it
        keeps min(500, ``max_iter`` // 10) iterations for the dual solver's stage."""
        from ._pipeline import Attempt

        handoff = self._slack_handoff(method, spec)
        budget = max_iter - min(self._HANDOFF_RESERVE, max_iter // 10) if handoff is not None else max_iter
        return Attempt(spec, tol, budget, request, notes={"handoff": handoff, "native_limit": budget})

    def next_attempt(self, history, budget):
        """After an uncertified native run: the same solver at tol / 100 (down to 1e-16)
        when the paper's dual-change rule was met (the creep of the Notes of :meth:`solve`),
        within the native share of the budget; else, on the regularizer's own slack, the
        dual solver from the run's multipliers (the Bregman λ >= 0 of δ_c(p_c − ξ_c) <= 0
        are the dual solver's multipliers of the same constraints: M⁻¹ = M0⁻¹ +
        Σ δ_cλ_c z_cz_cᵀ and 1/ξ_c = 1/ξ0_c − δ_cλ_c/γ are its primal map) with the rest."""
        from ._pipeline import Attempt
        from .registry import SolveRequest

        last = history[-1]
        if last.spec.generic or last.notes.get("stage") == 2:
            return None  # the dual solver's rule is the certificate itself
        used = sum(int(a.res.sweeps) for a in history)
        if last.res.code != NOT_CONVERGED and last.tol > 1e-16 and used < last.notes["native_limit"]:
            tighter = max(last.tol * 1e-2, 1e-16)
            return Attempt(last.spec, tighter, last.notes["native_limit"] - used, last.request, dict(last.notes))
        dual = last.notes.get("handoff")
        if dual is None:
            return None
        lower, upper, _ = self.dual_box()
        lam0 = np.clip(np.asarray(last.sol.dual, dtype=float), lower, upper)
        user = last.request.callback  # its iteration counts on from the first stage's sweeps
        relay = None if user is None else (lambda rec: user({**rec, "iteration": used + rec["iteration"]}))
        request = SolveRequest(last.request.gap_tol, last.request.viol_tol, warm_start=lam0, callback=relay)
        return Attempt(dual, history[0].tol, budget, request, {"stage": 2})

    def pick_attempt(self, history, gap_tol, viol_tol):
        """The last attempt; after the dual solver's stage, the stage whose certificate is
        nearer (the second when it certifies), with both described in ``info["stages"]``."""
        last = history[-1]
        if last.notes.get("stage") != 2:
            return last
        first = history[-2]

        def record(a, iterations, seconds, how):
            cert = self.certificate(a.sol.objective, a.sol.dual_value, a.sol.violations, rtol=gap_tol)
            rel = cert["relative_gap"]
            size = np.inf if rel is None or not np.isfinite(rel) else abs(rel) / gap_tol
            return max(size, cert["relative_violation"] / viol_tol), {
                "solver": a.sol.solver,
                "iterations": int(iterations),
                "stop": how,
                "certified": bool(a.certified),
                "objective": float(a.sol.objective),
                "relative_gap": np.nan if rel is None else float(rel),
                "max_relative_violation": float(cert["relative_violation"]),
                "time": float(seconds),
            }

        met = first.res.code != NOT_CONVERGED
        how = "dual change met, certificate not" if met else "max_iter"
        size1, stage1 = record(first, first.sol.n_iter, first.sol.time, how)
        size2, stage2 = record(last, last.res.sweeps, last.res.time, "certificate" if last.certified else "max_iter")
        keep = last.certified or size2 <= size1
        stage1["returned"], stage2["returned"] = not keep, keep
        stage2["warm_start"] = "the first stage's multipliers"
        if not keep:
            first.sol.info["stages"] = [stage1, stage2]
            return first
        last.sol.solver = f"{first.sol.solver.removesuffix('-' + self.solver_tag)}+{last.sol.solver}"
        last.sol.info.update(spec=f"{first.spec.name}+{last.spec.name}", stages=[stage1, stage2])
        return last

    def check_fast_result(self, res, spec) -> None:
        """The fast-solver protocol (:mod:`cvxkml.solvers.result`), checked before anything is
        built from a result: a FastResult, an N × N matrix, one multiplier per constraint, a
        known status, a non-negative iteration count; a breakdown (a zero distance,
        non-finite iterates) raises its typed error; then the answer itself
        (:mod:`cvxkml._answer`): multipliers finite, the matrix finite and symmetric and, from
        a user's solver, positive semidefinite — a solver cannot hand back W + skew, NaN or an
        indefinite matrix and be certified on its quadratic forms."""
        from .._answer import PSD_TOL, check_primal_matrix, check_primal_vector

        N = self.M0.shape[0]
        problems = []
        if not isinstance(res, FastResult):
            problems.append(f"returned {type(res).__name__}, not cvxkml.solvers.FastResult")
        else:
            if np.shape(res.matrix) != (N, N):
                problems.append(f"matrix of shape {np.shape(res.matrix)}, not {(N, N)}")
            if np.shape(res.lam) != (self.n_constraints,):
                problems.append(
                    f"lam of shape {np.shape(res.lam)}, not ({self.n_constraints},) (one "
                    "multiplier per constraint, in violations() order)"
                )
            if res.code not in set(int(s) for s in Status):
                problems.append(f"code {res.code!r} is not a cvxkml.solvers.Status")
            if not isinstance(res.sweeps, (int, np.integer)) or res.sweeps < 0:
                problems.append(f"sweeps {res.sweeps!r} is not a non-negative integer")
        if problems:
            raise InvalidInputError(
                f"The fast solver of {type(self).__name__} ({self.regularizer.name}) broke the "
                f"fast-solver protocol: {'; '.join(problems)}. See cvxkml.solvers.result."
            )
        self._raise_breakdown(res)
        check_primal_vector(res.lam, self.n_constraints, what=f"multipliers of {spec.name}")
        check_primal_matrix(res.matrix, N, psd=spec.user, psd_tol=PSD_TOL, what=f"matrix of {spec.name}")

    def solution_from_fast(self, res, spec, gap_tol):
        """The :class:`Solution` of a fast run (:meth:`_fast_solution`), refused with a
        :class:`SolverError` when the matrix lies outside the regularizer's domain."""
        sol = self._fast_solution(res, int(res.sweeps), float(res.time), "bregman" if not spec.user else spec.name)
        sol.info.update(spec=spec.name, space=self.space.name)
        if not np.isfinite(sol.objective):
            raise SolverError(
                f"The fast solver ({sol.solver}) stopped after {res.sweeps} iteration(s) at a matrix "
                f"outside the domain of the {self.regularizer.name} objective: "
                f"{self._domain_diagnosis(sol.matrix)}. Rescale the problem (a barrier weight or "
                "bounds far from 1), raise max_iter, or use solve_reference()."
            )
        return sol

    def raise_if_infeasible(self, sol, res) -> None:
        """:meth:`_raise_if_farkas`: the multipliers of an uncertified hard-constraint solve
        tested as a Farkas certificate."""
        self._raise_if_farkas(sol)

    def unconverged_message(self, sol, res, spec, gap_tol, viol_tol) -> str:
        """Why the answer is not certified, in one line: the callback stopped it, neither
        stage of the slack hand-off certified, the iteration limit, or the dual-change rule
        met (down to ``info["final_tol"]``) without the certificate."""
        cert = self.certificate(sol.objective, sol.dual_value, sol.violations, rtol=gap_tol)
        rel, viol = cert["relative_gap"], cert["relative_violation"]
        gap_txt = "n/a" if rel is None else f"{rel:.3g}"
        sweeps, attempts, final_tol = sol.n_iter, sol.info["attempts"], sol.info["final_tol"]
        if sol.status == CALLBACK_STOP:
            return (
                f"The callback stopped the solve after {sweeps} iteration(s), uncertified: relative gap "
                f"{gap_txt}, max relative violation {viol:.3g}."
            )
        if "stages" in sol.info:
            first, second = sol.info["stages"]
            return (
                f"Neither stage certified: Bregman projections ({first['iterations']} sweeps, relative gap "
                f"{first['relative_gap']:.3g}, max relative violation {first['max_relative_violation']:.3g}), then "
                f"the dual solver from their multipliers ({second['iterations']} Newton iterations, relative gap "
                f"{second['relative_gap']:.3g}, max relative violation {second['max_relative_violation']:.3g}); "
                f"the {'second' if second['returned'] else 'first'} is returned. Raise max_iter or tol."
            )
        if res.code == NOT_CONVERGED:
            what = (
                "The dual solver did not certify in {} Newton iterations: relative gap/violation"
                if spec.generic
                else "Bregman projections did not converge in {} sweeps: relative dual change"
                if sol.solver.startswith("bregman")
                else f"The fast solver {sol.solver} did not converge in {{}} iterations: its reported change"
            ).format(sweeps)
            slack = "" if self.gamma is not None or self._hinge else ", or use slack (gamma, or Hinge) if the "
            return (
                f"{what} {res.stop_value:.3g} > tol {final_tol:.3g}, max violation {sol.max_violation:.3g}. "
                f"Raise max_iter or tol{slack and slack + 'constraints conflict'}."
            )
        hard = self.gamma is None and any(w is None for w in self._wrappers)
        return (
            f"The dual change met tol {final_tol:.3g} but the certificate did not (after {attempts} "
            f"attempt(s), {sweeps} sweeps): relative gap {gap_txt} (allowed ±{gap_tol:.3g}), max relative "
            f"violation {viol:.3g} (allowed {viol_tol:.3g}). "
            + ("The hard constraints may be infeasible (use slack, gamma=…), or " if hard else "")
            + "raise max_iter, or loosen gap_tol / viol_tol."
        )

    def farkas_direction(self, lam):
        """Test the multipliers' direction d = λ/Σ|λ| as a Farkas certificate of infeasibility
        of the hard constraints tr(Â_c X̂) <= t_c (d_c >= 0) and tr(Â_c X̂) = t_c (d_c of
        either sign), X̂ ⪰ 0: returns (min eigenvalue of Σ d_c Â_c relative to
        Σ |d_c|‖Â_c‖₂, Σ d_c t_c relative to Σ |d_c t_c|, a lower bound on tr(X̂) over the
        feasible set).  A non-negative first value and a negative second one mean that no
        X̂ ⪰ 0 satisfies the constraints (Σ d_c tr(Â_c X̂) >= 0 > Σ d_c t_c; the bound is
        then inf).  A slightly negative first value e still bounds every feasible X̂:
        e·Σ|d_c|‖Â_c‖·tr(X̂) <= Σ d_c tr(Â_c X̂) <= Σ d_c t_c < 0 gives
        tr(X̂) >= |Σ d_c t_c| / (|e|·Σ|d_c|‖Â_c‖) — constraints that only a matrix of that
        size satisfies.  Computed from the problem's own terms
        (:func:`~cvxkml.declare.terms.constraint_terms`), each ‖Â_c‖₂ exactly from its few
        rank-one terms.  Soft constraints (Hinge, Squared, and the pairs under the regularizer's
        own slack γ) do not take part; a direction with a negative multiplier on an inequality
        is none (returns None)."""
        from .terms import constraint_terms

        lam = np.asarray(lam, dtype=float)
        if lam.size != self.n_constraints or not np.all(np.isfinite(lam)):
            return None
        lower, _, _ = self.dual_box()
        signed = np.isinf(lower)  # hard equalities
        soft = self.soft.copy()
        if self.gamma is not None and self.pairs is not None:
            soft[: len(self.pairs)] = True  # γ puts slack on the pair constraints (they come first)
        lam = np.where(soft, 0.0, lam)  # the ray runs in the hard constraints' multipliers
        if np.any(lam[~signed] < 0) or not np.abs(lam).sum() > 0:
            return None
        d = lam / np.abs(lam).sum()
        ct = constraint_terms(self)
        owner = ct.owner()
        A = (ct.U.T * (ct.w * d[owner])) @ ct.U
        norm = float(np.abs(d) @ self._term_norms(ct, np.flatnonzero(d)))
        lin, lin_abs = float(d @ ct.t), float(np.abs(d) @ np.abs(ct.t))
        if norm <= 0 or lin_abs <= 0:
            return None
        eig = float(np.linalg.eigvalsh(0.5 * (A + A.T))[0]) / norm
        bound = np.inf if eig >= 0 or lin >= 0 else float(-lin / (-eig * norm))
        return eig, lin / lin_abs, bound

    @staticmethod
    def _term_norms(ct, rows):
        """‖Â_c‖₂ of the constraints ``rows`` (0 elsewhere): the nonzero eigenvalues of
        Â_c = U_cᵀ diag(w_c) U_c are those of diag(w_c) U_c U_cᵀ (k_c × k_c), solved in
        batches of equal k_c."""
        norms = np.zeros(ct.m)
        counts = np.diff(ct.ptr)
        for k in np.unique(counts[rows]):
            sel = rows[counts[rows] == k]
            if k == 0:
                continue
            idx = ct.ptr[sel][:, None] + np.arange(k)[None, :]
            Uc = ct.U[idx]  # (s, k, r)
            G = Uc @ Uc.transpose(0, 2, 1)
            ev = np.linalg.eigvals(ct.w[idx][:, :, None] * G)
            norms[sel] = np.max(np.abs(ev), axis=1)
        return norms

    def _raise_if_farkas(self, sol) -> None:
        """InfeasibleError when an uncertified hard-constraint solve's multipliers point along
        a Farkas ray (min eigenvalue >= −1e-6, linear term <= −1e-3, both relative).  A fast
        solver that stopped on a diverging dual hands the ray it found in
        ``sol.info["farkas_ray"]`` (:class:`cvxkml.solvers._farkas.FarkasWatch`: the growth of
        the multipliers over its last sweeps, on the constraints that carry it); it is tested
        first, by the same rule, and the message names those constraints.  When the min
        eigenvalue is slightly negative the message gives the trace every feasible matrix
        would need (:meth:`farkas_direction`): such constraints are feasible only at a scale
        that no solver, exact or fast, resolves (two nearly parallel pair differences, say,
        whose only feasible W have norms of order 1e7)."""
        ray = sol.info.get("farkas_ray")
        for d, from_ray in ((ray, True), (sol.dual, False)):
            lead = (
                f"after {sol.n_iter} iterations the multipliers grow along d "
                f"{'(their growth over the last iterations)' if from_ray else '= λ/Σ|λ|'}"
            )
            self._farkas_verdict(d, lead, named=from_ray, info=sol.info)

    def _farkas_verdict(self, d, lead: str, *, named: bool, info: dict | None = None) -> None:
        """Raise :class:`InfeasibleError` when ``d`` passes :meth:`farkas_direction`'s test
        (relative min eigenvalue >= −FARKAS_EIG_TOL, relative Σd_c t_c <= −FARKAS_LIN_TOL,
        :mod:`cvxkml._answer`); the message starts
        with ``lead`` (how d was found) and, with ``named``, names the constraints carrying d."""
        test = None if d is None else self.farkas_direction(d)
        if test is None:
            return
        eig, lin, bound = test
        if info is not None:
            info["farkas"] = test
        if not (eig >= -FARKAS_EIG_TOL and lin <= -FARKAS_LIN_TOL):
            return
        n = self.T.shape[1]
        what = (
            "no positive semidefinite matrix satisfies them"
            if np.isinf(bound) or eig >= -1e-12
            else f"any matrix that satisfies them has tr(X̂) >= {bound:.3g} in the whitened "
            f"coordinates (the prior has tr = {n}), i.e. they are infeasible up to round-off"
        )
        names = ""
        if named:
            d = np.abs(np.asarray(d, dtype=float))
            idx = np.flatnonzero(d > 0)
            idx = idx[np.argsort(-d[idx], kind="stable")]
            P, n_p = self.pairs, (0 if self.pairs is None else len(self.pairs))
            parts = [
                (
                    f"{k} (pair ({P.i[k]}, {P.j[k]}): d {'<=' if P.y[k] > 0 else '>='} {P.bound[k]:.3g})"
                    if k < n_p
                    else str(k)
                )
                for k in idx[:8]
            ]
            names = (
                f" The constraints carrying it (index in violations() order, heaviest "
                f"first): {', '.join(parts)}{', …' if idx.size > 8 else ''}."
            )
        raise InfeasibleError(
            f"The hard constraints are infeasible: {lead} with Σd_cÂ_c ⪰ 0 (relative min eigenvalue "
            f"{eig:.2g}) and Σd_c t_c < 0 (relative {lin:.2g}), a Farkas certificate: {what}.{names} Use "
            "slack (gamma=<positive number>, or Hinge) or remove the conflicting constraints; "
            "solve_reference() confirms."
        )

    def _raise_breakdown(self, res) -> None:
        """Typed errors for a fast run that broke down (a zero distance, non-finite iterates):
        :class:`InfeasibleError` only with a proof — the constraint it broke down on, alone, a
        Farkas certificate (:meth:`farkas_direction` of its unit vector: e.g. a pair of
        identical points asked to be apart) — else :class:`SolverError`, which says that the
        breakdown is no verdict on feasibility."""
        if res.code not in (NONPOSITIVE_DISTANCE, NONFINITE):
            return
        what = (
            "a constrained distance reached zero"
            if res.code == NONPOSITIVE_DISTANCE
            else "the iterates became non-finite"
        )
        k = int(res.bad_index)
        reason = res.extra.get("reason") if isinstance(res.extra, dict) else None
        if reason:  # a solver that says why (the dual solver: no finite start)
            what = f"{what} ({reason})"
        solver = res.extra.get("solver", "bregman") if isinstance(res.extra, dict) else "bregman"
        who = "Bregman projections" if str(solver).startswith("bregman") else f"The fast solver {solver}"
        head = f"{who} broke down after {res.sweeps} iteration(s): {what}"
        if 0 <= k < self.n_constraints:  # the constraint it broke down on, alone, as the ray
            unit = np.zeros(self.n_constraints)
            unit[k] = 1.0
            self._farkas_verdict(unit, f"{head} on constraint {k}; d = that constraint alone", named=True)
        where = f" (constraint {k})" if k >= 0 else ""
        raise SolverError(
            f"{head}{where}; this is no verdict on feasibility. "
            + ("Use method='dual' (the certified dual solver), " if who.startswith("Bregman") else "Use ")
            + "solve_reference() (the exact model), or rescale the data and bounds to order 1."
        )

    def _fast_solution(self, res, sweeps, elapsed, default_name: str = "bregman") -> Solution:
        """The :class:`Solution` of a fast run (``converged`` = the run met its own rule).

        With the regularizer's own slack (``gamma``) the primal point is (M, ``best_slack(M)``):
        the objective is priced at that slack, so its violations are measured there too (the
        point the certificate speaks of, feasible on the pairs by construction), not at the
        solver's own slack iterate, which may lag behind M."""
        converged = res.code != NOT_CONVERGED
        M = res.matrix
        xi = self.best_slack(M) if self.gamma is not None else None
        viol = self.violations(M, xi)
        extra = dict(res.extra)
        return Solution(
            matrix=M,
            objective=self.objective(M),
            dual=res.lam,
            slack=xi,
            violations=viol,
            n_iter=sweeps,
            converged=converged,
            time=elapsed,
            status="converged" if converged else "max_iter reached",
            solver=f"{extra.pop('solver', default_name)}-{self.solver_tag}",
            dual_value=self.dual_value(res.lam),
            info={
                "stop_value": res.stop_value,
                "dual_change": res.stop_value,  # former name, removed in 0.3
                "max_relative_violation": self._max_relative_violation(viol),
                "skipped_pairs": self.skipped_pairs,
                **extra,
            },
        )
