"""LMNN (Wang et al. 2011, eq. 18; Weinberger & Saul 2009): the fast primal–dual solver
against the exact CVXPY model, the one-formula objective and dual bound, and bad inputs.

Property test tolerances (issue 7): relative objective gap
|F_fast − F_exact| / max(1, |F_exact|) <= 1e-4 whenever the fast solver reports
``converged``; a converged solve also carries its own certificate F − g <= tol·max(1, F)
with g a Lagrange dual bound, which must not exceed the exact optimum.  Draws: linear
LMNN, kernel LMNN with a rank-deficient kernel (non-trivial optimum), kernel LMNN with a
full-rank Gaussian kernel (optimum 0: classes collapse on the training set) and
NR-ML-MKL (two concatenated kernel maps).  Draw counts: 25 (``CVXKML_FUZZ=N`` multiplies them).
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from cvxkml.declare.lmnn import LMNNProblem, check_kernel_list
from cvxkml.errors import ConvergenceWarning, InvalidInputError, NotPSDError
from cvxkml.kernels import gaussian_kernel, kernel_sq_distances, polynomial_kernel
from cvxkml.lmnn_terms import (LMNNTriplets, lmnn_dual_value, lmnn_objective, orthonormal_factor,
                               pair_quadratic, target_neighbors)
from cvxkml.testing import reference_or_discard, solve_fast_honestly
from budget import examples

EXAMPLES = examples(25)
GAP = 1e-4
TOL = 1e-5


def labelled_points(seed, n, n_classes, k, d=2, shift=0.8):
    """n points in d dimensions, n_classes balanced classes (each with >= k + 1 members)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    X = rng.normal(size=(n, d)) + shift * y[:, None]
    return X, y


def make_problem(kind, seed, n, n_classes, k, gamma):
    X, y = labelled_points(seed, n, n_classes, k, d=3 if kind == "linear" else 2)
    if kind == "linear":
        return LMNNProblem.linear(X, y, k, gamma)
    if kind == "kernel-lowrank":          # (xᵀy + 1)² on 2-D data: rank <= 6
        K = polynomial_kernel(X, degree=2)
        return LMNNProblem.kernel(K / np.mean(np.diag(K)), y, k, gamma)
    if kind == "kernel-fullrank":
        return LMNNProblem.kernel(gaussian_kernel(X, sigma=1.0), y, k, gamma)
    Ks = [X @ X.T, polynomial_kernel(X, degree=2)]                       # NR-ML-MKL
    return LMNNProblem.multiple_kernels([K / np.mean(np.diag(K)) for K in Ks], y, k, gamma)


def fast_solve(prob, **kw):
    return solve_fast_honestly(prob, tol=TOL, **kw)


def exact_solve(prob):
    """Clarabel, else SCS at eps 1e-10; only an optimal answer with its own certificate
    within 1e-6 is used, else the draw is discarded (and counted)."""
    return reference_or_discard(prob, cert_rtol=1e-6, viol_tol=1e-7)


@settings(max_examples=EXAMPLES)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(6, 14), n_classes=st.integers(2, 3),
       k=st.integers(1, 2), gamma=st.sampled_from([0.25, 0.5, 0.75]),
       kind=st.sampled_from(["linear", "kernel-lowrank", "kernel-fullrank", "nr-mkl"]))
def test_fast_matches_exact(seed, n, n_classes, k, gamma, kind):
    assume(n >= n_classes * (k + 1))
    prob = make_problem(kind, seed, n, n_classes, k, gamma)
    fast = fast_solve(prob)
    assume(fast.converged)
    # own certificate: g is a valid lower bound and the gap is within tol
    scale = max(1.0, abs(fast.objective))
    assert fast.objective - fast.dual_value <= TOL * scale + 1e-12
    assert fast.objective == pytest.approx(prob.objective_whitened(fast.info["X"]), rel=1e-12, abs=1e-14)
    if kind == "linear":     # well-conditioned Z: A = V S⁻¹ X̂ S⁻¹ Vᵀ gives the same F directly
        assert fast.objective == pytest.approx(prob.objective(fast.matrix), rel=1e-8, abs=1e-10)
    assert fast.max_violation <= 1e-9 * scale
    assert np.linalg.eigvalsh(fast.info["X"])[0] >= -1e-12 * max(1.0, np.abs(fast.info["X"]).max())
    exact = exact_solve(prob)
    escale = max(1.0, abs(exact.objective))
    assert fast.dual_value <= exact.objective + GAP * escale            # weak duality
    assert exact.dual_value <= fast.objective + GAP * escale            # and the other way
    assert abs(fast.objective - exact.objective) <= GAP * escale, (fast, exact)
    if kind == "kernel-fullrank":           # the documented degenerate case: F* = 0
        assert exact.objective <= 1e-5 and fast.objective <= TOL


