"""The gallery scripts' definitions for the tests, loaded once per session.

A gallery script keeps its demo under ``if __name__ == "__main__":``, so importing it defines
its classes (and registers its solvers) without running the demo.  Every test file takes them
from here, so they all see the same class objects — one registration of a script's solver,
not one per test file that loads it."""

import importlib.util
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    """The module of ``examples/<name>.py``, executed once and kept in ``sys.modules``."""
    key = f"cvxkml_examples_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, EXAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]
            raise
    return sys.modules[key]
