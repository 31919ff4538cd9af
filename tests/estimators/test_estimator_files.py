"""Estimator files are validated, not trusted: every crafted or damaged file below (truncated,
bit-flipped, hostile header values, oversized or mismatched members, parts that disagree) is a
typed :class:`cvxkml.errors.EstimatorFileError` naming the file and the reason, or a correct load."""

import io
import json
import tracemalloc
import warnings
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


# ------------------------------------------------------------------ damaged and hostile files
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
    key = h["state"]["solution_"]["state"]["dual"]["__array__"]  # a diagnostic: any shape
    refused(build(files["itml"], **{f"{key}.npy": bomb}), match="above the limit", max_bytes=1_000_000)
    key = array_key(h, "components_")  # the model's own part: its shape follows from n_features_in_
    refused(build(files["itml"], **{f"{key}.npy": bomb}), match=r"declares shape \(25000000,\), not \(13, 13\)")


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


# ------------------------------------------------------------------ sizes checked before reading
def lists_header(files, n_lists: int) -> str:
    """ITML's header with ``percentiles`` holding ``n_lists`` empty lists (a few bytes each,
    a Python list each once parsed)."""
    h = header_of(files["itml"])
    h["params"]["percentiles"] = "LISTS"
    return json.dumps(h).replace('"LISTS"', "[" + "[]," * (n_lists - 1) + "[]]")


def test_a_long_header_is_refused_before_it_is_decompressed(files):
    """A small file whose header holds long lists of lists, or a header of zeros, used to be
    decompressed and parsed in full before it was refused ('percentiles must be a pair');
    a header declaring more than a header may hold is now refused before it is read."""
    big = lists_header(files, 1_000_000)  # 3 MB of JSON, a million lists
    blob = build(files["itml"], big)
    assert len(blob) < 100_000
    tracemalloc.start()
    msg = refused(blob, match="the header declares")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2_000_000, peak  # nothing of the header was decompressed
    assert "more than the" in msg
    zeros = npy(np.zeros(5_000_000, dtype=np.uint8))
    refused(build(files["itml"], **{"__cvxkml__.npy": zeros}), match="the header declares")


def test_a_header_of_many_lists_or_deep_nesting_is_refused_before_parsing(files):
    """Within the byte limit, the number of lists and objects and the nesting depth are
    counted on the raw bytes before the JSON parser builds anything."""
    blob = build(files["itml"], lists_header(files, 200_000))  # under the byte limit, over the container limit
    tracemalloc.start()
    refused(blob, match="lists and objects, more than")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 6_000_000, peak  # the parsed lists alone would take ~11 MB
    h = header_of(files["itml"])
    h["params"]["tol"] = "DEEP"
    text = json.dumps(h).replace('"DEEP"', "[" * 200 + "1" + "]" * 200)
    refused(build(files["itml"], text), match="nested 2.. levels deep, more than")
    # brackets inside strings are not nesting: a legitimate header with such strings loads
    h = header_of(files["itml"])
    h["dropped"] = ["[" * 500 + '\\"' + "{" * 500]
    assert ITML.load(io.BytesIO(build(files["itml"], h))).n_features_in_ == 13


def _nested(rng, depth):
    """A random JSON value with strings full of quotes, backslashes and brackets."""
    kind = rng.integers(6 if depth < 8 else 3)
    if kind == 0:
        return "".join(rng.choice(list('ab[]{}"\\,:'), size=int(rng.integers(0, 8))))
    if kind == 1:
        return int(rng.integers(-5, 5))
    if kind == 2:
        return None
    if kind in (3, 4):
        return [_nested(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]
    return {
        _nested(rng, 8) if rng.random() < 0.5 else "k": _nested(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))
    }


def _extent(v, depth=0):
    """(depth, containers) of a parsed JSON value: the reference for json_extent."""
    if isinstance(v, (list, dict)):
        items = v.values() if isinstance(v, dict) else v
        sub = [_extent(x, depth + 1) for x in items]
        return max([depth + 1] + [d for d, _ in sub]), 1 + sum(c for _, c in sub)
    return depth, 0


