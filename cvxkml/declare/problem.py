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
from ..errors import ConvergenceWarning, InvalidInputError, SolverError
from ._pipeline import CALLBACK_STOP, CertifiedPipeline

__all__ = ["Problem", "INACCURATE_RTOL", "CALLBACK_STOP", "LARGE_FACTOR", "MODEL_METHODS", "check_fast_solver_applies"]

#: relative certificate at which an ``optimal_inaccurate`` conic answer is accepted anyway
INACCURATE_RTOL = 1e-6
#: ``solve_reference`` refuses sizes above this multiple of the measured limit (unless
#: ``allow_large=True``): the exact models' cost grows like n⁴ … n⁶, so twice the 60-s size
#: means roughly 15 min … 1 h
LARGE_FACTOR = 2


#: the methods that define a family's problem (its model); a subclass that redefines one of
#: them without redefining ``solve()`` is refused by :func:`check_fast_solver_applies`
MODEL_METHODS = ("to_cvxpy", "objective", "violations")


def check_fast_solver_applies(problem, model_methods=()) -> None:
    """Refuse a fast solve whose solver was written for a parent of ``type(problem)``.

    The class that defines ``solve()`` (first in the MRO) is the class the fast solver was
    written for; when a strict subclass of it redefines a model method
    (:data:`MODEL_METHODS`, plus the family's ``model_methods`` or ``_model_methods``),
    the fast solver would answer the parent problem and certify it with the parent's dual.

    Raises
    ------
    InvalidInputError
        Naming the redefined method and what to do: ``extend(term=…, constraints=…)`` with
        ``solve_reference()``, or a ``solve()`` written for the subclass's model.
    """
    cls = type(problem)
    mro = cls.__mro__

    def definer(name):
        for c in mro:
            if name in c.__dict__:
                return c
        return None

    solver_cls = definer("solve")
    if solver_cls is None:
        return
    names = tuple(MODEL_METHODS) + tuple(model_methods) + tuple(getattr(cls, "_model_methods", ()))
    changed = {}
    for name in dict.fromkeys(names):
        owner = definer(name)
        if owner is not None and owner is not solver_cls and issubclass(owner, solver_cls):
            changed[name] = owner
    if changed:
        owner = next(iter(changed.values()))
        what = ", ".join(f"{name}()" for name in changed)
        raise InvalidInputError(
            f"{owner.__name__} redefines {what} but inherits solve() from "
            f"{solver_cls.__name__}, whose fast solver answers {solver_cls.__name__}'s own "
            "problem only (it would return and certify the parent's optimum). Use "
            f"{solver_cls.__name__}(...).extend(term=..., constraints=...) and its "
            "solve_reference() (the exact model), or override solve() with a solver for "
            f"{owner.__name__}'s model."
        )


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


