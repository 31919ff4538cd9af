"""The smoothed quasi-Newton phase of the LMNN solver (cvxkml.solvers.lmnn: L-BFGS on
the factor of F_μ, then the certificate of the unsmoothed eq. 18) against the exact CVXPY
model, and its smoothed value / gradient against the one-formula objective."""

import warnings

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cvxkml.declare.lmnn import LMNNProblem
from cvxkml.errors import ConvergenceWarning
from cvxkml.formulas.lmnn import lmnn_dual_value, lmnn_objective, pair_quadratic
from cvxkml.kernels import polynomial_kernel
from cvxkml.solvers.lmnn import _SMOOTH_MUS, _smooth_stages, _smooth_value_grad
from cvxkml.testing import assert_matches_reference, reference_or_discard, solve_fast_honestly

TOL = 1e-6


def labelled(seed, n, n_classes, d, shift=1.0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    return rng.normal(size=(n, d)) + shift * y[:, None], y


def make(kind, seed, n, n_classes, k, gamma, d):
    X, y = labelled(seed, n, n_classes, d)
    if kind == "linear":
        return LMNNProblem.linear(X, y, k, gamma)
    K = polynomial_kernel(X[:, :2], degree=2)  # rank <= 6
    return LMNNProblem.kernel(K / np.mean(np.diag(K)), y, k, gamma)


@settings(max_examples=examples(20), deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(8, 18),
    n_classes=st.integers(2, 3),
    k=st.integers(1, 2),
    gamma=st.sampled_from([0.25, 0.5, 0.75]),
    d=st.integers(2, 5),
    kind=st.sampled_from(["linear", "linear", "kernel-lowrank"]),
)
def test_smoothed_phase_matches_exact_model(seed, n, n_classes, k, gamma, d, kind):
    """A certified solve through the smoothed phase (default) is the exact model's
    optimum: both certificates bracket each other (weak duality across the two) and the
    objectives agree to the certified tolerance."""
    assume(n >= n_classes * (k + 1))
    prob = make(kind, seed, n, n_classes, k, gamma, d)
    fast = solve_fast_honestly(prob, tol=TOL)
    # the smoothed phase ran — unless every triplet's impostor pair reaches G(0)'s null space,
    # where the exact step along it is the whole answer (fuzz seed 3568: 8 points, k = 1)
    all_free = fast.info.get("free_triplets") == prob.triplets.n_triplets
    assert all_free or fast.info["smooth_iterations"] > 0
    assume(fast.converged)
    scale = max(1.0, abs(fast.objective))
    assert fast.objective - fast.dual_value <= TOL * scale + 1e-12
    assert fast.objective == pytest.approx(prob.objective_whitened(fast.info["X"]), rel=1e-12, abs=1e-14)
    assert fast.dual_value == pytest.approx(
        prob.dual_value(fast.dual, objective_bound=fast.objective), rel=1e-12, abs=1e-14
    )
    exact = reference_or_discard(prob, cert_rtol=1e-7, viol_tol=1e-8)
    assert_matches_reference(prob, fast, exact, rtol=1e-5)


@settings(max_examples=examples(20), deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(8, 16),
    d=st.integers(2, 4),
    gamma=st.sampled_from([0.25, 0.5, 0.75]),
    mu=st.sampled_from(_SMOOTH_MUS),
)
def test_smoothed_value_and_gradient(seed, n, d, gamma, mu):
    """F ≤ F_μ ≤ F + γ·μ/4 per triplet (h_μ(z) − max(z, 0) ∈ [0, μ/4]) at L Lᵀ, the
    multipliers are γ·h_μ' ∈ [0, γ], and the gradient is 2·G(α)·L (checked against a
    central finite difference)."""
    X, y = labelled(seed, n, 2, d)
    prob = LMNNProblem.linear(X, y, 1, gamma)
    tr, U = prob.triplets, prob.U
    r = U.shape[1]
    L = np.random.default_rng(seed).normal(size=(r, r))
    w_base = (1.0 - gamma) * tr.target_weight
    work = np.arange(tr.n_triplets, dtype=np.int64)
    pairs = np.arange(tr.n_pairs, dtype=np.int64)
    p, w, a = np.zeros(tr.n_pairs), np.zeros(tr.n_pairs), np.zeros(tr.n_triplets)

    def fg(Lm):
        return _smooth_value_grad(U, Lm, tr.pi, tr.pj, w_base, tr.tt, tr.ti, work, pairs, gamma, mu, p, w, a)

    f, g = fg(L)
    F = lmnn_objective(pair_quadratic(U, L @ L.T, tr.pi, tr.pj), tr, gamma)
    assert F - 1e-9 * max(1.0, F) <= f <= F + gamma * mu / 4 * tr.n_triplets + 1e-9 * max(1.0, F)
    assert np.all((a >= 0) & (a <= gamma))
    E = np.random.default_rng(seed + 1).normal(size=(r, r))
    h = 1e-6
    fd = (fg(L + h * E)[0] - fg(L - h * E)[0]) / (2 * h)
    assert fd == pytest.approx(float(np.sum(g * E)), rel=1e-4, abs=1e-6 * max(1.0, f))


def test_smoothed_multipliers_give_a_certified_bound_close_to_the_objective():
    """At the last width the multipliers of the smoothed minimizer are (nearly) dual
    feasible: g(α) from lmnn_dual_value is a valid bound (below the exact optimum) within
    a small relative gap of F at the smoothed point, without any PDHG iteration."""
    X, y = labelled(5, 30, 3, 4, shift=1.2)
    prob = LMNNProblem.linear(X, y, 2, 0.5)
    tr = prob.triplets
    last = None
    for mu, Xs, alpha, nit, n_work in _smooth_stages(prob.U, tr, 0.5, np.diag(prob.s**2), _SMOOTH_MUS, 10_000, 1.0):
        assert np.all((alpha >= 0) & (alpha <= 0.5)) and nit >= 0 and n_work <= tr.n_triplets
        last = (mu, Xs, alpha)
    mu, Xs, alpha = last
    assert mu == _SMOOTH_MUS[-1]
    F = lmnn_objective(pair_quadratic(prob.U, Xs, tr.pi, tr.pj), tr, 0.5)
    g = lmnn_dual_value(prob.U, tr, alpha, 0.5)
    exact = prob.solve_reference()
    assert exact.converged
    scale = max(1.0, abs(exact.objective))
    assert g <= exact.objective + 1e-7 * scale <= F + 2e-7 * scale  # weak duality both ways
    assert F - g <= 1e-3 * scale, (F, g)


def test_smooth_and_pdhg_paths_reach_the_same_certified_optimum():
    X, y = labelled(7, 24, 2, 3)
    prob = LMNNProblem.linear(X, y, 2, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        new = prob.solve(tol=1e-6)
        old = prob.solve(tol=1e-6, smooth=False)
    assert new.converged and old.converged
    assert new.info["smooth_iterations"] > 0 and old.info["smooth_iterations"] == 0
    scale = max(1.0, abs(old.objective))
    # each certified objective lies within tol of F*, which lies above both bounds
    assert max(new.dual_value, old.dual_value) <= min(new.objective, old.objective) + 1e-9 * scale
    assert abs(new.objective - old.objective) <= 1e-6 * scale


def test_smooth_flag_is_validated():
    from cvxkml.errors import InvalidInputError

    X, y = labelled(1, 12, 2, 3)
    with pytest.raises(InvalidInputError, match="smooth must be True or False"):
        LMNNProblem.linear(X, y, 2).solve(smooth="yes")


@settings(deadline=None, max_examples=examples(20))
@given(seed=st.integers(0, 10_000), K=st.integers(1, 60), r=st.integers(1, 9), q=st.integers(1, 9))
def test_kink_gram_system_is_the_least_squares_problem_of_the_dual_recovery(seed, K, r, q):
    """The K × K system of the least-squares dual recovery (:func:`_kink_gram_system`) has
    the residual norm of the explicit r·q × K one at every x — also when K > r·q (the Gram
    matrix singular) — so the solver's bounded least squares on it lands on the explicit
    problem's optimum, bracketed by certificates rather than by another solver's answer."""
    from scipy.optimize import lsq_linear

    from cvxkml.solvers.lmnn import _kink_gram_system

    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(K, r)), rng.normal(size=(K, r))
    VX = np.linalg.qr(rng.normal(size=(r, q)))[0][:, : min(r, q)]
    aV, bV = a @ VX, b @ VX
    R = rng.normal(size=(r, VX.shape[1]))
    M = (a[:, :, None] * aV[:, None, :] - b[:, :, None] * bV[:, None, :]).reshape(K, -1).T
    J, y = _kink_gram_system(a, b, aV, bV, R)
    assert J.shape == (J.shape[0], K) and J.shape[0] <= K + 1 and y.shape == (J.shape[0],)
    scale = np.linalg.norm(R) + np.linalg.norm(M, 2)
    for x in (np.zeros(K), rng.uniform(0, 0.5, K), rng.normal(size=K) * 3):
        assert np.linalg.norm(J @ x - y) == pytest.approx(
            np.linalg.norm(M @ x - R.ravel()), abs=1e-9 * scale * (1 + np.linalg.norm(x))
        )

    def cost_and_gap(x):
        """½‖Mx − vec R‖² and its Frank–Wolfe gap over the box [0, 0.5]^K, which bounds
        cost − optimum from above for every feasible x."""
        res = M @ x - R.ravel()
        g = M.T @ res
        return 0.5 * res @ res, float(np.sum(np.where(g > 0, g * x, g * (x - 0.5))))

    gram = lsq_linear(J, y, bounds=(0.0, 0.5), max_iter=200)  # the call of _polish_dual
    # the optimum is at least cost − gap of any feasible point: the best of three solves
    # bounds it.  BVLS on the explicit system alone is no reference: on these rank-deficient
    # systems it can stop at its iteration limit 0.05 % above the optimum (fuzz seed 32801:
    # K = 52, r·q = 15, Frank–Wolfe gap 7.8e-3) — it only contributes its certified bound
    points = [gram.x] + [lsq_linear(A, rhs, bounds=(0.0, 0.5), method="bvls").x for A, rhs in ((J, y), (M, R.ravel()))]
    lower = max(c - g for c, g in map(cost_and_gap, points))
    # the trust-region solve stops at its first-order tolerance: up to 1.2e-9 scale² above the
    # optimum in 3 300 scanned draws (K = r = q = 1 the worst); y off by 1 % fails it in 30 of 30
    assert cost_and_gap(gram.x)[0] - lower <= 1e-7 * scale**2


def test_dual_recovery_through_the_gram_system_matches_the_explicit_one(monkeypatch):
    """The least-squares dual recovery through the K × K system (:func:`_kink_gram_system`,
    the path of large problems) gives the bound of the explicit r·q × K system (the path
    of small ones), both forced with ``_POLISH_DENSE_MAX`` on one kernel problem."""
    from cvxkml.solvers import lmnn as S

    X, y = labelled(3, 24, 2, 3)
    K = polynomial_kernel(X, X, degree=3, coef0=1.0)
    prob = LMNNProblem.kernel(K, y, 3, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sol = prob.solve(tol=1e-9, max_iter=3000, polish=False)
    Xb, trip, U = sol.info["X"], prob.triplets, prob.U
    p = S._Ops(U, trip).distances(Xb)
    bounds = {}
    for path, cap in (("explicit", 10**12), ("gram", 0)):
        monkeypatch.setattr(S, "_POLISH_DENSE_MAX", cap)
        bounds[path] = [
            lmnn_dual_value(U, trip, S._polish_dual(U, trip, 0.5, Xb, p, d), 0.5, objective_bound=sol.objective)
            for d in S._POLISH_DELTAS
        ]
    assert max(bounds["explicit"]) > 0.99 * sol.objective  # the recovery does something here
    # the solver keeps the best bound over the splits δ; per δ the bounded least squares
    # can have a flat optimal set (both systems reach one cost, not one α): equal at three
    # of the four δ here, 2e-4 apart at δ = 0.1
    assert max(bounds["gram"]) == pytest.approx(max(bounds["explicit"]), rel=1e-9)
    assert sum(g == pytest.approx(e, rel=1e-9) for g, e in zip(bounds["gram"], bounds["explicit"])) >= 3
