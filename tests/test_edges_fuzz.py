"""Fuzz the edges: crafted estimator files and command-line vectors,
deterministic (fixed seeds), with 0 untyped errors and 0 silent NaN.

* ≥ 200 estimator files: mutations of saved files of four estimator families (byte flips,
  truncations, header leaves replaced by hostile values, keys removed, array members
  replaced by arrays of other dtypes, shapes and values, extra members).  Each load either
  raises :class:`cvxkml.errors.EstimatorFileError` or gives an estimator whose
  ``transform`` / ``pair_distance`` / ``predict`` on real data are finite.
"""

import copy
import io
import json
import warnings
import zipfile

import numpy as np
import pytest
from sklearn.datasets import load_wine

import cvxkml.estimators as E
from cvxkml.errors import EstimatorFileError

N_FILE_CASES = 240

HOSTILE = [
    None,
    -1,
    0,
    1e308,
    -1e308,
    "abc",
    "",
    [],
    {},
    True,
    [[[[1]]]],
    {"__array__": "a999"},
    {"__array__": 3},
    {"__float__": "nan"},
    {"__float__": "abc"},
    {"__tuple__": 5},
    {"__dict__": []},
    {"__object__": "os:system", "state": {}},
    {"__object__": "cvxkml.kernels:Kernel", "state": {"name": 3}},
    {"__object__": "cvxkml.kernels:Kernel", "state": {"name": "gaussian", "params": {"gamma": -1.0}}},
    {
        "__csr__": {
            "data": {"__array__": "a0"},
            "indices": {"__array__": "a0"},
            "indptr": {"__array__": "a0"},
            "shape": [3, 3],
        }
    },
    {"__slice__": [0, "x", 1]},
    2**70,
    -(2**70),
    "nan",
    [None] * 5,
]
ARRAYS = [
    np.array([np.nan]),
    np.full((3, 3), np.inf),
    np.zeros((0,)),
    np.zeros((2, 2), np.int8),
    np.zeros((13, 13), np.float32),
    np.ones((5, 50)),
    np.array(7.0),
    np.arange(10),
    np.array([True, False]),
    np.array(["a", "b"]),
    np.full((13, 13), 1e308),
    -np.ones((50, 13)),
    np.zeros((50, 13)),
    np.eye(13)[::-1],
    np.zeros((1, 1, 1)),
]


def _fit_all(X, y):
    ests = {
        "itml": E.ITML(n_similar=10, n_dissimilar=10, random_state=0),
        "kitml": E.KernelITML(n_similar=10, n_dissimilar=10, random_state=0),
        "kcr": E.KCRClassifier(tol=1e-2),
        "lmnn": E.LMNN(kernel="gaussian", k=2, max_iter=50),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for est in ests.values():
            est.fit(X, y)
    out = {}
    for k, est in ests.items():
        buf = io.BytesIO()
        est.save(buf)
        out[k] = buf.getvalue()
    return out


@pytest.fixture(scope="module")
def base():
    X, y = load_wine(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))
    return _fit_all(X[idx][:50], y[idx][:50]), X[idx][50:90]


def _members(blob):
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _npy(a):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def _zip(m):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, b in m.items():
            zf.writestr(n, b)
    return out.getvalue()


def _leaves(v, path=()):
    """Paths of every value in a JSON tree."""
    yield path
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _leaves(x, path + (k,))
    elif isinstance(v, list):
        for k, x in enumerate(v):
            yield from _leaves(x, path + (k,))


def _set(tree, path, value, delete=False):
    for k in path[:-1]:
        tree = tree[k]
    if delete and isinstance(tree, dict):
        del tree[path[-1]]
    else:
        tree[path[-1]] = value


def mutate(blob, rng):
    kind = int(rng.integers(6))
    if kind == 0:  # bit flips
        b = bytearray(blob)
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(len(b)))] ^= 1 << int(rng.integers(8))
        return bytes(b), "flip"
    if kind == 1:  # truncation
        return blob[: int(rng.integers(len(blob)))], "truncate"
    m = _members(blob)
    header = json.loads(np.lib.format.read_array(io.BytesIO(m["__cvxkml__.npy"])).tobytes())
    if kind in (2, 3):  # a leaf replaced, or a key removed
        paths = [p for p in _leaves(header) if p]
        for _ in range(int(rng.integers(1, 3))):
            p = paths[int(rng.integers(len(paths)))]
            try:
                _set(header, p, copy.deepcopy(HOSTILE[int(rng.integers(len(HOSTILE)))]), delete=kind == 3)
            except (KeyError, IndexError, TypeError):
                pass
        m["__cvxkml__.npy"] = _npy(np.frombuffer(json.dumps(header).encode(), np.uint8))
        return _zip(m), "header"
    names = sorted(n for n in m if n != "__cvxkml__.npy")
    if kind == 4:  # an array member replaced
        m[names[int(rng.integers(len(names)))]] = _npy(ARRAYS[int(rng.integers(len(ARRAYS)))])
        return _zip(m), "array"
    m[f"a{int(rng.integers(1000))}.npy"] = _npy(ARRAYS[int(rng.integers(len(ARRAYS)))])  # extra member
    return _zip(m), "extra"


def _use(est, Xte):
    outs = [est.transform(Xte), est.pair_distance(np.stack([Xte[:10], Xte[10:20]], axis=1))]
    if hasattr(est, "predict_proba"):
        outs.append(est.predict_proba(Xte))
    for o in outs:
        assert np.all(np.isfinite(o)), "silent NaN"


def test_crafted_estimator_files(base):
    files, Xte = base
    rng = np.random.default_rng(20240601)
    names = sorted(files)
    tally = {"refused": 0, "loaded": 0}
    for case in range(N_FILE_CASES):
        name = names[case % len(names)]
        blob, how = mutate(files[name], rng)
        try:
            est = E.load(io.BytesIO(blob))
        except EstimatorFileError as exc:
            assert "\n" not in str(exc)
            tally["refused"] += 1
            continue
        except Exception as exc:  # an untyped error is a failure
            pytest.fail(f"case {case} ({name}, {how}): {type(exc).__name__}: {exc}")
        tally["loaded"] += 1
        _use(est, Xte)
    assert tally["refused"] + tally["loaded"] == N_FILE_CASES >= 200
    assert tally["refused"] > N_FILE_CASES // 2 and tally["loaded"] > 10
