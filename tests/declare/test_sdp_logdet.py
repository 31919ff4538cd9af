"""SDP with a LogDet barrier (Jain et al. 2012 eq. 23–25; Kulis, Sra & Dhillon 2009):
the LinearLogDet regularizer, SDPLogDetKernel / SDPLogDetMetric, the barrier Bregman
projections (cvxkml.solvers.sdp_logdet) against the exact CVXPY model, and the approach
of the barrier optimum to the SDP optimum as γ → 0.

Stated tolerances: relative objective gap |f_fast − f_exact| <= 1e-6·max(1, |f_exact|)
+ |certificate of f_exact|; relative violations (as SpectralProblem._max_relative_violation)
<= 1e-6; fast certificate |f − g(λ)| <= 1e-6·max(1, |f|).  Draws are feasible with an
interior by construction; honest non-convergence (warning + converged=False, checked on
every draw) is not counted (assume).
"""

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cvxkml.declare import LogDetKernel, SpectralKernel
from cvxkml.declare.sdp import LinearLogDet, SDPLogDetKernel, SDPLogDetMetric, UnboundedError, barrier_path
from cvxkml.declare.terms import constraint_terms
from cvxkml.errors import ConvergenceWarning, InfeasibleError, InvalidInputError
from cvxkml.kernels import gaussian_kernel
from cvxkml.sideinfo import LinearConstraints, PairConstraints, RelativeConstraints, SimilarityConstraints
from cvxkml.solvers.sdp_logdet import barrier_primal, project_one
from cvxkml.testing import (
    assert_matches_reference,
    kernel_instance,
    metric_instance,
    reference_or_discard,
    solve_fast_honestly,
)

EXAMPLES = examples(25)
GAP, VIOL, CERT = 1e-6, 1e-6, 1e-6
gammas = st.sampled_from([0.1, 1.0, 10.0])


def _fast(problem, **kw):
    return solve_fast_honestly(problem, **kw)


def _check(problem, **kw):
    fast = _fast(problem, **kw)
    assume(fast.converged)
    exact = reference_or_discard(problem, feasible=fast)  # optimal, certificate <= 1e-7, or discarded
    assert_matches_reference(problem, fast, exact, rtol=GAP, viol=VIOL)
    assert fast.info["max_relative_violation"] <= VIOL, fast
    assert abs(fast.gap) <= CERT * max(1.0, abs(fast.objective)), fast
    assert np.linalg.eigvalsh(problem.whiten(fast.matrix))[0] > 0  # strictly inside
    return fast, exact


def _pd(rng, n, ridge=0.1):
    B = rng.normal(size=(n, n))
    return B @ B.T / n + ridge * np.eye(n)


