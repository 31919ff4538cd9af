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
A file may come from anywhere.  :func:`load` runs no code from it and checks, in this order,
every size *before* the bytes it describes are decompressed or parsed:

* the archive: at most :data:`MAX_MEMBERS` members (counted from the zip's end record, before
  its directory is read), no member name twice;
* the header: at most :data:`MAX_HEADER_BYTES`, and its JSON nesting depth and number of
  lists and objects counted on the raw bytes (:func:`~._persist_codec.json_extent`) before
  it is parsed; the known tags only, :data:`MAX_DEPTH` value levels;
* the class: one of the estimators, in the module it was saved from, and the class
  ``load`` is called on (:func:`cvxkml.estimators.load` takes any);
* the arrays' declarations: every ``.npy`` member the header names is opened for its
  preamble only (shape, dtype; object and structured dtypes refused: no pickle), which must
  account for the member's size exactly; the shapes of the parts whose sizes follow from
  the model (standardization, training points, base and learned kernels, the metric, the
  components, the training embedding) must agree with the header's ``n_features_in_`` and
  the ``n_samples`` the training points declare; and the bytes all of them declare must fit
  the budget: ``max_bytes``, or by default :data:`MIN_BYTES` or :data:`MAX_RATIO` times what
  they take compressed, whichever is larger (at most :data:`MAX_BYTES`); by default the
  work of decoding them too (a dense metric is eigendecomposed: cubic time), at most
  :data:`MIN_WORK` or what a dense matrix as large as the compressed arrays costs.  Members
  the header does not name are never decompressed, and a member is never decompressed past
  its declared size (a zip bomb costs nothing);
* the parameters: the class's own ``__init__`` parameters only, each re-validated by the
  estimator's ``_parameter_constraints`` (as at the start of ``fit``);
* the fitted state: the attributes the class declares (its docstring's *Attributes*, plus
  ``_private_fitted``), every array numeric float64 and finite except index arrays (integer)
  and labels (any plain dtype), objects of :data:`SAFE_CLASSES` only;
* the model: ``n_features_in_``, ``X_fit_`` and the standardization agree; parts stored twice
  are the same (the base kernel of ``kernel_`` and of ``learned_kernel_``, ``X_fit_`` and the
  learned kernel's training points); and the learned map is run on three probe points (the
  first training points when the file has them): ``transform``, ``pair_distance``,
  ``get_metric``'s distance, ``learned_kernel``, ``predict`` give finite numbers, and the
  quantities the file holds more than one way agree — the learned distances and the
  distances between the transforms, the dense ``metric_`` and ``components_``, the learned
  kernel and the inner products of the transforms, the stored training embedding and the
  transform of the training points — up to :data:`AGREEMENT_RTOL` of their scale, far above
  round-off: a model whose parts were changed apart is refused.

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

import gc
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
from ._maps import point_distance
from ._persist_codec import (
    MAX_DEPTH,
    MAX_HEADER_BYTES,
    SAFE_CLASSES,
    _is_count,
    _Reader,
    _Unencodable,
    _Writer,
    declared_arrays,
    parse_json_header,
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
    "MIN_BYTES",
    "MAX_RATIO",
    "MIN_WORK",
    "MAX_MEMBERS",
    "MAX_HEADER_BYTES",
    "AGREEMENT_RTOL",
    "MAX_DEPTH",
    "fitted_attributes",
    "read_npy_member",
]

FORMAT = "cvxkml.estimator"
FORMAT_VERSION = 1
_HEADER = "__cvxkml__"

#: fitted attributes kept as far as they are plain data (diagnostics, not the learned map)
_LENIENT = frozenset({"solution_", "result_"})
#: the most bytes :func:`load` decompresses from one file (all members it reads) by default
MAX_BYTES = 1 << 31
#: by default a file may always declare this many bytes decompressed (header included) ...
MIN_BYTES = 64 << 20
#: ... and above that at most this many times the bytes its members take compressed: a small
#: file cannot make :func:`load` allocate much more than its own size (pass ``max_bytes``
#: for a trusted file that compresses better, e.g. the mostly-zero multipliers of a large
#: LMNN fit)
MAX_RATIO = 4
#: by default decoding the arrays may always cost this many multiply-adds beyond reading them
#: (the eigendecomposition of a 1024 × 1024 dense metric), and above that at most what
#: eigendecomposing a dense matrix as large as the file's compressed arrays costs: a small
#: file cannot buy seconds of computation
MIN_WORK = 1 << 30
#: what a string of a string array costs once it is a Python object (charged to the budget)
_STRING_BYTES = 64
#: the most members of the archive (a saved estimator has a few dozen)
MAX_MEMBERS = 1_000
#: how far two computations of the same learned quantity in a loaded model may differ,
#: relative to the scale of the values: far above round-off, far below a changed part
AGREEMENT_RTOL = 1e-2
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


