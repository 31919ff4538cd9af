"""The fast paths of the POLA / dual-Newton operator class (cvxkml.solvers.pola._Ops) that
KernelPOLA, TraceSSIKDR (dual Newton) and the generic dual solver run on: the eigenbasis
Hessian product (with the flat block of Γ skipped), the sparse A(λ), the per-constraint
aggregation and the Lanczos Lipschitz constant — each against the plain dense formula."""

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cvxkml.declare.pola import POLAKernel, pola_constraints
from cvxkml.declare.terms import constraint_terms
from cvxkml.solvers.pola import _Ops, pola_dual
from cvxkml.testing import assert_matches_reference, kernel_instance, reference_or_discard


def _random_ops(rng, m, r, max_terms):
    counts = rng.integers(1, max_terms + 1, m)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    p = int(ptr[-1])
    U = rng.normal(size=(p, r))
    w = rng.choice([-1.0, 1.0], p) * rng.uniform(0.5, 2.0, p)
    t = rng.normal(size=m)
    return _Ops(U, w, ptr, t)


def _dense_hess_vec(ops, Gam, V, v):
    Dt = V.T @ ((ops.U.T * (ops.w * v[ops.owner])) @ ops.U) @ V
    X = V @ (Gam * Dt) @ V.T
    q = ops.w * np.einsum("ij,jk,ik->i", ops.U, X, ops.U)
    return np.bincount(ops.owner, weights=q, minlength=ops.m)


@settings(max_examples=examples(60))
@given(
    seed=st.integers(0, 2**31 - 1),
    m=st.integers(1, 25),
    r=st.integers(1, 12),
    max_terms=st.integers(1, 3),
    kind=st.sampled_from(["frobenius", "trace", "exp"]),
    sparsity=st.sampled_from([0.0, 0.5, 0.9]),
)
def test_hess_vec_matches_dense_formula(seed, m, r, max_terms, kind, sparsity):
    rng = np.random.default_rng(seed)
    ops = _random_ops(rng, m, r, max_terms)
    V = np.linalg.qr(rng.normal(size=(r, r)))[0]
    mu = rng.normal(size=r)
    if kind == "exp":  # Γ > 0 everywhere (von Neumann)
        x = np.exp(mu)
    else:  # a flat piece: Γ = 0 on a block
        x = np.maximum(mu - (0.3 if kind == "trace" else 0.0), 0.0) * (0.5 if kind == "trace" else 1.0)
    dm = mu[:, None] - mu[None, :]
    tie = np.abs(dm) < 1e-12
    Gam = np.where(tie, (x > 0)[:, None] * (x > 0)[None, :] * 1.0, (x[:, None] - x[None, :]) / np.where(tie, 1.0, dm))
    for _ in range(2):  # the second call uses the cache
        v = rng.normal(size=m) * (rng.random(m) >= sparsity)
        ref = _dense_hess_vec(ops, Gam, V, v)
        np.testing.assert_allclose(ops.hess_vec(Gam, V, v), ref, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(ref).max()))
    # A(λ) with many zero multipliers (the active-set branch) = the dense sum
    lam = rng.random(m) * (rng.random(m) >= sparsity)
    dense = (ops.U.T * (ops.w * lam[ops.owner])) @ ops.U
    np.testing.assert_allclose(ops.A(lam), dense, atol=1e-12 * max(1.0, np.abs(dense).max()))


@settings(max_examples=examples(40))
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 30), r=st.integers(1, 8), max_terms=st.integers(1, 3))
def test_hessian_and_lipschitz_aggregate_per_constraint(seed, m, r, max_terms):
    rng = np.random.default_rng(seed)
    ops = _random_ops(rng, m, r, max_terms)
    p = ops.U.shape[0]
    S = np.zeros((p, m))
    S[np.arange(p), ops.owner] = 1.0
    V = np.linalg.qr(rng.normal(size=(r, r)))[0]
    mu = rng.normal(size=r)
    Ut = ops.U @ V
    Q = (Ut[:, :, None] * Ut[:, None, :]).reshape(p, -1)
    Gam = ops.divided_differences(mu)
    Ht = (Q * Gam.ravel()) @ Q.T * np.outer(ops.w, ops.w)
    np.testing.assert_allclose(ops.hessian(mu, V), S.T @ Ht @ S, atol=1e-10 * max(1.0, np.abs(Ht).max()))
    Gt = (ops.U @ ops.U.T) ** 2 * np.outer(ops.w, ops.w)
    G = S.T @ Gt @ S
    assert ops.lipschitz() == pytest.approx(float(np.linalg.eigvalsh(G)[-1]), rel=1e-10)


def test_lanczos_lipschitz_on_many_constraints():
    """m > 500: λ_max(G) by Lanczos, equal to the dense eigenvalue."""
    rng = np.random.default_rng(3)
    ops = _random_ops(rng, 700, 20, 1)
    Gt = (ops.U @ ops.U.T) ** 2 * np.outer(ops.w, ops.w)
    assert ops.lipschitz() == pytest.approx(float(np.linalg.eigvalsh(Gt)[-1]), rel=1e-9)


@settings(max_examples=examples(20))
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(4, 10), m=st.integers(2, 12))
def test_pola_dual_matches_the_exact_model(seed, n, m):
    """POLA's dual solver (FISTA + Newton-CG through the fast paths above) against the
    exact CVXPY model, through both certificates."""
    K0, pc = kernel_instance(seed, n, m, hard=True, kind="gaussian")
    prob = POLAKernel(K0, pola_constraints(pc.i, pc.j, pc.y, 2.0))
    ct = constraint_terms(prob)
    res = pola_dual(ct.U, ct.w, ct.ptr, ct.t, tol=1e-10, newton_budget=0.0)  # Newton-CG
    assume(res.code == 0)
    res.matrix = prob.matrix_from_whitened(res.matrix)
    fast = prob._fast_solution(res, res.sweeps, res.time)
    assert abs(fast.gap) <= 1e-8 * max(1.0, abs(fast.objective))
    exact = reference_or_discard(prob, feasible=fast)
    assert_matches_reference(prob, fast, exact, rtol=1e-6, viol=1e-6)
