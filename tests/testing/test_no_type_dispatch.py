"""cvxkml.testing judges every answer through the problem's own hooks (Problem.answer_primal,
check_answer, answer_objective, …), never by looking at the problem's type: a user's problem
class, regularizer or constraint family gets exactly the built-ins' checks.

The source of ``cvxkml/testing/*.py`` is parsed with ``ast``; the test fails on

* ``isinstance(x, C)`` / ``issubclass(x, C)`` where C names a class of ``cvxkml.declare``
  (a problem family, a regularizer, a space, …) or of ``cvxkml.sideinfo`` (a constraint
  family) — through a module alias (``declare.IPLR``, ``declare.regularizers.LogDet``) or a
  name imported from those modules (``SpectralProblem``, ``LogDet``);
* ``type(x) is C`` / ``type(x) == C`` with such a C;
* any ``__mro__`` lookup (the transitional adapters' table of classes walked along the MRO).

The one allowed reference is the base class ``Problem`` itself: ``check_contract`` asserts
that what it is given is a :class:`~cvxkml.declare.Problem` (the contract's first clause), which
dispatches on nothing.
"""

import ast
import inspect
from pathlib import Path

import pytest

import cvxkml.testing

TESTING = Path(cvxkml.testing.__file__).parent
WATCHED = ("cvxkml.declare", "cvxkml.sideinfo")
ALLOWED = {"Problem"}  # the contract's base class: "is it a Problem at all", no dispatch


def _family_class_names() -> set:
    """Every class defined in cvxkml.declare.* or cvxkml.sideinfo, and every subclass of
    Problem and Regularizer that cvxkml defines, by name."""
    import importlib
    import pkgutil

    import cvxkml.declare
    import cvxkml.sideinfo
    from cvxkml.declare import Problem, Regularizer

    names = set()
    modules = [cvxkml.sideinfo, cvxkml.declare]
    modules += [
        importlib.import_module(f"cvxkml.declare.{m.name}") for m in pkgutil.iter_modules(cvxkml.declare.__path__)
    ]
    for mod in modules:
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and obj.__module__.startswith(WATCHED):
                names.add(name)
    stack = [Problem, Regularizer]
    while stack:
        cls = stack.pop()
        if cls.__module__.startswith("cvxkml."):
            names.add(cls.__name__)
        stack.extend(cls.__subclasses__())
    return names - ALLOWED


def _resolve(module: str | None, level: int, package: str) -> str:
    """The absolute module of ``from <level dots><module> import …`` in ``package``."""
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _watched(module: str) -> bool:
    return any(module == w or module.startswith(w + ".") for w in WATCHED)


def _is_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _bindings(tree, package: str) -> tuple[set, set]:
    """(aliases bound to a watched module, names imported from a watched module)."""
    aliases, names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _watched(a.name):
                    aliases.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(node.module, node.level, package)
            for a in node.names:
                full = f"{mod}.{a.name}" if mod else a.name
                if _watched(full) and _is_module(full):
                    aliases.add(a.asname or a.name)  # a module (from .. import declare)
                elif _watched(mod):
                    names.add(a.asname or a.name)  # a class (from ..declare.base import X)
    return aliases, names


def _dotted(node) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


def _type_refs(node, aliases, imported, families) -> list[str]:
    """The watched classes that ``node`` (a class argument) names."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute):
            path = _dotted(sub)
            if path and path[-1] not in ALLOWED and (path[0] in aliases or path[-1] in families):
                found.append(".".join(path))
        elif isinstance(sub, ast.Name):
            if sub.id not in ALLOWED and (sub.id in imported or sub.id in families):
                found.append(sub.id)
    return found


def type_dispatch(source: str, package: str = "cvxkml.testing", families: set | None = None) -> list[str]:
    """Every type dispatch on a watched class in ``source`` (one line each: line and what)."""
    families = _family_class_names() if families is None else families
    tree = ast.parse(source)
    aliases, imported = _bindings(tree, package)
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
        ):
            if len(node.args) >= 2:
                for ref in _type_refs(node.args[1], aliases, imported, families):
                    out.append(f"line {node.lineno}: {node.func.id}(…, {ref})")
        elif isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.Is, ast.Eq, ast.IsNot, ast.NotEq)) for op in node.ops
        ):
            sides = [node.left, *node.comparators]
            typed = any(
                isinstance(s, ast.Call)
                and isinstance(s.func, ast.Name)
                and s.func.id == "type"
                or isinstance(s, ast.Attribute)
                and s.attr == "__class__"
                for s in sides
            )
            if typed:
                for s in sides:
                    for ref in _type_refs(s, aliases, imported, families):
                        out.append(f"line {node.lineno}: type(…) compared with {ref}")
        elif isinstance(node, ast.Attribute) and node.attr == "__mro__":
            out.append(f"line {node.lineno}: an __mro__ lookup")
    return out


def test_the_families_are_known_to_the_check():
    families = _family_class_names()
    for name in ("SpectralProblem", "IPLR", "ExtendedProblem", "LMNNProblem", "KCR", "MuWeightStep", "LogDet"):
        assert name in families
    assert {"RankOneWeightStep", "SpectralReweighting", "EmbeddingWeightProblem", "ConstraintAtom"} <= families
    assert "Problem" not in families and "Solution" not in families


@pytest.mark.parametrize(
    "source",
    [
        "from .. import declare\ndef f(p):\n    return isinstance(p, declare.IPLR)\n",
        "from .. import declare\ndef f(p):\n    return isinstance(p, (declare.KCR, declare.regularizers.LogDet))\n",
        "from ..declare.base import SpectralProblem\ndef f(p):\n    return isinstance(p, SpectralProblem)\n",
        "from ..declare.regularizers import LogDet as L\ndef f(r):\n    return isinstance(r, L)\n",
        "import cvxkml.declare\ndef f(p):\n    return isinstance(p, cvxkml.declare.LMNNProblem)\n",
        "def f(r):\n    from ..declare import VonNeumann\n    return issubclass(type(r), VonNeumann)\n",
        "from ..sideinfo import PairConstraints\ndef f(a):\n    return type(a) is PairConstraints\n",
        "def f(p, table):\n    return [table[c] for c in type(p).__mro__ if c in table]\n",
    ],
)
def test_the_check_catches_type_dispatch(source):
    assert type_dispatch(source), source


def test_the_check_lets_answers_and_the_contract_base_class_through():
    source = (
        "from ..declare.problem import Problem\nfrom ..solution import Solution\nimport numpy as np\n"
        "def f(problem, answer, name):\n"
        "    assert isinstance(problem, Problem)\n"
        "    return isinstance(answer, (Solution, tuple, np.ndarray)) and isinstance(name, str)\n"
    )
    assert type_dispatch(source) == []


def test_cvxkml_testing_has_no_type_dispatch():
    families = _family_class_names()
    found = {}
    for path in sorted(TESTING.glob("*.py")):
        hits = type_dispatch(path.read_text(encoding="utf-8"), families=families)
        if hits:
            found[path.name] = hits
    assert not found, (
        f"cvxkml.testing dispatches on problem/regularizer/family types: {found}; read the answer "
        "through the problem's hooks (cvxkml.declare.Problem.answer_primal, check_answer, …) instead"
    )
