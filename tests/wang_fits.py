"""Wang et al. (2011) full-protocol LMNN fits rebuilt for regression tests.

The reproduction (`cvxkml reproduce mkl`, reference/wang2011-mkl.md) draws 10 stratified
folds (seed 0) and splits each training fold in two halves for LMNN-MKL_CV's inner CV; the
tests hard-code the rows of one fold's test part and one half, so they need neither the
harness nor its data folder.
"""

import numpy as np

from cvxkml.declare.lmnn import LMNNProblem
from cvxkml.mkl_kernels import Kernel, KernelSet


def iris_inner_cv_poly(degree: int, test_rows, half_rows) -> LMNNProblem:
    """The inner-CV fit on Iris with the polynomial kernel (xᵀx' + 1)^degree: features
    standardized on the training fold (all rows but ``test_rows``), the kernel divided by its
    mean diagonal on the fold, restricted to ``half_rows``; k = 5, γ = 0.5."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    train = np.setdiff1d(np.arange(y.size), test_rows)
    Xtr = X[train]
    Xtr = (Xtr - Xtr.mean(axis=0)) / Xtr.std(axis=0)
    K = KernelSet([Kernel("polynomial", {"degree": degree, "coef0": 1.0})]).fit_matrices(Xtr)[0]
    pos = np.searchsorted(train, half_rows)
    K = K[np.ix_(pos, pos)]
    return LMNNProblem.kernel(0.5 * (K + K.T), y[train][pos], 5, 0.5, small_classes="shrink")
