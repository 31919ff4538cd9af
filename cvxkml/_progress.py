"""Progress of a solve: one record per certificate check, logged on the ``cvxkml`` logger
and handed to the user's callback.

Shared by every :meth:`Problem.solve <cvxkml.declare.problem.Problem>` (``verbose=``) and
every estimator's ``fit`` (``verbose``, ``callback``), so that both print the same lines
and a callback sees the same record.
"""

from __future__ import annotations

import logging
import sys
from contextlib import contextmanager

import numpy as np

__all__ = ["LOGGER", "ProgressMonitor", "verbose_logging", "fmt"]

#: the logger of cvxkml (progress at INFO level when ``verbose`` > 0)
LOGGER = logging.getLogger("cvxkml")


def fmt(value) -> str:
    """A number for a progress line (6 significant digits; ``n/a`` for None)."""
    if value is None:
        return "n/a"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    return str(value)


class ProgressMonitor:
    """The ``callback`` threaded into a solver's ``solve(callback=...)``.

    At every check the solver reports (its certificate checks), it

    1. builds the progress record: the solver's dict plus ``estimator`` (the name given:
       an estimator's or a problem's class name), ``stage`` (1, 2, …: which solve, for
       fits that solve several problems, e.g. LMNNMKL's metric steps), ``iteration`` (the
       solver's iteration count), ``objective``, ``gap`` (certified relative gap or None)
       and ``violation`` (largest relative constraint violation or None);
    2. logs it to the ``cvxkml`` logger at INFO level when ``verbose`` > 0 (every
       ``verbose``-th check: verbose=1 logs every check, verbose=10 every tenth);
    3. calls the user's ``callback`` with the record; a truthy return stops the solve: the
       solver returns its last (best) iterate with ``status="stopped by callback"``, and
       every later check of the same fit (later stages) stops at once.
    """

    def __init__(self, name: str, verbose: int = 0, callback=None):
        self.name, self.verbose, self.callback = name, int(verbose), callback
        self.n_checks = 0
        self.stopped = False
        self.last = None
        self.stage = 1

    def __call__(self, info) -> bool:
        info = dict(info) if isinstance(info, dict) else {"value": info}
        it = info.get("iteration", info.get("sweeps", info.get("n_iter")))
        gap = info.get("gap")
        viol = info.get("violation", info.get("max_relative_violation"))
        it = None if it is None else int(it)
        last_it = None if self.last is None else self.last["iteration"]
        if it is not None and last_it is not None and it <= last_it:
            self.stage += 1  # the count restarted: the fit's next solve
        record = {
            **info,
            "estimator": self.name,
            "stage": self.stage,
            "iteration": it,
            "objective": info.get("objective"),
            "gap": gap,
            "violation": viol,
        }
        self.last = record
        self.n_checks += 1
        if self.verbose > 0 and (self.n_checks - 1) % self.verbose == 0:
            LOGGER.info(
                "%s [solve %s] iteration %s: objective %s, certified gap %s, violation %s",
                self.name,
                self.stage,
                fmt(record["iteration"]),
                fmt(record["objective"]),
                fmt(gap),
                fmt(viol),
            )
        if self.stopped:
            return True
        if self.callback is not None and self.callback(record):
            self.stopped = True
            if self.verbose > 0:
                LOGGER.info("%s: stopped by the callback at iteration %s", self.name, fmt(record["iteration"]))
        return self.stopped

    def for_solver(self):
        """The callable to pass as ``solve(callback=...)`` (None when nobody listens)."""
        return self if (self.verbose > 0 or self.callback is not None) else None


@contextmanager
def verbose_logging(verbose: int):
    """With verbose > 0, make the INFO records of the ``cvxkml`` logger visible for the
    duration of a fit or solve: its level is lowered to INFO when it is above, and when no
    handler is configured anywhere up the logger tree a temporary stderr handler is added
    (an application's own logging configuration is otherwise left to decide)."""
    if verbose <= 0:
        yield
        return
    old_level = LOGGER.level
    handler = None
    if LOGGER.getEffectiveLevel() > logging.INFO:
        LOGGER.setLevel(logging.INFO)
    if not LOGGER.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[cvxkml] %(message)s"))
        LOGGER.addHandler(handler)
    try:
        yield
    finally:
        LOGGER.setLevel(old_level)
        if handler is not None:
            LOGGER.removeHandler(handler)
