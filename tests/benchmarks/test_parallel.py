"""Independent fits of the reproductions through joblib (benchmarks._parallel): the
numbers of ``--n-jobs 2`` (loky processes) and of a local Dask cluster are those of the
serial run; results come back in task order; the options' errors are one line."""

import json
import sys
import time

import pytest
from cli_output import run_cli

from benchmarks import _parallel
from cvxkml._cli import EXIT_USAGE
from reference.reproduce import kcr as reproduce_kcr

#: fields that are measured seconds, not numbers of the experiment
TIMES = {"time", "total_s", "median_fit_s", "max_fit_s"}

#: a small reproduction grid: Iris (scikit-learn data), 2 splits x 2 nu x 2 lambda
KCR_ARGS = ["reproduce", "kcr", "--quick", "--splits", "2"]


def _numbers(obj):
    if isinstance(obj, dict):
        return {k: _numbers(v) for k, v in obj.items() if k not in TIMES}
    if isinstance(obj, list):
        return [_numbers(v) for v in obj]
    return obj


def _kcr(tmp_path, *extra):
    path = tmp_path / f"kcr{len(list(tmp_path.iterdir()))}.json"
    rc, out = run_cli(KCR_ARGS + ["--out", str(path), *extra])
    assert rc == 0
    return _numbers(json.loads(path.read_text())), out


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    numbers, out = _kcr(tmp_path_factory.mktemp("serial"))
    assert "independent fits run serially" in out
    fits = numbers["results"][0]["fits"]
    assert len(fits) == 8 and len({(f["nu"], f["lam"]) for f in fits}) == 4
    return numbers


def _sleepy(task):
    k, delay = task
    time.sleep(delay)
    return k * k


def test_results_come_back_in_task_order():
    """The first task finishes last; the results are still in task order, and so are the
    callbacks."""
    seen = []
    out = _parallel.run_tasks(
        _sleepy, [(0, 0.6), (1, 0.0), (2, 0.0), (3, 0.0)], n_jobs=2, callback=lambda k, r: seen.append((k, r))
    )
    assert out == [0, 1, 4, 9] and seen == list(enumerate(out))
    assert _parallel.run_tasks(_sleepy, [(5, 0.0)], n_jobs=1) == [25]


_CALLS = []


def _counted(task):
    _CALLS.append(task)
    return {"square": task * task}


def test_task_store_resumes_and_keys_cover_data_and_description(tmp_path):
    """A stopped run resumes: the second run loads what the first finished and computes
    only the rest; a key changes with any byte of the data or any field of the
    description."""
    import numpy as np

    store = _parallel.TaskStore(tmp_path / "store")
    keys = [_parallel.TaskStore.key(np.arange(3), task=k) for k in range(4)]
    assert len(set(keys)) == 4 and all(len(k) == 64 for k in keys)
    _CALLS.clear()
    first = _parallel.run_tasks(_counted, [0, 1], n_jobs=1, store=store, keys=keys[:2])
    assert _CALLS == [0, 1] and keys[0] in store and keys[2] not in store
    _CALLS.clear()
    seen = []
    again = _parallel.run_tasks(
        _counted, [0, 1, 2, 3], n_jobs=1, store=store, keys=keys, callback=lambda k, r: seen.append(k)
    )
    assert _CALLS == [2, 3] and seen == [0, 1, 2, 3]
    assert again[:2] == first and again[3] == {"square": 9}
    assert not list((tmp_path / "store").glob("*.tmp*"))
    # on loky workers: only the tasks not stored go to the workers, in task order
    keys2 = [_parallel.TaskStore.key(task=k, loky=True) for k in range(4)]
    store.save(keys2[1], {"square": -1})
    seen.clear()
    out = _parallel.run_tasks(
        _counted, [0, 1, 2, 3], n_jobs=2, store=store, keys=keys2, callback=lambda k, r: seen.append(k)
    )
    assert out == [{"square": 0}, {"square": -1}, {"square": 4}, {"square": 9}] and seen == [0, 1, 2, 3]
    assert all(k in store for k in keys2)
    # the key sees the data's bytes, dtype and shape, and the description
    base = _parallel.TaskStore.key(np.arange(3.0), a=1)
    assert base == _parallel.TaskStore.key(np.arange(3.0), a=1)
    for other in (
        _parallel.TaskStore.key(np.arange(3.0) + 1e-16 * np.array([0, 0, 4]), a=1),
        _parallel.TaskStore.key(np.arange(3), a=1),
        _parallel.TaskStore.key(np.arange(3.0)[None], a=1),
        _parallel.TaskStore.key(np.arange(3.0), a=2),
        _parallel.TaskStore.key(np.arange(3.0), b=1),
    ):
        assert other != base
    with pytest.raises(ValueError, match="one key per task"):
        _parallel.run_tasks(_counted, [0, 1], store=store, keys=keys[:1])


