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
``{"__arrays__": "module:Class", "arrays": {...}}`` for a learned metric (its ``to_arrays``,
rebuilt and validated by ``from_arrays``: a factored metric stays factored) and
``{"__object__": "module:Class", "state": {...}}`` for the library's own value classes
(:data:`SAFE_CLASSES`: kernels, factorizations, learned kernels, pair constraints, solver
results, …), restored by setting their attributes — no code from the file is run, and a
class outside that list is refused.

Loading validates, never trusts
------------------------------
A file may come from anywhere.  :func:`load` runs no code from it and checks, in this order:

* the archive: only the members the header names are read (others are never decompressed),
  each member's declared size is checked against the budget (``max_bytes``, default
  :data:`MAX_BYTES`; the header at most :data:`MAX_HEADER_BYTES`) *before* it is
  decompressed, a ``.npy`` member's declared shape must match its size, object and
  structured dtypes are refused (no pickle), and a member is never decompressed past its
  declared size (a zip bomb costs nothing);
* the header: JSON of at most :data:`MAX_DEPTH` levels, the known tags only;
* the class: one of the estimators, in the module it was saved from, and the class
  ``load`` is called on (:func:`cvxkml.estimators.load` takes any);
* the parameters: the class's own ``__init__`` parameters only, each re-validated by the
  estimator's ``_parameter_constraints`` (as at the start of ``fit``);
* the fitted state: the attributes the class declares (its docstring's *Attributes*, plus
  ``_private_fitted``), every array numeric float64 and finite except index arrays (integer)
  and labels (any plain dtype), objects of :data:`SAFE_CLASSES` only;
* the model: ``n_features_in_``, ``X_fit_`` and the standardization agree, and the learned
  map is run once on a few probe points (``transform``, ``pair_distance``, ``get_metric``,
  ``learned_kernel``, ``predict``): a model whose arrays do not fit together, or that gives
  non-finite numbers, is refused.

Every failure is a :class:`cvxkml.errors.EstimatorFileError` (or its subclasses
:class:`FormatVersionError`, :class:`EstimatorClassError`) whose message names the file and
the reason.

What is not saved: the ``callback`` parameter and a ``random_state`` given as a
RandomState or Generator (they become None, listed in ``unsaved_params``; they only
matter for fitting), and diagnostic entries of ``solution_.info`` / ``result_`` that are
not plain data (listed in ``dropped``, set to None).  Everything ``transform``,
``pair_distance``, ``get_metric``, ``learned_kernel``, ``predict`` use is saved exactly,
so they give bit-identical results after loading.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import warnings
import zipfile

import numpy as np
import scipy.sparse as sp

from ..errors import EstimatorFileError, InvalidInputError
from ._persist_codec import (
    MAX_DEPTH,
    SAFE_CLASSES,
    _Reader,
    _Unencodable,
    _Writer,
    read_npy_member,
)
from ._persist_codec import register_regularizer as register_regularizer

__all__ = [
    "save",
    "load",
    "write",
    "read",
    "REGISTRY",
    "EstimatorFileError",
    "FormatVersionError",
    "EstimatorClassError",
    "FORMAT",
    "FORMAT_VERSION",
    "SAFE_CLASSES",
    "MAX_BYTES",
    "MAX_HEADER_BYTES",
    "MAX_DEPTH",
    "fitted_attributes",
    "read_npy_member",
]

FORMAT = "cvxkml.estimator"
FORMAT_VERSION = 1
_HEADER = "__cvxkml__"

#: fitted attributes kept as far as they are plain data (diagnostics, not the learned map)
_LENIENT = frozenset({"solution_", "result_"})
#: the most bytes :func:`load` decompresses from one file (all members it reads), unless
#: ``max_bytes`` says otherwise
MAX_BYTES = 1 << 31
#: the most bytes of the JSON header
MAX_HEADER_BYTES = 64 << 20
#: names of attributes (at any depth) that may hold integer arrays: indices
_INDEX_NAMES = frozenset(
    {
        "i",
        "j",
        "k",
        "l",
        "pivots",
        "targets_",
        "landmarks",
        "landmark_indices_",
        "pairs_",
        "_codes",
        "indices",
        "indptr",
        "columns",
        "n_regularized_",
        "n_regularized",
    }
)
#: names of attributes that may hold label arrays of any plain dtype
_LABEL_NAMES = frozenset({"classes_", "feature_names_in_", "labels", "y_"})
#: fitted attributes every estimator may have (scikit-learn's)
_COMMON_FITTED = frozenset({"n_features_in_", "feature_names_in_"})
_ATTRIBUTES = re.compile(r"^Attributes\n-+\n(.*?)(?:^\S[^\n]*\n-+\n|\Z)", re.S | re.M)
_ATTRIBUTE_LINE = re.compile(r"^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?::|$)")


