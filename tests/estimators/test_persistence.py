"""save / load of fitted estimators (cvxkml.estimators._persist): exact round trip, typed
errors for files of another class or format version, no pickle."""

import io
import json

import numpy as np
import pytest
from estimator_cases import FEW, SMALL_FITS, checked_configs
from sklearn.base import clone
from sklearn.datasets import load_wine

import cvxkml.estimators as E
from cvxkml.estimators import (
    ESTIMATORS,
    ITML,
    LMNN,
    EstimatorClassError,
    EstimatorFileError,
    FormatVersionError,
    KCRClassifier,
    KernelITML,
)
from cvxkml.estimators._persist import FORMAT_VERSION

#: one small, fast configuration per estimator, by class name
CONFIGS = {cls.__name__: (lambda cls=cls: clone(SMALL_FITS[cls])) for cls in ESTIMATORS}


@pytest.fixture(scope="module")
def data():
    X, y = load_wine(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))
    X, y = X[idx], y[idx]
    return X[:50], y[:50], X[50:90]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_round_trip_is_exact(name, data, tmp_path):
    Xtr, ytr, Xte = data
    est = CONFIGS[name]().fit(Xtr, ytr)
    path = tmp_path / "est.npz"
    est.save(path)
    back = type(est).load(path)
    again = E.load(path)  # the module function, any class
    assert type(back) is type(est) and type(again) is type(est)
    assert back.get_params() == est.get_params()
    pairs = np.stack([Xte[:20], Xte[20:40]], axis=1)
    for other in (back, again):
        # bit for bit: 0 ulp
        assert np.array_equal(other.transform(Xte), est.transform(Xte))
        assert np.array_equal(other.pair_distance(pairs), est.pair_distance(pairs))
        m1, m2 = est.get_metric(), other.get_metric()
        assert m1(Xte[0], Xte[1]) == m2(Xte[0], Xte[1])
    if hasattr(est, "learned_kernel"):
        assert np.array_equal(back.learned_kernel(Xte[:5], Xte[5:9]), est.learned_kernel(Xte[:5], Xte[5:9]))
    if hasattr(est, "predict"):
        assert np.array_equal(back.predict(Xte), est.predict(Xte))
        assert np.array_equal(back.predict_proba(Xte), est.predict_proba(Xte))
    assert back.n_features_in_ == est.n_features_in_
    assert back.solution_.objective == est.solution_.objective
    assert back.converged_ == est.converged_


def test_the_file_is_a_plain_npz_readable_without_pickle(data, tmp_path):
    Xtr, ytr, _ = data
    path = tmp_path / "itml.npz"
    ITML(**FEW).fit(Xtr, ytr).save(path)
    with np.load(path, allow_pickle=False) as z:
        header = json.loads(z["__cvxkml__"].tobytes().decode("utf-8"))
        assert all(z[k].dtype != object for k in z.files)
    assert header["format"] == "cvxkml.estimator" and header["format_version"] == FORMAT_VERSION
    assert header["class"] == "ITML" and header["params"]["n_similar"] == 10
    assert "components_" in header["state"]


def test_files_naming_the_standardized_kernel_at_its_former_module_load(data, tmp_path):
    """Files written before the base was split name StandardizedKernel in
    cvxkml.estimators._base; they load to the same model."""
    Xtr, ytr, Xte = data
    est = KernelITML(**FEW).fit(Xtr, ytr)
    path = tmp_path / "kitml.npz"
    est.save(path)
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    text = arrays["__cvxkml__"].tobytes().decode("utf-8")
    assert "cvxkml.estimators._maps:StandardizedKernel" in text
    text = text.replace("cvxkml.estimators._maps:StandardizedKernel", "cvxkml.estimators._base:StandardizedKernel")
    arrays["__cvxkml__"] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    np.savez_compressed(path, **arrays)
    back = KernelITML.load(path)
    assert np.array_equal(back.transform(Xte), est.transform(Xte))


def test_file_objects_and_string_labels(data):
    Xtr, ytr, Xte = data
    labels = np.array(["a", "b", "c"], dtype=object)[ytr]
    est = KCRClassifier(tol=1e-2).fit(Xtr, labels)
    buf = io.BytesIO()
    est.save(buf)
    buf.seek(0)
    back = KCRClassifier.load(buf)
    assert back.classes_.dtype == object and list(back.classes_) == ["a", "b", "c"]
    assert np.array_equal(back.predict(Xte), est.predict(Xte))


