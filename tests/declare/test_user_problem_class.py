"""A user's problem class (Xing et al.'s MMC, examples/add_a_problem_class.py) with no
solve() of its own: register_fast_solver takes the class, Problem.solve() dispatches,
validates, recomputes, certifies and warns; Problem.solve_reference() reads the exact model
back through the class's read_cvxpy and certifies it by the class's own dual_value."""

import numpy as np
import pytest
from budget import examples
from examples_loader import load
from hypothesis import given, settings
from hypothesis import strategies as st

from cvxkml.declare import Problem, register_fast_solver
from cvxkml.declare.registry import unregister
from cvxkml.errors import ConvergenceWarning, InvalidInputError
from cvxkml.solvers import FastResult, Status
from cvxkml.testing import assert_matches_reference, reference_or_discard, validate_answer

_tutorial = load("add_a_problem_class")
MMC, random_mmc, mmc_solve = _tutorial.MMC, _tutorial.random_mmc, _tutorial.mmc_solve


def test_the_class_defines_no_solve_and_inherits_the_pipeline():
    # the class's source defines neither: both are Problem's (solve wrapped for verbose=)
    assert getattr(MMC.solve, "__wrapped__", MMC.solve) is Problem.__dict__["solve"]
    assert "solve_reference" not in MMC.__dict__
    problem = random_mmc(0)
    assert problem.fast_solver().name == "user:MMC"
    sol = problem.solve(tol=1e-8, max_iter=20_000)
    assert sol.converged and sol.status == "converged" and sol.solver == "mmc-apg"
    # every number recomputed from W and w by the class's formulas
    assert sol.objective == pytest.approx(problem.objective(sol.matrix), rel=0, abs=0)
    assert sol.dual_value == pytest.approx(problem.dual_value(sol.dual), rel=0, abs=0)
    assert abs(sol.gap) <= 1e-6 * abs(sol.objective)
    validate_answer(problem, sol)


@settings(max_examples=examples(5), deadline=None)
@given(seed=st.integers(0, 2**20), d=st.integers(2, 6))
def test_fast_matches_the_exact_model_through_both_certificates(seed, d):
    problem = random_mmc(seed, n=30, d=d, m=20)
    exact = reference_or_discard(problem)
    fast = problem.solve(tol=1e-9, max_iter=50_000)
    assert fast.converged
    assert_matches_reference(problem, fast, exact, rtol=1e-6, viol=1e-6)


def test_an_unconverged_solve_warns_and_is_not_converged():
    problem = random_mmc(1)
    with pytest.warns(ConvergenceWarning, match=r"MMC.solve \(user:MMC, max_iter reached\) is not certified"):
        sol = problem.solve(tol=1e-12, max_iter=1, gap_tol=1e-12)
    assert not sol.converged and sol.status == "max_iter reached"


def test_callback_and_warm_start_reach_the_solver_or_are_refused():
    problem = random_mmc(2)
    seen = []
    with pytest.warns(ConvergenceWarning):
        sol = problem.solve(tol=1e-14, max_iter=10_000, gap_tol=1e-14, callback=lambda rec: seen.append(rec) or True)
    assert seen and sol.status == "stopped by callback" and not sol.converged
    with pytest.raises(InvalidInputError, match=r"takes no warm start; solve without warm_start"):
        problem.solve(warm_start=np.ones(3))


def test_a_lying_solver_is_not_certified():
    """A solver that claims OK with W 1 % too large and the true duals: the pipeline's own
    certificate refutes it (gap 1e-2 relative), whatever the claim."""

    class Liar(MMC):
        pass

    def lie(problem, tol, max_iter):
        res = mmc_solve(problem, 1e-8, 5_000)
        res.matrix, res.code = 1.01 * res.matrix, int(Status.OK)  # and it claims success
        return res

    spec = register_fast_solver(Liar, lie)
    try:
        p = random_mmc(3)
        liar = Liar.__new__(Liar)
        liar.__dict__.update(p.__dict__)
        with pytest.warns(ConvergenceWarning, match="not certified"):
            sol = liar.solve()
        assert not sol.converged and sol.status == "not certified"
        assert sol.info["certificate"]["relative_gap"] == pytest.approx(1 - 1 / 1.01, rel=1e-3)
    finally:
        unregister(spec.name)


def test_protocol_breaches_and_missing_registrations_are_typed_errors():
    class Nobody(MMC):
        pass

    p = random_mmc(0)
    nobody = Nobody.__new__(Nobody)
    nobody.__dict__.update(p.__dict__)
    # a subclass of a registered class is taken by its parent's solver (registered for MMC)
    assert nobody.fast_solver().name == "user:MMC"

    class Bare(Problem):
        def objective(self, W):
            return 0.0

        def violations(self, W):
            return np.zeros(0)

    with pytest.raises(InvalidInputError, match=r"No fast solver takes Bare .*register_fast_solver\(Bare, solver\)"):
        Bare().solve()

    spec = register_fast_solver(Bare, lambda problem, tol, max_iter: np.eye(2))
    try:
        with pytest.raises(InvalidInputError, match=r"broke the fast-solver protocol: returned ndarray"):
            Bare().solve()
    finally:
        unregister(spec.name)

    def nan_solver(problem, tol, max_iter):
        return FastResult(np.full((2, 2), np.nan), np.zeros(1), np.zeros(0), 1, 0.0, int(Status.OK), -1, 0.0)

    spec = register_fast_solver(Bare, nan_solver)
    try:
        with pytest.raises(Exception, match=r"(?i)nan|finite"):
            Bare().solve()
    finally:
        unregister(spec.name)
    with pytest.raises(InvalidInputError, match=r"needs a Regularizer subclass or a Problem subclass"):
        register_fast_solver(object, mmc_solve)


