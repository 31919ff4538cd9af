"""Estimator files are validated, not trusted (issue 32, item 2): every reproduction of the
issue's "Estimator files" list is a typed :class:`cvxkml.errors.EstimatorFileError` naming
the file and the reason, or a correct load."""

import io
import json
import tracemalloc
import zipfile

import numpy as np
import pytest
from sklearn.datasets import load_wine

import cvxkml.estimators as E
from cvxkml.errors import EstimatorFileError, InvalidInputError
from cvxkml.estimators import ITML, LMNN, KCRClassifier, KernelITML
from cvxkml.estimators._persist import fitted_attributes

FEW = dict(n_similar=10, n_dissimilar=10, random_state=0)


@pytest.fixture(scope="module")
def data():
    X, y = load_wine(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))
    return X[idx][:50], y[idx][:50], X[idx][50:80]


@pytest.fixture(scope="module")
def files(data, tmp_path_factory):
    Xtr, ytr, _ = data
    d = tmp_path_factory.mktemp("files")
    out = {}
    for name, est in {
        "itml": ITML(**FEW),
        "kitml": KernelITML(**FEW),
        "kcr": KCRClassifier(tol=1e-2),
        "lmnn": LMNN(kernel="gaussian", k=2, max_iter=100),
    }.items():
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(Xtr, ytr)
        est.save(d / f"{name}.npz")
        out[name] = (d / f"{name}.npz").read_bytes()
    return out