def test_callback_and_random_generator_are_not_saved(data, tmp_path):
    Xtr, ytr, _ = data
    est = ITML(n_similar=10, n_dissimilar=10, random_state=np.random.default_rng(0), callback=lambda info: False).fit(
        Xtr, ytr
    )
    est.save(tmp_path / "a.npz")
    back = ITML.load(tmp_path / "a.npz")
    assert back.callback is None and back.random_state is None


def test_refuses_another_class(data, tmp_path):
    Xtr, ytr, _ = data
    ITML(**FEW).fit(Xtr, ytr).save(tmp_path / "itml.npz")
    with pytest.raises(EstimatorClassError, match="holds a ITML, not a KernelITML"):
        KernelITML.load(tmp_path / "itml.npz")


def _rewrite_header(src, dst, **changes):
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays["__cvxkml__"].tobytes())
    header.update(changes)
    arrays["__cvxkml__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(dst, **arrays)


def test_refuses_another_format_version_and_foreign_files(data, tmp_path):
    Xtr, ytr, _ = data
    ITML(**FEW).fit(Xtr, ytr).save(tmp_path / "itml.npz")
    _rewrite_header(tmp_path / "itml.npz", tmp_path / "v2.npz", format_version=FORMAT_VERSION + 1)
    with pytest.raises(FormatVersionError, match="format version 2"):
        ITML.load(tmp_path / "v2.npz")
    _rewrite_header(tmp_path / "itml.npz", tmp_path / "x.npz", **{"class": "Foo"})
    with pytest.raises(EstimatorClassError, match="not a cvxkml estimator"):
        E.load(tmp_path / "x.npz")
    np.savez(tmp_path / "plain.npz", a=np.zeros(3))
    with pytest.raises(EstimatorFileError, match="not a saved cvxkml estimator"):
        ITML.load(tmp_path / "plain.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip file")
    with pytest.raises(EstimatorFileError):
        ITML.load(tmp_path / "junk.npz")
    # an object of a class outside the safe list is refused (no code from the file runs)
    with np.load(tmp_path / "itml.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays["__cvxkml__"].tobytes())
    header["state"]["pairs_"] = {"__object__": "os:system", "state": {}}
    arrays["__cvxkml__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(tmp_path / "evil.npz", **arrays)
    with pytest.raises(EstimatorFileError, match="does not load"):
        ITML.load(tmp_path / "evil.npz")
    # and state the class does not declare is refused
    header["state"]["evil"] = header["state"].pop("pairs_")
    arrays["__cvxkml__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(tmp_path / "evil.npz", **arrays)
    with pytest.raises(EstimatorFileError, match="'evil' is not a fitted attribute of ITML"):
        ITML.load(tmp_path / "evil.npz")
    assert issubclass(FormatVersionError, EstimatorFileError) and issubclass(EstimatorClassError, EstimatorFileError)


def test_save_needs_a_fitted_estimator(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        ITML().save(tmp_path / "a.npz")


def test_registry_is_the_public_tuple():
    """The classes save/load accept (registered by CvxkmlEstimator) are exactly ESTIMATORS."""
    from cvxkml.estimators import ESTIMATORS
    from cvxkml.estimators._persist import REGISTRY

    assert set(REGISTRY) == set(ESTIMATORS)


#: every configuration the scikit-learn checks fit, by class name and position: the loader's
#: checks of shapes and of parts that must agree accept each of them
VARIANTS = {f"{cls.__name__}-{k}": est for cls in ESTIMATORS for k, est in enumerate(checked_configs(cls))}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_checked_variant_loads(name, data):
    """Precomputed kernels, linear kernels on rank-deficient data, several kernels, the other
    divergences and regularizers: each saved fit loads and maps points bit for bit."""
    Xtr, ytr, Xte = data
    est = clone(VARIANTS[name])
    if isinstance(est, LMNN):  # a short fit: what is saved matters, not convergence
        est.set_params(max_iter=30)
    precomputed = getattr(est, "kernel", None) == "precomputed"
    est.fit(Xtr @ Xtr.T / Xtr.shape[1] if precomputed else Xtr, ytr)
    buf = io.BytesIO()
    est.save(buf)
    back = type(est).load(io.BytesIO(buf.getvalue()))
    Z = Xte @ Xtr.T / Xtr.shape[1] if precomputed else Xte
    assert np.array_equal(back.transform(Z), est.transform(Z))
