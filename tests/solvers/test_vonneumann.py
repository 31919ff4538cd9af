"""cvxkml.solvers.vonneumann's kernels against dense linear algebra: the secular-equation roots
and Gu–Eisenstat vectors are the eigen-decomposition of diag(d) + ρzzᵀ (also with poles
1e-10 apart), and one projection moves log X̂ by a rank-one term along v̂ (the von Neumann
dual: log X̂ = log X̂0 − Σ δ_c λ_c v̂_c v̂_cᵀ) onto its constraint."""

from __future__ import annotations

import numpy as np
import pytest

from cvxkml.solvers.vonneumann import _N_STATS, eigvecs_from_roots, project_pair, secular_roots


def _secular_case(rng, k, close):
    gaps = 10.0 ** rng.uniform(-10 if close else -2, 1, k)
    d = np.cumsum(gaps) - 3.0
    z = rng.standard_normal(k)
    z[np.abs(z) < 1e-3] = 1e-3
    rho = float(rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-2, 2))
    return d, z, rho


@pytest.mark.parametrize("close", [False, True])
def test_secular_roots_and_vectors_are_the_eigendecomposition(close):
    rng = np.random.default_rng(5 + close)
    for _ in range(60):
        k = int(rng.integers(1, 12))
        d, z, rho = _secular_case(rng, k, close)
        anchor, tau = np.empty(k, dtype=np.int64), np.empty(k)
        secular_roots(d, z, rho, anchor, tau)
        lam = d[anchor] + tau
        A = np.diag(d) + rho * np.outer(z, z)
        ref = np.linalg.eigvalsh(A)
        scale = np.abs(d).max() + abs(rho) * z @ z
        np.testing.assert_allclose(lam, ref, atol=1e-12 * scale)
        assert np.all(np.diff(lam) > 0)  # strictly interlaced, increasing
        U = np.empty((k, k))
        eigvecs_from_roots(d, z, rho, anchor, tau, U)
        np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-11)
        np.testing.assert_allclose(U @ np.diag(lam) @ U.T, A, atol=1e-11 * scale)


def _log_X(W, q):
    return (W * q) @ W.T


@pytest.mark.parametrize("delta", [1.0, -1.0])
@pytest.mark.parametrize("gamma", [np.inf, 1.5])
def test_a_projection_is_a_rank_one_step_in_log_space_onto_the_constraint(delta, gamma):
    rng = np.random.default_rng(int(delta > 0) + 2 * np.isfinite(gamma))
    r = 5
    for _ in range(40):
        Q, _ = np.linalg.qr(rng.standard_normal((r, r)))
        W, q = Q.copy(), rng.uniform(-1.0, 1.0, r)
        v = rng.standard_normal(r)
        p = float(v @ (W * np.exp(q)) @ W.T @ v)
        target = p * (0.5 if delta > 0 else 2.0)  # violated: the projection moves
        L0 = _log_X(W, q)
        dl, new_target = project_pair(W, q, v, target, delta, 0.0, gamma, np.zeros(_N_STATS))
        assert dl > 0
        L1 = _log_X(W, q)
        np.testing.assert_allclose(L1 - L0, -delta * dl * np.outer(v, v), atol=1e-9 * (1 + np.abs(L0).max()))
        np.testing.assert_allclose(W.T @ W, np.eye(r), atol=1e-10)
        p_new = float(v @ (W * np.exp(q)) @ W.T @ v)
        assert p_new == pytest.approx(new_target, rel=1e-8)  # on the (moved) constraint
        if np.isinf(gamma):
            assert new_target == target
        else:
            # ξ' = ξ·exp(δΔλ/γ): log ξ_c = log b_c + δ_c λ_c / γ, the slack's side of the dual
            assert new_target == pytest.approx(target * np.exp(delta * dl / gamma), rel=1e-12)
            assert delta * (new_target - target) > 0  # the slack gives way


def test_a_satisfied_constraint_without_multiplier_is_not_moved():
    rng = np.random.default_rng(9)
    r = 4
    W, q = np.eye(r), rng.uniform(-1, 1, r)
    v = rng.standard_normal(r)
    p = float(v @ np.diag(np.exp(q)) @ v)
    W0, q0 = W.copy(), q.copy()
    dl, t = project_pair(W, q, v, 2.0 * p, 1.0, 0.0, np.inf, np.zeros(_N_STATS))
    assert dl == 0.0 and t == 2.0 * p
    np.testing.assert_array_equal(W, W0)
    np.testing.assert_array_equal(q, q0)


