"""Independent fits of an experiment (CV folds, grids, random splits) through joblib: serially,
on local processes (loky) or on a Dask cluster (joblib's ``dask`` backend), with the same numbers.

An experiment writes its independent fits as a module-level function of one picklable task
and calls ``results = run_tasks(fit_one, tasks, n_jobs)`` (results in task order).  Every
task carries its own seeds and runs on one BLAS / OpenMP / Numba thread, serially too, so
that the numbers do not depend on ``n_jobs`` or the backend (a threaded reduction's order
depends on the number of threads); only the seconds do.  The commands add ``--n-jobs``,
``--backend``, ``--scheduler`` (:func:`add_parallel_options`) and run inside
:func:`parallel_from_args`; Dask (the ``dask`` extra) is imported only when asked for.  With a
:class:`TaskStore` (``--resume DIR``) a long run resumes: finished results are saved as they
arrive and loaded, not computed, by the next run.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import stat
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cvxkml._cli import BadValue, typed
from cvxkml.estimators._persist import read_npy_member as _read_npy_member

from ._commands import CommandError, writable_folder
from ._report import jsonable

__all__ = [
    "ParallelOptions",
    "BACKENDS",
    "DASK_EXTRA",
    "CommandError",
    "StoreFileError",
    "TaskStore",
    "check_store_folder",
    "store_folder",
    "scheduler_address",
    "code_fingerprint",
    "add_parallel_options",
    "parallel_context",
    "parallel_from_args",
    "run_tasks",
    "describe",
]

#: The joblib backends the commands offer.
BACKENDS = ("loky", "dask")

#: How to install what ``--backend dask`` needs.
DASK_EXTRA = "pip install 'cvxkml[dask]'"


def _call(func, task):
    """``func(task)`` on one BLAS / OpenMP thread and one Numba thread (see the module docstring)."""
    import numba
    from threadpoolctl import threadpool_limits

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            return func(task)
    finally:
        numba.set_num_threads(threads)


#: What a :class:`TaskStore` file holds (``format``) and the version of that layout.
STORE_FORMAT, STORE_VERSION = "cvxkml.taskstore", 1
#: The largest stored result a :class:`TaskStore` reads back (bytes, uncompressed).
STORE_MAX_BYTES = 1 << 30
_HEADER = "__store__.npy"
#: the names of the files a :class:`TaskStore` reads: ``<key>.npz``, the key 64 hex digits
_STORED = re.compile(r"[0-9a-f]{64}\.npz")


class StoreFileError(CommandError):
    """A :class:`TaskStore` file this cvxkml did not write, changed since (content hash), or
    not a regular file: the command cannot run as given (exit status 2, like every
    :class:`CommandError`)."""


def _encode(v, arrays: dict, where: str = "result"):
    """A result as JSON, arrays put in ``arrays`` and tagged (the types :class:`TaskStore` stores)."""
    if v is None or isinstance(v, (bool, str, np.bool_)):
        return v if not isinstance(v, np.bool_) else bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if np.isfinite(v) else {"__float__": repr(float(v))}
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in "biufU":
            raise TypeError(f"TaskStore: {where} is an array of dtype {v.dtype} (numbers, booleans or strings only)")
        arrays[f"a{len(arrays)}"] = v
        return {"__array__": f"a{len(arrays) - 1}"}
    if isinstance(v, (list, tuple)):
        items = [_encode(x, arrays, f"{where}[{i}]") for i, x in enumerate(v)]
        return items if isinstance(v, list) else {"__tuple__": items}
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {"__dict__": {k: _encode(x, arrays, f"{where}[{k!r}]") for k, x in v.items()}}
    if isinstance(v, dict):
        raise TypeError(f"TaskStore: {where} has a key that is not a string")
    raise TypeError(
        f"TaskStore: {where} is a {type(v).__name__}, which a result may not hold "
        "(dicts, lists, tuples, numbers, strings, None and NumPy arrays only)"
    )


def _decode(v, arrays: dict, depth: int = 0):
    """The inverse of :func:`_encode`; ValueError on anything it does not write."""
    if depth > 200:
        raise ValueError("nested too deeply")
    if v is None or isinstance(v, (bool, str, int, float)):
        return v
    if isinstance(v, list):
        return [_decode(x, arrays, depth + 1) for x in v]
    if isinstance(v, dict) and len(v) == 1:
        ((tag, x),) = v.items()
        if tag == "__array__" and isinstance(x, str) and x in arrays:
            return arrays[x]
        if tag == "__float__" and x in ("nan", "inf", "-inf"):
            return float(x)
        if tag == "__tuple__" and isinstance(x, list):
            return tuple(_decode(e, arrays, depth + 1) for e in x)
        if tag == "__dict__" and isinstance(x, dict):
            return {k: _decode(e, arrays, depth + 1) for k, e in x.items()}
    raise ValueError(f"unexpected value {str(v)[:60]!r}")


def _hash(h, arrays, names=None):
    """``h`` updated with every array's name (when ``names``), dtype, shape and bytes; its hex digest."""
    for name, a in zip(names or [""] * len(arrays), arrays):
        a = np.ascontiguousarray(a)
        h.update(f"{name}{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _content_hash(key: str, body: str, arrays: dict) -> str:
    """SHA-256 of the key, the JSON body and every array's name, dtype, shape and bytes."""
    names = sorted(arrays)
    return _hash(hashlib.sha256(key.encode() + body.encode()), [arrays[n] for n in names], names)


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 of the Python source in use: the cvxkml package, :mod:`benchmarks` and
    :mod:`reference.reproduce` (every ``*.py`` below each folder, by relative path and bytes):
    part of every :meth:`TaskStore.key`."""
    import cvxkml

    here = Path(__file__).resolve().parent
    roots = (Path(cvxkml.__file__).resolve().parent, here, here.parent / "reference" / "reproduce")
    h = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            name = f"{root.name}/{path.relative_to(root).as_posix()}"
            h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _open_regular(path: Path):
    """``path`` opened for reading, a binary file object; OSError when it is not a regular file
    (following links).  Opened without blocking, so that a named pipe (or a link to one) is
    refused at once rather than waited on, and checked on the open file, so that what is checked
    is what is read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file (a device, pipe, socket or a link to one)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_store_folder(directory) -> str:
    """Refuse a :class:`TaskStore` folder (``--resume DIR``) that holds a stored-result name
    which is not a regular file, before any work.

    A stored result is read when its task comes up, maybe hours into a run; a member that is a
    device (a link to ``/dev/zero`` never ends), a named pipe (a read waits forever), a socket or
    a broken link would stop the run there.  Every ``<key>.npz`` below ``directory`` (the
    results and the per-fit folders) must therefore be a regular file, following links; the
    ``fits`` folder, when there, must be a folder.  :meth:`TaskStore.load` checks each file
    again when it opens it.

    Parameters
    ----------
    directory : str or Path
        The folder (it exists: the option's type created it).

    Returns
    -------
    str
        ``directory``.

    Raises
    ------
    ValueError
        Naming the first offending entry and what it is.
    """
    root = Path(directory)
    try:
        if (root / "fits").exists() and not (root / "fits").is_dir():
            raise BadValue(f"{root / 'fits'} is not a folder; remove it")
        for folder, dirs, files in os.walk(root):
            for name in files + dirs:
                path = Path(folder) / name
                if not _STORED.fullmatch(name):
                    continue
                try:
                    mode = path.stat().st_mode
                except OSError as exc:
                    raise BadValue(f"{path} cannot be read ({exc.strerror or exc}); remove it") from None
                if not stat.S_ISREG(mode):
                    raise BadValue(f"{path} is not a regular file (a folder, device, pipe or socket); remove it")
    except OSError as exc:
        raise BadValue(f"cannot list {root}: {exc.strerror or exc}") from None
    return str(directory)


#: an argparse ``type`` for ``--resume DIR``: a folder that can be written (created when
#: missing; :data:`._commands.writable_folder`) whose stored results are regular files
#: (:func:`check_store_folder`)
store_folder = typed("a results folder that can be written", lambda text: check_store_folder(writable_folder(text)))
store_folder.__name__ = "a_task_store_folder"


class TaskStore:
    """Finished tasks' results in a folder, so that a run stopped part way resumes.

    A result is stored under a key derived from everything its numbers depend on
    (:meth:`key`: the data's bytes, the task's description and the cvxkml source,
    :func:`code_fingerprint`), so a result stored by other code is never loaded: after any
    change to the package the run starts afresh (the old files stay, unused).  No pickle (a
    folder may come from anywhere): ``<key>.npz`` is a
    zip of ``.npy`` members read with NumPy's header parser, only those the header names, each
    within its declared size and :data:`STORE_MAX_BYTES` in all.  The member ``__store__`` is
    UTF-8 JSON ``{"format": "cvxkml.taskstore", "version": 1, "key", "arrays", "result_json",
    "sha256"}``, the hash over the key, the result's JSON and every array's dtype, shape and
    bytes; a file that does not match, or that is not a regular file, is a
    :class:`StoreFileError` (delete it to compute that task again).  Results hold dicts
    (string keys), lists, tuples, numbers, strings, None and NumPy arrays of numbers, booleans
    or strings; files of any other name are never read.

    Parameters
    ----------
    directory : str or Path
        Created when missing.
    """

    def __init__(self, directory):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def key(*arrays, **description) -> str:
        """SHA-256 (64 hex characters) of the arrays' dtypes, shapes and bytes, of
        ``description`` (JSON after :func:`._report.jsonable`) and of the code
        (:func:`code_fingerprint`)."""
        h = hashlib.sha256(code_fingerprint().encode())
        _hash(h, arrays)
        h.update(json.dumps(jsonable(description), sort_keys=True).encode())
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        if not (isinstance(key, str) and len(key) == 64 and all(c in "0123456789abcdef" for c in key)):
            raise StoreFileError(f"TaskStore keys are 64 hex characters (TaskStore.key); got {key!r}.")
        return self.directory / f"{key}.npz"

    def __contains__(self, key: str) -> bool:
        return self._path(key).exists()

    def load(self, key: str):
        """The stored result of ``key``, or None; :class:`StoreFileError` when the file is not
        one this cvxkml wrote for ``key`` (damaged, changed, other format or version, too large)."""
        path = self._path(key)
        if not path.exists():
            return None
        try:
            with _open_regular(path) as raw, zipfile.ZipFile(raw) as zf:
                infos, budget = {i.filename: i for i in zf.infolist()}, [STORE_MAX_BYTES]

                def member(name):
                    if name not in infos:
                        raise ValueError(f"the member {name!r} is missing")
                    a, used = _read_npy_member(zf, infos[name], budget[0])
                    budget[0] -= used
                    return a

                header = json.loads(member(_HEADER).tobytes().decode("utf-8"))
                expected = {"format": STORE_FORMAT, "version": STORE_VERSION, "key": key}
                if not isinstance(header, dict) or any(header.get(k) != v for k, v in expected.items()):
                    raise ValueError(f"not a cvxkml task store file (version {STORE_VERSION}) of this key")
                names = header.get("arrays")
                if not isinstance(names, list) or not all(isinstance(n, str) and n.isidentifier() for n in names):
                    raise ValueError("bad array list")
                arrays = {n: member(f"{n}.npy") for n in names}
            body = header.get("result_json")
            if not isinstance(body, str) or _content_hash(key, body, arrays) != header.get("sha256"):
                raise ValueError("its content hash does not match (changed or damaged)")
            return _decode(json.loads(body), arrays)
        except Exception as exc:  # anything in a file from elsewhere: one typed line
            raise StoreFileError(
                f"{path} is not a usable stored result ({type(exc).__name__}: {exc}); "
                "delete it to compute this task again."
            ) from None

    def save(self, key: str, result) -> None:
        """Store ``result`` under ``key`` (a temporary file renamed: a killed run leaves no half
        file); TypeError when it holds a value the format does not store."""
        path, arrays = self._path(key), {}
        body = json.dumps(_encode(result, arrays), allow_nan=False, sort_keys=True)
        header = dict(format=STORE_FORMAT, version=STORE_VERSION, key=key, arrays=sorted(arrays), result_json=body)
        header["sha256"] = _content_hash(key, body, arrays)
        tmp = path.with_name(f"{key}.tmp{os.getpid()}.npz")
        np.savez_compressed(tmp, __store__=np.frombuffer(json.dumps(header).encode("utf-8"), np.uint8), **arrays)
        os.replace(tmp, path)


def run_tasks(func, tasks, n_jobs: int | None = 1, callback=None, store: TaskStore | None = None, keys=None) -> list:
    """``[func(t) for t in tasks]``, serially or on the joblib backend in force.

    Parameters
    ----------
    func : callable
        A module-level (picklable) function of one task, drawing random numbers only from the
        task's seeds.
    tasks : iterable of picklable objects
        The arguments of ``func``, one per call.
    n_jobs : int or None, default 1
        1: a loop in this process; else ``joblib.Parallel(n_jobs)`` (None or -1: every core or
        Dask worker; at most one process per task).
    callback : callable, optional
        ``callback(index, result)`` after each result, in task order.
    store : TaskStore, optional
        Results found under ``keys[index]`` are loaded, the others saved as they arrive.
    keys : list of str, optional
        One key per task; required with ``store``.

    Returns
    -------
    list
        The results in the order of ``tasks``.
    """
    tasks = list(tasks)
    if store is not None and (keys is None or len(keys) != len(tasks)):
        raise ValueError("run_tasks: a store needs one key per task")
    out = [store.load(key) if store is not None else None for key in (keys or [None] * len(tasks))]
    todo = [k for k, r in enumerate(out) if r is None]
    if n_jobs == 1 or not todo:
        computed = (_call(func, tasks[k]) for k in todo)
    else:
        from joblib import Parallel, delayed

        n = len(todo) if n_jobs not in (None, -1) and n_jobs > len(todo) else (-1 if n_jobs is None else n_jobs)
        computed = Parallel(n_jobs=n, return_as="generator")(delayed(_call)(func, tasks[k]) for k in todo)
    computed = iter(computed)
    for k in range(len(tasks)):
        if out[k] is None:
            out[k] = next(computed)
            if store is not None:
                store.save(keys[k], out[k])
        if callback is not None:
            callback(k, out[k])
    return out


@contextmanager
def parallel_context(backend: str = "loky", scheduler: str | None = None, n_jobs: int | None = None):
    """The joblib backend for the :func:`run_tasks` calls inside the block.

    Parameters
    ----------
    backend : {"loky", "dask"}, default "loky"
        ``"dask"``: joblib's dask backend on a ``distributed.Client``.
    scheduler : str, optional
        A running Dask scheduler's address (only with ``"dask"``); None: a local cluster of
        ``n_jobs`` single-threaded worker processes (None or -1: every core) on 127.0.0.1.
    n_jobs : int, optional
        Number of workers of the local Dask cluster (None or -1: every core).

    Yields
    ------
    str
        What runs the tasks, for :func:`describe`.

    Raises
    ------
    CommandError
        Dask not installed (names the extra), scheduler unreachable, unknown backend, or a
        scheduler without ``"dask"``.
    """
    if backend not in BACKENDS:
        raise CommandError(f"backend must be one of {BACKENDS}; got {backend!r}.")
    if backend == "loky":
        if scheduler is not None:
            raise CommandError("--scheduler needs --backend dask.")
        yield "loky"
        return
    try:
        import joblib
        from distributed import Client
    except ImportError as exc:
        raise CommandError(f"--backend dask needs dask.distributed, the 'dask' extra: {DASK_EXTRA}") from exc
    workers = (os.cpu_count() or 1) if n_jobs in (None, -1) else max(1, int(n_jobs))
    local = dict(n_workers=workers, threads_per_worker=1, host="127.0.0.1", dashboard_address=None)
    try:
        client = Client(scheduler) if scheduler else Client(**local, silence_logs=logging.ERROR)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:  # ValueError: an address it cannot parse
        raise CommandError(
            f"cannot connect to the Dask scheduler {scheduler} ({' '.join(str(exc).split())}); "
            "check --scheduler, or leave it out for a local cluster"
        ) from None
    with client, joblib.parallel_backend("dask"):
        n = len(client.scheduler_info().get("workers", {}))
        yield f"dask ({scheduler or client.scheduler.address}, {n} worker{'s' if n != 1 else ''})"


def describe(n_jobs: int | None, engine: str) -> str:
    """One phrase for the report: how the fits ran (``n_jobs`` of :func:`run_tasks`, ``engine``
    of :func:`parallel_context`)."""
    if engine == "loky" and n_jobs == 1:
        return "independent fits run serially"
    if engine == "loky":
        return f"independent fits on {'every core' if n_jobs in (None, -1) else f'{n_jobs} processes'} (joblib loky)"
    return f"independent fits on {engine} (joblib)"


def add_parallel_options(parser, what: str) -> None:
    """``--n-jobs``, ``--backend`` and ``--scheduler``; ``what`` runs in parallel (for the help)."""
    parser.add_argument(
        "--n-jobs",
        dest="n_jobs",
        type=int,
        default=None,
        help=f"run the independent {what} on N workers through joblib (default 1: serially; "
        "-1: every core, or every Dask worker); the numbers do not depend on it",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="loky",
        help="joblib backend with --n-jobs: loky (local processes, default) or dask "
        f"(a Dask cluster; needs {DASK_EXTRA})",
    )
    parser.add_argument(
        "--scheduler",
        type=scheduler_address,
        default=None,
        metavar="ADDRESS",
        help="with --backend dask: address of a running Dask scheduler (default: a local "
        "cluster of --n-jobs worker processes on 127.0.0.1)",
    )


def _address(text: str) -> str:
    """A Dask scheduler address: ``HOST:PORT`` or ``PROTOCOL://HOST:PORT``, the port a number
    from 1 to 65535 (the form ``distributed.Client`` connects to)."""
    host, sep, port = text.strip().split("://", 1)[-1].rpartition(":")
    if not (sep and host and port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise BadValue("give HOST:PORT or PROTOCOL://HOST:PORT, e.g. tcp://127.0.0.1:8786")
    return text.strip()


#: an argparse ``type`` for ``--scheduler``: checked before any work, so that a mistyped
#: address is one line at once rather than a failed connection after the data are loaded
scheduler_address = typed("a Dask scheduler address", _address)


@dataclass(frozen=True)
class ParallelOptions:
    """``--n-jobs``, ``--backend``, ``--scheduler`` (:func:`._parallel.add_parallel_options`)."""

    what: str

    def add(self, parser) -> None:
        add_parallel_options(parser, self.what)


@contextmanager
def parallel_from_args(args):
    """:func:`parallel_context` for the options of :func:`add_parallel_options`; yields the
    ``n_jobs`` for :func:`run_tasks` (loky: 1 unless given; dask: every worker) and the engine."""
    backend, n_jobs = getattr(args, "backend", "loky"), getattr(args, "n_jobs", None)
    with parallel_context(backend, getattr(args, "scheduler", None), n_jobs) as engine:
        yield ((1 if n_jobs is None else n_jobs) if backend == "loky" else -1), engine