class FormatVersionError(EstimatorFileError):
    """A saved estimator in another format version than this cvxkml reads."""


class EstimatorClassError(EstimatorFileError):
    """A saved estimator of another class than the one asked to load it."""


def fitted_attributes(cls) -> frozenset:
    """The fitted attributes ``cls`` declares: the names of its docstring's *Attributes*
    section, ``n_features_in_`` and ``feature_names_in_``, and the class's
    ``_private_fitted`` names.  A saved file may hold these and no other state."""
    doc = inspect.getdoc(cls) or ""
    names = set(_COMMON_FITTED) | set(getattr(cls, "_private_fitted", ()))
    m = _ATTRIBUTES.search(doc)
    if m:
        for line in m.group(1).splitlines():
            mm = _ATTRIBUTE_LINE.match(line)
            if mm:
                names |= {n.strip() for n in mm.group(1).split(",")}
    return frozenset(names)


def _check_arrays(v, where, fail, lenient=False, name=None, depth=0):
    """Every array in a decoded value: float64 and finite (integers at index names, any
    plain dtype at label names); in ``lenient`` (diagnostic) attributes only plain dtypes.
    ``name`` is the attribute or key the value sits under (list items keep their parent's)."""
    name = where if name is None else name
    if isinstance(v, np.ndarray):
        kind = v.dtype.kind
        if lenient or name in _LABEL_NAMES:
            ok = kind in "biufUO"
        elif kind in "iu":
            ok = name in _INDEX_NAMES
        elif kind == "f":
            if v.dtype != np.float64 or not np.isfinite(v).all():
                fail(
                    f"{where} must hold finite float64 numbers; it holds "
                    f"{'non-finite values' if v.dtype == np.float64 else v.dtype}"
                )
            ok = True
        else:
            ok = False
        if not ok:
            fail(f"{where} has dtype {v.dtype}, which this attribute may not have")
    elif isinstance(v, float) and not lenient and not math.isfinite(v):
        fail(f"{where} is {v}")
    elif isinstance(v, (list, tuple)):
        for k, x in enumerate(v):
            _check_arrays(x, f"{where}[{k}]", fail, lenient, name, depth + 1)
    elif isinstance(v, dict):
        for k, x in v.items():
            _check_arrays(x, f"{where}[{k!r}]", fail, lenient, str(k), depth + 1)
    elif sp.issparse(v):
        _check_arrays(v.data, f"{where}.data", fail, lenient, "data", depth + 1)
    elif hasattr(v, "__dict__") and f"{type(v).__module__}:{type(v).__qualname__}" in SAFE_CLASSES:
        for k, x in vars(v).items():
            _check_arrays(x, f"{where}.{k}", fail, lenient, k, depth + 1)


def _check_model(est, fail) -> None:
    """The fitted model is whole and consistent: ``n_features_in_``, ``X_fit_`` and the
    standardization agree, and the learned map runs on a few probe points and gives finite
    numbers of the right shapes."""
    n = getattr(est, "n_features_in_", None)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        fail(f"n_features_in_ must be a positive integer; got {n!r}")
    for name in ("n_iter_",):
        v = getattr(est, name, 0)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            fail(f"{name} must be a non-negative integer; got {v!r}")
    if not isinstance(getattr(est, "converged_", False), bool):
        fail(f"converged_ must be True or False; got {est.converged_!r}")
    precomputed = getattr(est, "kernel", None) == "precomputed"
    X = getattr(est, "X_fit_", None)
    if X is not None:
        if (
            not isinstance(X, np.ndarray)
            or X.ndim != 2
            or X.shape[0] < 1
            or X.shape[1] != n
            or (precomputed and X.shape[0] != n)
        ):
            fail(f"X_fit_ of shape {getattr(X, 'shape', None)} does not match n_features_in_ = {n}")
    for name in ("feature_mean_", "feature_scale_"):
        v = getattr(est, name, None)
        if v is not None and (not isinstance(v, np.ndarray) or v.shape != (n,)):
            fail(f"{name} of shape {getattr(v, 'shape', None)} does not match n_features_in_ = {n}")
    scale = getattr(est, "feature_scale_", None)
    if scale is not None and not np.all(scale > 0):
        fail("feature_scale_ must be positive")
    names = getattr(est, "feature_names_in_", None)
    if names is not None and (not isinstance(names, np.ndarray) or names.shape != (n,)):
        fail(f"feature_names_in_ does not match n_features_in_ = {n}")
    hook = getattr(est, "_check_loaded", None)
    if hook is not None:
        try:
            hook()
        except Exception as exc:  # noqa: BLE001
            fail(f"the stored model is inconsistent: {str(exc)[:200]}")
    # the probe: the learned map on 3 points
    what = "transform"
    try:
        if X is not None:
            P = X[np.arange(3) % X.shape[0]]
        else:
            P = np.random.default_rng(0).standard_normal((3, n))
            if scale is not None:
                P = P * scale + est.feature_mean_
        if names is not None:
            import pandas as pd

            P = pd.DataFrame(P, columns=list(names))
        with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
            warnings.simplefilter("error", RuntimeWarning)
            out = [est.transform(P)]
            if not precomputed:
                A = np.asarray(P, dtype=float)
                what = "pair_distance"
                out.append(est.pair_distance(np.stack([A, A[::-1]], axis=1)))
                what = "get_metric"
                out.append(np.array([est.get_metric()(A[0], A[1])]))
                if hasattr(est, "learned_kernel"):
                    what = "learned_kernel"
                    out.append(est.learned_kernel(P))
            if hasattr(est, "predict"):
                what = "predict"
                est.predict(P)
                if hasattr(est, "predict_proba"):
                    what = "predict_proba"
                    out.append(est.predict_proba(P))
    except EstimatorFileError:
        raise
    except Exception as exc:  # noqa: BLE001 -- anything the stored arrays cause
        fail(f"the stored model is inconsistent: {what} fails ({type(exc).__name__}: {str(exc)[:200]})")
    for o in out:
        o = np.asarray(o)
        if o.dtype.kind != "f" or o.shape[:1] not in ((3,), (1,)) or not np.all(np.isfinite(o)):
            fail("the stored model gives non-finite or malformed numbers")