# --------------------------------------------------------------------------- formulas
def test_objective_matches_explicit_triplet_sum():
    """lmnn_objective against a direct transcription of eq. 18 (loops over i, j, l)."""
    X, y = labelled_points(3, 12, 3, 2, d=3)
    prob = LMNNProblem.linear(X, y, k=2, gamma=0.3)
    rng = np.random.default_rng(0)
    B = rng.normal(size=(3, 3))
    A = B @ B.T
    D = kernel_sq_distances(X @ A @ X.T)
    ti, tj = target_neighbors(kernel_sq_distances(X @ X.T), y, 2)
    val = 0.0
    for i, j in zip(ti, tj):
        val += 0.7 * D[i, j]
        for l in range(12):
            if y[l] != y[i]:
                val += 0.3 * max(0.0, 1.0 + D[i, j] - D[i, l])
    assert prob.objective(A) == pytest.approx(val, rel=1e-12)
    assert prob.triplets.n_triplets == sum(int(np.sum(y != y[i])) for i in ti)
    # the whitened evaluation gives the same value
    assert prob.objective_whitened(prob.whiten(A)) == pytest.approx(val, rel=1e-10)


@settings(max_examples=EXAMPLES)
@given(seed=st.integers(0, 2**31 - 1), gamma=st.sampled_from([0.2, 0.5, 1.0]))
def test_dual_bound_below_objective_everywhere(seed, gamma):
    """Weak duality: g(α) <= F(A) for every α ∈ [0, γ]^T and every A ⪰ 0."""
    X, y = labelled_points(seed, 10, 2, 2, d=3)
    prob = LMNNProblem.linear(X, y, k=2, gamma=gamma)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        B = rng.normal(size=(3, 3)) * rng.uniform(0.1, 3.0)
        alpha = rng.uniform(0, gamma, prob.triplets.n_triplets) * (rng.uniform(size=prob.triplets.n_triplets) < 0.5)
        assert prob.dual_value(alpha) <= prob.objective(B @ B.T) + 1e-9


def test_whitened_model_equals_literal_model():
    """The exact model over X̂ (r × r, orthonormal features) and the literal model over A
    (D × D) have the same optimum: the reparameterization is exact."""
    X, y = labelled_points(5, 10, 2, 2, d=2)
    K = polynomial_kernel(X, degree=2)
    prob = LMNNProblem.kernel(K / np.mean(np.diag(K)), y, k=2)
    a = prob.solve_reference(whiten=True, accept_inaccurate=True)
    b = prob.solve_reference(solver="SCS", eps=1e-9, whiten=False, accept_inaccurate=True)
    assert prob.rank < prob.dim                    # a genuinely rank-deficient kernel
    assert a.objective == pytest.approx(b.objective, rel=1e-4, abs=1e-6)
    # the exact duals certify the optimum through the one dual formula
    assert a.dual_value == pytest.approx(a.objective, rel=1e-5, abs=1e-6)


def test_warm_start_at_optimum_stops_at_first_check():
    X, y = labelled_points(1, 12, 2, 2, d=3)
    prob = LMNNProblem.linear(X, y, k=2)
    first = prob.solve(tol=TOL)
    assert first.converged
    again = prob.solve(tol=1e-4, A0=first.matrix, alpha0=first.dual)
    assert again.converged and again.n_iter == 0
    assert again.objective == pytest.approx(first.objective, rel=1e-12)


def test_rank_deficient_features_keep_the_start_on_the_complement():
    """Distances never see the complement of Z's row space; A keeps A0 there."""
    X, y = labelled_points(2, 12, 2, 2, d=2)
    Z = np.hstack([X, X @ np.array([[1.0], [2.0]])])        # 3 columns, rank 2
    prob = LMNNProblem(Z, y, k=2)
    assert prob.rank == 2 and prob.dim == 3
    sol = prob.solve(tol=TOL)
    v = np.linalg.svd(Z)[2][-1]                             # null direction of Z
    assert v @ sol.matrix @ v == pytest.approx(1.0, rel=1e-8)
    assert sol.objective == pytest.approx(prob.objective(sol.matrix), rel=1e-10)


def test_not_converged_warns_and_says_so():
    X, y = labelled_points(4, 14, 2, 2, d=3)
    prob = LMNNProblem.linear(X, y, k=2)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        sol = prob.solve(tol=1e-12, max_iter=10, check_every=5)
    assert not sol.converged and sol.status == "max_iter reached" and sol.n_iter == 10
    assert sol.dual_value <= sol.objective


# --------------------------------------------------------------------------- bad inputs
def test_class_smaller_than_k_plus_one_is_a_clear_error():
    X, y = labelled_points(0, 12, 2, 2)
    y = y.copy()
    y[:] = 0
    y[:3] = 1                                   # class 1 has 3 members
    with pytest.raises(InvalidInputError, match=r"k = 5 target neighbours need k \+ 1 = 6 members"):
        LMNNProblem.linear(X, y, k=5)
    with pytest.raises(InvalidInputError, match="Lower k to at most 2"):
        LMNNProblem.linear(X, y, k=3)
    LMNNProblem.linear(X, y, k=2)               # k = 2 works


