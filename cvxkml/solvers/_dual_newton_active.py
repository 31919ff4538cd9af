"""The active-set outer loop of the generic dual solver (:mod:`cvxkml.solvers.dual_newton`).

At a hinge optimum most multipliers sit on a bound of the box, and when the dual Hessian is
nearly singular on the free set (m close to r(r + 1)/2, or flat pieces of f*) the projected
Newton iteration on the whole box moves correctly bound multipliers off their bounds and
takes many iterations to put them back.  The working set W holds multipliers on their
bounds: the Newton iteration runs on the box with W's intervals collapsed to the bound (a box
problem again, so the projected Newton machinery is unchanged), a free multiplier that
reaches a bound joins W, and once the subproblem is solved to modest accuracy, W is updated:
its multipliers whose gradient points into the box are released — those whose release
promises the most ascent first — and those on a bound with the gradient pointing out stay.

Every iterate is a point of the full box, so the full problem's certificate, computed at
every iteration, stays the stopping rule; the subproblem's own certificate (the same formula
on the collapsed box: a multiplier of W contributes nothing to its gap) only decides when to
update W.  The share of W released adapts to the subproblems: one solved in a few iterations
means more can be released at once (large free sets are cheap to solve when the Hessian on
them is well conditioned), one that needs many means fewer (the free set is churning)."""

from __future__ import annotations

import numpy as np

from ._dual_newton_hessian import divided_differences, hessian_diagonal

__all__ = ["WorkingSet"]


class WorkingSet:
    """The multipliers held on their bounds and the box the Newton iteration sees.

    Parameters
    ----------
    lower, upper : (m,) arrays
        The full dual box.
    movable : (m,) bool array
        The multipliers that may be held (a finite bound, no slack conjugate on them).
    kappa : float
        W is updated once the subproblem's certificate is at most ``kappa`` times the full
        one (the rest of the full gap is then W's) ...
    inner_max : int
        ... or after this many iterations on the same W.
    share : float
        Released at an update: the multipliers of W pointing into the box whose predicted
        ascent (a coordinate Newton step clipped to the box) is at least ``share`` times the
        largest.  Divided by 4 after a subproblem solved in at most ``quick`` iterations,
        multiplied by 4 (up to 1/2) after one that took at least ``slow``.
    """

    def __init__(self, lower, upper, movable, kappa=0.25, inner_max=30, share=0.01, quick=4, slow=12):
        self.lower, self.upper, self.movable = lower, upper, movable
        self.kappa, self.inner_max, self.share = float(kappa), int(inner_max), float(share)
        self.quick, self.slow = int(quick), int(slow)
        m = lower.shape[0]
        self.fixed = np.zeros(m, dtype=bool)
        self.was = np.zeros(m, dtype=bool)  # on a bound at the previous iteration
        self.lo, self.up = lower, upper
        self.inner = 0  # iterations on the current W
        self.updates = 0
        self.released = 0
        self.force = False  # update W at the next call
        self.stalls = 0

    def _hold(self, rows, lam):
        self.fixed = self.fixed | rows
        self.lo = np.where(rows, lam, self.lo)
        self.up = np.where(rows, lam, self.up)

    def box(self, ops, conj, st, quad, full_cert, sub_cert):
        """The box (lower, upper) of the next Newton iteration at the state ``st``; W is
        updated first when the subproblem is solved well enough (its certificate
        ``sub_cert`` against the full one, ``full_cert``) or after ``inner_max`` iterations
        on it, and at the first call."""
        lam, grad = st.lam, st.grad
        at_lo = np.isfinite(self.lower) & (lam <= self.lower)
        at_up = np.isfinite(self.upper) & (lam >= self.upper)
        was, self.was = self.was, at_lo | at_up
        self.inner += 1
        if self.updates and not self.force and sub_cert > self.kappa * full_cert and self.inner <= self.inner_max:
            hit = self.movable & ~self.fixed & self.was & ~was  # free ones that reached a bound
            if np.any(hit):
                self._hold(hit, lam)
            return self.lo, self.up
        if self.updates:
            if self.inner <= self.quick:
                self.share = max(self.share / 4.0, 1e-4)
            elif self.inner >= self.slow:
                self.share = min(self.share * 4.0, 0.5)
        out = self.movable & ((at_lo & (grad <= 0)) | (at_up & (grad >= 0)))
        into = self.movable & ((at_lo & (grad > 0)) | (at_up & (grad < 0)))
        cand = (self.fixed & into) if self.updates else into
        keep = np.zeros_like(cand)
        if np.any(cand):
            h = np.maximum(_diagonal(ops, conj, st, cand) + quad, 1e-300)
            room = np.where(grad > 0, self.upper - lam, lam - self.lower)
            ag = np.abs(grad)
            gain = np.where(cand, ag * np.minimum(ag / h, room), 0.0)
            keep = cand & (gain < self.share * float(np.max(gain)))
            self.released += int(np.count_nonzero(cand & ~keep))
        self.fixed = np.zeros_like(cand)
        self.lo, self.up = self.lower, self.upper
        self._hold(out | keep, lam)
        self.inner = 0
        self.updates += 1
        self.force = False
        return self.lo, self.up

    def stalled(self) -> bool:
        """No ascent on the subproblem: True (and W is updated at the next call) unless W
        was just updated or holds nothing, when the full problem has none either."""
        self.force = self.inner > 0 and bool(np.any(self.fixed))
        self.stalls += int(self.force)
        return self.force


def _diagonal(ops, conj, st, rows):
    """diag(−∇²g) of the multipliers ``rows`` without the separable part (0 elsewhere)."""
    x_p = np.asarray(conj.conj_hess_s(st.mu), dtype=float)
    return hessian_diagonal(ops, st, divided_differences(st.mu, st.x, x_p), rows)
