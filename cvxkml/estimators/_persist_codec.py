"""The value codec of the estimator files (:mod:`cvxkml.estimators._persist`): a fitted
estimator's state to JSON plus arrays and back (tagged values, the library's own value
classes of :data:`SAFE_CLASSES`, registered regularizers), the bounded reader of one
``.npy`` member of the archive, and what a file declares, checked before it is read: the
header's size, depth and number of containers (:func:`parse_json_header`), the arrays'
shapes against the model's dimensions (:func:`declared_arrays`).  No code from a file is
ever run."""

from __future__ import annotations

import importlib
import inspect
import json
import math
import numbers
import zipfile
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError

#: the classes whose instances may be stored inside a saved estimator ("module:qualname")
SAFE_CLASSES = frozenset(
    {
        "cvxkml.kernels:Kernel",
        "cvxkml.estimators._maps:StandardizedKernel",
        # the same class, as files written by cvxkml <= 0.1.0 name it (importable there still)
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
        "cvxkml.learned:LearnedMetric",
        "cvxkml.learned:FactoredMetric",
    }
)


#: the classes stored by their defining arrays (``to_arrays``) and rebuilt, validated, by
#: ``from_arrays``: a learned metric stays in the form it was learned in (a factored one
#: never becomes d × d)
_ARRAY_CLASSES = frozenset({"cvxkml.learned:LearnedMetric", "cvxkml.learned:FactoredMetric"})


#: the deepest nesting of values in the header
MAX_DEPTH = 64


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
        self._keep = []  # keep encoded arrays alive (their id() stays unique)
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
            return {"__slice__": [self.encode(v.start, where), self.encode(v.stop, where), self.encode(v.step, where)]}
        if sp.issparse(v):
            c = sp.csr_matrix(v)
            return {
                "__csr__": {
                    "data": self.array(c.data),
                    "indices": self.array(c.indices),
                    "indptr": self.array(c.indptr),
                    "shape": list(c.shape),
                }
            }
        reg = _encode_regularizer(v, where, self)
        if reg is not None:
            return reg
        name = _qualname(v)
        if name in _ARRAY_CLASSES:
            return {"__arrays__": name, "arrays": {k: self.array(np.asarray(a)) for k, a in v.to_arrays().items()}}
        if name in SAFE_CLASSES and hasattr(v, "__dict__"):
            return {
                "__object__": name,
                "state": {k: self._member(x, f"{where}.{k}", lenient) for k, x in vars(v).items()},
            }
        raise _Unencodable(f"{where}: an object of type {name}")

    def _member(self, x, where, lenient):
        if not lenient:
            return self.encode(x, where)
        try:
            return self.encode(x, where, lenient)
        except _Unencodable:
            self.dropped.append(where)
            return None


def _npy_entry(info: zipfile.ZipInfo) -> None:
    if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ValueError(f"member {info.filename!r} is encrypted or uses an unsupported compression")


def _npy_header(f, name: str):
    """(shape, fortran_order, dtype) from the open ``.npy`` stream ``f``, positioned at its data."""
    major, _ = np.lib.format.read_magic(f)
    read_header = {1: np.lib.format.read_array_header_1_0, 2: np.lib.format.read_array_header_2_0}.get(major)
    if read_header is None:
        raise ValueError(f"member {name!r}: .npy version {major} is not read")
    shape, fortran, dtype = read_header(f, max_header_size=10000)
    if dtype.hasobject or dtype.fields is not None or dtype.kind not in "biufU" or dtype.itemsize == 0:
        raise ValueError(f"member {name!r} has dtype {dtype}, which is not read (no pickle)")
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError(f"member {name!r} has an invalid shape {shape}")
    return shape, fortran, dtype


