"""KCR certificate: the balanced dual weights and the certificate recomputed
from what the fast solver returns, against the exact CVXPY model (Hypothesis).

* :func:`cvxkml.solvers.kcr.balance_dual` moves s to Σ tau∘s = 0 and reports the exact
  change of Aᵀ(tau∘s); any s in the box is a valid dual point, so the bound from the moved
  weights must stay below the exact optimum.
* The fast solve's answer is re-certified from scratch: its objective from the returned
  Σ and h̃ (eq. 9, :meth:`KCR.objective`), its lower bound from the returned dual weights
  (:func:`cvxkml.formulas.kcr.dual_lower_bound` with a fresh λ_min), and that bound must
  lie below the exact model's objective and, when ``converged``, within ``tol`` of the
  objective.

Instances as in ``test_kcr_properties.py`` (2–3 classes of 2–7 points, Gaussian or ridged
linear kernel, λ ∈ {0.01, 0.1, 1, 10}).
"""

import warnings

import numpy as np
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.bench.kcr import random_instance
from cvxkml.formulas.kcr import dual_lower_bound, dual_objective, h_upper_bound, sq_distances_from_gram
from cvxkml.solvers.kcr import balance_dual
from cvxkml.testing import reference_or_discard

sizes = st.lists(st.integers(2, 7), min_size=2, max_size=3)
kinds = st.sampled_from(["gaussian", "gaussian", "linear"])
lams = st.sampled_from([0.01, 0.1, 1.0, 10.0])
seeds = st.integers(0, 2**31 - 1)


def adjoint(p, s):
    """Aᵀ(tau∘s) = Σ_ij tau_ij s_ij z_ij z_ijᵀ by the plain definition (a loop over pairs)."""
    G = np.zeros((p.rank, p.rank))
    for i in range(p.n):
        for j in range(p.n):
            z = p.F[i] - p.F[j]
            G += p.tau[i, j] * s[i, j] * np.outer(z, z)
    return G


def recertify(p, s, R):
    """The lower bound of dual weights s from scratch (trace bound R)."""
    a, S = dual_objective(s, p.tau, p.c)
    lmin = float(np.linalg.eigvalsh(adjoint(p, s))[0])
    Z = sq_distances_from_gram(p.F @ p.F.T)
    np.fill_diagonal(Z, 0.0)
    zmax = float(np.max(Z[p.tau > 0]))
    return dual_lower_bound(a, S, lmin, p.lam, R, p.h_min, h_upper_bound(R, zmax))[0]


def exact_optimum(p):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return reference_or_discard(p, cert_rtol=1e-4, viol_tol=1e-9).objective


@settings(max_examples=examples(8), deadline=None)
@given(seed=seeds, sizes=sizes, kind=kinds, lam=lams, s_seed=seeds, sign=st.sampled_from([-1, 1]))
def test_balanced_dual_weights_are_in_the_box_exact_and_a_valid_bound(seed, sizes, kind, lam, s_seed, sign):
    p = random_instance(seed, sizes, kind, 1.0, lam)
    rng = np.random.default_rng(s_seed)
    s = rng.uniform(size=(p.n, p.n)) * (rng.uniform(size=(p.n, p.n)) < 0.7)
    # tilt Σ tau∘s to the drawn sign (similar or dissimilar weights scaled down)
    s = np.where((p.tau > 0) == (sign > 0), s, 0.3 * s)
    S = float(np.sum(p.tau * s))
    s2, dG = balance_dual(s, p.tau, p.F)
    assert s2.shape == s.shape and np.all(s2 >= 0.0) and np.all(s2 <= 1.0)
    S2 = float(np.sum(p.tau * s2))
    assert abs(S2) <= abs(S) + 1e-12
    if S > 0:  # the similar weights always cover a positive S
        assert abs(S2) <= 1e-9 * max(1.0, abs(S))
        assert np.all(s2 <= s + 1e-15)
    else:  # self weights raised, never above their row maximum
        off = ~np.eye(p.n, dtype=bool)
        assert np.array_equal(s2[off], s[off]) and not dG.any()
        assert np.all(np.diag(s2) <= s.max(axis=1) + 1e-15)
    np.testing.assert_allclose(adjoint(p, s2), adjoint(p, s) - dG, atol=1e-9 * max(1.0, np.abs(dG).max()))
    f_star = exact_optimum(p)
    R = p.trace_bound()
    scale = max(1.0, abs(f_star))
    assert recertify(p, s2, R) <= f_star + 1e-7 * scale


@settings(max_examples=examples(8), deadline=None)
@given(seed=seeds, sizes=sizes, kind=kinds, lam=lams, track=st.booleans())
def test_fast_answer_recertified_from_its_primal_and_dual(seed, sizes, kind, lam, track):
    p = random_instance(seed, sizes, kind, 1.0, lam)
    tol = 1e-4
    sol = p.solve(tol=tol, max_iter=100_000, **(dict(eig_min_size=0) if track else {}))
    assert sol.converged
    f = p.objective(sol.matrix, sol.info["h"])
    scale = max(1.0, abs(f))
    assert abs(f - sol.objective) <= 1e-8 * scale
    g = recertify(p, sol.dual, f / p.lam)  # θs as returned; R from the answer
    assert g >= sol.dual_value - 1e-8 * scale  # the solver's R was never smaller
    assert (f - g) / scale <= tol * (1 + 1e-6)
    f_star = exact_optimum(p)
    assert g <= f_star + 1e-7 * max(1.0, abs(f_star))
    assert f >= f_star - 1e-3 * max(1.0, abs(f_star))  # the exact answer is itself inexact
