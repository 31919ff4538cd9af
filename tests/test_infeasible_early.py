"""Infeasible hard constraints are recognised early: the Bregman, low-rank
and von Neumann paths stop on a diverging dual that is a Farkas certificate after a bounded
number of sweeps, whatever the sweep limit, and hand the ray to the declared problem; a
feasible problem is never stopped that way."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

from cvxkml.declare.logdet import ITML
from cvxkml.declare.lowrank import LowRankLogDet
from cvxkml.declare.vonneumann import VonNeumannKernel
from cvxkml.errors import InfeasibleError
from cvxkml.sideinfo import PairConstraints
from cvxkml.solvers.bregman import FARKAS_EIG_TOL, FARKAS_LIN_TOL, NOT_CONVERGED, OK, bregman_kernel, bregman_metric
from cvxkml.solvers.lowrank import PAIR, lowrank_logdet
from cvxkml.solvers.vonneumann import vonneumann_pairs


def _case(n=200, d=30, m=3000, seed=0, conflict=True, ratio=1.1, pin=False):
    """m ordinary pairs, feasible by construction (bounds from a planted metric LᵀL, ``ratio``
    of room), and with ``conflict`` the contradictory pair d(0, 1) <= 0.5 and >= 2 appended; with
    ``pin`` instead d(0, 1) <= p and >= p at the planted distance p (feasible)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    lab = rng.integers(0, 4, n)
    i = rng.integers(0, n, m)
    j = (i + 1 + rng.integers(0, n - 1, m)) % n
    L = np.eye(d) + 0.5 * rng.standard_normal((d, d)) / np.sqrt(d)
    planted = (((X[i] - X[j]) @ L.T) ** 2).sum(1)
    y = np.where(lab[i] == lab[j], 1.0, -1.0)
    b = np.where(y > 0, ratio * planted, planted / ratio)
    if conflict or pin:
        p01 = float((((X[0] - X[1]) @ L.T) ** 2).sum())
        i, j = np.r_[i, 0, 0], np.r_[j, 1, 1]
        y, b = np.r_[y, 1.0, -1.0], np.r_[b, (0.5, 2.0) if conflict else (p01, p01)]
    return X, PairConstraints(i, j, y, b)


def _on_pair_01(P, idx):
    return np.all(np.minimum(P.i[idx], P.j[idx]) == 0) and np.all(np.maximum(P.i[idx], P.j[idx]) == 1)


def _certifies(problem, ray):
    eig, lin, _ = problem.farkas_direction(ray)
    return eig >= -FARKAS_EIG_TOL and lin <= -FARKAS_LIN_TOL


def test_issue_case_bregman_stops_early_with_a_certified_ray():
    """The slow case (ITML, n = 200, d = 30, 3 000 pairs + one contradictory pair): the
    Bregman run stops after at most 64 sweeps of its 20 000 with the ray on the pair's
    constraints, and the declared problem's own Farkas test accepts it."""
    X, P = _case()
    problem = ITML(X, P)
    bregman_metric(np.eye(30), X[:3], [0], [1], [1.0], [1.0], None, 1e-9, 1)  # compile
    t = time.perf_counter()
    res = bregman_metric(np.eye(30), X, P.i, P.j, P.y, P.bound, None, 1e-9, 20_000)
    elapsed = time.perf_counter() - t
    assert res.code == NOT_CONVERGED and res.sweeps <= 64
    S = res.extra["farkas_candidates"]
    assert {3000, 3001} <= set(S.tolist()) and _on_pair_01(P, S)
    assert _certifies(problem, res.extra["farkas_ray"])
    assert elapsed <= 5.0  # measured 0.03-0.15 s; generous margin
    # the full multipliers alone are no certificate at this point (why the ray is handed on)
    eig, _, _ = problem.farkas_direction(res.lam)
    assert eig < -FARKAS_EIG_TOL