def test_loky_two_jobs_equal_serial(serial, tmp_path):
    numbers, out = _kcr(tmp_path, "--n-jobs", "2")
    assert "on 2 processes (joblib loky)" in out
    assert numbers == serial


def test_dask_local_cluster_equals_serial(serial, tmp_path):
    """A local Dask cluster of two worker processes on the loopback interface, reached
    with ``--backend dask --scheduler ADDRESS``."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed (the 'dask' extra) not installed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=50
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        numbers, out = _kcr(tmp_path, "--backend", "dask", "--scheduler", address)
    assert f"dask ({address}, 2 workers)" in out
    assert numbers == serial


def test_function_level_n_jobs_equals_serial():
    """The public functions take ``n_jobs`` too (here the grid of one split)."""
    import numpy as np

    protocol = reproduce_kcr.Protocol(n_splits=1, nus=(0.5, 2.0), lams=(1.0,), ks=(1,), max_iter=500)
    X, y = reproduce_kcr.load_dataset("iris")
    _, y = np.unique(y, return_inverse=True)
    tr, va, _ = reproduce_kcr.stratified_split(y, np.random.default_rng(0))
    Xtr, Xva = reproduce_kcr._standardize(X[tr], X[va])
    one = reproduce_kcr.kcr_grid(Xtr, y[tr], Xva, y[va], protocol, n_jobs=1)
    two = reproduce_kcr.kcr_grid(Xtr, y[tr], Xva, y[va], protocol, n_jobs=2)
    strip = lambda fits: [
        {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in f.items() if k != "time"} for f in fits
    ]
    assert [f["nu"] for f in one] == [0.5, 2.0] and strip(one) == strip(two)


def test_option_errors_are_one_line(monkeypatch, capsys):
    rc, out = run_cli(KCR_ARGS + ["--scheduler", "tcp://127.0.0.1:1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == EXIT_USAGE and "finished" not in out
    assert err == ["python -m benchmarks reproduce kcr: --scheduler needs --backend dask."]
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    rc, out = run_cli(KCR_ARGS + ["--backend", "dask"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == EXIT_USAGE and "finished" not in out and len(err) == 1
    assert err[0].endswith("--backend dask needs dask.distributed, the 'dask' extra: pip install 'cvxkml[dask]'")


def test_task_store_keys_cover_the_code(tmp_path, monkeypatch):
    """A result stored by other cvxkml code is not loaded: the key holds the source's hash."""
    import numpy as np

    fingerprint = _parallel.code_fingerprint()
    assert len(fingerprint) == 64 and fingerprint == _parallel.code_fingerprint.__wrapped__()
    store = _parallel.TaskStore(tmp_path)
    key = _parallel.TaskStore.key(np.arange(3), task=0)
    store.save(key, {"square": 0})
    monkeypatch.setattr(_parallel, "code_fingerprint", lambda: "0" * 64)  # the code changed
    other = _parallel.TaskStore.key(np.arange(3), task=0)
    assert other != key and other not in store and store.load(other) is None