class Problem(CertifiedPipeline):
    """Base class of every declared problem (the contract of the module docstring).

    Exact-model size guard: every subclass's ``solve_reference`` takes ``allow_large=False``;
    when :meth:`exact_size` is more than :data:`LARGE_FACTOR` times the family's measured
    limit (:meth:`exact_limit`, from ``python -m benchmarks bench exact-limits``) it raises
    :class:`~cvxkml.errors.SolverError` up front instead of starting a solve that would run
    for many minutes or exhaust the memory; ``allow_large=True`` solves anyway.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        impl = getattr(cls, "solve_reference", None)  # also a mixin's, ahead in the MRO
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

    # ------------------------------------------------------------------ the contract
    # A problem class implements to_cvxpy, objective and violations (and, for a certificate,
    # dual_value); everything else has a working default.  The built-in families override
    # solve and solve_reference with their own algorithms; a user's class inherits the
    # pipeline below.
    def to_cvxpy(self):  # pragma: no cover - abstract
        """The exact model, a DCP ``cvxpy.Problem`` (vectorized: no Python object per pair).
        Required."""
        raise NotImplementedError(f"{type(self).__name__} must implement to_cvxpy() (its exact CVXPY model).")

    def objective(self, *primal) -> float:  # pragma: no cover - abstract
        """The objective at a primal point, in NumPy (+inf outside the domain).  Required;
        ``primal`` is the family's primal variables (usually the one learned matrix)."""
        raise NotImplementedError(f"{type(self).__name__} must implement objective(*primal).")

    def violations(self, *primal) -> np.ndarray:  # pragma: no cover - abstract
        """Per-constraint violations (>= 0; 0 means satisfied) at a primal point.  Required."""
        raise NotImplementedError(f"{type(self).__name__} must implement violations(*primal).")

    # ``dual_value(dual) -> float``: a Lagrange lower bound on the optimum for any dual point
    # in the dual's domain (−inf outside it).  Optional, but without it no answer certifies
    # (``converged`` stays False on the fast path, and the exact path says "no certificate").

    def read_cvxpy(self, prob):
        """(primal, dual) of a solved exact model ``prob`` (``to_cvxpy()``, solved): what
        :meth:`objective` / :meth:`violations` and ``dual_value`` take.  Default: the value of
        the model's variable named ``"M"`` (else its only variable) and no dual; a class with
        a ``dual_value`` overrides this to read the conic duals (``constraint.dual_value``)
        into its own dual point, so the exact answer is certified by the problem's own
        Lagrange bound."""
        variables = prob.var_dict
        var = variables.get("M") or (next(iter(variables.values())) if len(variables) == 1 else None)
        if var is None:
            raise NotImplementedError(
                f"{type(self).__name__}.read_cvxpy: name the learned variable 'M' in to_cvxpy(), or "
                "override read_cvxpy(prob) -> (primal, dual)."
            )
        return np.asarray(var.value, dtype=float), None

    @_size_guarded
    def solve_reference(self, solver=None, eps=None, accept_inaccurate=False, **opts):
        """The exact model (:meth:`to_cvxpy`) through a conic solver at high accuracy
        (:func:`~cvxkml.declare._conic.solve_conic`: Clarabel up to
        :attr:`clarabel_max_size`, SCS above; ``time_limit=`` seconds stops it with a
        :class:`~cvxkml.errors.SolverError`), read back by :meth:`read_cvxpy` and evaluated by
        the problem's own formulas (:meth:`evaluate`): the answer's ``gap`` is
        objective − ``dual_value(dual)``.  ``optimal_inaccurate`` is accepted when that
        certificate vouches for it (:attr:`inaccurate_rtol`), or with ``accept_inaccurate``.
        A class without ``dual_value`` gets the solver's status as its verdict, said in
        ``info["certificate_note"]``."""
        from .._validation import check_conic_options
        from ._conic import solve_conic

        solver, eps = check_conic_options(solver, eps)
        solver = solver or self.default_solver()
        prob = self.to_cvxpy()
        elapsed, status, iters = solve_conic(prob, solver, eps, True, what=f"{type(self).__name__} exact model", **opts)
        primal, dual = self.read_cvxpy(prob)
        sol = self.evaluate(
            primal, dual, rtol=self.inaccurate_rtol, n_iter=iters, time=elapsed, status=status, solver=solver
        )
        certified = sol.converged
        sol.info["max_relative_violation"] = self.relative_violation_of(sol.violations)
        sol.info["solver_objective"] = float(prob.solution.opt_val)
        if dual is None or not hasattr(self, "dual_value"):
            sol.converged = status == "optimal"
            sol.info["certificate_note"] = (
                f"none: {type(self).__name__} gives no dual point (dual_value / read_cvxpy); converged is "
                "the conic solver's own status"
            )
            if status != "optimal" and not accept_inaccurate:
                raise SolverError(
                    f"{solver} returned 'optimal_inaccurate' on the {type(self).__name__} exact model and no "
                    "certificate can vouch for it; implement dual_value and read_cvxpy, try the other "
                    "solver, or pass accept_inaccurate=True."
                )
            return sol
        sol = self._accept_reference(sol, status, accept_inaccurate)
        # converged means certified: the conic solver's "optimal" is a claim its own
        # Lagrange bound (through this class's dual_value) must back up
        sol.converged = bool(certified or sol.info.get("accepted_by_certificate"))
        if not sol.converged:
            rel = sol.info["certificate"]["relative_gap"]
            sol.info["certificate_note"] = (
                f"{solver} said {status!r}, but the certificate read back by read_cvxpy leaves a relative gap "
                f"of {rel:.3g} (certified at {self.inaccurate_rtol:g}): converged is False"
            )
        return sol

    def fast_solver(self, method: str = "auto"):
        """The :class:`~cvxkml.declare.registry.SolverSpec` that :meth:`solve` would use: the
        first registered one that accepts this problem (a user's
        :func:`~cvxkml.declare.register_fast_solver` registrations first), or a typed error
        saying why none does — for a subclass that redefines its family's model, the built-in
        solver refuses it and the error is :func:`check_fast_solver_applies`'s (which method
        changed, what to do); a user's solver registered for the subclass answers it."""
        from .._validation import check_choice
        from ..errors import InvalidInputError
        from .registry import select

        method = check_choice(method, "method", ("auto", "native", "dual"))
        spec, refused = select(self, method)
        if spec is not None:
            return spec
        if any("redefines the model" in why for why in refused.values()):
            check_fast_solver_applies(self)  # says which method changed and what to do
        mine = {k: v for k, v in refused.items() if k.startswith("user:")}
        why = "; ".join(f"{k}: {v}" for k, v in mine.items()) or "none is registered for it"
        raise InvalidInputError(
            f"No fast solver takes {type(self).__name__} ({why}); register one with "
            f"cvxkml.declare.register_fast_solver({type(self).__name__}, solver), or use solve_reference()."
        )

    def solve(
        self,
        tol: float = 1e-6,
        max_iter: int = 10_000,
        gap_tol: float | None = None,
        viol_tol: float | None = None,
        *,
        method: str = "auto",
        warm_start=None,
        callback=None,
    ):
        """The certified-solve pipeline of a problem class without an algorithm of its own
        (:meth:`run_pipeline`): dispatch to the registered fast solver (:meth:`fast_solver`),
        validate what it returns, recompute objective, violations and the dual value from it
        through the problem's own formulas, certify, and warn when the certificate is not met.

        Parameters
        ----------
        tol : float
            Passed to the solver (its own stopping rule).
        max_iter : int
            The solver's iteration budget (1 … 1e15).
        gap_tol, viol_tol : float or None
            The certificate: ``converged`` only when |objective − dual_value| <= ``gap_tol`` ·
            max(|f|, |g|, :meth:`objective_scale`) and the relative violation is at most
            ``viol_tol``.  None: max(tol, 1e-6).
        method : {"auto", "native", "dual"}
            Which registered solvers may answer (see :func:`~cvxkml.declare.registry.select`).
        warm_start : array-like or None
            A dual (or primal) starting point handed to a solver that takes ``warm_start=``.
        callback : callable or None
            Handed to a solver that takes ``callback=`` (it calls it with a dict per check; a
            truthy return stops it: ``status="stopped by callback"``).

        Returns
        -------
        Solution
            ``converged`` is the recomputed certificate; the solver's own claim only names the
            status.
        """
        from .._validation import as_float_array, check_positive

        tol = check_positive(tol, "tol")
        gap_tol = max(tol, 1e-6) if gap_tol is None else check_positive(gap_tol, "gap_tol")
        viol_tol = max(tol, 1e-6) if viol_tol is None else check_positive(viol_tol, "viol_tol")
        warm = None if warm_start is None else as_float_array(warm_start, "warm_start").ravel()
        return self.run_pipeline(
            tol, self._iteration_limit(max_iter), gap_tol, viol_tol, method=method, warm_start=warm, callback=callback
        )

    def exact_size(self) -> int:
        """The side of the exact model's largest PSD block (what its cost grows with); a class
        that does not say has no size guard and gets Clarabel."""
        raise NotImplementedError  # pragma: no cover

    # ------------------------------------------------------------------ shared
    def evaluate(self, primal, dual=None, *, rtol: float = 1e-6, atol: float | None = None, **info):
        """Wrap a primal point (and duals) as a :class:`~cvxkml.solution.Solution`, every number
        computed here by the problem's own formulas: ``objective(*primal)``,
        ``violations(*primal)`` and, when ``dual`` is given, ``dual_value(dual)``.

        ``converged`` is the recomputed certificate, not a claim: True only when the dual
        value is finite, the gap f − g is within ``rtol`` · max(|f|, |g|,
        :meth:`objective_scale`) (or within ``atol`` when given) and the relative violation
        within ``rtol`` (:meth:`certificate`).  A finite dual value alone certifies nothing:
        the multipliers of a first iterate give a finite bound far below the objective.

        Parameters
        ----------
        primal : array or tuple
            The family's primal point: the matrix M, or the tuple of its primal variables
            (e.g. ``(M, xi)``, ``(Sigma, h)``).  A bare M of a slack problem gets its best slack
            (``best_slack(M)``) where the family defines one.
        dual : array or None
            The multipliers, in ``violations()`` order (``dual_value``'s argument).
        rtol : float
            Relative tolerance of the certificate (gap and violation); default 1e-6, the
            fast solvers' own certification tolerance.
        atol : float or None
            An absolute tolerance on the gap instead of ``rtol`` · scale (for an optimum at 0).
        **info : ``n_iter``, ``time``, ``status``, ``solver`` set those fields; ``converged``
            can only lower the certificate's verdict (``converged=False`` wins, a claimed True
            that the certificate refutes is False); anything else goes to ``Solution.info``.

        Returns
        -------
        Solution
            Nothing in it is the caller's claim; ``cvxkml.testing`` checks it the same way.
            ``info["certificate"]`` holds :meth:`certificate`'s record (gap, scale and the
            rule that judged it).
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
        obj = float(self.objective(*args))
        extra = {k: info.pop(k) for k in ("n_iter", "time", "status", "solver", "converged") if k in info}
        cert = self.certificate(obj, dv, viol, rtol=rtol, atol=atol)
        sol = Solution(
            matrix=np.asarray(args[0], dtype=float),
            objective=obj,
            dual=None if dual is None else np.asarray(dual, dtype=float),
            slack=None if len(args) < 2 or np.ndim(args[1]) != 1 else np.asarray(args[1], dtype=float),
            violations=viol,
            n_iter=int(extra.get("n_iter", 0)),
            converged=bool(extra.get("converged", True)) and cert["certified"],
            time=float(extra.get("time", 0.0)),
            status=str(extra.get("status", "evaluated")),
            solver=str(extra.get("solver", "evaluated")),
            dual_value=dv,
            info=dict(info),
        )
        sol.info["certificate"] = cert
        if hasattr(self, "_max_relative_violation"):
            sol.info.setdefault("max_relative_violation", self._max_relative_violation(viol))
        return sol

    # ------------------------------------------------------------------ the certificate of an answer
    # What cvxkml.testing (and evaluate) need to recompute a solver's answer.  The defaults are
    # the generic behaviour for a problem whose primal point is one matrix; a family whose
    # primal has more parts (a slack vector, a bandwidth, a whitened factor) overrides them.
    def answer_primal(self, sol) -> tuple:
        """The primal variables of an answer, as :meth:`objective` and :meth:`violations` take
        them.  Default: ``(sol.matrix,)``."""
        return (sol.matrix,)

    def primal_shape(self) -> tuple | None:
        """The shape of the learned matrix (what an answer's ``matrix`` must have), or None
        when the class does not say.  Default: the shape of the exact model's variable named
        ``"M"`` when :meth:`to_cvxpy` has one, else None."""
        try:
            var = self.to_cvxpy().var_dict.get("M")
        except Exception:  # no exact model, or one that cannot be built here: unknown
            return None
        return None if var is None else tuple(var.shape)

    def check_answer(self, sol, *, symmetric_tol: float, psd_tol: float) -> None:
        """Raise :class:`~cvxkml.errors.SolverError` (one line) when the parts of an answer are
        malformed: None, of the wrong shape, NaN/inf, asymmetric or not PSD.  Default: the
        matrix is a finite, symmetric, PSD 2-D array of :meth:`primal_shape` (of its own
        shape when the class does not state one)."""
        from .._answer import check_primal_matrix

        M = sol.matrix
        shape = self.primal_shape()
        if shape is None:
            shape = np.shape(M) if np.ndim(M) == 2 else (-1, -1)
        check_primal_matrix(M, shape, symmetric_tol=symmetric_tol, psd_tol=psd_tol)

    def answer_objective(self, sol) -> float:
        """The objective recomputed at the answer's primal point: ``objective(*answer_primal(sol))``."""
        return float(self.objective(*self.answer_primal(sol)))

    def answer_violations(self, sol) -> np.ndarray:
        """The violations recomputed at the answer's primal point (one per constraint, in
        ``violations()`` order): ``violations(*answer_primal(sol))``."""
        return np.asarray(self.violations(*self.answer_primal(sol)), dtype=float)

    def answer_dual_value(self, sol, objective: float) -> float | None:
        """The Lagrange dual value recomputed from the answer's multipliers, or None when the
        answer carries none (or the problem has no ``dual_value``).  ``objective`` is the
        recomputed objective, for families whose bound needs it.  Default:
        ``dual_value(sol.dual)``."""
        if sol.dual is None or not hasattr(self, "dual_value"):
            return None
        return float(self.dual_value(sol.dual))

    def dual_value_unverified(self) -> str | None:
        """Why a reported dual value cannot be recomputed from returned multipliers (it is then
        kept as reported and flagged), or None when it can.  Default: None when the problem
        has ``dual_value(dual)``."""
        return None if hasattr(self, "dual_value") else "the problem has no dual_value(dual) to recompute it"

    def relative_violation_of(self, violations) -> float:
        """The largest violation, relative to each constraint's own scale when the problem
        knows it (a spectral problem: max(1, |target|)); otherwise the absolute largest."""
        viol = np.asarray(violations, dtype=float)
        rel = getattr(self, "_max_relative_violation", None)
        return float(rel(viol)) if rel is not None else float(np.max(viol, initial=0.0))

    def objective_scale(self) -> float:
        """The unit of this problem's objective: a magnitude below which a difference of
        objective values is round-off, not progress.  Certificates are judged relative to
        max(|f|, |g|, ``objective_scale()``) (:meth:`certificate`) — the answer's own
        objective and bound, never a fixed 1, which would wave through every answer of an
        objective of order 1e-4.  Default: 1e-6, a round-off floor only (an optimum at 0 is
        then held to an absolute 1e-12 at rtol = 1e-6); a family whose objective has a
        natural unit of its data states it here, and a user may pass ``atol`` instead."""
        return 1e-6

    def whitened_geometry(self):
        """``(whiten, T, regularizer)`` when the primal matrix is M = T X̂ Tᵀ and the objective
        is Σ f_s(λ_i(X̂)) plus linear and convex terms (``whiten(M)`` returns X̂ or None), so
        that a strong-convexity bound of f_s gives a distance to the unique optimum; None
        otherwise.  Default: the problem's own ``whiten``, ``T`` and ``regularizer`` when it
        has all three."""
        parts = tuple(getattr(self, name, None) for name in ("whiten", "T", "regularizer"))
        return None if any(p is None for p in parts) else parts

    def certificate(self, objective: float, dual_value, violations, *, rtol: float = 1e-6, atol=None) -> dict:
        """The certificate of a primal point and a dual value (recomputed numbers, not claims).

        The gap f − g is judged against ``atol`` when given (an absolute tolerance the user
        sets), else against ``rtol`` · S with S = max(|f|, |g|, :meth:`objective_scale`): the
        answer's own magnitude, so an objective of 1e-4 is held to 1e-10 at rtol = 1e-6, not
        to 1e-6.  The violation is :meth:`relative_violation_of`, judged against ``rtol``.

        Returns
        -------
        dict
            ``gap`` (f − g, None without a finite dual value), ``relative_gap`` (gap / S),
            ``scale`` (S), ``scale_rule`` (one line: which scale judged the gap),
            ``gap_tol`` (the absolute tolerance applied), ``relative_violation`` and
            ``certified`` (a finite bound, |gap| <= gap_tol and violation <= rtol).
        """
        f = float(objective)
        g = None if dual_value is None or not np.isfinite(dual_value) else float(dual_value)
        unit = float(self.objective_scale())
        scale = max(abs(f), 0.0 if g is None else abs(g), unit)
        if atol is not None:
            tol, rule = float(atol), f"absolute: |gap| <= atol = {float(atol):.3g}"
        else:
            tol = float(rtol) * scale
            rule = f"relative to max(|f|, |g|, objective_scale()) = {scale:.3g} (rtol {float(rtol):.3g})"
        viol = self.relative_violation_of(violations)
        gap = None if g is None or not np.isfinite(f) else f - g
        rel = None if gap is None else (gap / scale if scale > 0 else (0.0 if gap == 0 else np.sign(gap) * np.inf))
        certified = gap is not None and abs(gap) <= tol and viol <= float(rtol)
        return {
            "gap": gap,
            "relative_gap": rel,
            "scale": scale,
            "scale_rule": rule,
            "gap_tol": tol,
            "relative_violation": viol,
            "certified": bool(certified),
        }

    def _limit_lookup(self, table: dict) -> int | None:
        """The limit of this problem in ``table``: the class and then its bases, each as
        ``"Class[Regularizer]"`` before ``"Class"``; then ``"[Regularizer]"`` (any class, e.g.
        a ``SpectralProblem`` composed by hand).  A problem with constraint families besides
        pairs also looks up ``"[Regularizer]+mixed"`` (every family at once, measured
        separately: more constraint types cost more) and takes the smaller limit."""
        if self.user_parts():
            return None  # a user's part was never measured: unknown, not its parent's limit
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

    def user_parts(self) -> list[str]:
        """The parts of this problem's exact model that a user declared (a regularizer or a
        constraint family whose CVXPY form cvxkml never measured); empty for the library's
        own.  :meth:`exact_limit` is unknown (None) when there is one."""
        return []

    def exact_limit(self) -> int | None:
        """The largest :meth:`exact_size` whose default exact solve took at most 60 s and
        4 GiB on the reference machine (:data:`cvxkml.declare._limits.EXACT_LIMITS`,
        ``reference/exact-limits.md``), or None when the family was not measured — and
        whenever the model holds a user's part (:meth:`user_parts`: its cost is unknown, and
        a parent's limit would be a promise nobody measured).  The class and then its bases
        are looked up, each as ``"Class[Regularizer]"`` (spectral problems) before
        ``"Class"``, so a user's subclass that keeps the model inherits its parent's limit."""
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
        """Clarabel up to :attr:`clarabel_max_size` (:meth:`exact_size`), SCS above (Clarabel
        when the class does not state its size)."""
        try:
            size = int(self.exact_size())
        except NotImplementedError:
            return "CLARABEL"
        return "CLARABEL" if size <= self.clarabel_max_size else "SCS"

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
        # the answer's own magnitude, the scale of every certificate (certificate())
        scale = self.certificate(sol.objective, sol.dual_value, sol.violations, rtol=rtol)["scale"]
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
