"""The LMNN run in the coordinates it is given: a check at iteration 0, the smoothed phase,
then PDHG blocks each followed by a full check (certificate, restart, dual and primal
recovery), the stall rule and the exact finish."""

from __future__ import annotations

import time

import numpy as np

from ..._config import WorkBudget
from ...formulas.lmnn import (
    STALL_ITER,
    STALLED,
    LMNNTriplets,
    laplacian_quadratic,
    lmnn_dual_value,
    lmnn_objective,
    pair_weights,
)
from ...solution import CALLBACK_STOP
from .._lmnn_exact import exact_finish as _exact_finish
from ..result import FastResult, Status
from .kernels import _psd_project, _steps
from .ops import _operator_norm, _Ops, _preconditioner, _working_set
from .recovery import _recover_dual
from .smooth import _SMOOTH_BARRIER_MU, _SMOOTH_MUS, _smooth_stages, _smooth_widths

_THETA = 0.2  # smoothing of the primal weight update


_POLISH_SETTLED = 1e-3  # dual recovery only once F changes by less than this per check


#: G(α) eigenvalues at most these times its largest span the candidate faces of :func:`_face_primal`
_FACE_RTOLS = (1e-6, 1e-4, 1e-3)


_FACE_MAX_ITER = 3000  # iterations of one face solve (a few dimensions)


_FACE_SMALL = 20  # up to this r a face may be the whole space (a restart), beyond it r / 2


#: the exact finish is tried before the stall rule once the certified relative gap is below this
_EARLY_FINISH_GAP = 1e-2
#: ... and only when at most this many triplets start its working set (a few seconds of steps)
_EARLY_FINISH_TRIPLETS = 1500
#: ... and again only after this many iterations and once the gap has halved since the last try
_EARLY_FINISH_EVERY = 1000


