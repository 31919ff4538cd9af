"""``python -m benchmarks bench exact-limits``: the largest size each family's default exact solve handles.

For every declared problem family a realistic instance is built whose exact model has a
PSD block of side n (:meth:`~cvxkml.declare.Problem.exact_size`; the number of weights for
the QP families), and ``problem.solve_reference()`` is called **with its defaults** (the
default solver of :meth:`~cvxkml.declare.Problem.default_solver`, the default eps) in a
fresh subprocess with every BLAS/OpenMP pool pinned to one thread.  The parent watches the
child: it is killed after ``kill_factor × time_limit`` seconds of wall time or as soon as
its resident memory exceeds the memory limit; otherwise the child reports its own wall time
of the solve and its peak resident memory (``ru_maxrss``, which includes the ~135 MiB of
imported libraries).

n starts at ``start`` and grows by ×1.5 until a solve exceeds the time or the memory limit
(or the family's cap on n is reached).  A solve that *raises* (a solver error, an
``optimal_inaccurate`` answer its certificate does not vouch for, …) is recorded and the
growth goes on (two errors in a row stop it), so the table reports both

* **largest n passed** — the largest n below the first failure of any kind (time, memory or
  error), and
* **largest n within the limits** — the largest n that finished within time and memory
  (the size limit recorded in :data:`cvxkml.declare._limits.EXACT_LIMITS`).

At the largest n within the limits the family's fast solver (``problem.solve()`` with its
defaults) is run once more in its own subprocess for comparison.  The result is a markdown
table (``reference/exact-limits.md``) and JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._commands import CommandError
from .._runner import labelled_points, median_sq_distance

__all__ = ["FAMILIES", "build", "measure", "measure_fast", "family_limit", "limits", "recorded_limits", "command"]

#: BLAS / OpenMP thread pools of the child pinned to one thread
THREAD_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "BLIS_NUM_THREADS": "1",
}
GROWTH = 1.5


# --------------------------------------------------------------------------- instances
def _gaussian(X):
    from cvxkml.kernels import gaussian_kernel

    return gaussian_kernel(X, sigma=float(np.sqrt(median_sq_distance(X))))


def _kernel_data(n, seed=0, d=10):
    """A Gaussian kernel (median bandwidth) on n points in 10 dimensions: numerically full
    rank up to n ≈ 1000 (on 3-D points its whitened rank saturates near 200)."""
    rng = np.random.default_rng(seed)
    return _gaussian(rng.normal(size=(n, d)))


def _pairs(baseline, n, m, rng):
    """m random similar/dissimilar pairs, bounds the 5th/95th percentiles of the baseline
    squared distances (Davis et al. 2007)."""
    from cvxkml.sideinfo import PairConstraints, percentile_bounds
    from cvxkml.testing import random_pairs

    i, j = random_pairs(rng, n, m)
    u, l = percentile_bounds(baseline, n, (5.0, 95.0), rng)
    y = rng.choice([-1.0, 1.0], size=i.size)
    return PairConstraints(i, j, y, np.where(y > 0, u, l))


def _kernel_pairs(n, seed=0):
    """(K0, 2n pairs) — the LogDet / von Neumann kernel-learning instance."""
    from cvxkml.sideinfo import baseline_kernel

    K0 = _kernel_data(n, seed)
    return K0, _pairs(baseline_kernel(K0), n, 2 * n, np.random.default_rng(seed + 1))


def _metric_pairs(d, seed=0, points=2):
    """(X of points·d × d, 2d pairs) — the metric-learning instance (ITML scale varies per
    feature, as :func:`cvxkml.testing.metric_instance`)."""
    from cvxkml.testing import metric_instance

    return metric_instance(seed, points * d, d, 2 * d, hard=False)


def _mkl_objective(m, seed=0, n_points=30, k=2):
    """LMNN's weight-step objective h(P) (Wang et al. eq. 18) on m Gaussian kernels of
    different bandwidths over random feature subsets of 30 labelled 5-D points, a random
    PSD metric A, k = 2 target neighbours."""
    from cvxkml.declare.mkl import LMNNWeightObjective
    from cvxkml.formulas.lmnn import LMNNTriplets
    from cvxkml.kernels import gaussian_kernel, kernel_sq_distances

    rng = np.random.default_rng(seed)
    X, y = labelled_points(n_points, d=5, seed=seed, shift=0.6)
    Ks = []
    for _ in range(m):
        cols = rng.choice(5, size=int(rng.integers(2, 6)), replace=False)
        Ks.append(gaussian_kernel(X[:, cols], sigma=float(np.exp(rng.uniform(np.log(0.5), np.log(4.0))))))
    Ks = np.array(Ks)
    tr = LMNNTriplets.from_labels(y, k, sq_dist=kernel_sq_distances(Ks.mean(0)))
    B = rng.normal(size=(n_points, n_points)) * 0.3
    A = B @ B.T / n_points + 0.5 * np.eye(n_points)
    return LMNNWeightObjective.from_kernels(Ks, A, tr, 0.5)


def _spectral(reg_name, kernel, n, seed=0):
    """:func:`cvxkml.testing.feasible_instance`: 2n pairs and 2n triplets under Hinge(C = 1),
    kernel: Gaussian K0 on n 10-D points; metric: d = n features, 2n points."""
    from cvxkml import declare
    from cvxkml.testing import feasible_instance

    reg = getattr(declare, reg_name)()
    if kernel:
        return feasible_instance(seed, n, 2 * n, ("pairs", "triplets"), reg, kernel=True, hard=False, d=10)
    return feasible_instance(seed, 2 * n, 2 * n, ("pairs", "triplets"), reg, kernel=False, hard=False, d=n)


#: the regularizers measured with every constraint family at once (the size guard's
#: ``"[Regularizer]+mixed"`` keys)
MIXED_REGULARIZERS = ("LogDet", "VonNeumann", "Frobenius", "TraceNorm")


def _mixed(reg_name, n, seed=0):
    """:func:`cvxkml.testing.feasible_instance` with all four families, hard: the exact model
    with every constraint type (2n of each) on a Gaussian K0 of n 10-D points."""
    from cvxkml import declare
    from cvxkml.testing import feasible_instance

    return feasible_instance(
        seed,
        n,
        2 * n,
        ("pairs", "triplets", "similarity", "linear"),
        getattr(declare, reg_name)(),
        kernel=True,
        hard=True,
        d=10,
    )


def _pola(kernel, n, seed=0):
    """POLA (Jain et al. §5.2): pair constraints y (b − d(i, j)) >= 1 with b = 1 + median
    baseline distance on forest pairs (n − 1 on a full-rank Gaussian K0, d on 2d points in
    R^d) — their difference vectors are independent, so the hard constraints are feasible."""
    from cvxkml import declare
    from cvxkml.sideinfo import baseline_kernel, baseline_metric
    from cvxkml.testing import forest_pairs

    rng = np.random.default_rng(seed)
    if kernel:
        A = _kernel_data(n, seed)
        i, j = forest_pairs(rng, n, n - 1)
        base = baseline_kernel(A)(i, j)
    else:
        A = rng.normal(size=(2 * n, n))
        i, j = forest_pairs(rng, 2 * n, n)
        base = baseline_metric(A)(i, j)
    y = rng.permutation(np.resize([1.0, -1.0], i.size))
    pc = declare.pola_constraints(i, j, y, 1.0 + float(np.median(base)))
    return declare.POLAKernel(A, pc) if kernel else declare.POLAMetric(A, pc)


def _build_map():
    import cvxpy as cp

    from cvxkml import declare
    from cvxkml.testing import factor_instance, feasible_instance

    def trace(n):
        base = feasible_instance(0, n, 2 * n, ("pairs",), kernel=True, d=10)
        return declare.TraceSSIKDR(base.M0, base.pairs, tau=1.0)

    def sdp_kernel(n):
        base = feasible_instance(0, n, 2 * n, ("pairs",), kernel=True, d=10)
        return declare.SDPLogDetKernel(base.M0, base.pairs, np.eye(n), 1.0)

    def sdp_metric(n):
        base = feasible_instance(0, 2 * n, 2 * n, ("pairs",), kernel=False, d=n)
        return declare.SDPLogDetMetric(base.X, base.pairs, np.eye(2 * n), 1.0)

    def kcr(n):
        X, y = labelled_points(n, d=10, shift=0.7)
        return declare.KCR(_gaussian(X), y, 1.0)

    def lmnn(n):
        X, y = labelled_points(3 * n, d=n, n_classes=3, shift=0.7)
        return declare.LMNNProblem.linear(X, y, 3, 0.5)

    def iplr(n):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(4 * n, 2 * n)) * rng.uniform(0.5, 2.0, size=2 * n)
        from cvxkml.sideinfo import baseline_metric

        pc = _pairs(baseline_metric(X), 4 * n, 2 * n, rng)
        return declare.IPLR.from_features(X, pc, k=n, gamma=1.0)

    def reweighting(n):
        X, y = labelled_points(n + 1, d=10)
        rng = np.random.default_rng(1)
        i, j = np.triu_indices(n + 1, 1)
        same = np.flatnonzero(y[i] == y[j])
        pick = rng.choice(same, size=min(same.size, 2 * n), replace=False)
        return declare.SpectralReweighting.from_kernel(_gaussian(X), np.stack([i[pick], j[pick]], 1))

    def embedding(n):
        # kernel LLE weights of one point on its n nearest landmarks (Yeung et al. eq. 12)
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n + 1, 10))
        K = _gaussian(X)
        return declare.EmbeddingWeightProblem.from_kernel(K[0, 0], K[0, 1:], K[1:, 1:])

    def extended(n):
        X, pc = _metric_pairs(n)
        return declare.ITML(X, pc, gamma=1.0).extend(term=lambda W: 0.1 * cp.sum(cp.abs(W - cp.diag(cp.diag(W)))))

    def mu_step(m):
        from cvxkml.declare.mkl import LMNNMuMajorizer

        h = _mkl_objective(m)
        return declare.MuWeightStep(LMNNMuMajorizer(h, np.full(m, 1.0 / m)))

    return {
        # name: (builder of an instance with exact_size() == n, cap on n, description)
        "ITML": (
            lambda n: declare.ITML(*_metric_pairs(n), gamma=1.0),
            2000,
            "d = n features, 2n points, 2n pairs, slack γ = 1",
        ),
        "LogDetKernel": (
            lambda n: declare.LogDetKernel(*_kernel_pairs(n), gamma=1.0),
            2000,
            "Gaussian K0 on n 10-D points, 2n pairs, slack γ = 1",
        ),
        "LowRankLogDet": (
            lambda n: declare.LowRankLogDet(*factor_instance(0, 4 * n, n, 2 * n, hard=False), gamma=1.0),
            2000,
            "K0 = G0 G0ᵀ of rank r = n on 4n points, 2n pairs, slack γ = 1",
        ),
        "VonNeumannKernel": (lambda n: declare.VonNeumannKernel(*_kernel_pairs(n), gamma=1.0), 2000, "as LogDetKernel"),
        "SpectralKernel[Frobenius]": (
            lambda n: _spectral("Frobenius", True, n),
            2000,
            "Gaussian K0 on n 10-D points, 2n pairs + 2n triplets under Hinge(C = 1)",
        ),
        "SpectralKernel[VonNeumann]": (
            lambda n: _spectral("VonNeumann", True, n),
            2000,
            "as SpectralKernel[Frobenius]",
        ),
        "SpectralKernel[TraceNorm]": (lambda n: _spectral("TraceNorm", True, n), 2000, "as SpectralKernel[Frobenius]"),
        "SpectralMetric[Frobenius]": (
            lambda n: _spectral("Frobenius", False, n),
            2000,
            "d = n features, 2n points, 2n pairs + 2n triplets under Hinge(C = 1)",
        ),
        "SpectralMetric[VonNeumann]": (
            lambda n: _spectral("VonNeumann", False, n),
            2000,
            "as SpectralMetric[Frobenius]",
        ),
        **{
            f"[{reg}]+mixed": (
                lambda n, reg=reg: _mixed(reg, n),
                2000,
                "SpectralKernel, Gaussian K0 on n 10-D points, hard pairs + triplets + similarity "
                "+ linear constraints (2n each, feasible by construction)"
                if reg == "LogDet"
                else "as [LogDet]+mixed",
            )
            for reg in MIXED_REGULARIZERS
        },
        "TraceSSIKDR": (trace, 2000, "Gaussian K0 on n 10-D points, 2n hard pairs feasible by construction, τ = 1"),
        "POLAKernel": (lambda n: _pola(True, n), 2000, "Gaussian K0 on n 10-D points, n − 1 forest pairs"),
        "POLAMetric": (lambda n: _pola(False, n), 2000, "d = n features, 2n points, n forest pairs"),
        "SDPLogDetKernel": (sdp_kernel, 2000, "as TraceSSIKDR, C0 = I, γ = 1"),
        "SDPLogDetMetric": (
            sdp_metric,
            2000,
            "d = n features, 2n points, 2n hard pairs feasible by construction, C0 = I (2n × 2n), γ = 1",
        ),
        "IPLR": (iplr, 2000, "k = n basis vectors (SVD) of 4n points in 2n dimensions, 2n pairs, slack γ = 1"),
        "ExtendedProblem": (extended, 2000, "ITML instance + 0.1·Σ|W_ij| off the diagonal"),
        "KCR": (kcr, 2000, "Gaussian K on n 10-D points, 2 classes, λ = 1"),
        "LMNNProblem": (lmnn, 2000, "linear LMNN: d = n features, 3n points in 3 classes, k = 3, γ = 0.5"),
        "RankOneWeightStep": (
            lambda m: declare.RankOneWeightStep(_mkl_objective(m)),
            500,
            "m = n Gaussian kernels on 30 labelled points, LMNN h(P) (eq. 15–16), k = 2",
        ),
        "MuWeightStep": (mu_step, 500, "MKL_μ convex majorizer of the same h at μ = 1/m"),
        "SpectralReweighting": (
            reweighting,
            1500,
            "q = n spectral components of a centered Gaussian kernel on n + 1 points, 2n pairs",
        ),
        "EmbeddingWeightProblem": (embedding, 1500, "kernel LLE weights on n neighbours (Gaussian kernel)"),
    }


_MAP = None


def _families():
    global _MAP
    if _MAP is None:
        _MAP = _build_map()
    return _MAP


#: the families measured, in table order (a spectral problem as ``Class[Regularizer]``)
FAMILIES = (
    *"ITML LogDetKernel LowRankLogDet VonNeumannKernel SpectralKernel[Frobenius] SpectralKernel[VonNeumann]".split(),
    *"SpectralKernel[TraceNorm] SpectralMetric[Frobenius] SpectralMetric[VonNeumann]".split(),
    *(f"[{r}]+mixed" for r in MIXED_REGULARIZERS),
    *"TraceSSIKDR POLAKernel POLAMetric SDPLogDetKernel SDPLogDetMetric IPLR ExtendedProblem KCR LMNNProblem".split(),
    *"RankOneWeightStep MuWeightStep SpectralReweighting EmbeddingWeightProblem".split(),
)


def build(family: str, n: int):
    """The benchmark instance of ``family`` with ``exact_size() == n``."""
    try:
        builder = _families()[family][0]
    except KeyError:
        raise KeyError(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}") from None
    return builder(int(n))


# --------------------------------------------------------------------------- the child
def _rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _child(family: str, n: int, fast: bool = False) -> None:
    """Run in the subprocess: one default solve (exact, or fast with ``fast``), one JSON line."""
    import warnings

    warnings.simplefilter("ignore")
    out = {"family": family, "n": int(n)}
    try:
        problem = build(family, n)
        out["exact_size"] = int(problem.exact_size())
        out["solver"] = problem.default_solver()
        out["baseline_mib"] = _rss_mib()
        if fast:
            try:  # compile the Numba kernels outside the timing
                build(family, min(int(n), 8)).solve()
            except Exception:  # noqa: BLE001
                pass
            t0 = time.perf_counter()
            sol = problem.solve()
            out["time"] = time.perf_counter() - t0
            out["converged"] = bool(sol.converged)
            out["objective"] = float(sol.objective)
        else:
            kw = {"allow_large": True} if getattr(type(problem).solve_reference, "_size_guarded", False) else {}
            t0 = time.perf_counter()
            sol = problem.solve_reference(**kw)
            out["time"] = time.perf_counter() - t0
            out["solver"] = str(getattr(sol, "solver", out["solver"]) or out["solver"])
            out["status"] = str(sol.status)
            out["accepted_by_certificate"] = bool(sol.info.get("accepted_by_certificate", False))
            out["objective"] = float(sol.objective)
            gap = sol.gap
            scale = max(1.0, abs(float(sol.objective)))
            out["rel_gap"] = None if gap is None or not np.isfinite(gap) else float(gap) / scale
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        out["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        if "t0" in locals() and "time" not in out:
            out["time_to_error"] = time.perf_counter() - t0
    out["peak_mib"] = _rss_mib()
    print("@@" + json.dumps(out), flush=True)


def _vm_rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def _run_child(family: str, n: int, fast: bool, kill_after: float, mem_limit_mib: float) -> dict:
    env = dict(os.environ, **THREAD_ENV)
    code = f"from benchmarks.bench.exact import _child; _child({family!r}, {int(n)}, {bool(fast)})"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    # drain the pipes in threads (a chatty solver must not block on a full pipe)
    chunks = {"out": [], "err": []}
    readers = [
        threading.Thread(target=lambda s, k: chunks[k].append(s.read()), args=(s, k), daemon=True)
        for s, k in ((proc.stdout, "out"), (proc.stderr, "err"))
    ]
    for r in readers:
        r.start()
    seen_rss, killed = 0.0, None
    while proc.poll() is None:
        elapsed = time.perf_counter() - t0
        rss = _vm_rss_mib(proc.pid)
        seen_rss = max(seen_rss, rss)
        if rss > mem_limit_mib:
            killed = f"killed at {rss:.0f} MiB (over {mem_limit_mib / 1024:g} GiB) after {elapsed:.0f} s"
        elif elapsed > kill_after:
            killed = f"killed after {kill_after:.0f} s"
        if killed:
            proc.kill()
            proc.wait()
            break
        time.sleep(0.1)
    for r in readers:
        r.join(timeout=5)
    wall = time.perf_counter() - t0
    if killed:
        return {
            "family": family,
            "n": int(n),
            "killed": killed,
            "wall": wall,
            "peak_mib": seen_rss,
            "over": "memory" if "MiB" in killed else "time",
        }
    lines = [ln[2:] for ln in "".join(chunks["out"]).splitlines() if ln.startswith("@@")]
    if not lines:
        err = " ".join("".join(chunks["err"]).split())[-300:]
        return {
            "family": family,
            "n": int(n),
            "error": f"crashed (rc {proc.returncode}): {err}",
            "wall": wall,
            "peak_mib": seen_rss,
        }
    out = json.loads(lines[-1])
    out["wall"] = wall
    return out


def measure(
    family: str, n: int, time_limit: float = 60.0, mem_limit_gib: float = 4.0, kill_factor: float = 2.0
) -> dict:
    """One default exact solve of ``build(family, n)`` in a fresh single-threaded
    subprocess, killed after ``kill_factor · time_limit`` s or above ``mem_limit_gib``.
    Returns the child's record, with ``over`` = "time" / "memory" when a limit was exceeded
    and ``error`` when the solve raised."""
    r = _run_child(family, n, False, kill_factor * time_limit, mem_limit_gib * 1024.0)
    if "over" not in r and "error" not in r:
        if r.get("time", 0.0) > time_limit:
            r["over"] = "time"
        elif r.get("peak_mib", 0.0) > mem_limit_gib * 1024.0:
            r["over"] = "memory"
    return r


def measure_fast(family: str, n: int, kill_after: float = 120.0, mem_limit_gib: float = 4.0) -> dict:
    """The family's fast solver (``problem.solve()``, defaults) on the same instance."""
    return _run_child(family, n, True, kill_after, mem_limit_gib * 1024.0)


