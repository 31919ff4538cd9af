"""Input checks shared by the whole package (one place for each check)."""

from __future__ import annotations

import numbers

import numpy as np

from .errors import CvxkmlError, InvalidInputError, NotPSDError


class InvalidInputTypeError(InvalidInputError, TypeError):
    """An input of the wrong type (a :class:`~cvxkml.errors.InvalidInputError` that is also
    a ``TypeError``, as scikit-learn's conventions ask for, e.g. a dict inside X)."""


def _numeric_array(a, name: str) -> np.ndarray:
    """``np.asarray(a)`` for numeric input (bool, integer, float, or an object array of
    such numbers) as float64; typed errors for None, strings, complex and non-numbers."""
    if a is None:
        raise InvalidInputError(f"{name} is None; pass a numeric array.")
    try:
        raw = np.asarray(a)
    except (TypeError, ValueError, OverflowError) as exc:  # ragged nested sequences
        raise InvalidInputError(
            f"{name} must be a numeric array (a rectangular nested list or ndarray); got {type(a).__name__} ({exc})."
        ) from exc
    if raw.dtype.kind in "USV" or raw.dtype.kind == "M" or raw.dtype.kind == "m":
        raise InvalidInputError(
            f"{name} must be numeric; got an array of dtype {raw.dtype}. Convert it to numbers "
            "first (e.g. np.asarray(..., dtype=float) after checking the values)."
        )
    if raw.dtype.kind == "c" or (
        raw.dtype.kind == "O" and any(isinstance(v, (complex, np.complexfloating)) for v in raw.ravel())
    ):
        raise InvalidInputError(
            f"{name} is complex; cvxkml works with real matrices. Pass the real part "
            "(np.real(...)) if the imaginary part is round-off."
        )
    try:
        return np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(
            f"{name} must be numeric; got {type(a).__name__} with dtype {raw.dtype} ({exc})."
        ) from exc


def as_float_array(a, name: str, ndim: int | None = None, finite: bool = True) -> np.ndarray:
    """Return ``a`` as a C-contiguous float64 array; reject non-numeric and complex input,
    wrong ndim, and (``finite``) NaN/inf."""
    arr = np.ascontiguousarray(_numeric_array(a, name))
    if ndim is not None and arr.ndim != ndim:
        raise InvalidInputError(f"{name} must be {ndim}-dimensional; got shape {arr.shape}.")
    if finite and not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} contains NaN or inf; remove or impute those entries before fitting.")
    return arr


MAX_DATA_MAGNITUDE = 1e100  # squares and sums of squares stay finite in float64 within
# [1 / MAX_DATA_MAGNITUDE, MAX_DATA_MAGNITUDE]


def check_magnitude(X: np.ndarray, name: str = "X") -> np.ndarray:
    """Reject a non-zero data or kernel matrix whose largest |entry| lies outside
    [1e-100, 1e100]: its squares (distances, whitened quantities) overflow or underflow
    float64.  (A zero matrix is left to the checks that know what it means.)"""
    big = float(np.max(np.abs(X), initial=0.0))
    if big > MAX_DATA_MAGNITUDE or 0.0 < big < 1.0 / MAX_DATA_MAGNITUDE:
        raise InvalidInputError(
            f"{name} has entries of magnitude up to {big:.3g}; outside [1e-100, 1e100] squared "
            f"distances and kernel values overflow or underflow float64. Rescale or standardize "
            f"{name} (e.g. sklearn.preprocessing.StandardScaler, or divide a kernel by its mean "
            "diagonal) and the distance bounds with it."
        )
    return X


def check_data(X, name: str = "X") -> np.ndarray:
    """A finite 2-D data matrix with at least one row and one column, of magnitude at most
    1e100 (:func:`check_magnitude`)."""
    X = as_float_array(X, name, ndim=2)
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise InvalidInputError(f"{name} must have at least one row and one column; got {X.shape}.")
    return check_magnitude(X, name)