def npy_member_header(zf: zipfile.ZipFile, info: zipfile.ZipInfo):
    """What one ``.npy`` member of a zip archive declares, read from its first bytes only (no
    data is decompressed): its shape, Fortran order and dtype, which must account for the
    member's declared size exactly.

    This is what lets a reader check every array of a file against the sizes it expects
    before it reads any of them.

    Returns
    -------
    (tuple, bool, numpy.dtype, int)
        The shape, whether the data is in Fortran order, the dtype, and where the data
        starts (what :func:`read_npy_member` takes as ``layout`` to skip reading it again).

    Raises
    ------
    ValueError
        Encrypted or unsupported compression, an object / structured / complex dtype, an
        invalid shape, or a shape that does not match the member's size.
    """
    _npy_entry(info)
    with zf.open(info) as f:
        shape, fortran, dtype = _npy_header(f, info.filename)
        offset = f.tell()
    nbytes = math.prod(shape) * dtype.itemsize
    if offset + nbytes != info.file_size:
        raise ValueError(
            f"member {info.filename!r} declares shape {shape} ({nbytes} bytes) but holds "
            f"{info.file_size - offset} bytes"
        )
    return shape, fortran, dtype, offset


#: the bytes decompressed at a time into an array being read
_CHUNK = 1 << 20


