"""The KCR solver's paths for high-rank kernels (whitened rank r close to n), each against
a ground truth:

* the whole solve with those paths switched on at small n (the float32 Lanczos
  operator-norm estimate, tracked PSD
  steps with deep Krylov refinements, the working set with factor-only step lengths and
  re-seeds from the certificate's Aᵀ(τ∘s)) against the exact CVXPY model: certified, the
  certificate recomputed by ``KCR.solve`` from the returned Σ, h̃ and dual weights, within
  1e-3 of the exact optimum, each bound below the other side's objective;
* the deep refinement of :class:`PositivePartTracker` on matrices shaped like the KCR PSD
  step (a few small positive eigenvalues against a negative part a hundred times larger)
  against LAPACK's positive part: as accurate as its tolerance, and fewer LAPACK
  fallbacks than one-block refinements;
* ‖A Aᵀ − B Bᵀ‖_F² from the factors against the dense difference;
* the working set's fixed active pairs applied as dense rows (Fᵀ L₁ F V) against G₁ V summed
  from their rank-one terms;
* the float32 operator-norm estimate against the float64 one and the dense operator, and the
  Lanczos estimate against the dense operator.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.bench.kcr import random_instance
from cvxkml.solvers import kcr as kcr_module
from cvxkml.solvers._kcr.kernels import _factor_sq_dist
from cvxkml.solvers._kcr.psd import PositivePartTracker, operator_norm, operator_norm_lanczos
from cvxkml.testing import reference_or_discard

GAP, FEAS = 1e-3, 1e-9
HIGH_RANK_PATHS = dict(eig_min_size=0, working_set=dict(start=10.0))


@settings(max_examples=examples(8))
@given(
    seed=st.integers(0, 2**31 - 1),
    sizes=st.lists(st.integers(3, 9), min_size=2, max_size=3),
    kind=st.sampled_from(["gaussian", "gaussian", "linear"]),
    nu_factor=st.sampled_from([0.5, 1.0, 2.0]),
    lam=st.sampled_from([0.01, 0.1, 1.0, 10.0]),
)
def test_high_rank_paths_match_the_exact_model(seed, sizes, kind, nu_factor, lam):
    problem = random_instance(seed, sizes, kind, nu_factor, lam)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kcr_module, "_NORM_FLOAT32_MIN_R", 0)  # the float32 Lanczos ‖A‖ at every size
        fast = problem.solve(tol=1e-4, max_iter=100_000, **HIGH_RANK_PATHS)
    assert fast.converged and fast.info["gap"] <= 1e-4, fast
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = reference_or_discard(problem, cert_rtol=GAP / 10, viol_tol=FEAS)
    scale = max(1.0, abs(exact.objective))
    assert abs(fast.objective - exact.objective) <= GAP * scale, (fast, exact)
    assert fast.dual_value <= exact.objective + 1e-7 * scale
    assert exact.dual_value <= fast.objective + 1e-7 * scale
    S = fast.matrix
    tol = FEAS * max(1.0, float(np.linalg.norm(S, 2)))
    assert np.linalg.eigvalsh(S)[0] >= -tol and abs(S.sum()) <= tol
    assert fast.info["h"] >= problem.h_min


def _kcr_like(seed, r, k, drift, steps):
    """M_t = Q_t diag(θ) Q_tᵀ with k positive eigenvalues in [0.05, 3] and r − k negative
    ones in [−100, −0.01] (the KCR PSD step's shape), the basis rotating by ``drift``."""
    rng = np.random.default_rng(seed)
    theta = np.concatenate([rng.uniform(0.05, 3.0, k), -np.geomspace(0.01, 100.0, r - k)])
    Q = np.linalg.qr(rng.standard_normal((r, r)))[0]
    for _ in range(steps):
        A = rng.standard_normal((r, r)) * drift
        Q = np.linalg.qr(Q + Q @ (A - A.T))[0]
        yield (Q * theta) @ Q.T


def _positive_part(M):
    w, U = np.linalg.eigh(M)
    return (U[:, w > 0] * w[w > 0]) @ U[:, w > 0].T


@pytest.mark.parametrize("seed", [0, 1])
def test_deep_refinements_are_accurate_and_save_lapack_steps(seed):
    tol, r = 1e-3, 240
    fallbacks = {}
    for blocks in (1, 8):
        tr = PositivePartTracker(r, np.float64, guard=10, tol=tol, min_size=0, refine=2, refine_blocks=blocks)
        for M in _kcr_like(seed, r, 6, 3e-4, 10):
            P, w = tr(lambda V, M=M: M @ V, lambda M=M: M)
            exact = _positive_part(M)
            assert np.all(w > 0)
            assert np.linalg.norm(P @ P.T - exact) <= 5.0 * tol * max(1.0, np.linalg.norm(exact))
        fallbacks[blocks] = tr.n_rejected
    # measured: 9 of the 9 tracked steps fell back with one-block refinements, none with 8
    assert fallbacks[1] >= 7 and fallbacks[8] <= 2, fallbacks


@pytest.mark.parametrize("ka, kb", [(3, 5), (0, 4), (0, 0), (7, 7)])
def test_factor_step_length_equals_the_dense_one(ka, kb):
    rng = np.random.default_rng(ka * 10 + kb)
    A, B = rng.standard_normal((30, ka)), rng.standard_normal((30, kb))
    dense = float(np.sum((A @ A.T - B @ B.T) ** 2))
    assert _factor_sq_dist(A, B) == pytest.approx(dense, rel=1e-10, abs=1e-12)
    assert _factor_sq_dist(A, A) == pytest.approx(0.0, abs=1e-10 * max(1.0, np.sum((A @ A.T) ** 2)))


def test_float32_norm_estimate():
    rng = np.random.default_rng(3)
    F = rng.standard_normal((14, 5))
    n, r = F.shape
    # the dense operator A: vec(X) -> (z_ijᵀ X z_ij)_ij, and its norm
    Z = (F[:, None, :] - F[None, :, :]).reshape(n * n, r)
    A = np.einsum("pk,pl->pkl", Z, Z).reshape(n * n, r * r)
    true = float(np.linalg.norm(A, 2))
    for n_iter in (6, 200):  # from the same start, float32 follows float64 at every iteration count
        est64 = operator_norm(F, n_iter=n_iter, rtol=0.0)
        est32 = operator_norm(F, n_iter=n_iter, rtol=0.0, dtype=np.float32)
        assert est64 <= true * (1.0 + 1e-12)
        assert est32 == pytest.approx(est64, rel=1e-5)
    assert est64 == pytest.approx(true, rel=1e-6)


@pytest.mark.parametrize("n, r", [(14, 5), (30, 1), (40, 12), (25, 25)])
def test_lanczos_norm_estimate_is_a_lower_bound_within_its_residual(n, r):
    """√ of the largest Ritz value of AᵀA: never above the dense ‖A‖ (beyond float32 rounding),
    within 1e-4 of it at the setup's residual tolerance 1e-2, to rounding when run to 1e-10 or
    to an invariant Krylov space (r = 1: one product); float32 follows float64."""
    rng = np.random.default_rng(n + r)
    F = rng.standard_normal((n, r))
    Z = (F[:, None, :] - F[None, :, :]).reshape(n * n, r)
    A = np.einsum("pk,pl->pkl", Z, Z).reshape(n * n, r * r)
    true = float(np.linalg.norm(A, 2))
    for dtype, rnd in ((np.float64, 1e-12), (np.float32, 1e-6)):
        loose = operator_norm_lanczos(F, rtol=1e-2, dtype=dtype)
        tight = operator_norm_lanczos(F, rtol=1e-10, dtype=dtype)
        assert loose <= true * (1.0 + rnd) and tight <= true * (1.0 + rnd)
        assert loose == pytest.approx(true, rel=1e-4)
        assert tight == pytest.approx(true, rel=10 * rnd)
    assert operator_norm_lanczos(F, n_iter=1, rtol=0.0) <= true * (1.0 + 1e-12)


def test_deep_refinements_on_degenerate_spectra_and_an_empty_block():
    """Two eigenvalue levels (the Krylov space is exhausted after two blocks) and no guard
    vectors with an empty positive part (an empty tracked block): every step is still the
    positive part LAPACK computes."""
    rng = np.random.default_rng(5)
    r = 60
    Q = np.linalg.qr(rng.standard_normal((r, r)))[0]
    tr = PositivePartTracker(r, np.float64, guard=0, tol=1e-12, min_size=0, refine=2, refine_blocks=8)
    for k in (0, 0, 3, 3, 0):
        M = (Q * np.where(np.arange(r) < k, 2.0, -1.0)) @ Q.T
        P, w = tr(lambda V, M=M: M @ V, lambda M=M: M)
        exact = _positive_part(M)
        assert P.shape[1] == k and np.all(w > 0)
        assert np.linalg.norm(P @ P.T - exact) <= 1e-8 * max(1.0, np.linalg.norm(exact))


@pytest.mark.parametrize("n_on", [3, 12])
def test_fixed_pairs_applied_as_rows_equal_their_adjoint(n_on):
    """The tracked step's products apply the working set's fixed active pairs as dense rows
    in the n-space product when few rows are ON: Fᵀ L₁ F V equals G₁ V (G₁ = Aᵀ(τ∘1_ONE),
    accumulated from the pairs' rank-one terms)."""
    from cvxkml.solvers._kcr.working_set import _ON, _WorkingSet

    p = random_instance(4, [9, 8, 7], "gaussian", 1.0, 1.0)
    su = kcr_module._setup(p.F, p.tau, p.c, p.lam, p.h_min, 0.75, "double", True)
    n, r = su.n, su.r
    rng = np.random.default_rng(n_on)
    U = np.where(rng.random((n, n)) < 0.4, 2.0, -2.0)
    U[n_on:] = -2.0  # only the first n_on rows have an active outer hinge
    s = (U > 0).astype(float)
    ws = _WorkingSet(su, margin=0.1, row_margin=1.0)
    ws.update(U, s, shrink=False, first=True)
    assert np.count_nonzero(ws.kind == _ON) == n_on and ws.one.any()
    one = ws.one.astype(float)
    G1 = sum(su.tau[i, j] * np.outer(su.Fs[i] - su.Fs[j], su.Fs[i] - su.Fs[j]) for i, j in zip(*np.nonzero(one)))
    np.testing.assert_allclose(ws.G1, G1, rtol=1e-10, atol=1e-10 * np.abs(G1).max())
    V = rng.standard_normal((r, 4))
    if 2 * n_on * n < r * r:
        assert ws.one_w is not None
        Y = np.zeros((n, 4))
        ws.fixed_apply(su.Fs @ V, Y)
        np.testing.assert_allclose(su.Fs.T @ Y, G1 @ V, rtol=1e-9, atol=1e-9 * np.abs(G1 @ V).max())
    else:
        assert ws.one_w is None and ws.G1_it is not None