def check_symmetric(M, name: str, rtol: float = 1e-8) -> np.ndarray:
    M = as_float_array(M, name, ndim=2)
    if M.shape[0] != M.shape[1]:
        raise InvalidInputError(f"{name} must be square; got shape {M.shape}.")
    scale = float(np.max(np.abs(M))) if M.size else 0.0  # relative: any scale
    asym = float(np.max(np.abs(M - M.T))) if M.size else 0.0
    if asym > rtol * scale:
        raise InvalidInputError(
            f"{name} must be symmetric; max |M - M^T| = {asym:.3g}. Pass (M + M.T) / 2 if the asymmetry is round-off."
        )
    return 0.5 * (M + M.T)


def psd_rank(M: np.ndarray, name: str, rtol: float = 1e-10, atol: float = 0.0) -> tuple[int, np.ndarray, np.ndarray]:
    """Eigen-decompose a symmetric matrix, check PSD, return (rank, eigvals, eigvecs).

    Eigenvalues below ``-max(10 * rtol * max|eig|, atol)`` make it non-PSD; those within
    ``max(rtol * max|eig|, atol)`` of zero count as zero for the rank.  ``atol`` is the
    absolute round-off of the computation that produced ``M`` (e.g. centring a kernel whose
    entries are much larger than the centred result's).
    """
    w, V = np.linalg.eigh(M)
    scale = max(float(np.max(np.abs(w))), np.finfo(float).tiny) if w.size else 1.0
    if w.size and w[0] < -max(rtol * scale * 10, atol):
        raise NotPSDError(
            f"{name} is not positive semidefinite: smallest eigenvalue {w[0]:.3g} "
            f"(largest {w[-1]:.3g}). Use a valid kernel, or shift it (M + c I) / clip its "
            "negative eigenvalues."
        )
    rank = int(np.sum(w > max(rtol * scale, atol)))
    return rank, w, V


def check_kernel_matrix(K, name: str = "K0", require_pd: bool = False) -> np.ndarray:
    """A finite, symmetric, PSD float64 matrix (PD when ``require_pd``) of magnitude in
    [1e-100, 1e100] (:func:`check_magnitude`; a zero matrix passes this check).

    PSD up to the ``psd_tol`` option (:mod:`cvxkml._config`; automatic by default:
    1e-9 · max|λ| for float64 input, max(1e-9, n·eps) · max|λ| for float32 input, from
    the dtype ``K`` arrives with).  A matrix accepted with an eigenvalue below the float64
    round-off level −1e-9 · max|λ| is returned clipped to PSD (negative eigenvalues set
    to 0, rebuilt, symmetrised); one within it is returned unchanged.  For float32 (and
    narrower) input the symmetry check allows 4·eps relative asymmetry.
    """
    from ._config import FLOAT64_PSD_TOL, blas_limit, get_config, psd_tolerance

    try:
        dtype = np.asarray(K).dtype
    except (TypeError, ValueError):
        dtype = np.dtype(np.float64)  # as_float_array reports the problem
    sym_rtol = 1e-8
    if np.issubdtype(dtype, np.floating):
        sym_rtol = max(sym_rtol, 4.0 * float(np.finfo(dtype).eps))
    K = check_magnitude(check_symmetric(K, name, rtol=sym_rtol), name)
    n = K.shape[0]
    if n < 1:
        raise InvalidInputError(f"{name} must not be empty.")
    tol = psd_tolerance(n, dtype)
    with blas_limit():
        w, V = np.linalg.eigh(K)
        scale = max(float(np.max(np.abs(w))), np.finfo(float).tiny)
        if w[0] < -tol * scale:
            raise NotPSDError(
                f"{name} is not positive semidefinite: smallest eigenvalue {w[0]:.3g} "
                f"(largest {w[-1]:.3g}), {-w[0] / scale:.3g} of the largest |eigenvalue| "
                f"against the PSD tolerance {tol:.3g} ("
                + ("psd_tol" if get_config()["psd_tol"] is not None else f"automatic for {dtype} input")
                + "). Use a valid "
                "kernel, or shift it (K + c I) / clip its negative eigenvalues; if it is PSD "
                "up to the round-off of its computation, raise the tolerance with "
                "cvxkml.set_config(psd_tol=...) or `with cvxkml.config_context(psd_tol=...):`."
            )
        if w[0] < -FLOAT64_PSD_TOL * scale:  # accepted beyond float64 round-off: clip
            w = np.maximum(w, 0.0)
            K = (V * w) @ V.T
            K = 0.5 * (K + K.T)
    rank = int(np.sum(w > 1e-10 * scale))
    if require_pd and rank < n:
        raise NotPSDError(
            f"{name} must be positive definite; it has rank {rank} < {K.shape[0]} "
            f"(smallest eigenvalue {w[0]:.3g}). Add a ridge (K + eps I) or use the range-space "
            "(low-rank) formulation."
        )
    return K


