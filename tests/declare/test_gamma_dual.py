"""The regularizer's own pair slack (gamma, Jain et al. eq. 7) in the generic certified dual
solver (cvxkml.solvers.dual_newton) and the "auto" policy on gamma problems: Bregman first,
then the dual solver from Bregman's multipliers when the projections end uncertified."""

import itertools
import warnings

import numpy as np
import pytest
from budget import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cvxkml.declare import ITML, LogDet, LogDetKernel, Regularizer, SpectralKernel, SpectralMetric, VonNeumann
from cvxkml.errors import InvalidInputError
from cvxkml.sideinfo import Hinge, PairConstraints, baseline_metric
from cvxkml.testing import (
    assert_matches_reference,
    feasible_instance,
    kernel_instance,
    metric_instance,
    reference_or_discard,
    solve_fast_honestly,
)

GAMMAS = (0.01, 1.0, 100.0)
MIXES = ("pairs", "pairs+hard-triplets", "pairs+hinge-triplets", "pairs+hard-similarity")


def _instance(space, mix, seed, n, m, gamma):
    """A LogDet problem with γ-slack pairs, alone or with a second family (hard, or under
    Hinge) feasible by construction (:func:`cvxkml.testing.feasible_instance`)."""
    kernel = space == "kernel"
    if mix == "pairs":
        if kernel:
            K0, pc = kernel_instance(seed, n, m, hard=False)
            return LogDetKernel(K0, pc, gamma=gamma)
        X, pc = metric_instance(seed, n, 3, m, hard=False)
        return ITML(X, pc, gamma=gamma)
    other = "similarity" if mix.endswith("similarity") else "triplets"
    base = feasible_instance(seed, n, m, ("pairs", other), kernel=kernel, hard=True)
    second = base.relative if other == "triplets" else base.similarity
    if mix.startswith("pairs+hinge"):
        second = Hinge(second, 1.0)
    cons = [base.pairs, second]
    if kernel:
        return SpectralKernel(base.M0, cons, LogDet(), gamma=gamma)
    return SpectralMetric(base.X, cons, LogDet(), gamma=gamma)


def _check_slack_answer(problem, sol):
    """The dual solver's answer of a γ problem: the slack it returns is the best one for its
    matrix (the pairs met exactly with it), the multipliers λ >= 0 inside the slack
    conjugate's domain (δλ < γ/ξ0), and the reported slack term is γ·D_ld(ξ, ξ0)."""
    P = problem.pairs
    assert sol.slack is not None and sol.slack.shape == (len(P),)
    np.testing.assert_allclose(sol.slack, problem.best_slack(sol.matrix), rtol=1e-12, atol=0)
    lam = sol.dual[: len(P)]
    assert np.all(lam >= 0)
    assert np.all(P.y * lam * P.bound / problem.gamma < 1.0)


@pytest.mark.parametrize("space", ["metric", "kernel"])
@pytest.mark.parametrize("mix", MIXES)
@settings(max_examples=examples(8), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(4, 10), m=st.integers(1, 20), gamma=st.sampled_from(GAMMAS))
def test_gamma_dual_matches_exact_model(space, mix, seed, n, m, gamma):
    """method='dual' on γ problems (γ 0.01 … 100, slack pairs alone or with hard / hinge
    triplets or hard similarity constraints, metric and kernel space): certified, and
    agreeing with a trusted exact optimum through both certificates."""
    problem = _instance(space, mix, seed, n, m, gamma)
    assert problem.fast_solver("dual").name == "dual-newton"
    fast = solve_fast_honestly(problem, tol=1e-10, method="dual")
    assert fast.solver.startswith("dual-newton") and fast.converged, fast
    _check_slack_answer(problem, fast)
    exact = reference_or_discard(problem, feasible=fast)
    assert_matches_reference(problem, fast, exact, rtol=1e-6)


@settings(max_examples=examples(10), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(4, 10), m=st.integers(1, 20), gamma=st.sampled_from(GAMMAS))
def test_gamma_dual_matches_native_von_neumann(seed, n, m, gamma):
    """The von Neumann slack (Kulis et al. §6.2.1) through the generic dual solver agrees with
    the native certified solver (no exact model: the exponential cone is slow and inexact)."""
    X, pc = metric_instance(seed, n, 3, m, hard=False)
    problem = SpectralMetric(X, pc, VonNeumann(), gamma=gamma)
    dual = solve_fast_honestly(problem, tol=1e-11, method="dual")
    native = solve_fast_honestly(problem, tol=1e-11, method="native")
    assert dual.converged and native.converged
    np.testing.assert_allclose(dual.slack, problem.best_slack(dual.matrix), rtol=1e-12)
    scale = max(1.0, abs(native.objective))
    # each certificate bounds the other's objective (weak duality), and the objectives agree
    assert dual.dual_value <= native.objective + 1e-9 * scale
    assert native.dual_value <= dual.objective + 1e-9 * scale
    assert abs(dual.objective - native.objective) <= 1e-8 * scale