def test_json_extent_counts_what_the_parser_builds():
    from cvxkml.estimators._persist_codec import json_extent

    rng = np.random.default_rng(0)
    for _ in range(300):
        v = _nested(rng, 0)
        assert json_extent(json.dumps(v).encode()) == _extent(v)


def test_a_member_declaring_more_than_the_model_implies_is_refused_before_reading(files):
    """A member declaring far more numbers than n_features_in_ implies used to be read in
    full before 'feature_mean_ of shape ... does not match n_features_in_'.  Its shape is
    now checked against n_features_in_ from its .npy preamble alone."""
    h = header_of(files["itml"])
    key = array_key(h, "feature_mean_")
    blob = build(files["itml"], **{f"{key}.npy": npy(np.zeros(4_000_000))})  # 32 MB of zeros
    assert len(blob) < 200_000
    tracemalloc.start()
    refused(blob, match=r"feature_mean_ declares shape \(4000000,\), not \(13,\) \(n_features_in_ = 13\)")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2_000_000, peak
    # the training points set n_samples: the learned kernel's matrices must be n_samples²,
    # whatever the order of the keys of the object holding them
    h = header_of(files["kitml"])
    key = h["state"]["learned_kernel_"]["state"]["S"]["__array__"]
    wrong = {f"{key}.npy": npy(np.zeros((51, 51)))}
    refused(
        build(files["kitml"], **wrong),
        cls=KernelITML,
        match=r"learned_kernel_.S declares shape \(51, 51\), not \(50, 50\)",
    )
    lk = h["state"]["learned_kernel_"]
    h["state"]["learned_kernel_"] = {"state": lk["state"], "__object__": lk["__object__"]}
    refused(build(files["kitml"], h, **wrong), cls=KernelITML, match=r"not \(50, 50\)")


def test_a_dense_metric_too_costly_to_decode_for_its_file(files):
    """A consistent ITML of zeros in 1100 dimensions fits in a small file; loading it would
    eigendecompose its 1100 × 1100 metric (cubic work).  By default the work of decoding is
    bounded by what the file's compressed arrays could justify."""
    d = 1100
    st = header_of(files["itml"])["state"]
    h = header_of(files["itml"])
    h["state"]["n_features_in_"] = d
    arrays = {
        st["feature_mean_"]["__array__"]: np.zeros(d),
        st["feature_scale_"]["__array__"]: np.ones(d),
        st["metric_"]["arrays"]["W"]["__array__"]: np.zeros((d, d)),
        st["components_"]["__array__"]: np.zeros((d, d)),
    }
    blob = build(files["itml"], h, **{f"{k}.npy": npy(a) for k, a in arrays.items()})
    assert len(blob) < 100_000
    refused(blob, match=r"decoding its 1100 × 1100 metric takes about 1.3e\+09 multiply-adds, above the limit")


