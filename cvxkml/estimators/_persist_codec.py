"""The value codec of the estimator files (:mod:`cvxkml.estimators._persist`): a fitted
estimator's state to JSON plus arrays and back (tagged values, the library's own value
classes of :data:`SAFE_CLASSES`, registered regularizers), and the bounded reader of one
``.npy`` member of the archive.  No code from a file is ever run."""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
import zipfile

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


def read_npy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int):
    """One ``.npy`` member of a zip archive, read without pickle and without decompressing
    more than its declared size, which must fit ``budget`` (checked before any byte is
    decompressed); the declared shape must match the member's size.

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
    if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ValueError(f"member {info.filename!r} is encrypted or uses an unsupported compression")
    if info.file_size > budget:
        raise ValueError(
            f"member {info.filename!r} declares {info.file_size} bytes, above the limit of "
            f"{budget} left (zip bomb or an estimator larger than max_bytes)"
        )
    with zf.open(info) as f:
        major, _ = np.lib.format.read_magic(f)
        read_header = {1: np.lib.format.read_array_header_1_0, 2: np.lib.format.read_array_header_2_0}.get(major)
        if read_header is None:
            raise ValueError(f"member {info.filename!r}: .npy version {major} is not read")
        shape, fortran, dtype = read_header(f, max_header_size=10000)
        if dtype.hasobject or dtype.fields is not None or dtype.kind not in "biufU":
            raise ValueError(f"member {info.filename!r} has dtype {dtype}, which is not read (no pickle)")
        if not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ValueError(f"member {info.filename!r} has an invalid shape {shape}")
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        if nbytes > info.file_size:
            raise ValueError(
                f"member {info.filename!r} declares shape {shape} ({nbytes} bytes) but holds {info.file_size} bytes"
            )
        data = bytearray(f.read(nbytes))
        if len(data) != nbytes or f.read(1):
            raise ValueError(f"member {info.filename!r} holds another number of bytes than its shape {shape}")
    arr = np.frombuffer(data, dtype=dtype, count=count).reshape(shape, order="F" if fortran else "C")
    return arr, info.file_size


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

    def __init__(self, zf, infos, budget, fail):
        self.zf, self.infos, self.budget, self.fail = zf, infos, budget, fail
        self._cache: dict[str, np.ndarray] = {}

    def _member(self, key) -> np.ndarray:
        if key not in self._cache:
            info = self.infos.get(f"{key}.npy") if isinstance(key, str) and key.startswith("a") else None
            if info is None:
                self.fail(f"the header refers to an array {key!r} the file does not hold")
            arr, used = read_npy_member(self.zf, info, self.budget)
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
