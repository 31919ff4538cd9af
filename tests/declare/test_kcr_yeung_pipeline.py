"""KCR and the two Yeung closed forms go through the one certified-solve pipeline
(Problem.run_pipeline) and the one solver registry: the built-in solvers are registered
SolverSpecs (cvxkml.adapters.kcr, cvxkml.adapters.yeung), a user's solver registered for the
class with register_fast_solver is dispatched first, and its answer is recomputed and certified
by the family's own formulas — a wrong answer is not certified."""

import inspect

import numpy as np
import pytest

import cvxkml.adapters.kcr as kcr_adapter
import cvxkml.adapters.yeung as yeung_adapter
from cvxkml.declare import register_fast_solver
from cvxkml.declare.kcr import KCR
from cvxkml.declare.registry import unregister
from cvxkml.declare.yeung import EmbeddingWeightProblem, SpectralReweighting
from cvxkml.errors import ConvergenceWarning, InvalidInputError
from cvxkml.kernels import gaussian_kernel
from cvxkml.solvers import Status


def _kcr(seed=0, n=12):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 3)) + y[:, None]
    return KCR(gaussian_kernel(X, gamma=0.5), y, 0.1)


def _reweighting(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(14, 3))
    return SpectralReweighting.from_kernel(X @ X.T + np.eye(14), np.array([[0, 1], [2, 3], [4, 5], [6, 7]]))


def _weights(seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(5, 8))
    return EmbeddingWeightProblem(A @ A.T)


@pytest.fixture
def registered():
    """Register (cls, solver) pairs for one test and unregister them afterwards."""
    names = []

    def add(cls, solver):
        names.append(register_fast_solver(cls, solver).name)

    yield add
    for name in names:
        unregister(name)


def test_the_family_solve_is_the_pipeline_with_registered_specs():
    for cls in (KCR, SpectralReweighting, EmbeddingWeightProblem):
        src = inspect.getsource(cls.solve.__wrapped__)
        assert "run_pipeline" in src and "kernel(" not in src
    assert _kcr().fast_solver().name == "kcr-pdhg" and kcr_adapter.SPEC.warm_start
    assert _reweighting().fast_solver().name == "yeung-reweighting"
    assert _weights().fast_solver().name == "yeung-embedding-weights"
    assert {s.name for s in yeung_adapter.SPECS} == {"yeung-reweighting", "yeung-embedding-weights"}
    sol = _kcr().solve(tol=1e-4)
    assert sol.converged and sol.info["spec"] == "kcr-pdhg" and sol.solver == "pdhg-kcr"
    sol = _reweighting().solve(max_iter=1)  # a closed form: max_iter is taken and ignored
    assert sol.converged and sol.n_iter == 0 and sol.info["spec"] == "yeung-reweighting"
    with pytest.raises(InvalidInputError, match="max_iter"):
        _weights().solve(max_iter=0)


def test_a_user_kcr_solver_is_dispatched_and_certified_by_the_family_formulas(registered):
    calls = []

    def mine(problem, tol, max_iter, request=None):
        calls.append((tol, max_iter, dict(request.options)))
        res = kcr_adapter.solve(problem, tol, max_iter, request)
        res.extra["solver"] = "mine"
        return res

    registered(KCR, mine)
    p = _kcr(1)
    assert p.fast_solver().name == "user:KCR"
    sol = p.solve(tol=1e-5, max_iter=50_000, check_every=5)
    assert calls == [(1e-5, 50_000, {"time_limit": None, "check_every": 5})]
    assert sol.converged and sol.solver == "mine" and sol.info["spec"] == "user:KCR"
    # every number recomputed from Σ = G Gᵀ, h̃ and the dual weights by KCR's formulas
    assert sol.objective == pytest.approx(p.objective(sol.matrix, sol.info["h"]), rel=1e-10)
    assert sol.dual_value == p.dual_value(sol.dual, trace_bound=sol.objective / p.lam)
    assert sol.info["gap"] <= 1e-5


def test_a_wrong_kcr_answer_is_not_certified(registered):
    def liar(problem, tol, max_iter, request=None):
        res = kcr_adapter.solve(problem, tol, max_iter, request)
        res.extra["factor"] = 1.2 * res.extra["factor"]  # Σ 44 % too large …
        res.code = int(Status.OK)  # … and it claims success
        return res

    registered(KCR, liar)
    with pytest.warns(ConvergenceWarning, match="certified relative gap"):
        sol = _kcr(2).solve(tol=1e-5, max_iter=50_000)
    assert not sol.converged and sol.status.startswith("certificate not reproduced")
    assert sol.info["gap"] > 1e-5

    def infeasible(problem, tol, max_iter, request=None):
        res = kcr_adapter.solve(problem, tol, max_iter, request)
        res.extra["h"] = 0.5 * problem.h_min  # h̃ below its bound ε
        return res

    registered(KCR, infeasible)
    with pytest.warns(ConvergenceWarning):
        sol = _kcr(2).solve(tol=1e-5, max_iter=50_000)
    assert not sol.converged and sol.violations[2] > 0


@pytest.mark.parametrize("make", [_reweighting, _weights])
def test_a_user_closed_form_is_dispatched_and_a_wrong_one_is_not_certified(registered, make):
    cls = type(make())
    builtin = {SpectralReweighting: yeung_adapter.solve_reweighting}.get(cls, yeung_adapter.solve_embedding_weights)
    seen = []

    def mine(problem, tol, max_iter, request=None):
        seen.append(max_iter)
        res = builtin(problem, tol, max_iter, request)
        res.extra.update(solver="mine", status="converged")
        return res

    registered(cls, mine)
    p = make()
    assert p.fast_solver().name == f"user:{cls.__name__}"
    sol = p.solve(max_iter=7)
    assert seen == [7] and sol.converged and sol.solver == "mine" and sol.status == "converged"
    x = sol.info["beta"] if cls is SpectralReweighting else sol.matrix
    assert sol.objective == p.objective(x) and sol.dual_value == p.dual_value(sol.dual[0])

    def liar(problem, tol, max_iter, request=None):
        res = builtin(problem, tol, max_iter, request)
        res.matrix = res.matrix * (1 + 1e-3 * np.arange(res.matrix.size))  # off the optimum
        return res

    registered(cls, liar)
    with pytest.warns(ConvergenceWarning, match=f"The closed form of {cls.__name__} lost its certificate"):
        sol = make().solve()
    assert not sol.converged and sol.status == "closed form"
