"""The restricted-dual barrier recovery of the LMNN solver, for fits whose PDHG primal crawls
while the bound is already optimal (such as the Wang et al. inner-CV fits of
reference/wang2011-mkl.md).

What the solver promises: the barrier's central-path primal point Z = G(α)⁻¹/t
(:func:`cvxkml.solvers.lmnn._barrier_dual` with ``primal=True``) is PSD, so it is a feasible
metric whose objective the whole problem judges; with the barrier's multipliers it is a
primal–dual pair whose gap an independent recomputation (pair distances of Z, the objective
formula, the Lagrange bound of :mod:`cvxkml.formulas.lmnn`) certifies."""

import warnings

import numpy as np
from budget import examples
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from wang_fits import assert_fit_certifies, iris_inner_cv_poly, two_class_poly

from cvxkml.errors import ConvergenceWarning
from cvxkml.formulas.lmnn import lmnn_dual_value, lmnn_objective, pair_quadratic
from cvxkml.solvers.lmnn import _barrier_dual, _Ops

TOL = 1e-5

# Iris, the Wang et al. full protocol (reference/wang2011-mkl.md): fold 5 (index 4) of the 10
# stratified folds (seed 0), the first inner half of LMNN-MKL_CV, rows of sklearn's Iris
IRIS_FOLD4_TEST = [16, 19, 37, 38, 43, 59, 72, 83, 86, 98, 105, 122, 134, 142, 149]
IRIS_FOLD4_HALF = [
    1, 3, 4, 5, 9, 10, 13, 14, 18, 20, 27, 28, 29, 30, 34, 39, 40, 41, 42, 44, 46, 47, 50,
    51, 52, 54, 56, 67, 68, 69, 70, 71, 73, 75, 76, 78, 80, 85, 88, 89, 92, 93, 95, 97, 101,
    102, 104, 106, 109, 110, 111, 115, 116, 117, 118, 119, 121, 124, 129, 130, 133, 136, 139,
    143, 145, 147,
]  # fmt: skip


def _iris_inner_cv_poly4():
    """That fit's problem (:func:`wang_fits.iris_inner_cv_poly`)."""
    return iris_inner_cv_poly(4, IRIS_FOLD4_TEST, IRIS_FOLD4_HALF)


def test_stalled_iris_degree4_inner_cv_fit_certifies():
    """Iris fold 5, first half, polynomial degree 4: the full-protocol run stalled after 4 507
    iterations at F = 0.1252523, bound 0.1252359 (gap 1.6e-5 > 1e-5), and the bound was the
    optimum: the barrier's primal point closes it (gap 4e-8 in about 2 500 iterations)."""
    assert_fit_certifies(_iris_inner_cv_poly4(), TOL)


@settings(max_examples=examples(6), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(12, 16), degree=st.sampled_from([1, 2, 3]))
@example(seed=8255, n=12, degree=2)  # fuzz seed 1: F(Z) 1.7e-5 above the bound (was asserted <= 1e-5)
@example(seed=92, n=12, degree=2)  # fuzz seed 2: F(Z) 1.5e-5 above the bound
def test_barrier_primal_point_is_feasible_and_never_below_the_bound(seed, n, degree):
    """From a slightly perturbed optimum X̂* + EEᵀ: the barrier's Z is symmetric PSD and F(Z)
    (recomputed from its pair distances) is at least the bound of the barrier's multipliers
    and of the solver's (weak duality, nothing assumed of the solver).  How close Z comes is
    not a property of every draw (fuzz seeds 1 and 2: F(Z) 1.5e-5 – 1.7e-5 above the bound at
    δ = 1e-2, the draws below): the solver keeps Z only when it lowers F, and the Iris fit
    above is where it closes the gap."""
    prob = two_class_poly(seed, n, degree)
    tr = prob.triplets
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sol = prob.solve(tol=1e-7, max_iter=5_000)
    assume(sol.converged)
    Xs = sol.info["X"]
    r = Xs.shape[0]
    E = np.random.default_rng(seed).normal(size=(r, r)) * 1e-4 * max(1.0, float(np.max(np.abs(Xs))))
    X0 = Xs + E @ E.T
    p0 = _Ops(prob.U, tr).distances(X0)
    F0 = lmnn_objective(p0, tr, 0.5)
    out = _barrier_dual(prob.U, tr, 0.5, p0, 1e-2, 1e-3 * TOL * max(1.0, F0), primal=True)
    assume(out is not None)
    alpha, Z = out
    assert np.allclose(Z, Z.T)
    assert np.linalg.eigvalsh(Z)[0] >= -1e-12 * max(1.0, float(np.max(np.abs(Z))))
    FZ = lmnn_objective(pair_quadratic(prob.U, Z, tr.pi, tr.pj), tr, 0.5)
    g = lmnn_dual_value(prob.U, tr, alpha, 0.5, objective_bound=FZ)
    g_sol = lmnn_dual_value(prob.U, tr, sol.dual, 0.5, objective_bound=FZ)
    scale = max(1.0, FZ)
    assert g <= FZ + 1e-10 * scale
    assert g_sol <= FZ + 1e-10 * scale
