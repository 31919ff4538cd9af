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
``backend="dask"`` is asked for.  Of :mod:`cvxkml.experiments` this module imports only
:mod:`._commands`.
"""
from __future__ import annotations

import contextvars
import logging
import os
from contextlib import contextmanager

from ._commands import CommandError

__all__ = ["BACKENDS", "DASK_EXTRA", "CommandError", "add_parallel_options", "parallel_context",
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


def run_tasks(func, tasks, n_jobs: int | None = 1, callback=None) -> list:
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

    Returns
    -------
    list
        The results in the order of ``tasks``, whatever the order of completion.
    """
    tasks = list(tasks)
    out = []
    if (n_jobs == 1 and not _DASK_ACTIVE.get()) or len(tasks) == 0:
        results = (_call(func, t) for t in tasks)
    else:
        from joblib import Parallel, delayed

        n = -1 if n_jobs is None else int(n_jobs)
        results = Parallel(n_jobs=n, return_as="generator")(delayed(_call)(func, t) for t in tasks)
    for k, res in enumerate(results):
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