def check_number(
    value,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    allow_none: bool = False,
    what: str | None = None,
):
    """A finite real number (not a bool or a string) in [low, high] (``low_open``:
    (low, high]); None passes through when ``allow_none``.  ``what`` describes the
    valid values in the message (default: the interval)."""
    if value is None and allow_none:
        return None
    if what is None:
        lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high is None else f"<= {high:g}"
        what = "a finite number" + (f" {lo}" if lo else "") + (" and" if lo and hi else "") + (f" {hi}" if hi else "")
    bad = isinstance(value, (bool, np.bool_, str, bytes))
    v = np.nan
    if not bad:
        try:
            v = float(value)
        except (TypeError, ValueError, OverflowError):
            bad = True
    if (
        bad
        or not np.isfinite(v)
        or (low is not None and (v <= low if low_open else v < low))
        or (high is not None and v > high)
    ):
        raise InvalidInputError(f"{name} must be {what}; got {value!r}.")
    return v


def check_scalar(value, name: str, **bounds):
    """:func:`check_number` for a parameter that must be one real number.

    ``float()`` takes a NumPy complex number (dropping its imaginary part, with a warning) and
    a one-element array; a parameter given as either is a mistake, so both are refused here
    first, with the same typed error.  ``bounds`` are the keywords of :func:`check_number`.
    """
    scalar = isinstance(value, (str, bytes))
    if not scalar:
        try:
            scalar = np.ndim(value) == 0
        except (TypeError, ValueError):  # ragged sequences
            scalar = False
    if not scalar or isinstance(value, (complex, np.complexfloating)):
        what = bounds.get("what") or "a finite real number"
        raise InvalidInputError(f"{name} must be one real number ({what}); got {value!r}.")
    return check_number(value, name, **bounds)


def check_positive(value, name: str, allow_none: bool = False):
    """A finite number > 0 (None passes through when ``allow_none``)."""
    return check_number(value, name, low=0.0, low_open=True, allow_none=allow_none, what="a finite positive number")


def check_int(value, name: str, minimum: int | None = 1, maximum: int | None = None, allow_none: bool = False):
    """An integer (an ``int``/NumPy integer, or an integral float such as 5.0; not a bool)
    in [minimum, maximum]; None passes through when ``allow_none``."""
    if value is None and allow_none:
        return None
    ok = not isinstance(value, (bool, np.bool_))
    if ok and not isinstance(value, numbers.Integral):
        ok = isinstance(value, numbers.Real) and np.isfinite(float(value)) and float(value).is_integer()
    if ok:
        v = int(value)
        ok = (minimum is None or v >= minimum) and (maximum is None or v <= maximum)
    if not ok:
        kind = {1: "a positive integer", 0: "a non-negative integer"}.get(minimum, "an integer")
        rng = ("" if minimum is None or minimum in (0, 1) else f" >= {minimum}") + (
            "" if maximum is None else f"{' and' if minimum is not None and minimum not in (0, 1) else ''} <= {maximum}"
        )
        raise InvalidInputError(f"{name} must be {kind}{rng}; got {value!r}.")
    return v