def with_zeros(blob: bytes, name: str, count: int) -> bytes:
    """The file ``blob`` with its member ``name`` replaced by ``count`` float64 zeros,
    compressed as they are written (the test never holds them)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for n, b in members(blob).items():
            if n != name:
                zf.writestr(n, b)
        with zf.open(name, "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (count,)})
            for _ in range(count // 1_000_000):
                f.write(bytes(8_000_000))
            f.write(bytes(8 * (count % 1_000_000)))
    return out.getvalue()


def test_the_default_budget_is_tied_to_the_file_size(files):
    """A small file cannot declare much more than it holds: more zeros than MIN_BYTES in a
    diagnostic array (whose shape nothing implies) are refused by default, before they are
    read, with the max_bytes that loads the file when the caller trusts it."""
    from cvxkml.estimators._persist import MIN_BYTES

    h = header_of(files["itml"])
    key = h["state"]["solution_"]["state"]["dual"]["__array__"]
    count = MIN_BYTES // 8 + 600_000
    blob = with_zeros(files["itml"], f"{key}.npy", count)
    assert len(blob) < 1_000_000
    tracemalloc.start()
    msg = refused(blob, match="above the limit")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2_000_000, peak
    assert "Load only files written" not in msg  # nothing is wrong with the file
    trusted = int(msg.split("max_bytes=")[1].split(" ")[0])
    assert ITML.load(io.BytesIO(blob), max_bytes=trusted).solution_.dual.shape == (count,)


def test_archives_with_repeated_or_too_many_members(files):
    """Duplicate member names used to load (which copy is read is up to the reader).  An
    archive declaring more members than a saved estimator has is refused from its end
    record, before the zip directory is parsed."""
    m = members(files["itml"])
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate it writes
        for name, b in m.items():
            zf.writestr(name, b)
        key = array_key(header_of(files["itml"]), "components_")
        zf.writestr(f"{key}.npy", npy(2 * np.eye(13)))
    refused(out.getvalue(), match=f"member '{key}.npy' more than once")
    from cvxkml.estimators._persist import MAX_MEMBERS

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for name, b in m.items():
            zf.writestr(name, b)
        for k in range(MAX_MEMBERS):
            zf.writestr(f"x{k}", b"")
    refused(out.getvalue(), match="members, more than")


# ------------------------------------------------------------------ parts that disagree
def test_truncated_or_rescaled_components(files):
    """A truncated components_ used to load.  A dense metric's components_ must be d × d;
    components_ that no longer factor metric_ are refused by the probe."""
    h = header_of(files["itml"])
    key = array_key(h, "components_")
    L = ITML.load(io.BytesIO(files["itml"])).components_
    refused(build(files["itml"], **{f"{key}.npy": npy(L[:5])}), match=r"components_ declares shape \(5, 13\)")
    msg = refused(build(files["itml"], **{f"{key}.npy": npy(2 * L)}), match="the stored parts disagree")
    assert "metric_" in msg


def _with_gamma(kernel_tag, factor):
    """A copy of a saved (standardized) Gaussian kernel with its gamma scaled."""
    tag = json.loads(json.dumps(kernel_tag))
    params = tag["state"]["kernel"]["state"]["params"]["__dict__"]
    params["gamma"] *= factor
    return tag


def test_a_replaced_kernel(files):
    """A replaced kernel_ used to load, its pair_distance far from the distance between its
    transforms.  kernel_ and the learned kernel's base are the same part stored twice;
    replaced in both, the stored parts no longer agree on the training points."""
    h = header_of(files["kitml"])
    h["state"]["kernel_"] = _with_gamma(h["state"]["kernel_"], 10.0)
    refused(build(files["kitml"], h), cls=KernelITML, match="kernel_ and learned_kernel_.base differ")
    h = header_of(files["kitml"])
    h["state"]["kernel_"] = _with_gamma(h["state"]["kernel_"], 10.0)
    h["state"]["learned_kernel_"]["state"]["base"] = h["state"]["kernel_"]
    refused(build(files["kitml"], h), cls=KernelITML, match="the stored parts disagree")


def test_a_learned_kernel_that_disagrees_with_its_embedding(files):
    """The learned kernel's S (pair_distance, learned_kernel) and its stored embedding
    (transform) are two forms of one kernel; a changed S is refused, and a missing
    embedding (recomputing it is cubic in the training points) too."""
    h = header_of(files["kitml"])
    key = h["state"]["learned_kernel_"]["state"]["S"]["__array__"]
    S = np.lib.format.read_array(io.BytesIO(members(files["kitml"])[f"{key}.npy"]))
    refused(build(files["kitml"], **{f"{key}.npy": npy(3 * S)}), cls=KernelITML, match="the stored parts disagree")
    h["state"]["learned_kernel_"]["state"]["_embed"] = None
    refused(build(files["kitml"], h), cls=KernelITML, match="lacks the embedding")
