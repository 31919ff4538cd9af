"""The house: which modules sit in the package root, which layer may import which, and no
import circle (imports inside functions count: a lazy import is still a dependency).

The checkout's two rooms outside the package, ``benchmarks/`` (the speed benchmarks and the
command that runs them and the reproductions) and ``reference/reproduce/`` (one module per
paper), use cvxkml as a user does: they may import it, it never imports them."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "cvxkml"

#: the package root holds only the core modules and the subpackages
ROOT_MODULES = {
    "__init__",
    "__main__",
    "_answer",
    "_cli",
    "_demo",
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
SUBPACKAGES = {"formulas", "declare", "solvers", "adapters", "estimators", "baselines", "testing"}

#: layer -> what it must never import (module prefixes; third-party names too)
FORBIDDEN = {
    "cvxkml.formulas": (
        "cvxpy",
        "numba",
        "cvxkml.declare",
        "cvxkml.solvers",
        "cvxkml.estimators",
        "cvxkml.testing",
        "cvxkml.baselines",
    ),
    "cvxkml.solvers": ("cvxpy", "cvxkml.declare", "cvxkml.estimators", "cvxkml.testing"),
    # the declarative layer names no solver: the adapters register them (cvxkml.declare.registry)
    "cvxkml.declare": (
        "cvxkml.solvers",
        "cvxkml.adapters",
        "cvxkml.estimators",
        "cvxkml.testing",
    ),
    "cvxkml.adapters": ("cvxkml.estimators", "cvxkml.testing"),
    "cvxkml.estimators": ("cvxkml.testing", "cvxpy"),
    "cvxkml.baselines": ("cvxkml.estimators", "cvxkml.testing"),
    "cvxkml.testing": ("cvxkml.estimators"),
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
        "cvxkml.testing",
        "cvxkml.baselines",
    )


#: the checkout's rooms outside the package (benchopt's own benchmark folder is left out)
CHECKOUT = ("benchmarks", "reference")


def _files():
    yield from PKG.rglob("*.py")
    for room in CHECKOUT:
        yield from (p for p in (ROOT / room).rglob("*.py") if "metric_learning" not in p.parts)


def _modules():
    mods = {}
    for path in _files():
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
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


#: benchmarks/ itself holds the command and what the commands share; the speed benchmarks sit in
#: benchmarks/bench/, one module each, the reproductions in reference/reproduce/, one per paper
BENCHMARKS_TOP = {"__init__", "__main__", "cli", "_commands", "_table", "_report", "_runner", "_parallel"}
BENCHMARKS_TOP |= {"_peer_metric_learn", "_peer_pylmnn", "solver_comparison", "benchopt_summary", "aux_exact_model"}
BENCHMARKS_TOP |= {"make_optima"}  # the generators of cvxkml/data/optima (a script, not a command)
BENCHMARKS_TOP |= {"_family"}  # the instance families the bench commands share (not a command)
#: the one module that lists the commands of both rooms (and the two that run it)
COMMAND_TABLE = {"benchmarks._table", "benchmarks.cli", "benchmarks.__main__"}


def test_benchmark_commands_sit_in_bench_and_reproductions_in_reference():
    top = ROOT / "benchmarks"
    mods = {p.stem for p in top.glob("*.py")}
    assert mods <= BENCHMARKS_TOP, f"commands that belong in benchmarks/bench/: {sorted(mods - BENCHMARKS_TOP)}"
    assert {p.name for p in top.iterdir() if (p / "__init__.py").exists()} == {"bench"}
    assert {p.stem for p in (ROOT / "reference").glob("*.py")} == {"__init__"}
    assert {p.name for p in (ROOT / "reference").iterdir() if (p / "__init__.py").exists()} == {"reproduce"}


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


def test_the_package_imports_nothing_of_the_checkout():
    """The wheel holds the library: no module of cvxkml imports the benchmarks or the reproductions."""
    bad = [
        (m, d)
        for m, deps in GRAPH.items()
        if m == "cvxkml" or m.startswith("cvxkml.")
        for d in deps
        if d.split(".")[0] in CHECKOUT
    ]
    assert not bad


def test_benchmarks_import_no_reproduction_and_reproductions_no_command():
    """Only the command table joins the two rooms: a benchmark never imports a reproduction, a
    reproduction never imports the command that lists it."""
    bad = [
        (m, d)
        for m, deps in GRAPH.items()
        if m.startswith("benchmarks") and m not in COMMAND_TABLE
        for d in deps
        if d.split(".")[0] == "reference"
    ]
    bad += [(m, d) for m, deps in GRAPH.items() if m.startswith("reference") for d in deps if d in COMMAND_TABLE]
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
    imports from another room (relative imports outside its subpackage, absolute imports of cvxkml)."""
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
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "cvxkml":
                target = node.module
            else:
                continue
            out += [
                (m, f"{target}.{a.name}")
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__") and f"{target}.{a.name}" not in MODULES
            ]
    return out


@pytest.mark.parametrize("room", CHECKOUT)
def test_checkout_rooms_reach_cvxkml_through_public_names(room):
    """Benchmarks time solver kernels through each solver module's public hook
    (``BENCH_KERNELS``), never through its private names; the reproductions likewise."""
    assert _private_imports(room) == []


#: a module of one responsibility fits in this many lines, a function in that many (docstring included)
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 800, 150


def test_no_module_or_function_of_the_package_is_too_long():
    long_modules, long_functions = [], []
    for path in sorted(PKG.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT)
        if len(source.splitlines()) > MAX_MODULE_LINES:
            long_modules.append(f"{rel} ({len(source.splitlines())} lines)")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{rel}:{node.lineno} {node.name} ({length} lines)")
    assert not long_modules, f"split into private modules of one responsibility: {long_modules}"
    assert not long_functions, f"split into helpers: {long_functions}"
