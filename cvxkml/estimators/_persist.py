"""Saving and loading fitted estimators without pickle: one ``.npz`` file.

Format (``format_version`` 1)
-----------------------------
A NumPy ``.npz`` archive (:func:`numpy.savez_compressed`), read back with
``allow_pickle=False``:

* ``__cvxkml__`` — the header, UTF-8 JSON stored as a ``uint8`` array::

      {"format": "cvxkml.estimator", "format_version": 1,
       "class": "ITML", "module": "cvxkml.estimators.logdet", "cvxkml_version": "0.1.0",
       "params": {...}, "state": {...}, "unsaved_params": [...], "dropped": [...]}

  ``params`` are the constructor parameters (``get_params(deep=False)``), ``state`` every
  attribute ``fit`` set (the learned map and its data: components, training points, base
  kernel, factorization, learned kernel, standardization, labels, the solver's
  ``solution_``, …).
* ``a0``, ``a1``, … — the arrays the header refers to, bit for bit (an array shared by
  several attributes, e.g. the training points of the estimator and of its learned
  kernel, is stored once and shared again after loading).

Values in the header are JSON scalars, lists, and tagged objects: ``{"__array__": "a3"}``
(an array; ``"str": true`` for an object array of strings, kept as unicode), ``{"__tuple__":
[...]}``, ``{"__dict__": {...}}``, ``{"__float__": "nan"}`` (non-finite floats),
``{"__slice__": [start, stop, step]}``, ``{"__csr__": {...}}`` (a SciPy CSR matrix) and
``{"__object__": "module:Class", "state": {...}}`` for the library's own value classes
(:data:`SAFE_CLASSES`: kernels, factorizations, learned kernels, pair constraints, solver
results, …), restored by setting their attributes — no code from the file is run, and a
class outside that list is refused.

What is not saved: the ``callback`` parameter and a ``random_state`` given as a
RandomState or Generator (they become None, listed in ``unsaved_params``; they only
matter for fitting), and diagnostic entries of ``solution_.info`` / ``result_`` that are
not plain data (listed in ``dropped``, set to None).  Everything ``transform``,
``pair_distance``, ``get_metric``, ``learned_kernel``, ``predict`` use is saved exactly,
so they give bit-identical results after loading.
"""
from __future__ import annotations

import importlib
import json
import math
import os
import numbers

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError

__all__ = ["save", "load", "EstimatorFileError", "FormatVersionError", "EstimatorClassError",
           "FORMAT", "FORMAT_VERSION", "SAFE_CLASSES"]

FORMAT = "cvxkml.estimator"
FORMAT_VERSION = 1
_HEADER = "__cvxkml__"

#: the classes whose instances may be stored inside a saved estimator ("module:qualname")
SAFE_CLASSES = frozenset({
    "cvxkml.kernels:Kernel",
    "cvxkml.estimators._base:StandardizedKernel",
    "cvxkml.factor:Factorization",
    "cvxkml.learned:LearnedKernel",
    "cvxkml.sideinfo:PairConstraints",
    "cvxkml.solution:Solution",
    "cvxkml.mkl_kernels:KernelSet",
    "cvxkml.mkl_kernels:SourceKernel",
    "cvxkml.solvers.yeung:LandmarkKernel",
    "cvxkml.solvers.yeung:BaseSpace",
    "cvxkml.solvers.yeung:LearnedSpace",
    "cvxkml.declare.mkl:MKLResult",
})
#: fitted attributes kept as far as they are plain data (diagnostics, not the learned map)
_LENIENT = frozenset({"solution_", "result_"})


class EstimatorFileError(InvalidInputError):
    """A file that is not a saved cvxkml estimator, or is damaged."""


class FormatVersionError(EstimatorFileError):
    """A saved estimator in another format version than this cvxkml reads."""


class EstimatorClassError(EstimatorFileError):
    """A saved estimator of another class than the one asked to load it."""


class _Unencodable(Exception):
    pass


def _qualname(obj) -> str:
    cls = type(obj)
    return f"{cls.__module__}:{cls.__qualname__}"