def _face_primal(U, trip: LMNNTriplets, gamma, ops, X, alpha, tol):
    """A primal point from the multipliers α: eq. 18 solved on the face they point to.

    At an optimal pair (X̂*, α*), ⟨G(α*), X̂*⟩ = 0 with both PSD, so range(X̂*) lies in the
    null space of G(α*); and for any α ∈ [0, γ]^T with G(α) ⪰ 0, ⟨G(α), X̂⟩ <= F(X̂) − Σ α_t,
    so a near-optimal α leaves X̂* almost no weight on the eigenvectors of G(α) with large
    eigenvalues.  The face F_V = {V M Vᵀ : M ⪰ 0}, V an orthonormal basis of range(X̂) (the
    current best point, eigenvalues above 1e-9 of its largest) and of the eigenvectors of
    G(α) with eigenvalues at most ρ·λ_max(G(α)) (ρ in ``_FACE_RTOLS``), is a q-dimensional
    LMNN problem (features U V, the same triplets) that :func:`_lmnn_pdhg` solves in a
    few dimensions where the r-dimensional iteration crawls (a low-rank X̂* at a vertex where
    many triplets sit on their margin).  Nothing is assumed: the caller evaluates F of the
    returned point on the whole problem (a face point is a feasible point) and certifies it
    with its own bound.  Returns (F, X̂) of the best face point, (inf, None) when no face is small
    enough (q > r / 2).  Up to r = ``_FACE_SMALL`` the face may be the whole space: a restart of the smoothed phase from
    the best point."""
    r = U.shape[1]
    G = laplacian_quadratic(U, trip, pair_weights(trip, alpha, gamma))
    lam, V = np.linalg.eigh(G)
    lx, VX = np.linalg.eigh(0.5 * (X + X.T))
    top_x = float(lx[-1]) if lx.size else 0.0
    VXk = VX[:, lx > 1e-9 * top_x] if top_x > 0.0 else VX[:, :0]
    best_f, best_X, seen = np.inf, None, set()
    for rho in _FACE_RTOLS:
        q = int(np.sum(lam <= rho * max(float(lam[-1]), np.finfo(float).tiny)))
        if q == 0 or q in seen:
            continue
        seen.add(q)
        B = np.hstack([VXk, V[:, :q]])
        Q, R = np.linalg.qr(B)
        d = np.abs(np.diag(R))
        VF = np.ascontiguousarray(Q[:, d > 1e-8 * max(float(d.max()), np.finfo(float).tiny)])
        if VF.shape[1] > (r if r <= _FACE_SMALL else r // 2):
            break
        res = _lmnn_pdhg(
            np.ascontiguousarray(U @ VF),
            trip,
            gamma,
            VF.T @ X @ VF,
            alpha,
            tol=0.1 * tol,
            max_iter=_FACE_MAX_ITER,
            check_every=200,
            buffer=1.0,
            polish=True,
            seed=0,
            callback=None,
            smooth=True,
            stall_iter=STALL_ITER,
            face=False,  # no face solve inside a face solve
            exact=False,  # nor an exact finish
        )
        XF = VF @ res.matrix @ VF.T
        XF = 0.5 * (XF + XF.T)
        f = lmnn_objective(ops.distances(XF), trip, gamma)
        if f < best_f:
            best_f, best_X = f, XF
    return best_f, best_X


_STALL_SHRINK = 1e-3  # progress = the certified gap shrinks by more than this fraction


def lmnn_result(X, alpha, objective, dual_value, n_iter, status, elapsed, history, info) -> FastResult:
    """The solver result of an LMNN run (see :func:`lmnn_pdhg`, Returns)."""
    gap = (objective - dual_value) / max(1.0, abs(objective))
    return FastResult(
        matrix=X,
        lam=alpha,
        xi=np.zeros(0),
        sweeps=int(n_iter),
        stop_value=float(gap),
        code=int(Status.OK if status == "converged" else Status.NOT_CONVERGED),
        bad_index=-1,
        time=elapsed,
        extra={
            "solver": "pdhg-lmnn",
            "objective": float(objective),
            "dual_value": float(dual_value),
            "status": status,
            "history": history,
            **info,
        },
    )


class _Run:
    """The state of one :func:`_lmnn_pdhg` run: the iterate, the best primal point and the
    best certified bound so far, the check history and the bookkeeping of the dual recovery
    (the phases below read and update it)."""

    def __init__(self, U, trip, gamma, X, alpha, tol, polish, callback, face=False, exact=False, free=None):
        self.U, self.trip, self.gamma, self.tol, self.free = U, trip, gamma, tol, free
        self.polish, self.callback, self.face = polish, callback, face
        self.face_time, self.face_gain, self.face_key = 0.0, 0.0, None
        self.ops = _Ops(U, trip)
        self.X, self.alpha = X, alpha
        self.p = self.ops.distances(X)
        self.best_f, self.best_X = np.inf, X.copy()
        self.best_g, self.best_alpha = -np.inf, alpha.copy()
        self.history = []
        self.it = 0
        self.status, self.converged = "max_iter reached", False
        self.polish_wait, self.polish_backoff, self.polish_time = 0, 1, 0.0
        self.prev_f = np.inf
        self.smooth_iter, self.smooth_time = 0, 0.0
        self.exact, self.finish, self.finish_it, self.finish_gap = bool(exact), None, -_EARLY_FINISH_EVERY, np.inf

    def bound(self, alpha, f) -> float:
        return lmnn_dual_value(
            self.U, self.trip, alpha, self.gamma, objective_bound=min(f, self.best_f), free=self.free
        )

    def keep(self, f, X, g, alpha) -> None:
        if f < self.best_f:
            self.best_f, self.best_X = f, X.copy()
        if g > self.best_g:
            self.best_g, self.best_alpha = g, alpha.copy()

    def recover(self, least_squares: bool = True) -> None:
        tp = time.perf_counter()
        self.best_g, self.best_alpha, f_z, Z = _recover_dual(
            self.U,
            self.trip,
            self.gamma,
            self.ops,
            self.best_X,
            self.best_f,
            self.best_g,
            self.best_alpha,
            self.tol,
            least_squares=least_squares,
            free=self.free,
        )
        if Z is not None:  # the barrier's central-path primal point, when it lowers F
            self.keep(f_z, Z, -np.inf, self.best_alpha)
        self.polish_time += time.perf_counter() - tp

    def open_gap(self) -> bool:
        return self.best_f - self.best_g > self.tol * max(1.0, abs(self.best_f))

    def recover_face(self) -> None:
        """The primal side of the recovery (:func:`_face_primal` from the best multipliers);
        when it lowers F, the best point moves there and the barrier recovery runs again at
        it (its kinks are those of the better point; the least-squares fallback waits for the
        next check, as run here too it costs more than it gains).  The PDHG iterate keeps its
        own path: moved to the face point it loses its progress."""
        key = (self.best_f, self.best_g)
        if key == self.face_key:  # the same point and multipliers: the same faces, no gain
            return
        self.face_key = key
        tp = time.perf_counter()
        f, X = _face_primal(self.U, self.trip, self.gamma, self.ops, self.best_X, self.best_alpha, self.tol)
        self.face_time += time.perf_counter() - tp
        if X is None or not f < self.best_f:
            return
        self.face_gain += self.best_f - f
        self.keep(f, X, -np.inf, self.best_alpha)
        if self.open_gap():  # the barrier at the better point's kinks (least squares: next check)
            self.recover(least_squares=False)

    def gap(self) -> float:
        return (self.best_f - self.best_g) / max(1.0, abs(self.best_f))

    def try_finish(self, max_start: int | None = None) -> bool:
        """The exact working-set finish (:func:`cvxkml.solvers._lmnn_exact.exact_finish`) from
        the best point; its point and multipliers each kept where better.  True when it closed
        the gap."""
        fin = _exact_finish(
            self.U,
            self.trip,
            self.gamma,
            self.ops.distances,
            self.best_X,
            self.best_f,
            self.best_g,
            self.tol,
            max_start,
            free=self.free,
        )
        if fin is not None:
            self.finish = fin
            self.keep(fin["objective"], fin["matrix"], fin["dual_value"], fin["alpha"])
            self.history.append((self.it, self.best_f, self.best_g, fin["working_triplets"]))
        self.finish_it, self.finish_gap = self.it, self.gap()
        if fin is None or self.open_gap():
            return False
        self.converged, self.status = True, "converged"
        return True

    def early_finish(self) -> bool:
        """The exact finish before the stall rule, where the PDHG closes a small gap slowly (on
        a whitened multi-scale fit about 7 % per 500 iterations, so the stall rule never fires):
        tried once the certified gap is below ``_EARLY_FINISH_GAP`` with at most
        ``_EARLY_FINISH_TRIPLETS`` triplets near the margin, again only ``_EARLY_FINISH_EVERY``
        iterations later and once the gap has halved.  True when it certified the run."""
        if not self.exact or self.converged or self.gap() > _EARLY_FINISH_GAP:
            return False
        if self.it - self.finish_it < _EARLY_FINISH_EVERY or self.gap() > 0.5 * self.finish_gap:
            return False
        return self.try_finish(_EARLY_FINISH_TRIPLETS)

    def report(self, f, g, n_work) -> bool:
        """Record the check and ask the callback; True when the run ends here (certified,
        stopped by the callback)."""
        if self.best_g > self.best_f:  # a later primal value shows the bound's round-off allowance failed
            self.best_g = self.bound(self.best_alpha, self.best_f)
        self.history.append((self.it, f, g, int(n_work)))
        scale = max(1.0, abs(self.best_f))
        stop = self.callback is not None and bool(
            self.callback(
                {
                    "iteration": int(self.it),
                    "objective": float(self.best_f),
                    "dual_value": float(self.best_g),
                    "gap": float((self.best_f - self.best_g) / scale),
                    "current_objective": float(f),
                    "working_triplets": int(n_work),
                }
            )
        )
        if self.best_f - self.best_g <= self.tol * scale:
            self.converged, self.status = True, "converged"
            return True
        if stop:
            self.status = CALLBACK_STOP
            return True
        return False


def _objective(run: _Run, p) -> float:
    f = lmnn_objective(p, run.trip, run.gamma)
    if not np.isfinite(f):
        raise FloatingPointError("LMNN iterates became non-finite")
    return f


def _pdhg_check(run: _Run, pd) -> bool:
    """The full pass every ``check_every`` PDHG iterations (and at iteration 0): F and g at
    the iterate, the restart from the averaged iterate when its gap is smaller, the dual
    recovery once F settles (after a recovery that does not certify, wait 1, 2, 4, … checks:
    O(log) recoveries per run), then :meth:`_Run.report`.  True when the run ends here."""
    f = _objective(run, run.p)
    g = run.bound(run.alpha, f)
    if pd.cnt > 0:  # restart from the averaged iterate when it is better
        Xa = pd.X_sum / pd.cnt
        aa = run.alpha.copy()
        aa[pd.work] = pd.a_sum[pd.work] / pd.cnt
        pa = run.ops.distances(Xa)
        fa = lmnn_objective(pa, run.trip, run.gamma)
        ga = run.bound(aa, min(fa, f))
        if fa - ga < f - g:
            run.X[:, :] = Xa
            run.alpha[:] = aa
            run.p[:] = pa
            f, g = fa, ga
    run.keep(f, run.X, g, run.alpha)
    settled = abs(run.prev_f - run.best_f) <= _POLISH_SETTLED * max(1.0, abs(run.best_f))
    run.prev_f = run.best_f
    open_gap = run.best_f - run.best_g > run.tol * max(1.0, abs(run.best_f))
    if run.polish_wait > 0:
        run.polish_wait -= 1
    elif run.polish and settled and open_gap:
        run.recover()
        if run.face and run.open_gap():
            run.recover_face()
        if run.best_f - run.best_g > run.tol * max(1.0, abs(run.best_f)):
            run.polish_wait, run.polish_backoff = run.polish_backoff, 2 * run.polish_backoff
    return run.report(f, g, pd.work.size)


def _smoothed_phase(run: _Run, max_iter: int, buffer: float) -> bool:
    """The smoothed quasi-Newton phase from the best point (:func:`_smooth_stages`), with a
    check after every width (the unsmoothed certificate, from μ <= ``_SMOOTH_BARRIER_MU`` the
    barrier recovery, the history and the callback); the PDHG continues from the best point
    and the last multipliers.  True when the run ends in this phase."""
    ts = time.perf_counter()
    gap0 = (run.best_f - run.best_g) / max(1.0, abs(run.best_f))
    mus = [m for m in _smooth_widths(run.tol) if m <= max(gap0, _SMOOTH_MUS[-1])]
    a_last = None
    finished = False
    stages = _smooth_stages(run.U, run.trip, run.gamma, run.best_X, mus, max_iter - run.it, buffer)
    for mu, Xs, a_s, nit, n_work in stages:
        run.it += nit
        run.smooth_iter += nit
        a_last = a_s
        f = _objective(run, run.ops.distances(Xs))
        # a way-point width's bound is evaluated only when it could certify: g(α) <= Σα (s <= 1,
        # the trace correction only lowers it), so F − Σα above the tolerance settles the check
        # without the eigenvalue test (NaN in the history)
        fb = min(f, run.best_f)
        hopeless = mu > _SMOOTH_BARRIER_MU and fb - float(a_s.sum()) > run.tol * max(1.0, abs(fb))
        g = np.nan if hopeless else run.bound(a_s, f)
        run.keep(f, Xs, g, a_s)
        if run.polish and mu <= _SMOOTH_BARRIER_MU and run.best_f - run.best_g > run.tol * max(1.0, abs(run.best_f)):
            run.recover(least_squares=False)
        if run.report(f, g, n_work) or run.early_finish() or run.it >= max_iter:
            finished = True
            break
    run.smooth_time = time.perf_counter() - ts
    if not finished:
        run.X[:, :] = run.best_X
        if a_last is not None:
            run.alpha[:] = a_last
        run.p = run.ops.distances(run.X)
        run.prev_f = run.best_f
    return finished


class _PDHG:
    """The PDHG phase's own state: steps, preconditioner, primal weight, restart point,
    working set and the running sums of the averaged iterate."""

    def __init__(self, run: _Run, buffer: float, seed: int):
        n, r = run.U.shape
        P, T = run.trip.n_pairs, run.trip.n_triplets
        self.buffer, self.seed = buffer, seed
        self.s = None  # the preconditioner and operator norm: when the PDHG first steps
        self.L = None
        self.eta = 0.0
        self.omega = 1.0
        self.w_base = np.ascontiguousarray((1.0 - run.gamma) * run.trip.target_weight)
        self.w = np.empty(P)
        self.OU = np.empty((n, r))
        self.p_new = run.p.copy()
        self.work, self.work_pairs = _working_set(run.p, run.trip, run.alpha, buffer)
        self.X_r, self.a_r = run.X.copy(), run.alpha.copy()
        self.X_sum = np.zeros_like(run.X)
        self.a_sum = np.zeros(T)
        self.cnt = 0
        self.budget = WorkBudget(start=4)

    def restart_point(self, run: _Run) -> None:
        self.X_r[:, :] = run.X
        self.a_r[:] = run.alpha

    def block(self, run: _Run, n_steps: int) -> None:
        """``n_steps`` PDHG iterations from the current point: the primal weight from the
        movement since the last restart (PDLP), the working set, then the Numba steps in
        calls of about 0.1 s (:class:`cvxkml._config.WorkBudget`; Ctrl-C between them, the
        state lives in the arrays)."""
        dX = float(np.linalg.norm(run.X - self.X_r))
        da = 0.0 if self.s is None else float(np.linalg.norm((run.alpha - self.a_r) / np.sqrt(self.s)))
        if dX > 1e-14 and da > 1e-14:
            self.omega = float(np.exp(_THETA * np.log(da / dX) + (1.0 - _THETA) * np.log(self.omega)))
        self.restart_point(run)
        self.work, self.work_pairs = _working_set(run.p, run.trip, run.alpha, self.buffer)
        if self.L is None:
            self.s = _preconditioner(run.U, run.trip)
            self.L = _operator_norm(run.ops, self.s, seed=self.seed) * 1.05
            if not self.L > 0:
                self.L = 1.0
            self.eta = 0.95 / self.L
        tau = self.eta / self.omega
        sig = self.eta * self.omega * self.s
        self.X_sum[:, :] = 0.0
        self.a_sum[:] = 0.0
        trip = run.trip
        done = 0
        while done < n_steps:
            k = min(self.budget.units, n_steps - done)
            tk = time.perf_counter()
            _steps(
                run.U,
                run.X,
                run.alpha,
                run.p,
                trip.pi,
                trip.pj,
                self.w_base,
                trip.tt,
                trip.ti,
                self.work,
                self.work_pairs,
                sig,
                tau,
                run.gamma,
                k,
                self.X_sum,
                self.a_sum,
                self.w,
                self.OU,
                self.p_new,
            )
            self.budget.update(k, time.perf_counter() - tk)
            done += k
        self.cnt = n_steps
        run.it += n_steps
        run.p = run.ops.distances(run.X)


def _lmnn_pdhg(
    U,
    trip,
    gamma,
    X0,
    alpha0,
    tol,
    max_iter,
    check_every,
    buffer,
    polish,
    seed,
    callback,
    smooth,
    stall_iter,
    face=True,
    exact=True,
    free=None,
) -> FastResult:
    """:func:`lmnn_pdhg` in the coordinates it is given (the parameters are its own): a
    check at iteration 0, the smoothed phase, then PDHG blocks of ``check_every``
    iterations each followed by a check, until certified, stopped, stalled or out of
    budget; a stalled run then gets the exact working-set finish
    (:func:`cvxkml.solvers._lmnn_exact.exact_finish`) when ``exact``; the reported bound is
    re-evaluated with the best primal value as F_up.  ``free`` (per triplet, optional): the
    triplets satisfied for free in the problem's own coordinates, whose multipliers every
    bound sets to 0 (``free`` of :func:`cvxkml.formulas.lmnn.lmnn_dual_value`)."""
    t0 = time.perf_counter()
    U = np.ascontiguousarray(U, dtype=np.float64)
    r = U.shape[1]
    X = np.eye(r) if X0 is None else np.array(X0, dtype=np.float64, order="C")
    X = np.ascontiguousarray(_psd_project(X))
    T = trip.n_triplets
    alpha = np.zeros(T) if alpha0 is None else np.clip(np.array(alpha0, dtype=np.float64), 0, gamma)
    run = _Run(U, trip, gamma, X, alpha, tol, polish, callback, face=face and polish, exact=exact, free=free)
    pd = _PDHG(run, buffer, seed)
    smooth_pending = bool(smooth)  # the smoothed phase runs after the check at the start
    stall_gap, stall_it = np.inf, 0  # the stall rule: the gap to beat and since when
    while True:
        if _pdhg_check(run, pd) or run.early_finish() or run.it >= max_iter:
            break
        if not smooth_pending:  # the stall rule (PDHG phase only)
            if run.best_f - run.best_g < (1.0 - _STALL_SHRINK) * stall_gap:
                stall_gap, stall_it = run.best_f - run.best_g, run.it
            elif stall_iter and run.it - stall_it >= stall_iter:
                run.status = STALLED
                break
        if smooth_pending:
            smooth_pending = False
            if _smoothed_phase(run, max_iter, buffer):
                break
            stall_gap, stall_it = run.best_f - run.best_g, run.it
            pd.restart_point(run)
        pd.block(run, int(min(check_every, max_iter - run.it)))
    if exact and run.status == STALLED and not run.converged:
        run.try_finish()  # its point and multipliers, each kept where better (inf / −inf when none)
    finish = run.finish
    # the reported bound with the best primal value as F_up (the tightest trace correction
    # of lmnn_dual_value, so never below the bound the stopping test used)
    best_g = lmnn_dual_value(U, trip, run.best_alpha, gamma, objective_bound=run.best_f, free=free)
    if free is not None:  # the multipliers the bound counted
        run.best_alpha = np.where(free, 0.0, run.best_alpha)
    info = {
        "operator_norm": pd.L,
        "primal_weight": pd.omega,
        "polish_time": run.polish_time,
        "face_time": run.face_time,
        "face_gain": run.face_gain,
        "smooth_iterations": int(run.smooth_iter),
        "smooth_time": run.smooth_time,
        "working_triplets": int(pd.work.size),
        "triplets": int(T),
    }
    if finish is not None:
        info["exact_finish"] = {k: finish[k] for k in ("rounds", "working_triplets", "steps", "time")}
    status = run.status if not run.converged else "converged"
    return lmnn_result(
        run.best_X, run.best_alpha, run.best_f, best_g, run.it, status, time.perf_counter() - t0, run.history, info
    )
