"""Wang et al. (2011) full-protocol LMNN fits rebuilt for regression tests, and the small
LMNN draws and checks the solver tests share.

The reproduction (`python -m benchmarks reproduce mkl`, reference/wang2011-mkl.md) draws 10 stratified
folds (seed 0) and splits each training fold in two halves for LMNN-MKL_CV's inner CV; the
tests hard-code the rows of one fold's test part and one half, so they need neither the
harness nor its data folder.
"""

import warnings

import numpy as np

from cvxkml.declare.lmnn import LMNNProblem
from cvxkml.errors import ConvergenceWarning
from cvxkml.formulas.lmnn import lmnn_objective, psd_pair_distances
from cvxkml.kernels import polynomial_kernel
from cvxkml.mkl_kernels import Kernel, KernelSet


def inner_cv_poly(load, degree: int, test_rows, half_rows) -> LMNNProblem:
    """The inner-CV fit on the data set ``load()`` (an offline scikit-learn loader, the same
    rows as the reproduction's copy) with the polynomial kernel (xᵀx' + 1)^degree: features
    standardized on the training fold (all rows but ``test_rows``), the kernel divided by its
    mean diagonal on the fold, restricted to ``half_rows``; k = 5, γ = 0.5."""
    X, y = load(return_X_y=True)
    train = np.setdiff1d(np.arange(y.size), test_rows)
    Xtr = X[train]
    Xtr = (Xtr - Xtr.mean(axis=0)) / Xtr.std(axis=0)
    K = KernelSet([Kernel("polynomial", {"degree": degree, "coef0": 1.0})]).fit_matrices(Xtr)[0]
    pos = np.searchsorted(train, half_rows)
    K = K[np.ix_(pos, pos)]
    return LMNNProblem.kernel(0.5 * (K + K.T), y[train][pos], 5, 0.5, small_classes="shrink")


def iris_inner_cv_poly(degree: int, test_rows, half_rows) -> LMNNProblem:
    """:func:`inner_cv_poly` on Iris."""
    from sklearn.datasets import load_iris

    return inner_cv_poly(load_iris, degree, test_rows, half_rows)


def recomputed_gap(prob: LMNNProblem, X, alpha) -> tuple[float, float]:
    """(F, g) of a whitened X̂ and multipliers α by the formulas alone: pair distances of the
    problem's features through X̂'s factor, the objective, and the problem's own Lagrange bound
    (:meth:`LMNNProblem.dual_value`, evaluated in the identity-pull basis, an exact change of
    coordinates)."""
    tr = prob.triplets
    F = lmnn_objective(psd_pair_distances(prob.U, X, tr.pi, tr.pj), tr, prob.gamma)
    return F, prob.dual_value(alpha, objective_bound=F)


def assert_fit_certifies(prob: LMNNProblem, tol: float):
    """Solve ``prob`` as the full protocol does (max_iter 20 000, stall rule 2 000) and check
    the certificate by :func:`recomputed_gap`: converged, F as reported, g <= F, gap <= tol.
    Returns the Solution."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sol = prob.solve(tol=tol, max_iter=20_000, stall_iter=2000)
    assert sol.converged, (sol.status, sol.objective, sol.dual_value, sol.info.get("exact_finish"))
    F, g = recomputed_gap(prob, sol.info["X"], sol.dual)
    assert abs(F - sol.objective) <= 1e-9 * max(1.0, F)
    assert g <= F
    assert F - g <= tol * max(1.0, F)
    return sol


def two_class_poly(seed: int, n: int, degree: int) -> LMNNProblem:
    """A small kernel-LMNN draw: two shifted Gaussian classes in 3-D, the polynomial kernel
    (xᵀx' + 1)^degree divided by its mean diagonal, k = 2, γ = 0.5."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(y.size, 3)) + 0.8 * y[:, None]
    K = polynomial_kernel(X, degree=degree, coef0=1.0)
    return LMNNProblem.kernel(K / np.mean(np.diag(K)), y, 2, 0.5)