def family_limit(
    family: str,
    time_limit: float = 60.0,
    mem_limit_gib: float = 4.0,
    start: int = 8,
    max_n: int | None = None,
    kill_factor: float = 2.0,
    fast: bool = True,
    log=print,
    max_errors: int = 2,
) -> dict:
    """Grow n by ×1.5 from ``start`` until a solve exceeds the time or memory limit (or
    ``max_errors`` solves in a row raise, or n passes the family's cap); see the module
    docstring."""
    cap = _families()[family][1] if max_n is None else min(max_n, _families()[family][1])
    runs, n, errors_in_row = [], int(start), 0
    load0 = os.getloadavg()[0]
    while n <= cap:
        r = measure(family, n, time_limit, mem_limit_gib, kill_factor)
        runs.append(r)
        log(json.dumps(r))
        if "over" in r:
            break
        errors_in_row = errors_in_row + 1 if "error" in r else 0
        if errors_in_row >= max_errors:
            break
        n = int(np.ceil(n * GROWTH))
    first_fail = next((r for r in runs if "over" in r or "error" in r), None)
    before = runs[: runs.index(first_fail)] if first_fail is not None else runs
    ok = [r for r in runs if "over" not in r and "error" not in r]
    best = ok[-1] if ok else None
    over = next((r for r in runs if "over" in r), None)
    row = {
        "family": family,
        "description": _families()[family][2],
        "cap": cap,
        "passed": before[-1] if before else None,
        "first_failure": first_fail,
        "best": best,
        "over": over,
        "errors": [r for r in runs if "error" in r],
        "capped": over is None and errors_in_row < max_errors and n > cap,
        "runs": runs,
        "load": [load0, os.getloadavg()[0]],
    }
    if fast and best is not None:
        f = measure_fast(family, best["n"], kill_factor * time_limit, mem_limit_gib)
        log(json.dumps(dict(f, fast=True)))
        row["fast"] = f
    return row