# --------------------------------------------------------------------------- encoding
class _Writer:
    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}
        self._ids: dict[int, str] = {}
        self._keep = []                 # keep encoded arrays alive (their id() stays unique)
        self.dropped: list[str] = []

    def array(self, a: np.ndarray) -> dict:
        key = self._ids.get(id(a))
        extra = {}
        if a.dtype == object:
            flat = a.ravel()
            if not all(isinstance(v, str) for v in flat):
                raise _Unencodable(f"an object array holding {type(flat[0]).__name__ if flat.size else '?'}")
            extra = {"str": True}
        if key is None:
            key = f"a{len(self.arrays)}"
            self.arrays[key] = a.astype(str) if extra else a
            self._ids[id(a)] = key
            self._keep.append(a)
        return {"__array__": key, **extra}

    def encode(self, v, where: str, lenient: bool = False):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.ndarray):
            return self.array(v)
        if isinstance(v, np.generic):
            return self.array(np.asarray(v)) | {"scalar": True}
        if isinstance(v, numbers.Integral):
            return int(v)
        if isinstance(v, float):
            return v if math.isfinite(v) else {"__float__": repr(v)}
        if isinstance(v, tuple):
            return {"__tuple__": [self.encode(x, f"{where}[{i}]", lenient) for i, x in enumerate(v)]}
        if isinstance(v, list):
            return [self.encode(x, f"{where}[{i}]", lenient) for i, x in enumerate(v)]
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if not isinstance(k, str):
                    raise _Unencodable(f"{where}: a dict key of type {type(k).__name__}")
                out[k] = self._member(x, f"{where}[{k!r}]", lenient)
            return {"__dict__": out}
        if isinstance(v, slice):
            return {"__slice__": [self.encode(v.start, where), self.encode(v.stop, where),
                                  self.encode(v.step, where)]}
        if sp.issparse(v):
            c = sp.csr_matrix(v)
            return {"__csr__": {"data": self.array(c.data), "indices": self.array(c.indices),
                                "indptr": self.array(c.indptr), "shape": list(c.shape)}}
        name = _qualname(v)
        if name in SAFE_CLASSES and hasattr(v, "__dict__"):
            return {"__object__": name,
                    "state": {k: self._member(x, f"{where}.{k}", lenient) for k, x in vars(v).items()}}
        raise _Unencodable(f"{where}: an object of type {name}")

    def _member(self, x, where, lenient):
        if not lenient:
            return self.encode(x, where)
        try:
            return self.encode(x, where, lenient)
        except _Unencodable:
            self.dropped.append(where)
            return None


class _Reader:
    def __init__(self, arrays):
        self.arrays = arrays
        self._cache: dict[str, np.ndarray] = {}

    def array(self, tag) -> np.ndarray:
        key = tag["__array__"]
        if key not in self._cache:
            if key not in self.arrays:
                raise EstimatorFileError(f"The file refers to an array {key!r} it does not hold.")
            a = self.arrays[key]
            self._cache[key] = a.astype(object) if tag.get("str") else a
        a = self._cache[key]
        return a[()] if tag.get("scalar") else a

    def decode(self, v):
        if v is None or isinstance(v, (bool, str, int, float)):
            return v
        if isinstance(v, list):
            return [self.decode(x) for x in v]
        if not isinstance(v, dict) or len(v) == 0:
            raise EstimatorFileError(f"Unexpected value in the header: {v!r}.")
        if "__array__" in v:
            return self.array(v)
        if "__tuple__" in v:
            return tuple(self.decode(x) for x in v["__tuple__"])
        if "__dict__" in v:
            return {k: self.decode(x) for k, x in v["__dict__"].items()}
        if "__float__" in v:
            return float(v["__float__"])
        if "__slice__" in v:
            return slice(*(self.decode(x) for x in v["__slice__"]))
        if "__csr__" in v:
            c = v["__csr__"]
            return sp.csr_matrix((self.array(c["data"]), self.array(c["indices"]), self.array(c["indptr"])),
                                 shape=tuple(c["shape"]))
        if "__object__" in v:
            name = v["__object__"]
            if name not in SAFE_CLASSES:
                raise EstimatorFileError(f"The file holds an object of class {name}, which cvxkml does not load.")
            module, _, qual = name.partition(":")
            cls = getattr(importlib.import_module(module), qual)
            obj = cls.__new__(cls)
            obj.__dict__.update({k: self.decode(x) for k, x in v["state"].items()})
            return obj
        raise EstimatorFileError(f"Unexpected value in the header: {v!r}.")


