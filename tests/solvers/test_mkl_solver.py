"""cvxkml.solvers.mkl (the interior-point solver of the MKL_P weight step, Wang et al. 2011,
eq. 15) through its public entry points on generic linear-plus-hinge objectives (not only
LMNN's), each answer re-validated by cvxkml.formulas.mkl, never trusted: P ∈ S = {P ⪰ 0,
P >= 0, Σ P = 1}, the value recomputed from P, the multipliers in their box and turned into
a Lagrange bound here (weak duality: below the value, and below a CVXPY optimum of the same
tiny problem, which the value meets); the optimum is invariant under a permutation of the
kernels and positively homogeneous in (C, c)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from budget import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cvxkml.formulas.mkl import HingeTerms, lagrange_bound, smat, svec
from cvxkml.solvers.mkl import dnn_hinge_ipm, weight_step_ipm

SEED = st.integers(0, 2**31 - 1)


def _problem(seed, m=None, T=None, minus=None):
    """Random symmetric C, pair matrices Q, hinges (plus, minus, b, c) and an extra linear L."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 5)) if m is None else m
    T = int(rng.integers(3, 25)) if T is None else T
    minus = bool(rng.integers(0, 2)) if minus is None else minus
    n_pairs = int(rng.integers(2, 7))
    Q = rng.normal(size=(n_pairs, m, m))
    Q = Q + Q.transpose(0, 2, 1)
    C = rng.normal(size=(m, m))
    C = C + C.T
    plus = rng.integers(0, n_pairs, T)
    mns = rng.integers(0, n_pairs, T) if minus else None
    b = rng.normal(size=T)
    c = rng.uniform(0.1, 2.0, T)
    L = rng.normal(size=(m, m)) * rng.choice([0.0, 1.0])
    return rng, m, C, Q, plus, mns, b, c, L + L.T


def _dense_D(Q, plus, minus):
    return np.array(
        [
            Q[p] - (Q[q] if minus is not None else 0.0)
            for p, q in zip(plus, minus if minus is not None else plus, strict=True)
        ]
    )


def _cvxpy_optimum(C, D, b, c, L):
    m = C.shape[0]
    P = cp.Variable((m, m), PSD=True)
    args = cp.hstack([b[t] + cp.sum(cp.multiply(D[t], P)) for t in range(len(b))])
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(C + L, P)) + c @ cp.pos(args)), [P >= 0, cp.sum(P) == 1])
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return float(prob.value)


def _check_in_S(P):
    assert np.linalg.eigvalsh(P)[0] >= -1e-12
    assert P.min() >= -1e-14
    assert P.sum() == pytest.approx(1.0, abs=1e-12)


def _bound(t, res, L):
    """The Lagrange bound of the returned multipliers, formed here (formulas.mkl)."""
    G = smat(t.Cs + t.adjoint(res.lam), t.m) + L
    return lagrange_bound(float(res.lam @ t.b), G, res.extra["nu"], res.extra["N"])


@settings(max_examples=examples(15))
@given(seed=SEED)
@example(seed=40716117)  # 84 interior-point iterations needed, 80 allowed: honestly NOT_CONVERGED
@example(seed=18164814)  # Clarabel's default answer: 5e-9 outside the PSD cone, 1.6e-7 below F*
def test_weight_step_answer_is_revalidated_and_meets_a_cvxpy_optimum(seed):
    """P ∈ S; extra["value"] = h(P) + ⟨L, P⟩ recomputed; α ∈ [0, c]; the bound formed here from
    (α, ν, N) is <= the value, <= the CVXPY optimum (weak duality), and within 1e-7 of the value
    at a converged answer (code 0), where the value is the CVXPY optimum."""
    rng, m, C, Q, plus, mns, b, c, L = _problem(seed)
    t = HingeTerms(C, Q, plus, mns, b, c)
    res = weight_step_ipm(t, L=L)
    P = res.matrix
    _check_in_S(P)
    D = _dense_D(Q, plus, mns)
    h = np.sum((C + L) * P) + np.sum(c * np.maximum(0.0, b + np.einsum("tij,ij->t", D, P)))
    assert res.extra["value"] == pytest.approx(h, rel=1e-10, abs=1e-12)
    assert np.all((res.lam >= 0) & (res.lam <= c))
    f_star = _cvxpy_optimum(C, D, b, c, L)
    scale = max(1.0, abs(f_star))
    g = _bound(t, res, L)
    assert g <= res.extra["value"] + 1e-12 * scale
    # the conic reference may sit below F* by its own infeasibility (Clarabel's default
    # tolerances: up to ~1e-7 relative), so it is trusted to 1e-6 here
    assert g <= f_star + 1e-6 * scale
    assert res.extra["value"] >= f_star - 1e-6 * scale  # P is feasible: never below the optimum
    if res.code == 0:  # converged: certified by the bound formed here, and the optimum
        assert res.extra["value"] - g <= 1e-7 * scale
        assert abs(res.extra["value"] - f_star) <= 1e-6 * scale
    else:  # an honest NOT_CONVERGED (interior-point iteration limit): it says so
        assert res.extra["ipm_status"] != "optimal"


