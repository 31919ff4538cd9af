"""One place that runs a CVXPY problem with a conic solver at high accuracy.

Every exact model of the library (the spectral core, KCR, LMNN / MKL, the Yeung β
problem) solves through :func:`solve_conic`, so the solver options, the accepted
statuses and the error messages are the same everywhere.

Ctrl-C.  SCS installs its own C-level SIGINT handler (process-wide) while it sets up and
while it iterates, and forgets a signal its set-up phase caught when the iterations start:
a SIGINT early in an ITML reference solve could be lost and the solve end "optimal" seconds
later.  So the conic solve runs in a worker thread (the solvers release the GIL) with SIGINT
blocked in it and in the calling thread; the calling thread waits for the signal itself with
``sigtimedwait`` in slices of 0.1 s (:func:`_interruptible`), so no handler a solver installs
ever sees it.  A SIGINT then acts as Python's SIGINT handler says (by default
:class:`KeyboardInterrupt` in the calling thread, within 0.1 s).  Where ``sigtimedwait`` does
not exist (Windows, macOS) the calling thread waits with ``join`` slices and relies on
Python's own handler.  Called from a thread other than the main one (signals go to the main
thread only), the solve runs inline.

Stopping the worker.  A thread cannot be killed, and a worker left running is worse than a
busy core: while SCS iterates its handler stays installed, so the next Ctrl-C, even during a
later fast solve, reaches SCS instead of Python and is lost.  So when the wait ends early
(Ctrl-C, ``time_limit``) the worker is asked to stop in the way its current phase allows
(:class:`_Job`): in CVXPY's compilation (Python) an asynchronous :class:`KeyboardInterrupt`;
in SCS its own handler is run (:class:`_SigintAction`), which sets the flag SCS looks at every
iteration; in Clarabel a termination callback (:func:`_clarabel_via_data`) reads the cancel
flag.  The calling thread gives the worker a moment to end before its exception goes on and
puts Python's handler back at the C level if a solver's is still installed; a worker still
busy after that (SCS's set-up phase does not look at its flag, and clears it when its
iterations start) is nudged by a reaper thread until it ends, and while it runs the saved
SIGINT action is put back wherever SCS's handler shows up.  A new solve first gives such a
worker the same moment to end.  The worker's result is dropped; it holds only the CVXPY
problem it was given, which :meth:`~cvxkml.declare.SpectralProblem.solve_reference` builds
anew for every call, and the declared problem stays reusable.  Other solvers are stopped only
in their Python part.
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
    stopped after that long with a :class:`SolverError` that says so (its worker is stopped as
    after a Ctrl-C, see the module notes; Clarabel and SCS are also given it as their own
    limit).

    Raises :class:`InfeasibleError` (message ends with ``infeasible_hint``) for an
    infeasible status and :class:`SolverError` for a solver failure or any other
    non-optimal status; ``optimal_inaccurate`` is accepted only with
    ``accept_inaccurate=True``.
    """
    if time_limit is not None:
        from .._validation import check_positive

        time_limit = check_positive(time_limit, "time_limit")
    solver = solver.upper()
    kw = _options(solver, eps, accept_inaccurate, scs_eps, scs_max_iters, opts)
    if time_limit is not None and solver in ("CLARABEL", "SCS"):
        kw.setdefault("time_limit" if solver == "CLARABEL" else "time_limit_secs", float(time_limit))
    t0 = time.perf_counter()
    job = _Job()

    def solve():
        bound = float("nan")
        if solver in ("SCS", "CLARABEL"):
            # the documented three-step route keeps the raw solver result: its dual objective,
            # and SCS's own status, which says when SCS's SIGINT handler took a Ctrl-C; and
            # Clarabel gets a termination callback, so an interrupted solve stops
            data, chain, inverse = prob.get_problem_data(solver, solver_opts=kw)
            job.enter_solver()
            if solver == "CLARABEL":
                raw = _clarabel_via_data(prob, chain, data, kw, job.cancel)
            else:
                raw = chain.solve_via_data(prob, data, warm_start=False, verbose=False, solver_opts=kw)
            if job.cancel.is_set() or (solver == "SCS" and raw.get("info", {}).get("status_val") == _SCS_SIGINT):
                raise KeyboardInterrupt  # stopped here, or the signal SCS swallowed, given back
            prob.unpack_results(raw, chain, inverse)
            if _want_bound and prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
                primal, dual = (
                    (raw.obj_val, raw.obj_val_dual)
                    if solver == "CLARABEL"
                    else (raw["info"]["pobj"], raw["info"]["dobj"])
                )
                bound = float(dual) + (float(prob.value) - float(primal))
        else:
            job.enter_solver()
            prob.solve(solver=solver, **kw)
        return bound

    try:
        bound = _interruptible(solve, time_limit, job)
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
#: seconds the waiting thread gives an interrupted solve to stop before it raises anyway
_STOP_WAIT = 0.5
#: seconds between two requests to stop, sent to a solve that outlived that wait
_NUDGE = 0.02


