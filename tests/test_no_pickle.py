"""No pickle on any path a user or a downloaded folder supplies (loading a pickle runs
whatever code it carries): a scan of the package for unsafe loaders, and the
``reproduce mkl --resume DIR`` store (:class:`benchmarks._parallel.TaskStore`) reading a
planted file without running it."""

import ast
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

import cvxkml
from benchmarks._parallel import StoreFileError, TaskStore, _read_npy_member

PACKAGE = Path(cvxkml.__file__).parent

#: modules whose import alone means deserializing code-carrying objects
UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "cloudpickle", "dill", "shelve", "marshal", "jsonpickle"}
#: attribute calls that run code from a file: (object name, function)
UNSAFE_CALLS = {
    ("joblib", "load"),
    ("torch", "load"),
    ("pd", "read_pickle"),
    ("pandas", "read_pickle"),
    ("yaml", "load"),
    ("yaml", "unsafe_load"),
    ("np", "load"),
    ("numpy", "load"),
}


def _unsafe_uses(tree, where):
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad += [
                f"{where}:{node.lineno} import {a.name}" for a in node.names if a.name.split(".")[0] in UNSAFE_MODULES
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in UNSAFE_MODULES:
            bad.append(f"{where}:{node.lineno} from {node.module} import ...")
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module in ("joblib", "torch")
            and any(a.name == "load" for a in node.names)
        ):
            bad.append(f"{where}:{node.lineno} from {node.module} import load")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and (node.func.value.id, node.func.attr) in UNSAFE_CALLS
        ):
            if node.func.attr == "load" and node.func.value.id in ("np", "numpy"):
                # np.load only with an explicit allow_pickle=False
                ok = any(
                    k.arg == "allow_pickle" and isinstance(k.value, ast.Constant) and k.value.value is False
                    for k in node.keywords
                )
                if ok:
                    continue
            bad.append(f"{where}:{node.lineno} {node.func.value.id}.{node.func.attr}(...)")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("loads", "load", "Unpickler")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in UNSAFE_MODULES
        ):
            bad.append(f"{where}:{node.lineno} {node.func.value.id}.{node.func.attr}(...)")
    return bad


def test_the_package_has_no_unsafe_loader():
    """No module of cvxkml imports pickle (or cloudpickle, dill, shelve, marshal), calls
    joblib.load, torch.load, pandas.read_pickle or yaml.load, or np.load without an explicit
    allow_pickle=False."""
    bad = []
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50
    for f in files:
        bad += _unsafe_uses(ast.parse(f.read_text(encoding="utf-8")), f.relative_to(PACKAGE.parent))
    assert bad == []


def test_the_scan_finds_what_it_looks_for():
    """The scan is not vacuous: each forbidden form in a snippet is found."""
    snippets = [
        "import pickle",
        "from pickle import load",
        "import dill",
        "joblib.load(p)",
        "torch.load(p)",
        "np.load(p)",
        "np.load(p, allow_pickle=True)",
        "pd.read_pickle(p)",
        "from joblib import load",
        "yaml.load(s)",
    ]
    for s in snippets:
        assert _unsafe_uses(ast.parse(s), "x"), s
    assert not _unsafe_uses(ast.parse("np.load(p, allow_pickle=False)"), "x")