@pytest.mark.parametrize("close", [False, True])
def test_the_last_root_pass_leaves_the_cauchy_matrix(close):
    """The reciprocals the eigenvectors multiply are those of the last pass of each root (bit
    for bit: the same anchored difference), and the eigenvectors formed from them alone (ẑ by
    products of the Cauchy matrix with the pole differences) are the eigenvectors of eigh, also
    with poles 1e-10 apart."""
    from cvxkml.solvers._vonneumann.projection import _eigvecs_r
    from cvxkml.solvers._vonneumann.secular import _secular_k

    rng = np.random.default_rng(11 + close)
    for _ in range(40):
        k = int(rng.integers(1, 14))
        d, z, rho = _secular_case(rng, k, close)
        anchor, tau, c2, dd, inv = np.empty(k, dtype=np.int64), np.empty(k), np.empty(k), np.empty(k), np.empty((k, k))
        _secular_k(d, z, rho, anchor, tau, c2, False, 0.0, dd, inv)
        Delta = (d[None, :] - d[anchor][:, None]) - tau[:, None]
        np.testing.assert_array_equal(inv, 1.0 / Delta)
        _eigvecs_r(d, z, rho, anchor, tau, inv, np.empty(k))
        U = inv.T
        lam = d[anchor] + tau
        A = np.diag(d) + rho * np.outer(z, z)
        scale = np.abs(d).max() + abs(rho) * z @ z
        np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-11)
        np.testing.assert_allclose(U @ np.diag(lam) @ U.T, A, atol=1e-11 * scale)


def test_sweeps_keep_q_sorted_and_the_dual_relation():
    """Unsorted q0 and clustered (deflated) poles: after the sweeps q is stored in increasing
    order, W is orthogonal and log X̂ = log X̂0 − Σ δ_c λ_c v_c v_cᵀ (the von Neumann dual)."""
    from cvxkml.solvers.vonneumann import _sweeps_vn_set

    rng = np.random.default_rng(21)
    r, m = 7, 12
    F = rng.standard_normal((10, r))
    q0 = rng.permutation(np.array([0.3, -0.2, 0.3, 0.3 + 1e-14, 1.1, -0.7, 0.5]))
    I, J = rng.integers(0, 5, m), rng.integers(5, 10, m)
    V = F[I] - F[J]
    p0 = np.einsum("ij,j,ij->i", V, np.exp(q0), V)
    delta = rng.choice([-1.0, 1.0], m)
    bound = p0 * np.where(delta > 0, 0.6, 1.6)
    W, q, lam, xi, st = np.eye(r), q0.copy(), np.zeros(m), bound.copy(), np.zeros(_N_STATS)
    _sweeps_vn_set(W, q, F, I, J, delta, xi, lam, 1.0, 0.0, 5, st, np.arange(m))
    assert np.all(np.diff(q) >= 0)
    np.testing.assert_allclose(W.T @ W, np.eye(r), atol=1e-12)
    L = (W * q) @ W.T
    ref = np.diag(q0) - V.T @ (V * (delta * lam)[:, None])
    np.testing.assert_allclose(L, ref, atol=1e-10 * (1 + np.abs(ref).max()))


def test_the_callback_reports_stop_value():
    """The callback dict carries the value the stopping rule compares with tol as
    ``stop_value`` (and under its former name ``dual_change``)."""
    from cvxkml.solvers.vonneumann import vonneumann_pairs

    rng = np.random.default_rng(3)
    F = rng.standard_normal((8, 3))
    I, J = np.array([0, 1, 2]), np.array([5, 6, 7])
    seen = []
    vonneumann_pairs(F, np.zeros(3), I, J, np.array([1.0, -1.0, 1.0]), np.ones(3), 1.0, 1e-9, 3, callback=seen.append)
    assert seen and all(info["stop_value"] == info["dual_change"] for info in seen)