def check_choice(value, name: str, choices) -> object:
    """One of ``choices`` (compared with ==; unhashable values are simply not found)."""
    try:
        found = any(isinstance(value, type(c)) and bool(value == c) for c in choices)
    except (TypeError, ValueError):
        found = False
    if not found:
        raise InvalidInputError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}.")
    return value


def check_index_array(a, name: str, n: int | None = None, ndim: int | None = 1) -> np.ndarray:
    """An int64 array of point indices (``ndim`` dimensions; None: any): integer-valued
    (integer dtype, or floats/objects holding whole numbers; not bool, not strings),
    non-negative, and below ``n`` when given."""
    if a is None:
        raise InvalidInputError(f"{name} is None; pass an array of point indices.")
    try:
        raw = np.asarray(a)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise InvalidInputError(f"{name} must be an array of point indices ({exc}).") from exc
    if raw.dtype.kind == "b":
        raise InvalidInputError(
            f"{name} is boolean; pass integer point indices (np.flatnonzero(mask) turns a mask into indices)."
        )
    if ndim is not None and raw.ndim != ndim:
        shape = "(m,)" if ndim == 1 else f"{ndim}-dimensional"
        raise InvalidInputError(f"{name} must be a {shape} index array; got shape {raw.shape}.")
    if raw.dtype.kind in "iu":
        if raw.dtype.kind == "u" and raw.size and raw.max() > np.iinfo(np.int64).max:
            raise InvalidInputError(
                f"{name} contains an index too large for int64; point indices must be below the number of points."
            )
        idx = raw.astype(np.int64)
    else:
        f = as_float_array(raw, name, finite=False)
        if not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
            raise InvalidInputError(f"{name} must contain integer indices (whole numbers).")
        if f.size and np.max(np.abs(f)) >= 2.0**62:
            raise InvalidInputError(
                f"{name} contains an index too large for int64; point indices must be below the number of points."
            )
        idx = f.astype(np.int64)
    if idx.size and idx.min() < 0:
        raise InvalidInputError(
            f"{name} contains index {idx.min()}, out of range: point indices start at 0 "
            "(negative indices are not allowed)."
        )
    if n is not None and idx.size and idx.max() >= n:
        bad = idx[idx >= n][0]
        raise InvalidInputError(f"{name} contains index {bad}, out of range for {n} points (valid: 0 … {n - 1}).")
    return np.ascontiguousarray(idx)


def check_labels(y, name: str = "y", n: int | None = None) -> np.ndarray:
    """Class labels: a 1-D array (a column (n, 1) is flattened) of mutually comparable,
    hashable values without NaN (and of length ``n`` when given)."""
    if y is None:
        raise InvalidInputError(f"{name} is None; pass one class label per point.")
    try:
        arr = np.asarray(y)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a 1-D array of class labels ({exc}).") from exc
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be a 1-D array of class labels; got shape {arr.shape}.")
    if n is not None and arr.shape[0] != n:
        raise InvalidInputError(f"{name} must have shape ({n},), one label per row / point; got shape {arr.shape}.")
    if arr.dtype.kind == "c":
        raise InvalidInputError(f"{name} is complex; class labels must be integers or strings.")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} contains NaN or inf; give a finite class label to every point.")
    if arr.dtype.kind == "O":
        if any(
            v is None or (isinstance(v, float) and not np.isfinite(v)) or isinstance(v, (complex, np.complexfloating))
            for v in arr
        ):
            raise InvalidInputError(f"{name} contains None, NaN or a complex value; give a class label to every point.")
        try:
            np.unique(arr)
        except TypeError as exc:
            raise InvalidInputError(
                f"{name} mixes label types that cannot be compared ({exc}); use labels of one "
                "type (all integers or all strings)."
            ) from exc
    return arr


