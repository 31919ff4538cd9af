"""The generic certified dual solver (cvxkml.solvers.dual_newton) and hinge slack
(cvxkml.sideinfo.Hinge) on every regularizer and constraint family."""

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from cvxkml.declare import ITML, Frobenius, LogDet, LogDetKernel, Regularizer, SpectralMetric, TraceNorm, VonNeumann
from cvxkml.errors import ConvergenceWarning, InvalidInputError
from cvxkml.sideinfo import Hinge, PairConstraints, RelativeConstraints, SimilarityConstraints
from cvxkml.testing import (
    assert_matches_reference,
    metric_instance,
    problems,
    reference_or_discard,
    solve_fast_honestly,
    variant_instance,
)

REGULARIZERS = [LogDet(), VonNeumann(), Frobenius(), TraceNorm(0.5)]


@pytest.mark.parametrize("reg", REGULARIZERS, ids=repr)
@pytest.mark.parametrize("family", ["hinge-metric", "hinge-kernel"])
@settings(max_examples=examples(8), deadline=None)
@given(data=st.data())
def test_dual_solver_matches_exact_model(reg, family, data):
    """Hard pairs + hinge triplets (or everything under hinge): the fast dual solve is
    certified and agrees with a trusted exact optimum through both certificates."""
    problem = data.draw(problems(family, max_n=9, max_m=8, gammas=(0.1, 1.0, 10.0), regularizer=reg))
    fast = solve_fast_honestly(problem, tol=1e-10)
    assert fast.solver.startswith("dual-newton")
    assert fast.converged
    exact = reference_or_discard(problem, feasible=fast)
    assert_matches_reference(problem, fast, exact, rtol=1e-6)
    # hinge: the multipliers are boxed, 0 <= λ <= C, and the certificate is a lower bound
    assert np.all(fast.dual >= 0) and np.all(fast.dual <= problem.upper)
    assert fast.dual_value <= exact.objective + 1e-6 * max(1.0, abs(exact.objective))


def test_hinge_terms_are_consistent():
    """objective = f + Σ C·max(0, residual); hinge rows never count as violated; the dual
    is −inf outside the box; the exact model prices the same hinge."""
    problem = variant_instance(3, 9, 6, hard_pairs=False, C=0.7)
    M = problem.M0 * 1.3
    soft = problem.soft
    assert soft.all()
    res = problem.residuals(M)
    f = LogDet().value(problem.whiten(M))
    assert problem.objective(M) == pytest.approx(f + 0.7 * np.sum(np.maximum(res, 0)), rel=1e-12)
    assert np.all(problem.violations(M) == 0)
    lam = np.full(problem.n_constraints, 1e-6)
    assert np.isfinite(problem.dual_value(lam))
    lam[0] = 0.71
    assert problem.dual_value(lam) == -np.inf
    exact = problem.solve_reference()
    assert exact.objective == pytest.approx(exact.info["solver_objective"], rel=1e-6)


def test_hinge_on_similarity_and_linear_and_warm_start():
    X, pc = metric_instance(11, 10, 3, 3, hard=True)
    sim = SimilarityConstraints([0, 1], [2, 3], [1.0, -0.5])
    prob = SpectralMetric(X, [pc, Hinge(sim, [0.3, 2.0])], VonNeumann())
    fast = solve_fast_honestly(prob, tol=1e-10)
    exact = prob.solve_reference()
    assert_matches_reference(prob, fast, exact, rtol=1e-6)
    again = prob.solve(tol=1e-10, warm_start=fast.dual, method="dual")
    assert again.converged and again.n_iter <= 2


def test_dual_path_for_families_the_native_solver_lacks():
    """ITML's Bregman solver takes pairs only; relative constraints go to the dual solver
    (method='auto'), and method='native' says what to do."""
    X, pc = metric_instance(5, 10, 3, 3, hard=True)
    rel = RelativeConstraints([0, 1], [2, 3], [4, 5], [0.0, 0.0])
    prob = ITML(X, [pc, rel])
    with pytest.raises(InvalidInputError, match="method='dual'"):
        prob.solve(method="native")
    fast = solve_fast_honestly(prob, tol=1e-10)
    assert fast.solver.startswith("dual-newton")
    assert_matches_reference(prob, fast, prob.solve_reference(), rtol=1e-6)


