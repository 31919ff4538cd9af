"""Old import paths keep working for one release: the same module, with a DeprecationWarning."""

import importlib
import sys

import pytest

from cvxkml._deprecated import MOVED, MOVED_ATTRS


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_old_path_is_the_new_module_and_warns(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        mod = importlib.import_module(old)
    assert mod is importlib.import_module(new)
    public = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
    assert public and all(hasattr(mod, n) for n in public)


def test_unknown_old_path_still_fails():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("cvxkml.no_such_module")


@pytest.mark.parametrize("old, new", sorted(MOVED_ATTRS.items()))
def test_moved_attribute_warns_and_is_the_same_object(old, new):
    module, name = old
    new, _, new_name = new.partition(":")  # "module:name" when the attribute was renamed
    new_name = new_name or name
    with pytest.warns(DeprecationWarning, match=f"{new}.{new_name}"):
        obj = getattr(importlib.import_module(module), name)
    assert obj is getattr(importlib.import_module(new), new_name)
    assert name not in getattr(importlib.import_module(module), "__all__", ())
    with pytest.raises(AttributeError):
        importlib.import_module(module).no_such_name  # noqa: B018 (the failing lookup is what is tested)


def test_python_dash_m_on_the_old_cli_path_runs_the_cli():
    """``python -m cvxkml.cli`` (the path before the layout move) still runs the command line,
    with a DeprecationWarning naming the new path."""
    import subprocess

    out = subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-m", "cvxkml.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("cvxkml ")
    assert "python -m cvxkml._cli" in out.stderr
