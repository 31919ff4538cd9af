"""LMNN on all triplets solved on an active set of impostors that a full scan refreshes
between solves (Weinberger & Saul §6)."""

from __future__ import annotations

import time

import numpy as np

from ..._config import blas_limit
from ...formulas.lmnn import (
    STALL_ITER,
    LMNNTriplets,
    from_pull_coordinates,
    psd_factor,
    pull_factor,
    pull_whitening,
    sorted_unique,
    to_pull_coordinates,
)
from ..result import FastResult
from .kernels import _psd_project
from .pdhg import _lmnn_pdhg, lmnn_result
from .scan import _keys, impostor_scan

#: inner tolerance of the active-set rounds before the last: their answers only choose the next
#: impostors, so the smoothed phase stops once the set's certified gap is within it (usually
#: after its inexact widths 1 and 0.3)
_LOOSE_TOL = 0.3


#: the tight solve starts once the *full* gap (full F against the set's bound) is within this
_FINAL_GAP = 0.1


#: new impostors per target entry after a tight solve: the set is nearly complete then, but an
#: entry whose target lies beyond hundreds of impostors would take a round per ``cap`` of them;
#: 1 000 bounds the scan's buffers
_TIGHT_CAP = 1000


def lmnn_active_set(
    U,
    codes,
    k: int,
    target_i,
    target_j,
    gamma: float,
    X0=None,
    tol: float = 1e-6,
    max_iter: int = 20_000,
    check_every: int = 200,
    buffer: float = 0.5,
    cap: int = 50,
    init_cap: int = 10,
    max_rounds: int = 50,
    polish: bool = True,
    blas_threads: int | str | None = "config",
    callback=None,
    smooth: bool = True,
    stall_iter: int | None = STALL_ITER,
    exact_finish: bool = True,
) -> FastResult:
    """LMNN (eq. 18) on all triplets, solved on an active set of impostors that a full scan
    refreshes between solves (Weinberger & Saul §6), so that the n·k·(n − n_c) triplets are
    never stored.

    Each round solves the problem restricted to the current set S (:func:`lmnn_pdhg`, the
    smoothed phase then PDHG, certified on S to ``tol``), then scans every triplet at the
    answer (:func:`impostor_scan`):  F(X̂) = F_S(X̂) + γ Σ_{t ∉ S} [z_t]_+ exactly, and the
    triplets outside S with z_t > −``buffer`` join S (at most ``cap`` per target entry per
    round).  The certificate is that of the full problem: the multipliers of S extended by
    zeros have the same G(α), so g_S(α) is a Lagrange lower bound on the full optimum, and the
    run converges when F(X̂) − g_S(α) <= tol · max(1, F(X̂)) with the full F.

    Parameters
    ----------
    U : ndarray (n, r)
        Orthonormal feature factor.
    codes : int array (n,)
        Class code of each point.
    k : int
        Target neighbours per point.
    target_i, target_j : int arrays (E,)
        The target entries (i, j), target_i sorted.
    gamma, X0, tol, max_iter, check_every, polish, smooth, stall_iter, exact_finish, blas_threads
        As :func:`lmnn_pdhg` (max_iter counts over all rounds).
    buffer : float, default 0.5
        Triplets with z > −buffer at a round's answer join the set.
    cap : int, default 50
        At most this many new impostors per target entry per round (after a tight solve at most
        max(``cap``, 1 000): the set is nearly complete then, and an entry with many violated
        impostors would otherwise take a round per ``cap`` of them).
    init_cap : int, default 10
        The first set also holds this many nearest impostors of every target entry.
    max_rounds : int, default 50
        Most scan-and-solve rounds.
    callback : callable or None
        Called at every check of every round, as :func:`lmnn_pdhg`'s (the values are those of
        the round's set; ``round`` is added); a truthy return stops the run.

    Returns
    -------
    FastResult
        As :func:`lmnn_pdhg`'s: ``extra["objective"]`` is the full F, ``extra["dual_value"]``
        the bound of the set's multipliers; ``lam`` lives on ``extra["triplets"]`` (the final
        set, an :class:`LMNNTriplets`); ``extra["rounds"]``, ``["scan_time"]``,
        ``["set_sizes"]``, ``["round_trace"]`` ((seconds, full F, bound) after each round).
    """
    with blas_limit(blas_threads):
        t0 = time.perf_counter()
        U = np.ascontiguousarray(U, dtype=np.float64)
        n, r = U.shape
        codes = np.asarray(codes, dtype=np.int64)
        target_i = np.asarray(target_i, dtype=np.int64)
        target_j = np.asarray(target_j, dtype=np.int64)
        X = _psd_project(np.ascontiguousarray(np.eye(r) if X0 is None else np.array(X0, dtype=np.float64)))
        white = pull_whitening(U, target_i, target_j, gamma)
        U_pull = U if white is None else np.ascontiguousarray(U @ white[0])
        ts = time.perf_counter()
        keys = _first_set(U @ psd_factor(X), codes, target_i, target_j, buffer, cap, init_cap)
        rs = _Rounds(scan_time=time.perf_counter() - ts)
        final = tol >= _LOOSE_TOL
        opts = (check_every, buffer, polish, callback, smooth, stall_iter, exact_finish)
        # the rounds hand each other the answer in the solver's coordinates (X̃): mapped back and
        # forth through W it would lose its O(1) part beside a huge one (pull_whitening)
        Xt = to_pull_coordinates(X, white)
        while True:
            rs.rounds += 1
            sub = LMNNTriplets.from_impostors(codes, k, target_i, target_j, keys // n, keys % n)
            rs.sizes.append(int(keys.size))
            skeys = _keys(keys // n, keys % n, n)  # the order of sub's triplets (= keys)
            res = _round_solve(U_pull, sub, gamma, Xt, rs, skeys, final, tol, max_iter, opts)
            Xt, L = res.matrix, pull_factor(res.matrix, white)
            rs.after_solve(res, skeys)
            per_entry = max(cap, _TIGHT_CAP) if final else cap
            z, fresh = _round_scan(U, L, codes, target_i, target_j, gamma, buffer, per_entry, keys, rs, res, t0)
            if rs.F_full - rs.g <= tol * max(1.0, abs(rs.F_full)):
                rs.status = "converged"
                break
            if res.extra["status"] != "converged":
                rs.status = res.extra["status"]
                break
            if fresh.size == 0:
                if final:  # nothing new to add, yet not certified: the set's own gap is the full one
                    rs.status = res.extra["status"]
                    break
                final = True  # the set is complete at this answer: solve it to tol
                continue
            # the tight solve next when no outside triplet has a positive hinge, when the full
            # gap is already within the loose tolerance (the loose rounds have done their part),
            # or when this round's loose solve did not move (its start was certified on the
            # grown set: another loose round would only scan again)
            final = (
                (bool(np.max(z) <= 0.0) if z.size else True)
                or rs.F_full - rs.g <= _FINAL_GAP * max(1.0, abs(rs.F_full))
                or res.sweeps == 0
            )
            if rs.it >= max_iter:
                break
            if rs.rounds >= max_rounds:
                rs.status = "max rounds reached"
                break
            keys = sorted_unique(keys, fresh)
        X = from_pull_coordinates(Xt, white)
        return _active_set_result(X, L if white is not None else None, res, sub, keys, n, rs, t0)


def _round_solve(U_pull, sub, gamma, X_pull, rs, skeys, final, tol, max_iter, opts) -> FastResult:
    """One round's solve on the set ``sub`` (:func:`_lmnn_pdhg`, in the pull coordinates):
    a loose inner tolerance while the set still grows (its answer only chooses the next
    impostors), the asked one once the last scan found no triplet outside the set with a
    positive hinge; the exact finish on the last set only."""
    check_every, buffer, polish, callback, smooth, stall_iter, exact_finish = opts
    return _lmnn_pdhg(
        U_pull,
        sub,
        gamma,
        X_pull,
        rs.start_alpha(skeys),
        tol if final else max(tol, _LOOSE_TOL),
        max(max_iter - rs.it, 0),
        check_every,
        buffer,
        polish,
        0,
        rs.callback(callback),
        smooth,
        stall_iter,
        exact=final and exact_finish,
    )


def _round_scan(U, L, codes, target_i, target_j, gamma, buffer, per_entry, keys, rs, res, t0):
    """The full scan at a round's answer X̂ = L Lᵀ (:func:`impostor_scan`): the full F and the
    set's bound recorded in ``rs``; returns the hinge arguments of the triplets found outside the
    set and their sorted keys."""
    n = U.shape[0]
    ts = time.perf_counter()
    W = U @ L
    e, l, z, hinge, _ = impostor_scan(W, codes, target_i, target_j, buffer, per_entry, known=keys)
    rs.scan_time += time.perf_counter() - ts
    fresh = sorted_unique(_keys(e, l, n))
    Dt = W[target_i] - W[target_j]
    rs.F_full = (1.0 - gamma) * float(np.einsum("ij,ij->", Dt, Dt)) + gamma * hinge
    rs.g = res.extra["dual_value"]
    rs.trace.append((time.perf_counter() - t0, float(rs.F_full), float(rs.g)))
    return z, fresh


def _active_set_result(X, L, res, sub, keys, n, rs, t0) -> FastResult:
    """The result of :func:`lmnn_active_set` (the full F, the last set's bound and multipliers;
    ``factor`` L of X̂ when the solve was whitened)."""
    info = {
        **rs.info_last,
        "triplets": sub,
        "set_entries": keys // n,
        "set_impostors": keys % n,
        "rounds": rs.rounds,
        "scan_time": rs.scan_time,
        "smooth_time": rs.smooth_time,
        "polish_time": rs.polish_time,
        "set_sizes": rs.sizes,
        "round_trace": rs.trace,
        "set_objective": float(res.extra["objective"]),
    }
    if L is not None:
        info["factor"] = L
    return lmnn_result(X, res.lam, rs.F_full, rs.g, rs.it, rs.status, time.perf_counter() - t0, rs.history, info)


def _first_set(W0, codes, target_i, target_j, buffer, cap, init_cap) -> np.ndarray:
    """The keys of the first impostor set at the start (learned coordinates W0): the triplets
    near their margin and the ``init_cap`` nearest impostors of every target entry (the
    start is usually far too wide a metric: with the near-margin triplets alone the first
    answer collapses and the next scan finds most triplets violated)."""
    n = W0.shape[0]
    e, l, _, _, _ = impostor_scan(W0, codes, target_i, target_j, buffer, cap)
    if init_cap:
        e2, l2, _, _, _ = impostor_scan(W0, codes, target_i, target_j, np.inf, init_cap)
        e, l = np.concatenate([e, e2]), np.concatenate([l, l2])
    return sorted_unique(_keys(e, l, n))


class _Rounds:
    """The bookkeeping of :func:`lmnn_active_set`'s rounds: iterations, history, the last
    set's multipliers (the next round's warm start), times, the full F and the bound."""

    def __init__(self, scan_time: float):
        self.scan_time, self.smooth_time, self.polish_time = scan_time, 0.0, 0.0
        self.it, self.rounds = 0, 0
        self.history, self.sizes, self.trace = [], [], []
        self.alpha_keys, self.alpha_vals = np.zeros(0, np.int64), np.zeros(0)
        self.info_last = {}
        self.status = "max_iter reached"
        self.F_full = self.g = np.inf

    def start_alpha(self, skeys) -> np.ndarray:
        """The last round's multipliers on this round's set (0 on the new triplets)."""
        a0 = np.zeros(skeys.size)
        if self.alpha_keys.size:
            pos = np.searchsorted(skeys, self.alpha_keys)
            ok = (pos < skeys.size) & (skeys[np.minimum(pos, skeys.size - 1)] == self.alpha_keys)
            a0[pos[ok]] = self.alpha_vals[ok]
        return a0

    def callback(self, callback):
        """The round's callback: the user's, with ``round`` and the run's iteration count."""
        rnd, it = self.rounds, self.it

        def cb(d):
            return False if callback is None else callback(dict(d, round=rnd, iteration=d["iteration"] + it))

        return cb

    def after_solve(self, res: FastResult, skeys) -> None:
        self.it += res.sweeps
        self.history += [(h[0] + self.it - res.sweeps,) + tuple(h[1:]) for h in res.extra["history"]]
        self.alpha_keys, self.alpha_vals = skeys, res.lam
        self.info_last = {
            key: v for key, v in res.extra.items() if key not in ("objective", "dual_value", "status", "history")
        }
        self.smooth_time += res.extra.get("smooth_time", 0.0)
        self.polish_time += res.extra.get("polish_time", 0.0)
