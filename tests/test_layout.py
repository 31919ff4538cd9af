"""The house: which modules sit in the package root, which layer may import which, and no
import circle (imports inside functions count: a lazy import is still a dependency)."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "cvxkml"

#: the package root holds only the core modules and the subpackages
ROOT_MODULES = {
    "__init__",
    "__main__",
    "_answer",
    "_config",
    "_deprecated",
    "_progress",
    "_validation",
    "errors",
    "solution",
    "sideinfo",
    "kernels",
    "mkl_kernels",
    "factor",
    "learned",
    "datasets",
}
SUBPACKAGES = {"formulas", "declare", "solvers", "adapters", "estimators", "baselines", "testing", "experiments"}

#: layer -> what it must never import (module prefixes; third-party names too)
FORBIDDEN = {
    "cvxkml.formulas": (
        "cvxpy",
        "numba",
        "cvxkml.declare",
        "cvxkml.solvers",
        "cvxkml.estimators",
        "cvxkml.experiments",
        "cvxkml.testing",
        "cvxkml.baselines",
    ),
    "cvxkml.solvers": ("cvxpy", "cvxkml.declare", "cvxkml.estimators", "cvxkml.experiments", "cvxkml.testing"),
    # the declarative layer names no solver: the adapters register them (cvxkml.declare.registry)
    "cvxkml.declare": (
        "cvxkml.solvers",
        "cvxkml.adapters",
        "cvxkml.estimators",
        "cvxkml.experiments",
        "cvxkml.testing",
    ),
    "cvxkml.adapters": ("cvxkml.estimators", "cvxkml.experiments", "cvxkml.testing"),
    "cvxkml.estimators": ("cvxkml.experiments", "cvxkml.testing", "cvxpy"),
    "cvxkml.baselines": ("cvxkml.experiments", "cvxkml.estimators", "cvxkml.testing"),
    "cvxkml.testing": ("cvxkml.experiments", "cvxkml.estimators"),
}
#: the data layer and the errors import nothing of cvxkml but these
ALLOWED_ONLY = {
    "cvxkml.datasets": {"cvxkml.errors", "cvxkml._validation", "cvxkml._deprecated"},
    "cvxkml.errors": set(),
}

for _core in (
    "sideinfo",
    "kernels",
    "mkl_kernels",
    "factor",
    "learned",
    "solution",
    "_validation",
    "_config",
    "_progress",
    "_answer",
):
    FORBIDDEN[f"cvxkml.{_core}"] = (
        "cvxkml.declare",
        "cvxkml.estimators",
        "cvxkml.experiments",
        "cvxkml.testing",
        "cvxkml.baselines",
    )


def _modules():
    mods = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (path, is_pkg)
    return mods


def _imports(name, path, is_pkg, modules):
    """Every module ``name`` imports (absolute and relative, at any depth of the file)."""
    package = name if is_pkg else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            out.add(target)
            for a in node.names:  # from pkg import submodule
                if f"{target}.{a.name}" in modules:
                    out.add(f"{target}.{a.name}")
    return out


MODULES = _modules()
GRAPH = {m: _imports(m, p, k, MODULES) for m, (p, k) in MODULES.items()}


def test_package_root_holds_only_the_core():
    root = {p.stem for p in PKG.glob("*.py")}
    assert root <= ROOT_MODULES, f"modules that belong in a subpackage: {sorted(root - ROOT_MODULES)}"
    subs = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert subs == SUBPACKAGES


#: experiments/ itself holds the command line and what the commands share; the commands sit in
#: its two subpackages, one module each
EXPERIMENTS_TOP = {"__init__", "cli", "demo", "_commands", "_table", "_report", "_runner", "_parallel"}
EXPERIMENTS_TOP |= {"_peer_metric_learn", "_peer_pylmnn"}


def test_experiments_commands_sit_in_bench_and_reproduce():
    top = PKG / "experiments"
    mods = {p.stem for p in top.glob("*.py")}
    assert mods <= EXPERIMENTS_TOP, f"commands that belong in bench/ or reproduce/: {sorted(mods - EXPERIMENTS_TOP)}"
    assert {p.name for p in top.iterdir() if (p / "__init__.py").exists()} == {"bench", "reproduce"}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports(layer):
    bad = []
    for mod, deps in GRAPH.items():
        if mod == layer or mod.startswith(layer + "."):
            bad += [
                (mod, d)
                for d in deps
                for f in FORBIDDEN[layer]
                if d == f.rstrip(".") or d.startswith(f if f.endswith(".") else f + ".") or d == f
            ]
    assert not bad, f"{layer} imports what sits above it: {bad}"


@pytest.mark.parametrize("module", sorted(ALLOWED_ONLY))
def test_bottom_layer_imports_nothing_above(module):
    deps = {d for d in GRAPH[module] if d.startswith("cvxkml")}
    assert deps <= ALLOWED_ONLY[module], f"{module} imports {sorted(deps - ALLOWED_ONLY[module])}"


def test_nothing_imports_the_experiments():
    bad = [
        (m, d)
        for m, deps in GRAPH.items()
        if not m.startswith("cvxkml.experiments") and m != "cvxkml.__main__"
        for d in deps
        if d.startswith("cvxkml.experiments")
    ]
    assert not bad


def _cycles():
    """Strongly connected components of more than one module (Tarjan); the package root
    ``cvxkml`` (its ``__init__`` only re-exports) is left out as a target."""
    edges = {m: {d for d in deps if d in MODULES and d != "cvxkml"} for m, deps in GRAPH.items()}
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return comps


def test_no_import_circle():
    cycles = _cycles()
    assert not cycles, "import circles: " + "; ".join(
        " <-> ".join(c) + " via " + ", ".join(f"{a}->{b}" for a in c for b in GRAPH[a] if b in c) for c in cycles
    )


def _private_imports(prefix):
    """``(module, imported name)`` for every private name (``_x``) a module under ``prefix``
    imports from another module of the package."""
    out = []
    for m, (path, is_pkg) in MODULES.items():
        if not m.startswith(prefix):
            continue
        package = m if is_pkg else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                if target.startswith(prefix):
                    continue  # inside the same subpackage
                out += [
                    (m, f"{target}.{a.name}")
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__") and f"{target}.{a.name}" not in MODULES
                ]
    return out


def test_experiments_reach_solvers_through_public_names():
    """Benchmarks time solver kernels through each solver module's public hook
    (``BENCH_KERNELS``), never through its private names."""
    assert _private_imports("cvxkml.experiments") == []
