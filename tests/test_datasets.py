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
    np.testing.assert_array_equal(X.sum(axis=1), 8.0)  # one category per attribute
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
    assert datasets.data_dir().resolve() == shared.resolve()  # ../shared/data
    monkeypatch.setenv(datasets.DATA_ENV, str(tmp_path / "env"))
    assert datasets.data_dir() == tmp_path / "env"  # environment
    assert datasets.data_dir(tmp_path / "arg") == tmp_path / "arg"  # argument wins


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
    with pytest.raises(FileNotFoundError, match=r"'sonar\.csv' not found: expected .*sonar\.csv.*Gorman.*CVXKML_DATA"):
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
    datasets.check_available(("iris", "wine", "wdbc"))  # no folder configured: fine


def test_integer_labels(folder):
    _, y = datasets.load_dataset("spambase", folder, integer_labels=True)
    _, raw = datasets.load_csv_dataset("spambase", folder)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, (raw == "spam").astype(int))  # sorted: nonspam = 0, spam = 1
    np.testing.assert_array_equal(datasets.label_codes(["b", "a", "b", "c"]), [1, 0, 1, 2])


def test_nursery_ordinal(folder):
    X, y = datasets.load_csv_dataset("nursery", folder, categorical="ordinal")
    assert X.shape == (12960, 8)
    for k, (_, cats) in enumerate(datasets.CATEGORY_ORDER["nursery"]):
        np.testing.assert_array_equal(np.unique(X[:, k]), np.arange(len(cats)))
    Xo, yo = datasets.load_csv_dataset("nursery", folder)  # one-hot: the same rows
    assert np.unique(X, axis=0).shape[0] == np.unique(Xo, axis=0).shape[0] == 12960
    np.testing.assert_array_equal(y, yo)
    assert np.linalg.matrix_rank(X) == 8
    X2, y2 = datasets.load_csv_dataset("balance", folder, categorical="ordinal")  # numeric: unchanged
    np.testing.assert_array_equal(X2, datasets.load_csv_dataset("balance", folder)[0])
    with pytest.raises(InvalidInputError, match="categorical must be"):
        datasets.load_csv_dataset("nursery", folder, categorical="binary")


def test_nursery_ordinal_unknown_category(tmp_path):
    (tmp_path / "nursery.csv").write_text(
        "Parents,Has_nurs,Form,Children,Housing,Finance,Social,Health,label\n"
        "usual,proper,complete,1,convenient,convenient,nonprob,recommended,recommend\n"
        "royal,proper,complete,1,convenient,convenient,nonprob,recommended,recommend\n"
    )
    with pytest.raises(InvalidInputError, match=r"nursery\.csv: unexpected value 'royal' of attribute 'parents'"):
        datasets.load_csv_dataset("nursery", tmp_path, categorical="ordinal")


def test_check_available(folder, tmp_path):
    datasets.check_available(("iris", "sonar", "mfeat", "mnist5000"), folder)
    with pytest.raises(datasets.DataNotFoundError, match=r"'mfeat\.npz' not found"):
        datasets.check_available(("iris", "mfeat"), tmp_path)
    with pytest.raises(FileNotFoundError):  # the error is a FileNotFoundError
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
    assert np.all(p.pairs.i < p.pairs.j)  # distinct pairs
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


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n=5, d=2, n_pairs=11), "n_pairs must be between 1 and n"),
        (dict(n=5, d=2, n_pairs=0), "n_pairs must be between 1 and n"),
        (dict(n=1, d=2, n_pairs=1), "n >= 2"),
        (dict(n=5, d=2, n_pairs=3, kind="graph"), "kind must be"),
    ],
)
def test_random_instance_errors(kwargs, match):
    kwargs.setdefault("gamma", 1.0)
    with pytest.raises(InvalidInputError, match=match):
        make_random_instance(**kwargs)


# ---------------------------------------------------------------- damaged files: one typed line each
BALANCE_HEAD = "Left-weight,Left-distance,Right-weight,Right-distance,label\n"


def _one_line(exc_info, path):
    msg = str(exc_info.value)
    assert "\n" not in msg and str(path) in msg and "good copy" in msg
    return msg


