"""The fast side of a spectral problem: the registered solver chosen
(:mod:`cvxkml.declare.registry`), its answer checked against the fast-solver protocol,
recomputed and certified, the paper's dual-change rule tightened until the certificate
holds, the hand-off from Bregman to the certified dual solver on the regularizer's own
slack, and the Farkas certificate of infeasible hard constraints.  A part of
:class:`~cvxkml.declare.base.SpectralProblem`."""

from __future__ import annotations

import warnings

import numpy as np

from .._validation import check_positive
from ..errors import ConvergenceWarning, InfeasibleError, InvalidInputError, SolverError
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
            The certificate: a solve is ``converged`` only when the Lagrange-dual gap
            f(M) − g(λ) lies in [−gap_tol, gap_tol]·max(1, |f(M)|) (a negative gap beyond
            that means an infeasible point) and the largest relative constraint violation
            is at most ``viol_tol``.  None: max(tol, 1e-6).
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
            ``gap``, ``violation``, ``dual_change``); a truthy return stops the solve
            (``status="stopped by callback"``, ``converged=False`` unless certified).
        max_sweeps : int or None
            Deprecated former name of ``max_iter``.

        Notes
        -----
        A small dual change does not imply a small violation: with large multipliers the
        cyclic projections creep (one low-rank draw met tol = 1e-12 with a violation of
        6.8e-6 times a multiplier of 2e4, a gap of −0.136).  When the dual-change rule is
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
        from .registry import SolveRequest, call

        method = check_choice(method, "method", ("auto", "native", "dual"))
        spec = self.fast_solver(method)
        use_dual = spec.generic
        lam0 = self._checked_warm_start(warm_start, spec)
        callback = self._check_callback(callback)
        tol = check_positive(tol, "tol")
        gap_tol = max(tol, 1e-6) if gap_tol is None else check_positive(gap_tol, "gap_tol")
        viol_tol = max(tol, 1e-6) if viol_tol is None else check_positive(viol_tol, "viol_tol")
        limit = self._iteration_limit(max_iter, max_sweeps)  # int64 in the kernels
        # "auto" on the regularizer's own slack (gamma): Bregman first, then the certified dual
        # solver from its multipliers when it ends uncertified; it keeps a share of the budget
        handoff = self._slack_handoff(method, spec)
        native_limit = limit - min(self._HANDOFF_RESERVE, limit // 10) if handoff is not None else limit
        # the request travels with the call: a native solver that checks the certificate itself
        # reads the rule from it, and one that can resume keeps its last iterate in it for the
        # next attempt; nothing of this solve is stored on the problem
        request = SolveRequest(gap_tol, viol_tol, warm_start=lam0, callback=callback if use_dual else None)
        attempt_tol, sweeps, elapsed, attempts, stopped = tol, 0, 0.0, 0, False
        while True:
            res = call(spec, self, attempt_tol, (limit if use_dual else native_limit) - sweeps, request)
            attempts += 1
            sweeps += res.sweeps
            elapsed += res.time
            sol, met, certified, stopped, gap, scale, rel_viol = self._judge_attempt(
                res, spec, sweeps, elapsed, gap_tol, viol_tol, use_dual, callback
            )
            if certified or not met or use_dual or stopped or attempt_tol <= 1e-16 or sweeps >= native_limit:
                break
            attempt_tol = max(attempt_tol * 1e-2, 1e-16)
        sol.info.update(attempts=attempts, final_tol=attempt_tol, gap_tol=gap_tol, viol_tol=viol_tol)
        if handoff is not None and not certified and not stopped and limit > sweeps:
            first = sol
            sol, met, certified, stopped, gap, scale, rel_viol, res = self._dual_handoff(
                handoff, spec, first, res, met, tol, gap_tol, viol_tol, limit - sweeps, sweeps, elapsed, callback
            )
            if sol is not first:
                use_dual, sweeps, attempts = True, sol.n_iter, 1
        self._close_fast_solve(
            sol,
            res,
            stopped=stopped,
            certified=certified,
            met=met,
            use_dual=use_dual,
            attempts=attempts,
            sweeps=sweeps,
            gap=gap,
            scale=scale,
            rel_viol=rel_viol,
            tol=tol,
            attempt_tol=attempt_tol,
            gap_tol=gap_tol,
            viol_tol=viol_tol,
        )
        return sol

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

    def _judge_attempt(self, res, spec, sweeps, elapsed, gap_tol, viol_tol, use_dual, callback):
        """One attempt of :meth:`solve`: the result checked (protocol, breakdown, domain),
        recomputed into a Solution and judged — the paper's rule met (``met``), the certificate
        within ``gap_tol`` / ``viol_tol`` (``certified``), the callback asked (``stopped``).
        Returns (solution, met, certified, stopped, gap, scale, relative violation)."""
        self._check_fast_result(res, spec)
        self._raise_breakdown(res)
        sol = self._fast_solution(res, sweeps, elapsed, default_name="bregman" if not spec.user else spec.name)
        sol.info.update(spec=spec.name, space=self.space.name)
        if not np.isfinite(sol.objective):
            raise SolverError(
                f"The fast solver ({sol.solver}) stopped after {sweeps} iteration(s) at a matrix "
                f"outside the domain of the {self.regularizer.name} objective: "
                f"{self._domain_diagnosis(sol.matrix)}. Rescale the problem (a barrier weight or "
                "bounds far from 1), raise max_iter, or use solve_reference()."
            )
        scale = max(1.0, abs(sol.objective))
        gap = sol.gap
        rel_viol = sol.info["max_relative_violation"]
        within = gap is not None and -gap_tol * scale <= gap <= gap_tol * scale and rel_viol <= viol_tol
        # Bregman: the paper's dual-change rule, then the certificate; the dual solver's
        # rule is the certificate itself (a stall at round-off below gap_tol counts)
        met = sol.converged or (use_dual and within)
        certified = met and within
        stopped = False
        if use_dual:
            sol.converged = met
            sol.status = "converged" if met else sol.status
            stopped = bool(res.extra.get("stopped")) and not met
        elif callback is not None:  # every attempt's check, the certified one too
            asked = callback(
                {
                    "iteration": sweeps,
                    "objective": sol.objective,
                    "gap": None if gap is None else gap / scale,
                    "violation": rel_viol,
                    "dual_change": res.dual_change,
                    "certified": certified,
                }
            )
            stopped = bool(asked) and not certified
        return sol, met, certified, stopped, gap, scale, rel_viol

    def _close_fast_solve(
        self,
        sol,
        res,
        *,
        stopped,
        certified,
        met,
        use_dual,
        attempts,
        sweeps,
        gap,
        scale,
        rel_viol,
        tol,
        attempt_tol,
        gap_tol,
        viol_tol,
    ) -> None:
        """The last phase of :meth:`solve`: a Farkas certificate of infeasibility raises; an
        uncertified answer gets ``converged=False``, its status, and one ConvergenceWarning
        saying why (stopped by the callback, neither stage of the gamma handoff certified,
        the iteration limit, or the dual-change rule met without the certificate)."""
        if not certified:
            self._raise_if_farkas(sol)
        if stopped:
            sol.converged = False
            sol.status = CALLBACK_STOP
            gap_txt = "n/a" if gap is None else f"{gap / scale:.3g}"
            self._warn_unconverged(
                sol,
                f"The callback stopped the solve after {sweeps} iteration(s), "
                f"uncertified: relative gap {gap_txt}, max relative violation "
                f"{rel_viol:.3g}.",
                stacklevel=4,
            )
        elif not certified and "stages" in sol.info:
            first, second = sol.info["stages"]
            sol.converged = False
            sol.status = "not certified" if met else sol.status
            warnings.warn(
                f"Neither stage certified: Bregman projections ({first['iterations']} sweeps, relative gap "
                f"{first['relative_gap']:.3g}, max relative violation {first['max_relative_violation']:.3g}), then "
                f"the dual solver from their multipliers ({second['iterations']} Newton iterations, relative gap "
                f"{second['relative_gap']:.3g}, max relative violation {second['max_relative_violation']:.3g}); "
                f"the {second['returned'] and 'second' or 'first'} is returned. Raise max_iter or tol.",
                ConvergenceWarning,
                stacklevel=4,
            )
        elif not met and attempts == 1:
            what = (
                "The dual solver did not certify in {} Newton iterations: relative gap/violation"
                if use_dual
                else "Bregman projections did not converge in {} sweeps: relative dual change"
                if sol.solver.startswith("bregman")
                else f"The fast solver {sol.solver} did not converge in {{}} iterations: its reported change"
            ).format(sweeps)
            warnings.warn(
                f"{what} "
                f"{res.dual_change:.3g} > tol {attempt_tol:.3g}, max violation {sol.max_violation:.3g}. "
                "Raise max_iter or tol"
                + (
                    ""
                    if self.gamma is not None or self._hinge
                    else ", or use slack (gamma, or Hinge) if the constraints conflict"
                )
                + ".",
                ConvergenceWarning,
                stacklevel=4,
            )
        elif not certified:
            sol.converged = False
            sol.status = "not certified"
            gap_txt = "n/a" if gap is None else f"{gap / scale:.3g}"
            warnings.warn(
                f"The dual change met tol {tol:.3g} but the certificate did not (after {attempts} "
                f"attempt(s) down to tol {attempt_tol:.3g}, {sweeps} sweeps): relative gap {gap_txt} "
                f"(allowed ±{gap_tol:.3g}), max relative "
                f"violation {rel_viol:.3g} (allowed {viol_tol:.3g}). "
                + (
                    "The hard constraints may be infeasible (use slack, gamma=…), or "
                    if self.gamma is None and any(w is None for w in self._wrappers)
                    else ""
                )
                + "raise max_iter, or loosen gap_tol / viol_tol.",
                ConvergenceWarning,
                stacklevel=4,
            )

    #: Newton iterations of ``max_iter`` (at most a tenth) that "auto" keeps for the dual
    #: solver after Bregman on a gamma problem
    _HANDOFF_RESERVE = 500

    def _slack_handoff(self, method, spec):
        """The generic dual solver's spec when "auto" runs a native solver on the regularizer's
        own slack (gamma) and the dual solver takes the problem too; else None."""
        if method != "auto" or spec.generic or spec.user or self.gamma is None:
            return None
        from .registry import select

        dual, _ = select(self, "dual")
        return dual

    def _dual_handoff(self, dual, spec, first, res, met, tol, gap_tol, viol_tol, budget, sweeps, elapsed, callback):
        """Stage 2 of "auto" on a gamma problem: the native run ``first`` (``res``) ended
        uncertified; the dual solver continues from its multipliers (the Bregman λ >= 0 of
        δ_c(p_c − ξ_c) <= 0 are the dual solver's multipliers of the same constraints:
        M⁻¹ = M0⁻¹ + Σ δ_cλ_c z_cz_cᵀ and 1/ξ_c = 1/ξ0_c − δ_cλ_c/γ are its primal map) with the
        ``budget`` left.  Returns (solution, met, certified, stopped, gap, scale, violation,
        result) of the stage kept: the second when it certifies or its certificate is smaller."""

        def measure(sol):
            scale = max(1.0, abs(sol.objective)) if np.isfinite(sol.objective) else 1.0
            gap = sol.gap
            viol = sol.info["max_relative_violation"]
            within = gap is not None and -gap_tol * scale <= gap <= gap_tol * scale and viol <= viol_tol
            size = np.inf if gap is None or not np.isfinite(gap) else abs(gap) / scale / gap_tol
            return within, gap, scale, viol, max(size, viol / viol_tol)

        def record(sol, gap, scale, viol, iterations, how, seconds):
            return {
                "solver": sol.solver,
                "iterations": int(iterations),
                "stop": how,
                "certified": bool(sol.converged),
                "objective": float(sol.objective),
                "relative_gap": np.nan if gap is None else float(gap / scale),
                "max_relative_violation": float(viol),
                "time": float(seconds),
            }

        _, gap1, scale1, viol1, size1 = measure(first)
        lower, upper, _ = self.dual_box()
        lam0 = np.clip(np.asarray(first.dual, dtype=float), lower, upper)
        # the callback's iteration counts on from the first stage's sweeps
        relay = None if callback is None else (lambda rec: callback({**rec, "iteration": sweeps + rec["iteration"]}))
        from .registry import SolveRequest, call

        res2 = call(dual, self, tol, budget, SolveRequest(gap_tol, viol_tol, warm_start=lam0, callback=relay))
        self._check_fast_result(res2, dual)
        self._raise_breakdown(res2)
        sol = self._fast_solution(res2, sweeps + res2.sweeps, elapsed + res2.time)
        within, gap2, scale2, viol2, size2 = measure(sol)
        sol.converged = within
        sol.status = "converged" if within else sol.status
        stop1 = "max_iter" if not met else "dual change met, certificate not"
        stages = [
            record(first, gap1, scale1, viol1, sweeps, stop1, elapsed),
            record(sol, gap2, scale2, viol2, res2.sweeps, "certificate" if within else "max_iter", res2.time),
        ]
        stages[0]["certified"] = False
        keep = within or size2 <= size1
        stages[0]["returned"], stages[1]["returned"] = not keep, keep
        stages[1]["warm_start"] = "the first stage's multipliers"
        stopped = bool(res2.extra.get("stopped")) and not within
        if not keep:
            first.info["stages"] = stages
            return first, met, False, stopped, gap1, scale1, viol1, res
        sol.solver = f"{first.solver.removesuffix('-' + self.solver_tag)}+{sol.solver}"
        sol.info.update(
            spec=f"{spec.name}+{dual.name}",
            space=self.space.name,
            stages=stages,
            attempts=first.info.get("attempts", 1),
            final_tol=tol,
            gap_tol=gap_tol,
            viol_tol=viol_tol,
        )
        return sol, within, within, stopped, gap2, scale2, viol2, res2

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

    def _check_fast_result(self, res, spec) -> None:
        """The fast-solver protocol (:mod:`cvxkml.solvers.result`), checked before anything is
        built from a result: a FastResult, an N × N matrix, one multiplier per constraint, a
        known status, a non-negative iteration count; then the answer itself
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
        if res.code in (NONPOSITIVE_DISTANCE, NONFINITE):
            return  # a breakdown: _raise_breakdown says what
        check_primal_vector(res.lam, self.n_constraints, what=f"multipliers of {spec.name}")
        check_primal_matrix(res.matrix, N, psd=spec.user, psd_tol=PSD_TOL, what=f"matrix of {spec.name}")

    def farkas_direction(self, lam):
        """Test the multipliers' direction d = λ/Σλ as a Farkas certificate of infeasibility
        of the hard constraints tr(Â_c X̂) <= t_c, X̂ ⪰ 0: returns (min eigenvalue of
        Σ d_c Â_c relative to Σ d_c‖Â_c‖₂, Σ d_c t_c relative to Σ d_c|t_c|, a lower bound
        on tr(X̂) over the feasible set).  A non-negative first value and a negative second
        one mean that no X̂ ⪰ 0 satisfies the constraints (Σ d_c tr(Â_c X̂) >= 0 > Σ d_c t_c;
        the bound is then inf).  A slightly negative first value e still bounds every
        feasible X̂: e·Σd_c‖Â_c‖·tr(X̂) <= Σ d_c tr(Â_c X̂) <= Σ d_c t_c < 0 gives
        tr(X̂) >= |Σ d_c t_c| / (|e|·Σ d_c‖Â_c‖) — constraints that only a matrix of that size
        satisfies.  With slack (γ) the pair terms are soft and the test does not apply
        (returns None)."""
        lam = np.asarray(lam, dtype=float)
        if (
            self.gamma is not None
            or lam.size != self.n_constraints
            or not np.all(np.isfinite(lam))
            or any(f.equality and w is None for f, w in zip(self._constraint_atoms, self._wrappers))
        ):
            return None  # (hard equalities: multipliers of either sign)
        if self._hinge:  # the ray runs in the hard constraints' multipliers
            lam = np.where(self.soft, 0.0, lam)
        if lam.sum() <= 0:
            return None
        d = lam / lam.sum()
        A = np.zeros((self.T.shape[1],) * 2)
        lin = lin_abs = norm = 0.0
        start = 0
        for fam, (term, _, t) in zip(self._constraint_atoms, self._whitened_family_terms()):
            dc = d[start : start + len(fam)]
            for k in np.flatnonzero(dc):  # Σ d_c‖Â_c‖ from each constraint's own term
                e = np.zeros(len(fam))
                e[k] = 1.0
                norm += dc[k] * float(np.max(np.abs(np.linalg.eigvalsh(term(e)))))
            start += len(fam)
            A += term(dc)
            lin += float(dc @ t)
            lin_abs += float(dc @ np.abs(t))
        if norm <= 0 or lin_abs <= 0:
            return None
        eig = float(np.linalg.eigvalsh(0.5 * (A + A.T))[0]) / norm
        bound = np.inf if eig >= 0 or lin >= 0 else float(-lin / (-eig * norm))
        return eig, lin / lin_abs, bound

    def _raise_if_farkas(self, sol) -> None:
        """InfeasibleError when an uncertified hard-constraint solve's multipliers point along
        a Farkas ray (min eigenvalue >= −1e-6, linear term <= −1e-3, both relative).  A fast
        solver that stopped on a diverging dual hands the ray it found in
        ``sol.info["farkas_ray"]`` (:class:`cvxkml.solvers.bregman.FarkasWatch`: the growth of
        the multipliers over its last sweeps, on the constraints that carry it); it is tested
        first, by the same rule, and the message names those constraints.  When the min
        eigenvalue is slightly negative the message gives the trace every feasible matrix
        would need (:meth:`farkas_direction`): such constraints are feasible only at a scale
        that no solver, exact or fast, resolves (two nearly parallel pair differences, say,
        whose only feasible W have norms of order 1e7)."""
        ray = sol.info.get("farkas_ray")
        for d, from_ray in ((ray, True), (sol.dual, False)):
            test = None if d is None else self.farkas_direction(d)
            if test is None:
                continue
            eig, lin, bound = test
            sol.info["farkas"] = test
            if not (eig >= -1e-6 and lin <= -1e-3):
                continue
            n = self.T.shape[1]
            what = (
                "no positive semidefinite matrix satisfies them"
                if np.isinf(bound) or eig >= -1e-12
                else f"any matrix that satisfies them has tr(X̂) >= {bound:.3g} in the whitened "
                f"coordinates (the prior has tr = {n}), i.e. they are infeasible up to round-off"
            )
            named = ""
            if from_ray:
                d = np.asarray(d, dtype=float)
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
                named = (
                    f" The constraints carrying it (index in violations() order, heaviest "
                    f"first): {', '.join(parts)}{', …' if idx.size > 8 else ''}."
                )
            raise InfeasibleError(
                f"The hard constraints are infeasible: after {sol.n_iter} sweeps the multipliers grow "
                f"along d {'(their growth over the last sweeps)' if from_ray else '= λ/Σλ'} with "
                f"Σd_cÂ_c ⪰ 0 (relative min eigenvalue {eig:.2g}) and Σd_c t_c < 0 "
                f"(relative {lin:.2g}), a Farkas certificate: {what}.{named} Use slack "
                "(gamma=<positive number>) or remove the conflicting constraints; solve_reference() "
                "confirms."
            )

    def _raise_breakdown(self, res) -> None:
        """Typed errors for a fast run that broke down (a zero distance, non-finite iterates)."""
        if res.code not in (NONPOSITIVE_DISTANCE, NONFINITE):
            return
        what = (
            "a constrained distance reached zero"
            if res.code == NONPOSITIVE_DISTANCE
            else "the iterates became non-finite"
        )
        head = f"Bregman projections broke down after {res.sweeps} sweep(s): {what}"
        # gamma puts slack on the pair constraints only (they come first); relative
        # and similarity constraints stay hard
        n_soft = len(self.pairs) if self.gamma is not None and self.pairs is not None else 0
        if self.gamma is None:
            raise InfeasibleError(
                f"{head} (constraint {res.bad_index}). The hard constraints are most likely "
                "infeasible; use LogDet slack by passing gamma=<positive number>."
            )
        if res.bad_index >= n_soft:
            raise InfeasibleError(
                f"{head} (constraint {res.bad_index}, a hard relative or similarity constraint: "
                "gamma adds slack to the pair constraints only). No positive definite matrix "
                "in the range of K0 satisfies the hard constraints; relax or remove them."
            )
        raise SolverError(
            f"{head} with slack weight gamma = {self.gamma:.3g}. Use a gamma nearer 1 (the slack "
            "terms scale like 1/gamma), rescale the data and bounds to order 1, or check with "
            "solve_reference()."
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
                "dual_change": res.dual_change,
                "max_relative_violation": self._max_relative_violation(viol),
                "skipped_pairs": self.skipped_pairs,
                **extra,
            },
        )
