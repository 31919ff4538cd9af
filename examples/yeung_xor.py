"""
Semi-supervised kernel metric learning on XOR
=============================================

Yeung, Chang & Dai (IJCAI 2007). From 50 random similarity pairs only, learn a
re-weighting of the RBF kernel's principal components on 200 landmarks, embed 4 000 points
by kernel-LLE weights, and compare the class separability J (mean between-class / mean
within-class distance, eq. 17) with the input space and the plain RBF feature space — on
the training points and on new points. Also checks the β step against its exact CVXPY
model.

Run it yourself::

    python examples/yeung_xor.py
"""

import numpy as np

from cvxkml.baselines.separability import separability
from cvxkml.declare.yeung import SpectralReweighting
from cvxkml.estimators.yeung import SemiSupervisedKernelMetric, random_similar_pairs
from cvxkml.kernels import Kernel
from cvxkml.sideinfo import sample_index_pairs


def make_xor(n, std=0.3, random_state=None):
    """XOR: four Gaussian blobs of sd ``std`` at (1, 1), (-1, -1) (class 0) and (1, -1), (-1, 1)
    (class 1), shuffled (as ``python -m benchmarks reproduce yeung`` draws them)."""
    rng = np.random.default_rng(random_state)
    centres = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    blob = rng.permutation(np.arange(n) % 4)
    return centres[blob] + std * rng.standard_normal((n, 2)), np.array([0, 0, 1, 1])[blob]


def median_distance(X, max_pairs=100_000, random_state=0):
    """Median Euclidean distance over (a seeded sample of) the pairs of rows of X: the RBF width."""
    i, j = sample_index_pairs(X.shape[0], max_pairs, np.random.default_rng(random_state))
    D = X[i] - X[j]
    return float(np.median(np.sqrt(np.einsum("ij,ij->i", D, D))))


X, y = make_xor(4000, random_state=0)
X_new, y_new = make_xor(500, random_state=1)
sigma = median_distance(X)
rbf = Kernel("gaussian", {"sigma": sigma})

i, j = random_similar_pairs(y, 50, random_state=0)  # S: 50 same-class pairs
est = SemiSupervisedKernelMetric(
    kernel_params={"sigma": sigma}, n_landmarks=200, n_neighbors=10, n_iter=3, random_state=0
)
est.fit(X, pairs=np.column_stack([i, j]))

print(
    f"RBF sigma = {sigma:.3f} (median distance); {est.beta_.size} kernel components on "
    f"{est.landmark_indices_.size} landmarks"
)
print(f"J input space     train {separability(X, y):.3f}   new {separability(X_new, y_new):.3f}")
print(f"J RBF space       train {separability(X, y, rbf):.3f}   new {separability(X_new, y_new, rbf):.3f}")
print(
    f"J learned metric  train {separability(est.embedding_, y):.3f}   "
    f"new {separability(est.transform(X_new), y_new):.3f}"
)

# the β step: closed form (eq. 4) vs the exact CVXPY model of the QP (eq. 1-3)
pos = np.full(len(X), -1)
pos[est.landmark_indices_] = np.arange(est.landmark_indices_.size)
problem = SpectralReweighting(est.eigenvectors_, est.eigenvalues_, pos[est.pairs_])
fast, exact = problem.solve(), problem.solve_reference()
print(
    f"beta: closed form vs CVXPY/Clarabel relative error "
    f"{np.linalg.norm(fast.info['beta'] - exact.info['beta']) / np.linalg.norm(fast.info['beta']):.1e}, "
    f"J_S {fast.objective:.6g} vs {exact.objective:.6g}"
)
print(
    f"certificates: closed form gap {fast.gap:.1e} (converged {fast.converged}), "
    f"CVXPY gap {exact.gap:.1e} ({exact.status})"
)

# the new points in the input space and in the first two learned coordinates
import matplotlib.pyplot as plt  # noqa: E402

fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
Z_new = est.transform(X_new)
for ax, P, title in ((axes[0], X_new, "input space (XOR)"), (axes[1], Z_new[:, :2], "learned metric, 2 coordinates")):
    for c, color in ((0, "tab:blue"), (1, "tab:orange")):
        ax.scatter(P[y_new == c, 0], P[y_new == c, 1], s=6, color=color, label=f"class {c}")
    ax.set_title(f"{title}: 500 new points")
axes[0].legend(markerscale=3)
fig.tight_layout()
plt.show()
