"""The certified-solve pipeline, written once for every family: validate → dispatch →
recompute → certify → :class:`~cvxkml.solution.Solution`, in attempts.

A fast solve is a sequence of attempts (:class:`Attempt`): each runs one registered solver
(:mod:`cvxkml.declare.registry`) with a :class:`~cvxkml.declare.registry.SolveRequest`, its
:class:`~cvxkml.solvers.result.FastResult` is checked against the protocol, turned into a
Solution by the family's formulas and certified.  Most families make one attempt; a family
whose solver stops on its own rule (the papers' dual-change rule of Bregman projections)
may ask for another — the same solver at a tighter tolerance, or another solver started
from the last multipliers — through :meth:`CertifiedPipeline.next_attempt`, and say which
attempt is returned through :meth:`CertifiedPipeline.pick_attempt`.  Whatever the family,
``converged`` is the recomputed certificate of the returned attempt, an uncertified answer
is first tested for a certificate of infeasibility (:meth:`CertifiedPipeline.raise_if_infeasible`)
and then reported by one :class:`~cvxkml.errors.ConvergenceWarning`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError
from ..solution import CALLBACK_STOP

__all__ = ["Attempt", "CertifiedPipeline", "CALLBACK_STOP"]


@dataclass
class Attempt:
    """One run of a fast solver inside :meth:`CertifiedPipeline.run_pipeline`.

    Attributes
    ----------
    spec : SolverSpec
        The solver run.
    tol : float
        Its own stopping tolerance for this run.
    budget : int
        The iterations this run may use.
    request : SolveRequest
        What the run is handed (certificate tolerances, warm start, callback, options).
    notes : dict
        The family's bookkeeping between attempts (e.g. which stage this is).
    res : FastResult or None
        What the solver returned (after the run).
    sol : Solution or None
        The recomputed answer (after the run); ``n_iter`` and ``time`` count every attempt
        up to this one.
    certified : bool
        Whether ``sol`` meets the certificate (:meth:`CertifiedPipeline.certify`).
    stopped : bool
        Whether the callback stopped this run uncertified.
    """

    spec: object
    tol: float
    budget: int
    request: object
    notes: dict = field(default_factory=dict)
    res: object = None
    sol: object = None
    certified: bool = False
    stopped: bool = False


class CertifiedPipeline:
    """The pipeline and its hooks, a part of :class:`~cvxkml.declare.problem.Problem`.  The
    hooks are where families differ; each default is what a user's problem class gets."""

    def run_pipeline(
        self,
        tol: float,
        max_iter: int,
        gap_tol: float,
        viol_tol: float,
        *,
        method: str = "auto",
        warm_start=None,
        callback=None,
        options: dict | None = None,
        warn: bool = True,
    ):
        """validate → dispatch → recompute → certify → :class:`~cvxkml.solution.Solution`, for
        every family: the solver :meth:`fast_solver` picks runs with a
        :class:`~cvxkml.declare.registry.SolveRequest` (the certificate's tolerances, the warm
        start, the callback and the family's solver ``options``, passed down as a value); its
        :class:`~cvxkml.solvers.result.FastResult` is checked (:meth:`check_fast_result`),
        turned into a Solution by the family's own formulas (:meth:`solution_from_fast`) and
        certified (:meth:`certify`).  Uncertified, the family may ask for another attempt
        (:meth:`next_attempt`) within ``max_iter`` iterations in all; the answer returned is
        :meth:`pick_attempt`'s.  A callback that the solver never calls is called here once
        per attempt (``iteration``, ``objective``, ``gap``, ``violation``, ``stop_value``,
        ``certified``).  When the answer is not certified, :meth:`raise_if_infeasible` may
        raise, else its status is :meth:`unconverged_status` and one ConvergenceWarning says
        :meth:`unconverged_message`.  A family's ``solve()`` validates its own arguments and
        calls this."""
        from .registry import SolveRequest

        spec = self.fast_solver(method)
        callback = self._check_callback(callback)
        request = SolveRequest(gap_tol, viol_tol, warm_start=warm_start, callback=callback, options=dict(options or {}))
        attempt = self.first_attempt(spec, method, tol, max_iter, request)
        history: list[Attempt] = []
        while attempt is not None:
            self._run_attempt(attempt, history, gap_tol, viol_tol, callback)
            history.append(attempt)
            done = attempt.certified or attempt.stopped
            used = sum(int(a.res.sweeps) for a in history)
            attempt = None if done or used >= max_iter else self.next_attempt(history, max_iter - used)
        final = self.pick_attempt(history, gap_tol, viol_tol)
        sol, res = final.sol, final.res
        sol.converged = final.certified
        if final.certified and sol.status == "max_iter reached":
            sol.status = "converged"  # certified in the last iteration allowed
        sol.info.setdefault("spec", final.spec.name)
        sol.info.update(gap_tol=gap_tol, viol_tol=viol_tol, attempts=len(history), final_tol=final.tol)
        if not final.certified:
            self.raise_if_infeasible(sol, res)
            # the callback stopped the last attempt, whichever attempt is returned
            sol.status = CALLBACK_STOP if history[-1].stopped else self.unconverged_status(sol, res)
            if warn:
                self._warn_unconverged(sol, self.unconverged_message(sol, res, final.spec, gap_tol, viol_tol), 5)
        return sol

    def _run_attempt(self, attempt, history, gap_tol, viol_tol, callback) -> None:
        """Run one attempt and fill in its result, answer and verdict (``n_iter`` and ``time``
        of the answer count the earlier attempts too)."""
        from .registry import call

        user, calls = attempt.request.callback, 0

        def counted(record):  # a solver that never calls the callback gets one call below
            nonlocal calls
            calls += 1
            return user(record)

        if user is not None:
            attempt.request.callback = counted
        try:
            res = call(attempt.spec, self, attempt.tol, attempt.budget, attempt.request)
        finally:
            attempt.request.callback = user
        self.check_fast_result(res, attempt.spec)
        sol = self.solution_from_fast(res, attempt.spec, gap_tol)
        if history:
            sol.n_iter += sum(int(a.res.sweeps) for a in history)
            sol.time += sum(float(a.res.time) for a in history)
        attempt.res, attempt.sol = res, sol
        attempt.certified = bool(self.certify(sol, res, gap_tol, viol_tol))
        attempt.stopped = bool(res.extra.get("stopped")) and not attempt.certified
        if callback is not None and calls == 0:
            cert = self.certificate(sol.objective, sol.dual_value, sol.violations, rtol=gap_tol)
            asked = callback(
                {
                    "iteration": int(sol.n_iter),
                    "objective": sol.objective,
                    "gap": cert["relative_gap"],
                    "violation": cert["relative_violation"],
                    "stop_value": res.stop_value,
                    "dual_change": res.stop_value,  # former name, removed in 0.3
                    "certified": attempt.certified,
                }
            )
            attempt.stopped = bool(asked) and not attempt.certified

    # ------------------------------------------------------------------ the hooks
    def first_attempt(self, spec, method: str, tol: float, max_iter: int, request):
        """The first :class:`Attempt`: ``spec`` at ``tol`` with the whole budget."""
        return Attempt(spec, tol, max_iter, request)

    def next_attempt(self, history: list, budget: int):
        """Another :class:`Attempt` after the uncertified, unstopped ``history[-1]`` with
        ``budget`` iterations left, or None to stop.  Default: None (one attempt)."""
        return None

    def pick_attempt(self, history: list, gap_tol: float, viol_tol: float):
        """The attempt whose answer is returned.  Default: the last."""
        return history[-1]

    def check_fast_result(self, res, spec) -> None:
        """The fast-solver protocol (:mod:`cvxkml.solvers.result`), checked before anything is
        built from a result: a FastResult with a known :class:`~cvxkml.solvers.Status`."""
        from ..solution import FastResult, Status

        if not isinstance(res, FastResult) or res.code not in set(int(c) for c in Status):
            raise InvalidInputError(
                f"The fast solver {spec.name} of {type(self).__name__} broke the fast-solver protocol: returned "
                f"{type(res).__name__}{'' if not isinstance(res, FastResult) else f' with code {res.code!r}'}, "
                "not a cvxkml.solvers.FastResult with a cvxkml.solvers.Status. See cvxkml.solvers.result."
            )

    def solution_from_fast(self, res, spec, gap_tol: float):
        """The :class:`~cvxkml.solution.Solution` of a fast result, every number recomputed by
        this problem's formulas.  Default: the multipliers checked finite, then
        :meth:`evaluate` at (``res.matrix``, ``res.lam``) with the solver's extra outputs in
        ``info``, then :meth:`check_answer` (finite, symmetric, PSD)."""
        from .._answer import PSD_TOL, SYMMETRIC_TOL, check_primal_vector

        lam = np.asarray(res.lam, dtype=float)
        check_primal_vector(lam, lam.size, what=f"multipliers of {spec.name}")
        extra = dict(res.extra)
        name = extra.pop("solver", spec.name)
        sol = self.evaluate(
            np.asarray(res.matrix, dtype=float),
            lam,
            rtol=gap_tol,
            n_iter=int(res.sweeps),
            time=float(res.time),
            status="converged",
            solver=str(name),
            stop_value=res.stop_value,
            dual_change=res.stop_value,  # former name, removed in 0.3
            **extra,
        )
        self.check_answer(sol, symmetric_tol=SYMMETRIC_TOL, psd_tol=PSD_TOL)
        return sol

    def certify(self, sol, res, gap_tol: float, viol_tol: float) -> bool:
        """Whether the answer is certified: its gap, recomputed here from the answer's
        objective, dual value and violations (never a certificate a solver put in ``info``),
        within ``gap_tol`` on the scale of :meth:`certificate` and its relative violation
        within ``viol_tol``."""
        cert = self.certificate(sol.objective, sol.dual_value, sol.violations, rtol=gap_tol)
        gap_ok = cert["gap"] is not None and abs(cert["gap"]) <= cert["gap_tol"]
        return gap_ok and cert["relative_violation"] <= viol_tol

    def raise_if_infeasible(self, sol, res) -> None:
        """Raise :class:`~cvxkml.errors.InfeasibleError` when an uncertified answer carries a
        certificate of infeasibility.  Default: nothing to test."""

    def unconverged_status(self, sol, res) -> str:
        """The status of an uncertified answer: the iteration limit, or the solver's own
        rule met without the certificate."""
        from ..solution import NOT_CONVERGED

        if res.extra.get("stopped"):
            return CALLBACK_STOP
        return "max_iter reached" if res.code == NOT_CONVERGED else "not certified"

    def unconverged_message(self, sol, res, spec, gap_tol: float, viol_tol: float) -> str:
        """The one line of the ConvergenceWarning of an uncertified answer."""
        cert = self.certificate(sol.objective, sol.dual_value, sol.violations, rtol=gap_tol)
        rel, viol = cert["relative_gap"], cert["relative_violation"]
        return (
            f"{type(self).__name__}.solve ({spec.name}, {sol.status}) is not certified after {sol.n_iter} "
            f"iteration(s): relative gap {'n/a' if rel is None else f'{rel:.3g}'} (allowed {gap_tol:.3g}), "
            f"relative violation {viol:.3g} (allowed {viol_tol:.3g}). Raise max_iter or tol, or check "
            "the solver with cvxkml.testing.validate_answer."
        )
