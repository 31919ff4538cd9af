"""One place that runs a CVXPY problem with a conic solver at high accuracy.

Every exact model of the library (the spectral core, KCR, LMNN / MKL, the Yeung β
problem) solves through :func:`solve_conic`, so the solver options, the accepted
statuses and the error messages are the same everywhere.

Ctrl-C.  SCS installs its own C-level SIGINT handler (process-wide) while it sets up and
while it iterates, and forgets a signal its set-up phase caught when the iterations start:
a SIGINT 0.3-1.1 s into an ITML reference solve was lost in 7 of 40 trials and the solve
ended "optimal" seconds later.  So the conic solve runs in a worker thread (the solvers
release the GIL) with SIGINT blocked in it and in the calling thread; the calling thread
waits for the signal itself with ``sigtimedwait`` in slices of 0.1 s (:func:`_interruptible`),
so no handler a solver installs ever sees it.  A SIGINT then acts as Python's SIGINT handler
says (by default :class:`KeyboardInterrupt` in the calling thread, within 0.1 s); the worker
is left to finish in the background (its result is dropped; it holds only the CVXPY problem
it was given, which :meth:`~cvxkml.declare.SpectralProblem.solve_reference` builds anew for
every call), and the declared problem stays reusable.  Where ``sigtimedwait`` does not exist
(Windows, macOS) the calling thread waits with ``join`` slices and relies on Python's own
handler.  Called from a thread other than the main one (signals go to the main thread only),
the solve runs inline.
"""

from __future__ import annotations

import signal
import threading
import time

import cvxpy as cp

from ..errors import InfeasibleError, InvalidInputError, SolverError

__all__ = ["solve_conic", "solve_conic_bound"]


def solve_conic(prob: cp.Problem, solver: str, *args, **kwargs) -> tuple[float, str, int]:
    """:func:`solve_conic_bound` without the bound: return (seconds, status, iterations);
    same parameters, same errors."""
    elapsed, status, iters, _ = solve_conic_bound(prob, solver, *args, _want_bound=False, **kwargs)
    return elapsed, status, iters


def solve_conic_bound(
    prob: cp.Problem,
    solver: str,
    eps: float | None = None,
    accept_inaccurate: bool = False,
    what: str = "exact model",
    infeasible_hint: str = "check the constraints.",
    scs_eps: float = 1e-9,
    scs_max_iters: int = 200_000,
    _want_bound: bool = True,
    time_limit: float | None = None,
    **opts,
) -> tuple[float, str, int, float]:
    """Solve ``prob`` with ``solver``; return (seconds, status, iterations, bound), where the
    bound is the conic solver's own lower bound on the optimum: its dual objective (Clarabel
    ``obj_val_dual``, SCS ``dobj``) plus CVXPY's constant offset (``prob.value`` minus the
    solver's primal objective); NaN for other solvers.  Used where no closed-form Lagrange
    dual exists (:meth:`SpectralProblem.extend`).

    Clarabel: gap and feasibility tolerances ``eps`` (default 1e-8); with
    ``accept_inaccurate`` also ``accept_unknown`` (InsufficientProgress returns the last
    iterate as ``optimal_inaccurate``).  SCS: ``eps_abs = eps_rel = eps`` (default
    ``scs_eps``), at most ``scs_max_iters`` iterations.  Other solvers get ``opts`` only;
    ``opts`` override the defaults.  ``time_limit`` (seconds, None: none): the solve is
    abandoned after that long with a :class:`SolverError` that says so (Clarabel and SCS are
    also given it as their own limit, so their worker stops by itself).

    Raises :class:`InfeasibleError` (message ends with ``infeasible_hint``) for an
    infeasible status and :class:`SolverError` for a solver failure or any other
    non-optimal status; ``optimal_inaccurate`` is accepted only with
    ``accept_inaccurate=True``.
    """
    if time_limit is not None:
        from .._validation import check_positive

        time_limit = check_positive(time_limit, "time_limit")
    return _run(
        prob,
        solver,
        eps,
        accept_inaccurate,
        what,
        infeasible_hint,
        scs_eps,
        scs_max_iters,
        _want_bound,
        opts,
        time_limit,
    )


class _TimeLimit(Exception):
    """The wait for a conic solve passed its time limit."""


def _options(solver, eps, accept_inaccurate, scs_eps, scs_max_iters, opts):
    if solver == "SCS":
        eps = scs_eps if eps is None else eps
        kw = dict(eps_abs=eps, eps_rel=eps, max_iters=scs_max_iters)
    elif solver == "CLARABEL":
        eps = 1e-8 if eps is None else eps
        kw = dict(tol_gap_abs=eps, tol_gap_rel=eps, tol_feas=eps)
        if accept_inaccurate:
            kw["accept_unknown"] = True
    else:
        kw = {}
    kw.update(opts)
    return kw


#: seconds between two looks at a pending Ctrl-C while a conic solve runs
_POLL = 0.1
#: SCS's status when its own SIGINT handler caught a Ctrl-C (SCS_SIGINT in scs/include/glbopts.h)
_SCS_SIGINT = -5


