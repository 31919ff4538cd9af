"""Global configuration of cvxkml (scikit-learn style): :func:`set_config`,
:func:`get_config` and the context manager :func:`config_context`.

Options
-------
psd_tol : float >= 0 or None (default None)
    Relative tolerance on the most negative eigenvalue of an input kernel matrix
    (``check_kernel_matrix``, used by every problem and every estimator that takes a
    kernel matrix, including ``kernel='precomputed'``).  K is accepted when
    λ_min(K) >= −psd_tol · max|λ(K)|; otherwise :class:`cvxkml.NotPSDError` is raised.
    ``None`` is automatic, from the dtype of the matrix as passed:

    * float64, integer, bool: 1e-9 (float64 round-off of a PSD matrix; an integer
      matrix holds exact values, so its negative eigenvalues are real);
    * float32 (and any narrower float): max(1e-9, n · eps), eps = ``np.finfo(dtype).eps``
      (1.19e-7 for float32), n the order of K.

    Why n · eps: entries of a float32-rounded PSD matrix K̂ = K + E carry errors
    |E_ij| <= 2u·√(K_ii K_jj) (u = eps/2), so ‖E‖₂ <= ‖E‖_F <= 2u·tr K <= n·eps·λ_max(K)
    and, by Weyl's inequality, λ_min(K̂) >= −n·eps·λ_max(K): anything below is not
    round-off (the bound is pessimistic; ``reference/estimator-speed.md``, "Thread and
    PSD defaults").  The check uses the dtype the matrix arrives with: code that converts
    to float64 first gets the float64 tolerance; set ``psd_tol`` there.

    An accepted matrix whose most negative eigenvalue lies below the float64 round-off
    level (−1e-9 · max|λ|) is clipped to the PSD cone: negative eigenvalues are set to 0,
    K = V diag(λ₊) Vᵀ is rebuilt and symmetrised, so every solver downstream sees a PSD
    float64 matrix.  A matrix within float64 round-off is returned unchanged.  Beyond the tolerance the
    :class:`~cvxkml.NotPSDError` names this option.

blas_threads : int >= 1 or None (default 1)
    The thread policy: every numerical path of cvxkml (the factorizations in
    ``cvxkml.factor``, input eigendecompositions in ``check_kernel_matrix``, base
    kernel evaluation in ``cvxkml.kernels``, the learned kernel and metric in
    ``cvxkml.learned``, and the solvers KCR, LMNN, POLA, SDP-LogDet, Trace-SSIKDR and
    Yeung in ``cvxkml.solvers``) runs inside :func:`blas_limit`, which limits the
    BLAS/LAPACK thread pools (threadpoolctl, ``user_api="blas"``) to this many threads
    and restores them on exit.  ``None`` leaves the thread pools alone.  The default is
    one thread: the library's linear algebra is a long chain of small and mid-sized
    products and eigendecompositions, where multithreaded BLAS spins and stalls on a
    loaded machine (timings in ``reference/estimator-speed.md``).  Solvers with a
    ``blas_threads`` parameter (KCR, LMNN) default to this setting
    (``blas_threads="config"``); an explicit value wins for that call.  Nested library
    calls do not touch the thread pools again: :func:`blas_limit` keeps a depth count and
    enters threadpoolctl only at the outermost call (or when the limit asked for differs
    from the one in force).  Thread-pool limits are process-wide, like threadpoolctl's.

Scope: :func:`set_config` changes the process-wide defaults (outside any
:func:`config_context`); :func:`config_context` changes the options of the current
thread until the ``with`` block ends, and a :func:`set_config` inside it is undone at its
end too.
"""

from __future__ import annotations

import functools
import numbers
import sys
import threading
from contextlib import contextmanager

import numpy as np

__all__ = ["set_config", "get_config", "config_context", "blas_limit", "psd_tolerance"]

_DEFAULTS = {"psd_tol": None, "blas_threads": 1}
_global_config = dict(_DEFAULTS)
_local = threading.local()  # .config: the overlay of the current config_context
_UNSET = object()

#: relative tolerance for float64 (and exact integer) kernels; also the round-off level
#: below which an accepted kernel is clipped
FLOAT64_PSD_TOL = 1e-9


def _current() -> dict:
    cfg = getattr(_local, "config", None)
    return _global_config if cfg is None else cfg


def _check_psd_tol(v):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v) or v < 0:
        raise ValueError(f"psd_tol must be None or a finite number >= 0; got {v!r}.")
    return float(v)


def _check_threads(v, name="blas_threads"):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < 1:
        raise ValueError(f"{name} must be None or an integer >= 1; got {v!r}.")
    return int(v)


def get_config() -> dict:
    """The current options (a copy): ``{"psd_tol": ..., "blas_threads": ...}``."""
    return dict(_current())


def set_config(psd_tol=_UNSET, blas_threads=_UNSET) -> None:
    """Set options; an option not given keeps its value (see the module docstring).

    Parameters
    ----------
    psd_tol : float >= 0 or None
        Relative tolerance on the most negative eigenvalue of input kernel matrices;
        None: automatic (1e-9 for float64, max(1e-9, n·eps) for float32 input).
    blas_threads : int >= 1 or None
        BLAS/LAPACK threads inside every cvxkml computation; None leaves them alone.
    """
    changes = {}
    if psd_tol is not _UNSET:
        changes["psd_tol"] = _check_psd_tol(psd_tol)
    if blas_threads is not _UNSET:
        changes["blas_threads"] = _check_threads(blas_threads)
    _current().update(changes)


