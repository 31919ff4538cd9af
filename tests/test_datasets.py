"""Offline loaders (cvxkml.datasets) and the random LogDet instances (cvxkml.testing; the old
path ``cvxkml.datasets.make_random_instance`` is a deprecated alias)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from cvxkml import datasets
from cvxkml.declare import ITML, LogDetKernel
from cvxkml.errors import InvalidInputError
from cvxkml.testing import make_random_instance


@pytest.fixture(scope="module")
def folder(data_dir) -> Path:
    return data_dir


# ---------------------------------------------------------------- shapes (README table)
CSV_SHAPES = {
    "ionosphere": ((351, 34), 2),
    "sonar": ((208, 60), 2),
    "spambase": ((4601, 57), 2),
    "balance": ((625, 4), 3),
    "pendigits": ((10992, 16), 10),
}


@pytest.mark.parametrize("name", sorted(CSV_SHAPES))
def test_csv_shapes(folder, name):
    X, y = datasets.load_csv_dataset(name, data_dir=folder)
    shape, n_classes = CSV_SHAPES[name]
    assert X.shape == shape
    assert X.dtype == np.float64 and np.all(np.isfinite(X))
    assert y.shape == (shape[0],)
    assert np.unique(y).size == n_classes


def test_csv_name_with_suffix_and_label_types(folder):
    X, y = datasets.load_csv_dataset("sonar.csv", data_dir=folder)
    assert X.shape == (208, 60)
    assert set(np.unique(y)) == {"M", "R"}
    _, yp = datasets.load_csv_dataset("pendigits", data_dir=folder)
    assert np.issubdtype(yp.dtype, np.integer) and set(np.unique(yp)) == set(range(10))


def test_nursery_is_one_hot(folder):
    X, y = datasets.load_csv_dataset("nursery", data_dir=folder)
    assert X.shape == (12960, 27)
    assert set(np.unique(X)) == {0.0, 1.0}
    np.testing.assert_array_equal(X.sum(axis=1), 8.0)      # one category per attribute
    assert np.unique(y).size == 5


def test_mnist5000(folder):
    X, y = datasets.load_npz("mnist5000", data_dir=folder)
    assert X.shape == (5000, 784) and X.dtype == np.float64
    assert 0 <= X.min() and X.max() <= 255
    np.testing.assert_array_equal(np.bincount(y), np.full(10, 500))


def test_mfeat(folder):
    d = datasets.load_npz("mfeat.npz", data_dir=folder)
    dims = {"fou": 76, "fac": 216, "kar": 64, "pix": 240, "zer": 47, "mor": 6}
    assert set(d) == set(dims) | {"y"}
    for view, k in dims.items():
        assert d[view].shape == (2000, k)
    np.testing.assert_array_equal(np.bincount(d["y"]), np.full(10, 200))


# ---------------------------------------------------------------- folder resolution
def test_data_dir_precedence(tmp_path, monkeypatch):
    shared = tmp_path / "shared" / "data"
    shared.mkdir(parents=True)
    work = tmp_path / "repo"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv(datasets.DATA_ENV, raising=False)
    assert datasets.data_dir().resolve() == shared.resolve()            # ../shared/data
    monkeypatch.setenv(datasets.DATA_ENV, str(tmp_path / "env"))
    assert datasets.data_dir() == tmp_path / "env"                      # environment
    assert datasets.data_dir(tmp_path / "arg") == tmp_path / "arg"      # argument wins


def test_data_dir_unconfigured(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(datasets.DATA_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match="CVXKML_DATA"):
        datasets.data_dir()
    with pytest.raises(FileNotFoundError, match="No data folder"):
        datasets.load_csv_dataset("sonar")


def test_env_variable_is_used(folder, tmp_path, monkeypatch):
    shutil.copy(folder / "balance.csv", tmp_path / "balance.csv")
    monkeypatch.setenv(datasets.DATA_ENV, str(tmp_path))
    X, y = datasets.load_csv_dataset("balance")
    assert X.shape == (625, 4)


def test_missing_csv_message(tmp_path):
    with pytest.raises(FileNotFoundError,
                       match=r"'sonar\.csv' not found: expected .*sonar\.csv.*Gorman.*CVXKML_DATA"):
        datasets.load_csv_dataset("sonar", data_dir=tmp_path)


def test_missing_npz_message(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"'mnist5000\.npz' not found.*MNIST.*data_dir"):
        datasets.load_npz("mnist5000", data_dir=tmp_path)


def test_unknown_names(tmp_path):
    with pytest.raises(InvalidInputError, match="Unknown data set 'isolet'"):
        datasets.load_csv_dataset("isolet", data_dir=tmp_path)
    with pytest.raises(InvalidInputError, match="choose one of"):
        datasets.load_npz("usps", data_dir=tmp_path)


def test_wine_standardized():
    X, y = datasets.load_wine_standardized()
    assert X.shape == (178, 13)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(np.bincount(y), [59, 71, 48])


# ---------------------------------------------------------------- one loader for every named set
def test_load_dataset_matches_the_file_loaders(folder):
    for name in ("ionosphere", "balance", "pendigits"):
        X, y = datasets.load_dataset(name, folder)
        X2, y2 = datasets.load_csv_dataset(name, folder)
        np.testing.assert_array_equal(X, X2)
        np.testing.assert_array_equal(y, y2)
    X, y = datasets.load_dataset("MNIST5000", folder)
    X2, y2 = datasets.load_npz("mnist5000", folder)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_load_dataset_sklearn_sets_need_no_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(datasets.DATA_ENV, raising=False)
    for name, shape, classes in (("iris", (150, 4), 3), ("wine", (178, 13), 3), ("wdbc", (569, 30), 2)):
        X, y = datasets.load_dataset(name)
        assert X.shape == shape and X.dtype == np.float64 and np.unique(y).size == classes
    datasets.check_available(("iris", "wine", "wdbc"))             # no folder configured: fine


def test_integer_labels(folder):
    _, y = datasets.load_dataset("spambase", folder, integer_labels=True)
    _, raw = datasets.load_csv_dataset("spambase", folder)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, (raw == "spam").astype(int))   # sorted: nonspam = 0, spam = 1
    np.testing.assert_array_equal(datasets.label_codes(["b", "a", "b", "c"]), [1, 0, 1, 2])


def test_nursery_ordinal(folder):
    X, y = datasets.load_csv_dataset("nursery", folder, categorical="ordinal")
    assert X.shape == (12960, 8)
    for k, (_, cats) in enumerate(datasets.CATEGORY_ORDER["nursery"]):
        np.testing.assert_array_equal(np.unique(X[:, k]), np.arange(len(cats)))
    Xo, yo = datasets.load_csv_dataset("nursery", folder)           # one-hot: the same rows
    assert np.unique(X, axis=0).shape[0] == np.unique(Xo, axis=0).shape[0] == 12960
    np.testing.assert_array_equal(y, yo)
    assert np.linalg.matrix_rank(X) == 8
    X2, y2 = datasets.load_csv_dataset("balance", folder, categorical="ordinal")   # numeric: unchanged
    np.testing.assert_array_equal(X2, datasets.load_csv_dataset("balance", folder)[0])
    with pytest.raises(InvalidInputError, match="categorical must be"):
        datasets.load_csv_dataset("nursery", folder, categorical="binary")


def test_nursery_ordinal_unknown_category(tmp_path):
    (tmp_path / "nursery.csv").write_text(
        "Parents,Has_nurs,Form,Children,Housing,Finance,Social,Health,label\n"
        "usual,proper,complete,1,convenient,convenient,nonprob,recommended,recommend\n"
        "royal,proper,complete,1,convenient,convenient,nonprob,recommended,recommend\n")
    with pytest.raises(InvalidInputError, match=r"nursery\.csv: unexpected value 'royal' of attribute 'parents'"):
        datasets.load_csv_dataset("nursery", tmp_path, categorical="ordinal")


def test_check_available(folder, tmp_path):
    datasets.check_available(("iris", "sonar", "mfeat", "mnist5000"), folder)
    with pytest.raises(datasets.DataNotFoundError, match=r"'mfeat\.npz' not found"):
        datasets.check_available(("iris", "mfeat"), tmp_path)
    with pytest.raises(FileNotFoundError):                          # the error is a FileNotFoundError
        datasets.check_available(("balance",), tmp_path)
    with pytest.raises(InvalidInputError, match="Unknown data set 'soybean'"):
        datasets.check_available(("soybean",), folder)


def test_load_dataset_errors(folder):
    with pytest.raises(InvalidInputError, match="Unknown data set 'usps'"):
        datasets.load_dataset("usps", folder)
    with pytest.raises(InvalidInputError, match="several views"):
        datasets.load_dataset("mfeat", folder)


# ---------------------------------------------------------------- random instances
def test_random_instance_old_path_warns():
    with pytest.warns(DeprecationWarning, match="moved to cvxkml.testing"):
        old = datasets.make_random_instance
    assert old is make_random_instance


@pytest.mark.parametrize("kind, cls, dim", [("metric", ITML, 4), ("kernel", LogDetKernel, 12)])
def test_random_instance(kind, cls, dim):
    p = make_random_instance(12, 4, 20, 1.0, kind=kind, random_state=3)
    assert isinstance(p, cls)
    assert len(p.pairs) == 20 and p.gamma == 1.0
    assert p.M0.shape == (dim, dim)
    assert np.all(p.pairs.i < p.pairs.j)                                # distinct pairs
    assert len(set(zip(p.pairs.i, p.pairs.j))) == 20
    q = make_random_instance(12, 4, 20, 1.0, kind=kind, random_state=3)
    np.testing.assert_array_equal(p.M0, q.M0)
    np.testing.assert_array_equal(p.pairs.bound, q.pairs.bound)
    assert np.all(np.linalg.eigvalsh(p.M0) > 0)


@pytest.mark.parametrize("kind", ["metric", "kernel"])
def test_random_instance_fast_matches_exact(kind):
    p = make_random_instance(10, 3, 15, 1.0, kind=kind, random_state=1)
    fast = p.solve(tol=1e-10, max_iter=100_000)
    exact = p.solve_reference()
    assert fast.converged
    assert abs(fast.objective - exact.objective) <= 1e-6 * max(1.0, abs(exact.objective))


def test_random_instance_hard_constraints():
    p = make_random_instance(8, 3, 2, None, kind="metric", random_state=0)
    assert p.gamma is None


@pytest.mark.parametrize("kwargs, match", [
    (dict(n=5, d=2, n_pairs=11), "n_pairs must be between 1 and n"),
    (dict(n=5, d=2, n_pairs=0), "n_pairs must be between 1 and n"),
    (dict(n=1, d=2, n_pairs=1), "n >= 2"),
    (dict(n=5, d=2, n_pairs=3, kind="graph"), "kind must be"),
])
def test_random_instance_errors(kwargs, match):
    kwargs.setdefault("gamma", 1.0)
    with pytest.raises(InvalidInputError, match=match):
        make_random_instance(**kwargs)
