"""The contract every declared problem keeps, and the machinery it shares (written once).

Every class in :mod:`cvxkml.declare` that has an exact model is a :class:`Problem`:

* ``to_cvxpy()`` — the exact model, a DCP ``cvxpy.Problem``;
* ``objective(...)`` / ``violations(...)`` — NumPy evaluations at a primal point (the
  arguments are the family's primal variables, e.g. ``(M, xi)``, ``(Sigma, h)``, ``(A,)``);
* ``solve_reference(solver=None, eps=None, accept_inaccurate=False, **opts)`` — the exact
  model through a conic solver (:meth:`default_solver` picks it by size), returning a
  :class:`~cvxkml.solution.Solution` whose ``dual_value`` is a Lagrange lower bound built
  from the solver's duals (``gap`` = objective − dual_value), or whose
  ``info["no_certificate"]`` says why there is none;
* ``solve(tol=…, max_iter=…, callback=None, warm_start=None, …)`` — the family's fast
  algorithm; ``converged=True`` only when its certificate is within tolerance, otherwise
  ``converged=False`` and a :class:`~cvxkml.errors.ConvergenceWarning`.  ``callback``
  (when given) is called with a dict (``iteration``, ``objective``, ``gap``, … as the
  algorithm knows them) at each of the solver's certificate checks; a truthy return stops
  the solve (``status="stopped by callback"``, honestly unconverged unless certified).
  ``verbose=k`` (keyword, every ``solve``) logs every k-th check and a closing line on the
  ``cvxkml`` logger (:mod:`cvxkml._progress`, the same lines as an estimator's fit).

``optimal_inaccurate`` (Clarabel's "insufficient progress", SCS's iteration cap) is
accepted by default **when the answer's own certificate shows it is good**: relative
gap and relative violation at most :data:`INACCURATE_RTOL`; it is then returned with
``info["accepted_by_certificate"] = True``.  Otherwise it raises
:class:`~cvxkml.errors.SolverError` unless ``accept_inaccurate=True``.
"""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np

from .._progress import LOGGER, ProgressMonitor, fmt, verbose_logging
from .._validation import check_int
from ..errors import ConvergenceWarning, SolverError

__all__ = ["Problem", "INACCURATE_RTOL", "CALLBACK_STOP", "LARGE_FACTOR"]

#: relative certificate at which an ``optimal_inaccurate`` conic answer is accepted anyway
INACCURATE_RTOL = 1e-6
#: the status of a solve that its callback stopped
CALLBACK_STOP = "stopped by callback"
#: ``solve_reference`` refuses sizes above this multiple of the measured limit (unless
#: ``allow_large=True``): the exact models' cost grows like n⁴ … n⁶, so twice the 60-s size
#: means roughly 15 min … 1 h
LARGE_FACTOR = 2


def _library_name(cls) -> str:
    """The name of the nearest cvxkml class of ``cls`` (:func:`registry._library_class
    <cvxkml.declare.registry._library_class>`: a user's subclass of LogDet is LogDet's), or
    ``cls``'s own name when it derives from none but the base class ``Regularizer``."""
    from .registry import _library_class

    name = _library_class(cls).__name__
    return cls.__name__ if name == "Regularizer" else name


def _size_guarded(impl):
    """``impl`` (a ``solve_reference``) behind the size guard; nested calls (a subclass's
    ``solve_reference`` calling its parent's) are checked once, by the outermost."""

    @functools.wraps(impl)
    def solve_reference(self, *args, allow_large: bool = False, **kwargs):
        if self.__dict__.get("_in_solve_reference"):
            return impl(self, *args, **kwargs)
        if not allow_large:
            self._check_exact_size()
        self.__dict__["_in_solve_reference"] = True
        try:
            return impl(self, *args, **kwargs)
        finally:
            self.__dict__.pop("_in_solve_reference", None)

    solve_reference._size_guarded = True
    return solve_reference