# --------------------------------------------------------------------------- API
def save(estimator, path, classes) -> None:
    """The writer of this format behind :func:`cvxkml.estimators.save` (parameters and
    errors documented there); ``classes`` are the estimator classes it writes (the registry
    of :mod:`cvxkml.estimators._base`: this module imports no estimator).
    """
    from sklearn.utils.validation import check_is_fitted

    cls = type(estimator)
    if not any(isinstance(estimator, c) for c in classes):
        raise InvalidInputError(f"save takes a cvxkml estimator; got {cls.__name__}.")
    check_is_fitted(estimator)
    if cls not in classes:
        raise InvalidInputError(
            f"save writes the estimators of cvxkml.estimators.ESTIMATORS; {cls.__name__} is not one "
            "(a subclass may hold state this format does not know).")
    w = _Writer()
    params = estimator.get_params(deep=False)
    unsaved = []
    enc_params = {}
    for name, value in params.items():
        if name == "callback" or isinstance(value, (np.random.RandomState, np.random.Generator)):
            if value is not None:
                unsaved.append(name)
            enc_params[name] = None
            continue
        try:
            enc_params[name] = w.encode(value, name)
        except _Unencodable as exc:
            raise InvalidInputError(f"Cannot save parameter {name}: {exc}.") from None
    state = {}
    for name, value in vars(estimator).items():
        if name in params:
            continue
        try:
            state[name] = w._member(value, name, name in _LENIENT)
        except _Unencodable as exc:
            raise InvalidInputError(f"Cannot save the fitted attribute {name}: {exc}.") from None
    from .. import __version__
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "class": cls.__name__,
              "module": cls.__module__, "cvxkml_version": __version__, "params": enc_params,
              "state": state, "unsaved_params": unsaved, "dropped": w.dropped}
    blob = np.frombuffer(json.dumps(header, allow_nan=False).encode("utf-8"), dtype=np.uint8)
    np.savez_compressed(path, **{_HEADER: blob}, **w.arrays)


def _read(path):
    try:
        with np.load(path, allow_pickle=False) as z:
            if not hasattr(z, "files") or _HEADER not in z.files:
                raise EstimatorFileError(f"{_name(path)} is not a saved cvxkml estimator (no {_HEADER} entry).")
            arrays = {k: z[k] for k in z.files}
    except EstimatorFileError:
        raise
    except (OSError, ValueError, EOFError) as exc:
        raise EstimatorFileError(f"Cannot read {_name(path)} as a saved cvxkml estimator: {exc}") from exc
    try:
        header = json.loads(arrays.pop(_HEADER).tobytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise EstimatorFileError(f"{_name(path)} has a damaged header: {exc}") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise EstimatorFileError(f"{_name(path)} is not a saved cvxkml estimator.")
    if header.get("format_version") != FORMAT_VERSION:
        raise FormatVersionError(
            f"{_name(path)} was written in format version {header.get('format_version')!r} (cvxkml "
            f"{header.get('cvxkml_version')}); this cvxkml reads version {FORMAT_VERSION} only. Refit "
            "the estimator, or load it with the cvxkml version that wrote it.")
    return header, arrays


def _name(path):
    return repr(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else "the file"


def load(path, classes, cls=None):
    """The reader of this format behind :func:`cvxkml.estimators.load` (parameters, returns
    and errors documented there); ``classes`` are the estimator classes a file may hold
    (the registry of :mod:`cvxkml.estimators._base`: this module imports no estimator).
    """
    header, arrays = _read(path)
    by_name = {c.__name__: c for c in classes}
    name = header.get("class")
    target = by_name.get(name)
    if target is None:
        raise EstimatorClassError(f"{_name(path)} holds a {name!r}, which is not a cvxkml estimator.")
    if cls is not None and target is not cls:
        raise EstimatorClassError(
            f"{_name(path)} holds a {name}, not a {getattr(cls, '__name__', cls)}; load it with "
            f"{name}.load or cvxkml.estimators.load.")
    r = _Reader(arrays)
    try:
        params = {k: r.decode(v) for k, v in header["params"].items()}
        state = {k: r.decode(v) for k, v in header["state"].items()}
    except (KeyError, TypeError, AttributeError, ImportError) as exc:
        raise EstimatorFileError(f"{_name(path)} has a damaged header: {exc!r}") from exc
    est = target(**params)
    for k, v in state.items():
        setattr(est, k, v)
    return est