def test_single_class_and_shape_errors():
    X, y = labelled_points(0, 12, 2, 2)
    with pytest.raises(InvalidInputError, match="at least 2 classes"):
        LMNNProblem.linear(X, np.zeros(12), k=2)
    with pytest.raises(InvalidInputError, match="one label per row"):
        LMNNProblem.linear(X, y[:-1], k=2)
    with pytest.raises(InvalidInputError, match="gamma"):
        LMNNProblem.linear(X, y, k=2, gamma=1.5)
    with pytest.raises(InvalidInputError, match="k must be a positive integer"):
        LMNNProblem.linear(X, y, k=0)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(InvalidInputError, match="NaN"):
        LMNNProblem.linear(Xn, y, k=2)
    with pytest.raises(InvalidInputError, match="i ≠ j and y_i = y_j"):
        LMNNProblem.linear(X, y, targets=(np.array([0]), np.array([0])))


def test_kernel_errors():
    X, y = labelled_points(0, 12, 2, 2)
    K = gaussian_kernel(X, sigma=1.0)
    bad = K.copy()
    bad[0, 1] = bad[1, 0] = 5.0                 # symmetric, clearly not PSD
    with pytest.raises(NotPSDError, match="not positive semidefinite"):
        LMNNProblem.kernel(bad, y, k=2)
    with pytest.raises(InvalidInputError, match="same size"):
        check_kernel_list([K, K[:10, :10]])
    with pytest.raises(InvalidInputError, match="same size"):
        LMNNProblem.multiple_kernels([K, K[:10, :10]], y, k=2)
    with pytest.raises(NotPSDError):
        LMNNProblem.multiple_kernels([K, bad], y, k=2)


def test_triplet_structure():
    y = np.array([0, 0, 0, 1, 1, 1, 1])
    D = kernel_sq_distances(np.diag(np.arange(7.0)))        # D_ij = i + j
    tr = LMNNTriplets.from_labels(y, 2, sq_dist=D)
    assert tr.target_i.size == 14 and np.all(tr.codes[tr.target_i] == tr.codes[tr.target_j])
    # pairs are distinct and unordered, every triplet uses a target and a cross-class pair
    assert np.all(tr.pi < tr.pj) and np.unique(tr.pi * 7 + tr.pj).size == tr.n_pairs
    assert np.all(y[tr.pi[tr.ti]] != y[tr.pj[tr.ti]])
    assert tr.n_triplets == 3 * 2 * 4 + 4 * 2 * 3
    U, s, Vt = orthonormal_factor(np.eye(7))
    assert lmnn_dual_value(U, tr, np.zeros(tr.n_triplets), 0.5) == 0.0
    p = pair_quadratic(np.eye(7), np.eye(7), tr.pi, tr.pj)
    assert np.allclose(p, 2.0)
    assert lmnn_objective(p, tr, 0.5) == pytest.approx(0.5 * 2.0 * 14 + 0.5 * tr.n_triplets)


def test_barrier_dual_recovery_certifies_a_rank_deficient_optimum():
    """The restricted-dual barrier recovery (solvers.lmnn._barrier_dual) at the exact
    optimum gives a dual-feasible α whose bound is within 1e-6 of F* and below it (weak
    duality), also when X̂* is rank deficient (the case the PDHG multipliers and the
    least-squares recovery certify only slowly)."""
    from cvxkml.solvers.lmnn import _barrier_dual

    X, y = labelled_points(3, 14, 2, 2, d=4, shift=1.5)
    prob = LMNNProblem.linear(X, y, 2, 0.5)
    exact = prob.solve_reference()
    Xs = exact.info["X"]
    lam = np.linalg.eigvalsh(Xs)
    assert np.sum(lam > 1e-6 * lam[-1]) < Xs.shape[0]              # X̂* is rank deficient (1 of 4)
    tr = prob.triplets
    p = pair_quadratic(prob.U, Xs, tr.pi, tr.pj)
    F = lmnn_objective(p, tr, 0.5)
    alpha = _barrier_dual(prob.U, tr, 0.5, p, 1e-2, 1e-9 * max(1.0, F))
    assert alpha is not None and np.all((alpha >= 0) & (alpha <= 0.5))
    g = lmnn_dual_value(prob.U, tr, alpha, 0.5)
    assert g == pytest.approx(alpha.sum(), rel=1e-12)            # strictly feasible: no scaling
    assert g <= F + 1e-7 * max(1.0, F)
    assert F - g <= 1e-6 * max(1.0, F), (F, g, np.linalg.eigvalsh(Xs))