def _interruptible(func, time_limit: float | None = None):
    """``func()`` in a daemon worker thread, waited on in slices of :data:`_POLL` seconds, so
    that a SIGINT acts here within that time (see the module notes); the worker then
    finishes in the background and its result is dropped.  Its exception (or result) is
    passed on otherwise.  Outside the main thread ``func()`` runs inline.  After
    ``time_limit`` seconds the wait ends with :class:`_TimeLimit` (the worker is dropped)."""
    if threading.current_thread() is not threading.main_thread():
        return func()
    box = {}

    def work():
        try:
            box["value"] = func()
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc

    worker = threading.Thread(target=work, name="cvxkml-conic", daemon=True)
    start = time.monotonic()
    deadline = None if time_limit is None else start + time_limit

    def wait_slice():
        # a slice that grows with the solve (1 ms at first, 5 % of the time so far, at most
        # _POLL): a short solve is not held for a whole _POLL after it ends, and a Ctrl-C is
        # still seen within _POLL
        return min(_POLL, max(0.001, 0.05 * (time.monotonic() - start)))

    def overdue():
        return deadline is not None and time.monotonic() > deadline

    if not hasattr(signal, "sigtimedwait"):
        worker.start()
        while worker.is_alive():
            worker.join(wait_slice())
            if worker.is_alive() and overdue():
                raise _TimeLimit
    else:
        # the worker inherits the blocked mask, so a Ctrl-C stays pending for sigtimedwait
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            worker.start()
            while worker.is_alive():
                if signal.sigtimedwait({signal.SIGINT}, wait_slice()) is not None:
                    _on_sigint()
                if worker.is_alive() and overdue():
                    raise _TimeLimit
            if signal.SIGINT in signal.sigpending():  # came as the worker ended
                signal.sigtimedwait({signal.SIGINT}, 0)
                _on_sigint()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if "error" in box:
        raise box.pop("error")
    return box.get("value")


def _on_sigint() -> None:
    """Do what Python's SIGINT handler says for a SIGINT taken by ``sigtimedwait``: call it
    (the default raises KeyboardInterrupt), ignore it (SIG_IGN), or raise KeyboardInterrupt
    (SIG_DFL, whose default action would end the process)."""
    handler = signal.getsignal(signal.SIGINT)
    if handler == signal.SIG_IGN:
        return
    if callable(handler):
        handler(signal.SIGINT, None)
        return
    raise KeyboardInterrupt


def _run(
    prob,
    solver,
    eps,
    accept_inaccurate,
    what,
    infeasible_hint,
    scs_eps,
    scs_max_iters,
    want_bound,
    opts,
    time_limit=None,
):
    solver = solver.upper()
    kw = _options(solver, eps, accept_inaccurate, scs_eps, scs_max_iters, opts)
    if time_limit is not None and solver in ("CLARABEL", "SCS"):
        kw.setdefault("time_limit" if solver == "CLARABEL" else "time_limit_secs", float(time_limit))
    t0 = time.perf_counter()

    def solve():
        bound = float("nan")
        if solver == "SCS" or (want_bound and solver == "CLARABEL"):
            # the documented three-step route keeps the raw solver result: its dual objective,
            # and SCS's own status, which says when SCS's SIGINT handler took a Ctrl-C
            data, chain, inverse = prob.get_problem_data(solver, solver_opts=kw)
            raw = chain.solve_via_data(prob, data, warm_start=False, verbose=False, solver_opts=kw)
            if solver == "SCS" and raw.get("info", {}).get("status_val") == _SCS_SIGINT:
                raise KeyboardInterrupt  # the signal SCS swallowed, given back to the caller
            prob.unpack_results(raw, chain, inverse)
            if want_bound and prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
                primal, dual = (
                    (raw.obj_val, raw.obj_val_dual)
                    if solver == "CLARABEL"
                    else (raw["info"]["pobj"], raw["info"]["dobj"])
                )
                bound = float(dual) + (float(prob.value) - float(primal))
        else:
            prob.solve(solver=solver, **kw)
        return bound

    try:
        bound = _interruptible(solve, time_limit)
    except _TimeLimit:
        raise SolverError(
            f"{solver} did not finish the {what} within time_limit = {time_limit:g} s; raise time_limit, "
            "use solve() (the certified fast solver), or a smaller instance."
        ) from None
    except TypeError as exc:  # an option the solver does not know
        raise InvalidInputError(
            f"{solver} rejected the options {sorted(kw)} on the {what} ({exc}); pass only "
            f"options that {solver} accepts."
        ) from exc
    except cp.error.SolverError as exc:
        raise SolverError(
            f"{solver} failed on the {what} ({exc}). Try solver='SCS' or 'CLARABEL', "
            "accept_inaccurate=True, or rescale the data."
        ) from exc
    elapsed = time.perf_counter() - t0
    status = prob.status
    if time_limit is not None and elapsed >= time_limit and status != cp.OPTIMAL:
        raise SolverError(
            f"{solver} stopped the {what} at time_limit = {time_limit:g} s (status {status!r}); raise "
            "time_limit, use solve() (the certified fast solver), or a smaller instance."
        )
    if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        raise InfeasibleError(f"The {what} is infeasible ({solver}: {status}). {infeasible_hint}")
    if status != cp.OPTIMAL and not (accept_inaccurate and status == cp.OPTIMAL_INACCURATE):
        raise SolverError(
            f"{solver} returned status {status!r} on the {what}; try the other solver, a looser "
            "eps, or accept_inaccurate=True."
        )
    iters = getattr(prob.solver_stats, "num_iters", None) or 0
    return elapsed, status, int(iters), bound