def limits(
    families=FAMILIES,
    time_limit: float = 60.0,
    mem_limit_gib: float = 4.0,
    start: int = 8,
    max_n: int | None = None,
    kill_factor: float = 2.0,
    fast: bool = True,
    jobs: int = 1,
    log=print,
    max_errors: int = 2,
) -> list[dict]:
    """:func:`family_limit` for each family (``jobs`` families at a time), in order."""

    def one(f):
        return family_limit(f, time_limit, mem_limit_gib, start, max_n, kill_factor, fast, log, max_errors)

    if jobs <= 1:
        return [one(f) for f in families]
    with ThreadPoolExecutor(max_workers=int(jobs)) as pool:
        return list(pool.map(one, families))


def recorded_limits(rows) -> dict:
    """{family: largest n within the limits} (the :data:`EXACT_LIMITS` entries)."""
    return {r["family"]: int(r["best"]["exact_size"]) for r in rows if r["best"] is not None}


# --------------------------------------------------------------------------- the table
def _why(r, time_limit) -> str:
    if r is None:
        return "—"
    if "killed" in r:
        return r["killed"]
    if r.get("over") == "time":
        return f"{r['time']:.0f} s"
    if r.get("over") == "memory":
        return f"{r['peak_mib']:.0f} MiB"
    return r.get("error", "?")


