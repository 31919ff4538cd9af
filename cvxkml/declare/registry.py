"""One registry of fast solvers, for cvxkml's own and a user's alike.

A fast solver is a :class:`SolverSpec`: the callable ``solve(problem, tol, max_iter) ->
FastResult`` (the protocol of :mod:`cvxkml.solvers.result`) and what it accepts, declared
in the spirit of skglm's required attributes — the problem classes it was written for, the
regularizer classes (or the regularizer methods it needs), the constraint families, whether
it takes hinge and the regularizer's own slack (``gamma``), and an optional predicate for the
rest.  ``problem.solve()`` asks :func:`select` for the first spec that accepts the problem
(a user's registrations first, newest first; then the built-ins in registration order; the
generic certified dual solver last) and certifies whatever the solver returns itself.

Nothing here names a solver: the built-in specs are registered by :mod:`cvxkml.adapters`,
which the package's face imports, the same way a user's
:func:`~cvxkml.declare.regularizers.register_fast_solver` does.

The wrong problem is never answered.  A spec written for a class accepts a subclass only
when the subclass keeps its model (:data:`MODEL_METHODS`): a subclass that changes the
objective, the constraints or the exact model is refused, and so is a regularizer subclass
that changes a built-in regularizer's formulas (:data:`REGULARIZER_METHODS`) — those go to a
solver that reads only the declared formulas (the generic dual solver), or raise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .._validation import missing_methods
from ..errors import InvalidInputError
from ..sideinfo import ConstraintAtom

__all__ = [
    "SolverSpec",
    "SolveRequest",
    "call",
    "register",
    "unregister",
    "registered",
    "select",
    "missing_methods",
    "MODEL_METHODS",
    "REGULARIZER_METHODS",
]

#: the methods that define a spectral problem's model: a subclass overriding one of them is
#: a different problem
MODEL_METHODS = (
    "objective",
    "violations",
    "residuals",
    "dual_value",
    "to_cvxpy",
    "pair_values",
    "pair_inner",
    "whiten",
    "matrix_from_whitened",
    "_whitened_family_terms",
    "hinge_value",
    "best_slack",
)
#: the methods that define a regularizer's formulas
REGULARIZER_METHODS = (
    "f_s",
    "conj_s",
    "conj_grad_s",
    "conj_hess_s",
    "cvx",
    "value",
    "conj",
    "conj_grad",
    "conj_shift",
    "slack_value",
    "slack_cvx",
    "slack_conj",
    "slack_conj_grad",
    "slack_conj_hess",
    "slack_conj_domain",
)

_SPECS: list = []  # registration order


def _library_class(cls):
    """The nearest class of ``cls``'s MRO defined by cvxkml itself."""
    for c in cls.__mro__:
        if c.__module__.split(".")[0] == "cvxkml":
            return c
    return object


def _changed(cls, names) -> list[str]:
    """The methods among ``names`` that ``cls`` defines differently from its nearest cvxkml
    class (empty for cvxkml's own classes)."""
    lib = _library_class(cls)
    return [n for n in names if getattr(cls, n, None) is not getattr(lib, n, None)]


def _missing_slack_methods(reg, names) -> list[str]:
    """The slack methods among ``names`` (``f(δλ or ξ, ξ0, γ)``, ``slack_value(ξ, ξ0)``) that
    ``reg`` lacks: absent, or raising NotImplementedError on a small probe (a base stub)."""
    probe, xi0 = np.array([-0.5, 0.0, 0.5]), np.ones(3)

    def call(fn, name):
        return fn(np.abs(probe) + 0.5, xi0) if name == "slack_value" else fn(probe, xi0, 1.0)

    return missing_methods(reg, names, call)


