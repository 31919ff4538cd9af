"""cvxkml.formulas.mkl (the MKL_P weight step of Wang et al. 2011, eq. 15–16) against what
each piece promises, evaluated independently: svec as an isometry of the symmetric matrices,
HingeTerms' value, arguments, rows and adjoint by plain loops over dense D_t, the hinges it
calls one-signed on S by random points of S, and lagrange_bound below ⟨G, P⟩ + a at every
P ∈ S = {P ⪰ 0, P >= 0, Σ P = 1} for arbitrary multipliers (weak duality), with its
homogeneity and its invariance under a permutation of the kernels."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from cvxkml.formulas.mkl import HingeTerms, lagrange_bound, smat, svec

SEED = st.integers(0, 2**31 - 1)


def _sym(rng, m):
    A = rng.normal(size=(m, m))
    return A + A.T


def _points_of_S(rng, m, count):
    """Random P ∈ S: sparse-ish non-negative factors (rank 1 … m), the vertices e_k e_kᵀ and
    the centre."""
    out = [np.eye(m)[k][:, None] * np.eye(m)[k][None, :] for k in range(m)]
    out.append(np.full((m, m), 1.0 / m**2))
    for _ in range(count):
        V = rng.random((m, int(rng.integers(1, m + 1)))) ** 3
        P = V @ V.T
        out.append(P / P.sum())
    return out


def _terms(rng, m, T, minus=True, n_pairs=None):
    """HingeTerms with dense (possibly non-symmetric) pair matrices and the same data kept
    as plain arrays for the loops."""
    n_pairs = n_pairs or int(rng.integers(2, 6))
    Q = rng.normal(size=(n_pairs, m, m))
    plus = rng.integers(0, n_pairs, T)
    mns = rng.integers(0, n_pairs, T) if minus else None
    b = rng.normal(size=T)
    c = rng.uniform(0, 2, T)
    C = _sym(rng, m)
    t = HingeTerms(C, Q, plus, mns, b, c)
    Qs = 0.5 * (Q + Q.transpose(0, 2, 1))
    D = [Qs[plus[k]] - (Qs[mns[k]] if minus else 0.0) for k in range(T)]
    return t, C, D, b, c


@settings(max_examples=examples(20))
@given(seed=SEED, m=st.integers(1, 7))
def test_svec_is_an_isometry_and_smat_its_inverse(seed, m):
    """svec(X)·svec(Y) = ⟨X, Y⟩, smat(svec(X)) = X, and svec of a stack is the stack of svecs."""
    rng = np.random.default_rng(seed)
    X, Y = _sym(rng, m), _sym(rng, m)
    assert svec(X).shape == (m * (m + 1) // 2,)
    assert svec(X) @ svec(Y) == pytest.approx(np.sum(X * Y), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(smat(svec(X), m), X, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(svec(np.stack([X, Y])), np.stack([svec(X), svec(Y)]))


@settings(max_examples=examples(25))
@given(seed=SEED, m=st.integers(1, 5), T=st.integers(1, 30), minus=st.booleans())
def test_hinge_terms_against_loops(seed, m, T, minus):
    """value, arguments, rows and adjoint of HingeTerms against h(P) = ⟨C, P⟩ +
    Σ c_t [b_t + ⟨D_t, P⟩]_+ by a loop over dense D_t (pair matrices symmetrized); the
    adjoint is the adjoint: adjoint(α)·svec(P) = Σ α_t ⟨D_t, P⟩; subset(idx, s) is h with
    only those hinges, weights × s."""
    rng = np.random.default_rng(seed)
    t, C, D, b, c = _terms(rng, m, T, minus)
    assert t.n_terms == T
    L = _sym(rng, m)
    for P in _points_of_S(rng, m, 5) + [_sym(rng, m)]:
        p = svec(P)
        args = np.array([b[k] + np.sum(D[k] * P) for k in range(T)])
        h = np.sum(C * P) + sum(c[k] * max(0.0, args[k]) for k in range(T))
        np.testing.assert_allclose(t.arguments(p), args, rtol=1e-12, atol=1e-12)
        assert t.value(p) == pytest.approx(h, rel=1e-12, abs=1e-12)
        assert t.value(p, svec(L)) == pytest.approx(h + np.sum(L * P), rel=1e-12, abs=1e-12)
    alpha = rng.uniform(0, 1, T)
    G = sum(alpha[k] * D[k] for k in range(T))
    np.testing.assert_allclose(smat(t.adjoint(alpha), m), G, rtol=1e-12, atol=1e-12)
    idx = rng.choice(T, int(rng.integers(1, T + 1)), replace=False)
    np.testing.assert_allclose(t.rows(idx), np.array([svec(D[k]) for k in idx]), atol=1e-14)
    P = _points_of_S(rng, m, 1)[-1]
    sub = t.subset(idx, 3.0)
    want = np.sum(C * P) + 3.0 * sum(c[k] * max(0.0, b[k] + np.sum(D[k] * P)) for k in idx)
    assert sub.value(svec(P)) == pytest.approx(want, rel=1e-12, abs=1e-12)
    touched = {int(v) for k in idx for v in ((t.plus[k], t.minus[k]) if minus else (t.plus[k],))}
    assert t.pairs_touched(idx) == len(touched)


@settings(max_examples=examples(20))
@given(seed=SEED, m=st.integers(1, 5))
def test_safe_signs_hold_on_all_of_S(seed, m):
    """The hinges HingeTerms.safe_signs calls always active (resp. inactive) have a
    non-negative (resp. non-positive) argument at every sampled point of S, vertices
    included; a hinge is never both (unless its argument is 0 on S)."""
    rng = np.random.default_rng(seed)
    t, _, D, b, _ = _terms(rng, m, 40, minus=bool(rng.integers(0, 2)))
    t.b[:] = b * 3.0  # spread the offsets: both kinds occur
    on, off = t.safe_signs()
    assert on.shape == off.shape == (40,)
    for P in _points_of_S(rng, m, 30):
        args = t.arguments(svec(P))
        assert np.all(args[on] >= -1e-12) and np.all(args[off] <= 1e-12)
    for k in np.flatnonzero(on & off):
        assert np.allclose(D[k] + t.b[k], 0.0)


def test_negative_hinge_weights_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        HingeTerms(np.eye(2), np.ones((1, 2, 2)), [0], None, [0.0], [-1.0])


@settings(max_examples=examples(40))
@given(seed=SEED, m=st.integers(1, 6), nu_scale=st.sampled_from([0.0, 0.1, 1.0, 10.0]))
def test_lagrange_bound_is_below_the_linear_function_on_S(seed, m, nu_scale):
    """For any a, G, ν and N (negative entries of N are clipped: not a multiplier of P >= 0),
    lagrange_bound(a, G, ν, N) <= a + ⟨G, P⟩ for every sampled P ∈ S; it is positively
    homogeneous (scaling a, G, ν, N by k scales it by k) and invariant under the same
    permutation of the rows and columns of G and N (a permutation of the kernels)."""
    rng = np.random.default_rng(seed)
    a = float(rng.normal())
    G = _sym(rng, m)
    nu = float(rng.normal() * nu_scale)
    N = rng.normal(size=(m, m))
    N = N + N.T
    bound = lagrange_bound(a, G, nu, N)
    vals = [a + np.sum(G * P) for P in _points_of_S(rng, m, 60)]
    assert bound <= min(vals) + 1e-12 * max(1.0, np.abs(vals).max())
    k = float(rng.uniform(0.1, 10.0))
    assert lagrange_bound(k * a, k * G, k * nu, k * N) == pytest.approx(k * bound, rel=1e-10, abs=1e-12)
    p = rng.permutation(m)
    assert lagrange_bound(a, G[np.ix_(p, p)], nu, N[np.ix_(p, p)]) == pytest.approx(bound, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("m", [1, 2, 4])
def test_lagrange_bound_is_tight_for_a_psd_slack(m):
    """When G − ν11ᵀ − N ⪰ 0 the bound is a + ν, attained at P ∈ S when that matrix vanishes on
    P (here G = ν11ᵀ + N with N >= 0, zero diagonal, and P = e_k e_kᵀ: ⟨N, P⟩ = 0)."""
    rng = np.random.default_rng(m)
    nu = 0.7
    N = rng.uniform(0, 1, (m, m))
    N = N + N.T
    np.fill_diagonal(N, 0.0)
    G = nu * np.ones((m, m)) + N
    assert lagrange_bound(0.3, G, nu, N) == pytest.approx(0.3 + nu, abs=1e-12)
    P = np.zeros((m, m))
    P[0, 0] = 1.0
    assert 0.3 + np.sum(G * P) == pytest.approx(0.3 + nu, abs=1e-12)
