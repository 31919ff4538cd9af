"""Independent fits of an experiment (CV folds, parameter grids, random splits) run
through joblib, so that the same code runs serially, on local processes (loky) or on a
Dask cluster.

An experiment writes its independent fits as a module-level function of one picklable
argument and calls::

    results = run_tasks(fit_one, tasks, n_jobs)       # in the order of ``tasks``

``n_jobs=1`` (the default everywhere) is a plain loop in this process; otherwise the
tasks go to ``joblib.Parallel(n_jobs)`` with the joblib backend in force: loky (joblib's
default: worker processes on this machine) or, inside :func:`parallel_context` with
``backend="dask"`` (or any ``joblib.parallel_backend("dask")`` block with a
``distributed.Client``), the workers of a Dask cluster.  Every task carries its own
seeds and draws nothing from a shared generator, and the results come back in task
order (not in order of completion), so the numbers do not depend on ``n_jobs`` or the
backend; only the measured seconds do.  Every task runs on one BLAS / OpenMP thread
(threadpoolctl) and one Numba thread, serially too, so that a sum gives the same bits in
a worker and in the main process (the order of a threaded reduction depends on the
number of threads).

The commands add ``--n-jobs``, ``--backend`` and ``--scheduler`` with
:func:`add_parallel_options` and run inside :func:`parallel_from_args`.  Dask is the
optional ``dask`` extra (``pip install "cvxkml[dask]"``); nothing here imports it unless
``backend="dask"`` is asked for.

A long run resumes: with a :class:`TaskStore` (``--resume DIR`` of the commands that
offer it) every finished task's result is saved as it arrives and loaded, not computed,
by the next run with the same data and task description.  Of :mod:`cvxkml.experiments`
this module imports only :mod:`._commands` and :mod:`._report`.
"""
from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import os
import pickle
from contextlib import contextmanager
from pathlib import Path

from ._commands import CommandError

__all__ = ["BACKENDS", "DASK_EXTRA", "CommandError", "TaskStore", "add_parallel_options", "parallel_context",
           "parallel_from_args", "run_tasks", "describe"]

#: The joblib backends the commands offer.
BACKENDS = ("loky", "dask")

#: How to install what ``--backend dask`` needs.
DASK_EXTRA = "pip install 'cvxkml[dask]'"

# True inside parallel_context(backend="dask"): run_tasks then always goes through joblib
_DASK_ACTIVE = contextvars.ContextVar("cvxkml_dask_active", default=False)


def _call(func, task):
    """``func(task)`` on one BLAS / OpenMP thread and one Numba thread, serially as in a
    worker: a blocked product, an OpenMP loop (scikit-learn's k-means) or a Numba
    ``parallel=True`` reduction (``np.sum`` in a parallel function is split over the
    threads) adds in an order that depends on the number of threads, and the last bits of
    the numbers with it."""
    import numba
    from threadpoolctl import threadpool_limits

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            return func(task)
    finally:
        numba.set_num_threads(threads)