def read_npy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, layout=None):
    """One ``.npy`` member of a zip archive, read without pickle and without decompressing
    more than its declared size, which must fit ``budget`` (checked before any byte is
    decompressed); the declared shape must match the member's size.  The data is
    decompressed in chunks straight into the array, so reading costs the array's size once.
    ``layout``, what :func:`npy_member_header` returned for this member, saves parsing its
    preamble a second time.

    Returns
    -------
    (ndarray, int)
        The array (writable) and the bytes it used of the budget.

    Raises
    ------
    ValueError
        Encrypted or unsupported compression, over budget, an object / structured /
        complex dtype, or a shape that does not match the bytes.
    """
    _npy_entry(info)
    if info.file_size > budget:
        raise ValueError(
            f"member {info.filename!r} declares {info.file_size} bytes, above the limit of "
            f"{budget} left (zip bomb or an estimator larger than max_bytes)"
        )
    shape, fortran, dtype, offset = npy_member_header(zf, info) if layout is None else layout
    with zf.open(info) as f:
        if len(f.read(offset)) != offset:
            raise ValueError(f"member {info.filename!r} is truncated")
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        arr = np.empty(count, dtype=dtype)
        raw = arr.view(np.uint8)
        done = 0
        while done < nbytes:
            chunk = f.read(min(_CHUNK, nbytes - done))
            if not chunk:
                break
            raw[done : done + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            done += len(chunk)
        if done != nbytes or f.read(1):
            raise ValueError(f"member {info.filename!r} holds another number of bytes than its shape {shape}")
    return arr.reshape(shape, order="F" if fortran else "C"), info.file_size


# --------------------------------------------------------------------------- the JSON header
#: the most bytes of the JSON header
MAX_HEADER_BYTES = 1 << 20
#: the most JSON objects and arrays in the header (each becomes a Python container)
MAX_HEADER_CONTAINERS = 50_000
#: the deepest nesting of JSON objects and arrays in the header (a tagged value nests two
#: levels per value level, so this leaves :data:`MAX_DEPTH` value levels room)
MAX_JSON_DEPTH = 2 * MAX_DEPTH + 8


def json_extent(raw) -> tuple[int, int]:
    """The nesting depth and the number of objects and arrays of JSON text, counted on its
    bytes without parsing it (so that a hostile header is measured before anything is built).

    Brackets inside strings are not counted: a quote preceded by an odd run of backslashes
    is escaped, every other quote opens or closes a string — the JSON grammar's own rule,
    so on any text a JSON parser accepts the counts are exact.  Linear in the length of the
    text (NumPy, a few bytes of memory per byte of text), whatever the text holds.

    Parameters
    ----------
    raw : bytes or ndarray of uint8
        The JSON text, UTF-8.

    Returns
    -------
    (int, int)
        The deepest nesting and the number of ``[`` and ``{`` outside strings.
    """
    c = np.frombuffer(raw, dtype=np.uint8)
    quote = c == 0x22
    after = np.flatnonzero(quote[1:] & (c[:-1] == 0x5C)) + 1  # quotes right after a backslash
    if after.size:
        slashes = np.flatnonzero(c == 0x5C)
        starts = slashes[np.r_[True, np.diff(slashes) != 1]]  # the first backslash of each run
        run = after - starts[np.searchsorted(starts, after - 1, side="right") - 1]
        quote[after[run % 2 == 1]] = False  # escaped
    # outside strings: an even number of quotes so far (the parity survives uint8 wrap-around)
    outside = (np.cumsum(quote, dtype=np.uint8) & 1) == 0
    opens = ((c == 0x5B) | (c == 0x7B)) & outside
    step = opens.view(np.int8) - (((c == 0x5D) | (c == 0x7D)) & outside).view(np.int8)
    depth = deepest = 0
    for k in range(0, step.size, 1 << 16):  # the running depth, a block at a time
        level = np.cumsum(step[k : k + (1 << 16)], dtype=np.int32) + depth
        deepest, depth = max(deepest, int(level.max())), int(level[-1])
    return deepest, int(np.count_nonzero(opens))


def parse_json_header(raw, fail):
    """The header's JSON, parsed only once its size, nesting depth and number of containers
    are known to be within :data:`MAX_HEADER_BYTES`, :data:`MAX_JSON_DEPTH` and
    :data:`MAX_HEADER_CONTAINERS`: a hostile header is refused before a large or deep
    structure is built.

    Parameters
    ----------
    raw : bytes or ndarray of uint8
        The header's UTF-8 JSON text.
    fail : callable
        ``fail(reason)`` raises the file error.

    Returns
    -------
    object
        The parsed JSON value.
    """
    if len(raw) > MAX_HEADER_BYTES:
        fail(f"the header has {len(raw)} bytes, more than the {MAX_HEADER_BYTES} a header may have")
    depth, containers = json_extent(raw)
    if depth > MAX_JSON_DEPTH:
        fail(f"the header is nested {depth} levels deep, more than {MAX_JSON_DEPTH}")
    if containers > MAX_HEADER_CONTAINERS:
        fail(f"the header holds {containers} lists and objects, more than {MAX_HEADER_CONTAINERS}")
    try:
        return json.loads(bytes(raw).decode("utf-8"))
    except RecursionError:
        fail("the header is nested too deeply")
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        fail(f"the header is damaged ({str(exc)[:120]})")


#: the tags of objects, with the key of their content
_OBJECT_TAGS = {"__object__": "state", "__arrays__": "arrays", "__regularizer__": "params"}


def array_refs(value, path=(), owner=None) -> list:
    """Every array a header value refers to, found without reading any.

    Parameters
    ----------
    value : JSON value
        A value of the header (``params`` or ``state``).
    path : tuple, default=()
        The names leading to ``value``.
    owner : str or None, default=None
        The ``"module:Class"`` of the object holding ``value``.

    Returns
    -------
    list of (tuple, str or None, object, bool)
        ``(path, owner, key, text)`` per array tag: the attribute, key and index names
        leading to it, the ``"module:Class"`` of the closest object holding it (None at the
        top), the archive member's name as the header gives it, and whether it becomes an
        array of Python strings.  Tags this does not know are walked as plain values
        (:class:`_Reader` refuses them).
    """
    out = []
    stack = [(value, tuple(path), owner)]
    while stack:
        v, p, own = stack.pop()
        if isinstance(v, list):
            stack.extend((x, p + (i,), own) for i, x in enumerate(v))
        elif isinstance(v, dict):
            tag = None
            if len(v) == 2:
                tag = next((t for t, inner in _OBJECT_TAGS.items() if t in v and inner in v), None)
            if "__array__" in v:
                out.append((p, own, v["__array__"], bool(v.get("str"))))
            elif tag is not None:
                stack.append((v[_OBJECT_TAGS[tag]], p, v[tag] if isinstance(v[tag], str) else None))
            elif len(v) == 1 and next(iter(v)) in ("__tuple__", "__dict__", "__csr__", "__slice__"):
                stack.append((next(iter(v.values())), p, own))
            else:
                stack.extend((x, p + (k,), own) for k, x in v.items())
    return out


# --------------------------------------------------------------------------- declared shapes
def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


class _Multiple(int):
    """A dimension that may be any positive multiple of this one."""


def _fits(shape, pattern) -> bool:
    return len(shape) == len(pattern) and all(
        e is None or (d > 0 and d % e == 0 if isinstance(e, _Multiple) else d == e) for d, e in zip(shape, pattern)
    )


_STANDARDIZED = ("cvxkml.estimators._maps:StandardizedKernel", "cvxkml.estimators._base:StandardizedKernel")


def _expected_shapes(path, owner, n, s, state):
    """The shapes (None: any length) the array at ``path`` (attribute, key and index names)
    inside an object of class ``owner`` may declare, given ``n_features_in_`` = n and the
    ``n_samples`` = s the training points declare (None: no training points); None when
    its shape does not follow from the model (diagnostics, pairs, labels, …)."""
    top = path[0] if len(path) == 1 else None
    last = path[-1] if path else None
    if top in ("feature_mean_", "feature_scale_", "feature_names_in_") or (
        owner in _STANDARDIZED and last in ("mean", "scale")
    ):
        return [(n,)]
    if top == "components_":
        metric = state.get("metric_")
        if isinstance(metric, dict) and metric.get("__arrays__") == "cvxkml.learned:LearnedMetric":
            return [(n, n)]  # the factor of a dense d × d metric
        return [(None, n)] if s is None else [(None, n), (None, _Multiple(s))]  # one block per kernel
    if owner == "cvxkml.learned:LearnedMetric" and last == "W":
        return [(n, n)]
    if owner == "cvxkml.learned:FactoredMetric" and last == "U":
        return [(n, None)]
    if s is None:
        return None
    if top in ("_K_train", "Sigma_") or (owner == "cvxkml.learned:LearnedKernel" and last == "S"):
        return [(s, s)]
    if owner == "cvxkml.learned:LearnedKernel" and last == "X_train":
        return [(s, n)]
    if owner == "cvxkml.learned:LearnedKernel" and len(path) >= 2 and path[-2] == "_embed":
        return [(s, s)] if last == 0 else [(s, None)]
    if top in ("embedding_", "train_embedding_"):
        return [(s, None)]
    return None


def _shape_text(shapes, n, s) -> str:
    def dim(e):
        return "any" if e is None else f"a multiple of {e}" if isinstance(e, _Multiple) else str(e)

    alts = " or ".join("(" + ", ".join(map(dim, p)) + ("," if len(p) == 1 else "") + ")" for p in shapes)
    return f"{alts} (n_features_in_ = {n}" + ("" if s is None else f", n_samples = {s}") + ")"


def _work(owner, name, shape) -> int:
    """The multiply-adds decoding an array costs beyond reading it: a dense metric's W
    (d × d) is eigendecomposed, a factored metric's U (d × k) checked through Uᵀ U."""
    if len(shape) == 2 and (owner, name) == ("cvxkml.learned:LearnedMetric", "W"):
        return shape[0] ** 3
    if len(shape) == 2 and (owner, name) == ("cvxkml.learned:FactoredMetric", "U"):
        return shape[0] * shape[1] ** 2
    return 0


class Declared(NamedTuple):
    """What the header and a member's preamble declare about one array."""

    #: the shape
    shape: tuple
    #: the archive member
    info: zipfile.ZipInfo
    #: whether it becomes an array of Python strings
    text: bool
    #: the multiply-adds decoding it costs beyond reading it (a dense metric's
    #: eigendecomposition: the cube of its side)
    work: int
    #: what :func:`npy_member_header` returned
    layout: tuple


def declared_arrays(zf, infos, header, precomputed, fail) -> dict:
    """Every array the header refers to, read from the members' ``.npy`` preambles only (no
    data is decompressed), each shape checked against what the model's ``n_features_in_``
    and ``n_samples`` (the rows ``X_fit_`` declares) imply.

    Parameters
    ----------
    zf : zipfile.ZipFile
        The archive.
    infos : dict
        Its members by name.
    header : dict
        The parsed header (``params`` and ``state`` dicts).
    precomputed : bool
        Whether the estimator's base kernel is precomputed (``X_fit_`` is then the
        ``n_samples`` × ``n_samples`` training kernel matrix).
    fail : callable
        ``fail(reason)`` raises the file error.

    Returns
    -------
    dict
        :class:`Declared` by member name (without ``.npy``).
    """
    state = header["state"]
    n = state.get("n_features_in_")
    if not _is_count(n):
        fail(f"n_features_in_ must be a positive integer; got {str(n)[:40]}")
    refs = array_refs(header["params"]) + array_refs(state)
    declared = {}
    for path, owner, key, text in refs:
        if not isinstance(key, str):
            fail(f"unexpected array name {str(key)[:40]} in the header")
        if key not in declared:
            info = infos.get(f"{key}.npy") if key.startswith("a") else None
            if info is None:
                fail(f"the header refers to an array {str(key)[:40]!r} the file does not hold")
            layout = npy_member_header(zf, info)
            declared[key] = Declared(layout[0], info, False, 0, layout)
        d = declared[key]
        work = max(d.work, _work(owner, path[-1] if path else None, d.shape))
        declared[key] = d._replace(text=d.text or text, work=work)
    s = None
    fit = state.get("X_fit_")
    if isinstance(fit, dict) and fit.get("__array__") in declared:
        shape = declared[fit["__array__"]].shape
        if len(shape) != 2 or shape[1] != n or shape[0] < 1 or (precomputed and shape[0] != n):
            fail(f"X_fit_ declares shape {shape}, which does not match n_features_in_ = {n}")
        s = shape[0]
    for path, owner, key, _ in refs:
        shapes = _expected_shapes(path, owner, n, s, state)
        shape = declared[key].shape
        if shapes is not None and not any(_fits(shape, p) for p in shapes):
            where = ".".join(str(x) for x in path)
            fail(f"{where} declares shape {shape}, not {_shape_text(shapes, n, s)}")
    if isinstance(state.get("metric_"), dict) and state["metric_"].get("__arrays__") == "cvxkml.learned:LearnedMetric":
        if "components_" not in state:
            fail("components_ is missing (a dense metric_ is stored with its components_)")
    return declared


#: the regularizer classes a saved estimator may name besides the built-ins of
#: :mod:`cvxkml.declare.regularizers` (see :func:`register_regularizer`)
_REGULARIZERS: dict = {}


def register_regularizer(cls):
    """Allow a user's :class:`~cvxkml.declare.regularizers.Regularizer` subclass to be
    named in a saved :class:`SpectralKernelLearner` / :class:`SpectralMetricLearner` file.

    Loading never imports a module named in a file: the class is looked up among the
    modules this Python process has imported already, and it must be a ``Regularizer``
    subclass that is either a built-in of :mod:`cvxkml.declare.regularizers` or registered
    here.  Use as a decorator or a call, in the module that defines the class, before
    ``load``.

    Parameters
    ----------
    cls : type
        A subclass of :class:`~cvxkml.declare.regularizers.Regularizer` whose ``__init__``
        arguments are stored as attributes of the same names (scikit-learn's convention),
        JSON-plain values (numbers, strings, booleans, None, lists of them).

    Returns
    -------
    cls : type
        Unchanged.

    Raises
    ------
    InvalidInputError
        ``cls`` is not a Regularizer subclass.
    """
    from ..declare.regularizers import Regularizer

    if not (isinstance(cls, type) and issubclass(cls, Regularizer)):
        raise InvalidInputError(f"register_regularizer takes a Regularizer subclass; got {cls!r}.")
    _REGULARIZERS[f"{cls.__module__}:{cls.__qualname__}"] = cls
    return cls


def _encode_regularizer(v, where, writer):
    """A :class:`~cvxkml.declare.regularizers.Regularizer` as its import path and its
    ``__init__`` arguments (read from the attributes of the same names); None for any other
    value."""
    from ..declare.regularizers import Regularizer

    if not isinstance(v, Regularizer):
        return None
    cls = type(v)
    params = {}
    for name, prm in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or prm.kind in (prm.VAR_POSITIONAL, prm.VAR_KEYWORD):
            continue
        if not hasattr(v, name):
            if name == "prior" and getattr(v, "logp", 0) is None:  # VonNeumann() without a prior
                continue
            raise _Unencodable(
                f"{where}: the regularizer {cls.__name__} does not keep its __init__ argument "
                f"{name!r} as an attribute of that name, so it cannot be saved"
            )
        value = getattr(v, name)
        if isinstance(value, np.ndarray) or not _plain(value):
            raise _Unencodable(f"{where}: the regularizer argument {name}={value!r} is not a plain JSON value")
        params[name] = writer.encode(value, f"{where}.{name}")
    return {"__regularizer__": _qualname(v), "params": {"__dict__": params}}


def _plain(v, depth=0):
    if depth > 8:
        return False
    if v is None or isinstance(v, (bool, str, numbers.Integral)):
        return True
    if isinstance(v, float):
        return True
    if isinstance(v, (list, tuple)):
        return all(_plain(x, depth + 1) for x in v)
    return False


def _decode_regularizer(name, params, fail):
    """The regularizer a file names, resolved without importing anything: a class of an
    already imported module, a Regularizer subclass that is a built-in of
    :mod:`cvxkml.declare.regularizers` or registered with
    :func:`cvxkml.estimators.register_regularizer`; built with its saved arguments."""
    import sys

    from ..declare import regularizers as builtin

    if not isinstance(name, str) or ":" not in name or not isinstance(params, dict):
        fail("a regularizer entry without a class name")
    module, _, qual = name.partition(":")
    cls = _REGULARIZERS.get(name)
    if cls is None and module == builtin.__name__ and qual in builtin.__all__:
        cls = getattr(builtin, qual, None)
    if cls is None:
        where = "its module is imported but" if module in sys.modules else f"its module {module!r} is not imported and"
        fail(
            f"it names the regularizer {name[:120]}, which {where} the class is not registered; "
            "import the module that defines it and call cvxkml.estimators.register_regularizer(TheClass) "
            "before loading (a file never makes cvxkml import a module)"
        )
    if not (isinstance(cls, type) and issubclass(cls, builtin.Regularizer)):
        fail(f"{name[:120]} is not a Regularizer")
    try:
        return cls(**params)
    except Exception as exc:  # noqa: BLE001 -- the regularizer's own argument checks
        fail(
            f"the regularizer {cls.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())[:120]}) "
            f"cannot be built: {str(exc)[:200]}"
        )


class _Reader:
    """Decodes the header's values; ``arrays`` maps a name to the archive member, read on
    first use within the byte budget."""

    def __init__(self, zf, infos, budget, fail, declared=None):
        self.zf, self.infos, self.budget, self.fail = zf, infos, budget, fail
        self.declared = declared or {}  # the members' preambles, read already
        self._cache: dict[str, np.ndarray] = {}

    def _member(self, key) -> np.ndarray:
        if key not in self._cache:
            info = self.infos.get(f"{key}.npy") if isinstance(key, str) and key.startswith("a") else None
            if info is None:
                self.fail(f"the header refers to an array {key!r} the file does not hold")
            known = self.declared.get(key)
            arr, used = read_npy_member(self.zf, info, self.budget, None if known is None else known.layout)
            self.budget -= used
            self._cache[key] = arr
        return self._cache[key]

    def array(self, tag) -> np.ndarray:
        if not isinstance(tag, dict) or set(tag) - {"__array__", "str", "scalar"}:
            self.fail(f"unexpected array tag {str(tag)[:80]!r}")
        a = self._member(tag["__array__"])
        if tag.get("str"):
            if a.dtype.kind != "U":
                self.fail("a string array stored with a numeric dtype")
            a = a.astype(object)
        if tag.get("scalar"):
            if a.ndim != 0:
                self.fail("a scalar stored as an array of shape " + str(a.shape))
            return a[()]
        return a

    def decode(self, v, depth=0):
        if depth > MAX_DEPTH:
            self.fail(f"values nested deeper than {MAX_DEPTH} levels")
        if v is None or isinstance(v, (bool, str, int, float)):
            return v
        if isinstance(v, list):
            return [self.decode(x, depth + 1) for x in v]
        if not isinstance(v, dict) or len(v) == 0:
            self.fail(f"unexpected value {str(v)[:80]!r} in the header")
        if "__array__" in v:
            return self.array(v)
        if len(v) == 1:
            ((tag, x),) = v.items()
            if tag == "__tuple__" and isinstance(x, list):
                return tuple(self.decode(e, depth + 1) for e in x)
            if tag == "__dict__" and isinstance(x, dict):
                return {k: self.decode(e, depth + 1) for k, e in x.items()}
            if tag == "__float__" and x in ("nan", "inf", "-inf"):
                return float(x)
            if tag == "__slice__" and isinstance(x, list) and len(x) == 3:
                parts = [self.decode(e, depth + 1) for e in x]
                if not all(e is None or (isinstance(e, int) and not isinstance(e, bool)) for e in parts):
                    self.fail("a slice of non-integers")
                return slice(*parts)
            if tag == "__csr__" and isinstance(x, dict) and set(x) == {"data", "indices", "indptr", "shape"}:
                import scipy.sparse as sp_

                shape = x["shape"]
                if not (
                    isinstance(shape, list)
                    and len(shape) == 2
                    and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
                ):
                    self.fail("a sparse matrix with an invalid shape")
                c = sp_.csr_matrix(
                    (self.array(x["data"]), self.array(x["indices"]), self.array(x["indptr"])), shape=tuple(shape)
                )
                c.check_format(full_check=True)
                return c
        if "__regularizer__" in v and set(v) == {"__regularizer__", "params"} and isinstance(v["params"], dict):
            return _decode_regularizer(v["__regularizer__"], self.decode(v["params"], depth + 1), self.fail)
        if "__arrays__" in v and set(v) == {"__arrays__", "arrays"} and isinstance(v["arrays"], dict):
            name = v["__arrays__"]
            if name not in _ARRAY_CLASSES:
                self.fail(f"it holds an object of class {str(name)[:80]}, which cvxkml does not load")
            module, _, qual = name.partition(":")
            cls = getattr(importlib.import_module(module), qual)
            return cls.from_arrays({str(k): self.array(a) for k, a in v["arrays"].items()})
        if "__object__" in v and set(v) == {"__object__", "state"} and isinstance(v["state"], dict):
            name = v["__object__"]
            if name not in SAFE_CLASSES:
                self.fail(f"it holds an object of class {str(name)[:80]}, which cvxkml does not load")
            if not all(isinstance(k, str) and k.isidentifier() and not k.startswith("__") for k in v["state"]):
                self.fail(f"an object of class {name} with an invalid attribute name")
            module, _, qual = name.partition(":")
            cls = getattr(importlib.import_module(module), qual)
            obj = cls.__new__(cls)
            obj.__dict__.update({k: self.decode(x, depth + 1) for k, x in v["state"].items()})
            post = getattr(cls, "__post_init__", None)
            if post is not None:  # a dataclass re-validates its fields (Kernel: name, width)
                if not isinstance(getattr(obj, "params", {}), dict):
                    self.fail(f"an object of class {name} with invalid fields")
                post(obj)
            return obj
        self.fail(f"unexpected value {str(v)[:80]!r} in the header")
