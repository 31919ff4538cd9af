"""The gallery tutorials say what they show: each script's definitions are imported (as
tests/declare/test_user_families.py does with examples/add_a_constraint_family.py) and the
properties the tutorial prints are asserted — the user regularizer with auxiliary variables
solves exact and fast, certified, and a planted conjugate mistake is caught; the registered
solver is dispatched, certified by the problem, and a lying one is not; validate_answer and
cross_check pass a correct solver and catch each planted bug; the user regularizer's
estimator fits in GridSearchCV are certified."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from budget import examples
from examples_loader import load
from hypothesis import given, settings
from hypothesis import strategies as st

from cvxkml.declare import register_fast_solver, registry
from cvxkml.errors import ConvergenceWarning
from cvxkml.testing import (
    assert_matches_reference,
    check_regularizer,
    cross_check,
    reference_or_discard,
    solve_fast_honestly,
    validate_answer,
    variant_instance,
)

EXAMPLES = Path(__file__).parents[1] / "examples"


def _load(name):
    return load(name)


regularizer_tut = _load("add_a_regularizer")
solver_tut = _load("register_a_fast_solver")
validate_tut = _load("validate_your_solver")
grid_tut = _load("variant_in_gridsearch")


# --------------------------------------------------------------------------- add a regularizer
def test_alpha_power_passes_check_regularizer():
    report = check_regularizer(regularizer_tut.AlphaPower())
    assert report["cvx"] <= 1e-6 and report["fenchel_young"] <= 1e-6
    assert report["conj_grad"] is not None and report["conj_grad"] <= 1e-4
    assert report["conj_hess"] is not None and report["conj_hess"] <= 1e-4


def test_alpha_power_cvx_brings_two_lmis():
    import cvxpy as cp

    expr, cons = regularizer_tut.AlphaPower().cvx(cp.Variable((3, 3), symmetric=True))
    assert expr.is_convex() and len(cons) == 2


def test_planted_conjugate_mistake_is_caught():
    line = regularizer_tut.planted_mistake()
    assert line is not None and "Fenchel–Young fails" in line and "\n" not in line


def test_alpha_power_exact_and_fast_agree_certified():
    problem = regularizer_tut.alpha_instance(0, n=12)
    assert problem.fast_solver().name == "dual-newton"
    exact = problem.solve_reference()
    fast = solve_fast_honestly(problem, tol=1e-10)
    assert fast.converged and exact.status == "optimal"
    report = assert_matches_reference(problem, fast, exact, rtol=1e-7)
    assert report["rel_diff"] <= 1e-7


def test_alpha_power_exact_limit_unknown():
    problem = regularizer_tut.alpha_instance(0, n=8)
    assert problem.exact_limit() is None
    assert problem.user_parts() == ["regularizer AlphaPower"]


# --------------------------------------------------------------------------- register a fast solver
@pytest.fixture
def registered():
    """dual_ascent registered for the tutorial's AlphaPower, unregistered afterwards."""
    spec = register_fast_solver(solver_tut.AlphaPower, solver_tut.dual_ascent)
    try:
        yield spec
    finally:
        registry.unregister(spec.name)


def test_registered_solver_is_dispatched_and_certified_by_the_problem(registered):
    problem = solver_tut.alpha_instance(0, n=12)
    assert problem.fast_solver().name == registered.name == "user:AlphaPower"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        mine = problem.solve(tol=1e-9, max_iter=20_000)
    assert mine.solver.startswith("dual-ascent") and mine.info["spec"] == "user:AlphaPower"
    assert mine.converged
    # every number is the problem's own, recomputed from the matrix and the multipliers
    assert mine.objective == problem.objective(mine.matrix)
    assert mine.dual_value == problem.dual_value(mine.dual)
    assert abs(mine.gap) <= 1e-6 * max(1.0, abs(mine.objective))
    newton = problem.solve(tol=1e-10, method="dual")
    assert newton.solver.startswith("dual-newton")
    assert abs(mine.objective - newton.objective) <= 1e-7 * abs(newton.objective)
    validate_answer(problem, mine)


def test_lying_solver_is_not_certified(registered):
    register_fast_solver(solver_tut.AlphaPower, solver_tut.lazy_solver)  # replaces dual_ascent
    problem = solver_tut.alpha_instance(0, n=12)
    assert problem.fast_solver().solve is solver_tut.lazy_solver
    with pytest.warns(ConvergenceWarning, match="certificate did not"):
        lazy = problem.solve(tol=1e-9)
    assert not lazy.converged and lazy.status == "not certified"
    assert lazy.gap > 1e-3 * abs(lazy.objective)


