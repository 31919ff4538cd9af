"""cvxkml.solvers._newton, the dual solvers' shared Newton pieces: CG solves a positive
definite system to its relative tolerance (with and without the Jacobi preconditioner) and
stops at nonpositive curvature with an ascent direction; the projected Armijo search returns
the first point of the projection arc that meets the sufficient-increase rule."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml.solvers._newton import cg, projected_armijo


@pytest.mark.parametrize("precond", [False, True])
def test_cg_solves_a_positive_definite_system(precond):
    rng = np.random.default_rng(0)
    for n in (1, 5, 40):
        A = rng.standard_normal((n, n))
        H = A @ A.T + np.diag(10.0 ** rng.uniform(-1, 2, n))
        b = rng.standard_normal(n)
        x, steps = cg(lambda v: H @ v, b, 1e-10, 10 * n, 1.0 / np.diag(H) if precond else None)
        assert np.linalg.norm(H @ x - b) <= 1e-9 * np.linalg.norm(b)
        assert 1 <= steps <= 10 * n
        x1, s1 = cg(lambda v: H @ v, b, 1e-10, 1)  # the step limit holds
        assert s1 == 1 and np.allclose(x1, (b @ b) / (b @ H @ b) * b)


def test_cg_stops_at_nonpositive_curvature_with_an_ascent_direction():
    H = np.diag([2.0, -1.0, 3.0])
    b = np.array([1.0, 1.0, 1.0])
    x, steps = cg(lambda v: H @ v, b, 1e-12, 50)
    assert steps < 3
    assert b @ x > 0  # still an ascent direction for gradient b
    x0, s0 = cg(lambda v: H @ v, np.array([0.0, 1.0, 0.0]), 1e-12, 50)
    assert s0 == 0 and np.all(x0 == 0)  # first direction has negative curvature


def test_projected_armijo_takes_the_first_sufficient_point_of_the_arc():
    # concave g(x) = -‖x − c‖² maximized over x >= 0
    c = np.array([1.0, -2.0, 0.5])
    g = lambda x: -float(np.sum((x - c) ** 2))  # noqa: E731
    x = np.array([0.2, 0.3, 2.0])
    grad = -2 * (x - c)
    d = 4.0 * grad  # a too long step: needs halvings
    state, step = projected_armijo(lambda y: {"g": g(y), "x": y}, x, d, g(x), grad)
    assert state is not None and step < 1.0
    cand = np.maximum(x + step * d, 0.0)
    np.testing.assert_array_equal(state["x"], cand)
    assert np.all(cand >= 0)
    assert state["g"] >= g(x) + 1e-4 * grad @ (cand - x)
    prev = np.maximum(x + 2 * step * d, 0.0)  # the step before failed the rule
    assert g(prev) < g(x) + 1e-4 * grad @ (prev - x)
    none, _ = projected_armijo(lambda y: None, x, d, g(x), grad, halvings=5)
    assert none is None


def test_armijo_takes_a_step_whose_predicted_ascent_is_below_the_round_off_of_g():
    """Near the optimum the predicted ascent (here 4.9e-20 on g ≈ 14.83, a trace-solver step)
    is below the round-off of g, and the computed change of g is round-off of either sign
    (−1.2e-14 on one CPU's floating-point path, 0 on another).  The step is taken on every
    path; a real drop beyond round-off still is not."""
    from cvxkml.solvers._newton import projected_armijo, round_off

    x, d = np.array([1.0, 2.0]), np.array([1e-10, -1e-10])
    grad = np.array([2.45e-10, 0.0])  # ∇gᵀ(step) = 2.45e-20 at s = 1
    g0 = 14.83
    for drop in (-1.24e-14, 0.0, 3e-15):
        state, step = projected_armijo(lambda z, dg=drop: {"g": g0 + dg, "z": z}, x, d, g0, grad)
        assert state is not None and step == 1.0
    assert round_off(g0) < 1e-12
    state, _ = projected_armijo(lambda z: {"g": g0 - 1e-9, "z": z}, x, d, g0, grad, halvings=3)
    assert state is None
