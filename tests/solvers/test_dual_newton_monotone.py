"""The generic dual solver's reported certificate only improves: it pairs the best primal point
with the best dual bound seen (cvxkml.solvers.dual_newton._Record), and the answer's
multipliers give exactly the reported bound."""

import warnings

import numpy as np
import pytest

from benchmarks.bench.variants import AlphaPower
from cvxkml.declare import SpectralKernel
from cvxkml.declare.terms import constraint_terms
from cvxkml.kernels import gaussian_kernel
from cvxkml.sideinfo import Hinge, PairConstraints, baseline_kernel
from cvxkml.solvers._terms import RankOneTerms
from cvxkml.solvers.dual_newton import dual_newton


def alpha_problem(n=60, seed=1):
    """Gaussian K0 (σ = median distance) on n standard-normal points in 5-d, 3 random labels,
    2n hinge pairs (C = 1): the iterates' own gaps rise at some iterations (Armijo's rule
    raises the dual value, not the primal one)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = rng.integers(0, 3, n)
    sq = np.sum((X[:, None] - X[None]) ** 2, -1)
    K0 = gaussian_kernel(X, sigma=float(np.sqrt(np.median(sq[sq > 0]))))
    pairs = PairConstraints.from_labels(
        y, baseline_kernel(K0), scheme="itml", n_constraints=2 * n, percentiles=(5, 95), random_state=seed
    )
    return SpectralKernel(K0, [Hinge(pairs, 1.0)], AlphaPower())


def _dual_value(U, w, ptr, t, conj, lam):
    """g(λ) = −Σ f*_s(eig(S − A(λ))) − λᵀt from scratch (hinge only: no squared terms)."""
    ops = RankOneTerms(U, w, ptr, t)
    M = np.asarray(conj.conj_shift(ops.r), dtype=float) - ops.A(lam)
    mu = np.linalg.eigvalsh(0.5 * (M + M.T))
    return -float(np.sum(conj.conj_s(mu))) - float(lam @ t)


def test_reported_gap_never_increases_while_the_iterates_gap_does():
    """Before the record, the callback's gap was the iterate's (0.04 → 0.05 at iteration 7
    here; 0.415 → 0.088 → 0.166 → 0.341 at n = 3 000): now the pair's, never increasing,
    with a dual bound that never decreases."""
    problem = alpha_problem()
    seen = []
    sol = problem.solve(tol=1e-9, callback=seen.append)
    assert sol.converged
    gaps = [s["gap"] for s in seen]
    assert all(b <= a for a, b in zip(gaps, gaps[1:])), gaps
    bounds = [s["dual_bound"] for s in seen]
    own = [s["iterate_gap"] for s in seen]
    assert any(b > a for a, b in zip(own, own[1:])), "the instance no longer shows a rising iterate gap"
    assert all(b >= a for a, b in zip(bounds, bounds[1:])), bounds
    assert all(g <= o for g, o in zip(gaps, own))


@pytest.mark.parametrize("max_iter", [3, 5, 8])
def test_returned_multipliers_give_the_reported_bound(max_iter):
    """Stopped early (possibly with the primal point and the bound from different iterates):
    the dual value recomputed at the returned λ is the reported bound, and the reported gap
    is the recomputed objective minus it, at the solver and at the problem."""
    problem = alpha_problem()
    ct = constraint_terms(problem)
    conj = problem.regularizer
    res = dual_newton(ct.U, ct.w, ct.ptr, ct.t, conj, upper=ct.upper, lower=ct.lower, tol=1e-12, max_iter=max_iter)
    g = _dual_value(ct.U, ct.w, ct.ptr, ct.t, conj, res.lam)
    assert g == pytest.approx(res.extra["dual_bound"], rel=1e-10, abs=1e-10)
    f = res.extra["objective_fy"]
    assert res.extra["rel_gap"] == pytest.approx((f - g) / max(1.0, abs(f)), rel=1e-6, abs=1e-12)
    assert f - g >= -1e-9 * max(1.0, abs(f))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sol = problem.solve(tol=1e-12, max_iter=max_iter, method="dual")
    assert not sol.converged
    assert sol.dual_value == pytest.approx(problem.dual_value(sol.dual), rel=1e-12)
    rel = sol.gap / max(1.0, abs(sol.objective))
    assert rel == pytest.approx(sol.info["rel_gap"], rel=1e-5, abs=1e-10)


@pytest.mark.parametrize("single", [True, False])
@pytest.mark.parametrize("factored", [True, False])
def test_newton_matrix_matches_products(single, factored):
    """The Newton matrix formed from the factors of Γ (symmetric rank-k updates, upper
    triangle, then a Cholesky solve) or, without them, from the r(r + 1)/2 distinct products
    z_k z_l (a symmetric rank-k update per sign of Γ) equals the matrix-free products, with one
    term per constraint (pairs) and with several (triplets: the sums over a constraint's terms)."""
    from types import SimpleNamespace

    from cvxkml.solvers._dual_newton_hessian import FreeHessian, divided_differences

    rng = np.random.default_rng(3)
    r, m = 12, 9
    sizes = np.ones(m, dtype=int) if single else rng.integers(1, 4, m)
    ptr = np.r_[0, np.cumsum(sizes)]
    ops = RankOneTerms(rng.normal(size=(ptr[-1], r)), rng.choice([-1.0, 1.0], ptr[-1]), ptr, np.zeros(m))
    mu = np.sort(rng.normal(size=r))
    conj = AlphaPower()
    Gam = divided_differences(mu, conj.conj_grad_s(mu), conj.conj_hess_s(mu))
    Gam[0, 1] = Gam[1, 0] = -0.5  # entries of both signs (a Γ of round-off sign)
    V = np.linalg.qr(rng.normal(size=(r, r)))[0]
    st = SimpleNamespace(Z=ops.U @ V)
    free = rng.random(m) < 0.8
    H = FreeHessian(ops, st, Gam, free, np.zeros(m), np.full(int(free.sum()), 1e-3))
    exact = np.column_stack([H.matvec(e) for e in np.eye(H.k)])
    factors = None
    if factored:
        sig, W = np.linalg.eigh(Gam)  # Γ = Σ σ_s g_s g_sᵀ, of both signs
        factors = (sig, W.T)
        assert (sig < 0).any() and (sig > 0).any()
    up = np.triu(H.dense(factors))
    assert np.allclose(up, np.triu(exact), rtol=1e-9, atol=1e-9 * np.abs(exact).max())
    b = rng.normal(size=H.k)
    assert np.allclose(H.solve(b, factors), np.linalg.solve(exact, b), rtol=1e-6)