def mvu_instance(seed, n):
    """'Maximize the variance' (C0 = −I, an indefinite Ĉ0: phase I runs): squared distances
    on a connected k-NN graph bounded by their values in a random 2-D layout, and
    1ᵀK1 <= 1 (the mean, which no pair distance sees).  Bounded, with an interior."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    D = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
    E = {(a, a + 1) for a in range(n - 1)}
    for a in range(n):
        for b in np.argsort(D[a])[1:3]:
            E.add((min(a, b), max(a, b)))
    E = sorted(E)
    i = np.array([e[0] for e in E])
    j = np.array([e[1] for e in E])
    K0 = gaussian_kernel(X, sigma=1.0)
    return K0, [PairConstraints(i, j, np.ones(i.size), D[i, j]), LinearConstraints(b=[1.0], Z=np.ones((1, n)))]


# --------------------------------------------------------------------------- one projection
@pytest.mark.parametrize("q", [1, 2, 3, 5])
def test_projection_against_direct_formula(q):
    """A projection moves λ_c by δ and sets X ← γ(γX⁻¹ + δÂ)⁻¹ with tr(X Â) = t (the root
    of h), unless the cap δ = −λ_c binds (then tr(XÂ) <= t); closed form for q = 1."""
    rng = np.random.default_rng(q)
    for _ in range(40):
        r = int(rng.integers(q, 8))
        X = _pd(rng, r, 0.05)
        U = rng.normal(size=(q, r))
        w = rng.normal(size=q) if q > 1 else np.array([rng.choice([-1.0, 1.0])])
        gamma = 10 ** rng.uniform(-2, 1)
        A = (U.T * w) @ U
        cur = float(np.sum(X * A))
        t = cur * rng.uniform(0.2, 1.8) + rng.normal() * 0.1 * abs(cur)
        lam_c = float(rng.choice([0.0, rng.uniform(0, 2)]))
        Xn, delta, code = project_one(X, U, w, t, lam_c, gamma)
        if code != 0:  # only when no X ≻ 0 reaches t (e.g. Â ⪰ 0, t <= 0)
            assert np.all(np.linalg.eigvalsh(A) >= -1e-12) and t <= 0
            continue
        assert delta >= -lam_c - 1e-15
        ref = gamma * np.linalg.inv(gamma * np.linalg.inv(X) + delta * A)
        np.testing.assert_allclose(Xn, ref, rtol=1e-8, atol=1e-10 * np.abs(ref).max())
        new = float(np.sum(Xn * A))
        if delta > -lam_c + 1e-12:
            assert abs(new - t) <= 1e-8 * max(abs(t), np.sum(np.abs(np.linalg.eigvalsh(Xn @ A))))
        else:
            assert new <= t + 1e-8 * max(1.0, abs(t))
        if q == 1 and w[0] * t > 0:  # δ* = γ(1/t − 1/(w p))
            p = float(U[0] @ X @ U[0])
            assert delta == pytest.approx(max(gamma * (1 / t - 1 / (w[0] * p)), -lam_c), rel=1e-10)


# --------------------------------------------------------------------------- fast vs exact
@settings(max_examples=EXAMPLES)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(3, 9),
    m=st.integers(1, 8),
    kind=st.sampled_from(["gaussian", "linear-ridge", "lowrank"]),
    gamma=gammas,
)
def test_kernel_pd_objective_fast_vs_exact(seed, n, m, kind, gamma):
    """Ĉ0 ≻ 0 (no phase I): rank-one Bregman projections vs the log_det model."""
    K0, pc = kernel_instance(seed, n, m, hard=True, kind=kind)
    C0 = _pd(np.random.default_rng(seed + 1), n)
    _check(SDPLogDetKernel(K0, pc, C0, gamma))


@settings(max_examples=EXAMPLES)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(1, 5), extra=st.integers(1, 6), m=st.integers(1, 5), gamma=gammas)
def test_metric_fast_vs_exact_and_kernel_form(seed, d, extra, m, gamma):
    """Metric form (24) with Φ = Xᵀ (rank X = d): fast vs exact, and the kernel form on
    K0 = XXᵀ gives K* = X W* Xᵀ (the same problem, rotated)."""
    n = d + extra
    X, pc = metric_instance(seed, n, d, m, hard=True)
    C0 = _pd(np.random.default_rng(seed + 2), n)
    fast, _ = _check(SDPLogDetMetric(X, pc, C0, gamma))
    kern = SDPLogDetKernel(X @ X.T, pc, C0, gamma).solve()
    if kern.converged:
        np.testing.assert_allclose(X @ fast.matrix @ X.T, kern.matrix, atol=1e-6 * max(1.0, np.abs(kern.matrix).max()))
        assert kern.objective == pytest.approx(fast.objective, rel=1e-6, abs=1e-6)


@settings(max_examples=max(examples(5), EXAMPLES // 2))
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(4, 9), gamma=st.sampled_from([0.1, 1.0]))
def test_indefinite_objective_phase1_fast_vs_exact(seed, n, gamma):
    """C0 = −I ('maximize the trace', MVU-like): Ĉ0 is not PD, phase I (auxiliary trace
    bound, a q = r projection) finds a dual-feasible start; then vs the exact model."""
    K0, cons = mvu_instance(seed, n)
    fast, _ = _check(SDPLogDetKernel(K0, cons, -np.eye(n), gamma), max_iter=100_000)
    assert fast.info["phase1_sweeps"] > 0


def test_all_constraint_families_fast_vs_exact():
    """Relative (q = 2), similarity (q = 2) and dense linear (q = rank C) constraints next to
    pairs, all strictly satisfied by a known K_true ≻ 0 (so the barrier problem has an
    interior); Ĉ0 ≻ 0."""
    rng = np.random.default_rng(5)
    n = 8
    Y = rng.normal(size=(n, 3))
    K_true = Y @ Y.T + 0.3 * np.eye(n)
    d = lambda a, b: K_true[a, a] + K_true[b, b] - 2 * K_true[a, b]
    trip = [(0, 1, 2), (3, 4, 5), (6, 7, 1)]
    trip = [(a, b, c) if d(a, b) < d(a, c) else (a, c, b) for a, b, c in trip]
    rel = RelativeConstraints(
        [t[0] for t in trip],
        [t[1] for t in trip],
        [t[2] for t in trip],
        [0.5 * (d(a, c) - d(a, b)) for a, b, c in trip],
    )
    sim = SimilarityConstraints([0, 2], [5, 6], [K_true[0, 5] - 0.5, K_true[2, 6] - 0.5])
    C = np.zeros((2, n, n))
    C[0, :3, :3] = 1.0
    C[1] = np.diag(rng.uniform(0, 1, n))
    lin = LinearConstraints(b=np.einsum("tab,ab->t", C, K_true) + 1.0, C=C)
    pc = PairConstraints([0, 4], [3, 7], [1, -1], [d(0, 3) * 1.5, d(4, 7) * 0.5])
    prob = SDPLogDetKernel(K_true + np.eye(n), [pc, rel, sim, lin], _pd(rng, n), 0.5)
    ct = constraint_terms(prob)
    assert list(np.diff(ct.ptr)[: 2 + 3 + 2]) == [1, 1, 2, 2, 2, 2, 2]
    fast = _fast(prob, max_iter=100_000)
    exact = prob.solve_reference()
    assert fast.converged
    assert abs(fast.objective - exact.objective) <= GAP * max(1, abs(exact.objective)) + abs(exact.gap)
    assert fast.info["max_relative_violation"] <= VIOL and abs(fast.gap) <= CERT * max(1, abs(fast.objective))


def test_logdet_is_the_special_case_C0_inverse_K0():
    """tr(K K0⁻¹) − log det(K0^-½KK0^-½) = D_ld(K, K0) + n: with C0 = K0⁻¹ and γ = 1 the
    barrier problem is LogDet kernel learning (Jain et al. eq. 3), λ_barrier = γ λ_ITML."""
    K0, pc = kernel_instance(3, 8, 6, hard=True, kind="gaussian")
    sdp = SDPLogDetKernel(K0, pc, np.linalg.inv(K0), 1.0).solve()
    ld = LogDetKernel(K0, pc).solve(tol=1e-12)
    assert sdp.converged and ld.converged
    np.testing.assert_allclose(sdp.matrix, ld.matrix, atol=1e-8)
    np.testing.assert_allclose(sdp.dual, ld.dual, rtol=1e-6, atol=1e-9)
    assert sdp.objective == pytest.approx(ld.objective + 8, abs=1e-8)
    assert sdp.solver == "barrier-bregman-kernel-sdp-logdet"


# --------------------------------------------------------------------------- γ → 0
def test_barrier_optimum_approaches_sdp_optimum():
    """Central path: with X̂_γ the barrier optimum, λ_γ is SDP-dual feasible and the SDP gap
    is exactly γ r, so 0 <= tr(X̂_γĈ0) − p* <= γ r, and tr(X̂_γĈ0) decreases with γ.
    Measured on this instance (n = r = 8, p* = −12.98134709): excess 2.131, 0.4484, 0.04914,
    4.990e-3, 4.999e-4 for γ = 1 … 1e-4 (≈ 0.62 γ r) with the exact model; the fast solver
    matches to 1e-5 (relative) where it converges (γ >= 0.01 within 100 000 sweeps)."""
    K0, cons = mvu_instance(0, 8)
    prob = SDPLogDetKernel(K0, cons, -np.eye(8), 1.0)
    gs = [1.0, 0.1, 0.01, 1e-3, 1e-4]
    p_sdp, exact = barrier_path(prob, gs, fast=False)
    lin = np.array([row["linear"] for row in exact])
    assert np.all(np.diff(lin) < 0)  # monotone in γ
    for row in exact:
        assert -1e-6 <= row["excess"] <= row["bound"] + 1e-6, row
    assert exact[-1]["excess"] <= 1e-3
    # the solutions converge too: distance to the γ = 1e-4 solution shrinks with γ
    last = exact[-1]["matrix"]
    dist = [np.linalg.norm(row["matrix"] - last) / np.linalg.norm(last) for row in exact[:-1]]
    assert np.all(np.diff(dist) < 0) and dist[-1] <= 1e-2, dist
    assert all(0 <= row["distance"] < np.inf for row in exact)
    _, fast = barrier_path(prob, gs[:3], fast=True, max_iter=100_000)
    for f, e in zip(fast, exact):
        assert f["converged"]
        assert f["linear"] == pytest.approx(e["linear"], rel=1e-5)
    sdp = prob.solve_sdp()
    assert sdp.info["linear_objective"] == pytest.approx(p_sdp) and abs(sdp.gap) <= 1e-6 * abs(p_sdp)


# --------------------------------------------------------------------------- errors
def test_unbounded_problems_are_reported():
    """C0 = −I with pair constraints only: the mean direction 11ᵀ is a recession direction
    (every pair distance ignores it), so (23) and (24) are unbounded below."""
    K0, cons = mvu_instance(1, 6)
    prob = SDPLogDetKernel(K0, cons[0], -np.eye(6), 0.5)
    with pytest.raises(UnboundedError, match="unbounded"):
        prob.solve(max_iter=100_000)
    with pytest.raises(UnboundedError, match="unbounded"):
        prob.solve_reference()
    with pytest.raises(UnboundedError, match="unbounded"):
        prob.solve_sdp()
    X = np.random.default_rng(0).normal(size=(4, 6))  # d > n: null(X) is unconstrained
    with pytest.raises(UnboundedError, match="rank 4 < d = 6"):
        SDPLogDetMetric(X, PairConstraints([0], [1], [1], 1.0), np.eye(4), 1.0)
    SDPLogDetMetric(X, PairConstraints([0], [1], [1], 1.0), np.eye(4), 0.0)  # γ = 0: allowed


def test_infeasible_and_bad_inputs():
    K0, pc = kernel_instance(2, 6, 3, hard=True)
    C0 = np.eye(6)
    # zᵀKz <= −1 cannot hold for K ⪰ 0
    bad = SDPLogDetKernel(K0, [pc, LinearConstraints(b=[-1.0], Z=np.ones((1, 6)))], C0, 1.0)
    with pytest.raises(InfeasibleError, match="cannot hold for any positive definite"):
        bad.solve()
    with pytest.raises(InfeasibleError):
        bad.solve_reference()
    with pytest.raises(InvalidInputError, match="gamma must be a finite number >= 0"):
        SDPLogDetKernel(K0, pc, C0, -1.0)
    with pytest.raises(InvalidInputError, match="C0 must be 6 × 6"):
        SDPLogDetKernel(K0, pc, np.eye(5), 1.0)
    with pytest.raises(InvalidInputError, match="symmetric"):
        SDPLogDetKernel(K0, pc, np.triu(np.ones((6, 6))), 1.0)
    with pytest.raises(InvalidInputError, match="not a spectral regularizer"):
        SpectralKernel(K0, pc, LinearLogDet(C0, 1.0))
    with pytest.raises(InvalidInputError, match="no fast solver"):
        SDPLogDetKernel(K0, pc, C0, 0.0).solve()
    with pytest.raises(InvalidInputError, match="lam0"):
        SDPLogDetKernel(K0, pc, C0, 1.0).solve(lam0=-np.ones(len(pc)))
    with pytest.raises(InvalidInputError, match="no slack formulation"):
        LinearLogDet(C0, 1.0).slack_value(np.ones(2), np.ones(2))


def test_warm_start_and_nonconvergence_are_honest():
    K0, cons = mvu_instance(3, 7)
    prob = SDPLogDetKernel(K0, cons, -np.eye(7), 0.3)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        short = prob.solve(max_iter=5)
    assert not short.converged and short.n_iter == 5
    full = prob.solve(max_iter=100_000)
    assert full.converged and full.info["phase1_sweeps"] > 0
    warm = prob.with_gamma(0.2).solve(lam0=full.dual, max_iter=100_000)  # Ĉ0 + A(λ) ≻ 0: no phase I
    assert warm.converged and warm.info["phase1_sweeps"] == 0
    ct = constraint_terms(prob)
    Xw = barrier_primal(prob.regularizer.C0h, ct.U, ct.w, ct.ptr, warm.dual, 0.2)
    np.testing.assert_allclose(prob.matrix_from_whitened(Xw), warm.matrix, atol=1e-10)
