"""The public testing toolkit (cvxkml.testing) must itself be able to fail: each check is
shown catching the mistake it exists for."""

import os
import warnings

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from cvxkml.declare import Frobenius, LogDet, TraceNorm, VonNeumann
from cvxkml.errors import ConvergenceWarning, InfeasibleError, SolverError
from cvxkml.solution import Solution
from cvxkml.testing import (
    UntrustedReference,
    assert_matches_reference,
    check_regularizer,
    feasible_instance,
    problems,
    reference_or_discard,
    solve_fast_honestly,
    trusted_reference,
)


def _sol(objective, dual_value, status="optimal", converged=True, viol=0.0):
    """A scripted answer that is consistent with :class:`_Fake`'s formulas: the matrix
    [[a, v], [v, a]] has objective tr = 2a, violation v, and the dual [y] has dual value y."""
    a = objective / 2
    return Solution(
        matrix=np.array([[a, viol], [viol, a]]),
        objective=objective,
        dual=None if dual_value is None else np.array([dual_value]),
        slack=None,
        violations=np.array([viol]),
        n_iter=1,
        converged=converged,
        time=0.0,
        status=status,
        solver="fake",
        dual_value=dual_value,
    )


class _Fake:
    """A problem whose exact and fast answers are scripted."""

    def __init__(self, answers, fast=None, warn=False):
        self.answers, self.calls, self.fast, self.warn = list(answers), [], fast, warn

    def default_solver(self):
        return "CLARABEL"

    def solve_reference(self, solver=None, eps=None, accept_inaccurate=False):
        self.calls.append((solver, eps))
        a = self.answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a

    def objective(self, M):
        return float(np.trace(M))

    def violations(self, M):
        return np.array([max(0.0, float(M[0, 1]))])

    def dual_value(self, lam):
        return float(lam[0])

    def solve(self, **kw):
        if self.warn:
            warnings.warn("stopped early", ConvergenceWarning, stacklevel=2)
        return self.fast


@pytest.mark.parametrize("reg", [LogDet(), VonNeumann(), Frobenius(), TraceNorm(0.5)], ids=repr)
def test_check_regularizer_accepts_the_library_regularizers(reg):
    errs = check_regularizer(reg)
    assert errs["cvx"] <= 1e-10 and errs["fenchel_young"] <= 1e-10
    assert errs["conj_grad"] <= 1e-4


def test_check_regularizer_catches_user_mistakes():
    class WrongConj(LogDet):  # conjugate off by a constant
        def conj_s(self, mu):
            return super().conj_s(mu) - 0.1

    class WrongGrad(LogDet):  # maximizer of the wrong conjugate
        def conj_grad_s(self, mu):
            return 1.0 / (1.0 - mu) ** 2 * np.ones_like(mu)

    class WrongCvx(Frobenius):  # CVXPY form of another function
        def cvx(self, X):
            import cvxpy as cp

            return cp.sum_squares(X)

    with pytest.raises(AssertionError, match="Fenchel–Young"):
        check_regularizer(WrongConj())
    with pytest.raises(AssertionError, match="does not attain"):
        check_regularizer(WrongGrad())
    with pytest.raises(AssertionError, match="cvx"):
        check_regularizer(WrongCvx())


def test_trusted_reference_retries_and_records_attempts():
    good = _sol(1.0, 1.0 - 1e-9)
    p = _Fake([_sol(1.0, 0.99, status="optimal_inaccurate"), good])
    assert trusted_reference(p) is good
    assert p.calls == [("CLARABEL", None), ("SCS", 1e-10)]
    assert "optimal_inaccurate" in good.info["reference_attempts"][0]


@pytest.mark.parametrize(
    "answers",
    [
        [_sol(1.0, 0.9)] * 3,  # loose certificate
        [_sol(1.0, None)] * 3,  # no certificate
        [_sol(1.0, 1.0, viol=1e-3)] * 3,  # infeasible point
        [SolverError("x"), InfeasibleError("y"), _sol(1.0, 1.0, status="optimal_inaccurate")],
    ],
)
def test_untrusted_reference_is_never_returned(answers):
    with pytest.raises(UntrustedReference, match="No trustworthy"):
        trusted_reference(_Fake(answers))


def test_untrusted_reference_keep_draw_returns_none_and_is_counted(monkeypatch):
    """``keep_draw=True``: the untrusted answer is not returned and not used, the draw goes
    on (None), and it is counted like a discard.  The count this test makes is taken back
    at its end, so that the run's tally of discarded draws holds real draws only."""
    from cvxkml.testing import _reference, discards

    test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
    before = discards().get(test, 0)
    monkeypatch.setitem(_reference._DISCARDS, test, before)  # restored at teardown
    assert reference_or_discard(_Fake([_sol(1.0, 0.9)] * 3), keep_draw=True) is None
    assert discards()[test] == before + 1
    ok = _sol(1.0, 1.0)
    assert reference_or_discard(_Fake([ok]), keep_draw=True) is ok