def test_missing_conjugate_methods_are_named():
    class NoHessian(Regularizer):
        name = "half-square"
        alpha = 0.0

        def f_s(self, x):
            return 0.5 * x * x

        def conj_s(self, mu):
            return 0.5 * np.maximum(mu, 0) ** 2

        def conj_grad_s(self, mu):
            return np.maximum(mu, 0)

        def cvx(self, X):
            import cvxpy as cp

            return 0.5 * cp.sum_squares(X)

    X, pc = metric_instance(1, 8, 3, 3, hard=True)
    with pytest.raises(InvalidInputError, match="needs the regularizer's conj_hess_s"):
        SpectralMetric(X, pc, NoHessian()).solve()


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(C=0.0), "positive"),
        (dict(C=[1.0, 2.0]), "one per constraint"),
        (dict(C=np.inf), "positive and finite"),
        (dict(constraints=[1, 2]), "wraps one constraint"),
    ],
)
def test_hinge_bad_inputs(bad, match):
    pc = PairConstraints([0, 1, 2], [1, 2, 3], [1, -1, 1], [1.0, 2.0, 1.0])
    kw = dict(constraints=pc, C=1.0) | bad
    with pytest.raises(InvalidInputError, match=match):
        Hinge(**kw)


def test_gamma_and_hinge_on_pairs_conflict():
    X, pc = metric_instance(2, 8, 3, 3, hard=True)
    with pytest.raises(InvalidInputError, match="two slacks"):
        ITML(X, Hinge(pc, 1.0), gamma=1.0)


def test_infeasible_hard_part_is_detected_with_hinge_elsewhere():
    """Hard pairs no kernel satisfies (d(0,1), d(1,2) <= 0.01 but d(0,2) >= 3 breaks the
    triangle inequality of distances) stay infeasible whatever the soft triplets do: both
    sides refuse: the exact model with InfeasibleError, the fast solve either with
    InfeasibleError (Farkas ray) or by staying uncertified and warning (here the multipliers
    diverge like the iteration count, so the ray is met only to O(1/λ): the Farkas test's
    −1e-6 threshold is not reached in 2000 iterations)."""
    from cvxkml.errors import InfeasibleError

    K0 = np.eye(6) + 0.1
    pc = PairConstraints([0, 1, 0], [1, 2, 2], [1, 1, -1], [0.01, 0.01, 3.0])
    prob = LogDetKernel(K0, [pc, Hinge(RelativeConstraints([2], [3], [4], [0.1]), 1.0)])
    with pytest.raises(InfeasibleError):
        prob.solve_reference()
    try:
        sol = solve_fast_honestly(prob, max_iter=2000)
    except InfeasibleError:
        return
    assert not sol.converged and sol.max_violation > 0.1


def test_max_sweeps_still_works_with_a_deprecation_warning():
    X, pc = metric_instance(4, 8, 3, 3, hard=True)
    prob = ITML(X, pc)
    with pytest.warns(DeprecationWarning, match="use max_iter"):
        old = prob.solve(tol=1e-10, max_sweeps=5000)
    new = prob.solve(tol=1e-10, max_iter=5000)
    assert old.objective == new.objective and old.n_iter == new.n_iter