class _Job:
    """What the waiting thread and a conic solve's worker share: a cancel flag, and whether
    the worker has entered the solver's compiled code.

    Until it has, the worker runs Python (CVXPY's compilation), which an asynchronous
    :class:`KeyboardInterrupt` stops; from then on only the solver's own ways of stopping
    work (SCS's interrupt flag, Clarabel's termination callback), and an asynchronous
    exception would only land after the solver returned, in the middle of reading its result.
    """

    __slots__ = ("cancel", "lock", "in_solver")

    def __init__(self):
        self.cancel = threading.Event()
        self.lock = threading.Lock()
        self.in_solver = False

    def enter_solver(self) -> None:
        """Called by the worker just before it calls a solver: raise :class:`KeyboardInterrupt`
        if the solve was cancelled meanwhile, else mark that no asynchronous exception may be
        sent to it any more."""
        with self.lock:
            if self.cancel.is_set():
                raise KeyboardInterrupt
            self.in_solver = True

    def stop(self, worker: threading.Thread) -> None:
        """Cancel the solve from the waiting thread; a worker still in Python code gets a
        :class:`KeyboardInterrupt` at its next bytecode."""
        with self.lock:
            self.cancel.set()
            if not self.in_solver:
                self.in_solver = True  # one asynchronous exception at most
                _raise_in(worker, KeyboardInterrupt)


def _raise_in(thread: threading.Thread, exc_type) -> None:
    """Raise ``exc_type`` in ``thread`` at its next Python bytecode (CPython's
    ``PyThreadState_SetAsyncExc``); nothing where that API does not exist."""
    try:
        import ctypes

        set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (ImportError, AttributeError):
        return
    if thread.ident is not None:
        set_async_exc(ctypes.c_ulong(thread.ident), ctypes.py_object(exc_type))


class _SigintAction:
    """The process's C-level SIGINT action, read and written through ``sigaction`` (ctypes).

    SCS installs a C handler of its own with ``sigaction`` while it sets up and while it
    iterates, and puts back the action it found when it ends.  A solve that has been
    interrupted here must be stopped (SCS stops at its next iteration once its handler has
    run) and must not keep that handler installed, or the next Ctrl-C, during any later solve,
    goes to SCS instead of Python.  :attr:`available` is False where ``sigaction`` or
    ``dladdr`` cannot be reached (Windows); then nothing is read, nudged or written.

    The action is kept as the raw bytes of ``struct sigaction`` (a buffer larger than the
    struct on every platform), so only its first member, the handler, is interpreted: the
    handler belongs to SCS when ``dladdr`` places it in an SCS extension module.
    """

    SIZE = 512

    def __init__(self):
        self.available = False
        self._scs_address = self._scs_handler = None  # SCS's handler, once seen installed
        self._not_scs = set()  # handler addresses dladdr placed elsewhere
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            self._sigaction = libc.sigaction
            self._dladdr = libc.dladdr
        except Exception:  # no ctypes, no C library by that name, no sigaction or dladdr
            return

        class DlInfo(ctypes.Structure):
            _fields_ = [
                ("dli_fname", ctypes.c_char_p),
                ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p),
                ("dli_saddr", ctypes.c_void_p),
            ]

        self._ctypes, self._DlInfo = ctypes, DlInfo
        self._sigaction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self._sigaction.restype = ctypes.c_int
        self._dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
        self._dladdr.restype = ctypes.c_int
        self.available = True

    def read(self) -> bytes | None:
        """The current action, or None."""
        if not self.available:
            return None
        buf = self._ctypes.create_string_buffer(self.SIZE)
        if self._sigaction(signal.SIGINT, None, buf) != 0:
            return None
        return buf.raw

    def write(self, action: bytes) -> None:
        """Install ``action`` (bytes :meth:`read` returned)."""
        if self.available:
            self._sigaction(signal.SIGINT, self._ctypes.create_string_buffer(action, self.SIZE), None)

    def handler(self, action: bytes | None) -> int | None:
        """The handler's address in ``action`` (0 for SIG_DFL, 1 for SIG_IGN)."""
        if action is None:
            return None
        return self._ctypes.c_void_p.from_buffer_copy(action).value or 0

    def scs_installed(self) -> bool:
        """Whether the handler installed now is SCS's; the first time it is seen, it is kept
        for :meth:`nudge_scs`."""
        address = self.handler(self.read())
        if not address or address == 1:  # none (SIG_DFL) or SIG_IGN
            return False
        if self._scs_address is not None:
            return address == self._scs_address
        if address in self._not_scs:
            return False
        info = self._DlInfo()
        if self._dladdr(address, self._ctypes.byref(info)) and info.dli_fname:
            name = info.dli_fname.decode(errors="replace").rsplit("/", 1)[-1].lower()
            if "scs" in name:
                self._scs_address = address
                self._scs_handler = self._ctypes.CFUNCTYPE(None, self._ctypes.c_int)(address)
                return True
        self._not_scs.add(address)
        return False

    def nudge_scs(self) -> None:
        """Run SCS's SIGINT handler (as a Ctrl-C would): it only sets SCS's interrupt flag,
        which every SCS solve running now sees at its next iteration.  SCS clears the flag when
        an iteration phase starts, so an abandoned solve is nudged again until it ends."""
        if self.available:
            self.scs_installed()
            if self._scs_handler is not None:
                self._scs_handler(signal.SIGINT)