def _check_fields(est, fail) -> int:
    """``n_features_in_``, the counters, ``X_fit_``, the standardization and the feature
    names agree; returns ``n_features_in_``."""
    n = getattr(est, "n_features_in_", None)
    if not _is_count(n):
        fail(f"n_features_in_ must be a positive integer; got {n!r}")
    v = getattr(est, "n_iter_", 0)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        fail(f"n_iter_ must be a non-negative integer; got {v!r}")
    if not isinstance(getattr(est, "converged_", False), bool):
        fail(f"converged_ must be True or False; got {est.converged_!r}")
    X = getattr(est, "X_fit_", None)
    if X is not None and (
        not isinstance(X, np.ndarray)
        or X.ndim != 2
        or X.shape[0] < 1
        or X.shape[1] != n
        or (est._precomputed and X.shape[0] != n)
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
    return n


def _same(a, b, depth=0) -> bool:
    """Whether two decoded values are the same: equal arrays, equal plain values, objects of
    the same class with the same attributes."""
    if a is b:
        return True
    if depth > MAX_DEPTH or type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, depth + 1) for x, y in zip(a, b))
    if hasattr(a, "__dict__") and not isinstance(a, type):
        return _same(vars(a), vars(b), depth + 1)
    return bool(a == b)


#: parts a model stores twice, which must be the same: (attribute, attribute path)
_SHARED = (
    ("kernel_", ("learned_kernel_", "base")),
    ("X_fit_", ("learned_kernel_", "X_train")),
    ("kernel_", ("model_", "kernel")),
)


def _check_parts(est, fail) -> None:
    """Parts stored twice are the same, and a learned kernel whose embedding ``transform``
    uses holds it (it is computed by ``fit`` and saved: recomputing it is cubic in the
    number of training points)."""
    for name, (owner, attr) in _SHARED:
        a, holder = est.__dict__.get(name), est.__dict__.get(owner)
        if a is not None and holder is not None and hasattr(holder, attr):
            if not _same(a, getattr(holder, attr)):
                fail(f"{name} and {owner}.{attr} differ (the same part, stored twice)")
    lk = est.__dict__.get("learned_kernel_")
    if lk is not None and getattr(lk, "_embed", ()) is None:
        cross = getattr(est._embedding(), "cross", None)
        if getattr(cross, "__self__", None) is lk:
            fail("learned_kernel_ lacks the embedding its transform uses")


def _disagree(a, b, scale) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape != b.shape or bool(np.any(np.abs(a - b) > AGREEMENT_RTOL * scale))


def _check_agreement(est, A, rows, fail) -> None:
    """What the model holds more than one way agrees on the probe points ``A`` (the
    training points ``rows`` when not None); the pairs compared are listed in the module
    description ("the model")."""
    T = np.asarray(est._embed(A), dtype=float)
    i, j = np.array([0, 1, 2]), np.array([1, 2, 0])
    views = {}
    if not est._precomputed:
        views["pair_distance"] = est.pair_distance(np.stack([A[i], A[j]], axis=1))
        views["the distances between transforms"] = np.linalg.norm(T[i] - T[j], axis=1)
        metric = est.__dict__.get("metric_")
        if metric is not None:
            scale = est.__dict__.get("feature_scale_")
            Z = A if scale is None else A / scale
            views["metric_"] = np.sqrt(np.maximum(metric.pair_sq_distances(Z[i], Z[j]), 0.0))
    size = max(float(np.max(np.linalg.norm(T, axis=1))), *(float(np.max(v)) for v in views.values()), 1e-300)
    (first, ref), *others = views.items() if views else [(None, None)]
    for name, v in others:
        if _disagree(v, ref, size):
            fail(f"the stored parts disagree: {first} gives {_fmt(ref)} where {name} gives {_fmt(v)}")
    if hasattr(est, "learned_kernel") and not est._precomputed:
        K = est._kernel_function()(A, A)
        if _disagree(K, T @ T.T, size * size):
            fail("the stored parts disagree: the learned kernel is not the inner product of the transforms")
    if rows is not None:
        for name in ("train_embedding_", "embedding_"):
            E = est.__dict__.get(name)
            if isinstance(E, np.ndarray):
                if E.ndim == 2 and E.shape == (est.X_fit_.shape[0], T.shape[1]) and _disagree(E[rows], T, size):
                    fail(f"the stored parts disagree: {name} is not the transform of the training points")
                break