@dataclass
class SolveRequest:
    """What one ``solve()`` asks of a fast solver: passed down as a value, never left as state
    on the problem (a problem is reusable and may be solved by two threads at once).

    Attributes
    ----------
    gap_tol, viol_tol : float
        The certificate the caller will check (a solver that checks it itself stops there).
    warm_start : ndarray or None
        Multipliers to start from (one per constraint, in ``violations()`` order).
    callback : callable or None
        Called with a dict at each of the solver's certificate checks; a truthy return stops.
    options : dict
        The family's own solver options (validated by the family's ``solve()``), e.g. KCR's
        ``time_limit`` and ``check_every``.
    resume : dict
        A resumable solver's last iterate, carried between the attempts of this one request
        (the solver writes it, the next attempt reads it).
    """

    gap_tol: float
    viol_tol: float
    warm_start: object = None
    callback: Callable | None = None
    options: dict = field(default_factory=dict)
    resume: dict = field(default_factory=dict)


def call(spec, problem, tol: float, max_iter: int, request: SolveRequest | None = None):
    """Run ``spec.solve`` on ``problem`` with what it declares it takes: the whole
    ``request=`` when its signature has that keyword; else ``warm_start=`` / ``lam0=`` and
    ``callback=`` when it has those and the request carries them; else the bare
    ``(problem, tol, max_iter)`` of the fast-solver protocol."""
    import inspect

    try:
        params = inspect.signature(spec.solve).parameters
    except (TypeError, ValueError):  # a builtin or C callable: the bare protocol
        params = {}
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    if request is None:
        return spec.solve(problem, tol, max_iter)
    if "request" in params:
        return spec.solve(problem, tol, max_iter, request=request)
    kw = {}
    if request.warm_start is not None:
        name = next((n for n in ("warm_start", "lam0") if n in params), "warm_start" if var_kw else None)
        if name is None:
            raise InvalidInputError(f"The fast solver {spec.name} takes no warm start; solve without warm_start.")
        kw[name] = request.warm_start
    if request.callback is not None and ("callback" in params or var_kw):
        kw["callback"] = request.callback
    return spec.solve(problem, tol, max_iter, **kw)


