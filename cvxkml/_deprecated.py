"""Old import paths, kept for one release (0.2) as aliases that warn.

``import cvxkml.kcr_formulas`` (and every other path in :data:`MOVED`) still works: a
meta-path finder hands back the module at its new place, the very same module object, and
emits a :class:`DeprecationWarning` naming the new path.  One table instead of a re-export
file per old path, so the package root holds only what is current.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: {old module path: new module path}
MOVED: dict[str, str] = {
    "cvxkml.divergences": "cvxkml.formulas.divergences",
    "cvxkml.kcr_formulas": "cvxkml.formulas.kcr",
    "cvxkml.lmnn_terms": "cvxkml.formulas.lmnn",
    "cvxkml.yeung_core": "cvxkml.formulas.yeung",
    "cvxkml.separability": "cvxkml.baselines.separability",
    "cvxkml._optima": "cvxkml.testing._optima",
    "cvxkml.estimators_kcr": "cvxkml.estimators.kcr",
    "cvxkml.estimators_mkl": "cvxkml.estimators.mkl",
    "cvxkml.estimators_pola": "cvxkml.estimators.pola",
    "cvxkml.estimators_spectral": "cvxkml.estimators.spectral",
    "cvxkml.estimators_trace": "cvxkml.estimators.trace",
    "cvxkml.estimators_yeung": "cvxkml.estimators.yeung",
    "cvxkml.cli": "cvxkml._cli",
}


#: {(module, attribute): module that holds it now, or "module:new name" when it was renamed}
MOVED_ATTRS: dict[tuple[str, str], str] = {
    ("cvxkml.datasets", "make_random_instance"): "cvxkml.testing",
    ("cvxkml.declare", "LogDetProblem"): "cvxkml.declare:SpectralProblem",
    ("cvxkml.declare.logdet", "LogDetProblem"): "cvxkml.declare:SpectralProblem",
}


def moved_attribute(module: str):
    """A module-level ``__getattr__`` for ``module`` that serves its moved or renamed
    attributes (:data:`MOVED_ATTRS`) with a DeprecationWarning; imported by name, so the old
    module does not depend on the new one."""

    def __getattr__(name):
        new = MOVED_ATTRS.get((module, name))
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new, _, new_name = new.partition(":")
        new_name = new_name or name
        warnings.warn(
            f"{module}.{name} moved to {new}.{new_name}; the old path will be removed in cvxkml 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new), new_name)

    return __getattr__


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        warnings.warn(
            f"{spec.name} moved to {self.new}; the old path will be removed in cvxkml 0.3",
            DeprecationWarning,
            stacklevel=4,
        )
        return importlib.import_module(self.new)

    def exec_module(self, module):
        """Nothing to run: the import system already bound the old name to the new module."""

    def get_code(self, fullname):
        """The new module's code, for ``python -m <old path>`` (runpy runs it as __main__)."""
        warnings.warn(
            f"{fullname} moved to {self.new}; run python -m {self.new} (the old path will be removed in cvxkml 0.3)",
            DeprecationWarning,
            stacklevel=2,
        )
        return compile(
            f"import runpy\nrunpy.run_module({self.new!r}, run_name='__main__', alter_sys=True)\n",
            f"<alias {fullname} -> {self.new}>",
            "exec",
        )


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(new))


def install() -> None:
    """Put the alias finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