def _fmt(v) -> str:
    return "[" + ", ".join(f"{x:.3g}" for x in np.ravel(v)) + "]"


def _check_model(est, fail) -> None:
    """The last check of the module description ("the model"): :func:`_check_fields`,
    :func:`_check_parts`, the probe run and :func:`_check_agreement`."""
    n = _check_fields(est, fail)
    hook = getattr(est, "_check_loaded", None)
    if hook is not None:
        try:
            hook()
        except Exception as exc:  # noqa: BLE001
            fail(f"the stored model is inconsistent: {str(exc)[:200]}")
    # the probe: the learned map on 3 points (the first training points when stored)
    X = getattr(est, "X_fit_", None)
    rows = None if X is None else np.arange(3) % X.shape[0]
    what = "the comparison of its parts"
    try:
        _check_parts(est, fail)
        what = "transform"
        if X is not None:
            A = X[rows]
        else:
            A = np.random.default_rng(0).standard_normal((3, n))
            if getattr(est, "feature_scale_", None) is not None:
                A = A * est.feature_scale_ + est.feature_mean_
        names = getattr(est, "feature_names_in_", None)
        P = A
        if names is not None:
            import pandas as pd

            P = pd.DataFrame(A, columns=list(names))
        with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
            warnings.simplefilter("error", RuntimeWarning)
            out = [est.transform(P)]
            if not est._precomputed:
                what = "pair_distance"
                out.append(est.pair_distance(np.stack([A, A[::-1]], axis=1)))
                what = "get_metric"  # its distance function (get_metric itself deep-copies the model)
                out.append(np.array([point_distance(A[0], A[1], sq_distances=est._distance())]))
                if hasattr(est, "learned_kernel"):
                    what = "learned_kernel"
                    out.append(est.learned_kernel(P))
            if hasattr(est, "predict"):
                what = "predict"
                est.predict(P)
                if hasattr(est, "predict_proba"):
                    what = "predict_proba"
                    out.append(est.predict_proba(P))
            for o in out:
                o = np.asarray(o)
                if o.dtype.kind != "f" or o.shape[:1] not in ((3,), (1,)) or not np.all(np.isfinite(o)):
                    fail("the stored model gives non-finite or malformed numbers")
            what = "the comparison of its parts"
            _check_agreement(est, A, rows, fail)
    except EstimatorFileError:
        raise
    except Exception as exc:  # noqa: BLE001 -- anything the stored arrays cause
        fail(f"the stored model is inconsistent: {what} fails ({type(exc).__name__}: {str(exc)[:200]})")


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
        The most bytes decompressed from the file; a file declaring more is refused before
        anything is decompressed.  None: :data:`MIN_BYTES` (64 MiB) or :data:`MAX_RATIO`
        times the bytes the arrays take compressed, whichever is larger, at most
        :data:`MAX_BYTES` (2 GiB) — so a small file cannot make loading allocate much more
        than its size; the refusal names the ``max_bytes`` that loads a file that compresses
        better (a large LMNN fit, whose multipliers are mostly zeros), when it is trusted.

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
    def fail(reason, damaged=True):
        reason = " ".join(str(reason).split())  # one line, whatever an exception's text holds
        advice = " Load only files written by cvxkml's save; refit and save again if it is yours." if damaged else ""
        raise EstimatorFileError(f"Cannot load {_name(path)}: {reason}.{advice}")

    return fail