def _balance_like(seed=0, n=150, n_pairs=360):
    """A subsample of the Balance Scale data (UCI: every (a, b, c, d) in {1..5}⁴, class the
    sign of ab − cd), standardized, with ITML's 40c² label pairs at the 5th/95th percentiles:
    the instance on which ITML's cyclic projections creep at γ = 100 (`python -m benchmarks reproduce
    spectral`, Balance: 8 of 10 final fits uncertified at 20 000 sweeps)."""
    X = np.array(list(itertools.product(range(1, 6), repeat=4)), dtype=float)
    y = np.sign(X[:, 0] * X[:, 1] - X[:, 2] * X[:, 3]).astype(int) + 1
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(X), n, replace=False)
    Xs = (X[idx] - X[idx].mean(0)) / X[idx].std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pairs of duplicate points are dropped
        pc = PairConstraints.from_labels(
            y[idx], baseline_metric(Xs), scheme="itml", n_constraints=n_pairs, percentiles=(5.0, 95.0), random_state=rng
        )
    return Xs, pc


def test_auto_certifies_where_bregman_creeps():
    """Balance-like, γ = 100, tol 1e-3, max_iter 2 000: the projections alone end at the cap
    uncertified (relative gap > 1e-3); "auto" runs them on 1 800 sweeps (the dual
    solver keeps a tenth of max_iter), then the dual solver from their multipliers, which
    certifies; the answer agrees with the exact model, and info says both stages."""
    X, pc = _balance_like()
    prob = ITML(X, pc, gamma=100.0)
    native = solve_fast_honestly(prob, tol=1e-3, max_iter=2000, method="native")
    assert not native.converged and native.n_iter == 2000
    # (M, best_slack(M)) is feasible on the pairs: what the cap leaves is a duality gap
    assert native.info["max_relative_violation"] == 0.0
    assert native.gap / max(1.0, abs(native.objective)) > 1e-3
    auto = solve_fast_honestly(prob, tol=1e-3, max_iter=2000)
    assert auto.converged and auto.solver == "bregman+dual-newton-metric"
    assert auto.info["spec"] == "bregman-metric+dual-newton"
    first, second = auto.info["stages"]
    assert first["solver"] == "bregman-metric" and first["iterations"] == 1800 and first["stop"] == "max_iter"
    assert not first["certified"] and not first["returned"]
    assert second["solver"] == "dual-newton-metric" and second["certified"] and second["returned"]
    assert second["stop"] == "certificate" and 0 < second["iterations"] <= 200
    assert auto.n_iter == first["iterations"] + second["iterations"] <= 2000
    _check_slack_answer(prob, auto)
    # the exact model (348 slack pairs, d = 4) confirms the certified optimum
    exact = reference_or_discard(prob, feasible=auto, keep_draw=True)
    if exact is not None:
        assert_matches_reference(prob, auto, exact, rtol=1e-3)
    # a tight tolerance too: the dual solver, not the cap, decides
    tight = solve_fast_honestly(prob, tol=1e-9, max_iter=2000)
    assert tight.converged and tight.info["stages"][1]["relative_gap"] <= 1e-9
    assert tight.objective <= auto.objective + 1e-3 * abs(auto.objective)


def test_auto_keeps_certified_bregman_and_native_stays_native():
    """When Bregman certifies, "auto" returns it unchanged (one stage, no info['stages']);
    a small max_iter leaves the dual solver nothing (max_iter // 10 = 0): Bregman alone."""
    X, pc = metric_instance(0, 12, 4, 20, hard=False)
    prob = ITML(X, pc, gamma=1.0)
    auto = solve_fast_honestly(prob, tol=1e-10)
    native = solve_fast_honestly(prob, tol=1e-10, method="native")
    assert auto.converged and auto.solver == native.solver == "bregman-metric" and "stages" not in auto.info
    assert auto.objective == native.objective and auto.n_iter == native.n_iter
    short = solve_fast_honestly(prob, tol=1e-10, max_iter=5)
    assert not short.converged and short.n_iter == 5 and "stages" not in short.info


