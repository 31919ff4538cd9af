"""
Trace-SSIKDR on digits: a learned 2-D embedding of unseen digits
================================================================

Jain et al. 2012, §5.4 and Figure 2 c–d: learn a low-rank transformation of a Gaussian
kernel from 100 labelled digits, embed 2 000 unseen digits in 2-D, and compare with kernel
PCA (2 components, same kernel, same 100 training digits).

Needs the offline data folder (``$CVXKML_DATA`` or ``../shared/data``: ``mnist5000.npz`` or
``pendigits.csv``) and matplotlib; ``--dataset sklearn-digits`` uses scikit-learn's bundled
8 × 8 digits instead (the docs build does when it finds no data folder). One training draw:
seconds on MNIST, a few minutes on pendigits (the solver needs ~20 000 iterations there, see
``reference/jain2012-trace.md``);
the 10-draw experiment with mean ± std is ``python -m benchmarks reproduce trace``.

Run it yourself from the checkout root (it reuses the reproduction's data split and scores from
``reference/reproduce/trace.py``, which is not installed; ``OUT.png`` saves the figure)::

    PYTHONPATH=. python examples/trace_ssikdr_digits.py [OUT.png] \\
        [--dataset mnist5000|pendigits|sklearn-digits] [--tau T]
"""

import argparse

import numpy as np
from sklearn.decomposition import PCA, KernelPCA
from threadpoolctl import threadpool_limits

from cvxkml.estimators.trace import TraceSSIKDR
from reference.reproduce.trace import draw_split, embedding_scores, load_digits_data, median_gamma

parser = argparse.ArgumentParser(description="Trace-SSIKDR on digits: a learned 2-D embedding of unseen digits.")
parser.add_argument("out", nargs="?", default=None, help="PNG file to save the figure to")
parser.add_argument(
    "--dataset",
    default="mnist5000",
    choices=["mnist5000", "pendigits", "sklearn-digits"],
    help="sklearn-digits: scikit-learn's bundled 8 x 8 digits (1 797), no data folder needed",
)
parser.add_argument("--tau", type=float, default=10.0)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

if args.dataset == "sklearn-digits":
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0  # features scaled to [0, 1]
else:
    X, y = load_digits_data(args.dataset)  # features scaled to [0, 1]
n_test = min(2000, len(y) - 100)
tr, te = draw_split(y, n_train=100, n_test=n_test, random_state=args.seed)
Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
gamma = median_gamma(Xtr)  # 1 / median squared distance

with threadpool_limits(limits=1, user_api="blas"):  # small dense linear algebra: one thread
    est = TraceSSIKDR(kernel_params={"gamma": gamma}, tau=args.tau, percentiles=(1, 99), random_state=args.seed).fit(
        Xtr, ytr
    )
    Z_tr, Z_te = est.embedding_, est.transform(Xte)  # all k = est.rank_ learned coordinates
    pca = PCA(2).fit(Z_tr)  # centred top-2 axes of the learned coordinates
    kpca = KernelPCA(2, kernel="rbf", gamma=gamma).fit(Xtr)

sol = est.solution_
print(
    f"{args.dataset}: 100 training digits, {len(est.constraints_)} pair constraints, tau = {args.tau:g}, "
    f"gamma = {gamma:.4g}"
)
print(
    f"learned rank k = {est.rank_} (the 2-D pictures keep 2 of them); top-2 share of tr K~ "
    f"{est.eigenvalues_[:2].sum() / est.eigenvalues_.sum():.3f}"
)
rel_gap = "n/a" if sol.gap is None else f"{sol.gap / max(1.0, abs(sol.objective)):.1e}"
print(
    f"solver: {sol.n_iter} Uzawa iterations, {sol.time:.1f} s, converged {sol.converged}, "
    f"relative gap {rel_gap}, max violation {sol.max_violation:.1e}"
)
panels = {
    "Trace-SSIKDR top-2 eigen-coordinates": (Z_tr[:, :2], Z_te[:, :2]),
    "Trace-SSIKDR top-2 centred axes": (pca.transform(Z_tr), pca.transform(Z_te)),
    "kernel PCA (2 components)": (kpca.transform(Xtr), kpca.transform(Xte)),
    f"Trace-SSIKDR, all k = {est.rank_} coordinates": (Z_tr, Z_te),
}
scores = {}
for name, (A, B) in panels.items():
    scores[name] = embedding_scores(A, ytr, B, yte, k=5)
    s = scores[name]
    print(
        f"  {name:40s} 5-NN {s['knn']:.3f}  5-NN (CV among test) {s['knn_cv']:.3f}  silhouette {s['silhouette']:+.3f}"
    )

import matplotlib.pyplot as plt  # noqa: E402

fig, axes = plt.subplots(1, 3, figsize=(18, 6))
cmap = plt.get_cmap("tab10")
for ax, name in zip(axes, list(panels)[:3]):
    B = panels[name][1]
    for c in range(10):
        m = yte == c
        ax.scatter(B[m, 0], B[m, 1], s=5, color=cmap(c), alpha=0.7, linewidths=0, label=str(c))
        ax.text(
            *np.median(B[m], axis=0),
            str(c),
            fontsize=13,
            weight="bold",
            ha="center",
            va="center",
            bbox=dict(boxstyle="round,pad=0.15", fc=cmap(c), alpha=0.6, lw=0),
        )
    ax.set_title(f"{name}\n5-NN {scores[name]['knn']:.3f}, silhouette {scores[name]['silhouette']:.3f}")
    ax.set_xticks([])
    ax.set_yticks([])
axes[2].legend(title="digit", markerscale=3, ncol=2, fontsize=8)
fig.suptitle(f"{n_test} unseen {args.dataset} digits in 2-D (trained on 100; tau = {args.tau:g})")
fig.tight_layout()
if args.out:
    fig.savefig(args.out, dpi=100)
    print(f"saved {args.out}")
else:
    plt.show()