@contextmanager
def config_context(*, psd_tol=_UNSET, blas_threads=_UNSET):
    """Options for the duration of a ``with`` block (in the current thread).

    They are restored after the block, also when it raises::

        with cvxkml.config_context(psd_tol=1e-6, blas_threads=None):
            KernelITML(kernel="precomputed").fit(K, y)
    """
    saved = getattr(_local, "config", None)
    _local.config = dict(_current())
    try:
        set_config(psd_tol=psd_tol, blas_threads=blas_threads)
        yield
    finally:
        _local.config = saved


# --------------------------------------------------------------------------- PSD tolerance
def psd_tolerance(n: int, dtype=np.float64) -> float:
    """The relative PSD tolerance for an n × n kernel given with ``dtype``: the
    ``psd_tol`` option, or when it is None the automatic value (module docstring)."""
    tol = _current()["psd_tol"]
    if tol is not None:
        return tol
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.floating):
        eps = float(np.finfo(dtype).eps)
        if eps > float(np.finfo(np.float64).eps):
            return max(FLOAT64_PSD_TOL, max(int(n), 1) * eps)
    return FLOAT64_PSD_TOL


# --------------------------------------------------------------------------- BLAS threads
_blas_lock = threading.Lock()
_frames: list = []  # limits cvxkml put in force, innermost last (process-wide)
_controller = None
_controller_modules = -1


def _threadpool_controller():
    """One cached threadpoolctl controller (scanning the loaded libraries costs ~1 ms);
    rescanned when modules were imported since (a new import may load a BLAS)."""
    global _controller, _controller_modules
    n_modules = len(sys.modules)
    if _controller is None or n_modules != _controller_modules:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
        _controller_modules = len(sys.modules)
    return _controller


class _Frame:
    __slots__ = ("limit", "depth", "limiter")

    def __init__(self, limit, limiter):
        self.limit, self.depth, self.limiter = limit, 1, limiter


def _enter(threads):
    """Put the limit for ``threads`` ("config", int or None) in force; returns the frame
    to pass to :func:`_exit` (None: nothing was done)."""
    if threads == "config":
        cfg = getattr(_local, "config", None)
        threads = (_global_config if cfg is None else cfg)["blas_threads"]
    if threads is None:
        return None
    with _blas_lock:
        if _frames and _frames[-1].limit == threads:  # nested: only count
            frame = _frames[-1]
            frame.depth += 1
        else:
            frame = _Frame(threads, _threadpool_controller().limit(limits=threads, user_api="blas"))
            _frames.append(frame)
    return frame


def _exit(frame):
    if frame is not None:
        with _blas_lock:
            frame.depth -= 1
            if frame.depth == 0:
                frame.limiter.restore_original_limits()
                _frames.remove(frame)


class blas_limit:
    """Run a block (``with blas_limit():``) or a function (``@blas_limit()``) with the
    BLAS/LAPACK thread pools limited by the thread policy.

    Parameters
    ----------
    threads : "config", int >= 1 or None
        ``"config"`` (default) uses the ``blas_threads`` option at the time the block or
        the function is entered; an int is that many threads; None leaves the thread
        pools alone.

    Nested use is cheap (about 2 µs): when the limit asked for is the one cvxkml already
    put in force, only a depth count changes; threadpoolctl is entered at the outermost
    call only (about 20 µs with the cached controller, against about 1–2 ms for a bare
    ``threadpoolctl.threadpool_limits``).
    """

    __slots__ = ("threads", "_stack")

    def __init__(self, threads="config"):
        if not (isinstance(threads, str) and threads == "config"):
            threads = _check_threads(threads)
        self.threads = threads
        self._stack = []

    def __enter__(self):
        self._stack.append(_enter(self.threads))
        return self

    def __exit__(self, *exc):
        _exit(self._stack.pop())
        return False

    def __call__(self, func):
        threads = self.threads

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            frame = _enter(threads)
            try:
                return func(*args, **kwargs)
            finally:
                _exit(frame)

        return wrapper


# --------------------------------------------------------------------------- interrupts
#: seconds of compiled work per call between two returns to Python (Ctrl-C, time limits)
CHUNK_SECONDS = 0.1


class WorkBudget:
    """The work per call of a compiled loop, adapted so that one call lasts about
    ``seconds`` (:data:`CHUNK_SECONDS`): a solver calls its Numba kernel in a Python loop
    with ``budget.units`` units of work (projections, passes, …), then ``budget.update``
    with the units done and the seconds they took.  Between two calls the interpreter runs,
    so a pending SIGINT raises :class:`KeyboardInterrupt` within about ``seconds`` and a
    time limit holds to that precision.

    The first call gets ``start`` units; then the budget follows the measured rate
    (×4 at most per step, so one slow call cannot overshoot), between ``low`` and ``high``.
    The per-call cost is a Numba dispatch (a few µs), negligible against ``seconds``.
    """

    __slots__ = ("units", "seconds", "low", "high")

    def __init__(self, start: int = 256, seconds: float | None = None, low: int = 1, high: int = 1 << 40):
        self.seconds = CHUNK_SECONDS if seconds is None else float(seconds)
        self.low, self.high = int(low), int(high)
        self.units = int(min(max(start, self.low), self.high))

    def update(self, done: int, elapsed: float) -> None:
        """Record a call that did ``done`` units in ``elapsed`` seconds."""
        if done <= 0:
            return
        if elapsed <= 0.0:
            target = self.units * 4
        else:
            target = done * self.seconds / elapsed
        target = min(max(target, self.units / 4.0), self.units * 4.0)
        self.units = int(min(max(target, self.low), self.high))