def _count_members(path, fail) -> None:
    """The number of members the zip's end record declares, checked before
    :class:`zipfile.ZipFile` reads its directory (it builds an object per member).  A file
    without an end record is left to ZipFile to refuse."""
    end_record = getattr(zipfile, "_EndRecData", None)
    if end_record is None:
        return
    if isinstance(path, (str, os.PathLike)):
        with open(path, "rb") as f:
            rec = end_record(f)
    else:
        rec = end_record(path)
    if rec is not None and rec[4] > MAX_MEMBERS:
        fail(f"the archive declares {rec[4]} members, more than the {MAX_MEMBERS} a saved estimator may have")


def _members(zf, fail) -> dict:
    names = zf.namelist()
    if len(set(names)) != len(names):
        seen = set()
        twice = next(n for n in names if n in seen or seen.add(n))
        fail(f"the archive holds the member {twice[:80]!r} more than once")
    return {i.filename: i for i in zf.infolist()}


def _header(zf, infos, fail):
    info = infos.get(f"{_HEADER}.npy")
    if info is None:
        fail(f"not a saved cvxkml estimator (no {_HEADER} entry)")
    if info.file_size > MAX_HEADER_BYTES + 4096:  # the JSON and the .npy preamble
        fail(f"the header declares {info.file_size} bytes, more than the {MAX_HEADER_BYTES} a header may have")
    blob, used = read_npy_member(zf, info, MAX_HEADER_BYTES + 4096)
    if blob.dtype != np.uint8 or blob.ndim != 1:
        fail("the header is not a byte string")
    return parse_json_header(blob, fail), used


def _check_budget(declared, header_info, used, max_bytes, fail) -> int:
    """Check, before any array is read, the budget of the module description: the bytes the
    arrays declare (a string array also the Python strings it becomes) and, by default, the
    work of decoding them.  Returns the bytes left for the arrays."""
    strings = sum(_STRING_BYTES * math.prod(d.shape) for d in declared.values() if d.text)
    total = used + strings + sum(d.info.file_size for d in declared.values())
    packed = header_info.compress_size + sum(d.info.compress_size for d in declared.values())
    if max_bytes is not None:
        if total > int(max_bytes):
            fail(f"its arrays take {total} bytes decompressed, above the limit of {int(max_bytes)} (max_bytes)", False)
        return int(max_bytes) - used
    budget = min(MAX_BYTES, max(MIN_BYTES, MAX_RATIO * packed))
    trust = f"pass max_bytes={total} to load a file you trust"
    if total > budget:
        fail(
            f"its arrays take {total} bytes decompressed from {packed} bytes, above the limit of {budget} for a "
            f"file of that size (a zip bomb, or a model that compresses more than {MAX_RATIO}:1: {trust})",
            False,
        )
    limit = max(MIN_WORK, int((packed / 8) ** 1.5))
    for d in declared.values():
        if d.work > limit:
            fail(
                f"decoding its {' × '.join(map(str, d.shape))} metric takes about {d.work:.2g} multiply-adds, above "
                f"the limit of {limit:.2g} for arrays of {packed} bytes compressed (a dense metric of zeros, or one "
                f"that compresses unusually well: {trust})",
                False,
            )
    return budget - used


def read(path, classes, cls=None, max_bytes=None):
    """The reader of this format behind :func:`load`; ``classes`` are the estimator classes a
    file may hold (:data:`REGISTRY`: this module imports no estimator).  ``cls`` None or a
    common base of ``classes`` accepts any of them.
    """
    fail = _failer(path)
    collecting = gc.isenabled()
    gc.disable()  # the header builds many acyclic containers: a cyclic collection would walk the process
    try:
        _count_members(path, fail)
        with zipfile.ZipFile(path) as zf:
            infos = _members(zf, fail)
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
            arrays = declared_arrays(zf, infos, header, params_in.get("kernel") == "precomputed", fail)
            left = _check_budget(arrays, infos[f"{_HEADER}.npy"], used, max_bytes, fail)
            r = _Reader(zf, infos, left, fail, arrays)
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
    finally:
        if collecting:
            gc.enable()
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