def as_generator(random_state) -> np.random.Generator:
    """``np.random.default_rng(random_state)`` with a typed error for an invalid seed (None,
    a non-negative integer, a SeedSequence, a BitGenerator or a Generator)."""
    if isinstance(random_state, np.random.RandomState):
        random_state = int(random_state.randint(np.iinfo(np.int32).max))
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(
            f"random_state must be None, a non-negative integer or a numpy Generator; got {random_state!r} ({exc})."
        ) from exc


def check_constraints(constraints, families: tuple, owner: str) -> tuple:
    """The constraints argument of a problem: one constraint object or a list/tuple of them,
    at most one per family, at least one.  Returns one entry per family of ``families``
    (in that order), the object or None."""
    names = ", ".join(f.__name__ for f in families)
    hint = (
        f"{owner} takes one of {names} (cvxkml.sideinfo), or a list with at most one of "
        "each; e.g. PairConstraints.from_labels(y, baseline_metric(X))."
    )
    if constraints is None:
        raise InvalidInputError(f"constraints is None. {hint}")
    if isinstance(constraints, families):
        constraints = [constraints]
    elif not isinstance(constraints, (list, tuple)):
        raise InvalidInputError(f"Unsupported constraints argument of type {type(constraints).__name__}. {hint}")
    out = dict.fromkeys(families)
    for c in constraints:
        kind = type(c)
        if kind not in out:
            raise InvalidInputError(f"Unsupported constraint object {kind.__name__}. {hint}")
        if out[kind] is not None:
            raise InvalidInputError(f"Give at most one {kind.__name__} object (concatenate the arrays).")
        out[kind] = c
    if all(v is None for v in out.values()):
        raise InvalidInputError(f"At least one constraint set is required. {hint}")
    return tuple(out[k] for k in families)


def check_conic_options(solver, eps) -> tuple[str | None, float | None]:
    """The ``solver`` (None or a CVXPY solver name, returned upper-case) and ``eps`` (None or
    a positive tolerance) of an exact model's ``solve_reference``."""
    if solver is not None and not isinstance(solver, str):
        raise InvalidInputError(
            f"solver must be None or a CVXPY solver name such as 'CLARABEL' or 'SCS'; got {solver!r}."
        )
    return (None if solver is None else solver.upper()), check_positive(eps, "eps", allow_none=True)


def input_rank_rtol(K, rank_rtol: float, name: str = "rank_rtol") -> float:
    """The relative eigenvalue cut for the numerical rank of a kernel matrix as passed:
    max(rank_rtol, n·eps), eps the machine epsilon of K's dtype (float64 for integer
    input).  ``rank_rtol`` must lie in (0, 1]."""
    rank_rtol = check_number(rank_rtol, name, low=0.0, high=1.0, low_open=True)
    try:
        arr = np.asarray(K)
    except (TypeError, ValueError):  # check_kernel_matrix reports it
        return rank_rtol
    eps = float(np.finfo(arr.dtype if np.issubdtype(arr.dtype, np.floating) else float).eps)
    return max(rank_rtol, (arr.shape[0] if arr.ndim else 1) * eps)


def range_space(K, name: str = "K0", rank_rtol: float = 1e-10):
    """A PSD kernel matrix and its numerical range space: returns (K, w, V, keep), K as
    :func:`check_kernel_matrix` returns it, (w, V) its eigendecomposition and ``keep`` the
    eigenvalues counted in the rank.  An eigenvalue counts when it exceeds
    max(rank_rtol, n·eps)·max|λ|, eps the machine epsilon of the dtype K arrives with:
    below that a float32 (or narrower) matrix cannot tell it from zero (a rank-one float32
    kernel shows eigenvalues ~1e-10·max|λ| of pure round-off)."""
    rtol = input_rank_rtol(K, rank_rtol)
    K = check_magnitude(check_kernel_matrix(K, name), name)
    _, w, V = psd_rank(K, name, rtol)
    keep = w > rtol * max(float(np.max(np.abs(w))), np.finfo(float).tiny)
    return K, w, V, keep


