"""
Comparing solvers on one declared problem
=========================================

:func:`cvxkml.testing.compare` runs each solver at growing iteration budgets and records,
*recomputed from what each returns*, its suboptimality against the certified optimum, its
relative violation and its own certificate; :func:`cvxkml.testing.plot_comparison` draws
them. Here LogDet metric learning with hinge-slack pairs (Jain et al. 2012 eq. 12 with
f = LogDet): the generic certified dual solver (projected Newton on the Lagrange dual),
and the exact model through CVXPY with SCS and with Clarabel (their budget is their
iteration limit). A conic answer stopped early can fail validation; ``compare`` records why
in the row's ``error`` and draws the rest.
"""

import matplotlib.pyplot as plt
import numpy as np

from cvxkml.declare import LogDet, SpectralMetric
from cvxkml.sideinfo import Hinge, PairConstraints, baseline_metric
from cvxkml.testing import compare, plot_comparison, trusted_reference

rng = np.random.default_rng(0)
X = rng.normal(size=(60, 6))
y = rng.integers(0, 3, 60)
X[:, 0] += y
pairs = PairConstraints.from_labels(y, baseline_metric(X), n_similar=30, n_dissimilar=30, random_state=0)
problem = SpectralMetric(X, Hinge(pairs, C=1.0), LogDet())

exact = trusted_reference(problem)
print(f"certified optimum f* = {exact.objective:.10g} (gap {exact.gap:.1e}, {exact.solver})")

solvers = {
    "dual Newton": lambda p, k: p.solve(method="dual", max_iter=k, tol=1e-12),
    "CVXPY + SCS": lambda p, k: p.solve_reference(solver="SCS", max_iters=k, accept_inaccurate=True),
    "CVXPY + Clarabel": lambda p, k: p.solve_reference(solver="CLARABEL", max_iter=k, accept_inaccurate=True),
}
rows = compare(problem, solvers, budgets=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048], optimum=exact.objective)
for r in rows:
    if r["error"] is None and r["budget"] in (8, 64, 2048):
        gap = "n/a" if r["gap"] is None else f"{r['gap']:.1e}"
        print(
            f"{r['solver']:17s} budget {r['budget']:5d}  suboptimality {r['suboptimality']:.1e}  "
            f"violation {r['violation']:.1e}  certificate {gap}  converged {r['converged']}"
        )
failed = sorted({(r["solver"], r["budget"]) for r in rows if r["error"]})
print(f"{len(failed)} answers failed validation (early conic stops), e.g. {failed[:3]}")

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4))
plot_comparison(rows, x="budget", ax=a)
plot_comparison(rows, x="time", ax=b)
a.set_title("against the iteration budget")
b.set_title("against wall time")
fig.tight_layout()
plt.show()