_ACTION = _SigintAction()
#: guards the bookkeeping below
_LOCK = threading.Lock()
#: workers of interrupted solves that have not ended yet
_STRAYS: list[threading.Thread] = []
#: conic solves running now that were not interrupted (an SCS nudge would stop them too)
_LIVE = 0
#: the thread that nudges strays until they end, while one is needed
_REAPER: threading.Thread | None = None
#: the C-level SIGINT action before SCS's handler was seen (what a reaper puts back)
_SAVED_ACTION: bytes | None = None


def _begin() -> None:
    global _LIVE, _SAVED_ACTION
    with _LOCK:
        _LIVE += 1
        action = _ACTION.read()
        if action is not None and not _ACTION.scs_installed():
            _SAVED_ACTION = action


def _end() -> None:
    global _LIVE
    with _LOCK:
        _LIVE -= 1


def _abandon(job: _Job, worker: threading.Thread) -> None:
    """Give up on a running worker: cancel it (:meth:`_Job.stop`), count it as a stray and
    no longer as a live solve, nudge SCS at once and start the reaper that nudges it until it
    ends; then wait up to :data:`_STOP_WAIT` for it."""
    global _LIVE, _REAPER
    with _LOCK:
        _LIVE -= 1
        _STRAYS.append(worker)
        if _REAPER is None:
            _REAPER = threading.Thread(target=_reap, name="cvxkml-conic-reaper", daemon=True)
            _REAPER.start()
    job.stop(worker)
    with _LOCK:
        if _LIVE == 0:
            _ACTION.nudge_scs()
    worker.join(_STOP_WAIT)


def _reap() -> None:
    """Until every stray has ended: while no other conic solve runs, nudge SCS (a stray in
    SCS's set-up phase forgets a nudge when its iterations start, so the nudges go on) and
    put back the saved SIGINT action wherever SCS's handler is installed, so that a Ctrl-C
    during a later fast solve reaches Python; SCS puts back the action it found when it ends."""
    global _REAPER
    while True:
        with _LOCK:
            _STRAYS[:] = [t for t in _STRAYS if t.is_alive()]
            quiet = _LIVE == 0
            if quiet and _ACTION.scs_installed():
                _ACTION.nudge_scs()
                if _SAVED_ACTION is not None:
                    _ACTION.write(_SAVED_ACTION)
            elif quiet and _STRAYS:
                _ACTION.nudge_scs()
            if not _STRAYS:
                _REAPER = None
                return
        time.sleep(_NUDGE)


def _settle(timeout: float) -> None:
    """Wait up to ``timeout`` seconds for the strays of earlier interrupted solves to end, so
    a new solve does not run beside them (nudges pause while it runs)."""
    deadline = time.monotonic() + timeout
    with _LOCK:
        strays = list(_STRAYS)
    for thread in strays:
        thread.join(max(0.0, deadline - time.monotonic()))