@pytest.mark.parametrize(
    "text, match",
    [
        ("", r"the file is empty"),
        (BALANCE_HEAD, r"has a header but no data rows"),
        (BALANCE_HEAD + "\n\n", r"has a header but no data rows"),
        ("a,b,c\n1,2,3\n", r"the header line has 3 columns, expected 5 \(4 features and the label\)"),
        (BALANCE_HEAD + "1,1,1,1,B\n1,1,1,R\n", r"line 3 has 4 columns, expected 5"),
        (BALANCE_HEAD + "1,1,1,1,2,B\n", r"line 2 has 6 columns, expected 5"),
        (BALANCE_HEAD + "1,1,1,1,B\n1,abc,1,1,R\n", r"line 3, column 'Left-distance': 'abc' is not a number"),
        (BALANCE_HEAD + "1,1,1,,B\n", r"line 2, column 'Right-distance': '' is not a number"),
        (BALANCE_HEAD + "1,1,nan,1,B\n", r"line 2, column 'Right-weight': 'nan' is not a finite number"),
        (BALANCE_HEAD + "inf,1,1,1,B\n", r"line 2, column 'Left-weight': 'inf' is not a finite number"),
        (BALANCE_HEAD + "1,1,1,1, \n", r"line 2 has an empty label"),
        (b"\xff\xfe\x00garbage\x81\n", r"is not a UTF-8 text file"),
    ],
)
def test_damaged_csv_is_one_typed_line(tmp_path, text, match):
    path = tmp_path / "balance.csv"
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    with pytest.raises(InvalidInputError, match=match) as exc:
        datasets.load_csv_dataset("balance", tmp_path)
    assert "Siegler" in _one_line(exc, path)  # names the original source
    with pytest.raises(InvalidInputError, match=match):  # the same through load_dataset
        datasets.load_dataset("balance", tmp_path)


def test_csv_folder_in_place_of_the_file(tmp_path):
    (tmp_path / "sonar.csv").mkdir()
    with pytest.raises(InvalidInputError, match=r"sonar\.csv: is not a regular file"):
        datasets.load_csv_dataset("sonar", tmp_path)


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(datasets.DataNotFoundError, match=r"the data folder .*nowhere does not exist"):
        datasets.load_csv_dataset("sonar", tmp_path / "nowhere")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(datasets.DataNotFoundError, match=r"afile is a file, not a folder"):
        datasets.load_npz("mfeat", tmp_path / "afile")


def test_data_not_found_is_a_cvxkml_error_and_a_file_not_found_error(tmp_path):
    from cvxkml.errors import CvxkmlError

    with pytest.raises(CvxkmlError) as exc:
        datasets.load_npz("mnist5000", tmp_path)
    assert isinstance(exc.value, FileNotFoundError) and isinstance(exc.value, datasets.DataNotFoundError)


def _npz_member(name, header_shape, dtype="<f8", data=b""):
    """(member name, bytes) of an .npy member whose header says ``header_shape`` and whose
    data is ``data`` (possibly shorter than the header declares)."""
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": header_shape})
    return f"{name}.npy", buf.getvalue() + data


def _write_zip(path, members):
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        for name, blob in members:
            zf.writestr(name, blob)


def _good_mnist(path, n=5):
    np.savez(path, X=np.arange(n * 784, dtype=np.uint8).reshape(n, 784), y=np.arange(n) % 10)


def _damage(kind, path):
    """Write a damaged mnist5000.npz of one kind at ``path``."""
    n = 5
    X, y = np.zeros((n, 784)), np.arange(n)
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(b"this is not an archive" * 10)
    elif kind == "npy":
        with open(path, "wb") as fh:
            np.save(fh, X)
    elif kind == "truncated":
        _good_mnist(path)
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif kind == "bitflip":
        np.savez_compressed(path, X=np.random.default_rng(0).random((n, 784)), y=y)
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 3] ^= 0xFF
        path.write_bytes(bytes(raw))
    elif kind == "no_y":
        np.savez(path, X=X)
    elif kind == "object":
        _write_zip(path, [_npz_member("X", (n, 784), "|O"), _npz_member("y", (n,), "<i8", y.tobytes())])
    elif kind == "strings":
        np.savez(path, X=X, y=np.array(["a", "b", "c", "d", "e"]))
    elif kind == "shape":
        np.savez(path, X=np.zeros((n, 100)), y=y)
    elif kind == "flat":
        np.savez(path, X=np.zeros(n * 784), y=y)
    elif kind == "y2d":
        np.savez(path, X=X, y=y.reshape(n, 1))
    elif kind == "rows":
        np.savez(path, X=X, y=np.arange(n - 1))
    elif kind == "nan":
        X[2, 7] = np.nan
        np.savez(path, X=X, y=y)
    elif kind == "inf":
        X[0, 0] = -np.inf
        np.savez(path, X=X, y=y)
    elif kind == "float_labels":
        np.savez(path, X=X, y=np.array([0.0, 1.5, 2, 3, 4]))
    elif kind == "short_member":
        _write_zip(path, [_npz_member("X", (n, 784), data=b"\0" * 800), _npz_member("y", (n,), "<i8", y.tobytes())])
    elif kind == "huge":
        _write_zip(path, [_npz_member("X", (10**7, 784)), _npz_member("y", (10**7,), "<i8")])
    elif kind == "zero_rows":
        np.savez(path, X=np.zeros((0, 784)), y=np.zeros(0, dtype=int))