def _status(r) -> str:
    s = r.get("status", "?")
    if r.get("accepted_by_certificate"):
        s += " (accepted by certificate)"
    gap = r.get("rel_gap")
    return f"{s}, {'n/a' if gap is None else f'{gap:.1e}'}"


def _fmt(rows, time_limit, mem_limit_gib, meta=None) -> str:
    meta = dict(meta or {})
    date = meta.get("date", time.strftime("%Y-%m-%d"))
    out = [
        "# Exact-model size limits (`python -m benchmarks bench exact-limits`)",
        "",
        f"For each family, the largest n (the side of the exact model's PSD block, "
        f"`exact_size()`; the number of weights for the QP families) whose default "
        f"`solve_reference()` — default solver, default eps — finished within {time_limit:g} s "
        f"and {mem_limit_gib:g} GiB.  n grows by ×1.5 from {meta.get('start', 8)}; each solve runs in a "
        f"fresh process with one BLAS/OpenMP thread, is killed after {meta.get('kill_factor', 2.0):g}× the "
        f"time limit or when its resident memory passes the memory limit; memory is the child's peak "
        f"RSS (`ru_maxrss`, including ~135 MiB of imports).  A solve that raises does not stop the "
        f"growth (two in a row do): *largest n passed* stops at the first failure of any kind, "
        f"*largest n within limits* only at time or memory, and is what "
        f"`cvxkml.declare._limits.EXACT_LIMITS` records.",
        "",
        f"Machine: {meta.get('machine', 'shared 2-core box')}; measured {date}"
        + (f", {meta['note']}" if meta.get("note") else "")
        + ".",
        "",
        "| family | default solver | largest n within limits | its time (s) | its peak memory (MiB) "
        "| its status, relative gap | largest n passed | first n over the limits | why | errors (n: cause) "
        "| fast `solve()` at that n: time (s), certified |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        b = row["best"]
        if b is None:
            cells = ["—"] * 5
        else:
            cells = [b.get("solver", "?"), str(b["exact_size"]), f"{b['time']:.1f}", f"{b['peak_mib']:.0f}", _status(b)]
        p = row["passed"]
        passed = "—" if p is None else str(p.get("exact_size", p["n"]))
        ov = row["over"]
        if ov is not None:
            first, why = str(ov["n"]), _why(ov, time_limit)
        elif row.get("capped"):
            first, why = "—", f"not reached (n capped at {row['cap']})"
        elif row["errors"]:
            first, why = "—", f"stopped after {len(row['errors'])} errors"
        else:
            first, why = "—", "not reached"
        errs = "; ".join(f"{e['n']}: {e['error'][:160]}" for e in row["errors"]) or "—"
        f = row.get("fast")
        if f is None:
            fast = "—"
        elif "error" in f or "killed" in f:
            fast = _why(f, time_limit)[:120]
        else:
            fast = f"{f['time']:.3g}, {'yes' if f['converged'] else 'no'}"
        cells = [row["family"]] + cells + [passed, first, why, errs, fast]
        out.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    out += [
        "",
        "The fast solve runs in its own process after a warm-up solve at n = 8 (Numba compilation "
        "not timed), with the family's default tolerance.",
        "",
        "Instances (n is `exact_size()`):",
        "",
    ]
    out += [
        f"- **{row['family']}**: {row['description']}."
        + (f" Re-measured on its own ({row['remeasured']})." if row.get("remeasured") else "")
        for row in rows
    ]
    return "\n".join(out) + "\n"


def _machine() -> str:
    import platform

    try:
        import threadpoolctl

        blas = ", ".join(sorted({i.get("internal_api", "?") for i in threadpoolctl.threadpool_info()}))
    except Exception:  # noqa: BLE001
        blas = "?"
    return (
        f"{platform.machine()}, {os.cpu_count()} cores (shared), 1 BLAS thread ({blas}), "
        f"Python {platform.python_version()}"
    )


def command(args) -> int:
    """``python -m benchmarks bench exact-limits``: measure, print the table, write it and the JSON; returns the exit
    status, 0; raises :class:`.._commands.CommandError` (exit status 2, one line) for an unknown family name."""
    fams = [f.strip() for f in args.families.split(",") if f.strip()]
    unknown = [f for f in fams if f not in FAMILIES]
    if unknown or not fams:
        raise CommandError(
            f"unknown families {unknown}; choose from {', '.join(FAMILIES)}"
            if unknown
            else f"--families names no family; choose from {', '.join(FAMILIES)}"
        )
    t0 = time.time()
    load0 = os.getloadavg()
    lock = threading.Lock()

    def log(line):
        with lock:
            print(line, file=sys.stderr, flush=True)

    rows = limits(
        fams,
        args.time_limit,
        args.mem_limit_gib,
        args.start,
        args.max_n,
        args.kill_factor,
        not args.no_fast,
        args.jobs,
        log=log,
        max_errors=args.max_errors,
    )
    load1 = os.getloadavg()
    note = (
        f"{args.jobs} famil{'y' if args.jobs == 1 else 'ies'} at a time, load average "
        f"{load0[0]:.1f} at the start and {load1[0]:.1f} at the end, {(time.time() - t0) / 60:.0f} min in all"
    )
    if args.note:
        note += f"; {args.note}"
    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(),
        "note": note,
        "start": args.start,
        "kill_factor": args.kill_factor,
    }
    if args.update and args.json and os.path.exists(args.json):
        with open(args.json) as fh:
            old = json.load(fh)
        for r in rows:
            r["remeasured"] = f"{meta['date']}, {note}"
        new = {r["family"]: r for r in rows}
        kept = {r["family"]: r for r in old["rows"]}
        kept.update(new)
        order = [f for f in FAMILIES if f in kept] + [f for f in kept if f not in FAMILIES]
        rows = [kept[f] for f in order]
        meta = {k: old[k] for k in ("date", "machine", "note", "start", "kill_factor") if k in old}
    table = _fmt(rows, args.time_limit, args.mem_limit_gib, meta)
    print(table)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(table)
    if args.json:
        out = {"time_limit": args.time_limit, "mem_limit_gib": args.mem_limit_gib, **meta}
        with open(args.json, "w") as fh:
            json.dump({**out, "limits": recorded_limits(rows), "rows": rows}, fh, indent=1)
    return 0