class _Marker:
    """Unpickling this writes a marker file (what a planted pickle could do)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (Path.write_text, (Path(self.path), "ran"))


def _result():
    return {
        "correct": {"1-NN": np.array([True, False, True]), "LMNN_H": np.zeros(0, bool)},
        "info": {
            "mu": [0.25, 0.75],
            "w": [None, np.arange(3.0)],
            "seconds": 1.5,
            "gap": float("nan"),
            "labels": np.array(["a", "bc"]),
            "pair": (1, "x"),
        },
        "fits": np.int64(3),
        "unconverged": 0,
        "kernels": ["linear()", "gaussian(sigma=1)"],
    }


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, z) for x, z in zip(a, b))
    if isinstance(a, float) and a != a:
        return b != b
    return a == b and (type(a) is type(b) or isinstance(a, np.integer))


def test_task_store_round_trip_is_exact(tmp_path):
    store = TaskStore(tmp_path)
    key = TaskStore.key(np.arange(3), step="x")
    store.save(key, _result())
    assert [p.name for p in tmp_path.iterdir()] == [f"{key}.npz"]
    assert _same(_result(), store.load(key))
    with pytest.raises(TypeError, match="may not hold"):
        store.save(key, {"f": lambda: 0})
    with pytest.raises(TypeError, match="dtype object"):
        store.save(key, {"f": np.array([{}], dtype=object)})


def test_planted_pickle_in_the_resume_folder_runs_nothing(tmp_path):
    """No code execution from the resume folder: a pickle planted in DIR under the store's old
    file name is never read, so the marker file is never written; the task counts as not stored."""
    marker = tmp_path / "marker"
    store = TaskStore(tmp_path / "dir")
    key = TaskStore.key(np.arange(3), step="x")
    (store.directory / f"{key}.pkl").write_bytes(pickle.dumps(_Marker(marker)))
    assert store.load(key) is None and key not in store
    # a pickle planted under the new name is not a zip archive: a typed refusal, nothing runs
    (store.directory / f"{key}.npz").write_bytes(pickle.dumps(_Marker(marker)))
    with pytest.raises(StoreFileError, match="delete it"):
        store.load(key)
    assert not marker.exists()


def _rewrite(path, **members):
    """The store file at ``path`` with members replaced (raw bytes)."""
    with zipfile.ZipFile(path) as zf:
        old = {n: zf.read(n) for n in zf.namelist()}
    old.update(members)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, b in old.items():
            zf.writestr(n, b)


def _npy(a):
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, allow_pickle=True)
    return buf.getvalue()


def test_store_refuses_changed_damaged_and_foreign_files(tmp_path):
    store = TaskStore(tmp_path)
    key = TaskStore.key(np.arange(3), step="x")
    other = TaskStore.key(np.arange(4), step="x")
    path = store.directory / f"{key}.npz"

    def fresh():
        store.save(key, _result())

    cases = {
        "an array changed": lambda: _rewrite(path, **{"a0.npy": _npy(np.array([True, True, True]))}),
        "an object array (pickle inside .npy)": lambda: _rewrite(
            path, **{"a0.npy": _npy(np.array([_Marker(tmp_path / "m")], dtype=object))}
        ),
        "truncated": lambda: path.write_bytes(path.read_bytes()[:100]),
        "another key's file": lambda: (
            store.save(other, _result()),
            path.write_bytes((store.directory / f"{other}.npz").read_bytes()),
        ),
        "not a zip": lambda: path.write_bytes(b"hello"),
        "header is not JSON": lambda: _rewrite(path, **{"__store__.npy": _npy(np.frombuffer(b"{nope", np.uint8))}),
        "a shape larger than the member": lambda: _rewrite(path, **{"a0.npy": _npy(np.zeros(3, bool))[:-3]}),
    }
    for _what, damage in cases.items():
        fresh()
        damage()
        with pytest.raises(StoreFileError, match=str(path.name)):
            store.load(key)
    assert not (tmp_path / "m").exists()
    with pytest.raises(StoreFileError, match="64 hex"):
        store.load("../../etc/passwd")


def test_store_header_edit_is_caught_by_the_hash(tmp_path):
    store = TaskStore(tmp_path)
    key = TaskStore.key(np.arange(3), step="x")
    path = store.directory / f"{key}.npz"
    store.save(key, {"fits": 3})
    with zipfile.ZipFile(path) as zf:
        header = json.loads(np.lib.format.read_array(zf.open("__store__.npy")).tobytes())
    header["result_json"] = header["result_json"].replace("3", "4")
    _rewrite(path, **{"__store__.npy": _npy(np.frombuffer(json.dumps(header).encode(), np.uint8))})
    with pytest.raises(StoreFileError, match="content hash"):
        store.load(key)


def test_npy_member_size_is_checked_before_decompression(tmp_path):
    """A member declaring more bytes than the budget is refused before it is read (a zip
    bomb costs nothing)."""
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a0.npy", _npy(np.zeros(5_000_000)))  # 40 MB of zeros, ~40 kB on disk
    assert path.stat().st_size < 100_000
    with zipfile.ZipFile(path) as zf, pytest.raises(ValueError, match="above the limit"):
        _read_npy_member(zf, zf.getinfo("a0.npy"), budget=1_000_000)