def test_exact_answer_is_certified_by_the_class_dual_or_says_why_not():
    problem = random_mmc(0)
    exact = problem.solve_reference()
    cert = exact.info["certificate"]
    assert exact.converged == (abs(cert["relative_gap"]) <= problem.inaccurate_rtol)
    if not exact.converged:
        assert "certificate_note" in exact.info
    assert problem.exact_limit() is None  # nobody measured MMC: unknown, never a promise


def test_a_user_class_registered_as_a_contract_case_gets_the_builtins_checks():
    """register_contract_case puts MMC in the same loop as cvxkml's own families; the loop's
    check (check_contract) passes on it with the inherited solve() and solve_reference()."""
    from cvxkml.testing import UntrustedReference, check_contract, contract_cases, register_contract_case
    from cvxkml.testing._contract import _CONTRACT_CASES

    register_contract_case(MMC, lambda seed: random_mmc(seed, n=30, d=4, m=20), solve_kw={"tol": 1e-9})
    try:
        case = contract_cases()[MMC]
        checked = 0
        for seed in range(4):
            try:
                out = check_contract(case["factory"](seed), case["solve_kw"], case["rtol"], case["fast"])
            except UntrustedReference:
                continue  # the harness's rule: an untrusted exact answer is discarded, not compared
            checked += 1
            assert out["rel_diff"] <= 1e-6 and abs(out["fast_gap"]) <= 1e-6
        assert checked >= 2
    finally:
        _CONTRACT_CASES.pop(MMC, None)  # the other tests' loops stay cvxkml's own


def test_an_answer_of_the_wrong_shape_is_refused_by_the_pipeline():
    """A 1 × 1 W broadcasts through MMC's formulas; the pipeline checks primal_shape()."""
    from cvxkml.errors import SolverError

    class Small(MMC):
        pass

    def scalar(problem, tol, max_iter):
        res = mmc_solve(problem, 1e-8, 5_000)
        res.matrix = np.array([[float(np.trace(res.matrix))]])
        return res

    spec = register_fast_solver(Small, scalar)
    try:
        p = random_mmc(0)
        small = Small.__new__(Small)
        small.__dict__.update(p.__dict__)
        with pytest.raises(SolverError, match=r"has shape \(1, 1\), but this problem's is \(5, 5\)"):
            small.solve()
    finally:
        unregister(spec.name)


def test_two_classes_of_one_name_keep_their_own_registrations():
    """Registering a class again replaces its spec; another class of the same name (a second
    tutorial's, a reloaded module's) gets its own and does not unregister the first."""

    def make():
        class MMC2(MMC):
            pass

        return MMC2

    first, second = make(), make()
    a = register_fast_solver(first, mmc_solve)
    b = register_fast_solver(second, mmc_solve)
    again = register_fast_solver(first, mmc_solve)
    try:
        assert a.name == again.name != b.name and b.name == a.name + "#2"
        p = random_mmc(0)
        for cls, name in ((first, a.name), (second, b.name)):
            inst = cls.__new__(cls)
            inst.__dict__.update(p.__dict__)
            assert inst.fast_solver().name == name
    finally:
        unregister(a.name)
        unregister(b.name)


def test_a_user_class_asks_for_more_attempts_and_a_silent_solver_still_reports_each():
    """The pipeline's attempt hooks are open to a user's class: ``next_attempt`` retries the
    solver at a tighter tolerance within what is left of ``max_iter`` (the way the built-in
    spectral family tightens the papers' dual-change rule), ``n_iter`` counts every attempt,
    and a callback the solver never calls is called once per attempt with the recomputed
    certificate."""
    from cvxkml.declare._pipeline import Attempt

    class Retrying(MMC):
        def next_attempt(self, history, budget):
            last = history[-1]
            return None if last.tol <= 1e-12 else Attempt(last.spec, last.tol * 1e-2, budget, last.request)

    seen = []
    # the lambda hides mmc_solve's callback parameter: a solver that never calls it
    spec = register_fast_solver(Retrying, lambda p, tol, max_iter: mmc_solve(p, tol, max_iter))
    try:
        with pytest.MonkeyPatch.context() as mp:  # the tutorial's generator, building a Retrying
            mp.setattr(_tutorial, "MMC", Retrying)
            problem = random_mmc(3)
        sol = problem.solve(tol=0.5, max_iter=20_000, gap_tol=1e-6, viol_tol=1e-6, callback=seen.append)
    finally:
        unregister(spec.name)
    assert type(problem) is Retrying
    assert sol.converged and sol.info["attempts"] == len(seen) >= 2 and seen[-1]["certified"]
    assert [r["certified"] for r in seen[:-1]] == [False] * (len(seen) - 1)
    assert seen[-1]["iteration"] == sol.n_iter and sol.info["final_tol"] < 0.5
    validate_answer(problem, sol)