def test_register_fast_solver_protocol():
    """A registered fast solver is used, its result checked against the protocol, and the
    problem certifies its answer; handles() routes the rest to the next solver."""
    from cvxkml.declare import register_fast_solver, registry
    from cvxkml.declare.terms import constraint_terms
    from cvxkml.solvers import FastResult
    from cvxkml.solvers.dual_newton import dual_newton

    class MyFrobenius(Frobenius):
        pass

    calls = []

    def my_solver(problem, tol, max_iter):  # a user's solver: here the dual one, renamed
        calls.append(max_iter)
        ct = constraint_terms(problem)
        res = dual_newton(ct.U, ct.w, ct.ptr, ct.t, problem.regularizer, tol=tol, max_iter=max_iter)
        res.matrix = problem.matrix_from_whitened(res.matrix)
        res.extra["solver"] = "mine"
        return res

    X, pc = metric_instance(7, 10, 3, 3, hard=True)
    spec = register_fast_solver(MyFrobenius, my_solver, handles=lambda p: p.pairs_only)
    try:
        prob = SpectralMetric(X, pc, MyFrobenius())
        assert prob.fast_solver() is spec and spec in registry.registered()
        sol = solve_fast_honestly(prob, tol=1e-7, max_iter=300)
        assert calls == [300] and sol.solver.startswith("mine") and sol.converged
        assert_matches_reference(prob, sol, prob.solve_reference(), rtol=1e-6)
        # handles() declines relative constraints: the next solver that accepts them (POLA:
        # MyFrobenius keeps Frobenius' formulas) answers
        rel = RelativeConstraints([0], [1], [2], [0.0])
        other = SpectralMetric(X, [pc, rel], MyFrobenius())
        assert other.fast_solver().name == "pola"
        assert other.solve().converged and calls == [300]

        def broken(problem, tol, max_iter):
            return FastResult(problem.M0, np.zeros(1), np.zeros(0), 1, 0.0, 0, -1, 0.0)

        register_fast_solver(MyFrobenius, broken)
        with pytest.raises(InvalidInputError, match="broke the fast-solver protocol: lam of shape"):
            SpectralMetric(X, pc, MyFrobenius()).solve()
        with pytest.raises(InvalidInputError, match="Regularizer subclass"):
            register_fast_solver(MyFrobenius(), broken)
    finally:
        registry.unregister(spec.name)


@pytest.mark.parametrize(
    "fool, match",
    [
        (lambda M: M + 5.0 * np.triu(np.ones_like(M), 1) - 5.0 * np.tril(np.ones_like(M), -1), "not symmetric"),
        (lambda M: np.full_like(M, np.nan), "NaN/inf entries"),
        (lambda M: M - 2.0 * np.abs(np.linalg.eigvalsh(M)).max() * np.eye(len(M)), "positive semidefinite"),
    ],
)
def test_registered_solver_answer_is_validated_not_trusted(fool, match):
    """A user's solver handing back W + skew (the quadratic forms of a metric problem do not
    see it), NaN (before: a raw LinAlgError) or an indefinite matrix gets a SolverError from
    solve(), never converged=True."""
    from cvxkml.declare import register_fast_solver, registry
    from cvxkml.errors import SolverError

    class MyLogDet(LogDet):
        pass

    def fooling(problem, tol, max_iter):
        from cvxkml.adapters.spectral import dual_newton_solve

        res = dual_newton_solve(problem, tol, max_iter)
        res.matrix = fool(res.matrix)
        return res

    X, pc = metric_instance(3, 10, 3, 3, hard=True)
    spec = register_fast_solver(MyLogDet, fooling)
    try:
        with pytest.raises(SolverError, match=match):
            SpectralMetric(X, pc, MyLogDet()).solve()
    finally:
        registry.unregister(spec.name)


def test_user_solver_is_dispatched_like_a_builtin_for_subclasses_and_hinge():
    """register_fast_solver(MyLogDet, …) takes a subclass of a built-in regularizer and hinge
    problems, before the built-in Bregman solver; without it, the subclass (same formulas)
    goes to Bregman and, with hinge, to the generic dual solver — one registry for all."""
    from cvxkml.adapters.spectral import dual_newton_solve
    from cvxkml.declare import register_fast_solver, registry

    class MyLogDet(LogDet):
        pass

    X, pc = metric_instance(5, 10, 3, 4, hard=True)
    assert SpectralMetric(X, pc, MyLogDet()).fast_solver().name == "bregman-metric"
    assert SpectralMetric(X, Hinge(pc, 1.0), MyLogDet()).fast_solver().name == "dual-newton"
    seen = []

    def mine(problem, tol, max_iter):
        seen.append(type(problem).__name__)
        res = dual_newton_solve(problem, tol, max_iter)
        res.extra["solver"] = "mine"
        return res

    spec = register_fast_solver(MyLogDet, mine)
    try:
        for prob in (SpectralMetric(X, pc, MyLogDet()), SpectralMetric(X, Hinge(pc, 1.0), MyLogDet())):
            assert prob.fast_solver() is spec
            sol = solve_fast_honestly(prob, tol=1e-9)
            assert sol.solver.startswith("mine") and sol.converged
            assert_matches_reference(prob, sol, prob.solve_reference(), rtol=1e-6)
        assert seen == ["SpectralMetric", "SpectralMetric"]
        # the built-in regularizer itself is not the user's: Bregman still answers ITML
        assert ITML(X, pc).fast_solver().name == "bregman-metric"
    finally:
        registry.unregister(spec.name)