def _with_progress(impl):
    """``impl`` (a ``solve``) with the keyword ``verbose`` every fast solve takes: with
    ``verbose`` = k > 0 every k-th certificate check is logged on the ``cvxkml`` logger
    (iteration, objective, certified gap, violation; :class:`cvxkml._progress.ProgressMonitor`,
    the same lines as an estimator's ``fit(verbose=...)``), the user's ``callback`` still
    called with the same record, and one closing line with the status.  Nested calls (a
    subclass's ``solve`` calling its parent's) are handled by the outermost."""
    sig = inspect.signature(impl)
    params = sig.parameters
    has_var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    takes_callback = "callback" in params or has_var_kw

    @functools.wraps(impl)
    def solve(self, *args, verbose=0, **kwargs):
        verbose = check_int(verbose, "verbose", minimum=0)
        if verbose == 0 or self.__dict__.get("_in_solve"):
            return impl(self, *args, **kwargs)
        name = type(self).__name__
        if takes_callback:
            bound = sig.bind_partial(self, *args, **kwargs)
            if "callback" in params:
                user = bound.arguments.get("callback")
                bound.arguments["callback"] = ProgressMonitor(name, verbose, user)
            else:
                extra = bound.arguments.setdefault(
                    next(p.name for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD), {}
                )
                extra["callback"] = ProgressMonitor(name, verbose, extra.get("callback"))
            args, kwargs = bound.args[1:], bound.kwargs
        self.__dict__["_in_solve"] = True
        try:
            with verbose_logging(verbose):
                sol = impl(self, *args, **kwargs)
                gap = getattr(sol, "gap", None)
                obj = getattr(sol, "objective", None)
                rel = None if gap is None or obj is None else gap / max(1.0, abs(obj))
                LOGGER.info(
                    "%s.solve: %s after %s iteration(s), objective %s, certified gap %s, max violation %s",
                    name,
                    getattr(sol, "status", "?"),
                    fmt(getattr(sol, "n_iter", None)),
                    fmt(obj),
                    fmt(rel),
                    fmt(getattr(sol, "max_violation", None)),
                )
            return sol
        finally:
            self.__dict__.pop("_in_solve", None)

    new = [p for p in params.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    new.append(inspect.Parameter("verbose", inspect.Parameter.KEYWORD_ONLY, default=0))
    new += [p for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    solve.__signature__ = sig.replace(parameters=new)
    solve._with_progress = True
    return solve


class Problem:
    """Base class of every declared problem (the contract of the module docstring).

    Exact-model size guard: every subclass's ``solve_reference`` takes ``allow_large=False``;
    when :meth:`exact_size` is more than :data:`LARGE_FACTOR` times the family's measured
    limit (:meth:`exact_limit`, from ``cvxkml bench exact-limits``) it raises
    :class:`~cvxkml.errors.SolverError` up front instead of starting a solve that would run
    for many minutes or exhaust the memory; ``allow_large=True`` solves anyway.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        impl = cls.__dict__.get("solve_reference")
        if impl is not None and not getattr(impl, "_size_guarded", False):
            cls.solve_reference = _size_guarded(impl)
        impl = getattr(cls, "solve", None)  # also a mixin's solve ahead in the MRO
        if impl is not None and not getattr(impl, "_with_progress", False):
            cls.solve = _with_progress(impl)

    #: the size at which :meth:`default_solver` switches from Clarabel to SCS: the side of the
    #: model's largest PSD block (:meth:`exact_size`) above which Clarabel's memory grows too fast
    clarabel_max_size: int = 40
    #: relative certificate (gap and violation) at which this family accepts an
    #: ``optimal_inaccurate`` conic answer (:meth:`_accept_reference`)
    inaccurate_rtol: float = INACCURATE_RTOL

    # ------------------------------------------------------------------ to implement
    def to_cvxpy(self):  # pragma: no cover
        raise NotImplementedError

    def objective(self, *primal) -> float:  # pragma: no cover
        raise NotImplementedError

    def violations(self, *primal) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def solve_reference(self, solver=None, eps=None, accept_inaccurate=False, **opts):  # pragma: no cover
        raise NotImplementedError

    def solve(self, *args, **kwargs):  # pragma: no cover
        raise NotImplementedError

    def exact_size(self) -> int:
        """The side of the exact model's largest PSD block (what its cost grows with)."""
        raise NotImplementedError  # pragma: no cover

    # ------------------------------------------------------------------ shared
    def evaluate(self, primal, dual=None, **info):
        """Wrap a primal point (and duals) as a :class:`~cvxkml.solution.Solution`, every number
        computed here by the problem's own formulas: ``objective(*primal)``,
        ``violations(*primal)`` and, when ``dual`` is given, ``dual_value(dual)``.

        Parameters
        ----------
        primal : array or tuple
            The family's primal point: the matrix M, or the tuple of its primal variables
            (e.g. ``(M, xi)``, ``(Sigma, h)``).  A bare M of a slack problem gets its best slack
            (``best_slack(M)``) where the family defines one.
        dual : array or None
            The multipliers, in ``violations()`` order (``dual_value``'s argument).
        **info : ``n_iter``, ``time``, ``status``, ``solver``, ``converged`` (default: a dual
            value is in hand) set those fields; anything else goes to ``Solution.info``.

        Returns
        -------
        Solution
            Nothing in it is the caller's claim; ``cvxkml.testing`` checks it the same way.
        """
        from ..solution import Solution

        args = tuple(primal) if isinstance(primal, tuple) else (primal,)
        if len(args) == 1 and hasattr(self, "best_slack"):
            xi = self.best_slack(args[0])
            args = args if xi is None else (args[0], xi)
        dv = None
        if dual is not None and hasattr(self, "dual_value"):
            dv = float(self.dual_value(dual))
        viol = np.asarray(self.violations(*args), dtype=float)
        extra = {k: info.pop(k) for k in ("n_iter", "time", "status", "solver", "converged") if k in info}
        sol = Solution(
            matrix=np.asarray(args[0], dtype=float),
            objective=float(self.objective(*args)),
            dual=None if dual is None else np.asarray(dual, dtype=float),
            slack=None if len(args) < 2 or np.ndim(args[1]) != 1 else np.asarray(args[1], dtype=float),
            violations=viol,
            n_iter=int(extra.get("n_iter", 0)),
            converged=bool(extra.get("converged", dv is not None and np.isfinite(dv))),
            time=float(extra.get("time", 0.0)),
            status=str(extra.get("status", "evaluated")),
            solver=str(extra.get("solver", "evaluated")),
            dual_value=dv,
            info=dict(info),
        )
        if hasattr(self, "_max_relative_violation"):
            sol.info.setdefault("max_relative_violation", self._max_relative_violation(viol))
        return sol

    def _limit_lookup(self, table: dict) -> int | None:
        """The limit of this problem in ``table``: the class and then its bases, each as
        ``"Class[Regularizer]"`` before ``"Class"``; then ``"[Regularizer]"`` (any class, e.g.
        a ``SpectralProblem`` composed by hand).  A problem with constraint families besides
        pairs also looks up ``"[Regularizer]+mixed"`` (every family at once, measured
        separately: more constraint types cost more) and takes the smaller limit."""
        reg = getattr(self, "regularizer", None)
        reg_name = None if reg is None else _library_name(type(reg))
        found = None
        for cls in type(self).__mro__:
            names = ([f"{cls.__name__}[{reg_name}]"] if reg_name is not None else []) + [cls.__name__]
            found = next((int(table[name]) for name in names if name in table), None)
            if found is not None:
                break
        if found is None and reg_name is not None and f"[{reg_name}]" in table:
            found = int(table[f"[{reg_name}]"])
        mixed = getattr(self, "pairs_only", True) is False and getattr(self, "n_constraints", 0) > 0
        if mixed and reg_name is not None and f"[{reg_name}]+mixed" in table:
            m = int(table[f"[{reg_name}]+mixed"])
            found = m if found is None else min(found, m)
        return found

    def exact_limit(self) -> int | None:
        """The largest :meth:`exact_size` whose default exact solve took at most 60 s and
        4 GiB on the reference machine (:data:`cvxkml.declare._limits.EXACT_LIMITS`,
        ``reference/exact-limits.md``), or None when the family was not measured.  The class
        and then its bases are looked up, each as ``"Class[Regularizer]"`` (spectral problems)
        before ``"Class"``, so a user's subclass inherits its parent's limit."""
        from ._limits import EXACT_LIMITS

        return self._limit_lookup(EXACT_LIMITS)

    def _check_exact_size(self) -> None:
        from ._limits import COST_LIMITS

        limit = self._limit_lookup(COST_LIMITS) or self.exact_limit()
        try:
            size = int(self.exact_size())
        except NotImplementedError:
            return
        if limit is not None and size > LARGE_FACTOR * limit:
            raise SolverError(
                f"The exact model of this {type(self).__name__} has a PSD block of side {size}, more "
                f"than {LARGE_FACTOR}x the largest size ({limit}) whose default exact solve was "
                "measured to end within 60 s and 4 GiB (reference/exact-limits.md); it would likely "
                "run for many minutes or exhaust the memory. Use solve() (the certified fast "
                "solver), or pass solve_reference(..., allow_large=True) to solve it anyway."
            )

    def default_solver(self) -> str:
        """Clarabel up to :attr:`clarabel_max_size` (:meth:`exact_size`), SCS above."""
        return "CLARABEL" if self.exact_size() <= self.clarabel_max_size else "SCS"

    @staticmethod
    def _iteration_limit(max_iter, max_sweeps=None, name: str = "max_iter") -> int:
        """``max_iter`` checked (1 … 1e15), or the deprecated ``max_sweeps`` in its place."""
        if max_sweeps is not None:
            warnings.warn(
                "solve(max_sweeps=...) is deprecated and will be removed in the next release; use max_iter=...",
                DeprecationWarning,
                stacklevel=3,
            )
            max_iter = max_sweeps
        return check_int(max_iter, name, minimum=1, maximum=10**15)

    @staticmethod
    def _check_callback(callback):
        from ..errors import InvalidInputError

        if callback is not None and not callable(callback):
            raise InvalidInputError(
                f"callback must be None or a callable taking one dict; got {type(callback).__name__}."
            )
        return callback

    def _accept_reference(self, sol, status: str, accept_inaccurate: bool, what: str = "exact model"):
        """The rule for a conic answer (module docstring): ``optimal`` passes;
        ``optimal_inaccurate`` passes with ``accept_inaccurate`` or when its own relative gap
        and relative violation are at most :attr:`inaccurate_rtol` (:data:`INACCURATE_RTOL`
        unless the family says otherwise); anything else raised earlier
        (:func:`cvxkml.declare._conic.solve_conic`)."""
        rtol = self.inaccurate_rtol
        if status != "optimal_inaccurate" or accept_inaccurate:
            return sol
        scale = max(1.0, abs(sol.objective))
        gap = sol.gap
        rel_viol = float(sol.info.get("max_relative_violation", sol.max_violation / scale))
        if gap is not None and abs(gap) <= rtol * scale and rel_viol <= rtol:
            sol.info["accepted_by_certificate"] = True
            return sol
        gap_txt = "none" if gap is None else f"{gap / scale:.3g}"
        raise SolverError(
            f"{sol.solver} returned status 'optimal_inaccurate' on the {what} and its certificate "
            f"does not vouch for it (relative gap {gap_txt}, relative violation {rel_viol:.3g}; "
            f"accepted at {rtol:g}); try the other solver, a looser eps, or "
            "accept_inaccurate=True."
        )

    @staticmethod
    def _warn_unconverged(sol, message: str, stacklevel: int = 3) -> None:
        """The one ConvergenceWarning of an unconverged fast solve."""
        if not sol.converged:
            warnings.warn(message, ConvergenceWarning, stacklevel=stacklevel)