def test_reference_infeasible_only_when_every_solver_says_so():
    with pytest.raises(InfeasibleError):
        trusted_reference(_Fake([InfeasibleError("a"), InfeasibleError("b"), InfeasibleError("c")]))
    ok = _sol(1.0, 1.0)
    assert trusted_reference(_Fake([InfeasibleError("a"), ok])) is ok


def test_certificate_optional_for_models_without_one():
    sol = _sol(1.0, None)
    assert trusted_reference(_Fake([sol]), require_certificate=False) is sol


def test_solve_fast_honestly_catches_dishonest_solvers():
    with pytest.raises(AssertionError, match="Negative certificate"):
        solve_fast_honestly(_Fake([], fast=_sol(1.0, 1.1)))  # converged below the bound
    with pytest.raises(AssertionError, match="must warn"):
        solve_fast_honestly(_Fake([], fast=_sol(1.0, 0.5, converged=False)))
    with pytest.raises(AssertionError, match="must warn"):
        solve_fast_honestly(_Fake([], fast=_sol(1.0, 1.0), warn=True))
    assert solve_fast_honestly(_Fake([], fast=_sol(1.0, 1.0 - 1e-9))).converged


def test_assert_matches_reference_catches_disagreement():
    p = _Fake([])
    exact = _sol(1.0, 1.0 - 1e-9)
    assert_matches_reference(p, _sol(1.0 + 1e-8, 1.0 - 1e-8), exact)
    with pytest.raises(AssertionError, match="weak duality"):  # below the exact lower bound
        assert_matches_reference(p, _sol(0.9, 0.9 - 1e-9), exact)
    with pytest.raises(AssertionError, match="certificate does not certify|best lower bound"):  # above by 1e-3
        assert_matches_reference(p, _sol(1.001, 1.0), exact)
    with pytest.raises(AssertionError, match="infeasible|relative violation 0.001"):
        assert_matches_reference(p, _sol(1.0, 1.0, viol=1e-3), exact)


@settings(max_examples=examples(10))
@given(problem=problems("itml", max_n=8, max_m=8))
def test_problems_strategy_gives_solvable_instances(problem):
    """The strategy's draws are what the contract needs: a certified fast solve that
    matches a trusted reference (the 10-line recipe of the module docstring)."""
    exact = reference_or_discard(problem)
    fast = solve_fast_honestly(problem, tol=1e-12, max_iter=20_000)  # warns iff not converged
    if not fast.converged:
        # feasible but ill-conditioned hard draws exist (fuzz seed 5705: four forest pairs in
        # R^4, optimum 2.3e4, Bregman still 5.0 off after 20 000 sweeps): honest, not comparable
        event("fast solve not certified within 20 000 sweeps")
        assume(False)
    assert_matches_reference(problem, fast, exact)


def test_problems_strategy_validates_arguments():
    with pytest.raises(ValueError, match="family"):
        problems("nope")
    with pytest.raises(ValueError, match="max_n"):
        problems("itml", max_n=2)


@pytest.mark.parametrize("family", ["feasible-metric", "feasible-kernel"])
@pytest.mark.parametrize("reg", [LogDet(), VonNeumann(), Frobenius()], ids=lambda r: r.name)
@settings(max_examples=examples(8), deadline=None)
@given(data=st.data())
def test_feasible_instances_of_every_constraint_family(family, reg, data):
    """problems('feasible-*'): any mix of pairs, triplets, similarity and linear constraints,
    hard or hinge, Gaussian or rank-deficient K0 — feasible by construction (the exact model
    never reports infeasible), and the fast solve matches the trusted reference."""
    problem = data.draw(problems(family, regularizer=reg, max_n=9, max_m=5))
    fast = solve_fast_honestly(problem, tol=1e-10, max_iter=5000)
    exact = reference_or_discard(problem)  # InfeasibleError would fail here
    assert fast.converged, fast
    event(f"active {int(np.sum(fast.dual > 1e-8 * max(1.0, fast.dual.max())))} of {fast.dual.size}")
    assert_matches_reference(problem, fast, exact, rtol=1e-6)


def test_feasible_instance_rejects_unknown_families():
    with pytest.raises(ValueError, match="non-empty subset"):
        feasible_instance(0, 6, 3, ("pairs", "quadruplets"))
    with pytest.raises(ValueError, match="non-empty subset"):
        feasible_instance(0, 6, 3, ())