# ---------------------------------------------------------------- scikit-learn estimators
# scikit-learn's validators raise ValueError / TypeError; the estimators call them through
# these helpers, which keep scikit-learn's message (what its own checks look for) and raise
# the library's typed errors: InvalidInputError, or InvalidInputTypeError for a TypeError.
def _sklearn_checked(check, hint: str, *args, **kw):
    try:
        return check(*args, **kw)
    except CvxkmlError:
        raise
    except (ValueError, TypeError) as exc:
        cls = InvalidInputTypeError if isinstance(exc, TypeError) else InvalidInputError
        raise cls(f"{exc} {hint}") from exc


_X_HINT = "Pass X as a finite real array of shape (n_samples, n_features)."


def estimator_fit_data(est, X, y="no_validation"):
    """Training data of a scikit-learn estimator: X float64 with at least 2 samples (and y
    class labels, one per row, unless y is "no_validation")."""
    from sklearn.utils.validation import validate_data

    if isinstance(y, str) and y == "no_validation":
        X = _sklearn_checked(validate_data, _X_HINT, est, X, dtype=np.float64, ensure_min_samples=2)
        return check_magnitude(X)
    X, y = _sklearn_checked(
        validate_data,
        _X_HINT + " Pass y as one class label per row.",
        est,
        X,
        y,
        dtype=np.float64,
        ensure_min_samples=2,
    )
    estimator_labels(y, X.shape[0])
    return check_magnitude(X), y


def estimator_labels(y, n: int):
    """Class labels y for n training points (a column vector is flattened with a warning)."""
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import column_or_1d

    hint = "Pass y as one class label per row of X."
    y = _sklearn_checked(column_or_1d, hint, y, warn=True)
    if y.shape[0] != n:
        raise InvalidInputError(f"X and y have inconsistent numbers of samples: {n} and {y.shape[0]}. {hint}")
    _sklearn_checked(check_classification_targets, hint, y)
    return y


def estimator_data(est, X):
    """New data for a fitted estimator (transform, predict, …): X float64 with the number
    of features seen in fit."""
    from sklearn.utils.validation import validate_data

    return check_magnitude(_sklearn_checked(validate_data, _X_HINT, est, X, reset=False, dtype=np.float64))


def estimator_pairs(est, pairs):
    """Pairs of points for ``pair_distance``: float64 of shape (n_pairs, 2, n_features_in_)."""
    from sklearn.utils.validation import check_array

    d = est.n_features_in_
    hint = f"Pass pairs as a finite real array of shape (n_pairs, 2, {d})."
    pairs = _sklearn_checked(check_array, hint, pairs, allow_nd=True, dtype=np.float64, input_name="pairs")
    if pairs.ndim != 3 or pairs.shape[1] != 2 or pairs.shape[2] != d:
        raise InvalidInputError(f"pairs must have shape (n_pairs, 2, {d}); got {pairs.shape}.")
    return check_magnitude(pairs, "pairs")


def _probe_call(fn, name):
    return fn(2) if name == "conj_shift" else fn(np.array([-0.5, 0.0, 0.5]))


def missing_methods(obj, names, call=_probe_call) -> list[str]:
    """The methods among ``names`` that ``obj`` does not implement: absent, or raising
    NotImplementedError on a small probe ``call(method, name)`` (a base-class stub counts
    as missing; the default probe is the regularizers' scalar-function one)."""
    out = []
    for name in names:
        fn = getattr(obj, name, None)
        if not callable(fn):
            out.append(name)
            continue
        try:
            with np.errstate(all="ignore"):
                call(fn, name)
        except NotImplementedError:
            out.append(name)
        except Exception:  # implemented (a probe outside its domain may raise)
            pass
    return out