def _restore_handler(before: bytes | None) -> None:
    """In the main thread, after a solve: if the C-level SIGINT action is no longer the one
    the solve started with (a solver's handler is left installed), install Python's handler
    again (``signal.signal`` re-sets the C-level action to what Python's handler says)."""
    if before is None or threading.current_thread() is not threading.main_thread():
        return
    now = _ACTION.read()
    if now is None or _ACTION.handler(now) == _ACTION.handler(before):
        return
    handler = signal.getsignal(signal.SIGINT)
    if handler is not None:
        signal.signal(signal.SIGINT, handler)


def _interruptible(func, time_limit: float | None = None, job: _Job | None = None):
    """``func()`` in a daemon worker thread, waited on in slices of :data:`_POLL` seconds, so
    that a SIGINT acts here within that time (see the module notes).  Its exception (or
    result) is passed on.  Outside the main thread ``func()`` runs inline.  After
    ``time_limit`` seconds the wait ends with :class:`_TimeLimit`.

    Whatever ends the wait early (Ctrl-C, the time limit) also stops the worker: ``job`` (the
    one ``func`` looks at, see :class:`_Job`) is cancelled, SCS is nudged, and the worker is
    given :data:`_STOP_WAIT` seconds to end before the exception goes on (a reaper thread
    keeps nudging it if it has not); the C-level SIGINT action the solve started with is back
    in place by then.  A new call first gives the strays of earlier ones that long to end."""
    job = _Job() if job is None else job
    if threading.current_thread() is not threading.main_thread():
        _begin()
        try:
            return func()
        finally:
            _end()
    _settle(_STOP_WAIT)
    box = {}

    def work():
        try:
            try:
                box["value"] = func()
            except BaseException as exc:  # handed to the waiting thread
                box["error"] = exc
            finally:
                with job.lock:
                    job.in_solver = True  # no asynchronous exception after func
        except BaseException:  # an asynchronous stop that landed after func: dropped
            pass

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

    _begin()
    before = _ACTION.read()
    abandoned = False
    # the worker inherits the blocked mask, so a Ctrl-C stays pending for sigtimedwait
    masked = hasattr(signal, "sigtimedwait")
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if masked else None
    try:
        worker.start()
        while worker.is_alive():
            if not masked:
                worker.join(wait_slice())
            elif signal.sigtimedwait({signal.SIGINT}, wait_slice()) is not None:
                _on_sigint()
            if worker.is_alive() and overdue():
                raise _TimeLimit
        if masked and signal.SIGINT in signal.sigpending():  # came as the worker ended
            signal.sigtimedwait({signal.SIGINT}, 0)
            _on_sigint()
    except BaseException:
        if worker.is_alive():
            abandoned = True
            _abandon(job, worker)
        raise
    finally:
        if not abandoned:
            _end()
        _restore_handler(before)
        if masked:
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


def _clarabel_via_data(prob, chain, data, kw, cancel: threading.Event):
    """CVXPY's ``chain.solve_via_data`` for Clarabel, with a termination callback that stops
    the solve at its next iteration once ``cancel`` is set (CVXPY builds the Clarabel solver
    and solves it in one call, with no way to reach it in between).  The solver is built from
    the same data, cones and settings as CVXPY's own interface builds it; where this Clarabel
    or CVXPY lacks what that takes, CVXPY's route runs instead (then not stoppable)."""
    try:
        import clarabel
        import scipy.sparse as sp
        from cvxpy import settings as s
        from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import dims_to_solver_cones
        from cvxpy.reductions.solvers.conic_solvers.conic_solver import ConicSolver

        parse = chain.solver.parse_solver_opts
        stoppable = hasattr(clarabel.DefaultSolver, "set_termination_callback")
    except (ImportError, AttributeError):
        stoppable = False
    if not stoppable:
        return chain.solve_via_data(prob, data, warm_start=False, verbose=False, solver_opts=kw)
    q = data[s.C]
    P = data[s.P] if s.P in data else sp.csc_array((q.size, q.size))
    solver = clarabel.DefaultSolver(
        sp.triu(P).tocsc(), q, data[s.A], data[s.B], dims_to_solver_cones(data[ConicSolver.DIMS]), parse(False, kw)
    )
    solver.set_termination_callback(lambda info: cancel.is_set())
    return solver.solve()