def test_auto_two_stages_uncertified_is_honest():
    """Both stages short of the certificate: a warning naming both, converged=False, and the
    answer returned is the one with the smaller certificate (checked by recomputation)."""
    X, pc = _balance_like(seed=1)
    prob = ITML(X, pc, gamma=100.0)
    sol = solve_fast_honestly(prob, tol=1e-12, max_iter=30)  # 27 sweeps + 3 Newton iterations
    assert not sol.converged
    first, second = sol.info["stages"]
    assert (first["iterations"], second["iterations"]) == (27, 3)
    kept = second if second["returned"] else first
    other = first if second["returned"] else second
    size = lambda s: max(abs(s["relative_gap"]), s["max_relative_violation"])  # noqa: E731
    assert size(kept) <= size(other)
    with pytest.warns(Warning, match="Neither stage certified"):
        prob.solve(tol=1e-12, max_iter=30)


def test_kernel_auto_handoff_from_the_lowrank_path():
    """LogDetKernel with γ pairs on a rank-deficient K0 (Kulis et al.'s factored Algorithm 2)
    hands its multipliers to the dual solver the same way: they are the dual solver's
    multipliers of the same constraints, so a warm start from a certified Bregman answer
    needs at most one Newton iteration."""
    K0, pc = kernel_instance(3, 10, 14, hard=False, kind="lowrank")
    prob = LogDetKernel(K0, pc, gamma=10.0)
    nat = solve_fast_honestly(prob, tol=1e-10, method="native")
    assert nat.converged
    warm = solve_fast_honestly(prob, tol=1e-10, method="dual", warm_start=nat.dual)
    assert warm.converged and warm.n_iter <= 1
    assert abs(warm.objective - nat.objective) <= 1e-8 * max(1.0, abs(nat.objective))


def test_gamma_dual_needs_the_slack_methods():
    """A user regularizer claiming a slack without its conjugate's derivatives is refused by
    the dual solver with the methods named (and what to do)."""

    class HalfSlack(LogDet):
        def slack_conj_hess(self, dl, xi0, gamma):
            raise NotImplementedError

    X, pc = metric_instance(1, 8, 3, 6, hard=False)
    prob = SpectralMetric(X, pc, HalfSlack(), gamma=1.0)
    with pytest.raises(InvalidInputError, match="slack_conj_hess for its slack"):
        prob.fast_solver("dual")
    assert issubclass(HalfSlack, Regularizer)


def test_auto_two_stages_callback_counts_on_and_can_stop():
    """The callback sees the Bregman attempt, then the Newton iterations numbered on from the
    sweeps; a truthy return in the second stage stops the solve, reported as such."""
    X, pc = _balance_like()
    prob = ITML(X, pc, gamma=100.0)
    seen = []
    sol = prob.solve(tol=1e-9, max_iter=2000, callback=lambda rec: seen.append(rec["iteration"]) and False)
    assert sol.converged and seen[0] == 1800 and seen[1:] == list(range(1800, 1800 + len(seen) - 1))
    with pytest.warns(Warning, match="callback stopped"):
        stop = prob.solve(tol=1e-9, max_iter=2000, callback=lambda rec: rec["iteration"] >= 1802)
    assert not stop.converged and stop.status == "stopped by callback" and "stages" in stop.info


@example(seed=10000000, n=33, n_pairs=64, gamma=100.0)  # fuzz seed 22: 35 Newton iterations (max_iter 300 left 30)
@settings(max_examples=examples(5), deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(30, 150),
    n_pairs=st.integers(10, 120),
    gamma=st.sampled_from((1.0, 10.0, 100.0)),
)
def test_auto_handoff_from_cut_short_bregman_matches_exact(seed, n, n_pairs, gamma):
    """Balance-like draws with Bregman cut short (max_iter 1 000: 900 sweeps, 100 Newton
    iterations kept): wherever the projections end uncertified the dual stage starts from
    their multipliers and certifies (tol 1e-9), and the answer agrees with a trusted exact
    optimum."""
    X, pc = _balance_like(seed, n, n_pairs)
    prob = ITML(X, pc, gamma=gamma)
    sol = solve_fast_honestly(prob, tol=1e-9, max_iter=1000)
    assert sol.converged, sol.info.get("stages")
    if "stages" in sol.info:
        first, second = sol.info["stages"]
        assert first["iterations"] <= 900 and second["certified"] and second["returned"]
        assert sol.n_iter == first["iterations"] + second["iterations"] <= 1000
    exact = reference_or_discard(prob, feasible=sol)
    assert_matches_reference(prob, sol, exact, rtol=1e-6)