def test_unregister_restores_the_generic_solver():
    spec = register_fast_solver(solver_tut.AlphaPower, solver_tut.dual_ascent)
    problem = solver_tut.alpha_instance(0, n=8)
    assert problem.fast_solver().name == "user:AlphaPower"
    registry.unregister(spec.name)
    assert problem.fast_solver().name == "dual-newton"


@settings(max_examples=examples(5))
@given(seed=st.integers(0, 2**16))
def test_registered_solver_matches_the_exact_model(seed):
    """The user's solver, dispatched by solve(), against the exact model with the two LMIs
    (kernel space; the metric space's singular optima hit the library bug of the next test)."""
    spec = register_fast_solver(solver_tut.AlphaPower, solver_tut.dual_ascent)
    try:
        problem = variant_instance(seed, n=8, m=6, regularizer=solver_tut.AlphaPower(), kernel=True, hard_pairs=False)
        exact = reference_or_discard(problem)
        fast = solve_fast_honestly(problem, tol=1e-10, max_iter=50_000)
        assert fast.info["spec"] == spec.name and fast.converged
        assert_matches_reference(problem, fast, exact, rtol=1e-6)
    finally:
        registry.unregister(spec.name)


def test_exact_model_at_a_singular_optimum():
    problem = variant_instance(1, n=8, m=6, regularizer=solver_tut.AlphaPower(), kernel=False, hard_pairs=False)
    fast = problem.solve(tol=1e-10)
    lam = np.linalg.eigvalsh(problem.whiten(fast.matrix))
    assert fast.converged and lam[0] <= 1e-9 * lam[-1]  # the optimum is singular, and certified
    exact = problem.solve_reference()  # the conic X̂ (eigenvalues of −1e-8) is projected onto the PSD cone
    assert abs(exact.objective - fast.objective) <= 1e-6 * abs(fast.objective)
    assert np.linalg.eigvalsh(problem.whiten(exact.matrix))[0] >= -1e-12 * lam[-1]


# --------------------------------------------------------------------------- validate your solver
def test_correct_solver_passes_validate_answer():
    problem = validate_tut.make(0)
    sol = validate_answer(problem, validate_tut.my_solver(problem))
    assert sol.converged and abs(sol.gap) <= 1e-6 * max(1.0, abs(sol.objective))
    assert validate_tut.verdict(problem, validate_tut.my_solver) == "passes"


@pytest.mark.parametrize("name", list(validate_tut.BUGS))
def test_planted_bug_claiming_converged_is_caught_without_a_reference(name):
    problem = validate_tut.make(0)
    line = validate_tut.verdict(problem, validate_tut.claiming_converged(validate_tut.BUGS[name]))
    assert line.startswith("The solver says converged=True but its recomputed certificate does not certify it")
    assert "\n" not in line


@pytest.mark.parametrize("name", list(validate_tut.BUGS))
def test_planted_bug_honest_but_wrong_is_caught_by_cross_check(name):
    tally = cross_check(validate_tut.make, n_draws=2, solver=validate_tut.BUGS[name])
    assert tally["draws"] == 2 and tally["checked"] == 0
    assert len(tally["failures"]) == 2 - tally["discarded"] >= 1
    assert all(msg.startswith("AssertionError") for _, msg in tally["failures"])


def test_correct_solver_passes_cross_check():
    tally = cross_check(validate_tut.make, n_draws=4, solver=validate_tut.my_solver)
    assert not tally["failures"] and tally["checked"] + tally["discarded"] == 4 and tally["checked"] >= 3
    assert tally["max_gap"] <= 1e-6 and tally["max_distance"] <= 1e-3


# --------------------------------------------------------------------------- GridSearchCV
def test_gridsearch_fits_are_certified():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        grid = grid_tut.search(X, y, Cs=(0.1, 10.0), n_pairs=30)
    res = grid.cv_results_
    assert all(np.all(res[f"split{f}_test_certified"] == 1.0) for f in range(3))
    best = grid.best_estimator_.named_steps["learn"]
    assert best.converged_ and isinstance(best.regularizer, grid_tut.AlphaPower)
    assert best.solution_.solver.startswith("dual-newton")
    assert grid.best_params_["learn__C"] in (0.1, 10.0)
    assert grid.best_score_ >= 0.9
