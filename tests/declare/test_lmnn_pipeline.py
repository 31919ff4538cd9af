"""LMNN through the one certified-solve pipeline: LMNNProblem.solve() validates
its arguments and runs Problem.run_pipeline, which dispatches to the first registered solver —
the built-in ``pdhg-lmnn`` (cvxkml.adapters.lmnn), or a user's solver registered with
``register_fast_solver(LMNNProblem, solver)``, tried first — and certifies whatever it returns by
the family's own formulas (F from X̂, the Lagrange bound from α), never by its claims."""

import warnings

import numpy as np
import pytest

import cvxkml.adapters.lmnn as adapter
from cvxkml.declare import register_fast_solver
from cvxkml.declare.lmnn import LMNNProblem
from cvxkml.declare.registry import registered, unregister
from cvxkml.errors import ConvergenceWarning, InvalidInputError, SolverError
from cvxkml.solvers import FastResult, Status
from cvxkml.solvers.lmnn import lmnn_pdhg
from cvxkml.testing import validate_answer

TOL = 1e-6


def problem(seed=4):
    rng = np.random.default_rng(seed)
    y = np.arange(14) % 2
    rng.shuffle(y)
    X = rng.normal(size=(14, 3)) + 0.8 * y[:, None]
    return LMNNProblem.linear(X, y, k=2)


@pytest.fixture
def user_solver():
    """Register a solver for LMNNProblem (its FastResult transformed by ``edit``), and remove it."""
    specs = []

    def register(edit=lambda res: res):
        calls = []

        def mine(prob, tol, max_iter):
            calls.append(max_iter)
            res = lmnn_pdhg(prob.U, prob.triplets, prob.gamma, tol=tol, max_iter=max_iter)
            res.extra["solver"] = "mine"
            return edit(res)

        specs.append(register_fast_solver(LMNNProblem, mine))
        return calls

    yield register
    for spec in specs:
        unregister(spec.name)
    assert not any(s.name.startswith("user:LMNNProblem") for s in registered())


def test_the_built_in_solver_is_a_registered_spec_and_solve_runs_the_pipeline():
    prob = problem()
    spec = prob.fast_solver()
    assert spec is adapter.SPEC and spec.name == "pdhg-lmnn" and spec.warm_start and not spec.user
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        sol = prob.solve(tol=TOL)
    assert sol.converged and sol.status == "converged" and sol.solver == "pdhg-lmnn"
    assert sol.info["spec"] == "pdhg-lmnn" and sol.info["gap_tol"] == TOL
    # every number is the problem's own evaluation of the returned X̂ and α
    X = sol.info["X"]
    assert sol.objective == pytest.approx(prob.objective_whitened(X), rel=1e-13)
    assert sol.dual_value <= prob.dual_value(sol.dual, objective_bound=sol.objective)
    assert sol.objective - sol.dual_value <= TOL * max(1.0, sol.objective)
    validate_answer(prob, sol)


def test_a_user_solver_is_dispatched_first_and_certified_by_the_family(user_solver):
    prob = problem()
    calls = user_solver()
    assert prob.fast_solver().name == "user:LMNNProblem"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        sol = prob.solve(tol=TOL, max_iter=5000)
    assert calls == [5000]
    assert sol.converged and sol.status == "converged" and sol.solver == "mine"
    assert sol.info["spec"] == "user:LMNNProblem"
    X = sol.info["X"]
    assert sol.objective == pytest.approx(prob.objective_whitened(X), rel=1e-13)
    assert sol.dual_value <= prob.dual_value(sol.dual, objective_bound=sol.objective)
    validate_answer(prob, sol)
    # a solver without a warm_start keyword is told so
    with pytest.raises(InvalidInputError, match="takes no warm start"):
        prob.solve(tol=TOL, warm_start=sol)


def test_a_wrong_answer_of_a_user_solver_is_not_certified(user_solver):
    prob = problem()
    truth = prob.solve(tol=TOL)

    def lie(res):  # a matrix off the optimum, with the optimum's numbers and a "converged" claim
        return FastResult(
            matrix=1.3 * res.matrix,
            lam=res.lam,
            xi=res.xi,
            sweeps=res.sweeps,
            stop_value=0.0,
            code=int(Status.OK),
            bad_index=-1,
            time=res.time,
            extra={**res.extra, "objective": truth.objective, "dual_value": truth.objective},
        )

    user_solver(lie)
    with pytest.warns(ConvergenceWarning, match="claimed convergence, but the certificate recomputed") as rec:
        sol = prob.solve(tol=TOL)
    assert sum(issubclass(w.category, ConvergenceWarning) for w in rec) == 1
    assert not sol.converged and sol.status == "not certified"
    # the numbers are the problem's, not the claims
    assert sol.objective == pytest.approx(prob.objective_whitened(sol.info["X"]), rel=1e-13)
    assert sol.objective > truth.objective * (1 + 1e-3)
    assert sol.dual_value <= prob.dual_value(sol.dual, objective_bound=sol.objective) < sol.objective


def test_a_user_solver_returning_a_bad_shape_is_refused(user_solver):
    prob = problem()
    user_solver(lambda res: FastResult(**{**res.__dict__, "lam": res.lam[:-1]}))
    with pytest.raises(SolverError, match="one finite multiplier per triplet"):
        prob.solve(tol=TOL)