@settings(max_examples=examples(15))
@given(seed=SEED, k=st.floats(0.01, 100.0))
def test_weight_step_optimum_permutation_and_homogeneity(seed, k):
    """Permuting the kernels (C, L and every pair matrix by the same Π) gives the same optimal
    value and an answer ΠPΠᵀ-equivalent in value; scaling C, L and c by k > 0 scales the optimum
    by k."""
    rng, m, C, Q, plus, mns, b, c, L = _problem(seed)
    base = weight_step_ipm(HingeTerms(C, Q, plus, mns, b, c), L=L)
    p = rng.permutation(m)
    Qp = Q[:, p][:, :, p]
    perm = weight_step_ipm(HingeTerms(C[np.ix_(p, p)], Qp, plus, mns, b, c), L=L[np.ix_(p, p)])
    scaled = weight_step_ipm(HingeTerms(k * C, Q, plus, mns, b, k * c), L=k * L)
    v = base.extra["value"]
    scale = max(1.0, abs(v))
    assert perm.extra["value"] == pytest.approx(v, abs=1e-7 * scale)
    assert scaled.extra["value"] == pytest.approx(k * v, abs=1e-7 * k * scale)
    # the permuted answer, permuted back, is feasible and as good on the original problem
    inv = np.argsort(p)
    Pb = perm.matrix[np.ix_(inv, inv)]
    t = HingeTerms(C, Q, plus, mns, b, c)
    assert t.value(svec(Pb), svec(L)) == pytest.approx(v, abs=1e-7 * scale)


@settings(max_examples=examples(15))
@given(seed=SEED, const=st.floats(-5.0, 5.0))
@example(seed=182455, const=0.0)  # 140 interior-point iterations needed, 80 allowed: "max_iter"
def test_dnn_hinge_ipm_reports_values_it_can_back(seed, const):
    """dnn_hinge_ipm: P ∈ S; pobj (with the interior point's hinge slacks ξ_t >= the hinge) is at
    least the objective ⟨C, P⟩ + const + Σ c_k [b_k + ⟨D_k, P⟩]_+ recomputed from P and within
    the tolerance of it; α ∈ [0, c], N >= 0 with a zero diagonal; the bound formed here from
    (α, ν, N) is <= the recomputed objective, and within the tolerance of it when the status
    is "optimal" (any other status is one of the documented ones)."""
    rng, m, C, Q, plus, mns, b, c, _ = _problem(seed)
    D = _dense_D(Q, plus, mns)
    Ds = svec(D)
    out = dnn_hinge_ipm(svec(C), Ds, b, c, m, tol=1e-9, const=const)
    P = out["P"]
    _check_in_S(P)
    np.testing.assert_allclose(svec(P), out["p"], atol=1e-14)
    f = np.sum(C * P) + const + np.sum(c * np.maximum(0.0, b + np.einsum("tij,ij->t", D, P)))
    scale = max(1.0, abs(f))
    assert f <= out["pobj"] + 1e-12 * scale
    assert out["pobj"] - f <= 1e-7 * scale
    alpha = out["alpha"]
    assert np.all((alpha >= -1e-12) & (alpha <= c + 1e-12))
    N = out["N"]
    assert np.all(np.diag(N) == 0) and N.min() >= -1e-12
    G = C + np.einsum("t,tij->ij", alpha, D)
    g = lagrange_bound(float(alpha @ b) + const, G, out["nu"], N)
    assert g <= f + 1e-10 * scale
    assert out["status"] in ("optimal", "max_iter", "stalled")
    if out["status"] == "optimal":
        assert f - g <= 1e-7 * scale