# --------------------------------------------------------------------------- API
#: the library's estimator classes, registered by CvxkmlEstimator.__init_subclass__ (the
#: public tuple is cvxkml.estimators.ESTIMATORS; a test checks that both agree)
REGISTRY: list = []


def save(estimator, path) -> None:
    """Write a fitted cvxkml estimator to an ``.npz`` file without pickle (the format above).

    Parameters
    ----------
    estimator : estimator
        A fitted estimator of :data:`cvxkml.estimators.ESTIMATORS`.
    path : str, path-like or a writable binary file object
        ``.npz`` is appended to a file name without it (NumPy's rule).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        The estimator is not fitted.
    InvalidInputError
        Not a cvxkml estimator (a user's subclass included), or a fitted attribute that
        is not plain data.
    """
    write(estimator, path, tuple(REGISTRY))


def load(path, cls=None, *, max_bytes=None):
    """Read an estimator written by :func:`save`, validating everything in the file
    (nothing in it is trusted or run; the checks are listed above).

    Parameters
    ----------
    path : str, path-like or a readable binary file object
        The file written by :func:`save`.
    cls : estimator class or None
        When given, the file must hold an estimator of exactly this class (or of a
        subclass, when ``cls`` is a base such as ``CvxkmlEstimator``).
    max_bytes : int or None, default=None
        The most bytes decompressed from the file (None: :data:`MAX_BYTES`, 2 GiB); a file
        declaring more is refused before anything is decompressed.

    Returns
    -------
    estimator : the fitted estimator, with the parameters it was saved with (``callback``
        and a RandomState/Generator ``random_state`` as None).

    Raises
    ------
    cvxkml.errors.EstimatorFileError
        Not a saved cvxkml estimator, damaged, too large, or a model that fails validation
        (the message names the file and the reason).
    cvxkml.estimators.FormatVersionError
        Written in another format version.
    cvxkml.estimators.EstimatorClassError
        It holds another class than ``cls``, or a class this cvxkml does not have.
    """
    return read(path, tuple(REGISTRY), cls, max_bytes)


def write(estimator, path, classes) -> None:
    """The writer of this format behind :func:`save`; ``classes`` are the estimator classes
    it writes (:data:`REGISTRY`: this module imports no estimator)."""
    from sklearn.utils.validation import check_is_fitted

    cls = type(estimator)
    if not any(isinstance(estimator, c) for c in classes):
        raise InvalidInputError(f"save takes a cvxkml estimator; got {cls.__name__}.")
    check_is_fitted(estimator)
    if cls not in classes:
        raise InvalidInputError(
            f"save writes the estimators of cvxkml.estimators.ESTIMATORS; {cls.__name__} is not one "
            "(a subclass may hold state this format does not know)."
        )
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

    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "class": cls.__name__,
        "module": cls.__module__,
        "cvxkml_version": __version__,
        "params": enc_params,
        "state": state,
        "unsaved_params": unsaved,
        "dropped": w.dropped,
    }
    text = json.dumps(header, allow_nan=False)
    # only the arrays the header refers to (a value dropped part way may have left one behind)
    used = set(re.findall(r'"__array__": "(a\d+)"', text))
    blob = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    np.savez_compressed(path, **{_HEADER: blob}, **{k: a for k, a in w.arrays.items() if k in used})


