"""Write docs/api/*.rst from the packages' ``__all__``: every public name gets a page.

Run by conf.py at every build, so a name added to an ``__all__`` gets its page without
anyone editing the docs. A name exported by several modules (``cvxkml.ITML`` is
``cvxkml.declare.ITML``) gets one page, in its home module, and a link from the others.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

#: the documented modules, in the order their names find a home (first exporter wins)
MODULES = {
    "cvxkml.errors": "Typed errors and warnings: each says what to do.",
    "cvxkml.solution": "The result shapes every solve returns, and the fast-solver protocol.",
    "cvxkml.sideinfo": "Side information: each constraint family one atom (pairs, relative, similarity, linear "
    "inequalities and equalities, or a user's own ConstraintAtom), hard or with slack.",
    "cvxkml.kernels": "Base kernels, centring and normalisation, kernel distances.",
    "cvxkml.learned": "Learned kernels and metrics, which evaluate on unseen points.",
    "cvxkml.declare": "Declared problems: exact CVXPY models, certificates, dispatch to the registered fast solvers.",
    "cvxkml.declare.registry": "The one registry of fast solvers (cvxkml's and a user's): specs, the solve request, "
    "dispatch.",
    "cvxkml.estimators": "scikit-learn estimators, one module per family.",
    "cvxkml.testing": "The public validation toolkit: validate a solver without trusting it.",
    "cvxkml": "The top level: the two LogDet problems, side information, the solution, errors, configuration.",
}
#: modules without ``__all__``: their public names
PUBLIC = {
    "cvxkml.solution": [
        "Solution",
        "FastResult",
        "Status",
        "OK",
        "NOT_CONVERGED",
        "NONFINITE",
        "NONPOSITIVE_DISTANCE",
        "UNBOUNDED",
    ],
    "cvxkml.errors": [
        "CvxkmlError",
        "InvalidInputError",
        "NotPSDError",
        "InfeasibleError",
        "SolverError",
        "UnboundedError",
        "ConvergenceWarning",
        "EstimatorFileError",
    ],
}


def public_names(mod: str) -> list[str]:
    m = importlib.import_module(mod)
    return list(getattr(m, "__all__", None) or PUBLIC[mod])


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "class"
    return "function" if callable(obj) else "data"


def homes() -> dict[int, str]:
    """id(object) -> the first documented module exporting it (classes and functions only)."""
    home = {}
    for mod in MODULES:
        m = importlib.import_module(mod)
        for n in public_names(mod):
            obj = getattr(m, n)
            if _kind(obj) != "data":
                home.setdefault(id(obj), f"{mod}.{n}")
    return home


def write(outdir: Path) -> list[str]:
    """Write one page per module and the index; return the documented full names."""
    outdir.mkdir(parents=True, exist_ok=True)
    home = homes()
    written = []
    for mod, blurb in MODULES.items():
        m = importlib.import_module(mod)
        title = f"``{mod}``"
        out = [
            title,
            "=" * len(title),
            "",
            blurb,
            "",
            f".. automodule:: {mod}",
            "   :no-members:",
            "   :no-index:",
            "",
            f".. currentmodule:: {mod}",
            "",
        ]
        groups = {"Classes": [], "Functions": [], "Data": [], "Also exported here": []}
        for n in public_names(mod):
            obj = getattr(m, n)
            kind = _kind(obj)
            if kind != "data" and home[id(obj)] != f"{mod}.{n}":
                groups["Also exported here"].append((n, kind, home[id(obj)]))
            else:
                groups["Classes" if kind == "class" else "Functions" if kind == "function" else "Data"].append(n)
            written.append(f"{mod}.{n}")
        for g, names in groups.items():
            if not names:
                continue
            out += [g, "-" * len(g), ""]
            if g == "Data":
                for n in names:
                    out += [f".. autodata:: {n}", "   :no-value:", ""]
            elif g == "Also exported here":
                out += ["The same objects as (one page each, in their home module):", ""]
                role = {"class": "class", "function": "func"}
                out += [f"- ``{mod}.{n}`` is :{role[kind]}:`{target}`" for n, kind, target in names] + [""]
            else:
                tmpl = ("estimator" if mod == "cvxkml.estimators" else "class") if g == "Classes" else "function"
                out += [".. autosummary::", "   :toctree: generated/", f"   :template: autosummary/{tmpl}.rst", ""]
                out += [f"   {n}" for n in names] + [""]
        (outdir / f"{mod}.rst").write_text("\n".join(out))
    idx = [
        "API reference",
        "=============",
        "",
        "Every public name of the package, one page each, generated from its docstring at every build.",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "   :hidden:",
        "",
    ] + [f"   {mod}" for mod in MODULES]
    idx += ["", ".. list-table::", "   :widths: 30 70", ""]
    for mod, blurb in MODULES.items():
        idx += [f"   * - :doc:`{mod} <{mod}>`", f"     - {blurb}"]
    (outdir / "index.rst").write_text("\n".join(idx) + "\n")
    return written