def members(blob: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def header_of(blob: bytes) -> dict:
    return json.loads(np.lib.format.read_array(io.BytesIO(members(blob)["__cvxkml__.npy"])).tobytes())


def npy(a) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def build(blob: bytes, header=None, **replace) -> bytes:
    """The file ``blob`` with its header and members replaced (a member None is removed)."""
    m = members(blob)
    if header is not None:
        text = header if isinstance(header, str) else json.dumps(header)
        m["__cvxkml__.npy"] = npy(np.frombuffer(text.encode(), dtype=np.uint8))
    for k, v in replace.items():
        if v is None:
            m.pop(k, None)
        else:
            m[k] = v
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, b in m.items():
            zf.writestr(n, b)
    return out.getvalue()


def refused(blob, cls=ITML, match=None, **kw):
    with pytest.raises(EstimatorFileError, match=match) as info:
        cls.load(io.BytesIO(blob), **kw)
    assert "\n" not in str(info.value)
    return str(info.value)


def array_key(header, attr):
    return header["state"][attr]["__array__"]


# ------------------------------------------------------------------ the reproductions
def test_truncated_and_bit_flipped_files(files):
    """zipfile.BadZipFile, zlib errors, CRC errors: all EstimatorFileError."""
    blob = files["itml"]
    for cut in (10, 100, len(blob) // 2, len(blob) - 1):
        refused(blob[:cut])
    rng = np.random.default_rng(0)
    flipped = 0
    for _ in range(40):
        b = bytearray(blob)
        pos = int(rng.integers(len(b)))
        b[pos] ^= 1 << int(rng.integers(8))
        try:
            est = ITML.load(io.BytesIO(bytes(b)))
        except EstimatorFileError:
            flipped += 1
            continue
        assert np.all(np.isfinite(est.components_))  # a flip in an unused byte: still whole
    assert flipped > 20


def test_unknown_parameter_and_other_class_names(files):
    h = header_of(files["itml"])
    h["params"]["bogus"] = 1
    assert "no parameter 'bogus'" in refused(build(files["itml"], h))
    h = header_of(files["itml"])
    h["class"] = "KernelITML"  # another class's name on ITML's content
    refused(build(files["itml"], h), cls=E.CvxkmlEstimator if hasattr(E, "CvxkmlEstimator") else KernelITML)
    with pytest.raises(EstimatorFileError):
        E.load(io.BytesIO(build(files["itml"], h)))
    h = header_of(files["itml"])
    h["module"] = "os"
    assert "module 'os'" in refused(build(files["itml"], h))


def test_bad_values_in_the_header(files):
    h = header_of(files["itml"])
    h["params"]["tol"] = {"__float__": "abc"}
    refused(build(files["itml"], h), match="unexpected value")
    h = header_of(files["itml"])
    h["params"]["tol"] = "DEEP"
    for depth in (100, 100_000):  # past MAX_DEPTH; past the JSON parser's recursion
        text = json.dumps(h).replace('"DEEP"', "[" * depth + "1" + "]" * depth)
        refused(build(files["itml"], text), match="nested")


def test_a_member_declaring_a_huge_shape(files):
    h = header_of(files["itml"])
    key = array_key(h, "components_")
    raw = npy(np.zeros((3, 3)))
    fake = raw.replace(b"(3, 3)", b"(10000000, 10000000)")
    assert fake != raw
    refused(build(files["itml"], **{f"{key}.npy": fake}), match="declares shape")


def test_zip_bomb_members_are_never_decompressed(files):
    """Members the header does not name are not read; a named member above max_bytes is
    refused before it is decompressed."""
    bomb = npy(np.zeros(25_000_000, dtype=np.uint8))  # 25 MB of zeros, ~25 kB compressed
    blob = build(files["itml"], **{"bomb.npy": bomb})
    assert len(blob) < len(files["itml"]) + 200_000
    tracemalloc.start()
    est = ITML.load(io.BytesIO(blob))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5_000_000 and est.components_.shape == (13, 13)
    h = header_of(files["itml"])
    key = array_key(h, "components_")
    refused(build(files["itml"], **{f"{key}.npy": bomb}), match="above the limit", max_bytes=1_000_000)


def test_state_that_is_not_a_fitted_attribute(files):
    """``"transform": null`` used to replace the method."""
    h = header_of(files["itml"])
    h["state"]["transform"] = None
    refused(build(files["itml"], h), match="'transform' is not a fitted attribute")
    assert "components_" in fitted_attributes(ITML) and "transform" not in fitted_attributes(ITML)


@pytest.mark.parametrize("bad", ["nan", "inf", "int8", "float32", "wrong shape", "1-D", "wrong features"])
def test_components_checked(files, data, bad):
    h = header_of(files["itml"])
    key = array_key(h, "components_")
    L = np.eye(13)
    arr = {
        "nan": np.where(L > 0, np.nan, L),
        "inf": np.full((13, 13), np.inf),
        "int8": L.astype(np.int8),
        "float32": L.astype(np.float32),
        "wrong shape": np.eye(13)[:, :5],
        "1-D": np.ones(13),
        "wrong features": np.eye(12),
    }[bad]
    msg = refused(build(files["itml"], **{f"{key}.npy": npy(arr)}))
    assert "itml" in msg or "the file" in msg


def test_parameters_are_revalidated(files):
    for name, value in (("gamma", "abc"), ("tol", -1.0), ("max_iter", 0), ("scheme", "nope")):
        h = header_of(files["itml"])
        h["params"][name] = value
        refused(build(files["itml"], h), match="parameter is invalid")


def test_wrong_shapes_in_kernel_estimators(files):
    for name, cls, attr in (
        ("kitml", KernelITML, "X_fit_"),
        ("kcr", KCRClassifier, "_K_train"),
        ("lmnn", LMNN, "components_"),
    ):
        h = header_of(files[name])
        key = array_key(h, attr)
        refused(build(files[name], **{f"{key}.npy": npy(np.ones((4, 3)))}), cls=cls)


def test_the_error_is_an_invalid_input_error_naming_the_file(files, tmp_path):
    assert issubclass(EstimatorFileError, InvalidInputError)
    p = tmp_path / "damaged.npz"
    p.write_bytes(files["itml"][:50])
    with pytest.raises(EstimatorFileError, match="damaged.npz"):
        ITML.load(p)
    with pytest.raises(EstimatorFileError, match="No such file"):
        ITML.load(tmp_path / "missing.npz")


def test_every_estimator_declares_what_fit_sets(data):
    """The saved state is limited to the declared attributes; a fit sets only those."""
    import warnings

    from test_persistence import CONFIGS

    Xtr, ytr, _ = data
    for name, make in CONFIGS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = make().fit(Xtr, ytr)
        state = set(vars(est)) - set(est.get_params(deep=False))
        assert state <= fitted_attributes(type(est)), (name, state - fitted_attributes(type(est)))


def test_a_missing_fitted_attribute(files):
    """Fuzz find (seeds 0-7, 1 920 draws): ITML without feature_mean_ raised AttributeError."""
    for attr in ("feature_mean_", "components_", "n_features_in_"):
        h = header_of(files["itml"])
        del h["state"][attr]
        refused(build(files["itml"], h))