@pytest.mark.parametrize(
    "kind, match",
    [
        ("empty", r"the file is empty"),
        ("garbage", r"is not a NumPy \.npz archive"),
        ("npy", r"is not a NumPy \.npz archive"),
        ("truncated", r"is not a NumPy \.npz archive \(not a zip file, or truncated\)"),
        ("bitflip", r"is damaged: an array (header )?cannot be read"),
        ("no_y", r"has no array 'y' \(expected arrays \['X', 'y'\]; found \['X'\]\)"),
        ("object", r"array 'X' has dtype object .*never loaded"),
        ("strings", r"array 'y' has dtype <U1"),
        ("shape", r"array 'X' has shape \(5, 100\), expected \(n, 784\)"),
        ("flat", r"array 'X' has shape \(3920,\), expected \(n, 784\)"),
        ("y2d", r"array 'y' has shape \(5, 1\), expected \(n,\)"),
        ("rows", r"array 'y' has 4 rows, the others 5"),
        ("nan", r"array 'X' holds NaN or inf \(first at row 2, column 7\)"),
        ("inf", r"array 'X' holds NaN or inf \(first at row 0, column 0\)"),
        ("float_labels", r"the labels 'y' are not all integers"),
        ("short_member", r"array 'X' declares 31360 bytes but its member holds \d+ \(truncated or damaged\)"),
        ("huge", r"array 'X' declares 62720000000 bytes, over the 2147483648-byte limit"),
        ("zero_rows", r"holds no rows"),
    ],
)
def test_damaged_npz_is_one_typed_line(tmp_path, kind, match):
    path = tmp_path / "mnist5000.npz"
    _damage(kind, path)
    with pytest.raises(InvalidInputError, match=match) as exc:
        datasets.load_npz("mnist5000", tmp_path)
    assert "MNIST" in _one_line(exc, path)
    with pytest.raises(InvalidInputError, match=match):  # a full check finds the same
        datasets.check_available(("mnist5000",), tmp_path, load=True)


def test_small_good_npz_loads(tmp_path):
    _good_mnist(tmp_path / "mnist5000.npz")
    X, y = datasets.load_npz("mnist5000", tmp_path)
    assert X.shape == (5, 784) and X.dtype == np.float64 and y.dtype == np.int64
    datasets.check_available(("mnist5000",), tmp_path)


def test_mfeat_view_with_wrong_columns(folder, tmp_path):
    d = datasets.load_npz("mfeat", folder)
    d["kar"] = d["kar"][:, :10]
    np.savez(tmp_path / "mfeat.npz", **d)
    with pytest.raises(InvalidInputError, match=r"array 'kar' has shape \(2000, 10\), expected \(n, 64\)"):
        datasets.load_npz("mfeat", tmp_path)


def test_check_available_header_check_and_full_load(folder, tmp_path):
    """The default check reads headers only (a bad header is found, a bad row far down is
    not); load=True reads everything."""
    datasets.check_available(tuple(datasets.CSV_DATASETS) + tuple(datasets.NPZ_DATASETS), folder, load=True)
    (tmp_path / "balance.csv").write_text("a,b\n1,B\n")
    with pytest.raises(InvalidInputError, match="header line has 2 columns"):
        datasets.check_available(("balance",), tmp_path)
    (tmp_path / "balance.csv").write_text(BALANCE_HEAD + "1,1,1,1,B\n" * 50 + "1,1,x,1,B\n")
    datasets.check_available(("balance",), tmp_path)
    with pytest.raises(InvalidInputError, match=r"line 52, column 'Right-weight': 'x' is not a number"):
        datasets.check_available(("balance",), tmp_path, load=True)
    _damage("nan", tmp_path / "mnist5000.npz")
    datasets.check_available(("mnist5000",), tmp_path)  # headers are fine
    with pytest.raises(InvalidInputError, match="NaN"):
        datasets.check_available(("mnist5000",), tmp_path, load=True)
