"""Ctrl-C within a second: a SIGINT sent 1 s into a long fast solve in a
child process ends it with KeyboardInterrupt within 2 s, and the problem then solves again
to the same answer; ``time_limit`` holds; the conic reference solve is interruptible too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process (POSIX)")

_SETUP = """
import sys, time, warnings
import numpy as np
from cvxkml.sideinfo import PairConstraints
rng = np.random.default_rng(1)
n, d, m = 200, 60, 4000
X = rng.standard_normal((n, d)) / np.sqrt(d)
i = rng.integers(0, n, m); j = (i + 1 + rng.integers(0, n - 1, m)) % n
D = ((X[i] - X[j]) ** 2).sum(1)
y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
P = PairConstraints(i, j, y, np.where(y > 0, 0.7 * D, 1.3 * D))
warnings.simplefilter("ignore")
"""

_BREGMAN = (
    _SETUP
    + """
from cvxkml.declare.logdet import ITML
from cvxkml.solvers.bregman import bregman_metric
problem = ITML(X, P, gamma=1.0)
before = problem.solve(max_iter=3)                       # also compiles
X0 = X.copy()
print("READY", flush=True)
try:
    bregman_metric(np.eye(d), X, P.i, P.j, P.y, P.bound, 1.0, 0.0, 100_000)   # minutes
    print("NOT INTERRUPTED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
after = problem.solve(max_iter=3)
print("SAME", bool(np.array_equal(before.matrix, after.matrix) and np.array_equal(before.dual, after.dual)
                   and np.array_equal(X, X0)), flush=True)
"""
)

_VONNEUMANN = (
    _SETUP
    + """
from cvxkml.declare.vonneumann import VonNeumannKernel
from cvxkml.solvers.vonneumann import vonneumann_pairs
K = X @ X.T
P = PairConstraints(P.i[:1000], P.j[:1000], P.y[:1000], P.bound[:1000])
problem = VonNeumannKernel(K, P, gamma=1.0)
before = problem.solve(max_iter=2)
F, q0 = problem.F, np.zeros(problem.F.shape[1])
vonneumann_pairs(F, q0, P.i[:50], P.j[:50], P.y[:50], P.bound[:50], 1.0, 0.0, 1)
print("READY", flush=True)
try:
    vonneumann_pairs(F, q0, P.i, P.j, P.y, P.bound, 1.0, 0.0, 100_000, stop="dual_change")
    print("NOT INTERRUPTED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
after = problem.solve(max_iter=2)
print("SAME", bool(np.array_equal(before.matrix, after.matrix) and np.array_equal(before.dual, after.dual)), flush=True)
"""
)

_CONIC = """
import time
from cvxkml.declare._conic import _interruptible
print("READY", flush=True)
try:
    # the worker blocks without ever looking at signals (as SCS does): only the waiting
    # thread can answer Ctrl-C
    _interruptible(lambda: time.sleep(30))
    print("NOT INTERRUPTED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
print("SAME", _interruptible(lambda: 41 + 1) == 42, flush=True)
"""

_SCS = """
import numpy as np
import cvxpy as cp
from cvxkml.declare._conic import solve_conic
rng = np.random.default_rng(0)
C = rng.standard_normal((200, 200))
X = cp.Variable((200, 200), PSD=True)
prob = cp.Problem(cp.Minimize(cp.trace((C + C.T) @ X)), [cp.diag(X) == 1])
prob.get_problem_data("SCS")  # canonicalized before READY: the signal lands in SCS's iterations
print("READY", flush=True)
try:
    # SCS installs its own SIGINT handler while it iterates: the Ctrl-C reaches SCS, which
    # stops with status "interrupted"; that must come back as KeyboardInterrupt
    solve_conic(prob, "SCS", 1e-12, scs_max_iters=10**7)  # about 10 s on one core
    print("NOT INTERRUPTED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
small = cp.Problem(cp.Minimize(cp.sum_squares(cp.Variable(2) - 1)))
print("SAME", solve_conic(small, "SCS")[1] == "optimal", flush=True)
"""

_SWALLOW = """
import ctypes, signal, time
from cvxkml.declare._conic import _interruptible
libc = ctypes.CDLL(None)
libc.signal.restype = ctypes.c_void_p
libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
takes_it = ctypes.cast(libc.abs, ctypes.c_void_p).value  # a C handler that does nothing


def scs_like():
    # what SCS does: its set-up phase installs a process-wide C handler for SIGINT, and the
    # signal it takes there is forgotten when the iterations start
    old = libc.signal(signal.SIGINT, takes_it)
    time.sleep(3)
    libc.signal(signal.SIGINT, old)
    time.sleep(30)


print("READY", flush=True)
try:
    _interruptible(scs_like)
    print("NOT INTERRUPTED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
print("SAME", _interruptible(lambda: 41 + 1) == 42, flush=True)
"""


_LMNN_EXACT = """
import numpy as np
from cvxkml.solvers._lmnn_exact import working_set_ipm
rng = np.random.default_rng(0)
r, K = 60, 2500
A, B = rng.standard_normal((K, r)), rng.standard_normal((K, r))
C = np.eye(r)
def run(max_iter):
    return working_set_ipm(C, A, B, 0.5, 0.0, max_iter=max_iter)
before = run(2)
print("READY", flush=True)
try:
    run(100_000)  # the LMNN exact finish's interior-point method, 0.1-0.5 s a step here
    print("NOT INTERRUPTED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
after = run(2)
print("SAME", bool(np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])), flush=True)
"""


_AFTER_CONIC = (
    _SETUP
    + """
import ctypes, resource, signal, threading
from cvxkml.declare.logdet import ITML
from cvxkml.solvers.bregman import bregman_metric
libc = ctypes.CDLL(None)


def c_handler():
    # the C-level SIGINT handler: the first member of struct sigaction
    action = ctypes.create_string_buffer(512)
    libc.sigaction(signal.SIGINT, None, action)
    return ctypes.c_void_p.from_buffer_copy(action.raw[: ctypes.sizeof(ctypes.c_void_p)]).value


def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


P = PairConstraints(P.i[:1000], P.j[:1000], P.y[:1000], P.bound[:1000])
X = X[:, :20]
problem = ITML(X, P, gamma=1.0)
problem.solve(max_iter=3)  # compiles the fast solver
threads, handler = threading.active_count(), c_handler()
print("READY", flush=True)
try:
    # compiled and set up in well under a second, then the solver iterates for seconds (Clarabel)
    # or minutes (SCS)
    problem.solve_reference(solver=SOLVER, eps=1e-12, scs_max_iters=10**7)
    print("NOT INTERRUPTED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
start = cpu()
time.sleep(1.0)
print("IDLE CPU", round(cpu() - start, 3), flush=True)
print("EXTRA THREADS", threading.active_count() - threads, flush=True)
print("HANDLER BACK", c_handler() == handler, flush=True)
print("READY", flush=True)
try:
    bregman_metric(np.eye(20), X, P.i, P.j, P.y, P.bound, 1.0, 0.0, 100_000, time_limit=6.0)
    print("NOT INTERRUPTED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
import cvxpy as cp
from cvxkml.declare._conic import solve_conic
small = cp.Problem(cp.Minimize(cp.sum_squares(cp.Variable(2) - 1)))
print("SAME", solve_conic(small, "SCS")[1] == solve_conic(small, "CLARABEL")[1] == "optimal", flush=True)
"""
)


def _interrupt(script, delay=1.0):
    """Run ``script`` in a child; ``delay`` seconds after it prints READY send SIGINT; return
    (seconds from the signal to the child's INTERRUPTED line, the child's output)."""
    latencies, out = _interrupt_each(script, delay)
    return latencies[0] if latencies else None, out


def _interrupt_each(script, delay=1.0, timeout=120):
    """Run ``script`` in a child and send it a SIGINT ``delay`` seconds after each line that
    starts with READY; return (for each signal, the seconds until the next line that says
    INTERRUPTED, or None; the child's output).  The child is killed after ``timeout`` s."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        # a runner without job control starts background jobs with SIGINT ignored, and Python
        # keeps an ignored SIGINT ignored: give the child Ctrl-C's default disposition
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    killer = threading.Timer(timeout, child.kill)
    killer.start()
    lines, latencies, sent = [], [], None
    try:
        for line in child.stdout:
            lines.append(line)
            if sent is not None and "INTERRUPTED" in line:
                latencies[-1], sent = time.perf_counter() - sent, None
            if line.startswith("READY"):
                time.sleep(delay)
                latencies.append(None)
                sent = time.perf_counter()
                child.send_signal(signal.SIGINT)
        if not latencies:
            pytest.fail("the child ended before READY:\n" + "".join(lines))
        child.wait(timeout=10)
    finally:
        killer.cancel()
        if child.poll() is None:
            child.kill()
    return latencies, "".join(lines)


@pytest.mark.parametrize(
    "script",
    [_BREGMAN, _VONNEUMANN, _CONIC, _SCS, _SWALLOW, _LMNN_EXACT],
    ids=["bregman", "vonneumann", "conic", "scs-handler", "c-handler-swallows", "lmnn-exact-finish"],
)
def test_sigint_ends_solve_within_two_seconds(script):
    latency, out = _interrupt(script)
    assert "NOT INTERRUPTED" not in out, out
    assert latency is not None and latency <= 2.0, out  # measured 0.0-0.1 s
    assert "SAME True" in out, out


def test_time_limit_holds():
    """time_limit ends a run of minutes after about the limit, NOT_CONVERGED."""
    from cvxkml.solvers.bregman import NOT_CONVERGED, bregman_metric

    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 40))
    i = rng.integers(0, 100, 2000)
    j = (i + 1 + rng.integers(0, 99, 2000)) % 100
    D = ((X[i] - X[j]) ** 2).sum(1)
    y = np.where(rng.random(2000) < 0.5, 1.0, -1.0)
    b = np.where(y > 0, 0.7 * D, 1.3 * D)
    bregman_metric(np.eye(40), X, i, j, y, b, 1.0, 0.0, 1)  # compile
    t = time.perf_counter()
    res = bregman_metric(np.eye(40), X, i, j, y, b, 1.0, 0.0, 10**7, time_limit=0.5)
    elapsed = time.perf_counter() - t
    assert res.code == NOT_CONVERGED and res.extra["stopped"] == "time_limit"
    assert 0.5 <= elapsed <= 2.5 and 1 <= res.sweeps < 10**7  # measured ~0.6 s
    with pytest.raises(ValueError, match="time_limit"):
        bregman_metric(np.eye(40), X, i, j, y, b, 1.0, 0.0, 5, time_limit=-1.0)


def test_time_limit_holds_lowrank_and_vonneumann():
    """The same for the low-rank passes (paper's cyclic loop) and von Neumann sweeps."""
    from cvxkml.solvers.bregman import NOT_CONVERGED
    from cvxkml.solvers.lowrank import PAIR, lowrank_logdet
    from cvxkml.solvers.vonneumann import vonneumann_pairs

    rng = np.random.default_rng(2)
    G0 = rng.standard_normal((80, 12))
    i = rng.integers(0, 80, 1500)
    j = (i + 1 + rng.integers(0, 79, 1500)) % 80
    D = ((G0[i] - G0[j]) ** 2).sum(1)
    y = np.where(rng.random(1500) < 0.5, 1.0, -1.0)
    b = np.where(y > 0, 0.7 * D, 1.3 * D)
    z = np.zeros((1500, 2))
    kind = np.full(1500, PAIR)
    for order, active in (("cyclic", False), ("shuffle", True)):
        lowrank_logdet(G0, kind, i, j, j, z, z, y, b, 1.0, 0.0, 1, order=order, active_set=active)
        stats = {}
        t = time.perf_counter()
        out = lowrank_logdet(
            G0, kind, i, j, j, z, z, y, b, 1.0, 0.0, 10**8, order=order, active_set=active, stats=stats, time_limit=0.3
        )
        assert time.perf_counter() - t <= 2.3 and out[5] == NOT_CONVERGED
        assert stats["stopped"] == "time_limit"
    vonneumann_pairs(G0, np.zeros(12), i, j, y, b, 1.0, 0.0, 1)
    t = time.perf_counter()
    res = vonneumann_pairs(G0, np.zeros(12), i, j, y, b, 1.0, 0.0, 10**8, time_limit=0.3)
    assert time.perf_counter() - t <= 2.3 and res.code == NOT_CONVERGED
    assert res.extra["stopped"] == "time_limit"


@pytest.mark.skipif(not hasattr(signal, "sigtimedwait"), reason="the masked wait needs sigtimedwait")
def test_sigint_during_conic_wait_follows_the_python_handler():
    from cvxkml.declare._conic import _interruptible

    def work():
        os.kill(os.getpid(), signal.SIGINT)  # blocked here: pending for the waiting thread
        time.sleep(0.3)
        return 42

    seen = []
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        assert _interruptible(work) == 42  # ignored: the wait goes on
        signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
        assert _interruptible(work) == 42 and seen == [signal.SIGINT]  # the user's handler, once
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with pytest.raises(KeyboardInterrupt):
            _interruptible(work)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())  # mask restored


@pytest.mark.parametrize("solver", ["SCS", "CLARABEL"])
def test_sigint_after_an_interrupted_reference_solve(solver):
    """Ctrl-C during a conic reference solve stops the solver itself, not only the wait for
    it: SCS left iterating keeps its own SIGINT handler installed, which would swallow the next
    Ctrl-C (here, during a fast ITML solve).  Afterwards no thread burns CPU, the C-level
    SIGINT handler is the one from before, the next Ctrl-C stops the fast solve, and new conic
    solves run undisturbed."""
    latencies, out = _interrupt_each(_AFTER_CONIC.replace("SOLVER", repr(solver)), delay=1.0, timeout=60)
    assert "NOT INTERRUPTED" not in out, out
    assert len(latencies) == 2 and all(t is not None and t <= 2.0 for t in latencies), (latencies, out)
    idle = float(out.split("IDLE CPU ")[1].split()[0])
    assert idle < 0.3, out  # a solver left running burns most of the second
    assert "EXTRA THREADS 0" in out and "HANDLER BACK True" in out, out
    assert "SAME True" in out, out
