"""Regenerate the stored high-accuracy optima in reference/optima/ (run from the repo root:
``python reference/make_optima.py``).  Each .npz holds the inputs, the exact model's
optimal matrix and objective, the solver and its status; tests/test_reference_optima.py
checks the fast solvers against them."""
from pathlib import Path

import numpy as np
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler

import cvxkml
from cvxkml.kernels import gaussian_kernel
from cvxkml.sideinfo import PairConstraints, baseline_kernel, baseline_metric

OUT = Path(__file__).parent / "optima"


def save(name, problem, pc, gamma, **inputs):
    sol = problem.solve_reference()
    np.savez_compressed(OUT / f"{name}.npz", i=pc.i, j=pc.j, y=pc.y, bound=pc.bound,
                        gamma=np.nan if gamma is None else gamma, matrix=sol.matrix,
                        objective=sol.objective, status=sol.status, solver=sol.solver, **inputs)
    print(f"{name}: {sol}")


def main():
    OUT.mkdir(exist_ok=True)
    # ITML on Iris, Jain et al. constraints (1st/99th percentiles), slack γ = 1
    X, y = load_iris(return_X_y=True)
    pc = PairConstraints.from_labels(y, baseline_metric(X), n_similar=50, n_dissimilar=50,
                                     percentiles=(1, 99), random_state=0)
    save("itml_iris_slack", cvxkml.ITML(X, pc, gamma=1.0), pc, 1.0, X=X)
    # LogDet kernel, Gaussian K0 on 30 standardized Wine points, hard constraints on a tree
    Xw, yw = load_wine(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(yw), 30, replace=False)
    Xs = StandardScaler().fit_transform(Xw)[idx]
    K0 = gaussian_kernel(Xs, sigma=4.0)
    pcw = PairConstraints.from_labels(yw[idx], baseline_kernel(K0), n_similar=10, n_dissimilar=10,
                                      random_state=1)
    save("kernel_wine_gaussian_slack", cvxkml.LogDetKernel(K0, pcw, gamma=10.0), pcw, 10.0, K0=K0)
    # rank-deficient linear kernel (rank 13 < 30): range-space model
    K0l = Xs @ Xs.T
    pcl = PairConstraints.from_labels(yw[idx], baseline_kernel(K0l), n_similar=10, n_dissimilar=10,
                                      random_state=2)
    save("kernel_wine_lowrank_slack", cvxkml.LogDetKernel(K0l, pcl, gamma=1.0), pcl, 1.0, K0=K0l)


if __name__ == "__main__":
    main()