@dataclass(frozen=True)
class SolverSpec:
    """A fast solver and what it accepts.

    Attributes
    ----------
    name : str
        Shown in ``Solution.solver`` when the result does not name itself.
    solve : callable
        ``solve(problem, tol, max_iter) -> FastResult`` (generic specs also take ``lam0=``
        and ``callback=``).
    problems : tuple of classes
        The problem classes it was written for (subclasses that keep the model too).
    spaces : tuple of str or None
        The spaces it works in (``problem.space.name``: "metric", "kernel", "factored",
        "span", or a user space's name); None: any.
    regularizers : tuple of classes or None
        The regularizer classes it solves; None: any regularizer with the methods ``needs``.
    needs : tuple of str
        Regularizer methods the solver calls.
    families : tuple of classes
        The constraint families it handles (unwrapped; see ``hinge``), matched against
        :func:`cvxkml.sideinfo.atom_family` of each atom (a user's subclass that keeps a
        built-in family's formulas counts as that family); ``(ConstraintAtom,)``: every
        family, a user's too, through the atom protocol alone (``terms``, ``targets``, …).
        A built-in native solver takes one object per family.
    hinge : bool
        Whether it takes :class:`~cvxkml.sideinfo.Hinge` (and squared-hinge) constraints.
    slack : bool
        Whether it takes the regularizer's own pair slack (``gamma``).
    slack_needs : tuple of str
        Regularizer methods the solver calls on a problem with ``gamma`` (besides ``needs``).
    accepts : callable or None
        ``accepts(problem) -> bool`` for anything else.
    warm_start : bool
        Whether it starts from the multipliers of a request (``solve(warm_start=…)``); the
        generic dual solver always does.
    generic : bool
        The generic certified dual solver (``solve(method="dual")``); tried last.
    user : bool
        Registered by a user (tried first; the regularizer may be any subclass of those
        named, and the problem any instance of those named).
    """

    name: str
    solve: Callable
    problems: tuple = ()
    spaces: tuple | None = None
    regularizers: tuple | None = None
    needs: tuple = ()
    families: tuple = ()
    hinge: bool = False
    slack: bool = False
    slack_needs: tuple = ()
    accepts: Callable | None = None
    warm_start: bool = False
    generic: bool = False
    user: bool = False

    def refusal(self, problem) -> str | None:
        """Why this solver does not take ``problem`` (None: it does)."""
        cls = type(problem)
        if self.user:
            if self.problems and not isinstance(problem, self.problems):
                return f"registered for {', '.join(c.__name__ for c in self.problems)}"
        else:
            if not issubclass(cls, self.problems):
                return f"written for {', '.join(c.__name__ for c in self.problems)}"
            changed = _changed(cls, tuple(MODEL_METHODS) + tuple(getattr(cls, "_model_methods", ())))
            if changed:
                return (
                    f"{cls.__name__} redefines the model ({', '.join(changed)}), and this solver "
                    f"answers {_library_class(cls).__name__}"
                )
        space = getattr(getattr(problem, "space", None), "name", None)
        if self.spaces is not None and space not in self.spaces:
            return f"works in the {' / '.join(self.spaces)} space, not the {space} space"
        reg = getattr(problem, "regularizer", None)
        if self.regularizers is not None:
            if self.user:
                if not isinstance(reg, self.regularizers):
                    return f"registered for {', '.join(c.__name__ for c in self.regularizers)}"
            else:
                if _library_class(type(reg)) not in self.regularizers:
                    return f"solves {', '.join(c.__name__ for c in self.regularizers)} only"
                changed = _changed(type(reg), REGULARIZER_METHODS)
                if changed:
                    return (
                        f"{type(reg).__name__} redefines {', '.join(changed)} of {_library_class(type(reg)).__name__}"
                    )
        if self.needs:
            missing = missing_methods(reg, self.needs)
            if missing:
                return f"needs the regularizer's {', '.join(missing)}"
        families = getattr(problem, "constraint_families", None)
        if families is not None:
            fams = families()
            if ConstraintAtom not in self.families:
                bad = [f.__name__ for f in fams if f not in self.families]
                if bad:
                    return f"does not handle {', '.join(sorted(set(bad)))}"
                if not self.generic and not self.user and len(set(fams)) < len(fams):
                    return "handles one object per constraint family (concatenate them, or use the dual solver)"
        if getattr(problem, "_hinge", None) and not self.hinge:
            return "does not handle hinge slack"
        if getattr(problem, "gamma", None) is not None:
            if not self.slack:
                return "does not handle the regularizer's slack (gamma)"
            missing = _missing_slack_methods(reg, self.slack_needs)
            if missing:
                return f"needs the regularizer's {', '.join(missing)} for its slack (gamma)"
        if self.accepts is not None and not self.accepts(problem):
            return "declined by its accepts() rule"
        return None


def register(spec: SolverSpec) -> SolverSpec:
    """Add ``spec`` (a spec of the same name is replaced)."""
    if not isinstance(spec, SolverSpec):
        raise InvalidInputError(f"register needs a SolverSpec; got {type(spec).__name__}.")
    if not callable(spec.solve):
        raise InvalidInputError(f"The solver of spec {spec.name!r} is not callable.")
    unregister(spec.name)
    _SPECS.append(spec)
    return spec


def unregister(name: str) -> None:
    """Remove the spec called ``name`` (no error when there is none)."""
    _SPECS[:] = [s for s in _SPECS if s.name != name]


def registered() -> list[SolverSpec]:
    """Every spec in the order :func:`select` tries them."""
    users = [s for s in reversed(_SPECS) if s.user]
    return users + [s for s in _SPECS if not s.user and not s.generic] + [s for s in _SPECS if not s.user and s.generic]


def select(problem, method: str = "auto"):
    """(the first spec that accepts ``problem``, {spec name: refusal} of those tried before);
    ``method``: "auto" (all), "native" (all but the generic), "dual" (the generic only)."""
    refused = {}
    for spec in registered():
        if (method == "native" and spec.generic) or (method == "dual" and not spec.generic):
            continue
        why = spec.refusal(problem)
        if why is None:
            return spec, refused
        refused[spec.name] = why
    return None, refused