def test_a_subclass_that_changes_the_model_is_never_answered_as_its_parent():
    """A subclass of SpectralKernel adding a term to the objective inherits solve(): no
    registered solver takes it (each answers its parent), so solve() says what to do; a
    regularizer subclass changing f_s is refused by Bregman and goes to the generic dual
    solver, which reads only the declared formulas."""
    from cvxkml.testing import variant_instance

    base = variant_instance(2, 8, 5, LogDet(), kernel=True, hard_pairs=True)

    class WithTrace(type(base)):
        def objective(self, M, xi=None):
            return super().objective(M, xi) + float(np.trace(M))

    prob = WithTrace.__new__(WithTrace)
    prob.__dict__.update(base.__dict__)
    with pytest.raises(InvalidInputError, match="redefines the model \\(objective\\)"):
        prob.solve()

    class ScaledLogDet(LogDet):
        def f_s(self, x):
            return 2.0 * super().f_s(x)

        def conj_s(self, mu):
            return 2.0 * super().conj_s(mu / 2.0)

        def conj_grad_s(self, mu):
            return super().conj_grad_s(mu / 2.0)

        def conj_hess_s(self, mu):
            return 0.5 * super().conj_hess_s(mu / 2.0)

        def cvx(self, X):
            return 2.0 * super().cvx(X)

    X, pc = metric_instance(4, 10, 3, 3, hard=True)
    scaled = SpectralMetric(X, pc, ScaledLogDet())
    assert scaled.fast_solver().name == "dual-newton"
    fast = solve_fast_honestly(scaled, tol=1e-10)
    assert_matches_reference(scaled, fast, scaled.solve_reference(), rtol=1e-6)


@pytest.mark.parametrize(
    "reg, seed, n, m, hard, C",
    [
        (Frobenius(), 3, 3, 2, True, 1.0),  # Farkas test counted soft multipliers (fuzz seed 22)
        (TraceNorm(0.5), 3, 3, 2, True, 1.0),  # same (fuzz seed 24)
        (Frobenius(), 11602, 9, 3, True, 1.0),  # same (fuzz seed 22)
        (LogDet(), 2705, 7, 5, False, 10.0),  # stalled at 1.4e-9 with tol 1e-10 (first draws)
    ],
)
def test_dual_solver_fuzz_regressions(reg, seed, n, m, hard, C):
    problem = variant_instance(seed, n, m, reg, hard_pairs=hard, C=C)
    fast = solve_fast_honestly(problem, tol=1e-10)
    assert fast.converged
    assert_matches_reference(problem, fast, problem.solve_reference(), rtol=1e-6)


def test_dual_solver_certifies_below_the_round_off_of_the_dual_value():
    """Fuzz draw build(seed=14884, n=5, m=3, is_hard=True, gamma=10.0) of
    test_dual_solver_matches_exact_model[hinge-metric-LogDet()]: at a relative gap of 1.4e-6
    the full Newton step would certify (gap 5e-11), but its ascent (~1e-17) lay below the
    round-off of g ≈ 12.2 (terms λᵀt ~ 20 cancel: g "decreased" by 2e-14), so the Armijo
    search and the gradient fallback both refused it and the solve stopped uncertified
    ('max_sweeps reached' after 13 iterations).  A step within g's round-off is now taken
    when it reduces the certificate: certified at tol 1e-10 and equal to the exact model."""
    problem = variant_instance(14884, 5, 3, LogDet(), kernel=False, hard_pairs=True, C=10.0)
    fast = solve_fast_honestly(problem, tol=1e-10)
    assert fast.solver.startswith("dual-newton") and fast.converged
    assert fast.info["rel_gap"] <= 1e-10 and fast.info["rel_violation"] <= 1e-10
    exact = problem.solve_reference()
    assert_matches_reference(problem, fast, exact, rtol=1e-6)
    assert fast.dual_value <= exact.objective + 1e-6 * max(1.0, abs(exact.objective))