def _name(path):
    return repr(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else "the file"


def _failer(path):
    def fail(reason):
        raise EstimatorFileError(
            f"Cannot load {_name(path)}: {reason}. Load only files written by "
            "cvxkml's save; refit and save again if it is yours."
        )

    return fail


def _header(zf, infos, fail):
    info = infos.get(f"{_HEADER}.npy")
    if info is None:
        fail(f"not a saved cvxkml estimator (no {_HEADER} entry)")
    blob, used = read_npy_member(zf, info, MAX_HEADER_BYTES)
    if blob.dtype != np.uint8 or blob.ndim != 1:
        fail("the header is not a byte string")
    try:
        header = json.loads(blob.tobytes().decode("utf-8"))
    except RecursionError:
        fail("the header is nested too deeply")
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        fail(f"the header is damaged ({exc})")
    return header, used


def read(path, classes, cls=None, max_bytes=None):
    """The reader of this format behind :func:`load`; ``classes`` are the estimator classes a
    file may hold (:data:`REGISTRY`: this module imports no estimator).  ``cls`` None or a
    common base of ``classes`` accepts any of them.
    """
    fail = _failer(path)
    budget = MAX_BYTES if max_bytes is None else int(max_bytes)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = {i.filename: i for i in zf.infolist()}
            header, used = _header(zf, infos, fail)
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                fail("not a saved cvxkml estimator")
            if header.get("format_version") != FORMAT_VERSION:
                raise FormatVersionError(
                    f"{_name(path)} was written in format version {str(header.get('format_version'))[:20]} "
                    f"(cvxkml {str(header.get('cvxkml_version'))[:20]}); this cvxkml reads version "
                    f"{FORMAT_VERSION} only. Refit the estimator, or load it with the cvxkml version that wrote it."
                )
            target = _target_class(path, header, classes, cls, fail)
            params_in, state_in = header.get("params"), header.get("state")
            if not isinstance(params_in, dict) or not isinstance(state_in, dict):
                fail("the header has no params or state")
            allowed_params = set(target._get_param_names())
            unknown = sorted(set(params_in) - allowed_params)
            if unknown:
                fail(f"{target.__name__} has no parameter {unknown[0]!r}")
            declared = fitted_attributes(target)
            extra = sorted(set(state_in) - declared)
            if extra:
                fail(f"{extra[0]!r} is not a fitted attribute of {target.__name__}")
            r = _Reader(zf, infos, budget - used, fail)
            params = {k: r.decode(v) for k, v in params_in.items()}
            state = {k: r.decode(v) for k, v in state_in.items()}
    except EstimatorFileError:
        raise
    except RecursionError:
        fail("values nested too deeply")
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise EstimatorFileError(f"Cannot load {_name(path)}: {exc.strerror or exc}.") from None
    except Exception as exc:  # noqa: BLE001 -- a damaged archive: zipfile, zlib, struct, NumPy
        fail(f"the file is damaged or not an estimator file ({type(exc).__name__}: {str(exc)[:200]})")
    for k, v in state.items():
        _check_arrays(v, k, fail, lenient=k in _LENIENT)
    try:
        est = target(**params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            est._validate_params()
    except Exception as exc:  # noqa: BLE001 -- the estimator's own parameter checks
        fail(f"a parameter is invalid: {str(exc)[:300]}")
    for k, v in state.items():
        setattr(est, k, v)
    _check_model(est, fail)
    return est


def _target_class(path, header, classes, cls, fail):
    by_name = {c.__name__: c for c in classes}
    name = header.get("class")
    target = by_name.get(name) if isinstance(name, str) else None
    if target is None:
        raise EstimatorClassError(f"{_name(path)} holds a {str(name)[:80]!r}, which is not a cvxkml estimator.")
    if header.get("module") != target.__module__:
        fail(f"it names class {name} in module {str(header.get('module'))[:80]!r}, not {target.__module__!r}")
    if (
        cls is not None
        and target is not cls
        and not (isinstance(cls, type) and issubclass(target, cls) and cls not in classes)
    ):
        raise EstimatorClassError(
            f"{_name(path)} holds a {name}, not a {getattr(cls, '__name__', cls)}; load it with "
            f"{name}.load or cvxkml.estimators.load."
        )
    return target