def _violated_pairs(seed, n, r, m, spread, moves):
    """Pair constraints on n random points of R^r (pairs across the two halves), log X̂0 =
    diag(q0) with q0 in ±``spread``, each bound its pair's distance at X̂0 times ``moves[0]``
    (similar, δ = 1) or ``moves[1]`` (dissimilar): (F, q0, I, J, δ, bounds, F[I] − F[J])."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, r))
    q0 = rng.uniform(-spread, spread, r)
    I, J = rng.integers(0, n // 2, m), rng.integers(n // 2, n, m)
    V = F[I] - F[J]
    p0 = np.einsum("ij,j,ij->i", V, np.exp(q0), V)
    delta = rng.choice([-1.0, 1.0], m)
    return F, q0, I, J, delta, p0 * np.where(delta > 0, *moves), V


@pytest.mark.parametrize("gamma", [None, 1.0])
def test_violated_passes_end_certified_on_the_dual_relation(gamma):
    """``violated_passes``: the passes over the violated constraints are projections of the same
    kind (λ >= 0 and log X̂ = log X̂0 − Σ δ_c λ_c v_c v_cᵀ at the end), and OK under
    ``stop="certificate"`` means the certificate of the returned point holds."""
    from cvxkml.solvers.vonneumann import certificate, vonneumann_pairs

    moves = (0.7, 1.4) if gamma else (0.9, 1.1)
    F, q0, I, J, delta, bound, V = _violated_pairs(31 + (gamma is None), 40, 6, 80 if gamma else 12, 1.0, moves)
    res = vonneumann_pairs(F, q0, I, J, delta, bound, gamma, 1e-6, 500, stop="certificate", violated_passes=5)
    assert res.code == 0 and res.extra["violated_passes"] > 0
    W, q = res.extra["W"], res.extra["q"]
    cert = certificate(F, q0, I, J, delta, bound, res.xi, res.lam, W, q, gamma)
    assert abs(cert["rel_gap"]) <= 1e-6 and cert["rel_violation"] <= 1e-6
    assert cert["objective"] == pytest.approx(res.extra["certificate"]["objective"], rel=1e-12)
    assert np.all(res.lam >= 0)
    ref = np.diag(q0) - V.T @ (V * (delta * res.lam)[:, None])
    np.testing.assert_allclose((W * q) @ W.T, ref, atol=1e-9 * (1 + np.abs(ref).max()))


def test_all_finite_catches_inf_and_nan_anywhere():
    """The guard on the eigenvector matrix (one vectorized reduction): any inf or NaN entry."""
    from cvxkml.solvers._vonneumann.projection import _all_finite

    A = np.random.default_rng(4).standard_normal((37, 41)) * 1e300
    assert _all_finite(A)
    for bad in (np.inf, -np.inf, np.nan):
        for i, j in ((0, 0), (36, 40), (17, 3)):
            B = A.copy()
            B[i, j] = bad
            assert not _all_finite(B)


def test_projection_ftol_follows_the_tightest_tolerance():
    """ZEROFINDER's stop of a solve: 1e-3 of its tightest positive tolerance, between the exact
    stop (round-off) and 1e-6."""
    from cvxkml.solvers._vonneumann.secular import EXACT_FTOL
    from cvxkml.solvers.vonneumann import projection_ftol

    assert projection_ftol(1e-3, 1e-3, 1e-3) == 1e-6
    assert projection_ftol(1e-1, 1e-6, 1e-3) == pytest.approx(1e-9)
    # a tolerance <= 0 is ignored here (vonneumann_pairs itself projects exactly when tol <= 0)
    assert projection_ftol(-1.0, 1e-6, 1e-6) == pytest.approx(1e-9)
    assert projection_ftol(1e-12, 1e-10, 1e-10) == EXACT_FTOL  # tight solves: exact projections
    assert projection_ftol(0.0, None) == EXACT_FTOL


@pytest.mark.parametrize("gamma", [np.inf, 1.5])
def test_a_loose_projection_lands_within_ftol_on_the_dual_relation(gamma):
    """A projection stopped at ``ftol`` leaves its constraint within ftol·max(1, |log target|)
    of the target (in log) and is still the exact rank-one step of its multiplier in log space
    (log X̂1 − log X̂0 = −δΔλ vvᵀ: the iterate stays the one its λ defines); over many
    projections the looser stop evaluates h fewer times than the exact one."""
    from cvxkml.solvers._vonneumann.secular import EXACT_FTOL

    rng = np.random.default_rng(41 + np.isfinite(gamma))
    r = 30
    evals = {}
    for ftol in (EXACT_FTOL, 1e-9, 1e-6):
        sub = np.random.default_rng(rng.integers(2**31))
        st = np.zeros(_N_STATS)
        for _ in range(40):
            Q, _ = np.linalg.qr(sub.standard_normal((r, r)))
            W, q = Q.copy(), sub.uniform(-8.0, 8.0, r)
            v = sub.standard_normal(r)
            delta = float(sub.choice([-1.0, 1.0]))
            p = float(v @ (W * np.exp(q)) @ W.T @ v)
            target = p * np.exp(-delta * sub.uniform(0.05, 2.0))  # violated
            L0 = _log_X(W, q)
            dl, new_target = project_pair(W, q, v, target, delta, 0.0, gamma, st, ftol)
            assert dl > 0
            L1 = _log_X(W, q)
            np.testing.assert_allclose(L1 - L0, -delta * dl * np.outer(v, v), atol=1e-9 * (1 + np.abs(L0).max()))
            p_new = float(v @ (W * np.exp(q)) @ W.T @ v)
            assert abs(np.log(p_new / new_target)) <= ftol * max(1.0, abs(np.log(target))) + 1e-11
        evals[ftol] = st[0] / st[1]
    assert evals[1e-6] < evals[1e-9] < evals[EXACT_FTOL]


def test_a_loose_solve_certifies_the_optimum_of_an_exact_one():
    """vonneumann_pairs at tol 1e-4 (projections stopped at 1e-7) and at tol 1e-12 (exact
    projections): both certified by the certificate recomputed from their returned λ, ξ, W, q,
    the same objective to the loose tolerance, and fewer evaluations of h per projection."""
    from cvxkml.solvers.vonneumann import certificate, vonneumann_pairs

    F, q0, I, J, delta, bound, _ = _violated_pairs(43, 50, 12, 60, 3.0, (0.5, 2.0))
    runs = {}
    for tol in (1e-4, 1e-12):
        res = vonneumann_pairs(F, q0, I, J, delta, bound, 1.0, tol, 20_000, stop="certificate")
        assert res.code == 0
        cert = certificate(F, q0, I, J, delta, bound, res.xi, res.lam, res.extra["W"], res.extra["q"], 1.0)
        assert abs(cert["rel_gap"]) <= max(tol, 1e-6) and cert["rel_violation"] <= max(tol, 1e-6)
        runs[tol] = (cert["objective"], res.extra["evals_per_projection"])
    assert runs[1e-4][0] == pytest.approx(runs[1e-12][0], rel=2e-4)
    assert runs[1e-4][1] < runs[1e-12][1]


@pytest.mark.parametrize("gamma", [np.inf, 1.5])
def test_a_projection_clipped_by_the_dual_correction_takes_one_root_solve(gamma):
    """A constraint with multiplier λ_c > 0 that the projection would pass: Δλ = −λ_c exactly,
    log X̂ moves by δλ_c vvᵀ (θ = δλ_c, the clip point), found with one root solve (ZEROFINDER
    tests the clip point when its Newton step passes it, instead of solving for θ* and again at
    the clip point); with λ_c beyond θ* the projection is not clipped and lands on its
    constraint within ftol."""
    from cvxkml.solvers._vonneumann.secular import EXACT_FTOL

    rng = np.random.default_rng(47 + np.isfinite(gamma))
    r = 20
    for ftol in (EXACT_FTOL, 1e-6):
        roots = {True: [], False: []}
        for _ in range(30):
            Q, _ = np.linalg.qr(rng.standard_normal((r, r)))
            q = rng.uniform(-4.0, 4.0, r)
            v = rng.standard_normal(r)
            delta = float(rng.choice([-1.0, 1.0]))
            p = float(v @ (Q * np.exp(q)) @ Q.T @ v)
            target = p * np.exp(delta * rng.uniform(0.2, 1.0))  # satisfied: θ* = δ|θ*| frees λ_c
            # the unclipped step from an exact projection
            W, qq = Q.copy(), q.copy()
            dl_free, _ = project_pair(W, qq, v, target, delta, 1e6, gamma, np.zeros(_N_STATS))
            assert dl_free < 0
            for clipped in (True, False):
                lam_c = -dl_free * (0.3 if clipped else 3.0)
                W, qq, st = Q.copy(), q.copy(), np.zeros(_N_STATS)
                L0 = _log_X(W, qq)
                dl, new_target = project_pair(W, qq, v, target, delta, lam_c, gamma, st, ftol)
                L1 = _log_X(W, qq)
                np.testing.assert_allclose(L1 - L0, -delta * dl * np.outer(v, v), atol=1e-9 * (1 + np.abs(L0).max()))
                np.testing.assert_allclose(W.T @ W, np.eye(r), atol=1e-10)
                if clipped:
                    assert dl == -lam_c
                else:
                    assert -lam_c < dl < 0
                    p_new = float(v @ (W * np.exp(qq)) @ W.T @ v)
                    assert abs(np.log(p_new / new_target)) <= ftol * max(1.0, abs(np.log(target))) + 1e-11
                roots[clipped].append(st[4] / r)
        assert np.mean(roots[True]) <= 1.1  # one root solve (was two: at θ* and at the clip point)
        assert np.mean(roots[True]) < np.mean(roots[False])