def test_kernel_lowrank_vonneumann_stop_early():
    """The same conflict in the dense kernel, low-rank and von Neumann paths (smaller: 600
    ordinary pairs): each stops within 64 sweeps (low-rank, reshuffled every sweep: 512) with a
    ray on the conflicting constraints (and the others whose multipliers grow with them) that the problem certifies."""
    X, P = _case(n=60, d=8, m=600, seed=3)
    K = X @ X.T + 1e-3 * np.eye(60)
    res = bregman_kernel(K, P.i, P.j, P.y, P.bound, None, 1e-9, 20_000)
    assert res.code == NOT_CONVERGED and res.sweeps <= 64
    assert {600, 601} <= set(res.extra["farkas_candidates"].tolist())
    from cvxkml.declare.logdet import LogDetKernel

    assert _certifies(LogDetKernel(K, P), res.extra["farkas_ray"])

    lr = LowRankLogDet(X, [P])
    m = len(P)
    stats = {}
    out = lowrank_logdet(
        lr.G0,
        np.full(m, PAIR),
        P.i,
        P.j,
        P.j,
        np.zeros((m, 2)),
        np.zeros((m, 2)),
        P.y,
        P.bound,
        None,
        1e-9,
        20_000,
        stats=stats,
    )
    assert out[5] == NOT_CONVERGED and out[3] <= 512  # shuffled order: 256 measured
    # here d(0, 1) <= 0.5 with ordinary pairs is already a certificate, without the >= 2
    assert 600 in set(stats["farkas_candidates"].tolist())
    assert _certifies(lr, stats["farkas_ray"])

    vn = VonNeumannKernel(K, P)
    q0 = np.zeros(vn.F.shape[1]) if vn.regularizer.logp is None else vn.regularizer.logp
    res = vonneumann_pairs(vn.F, q0, P.i, P.j, P.y, P.bound, None, 1e-9, 20_000)
    assert res.code == NOT_CONVERGED and res.sweeps <= 64
    assert {600, 601} <= set(res.extra["farkas_candidates"].tolist())
    assert _certifies(vn, res.extra["farkas_ray"])


@pytest.mark.parametrize("ratio", [1.0, 1.02])
def test_feasible_tight_problem_is_not_stopped(ratio):
    """Feasible but hard: every bound sits at (or 2 % from) the planted metric's distance,
    the optimum is on the boundary of many constraints.  No ray is ever reported, and the
    run ends on its own rule or the sweep limit."""
    X, P = _case(n=80, d=10, m=800, seed=5, conflict=False, ratio=ratio)
    res = bregman_metric(np.eye(10), X, P.i, P.j, P.y, P.bound, None, 1e-12, 3000)
    assert "farkas_ray" not in res.extra and res.code in (OK, NOT_CONVERGED)
    res = bregman_metric(np.eye(10), X, P.i, P.j, P.y, P.bound, None, 1e-9, 3000)
    assert "farkas_ray" not in res.extra


def test_equal_bounds_on_one_pair_are_feasible():
    """d(0, 1) <= p and >= p at the planted distance is feasible (an equality): both
    multipliers move, but no ray is reported.  (Pinned at 1.7 × the Euclidean distance
    instead, the same set is infeasible — Clarabel agrees — and the ray is found.)"""
    X, P = _case(n=60, d=8, m=300, seed=2, conflict=False, pin=True)
    res = bregman_metric(np.eye(8), X, P.i, P.j, P.y, P.bound, None, 1e-9, 2000)
    assert "farkas_ray" not in res.extra
    b = float(((X[0] - X[1]) ** 2).sum()) * 1.7
    bound = np.r_[P.bound[:-2], b, b]
    res = bregman_metric(np.eye(8), X, P.i, P.j, P.y, bound, None, 1e-9, 2000)
    assert res.extra["farkas_sweeps"] <= 1024
    assert _certifies(ITML(X, PairConstraints(P.i, P.j, P.y, bound)), res.extra["farkas_ray"])


def test_slack_and_opt_out_never_report_a_ray():
    """With slack (gamma) the problem is always feasible: no watch; detect_infeasible=False
    restores the run to the sweep limit."""
    X, P = _case(n=60, d=8, m=300, seed=4)
    res = bregman_metric(np.eye(8), X, P.i, P.j, P.y, P.bound, 1.0, 1e-9, 200)
    assert "farkas_ray" not in res.extra
    res = bregman_metric(np.eye(8), X, P.i, P.j, P.y, P.bound, None, 1e-9, 200, detect_infeasible=False)
    assert res.sweeps == 200 and "farkas_ray" not in res.extra


def test_issue_case_raises_infeasible_quickly():
    """End to end: ITML(...).solve() raises InfeasibleError naming the conflicting
    constraints in seconds, instead of first running out the whole sweep limit."""
    X, P = _case()
    problem = ITML(X, P)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ITML(X[:20], PairConstraints([0], [1], [1.0], [1.0])).solve(max_iter=2)  # compile
    t = time.perf_counter()
    with pytest.raises(InfeasibleError, match="3000"):
        problem.solve()
    assert time.perf_counter() - t <= 5.0


