"""The MKL weight steps go through the one certified-solve pipeline and the one registry:
``RankOneWeightStep.solve()`` / ``MuWeightStep.solve()`` dispatch to the solver registered for
the class (a user's first), and the step certifies whatever comes back with its own formulas
(h at μμᵀ, the violations of (8), the relaxation's Lagrange bound of its exact model)."""

import time
import warnings

import cvxpy as cp
import numpy as np
import pytest

from cvxkml.declare import register_fast_solver, registry
from cvxkml.declare.mkl import CallablePObjective, MuWeightStep, RankOneWeightStep, WeightStepSolution
from cvxkml.errors import ConvergenceWarning
from cvxkml.solvers import FastResult, Status


def linear_step(seed=0, m=3):
    """h(P) = ⟨C, P⟩ on m = 3 kernels: the relaxation (15) with W = 0 is tight (doubly
    non-negative = completely positive for m <= 4), its optimum a vertex e_k e_kᵀ."""
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(m, m))
    C = G @ G.T / (m + 2) + 0.1 * np.eye(m)
    return RankOneWeightStep(CallablePObjective(m, lambda P: cp.sum(cp.multiply(C, P)), lambda P: float(np.sum(C * P))))


def result(P, sweeps=1, **extra):
    return FastResult(np.asarray(P, dtype=float), np.empty(0), np.empty(0), sweeps, 0.0, Status.OK, -1, 0.0, extra)


@pytest.fixture
def user_solver():
    """Register a user solver for RankOneWeightStep (its answer set by the test), removed after."""
    calls = []

    def solver(problem, tol, max_iter):
        calls.append((problem, tol, max_iter))
        return solver.answer(problem)

    spec = register_fast_solver(RankOneWeightStep, solver)
    try:
        yield solver, calls, spec
    finally:
        registry.unregister(spec.name)
    assert spec.name not in {s.name for s in registry.registered()}


def test_built_in_solvers_are_registered_specs():
    step = linear_step()
    assert step.fast_solver().name == "mkl-convex-iteration"
    assert MuWeightStep(lambda mu: cp.sum_squares(mu), m=3).fast_solver().name == "mkl-mu-conic"
    sol = step.solve()
    assert sol.converged and sol.info["spec"] == "mkl-convex-iteration"
    assert sol.solver == "convex-iteration-full"


def test_user_solver_is_dispatched_and_certified_by_the_step(user_solver):
    """The user's exact answer (μ of the tight relaxation) is certified by the step's own bound; its
    claimed extras are not read."""
    solver, calls, spec = user_solver
    step = linear_step()
    ref = step.solve_reference()
    assert ref.info["rank_one"]  # tight: μμᵀ of the relaxation's P is the optimum
    solver.answer = lambda problem: result(np.outer(ref.mu, ref.mu), lower_bound=1e9)  # a claimed bound: ignored
    sol = step.solve(tol=1e-6, max_iter=7)
    assert len(calls) == 1 and calls[0][0] is step and calls[0][2] == 7
    assert isinstance(sol, WeightStepSolution) and sol.info["spec"] == spec.name and sol.solver == spec.name
    assert sol.converged and sol.status == "converged" and sol.rank_one
    np.testing.assert_allclose(sol.mu, ref.mu, atol=1e-12)
    assert sol.objective == step.objective(np.outer(sol.mu, sol.mu))
    assert sol.dual_value == pytest.approx(ref.dual_value, rel=1e-9)  # the step's, not the claim
    assert "exact relaxation" in sol.info["certificate"]


def test_a_wrong_user_answer_is_not_certified(user_solver):
    """A rank-one point that is not optimal (the worst vertex), and one that is not rank one:
    recomputed, uncertified, one ConvergenceWarning each."""
    solver, _, _ = user_solver
    step = linear_step(seed=1)
    vals = [step.objective(np.diag(e)) for e in np.eye(3)]
    worst = int(np.argmax(vals))
    solver.answer = lambda problem: result(np.diag(np.eye(3)[worst]), lower_bound=vals[worst])
    with pytest.warns(ConvergenceWarning, match="not certified optimal"):
        sol = step.solve(tol=1e-6)
    assert not sol.converged and sol.status == "rank one, not certified"
    assert sol.objective == pytest.approx(vals[worst]) and sol.gap > 1e-3
    solver.answer = lambda problem: result(np.full((3, 3), 1.0 / 9.0) + 0.05 * np.eye(3))
    with pytest.warns(ConvergenceWarning, match="did not reach a rank-one P"):
        sol = step.solve()
    assert not sol.converged and sol.status == "rank one not reached" and not sol.rank_one


def test_user_solver_breaking_the_protocol_is_refused(user_solver):
    from cvxkml.errors import InvalidInputError

    solver, _, _ = user_solver
    solver.answer = lambda problem: np.eye(3)
    with pytest.raises(InvalidInputError, match="broke the fast-solver protocol"):
        linear_step().solve()


def test_unregistered_user_solver_gives_back_the_built_in():
    step = linear_step()
    spec = register_fast_solver(RankOneWeightStep, lambda problem, tol, max_iter: result(np.eye(3) / 3))
    try:
        assert step.fast_solver().name == spec.name
    finally:
        registry.unregister(spec.name)
    assert step.fast_solver().name == "mkl-convex-iteration"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        t0 = time.perf_counter()
        assert step.solve().converged
        assert time.perf_counter() - t0 < 60


def test_a_step_subclass_with_its_own_model_is_refused_by_the_built_in_and_answered_by_its_solver():
    """A subclass that redefines the model (here ``objective`` shifted by a constant) is not
    the built-in solver's problem: ``solve()`` refuses it with the guard's message (which
    method changed, what to do) — through the registry, as every family does — and a solver
    registered for the subclass answers it, read back through the subclass's formulas: the
    objective is the shifted one, and since the subclass kept the parent's lower bound the
    certificate does not vouch for it (one ConvergenceWarning, ``converged=False``)."""
    from cvxkml.errors import InvalidInputError

    class Shifted(RankOneWeightStep):
        def objective(self, P):
            return super().objective(P) + 1.0

    base = linear_step(seed=2)
    step = Shifted(base.h)
    with pytest.raises(InvalidInputError, match=r"Shifted redefines objective\(\) but inherits solve\(\)"):
        step.solve()
    ref = base.solve_reference()
    spec = register_fast_solver(Shifted, lambda problem, tol, max_iter: result(np.outer(ref.mu, ref.mu)))
    try:
        with pytest.warns(ConvergenceWarning, match="not certified optimal"):
            sol = step.solve(tol=1e-6)
    finally:
        registry.unregister(spec.name)
    assert sol.info["spec"] == spec.name and not sol.converged
    assert sol.objective == pytest.approx(ref.objective + 1.0, abs=1e-9)
