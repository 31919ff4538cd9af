"""The Bregman family's shared kernels (cvxkml.solvers._bregman_core), each against what it
promises: a projection lands on its constraint (or spends its whole multiplier), the slack
and multiplier stay tied by 1/ξ = 1/ξ0 − δλ/γ, the roots are a quadratic's, the sliced
driver runs the iterates of one uninterrupted loop."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml._config import WorkBudget
from cvxkml.solvers._bregman_core import (
    check_time_limit,
    dual_change,
    project,
    quadratic_roots,
    rank_one_update,
    run_sliced,
    sweep_end,
)
from cvxkml.solvers.result import NONFINITE, NOT_CONVERGED, OK
from cvxkml.solvers.vonneumann import _N_STATS, _sweeps_vn_set


@pytest.mark.parametrize("gamma", [np.inf, 0.3, 1.0, 50.0])
def test_an_uncapped_projection_lands_on_the_constraint(gamma):
    """p' = zᵀ(M + β Mz zᵀM)z = p + βp² equals the new slack ξ' (the constraint holds with
    equality), and 1/ξ' = 1/ξ + δα/γ (the slack-multiplier tie after λ ← λ − α)."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        p, xi = rng.uniform(0.1, 10.0, 2)
        d = float(rng.choice([-1.0, 1.0]))
        alpha, beta, xi_new = project(p, d, xi, 1e30, gamma)  # λ large: never capped
        p_new = p + beta * p * p
        target = xi if np.isinf(gamma) else xi_new
        assert p_new == pytest.approx(target, rel=1e-10)
        if np.isfinite(gamma):
            assert 1.0 / xi_new == pytest.approx(1.0 / xi + d * alpha / gamma, rel=1e-10)
        else:
            assert xi_new == xi


def test_a_capped_projection_spends_the_whole_multiplier():
    """α = λ_c when the unconstrained step would make λ negative (the dual correction); then
    the constraint is left slack in the right direction."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        p, xi, lam = rng.uniform(0.1, 10.0), rng.uniform(0.1, 10.0), rng.uniform(0.0, 0.05)
        d = float(rng.choice([-1.0, 1.0]))
        step = d * (1.0 / p - 1.0 / xi)
        alpha, beta, _ = project(p, d, xi, lam, np.inf)
        assert alpha == min(lam, step)
        if step > lam:
            p_new = p + beta * p * p
            assert d * (p_new - xi) <= 1e-12 * xi  # still satisfied


def test_quadratic_roots_are_the_roots():
    rng = np.random.default_rng(2)
    for _ in range(500):
        a, b, c = rng.standard_normal(3) * 10.0 ** rng.uniform(-6, 6, 3)
        r1, r2 = quadratic_roots(a, b, c)
        if b * b - 4 * a * c < 0:
            assert np.isnan(r1) and np.isnan(r2)
            continue
        ref = np.sort(np.roots([a, b, c]).real)
        assert np.sort([r1, r2]) == pytest.approx(ref, rel=1e-8, abs=1e-12 * np.abs(ref).max())
    # b = 0, c = 0: the double root 0 (q = 0, the second root NaN, never a division by zero)
    assert quadratic_roots(1.0, 0.0, 0.0)[0] == 0.0


def test_rank_one_update_dual_change_and_sweep_end():
    rng = np.random.default_rng(3)
    M = rng.standard_normal((5, 5))
    u = rng.standard_normal(5)
    ref = M + 0.7 * np.outer(u, u)
    rank_one_update(M, u, 0.7)
    np.testing.assert_allclose(M, ref, rtol=1e-14)
    lam, old = rng.uniform(0, 1, 9), rng.uniform(0, 1, 9)
    assert dual_change(lam, old) == pytest.approx(np.abs(lam - old).sum() / (np.abs(lam).sum() + np.abs(old).sum()))
    assert dual_change(np.zeros(3), np.zeros(3)) == 0.0
    assert sweep_end(np.nan, 1.0) == NONFINITE and sweep_end(np.inf, 1.0) == NONFINITE
    assert sweep_end(0.5, 1.0) == OK and sweep_end(1.0, 1.0) == NOT_CONVERGED


def test_check_time_limit():
    assert check_time_limit(None) is None and check_time_limit(2) == 2.0
    for bad in (0, -1.0, np.nan):
        with pytest.raises(ValueError, match="time_limit"):
            check_time_limit(bad)


@pytest.mark.parametrize("units", [1, 3, 17, 10**9])
def test_run_sliced_gives_the_iterates_of_one_call(units):
    """von Neumann's sweeps through run_sliced (budgets from one projection per call to all of
    them): bit for bit the multipliers, slacks, factors and return values of one call."""
    rng = np.random.default_rng(4)
    n, r, m = 14, 4, 25
    F = rng.standard_normal((n, r))
    I = rng.integers(0, n, m)
    J = (I + 1 + rng.integers(0, n - 1, m)) % n
    delta = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    D = ((F[I] - F[J]) ** 2).sum(1)
    bound = np.where(delta > 0, 0.6 * D, 1.6 * D)
    q0 = 0.3 * rng.standard_normal(r)
    order = np.arange(m)

    def fresh():
        return np.eye(r), q0.copy(), bound.copy(), np.zeros(m), np.zeros(_N_STATS)

    W1, q1, xi1, lam1, st1 = fresh()
    ref = _sweeps_vn_set(W1, q1, F, I, J, delta, xi1, lam1, 1.0, 1e-7, 40, st1, order)
    W2, q2, xi2, lam2, st2 = fresh()

    def whole(k):
        return _sweeps_vn_set(W2, q2, F, I, J, delta, xi2, lam2, 1.0, 1e-7, k, st2, order)

    def piece(_, a, b):
        return _sweeps_vn_set(W2, q2, F, I, J, delta, xi2, lam2, 1.0, -1.0, 1, st2, order[a:b])[2:]

    out = run_sliced(
        whole,
        piece,
        lam2.copy,
        lambda start: dual_change(lam2, start),
        40,
        m,
        1e-7,
        WorkBudget(start=units, high=units),
    )
    assert (out[0], out[2], out[3]) == (ref[0], ref[2], ref[3]) and out[1] == ref[1]
    for a, b in ((W1, W2), (q1, q2), (xi1, xi2), (lam1, lam2)):
        np.testing.assert_array_equal(a, b)