class TaskStore:
    """Finished tasks' results in a folder, so that a long run stopped part way (a
    session's end, a killed job) resumes with the tasks it has not finished.

    A result is stored under a key that the caller derives from everything the task's
    numbers depend on (:meth:`key`: the data's bytes and a description of the task: its
    protocol, its draws) and is loaded back instead of being computed again.  The key does
    not cover the code: after changing a solver, use a new folder.  Results are pickled —
    a cache of this machine's own runs, not an exchange format (the numbers to keep go to
    the command's JSON).

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
        """A hex digest of the arrays' dtypes, shapes and bytes and of ``description``
        (JSON-serializable after :func:`._report.jsonable`-style conversion: NumPy arrays
        and scalars become lists and numbers).

        Returns
        -------
        str
            64 hex characters (SHA-256).
        """
        import numpy as np

        from ._report import jsonable

        h = hashlib.sha256()
        for a in arrays:
            a = np.ascontiguousarray(a)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        h.update(json.dumps(jsonable(description), sort_keys=True).encode())
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.pkl"

    def __contains__(self, key: str) -> bool:
        return self._path(key).exists()

    def load(self, key: str):
        """The stored result of ``key``, or None."""
        path = self._path(key)
        if not path.exists():
            return None
        with open(path, "rb") as f:
            return pickle.load(f)

    def save(self, key: str, result) -> None:
        """Store ``result`` under ``key`` (written to a temporary file, then renamed: a
        run killed while writing leaves no half file)."""
        path = self._path(key)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)


def run_tasks(func, tasks, n_jobs: int | None = 1, callback=None, store: TaskStore | None = None,
              keys=None) -> list:
    """``[func(t) for t in tasks]``, serially or on the joblib backend in force.

    Parameters
    ----------
    func : callable
        A module-level function of one argument (picklable, for the worker processes);
        it must draw any random numbers from seeds carried by its task.
    tasks : iterable
        The tasks, each a picklable object.
    n_jobs : int or None, default 1
        1: a plain loop in this process (unless a Dask context of
        :func:`parallel_context` is active); otherwise ``joblib.Parallel(n_jobs=n_jobs)``
        (None or -1: every core, or every Dask worker).
    callback : callable, optional
        ``callback(index, result)`` after each result, in task order (progress lines).
    store : TaskStore, optional
        Results already in the store (under ``keys[index]``) are loaded instead of
        computed; every computed result is saved there as it arrives.
    keys : list of str, optional
        One key per task (:meth:`TaskStore.key`); required with ``store``.

    Returns
    -------
    list
        The results in the order of ``tasks``, whatever the order of completion.
    """
    tasks = list(tasks)
    if store is not None and (keys is None or len(keys) != len(tasks)):
        raise ValueError("run_tasks: a store needs one key per task")
    stored = [store.load(key) if store is not None else None for key in (keys or [None] * len(tasks))]
    todo = [k for k, r in enumerate(stored) if r is None]
    if (n_jobs == 1 and not _DASK_ACTIVE.get()) or len(todo) == 0:
        computed = (_call(func, tasks[k]) for k in todo)
    else:
        from joblib import Parallel, delayed

        n = -1 if n_jobs is None else int(n_jobs)
        computed = Parallel(n_jobs=n, return_as="generator")(delayed(_call)(func, tasks[k]) for k in todo)
    computed = iter(computed)
    out = []
    for k in range(len(tasks)):
        res = stored[k]
        if res is None:
            res = next(computed)
            if store is not None:
                store.save(keys[k], res)
        out.append(res)
        if callback is not None:
            callback(k, res)
    return out


@contextmanager
def parallel_context(backend: str = "loky", scheduler: str | None = None, n_jobs: int | None = None):
    """The joblib backend for the :func:`run_tasks` calls inside the block.

    Parameters
    ----------
    backend : {"loky", "dask"}, default "loky"
        ``"loky"``: joblib's default backend (nothing to set up).  ``"dask"``: a
        ``distributed.Client`` connected to ``scheduler`` and
        ``joblib.parallel_backend("dask")`` for the block.
    scheduler : str, optional
        Address of a running Dask scheduler (e.g. ``"tcp://127.0.0.1:8786"``); only with
        ``backend="dask"``.  None: a local cluster of ``n_jobs`` single-threaded worker
        processes (every core when None or -1) listening on 127.0.0.1 only, closed
        at the end of the block.
    n_jobs : int, optional
        Workers of the local cluster (see ``scheduler``).

    Yields
    ------
    str
        What runs the tasks, for the report (see :func:`describe`).

    Raises
    ------
    CommandError
        With ``backend="dask"`` when ``dask.distributed`` is not installed (the message
        names the ``dask`` extra), for an unknown backend, or for a scheduler given
        without ``backend="dask"``.  The command prints it as one line.
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
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise CommandError(f"--backend dask needs dask.distributed, the 'dask' extra: {DASK_EXTRA}") from exc
    cluster = None
    if scheduler is None:
        workers = (os.cpu_count() or 1) if n_jobs in (None, -1) else max(1, int(n_jobs))
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, silence_logs=logging.ERROR)
        address = cluster.scheduler_address
    else:
        address = scheduler
    token = _DASK_ACTIVE.set(True)
    try:
        with Client(address) as client, joblib.parallel_backend("dask"):
            n = len(client.scheduler_info().get("workers", {}))
            yield f"dask ({address}, {n} worker{'s' if n != 1 else ''})"
    finally:
        _DASK_ACTIVE.reset(token)
        if cluster is not None:
            cluster.close()


def describe(n_jobs: int | None, engine: str) -> str:
    """One phrase for the report: how the independent fits ran.

    Parameters
    ----------
    n_jobs : int or None
        As given to :func:`run_tasks`.
    engine : str
        What :func:`parallel_context` yielded.

    Returns
    -------
    str
    """
    if engine == "loky" and n_jobs == 1:
        return "independent fits run serially"
    if engine == "loky":
        return f"independent fits on {'every core' if n_jobs in (None, -1) else f'{n_jobs} processes'} (joblib loky)"
    return f"independent fits on {engine} (joblib)"


def add_parallel_options(parser, what: str) -> None:
    """The options ``--n-jobs``, ``--backend`` and ``--scheduler`` of a command.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    what : str
        What runs in parallel, for the help (e.g. ``"splits and grid points"``).
    """
    parser.add_argument("--n-jobs", dest="n_jobs", type=int, default=None,
                        help=f"run the independent {what} on N workers through joblib (default 1: serially; "
                             "-1: every core, or every Dask worker); the numbers do not depend on it")
    parser.add_argument("--backend", choices=BACKENDS, default="loky",
                        help="joblib backend with --n-jobs: loky (local processes, default) or dask "
                             f"(a Dask cluster; needs {DASK_EXTRA})")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="with --backend dask: address of a running Dask scheduler (default: a local "
                             "cluster of --n-jobs worker processes on 127.0.0.1)")


@contextmanager
def parallel_from_args(args):
    """:func:`parallel_context` for the options of :func:`add_parallel_options`.

    Parameters
    ----------
    args : argparse.Namespace
        With ``n_jobs``, ``backend`` and ``scheduler``.

    Yields
    ------
    (int or None, str)
        The ``n_jobs`` to give :func:`run_tasks` (1 when not given with loky, every
        worker with dask) and the engine phrase of :func:`parallel_context`.
    """
    backend = getattr(args, "backend", "loky")
    n_jobs = getattr(args, "n_jobs", None)
    if backend == "loky":
        n_jobs = 1 if n_jobs is None else n_jobs
    with parallel_context(backend, getattr(args, "scheduler", None), n_jobs) as engine:
        yield (n_jobs if backend == "loky" else -1), engine