def test_dual_solver_frobenius_flat_region_does_not_crawl():
    """Fuzz seed 4713 (CVXKML_FUZZ=5) at d4c2f80: a Frobenius hinge draw whose iterate entered
    the flat piece of f* (every μ < −1, X̂ = 0, zero Hessian); the scaled-gradient step was
    ‖Â‖⁻² of the way and never expanded: gap 12.6 after 20 000 iterations.  Now certified in
    a few iterations and equal to the exact optimum."""
    problem = variant_instance(3, 7, 7, Frobenius(), hard_pairs=True, C=1.0)
    fast = solve_fast_honestly(problem, tol=1e-10, max_iter=2000)
    assert fast.converged
    assert fast.info["newton_iterations"] <= 100
    assert_matches_reference(problem, fast, problem.solve_reference(), rtol=1e-6)


def test_callback_sees_every_newton_iteration_and_can_stop_the_solve():
    """solve(callback=…) on the dual solver: called once per Newton iteration with the
    certificate's parts; a truthy return stops the solve, which is then honestly
    unconverged (status 'stopped by callback', ConvergenceWarning)."""
    problem = variant_instance(1, 10, 8, LogDet(), hard_pairs=False, C=1.0)
    seen = []
    full = problem.solve(tol=1e-10, callback=seen.append)
    assert full.converged and len(seen) == full.n_iter
    assert {"iteration", "objective", "gap", "violation", "dual"} <= set(seen[0])
    assert [s["iteration"] for s in seen] == list(range(full.n_iter))
    with pytest.warns(ConvergenceWarning, match="callback stopped"):
        stopped = problem.solve(tol=1e-10, callback=lambda s: s["iteration"] >= 2)
    assert not stopped.converged and stopped.status == "stopped by callback"
    assert stopped.n_iter == 2
    with pytest.raises(InvalidInputError, match="callback must be None or a callable"):
        problem.solve(callback=3)


def test_logdet_conjugate_curvature_does_not_overflow_on_a_diverging_dual():
    """Fuzz seed 11202: ITML with hard similarity constraints sent a short dual-Newton solve to
    μ = −8.4e156, where 1/(1 − μ)² overflowed (a RuntimeWarning escaping as an untyped error).
    The curvature is (1/(1 − μ))²: tiny and finite, no warning."""
    import warnings

    from cvxkml.declare.regularizers import LogDet

    reg = LogDet()
    mu = np.array([-8.38059098e156, -1e300, -1.0, 0.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = reg.conj_hess_s(mu)
        hs = reg.slack_conj_hess(np.array([-1e300, 0.0]), 1.0, 1.0)
    assert np.all(np.isfinite(h)) and np.all(h >= 0)
    np.testing.assert_allclose(h[2:], 1.0 / (1.0 - mu[2:]) ** 2, rtol=1e-15)
    assert np.all(np.isfinite(hs)) and hs[1] == -1.0


def test_gamma_slack_domain_keeps_the_first_trial_step_inside():
    """The slack conjugate of LogDet is finite for δλ < γ/ξ0 (slack_conj_domain): the first
    trial step of the line search stays inside it, as inside the conjugate's own domain.
    Without the declared domain (+inf) the same solve certifies the same optimum, refusing
    the points outside by their −inf dual value, at more trial points when γ is small (the
    domain is then narrow)."""

    class NoDomain(LogDet):
        def slack_conj_domain(self, xi0, gamma):
            return np.full(np.shape(xi0), np.inf)

    trials = []
    for seed in range(3):
        X, pc = metric_instance(seed, 12, 4, 24, hard=False)
        with_dom = SpectralMetric(X, pc, LogDet(), gamma=0.01).solve(tol=1e-10, method="dual")
        without = SpectralMetric(X, pc, NoDomain(), gamma=0.01).solve(tol=1e-10, method="dual")
        assert with_dom.converged and without.converged
        assert abs(with_dom.objective - without.objective) <= 1e-10 * abs(with_dom.objective)
        trials.append((with_dom.info["trial_points"], without.info["trial_points"]))
    assert all(a <= b for a, b in trials) and any(a < b for a, b in trials), trials