# ---------------------------------------------------------------- the generic dual solver's path
def _relative_cycles(m, n=60, d=10, seed=0):
    """m relative constraints in cycles of three (the benchmark's generator,
    :func:`benchmarks.bench.infeasible.relative_cycles`): each cycle sums to 0 <= −3, so the
    equal-weight ray of a cycle is a Farkas certificate (Σ d_c Â_c = 0 exactly, Σ d_c t_c =
    −1 relative): infeasible by a margin of order one, far from any round-off edge."""
    from benchmarks.bench.infeasible import relative_cycles

    return relative_cycles(m, seed, n=n, d=d)


@pytest.mark.parametrize("m", [99, 999])
def test_dual_solver_proves_relative_cycles_infeasible_with_a_checked_ray(m):
    """The generic dual solver (LogDet metric with relative constraints, ``method="dual"``)
    stops on the growth of its multipliers within its first checks, hands the ray over, and
    the declared problem's own Farkas test (recomputed from its terms) raises."""
    from cvxkml.declare import SpectralMetric
    from cvxkml.declare.regularizers import LogDet

    X, R = _relative_cycles(m)
    problem = SpectralMetric(X, R, LogDet())
    res = problem.fast_solver("dual").solve(problem, 1e-9, 20_000)
    assert res.extra["infeasible"] and res.sweeps <= 16
    eig, lin, bound = problem.farkas_direction(res.extra["farkas_ray"])
    assert eig >= -1e-9 and lin <= -0.1 and np.isinf(bound)
    with pytest.raises(InfeasibleError, match="Farkas certificate"):
        problem.solve(method="dual")


def test_dual_solver_proves_an_infeasible_hard_equality_with_a_signed_ray():
    """An equality's multiplier has either sign: −tr(K) = 1 (no PSD K) is proved infeasible
    by the ray d = −1 on it (Σ d_c Â_c = Î ⪰ 0, Σ d_c t_c = −1), on the SDP-LogDet kernel's
    dual path, where it used to run out its Newton iterations without a verdict; d = +1 is
    no ray (Σ d_c Â_c = −Î is negative definite)."""
    from cvxkml.declare.sdp import SDPLogDetKernel
    from cvxkml.sideinfo import LinearEqualities

    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 8))
    eq = LinearEqualities(np.array([1.0]), C=-np.eye(6)[None])
    problem = SDPLogDetKernel(X @ X.T + np.eye(6), eq, np.eye(6))
    eig, lin, bound = problem.farkas_direction(np.array([-1.0]))
    assert eig > 0.01 and lin == pytest.approx(-1.0) and np.isinf(bound)  # TᵀT: PD, not I
    eig, lin, _ = problem.farkas_direction(np.array([1.0]))
    assert eig < -0.01 and lin == pytest.approx(1.0)
    with pytest.raises(InfeasibleError, match="Farkas certificate"):
        problem.solve()


def test_contradictory_pairs_on_the_dual_path_raise_infeasible():
    """d(0, 1) <= 0.5 and d(0, 1) >= 2 among feasible pairs, solved by the dual solver."""
    X, P = _case(n=60, d=8, m=300)
    problem = ITML(X, P)
    with pytest.raises(InfeasibleError, match="Farkas certificate"):
        problem.solve(method="dual")


def test_a_breakdown_without_hard_constraints_is_no_infeasibility_verdict():
    """SDPLogDetMetric with d > n and only soft (Squared) linear constraints: the exact model
    is optimal; the fast path cannot start (the dual is not finite at λ = 0, XᵀC0X being
    singular) and says so as a SolverError — never "infeasible"."""
    from cvxkml.declare.sdp import SDPLogDetMetric
    from cvxkml.errors import SolverError
    from cvxkml.sideinfo import LinearConstraints, Squared

    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 8))
    Z = rng.standard_normal((3, 8, 8))
    problem = SDPLogDetMetric(X, Squared(LinearConstraints(np.ones(3), C=Z + Z.transpose(0, 2, 1)), 1.0), np.eye(6))
    assert problem.solve_reference().status == "optimal"
    with pytest.raises(SolverError, match="no verdict on feasibility") as info:
        problem.solve()
    assert not isinstance(info.value, InfeasibleError)
